"""The product_360 benchmark workload: schema, deterministic data, the file layout and the oracle.

Five sources each own 1-2 value columns plus their op time (`<source>_ts`, bigint), one Paimon
sequence group per source; every value column aggregates with `last_non_null_value`, so a NULL value
means "no opinion" (as Paimon users write partial rows). The initial state has a row for every one of
N keys in every source, fully filled; the incremental batch has K change records, each of one source,
whose value columns are each NULL with probability 0.2 (the op time is always set): 10% carry an op
time older than the stored one (they must lose), 5% are for new keys (N and up), the rest update
uniform random keys with a newer op time. Keys repeat within the batch.

Semantics, per key and source: a value column takes the value of the newest record (largest op time,
the later record on a tie) whose value is not NULL among the batch records whose op time is >= the
stored row's op time for that source; with no such record it keeps the stored value (NULL for a new
key). The source's op time becomes the max of the stored one and the batch's. Paimon folds records in
arrival order (`last_non_null_value`: a newer record's non-NULL value replaces, an older record only
fills a NULL); here non-late op times increase with arrival and late records are older than a stored
row whose values are all set, so that fold gives exactly this rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

KEY = "product_id"
LATE_SHARE = 0.10
NEW_KEY_SHARE = 0.05
NULL_SHARE = 0.20  # per value column of a batch record
ARROW_TYPES = {"string": pa.string(), "double": pa.float64(), "date": pa.date32(), "bigint": pa.int64()}


@dataclass(frozen=True)
class Source:
    """One source: its value columns (name, SQL type), its share of the batch; its op time is `<name>_ts`."""

    name: str
    values: tuple[tuple[str, str], ...]
    weight: float

    @property
    def ts(self) -> str:
        return f"{self.name}_ts"

    @property
    def columns(self) -> tuple[str, ...]:
        return (*(c for c, _ in self.values), self.ts)


SOURCES = (
    Source("catalog", (("product_name", "string"), ("brand", "string")), 0.15),
    Source("pricing", (("price", "double"), ("sale_ends", "date")), 0.35),
    Source("lifecycle", (("discontinue_date", "date"),), 0.10),
    Source("reviews", (("review_cnt", "bigint"), ("avg_rating", "double")), 0.25),
    Source("questions", (("open_question_cnt", "bigint"),), 0.15),
)
COLUMNS = [(KEY, "bigint")] + [c for s in SOURCES for c in (*s.values, (s.ts, "bigint"))]
COLUMN_NAMES = [c for c, _ in COLUMNS]
SCHEMA = pa.schema([(c, ARROW_TYPES[t]) for c, t in COLUMNS])
OPTIONS = {
    "merge-engine": "partial-update",
    "fields.default-aggregate-function": "last_non_null_value",
    **{f"fields.{s.ts}.sequence-group": ",".join(c for c, _ in s.values) for s in SOURCES},
}


@dataclass(frozen=True)
class Layout:
    """Where one size's files live under the benchmark's work directory."""

    root: Path
    n: int
    k: int
    # The batch's keys (but new ones) come from the top tenth of the key range, not all of it: a batch
    # of recent entities, as CDC feeds often are.
    hot: bool = False

    @property
    def table_dir(self) -> Path:
        return self.root / f"n{self.n}"

    @property
    def run_dir(self) -> Path:
        return self.table_dir / (f"k{self.k}_hot" if self.hot else f"k{self.k}")

    @property
    def initial(self) -> Path:
        """The initial wide table as one Parquet file (every source loaded)."""
        return self.table_dir / "initial.parquet"

    def base(self, name: str) -> Path:
        """The initial wide table as a Delta table: a WideTable's (`default`, `write_only`; its
        changelog next to it) or a plain one (`delta`, `delta_dv` with deletion vectors enabled)."""
        return self.table_dir / f"base_{name}" / "wide"

    def source_files(self, source: Source) -> list[str]:
        """A source's state table: its initial rows plus the batch's records of it, appended."""
        return [str(self.table_dir / "sources" / f"{source.name}.parquet"), str(self.batch_file(source))]

    def batch_file(self, source: Source) -> Path:
        return self.run_dir / "batch" / f"{source.name}.parquet"

    @property
    def changes(self) -> Path:
        """The batch as one sparse frame: the key plus every column, NULL outside the record's source
        (whose op time is set)."""
        return self.run_dir / "changes.parquet"

    def output(self, candidate: str) -> Path:
        return self.run_dir / "out" / candidate


def _values(rng: np.random.Generator, name: str, sql_type: str, n: int) -> pa.Array:
    """`n` random values of a column."""
    if sql_type == "string":
        numbers = pa.array(rng.integers(0, 1_000_000_000, n)).cast(pa.string())
        return pc.binary_join_element_wise(f"{name}-", numbers, "")
    if sql_type == "double":
        return pa.array(np.round(rng.uniform(1, 1000, n), 2))
    if sql_type == "date":
        return pa.array(rng.integers(18_000, 21_000, n).astype(np.int32)).cast(pa.date32())
    return pa.array(rng.integers(0, 1000, n))


def generate(layout: Layout, seed: int) -> None:
    """Write the initial state (once per N) and the batch (per K) of `layout`; deterministic per seed."""
    n, k = layout.n, layout.k
    if not layout.initial.exists():
        rng = np.random.default_rng([seed, n])
        (layout.table_dir / "sources").mkdir(parents=True, exist_ok=True)
        keys = pa.array(np.arange(n, dtype=np.int64))
        columns = {KEY: keys}
        for source in SOURCES:
            state = {KEY: keys}
            for name, sql_type in source.values:
                state[name] = _values(rng, name, sql_type, n)
            state[source.ts] = pa.array(rng.integers(1_000_000, 2_000_000, n))
            pq.write_table(pa.table(state), layout.table_dir / "sources" / f"{source.name}.parquet")
            columns.update(state)
        pq.write_table(pa.table(columns, schema=SCHEMA), layout.initial)
    if layout.changes.exists():
        return
    rng = np.random.default_rng([seed, n, k])
    weights = np.array([s.weight for s in SOURCES])
    owner = rng.choice(len(SOURCES), k, p=weights / weights.sum())
    kind = rng.random(k)
    late = kind < LATE_SHARE
    new = (kind >= LATE_SHARE) & (kind < LATE_SHARE + NEW_KEY_SHARE)
    keys = rng.integers(n - n // 10, n, k) if layout.hot else rng.integers(0, n, k)
    # New keys come from a range half as large as their records, so a new key often gets several sources.
    keys[new] = n + rng.integers(0, max(1, int(new.sum()) // 2), int(new.sum()))
    ts = 3_000_000 + np.arange(k, dtype=np.int64)
    stored = np.stack([pq.read_table(layout.initial, columns=[s.ts]).column(0).to_numpy() for s in SOURCES])
    ts[late] = stored[owner[late], keys[late]] - rng.integers(1, 1000, int(late.sum()))
    columns = {KEY: pa.array(keys)}
    for index, source in enumerate(SOURCES):
        other = owner != index
        for name, sql_type in source.values:
            values = _values(rng, name, sql_type, k)
            absent = pa.array(other | (rng.random(k) < NULL_SHARE))
            columns[name] = pc.if_else(absent, pa.scalar(None, ARROW_TYPES[sql_type]), values)
        columns[source.ts] = pc.if_else(pa.array(other), pa.scalar(None, pa.int64()), pa.array(ts))
    changes = pa.table(columns, schema=SCHEMA)
    (layout.run_dir / "batch").mkdir(parents=True, exist_ok=True)
    pq.write_table(changes, layout.changes)
    for source in SOURCES:
        records = changes.filter(pc.is_valid(changes[source.ts])).select([KEY, *source.columns])
        pq.write_table(records, layout.batch_file(source))


def oracle(layout: Layout) -> pa.Table:
    """The expected table, computed independently of every candidate with numpy indexing: per source
    and column, each key's newest eligible batch record (op time >= the stored one) holding a value in
    that column, else the stored value; then every key any source has."""
    initial = pq.read_table(layout.initial)
    changes = pq.read_table(layout.changes)
    n = layout.n
    keys = changes[KEY].to_numpy()
    size = max(n, int(keys.max()) + 1)
    present = np.zeros(size, dtype=bool)
    present[:n] = True
    present[keys] = True
    positions = np.arange(changes.num_rows)
    columns = {KEY: pa.array(np.arange(size, dtype=np.int64))}
    for source in SOURCES:
        ts = changes[source.ts]
        record_ts = ts.to_numpy(zero_copy_only=False)
        stored_ts = np.full(size, -1, dtype=np.int64)
        stored_ts[:n] = initial[source.ts].to_numpy()
        records = np.flatnonzero(pc.is_valid(ts).to_numpy(zero_copy_only=False))
        eligible = records[record_ts[records] >= stored_ts[keys[records]]]
        for name in source.columns:
            # The op time itself is set in every record: the newest eligible record gives it.
            holding = eligible[pc.is_valid(changes[name]).to_numpy(zero_copy_only=False)[eligible]]
            # Sorted by key, op time, position in the batch: the last of each key is its winner.
            order = holding[np.lexsort((positions[holding], record_ts[holding], keys[holding]))]
            winners = order[np.append(keys[order][1:] != keys[order][:-1], True)]
            # Row indexes into (initial rows ++ batch records); -1 (no value at all) becomes NULL.
            index = np.full(size, -1, dtype=np.int64)
            index[:n] = np.arange(n)
            index[keys[winners]] = n + winners
            both = pa.chunked_array([*initial[name].chunks, *changes[name].chunks]).combine_chunks()
            columns[name] = both.take(pa.array(index, mask=index < 0))
    return pa.table(columns, schema=SCHEMA).filter(pa.array(present))


def mismatch(result: pa.Table, expected: pa.Table) -> str | None:
    """None when `result` holds exactly `expected`'s rows (in any order), else what differs."""
    missing = [c for c in expected.column_names if c not in result.column_names]
    if missing:
        return f"missing columns {missing}"
    result = result.select(expected.column_names).sort_by(KEY)
    if result.num_rows != expected.num_rows:
        return f"{result.num_rows} rows, expected {expected.num_rows}"
    differing = {}
    for field in expected.schema:
        got = result[field.name].cast(field.type).combine_chunks()
        want = expected[field.name].combine_chunks()
        if not got.equals(want):
            unequal = pc.invert(pc.fill_null(pc.equal(got, want), False))
            both_null = pc.and_(pc.is_null(got), pc.is_null(want))
            differing[field.name] = pc.sum(pc.and_not(unequal, both_null)).as_py()
    return f"rows differ in columns {differing}" if differing else None
