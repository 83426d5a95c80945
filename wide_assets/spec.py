"""A wide table's declarative definition: columns, primary key and Paimon/Fluss options.

Parsing and validation are pure Python, so a bad definition fails at `create` before any I/O, with
the messages Paimon and Fluss users already search for.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from wide_assets.errors import InvalidOptionError

log = logging.getLogger(__name__)

Dialect = Literal["paimon", "fluss"]

PAIMON_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
FLUSS_ENGINES = ("last_row", "first_row", "versioned", "aggregation")
PAIMON_PRODUCERS = ("none", "input", "lookup", "full-compaction")
# Paimon's TIMESTAMP has no time zone (Spark's timestamp_ntz); TIMESTAMP_LTZ is Spark's timestamp.
SEQUENCE_TYPES = (
    "decimal",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "date",
    "timestamp",
    "timestamp_ntz",
)
VERSION_TYPES = ("int", "bigint", "timestamp", "timestamp_ntz")

# Options that tune storage or parallelism in Paimon/Fluss and do not change merge semantics.
NEUTRAL_OPTIONS = frozenset(
    {
        "bucket",
        "bucket.num",
        "bucket-key",
        "bucket.key",
        "write-only",
        "num-sorted-run.compaction-trigger",
        "changelog-producer.compaction-interval",
        "compaction.min.file-num",
        "file.format",
        "deletion-vectors.enabled",
        "table.datalake.enabled",
        "table.datalake.freshness",
        "table.auto-increment.cache-size",
    }
)
PAIMON_ONLY_PREFIXES = (
    "merge-engine",
    "sequence.field",
    "ignore-delete",
    "ignore-update-before",
    "partial-update.",
    "aggregation.",
    "first-row.",
    "deduplicate.",
    "changelog-producer",
    "full-compaction.",
)
FIELD_OPTION = re.compile(r"^fields\.(?P<fields>[^.]+(?:,[^.]+)*)\.(?P<suffix>.+)$")
PAIMON_FIELD_SUFFIXES = (
    "sequence-group",
    "aggregate-function",
    "ignore-retract",
    "list-agg-delimiter",
    "distinct",
)
FLUSS_FIELD_SUFFIXES = ("agg", "listagg.delimiter", "string_agg.delimiter")
NOT_NULL = re.compile(r"\s+not\s+null\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    """One column of a wide table: a Spark SQL type name and whether it may hold NULL."""

    name: str
    type: str
    nullable: bool = True

    @classmethod
    def parse(cls, name: str, type_text: str) -> Column:
        """`("a", "int not null")` -> Column("a", "int", nullable=False)."""
        nullable = not NOT_NULL.search(type_text)
        return cls(name, NOT_NULL.sub("", type_text).strip().lower(), nullable)

    @property
    def base_type(self) -> str:
        """The type name without parameters: `decimal(10,2)` -> `decimal`."""
        return self.type.split("(", 1)[0].split("<", 1)[0].strip()

    @property
    def ddl(self) -> str:
        return f"`{self.name}` {self.type}" + ("" if self.nullable else " NOT NULL")


@dataclass(frozen=True)
class SequenceGroup:
    """Paimon `fields.<seq>[,<seq2>].sequence-group = <protected columns>`."""

    sequence_fields: tuple[str, ...]
    protected: tuple[str, ...]

    @property
    def option_key(self) -> str:
        return f"fields.{','.join(self.sequence_fields)}.sequence-group"


@dataclass(frozen=True)
class FieldFunction:
    """The aggregate function of one column, with that column's function options."""

    column: str
    name: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False


@dataclass(frozen=True)
class TableSpec:
    """Columns, primary key and options of a wide table; `merge` holds the parsed semantics."""

    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        columns: Iterable[tuple[str, str] | Sequence[str] | Column],
        primary_key: Iterable[str],
        options: Mapping[str, object] | None = None,
    ) -> TableSpec:
        parsed = tuple(c if isinstance(c, Column) else Column.parse(c[0], c[1]) for c in columns)
        opts = {str(k): _option_text(v) for k, v in (options or {}).items()}
        spec = cls(parsed, tuple(primary_key), opts)
        spec.merge  # noqa: B018 - parse and validate eagerly so errors surface at create
        spec.bucketing  # noqa: B018
        spec.deletion_vectors  # noqa: B018
        return spec

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @cached_property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.column_names if c not in self.primary_key)

    def column(self, name: str) -> Column:
        return self.columns[self.column_names.index(name)]

    @cached_property
    def merge(self) -> MergeOptions:
        return MergeOptions.parse(self)

    @cached_property
    def deletion_vectors(self) -> bool:
        """Paimon `deletion-vectors.enabled`: a MERGE marks replaced rows in a deletion vector instead of
        rewriting their data files (Delta's `delta.enableDeletionVectors`)."""
        return _bool(self.options, "deletion-vectors.enabled")

    @cached_property
    def bucketing(self) -> Bucketing | None:
        """Fixed buckets (Paimon `bucket`/`bucket-key`, Fluss `bucket.num`/`bucket.key`), or None."""
        return Bucketing.parse(self)

    def to_json(self) -> str:
        return json.dumps(
            {
                "columns": [[c.name, c.type if c.nullable else f"{c.type} not null"] for c in self.columns],
                "primary_key": list(self.primary_key),
                "options": dict(self.options),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> TableSpec:
        data = json.loads(text)
        return cls.build(data["columns"], data["primary_key"], data["options"])


BUCKET_COLUMN = "_bucket"


@dataclass(frozen=True)
class Bucketing:
    """Rows placed in `count` buckets by hash(bucket key) mod count; each bucket is a Delta partition, so
    a MERGE rewrites and a lookup reads only the buckets its keys hash to."""

    count: int
    key: tuple[str, ...]

    @classmethod
    def parse(cls, spec: TableSpec) -> Bucketing | None:
        option = "bucket.num" if "bucket.num" in spec.options else "bucket"
        text = spec.options.get(option)
        if text is None:
            return None
        try:
            count = int(text)
        except ValueError:
            raise InvalidOptionError(f"Option '{option}' must be an integer, got '{text}'.") from None
        if count == -1 and option == "bucket":
            return None  # Paimon's dynamic bucket mode: no fixed placement
        if count < 1:
            raise InvalidOptionError(f"Option '{option}' must be a positive number of buckets, got {count}.")
        key_option = "bucket.key" if "bucket.key" in spec.options else "bucket-key"
        key = _names(spec.options.get(key_option, "")) or spec.primary_key
        outside = [k for k in key if k not in spec.primary_key]
        if outside:
            raise InvalidOptionError(
                f"Bucket key {list(key)} must be a subset of the primary key {list(spec.primary_key)}: "
                f"{outside} are not key columns, so one key's rows could land in different buckets."
            )
        return cls(count, key)

    def expression(self) -> str:
        """The bucket of a row as SQL; xxhash64 gives the same values on Sail and JVM Spark."""
        columns = ", ".join("`" + k.replace("`", "``") + "`" for k in self.key)
        return f"CAST(pmod(xxhash64({columns}), {self.count}) AS INT)"


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _bool(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"Option '{key}' must be 'true' or 'false', got '{value}'.")
    return value.strip().lower() == "true"


def _names(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class MergeOptions:
    """The merge semantics a table's options select, validated against its columns."""

    dialect: Dialect
    engine: str
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    ignore_delete: bool = False
    ignore_update_before: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    functions: Mapping[str, FieldFunction] = field(default_factory=dict)
    remove_record_on_delete: bool = False
    remove_record_on_sequence_group: tuple[str, ...] = ()
    changelog_producer: str = "none"
    row_deduplicate: bool = False
    row_deduplicate_ignore_fields: tuple[str, ...] = ()
    full_compaction_delta_commits: int = 1
    delete_behavior: str = "allow"
    changelog_image: str = "FULL"
    version_column: str | None = None
    auto_increment: str | None = None
    # Paimon 'write-only': writers only append merged fragments; a dedicated compaction applies them.
    write_only: bool = False

    @classmethod
    def parse(cls, spec: TableSpec) -> MergeOptions:
        _check_columns(spec)
        dialect = _dialect(spec.options)
        _warn_unknown(spec.options, dialect)
        return _parse_fluss(spec) if dialect == "fluss" else _parse_paimon(spec)

    @property
    def lookup_free_writes(self) -> bool:
        """Whether a write-only table's writers can skip looking up the stored rows, as Paimon's do: its
        commits log their records as written, and compaction (or a union read) folds them in. That
        equals folding commit by commit only when the stored row always comes first in the merge
        order (no `sequence.field`), no check depends on it (no aggregate function, whose overflow and
        retraction checks need the stored value; no partial-update that rejects a delete merged with
        the stored row), and no key needs an assigned id."""
        rejects_merged_deletes = self.engine == "partial-update" and not (
            self.sequence_groups or self.remove_record_on_delete or self.ignore_delete
        )
        return (
            self.write_only
            and self.dialect == "paimon"
            and self.engine in ("partial-update", "deduplicate", "first-row")
            and not rejects_merged_deletes
            and not self.sequence_fields
            and not self.functions
            and self.auto_increment is None
        )

    @property
    def changelog_at_compaction(self) -> bool:
        """Whether the changelog is produced when commits are folded together rather than per commit:
        Paimon's lookup/full-compaction producers on a write-only table (at its compaction), and the
        full-compaction producer every `full-compaction.delta-commits` commits."""
        if self.dialect != "paimon" or self.changelog_producer not in ("lookup", "full-compaction"):
            return False
        return self.write_only or (
            self.changelog_producer == "full-compaction" and self.full_compaction_delta_commits > 1
        )

    def group_of(self, column: str) -> SequenceGroup | None:
        """The sequence group protecting `column` (or whose sequence field it is)."""
        for group in self.sequence_groups:
            if column in group.protected or column in group.sequence_fields:
                return group
        return None


def _check_columns(spec: TableSpec) -> None:
    names = spec.column_names
    if not names:
        raise InvalidOptionError("A wide table needs at least one column.")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidOptionError(f"Columns are defined more than once: {duplicated}.")
    if not spec.primary_key:
        raise InvalidOptionError("A wide table needs a primary key.")
    missing = [k for k in spec.primary_key if k not in names]
    if missing:
        raise InvalidOptionError(
            f"Primary key columns {missing} can not be found in table schema {list(names)}."
        )
    reserved = [n for n in names if n.startswith("_")]
    if reserved:
        raise InvalidOptionError(
            f"Column names starting with '_' are reserved for changelog metadata: {reserved}."
        )


def _is_fluss_key(key: str) -> bool:
    match = FIELD_OPTION.match(key)
    if match:
        return match["suffix"] in FLUSS_FIELD_SUFFIXES
    return key.startswith("table.") or key in ("sink.ignore-delete", "auto-increment.fields")


def _is_paimon_key(key: str) -> bool:
    match = FIELD_OPTION.match(key)
    if match:
        return match["suffix"] in PAIMON_FIELD_SUFFIXES or key == "fields.default-aggregate-function"
    return key == "fields.default-aggregate-function" or key.startswith(PAIMON_ONLY_PREFIXES)


def _dialect(options: Mapping[str, str]) -> Dialect:
    fluss = sorted(k for k in options if _is_fluss_key(k))
    paimon = sorted(k for k in options if _is_paimon_key(k))
    if fluss and paimon:
        raise InvalidOptionError(
            f"Options mix the Paimon dialect {paimon} with the Fluss dialect {fluss}; "
            "a table uses one dialect (any 'table.*' option selects Fluss)."
        )
    if fluss and not any(k.startswith("table.") or k == "auto-increment.fields" for k in fluss):
        raise InvalidOptionError(
            f"Options {fluss} belong to the Fluss dialect, which a table selects with a 'table.*' option "
            "(for example 'table.merge-engine' or 'table.delete.behavior' = 'allow')."
        )
    return "fluss" if fluss else "paimon"


def _known(key: str, dialect: Dialect) -> bool:
    if key in NEUTRAL_OPTIONS:
        return True
    return _is_fluss_key(key) if dialect == "fluss" else _is_paimon_key(key)


def _warn_unknown(options: Mapping[str, str], dialect: Dialect) -> None:
    # Paimon and Fluss accept options they do not interpret; so do we, but say so, because a typo
    # in an option name otherwise silently selects the default behaviour.
    for key in options:
        if not _known(key, dialect):
            close = difflib.get_close_matches(key, [*NEUTRAL_OPTIONS, *_EXAMPLE_KEYS[dialect]], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            log.warning("Option '%s' has no effect on %s merge semantics%s", key, dialect, hint)


_EXAMPLE_KEYS: dict[Dialect, tuple[str, ...]] = {
    "paimon": (
        "merge-engine",
        "sequence.field",
        "sequence.field.sort-order",
        "ignore-delete",
        "ignore-update-before",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "aggregation.remove-record-on-delete",
        "changelog-producer",
        "changelog-producer.row-deduplicate",
        "changelog-producer.row-deduplicate-ignore-fields",
        "full-compaction.delta-commits",
        "fields.default-aggregate-function",
    ),
    "fluss": (
        "table.merge-engine",
        "table.merge-engine.versioned.ver-column",
        "table.delete.behavior",
        "table.changelog.image",
        "sink.ignore-delete",
    ),
}


def _field_options(spec: TableSpec, suffixes: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """`fields.<f>.<suffix>` options keyed by (f, suffix); unknown columns fail like Paimon does."""
    found: dict[tuple[str, str], str] = {}
    for key, value in spec.options.items():
        match = FIELD_OPTION.match(key)
        if not match or key == "fields.default-aggregate-function":
            continue
        suffix = match["suffix"]
        if suffix not in suffixes:
            continue
        fields = match["fields"]
        if suffix == "sequence-group":
            for name in _names(fields):
                if name not in spec.column_names:
                    raise InvalidOptionError(
                        f"The sequence field group: {name} can not be found in table schema."
                    )
        elif fields not in spec.column_names:
            raise InvalidOptionError(f"Field {fields} can not be found in table schema.")
        found[(fields, suffix)] = value
    return found


def _parse_paimon(spec: TableSpec) -> MergeOptions:
    options = spec.options
    engine = options.get("merge-engine", "deduplicate")
    if engine not in PAIMON_ENGINES:
        raise InvalidOptionError(f"Unknown merge-engine '{engine}'; expected one of {list(PAIMON_ENGINES)}.")
    ignore_delete = any(
        _bool(options, key)
        for key in ("ignore-delete", f"{engine}.ignore-delete", "partial-update.ignore-delete")
        if key in options
    )
    field_opts = _field_options(spec, PAIMON_FIELD_SUFFIXES)
    sequence_fields = _names(options.get("sequence.field", ""))
    groups = _sequence_groups(spec, field_opts)
    functions = _paimon_functions(spec, field_opts, sequence_fields, groups, engine)
    producer = options.get("changelog-producer", "none")
    if producer not in PAIMON_PRODUCERS:
        raise InvalidOptionError(
            f"Unknown changelog-producer '{producer}'; expected one of {list(PAIMON_PRODUCERS)}."
        )
    remove_on_delete = _bool(options, "partial-update.remove-record-on-delete") or (
        engine == "aggregation" and _bool(options, "aggregation.remove-record-on-delete")
    )
    remove_on_group = _names(options.get("partial-update.remove-record-on-sequence-group", ""))
    merge = MergeOptions(
        dialect="paimon",
        engine=engine,
        sequence_fields=sequence_fields,
        sequence_descending=options.get("sequence.field.sort-order", "ascending").lower() == "descending",
        ignore_delete=ignore_delete,
        ignore_update_before=_bool(options, "ignore-update-before"),
        sequence_groups=groups,
        functions=functions,
        remove_record_on_delete=remove_on_delete,
        remove_record_on_sequence_group=remove_on_group,
        changelog_producer=producer,
        row_deduplicate=_bool(options, "changelog-producer.row-deduplicate"),
        row_deduplicate_ignore_fields=_names(
            options.get("changelog-producer.row-deduplicate-ignore-fields", "")
        ),
        full_compaction_delta_commits=int(options.get("full-compaction.delta-commits", "1")),
        write_only=_bool(options, "write-only"),
    )
    _validate_paimon(spec, merge)
    return merge


def _sequence_groups(spec: TableSpec, field_opts: Mapping[tuple[str, str], str]) -> tuple[SequenceGroup, ...]:
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for (fields, suffix), value in field_opts.items():
        if suffix != "sequence-group":
            continue
        group = SequenceGroup(_names(fields), _names(value))
        for name in group.protected:
            if name not in spec.column_names:
                raise InvalidOptionError(f"Field {name} can not be found in table schema.")
            if name in owner and owner[name] != group.option_key:
                raise InvalidOptionError(
                    f"Field {name} is defined repeatedly by multiple groups: "
                    f"[{owner[name]}, {group.option_key}]."
                )
            owner[name] = group.option_key
        pk_fields = [f for f in (*group.sequence_fields, *group.protected) if f in spec.primary_key]
        if pk_fields:
            raise InvalidOptionError(
                f"Sequence group '{group.option_key}' contains primary key field {pk_fields[0]}."
            )
        groups.append(group)
    for group in groups:
        for seq in group.sequence_fields:
            if seq in owner and owner[seq] != group.option_key:
                raise InvalidOptionError(
                    f"Field {seq} is defined repeatedly by multiple groups: [{owner[seq]}, {group.option_key}]."
                )
            column = spec.column(seq)
            if column.base_type not in SEQUENCE_TYPES:
                raise InvalidOptionError(
                    f"Sequence field {seq} of '{group.option_key}' has type {column.type}; "
                    f"supported types are {list(SEQUENCE_TYPES)}."
                )
    return tuple(groups)


def _paimon_functions(
    spec: TableSpec,
    field_opts: Mapping[tuple[str, str], str],
    sequence_fields: tuple[str, ...],
    groups: tuple[SequenceGroup, ...],
    engine: str,
) -> dict[str, FieldFunction]:
    from wide_assets.merge.functions import PAIMON_FUNCTIONS

    default = spec.options.get("fields.default-aggregate-function")
    group_sequences = {f for g in groups for f in g.sequence_fields}
    functions: dict[str, FieldFunction] = {}
    for column in spec.value_columns:
        explicit = field_opts.get((column, "aggregate-function"))
        if column in sequence_fields or column in group_sequences:
            if explicit is not None:
                kind = "sequence group" if column in group_sequences else "sequence field"
                raise InvalidOptionError(
                    f"Should not define aggregation on {kind}: '{column}'."
                    if kind == "sequence field"
                    else f"Should not defined aggregation function on sequence group: [{column}]"
                )
            continue
        name = explicit or default
        if name is None and engine == "aggregation":
            name = "last_non_null_value"
        if name is None:
            continue
        name = {"first_not_null_value": "first_non_null_value"}.get(name, name)
        if name not in PAIMON_FUNCTIONS:
            raise InvalidOptionError(
                f"Unknown aggregate function '{name}' for field {column}; "
                f"supported: {sorted(PAIMON_FUNCTIONS)}."
            )
        functions[column] = FieldFunction(
            column=column,
            name=name,
            ignore_retract=_bool({"v": field_opts.get((column, "ignore-retract"), "false")}, "v"),
            delimiter=field_opts.get((column, "list-agg-delimiter"), ","),
            distinct=_bool({"v": field_opts.get((column, "distinct"), "false")}, "v"),
        )
        PAIMON_FUNCTIONS[name].check_type(spec.column(column), name)
    return functions


def _validate_paimon(spec: TableSpec, merge: MergeOptions) -> None:
    for name in merge.sequence_fields:
        if name not in spec.column_names:
            raise InvalidOptionError(f"Sequence field: '{name}' can not be found in table schema.")
        if merge.sequence_fields.count(name) > 1:
            raise InvalidOptionError(f"Sequence field '{name}' is defined repeatedly.")
    if merge.engine == "first-row" and merge.sequence_fields:
        raise InvalidOptionError("Do not support use sequence field on FIRST_MERGE merge engine.")
    if merge.ignore_delete and merge.remove_record_on_delete:
        raise InvalidOptionError(
            "ignore-delete and partial-update.remove-record-on-delete (or aggregation.remove-record-on-delete) "
            "have conflicting behavior so should not be enabled at the same time."
        )
    if merge.ignore_delete and merge.remove_record_on_sequence_group:
        raise InvalidOptionError(
            "ignore-delete and partial-update.remove-record-on-sequence-group have conflicting behavior "
            "so should not be enabled at the same time."
        )
    if merge.engine == "partial-update":
        if merge.remove_record_on_delete and merge.sequence_groups:
            raise InvalidOptionError(
                "sequence group and partial-update.remove-record-on-delete may not be enabled at the same time."
            )
        grouped = {c for g in merge.sequence_groups for c in g.protected}
        for column, function in merge.functions.items():
            if column not in grouped and function.name != "last_non_null_value":
                raise InvalidOptionError(
                    f"Must use sequence group for aggregation functions but not found for field {column}"
                )
        group_sequences = {f for g in merge.sequence_groups for f in g.sequence_fields}
        for name in merge.remove_record_on_sequence_group:
            if name not in group_sequences:
                raise InvalidOptionError(
                    f"field '{name}' defined in 'partial-update.remove-record-on-sequence-group' option "
                    f"must be part of sequence groups {sorted(group_sequences)}."
                )
    elif merge.sequence_groups or merge.remove_record_on_sequence_group:
        raise InvalidOptionError(
            "Sequence groups ('fields.<f>.sequence-group') are only supported by the partial-update merge engine."
        )
    if merge.full_compaction_delta_commits < 1:
        raise InvalidOptionError("full-compaction.delta-commits must be at least 1.")
    if merge.engine == "first-row" and merge.changelog_producer not in ("none", "lookup"):
        raise InvalidOptionError(
            "Only support 'none' and 'lookup' changelog-producer on FIRST_MERGE merge engine"
        )
    unknown = [f for f in merge.row_deduplicate_ignore_fields if f not in spec.column_names]
    if unknown:
        raise InvalidOptionError(f"Field {unknown[0]} can not be found in table schema.")


def _parse_fluss(spec: TableSpec) -> MergeOptions:
    from wide_assets.merge.functions import FLUSS_FUNCTIONS

    options = spec.options
    engine = options.get("table.merge-engine", "last_row")
    if engine not in FLUSS_ENGINES:
        raise InvalidOptionError(
            f"Unknown table.merge-engine '{engine}'; expected one of {list(FLUSS_ENGINES[1:])} or unset."
        )
    default_behavior = "allow" if engine == "last_row" else "ignore"
    behavior = options.get("table.delete.behavior", default_behavior).lower()
    if behavior not in ("allow", "ignore", "disable"):
        raise InvalidOptionError(
            f"Unknown table.delete.behavior '{behavior}'; expected 'allow', 'ignore' or 'disable'."
        )
    if behavior == "allow" and engine in ("first_row", "versioned"):
        raise InvalidOptionError(
            f"DELETE is not supported for the {engine} merge engine. "
            "Set 'table.delete.behavior' to 'ignore' or 'disable'."
        )
    image = options.get("table.changelog.image", "FULL").upper()
    if image not in ("FULL", "WAL"):
        raise InvalidOptionError(f"Unknown table.changelog.image '{image}'; expected 'FULL' or 'WAL'.")
    version_column = options.get("table.merge-engine.versioned.ver-column")
    if engine == "versioned":
        if not version_column:
            raise InvalidOptionError(
                "'table.merge-engine.versioned.ver-column' must be set for the versioned merge engine."
            )
        if version_column not in spec.column_names:
            raise InvalidOptionError(f"The version column {version_column} does not exist in the schema.")
        if spec.column(version_column).base_type not in VERSION_TYPES:
            raise InvalidOptionError(
                f"The version column {version_column} must be INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ, "
                f"not {spec.column(version_column).type}."
            )
    field_opts = _field_options(spec, FLUSS_FIELD_SUFFIXES)
    functions: dict[str, FieldFunction] = {}
    if engine == "aggregation":
        for column in spec.value_columns:
            name = field_opts.get((column, "agg"), "last_value_ignore_nulls")
            if name not in FLUSS_FUNCTIONS:
                raise InvalidOptionError(
                    f"Unknown aggregation function '{name}' for field {column}; supported: {sorted(FLUSS_FUNCTIONS)}."
                )
            delimiter = field_opts.get((column, "listagg.delimiter")) or field_opts.get(
                (column, "string_agg.delimiter"), ","
            )
            functions[column] = FieldFunction(column=column, name=name, delimiter=delimiter)
            FLUSS_FUNCTIONS[name].check_type(spec.column(column), name)
    elif any(suffix == "agg" for (_, suffix) in field_opts):
        raise InvalidOptionError("'fields.<f>.agg' needs 'table.merge-engine' = 'aggregation'.")
    auto_increment = _auto_increment_column(spec)
    return MergeOptions(
        dialect="fluss",
        engine=engine,
        ignore_delete=_bool(options, "sink.ignore-delete"),
        functions=functions,
        delete_behavior=behavior,
        changelog_image=image,
        version_column=version_column,
        auto_increment=auto_increment,
        changelog_producer="lookup",
        write_only=_bool(options, "write-only"),
    )


def _auto_increment_column(spec: TableSpec) -> str | None:
    """Fluss `auto-increment.fields`: one INT/BIGINT non-key column whose ids the table assigns."""
    names = _names(spec.options.get("auto-increment.fields", ""))
    if not names:
        return None
    if len(names) > 1:
        raise InvalidOptionError(f"A table can have only one auto-increment column, got {list(names)}.")
    name = names[0]
    if name not in spec.column_names:
        raise InvalidOptionError(f"The auto-increment column {name} does not exist in the schema.")
    if name in spec.primary_key or spec.column(name).base_type not in ("int", "bigint"):
        raise InvalidOptionError(
            f"The auto-increment column {name} must be a non-key column of type INT or BIGINT, "
            f"not {spec.column(name).type}."
        )
    return name
