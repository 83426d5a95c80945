"""The `dagster/column_schema` of the tables the pipelines write: columns, nullability, primary key."""

import dagster as dg

CDC_DESCRIPTIONS = {
    "_row_kind": "Change kind: +I insert, -U/+U update before/after, -D delete.",
    "_offset": "Arrival order across all ingested files of the source.",
    "_source_file": "Landed file the record came from, relative to the landing zone.",
    "_source_line": "Line of the record in its file (the header is line 1).",
    "_source_hash": "SHA-256 of the landed file; a file is ingested once per content.",
}


def table_schema(columns: tuple[tuple[str, str], ...], primary_key: tuple[str, ...]) -> dg.TableSchema:
    """The `dagster/column_schema` of a table: its columns, their nullability and its key."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                type_,
                description=CDC_DESCRIPTIONS.get(name),
                constraints=dg.TableColumnConstraints(nullable=name not in primary_key),
            )
            for name, type_ in columns
        ],
        constraints=dg.TableConstraints(other=[f"primary key ({', '.join(primary_key)})"]),
    )
