"""Per-record column sets: a record names the columns it sets; the others keep their stored values.

A batch may carry `_set_columns` (array of table column names; NULL = every column). Before the
table's engine folds an insert or update, each value column the record does not list takes the value
the fold holds for it so far (the stored row's, or an earlier record's of the same commit), so the
engine sees a record that sets exactly the listed columns, NULL included. A sequence group none of
whose protected columns is listed is not touched by the record at all: its sequence fields are made
NULL, which P6 reads as "not this group"; `sequence.field` is always the record's own. Retractions and the stored row are folded as they are.
docs/semantics.md, section 7.1, has the rules and the refused combinations.
"""

from __future__ import annotations

from wide_assets.merge.context import MergeContext
from wide_assets.options.common import MergeOptions
from wide_assets.sql import ADDS, kind_in, named_struct
from wide_assets.table_definition import TableDefinition

SET_COLUMNS = "_set_columns"

# Engines that keep a record whole or fold every value into an accumulator: a column a record does
# not set has no meaning there.
_WHOLE_RECORD_ENGINES = {
    ("paimon", "first-row"): "the first record of a key is kept whole",
    ("fluss", "first_row"): "the first record of a key is kept whole",
    ("fluss", "versioned"): "a newer version replaces the whole row (V3 refuses partial updates)",
    ("paimon", "aggregation"): "every column is folded into its accumulator, a NULL already leaves it alone",
    ("fluss", "aggregation"): "every column is folded into its accumulator, a NULL already leaves it alone",
}


def column_sets_refused(spec: TableDefinition) -> str | None:
    """Why a write to a table of `spec` cannot carry per-record column sets, or None when it can."""
    merge: MergeOptions = spec.merge
    why = _WHOLE_RECORD_ENGINES.get((merge.dialect, merge.engine))
    if why is not None:
        return f"the {merge.engine} merge engine takes no per-record column sets: {why}"
    if merge.functions:
        listed = ", ".join(sorted(merge.functions))
        return (
            f"columns {listed} have aggregate functions, which fold every record's value: a column set "
            "cannot say which of them a record leaves alone (a NULL already does)"
        )
    if merge.lookup_free_writes:
        return (
            "the table is write-only: its records are folded at compaction, from the log, where their "
            "column sets are not kept"
        )
    return None


def masked_record(ctx: MergeContext, state: str, record: str) -> str:
    """The record `record` as the engine folds it into `state`: see the module docstring."""
    listed_by_name = {c: f"array_contains({record}.{SET_COLUMNS}, '{c}')" for c in ctx.values}
    applies = f"({record}.{SET_COLUMNS} IS NOT NULL AND NOT {record}._stored AND {kind_in(record + '._kind', ADDS)})"
    sequence_fields = {f: g for g in ctx.merge.sequence_groups for f in g.sequence_fields}
    fields = {name: f"{record}.{name}" for name in ("_rank", "_kind", "_stored", "_arrival", "_starts")}
    for column in ctx.values:
        alias = ctx.aliases[column]
        value = f"{record}.{alias}"
        group = sequence_fields.get(column)
        if column in ctx.merge.sequence_fields:
            masked = value  # `sequence.field` orders whole records: always the record's own
        elif group is not None:
            touched = " OR ".join(listed_by_name[c] for c in group.protected) or "false"
            masked = f"CASE WHEN {applies} AND NOT ({touched}) THEN CAST(NULL AS {ctx.fold_type(column)}) ELSE {value} END"
        else:
            kept = f"map_entries({state}.{alias})" if ctx.is_map(column) else f"{state}.{alias}"
            masked = f"CASE WHEN {applies} AND NOT {listed_by_name[column]} THEN {kept} ELSE {value} END"
        fields[alias] = masked
    fields[SET_COLUMNS] = f"{record}.{SET_COLUMNS}"
    return named_struct(fields)


def with_column_sets(ctx: MergeContext, step: str) -> str:
    """`step` (over `s` and `r`) applied to the masked record instead of `r`."""
    return f"aggregate(array({masked_record(ctx, 's', 'r')}), s, (s, r) -> {step})"
