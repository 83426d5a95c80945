"""Fluss `versioned`: a row replaces the stored one iff its version is >= (NULL is the smallest)."""

from __future__ import annotations

from wide_assets.merge.context import MergeContext, compare_nulls_first
from wide_assets.merge.engine import target_upsert
from wide_assets.merge.fluss import NEW, OLD, FlussEngine, emit


class Versioned(FlussEngine):
    name = "versioned"
    accepts_partial_write = False
    deletes_rows = False

    def update(self, ctx: MergeContext) -> str:
        version = ctx.merge.version_column
        assert version is not None
        newer = f"{compare_nulls_first(ctx.ref('r', version), ctx.ref('s', version))} >= 0"
        return (
            f"CASE WHEN {newer} THEN {emit(ctx, target_upsert(ctx), [('-U', OLD), ('+U', NEW)])} ELSE s END"
        )
