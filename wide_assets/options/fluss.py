"""Fluss's options: `table.merge-engine`, delete behaviour, changelog images, the versioned engine's
version column, `fields.<f>.agg` functions and the auto-increment column, with Fluss's messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from wide_assets.aggregate_functions import FLUSS_FUNCTIONS
from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_list, type_name
from wide_assets.options.common import (
    FLUSS_FIELD_SUFFIXES,
    ChangelogImage,
    DeleteBehavior,
    FlussEngineName,
    MergeOptions,
    field_options,
    name_list,
    one_of,
    parse_bool,
    unparsable,
)
from wide_assets.schema import FieldFunction, Schema

# The engines `table.merge-engine` names; without it a table keeps the last row (`last_row` here).
FLUSS_ENGINES: tuple[FlussEngineName, ...] = ("first_row", "versioned", "aggregation")
DELETE_BEHAVIORS: tuple[DeleteBehavior, ...] = get_args(DeleteBehavior)
CHANGELOG_IMAGES: tuple[ChangelogImage, ...] = get_args(ChangelogImage)
VERSION_TYPES = ("int", "bigint", "timestamp", "timestamp_ntz")
# Every AggFunctionType, as Fluss's Flink DDL lists them when refusing an unknown one (sorted names).
FLUSS_FUNCTION_NAMES = (
    "bool_and",
    "bool_or",
    "first_value",
    "first_value_ignore_nulls",
    "last_value",
    "last_value_ignore_nulls",
    "listagg",
    "max",
    "min",
    "product",
    "rbm32",
    "rbm64",
    "string_agg",
    "sum",
)


def parse_fluss(schema: Schema, options: Mapping[str, str]) -> MergeOptions:
    written = options.get("table.merge-engine")
    # MergeEngineType.fromString: any case; `last_row` is the behaviour of no merge engine, not a name.
    engine = "last_row" if written is None else one_of(written.lower(), FLUSS_ENGINES)
    if engine is None:
        raise InvalidOptionError(f"Unsupported merge engine type: {written}")
    default_behavior = "allow" if engine == "last_row" else "ignore"
    raw_behavior = options.get("table.delete.behavior", default_behavior)
    behavior = one_of(raw_behavior.lower(), DELETE_BEHAVIORS)
    if behavior is None:
        raise unparsable(raw_behavior, "table.delete.behavior", DELETE_BEHAVIORS)
    if behavior == "allow" and engine in ("first_row", "versioned"):
        # FirstRowRowMerger's and VersionedRowMerger's words. (Fluss's server refuses such a table at
        # creation with "Table with 'FIRST_ROW' merge engine does not support delete operations. ...";
        # the conformance case fluss_first_row_delete_allow_is_error expects the row merger's.)
        raise InvalidOptionError(f"DELETE is not supported for the {engine} merge engine.")
    raw_image = options.get("table.changelog.image", "FULL")
    image = one_of(raw_image.upper(), CHANGELOG_IMAGES)
    if image is None:
        raise unparsable(raw_image, "table.changelog.image", CHANGELOG_IMAGES)
    version_column = options.get("table.merge-engine.versioned.ver-column")
    if engine == "versioned":
        if not version_column:
            raise InvalidOptionError(
                "'table.merge-engine.versioned.ver-column' must be set for versioned merge engine."
            )
        if version_column not in schema.column_names:
            raise InvalidOptionError(
                f"The version column '{version_column}' for versioned merge engine doesn't exist in schema."
            )
        if schema.column(version_column).base_type not in VERSION_TYPES:
            raise InvalidOptionError(
                f"The version column '{version_column}' for versioned merge engine must be one type of "
                f"[INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got {type_name(schema.column(version_column), 'fluss')}."
            )
    field_opts = field_options(options, FLUSS_FIELD_SUFFIXES)
    functions: dict[str, FieldFunction] = {}
    if engine == "aggregation" and image == "WAL":  # TableDescriptorValidation.checkMergeEngine
        raise InvalidOptionError(
            "Table with 'AGGREGATION' merge engine does not support 'WAL' changelog image mode. Aggregation "
            "merge engine tables require FULL changelog image mode for correct UNDO recovery. Please set "
            "'table.changelog.image' to 'FULL' or remove the setting."
        )
    if engine == "aggregation":
        for column in schema.value_columns:
            name = field_opts.get((column, "agg"), "last_value_ignore_nulls")
            if name not in FLUSS_FUNCTIONS:
                raise InvalidOptionError(
                    f"Unknown aggregation function for column '{column}': {name.lower()}\n"
                    f"Supported functions: {', '.join(FLUSS_FUNCTION_NAMES)}"
                )
            delimiter = field_opts.get((column, f"{name}.delimiter"), ",")
            if name in ("listagg", "string_agg") and not delimiter:  # AggFunctionType.validateParameter
                raise InvalidOptionError(
                    f"Invalid aggregation function configuration for column '{column}': Parameter "
                    f"'delimiter' for aggregation function '{name}' must be a non-empty string"
                )
            functions[column] = FieldFunction(column=column, name=name, delimiter=delimiter)
            FLUSS_FUNCTIONS[name].check_type(schema.column(column), name, "fluss")
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
        raise InvalidOptionError("Multiple auto increment columns are not supported yet.")
    name = names[0]
    if name not in schema.column_names:
        raise InvalidOptionError(
            f"Auto increment column {name} does not exist in table columns {java_list(schema.column_names)}."
        )
    if name in schema.primary_key:
        raise InvalidOptionError("Auto increment column can not be used as the primary key.")
    if schema.column(name).base_type not in ("int", "bigint"):
        raise InvalidOptionError("The data type of auto increment column must be INT or BIGINT.")
    return name
