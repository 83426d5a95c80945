"""The merge-engine contract: a fold step over one key's records, as Spark SQL text.

Paimon's MergeFunction model: every record of a key (the stored row first, as the earliest arrival)
is folded into a state, in merge order. Each engine module defines one `MergeEngine`; functions on
single columns live in `wide_assets/aggregate_functions/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wide_assets.aggregate_functions import Operands, aggregator, retraction_unsupported
from wide_assets.errors import InvalidInputError
from wide_assets.merge.context import RETRACT, MergeContext, all_of
from wide_assets.options.common import MergeOptions


@dataclass(frozen=True)
class ColumnFold:
    """One of the independent folds a batch of inserts and updates splits into: the `columns` it owns,
    which records touch them (`active`, SQL over a batch row's aliased columns) and the state
    updates of one step (state field -> SQL over the fold's `s` and `r`, as in `MergeEngine.step`)."""

    columns: tuple[str, ...]
    active: str
    updates: Mapping[str, str]


class MergeEngine:
    """A Paimon-style engine: one changelog transition per key per commit (before -> after)."""

    name = ""
    # Fluss engines emit CDC per record; Paimon engines per key and commit.
    per_record = False
    # Paimon's first-row: a key's changelog is its first +I and nothing afterwards.
    insert_only_changelog = False
    # Paimon's first-row and Fluss's first_row: a key's first record is its row for good.
    first_record_wins = False
    accepts_partial_write = True

    def step(self, ctx: MergeContext) -> str:
        """SQL for the state after merging record `r` into state `s`."""
        raise NotImplementedError

    def column_folds(self, ctx: MergeContext) -> list[ColumnFold] | None:
        """The fold of a batch with no retraction, split into independent folds over disjoint column
        sets (each over only the records that touch it, the stored row first); None where the columns
        depend on each other. Each fold carries a few columns instead of the whole row, and records
        that do not touch its columns never enter it."""
        return None

    def guard(self, ctx: MergeContext) -> tuple[str, str] | None:
        """(condition over a key's `recs` array, error message): the key's records cannot be merged.
        Only a batch with retractions is asked (`plan.refusal_query`): a guard refuses retractions."""
        return None

    @property
    def partial_write_refused(self) -> str:
        """The refusal of a partial write by an engine that takes whole rows only (Fluss's words)."""
        return f"Partial update is not supported for the {self.name} merge engine."

    def check_write(self, ctx: MergeContext) -> None:
        """Refuse a partial write the engine cannot take. A write of only the key is not one: its
        deletes are whole-row deletes (`DELETE FROM t WHERE k = ...`); its upserts are refused per
        record, when the records are read (`batch.prepare_batch`)."""
        if ctx.is_partial_write and not ctx.is_key_only_write and not self.accepts_partial_write:
            raise InvalidInputError(self.partial_write_refused)

    def key_only_delete_ignored(self, merge: MergeOptions) -> str | None:
        """Why a `-D` that carries only the key leaves its row in place under `merge`'s options, and
        which option would make it remove the row; None where it removes the row (or where the merge
        refuses it with its own message, e.g. Paimon's first-row and partial-update without a delete
        option). Paimon: `ignore-delete` drops it; the engines say the rest."""
        if merge.ignore_delete:
            return (
                "the table sets 'ignore-delete', so Paimon drops every -D and -U before the merge "
                "(docs/semantics.md 0.1); without it a key-only -D removes the row of a deduplicate table, "
                "and of a partial-update or aggregation table that sets "
                "'partial-update.remove-record-on-delete' or 'aggregation.remove-record-on-delete'"
            )
        return None


def aggregate_step(ctx: MergeContext, column: str, reversed_order: bool = False) -> dict[str, str]:
    """State updates that fold `r`'s value of `column` into the accumulator with its function."""
    function = ctx.function(column)
    assert function is not None
    fn = aggregator(ctx.merge.dialect, function.name)
    operands = Operands(
        ctx.ref("s", column), ctx.ref("r", column), ctx.column(column), function, ctx.seen("s", column)
    )
    value = fn.agg_reversed(operands) if reversed_order else fn.agg(operands)
    updates = {ctx.aliases[column]: value}
    if fn.stateful:
        updates[ctx.seen("s", column).split(".", 1)[1]] = "true"
    return updates


def retract_step(ctx: MergeContext, column: str) -> dict[str, str]:
    """State updates that retract `r`'s value of `column` from the accumulator (or fail)."""
    function = ctx.function(column)
    assert function is not None
    if function.ignore_retract:
        return {}
    fn = aggregator(ctx.merge.dialect, function.name)
    operands = Operands(
        ctx.ref("s", column), ctx.ref("r", column), ctx.column(column), function, ctx.seen("s", column)
    )
    value = fn.retract(operands)
    return {ctx.aliases[column]: value if value is not None else retraction_unsupported(function.name)}


def target_upsert(ctx: MergeContext) -> dict[str, str]:
    """Fluss write model: target columns take the record's value (NULL included), others are kept."""
    return {ctx.aliases[c]: ctx.ref("r", c) for c in ctx.values if ctx.written(c)}


def partial_delete_removes_row(ctx: MergeContext) -> str:
    """Fluss W3: a delete with target columns removes the row only if every other value is NULL.

    A delete that names only the key is a whole-row delete (`DELETE FROM t WHERE k = ...`), not a
    partial delete of no columns, which would leave any row with a value untouched."""
    if ctx.is_key_only_write:
        return "true"
    others = [c for c in ctx.values if not ctx.written(c)]
    return all_of([f"{ctx.ref('s', c)} IS NULL" for c in others])


def partial_delete_values(ctx: MergeContext) -> dict[str, str]:
    return {ctx.aliases[c]: ctx.null(c) for c in ctx.values if ctx.written(c)}


def retraction_merged_with_others() -> str:
    """A key's records hold a retraction that is merged with other records (stored row included)."""
    return f"size(recs) > 1 AND exists(recs, r -> {RETRACT})"
