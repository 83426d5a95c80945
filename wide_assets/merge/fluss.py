"""Fluss's per-record model (`KvTablet.putAsLeader`): each record merges into the stored row at once
and emits its own CDC entries, so the fold state carries the log of this write's entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wide_assets.merge.context import ADD, DELETE, ENTRY_INDEXES, MergeContext
from wide_assets.merge.engine import MergeEngine, partial_delete_removes_row, partial_delete_values
from wide_assets.options.common import MergeOptions
from wide_assets.sql import named_struct

OLD, NEW = "old", "new"


class FlussEngine(MergeEngine):
    per_record = True
    # WAL image turns a default-engine full-row insert into +U.
    wal_insert_as_update = False
    # first_row and versioned never delete a row: their RowMergers reject 'table.delete.behavior' = 'allow'.
    deletes_rows = True

    def key_only_delete_ignored(self, merge: MergeOptions) -> str | None:
        """W4: `sink.ignore-delete` drops deletes before the table; `table.delete.behavior` = 'ignore'
        (the default of every engine but the last-row one) skips them in the table (KvTablet.processDeletion)."""
        if merge.ignore_delete:
            return (
                "the table sets 'sink.ignore-delete', so the sink drops every delete before it reaches the "
                "table; without it 'table.delete.behavior' decides (docs/semantics.md W4)"
            )
        if merge.delete_behavior != "ignore":
            return None
        if not self.deletes_rows:
            return (
                f"Fluss's {self.name} merge engine ignores deletes ('table.delete.behavior' = 'ignore', its "
                "default; 'allow' is rejected for it), so no option makes a delete remove a row of this "
                "table (docs/semantics.md R2, V3); the default merge engine, or 'aggregation' with "
                "'table.delete.behavior' = 'allow', removes rows on delete"
            )
        return (
            "'table.delete.behavior' is 'ignore', so Fluss skips every delete (docs/semantics.md W4); set it "
            "to 'allow' to make a delete remove the row"
        )

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
    assert len(entries) <= ENTRY_INDEXES, "an entry's index must fit entry_offset's numbering"
    new_row = named_struct({ctx.aliases[c]: updates.get(ctx.aliases[c], ctx.ref("s", c)) for c in ctx.values})
    logged = [
        f"named_struct('k', '{kind}', 'a', r._arrival, 'i', {i}, 'v', {ctx.row('s') if image == OLD else new_row})"
        for i, (kind, image) in enumerate(entries)
    ]
    return ctx.state({**updates, "log": f"concat(s.log, array({', '.join(logged)}))"})
