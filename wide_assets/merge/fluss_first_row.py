"""Fluss `first_row`: the first row of a key is kept; later upserts change nothing and emit nothing."""

from __future__ import annotations

from wide_assets.merge.context import MergeContext
from wide_assets.merge.fluss import FlussEngine


class FlussFirstRow(FlussEngine):
    name = "first_row"
    first_record_wins = True
    accepts_partial_write = False
    deletes_rows = False

    def update(self, ctx: MergeContext) -> str:
        return "s"
