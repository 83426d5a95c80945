"""What every dialect's options share: the parsed `MergeOptions`, value parsing, dialect detection, and
the check of option names (misspelled, unsupported, or with no effect here)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from wide_assets.aggregate_functions import aggregator
from wide_assets.errors import InvalidOptionError, did_you_mean
from wide_assets.java_text import java_hash_order, java_list
from wide_assets.options import upstream
from wide_assets.schema import FieldFunction, Schema, SequenceGroup
from wide_assets.spark_types import check_type

Dialect = Literal["paimon", "fluss"]
PaimonEngineName = Literal["deduplicate", "partial-update", "aggregation", "first-row"]
# Fluss's engines as named here: `last_row` is the behaviour of no `table.merge-engine`.
FlussEngineName = Literal["last_row", "first_row", "versioned", "aggregation"]
EngineName = Literal[PaimonEngineName, FlussEngineName]
ChangelogProducer = Literal["none", "input", "lookup", "full-compaction"]
DeleteBehavior = Literal["allow", "ignore", "disable"]
ChangelogImage = Literal["FULL", "WAL"]

Choice = TypeVar("Choice", bound=str)

# Options with an effect here in either dialect: the physical layout (buckets, write-only writers,
# deletion vectors or copy-on-write), never the merged result.
LAYOUT_OPTIONS = frozenset(
    {"bucket", "bucket-key", "bucket.num", "bucket.key", "write-only", "deletion-vectors.enabled"}
)
# This project's own options (docs/semantics.md section 7), read in either dialect.
OWN_OPTIONS = frozenset({"wide-assets.tombstone-retention"})
# Delta table properties a table's options may set when it is created (`wide_assets.table.change_feed`).
DELTA_PROPERTIES = frozenset({"delta.enableChangeDataFeed"})
# The options each dialect's parser reads (`wide_assets.options.paimon`, `wide_assets.options.fluss`).
INTERPRETED_OPTIONS: dict[Dialect, frozenset[str]] = {
    "paimon": frozenset(
        {
            "merge-engine",
            "sequence.field",
            "sequence.field.sort-order",
            "ignore-delete",
            "first-row.ignore-delete",
            "deduplicate.ignore-delete",
            "partial-update.ignore-delete",
            "ignore-update-before",
            "partial-update.remove-record-on-delete",
            "partial-update.remove-record-on-sequence-group",
            "aggregation.remove-record-on-delete",
            "changelog-producer",
            "changelog-producer.row-deduplicate",
            "changelog-producer.row-deduplicate-ignore-fields",
            "full-compaction.delta-commits",
            "fields.default-aggregate-function",
        }
    ),
    "fluss": frozenset(
        {
            "table.merge-engine",
            "table.merge-engine.versioned.ver-column",
            "table.delete.behavior",
            "table.changelog.image",
            "sink.ignore-delete",
            "auto-increment.fields",
        }
    ),
}
# Options that change what Paimon's merge produces and that are not implemented here: refused, why.
UNSUPPORTED_OPTIONS = {
    "rowkind.field": "the row kind of a change is its `_row_kind` column",
    "primary-key": "declare the primary key as the table's primary key (PRIMARY KEY in DDL)",
    "primary-key.nullable": "primary key columns are NOT NULL",
    "record-level.expire-time": "rows never expire",
    "record-level.time-field": "rows never expire",
    "sequence.snapshot-ordering": "records are ordered by commit, then by `_offset` or `sequence.field`",
}
# Every other option Paimon or Fluss defines (or a Flink table declares, `connector`) only tunes their
# storage, files, reads, lookups, clients or jobs: accepted, and reported as having no effect here.
NO_EFFECT_OPTIONS = (
    upstream.PAIMON_CORE
    | upstream.PAIMON_FLINK
    | upstream.FLUSS_TABLE
    | upstream.FLUSS_CLIENT
    | upstream.FLUSS_FLINK
    | {"connector"}
) - (
    LAYOUT_OPTIONS
    | INTERPRETED_OPTIONS["paimon"]
    | INTERPRETED_OPTIONS["fluss"]
    | frozenset(UNSUPPORTED_OPTIONS)
)
# Option families Paimon passes to its file formats and callbacks (`parquet.*`, `file-index.<type>.*`,
# `commit.callback.<class>.param`, ...), and per-field storage options (`fields.<f>.stats-mode`, ...).
NO_EFFECT_PREFIXES = (
    "parquet.",
    "orc.",
    "avro.",
    "file-index.",
    "blob-descriptor.",
    "commit.callback.",
    "tag.callback.",
)
NO_EFFECT_FIELD_SUFFIXES = (
    "stats-mode",
    "map.storage-layout",
    "map.shared-shredding.max-columns",
    "map.shared-shredding.column-placement-policy",
    "pk-vector.",
    "pk-full-text.",
    "pk-btree.",
    "pk-bitmap.",
    "pk-multivalue.",
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
    "nested-key",
    "nested-key-null-strategy",
    "nested-sequence-field",
    "count-limit",
    "ts-field",
)
FLUSS_FIELD_SUFFIXES = ("agg", "listagg.delimiter", "string_agg.delimiter")


@dataclass(frozen=True)
class MergeOptions:
    """The merge semantics a table's options select, validated against its columns."""

    dialect: Dialect
    engine: EngineName
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    ignore_delete: bool = False
    ignore_update_before: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    functions: Mapping[str, FieldFunction] = field(default_factory=dict)
    remove_record_on_delete: bool = False
    remove_record_on_sequence_group: tuple[str, ...] = ()
    changelog_producer: ChangelogProducer = "none"
    row_deduplicate: bool = False
    row_deduplicate_ignore_fields: tuple[str, ...] = ()
    full_compaction_delta_commits: int = 1
    delete_behavior: DeleteBehavior = "allow"
    changelog_image: ChangelogImage = "FULL"
    version_column: str | None = None
    auto_increment: str | None = None
    # Paimon 'write-only': writers only append merged fragments; a dedicated compaction applies them.
    write_only: bool = False
    # Ours: how long a delete's sequence is kept per key, so older records do not bring it back.
    tombstone_retention_s: float | None = None

    @property
    def lookup_free_writes(self) -> bool:
        """Whether a write-only table's writers can skip looking up the stored rows, as Paimon's do: its
        commits log their records as written, and compaction (or a union read) folds them in. That
        equals folding commit by commit only when the stored row always comes first in the merge
        order (no `sequence.field`), no check depends on it (no aggregate function with an overflow
        check on its accumulator; no partial-update that rejects a delete merged with the stored row),
        and no key needs an assigned id. The other functions (`last_non_null_value`, `max`,
        `listagg`, ...) fold the same whenever it happens; a retraction they cannot take fails on
        the record alone, which the writer checks."""
        rejects_merged_deletes = self.engine == "partial-update" and not (
            self.sequence_groups or self.remove_record_on_delete or self.ignore_delete
        )
        return (
            self.write_only
            and self.dialect == "paimon"
            and self.engine in ("partial-update", "deduplicate", "first-row")
            and not rejects_merged_deletes
            and not self.sequence_fields
            and not any(aggregator(self.dialect, f.name).checks_accumulator for f in self.functions.values())
            and self.auto_increment is None
        )

    @property
    def produces_changelog(self) -> bool:
        """Whether the table has a changelog to read: every Fluss table, a Paimon table with a producer."""
        return self.dialect == "fluss" or self.changelog_producer != "none"

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


def option_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


class UnparsableOption(InvalidOptionError):
    """An option value its key cannot take, in upstream's words; `choices` are the values it can
    take when they are a list (a declaration's refusal names them; upstream's text does not)."""

    def __init__(self, message: str, value: str, choices: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.value = value
        self.choices = tuple(choices)


def unparsable(value: str, key: str, choices: Sequence[str] = ()) -> UnparsableOption:
    """The error for an option value of the wrong kind, worded as Paimon's `Options` (and Flink's
    `Configuration`, which it copies) word it; Fluss's server wraps it for its `table.*` options."""
    reason = f"Could not parse value '{value}' for key '{key}'."
    if key.startswith("table."):
        return UnparsableOption(f"Invalid value for config '{key}'. Reason: {reason}", value, choices)
    return UnparsableOption(reason, value, choices)


def parse_bool(
    options: Mapping[str, str], key: str, default: bool = False, main_key: str | None = None
) -> bool:
    """A boolean option; `main_key` is the key an error names when `key` is a fallback key of it."""
    value = options.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise unparsable(value, main_key or key, ("true", "false"))
    return value.strip().lower() == "true"


def name_list(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def one_of(value: str, choices: tuple[Choice, ...]) -> Choice | None:
    """`value` as the one of `choices` it equals (typed as that choice); None when it equals none."""
    return next((choice for choice in choices if choice == value), None)


def check_columns(schema: Schema, dialect: Dialect) -> None:
    names = schema.column_names
    if not names:
        raise InvalidOptionError("A wide table needs at least one column.")
    duplicated = java_hash_order(n for n in names if names.count(n) > 1)  # a HashSet upstream
    if duplicated:
        raise InvalidOptionError(
            f"Table column {java_list(names)} must not contain duplicate fields. Found: {java_list(duplicated)}"
        )
    if not schema.primary_key:
        raise InvalidOptionError("A wide table needs a primary key.")
    key = schema.primary_key
    duplicated = java_hash_order(k for k in key if key.count(k) > 1)
    if duplicated:
        # Paimon's Schema and Fluss's Schema (which prints its PrimaryKey constraint) refuse it alike.
        constraint = (
            java_list(key)
            if dialect == "paimon"
            else f"CONSTRAINT PK_{'_'.join(key)} PRIMARY KEY ({', '.join(key)})"
        )
        raise InvalidOptionError(
            f"Primary key constraint {constraint} must not contain duplicate columns. Found: {java_list(duplicated)}"
        )
    if any(k not in names for k in schema.primary_key):
        raise InvalidOptionError(
            f"Table column {java_list(names)} should include all primary key constraint "
            f"{java_list(schema.primary_key)}"
        )
    reserved = [n for n in names if n.startswith("_")]
    if reserved:
        raise InvalidOptionError(
            f"Column names starting with '_' are reserved for changelog metadata: {reserved}."
        )
    for column in schema.columns:
        check_type(column)


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


def dialect_of(options: Mapping[str, str]) -> Dialect:
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


def check_option_names(schema: Schema, options: Mapping[str, str], dialect: Dialect) -> tuple[str, ...]:
    """Refuse an option name that is misspelled (naming the closest valid one), names a column the table
    lacks, or asks for semantics not implemented here; return the names that have no effect here."""
    field_suffixes = PAIMON_FIELD_SUFFIXES if dialect == "paimon" else FLUSS_FIELD_SUFFIXES
    no_effect = []
    for key in options:
        if key in INTERPRETED_OPTIONS[dialect] or key in LAYOUT_OPTIONS or key in OWN_OPTIONS:
            continue
        if key in DELTA_PROPERTIES:
            continue
        if key in UNSUPPORTED_OPTIONS:
            raise InvalidOptionError(f"Option '{key}' is not supported here: {UNSUPPORTED_OPTIONS[key]}.")
        match = FIELD_OPTION.match(key)
        if match:
            _check_field_columns(schema, match["fields"], match["suffix"])
            suffix = match["suffix"]
            if suffix in field_suffixes:
                continue
            if dialect == "paimon" and suffix.startswith(NO_EFFECT_FIELD_SUFFIXES):
                no_effect.append(key)
                continue
            raise InvalidOptionError(
                f"Unknown option '{key}': '{suffix}' is not a per-field option of a {dialect.title()} table"
                f"{did_you_mean(suffix, field_suffixes)}."
            )
        if key in NO_EFFECT_OPTIONS or key.startswith(NO_EFFECT_PREFIXES):
            no_effect.append(key)
            continue
        known = sorted(
            INTERPRETED_OPTIONS[dialect] | LAYOUT_OPTIONS | OWN_OPTIONS | DELTA_PROPERTIES | NO_EFFECT_OPTIONS
        )
        raise InvalidOptionError(
            f"Unknown option '{key}' for a {dialect.title()} table{did_you_mean(key, known)}."
        )
    return tuple(sorted(no_effect))


def _check_field_columns(schema: Schema, fields: str, suffix: str) -> None:
    """A `fields.<f>.<suffix>` key must name columns of the table. Paimon checks each name of any key
    (SchemaValidation.validateFieldsPrefix) and names the first unknown one; only a sequence group
    names several columns in its key."""
    unknown = [name for name in name_list(fields) if name not in schema.column_names]
    if not unknown and suffix != "sequence-group" and fields not in schema.column_names:
        unknown = [fields]
    if unknown:
        raise InvalidOptionError(
            f"Field {unknown[0]} can not be found in table schema.{did_you_mean(unknown[0], schema.column_names)}"
        )


def field_options(options: Mapping[str, str], suffixes: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """`fields.<f>.<suffix>` options keyed by (f, suffix); their columns were checked by
    `check_option_names`."""
    found: dict[tuple[str, str], str] = {}
    for key, value in options.items():
        match = FIELD_OPTION.match(key)
        if match and key != "fields.default-aggregate-function" and match["suffix"] in suffixes:
            found[(match["fields"], match["suffix"])] = value
    return found
