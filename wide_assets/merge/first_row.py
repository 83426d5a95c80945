"""Paimon `first-row`: the first row of a key by arrival is kept; the changelog is insert-only."""

from __future__ import annotations

from wide_assets.merge.context import ADD, MergeContext
from wide_assets.merge.engine import MergeEngine

RETRACT_REJECTED = "First row merge engine can not accept DELETE/UPDATE_BEFORE records."


class FirstRow(MergeEngine):
    name = "first-row"
    insert_only_changelog = True
    accepts_partial_write = False

    def guard(self, ctx: MergeContext) -> tuple[str, str] | None:
        return "exists(recs, r -> r._kind IN ('-U', '-D'))", RETRACT_REJECTED

    def step(self, ctx: MergeContext) -> str:
        first = ctx.state({"e": "true", **{ctx.aliases[c]: ctx.ref("r", c) for c in ctx.values}})
        return f"CASE WHEN s.e OR NOT {ADD} THEN s ELSE {first} END"
