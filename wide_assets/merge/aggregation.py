"""Paimon `aggregation`: every column folds with its function; a retraction never deletes the row."""

from __future__ import annotations

from wide_assets.merge.context import ADD, DELETE, MergeContext
from wide_assets.merge.engine import MergeEngine, aggregate_step, retract_step
from wide_assets.options.common import MergeOptions


class Aggregation(MergeEngine):
    name = "aggregation"

    def key_only_delete_ignored(self, merge: MergeOptions) -> str | None:
        """A2/A3: a -D is a retraction of the values it carries (Paimon's AggregateMergeFunction
        retracts each field), and only `aggregation.remove-record-on-delete` removes the row."""
        if merge.ignore_delete or merge.remove_record_on_delete:
            return super().key_only_delete_ignored(merge)
        return (
            "on an aggregation table a -D retracts the values it carries and never removes the row "
            "(docs/semantics.md A2, A3), so a -D with only the key retracts only NULLs, as in Paimon; set "
            "'aggregation.remove-record-on-delete' = 'true' to make a -D remove the row"
        )

    def step(self, ctx: MergeContext) -> str:
        added: dict[str, str] = {"e": "true"}
        retracted: dict[str, str] = {}
        for column in ctx.values:
            if not ctx.written(column):
                continue
            if ctx.function(column) is None:
                # Sequence fields fold with `last_value` (A1): the last value in merge order, i.e. the
                # largest sequence, and NULL after a retraction (Paimon's FieldLastValueAgg.retract).
                added[ctx.aliases[column]] = ctx.ref("r", column)
                retracted[ctx.aliases[column]] = ctx.null(column)
                continue
            added.update(aggregate_step(ctx, column))
            retracted.update(retract_step(ctx, column))
        remove = ""
        if ctx.merge.remove_record_on_delete:
            remove = f"WHEN {DELETE} THEN {ctx.state(ctx.cleared())} "
        return f"CASE WHEN {ADD} THEN {ctx.state(added)} {remove}ELSE {ctx.state(retracted)} END"
