"""The Delta tables behind a wide table as Spark reads and writes them: its rows, and its commit log's
rows and appends (creating them: `wide_assets.table.definition`; the log's markers, read without
Spark: `wide_assets.table.log`; the table's own commits: `wide_assets.table.table_writes`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from wide_assets.changelog import without_before_images
from wide_assets.errors import TableStateError, merge_errors
from wide_assets.merge import changelog_read_from_merge
from wide_assets.spec import BUCKET_COLUMN, TableSpec
from wide_assets.sql import RowKind, columns, kind_in, quote, string_literal
from wide_assets.table import arbiter
from wide_assets.table.files import write_files
from wide_assets.table.log import CommitLog, LogSnapshot, Origin
from wide_assets.table.objects import TableFiles

IS_DELETE_IMAGE = kind_in("_row_kind", [RowKind.DELETE])


class Storage:
    """The wide table at `path` and its commit log, as Delta tables read and written through `spark`."""

    def __init__(self, spark: SparkSession | None, path: str, spec: TableSpec) -> None:
        self._spark = spark
        self.path = path
        self.spec = spec
        self.log = CommitLog(path)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            raise TableStateError(
                f"{self.path} was opened without a Spark session: only its metadata can be read."
            )
        return self._spark

    @property
    def changelog_path(self) -> str:
        return self.log.path

    # ----------------------------------------------------------------------------- rows
    @property
    def version(self) -> int:
        """The wide table's current Delta version."""
        return self.log.table_version()

    def rows(
        self, version: int | None = None, timestamp: str | None = None, where: str = "true"
    ) -> DataFrame:
        """The stored rows (exactly the table's columns), optionally as of a version or timestamp and
        filtered by `where` first (it may name the bucket column)."""
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if timestamp is not None:
            reader = reader.option("timestampAsOf", timestamp)
        return reader.load(self.path).where(where).select(*[quote(c) for c in self.spec.column_names])

    def buckets_of(self, keys: DataFrame) -> str:
        """The buckets `keys` (a frame with the bucket key columns) hash to, as a SQL list."""
        assert self.spec.bucketing is not None
        hit = self.spark.sql(
            f"SELECT DISTINCT {self.spec.bucketing.expression()} AS b FROM {{keys}}", keys=keys
        ).collect()
        return ", ".join(str(r.b) for r in hit) or "NULL"

    def with_bucket(self, rows: DataFrame) -> DataFrame:
        """`rows` with the bucket column when the table has buckets."""
        if self.spec.bucketing is None:
            return rows
        return rows.selectExpr("*", f"{self.spec.bucketing.expression()} AS {BUCKET_COLUMN}")

    def image_rows(self, images: DataFrame) -> DataFrame:
        """The rows final images leave in the table (deletes dropped), as the table's columns."""
        return images.where(f"NOT {IS_DELETE_IMAGE}").select(*[quote(c) for c in self.spec.column_names])

    # ----------------------------------------------------------------------------- commit log
    def log_frame(self) -> DataFrame:
        """The commit log as it is now (pinned: later appends do not change what this frame reads)."""
        return (
            self.spark.read.format("delta")
            .option("versionAsOf", self.log.version())
            .load(self.changelog_path)
        )

    def log_entries(self, commits: list[int], origin: Origin) -> DataFrame:
        """The log rows of `origin` of `commits` (a contiguous range), from the log as it is now."""
        return self.spark.sql(
            f"SELECT * FROM {{log}} WHERE _commit BETWEEN {min(commits)} AND {max(commits)} "
            f"AND _origin = {string_literal(origin)}",
            log=self.log_frame(),
        )

    def log_rows(self, entries: DataFrame, commit: int, origin: Origin) -> DataFrame:
        """`entries` (row kind, the table's columns, offset) as rows of the log for `commit`. Merged
        entries keep their before-images only where a changelog is read from them: the table needs
        only the after-images."""
        if origin == Origin.MERGED and not changelog_read_from_merge(self.spec.merge):
            entries = without_before_images(entries)
        return self.spark.sql(
            f"SELECT CAST({commit} AS BIGINT) AS _commit, _offset, _row_kind, {string_literal(origin)} AS _origin, "
            f"{columns(self.spec.column_names)}, CAST(NULL AS STRING) AS _commit_info FROM {{entries}}",
            entries=entries,
        )

    def append_log(
        self, parts: list[DataFrame], commit: int, origin: Origin, info_json: str, log: LogSnapshot
    ) -> None:
        """One log commit right after the snapshot `log`: the entries plus their marker row (`origin`
        is a marker's). Raises `Conflict` when another commit took that version first."""
        nulls = ", ".join(f"CAST(NULL AS {c.type}) AS {quote(c.name)}" for c in self.spec.columns)
        marker = self.spark.sql(
            f"SELECT CAST({commit} AS BIGINT) AS _commit, CAST(-1 AS BIGINT) AS _offset, "
            f"CAST(NULL AS STRING) AS _row_kind, {string_literal(origin)} AS _origin, {nulls}, "
            f"{string_literal(info_json)} AS _commit_info"
        )
        files = TableFiles(self.changelog_path)
        # One engine write per part, not one of their union: Sail 0.7.2's local-cluster mode was seen
        # to stall for good writing a union of the one-row marker and a merge (bench.repeated_writes).
        with merge_errors():
            written = [
                w for part in (marker, *parts) for w in write_files(part.select(*marker.columns), files)
            ]
        arbiter.append_files(log.table, written)
