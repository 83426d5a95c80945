"""The wide table's rows as the engine reads them (creating the tables: `wide_assets.table.definition`;
the commit log through the engine: `wide_assets.table.log_frames`, its markers without the engine:
`wide_assets.table.log`; the table's own commits: `wide_assets.table.table_writes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from wide_assets.errors import TableStateError
from wide_assets.session import activate
from wide_assets.sql import RowKind, as_declared, kind_in, quote
from wide_assets.table.log import CommitLog
from wide_assets.table_definition import BUCKET_COLUMN, TableDefinition

if TYPE_CHECKING:
    from wide_assets.session import SparkSession

IS_DELETE_IMAGE = kind_in("_row_kind", [RowKind.DELETE])


class Storage:
    """The wide table at `path` and its commit log, as Delta tables read and written through `spark`."""

    def __init__(self, spark: SparkSession | None, path: str, spec: TableDefinition) -> None:
        self._spark = spark
        self.path = path
        self.definition = spec
        self.log = CommitLog(path)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            raise TableStateError(
                f"{self.path} was opened without a Spark session: only its metadata can be read."
            )
        # A process can hold a Sail and a classic session (a sensor's checks beside a JVM write), and
        # pyspark builds Connect or classic Columns from one process-wide flag: point it at ours.
        return activate(self._spark)

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
        return reader.load(self.path).where(where).selectExpr(*as_declared(self.definition.columns))

    def buckets_of(self, keys: DataFrame) -> str:
        """The buckets `keys` (a frame with the bucket key columns) hash to, as a SQL list."""
        assert self.definition.bucketing is not None
        hit = self.spark.sql(
            f"SELECT DISTINCT {self.definition.bucketing.expression()} AS b FROM {{keys}}", keys=keys
        ).collect()
        return ", ".join(str(r.b) for r in hit) or "NULL"

    def with_bucket(self, rows: DataFrame) -> DataFrame:
        """`rows` with the bucket column when the table has buckets."""
        if self.definition.bucketing is None:
            return rows
        return rows.selectExpr("*", f"{self.definition.bucketing.expression()} AS {BUCKET_COLUMN}")

    def image_rows(self, images: DataFrame) -> DataFrame:
        """The rows final images leave in the table (deletes dropped), as the table's columns."""
        return images.where(f"NOT {IS_DELETE_IMAGE}").select(
            *[quote(c) for c in self.definition.column_names]
        )
