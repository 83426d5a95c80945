"""Fluss's per-record model (`KvTablet.putAsLeader`): each record merges into the stored row at once
and emits its own CDC entries, so the fold state carries the log of this write's entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wide_assets.merge.context import ADD, DELETE, MergeContext
from wide_assets.merge.engine import MergeEngine, partial_delete_removes_row, partial_delete_values

OLD, NEW = "old", "new"


class FlussEngine(MergeEngine):
    per_record = True
    # WAL image turns a default-engine full-row insert into +U.
    wal_insert_as_update = False

    def step(self, ctx: MergeContext) -> str:
        loaded = ctx.state({"e": "true", **{ctx.aliases[c]: ctx.ref("r", c) for c in ctx.values}})
        inserted_values = {
            ctx.aliases[c]: ctx.ref("r", c)
            if ctx.written(c) or c == ctx.merge.auto_increment
            else ctx.null(c)
            for c in ctx.values
        }
        wal_update = (
            ctx.merge.changelog_image == "WAL" and self.wal_insert_as_update and not ctx.is_partial_write
        )
        insert_kind = "+U" if wal_update else "+I"
        inserted = emit(ctx, {"e": "true", **inserted_values}, [(insert_kind, NEW)])
        return (
            f"CASE WHEN r._stored THEN {loaded} WHEN {ADD} AND NOT s.e THEN {inserted} "
            f"WHEN {ADD} THEN {self.update(ctx)} WHEN {DELETE} AND s.e THEN {self.delete(ctx)} ELSE s END"
        )

    def update(self, ctx: MergeContext) -> str:
        """State after an upsert of a key that exists."""
        raise NotImplementedError

    def delete(self, ctx: MergeContext) -> str:
        """W3/W4: a full delete removes the row; a partial delete clears its target columns."""
        removed = emit(ctx, ctx.cleared(), [("-D", OLD)])
        if not ctx.is_partial_write:
            return removed
        if ctx.is_key_only_write:
            return removed
        kept = emit(ctx, partial_delete_values(ctx), [("-U", OLD), ("+U", NEW)])
        return f"CASE WHEN {partial_delete_removes_row(ctx)} THEN {removed} ELSE {kept} END"


def emit(ctx: MergeContext, updates: Mapping[str, str], entries: Sequence[tuple[str, str]]) -> str:
    """The state with `updates` applied and CDC `entries` ((kind, OLD|NEW image)) appended to its log."""
    if ctx.merge.changelog_image == "WAL":
        entries = [(kind, image) for kind, image in entries if kind != "-U"]
    new_row = (
        "named_struct("
        + ", ".join(f"'{ctx.aliases[c]}', {updates.get(ctx.aliases[c], ctx.ref('s', c))}" for c in ctx.values)
        + ")"
    )
    logged = [
        f"named_struct('k', '{kind}', 'a', r._arrival, 'i', {i}, 'v', {ctx.row('s') if image == OLD else new_row})"
        for i, (kind, image) in enumerate(entries)
    ]
    return ctx.state({**updates, "log": f"concat(s.log, array({', '.join(logged)}))"})
