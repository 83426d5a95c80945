"""Paimon `deduplicate`: the last record in merge order wins as a whole row; a trailing retraction deletes."""

from __future__ import annotations

from wide_assets.merge.context import ADD, MergeContext
from wide_assets.merge.engine import (
    MergeEngine,
    partial_delete_removes_row,
    partial_delete_values,
    target_upsert,
)


class Deduplicate(MergeEngine):
    name = "deduplicate"

    def step(self, ctx: MergeContext) -> str:
        if ctx.target_columns is not None:
            upsert = ctx.state({"e": "true", **target_upsert(ctx)})
            removed = ctx.state(ctx.cleared())
            kept = ctx.state(partial_delete_values(ctx))
            return (
                f"CASE WHEN {ADD} THEN {upsert} WHEN NOT s.e THEN s "
                f"WHEN {partial_delete_removes_row(ctx)} THEN {removed} ELSE {kept} END"
            )
        replaced = ctx.state({"e": "true", **{ctx.aliases[c]: ctx.ref("r", c) for c in ctx.values}})
        return f"CASE WHEN {ADD} THEN {replaced} ELSE {ctx.state(ctx.cleared())} END"
