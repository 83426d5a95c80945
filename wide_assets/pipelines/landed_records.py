"""One landed file (CSV, Parquet, JSON change records) -> its records typed as the source declares, each
with every reason it cannot be ingested (`_problems`, '' when it can).

A record keeps its file, line, arrival index and its text as landed (`_raw`), so that a bad one
reaches the quarantine, or the run's error, with its file and line. A file whose columns are not the
source's (schema drift) or that cannot be read at all is one bad record (line 1) of a quarantining
source, and fails the run of any other source, naming the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wide_assets.errors import InvalidInputError
from wide_assets.pipelines.cdc_csv import UnreadableFile, read_csv
from wide_assets.pipelines.landed_file import LandedFile
from wide_assets.pipelines.specs import JSON_FORMATS, ROW_KINDS, SourceSpec
from wide_assets.sql import RowKind, quote, string_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from wide_assets.session import SparkSession

__all__ = ["MAX_CLOCK_SKEW", "read_landed"]

# An op time further ahead of the clock than this is a producer's bug: as a sequence value it would
# win over every real change of its row, so the record is quarantined (future timestamp).
MAX_CLOCK_SKEW = "INTERVAL 1 DAY"


def read_landed(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """One file's records: their typed values, row kind, file, line and a `_problems` text per record."""
    try:
        if source.format in JSON_FORMATS:
            return _read_json(spark, source, landed, index)
        if source.format == "csv":
            return _read_csv(spark, source, landed, index)
        return _read_parquet(spark, source, landed, index)
    except UnreadableFile as error:
        problem = f"file {landed.name} cannot be read: {error} (unreadable file)"
        return _unusable_file(spark, source, landed, index, problem, "")


def _unusable_file(
    spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int, problem: str, record: str
) -> DataFrame:
    """A file none of whose records can be ingested: the run of a source without a quarantine fails
    naming it; a quarantining source keeps the file as one bad record (line 1) and ingests the others."""
    if source.max_bad_records is None:
        raise InvalidInputError(f"Source {source.name}: {problem}.")
    unread = [(1, None, *(None for _ in source.column_names), problem, record, None)]
    return _parsed(spark, source, unread, landed, index)


def _header_drift(source: SourceSpec, landed: LandedFile, header: Sequence[str]) -> str | None:
    """Why `header` is not the source's columns (schema drift), or None when it is."""
    missing = [c for c in source.column_names if c not in header]
    unexpected = [c for c in header if c not in source.column_names and c != "_row_kind"]
    if not (missing or unexpected):
        return None
    return (
        f"file {landed.name} has columns {list(header)}; missing columns {missing}, unexpected columns "
        f"{unexpected} (expected {list(source.column_names)} and optionally _row_kind) (schema drift)"
    )


def _read_csv(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """A CSV file's records, parsed in Python (see `cdc_csv`), then typed like a JSON file's."""
    header, records = read_csv(landed.path)
    drift = _header_drift(source, landed, header)
    if drift:
        return _unusable_file(spark, source, landed, index, drift, ",".join(header))
    position = {name: i for i, name in enumerate(header)}
    rows = [
        (r.line, None, *(None for _ in source.column_names), r.problem, r.raw, None)
        if r.problem
        else (
            r.line,
            r.fields[position["_row_kind"]] if "_row_kind" in position else RowKind.INSERT.value,
            *(r.fields[position[c]] for c in source.column_names),
            None,
            r.raw,
            None,
        )
        for r in records
    ]
    return _parsed(spark, source, rows, landed, index)


def _read_parquet(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """A Parquet file's records (a Delta source's data files too): a record's "line" is its row number."""
    _check_parquet(landed.path)
    raw = spark.read.parquet(str(landed.path))
    header = list(raw.columns)
    drift = _header_drift(source, landed, header)
    if drift:
        return _unusable_file(spark, source, landed, index, drift, ",".join(header))
    kind = "_row_kind" if "_row_kind" in header else string_literal(RowKind.INSERT)
    record = f"concat_ws(',', {', '.join(_as_text(c, t) for c, t in source.columns)})"
    line = "row_number() OVER (ORDER BY monotonically_increasing_id())"
    return _typed(spark, source, raw, landed, index, kind=kind, line=line, record=record)


def _as_text(column: str, type_: str) -> str:
    """SQL for a Parquet column's value in a quarantined record's text: bytes as base64 (they are
    seldom UTF-8, and text that is not cannot be stored)."""
    if type_.strip().lower() == "binary":
        return f"base64({quote(column)})"
    return f"CAST({quote(column)} AS STRING)"


def _check_parquet(path: Path) -> None:
    """Read every row group of `path` once, so that a truncated or corrupt file fails here, where its
    name is known, rather than inside a Spark job over all the run's files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        for _ in pq.ParquetFile(path).iter_batches():
            pass
    except (pa.ArrowException, OSError, ValueError) as error:
        raise UnreadableFile(f"it is not a readable Parquet file ({error})") from error


def _read_json(spark: SparkSession, source: SourceSpec, landed: LandedFile, index: int) -> DataFrame:
    """A JSON file's lines, parsed in Python (see `cdc_json`), then typed like a CSV file's."""
    from wide_assets.pipelines.cdc_json import parse_json_lines

    parsed = [
        (r.line, r.row_kind, *r.values, r.problem or None, r.raw, r.drift or None)
        for r in parse_json_lines(source, landed.path)
    ]
    return _parsed(spark, source, parsed, landed, index)


def _parsed(
    spark: SparkSession, source: SourceSpec, rows: Sequence[tuple[Any, ...]], landed: LandedFile, index: int
) -> DataFrame:
    """Records parsed in Python: (line, row kind, the source's columns as text, problem or None, record,
    schema drift or None)."""
    ddl = ", ".join(
        [
            "_line bigint",
            "_kind string",
            *(f"{quote(c)} string" for c in source.column_names),
            "_parse_problem string",
            "_raw string",
            "_drift string",
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
    # Drift first: the other problems of a record with a field too few or too many still count.
    checks = ["_drift", "_parse_problem"] if parsed else []
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
