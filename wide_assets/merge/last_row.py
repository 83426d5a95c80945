"""Fluss default merge engine ("last row"): an upsert replaces the row, or its target columns."""

from __future__ import annotations

from wide_assets.merge.context import MergeContext
from wide_assets.merge.engine import target_upsert
from wide_assets.merge.fluss import NEW, OLD, FlussEngine, emit


class LastRow(FlussEngine):
    name = "last_row"
    wal_insert_as_update = True

    def update(self, ctx: MergeContext) -> str:
        if ctx.is_key_only_write:
            return "s"
        return emit(ctx, target_upsert(ctx), [("-U", OLD), ("+U", NEW)])
