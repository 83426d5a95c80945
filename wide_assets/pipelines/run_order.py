"""One run's records of several sources -> the order of the commits that apply them, so that each key's
records are merged in op-time order across sources (each source's in landing order), whatever other
keys' records hold and whatever order the declaration lists the sources in.

A commit holds one source's records (its own target columns, and its progress as the commit's
transaction id), and a commit's records of one key are merged in landing order (`_offset`). The
records of each source are cut into consecutive `_offset` ranges ("rounds"): the commit of round r of
the i-th source comes after every commit of an earlier round, and after round r of the sources before
it. A source's progress after each of its commits is then "every record up to this `_offset`", and a
run cut short resumes where its last commit ended. Where no cut into ranges keeps every key's order,
some records leave their source's landing order (below): a commit then applies `spans` of offsets,
and the progress holds the spans applied past its watermark (`table.progress`).

A key's order: a k-way merge of its records, each source's in landing order, taking next the record
with the smallest op time (a record without one first, as a NULL sequence sorts first), then the
smaller source name (an equal op time of two sources says nothing about which came first; the name
makes the choice the same on every run and in every declaration).

Two sources' records of a key commute (each source writes its own columns, its own sequence group)
except where
- one of them may remove the row (`REMOVE`: a retraction of a `remove-row` source, any record of a
  table whose first record wins): the commit holding the earlier one (in the key's order) comes
  first;
- a retraction clears its source's columns where the key has no row yet: a commit's merge drops a
  key's retractions when the key has no row and the commit no insert of it (P12), while Paimon folds
  a retraction met before the row's insert into the row that insert makes, its group's columns
  cleared and its sequence advanced (`PartialUpdateMergeFunction.retractWithSequenceGroup` runs on the
  empty row, `add` of the insert makes it non-empty, `getResult` emits it). So between two removals
  of a key that some record inserts, a retraction not preceded by an insert of its own source must
  meet the row: a `CLEAR` one (function-less groups) is written as an insert of NULLs with its
  sequence, which does the same (P7 = P10 there) in any order; a `RETRACT` one (an aggregate function
  retracts) shares the commit of its source's later insert, or follows the commit of another source's
  first insert. Where the table held the key when the run started, the first stretch needs neither.

Each such need is an edge between two records, and a source's records follow each other in landing
order; the commits follow them all unless edges close a cycle through a strict one. Only a source's
late record (landed after records of its own with later op times) or a `RETRACT` waiting for a later
insert can: one commit of a source would have to come both before and after a commit of another.
Then the late records in the cycle leave their source's landing order, keeping it only against the
source's records of their own keys (a key's records stay in landing order whatever the commits), and
are committed in the round their keys need; if that is not enough (a `RETRACT` waiting), every record
in the cycle does. A cycle left after that needs a record touching several keys (a transform's rows
at one `_offset`): its late records are ordered at the latest op time of their source landed before
them (as if they had landed that late), then the waits of `RETRACT`s give way, then every edge of the
cycle, and the keys whose order changed are returned with the commits, per source.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wide_assets.table.progress import Spans, merged

__all__ = ["CLEAR", "INERT", "MAKE", "REMOVE", "RETRACT", "Plan", "Segment", "Unit", "commit_plan"]

# What a record does to its key's row, for its order against another source's records of the key.
MAKE = "make"  # an insert or update: makes the row
# A retraction that clears its source's columns (each in a sequence group without an aggregate
# function) and advances their sequence: an insert of NULLs with its op time does the same (P7, P10),
# except that it makes the row.
CLEAR = "clear"
RETRACT = "retract"  # any other retraction of a source's own columns: needs the row to exist
REMOVE = "remove"  # may remove the whole row: keeps the key's order against every other record
INERT = "inert"  # changes nothing (a retraction of a source whose deletes are ignored)


@dataclass(frozen=True)
class Unit:
    """A source's record (or a transform's row) at `offset` whose key another source also touches in
    the run: per key it touches, what it does to that key's row (`MAKE`, `CLEAR`, `RETRACT`, `REMOVE`,
    `INERT`)."""

    offset: int
    op_time: Any
    effects: Mapping[Hashable, str] = field(hash=False)


@dataclass(frozen=True)
class Segment:
    """The records of `source` with `_offset` in [`first`, `last`], applied as one commit; only those in
    `spans` when the run applies some of the source's records out of landing order (module doc)."""

    source: str
    first: int
    last: int
    spans: Spans | None = None

    @property
    def offsets(self) -> Spans:
        """The inclusive `_offset` spans the commit applies."""
        return self.spans if self.spans is not None else ((self.first, self.last),)


@dataclass(frozen=True)
class Plan:
    """The run's commits in order, and per source the keys whose records they could not keep in order."""

    segments: list[Segment]
    unordered: Mapping[str, frozenset[Hashable]]
    # Per source: the `_offset`s of its retractions to write as inserts of NULLs (`CLEAR`).
    inserts: Mapping[str, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Edge:
    """`after` follows `before` (`strict`: in a later commit; else in the same round of one source)."""

    before: int
    after: int
    strict: bool
    key: Hashable
    waits_for_row: bool = False


def _chain(nodes: Sequence[tuple[str, Unit]], loose: set[int]) -> list[_Edge]:
    """The edges that keep each source's records in landing order: between consecutive ones, except
    that a `loose` node keeps its order only against the source's records of its own keys."""
    chain: list[_Edge] = []
    last_of_source: dict[str, int] = {}
    last_of_key: dict[tuple[str, Hashable], int] = {}
    for node, (source, unit) in enumerate(nodes):
        if node not in loose:
            if source in last_of_source:
                chain.append(_Edge(last_of_source[source], node, False, None))
            last_of_source[source] = node
        for key in unit.effects:
            previous = last_of_key.get((source, key))
            if previous is not None and (node in loose or previous in loose):
                chain.append(_Edge(previous, node, False, key))
            last_of_key[(source, key)] = node
    return chain


def _order_key(source: str, unit: Unit) -> tuple[Any, ...]:
    untimed = unit.op_time is None
    return (not untimed, None if untimed else unit.op_time, source, unit.offset)


def _streams(nodes: Sequence[tuple[str, Unit]]) -> dict[Hashable, list[list[int]]]:
    """Per key: its records (node ids), per source in landing order."""
    streams: dict[Hashable, dict[str, list[int]]] = {}
    for node, (source, unit) in enumerate(nodes):
        for key in unit.effects:
            streams.setdefault(key, {}).setdefault(source, []).append(node)
    return {key: list(by_source.values()) for key, by_source in streams.items()}


def _merged(streams: list[list[int]], order_keys: Sequence[tuple[Any, ...]]) -> list[int]:
    """A key's records: its sources' streams merged by `order_keys`, each kept in landing order."""

    def ordered(stream: list[int]) -> Iterator[tuple[tuple[Any, ...], int]]:
        return ((order_keys[n], n) for n in stream)

    return [n for _, n in heapq.merge(*(ordered(s) for s in streams))]


def _key_edges(
    key: Hashable, order: list[int], nodes: Sequence[tuple[str, Unit]], stored: bool
) -> tuple[list[_Edge], list[int]]:
    """The edges between one key's records (in `order`), and its retractions to write as inserts."""
    effects = [nodes[n][1].effects[key] for n in order]
    sources = [nodes[n][0] for n in order]
    edges: list[_Edge] = []
    # A removal follows every earlier record of another source; any record follows the removals of
    # other sources before it (a source's earlier records precede its later ones anyway).
    last: dict[str, int] = {}
    last_removal: dict[str, int] = {}
    for node, effect, source in zip(order, effects, sources, strict=True):
        for other, before in (last if effect == REMOVE else last_removal).items():
            if other != source:
                edges.append(_Edge(before, node, True, key))
        last[source] = node
        if effect == REMOVE:
            last_removal[source] = node
    as_inserts: list[int] = []
    for wait in _row_waits(key, order, effects, sources, stored):
        if isinstance(wait, _Edge):
            edges.append(wait)
        else:
            as_inserts.append(wait)
    return edges, as_inserts


def _row_waits(
    key: Hashable, order: list[int], effects: list[str], sources: list[str], stored: bool
) -> Iterator[_Edge | int]:
    """Per stretch between removals (module doc): each retraction that must meet its row, as the node to
    write as an insert (`CLEAR`) or as the edge that makes it wait for the row (`RETRACT`)."""
    stretch: list[int] = []
    first = True
    for position in [*range(len(order)), None]:
        if position is not None and effects[position] != REMOVE:
            stretch.append(position)
            continue
        makers = [p for p in stretch if effects[p] == MAKE]
        for p in stretch if makers and not (first and stored) else ():
            if effects[p] not in (CLEAR, RETRACT):
                continue
            own = [m for m in makers if sources[m] == sources[p]]
            if any(order[m] < order[p] for m in own):
                continue
            later = [m for m in own if order[m] > order[p]]
            others = [m for m in makers if sources[m] != sources[p]]
            if effects[p] == CLEAR:
                yield order[p]
            elif later:
                yield _Edge(order[later[0]], order[p], False, key, waits_for_row=True)
            else:
                yield _Edge(order[others[0]], order[p], True, key, waits_for_row=True)
        stretch, first = [], False


def _components(count: int, successors: Sequence[list[int]]) -> list[int]:
    """Tarjan's strongly connected components, iteratively: node -> component id, ids numbered in
    reverse topological order (a component's successors have smaller ids)."""
    index = [-1] * count
    low = [0] * count
    component = [-1] * count
    on_stack = [False] * count
    stack: list[int] = []
    counter = itertools.count()
    found = 0
    for root in range(count):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        index[root] = low[root] = next(counter)
        stack.append(root)
        on_stack[root] = True
        while work:
            node, child = work[-1]
            if child < len(successors[node]):
                work[-1] = (node, child + 1)
                successor = successors[node][child]
                if index[successor] == -1:
                    index[successor] = low[successor] = next(counter)
                    stack.append(successor)
                    on_stack[successor] = True
                    work.append((successor, 0))
                elif on_stack[successor]:
                    low[node] = min(low[node], index[successor])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = found
                    if member == node:
                        break
                found += 1
    return component


def _clamped(
    nodes: Sequence[tuple[str, Unit]], order_keys: Sequence[tuple[Any, ...]]
) -> dict[int, tuple[Any, ...]]:
    """Per late node (landed after a record of its own source with a later op time, or untimed after a
    timed one): its order key at the latest op time of its source landed before it."""
    clamped: dict[int, tuple[Any, ...]] = {}
    latest: dict[str, tuple[Any, ...]] = {}
    for node, (source, unit) in enumerate(nodes):
        time = order_keys[node][:2]
        if source in latest and time < latest[source]:
            clamped[node] = (*latest[source], source, unit.offset)
        else:
            latest[source] = time
    return clamped


def _rounds(
    nodes: Sequence[tuple[str, Unit]], index: Mapping[str, int], edges: Sequence[_Edge], component: list[int]
) -> list[int]:
    """Each node's round: the first after every commit its edges say it follows."""
    incoming: dict[int, list[_Edge]] = {}
    members: dict[int, list[int]] = {}
    for edge in edges:
        incoming.setdefault(component[edge.after], []).append(edge)
    for node, c in enumerate(component):
        members.setdefault(c, []).append(node)
    round_of_component: dict[int, int] = {}
    # Component ids are in reverse topological order: the highest id has no predecessor outside.
    for c in sorted(members, reverse=True):
        round_ = 1
        for edge in incoming.get(c, ()):
            if component[edge.before] == c:
                continue
            # A strict edge needs a later commit: the same round only when its source is listed later.
            later = edge.strict and index[nodes[edge.before][0]] >= index[nodes[edge.after][0]]
            round_ = max(round_, round_of_component[component[edge.before]] + int(later))
        round_of_component[c] = round_
    return [round_of_component[component[n]] for n in range(len(nodes))]


def _ordered_edges(
    nodes: Sequence[tuple[str, Unit]], stored: frozenset[Hashable]
) -> tuple[list[_Edge], list[int], set[int], set[int], dict[str, set[Hashable]]]:
    """The edges the commits follow, their components, the late records applied out of landing order,
    the retractions to write as inserts, and per source the keys whose order could not be kept: a
    cycle through a strict edge first lets the late records in it leave their source's landing order,
    then every record in it; then (records touching several keys) moves the late ones to their
    source's latest op time before them, then gives way on retractions waiting for their row, then on
    every strict edge in it (module doc)."""
    loose: set[int] = set()
    order_keys = [_order_key(source, unit) for source, unit in nodes]
    clamped = _clamped(nodes, order_keys)
    streams = _streams(nodes)
    exact = {key: _merged(s, order_keys) for key, s in streams.items()}
    orders = dict(exact)
    per_key = {key: _key_edges(key, order, nodes, key in stored) for key, order in orders.items()}
    given_way: dict[tuple[int, int], Hashable] = {}
    while True:
        edges = _chain(nodes, loose) + [
            e for found, _ in per_key.values() for e in found if (e.before, e.after) not in given_way
        ]
        successors: list[list[int]] = [[] for _ in nodes]
        for edge in edges:
            successors[edge.before].append(edge.after)
        component = _components(len(nodes), successors)
        cyclic = [e for e in edges if e.strict and component[e.before] == component[e.after]]
        if not cyclic:
            break
        in_cycles = {component[e.after] for e in cyclic}
        # Late records leave their source's landing order first; if that is not enough (a retraction
        # waiting for its row), every record in the cycles does.
        loosened = [n for n in clamped if component[n] in in_cycles and n not in loose] or [
            n for n, c in enumerate(component) if c in in_cycles and n not in loose
        ]
        if loosened:
            loose.update(loosened)
            continue
        # Move the late records at the ends of the cycles' strict edges (else any in the cycles), all at
        # once: one at a time moves fewer but takes a pass over the whole graph each.
        ends = {n for e in cyclic for n in (e.before, e.after)}
        candidates = [n for n in clamped if component[n] in in_cycles and order_keys[n] != clamped[n]]
        late = [n for n in candidates if n in ends] or candidates
        if late:
            for node in late:
                order_keys[node] = clamped[node]
            for key in {key for node in late for key in nodes[node][1].effects}:
                orders[key] = _merged(streams[key], order_keys)
                per_key[key] = _key_edges(key, orders[key], nodes, key in stored)
            continue
        waits = [e for e in edges if e.waits_for_row and component[e.after] in in_cycles]
        given = [e for e in waits if component[e.before] == component[e.after]] or cyclic
        given_way.update(((e.before, e.after), e.key) for e in given)
    as_inserts = {node for _, inserts in per_key.values() for node in inserts}
    # Per source: the keys whose order moved with its late records, or waits for a row it gave up.
    unordered: dict[str, set[Hashable]] = {}
    for key, order in exact.items():
        if orders[key] != order:
            for node in order:
                if order_keys[node] != _order_key(*nodes[node]):
                    unordered.setdefault(nodes[node][0], set()).add(key)
    for (_, after), key in given_way.items():
        unordered.setdefault(nodes[after][0], set()).add(key)
    return edges, component, loose, as_inserts, unordered


def _moved(spans: dict[int, list[tuple[int, int]]], offset: int, round_: int) -> None:
    """`offset` taken out of the span of `spans` (round -> its spans) that holds it, into `round_`'s."""
    for held in spans.values():
        for i, (first, last) in enumerate(held):
            if first <= offset <= last:
                held[i : i + 1] = [(a, b) for a, b in ((first, offset - 1), (offset + 1, last)) if a <= b]
                spans.setdefault(round_, []).append((offset, offset))
                return
    raise AssertionError(f"offset {offset} is in no span")


def commit_plan(
    sources: Sequence[str],
    ranges: Mapping[str, tuple[int, int]],
    units: Mapping[str, Sequence[Unit]],
    stored: frozenset[Hashable] = frozenset(),
) -> Plan:
    """The run's commits in order. `sources`: in any fixed order (it only groups commits); `ranges`:
    source -> its pending (`from`, `to`] `_offset` range; `units`: source -> its records whose keys
    other sources touch too in the run, or whose key's retraction must meet the row the source's own
    later insert makes (any of its records may be cut from the others by another key); `stored`:
    those keys the table held when the run started."""
    pending = [s for s in sources if s in ranges]
    index = {source: i for i, source in enumerate(pending)}
    nodes = [(s, u) for s in pending for u in sorted(units.get(s, ()), key=lambda u: u.offset)]
    edges, component, loose, as_inserts, unordered = _ordered_edges(nodes, stored)
    rounds = _rounds(nodes, index, edges, component)
    # Each offset's round: a node's own when loose, else that of the last node in line at or before it.
    starts: dict[str, list[tuple[int, int]]] = {source: [] for source in pending}
    current = dict.fromkeys(pending, 1)
    for node, ((source, unit), round_) in enumerate(zip(nodes, rounds, strict=True)):
        if node not in loose and round_ > current[source]:
            starts[source].append((round_, unit.offset))
            current[source] = round_
    ordered: list[tuple[int, int, Segment]] = []
    for i, source in enumerate(pending):
        low, high = ranges[source]
        bounds = [(1, low + 1), *starts[source], (0, high + 1)]
        spans: dict[int, list[tuple[int, int]]] = {}
        for (round_, first), (_, following) in itertools.pairwise(bounds):
            if first < following:
                spans.setdefault(round_, []).append((first, following - 1))
        for node in sorted(n for n in loose if nodes[n][0] == source):
            _moved(spans, nodes[node][1].offset, rounds[node])
        for round_, held in spans.items():
            if not held:
                continue
            joined = merged(held)
            gapped = tuple(joined) if len(joined) > 1 else None
            ordered.append((round_, i, Segment(source, joined[0][0], joined[-1][1], gapped)))
    segments = [segment for _, _, segment in sorted(ordered, key=lambda item: (item[0], item[1]))]
    inserts: dict[str, set[int]] = {}
    for node in as_inserts:
        source, unit = nodes[node]
        inserts.setdefault(source, set()).add(unit.offset)
    return Plan(
        segments,
        {s: frozenset(keys) for s, keys in unordered.items()},
        {s: frozenset(offsets) for s, offsets in inserts.items()},
    )
