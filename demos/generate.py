"""`python -m demos.generate`: realistic CDC landing files for the product_360 pipeline.

    python -m demos.generate --products 50 --changes 400 --seed 7 --out data/landing \\
        --late-share 0.1 --delete-share 0.05 --files 3 --malformed 6 [--quiet]

Writes `<out>/<source>/<source>_<nnn>.jsonl`, one JSON object per line: Debezium envelopes for the
database-backed sources (catalog, pricing, lifecycle: `before`/`after`/`op`/`ts_ms`, decimals as
strings and dates as ISO text, i.e. `decimal.handling.mode=string`) and Flink changelog JSON for the
streams (reviews, questions: `rowkind` plus the columns and `op_ts`). Deterministic for a seed.

The story: every product starts with a catalog snapshot (`op = r`); then `--changes` changes spread over
the sources, their op times strictly increasing; files cut the timeline into `--files` batches. A
`--late-share` of the updates arrives in a later batch than its op time says (out of order: newer
updates of the same row arrived first). `--delete-share` drives deletes: price and lifecycle deletes,
review and question deletes, and that share of products removed from the catalog as their last event
(in the last batch, after every other event of the product). `--malformed` writes that many bad lines
(bad JSON, missing key, unknown op, uncastable values) to `pricing/pricing_bad.jsonl`.

Time and memory grow linearly with `--changes`; progress shows on stderr when it is a terminal
(`--quiet` hides it).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demos.progress import bar
from wide_assets.pipelines import format_op_time

__all__ = ["Event", "generate", "main"]

START_MS = 1_772_323_200_000  # 2026-03-01 00:00:00 UTC
DEBEZIUM_SOURCES = ("catalog", "pricing", "lifecycle")
WEIGHTS = {"catalog": 0.12, "pricing": 0.28, "lifecycle": 0.1, "reviews": 0.32, "questions": 0.18}
NAMES = ("Aurora", "Nimbus", "Vertex", "Solace", "Ember", "Drift", "Halo", "Pulse", "Quill", "Tundra")
THINGS = ("Lamp", "Chair", "Kettle", "Backpack", "Speaker", "Desk", "Mug", "Blanket", "Clock", "Lantern")
BRANDS = ("Lumen", "Northwind", "Acme", "Kestrel", "Orbit", "Fable")
BAD_LINES = (
    '{"before": null, "after": {"product_id": 9001, "price": "1.00"',  # bad JSON (cut off)
    '{"before": null, "after": {"price": "5.00", "sale_ends": null}, "op": "c", "ts_ms": 1772323200000}',
    '{"before": null, "after": {"product_id": 9002, "price": "5.00"}, "op": "x", "ts_ms": 1772323200000}',
    '{"before": null, "after": {"product_id": 9003, "price": "cheap"}, "op": "c", "ts_ms": 1772323200000}',
    '{"before": null, "after": {"product_id": 9004, "sale_ends": "2026-13-45"}, "op": "c", "ts_ms": 1772323200000}',
    '{"before": null, "after": {"product_id": "abc", "price": "5.00"}, "op": "c", "ts_ms": 1772323200000}',
)


@dataclass
class Event:
    """One change record of a source: its line object, op time, batch and whether it may arrive late."""

    source: str
    record: dict[str, Any]
    op_ms: int
    batch: int = 0
    movable: bool = False
    late: bool = False
    group: list[Event] = field(default_factory=list)


@dataclass
class _StreamRows:
    """A stream's live rows by id, indexed by product: a change looks up its product's rows without
    scanning every row (which made generating quadratic in the number of changes)."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Per product, its live ids in the order they were created: the order the rows dict holds them in,
    # so the random choices among them, and the output for a seed, are what a scan of `rows` gave.
    by_product: dict[int, dict[int, None]] = field(default_factory=dict)

    def live(self, product: int) -> list[int]:
        return list(self.by_product.get(product, ()))

    def add(self, key: int, row: dict[str, Any]) -> None:
        self.rows[key] = row
        self.by_product.setdefault(row["product_id"], {})[key] = None

    def pop(self, key: int) -> dict[str, Any]:
        row = self.rows.pop(key)
        del self.by_product[row["product_id"]][key]
        return row


@dataclass
class _World:
    rng: random.Random
    clock: int = START_MS
    catalog: dict[int, dict[str, Any]] = field(default_factory=dict)
    pricing: dict[int, dict[str, Any]] = field(default_factory=dict)
    lifecycle: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: _StreamRows = field(default_factory=_StreamRows)
    questions: _StreamRows = field(default_factory=_StreamRows)
    events: list[Event] = field(default_factory=list)

    def tick(self) -> int:
        self.clock += self.rng.randint(1_000, 90_000)
        return self.clock

    def debezium(self, source: str, op: str, before: Any, after: Any, movable: bool = False) -> None:
        ts = self.tick()
        envelope = {
            "before": before,
            "after": after,
            "source": {"connector": "postgresql", "db": "shop", "table": source, "ts_ms": ts},
            "op": op,
            "ts_ms": ts,
        }
        self.events.append(Event(source, envelope, ts, movable=movable))

    def flink(self, source: str, rows: Sequence[tuple[str, dict[str, Any]]], movable: bool = False) -> None:
        ts = self.tick()
        first = Event(source, {}, ts, movable=movable)
        for kind, row in rows:
            record = {"rowkind": kind, **row, "op_ts": format_op_time(ts)}
            if not first.record:
                first.record = record
            else:
                first.group.append(Event(source, record, ts))
        self.events.append(first)


def _catalog_row(rng: random.Random, product: int) -> dict[str, Any]:
    return {
        "product_id": product,
        "product_name": f"{rng.choice(NAMES)} {rng.choice(THINGS)}",
        "brand": rng.choice(BRANDS),
    }


def _change_table(w: _World, source: str, product: int, delete_share: float) -> None:
    """A create, update or delete of the product's row in a Debezium-backed source."""
    rng = w.rng
    rows: dict[int, dict[str, Any]] = getattr(w, source)
    before = rows.get(product)
    after: dict[str, Any] | None
    if source == "catalog":
        after = _catalog_row(rng, product)
    elif source == "pricing":
        days = rng.randint(5, 120)
        after = {
            "product_id": product,
            "price": f"{rng.randint(299, 29_999) / 100:.2f}",
            "sale_ends": None
            if rng.random() < 0.3
            else f"2026-{(days // 30) % 12 + 1:02d}-{days % 28 + 1:02d}",
        }
    else:
        after = {"product_id": product, "discontinue_date": f"2027-{rng.randint(1, 12):02d}-01"}
    if before is None:
        w.debezium(source, "c", None, after)
    elif source != "catalog" and rng.random() < delete_share * 3:
        w.debezium(source, "d", before, None)
        after = None
    else:
        w.debezium(source, "u", before, after, movable=True)
    if after is None:
        del rows[product]
    else:
        rows[product] = after


def _change_stream(w: _World, source: str, product: int, delete_share: float, next_id: list[int]) -> None:
    """A new, edited or deleted review or question (Flink changelog rows)."""
    rng = w.rng
    rows: _StreamRows = getattr(w, source)
    live = rows.live(product)
    choice = rng.random()
    if live and choice < delete_share * 3:
        key = rng.choice(live)
        w.flink(source, [("-D", rows.pop(key))])
        return
    if live and choice < 0.45:
        key = rng.choice(live)
        old = rows.rows[key]
        if source == "reviews":
            new = {**old, "rating": rng.randint(1, 5)}
        else:
            new = {**old, "status": "closed" if old["status"] == "open" else "open"}
        rows.rows[key] = new  # the same product: its index does not change
        w.flink(source, [("-U", old), ("+U", new)], movable=True)
        return
    next_id[0] += 1
    key_name = "review_id" if source == "reviews" else "question_id"
    row: dict[str, Any] = {key_name: next_id[0], "product_id": product}
    if source == "reviews":
        row["rating"] = rng.randint(1, 5)
    else:
        row["status"] = "open"
    rows.add(next_id[0], row)
    w.flink(source, [("+I", row)])


def generate(
    products: int,
    changes: int,
    seed: int,
    out: Path,
    late_share: float = 0.1,
    delete_share: float = 0.05,
    files: int = 3,
    malformed: int = 0,
    quiet: bool = False,
) -> dict[str, int]:
    """Write the landing files (see the module doc); returns the number of lines per source.
    `quiet`: no progress bar (there is none anyway when stderr is not a terminal)."""
    rng = random.Random(seed)
    w = _World(rng)
    ids = list(range(1001, 1001 + products))
    for product in ids:
        row = _catalog_row(rng, product)
        w.catalog[product] = row
        w.debezium("catalog", "r", None, row)
    removed = set(rng.sample(ids, round(products * delete_share)))
    sources = list(WEIGHTS)
    next_id = [0]
    for _ in bar(range(changes), description="changes", quiet=quiet):
        source = rng.choices(sources, weights=[WEIGHTS[s] for s in sources])[0]
        product = rng.choice(ids)
        if source in DEBEZIUM_SOURCES:
            _change_table(w, source, product, delete_share)
        else:
            _change_stream(w, source, product, delete_share, next_id)
    # Batches cut the timeline evenly; a late update moves to a later batch (or the end of the last).
    for position, event in enumerate(w.events):
        event.batch = position * files // len(w.events)
        if event.movable and rng.random() < late_share:
            event.batch = min(files - 1, event.batch + rng.randint(1, 2))
            event.late = True
    batches: dict[tuple[str, int], list[Event]] = {}
    for event in w.events:
        batches.setdefault((event.source, event.batch), []).append(event)
    for events in batches.values():
        # Late events land at a random place among the batch's on-time ones.
        on_time = [e for e in events if not e.late]
        for event in (e for e in events if e.late):
            on_time.insert(rng.randint(0, len(on_time)), event)
        events[:] = on_time
    # Catalog removals come last of all, after any late event of the same product.
    last = batches.setdefault(("catalog", files - 1), [])
    for product in sorted(removed):
        ts = w.tick()
        before = w.catalog[product]
        envelope = {"before": before, "after": None, "source": {"table": "catalog", "ts_ms": ts}, "op": "d"}
        last.append(Event("catalog", {**envelope, "ts_ms": ts}, ts, batch=files - 1))
    counts: dict[str, int] = dict.fromkeys(sources, 0)
    written = [(source, batch) for source in sources for batch in range(files)]
    for source, batch in bar(written, description="files", unit="file", quiet=quiet):
        folder = out / source
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps(e.record, separators=(",", ":"))
            for event in batches.get((source, batch), [])
            for e in (event, *event.group)
        ]
        counts[source] += len(lines)
        (folder / f"{source}_{batch:03d}.jsonl").write_text("".join(f"{x}\n" for x in lines), "utf-8")
    if malformed:
        bad = [BAD_LINES[i % len(BAD_LINES)] for i in range(malformed)]
        (out / "pricing" / "pricing_bad.jsonl").write_text("".join(f"{x}\n" for x in bad), "utf-8")
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, required=True)
    parser.add_argument("--changes", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--late-share", type=float, default=0.1)
    parser.add_argument("--delete-share", type=float, default=0.05)
    parser.add_argument("--files", type=int, default=3, help="files (batches) per source")
    parser.add_argument("--malformed", type=int, default=0, help="bad lines in pricing/pricing_bad.jsonl")
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    counts = generate(
        args.products,
        args.changes,
        args.seed,
        args.out,
        late_share=args.late_share,
        delete_share=args.delete_share,
        files=args.files,
        malformed=args.malformed,
        quiet=args.quiet,
    )
    print(f"wrote {sum(counts.values())} records to {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
