"""The merge as one Spark SQL query: a batch of records plus the stored rows they touch -> changelog.

Per key: the stored row (as the earliest arrival) and the batch's records are ranked in merge order
with an explicit window (NULLs first, never an engine default), collected, and folded by the table's
engine. The result is the changelog of this commit: Paimon's one transition per key, or Fluss's CDC
entries per record. The wide table's new rows are the last entry per key, so the changelog alone is
enough to apply (and re-apply) a commit.
"""

from __future__ import annotations

from dataclasses import replace

from wide_assets.merge.column_sets import SET_COLUMNS, with_column_sets
from wide_assets.merge.context import (
    ENTRY_INDEXES,
    MergeContext,
    comparable,
    compared_exactly,
    one_zero,
    sequence_value,
)
from wide_assets.merge.engine import ColumnFold, MergeEngine
from wide_assets.merge.registry import engine_for
from wide_assets.options.common import ChangelogProducer, MergeOptions
from wide_assets.sql import RowKind, columns, key_join, kind_in, named_struct, quote

PRODUCERS_WITH_UNCHANGED_ROWS: tuple[ChangelogProducer, ...] = ("lookup", "full-compaction")


def logs_unchanged_rows(merge: MergeOptions) -> bool:
    """Whether a key touched but left unchanged gets a -U/+U pair: only where the changelog shows such
    rows (C4). Deduplication that ignores some fields happens when the changelog is read: a change
    confined to those fields must still reach the table."""
    return merge.changelog_producer in PRODUCERS_WITH_UNCHANGED_ROWS and not merge.row_deduplicate


def changelog_read_from_merge(merge: MergeOptions) -> bool:
    """Whether the changelog readers see is the merge's entries, -U included: Paimon's `lookup` and
    `full-compaction` producers, and every Fluss table. Otherwise (`none`, `input`) the entries only
    carry the table's new images, and their before-images are not logged."""
    return merge.dialect == "fluss" or merge.changelog_producer in PRODUCERS_WITH_UNCHANGED_ROWS


def kind_filter(ctx: MergeContext) -> str:
    """Paimon's row-kind filter / Fluss's upsert sink: which input kinds reach the merge at all."""
    merge = ctx.merge
    dropped = []
    if merge.dialect == "fluss":
        dropped.append(RowKind.UPDATE_BEFORE)  # a primary-key sink never receives UPDATE_BEFORE
        if merge.ignore_delete or merge.delete_behavior == "ignore":
            dropped.append(RowKind.DELETE)
    else:
        if merge.ignore_delete:
            dropped += [RowKind.UPDATE_BEFORE, RowKind.DELETE]
        elif merge.ignore_update_before:
            dropped.append(RowKind.UPDATE_BEFORE)
    return f"NOT {kind_in('_row_kind', dropped)}" if dropped else "true"


# The largest arrival `entry_offset` numbers from (its negation the least): the entries' numbers then
# fit a BIGINT.
ARRIVAL_BOUND = (2**63 - 1) // ENTRY_INDEXES - 1


def entry_offset(arrivals: tuple[int, int] | None) -> str:
    """SQL over `merge_query`'s entries: each entry's `_offset`, its place in the commit, from
    (`_order_a`, `_order_i`), for a batch whose arrivals lie within `arrivals` (least, greatest; None
    when not known). `ENTRY_INDEXES * _order_a + _order_i` keeps the order without ranking every entry
    in one task (a window over the whole commit); its numbers have gaps, as the log's have where it
    leaves -U entries out. Arrivals it cannot number so within a BIGINT are ranked. An arrival outside
    the bound anyway (`arrivals` assumed, not counted: `batch.GENERATED_ARRIVALS`) fails the query
    rather than wrap around."""
    if arrivals is not None and arrivals[0] >= -ARRIVAL_BOUND and arrivals[1] <= ARRIVAL_BOUND:
        return (
            f"CASE WHEN _order_a NOT BETWEEN {-ARRIVAL_BOUND} AND {ARRIVAL_BOUND} THEN raise_error(concat("
            "'An arrival order of ', CAST(_order_a AS STRING), ' is beyond what a commit can number: the "
            "changes have too many partitions (over 2^29); repartition them or give each record an "
            f"_offset.')) ELSE {ENTRY_INDEXES} * _order_a + _order_i END"
        )
    return "CAST(row_number() OVER (ORDER BY _order_a, _order_i) - 1 AS BIGINT)"


def merge_order(ctx: MergeContext) -> str:
    """Section 0.1: sequence.field (NULL first; descending reverses), then arrival, stored row first."""
    keys = []
    if ctx.merge.dialect == "paimon":
        # NULL first either way: Paimon's comparator places NULL apart from the direction
        # (GenerateUtils.generateRowCompare), so descending order never lets a NULL sequence win.
        direction = "DESC NULLS FIRST" if ctx.merge.sequence_descending else "ASC NULLS FIRST"
        keys = [
            f"{sequence_value(ctx.aliases[f], ctx.column(f).type)} {direction}"
            for f in ctx.merge.sequence_fields
        ]
    return ", ".join([*keys, "CASE WHEN _stored THEN 0 ELSE 1 END", "_arrival"])


def merge_query(
    ctx: MergeContext,
    segmented: bool = False,
    adds_only: bool = False,
    one_record_per_key: bool = False,
    nothing_stored: bool = False,
    rows: bool = False,
) -> str:
    """SQL over `{batch}` (table columns, `_row_kind`, `_offset`) and `{stored}` (the wide table).

    Returns the primary key, `_row_kind`, `_order_a`/`_order_i` (the entry's order within the
    commit) and the value columns, under the table's own column names. With `rows` (engines with one
    transition per key), returns instead the table's columns of the rows the batch's keys have once
    its entries are applied (see `_rows_after`): what a read needs, without listing the entries.

    `segmented`: the batch also has `_segment` (its records come from several commits, ascending
    with `_offset`). At each commit's first record of a key whose row does not exist, the fold
    starts again from the empty state, as it would had each commit been merged on its own: state a
    commit left on a row it did not keep (e.g. a retraction's sequence) is not stored.

    `adds_only`: the batch holds no retraction. Then no row stops existing, so segments need no
    restart, and an engine may split its fold into independent column folds (`column_folds`).

    `one_record_per_key`: no key has two records in the batch, and `nothing_stored`: the table holds
    no row (a first load). Each spares the query work whose result it already knows: grouping the
    records by key, ranking a key's records, telling inserts from updates (bench.initial_load).
    """
    engine = engine_for(ctx.merge)
    keys = _key_aliases(ctx)
    column_folds = _column_folds(ctx, engine, adds_only)
    if column_folds is not None:
        folded = _column_folded(ctx, keys, column_folds, one_record_per_key, nothing_stored)
        if rows:
            return _rows_after(ctx, engine, keys, folded)
        # Column folds leave every key they see existing, so with nothing stored each is inserted.
        return _entries(ctx, engine, keys, folded, all_inserted=nothing_stored)
    stored_row = ctx.row("r")
    key_list = ", ".join(keys)
    step = engine.step(ctx)
    if ctx.target_columns is not None and not engine.per_record:
        # The stored row is a full row: only the batch's records are limited to the target columns.
        step = f"CASE WHEN r._stored THEN {engine.step(replace(ctx, target_columns=None))} ELSE {step} END"
    if ctx.column_sets:
        step = with_column_sets(ctx, step)
    if one_record_per_key and nothing_stored and not segmented:
        # Each key's one record is its group: one step from the initial state, the step's `s` and `r`
        # struct columns, and no stored row before it. No array is built and no lambda runs: that
        # cost a first load of 1M rows into an aggregation table a quarter of its merge.
        folded = f"""{_grouped(ctx, keys, segmented, alone=True)}, folded AS (
  SELECT {key_list}, _first, CAST(NULL AS {ctx.row_type}) AS before, {step} AS st
  FROM (SELECT {key_list}, _first, {ctx.initial_state()} AS s, _record AS r FROM grouped) single_step
)"""
    else:
        fold = f"aggregate(recs, {ctx.initial_state()}, (s, r) -> {step})"
        if segmented:
            restarted = f"CASE WHEN r0._starts AND NOT s0.e THEN {ctx.initial_state()} ELSE s0 END"
            fold = f"aggregate(recs, {ctx.initial_state()}, (s0, r0) -> aggregate(array(r0), {restarted}, (s, r) -> {step}))"
        folded = f"""{_grouped(ctx, keys, segmented)}, with_stored AS (
  SELECT *, aggregate(filter(recs, r -> r._stored), CAST(NULL AS {ctx.row_type}), (b, r) -> {stored_row}) AS before
  FROM grouped
), folded AS (
  SELECT {key_list}, _first, before, {fold} AS st FROM with_stored
)"""
    if rows:
        return _rows_after(ctx, engine, keys, folded)
    return _entries(ctx, engine, keys, folded)


def folded_into_query(ctx: MergeContext, segmented: bool = False, adds_only: bool = False) -> str:
    """SQL over `{batch}` and `{stored}`: the stored rows with the batch folded in, exactly the table's
    columns: every stored row whose key the batch does not touch (past the row-kind filter), then the
    touched keys' rows (`merge_query(rows=True)`). What applying the merge's entries gives, in one
    query, without listing or numbering the entries."""
    spec = ctx.definition
    engine = engine_for(ctx.merge)
    column_folds = _column_folds(ctx, engine, adds_only)
    if column_folds is not None and _rows_are_their_new_images(ctx, engine):
        # One read of the stored rows, joined with the touched keys' folds and passed through where
        # the batch does not touch them, where the anti join below and the fold's semi join each read
        # them (`bench.union_read`, 1M rows with 10k pending: 1.96x the compacted read, not 2.21x).
        keys = _key_aliases(ctx)
        folded = _column_folded(ctx, keys, column_folds, every_stored_row=True)
        out_keys = ", ".join(f"{a} AS {quote(k)}" for k, a in zip(spec.primary_key, keys, strict=True))
        out_values = ", ".join(f"{ctx.encode(ctx.aliases[c], c)} AS {quote(c)}" for c in ctx.values)
        return f"""{folded}
SELECT {out_keys}, {out_values} FROM folded"""
    return f"""SELECT {columns(spec.column_names, "s.")} FROM {{stored}} s
LEFT ANTI JOIN (SELECT DISTINCT {columns(spec.primary_key)} FROM {{batch}} WHERE {kind_filter(ctx)}) t
  ON {key_join(spec.primary_key, "s", "t")}
UNION ALL
SELECT {columns(spec.column_names)} FROM ({merge_query(ctx, segmented, adds_only, rows=True)}) m"""


def refusal_query(ctx: MergeContext, segmented: bool = False) -> tuple[str, str] | None:
    """(SQL over `{batch}` and `{stored}` returning a row when some key's records are refused by the
    engine's guard, the refusal's message), or None for an engine without a guard. Asked on the
    driver before the merge, so that the message reaches the user however the engine runs its tasks:
    Sail's local-cluster mode can replace a task's error by its retry's ("a different attempt has
    already produced job output")."""
    guard = engine_for(ctx.merge).guard(ctx)
    if guard is None:
        return None
    condition, message = guard
    keys = _key_aliases(ctx)
    return (
        f"{_grouped(ctx, keys, segmented)}\nSELECT 1 AS refused FROM grouped WHERE {condition} LIMIT 1",
        message,
    )


def _key_aliases(ctx: MergeContext) -> list[str]:
    """The query's aliases of the primary key columns."""
    return [f"k{i}" for i in range(len(ctx.definition.primary_key))]


def _column_folds(ctx: MergeContext, engine: MergeEngine, adds_only: bool) -> list[ColumnFold] | None:
    """The independent column folds a batch splits into, where it can (see `merge_query`)."""
    return engine.column_folds(ctx) if adds_only and not ctx.column_sets else None


def _rows_are_their_new_images(ctx: MergeContext, engine: MergeEngine) -> bool:
    """Whether every key's row after a fold is the fold's new image (absent where the fold left none):
    a row that stays is its new image, or its stored image where that is the same value in every
    column; and a -D removes the row."""
    update_rule, delete_rule = _transition_rules(ctx, engine)
    return delete_rule == "true" and (
        update_rule == "true" or all(compared_exactly(ctx.fold_type(c)) for c in ctx.values)
    )


def _grouped(ctx: MergeContext, keys: list[str], segmented: bool, alone: bool = False) -> str:
    """CTEs ending in `grouped`: per key, the batch's records and the stored row in merge order (`recs`)
    and the first arrival (`_first`). `alone`: each key's only record is its batch record (one per
    key, nothing stored): its group is that record as a struct (`_record`), not an array."""
    key_select, value_select = _aliased_keys(ctx, keys), _aliased_values(ctx)
    stored_keys, stored_values = _aliased_keys(ctx, keys, "t."), _aliased_values(ctx, "t.")
    segment = "_segment" if segmented else "0"
    record_fields = ", ".join(
        [
            "'_rank', _rank",
            "'_kind', _kind",
            "'_stored', _stored",
            "'_arrival', _arrival",
            "'_starts', _starts",
        ]
        + [f"'{ctx.aliases[c]}', {ctx.record_value(c)}" for c in ctx.values]
        + ([f"'{SET_COLUMNS}', {SET_COLUMNS}"] if ctx.column_sets else [])
    )
    set_columns, stored_set_columns = (
        (f", {SET_COLUMNS}", f", CAST(NULL AS array<string>) AS {SET_COLUMNS}")
        if ctx.column_sets
        else ("", "")
    )
    key_list = ", ".join(keys)
    batch = f"""
WITH b AS (
  SELECT {key_select}, {value_select}, _row_kind AS _kind, CAST(_offset AS BIGINT) AS _arrival, false AS _stored,
         CAST({segment} AS BIGINT) AS _segment{set_columns}
  FROM {{batch}} WHERE {kind_filter(ctx)}
)"""
    if alone:
        return f"""{batch}, grouped AS (
  SELECT {key_list}, named_struct({record_fields}) AS _record, _arrival AS _first
  FROM (SELECT *, CAST(1 AS BIGINT) AS _rank, false AS _starts FROM b)
)"""
    return f"""{batch}, s AS (
  SELECT {stored_keys}, {stored_values}, '+I' AS _kind, CAST(NULL AS BIGINT) AS _arrival, true AS _stored,
         CAST(NULL AS BIGINT) AS _segment{stored_set_columns}
  FROM {_touched_stored(ctx, keys)}
), u AS (
  SELECT * FROM b UNION ALL SELECT * FROM s
), ranked AS (
  SELECT *, row_number() OVER (PARTITION BY {key_list} ORDER BY {merge_order(ctx)}) AS _rank,
         {_segment_start(segmented, key_list, merge_order(ctx))} AS _starts FROM u
), grouped AS (
  -- The rank leads each record struct and is unique per key, so sorting the structs orders them by
  -- rank. (Indexing a map by rank would not: Sail 0.7.2 looks such maps up wrongly past 16,384 groups.)
  SELECT {key_list},
         sort_array(collect_list(named_struct({record_fields}))) AS recs,
         min(_arrival) AS _first
  FROM ranked GROUP BY {key_list}
)"""


def _touched_stored(ctx: MergeContext, keys: list[str]) -> str:
    """`{stored}` as `t`, only the rows whose key the batch's records (`b`, keys aliased `keys`) touch.
    As a semi join on the batch's distinct keys, JVM Spark broadcasts the keys into the scan of the
    stored rows instead of shuffling every stored row to a sort-merge join."""
    spec = ctx.definition
    join = " AND ".join(f"t.{quote(k)} = x.{a}" for k, a in zip(spec.primary_key, keys, strict=True))
    return f"{{stored}} t LEFT SEMI JOIN (SELECT DISTINCT {', '.join(keys)} FROM b) x ON {join}"


def _aliased_keys(ctx: MergeContext, keys: list[str], prefix: str = "") -> str:
    """The primary key columns (of `prefix`) under the query's key aliases, a FLOAT or DOUBLE key's
    -0.0 as 0.0: one key, as `=` and both engines' GROUP BY have it. Sail 0.7.2 partitions a window
    over the two zeros apart, so a stored 0.0 and a record for -0.0 were ranked apart, both first,
    and the stored row was folded last: the record was lost."""
    return ", ".join(
        f"{one_zero(prefix + quote(k), ctx.column(k).type)} AS {a}"
        for k, a in zip(ctx.definition.primary_key, keys, strict=True)
    )


def _aliased_values(ctx: MergeContext, prefix: str = "") -> str:
    """The value columns (of `prefix`) decoded into their fold types, under their aliases."""
    return ", ".join(f"{ctx.decode(prefix + quote(c), c)} AS {ctx.aliases[c]}" for c in ctx.values)


def _entries(
    ctx: MergeContext, engine: MergeEngine, keys: list[str], folded: str, all_inserted: bool = False
) -> str:
    """The changelog entries of `folded` (CTEs ending in `folded`: keys, `_first`, `before`, `st`).
    `all_inserted`: every key is known to be new and to exist afterwards (each one +I entry)."""
    spec = ctx.definition
    if all_inserted and not engine.per_record:
        inserted_keys = ", ".join(f"{a} AS {quote(k)}" for k, a in zip(spec.primary_key, keys, strict=True))
        inserted = ", ".join(f"{ctx.encode('st.' + ctx.aliases[c], c)} AS {quote(c)}" for c in ctx.values)
        return f"""{folded}
SELECT {inserted_keys}, '+I' AS _row_kind, _first AS _order_a, 0 AS _order_i, {inserted} FROM folded"""
    # Fluss engines carry their per-record CDC entries in the fold state; Paimon's are derived per key.
    entries = "st.log" if engine.per_record else _transitions(ctx, engine)
    out_keys = ", ".join(f"{a} AS {quote(k)}" for k, a in zip(spec.primary_key, keys, strict=True))
    out_values = ", ".join(f"{ctx.encode('e.v.' + ctx.aliases[c], c)} AS {quote(c)}" for c in ctx.values)
    return f"""{folded}
SELECT {out_keys}, e.k AS _row_kind, e.a AS _order_a, e.i AS _order_i, {out_values}
FROM (SELECT {", ".join(keys)}, inline_entries.* FROM folded LATERAL VIEW inline({entries}) inline_entries) e"""


def _column_folded(
    ctx: MergeContext,
    keys: list[str],
    folds: list[ColumnFold],
    one_record_per_key: bool = False,
    nothing_stored: bool = False,
    every_stored_row: bool = False,
) -> str:
    """`folded` for a batch of inserts and updates split into column folds. Each fold's records (its
    columns only, the ones that touch them, sorted by arrival) follow the stored row, as in the
    row-wide fold, and start from the empty state; every key with a record exists afterwards.
    `one_record_per_key`: a key's records are its one record, if it touches the fold (no grouping);
    with `nothing_stored` too, each fold takes at most that one step (`_first_steps`).
    `every_stored_row`: `folded` is instead every key's row afterwards, stored or touched, as flat
    columns (keys and value aliases): folds run only where the batch touches a key, and a stored row
    it does not touch passes through as read."""
    key_list = ", ".join(keys)
    join = " AND ".join(f"t.{a} = g.{a}" for a in keys)
    values = [ctx.aliases[c] for c in ctx.values]
    fold_fields = [_fold_fields(ctx, fold) for fold in folds]
    if one_record_per_key and nothing_stored:
        record = named_struct({"_a": "_arrival", **{ctx.aliases[c]: ctx.record_value(c) for c in ctx.values}})
        actives = ", ".join(f"{fold.active} AS _active{i}" for i, fold in enumerate(folds))
        grouped = f"SELECT {key_list}, _arrival AS _first, {record} AS _record, {actives} FROM b"
        with_folds = _first_steps(ctx, keys, folds, fold_fields)
    else:
        initial = dict(ctx.state_fields())
        collected, aggregated = [], []
        for index, (fold, fields) in enumerate(zip(folds, fold_fields, strict=True)):
            values_of = {ctx.aliases[c]: ctx.record_value(c) for c in fold.columns}
            record = named_struct({"_a": "_arrival", **values_of})
            if one_record_per_key:
                collected.append(
                    f"array_repeat({record}, CASE WHEN {fold.active} THEN 1 ELSE 0 END) AS _recs{index}"
                )
            else:
                collected.append(
                    f"sort_array(collect_list({record}) FILTER (WHERE {fold.active})) AS _recs{index}"
                )
            stored = named_struct({"_a": "CAST(-1 AS BIGINT)", **values_of})
            start = named_struct({f: initial[f] for f in fields})
            step = named_struct({f: fold.updates.get(f, f"s.{f}") for f in fields})
            records = f"CASE WHEN _exists THEN concat(array({stored}), _recs{index}) ELSE _recs{index} END"
            fold_of_records = f"aggregate({records}, {start}, (s, r) -> {step})"
            if every_stored_row:
                fold_of_records = f"CASE WHEN _touched THEN {fold_of_records} END"
            aggregated.append(f"{fold_of_records} AS _fold{index}")
        grouping = f"min(_arrival) AS _first, {', '.join(collected)}"
        grouped = (
            f"SELECT {key_list}, _arrival AS _first, {', '.join(collected)} FROM b"
            if one_record_per_key
            else f"SELECT {key_list}, {grouping} FROM b GROUP BY {key_list}"
        )
        with_folds = f"SELECT *, {', '.join(aggregated)} FROM joined"
    state = {"e": "true"}
    for index, fields in enumerate(fold_fields):
        state |= {f: f"_fold{index}.{f}" for f in fields if f in values}
    stored_values = f"{', '.join(f't.{a}' for a in values)}, t.{keys[0]} IS NOT NULL AS _exists"
    if every_stored_row:
        # Every stored row, the touched ones joined with their keys' records: a RIGHT join that Sail
        # builds on the batch's keys and streams the stored rows through, each task on its own (a FULL
        # join also yields the keys no row holds, which a cluster must gather in one place); then the
        # new keys' records, found in the stored key columns alone and grouped apart (`grouped` is not
        # computed twice: 1M rows with 100k pending, 0.55 s instead of 0.59). An untouched stored row
        # keeps its key as stored (`_aliased_keys` reads -0.0 as 0.0).
        raw_keys = ", ".join(
            f"t.{quote(k)} AS _stored_{a}" for k, a in zip(ctx.definition.primary_key, keys, strict=True)
        )
        touched = f"g.{keys[0]} IS NOT NULL"
        touched_keys = ", ".join(
            f"CASE WHEN {touched} THEN g.{a} ELSE t._stored_{a} END AS {a}" for a in keys
        )
        grouped_values = ", ".join(["g._first", *(f"g._recs{i}" for i in range(len(folds)))])
        absent = ", ".join(f"CAST(NULL AS {ctx.fold_type(c)}) AS {ctx.aliases[c]}" for c in ctx.values)
        joined = f"""SELECT {touched_keys}, {grouped_values}, {stored_values}, {touched} AS _touched
  FROM grouped g RIGHT JOIN (
    SELECT {_aliased_keys(ctx, keys, "t.")}, {raw_keys}, {_aliased_values(ctx, "t.")} FROM {{stored}} t
  ) t ON {join}
  UNION ALL
  SELECT {", ".join(f"g.{a}" for a in keys)}, {grouped_values}, {absent}, false AS _exists, true AS _touched
  FROM (
    SELECT {key_list}, {grouping} FROM (
      SELECT g.* FROM b g LEFT ANTI JOIN (SELECT {_aliased_keys(ctx, keys, "t.")} FROM {{stored}} t) t ON {join}
    ) b GROUP BY {key_list}
  ) g"""
        rows = ", ".join(f"CASE WHEN _touched THEN {state[a]} ELSE {a} END AS {a}" for a in values)
        folded = f"SELECT {key_list}, {rows} FROM with_folds"
    else:
        joined = f"""SELECT g.*, {stored_values}
  FROM grouped g LEFT JOIN (
    SELECT {_aliased_keys(ctx, keys, "t.")}, {_aliased_values(ctx, "t.")} FROM {_touched_stored(ctx, keys)}
  ) t ON {join}"""
        folded = f"""SELECT {key_list}, _first, CASE WHEN _exists THEN {named_struct({a: a for a in values})} END AS before,
         {named_struct(state)} AS st
  FROM with_folds"""
    return f"""
WITH b AS (
  SELECT {_aliased_keys(ctx, keys)}, {_aliased_values(ctx)}, CAST(_offset AS BIGINT) AS _arrival
  FROM {{batch}} WHERE {kind_filter(ctx)}
), grouped AS (
  {grouped}
), joined AS (
  {joined}
), with_folds AS (
  {with_folds}
), folded AS (
  {folded}
)"""


def _fold_fields(ctx: MergeContext, fold: ColumnFold) -> list[str]:
    """The state fields of one column fold: its columns' aliases, then their 'seen' flags."""
    fields = [ctx.aliases[c] for c in fold.columns]
    return fields + [ctx.seen("s", c).split(".", 1)[1] for c in ctx.stateful_columns() if c in fold.columns]


def _first_steps(
    ctx: MergeContext, keys: list[str], folds: list[ColumnFold], fold_fields: list[list[str]]
) -> str:
    """SQL over `joined` of a first load (one record per key, `_record`, and `_active<i>` per fold;
    nothing stored): each fold's state (`_fold<i>`) after its record's step where it touches the fold.
    A step's SQL reads the state and the record as `s` and `r`: here they are struct columns of those
    names (every fold's fields in one struct: the folds' fields are disjoint), so no array is built
    and no lambda runs. Only where nothing is stored: a stored row's step taken so (a CASE over
    structs of every column) was slower than folding arrays with lambdas (docs/performance.md)."""
    initial = dict(ctx.state_fields())
    updates = {
        f: fold.updates.get(f, f"s.{f}")
        for fold, fields in zip(folds, fold_fields, strict=True)
        for f in fields
    }
    kept = ", ".join([*keys, "_first", "_exists", *(ctx.aliases[c] for c in ctx.values)])
    actives = ", ".join(f"_active{i}" for i in range(len(folds)))
    stepped = ", ".join(
        f"CASE WHEN _active{i} THEN {named_struct({f: updates[f] for f in fields})} "
        f"ELSE {named_struct({f: initial[f] for f in fields})} END AS _fold{i}"
        for i, fields in enumerate(fold_fields)
    )
    return f"""SELECT {kept}, {stepped} FROM (
    SELECT {kept}, {actives}, {named_struct({f: initial[f] for f in updates})} AS s, _record AS r FROM joined
  ) first_step"""


def _segment_start(segmented: bool, key_list: str, order: str) -> str:
    """Whether a record is its commit's first for its key (only asked of segmented batches)."""
    if not segmented:
        return "false"
    return f"NOT _stored AND row_number() OVER (PARTITION BY {key_list}, _segment ORDER BY {order}) = 1"


def _rows_after(ctx: MergeContext, engine: MergeEngine, keys: list[str], folded: str) -> str:
    """The rows of `folded`'s keys once `_transitions`' entries are applied: the new image where a key
    gets +I or +U, the stored image where it gets none, no row where it gets -D or stays absent.
    Per-column CASEs: Sail 0.7.2 took 2.0 s instead of 0.6 to pick whole structs this way."""
    if engine.per_record:
        raise ValueError("a per-record engine's rows are its last CDC entries, not one transition")
    out_keys = ", ".join(f"{a} AS {quote(k)}" for k, a in zip(ctx.definition.primary_key, keys, strict=True))
    if _rows_are_their_new_images(ctx, engine):
        # Without a CASE per column over a comparison of every column (a union read's query was
        # planned 0.05 s faster); the row exists where the fold left one.
        image = {c: f"st.{ctx.aliases[c]}" for c in ctx.values}
        exists = "st.e"
    else:
        update_rule, delete_rule = _transition_rules(ctx, engine)
        new_image = f"before IS NULL OR (st.e AND {update_rule})"
        image = {
            c: f"CASE WHEN {new_image} THEN st.{ctx.aliases[c]} ELSE before.{ctx.aliases[c]} END"
            for c in ctx.values
        }
        exists = f"CASE WHEN before IS NULL THEN st.e ELSE st.e OR NOT ({delete_rule}) END"
    out_values = ", ".join(f"{ctx.encode(image[c], c)} AS {quote(c)}" for c in ctx.values)
    return f"""{folded}
SELECT {out_keys}, {out_values} FROM folded WHERE {exists}"""


def _transition_rules(ctx: MergeContext, engine: MergeEngine) -> tuple[str, str]:
    """(when a row that stays gets -U/+U, when a row that goes gets -D): SQL over `before` and `st`."""
    keep_unchanged = logs_unchanged_rows(ctx.merge)
    unchanged = (
        " AND ".join(
            f"{comparable('before.' + ctx.aliases[c], ctx.fold_type(c))} <=> {comparable('st.' + ctx.aliases[c], ctx.fold_type(c))}"
            for c in ctx.values
        )
        or "true"
    )
    update_rule = (
        "false" if engine.insert_only_changelog else ("true" if keep_unchanged else f"NOT ({unchanged})")
    )
    delete_rule = "false" if engine.insert_only_changelog else "true"
    return update_rule, delete_rule


def _transitions(ctx: MergeContext, engine: MergeEngine) -> str:
    """C3: absent->row +I; row->absent -D; row->row -U/+U (unless deduplicated; +U alone where no
    changelog is read from the merge); one per key."""
    after = named_struct({a: f"st.{a}" for a in (ctx.aliases[c] for c in ctx.values)})
    entry_type = f"struct<k:string, a:bigint, i:int, v:{ctx.row_type}>"

    def entry(kind: str, index: int, row: str) -> str:
        return f"named_struct('k', '{kind}', 'a', _first, 'i', {index}, 'v', {row})"

    # A -U is only kept where a changelog is read from the entries (log_frames.log_rows): elsewhere an
    # update is its +U alone, and the query neither builds nor unnests its before-image.
    updated = (
        f"array({entry('-U', 0, 'before')}, {entry('+U', 1, after)})"
        if changelog_read_from_merge(ctx.merge)
        else f"array({entry('+U', 1, after)})"
    )
    update_rule, delete_rule = _transition_rules(ctx, engine)
    return f"""CASE
  WHEN before IS NULL AND st.e THEN array({entry("+I", 0, after)})
  WHEN before IS NOT NULL AND NOT st.e AND {delete_rule} THEN array({entry("-D", 0, "before")})
  WHEN before IS NOT NULL AND st.e AND {update_rule} THEN {updated}
  ELSE CAST(array() AS array<{entry_type}>)
END"""
