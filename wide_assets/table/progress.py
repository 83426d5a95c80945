"""A writer's progress through its input: every offset up to a watermark, and spans applied beyond it.

A writer applies its input in offset order, so its progress is one offset. A pipeline run may apply a
source's record ahead of records landed before it (when no commit order of whole offset ranges keeps
every key's op-time order: `pipelines.run_order`); until those are applied too, the progress is the
watermark and the spans of offsets applied beyond it. Spans are inclusive `(first, last)` pairs.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Spans", "advanced", "covered", "merged", "newly_applied", "spans_sql"]

Spans = tuple[tuple[int, int], ...]


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` sorted, with overlapping and adjacent ones joined."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _applied(offset: int, ahead: Spans) -> list[tuple[int, int]]:
    # Offsets start at 1; the span from 0 anchors the watermark even when it is 0.
    return merged([(0, offset), *ahead])


def advanced(offset: int, ahead: Spans, spans: Iterable[tuple[int, int]]) -> tuple[int, Spans]:
    """The progress (watermark, spans beyond it) after applying `spans` on top of (`offset`, `ahead`)."""
    applied = merged([*_applied(offset, ahead), *spans])
    return applied[0][1], tuple(applied[1:])


def covered(offset: int, ahead: Spans, by_offset: int, by_ahead: Spans) -> bool:
    """Whether progress (`by_offset`, `by_ahead`) holds every offset progress (`offset`, `ahead`) does."""
    holder = _applied(by_offset, by_ahead)
    return all(any(lo <= a and b <= hi for lo, hi in holder) for a, b in _applied(offset, ahead))


def newly_applied(before: tuple[int, Spans], after: tuple[int, Spans]) -> list[tuple[int, int]]:
    """The spans of offsets progress `after` holds and `before` does not (none below 1)."""
    result = []
    old = _applied(*before)
    for first, last in _applied(*after):
        start = max(first, 1)
        for lo, hi in old:
            if hi < start or lo > last:
                continue
            if lo > start:
                result.append((start, lo - 1))
            start = max(start, hi + 1)
        if start <= last:
            result.append((start, last))
    return result


def spans_sql(column: str, spans: Iterable[tuple[int, int]]) -> str:
    """SQL: `column` lies in one of `spans` (FALSE for none)."""
    parts = [f"{column} BETWEEN {int(first)} AND {int(last)}" for first, last in spans]
    return "(" + " OR ".join(parts) + ")" if parts else "FALSE"
