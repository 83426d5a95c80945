"""Paimon `first-row`: the first row of a key by arrival is kept; the changelog is insert-only."""

from __future__ import annotations

from wide_assets.merge.context import ADD, RETRACT, MergeContext
from wide_assets.merge.engine import MergeEngine

# Paimon's words (FirstRowMergeFunction), on two lines.
RETRACT_REJECTED = (
    "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.\n"
    "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
)


class FirstRow(MergeEngine):
    name = "first-row"
    insert_only_changelog = True
    first_record_wins = True
    accepts_partial_write = False

    def guard(self, ctx: MergeContext) -> tuple[str, str] | None:
        return f"exists(recs, r -> {RETRACT})", RETRACT_REJECTED

    def step(self, ctx: MergeContext) -> str:
        first = ctx.state({"e": "true", **{ctx.aliases[c]: ctx.ref("r", c) for c in ctx.values}})
        return f"CASE WHEN s.e OR NOT {ADD} THEN s ELSE {first} END"
