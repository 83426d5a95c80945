"""Paimon's options: the engines `merge-engine` selects, sequence fields and groups, aggregate functions,
delete handling and changelog producers, each validated with Paimon's own messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from wide_assets.aggregate_functions import NESTED_KEY_NULL_STRATEGIES, PAIMON_FUNCTIONS
from wide_assets.errors import InvalidOptionError, did_you_mean
from wide_assets.options.common import (
    PAIMON_FIELD_SUFFIXES,
    ChangelogProducer,
    MergeOptions,
    PaimonEngineName,
    field_options,
    name_list,
    one_of,
    parse_bool,
    unparsable,
)
from wide_assets.schema import FieldFunction, Schema, SequenceGroup

PAIMON_ENGINES: tuple[PaimonEngineName, ...] = get_args(PaimonEngineName)
PAIMON_PRODUCERS: tuple[ChangelogProducer, ...] = get_args(ChangelogProducer)
# The identifiers of Paimon's FieldAggregatorFactory implementations, in the order its service file
# (paimon-core META-INF/services/org.apache.paimon.factories.Factory) lists them; an unknown function
# name is refused with the whole list.
PAIMON_FACTORY_IDENTIFIERS = (
    "bool_and",
    "bool_or",
    "collect",
    "first_non_null_value",
    "first_not_null_value",
    "first_value",
    "hll_sketch",
    "last_non_null_value",
    "last_value",
    "listagg",
    "max",
    "merge_map",
    "merge_map_with_keytime",
    "min",
    "nested_update",
    "nested_partial_update",
    "primary-key",
    "product",
    "rbm32",
    "rbm64",
    "sum",
    "theta_sketch",
)
# Fallback keys of Paimon's `ignore-delete`: an unparsable value of one is reported under the main key.
IGNORE_DELETE_FALLBACKS = (
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)
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


def parse_paimon(schema: Schema, options: Mapping[str, str]) -> MergeOptions:
    written_engine = options.get("merge-engine", "deduplicate")
    engine = one_of(written_engine, PAIMON_ENGINES)
    if engine is None:
        raise unparsable(written_engine, "merge-engine", PAIMON_ENGINES)
    # Paimon's Options: the main key if set, else the first fallback key set, whatever the engine.
    ignore_delete_key = next((k for k in ("ignore-delete", *IGNORE_DELETE_FALLBACKS) if k in options), None)
    ignore_delete = ignore_delete_key is not None and parse_bool(
        options, ignore_delete_key, main_key="ignore-delete"
    )
    field_opts = field_options(options, PAIMON_FIELD_SUFFIXES)
    sequence_fields = name_list(options.get("sequence.field", ""))
    groups = _sequence_groups(schema, options, field_opts)
    functions = _paimon_functions(schema, options, field_opts, sequence_fields, groups, engine)
    written_producer = options.get("changelog-producer", "none")
    producer = one_of(written_producer, PAIMON_PRODUCERS)
    if producer is None:
        raise unparsable(written_producer, "changelog-producer", PAIMON_PRODUCERS)
    remove_on_delete = parse_bool(options, "partial-update.remove-record-on-delete") or (
        engine == "aggregation" and parse_bool(options, "aggregation.remove-record-on-delete")
    )
    remove_on_group = name_list(options.get("partial-update.remove-record-on-sequence-group", ""))
    merge = MergeOptions(
        dialect="paimon",
        engine=engine,
        sequence_fields=sequence_fields,
        sequence_descending=options.get("sequence.field.sort-order", "ascending").lower() == "descending",
        ignore_delete=ignore_delete,
        ignore_update_before=parse_bool(options, "ignore-update-before"),
        sequence_groups=groups,
        functions=functions,
        remove_record_on_delete=remove_on_delete,
        remove_record_on_sequence_group=remove_on_group,
        changelog_producer=producer,
        row_deduplicate=parse_bool(options, "changelog-producer.row-deduplicate"),
        row_deduplicate_ignore_fields=name_list(
            options.get("changelog-producer.row-deduplicate-ignore-fields", "")
        ),
        full_compaction_delta_commits=_parse_int(options, "full-compaction.delta-commits", 1),
        write_only=parse_bool(options, "write-only"),
    )
    _validate_paimon(schema, options, merge)
    return merge


def _parse_int(options: Mapping[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise unparsable(text, key) from None


def _sequence_groups(
    schema: Schema, options: Mapping[str, str], field_opts: Mapping[tuple[str, str], str]
) -> tuple[SequenceGroup, ...]:
    written = [
        (name_list(fields), name_list(value))
        for (fields, suffix), value in field_opts.items()
        if suffix == "sequence-group"
    ]
    try:
        return _checked_groups(schema, field_opts)
    except InvalidOptionError as refused:
        hint = _reversed_form_hint(schema, written)
        if not hint:
            raise
        sentence = str(refused) if str(refused).endswith(".") else f"{refused}."
        raise InvalidOptionError(sentence + hint) from None


def _checked_groups(schema: Schema, field_opts: Mapping[tuple[str, str], str]) -> tuple[SequenceGroup, ...]:
    groups: list[SequenceGroup] = []
    # Each column a group claims, as Paimon's PartialUpdateMergeFunction registers them group by group:
    # column -> (option key of the group, whether it is protected rather than a sequence field).
    claimed: dict[str, tuple[str, bool]] = {}
    for (fields, suffix), value in field_opts.items():
        if suffix != "sequence-group":
            continue
        group = SequenceGroup(name_list(fields), name_list(value))
        key, raw_key = group.option_key, f"fields.{fields}.{suffix}"  # messages name the key as written
        for name in group.protected:
            if name not in schema.column_names:
                raise InvalidOptionError(
                    f"Field {name} can not be found in table schema{did_you_mean(name, schema.column_names)}"
                )
            if name in schema.primary_key:
                raise InvalidOptionError(_group_contains_key(raw_key, name))
            if name in claimed and claimed[name][0] != key:
                raise InvalidOptionError(f"Field {name} is defined repeatedly by multiple groups: {raw_key}")
            claimed[name] = (key, True)
        for seq in group.sequence_fields:
            if seq in schema.primary_key:
                raise InvalidOptionError(_group_contains_key(raw_key, seq))
            # Paimon lets a later group's sequence field silently take over a column an earlier group
            # protects; a sequence field that another group protects is refused here.
            if seq in claimed and claimed[seq][1] and claimed[seq][0] != key:
                raise InvalidOptionError(f"Field {seq} is defined repeatedly by multiple groups: {raw_key}")
            claimed.setdefault(seq, (key, False))
        groups.append(group)
    for group in groups:
        for seq in group.sequence_fields:
            column = schema.column(seq)
            if column.base_type not in SEQUENCE_TYPES:
                raise InvalidOptionError(
                    f"Sequence field {seq} of '{group.option_key}' has type {column.type}; "
                    f"supported types are {list(SEQUENCE_TYPES)}."
                )
    return tuple(groups)


def _reversed_form_hint(schema: Schema, written: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> str:
    """The documented form of sequence groups written the other way round, as a widely read blog post
    writes them: `'fields.product_name.sequence-group' = 'catalog_op_ts'` (a value column as the key,
    its sequence field as the value), often with `'fields.catalog_op_ts.sequence-group' =
    'catalog_op_ts'`; "" when they do not look so. Recognised by a key that cannot order a group (not a
    sequence type) whose value can, or by a column grouped with itself that is also the value of
    another group. Read the documented way, such groups are always refused (a sequence field of the
    wrong type, a column in two groups), and the refusal then shows this form built from the user's
    own columns."""
    if any(name not in schema.column_names for key, value in written for name in (*key, *value)):
        return ""

    def can_order(names: tuple[str, ...]) -> bool:
        return all(schema.column(name).base_type in SEQUENCE_TYPES for name in names)

    self_grouped = {value for key, value in written if key == value}
    if not any(value and can_order(value) and not can_order(key) for key, value in written) and not any(
        value in self_grouped and key != value for key, value in written
    ):
        return ""
    documented: dict[tuple[str, ...], list[str]] = {}
    for key, value in written:
        documented.setdefault(value, []).extend(name for name in key if name not in value)
    wanted = ", ".join(
        f"'fields.{','.join(sequence)}.sequence-group' = '{','.join(protected)}'"
        for sequence, protected in documented.items()
        if protected
    )
    return (
        " These sequence groups look written the other way round: the key names the sequence field and "
        f"the value the columns it orders, as in {wanted}."
    )


def _group_contains_key(key: str, field: str) -> str:
    return (
        f"The sequence-group '{key}' contains primary key field '{field}', which is not allowed. "
        "Primary key columns cannot be put in sequence-group."
    )


def _paimon_functions(
    schema: Schema,
    options: Mapping[str, str],
    field_opts: Mapping[tuple[str, str], str],
    sequence_fields: tuple[str, ...],
    groups: tuple[SequenceGroup, ...],
    engine: PaimonEngineName,
) -> dict[str, FieldFunction]:
    default = options.get("fields.default-aggregate-function")
    group_of = {f: g for g in groups for f in g.sequence_fields}
    grouped = {c for g in groups for c in g.protected}
    functions: dict[str, FieldFunction] = {}
    for column in schema.value_columns:
        explicit = field_opts.get((column, "aggregate-function"))
        if column in group_of:
            if explicit is not None:  # Paimon <= 1.3 refused this too; Paimon 1.4 ignores the function
                raise InvalidOptionError(
                    f"Sequence field '{column}' of '{group_of[column].option_key}' orders its group and "
                    f"can not have an aggregate function ('fields.{column}.aggregate-function')."
                )
            continue
        if column in sequence_fields:
            if explicit is not None:
                raise InvalidOptionError(f"Should not define aggregation on sequence field: '{column}'.")
            continue
        name = explicit or default
        if name is None and engine == "aggregation":
            name = "last_non_null_value"
        if name is None:
            continue
        # Paimon builds the partial-update merge function (which checks this) before it looks the
        # function up.
        if engine == "partial-update" and column not in grouped and name != "last_non_null_value":
            raise InvalidOptionError(
                f"Must use sequence group for aggregation functions but not found for field {column}."
            )
        if name not in PAIMON_FUNCTIONS:
            raise InvalidOptionError(
                f"Could not find any factory for identifier '{name}' that implements "
                "'org.apache.paimon.mergetree.compact.aggregate.factory.FieldAggregatorFactory' in the "
                "classpath.\n\nAvailable factory identifiers are:\n\n" + "\n".join(PAIMON_FACTORY_IDENTIFIERS)
            )
        functions[column] = FieldFunction(
            column=column,
            name=name,
            ignore_retract=_field_bool(field_opts, column, "ignore-retract"),
            delimiter=field_opts.get((column, "list-agg-delimiter"), ","),
            distinct=_field_bool(field_opts, column, "distinct"),
            nested_key=name_list(field_opts.get((column, "nested-key"), "")),
            nested_sequence=name_list(field_opts.get((column, "nested-sequence-field"), "")),
            nested_key_nulls=_nested_key_nulls(field_opts, column),
            count_limit=_parse_int(options, f"fields.{column}.count-limit", 2**31 - 1),
            ts_field=field_opts.get((column, "ts-field")),
        )
        PAIMON_FUNCTIONS[name].check_type(schema.column(column), name, "paimon")
        PAIMON_FUNCTIONS[name].check_options(functions[column], schema.column(column))
    return functions


def _nested_key_nulls(field_opts: Mapping[tuple[str, str], str], column: str) -> str | None:
    """`fields.<column>.nested-key-null-strategy`, read as Paimon reads an enum option (any case)."""
    value = field_opts.get((column, "nested-key-null-strategy"))
    if value is None:
        return None
    if value.lower() not in NESTED_KEY_NULL_STRATEGIES:
        raise unparsable(value, f"fields.{column}.nested-key-null-strategy")
    return value.lower()


def _field_bool(field_opts: Mapping[tuple[str, str], str], column: str, suffix: str) -> bool:
    """A boolean `fields.<column>.<suffix>` option (false when unset)."""
    return parse_bool(
        {f"fields.{column}.{suffix}": field_opts.get((column, suffix), "false")}, f"fields.{column}.{suffix}"
    )


def _validate_paimon(schema: Schema, options: Mapping[str, str], merge: MergeOptions) -> None:
    for name in merge.sequence_fields:
        if name not in schema.column_names:
            raise InvalidOptionError(f"Sequence field: '{name}' can not be found in table schema.")
        if merge.sequence_fields.count(name) > 1:
            raise InvalidOptionError(f"Sequence field '{name}' is defined repeatedly.")
    if merge.engine == "first-row" and merge.sequence_fields:
        raise InvalidOptionError("Do not support use sequence field on FIRST_ROW merge engine.")
    if merge.ignore_delete and merge.remove_record_on_delete:
        # Paimon checks the partial-update option only; the aggregation one is refused likewise here.
        remove_key = (
            "partial-update.remove-record-on-delete"
            if parse_bool(options, "partial-update.remove-record-on-delete")
            else "aggregation.remove-record-on-delete"
        )
        raise InvalidOptionError(
            f"ignore-delete and {remove_key} have conflicting behavior so should not be enabled at the same time."
        )
    if merge.ignore_delete and merge.remove_record_on_sequence_group:
        raise InvalidOptionError(
            "ignore-delete and partial-update.remove-record-on-sequence-group have conflicting behavior "
            "so should not be enabled at the same time."
        )
    if merge.engine == "partial-update":
        if merge.remove_record_on_delete and merge.sequence_groups:
            raise InvalidOptionError(
                "sequence-group and partial-update.remove-record-on-delete have conflicting behavior "
                "so should not be enabled at the same time."
            )
        group_sequences = {f for g in merge.sequence_groups for f in g.sequence_fields}
        if any(name not in group_sequences for name in merge.remove_record_on_sequence_group):
            raise InvalidOptionError(
                f"field '{options['partial-update.remove-record-on-sequence-group']}' defined in "
                "'partial-update.remove-record-on-sequence-group' option must be part of sequence groups"
            )
    elif merge.sequence_groups or merge.remove_record_on_sequence_group:
        raise InvalidOptionError(
            "Sequence groups ('fields.<f>.sequence-group') are only supported by the partial-update merge engine."
        )
    if "full-compaction.delta-commits" in options and merge.changelog_producer == "lookup":
        raise InvalidOptionError(  # SchemaValidation.validateTableSchema
            "'full-compaction.delta-commits' is incompatible with 'changelog-producer'='lookup'. "
            "Use 'changelog-producer'='full-compaction' to get periodic full compaction with changelog "
            "generation, or remove 'full-compaction.delta-commits'."
        )
    if parse_bool(options, "aggregation.remove-record-on-delete"):
        ignoring = next((c for c, f in merge.functions.items() if f.ignore_retract), None)
        if ignoring is not None:  # FieldAggregatorFactory.create, printing the ConfigOption
            raise InvalidOptionError(
                "Key: 'aggregation.remove-record-on-delete' , default: false (fallback keys: []) and "
                f"fields.{ignoring}.ignore-retract have conflicting behavior so should not be enabled at the "
                "same time."
            )
    if merge.full_compaction_delta_commits < 1:
        raise InvalidOptionError("full-compaction.delta-commits must be at least 1.")
    if merge.engine == "first-row" and merge.changelog_producer not in ("none", "lookup"):
        raise InvalidOptionError(
            "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine"
        )
    unknown = [f for f in merge.row_deduplicate_ignore_fields if f not in schema.column_names]
    if unknown:
        raise InvalidOptionError(f"Field {unknown[0]} can not be found in table schema.")
