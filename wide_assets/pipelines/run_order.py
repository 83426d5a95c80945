"""One run's records of several sources -> the order of the commits that apply them: by op time
across sources, each source's records in landing order, whatever order the declaration lists them in.

A commit holds one source's records (its own target columns, and its progress as the commit's
transaction id), and a commit's records of one key are merged in landing order (`_offset`). So the
run's records are merged in time order when, for every key that several sources touch in the run,
a record of one source is in an earlier commit than every later record (by that order) of another
source. The records of each source are cut into consecutive `_offset` ranges ("rounds"): the commit
of round r of the i-th source comes after every commit of an earlier round, and after round r of
the sources before it. A source's progress after each of its commits is thus still "every record up
to this `_offset`", and a run cut short resumes where its last commit ended.

The order: a k-way merge of the sources' records, each source in landing order, taking next the
record with the smallest op time (a record without one first, as a NULL sequence sorts first), then
the smaller source name (an equal op time of two sources says nothing about which came first; the
name makes the choice the same on every run and in every declaration). Only orders that change a row
are kept: two sources' records of a key write different columns and commute unless one may remove
the row, so a commit boundary is needed only around a retraction of a `remove-row` source (or any
record of a first-row table). Records of keys only one source
touches in the run take the round of the record of their source before them.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Segment", "Unit", "commit_segments"]


@dataclass(frozen=True)
class Unit:
    """A source's record (or a transform's row) whose key another source also touches in the run."""

    offset: int
    op_time: Any
    keys: frozenset[Hashable]
    # A record that may remove the row (a retraction of a `remove-row` source), or any record of a
    # first-row table (the first record wins): its order against other sources' records of its keys
    # changes the row.
    ordered: bool = True


@dataclass(frozen=True)
class Segment:
    """The records of `source` with `_offset` in [`first`, `last`], applied as one commit."""

    source: str
    first: int
    last: int


def _order_key(source: str, unit: Unit) -> tuple[Any, ...]:
    untimed = unit.op_time is None
    return (not untimed, None if untimed else unit.op_time, source, unit.offset)


def _round_starts(
    sources: Sequence[str], units: Mapping[str, Sequence[Unit]]
) -> dict[str, list[tuple[int, int]]]:
    """Per source: (round, first `_offset` of that round) for each round after its first (round 1)."""
    index = {source: i for i, source in enumerate(sources)}
    current = dict.fromkeys(sources, 1)
    starts: dict[str, list[tuple[int, int]]] = {source: [] for source in sources}
    # Per key and source, the commit position (round, source index) of its last record merged, and
    # of its last ordered one.
    last: dict[Hashable, dict[int, tuple[int, int]]] = {}
    last_ordered: dict[Hashable, dict[int, tuple[int, int]]] = {}
    queues = {source: sorted(units.get(source, ()), key=lambda u: u.offset) for source in sources}
    heads = [(_order_key(s, q[0]), s, 0) for s, q in queues.items() if q]
    heapq.heapify(heads)
    while heads:
        _, source, position = heapq.heappop(heads)
        unit, i = queues[source][position], index[source]
        round_ = current[source]
        for key in unit.keys:
            # Two records of different sources commute unless one of them is ordered.
            before = (last if unit.ordered else last_ordered).get(key, {})
            for j, seen in before.items():
                if j != i:
                    # The smallest round whose commit of this source follows the commit holding `seen`.
                    round_ = max(round_, seen[0] + (0 if i > j else 1))
        if round_ > current[source]:
            starts[source].append((round_, unit.offset))
            current[source] = round_
        for key in unit.keys:
            last.setdefault(key, {})[i] = (round_, i)
            if unit.ordered:
                last_ordered.setdefault(key, {})[i] = (round_, i)
        if position + 1 < len(queues[source]):
            following = queues[source][position + 1]
            heapq.heappush(heads, (_order_key(source, following), source, position + 1))
    return starts


def commit_segments(
    sources: Sequence[str], ranges: Mapping[str, tuple[int, int]], units: Mapping[str, Sequence[Unit]]
) -> list[Segment]:
    """The run's commits in order. `sources`: in any fixed order (it only groups commits); `ranges`:
    source -> its pending (`from`, `to`] `_offset` range; `units`: source -> its records whose keys
    other sources touch too in the run."""
    pending = [s for s in sources if s in ranges]
    ordered: list[tuple[int, int, Segment]] = []
    for i, (source, starts) in enumerate(_round_starts(pending, units).items()):
        low, high = ranges[source]
        bounds = [(1, low + 1), *starts, (0, high + 1)]
        for (round_, first), (_, following) in itertools.pairwise(bounds):
            if first < following:
                ordered.append((round_, i, Segment(source, first, following - 1)))
    return [segment for _, _, segment in sorted(ordered, key=lambda item: (item[0], item[1]))]
