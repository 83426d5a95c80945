"""Declarative specs of a wide table and the sources that feed it; pure Python, validated on construction.

A spec is all a factory needs to build the Dagster assets, checks and job of one wide table, so a new
wide table is a new spec, not new code. Validation happens here, at definition load, so a typo in a
column mapping fails `dagster definitions validate` instead of a run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from wide_assets.errors import did_you_mean
from wide_assets.spark_types import type_problem

if TYPE_CHECKING:
    from wide_assets.table_definition import TableDefinition

__all__ = [
    "DELETES",
    "EMPTY_SNAPSHOT_RULES",
    "FORMATS",
    "IDENTIFIER",
    "JSON_FORMATS",
    "ROW_KINDS",
    "HistorySpec",
    "LakeTableSpec",
    "SnapshotSpec",
    "SourceSpec",
    "WideTableSpec",
    "op_time_family",
]

ROW_KINDS = ("+I", "-U", "+U", "-D")
# How landed change records are encoded: CSV or Parquet files with an optional `_row_kind` column,
# Debezium JSON envelopes (`before`/`after`/`op`/`ts_ms`), Flink's changelog JSON (`rowkind` plus the
# columns), or an append-only Delta table of such rows written by another system.
FORMATS = ("csv", "parquet", "debezium", "flink-json", "delta")
# The formats whose records are parsed line by line from JSON (see `cdc_json`).
JSON_FORMATS = ("debezium", "flink-json")
# What a source's delete (`-D`) means for the wide columns it feeds: the whole wide row goes, only
# its columns become NULL, or nothing happens. The table's options make the merge remove or clear;
# the declaration says what the sources mean, and the convergence check compares the two. `ignore`
# is the pipeline's own: the source's retractions are never written (`apply.source_changes`).
DELETES = ("remove-row", "clear-columns", "ignore")
# The Spark SQL type op times of several sources are compared in when a run merges them (`run_order`):
# dates and timestamps as timestamps, numbers as doubles, anything else as text.
_TEMPORAL = re.compile(r"(date|timestamp(_ntz|_ltz)?)", re.IGNORECASE)
_NUMERIC = re.compile(
    r"(tinyint|smallint|int|integer|bigint|byte|short|long|float|real|double|decimal(\(.*\))?)", re.I
)
# Names end up in asset keys, lake paths and unquoted SQL text, so they are plain identifiers.
# Table, group, source and asset names.
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _check_identifier(kind: str, name: str) -> None:
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(f"{kind} {name!r} must be a letter followed by letters, digits or '_'.")


def _check_columns(owner: str, columns: tuple[tuple[str, str], ...], primary_key: tuple[str, ...]) -> None:
    names = [name for name, _ in columns]
    for name, type_ in columns:
        _check_identifier(f"column of {owner}", name)
        problem = type_problem(type_)
        if problem:
            raise ValueError(f"{owner}: column {name} has type {type_!r}: {problem}.")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"{owner}: columns {duplicated} are declared more than once.")
    if not primary_key:
        raise ValueError(f"{owner}: a primary key is required.")
    missing = [k for k in primary_key if k not in names]
    if missing:
        raise ValueError(f"{owner}: primary key columns {missing} are not among its columns {names}.")


# What an empty snapshot of a snapshot source means: an error, or every row deleted.
EMPTY_SNAPSHOT_RULES = ("refuse", "truncate")


@dataclass(frozen=True)
class SnapshotSpec:
    """A source whose files are full snapshots (docs/semantics.md 7.3): the landed files whose names
    give the same `time_pattern` match are one snapshot, at the time that match reads in
    `time_format` (Python `strptime`); `empty` says what a snapshot without rows means."""

    time_pattern: str
    time_format: str
    empty: str = "refuse"

    def __post_init__(self) -> None:
        try:
            groups = re.compile(self.time_pattern).groups
        except re.error as error:
            raise ValueError(
                f"snapshot time_pattern {self.time_pattern!r} is not a regular expression: {error}."
            ) from None
        if groups != 1:
            raise ValueError(
                f"snapshot time_pattern {self.time_pattern!r} must capture the time in exactly one group, "
                f"not {groups} (e.g. 'customers_(\\d{{8}})\\.csv')."
            )
        if self.empty not in EMPTY_SNAPSHOT_RULES:
            raise ValueError(f"snapshot empty {self.empty!r} is not one of {EMPTY_SNAPSHOT_RULES}.")


@dataclass(frozen=True)
class SourceSpec:
    """A CDC source: landed change records whose rows update some columns of a wide table.

    `files` are glob patterns relative to the landing zone (for `format` "delta": the path of the
    Delta table, relative to the landing zone). A CSV or Parquet file, or a Delta table, may carry a
    `_row_kind` column (+I, -U, +U, -D; default +I). `feeds` maps source value columns to the
    wide-table columns they write; the source's primary key maps to the wide table's primary key by
    position, as in Flink's `INSERT INTO wide (user_id, item_id, rec_score) SELECT user_id, item_id,
    rec_score FROM source`. A source that a pipeline transforms itself (rather than feeding columns
    one to one) has no feeds.

    `format` is one of `FORMATS` (JSON formats hold one object per line; a Debezium record's `ts_ms`
    fills the `op_time` column). `max_bad_records` None rejects a run with any malformed record;
    a number moves malformed records to the source's quarantine table and fails only above it.
    `transform` is Spark SQL computing the wide-table rows from `{pending}` (the records not applied
    yet) and `{applied}` (every record up to the last pending one); without it `feeds` map one to
    one. With a transform, `feeds` describe column lineage and the columns written, and `key_columns`
    name the source columns holding the wide table's key (default: the source's primary key). A
    source with `aggregates` and no transform has its rows computed from them
    (`wide_assets.pipelines.aggregated`).

    What the records mean, for the table's convergence check: `op_time` orders them (arrival breaks
    ties); `deletes` is one of `DELETES`; `aggregates` (wide column -> Spark SQL aggregate) declares
    the value of each fed column of a source whose rows are not keyed by the table (`key_columns`):
    the aggregate over the latest record of each of its rows with that table key, where `_live` says
    whether that record is an insert or update (not a retraction), e.g. `count_if(_live)`.

    `encodings` (a Debezium source's column -> Debezium's or Kafka Connect's logical type name, e.g.
    `io.debezium.time.Date`) say how values arrive when the records carry no schema
    (`debezium_values`); a `org.apache.kafka.connect.data.Decimal` takes the declared column's scale.

    Per-record column sets (docs/semantics.md 7.1): `set_columns` names the source column listing, per
    record, the fed columns the record sets (an `array<string>`, or a `string` of comma-separated
    names; NULL = all of them): a listed column takes the record's value, NULL included, an unlisted
    one keeps the table's. `ignore_null_updates` lists fed columns whose NULL in a record keeps the
    table's value instead of writing NULL.
    """

    name: str
    description: str
    files: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...]
    feeds: Mapping[str, str] = field(default_factory=dict)
    op_time: str | None = None
    format: str = "csv"
    max_bad_records: int | None = None
    transform: str | None = None
    key_columns: tuple[str, ...] = ()
    deletes: str = "remove-row"
    aggregates: Mapping[str, str] = field(default_factory=dict)
    set_columns: str | None = None
    ignore_null_updates: tuple[str, ...] = ()
    snapshot: SnapshotSpec | None = None
    encodings: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_identifier("source name", self.name)
        if self.format not in FORMATS:
            raise ValueError(f"source {self.name}: format {self.format!r} is not one of {FORMATS}.")
        if self.deletes not in DELETES:
            raise ValueError(f"source {self.name}: deletes {self.deletes!r} is not one of {DELETES}.")
        if self.format == "delta" and len(self.files) != 1:
            raise ValueError(f"source {self.name}: a Delta source is one table path, not {list(self.files)}.")
        if self.format == "debezium" and self.op_time is None:
            raise ValueError(f"source {self.name}: a Debezium source needs an op_time column for ts_ms.")
        if self.max_bad_records is not None and self.max_bad_records < 0:
            raise ValueError(f"source {self.name}: max_bad_records must not be negative.")
        unknown_keys = [c for c in self.key_columns if c not in self.column_names]
        if unknown_keys:
            raise ValueError(f"source {self.name}: key columns {unknown_keys} are not among its columns.")
        object.__setattr__(self, "feeds", MappingProxyType(dict(self.feeds)))
        object.__setattr__(self, "aggregates", MappingProxyType(dict(self.aggregates)))
        object.__setattr__(self, "encodings", MappingProxyType(dict(self.encodings)))
        _check_columns(f"source {self.name}", self.columns, self.primary_key)
        if self.encodings:
            self._check_encodings()
        if not self.files:
            raise ValueError(f"source {self.name}: at least one file pattern is required.")
        if not self.description.strip() or "\n" in self.description.strip():
            raise ValueError(f"source {self.name}: the description must be one non-empty line.")
        unknown = [c for c in self.feeds if c not in self.column_names]
        if unknown:
            raise ValueError(f"source {self.name}: fed columns {unknown} are not among its columns.")
        keys = [c for c in self.feeds if c in self.wide_key]
        if keys:
            raise ValueError(f"source {self.name}: key columns {keys} map by position, not through feeds.")
        if len(set(self.feeds.values())) != len(self.feeds):
            raise ValueError(f"source {self.name}: two of its columns feed the same wide column.")
        if self.op_time is not None and self.op_time not in self.column_names:
            raise ValueError(f"source {self.name}: op-time column {self.op_time!r} is not among its columns.")
        if self.aggregates:
            self._check_aggregates()
        if self.set_columns is not None or self.ignore_null_updates:
            self._check_column_sets()
        if self.snapshot is not None:
            self._check_snapshot()

    def _check_snapshot(self) -> None:
        if self.format not in ("csv", "parquet"):
            raise ValueError(
                f"source {self.name}: snapshots are landed as csv or parquet files, not {self.format}."
            )
        op_type = dict(self.columns).get(self.op_time or "", "")
        if not _TEMPORAL.fullmatch(op_type.strip()):
            raise ValueError(
                f"source {self.name}: a snapshot source declares an op_time column of a date or timestamp "
                "type: each snapshot's time fills it (its files do not hold it)."
            )
        refused = [
            name
            for name, value in (
                ("max_bad_records", self.max_bad_records),
                ("transform", self.transform),
                ("set_columns", self.set_columns),
            )
            if value is not None
        ]
        if refused:
            raise ValueError(
                f"source {self.name}: a snapshot source cannot have {refused}: a row left out of a "
                "snapshot is a delete, so every row must be read as it is."
            )

    def _check_encodings(self) -> None:
        from wide_assets.pipelines.debezium_values import DECIMAL_ENCODINGS, ENCODINGS

        if self.format != "debezium":
            raise ValueError(
                f"source {self.name}: encodings are Debezium's; a {self.format} source has none."
            )
        unknown = [c for c in self.encodings if c not in self.column_names]
        if unknown:
            raise ValueError(
                f"source {self.name}: encodings name {unknown}, which are not among its columns "
                f"{list(self.column_names)}{did_you_mean(unknown[0], self.column_names)}."
            )
        for column, encoding in self.encodings.items():
            if encoding not in ENCODINGS:
                raise ValueError(
                    f"source {self.name}: column {column}'s encoding {encoding!r} is not one of "
                    f"{sorted(ENCODINGS)}{did_you_mean(encoding, ENCODINGS)}."
                )
            if encoding in DECIMAL_ENCODINGS and self.declared_scale(column) is None:
                raise ValueError(
                    f"source {self.name}: column {column} is declared {dict(self.columns)[column]!r}; "
                    f"{encoding} takes its scale from a decimal(p,s) column."
                )

    def declared_scale(self, column: str) -> int | None:
        """The scale of `column`'s declared DECIMAL type, None when it is no DECIMAL."""
        from wide_assets.decimals import DecimalType

        declared = DecimalType.parse(dict(self.columns)[column])
        return None if declared is None else declared.scale

    @property
    def has_column_sets(self) -> bool:
        """Whether its records say which columns they set (`set_columns`, `ignore_null_updates`)."""
        return self.set_columns is not None or bool(self.ignore_null_updates)

    def _check_column_sets(self) -> None:
        if self.transform is not None:
            raise ValueError(
                f"source {self.name}: set_columns and ignore_null_updates apply to fed columns; a source "
                "with a transform computes its rows itself."
            )
        if self.set_columns is not None:
            types = dict(self.columns)
            if self.set_columns not in types:
                raise ValueError(
                    f"source {self.name}: set_columns {self.set_columns!r} is not among its columns "
                    f"{list(self.column_names)}{did_you_mean(self.set_columns, self.column_names)}."
                )
            if self.set_columns in self.feeds or self.set_columns in self.wide_key:
                raise ValueError(
                    f"source {self.name}: set_columns {self.set_columns!r} lists the columns a record "
                    "sets; it cannot also be a key or fed column."
                )
            if types[self.set_columns].replace(" ", "").lower() not in ("string", "array<string>"):
                raise ValueError(
                    f"source {self.name}: set_columns {self.set_columns!r} has type "
                    f"{types[self.set_columns]!r}; declare it `array<string>` or `string` (comma-separated)."
                )
        not_fed = [c for c in self.ignore_null_updates if c not in self.feeds or c == self.op_time]
        if not_fed:
            fed = [c for c in self.feeds if c != self.op_time]
            raise ValueError(
                f"source {self.name}: ignore_null_updates {not_fed} are not value columns it feeds {fed}"
                f"{did_you_mean(not_fed[0], fed)}."
            )

    def _check_aggregates(self) -> None:
        if self.wide_key == self.primary_key:
            raise ValueError(
                f"source {self.name}: aggregates are over the rows of a source keyed apart from the table; "
                "name the source columns holding the table's key in key_columns."
            )
        fed = {wide for column, wide in self.feeds.items() if column != self.op_time}
        unfed = sorted(set(self.aggregates) - fed)
        if unfed:
            raise ValueError(
                f"source {self.name}: aggregates {unfed} are not columns it feeds {sorted(fed)}."
            )
        missing = sorted(fed - set(self.aggregates))
        if missing:
            raise ValueError(
                f"source {self.name}: it feeds {missing} without an aggregate; a source keyed apart from "
                "the table declares one per fed column (its op time excepted)."
            )

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def wide_key(self) -> tuple[str, ...]:
        """The source columns that map, by position, onto the wide table's primary key."""
        return self.key_columns or self.primary_key

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Columns every record must carry: its own key and the wide table's."""
        return tuple(dict.fromkeys((*self.primary_key, *self.wide_key)))


@dataclass(frozen=True)
class LakeTableSpec:
    """A table in the lake, written through `WideTable` with Paimon/Fluss options, and its asset group."""

    name: str
    description: str
    group: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_identifier("table name", self.name)
        _check_identifier("group", self.group)
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        _check_columns(f"table {self.name}", self.columns, self.primary_key)
        if not self.description.strip() or "\n" in self.description.strip():
            raise ValueError(f"table {self.name}: the description must be one non-empty line.")

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.column_names if c not in self.primary_key)

    def definition(self) -> TableDefinition:
        """The table's columns, key and options parsed as `WideTable.create` parses them (a misspelled
        or unsupported option raises `InvalidOptionError` here)."""
        from wide_assets.table_definition import TableDefinition

        return TableDefinition.build(self.columns, self.primary_key, self.options)


@dataclass(frozen=True)
class HistorySpec:
    """A history table (SCD type 2) kept beside a wide table: the value columns whose changes start a
    new interval, named (`track`) or all but some (`track_except`; neither: every value column)."""

    track: tuple[str, ...] = ()
    track_except: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.track and self.track_except:
            raise ValueError(
                "history: name the tracked columns (track) or the untracked ones (track_except), not both."
            )

    def tracked(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        """The tracked columns, in table order."""
        if self.track:
            return tuple(c for c in value_columns if c in self.track)
        return tuple(c for c in value_columns if c not in self.track_except)


@dataclass(frozen=True)
class WideTableSpec(LakeTableSpec):
    """A wide table and the sources feeding its columns one to one; a run merges their records in op-time
    order across sources (see `run_order`), whatever order they are listed in."""

    # Keyword-only, so it may follow the base class's defaulted `options`.
    sources: tuple[SourceSpec, ...] = field(kw_only=True)
    history: HistorySpec | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.sources:
            raise ValueError(f"table {self.name}: at least one source is required.")
        names = [s.name for s in self.sources]
        if self.name in names or len(set(names)) != len(names):
            raise ValueError(f"table {self.name}: source names {names} must be unique and differ from it.")
        for source in self.sources:
            if not source.feeds:
                raise ValueError(f"source {source.name}: it must feed at least one wide-table column.")
            if len(source.wide_key) != len(self.primary_key):
                raise ValueError(
                    f"source {source.name}: its key columns {list(source.wide_key)} must map one to one "
                    f"onto the table's primary key {list(self.primary_key)}."
                )
            targets = [c for c in source.feeds.values() if c not in self.value_columns]
            if targets:
                raise ValueError(
                    f"source {source.name}: it feeds {targets}, which are not value columns of "
                    f"{self.name} {list(self.value_columns)}{did_you_mean(targets[0], self.value_columns)}."
                )
        self._check_op_time_families()
        if self.history is not None:
            self._check_history(self.history)

    def _check_op_time_families(self) -> None:
        families = {
            source.name: _family(dict(source.columns)[source.op_time])
            for source in self.sources
            if source.op_time is not None
        }
        if len(set(families.values())) > 1:
            raise ValueError(
                f"table {self.name}: its sources' op times are of different kinds ({families}); a run merges "
                "the sources' records by op time, so declare them all dates/timestamps or all numbers."
            )

    def _check_history(self, history: HistorySpec) -> None:
        """The history folds every source's records by op time into the tracked columns' values."""
        owner = f"table {self.name}: history"
        for option, names in (("track", history.track), ("track_except", history.track_except)):
            for name in names:
                if name not in self.value_columns:
                    raise ValueError(
                        f"{owner}: {option} names {name!r}, which is not a value column of the table "
                        f"{list(self.value_columns)}{did_you_mean(name, self.value_columns)}."
                    )
        if not history.tracked(self.value_columns):
            raise ValueError(
                f"{owner}: no column is tracked; track_except leaves none of {list(self.value_columns)}."
            )
        for source in self.sources:
            if source.op_time is None:
                raise ValueError(
                    f"{owner}: source {source.name} has no op_time; the history orders every source's records "
                    "by op time and starts each interval at one, so declare it."
                )
            computed = [
                c
                for c in history.tracked(self.value_columns)
                if c in source.feeds.values() and (source.transform or source.aggregates)
            ]
            if computed:
                raise ValueError(
                    f"{owner}: tracked columns {computed} are computed from source {source.name}'s rows "
                    "(a transform or aggregates), not fed one to one by its records; leave them out "
                    "(track_except)."
                )
        types = {s.name: dict(s.columns)[s.op_time].strip().lower() for s in self.sources if s.op_time}
        if len(set(types.values())) > 1:
            raise ValueError(
                f"{owner}: its validity columns are typed like the sources' op times, which differ ({types}); "
                "declare them all of one type."
            )

    @property
    def history_validity_type(self) -> str:
        """The type of the history's `__START_AT`/`__END_AT`: the sources' op time's."""
        source = self.sources[0]
        return dict(source.columns)[source.op_time or ""]

    def column_map(self, source: SourceSpec) -> dict[str, str]:
        """Source column -> wide column for everything `source` writes: its key first, then its feeds."""
        return {**dict(zip(source.wide_key, self.primary_key, strict=True)), **source.feeds}

    def source(self, name: str) -> SourceSpec:
        """The source named `name`."""
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(
            f"table {self.name} has no source {name!r}; its sources are {[s.name for s in self.sources]}."
        )

    def fed_by(self, column: str) -> list[SourceSpec]:
        """The sources that write `column` (every source writes the primary key)."""
        return [s for s in self.sources if column in self.column_map(s).values()]


def _family(type_: str) -> str:
    if _TEMPORAL.fullmatch(type_.strip()):
        return "TIMESTAMP"
    if _NUMERIC.fullmatch(type_.strip()):
        return "DOUBLE"
    return "STRING"


def op_time_family(spec: WideTableSpec) -> str:
    """The Spark SQL type in which the op times of `spec`'s sources compare with each other."""
    families = [_family(dict(s.columns)[s.op_time]) for s in spec.sources if s.op_time is not None]
    return families[0] if families else "STRING"
