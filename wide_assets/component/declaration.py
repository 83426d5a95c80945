"""The typed YAML schema of a wide table's `defs.yaml`, and its translation into the declarative specs.

Each model forbids unknown fields, so a misspelled field fails when the definitions load, at its line
of the YAML. `wide_table_spec` then builds the `WideTableSpec` (columns, types, keys, feeds, op times) and
parses the Paimon/Fluss options, refusing an option that means nothing to the table's dialect; every
refusal names the table or source and, where there is one, the closest valid name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Annotated, Any, Literal

import dagster as dg
from pydantic import ConfigDict, Field

from wide_assets.component.refusal import DeclarationProblem
from wide_assets.errors import did_you_mean
from wide_assets.pipelines import CompactionPolicy, SourceSpec, WideTableSpec
from wide_assets.pipelines.specs import HistorySpec, SnapshotSpec
from wide_assets.pipelines.triggers import HOURLY

__all__ = [
    "AutomationDeclaration",
    "ChecksDeclaration",
    "CompactionDeclaration",
    "Declaration",
    "HistoryDeclaration",
    "SnapshotDeclaration",
    "SourceDeclaration",
    "SourceDefaults",
    "SourceHealthDeclaration",
    "SqlTableDeclaration",
    "TableDeclaration",
    "unknown_fields",
    "wide_table_spec",
]

COLUMNS = Field(
    description="Column name -> Spark SQL type (`string`, `bigint`, `decimal(10,2)`, `timestamp`, "
    "`array<string>`, ...), in table order.",
    examples=[{"customer_id": "string", "points": "int", "updated": "timestamp"}],
)
OptionValue = str | int | float | bool


class Declaration(dg.Model):
    """A part of the YAML. A field it does not have is kept aside (`model_extra`) rather than refused
    here, so that the component refuses it as it loads, where it knows the field's line
    (`unknown_fields`); the JSON schema still forbids it, for `dg check defs`' YAML check."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})


def unknown_fields(value: Any, key_path: tuple[str | int, ...]) -> Iterator[DeclarationProblem]:
    """Every field a part of the declaration at `key_path` does not have, naming the closest it has."""
    if isinstance(value, Declaration):
        fields = type(value).model_fields
        kind = re.sub(r"(?<=.)(?=[A-Z])", " ", type(value).__name__.removesuffix("Declaration")).lower()
        for name in value.model_extra or {}:
            problem = f"{kind} has no field {name!r}{did_you_mean(str(name), fields)}"
            yield DeclarationProblem(problem, (*key_path, name))
        for name in fields:
            yield from unknown_fields(getattr(value, name), (*key_path, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from unknown_fields(item, (*key_path, index))


class TableDeclaration(Declaration):
    """The wide table: by columns, primary key and options, or by a Flink `CREATE TABLE` statement."""

    name: Annotated[
        str | None,
        Field(description="Table name (letters, digits, `_`); taken from `ddl` when that is given."),
    ] = None
    description: Annotated[str, Field(description="One line: what a row of the table is.")]
    group: Annotated[
        str | None,
        Field(description="Asset group and first part of every asset key (default: the table's name)."),
    ] = None
    ddl: Annotated[
        str | None,
        Field(
            description="A Flink SQL `CREATE TABLE` (Paimon or Fluss) with `PRIMARY KEY (...) NOT ENFORCED` "
            "and `WITH (...)` options, instead of `columns`, `primary_key` and `options`.",
        ),
    ] = None
    columns: Annotated[dict[str, str] | None, COLUMNS] = None
    primary_key: Annotated[list[str] | None, Field(description="The key columns, in order.")] = None
    options: Annotated[
        dict[str, OptionValue],
        Field(
            default_factory=dict,
            description="Paimon or Fluss table options, verbatim (any `table.*` key selects Fluss).",
            examples=[{"merge-engine": "partial-update", "fields.updated.sequence-group": "points"}],
        ),
    ]


class SnapshotDeclaration(Declaration):
    """A source landing full snapshots (a daily export) rather than changes: each is compared with the
    one before it, and the differences are its change records at the snapshot's time."""

    time_pattern: Annotated[
        str,
        Field(
            description="Regular expression over a landed file's path (under the landing zone) whose one "
            "group is the snapshot's time; the files with the same match are one snapshot (a file or a folder).",
            examples=["customers_(\\d{8})\\.csv", "exports/(\\d{4}-\\d{2}-\\d{2})/"],
        ),
    ]
    time_format: Annotated[
        str, Field(description="How that group reads as a time (Python `strptime`).", examples=["%Y%m%d"])
    ] = "%Y-%m-%d"
    empty: Annotated[
        Literal["refuse", "truncate"],
        Field(description="A snapshot without rows: an error (`refuse`), or every row deleted (`truncate`)."),
    ] = "refuse"

    def spec(self) -> SnapshotSpec:
        return SnapshotSpec(time_pattern=self.time_pattern, time_format=self.time_format, empty=self.empty)


# The source fields `source_defaults` may set, typed once for both.
SourceFormat = Annotated[
    Literal["csv", "parquet", "debezium", "flink-json", "delta"],
    Field(
        description="How records are landed: CSV or Parquet files (optional `_row_kind` column: "
        "+I, -U, +U, -D), Debezium JSON envelopes, Flink changelog JSON (one object per line), or an "
        "append-only Delta table of such rows."
    ),
]
OpTime = Annotated[
    str | None,
    Field(
        description="The column holding each change's operation time: it orders the records. A "
        "`debezium` source's op time is its envelope's `ts_ms` (epoch milliseconds, as UTC), which "
        "fills this column whatever the row image holds."
    ),
]
Deletes = Annotated[
    Literal["remove-row", "clear-columns", "ignore"],
    Field(
        description="What a `-D` of this source means: the whole wide row goes, only the columns it "
        "feeds become NULL (the table's options do these two; the convergence check expects them), or "
        "nothing (its `-U`/`-D` records are not written)."
    ),
]
MaxBadRecords = Annotated[
    int | None,
    Field(
        description="Quarantine up to this many malformed records per run (fail above it); "
        "null: any malformed record fails the run.",
    ),
]


class SourceDefaults(Declaration):
    """Values of `format`, `op_time`, `deletes` and `max_bad_records` for every source that does not
    set its own (as sling's replication `defaults` are for its streams)."""

    format: SourceFormat = "csv"
    op_time: OpTime = None
    deletes: Deletes = "remove-row"
    max_bad_records: MaxBadRecords = None


class SourceDeclaration(Declaration):
    """A source of change records and the wide-table columns it feeds."""

    name: Annotated[str, Field(description="Source name; its ingest asset is `<group>/<name>`.")]
    description: Annotated[str, Field(description="One line: what its records are.")]
    format: SourceFormat = "csv"
    files: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="Glob patterns under the landing zone (file formats).",
            examples=[["orders/*.csv"]],
        ),
    ]
    table: Annotated[
        str | None,
        Field(description="Path of the Delta table under the landing zone (format `delta`)."),
    ] = None
    columns: Annotated[dict[str, str], COLUMNS]
    primary_key: Annotated[
        list[str] | None,
        Field(description="The source's key (default: the table's); maps onto the table's key by position."),
    ] = None
    key_columns: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="For a source keyed apart from the table (e.g. reviews of a product): its "
            "columns holding the table's key.",
        ),
    ]
    feeds: Annotated[
        dict[str, str],
        Field(
            description="Source column -> the wide column it writes.",
            examples=[{"points": "points", "updated": "points_updated"}],
        ),
    ]
    op_time: OpTime = None
    deletes: Deletes = "remove-row"
    aggregates: Annotated[
        dict[str, str],
        Field(
            default_factory=dict,
            description="For a source with `key_columns`: wide column -> the Spark SQL aggregate that is "
            "its value, over the latest record of each of the source's rows with that key (`_live`: "
            "that record is not a retraction).",
            examples=[{"review_cnt": "count_if(_live)"}],
        ),
    ]
    transform: Annotated[
        str | None,
        Field(
            description="Spark SQL computing the wide rows from `{pending}` (records not applied yet) and "
            "`{applied}` (all records up to the last pending one), instead of feeding one to one."
        ),
    ] = None
    set_columns: Annotated[
        str | None,
        Field(
            description="The source column listing, per record, the columns it sets (`array<string>`, or a "
            "comma-separated `string`; NULL = all it feeds): a listed column takes the record's value, NULL "
            "included; an unlisted one keeps the table's value.",
        ),
    ] = None
    ignore_null_updates: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="Fed source columns whose NULL in a record keeps the table's value instead of "
            "writing NULL.",
        ),
    ]
    snapshot: Annotated[
        SnapshotDeclaration | None,
        Field(
            description="The files are full snapshots (csv or parquet, without the op_time column, which "
            "each snapshot's time fills): diffed into inserts, updates and deletes."
        ),
    ] = None

    max_bad_records: MaxBadRecords = None
    encodings: Annotated[
        dict[str, str],
        Field(
            default_factory=dict,
            description="A `debezium` source's columns whose values arrive encoded when its records carry "
            "no `schema` (a record's schema decides when it has one): column -> Debezium's or Kafka "
            "Connect's logical type, e.g. `io.debezium.time.Date` (days since the epoch), "
            "`io.debezium.time.Timestamp` (ms), `io.debezium.time.MicroTimestamp`, "
            "`io.debezium.time.NanoTimestamp`, `io.debezium.time.ZonedTimestamp`, "
            "`org.apache.kafka.connect.data.Decimal` (base64, the declared column's scale).",
            examples=[{"shipped": "io.debezium.time.Date", "price": "org.apache.kafka.connect.data.Decimal"}],
        ),
    ]

    def with_defaults(self, defaults: SourceDefaults | None) -> SourceDeclaration:
        """This source with each field it does not set taken from `defaults`, where they set it."""
        if defaults is None:
            return self
        taken = {name: getattr(defaults, name) for name in defaults.model_fields_set - self.model_fields_set}
        return self.model_copy(update=taken)

    def spec(self, table_key: list[str]) -> SourceSpec:
        if self.format == "delta":
            if self.files or not self.table:
                raise ValueError(f"source {self.name}: a delta source names its `table`, not `files`.")
            locations: tuple[str, ...] = (self.table,)
        elif not self.files or self.table:
            raise ValueError(f"source {self.name}: a {self.format} source names its `files`, not a `table`.")
        else:
            locations = tuple(self.files)
        return SourceSpec(
            name=self.name,
            description=self.description,
            files=locations,
            columns=tuple(self.columns.items()),
            primary_key=tuple(self.primary_key or table_key),
            feeds=self.feeds,
            op_time=self.op_time,
            format=self.format,
            max_bad_records=self.max_bad_records,
            transform=self.transform,
            key_columns=tuple(self.key_columns),
            deletes=self.deletes,
            aggregates=self.aggregates,
            set_columns=self.set_columns,
            ignore_null_updates=tuple(self.ignore_null_updates),
            snapshot=None if self.snapshot is None else self.snapshot.spec(),
            encodings=self.encodings,
        )


class SourceHealthDeclaration(Declaration):
    """Non-blocking warnings on every source: freshness, schema drift (JSON), quarantine growth."""

    max_lag_hours: Annotated[
        float, Field(description="Warn when a source's newest op time is older than this.")
    ] = 24.0

    @property
    def max_lag(self) -> timedelta:
        return timedelta(hours=self.max_lag_hours)


class ChecksDeclaration(Declaration):
    """The table's asset checks."""

    primary_key: Annotated[
        bool, Field(description="Blocking: the key is unique and never NULL (`primary_key_unique_not_null`).")
    ] = True
    convergence: Annotated[
        bool,
        Field(
            description="Blocking: every row equals the join of its sources' latest states by op time with "
            "their declared delete rules, computed without the merge (`converges_to_source_join`)."
        ),
    ] = True
    rows_never_change: Annotated[
        bool,
        Field(
            description="Blocking: a row, once written, never changes (first-row tables; `rows_never_change`)."
        ),
    ] = False
    source_health: Annotated[
        SourceHealthDeclaration | None, Field(description="Source warnings; omit for none.")
    ] = None
    quarantine: Annotated[
        Literal["warn", "block"],
        Field(
            description="Records a source quarantined (`max_bad_records`): a warning under `source_health`, "
            "or `block`: a blocking `<source>_quarantine_growth` check on every quarantining source, which "
            "fails the run before the table applies the source when its latest ingest quarantined any."
        ),
    ] = "warn"


class CompactionDeclaration(Declaration):
    """The table's compaction job (`<table>_compaction_job`), its schedule and sensor, and its
    changelog export; a `write-only` table gets the defaults when this is omitted."""

    cron: Annotated[str, Field(description="Off-peak schedule of the compaction job.")] = "0 3 * * *"
    max_pending_commits: Annotated[int, Field(description="Compact above this many pending commits.")] = 10
    max_files: Annotated[int, Field(description="Compact above this many files.")] = 50
    max_pending_minutes: Annotated[
        float, Field(description="Compact when the oldest pending commit waited longer.")
    ] = 60.0
    z_order: Annotated[list[str], Field(default_factory=list, description="Columns to Z-order the files by.")]
    export: Annotated[
        Literal["debezium", "flink-json", "upsert", "retract", "append", "none"],
        Field(description="Encoding of the changelog export asset (`none`: no export)."),
    ] = "debezium"

    def policy(self) -> CompactionPolicy:
        return CompactionPolicy(
            cron=self.cron,
            max_pending_commits=self.max_pending_commits,
            max_files=self.max_files,
            max_pending_minutes=self.max_pending_minutes,
            z_order=tuple(self.z_order),
        )


class HistoryDeclaration(Declaration):
    """A history table (SCD type 2, `<group>/<table>_history`): one row per key per interval in which
    the tracked columns held one value, from `__START_AT` to `__END_AT` (op times; NULL: open)."""

    track: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="The value columns whose changes start a new interval (default: all of them).",
            examples=[["status", "amount"]],
        ),
    ]
    track_except: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="Or: every value column but these (op-time columns change with every record).",
            examples=[["status_ts", "amount_ts"]],
        ),
    ]

    def spec(self) -> HistorySpec:
        return HistorySpec(track=tuple(self.track), track_except=tuple(self.track_except))


class SqlTableDeclaration(Declaration):
    """A table defined by Spark SQL over the wide table, recomputed and overwritten in one Delta commit
    each time it is materialized (Flink's materialized table): `<group>/<name>`."""

    name: Annotated[str, Field(description="Table name (letters, digits, `_`).")]
    description: Annotated[str, Field(description="One line: what a row of it is.")]
    sql: Annotated[
        str,
        Field(
            description="Spark SQL over the wide table, named `{<table name>}` in it.",
            examples=["SELECT brand, count(*) AS products FROM {product_360} GROUP BY brand"],
        ),
    ]
    primary_key: Annotated[list[str], Field(description="The columns that identify a row of the result.")]
    cron: Annotated[
        str | None,
        Field(description="Refresh on this cron (null: whenever the wide table was materialized)."),
    ] = None


class AutomationDeclaration(Declaration):
    """What starts the table's job (`<table>_job`: ingest every source, then apply them)."""

    schedule: Annotated[str | None, Field(description="Cron of the job's schedule; null for none.")] = HOURLY
    sensor: Annotated[
        Literal["table", "per-source", "none"],
        Field(description="A new-data sensor for all sources, one per source's landing folder, or none."),
    ] = "table"
    run_failure_sensor: Annotated[bool, Field(description="Log a clear message when a run fails.")] = False
    eager: Annotated[
        bool,
        Field(description="Materialize the table as soon as a source was ingested (declarative automation)."),
    ] = False


def _definition(
    table: TableDeclaration,
) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...], dict[str, str]]:
    """(name, columns, primary key, options) from the columns form or from the DDL."""
    from wide_assets.options.common import option_text

    if table.ddl is None:
        if table.name is None or table.columns is None or table.primary_key is None:
            raise ValueError("a table declares `name`, `columns` and `primary_key`, or a `ddl`.")
        options = {key: option_text(value) for key, value in table.options.items()}
        return table.name, tuple(table.columns.items()), tuple(table.primary_key), options
    given = [f for f in ("columns", "primary_key", "options") if f in table.model_fields_set]
    if given:
        raise ValueError(f"a table declares either a `ddl` or {given}, not both.")
    # wide_assets.ddl is the Flink CREATE TABLE parser; imported by name, only for a table that uses it.
    parsed = importlib.import_module("wide_assets.ddl").parse_create_table(table.ddl)
    if table.name is not None and table.name != parsed.name:
        raise ValueError(f"the ddl creates {parsed.name!r}; the names must agree.")
    columns = tuple((c.name, c.type if c.nullable else f"{c.type} not null") for c in parsed.columns)
    return parsed.name, columns, tuple(parsed.primary_key), dict(parsed.options)


def _check_options(spec: WideTableSpec, table: TableDeclaration) -> None:
    """Parse the options as `WideTable.create` will: a misspelled or unsupported one is refused, at the
    option it names when the declaration lists it."""
    from wide_assets.errors import InvalidOptionError
    from wide_assets.options.common import UnparsableOption

    try:
        spec.definition()
    except InvalidOptionError as error:
        problem = f"table {spec.name}: {error}"
        if isinstance(error, UnparsableOption) and error.choices:
            problem += f" Valid values: {', '.join(error.choices)}{did_you_mean(error.value, error.choices)}."
        if table.ddl is not None:
            raise DeclarationProblem(problem, ("table", "ddl")) from error
        named = [key for key in re.findall(r"'([^']+)'", str(error)) if key in table.options]
        raise DeclarationProblem(problem, ("table", "options", *named[:1])) from error


def _source_at(error: ValueError, sources: list[SourceDeclaration]) -> tuple[str | int, ...]:
    """Where in the declaration a table-level refusal points: the history or the source it names, else
    the table; a column's type, at the column."""
    if ": history: " in str(error):
        return ("history",)
    for index, source in enumerate(sources):
        if str(error).startswith(f"source {source.name}:"):
            if "it feeds" in str(error):
                return ("sources", index, "feeds")
            return ("sources", index, *_column_at(error))
    return ("table", *_column_at(error))


def _column_at(error: ValueError) -> tuple[str, ...]:
    """("columns", <name>) when `error` refuses a declared column's type (as `specs` words it)."""
    typed = re.search(r": column (\w+) has type ", str(error))
    return ("columns", typed[1]) if typed else ()


def wide_table_spec(
    table: TableDeclaration,
    sources: list[SourceDeclaration],
    history: HistoryDeclaration | None = None,
    source_defaults: SourceDefaults | None = None,
) -> WideTableSpec:
    """The declaration as a `WideTableSpec`, validated: raises `DeclarationProblem` naming what is wrong
    and the field at fault."""
    try:
        name, columns, primary_key, options = _definition(table)
    except ValueError as error:
        where = ("table", "ddl") if table.ddl is not None else ("table",)
        raise DeclarationProblem(f"table {table.name or '(unnamed)'}: {error}", where) from error
    try:
        kept = history.spec() if history is not None else None
    except ValueError as error:
        raise DeclarationProblem(f"table {name}: {error}", ("history",)) from error
    declared = []
    for index, source in enumerate(sources):
        try:
            declared.append(source.with_defaults(source_defaults).spec(list(primary_key)))
        except ValueError as error:
            raise DeclarationProblem(str(error), ("sources", index, *_column_at(error))) from error
    try:
        spec = WideTableSpec(
            name=name,
            description=table.description,
            group=table.group or name,
            columns=columns,
            primary_key=primary_key,
            options=options,
            sources=tuple(declared),
            history=kept,
        )
    except ValueError as error:
        raise DeclarationProblem(str(error), _source_at(error, sources)) from error
    _check_options(spec, table)
    if spec.history is not None:
        _check_history(spec)
    return spec


def _check_history(spec: WideTableSpec) -> None:
    """Refuse a history the table's merge would not agree with, at the declaration's `history`."""
    from wide_assets.pipelines.history import history_problem

    problem = history_problem(spec)
    if problem:
        raise DeclarationProblem(f"table {spec.name}: no history can be kept: {problem}.", ("history",))
