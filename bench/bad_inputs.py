"""A corpus of malformed inputs: landed lines of product_360's Debezium (`pricing`) and Flink JSON
(`questions`) sources and CSV `orders`, plus direct `WideTable.write`s. Each must be quarantined with
its reason, or rejected with a clear message and nothing committed, while the good records landed
around it are processed. A JSON record whose columns are not its source's (an added, removed or renamed
column) is schema drift, quarantined as such: ingesting it would drop a field or NULL a stored value.

`handle_all` runs the corpus and says, case by case, whether it was handled as expected.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from demos import declared
from wide_assets.errors import WideTableError
from wide_assets.pipelines import SourceSpec
from wide_assets.pipelines.ingest import ingest, landed_files, quarantine_path
from wide_assets.table import WideTable
from wide_assets_defs.product_360.component import ORDERS

if TYPE_CHECKING:
    from wide_assets.session import SparkSession

__all__ = ["CASES", "WRITES", "Handled", "handle_all"]

TS = 1_772_323_200_000  # 2026-03-01 00:00:00 UTC, in ts_ms
FUTURE_MS = 4_102_444_800_000  # 2100-01-01
HUGE = "x" * (2 << 20)


def _dbz(after: Any = None, op: Any = "c", ts_ms: Any = TS, before: Any = None) -> str:
    """A Debezium envelope line."""
    return json.dumps({"before": before, "after": after, "op": op, "ts_ms": ts_ms})


def _flink(**fields: Any) -> str:
    """A Flink changelog JSON line of `questions`; `fields` override the defaults."""
    return json.dumps({"rowkind": "+I", "question_id": 1, "product_id": 1, "status": "open", **fields})


OP_TS = "2026-03-01 00:00:00"


@dataclass(frozen=True)
class Case:
    """One malformed landed line of `source`; `reason` is the quarantine reason's category. A CSV case that
    starts with a header is a file of its own, quarantined whole as its first line."""

    name: str
    source: str
    line: bytes
    reason: str

    @property
    def own_file(self) -> bool:
        return self.line.startswith(b"_row_kind,")


def _case(name: str, source: str, line: str | bytes, reason: str) -> Case:
    """A case whose line is given as text or raw bytes."""
    return Case(name, source, line if isinstance(line, bytes) else line.encode(), reason)


# The good line landed before the i-th case of each source.
GOOD = {
    "pricing": lambda i: _dbz(
        {"product_id": 100 + i, "price": f"{i}.50", "sale_ends": "2026-04-01"}, ts_ms=TS + i
    ),
    "questions": lambda i: _flink(question_id=100 + i, product_id=100 + i, op_ts=OP_TS),
    "orders": lambda i: f"+I,{100 + i},{100 + i},{i},2026-03-01 10:00:00",
}
P = {"product_id": 7, "price": "1.00", "sale_ends": None}
CASES = (
    # Debezium envelopes (pricing: product_id bigint, price decimal(10,2), sale_ends date; ts_ms -> op_ts).
    _case("truncated JSON", "pricing", _dbz(P)[:30], "bad JSON"),
    _case("JSON array, not an object", "pricing", "[1, 2, 3]", "bad JSON"),
    _case("bare JSON string", "pricing", '"hello"', "bad JSON"),
    _case("empty object", "pricing", "{}", "unknown op"),
    _case("unknown op code", "pricing", _dbz(P, op="x"), "unknown op"),
    _case("truncate op", "pricing", _dbz(None, op="t"), "unknown op"),
    _case("NULL op", "pricing", _dbz(P, op=None), "unknown op"),
    _case("numeric op", "pricing", _dbz(P, op=1), "unknown op"),
    _case("delete without before image", "pricing", _dbz(None, op="d"), "missing image"),
    _case("after image is a string", "pricing", _dbz("oops"), "missing image"),
    _case("NULL key", "pricing", _dbz({**P, "product_id": None}), "missing key"),
    _case("key missing", "pricing", _dbz({"price": "1.00"}), "missing key"),
    _case("key is text", "pricing", _dbz({**P, "product_id": "abc"}), "uncastable value"),
    _case("key is fractional", "pricing", _dbz({**P, "product_id": 1.5}), "uncastable value"),
    _case("key is boolean", "pricing", _dbz({**P, "product_id": True}), "uncastable value"),
    _case("price is text", "pricing", _dbz({**P, "price": "cheap"}), "uncastable value"),
    _case("price has a third decimal", "pricing", _dbz({**P, "price": "1.005"}), "would be rounded"),
    _case("price is an object", "pricing", _dbz({**P, "price": {"amount": 5}}), "uncastable value"),
    _case(
        "price overflows decimal(10,2)", "pricing", _dbz({**P, "price": "123456789012.5"}), "uncastable value"
    ),
    _case("impossible date", "pricing", _dbz({**P, "sale_ends": "2026-02-30"}), "uncastable value"),
    _case(
        "ts_ms missing",
        "pricing",
        json.dumps({"before": None, "after": P, "op": "c"}),
        "missing sequence field",
    ),
    _case("ts_ms is text", "pricing", _dbz(P, ts_ms="yesterday"), "uncastable value"),
    _case("ts_ms out of range", "pricing", _dbz(P, ts_ms=10**17), "uncastable value"),
    _case("future ts_ms", "pricing", _dbz(P, ts_ms=FUTURE_MS), "future timestamp"),
    _case(
        "non-UTF-8 bytes",
        "pricing",
        b'{"before": null, "after": {"product_id": 7, "price": "\xff\xfe"}}',
        "bad encoding",
    ),
    _case("huge string", "pricing", _dbz({**P, "sale_ends": HUGE}), "too long"),
    _case("duplicate record", "pricing", GOOD["pricing"](0), "duplicate record"),
    _case("added column", "pricing", _dbz({**P, "currency": "EUR"}), "schema drift"),
    _case("removed column", "pricing", _dbz({"product_id": 7, "sale_ends": None}), "schema drift"),
    _case(
        "renamed column",
        "pricing",
        _dbz({"product_id": 8, "unit_price": "1.00", "sale_ends": None}),
        "schema drift",
    ),
    # Flink changelog JSON (questions: question_id bigint key, product_id bigint, status, op_ts).
    _case("truncated JSON", "questions", _flink(op_ts=OP_TS)[:25], "bad JSON"),
    _case("unknown rowkind", "questions", _flink(rowkind="+X", op_ts=OP_TS), "unknown op"),
    _case("lower-case rowkind", "questions", _flink(rowkind="+i", op_ts=OP_TS), "unknown op"),
    _case(
        "rowkind missing",
        "questions",
        json.dumps({"question_id": 1, "product_id": 1, "op_ts": OP_TS}),
        "unknown op",
    ),
    _case("NULL key", "questions", _flink(question_id=None, op_ts=OP_TS), "missing key"),
    _case(
        "wide-table key missing",
        "questions",
        json.dumps({"rowkind": "+I", "question_id": 1, "op_ts": OP_TS}),
        "missing key",
    ),
    _case("key is text", "questions", _flink(question_id="q1", op_ts=OP_TS), "uncastable value"),
    _case("op_ts missing", "questions", _flink(), "missing sequence field"),
    _case("op_ts not a time", "questions", _flink(op_ts="not-a-time"), "uncastable value"),
    _case("future op_ts", "questions", _flink(op_ts="2100-01-01 00:00:00"), "future timestamp"),
    _case(
        "non-UTF-8 bytes",
        "questions",
        b'{"rowkind": "+I", "question_id": 1, "status": "\xc3\x28"}',
        "bad encoding",
    ),
    _case("huge string", "questions", _flink(status=HUGE, op_ts=OP_TS), "too long"),
    _case("duplicate record", "questions", GOOD["questions"](0), "duplicate record"),
    _case("added column", "questions", _flink(op_ts=OP_TS, title="?"), "schema drift"),
    # CSV orders (header _row_kind,order_id,product_id,quantity,order_ts).
    _case("NULL key", "orders", "+I,,1,2,2026-03-01 10:00:00", "missing key"),
    _case("unknown row kind", "orders", "+X,1,1,2,2026-03-01 10:00:00", "unknown op"),
    _case("quantity is text", "orders", "+I,1,1,many,2026-03-01 10:00:00", "uncastable value"),
    _case("quantity overflows int", "orders", "+I,1,1,99999999999,2026-03-01 10:00:00", "uncastable value"),
    _case("duplicate record", "orders", GOOD["orders"](0), "duplicate record"),
    _case("future order time", "orders", "+I,1,1,2,2100-01-01 00:00:00", "future timestamp"),
    _case("order time not a time", "orders", "+I,1,1,2,yesterday", "uncastable value"),
    _case(
        "added column",
        "orders",
        "_row_kind,order_id,product_id,quantity,order_ts,coupon\n+I,900,900,1,2026-03-01 10:00:00,X",
        "schema drift",
    ),
    _case(
        "removed column",
        "orders",
        "_row_kind,order_id,product_id,order_ts\n+I,901,901,2026-03-01 10:00:00",
        "schema drift",
    ),
    _case(
        "renamed column",
        "orders",
        "_row_kind,order_id,product_id,qty,order_ts\n+I,902,902,1,2026-03-01 10:00:00",
        "schema drift",
    ),
)
CSV_HEADER = "_row_kind,order_id,product_id,quantity,order_ts"
DDL = "product_id bigint, price double, review_cnt bigint, _row_kind string"
# Direct writes into a product_360-like table: (name, the expected message, DataFrame rows, DDL).
WRITES: tuple[tuple[str, str, list[tuple[Any, ...]], str], ...] = (
    ("NULL key", "NULL primary key", [(None, 1.0, 1, "+I")], DDL),
    ("unknown row kind", "unknown _row_kind", [(1, 1.0, 1, "+X")], DDL),
    ("unknown column", "not columns of the table", [(1, 1)], "product_id bigint, colour bigint"),
    ("uncastable value", "cannot be cast", [(1, "cheap")], "product_id bigint, price string"),
    ("no key column", "must contain every primary key column", [(1.0,)], "price double"),
    (
        "duplicate offsets",
        "duplicate _offset",
        [(1, 1, 1), (2, 1, 1)],
        "product_id bigint, review_cnt bigint, _offset bigint",
    ),
    (
        "sum overflow",
        "overflow",
        [(1, 2**62, "+I"), (1, 2**62, "+I")],
        "product_id bigint, review_cnt bigint, _row_kind string",
    ),
)


@dataclass(frozen=True)
class Handled:
    """One case's outcome: handled as expected, and how ("quarantined: <reason>", "rejected: ...")."""

    case: str
    handled: bool
    outcome: str


Place = tuple[str, int]  # (landed file, line)


def _landing(root: Path, source: str, cases: list[Case]) -> tuple[dict[Place, Case], set[Place]]:
    """One file of `source`: a good line before each case and one after (cases with a file of their own
    aside); where each case and each good line landed."""
    lines: list[bytes] = [CSV_HEADER.encode()] if source == "orders" else []
    folder = root / "landing" / source
    folder.mkdir(parents=True)
    suffix = "csv" if source == "orders" else "jsonl"
    corpus = f"landing/{source}/corpus.{suffix}"
    placed, good = {}, set()
    for i, case in enumerate([*cases, None]):
        lines.append(GOOD[source](i).encode())
        good.add((corpus, len(lines)))
        if case is not None and case.own_file:
            (folder / f"case_{i}.{suffix}").write_bytes(case.line + b"\n")
            placed[(f"landing/{source}/case_{i}.{suffix}", 1)] = case
        elif case is not None:
            lines.append(case.line)
            placed[(corpus, len(lines))] = case
    (root / corpus).write_bytes(b"\n".join(lines) + b"\n")
    return placed, good


def _spec(source: str) -> SourceSpec:
    spec = ORDERS if source == "orders" else declared("product_360").spec.source(source)
    return replace(spec, max_bad_records=10_000)


def _ingest_corpus(spark: SparkSession, work: Path, source: str) -> tuple[list[Handled], int, int]:
    """Ingest one file of every case of `source` between good lines: the outcomes, good lines ingested
    and good lines landed."""
    cases = [c for c in CASES if c.source == source]
    placed, good = _landing(work / source, source, cases)
    spec = _spec(source)
    path = str(work / "lake" / source)
    result = ingest(spark, spec, landed_files(work / source, spec), path)
    quarantined = {
        (r._source_file, r._source_line): r._reason
        for r in spark.read.format("delta").load(quarantine_path(path)).collect()
    }
    ingested = {(r._source_file, r._source_line) for r in spark.read.format("delta").load(path).collect()}
    outcomes = []
    for place, case in placed.items():
        name = f"{source}: {case.name}"
        if place in quarantined:
            reason = quarantined[place]
            outcomes.append(
                Handled(name, reason.endswith(f"({case.reason})"), f"quarantined: {reason[:120]}")
            )
        else:
            outcomes.append(Handled(name, False, "ingested" if place in ingested else "silently dropped"))
    bad = len(cases)
    if result.quarantined != bad:
        outcomes.append(
            Handled(f"{source}: quarantine count", False, f"{result.quarantined} reported, {bad} landed")
        )
    return outcomes, len(good & ingested), len(good)


def _write_cases(spark: SparkSession, work: Path) -> list[Handled]:
    """Each bad write is rejected with its message and commits nothing."""
    table = WideTable.create(
        spark,
        work / "written",
        [("product_id", "bigint"), ("price", "decimal(10,2)"), ("review_cnt", "bigint")],
        ["product_id"],
        {"merge-engine": "aggregation", "fields.review_cnt.aggregate-function": "sum"},
    )
    outcomes = []
    for name, message, rows, ddl in WRITES:
        before = (table.version, table.last_commit)
        try:
            table.write(spark.createDataFrame(rows, ddl))
            outcomes.append(Handled(f"write: {name}", False, "committed"))
        except WideTableError as error:
            text = str(error)
            handled = message in text and (table.version, table.last_commit) == before
            outcomes.append(Handled(f"write: {name}", handled, f"rejected: {text.splitlines()[0][:120]}"))
    return outcomes


def handle_all(
    spark: SparkSession, progress: Callable[[str], None] = print
) -> tuple[list[Handled], int, int]:
    """Every case of the corpus: the outcomes, the good records ingested and landed around them."""
    outcomes: list[Handled] = []
    good_ingested = good_landed = 0
    with tempfile.TemporaryDirectory(prefix="bad_inputs_") as tmp:
        work = Path(tmp)
        for source in ("pricing", "questions", "orders"):
            handled, ingested, landed = _ingest_corpus(spark, work, source)
            outcomes += handled
            good_ingested += ingested
            good_landed += landed
        outcomes += _write_cases(spark, work)
    for outcome in outcomes:
        progress(f"{'ok ' if outcome.handled else 'BAD'} {outcome.case}: {outcome.outcome}")
    return outcomes, good_ingested, good_landed
