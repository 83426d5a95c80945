"""A wide table's definition in Delta: creating the table and its commit log, the definition persisted
in the table's metadata, and the columns a new source adds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from wide_assets.errors import InvalidOptionError, TableStateError
from wide_assets.frames import arrow_schema
from wide_assets.schema import Column
from wide_assets.table import arbiter, change_feed
from wide_assets.table.log import CHANGELOG_SUFFIX, LOG_INFO, LOG_POSITION
from wide_assets.table_definition import BUCKET_COLUMN, TableDefinition

if TYPE_CHECKING:
    from wide_assets.table.storage import Storage

SPEC_PROPERTY = "wide_assets.table_definition"
URL_UNSAFE = " %#?"


def check_path(path: str) -> None:
    """Refuse a path Sail cannot address."""
    unsafe = sorted(set(URL_UNSAFE) & set(path))
    if unsafe:
        # Sail 0.7.2 URL-decodes local paths: it looks for such a table elsewhere, finds no commit
        # and reports an empty location (seen with a space), so refuse the path up front.
        raise InvalidOptionError(f"A table path must not contain any of {unsafe}: {path!r}.")


def stored_definition(path: str) -> TableDefinition:
    """The definition persisted with the wide table at `path` (read through delta-rs)."""
    if not arbiter.exists(path):
        raise TableStateError(f"No Delta table at {path}.")
    configuration = arbiter.open_table(path).metadata().configuration
    if SPEC_PROPERTY not in configuration:
        raise TableStateError(
            f"The Delta table at {path} is not a wide table (no '{SPEC_PROPERTY}' property)."
        )
    return TableDefinition.from_json(configuration[SPEC_PROPERTY])


def create(storage: Storage) -> None:
    """Create the log, then the table, then record its definition: a creation cut short anywhere is
    finished by creating again."""
    import pyarrow as pa
    from deltalake import DeltaTable

    # Every column is stored nullable: delta-rs's MERGE writes files whose columns are all nullable,
    # and Sail 0.7.2 refuses to read those into a NOT NULL table column. A write's validation
    # enforces the key and the NOT NULL columns instead.
    change_feed_requested = change_feed.check_requested(storage.definition, storage.path)
    declared = arrow_schema(storage.spark, storage.definition.columns)
    schema = pa.schema([field.with_nullable(True) for field in declared])
    if not arbiter.exists(storage.changelog_path):
        name = f"{Path(storage.path).name}{CHANGELOG_SUFFIX}"
        DeltaTable.create(
            storage.changelog_path,
            schema=_log_schema(schema),
            name=name,
            storage_options=arbiter.storage_options(storage.changelog_path),
        )
    if not arbiter.exists(storage.path):
        partition_by = None
        if storage.definition.bucketing is not None:
            schema = schema.append(pa.field(BUCKET_COLUMN, pa.int32(), nullable=False))
            partition_by = [BUCKET_COLUMN]
        # delta-rs adds the `variantType` feature to any table of writer version 7 it alters;
        # readers of deletion vectors (Spark 4, Sail, delta-rs) read that too.
        configuration = {}
        if storage.definition.deletion_vectors:
            configuration["delta.enableDeletionVectors"] = "true"
        if change_feed_requested:
            configuration[change_feed.PROPERTY] = "true"
        DeltaTable.create(
            storage.path,
            schema=schema,
            name=Path(storage.path).name,
            partition_by=partition_by,
            configuration=configuration or None,
            storage_options=arbiter.storage_options(storage.path),
        )
    elif arbiter.open_table(storage.path).version() != 0:
        raise TableStateError(f"The Delta table at {storage.path} holds data but is not a wide table.")
    record_definition(storage, storage.definition)


def record_definition(storage: Storage, spec: TableDefinition) -> None:
    """Persist `spec` as the table's definition (delta-rs only takes custom properties through ALTER)."""
    arbiter.open_table(storage.path).alter.set_table_properties(
        {SPEC_PROPERTY: spec.to_json()}, raise_if_not_exists=False
    )
    storage.definition = spec


def add_columns(storage: Storage, added: list[Column]) -> None:
    """Add nullable columns to the log first, the table second: until the definition names them,
    readers ignore them, and a repeated call adds only what is still missing."""
    from deltalake import Schema

    fields = Schema.from_arrow(arrow_schema(storage.spark, added)).fields
    for path in (storage.changelog_path, storage.path):
        table = arbiter.open_table(path)
        existing = set(table.schema().to_arrow().names)
        missing = [f for f in fields if f.name not in existing]
        if missing:
            table.alter.add_columns(missing)


def _log_schema(table_schema: Any) -> Any:
    """The commit log's Arrow schema: log columns, every table column (nullable), the marker JSON."""
    import pyarrow as pa

    arrow_types = {"bigint": pa.int64(), "string": pa.string()}
    position = [pa.field(c.name, arrow_types[c.type], nullable=c.nullable) for c in LOG_POSITION]
    table_fields = [field.with_nullable(True) for field in table_schema]
    info = pa.field(LOG_INFO.name, arrow_types[LOG_INFO.type], nullable=LOG_INFO.nullable)
    return pa.schema([*position, *table_fields, info])
