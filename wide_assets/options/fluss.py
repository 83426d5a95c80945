"""Fluss's options: `table.merge-engine`, delete behaviour, changelog images, the versioned engine's
version column, `fields.<f>.agg` functions and the auto-increment column, with Fluss's messages."""

from __future__ import annotations

from collections.abc import Mapping

from wide_assets.aggregate_functions import FLUSS_FUNCTIONS
from wide_assets.errors import InvalidOptionError
from wide_assets.options.common import (
    FLUSS_FIELD_SUFFIXES,
    MergeOptions,
    field_options,
    name_list,
    parse_bool,
)
from wide_assets.schema import FieldFunction, Schema

FLUSS_ENGINES = ("last_row", "first_row", "versioned", "aggregation")
VERSION_TYPES = ("int", "bigint", "timestamp", "timestamp_ntz")


def parse_fluss(schema: Schema, options: Mapping[str, str]) -> MergeOptions:
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
        if version_column not in schema.column_names:
            raise InvalidOptionError(f"The version column {version_column} does not exist in the schema.")
        if schema.column(version_column).base_type not in VERSION_TYPES:
            raise InvalidOptionError(
                f"The version column {version_column} must be INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ, "
                f"not {schema.column(version_column).type}."
            )
    field_opts = field_options(schema, options, FLUSS_FIELD_SUFFIXES)
    functions: dict[str, FieldFunction] = {}
    if engine == "aggregation":
        for column in schema.value_columns:
            name = field_opts.get((column, "agg"), "last_value_ignore_nulls")
            if name not in FLUSS_FUNCTIONS:
                raise InvalidOptionError(
                    f"Unknown aggregation function '{name}' for field {column}; supported: {sorted(FLUSS_FUNCTIONS)}."
                )
            delimiter = field_opts.get((column, "listagg.delimiter")) or field_opts.get(
                (column, "string_agg.delimiter"), ","
            )
            functions[column] = FieldFunction(column=column, name=name, delimiter=delimiter)
            FLUSS_FUNCTIONS[name].check_type(schema.column(column), name)
    elif any(suffix == "agg" for (_, suffix) in field_opts):
        raise InvalidOptionError("'fields.<f>.agg' needs 'table.merge-engine' = 'aggregation'.")
    auto_increment = _auto_increment_column(schema, options)
    return MergeOptions(
        dialect="fluss",
        engine=engine,
        ignore_delete=parse_bool(options, "sink.ignore-delete"),
        functions=functions,
        delete_behavior=behavior,
        changelog_image=image,
        version_column=version_column,
        auto_increment=auto_increment,
        changelog_producer="lookup",
        write_only=parse_bool(options, "write-only"),
    )


def _auto_increment_column(schema: Schema, options: Mapping[str, str]) -> str | None:
    """Fluss `auto-increment.fields`: one INT/BIGINT non-key column whose ids the table assigns."""
    names = name_list(options.get("auto-increment.fields", ""))
    if not names:
        return None
    if len(names) > 1:
        raise InvalidOptionError(f"A table can have only one auto-increment column, got {list(names)}.")
    name = names[0]
    if name not in schema.column_names:
        raise InvalidOptionError(f"The auto-increment column {name} does not exist in the schema.")
    if name in schema.primary_key or schema.column(name).base_type not in ("int", "bigint"):
        raise InvalidOptionError(
            f"The auto-increment column {name} must be a non-key column of type INT or BIGINT, "
            f"not {schema.column(name).type}."
        )
    return name
