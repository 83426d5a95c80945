"""Sources' CDC tables -> a wide table: each source's new records as one commit of the table.

A source's progress is the `_offset` up to which it was applied, stored in the wide table's own commit
log as the commit's transaction id (app_id = source name, version = last applied `_offset`, with the
spans applied past it when a run applies records out of landing order: `table.progress`). Reading
it back from there, rather than from a separate cursor, makes a write and its progress one atomic
commit: a re-run after a crash or without new data applies nothing twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wide_assets.errors import ConcurrentWriteError, InvalidInputError, TableStateError
from wide_assets.pipelines.aggregated import aggregated_changes
from wide_assets.pipelines.markdown import markdown_table
from wide_assets.pipelines.run_order import CLEAR, INERT, MAKE, REMOVE, RETRACT, Unit, commit_plan
from wide_assets.pipelines.specs import LakeTableSpec, SourceSpec, WideTableSpec, op_time_family
from wide_assets.sql import columns, key_join, quote, string_literal
from wide_assets.table.log import Txn
from wide_assets.table.progress import Spans, advanced, spans_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from wide_assets.options.common import MergeOptions
    from wide_assets.session import SparkSession
    from wide_assets.table import WideTable, WriteResult

__all__ = [
    "KeyReport",
    "Pending",
    "Prepared",
    "SourceApplied",
    "apply_pending",
    "apply_sources",
    "apply_with_retries",
    "changelog_preview",
    "consumed_offsets",
    "consumed_progress",
    "key_report",
    "open_wide_table",
    "pending_records",
    "retraction_effect",
    "source_changes",
]

PREVIEW_ROWS = 20
# A run that loses a race for a source's range re-reads it; each retry means another run committed.
CONFLICT_RETRIES = 5
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Pending:
    """A source's records a table has not applied yet: progress in (`from_offset`, `to_offset`].

    Progress is the `_offset` of a CDC source, or the commit number of an upstream wide table. `rows`
    is None when nothing is pending. `source_version` is the source's Delta version they were read
    at, so a sensor can tell whether a newer version may hold more.
    """

    source: str
    from_offset: int
    to_offset: int
    source_version: int
    rows: DataFrame | None
    # The spans past `from_offset` applied already (by a run cut short: `table.progress`), not pending.
    ahead: Spans = ()


@dataclass(frozen=True)
class SourceApplied:
    """What one source contributed to a run: the `_offset` range applied and the commits it made, in
    order (several when the run's time order interleaves its records with another source's)."""

    source: str
    from_offset: int
    to_offset: int
    source_version: int
    results: tuple[WriteResult, ...] = ()
    # Keys whose records this source's late records kept from op-time order (`run_order`: only where
    # rows at one `_offset` touch several keys, a transform's).
    unordered_keys: frozenset[Hashable] = frozenset()

    @property
    def result(self) -> WriteResult | None:
        """The source's last commit of the run, None when it made none."""
        return self.results[-1] if self.results else None


def open_wide_table(spark: SparkSession, spec: LakeTableSpec, path: str) -> WideTable:
    """Create the table from its spec, or open it: as it is when the spec is its definition, after
    adding the columns a spec declares after the stored ones (a declaration that gained a source)."""
    from wide_assets.table import WideTable

    return WideTable.create(
        spark,
        path,
        columns=list(spec.columns),
        primary_key=spec.primary_key,
        options=dict(spec.options),
        append_new_columns=True,
    )


def consumed_progress(table: WideTable) -> dict[str, tuple[int, Spans]]:
    """Per source (commit app_id): the `_offset` up to which every record is applied, and the spans
    past it applied too (`table.progress`): its last commit's."""
    return {c.txn.app_id: (c.txn.offset, c.txn.ahead) for c in table.commits() if c.txn is not None}


def consumed_offsets(table: WideTable) -> dict[str, int]:
    """Per source (commit app_id): the `_offset` up to which every record is applied."""
    return {source: offset for source, (offset, _) in consumed_progress(table).items()}


def pending_records(
    spark: SparkSession, table: WideTable, source: str, path: str, upto_at_most: int | None = None
) -> Pending:
    """`source`'s CDC records past the `_offset` `table` consumed (and not past `upto_at_most`)."""
    from wide_assets.table import delta_tables

    # Pinned to one version: the records and the version reported for them must agree.
    version = delta_tables.version(path)
    if version is None:
        raise TableStateError(f"Source {source} has no CDC table at {path}; materialize it first.")
    rows = spark.read.format("delta").option("versionAsOf", version).load(path)
    last, ahead = consumed_progress(table).get(source, (0, ()))
    past = f"_offset > {last}" + (f" AND NOT {spans_sql('_offset', ahead)}" if ahead else "")
    bound = "" if upto_at_most is None else f" AND _offset <= {int(upto_at_most)}"
    upto = spark.sql(f"SELECT max(_offset) AS m FROM {{rows}} WHERE {past}{bound}", rows=rows).collect()[0].m
    if upto is None:
        return Pending(source, last, last, version, None, ahead)
    pending = spark.sql(f"SELECT * FROM {{rows}} WHERE {past} AND _offset <= {upto}", rows=rows)
    return Pending(source, last, int(upto), version, pending, ahead)


def apply_pending(
    table: WideTable,
    pending: Pending,
    changes: DataFrame | None,
    target_columns: Sequence[str] | None = None,
    run: str | None = None,
    spans: Spans | None = None,
) -> SourceApplied:
    """Write `changes` (derived from `pending.rows`) as one commit whose txn is the source's progress
    after it: every pending offset applied, or those in `spans` (`run`: the run whose plan ordered it)."""
    result = None
    if changes is not None:
        applied = spans if spans is not None else ((pending.from_offset + 1, pending.to_offset),)
        offset, ahead = advanced(pending.from_offset, pending.ahead, applied)
        txn = Txn(pending.source, offset, pending.from_offset, run, ahead, pending.ahead)
        written = table.write(changes, target_columns=target_columns, txn=txn)
        # Skipped: a concurrent run committed this range first, so this run made no commit.
        result = None if written.skipped else written
    return SourceApplied(
        pending.source,
        pending.from_offset,
        pending.to_offset,
        pending.source_version,
        () if result is None else (result,),
    )


Prepared = tuple[Pending, "DataFrame | None"]


def apply_with_retries(
    table: WideTable, prepare: Callable[[], Prepared], target_columns: Sequence[str] | None = None
) -> SourceApplied:
    """`apply_pending` of what `prepare` reads; when another run commits part of that range first
    (`ConcurrentWriteError`), nothing was written, so read again and retry."""
    attempt = 1
    while True:
        pending, changes = prepare()
        try:
            return apply_pending(table, pending, changes, target_columns)
        except ConcurrentWriteError:
            if attempt == CONFLICT_RETRIES:
                raise
            attempt += 1


def apply_sources(
    spark: SparkSession, spec: WideTableSpec, table: WideTable, source_paths: Mapping[str, str]
) -> list[SourceApplied]:
    """Write each source's records past its consumed `_offset`, merged in time order across sources
    (`run_order`): one commit per source, or more where the order interleaves sources' records.

    Each commit goes through `apply_pending`, a segment being a pending range of its own. When another
    run commits part of a range first (`ConcurrentWriteError`), the commit that lost wrote nothing:
    read every source's pending records again and go on from there."""
    made: dict[str, list[WriteResult]] = {source.name: [] for source in spec.sources}
    unordered: dict[str, frozenset[Hashable]] = {}
    first: dict[str, Pending] = {}
    latest: dict[str, Pending] = {}
    # The run's commits name it (retries included: a commit that lost applied nothing): the convergence
    # oracle tells from it whether a retraction met the row an insert of the same run made.
    run = uuid.uuid4().hex
    attempt = 1
    while True:
        prepared = {}
        for source in spec.sources:
            path = source_paths[source.name]
            pending = latest[source.name] = pending_records(spark, table, source.name, path)
            first.setdefault(source.name, pending)
            if pending.rows is not None:
                changes = source_changes(spark, spec, source, pending, path)
                prepared[source.name] = (pending, changes)
        try:
            for name, keys in _apply_in_time_order(spark, spec, table, prepared, made, run).items():
                unordered[name] = unordered.get(name, frozenset()) | keys
            break
        except ConcurrentWriteError:
            if attempt == CONFLICT_RETRIES:
                raise
            attempt += 1
    return [
        SourceApplied(
            name,
            first[name].from_offset,
            latest[name].to_offset,
            latest[name].source_version,
            tuple(made[name]),
            unordered.get(name, frozenset()),
        )
        for name in latest
    ]


def _apply_in_time_order(
    spark: SparkSession,
    spec: WideTableSpec,
    table: WideTable,
    prepared: Mapping[str, tuple[Pending, DataFrame]],
    made: dict[str, list[WriteResult]],
    run: str,
) -> dict[str, frozenset[Hashable]]:
    """Commit `prepared` (source -> its pending records and their wide-table changes) in the order of
    `run_order.commit_plan`, as commits of `run`, adding each commit made to `made`. Returns, per source, the keys whose
    op-time order its late records made impossible to keep with one commit per range of a source."""
    ranges = {name: (pending.from_offset, pending.to_offset) for name, (pending, _) in prepared.items()}
    units, stored = _shared_key_units(spark, spec, table, prepared) if len(prepared) > 1 else ({}, set())
    plan = commit_plan([s.name for s in spec.sources], ranges, units, frozenset(stored))
    progress = {name: (pending.from_offset, pending.ahead) for name, (pending, _) in prepared.items()}
    for segment in plan.segments:
        pending, changes = prepared[segment.source]
        source = spec.source(segment.source)
        if segment.offsets != ((ranges[segment.source][0] + 1, ranges[segment.source][1]),):
            changes = changes.where(spans_sql("_offset", segment.offsets))
        inserts = [
            o for o in plan.inserts.get(segment.source, ()) if any(a <= o <= b for a, b in segment.offsets)
        ]
        if inserts:
            changes = _as_inserts(spec, source, table, changes, inserts)
        # The segment as a pending range of its own: its commit's txn is the source's progress after it.
        low, ahead = progress[segment.source]
        part = Pending(segment.source, low, segment.last, pending.source_version, None, ahead)
        targets = list(spec.column_map(source).values())
        made[segment.source].extend(
            apply_pending(table, part, changes, targets, run, segment.offsets).results
        )
        progress[segment.source] = advanced(low, ahead, segment.offsets)
    return dict(plan.unordered)


def _cleared_by_insert(
    spec: WideTableSpec, source: SourceSpec, merge: MergeOptions
) -> tuple[str, ...] | None:
    """The columns a retraction of `source` clears, when an insert of NULLs in them with the record's
    sequence fields does what the retraction does (P7 and P10 on sequence groups without an aggregate
    function, in a Paimon partial-update table whose retractions neither remove rows nor are ignored),
    except that it also makes the row (`run_order.CLEAR`); else None. Not under durable tombstones:
    they drop inserts (T2), so another source's insert may make no row, and the written insert itself
    may be dropped where the retraction would not be."""
    if (
        merge.dialect != "paimon"
        or merge.engine != "partial-update"
        or merge.ignore_delete
        or merge.remove_record_on_delete
        or merge.tombstone_retention_s is not None
        or source.transform is not None
        or source.aggregates
        or source.has_column_sets
    ):
        return None
    written = set(spec.column_map(source).values()) - set(spec.primary_key)
    groups = [g for g in merge.sequence_groups if written & {*g.sequence_fields, *g.protected}]
    grouped = {c for g in groups for c in (*g.sequence_fields, *g.protected)}
    sequences = {f for g in groups for f in g.sequence_fields}
    if (
        not written <= grouped
        or not sequences <= written
        or written & set(merge.functions)
        or sequences & set(merge.remove_record_on_sequence_group)
    ):
        return None
    return tuple(c for c in spec.column_map(source).values() if c in written - sequences)


def _as_inserts(
    spec: WideTableSpec, source: SourceSpec, table: WideTable, changes: DataFrame, offsets: Sequence[int]
) -> DataFrame:
    """`changes` with the retractions at `offsets` written as inserts of NULLs (`_cleared_by_insert`)."""
    cleared = _cleared_by_insert(spec, source, table.definition.merge)
    assert cleared is not None, "only a CLEAR retraction is written as an insert"
    chosen = f"_offset IN ({', '.join(str(int(o)) for o in sorted(offsets))})"

    def column(name: str) -> str:
        if name in cleared:
            return f"CASE WHEN {chosen} THEN NULL ELSE {quote(name)} END AS {quote(name)}"
        if name == "_row_kind":
            return f"CASE WHEN {chosen} THEN '+I' ELSE _row_kind END AS _row_kind"
        return quote(name)

    return changes.selectExpr(*(column(c) for c in changes.columns))


def retraction_effect(spec: WideTableSpec, source: SourceSpec, merge: MergeOptions) -> str:
    """What a retraction (`-U`/`-D`) of `source` does to its key's row (`run_order`) under `merge`."""
    if source.deletes == "ignore":
        return INERT
    if source.deletes == "remove-row" or merge.remove_record_on_delete:
        return REMOVE
    if merge.engine not in ("partial-update", "aggregation"):
        # Other engines' retractions remove the row (deduplicate, last_row), or may (Fluss, W3).
        return REMOVE
    return RETRACT if _cleared_by_insert(spec, source, merge) is None else CLEAR


def _effect(spec: WideTableSpec, source: SourceSpec, table: WideTable, changes: DataFrame) -> str:
    """SQL: what a change row `c` does to its key's row, for its order against other sources' records
    (`run_order`): under first-row, where a key's first record wins, every record keeps its order."""
    from wide_assets.merge import engine_for

    if engine_for(table.definition.merge).first_record_wins:
        return string_literal(REMOVE)
    if "_row_kind" not in changes.columns:
        return string_literal(MAKE)
    retraction = string_literal(retraction_effect(spec, source, table.definition.merge))
    return f"CASE WHEN c._row_kind IN ('-U', '-D') THEN {retraction} ELSE {string_literal(MAKE)} END"


def _shared_key_units(
    spark: SparkSession,
    spec: WideTableSpec,
    table: WideTable,
    prepared: Mapping[str, tuple[Pending, DataFrame]],
) -> tuple[dict[str, list[Unit]], set[Hashable]]:
    """Per source: its changes whose key another source also changes in the run (or whose retraction
    comes before the key's first insert, on a key the table does not hold), with their op times
    (the op time of the record at the change's `_offset`, in the type `op_time_family` sorts by) and
    what they do to the row; and those keys the table holds now."""
    family = op_time_family(spec)
    keys = columns(spec.primary_key)
    types = dict(spec.columns)
    frames: dict[str, Any] = {}
    selects = []
    for i, (name, (pending, changes)) in enumerate(prepared.items()):
        if "_offset" not in changes.columns:
            # A transform's rows without `_offset` cannot be told apart by arrival: one commit.
            continue
        source = spec.source(name)
        time = f"CAST(p.{quote(source.op_time)} AS {family})" if source.op_time else f"CAST(NULL AS {family})"
        frames[f"c{i}"], frames[f"p{i}"] = changes, pending.rows
        selects.append(
            f"SELECT {string_literal(name)} AS _source, "
            + ", ".join(f"CAST(c.{quote(k)} AS {types[k]}) AS {quote(k)}" for k in spec.primary_key)
            + f", c._offset, {time} AS _time, {_effect(spec, source, table, changes)} AS _effect "
            f"FROM {{c{i}}} c LEFT JOIN {{p{i}}} p ON c._offset = p._offset"
        )
    if len(selects) < 2:
        return {}, set()
    union = " UNION ALL ".join(selects)
    shared = "count(DISTINCT _source) > 1"
    on = key_join(spec.primary_key, "u", "w")
    # Whether the table holds a key matters only to a retraction that must meet its row.
    if any(
        retraction_effect(spec, spec.source(name), table.definition.merge) in (CLEAR, RETRACT)
        for name in prepared
    ):
        # A key one source changes joins the plan when a retraction of it comes before its first insert
        # and the table does not hold it: other keys may cut the source's records into several
        # commits, and one before the insert's would lose the retraction (module doc of `run_order`).
        retraction = f"_effect IN ({string_literal(CLEAR)}, {string_literal(RETRACT)})"
        first_maker = f"min(CASE WHEN _effect = {string_literal(MAKE)} THEN _offset END)"
        frames["stored"] = table.read()
        held = " AND ".join(f"t.{quote(k)} IS NOT NULL" for k in spec.primary_key)
        query = (
            f"WITH u AS ({union}), wanted AS (SELECT {keys}, {shared} AS _shared FROM u GROUP BY {keys} "
            f"HAVING {shared} OR min(CASE WHEN {retraction} THEN _offset END) < {first_maker}) "
            f"SELECT u.*, {held} AS _stored FROM u JOIN wanted w ON {on} "
            f"LEFT JOIN (SELECT DISTINCT {keys} FROM {{stored}}) t ON {key_join(spec.primary_key, 'u', 't')} "
            f"WHERE w._shared OR NOT ({held})"
        )
    else:
        query = (
            f"WITH u AS ({union}), wanted AS (SELECT {keys} FROM u GROUP BY {keys} HAVING {shared}) "
            f"SELECT u.*, FALSE AS _stored FROM u LEFT SEMI JOIN wanted w ON {on}"
        )
    rows = spark.sql(query, **frames).collect()
    grouped: dict[tuple[str, int], tuple[Any, dict[Hashable, set[str]]]] = {}
    stored: set[Hashable] = set()
    for row in rows:
        key = tuple(row[k] for k in spec.primary_key)
        _, effects = grouped.setdefault((row._source, int(row._offset)), (row._time, {}))
        effects.setdefault(key, set()).add(row._effect)
        if row._stored:
            stored.add(key)
    units: dict[str, list[Unit]] = {}
    for (name, offset), (time, effects) in grouped.items():
        # Rows of one offset that do different things to a key (a transform's) keep its order.
        single = {key: next(iter(kinds)) if len(kinds) == 1 else REMOVE for key, kinds in effects.items()}
        units.setdefault(name, []).append(Unit(offset, time, single))
    return units, stored


def source_changes(
    spark: SparkSession, spec: WideTableSpec, source: SourceSpec, pending: Pending, path: str
) -> DataFrame:
    """The wide-table records of `pending`: its columns renamed to the wide table's (without the
    retractions of a source declaring `deletes: ignore`), or computed over every record of the same
    source version up to the last pending one (`applied`) by the source's transform or its declared
    aggregates."""
    mapping = spec.column_map(source)
    if source.transform is None and not source.aggregates:
        selected = ", ".join(f"{quote(s)} AS {quote(w)}" for s, w in mapping.items())
        rows = pending.rows
        if source.has_column_sets:
            assert rows is not None, "only pending records have changes"
            rows = spark.sql(
                f"SELECT *, {listed_columns(spark, source, rows)} AS _listed FROM {{rows}}", rows=rows
            )
            keys = ", ".join(string_literal(w) for s, w in mapping.items() if s not in source.feeds)
            # In the wide table's names, without a lambda (see `listed_columns`).
            named = ", ".join(
                f"CASE WHEN array_contains(_listed, {string_literal(s)}) THEN {string_literal(w)} END"
                for s, w in mapping.items()
                if s in source.feeds
            )
            selected += f", concat(array({keys}), array_compact(array({named}))) AS _set_columns"
        # A source whose deletes mean nothing (`deletes: ignore`) writes no retraction: the table's
        # options would otherwise apply it as they apply every source's (P10 clears the group).
        kept = " WHERE _row_kind NOT IN ('-U', '-D')" if source.deletes == "ignore" else ""
        return spark.sql(f"SELECT {selected}, _row_kind, _offset FROM {{rows}}{kept}", rows=rows)
    rows = spark.read.format("delta").option("versionAsOf", pending.source_version).load(path)
    applied = spark.sql(f"SELECT * FROM {{rows}} WHERE _offset <= {pending.to_offset}", rows=rows)
    if source.transform is None:
        assert pending.rows is not None, "only pending records have changes"
        return aggregated_changes(spark, source, mapping, dict(spec.columns), pending.rows, applied)
    return spark.sql(source.transform, pending=pending.rows, applied=applied)


def listed_columns(spark: SparkSession, source: SourceSpec, rows: DataFrame) -> str:
    """SQL for the fed source columns a record of `rows` sets (docs/semantics.md 7.1). Raises
    InvalidInputError naming the file and line of a record listing a column the source does not feed."""
    fed = [c for c in source.feeds if c != source.op_time]
    listed = "CAST(array(" + ", ".join(string_literal(c) for c in fed) + ") AS array<string>)"
    if source.set_columns is not None:
        column = quote(source.set_columns)
        # Column names hold no blanks: "a, b" lists a and b. No lambda here: Sail 0.7.2 fails on a
        # lambda over a column once a filter is pushed into it ("No field named ...").
        array_type = "array" in dict(source.columns)[source.set_columns].lower()
        given = column if array_type else f"split(replace({column}, ' ', ''), ',')"
        unknown = f"array_except({given}, {listed})"
        bad = spark.sql(
            f"SELECT _source_file, _source_line, {unknown} AS names FROM {{rows}} "
            f"WHERE size({unknown}) > 0 ORDER BY _offset LIMIT {MAX_EXAMPLES}",
            rows=rows,
        ).collect()
        if bad:
            where = "; ".join(f"{r._source_file} line {r._source_line} names {list(r.names)}" for r in bad)
            raise InvalidInputError(
                f"Source {source.name}: its {source.set_columns} may only name the columns it feeds {fed}: "
                f"{where}. Fix those records (or add the columns to its feeds)."
            )
        listed = f"coalesce({given}, {listed})"
    if source.ignore_null_updates:
        # A NULL in an ignore-NULL column is not set: the table's value stays.
        nulls = ", ".join(
            f"CASE WHEN {quote(c)} IS NULL THEN {string_literal(c)} END" for c in source.ignore_null_updates
        )
        listed = f"array_except({listed}, array({nulls}))"
    return listed


def changelog_preview(spark: SparkSession, table: WideTable, start_commit: int) -> str:
    """Markdown: the number of changelog rows per kind from `start_commit` on, and the first of them."""
    if not table.definition.merge.produces_changelog:
        return "No changelog: the table's `changelog-producer` is `none`."
    entries = table.changelog(start_commit=start_commit)
    kinds = spark.sql(
        "SELECT _row_kind, count(*) AS n FROM {e} GROUP BY _row_kind ORDER BY _row_kind", e=entries
    ).collect()
    if not kinds:
        return "No changelog rows: nothing new was applied in this run."
    columns = ["_commit", "_row_kind", *table.definition.column_names]
    rows = entries.orderBy("_commit", "_offset").limit(PREVIEW_ROWS).collect()
    total = sum(int(k.n) for k in kinds)
    parts = [
        "Changelog rows by kind: " + ", ".join(f"`{k._row_kind}` {k.n}" for k in kinds),
        markdown_table(columns, ([row[c] for c in columns] for row in rows)),
    ]
    if total > len(rows):
        parts.append(f"{total - len(rows)} more row(s) not shown.")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class KeyReport:
    """Primary-key health of a table's rows."""

    rows: int
    null_keys: int
    duplicate_keys: int
    duplicate_rows: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.null_keys == 0 and self.duplicate_keys == 0


def key_report(spark: SparkSession, rows: DataFrame, primary_key: Sequence[str]) -> KeyReport:
    """Count rows with a NULL key part and keys held by more than one row, with a few examples.

    Only single-level aggregates: Sail 0.7 cannot plan an expression over a `count(*)` grouped by a
    NOT NULL column when a Delta file of the table holds a single row (exact statistics), e.g.
    `sum(n)` over `SELECT k, count(*) AS n ... GROUP BY k`; every wide table's key is NOT NULL and a
    commit touching one key writes such a file. So rows of duplicated keys are derived: rows with a
    complete key, minus distinct keys, plus duplicated keys.
    """
    keys = columns(primary_key)
    null_key = " OR ".join(f"{quote(k)} IS NULL" for k in primary_key)
    # count(DISTINCT a, b) skips tuples with a NULL part: it counts complete keys only.
    totals = spark.sql(
        f"SELECT count(*) AS rows, count_if({null_key}) AS null_keys, count(DISTINCT {keys}) AS keys "
        "FROM {rows}",
        rows=rows,
    ).collect()[0]
    duplicated = (
        f"SELECT {keys}, count(*) AS n FROM {{rows}} WHERE NOT ({null_key}) GROUP BY {keys} HAVING n > 1"
    )
    duplicate_keys = int(spark.sql(f"SELECT count(*) AS n FROM ({duplicated})", rows=rows).collect()[0].n)
    worst = spark.sql(f"{duplicated} ORDER BY n DESC, {keys} LIMIT {MAX_EXAMPLES}", rows=rows).collect()
    nulls = spark.sql(
        f"SELECT {keys} FROM {{rows}} WHERE {null_key} LIMIT {MAX_EXAMPLES}", rows=rows
    ).collect()
    examples = [f"{r.n} rows: " + _key_text(r, primary_key) for r in worst]
    examples += ["NULL key part: " + _key_text(r, primary_key) for r in nulls]
    return KeyReport(
        rows=int(totals.rows),
        null_keys=int(totals.null_keys),
        duplicate_keys=duplicate_keys,
        duplicate_rows=int(totals.rows) - int(totals.null_keys) - int(totals.keys) + duplicate_keys,
        examples=tuple(examples[:MAX_EXAMPLES]),
    )


def _key_text(row: Any, primary_key: Sequence[str]) -> str:
    return ", ".join(f"{k}={row[k]!r}" for k in primary_key)
