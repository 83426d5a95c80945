"""The landing-file generator: its output for a seed is fixed, and every change it writes is consistent
with the state the earlier records describe, checked by replaying the files on their own."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from demos.generate import DEBEZIUM_SOURCES, generate
from wide_assets.pipelines import format_op_time

STREAM_KEYS = {"reviews": "review_id", "questions": "question_id"}
# Recorded from the generator before it indexed rows by product (it scanned every row per change): the
# rewrite must draw the same random choices in the same order, so the files are byte for byte the same.
RECORDED = {
    "arguments": {"products": 40, "changes": 600, "seed": 5, "late_share": 0.2, "delete_share": 0.1},
    "sha256": "f64e1cb94cba56f7239dd438a3d97c38bcb8d053fbfbd16dee5fb0bb59d29d0d",
}


def digest(out: Path) -> str:
    """One hash over every file's relative path and bytes."""
    hashed = hashlib.sha256()
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        hashed.update(path.relative_to(out).as_posix().encode() + b"\0" + path.read_bytes())
    return hashed.hexdigest()


def test_the_output_for_a_seed_is_the_recorded_one(tmp_path: Path) -> None:
    arguments: dict[str, Any] = RECORDED["arguments"]  # type: ignore[assignment]
    for run in ("first", "second"):
        generate(**arguments, out=tmp_path / run, files=3, malformed=6, quiet=True)
        assert digest(tmp_path / run) == RECORDED["sha256"]
    generate(**{**arguments, "seed": 6}, out=tmp_path / "other", files=3, malformed=6, quiet=True)
    assert digest(tmp_path / "other") != RECORDED["sha256"]


def lines(out: Path, source: str) -> list[dict[str, Any]]:
    """The source's records in delivery order (file by file), each with its file's batch number."""
    records = []
    for batch, path in enumerate(sorted((out / source).glob(f"{source}_*.jsonl"))):
        for line in path.read_text("utf-8").splitlines():
            records.append({**json.loads(line), "_batch": batch})
    return records


def op_time(source: str, record: dict[str, Any]) -> Any:
    return record["ts_ms"] if source in DEBEZIUM_SOURCES else record["op_ts"]


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("landing")
    generate(60, 3000, seed=11, out=out, late_share=0.2, delete_share=0.08, files=4, quiet=True)
    return out


@pytest.mark.parametrize("source", DEBEZIUM_SOURCES)
def test_every_debezium_change_starts_from_the_row_it_changes(landing: Path, source: str) -> None:
    state: dict[int, dict[str, Any]] = {}
    ops = {"r": 0, "c": 0, "u": 0, "d": 0}
    # Stable sort: op times are unique per source, so this is the order the changes happened in.
    for record in sorted(lines(landing, source), key=lambda r: op_time(source, r)):
        op, before, after = record["op"], record["before"], record["after"]
        product = (after or before)["product_id"]
        ops[op] += 1
        assert before == state.get(product), record
        if op in ("r", "c"):
            assert before is None and after is not None, record
        elif op == "u":
            assert after is not None and after["product_id"] == product, record
        else:
            assert after is None, record
        if after is None:
            del state[product]
        else:
            state[product] = after
    assert ops["u"] and (ops["r"] if source == "catalog" else ops["c"] and ops["d"])


@pytest.mark.parametrize("source", list(STREAM_KEYS))
def test_every_stream_change_starts_from_the_row_it_changes(landing: Path, source: str) -> None:
    key = STREAM_KEYS[source]
    state: dict[int, dict[str, Any]] = {}
    removed: set[int] = set()
    # -U and +U of one update share their op time and are adjacent lines; a stable sort keeps them so.
    records = sorted(lines(landing, source), key=lambda r: op_time(source, r))
    kinds = [r["rowkind"] for r in records]
    for i, record in enumerate(records):
        row = {k: v for k, v in record.items() if k not in ("rowkind", "op_ts", "_batch")}
        kind, id_ = record["rowkind"], record[key]
        if kind == "+I":
            assert id_ not in state and id_ not in removed, record
            state[id_] = row
        elif kind == "-U":
            assert state.get(id_) == row and kinds[i + 1] == "+U", record
            after = records[i + 1]
            assert after[key] == id_ and after["product_id"] == row["product_id"], after
        elif kind == "+U":
            assert kinds[i - 1] == "-U", record
            state[id_] = row
        else:
            assert kind == "-D" and state.pop(id_) == row, record
            removed.add(id_)
    assert {"+I", "-U", "+U", "-D"} <= set(kinds)


def product_of(source: str, record: dict[str, Any]) -> int:
    if source in DEBEZIUM_SOURCES:
        return int((record["after"] or record["before"])["product_id"])
    return int(record["product_id"])


def test_late_updates_arrive_after_newer_ones_and_removals_come_last(landing: Path) -> None:
    late = 0
    for source in (*DEBEZIUM_SOURCES, *STREAM_KEYS):
        delivered = [op_time(source, r) for r in lines(landing, source)]
        late += sum(a > b for a, b in pairwise(delivered))
    assert late > 0  # some records arrive out of op-time order
    removed_at = {r["before"]["product_id"]: r["ts_ms"] for r in lines(landing, "catalog") if r["op"] == "d"}
    assert removed_at
    for source in (*DEBEZIUM_SOURCES, *STREAM_KEYS):
        for record in lines(landing, source):
            product = product_of(source, record)
            if product not in removed_at or (source == "catalog" and record["op"] == "d"):
                continue
            removal = removed_at[product]
            # The removal is the product's last event of all, in every source.
            assert op_time(source, record) < (
                removal if source in DEBEZIUM_SOURCES else format_op_time(removal)
            ), record
