"""Landed files (CSV, Parquet, JSON change records, an append-only Delta table's data files) -> a
source's append-only Delta CDC table, each file exactly once.

The CDC table holds the source's columns (cast to their declared types) plus `_row_kind`, `_offset`
(arrival order, strictly increasing across appends), `_source_file`, `_source_line` and
`_source_hash`. A file is identified by its name under the landing zone and its SHA-256: a file seen
before is skipped, a changed file is ingested again. All new files of a run land in one Delta commit,
so a failed or interrupted run appends nothing and the next run retries the same files.

A source with an op time is delivered at least once: a record identical to one ingested before or
earlier in the run (same columns, row kind and op time), e.g. a producer's retry under a new file name,
is a duplicate. It is never appended again (an aggregate would count it twice); a quarantining source
keeps it in its quarantine table with the original's file and line, outside its `max_bad_records`.

A CSV or Parquet file whose columns are not the source's (schema drift) fails the run of a source
without a quarantine; a quarantining source quarantines the file as one record (its header) and goes on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wide_assets import faults
from wide_assets.errors import InvalidInputError
from wide_assets.locking import exclusive
from wide_assets.pipelines.declarations import JSON_FORMATS, ROW_KINDS, SourceSpec
from wide_assets.sql import RowKind, quote, string_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "CDC_COLUMNS",
    "QUARANTINE_COLUMNS",
    "BadSourceRecords",
    "IngestResult",
    "LandedFile",
    "cdc_columns",
    "ingest",
    "landed_files",
    "landed_fingerprints",
    "quarantine_path",
]

CDC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_row_kind", "string"),
    ("_offset", "bigint"),
    ("_source_file", "string"),
    ("_source_line", "bigint"),
    ("_source_hash", "string"),
)
QUARANTINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_source_file", "string"),
    ("_source_line", "bigint"),
    ("_source_hash", "string"),
    ("_reason", "string"),
    ("_record", "string"),
)
MAX_EXAMPLES = 20
# An op time further ahead of the clock than this is a producer's bug: as a sequence value it would
# win over every real change of its row, so the record is quarantined (future timestamp).
MAX_CLOCK_SKEW = "INTERVAL 1 DAY"
DUPLICATE = "_problems LIKE '%(duplicate record)'"
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class LandedFile:
    """A file in the landing zone: its name relative to the zone (its identity) and content hash."""

    name: str
    path: Path
    sha256: str


def _landed_paths(root: Path, source: SourceSpec) -> list[Path]:
    """The files holding `source`'s records, in arrival order: glob matches by name, or the data files of
    a Delta source in the order its writers added them."""
    if source.format == "delta":
        return _delta_data_files(root, source)
    return sorted({p for pattern in source.files for p in root.glob(pattern) if p.is_file()})


def _delta_data_files(root: Path, source: SourceSpec) -> list[Path]:
    """The Parquet files of an append-only, unpartitioned Delta table: each is one landed file, ingested
    once. A table whose files were rewritten or removed (OPTIMIZE, DELETE, MERGE, an overwrite) would
    offer its records again under new file names, so it is refused rather than ingested twice."""
    from deltalake import DeltaTable

    location = root / source.files[0]
    if not DeltaTable.is_deltatable(str(location)):
        raise InvalidInputError(f"Source {source.name}: {location} is not a Delta table.")
    table = DeltaTable(str(location))
    for entry in table.history():
        operation = str(entry.get("operation", ""))
        parameters = entry.get("operationParameters") or {}
        appends = (operation == "WRITE" and parameters.get("mode") != "Overwrite") or (
            operation == "STREAMING UPDATE" and parameters.get("outputMode") == "Append"
        )
        if not (appends or operation in ("CREATE TABLE", "SET TBLPROPERTIES")):
            raise InvalidInputError(
                f"Source {source.name}: the Delta table {location} is not append-only (version "
                f"{entry.get('version')}: {operation} {parameters}); a Delta source must only ever be "
                "appended to."
            )
    metadata = table.metadata()
    if metadata.partition_columns:
        raise InvalidInputError(
            f"Source {source.name}: the Delta table {location} is partitioned by {metadata.partition_columns}; "
            "a Delta source must be unpartitioned."
        )
    if metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
        raise InvalidInputError(
            f"Source {source.name}: the Delta table {location} uses column mapping; a Delta source must not."
        )
    actions = table.get_add_actions(flatten=True)
    added = zip(
        actions.column("modification_time").to_pylist(), actions.column("path").to_pylist(), strict=True
    )
    return [location / path for _, path in sorted(added)]


def landed_files(root: str | Path, source: SourceSpec) -> list[LandedFile]:
    """The files under `root` holding `source`'s records, in arrival order, hashed."""
    root = Path(root)
    return [LandedFile(p.relative_to(root).as_posix(), p, _sha256(p)) for p in _landed_paths(root, source)]


def landed_fingerprints(root: str | Path, source: SourceSpec) -> dict[str, str]:
    """Name -> "size:mtime" of the files `landed_files` would return, without reading them.

    For sensors, which poll often: hashing every landed file on each tick would re-read the whole
    landing zone. A touched but unchanged file only costs a run that ingests nothing.
    """
    root = Path(root)
    fingerprints = {}
    for path in _landed_paths(root, source):
        stat = path.stat()
        fingerprints[path.relative_to(root).as_posix()] = f"{stat.st_size}:{stat.st_mtime_ns}"
    return fingerprints


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class BadRecord:
    file: str
    line: int
    problems: str


class BadSourceRecords(InvalidInputError):
    """Landed records that cannot be ingested (bad value, NULL key, unknown row kind); nothing was appended."""

    def __init__(self, source: str, count: int, examples: Sequence[BadRecord]) -> None:
        self.source = source
        self.count = count
        self.examples = tuple(examples)
        listed = "; ".join(f"{e.file} line {e.line}: {e.problems}" for e in self.examples)
        more = f" (first {len(self.examples)} shown)" if count > len(self.examples) else ""
        super().__init__(f"Source {source}: {count} bad record(s), nothing was ingested{more}: {listed}.")


@dataclass(frozen=True)
class IngestResult:
    """The state of a source's CDC table after an ingest run."""

    path: str
    version: int
    appended: int
    ingested: tuple[str, ...]
    skipped: tuple[str, ...]
    total_rows: int
    max_offset: int
    latest_op_time: str | None
    quarantined: int = 0
    duplicates: int = 0


def cdc_columns(source: SourceSpec) -> tuple[tuple[str, str], ...]:
    """The CDC table's columns: the source's own, then the change-data bookkeeping columns."""
    return (*source.columns, *CDC_COLUMNS)


def ingest(spark: SparkSession, source: SourceSpec, files: Sequence[LandedFile], path: str) -> IngestResult:
    """Append the records of `files` not ingested before to the CDC table at `path`; see the module doc.
    Under the table's lock: two runs at once would both see a file as new and append it twice."""
    with exclusive(path):
        return _ingest(spark, source, files, path)


def _ingest(spark: SparkSession, source: SourceSpec, files: Sequence[LandedFile], path: str) -> IngestResult:
    from deltalake import DeltaTable

    exists = DeltaTable.is_deltatable(path)
    seen, base_offset = _ingested(spark, path) if exists else (set(), 0)
    new = [f for f in files if (f.name, f.sha256) not in seen]
    skipped = tuple(f.name for f in files if (f.name, f.sha256) in seen)
    appended = quarantined = duplicates = 0
    if new:
        records = reduce(
            lambda a, b: a.unionByName(b), (_read(spark, source, f, i) for i, f in enumerate(new))
        )
        if source.op_time is not None:
            records = _mark_duplicates(spark, source, records, path if exists else None)
            duplicates = records.where(DUPLICATE).count()
        if source.max_bad_records is None:
            _reject_bad_records(spark, source, records.where(f"NOT {DUPLICATE}"))
        else:
            quarantined = _quarantine(spark, source, records, quarantine_path(path))
        # A run killed here has quarantined (idempotently) but not appended: the next run redoes both.
        faults.checkpoint("ingest_before_commit")
        rows = _with_offsets(spark, source, records.where("_problems = ''"), base_offset)
        appended = rows.count()
        # Header-only files add nothing; classic Delta Spark would still commit an empty version.
        if appended:
            rows.write.format("delta").mode("append").save(path)
    if not DeltaTable.is_deltatable(path):
        # An empty table lets the wide table read every source before the first file lands.
        ddl = ", ".join(f"{quote(name)} {type_}" for name, type_ in cdc_columns(source))
        spark.createDataFrame([], ddl).write.format("delta").mode("append").save(path)
    op_time = f"CAST(max({quote(source.op_time)}) AS STRING)" if source.op_time else "CAST(NULL AS STRING)"
    stats = spark.sql(
        f"SELECT count(*) AS n, coalesce(max(_offset), 0) AS max_offset, {op_time} AS op_time FROM {{t}}",
        t=spark.read.format("delta").load(path),
    ).collect()[0]
    return IngestResult(
        path=path,
        version=DeltaTable(path).version(),
        appended=appended,
        ingested=tuple(f.name for f in new),
        skipped=skipped,
        quarantined=quarantined,
        duplicates=duplicates,
        total_rows=int(stats.n),
        max_offset=int(stats.max_offset),
        latest_op_time=stats.op_time,
    )


def _ingested(spark: SparkSession, path: str) -> tuple[set[tuple[str, str]], int]:
    """The (file, hash) pairs already in the table and its largest `_offset` (0 when empty)."""
    rows = spark.sql(
        "SELECT _source_file, _source_hash, max(_offset) AS max_offset FROM {t} "
        "GROUP BY _source_file, _source_hash",
        t=spark.read.format("delta").load(path),
    ).collect()
    return {(r._source_file, r._source_hash) for r in rows}, max((int(r.max_offset) for r in rows), default=0)


def _read(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """One file's records: their typed values, row kind, file, line and a `_problems` text per record."""
    if source.format in JSON_FORMATS:
        return _read_json(spark, source, landed, index)
    if source.format == "csv":
        # FAILFAST: classic Spark would otherwise pad short rows with NULLs and cut long ones silently.
        raw = spark.read.option("header", True).option("mode", "FAILFAST").csv(str(landed.path))
        # Spark numbers a single file's records in file order; the header is line 1. This assumes one
        # record per line, which CSV files without quoted line breaks satisfy.
        line = "row_number() OVER (ORDER BY monotonically_increasing_id()) + 1"
    else:
        # Parquet (a Delta source's data files too): a record's "line" is its row number in the file.
        raw = spark.read.parquet(str(landed.path))
        line = "row_number() OVER (ORDER BY monotonically_increasing_id())"
    header = list(raw.columns)
    missing = [c for c in source.column_names if c not in header]
    unexpected = [c for c in header if c not in source.column_names and c != "_row_kind"]
    if missing or unexpected:
        problem = (
            f"file {landed.name} has columns {header}; missing columns {missing}, unexpected columns "
            f"{unexpected} (expected {list(source.column_names)} and optionally _row_kind)"
        )
        if source.max_bad_records is None:
            raise InvalidInputError(f"Source {source.name}: {problem}.")
        # A quarantining source keeps the file as one bad record (its header) and ingests the others.
        unread = [
            (1, None, *(None for _ in source.column_names), f"{problem} (schema drift)", ",".join(header))
        ]
        return _parsed(spark, source, unread, landed, index)
    kind = "_row_kind" if "_row_kind" in header else string_literal(RowKind.INSERT)
    record = f"concat_ws(',', {', '.join(f'CAST({quote(c)} AS STRING)' for c in source.column_names)})"
    return _typed(spark, source, raw, landed, index, kind=kind, line=line, record=record)


def _read_json(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """A JSON file's lines, parsed in Python (see `cdc_json`), then typed like a CSV file's."""
    from wide_assets.pipelines.cdc_json import parse_json_lines

    parsed = [
        (r.line, r.row_kind, *r.values, r.problem or None, r.raw)
        for r in parse_json_lines(source, landed.path)
    ]
    return _parsed(spark, source, parsed, landed, index)


def _parsed(
    spark: SparkSession, source: SourceSpec, rows: Sequence[tuple[Any, ...]], landed: LandedFile, index: int
) -> DataFrame:
    """Records parsed in Python: (line, row kind, the source's columns as text, problem or None, record)."""
    ddl = ", ".join(
        [
            "_line bigint",
            "_kind string",
            *(f"{quote(c)} string" for c in source.column_names),
            "_parse_problem string",
            "_raw string",
        ]
    )
    raw = spark.createDataFrame(list(rows), ddl)
    return _typed(spark, source, raw, landed, index, kind="_kind", line="_line", record="_raw", parsed=True)


def _typed(
    spark: SparkSession,
    source: SourceSpec,
    raw: DataFrame,
    landed: LandedFile,
    index: int,
    *,
    kind: str,
    line: str,
    record: str,
    parsed: bool = False,
) -> DataFrame:
    """`raw`'s text columns cast to the source's types, with every reason a record is unusable."""
    checks = ["_parse_problem"] if parsed else []
    # A record the parser already rejected has no values worth checking.
    usable = "_parse_problem IS NULL AND " if parsed else ""
    checks += [
        f"CASE WHEN {usable}{quote(k)} IS NULL THEN 'column {k}: NULL primary key (missing key)' END"
        for k in source.required_columns
    ]
    for name, type_ in source.columns:
        if type_.lower() != "string":
            checks.append(
                f"CASE WHEN {usable}{quote(name)} IS NOT NULL AND try_cast({quote(name)} AS {type_}) IS NULL "
                f"THEN concat('column {name}: \"', CAST({quote(name)} AS STRING), '\" is not a valid {type_} (uncastable value)') END"
            )
        if type_.lower().startswith("decimal"):
            # A cast to fewer decimal places rounds: the record would be stored with another value.
            checks.append(
                f"CASE WHEN {usable}try_cast({quote(name)} AS DECIMAL(38, 18)) <> try_cast({quote(name)} AS {type_}) "
                f"THEN concat('column {name}: \"', CAST({quote(name)} AS STRING), '\" has more decimal places than {type_} "
                "(would be rounded)') END"
            )
    op_type = dict(source.columns).get(source.op_time or "", "").lower()
    if op_type.startswith("timestamp"):
        op = quote(source.op_time or "")
        checks.append(
            f"CASE WHEN {usable}try_cast({op} AS TIMESTAMP) > current_timestamp() + {MAX_CLOCK_SKEW} "
            f"THEN concat('column {source.op_time}: \"', CAST({op} AS STRING), '\" is in the future (future timestamp)') END"
        )
    kinds = ", ".join(f"'{k}'" for k in ROW_KINDS)
    checks.append(
        f"CASE WHEN {usable}({kind} IS NULL OR {kind} NOT IN ({kinds})) "
        f"THEN concat('column _row_kind: \"', coalesce({kind}, 'NULL'), '\" is not one of {', '.join(ROW_KINDS)} (unknown op)') END"
    )
    # Parquet columns arrive typed; a declared string column takes the text of whatever they hold.
    typed = ", ".join(
        f"CAST({quote(n)} AS STRING) AS {quote(n)}"
        if t.lower() == "string"
        else f"try_cast({quote(n)} AS {t}) AS {quote(n)}"
        for n, t in source.columns
    )
    return spark.sql(
        f"SELECT {typed}, {kind} AS _row_kind, {string_literal(landed.name)} AS _source_file, "
        f"{string_literal(landed.sha256)} AS _source_hash, CAST({index} AS INT) AS _file_index, "
        f"CAST({line} AS BIGINT) AS _source_line, {record} AS _raw, "
        f"concat_ws('; ', {', '.join(checks)}) AS _problems FROM {{raw}}",
        raw=raw,
    )


def _reject_bad_records(spark: SparkSession, source: SourceSpec, records: DataFrame) -> None:
    bad = records.where("_problems <> ''")
    count = bad.count()
    if count:
        examples = spark.sql(
            "SELECT _source_file, _source_line, _problems FROM {bad} "
            f"ORDER BY _file_index, _source_line LIMIT {MAX_EXAMPLES}",
            bad=bad,
        ).collect()
        raise BadSourceRecords(
            source.name,
            count,
            [BadRecord(r._source_file, int(r._source_line), r._problems) for r in examples],
        )


def quarantine_path(path: str) -> str:
    """Where the malformed records of the CDC table at `path` are kept."""
    return f"{path.rstrip('/')}_quarantine"


def _quarantine(spark: SparkSession, source: SourceSpec, records: DataFrame, path: str) -> int:
    """Append the malformed `records` of files not quarantined before; their number this run.

    Raises `BadSourceRecords` (nothing written) when more than `source.max_bad_records` are malformed.
    Idempotent per file: a run that dies after this but before the CDC append quarantines nothing
    twice when it is repeated.
    """
    from deltalake import DeltaTable

    bad = records.where("_problems <> ''")
    count = bad.count()
    if source.max_bad_records is not None and count > source.max_bad_records:
        # Duplicates are harmless and kept; only malformed records count against the limit.
        malformed = records.where(f"NOT {DUPLICATE}")
        if malformed.where("_problems <> ''").count() > source.max_bad_records:
            _reject_bad_records(spark, source, malformed)
    if not DeltaTable.is_deltatable(path):
        ddl = ", ".join(f"{quote(n)} {t}" for n, t in QUARANTINE_COLUMNS)
        spark.createDataFrame([], ddl).write.format("delta").mode("append").save(path)
    if not count:
        return 0
    done = spark.read.format("delta").load(path)
    fresh = spark.sql(
        "SELECT b._source_file, b._source_line, b._source_hash, b._problems AS _reason, b._raw AS _record "
        "FROM {bad} b LEFT ANTI JOIN (SELECT DISTINCT _source_file, _source_hash FROM {done}) d "
        "ON b._source_file = d._source_file AND b._source_hash = d._source_hash",
        bad=bad,
        done=done,
    )
    written = fresh.count()
    if written:
        fresh.write.format("delta").mode("append").save(path)
    return written


def _mark_duplicates(
    spark: SparkSession, source: SourceSpec, records: DataFrame, path: str | None
) -> DataFrame:
    """`records` where each usable record identical to an earlier one (in the CDC table at `path`, or
    earlier in this run by file and line) has the problem 'duplicate of <file> line <n>'."""
    identity = [quote(c) for c in (*source.column_names, "_row_kind")]
    columns = ", ".join(f"r.{quote(c)}" for c in records.columns if c != "_problems")
    window = f"(PARTITION BY {', '.join(identity)} ORDER BY _file_index, _source_line)"
    ranked = spark.sql(
        f"SELECT *, row_number() OVER {window} AS _n, first_value(_source_file) OVER {window} AS _first_file, "
        f"first_value(_source_line) OVER {window} AS _first_line FROM {{records}} WHERE _problems = ''",
        records=records,
    )
    in_run = "concat('duplicate of ', r._first_file, ' line ', r._first_line, ' (duplicate record)')"
    if path is None:
        marked = spark.sql(
            f"SELECT {columns}, CASE WHEN r._n > 1 THEN {in_run} ELSE '' END AS _problems FROM {{r}} r",
            r=ranked,
        )
    else:
        keys = ", ".join(identity)
        earlier = spark.sql(
            f"SELECT {keys}, min_by(_source_file, _offset) AS _file, min_by(_source_line, _offset) AS _line "
            f"FROM {{done}} GROUP BY {keys}",
            done=spark.read.format("delta").load(path),
        )
        same = " AND ".join(f"r.{c} <=> e.{c}" for c in identity)
        marked = spark.sql(
            f"SELECT {columns}, CASE WHEN e._file IS NOT NULL "
            "THEN concat('duplicate of ', e._file, ' line ', e._line, ' (duplicate record)') "
            f"WHEN r._n > 1 THEN {in_run} ELSE '' END AS _problems FROM {{r}} r LEFT JOIN {{e}} e ON {same}",
            r=ranked,
            e=earlier,
        )
    return marked.unionByName(records.where("_problems <> ''"))


def _with_offsets(spark: SparkSession, source: SourceSpec, records: DataFrame, base_offset: int) -> DataFrame:
    """The CDC rows to append: arrival order continues after the table's largest `_offset`."""
    columns = ", ".join(quote(n) for n in source.column_names)
    return spark.sql(
        f"SELECT {columns}, _row_kind, "
        f"CAST({base_offset} + row_number() OVER (ORDER BY _file_index, _source_line) AS BIGINT) AS _offset, "
        "_source_file, _source_line, _source_hash FROM {records}",
        records=records,
    )
