"""Paimon's options: the engines `merge-engine` selects, sequence fields and groups, aggregate functions,
delete handling and changelog producers, each validated with Paimon's own messages."""

from __future__ import annotations

from collections.abc import Mapping

from wide_assets.aggregate_functions import PAIMON_FUNCTIONS
from wide_assets.errors import InvalidOptionError
from wide_assets.options.common import (
    PAIMON_FIELD_SUFFIXES,
    MergeOptions,
    field_options,
    name_list,
    parse_bool,
)
from wide_assets.schema import FieldFunction, Schema, SequenceGroup

PAIMON_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
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


def parse_paimon(schema: Schema, options: Mapping[str, str]) -> MergeOptions:
    engine = options.get("merge-engine", "deduplicate")
    if engine not in PAIMON_ENGINES:
        raise InvalidOptionError(f"Unknown merge-engine '{engine}'; expected one of {list(PAIMON_ENGINES)}.")
    ignore_delete = any(
        parse_bool(options, key)
        for key in ("ignore-delete", f"{engine}.ignore-delete", "partial-update.ignore-delete")
        if key in options
    )
    field_opts = field_options(schema, options, PAIMON_FIELD_SUFFIXES)
    sequence_fields = name_list(options.get("sequence.field", ""))
    groups = _sequence_groups(schema, options, field_opts)
    functions = _paimon_functions(schema, options, field_opts, sequence_fields, groups, engine)
    producer = options.get("changelog-producer", "none")
    if producer not in PAIMON_PRODUCERS:
        raise InvalidOptionError(
            f"Unknown changelog-producer '{producer}'; expected one of {list(PAIMON_PRODUCERS)}."
        )
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
        full_compaction_delta_commits=int(options.get("full-compaction.delta-commits", "1")),
        write_only=parse_bool(options, "write-only"),
    )
    _validate_paimon(schema, options, merge)
    return merge


def _sequence_groups(
    schema: Schema, options: Mapping[str, str], field_opts: Mapping[tuple[str, str], str]
) -> tuple[SequenceGroup, ...]:
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for (fields, suffix), value in field_opts.items():
        if suffix != "sequence-group":
            continue
        group = SequenceGroup(name_list(fields), name_list(value))
        for name in group.protected:
            if name not in schema.column_names:
                raise InvalidOptionError(f"Field {name} can not be found in table schema.")
            if name in owner and owner[name] != group.option_key:
                raise InvalidOptionError(
                    f"Field {name} is defined repeatedly by multiple groups: "
                    f"[{owner[name]}, {group.option_key}]."
                )
            owner[name] = group.option_key
        pk_fields = [f for f in (*group.sequence_fields, *group.protected) if f in schema.primary_key]
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
            column = schema.column(seq)
            if column.base_type not in SEQUENCE_TYPES:
                raise InvalidOptionError(
                    f"Sequence field {seq} of '{group.option_key}' has type {column.type}; "
                    f"supported types are {list(SEQUENCE_TYPES)}."
                )
    return tuple(groups)


def _paimon_functions(
    schema: Schema,
    options: Mapping[str, str],
    field_opts: Mapping[tuple[str, str], str],
    sequence_fields: tuple[str, ...],
    groups: tuple[SequenceGroup, ...],
    engine: str,
) -> dict[str, FieldFunction]:
    default = options.get("fields.default-aggregate-function")
    group_sequences = {f for g in groups for f in g.sequence_fields}
    functions: dict[str, FieldFunction] = {}
    for column in schema.value_columns:
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
            ignore_retract=parse_bool({"v": field_opts.get((column, "ignore-retract"), "false")}, "v"),
            delimiter=field_opts.get((column, "list-agg-delimiter"), ","),
            distinct=parse_bool({"v": field_opts.get((column, "distinct"), "false")}, "v"),
        )
        PAIMON_FUNCTIONS[name].check_type(schema.column(column), name)
    return functions


def _validate_paimon(schema: Schema, options: Mapping[str, str], merge: MergeOptions) -> None:
    for name in merge.sequence_fields:
        if name not in schema.column_names:
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
    unknown = [f for f in merge.row_deduplicate_ignore_fields if f not in schema.column_names]
    if unknown:
        raise InvalidOptionError(f"Field {unknown[0]} can not be found in table schema.")
