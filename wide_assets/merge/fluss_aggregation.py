"""Fluss `aggregation`: the first write is stored as is; later upserts aggregate their target columns."""

from __future__ import annotations

from wide_assets.merge.context import MergeContext
from wide_assets.merge.engine import aggregate_step
from wide_assets.merge.fluss import NEW, OLD, FlussEngine, emit


class FlussAggregation(FlussEngine):
    name = "aggregation"

    def update(self, ctx: MergeContext) -> str:
        if ctx.is_key_only_write:
            return "s"
        updates: dict[str, str] = {}
        for column in ctx.values:
            if ctx.written(column):
                updates.update(aggregate_step(ctx, column))
        return emit(ctx, updates, [("-U", OLD), ("+U", NEW)])
