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

A CSV or Parquet file whose columns are not the source's (schema drift), or that cannot be read at all
(a truncated Parquet file, a CSV file that is not UTF-8), fails the run of a source without a
quarantine, naming the file; a quarantining source quarantines the file as one record (line 1) and goes
on. A CSV line with another number of fields than the header is a malformed record like a bad JSON line
(`cdc_csv`). A source whose patterns match nothing is refused when a pattern is surely misspelled
(`require_landed`).
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wide_assets import faults
from wide_assets.errors import InvalidInputError
from wide_assets.locking import exclusive
from wide_assets.pipelines.landed_file import LandedFile
from wide_assets.pipelines.landed_records import read_landed
from wide_assets.pipelines.snapshots import snapshot_records
from wide_assets.pipelines.specs import SourceSpec
from wide_assets.sql import columns, key_join, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from wide_assets.session import SparkSession

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
    "require_landed",
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
# Entries of a folder named in the error of a pattern that matches nothing.
MAX_LISTED = 5
# How alike a missing folder's name and an existing one's must be to call the first a misspelling.
CLOSE_NAME = 0.8
DUPLICATE = "_problems LIKE '%(duplicate record)'"
_HASH_CHUNK = 1 << 20


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
    from wide_assets.table import delta_tables

    location = root / source.files[0]
    if not delta_tables.exists(str(location)):
        raise InvalidInputError(f"Source {source.name}: {location} is not a Delta table.")
    table = delta_tables.open_table(str(location))
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


def require_landed(
    root: str | Path, source: SourceSpec, files: Sequence[LandedFile], path: str
) -> str | None:
    """Refuse a run of `source` whose patterns match no file under `root` when none ever matched (its
    CDC table at `path` and its quarantine hold nothing) and a pattern is surely misspelled: a file
    of its folder nearly matches it (another case, another extension, a close name), or its folder
    is missing beside one of a close name. A misspelled pattern would otherwise ingest nothing, run
    after run, without a word.

    Otherwise the landing zone is waiting for the source's first file: the run goes on, and the
    returned note says so, naming the patterns and folders (None when files matched or ever did).
    Once a file was ingested an empty match passes: the landing zone was cleaned up after ingestion.
    A Delta source's table is checked on its own."""
    if files or source.format == "delta" or _ever_ingested(path):
        return None
    root = Path(root)
    problems, waiting = [], []
    for pattern in source.files:
        folder = _pattern_folder(root, pattern)
        found = _misspelling(folder, Path(pattern).name)
        if found:
            problems.append(f"{pattern!r}: {found}")
        else:
            waiting.append(f"{pattern!r} ({folder}{'' if folder.is_dir() else ' does not exist yet'})")
    if problems:
        raise InvalidInputError(
            f"Source {source.name}: no file under {root} matches {'; '.join(problems)}; and none ever has. "
            "Fix the source's `files`."
        )
    return f"waiting for its first file: nothing matches {', '.join(waiting)}"


def _misspelling(folder: Path, name: str) -> str | None:
    """Why a file name pattern `name` looking in `folder` and matching nothing is misspelled, or None
    when the folder may just be waiting for its files."""
    if folder.is_dir():
        near = [p.name for p in sorted(folder.iterdir()) if p.is_file() and _nearly_matches(name, p.name)]
        if not near:
            return None
        more = f" and {len(near) - MAX_LISTED} more" if len(near) > MAX_LISTED else ""
        return f"{folder} holds {', '.join(near[:MAX_LISTED])}{more}, which it nearly matches"
    missing = folder
    while not missing.parent.is_dir() and missing.parent != missing:
        missing = missing.parent
    siblings = [p.name for p in missing.parent.iterdir() if p.is_dir()] if missing.parent.is_dir() else []
    close = difflib.get_close_matches(missing.name, siblings, n=1, cutoff=CLOSE_NAME)
    if not close:
        return None
    return f"{missing} does not exist (did you mean {missing.parent / close[0]}?)"


def _nearly_matches(pattern: str, name: str) -> bool:
    """Whether file `name` matches `pattern` but for case, its extension, or a close literal start."""
    if fnmatch.fnmatch(name.lower(), pattern.lower()):
        return True
    stem, dot, _ = pattern.rpartition(".")
    if dot and "." in name and fnmatch.fnmatchcase(name, f"{stem}.{name.rpartition('.')[2]}"):
        return True
    literal = re.split(r"[*?\[]", pattern)[0]
    prefix = name[: len(literal)]
    return len(literal) > 2 and difflib.SequenceMatcher(None, literal, prefix).ratio() >= CLOSE_NAME


def _ever_ingested(path: str) -> bool:
    """Whether the CDC table at `path` or its quarantine holds a record (delta-rs, without Spark)."""
    from wide_assets.table import delta_tables

    for table in (path, quarantine_path(path)):
        if delta_tables.exists(table):
            records = (
                delta_tables.open_table(table).get_add_actions(flatten=True).column("num_records").to_pylist()
            )
            # A file without statistics (no record count) may hold records: it counts.
            if any(n != 0 for n in records):
                return True
    return False


def _pattern_folder(root: Path, pattern: str) -> Path:
    """The folder a glob pattern looks in: its leading parts without wildcards."""
    parts = Path(pattern).parts[:-1]
    return root.joinpath(*itertools.takewhile(lambda part: not any(c in part for c in "*?["), parts))


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
    from wide_assets.table import delta_tables

    exists = delta_tables.exists(path)
    if exists:
        _add_declared_columns(spark, source, path)
    seen, base_offset = _ingested(spark, path) if exists else (set(), 0)
    new = [f for f in files if (f.name, f.sha256) not in seen]
    skipped = tuple(f.name for f in files if (f.name, f.sha256) in seen)
    appended = quarantined = duplicates = 0
    changed = None
    if new and source.snapshot is not None:
        changed = snapshot_records(
            spark, source, new, path if exists else None, lambda shape, f, i: read_landed(spark, shape, f, i)
        )
    elif new:
        changed = reduce(
            lambda a, b: a.unionByName(b), (read_landed(spark, source, f, i) for i, f in enumerate(new))
        )
    if changed is not None:
        records = changed
        marks_duplicates = source.op_time is not None and source.snapshot is None
        if marks_duplicates:
            records = _mark_duplicates(spark, source, records, path if exists else None)
        counts = _record_counts(spark, records)
        duplicates = counts.duplicates if marks_duplicates else 0
        if source.max_bad_records is None:
            if counts.malformed:
                _reject_bad_records(spark, source, records.where(f"NOT {DUPLICATE}"), counts.malformed)
        else:
            quarantined = _quarantine(spark, source, records, counts, quarantine_path(path))
        # A run killed here has quarantined (idempotently) but not appended: the next run redoes both.
        faults.checkpoint("ingest_before_commit")
        rows = _with_offsets(spark, source, records.where("_problems = ''"), base_offset)
        appended = counts.usable
        # Header-only files add nothing; classic Delta Spark would still commit an empty version.
        if appended:
            # In the table's order: a column the source gained since stands last in the table.
            order = delta_tables.open_table(path).schema().to_arrow().names if exists else rows.columns
            rows.select(*order).write.format("delta").mode("append").save(path)
    # An empty table lets the wide table read every source before the first file lands.
    delta_tables.create_empty(spark, path, cdc_columns(source))
    op_time = f"CAST(max({quote(source.op_time)}) AS STRING)" if source.op_time else "CAST(NULL AS STRING)"
    stats = spark.sql(
        f"SELECT count(*) AS n, coalesce(max(_offset), 0) AS max_offset, {op_time} AS op_time FROM {{t}}",
        t=spark.read.format("delta").load(path),
    ).collect()[0]
    return IngestResult(
        path=path,
        version=delta_tables.open_table(path).version(),
        appended=appended,
        ingested=tuple(f.name for f in new),
        skipped=skipped,
        quarantined=quarantined,
        duplicates=duplicates,
        total_rows=int(stats.n),
        max_offset=int(stats.max_offset),
        latest_op_time=stats.op_time,
    )


def _add_declared_columns(spark: SparkSession, source: SourceSpec, path: str) -> None:
    """Give the CDC table at `path` the columns `source` declares and it lacks (a source that gained a
    column): nullable, NULL in the records ingested before. A stored column the source no longer
    declares, or declares with another type, is refused, naming it and the way forward."""
    from deltalake import Schema

    from wide_assets.frames import arrow_schema
    from wide_assets.schema import Column
    from wide_assets.table import delta_tables

    table = delta_tables.open_table(path)
    stored = {field.name: field.type for field in table.schema().fields}
    declared = Schema.from_arrow(arrow_schema(spark, [Column(n, t) for n, t in cdc_columns(source)])).fields
    names = [field.name for field in declared]
    dropped = [name for name in stored if name not in names]
    retyped = [
        f"{field.name} {dict(source.columns)[field.name]} (stored: {_delta_type(stored[field.name])})"
        for field in declared
        if field.name in stored and stored[field.name] != field.type
    ]
    fixes = (
        [f"it no longer declares {dropped}: declare them again (out of `feeds` if unused)"] if dropped else []
    )
    if retyped:
        fixes.append(f"it declares {retyped}: declare the stored type, or a new column for the new type")
    if fixes:
        raise InvalidInputError(
            f"Source {source.name}: its change table {path} keeps every column the source declared, and a "
            f"source may only gain columns; {'; '.join(fixes)}."
        )
    added = [field for field in declared if field.name not in stored]
    if added:
        table.alter.add_columns(added)


def _delta_type(type_: Any) -> str:
    """A Delta type as its name (`string`, `decimal(10,2)`), a nested one as delta-rs writes it."""
    return str(getattr(type_, "type", type_))


def _ingested(spark: SparkSession, path: str) -> tuple[set[tuple[str, str]], int]:
    """The (file, hash) pairs already in the table and its largest `_offset` (0 when empty)."""
    rows = spark.sql(
        "SELECT _source_file, _source_hash, max(_offset) AS max_offset FROM {t} "
        "GROUP BY _source_file, _source_hash",
        t=spark.read.format("delta").load(path),
    ).collect()
    return {(r._source_file, r._source_hash) for r in rows}, max((int(r.max_offset) for r in rows), default=0)


@dataclass(frozen=True)
class RecordCounts:
    """How many of a run's records are usable, have a problem, are duplicates, or are malformed (a
    problem other than being a duplicate)."""

    usable: int
    bad: int
    duplicates: int
    malformed: int


def _record_counts(spark: SparkSession, records: DataFrame) -> RecordCounts:
    """Every count the ingest needs, in one pass: each pass parses the landed files again (the engines
    do not keep `records`), which made separate counts most of a small source's ingest on JVM Spark."""
    row = spark.sql(
        "SELECT count_if(_problems = '') AS usable, count_if(_problems <> '') AS bad, "
        f"count_if({DUPLICATE}) AS duplicates, count_if(_problems <> '' AND NOT {DUPLICATE}) AS malformed "
        "FROM {records}",
        records=records,
    ).collect()[0]
    return RecordCounts(usable=row.usable, bad=row.bad, duplicates=row.duplicates, malformed=row.malformed)


def _reject_bad_records(spark: SparkSession, source: SourceSpec, records: DataFrame, count: int) -> None:
    """Raise `BadSourceRecords` for the `count` records of `records` that have a problem, with examples."""
    examples = spark.sql(
        "SELECT _source_file, _source_line, _problems FROM {records} WHERE _problems <> '' "
        f"ORDER BY _file_index, _source_line LIMIT {MAX_EXAMPLES}",
        records=records,
    ).collect()
    raise BadSourceRecords(
        source.name, count, [BadRecord(r._source_file, int(r._source_line), r._problems) for r in examples]
    )


def quarantine_path(path: str) -> str:
    """Where the malformed records of the CDC table at `path` are kept."""
    return f"{path.rstrip('/')}_quarantine"


def _quarantine(
    spark: SparkSession, source: SourceSpec, records: DataFrame, counts: RecordCounts, path: str
) -> int:
    """Append the malformed `records` (`counts` counts them) of files not quarantined before; their
    number this run.

    Raises `BadSourceRecords` (nothing written) when more than `source.max_bad_records` are malformed.
    Idempotent per file: a run that dies after this but before the CDC append quarantines nothing
    twice when it is repeated.
    """
    from wide_assets.table import delta_tables

    # Duplicates are harmless and kept; only malformed records count against the limit.
    if source.max_bad_records is not None and counts.malformed > source.max_bad_records:
        _reject_bad_records(spark, source, records.where(f"NOT {DUPLICATE}"), counts.malformed)
    delta_tables.create_empty(spark, path, QUARANTINE_COLUMNS)
    if not counts.bad:
        return 0
    bad = records.where("_problems <> ''")
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
    identity = (*source.column_names, "_row_kind")
    kept = columns([c for c in records.columns if c != "_problems"], "r.")
    window = f"(PARTITION BY {columns(identity)} ORDER BY _file_index, _source_line)"
    ranked = spark.sql(
        f"SELECT *, row_number() OVER {window} AS _n, first_value(_source_file) OVER {window} AS _first_file, "
        f"first_value(_source_line) OVER {window} AS _first_line FROM {{records}} WHERE _problems = ''",
        records=records,
    )
    in_run = "concat('duplicate of ', r._first_file, ' line ', r._first_line, ' (duplicate record)')"
    if path is None:
        marked = spark.sql(
            f"SELECT {kept}, CASE WHEN r._n > 1 THEN {in_run} ELSE '' END AS _problems FROM {{r}} r",
            r=ranked,
        )
    else:
        keys = columns(identity)
        earlier = spark.sql(
            f"SELECT {keys}, min_by(_source_file, _offset) AS _file, min_by(_source_line, _offset) AS _line "
            f"FROM {{done}} GROUP BY {keys}",
            done=spark.read.format("delta").load(path),
        )
        same = key_join(identity, "r", "e", null_safe=True)
        marked = spark.sql(
            f"SELECT {kept}, CASE WHEN e._file IS NOT NULL "
            "THEN concat('duplicate of ', e._file, ' line ', e._line, ' (duplicate record)') "
            f"WHEN r._n > 1 THEN {in_run} ELSE '' END AS _problems FROM {{r}} r LEFT JOIN {{e}} e ON {same}",
            r=ranked,
            e=earlier,
        )
    return marked.unionByName(records.where("_problems <> ''"))


def _with_offsets(spark: SparkSession, source: SourceSpec, records: DataFrame, base_offset: int) -> DataFrame:
    """The CDC rows to append: arrival order continues after the table's largest `_offset`."""
    return spark.sql(
        f"SELECT {columns(source.column_names)}, _row_kind, "
        f"CAST({base_offset} + row_number() OVER (ORDER BY _file_index, _source_line) AS BIGINT) AS _offset, "
        "_source_file, _source_line, _source_hash FROM {records}",
        records=records,
    )
