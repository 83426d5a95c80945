"""The final image per key of logged commits: merged entries read back, or fragments folded into rows."""

from __future__ import annotations

from pyspark.sql import DataFrame

from wide_assets.batch import PreparedBatch, folded_into, merge_batch
from wide_assets.changelog import final_images, without_before_images
from wide_assets.merge import ARRIVAL_BOUND, MergeContext, engine_for
from wide_assets.queries import select
from wide_assets.sql import RETRACTS, columns, kind_in
from wide_assets.table.log import Origin
from wide_assets.table.log_frames import log_entries
from wide_assets.table.logged_images import fragment_counts
from wide_assets.table.storage import Storage
from wide_assets.table_definition import TableDefinition


def commit_images(storage: Storage, commits: list[int], stored: DataFrame | None = None) -> DataFrame:
    """The final image per key of `commits` (a contiguous range) over the `stored` rows they follow
    (default: the Delta table). Merged entries hold absolute images; only fragments need `stored`."""
    spec = storage.definition
    # A Paimon engine's merge gives one transition per key (+I, -D or -U/+U), so the images of one
    # merge are its entries without the before-images: a filter, where ranking them again costs two
    # windows and a join (in every one of a MERGE's source reads).
    one_transition_per_key = not engine_for(spec.merge).per_record
    if spec.merge.lookup_free_writes:  # the fragments of every commit fold in one merge
        if stored is None:
            stored = storage.rows(version=storage.version)
        entries = folded_fragments(storage, commits, stored)
        return (
            without_before_images(entries)
            if one_transition_per_key
            else final_images(storage.spark, spec, entries)
        )
    entries = log_entries(storage, commits, Origin.MERGED)
    if len(commits) == 1 and one_transition_per_key:
        return without_before_images(entries)
    return final_images(storage.spark, spec, entries, across_commits=True)


def folded_fragments(storage: Storage, commits: list[int], stored: DataFrame) -> DataFrame:
    """The changelog entries of folding the records of `commits` into `stored`, as one merge whose
    arrival order is commit then offset (the fold is sequential, so this equals commit by commit)."""
    entries = merge_batch(storage.spark, _fragments_batch(storage, commits), stored, segmented=True)
    # One merge: its entries belong to the last commit folded, as the log will record them.
    return select(storage.spark, f"SELECT *, CAST({max(commits)} AS BIGINT) AS _commit FROM {{e}}", e=entries)


def rows_fold_directly(spec: TableDefinition) -> bool:
    """Whether `with_fragments_folded` serves a union read of the table's pending fragments: an engine
    with one transition per key, whose value columns fold as they are stored (no codec), so that an
    unchanged row comes back exactly as stored."""
    context = MergeContext(spec)
    return not engine_for(spec.merge).per_record and all(
        context.decode("v", c) == "v" and context.encode("v", c) == "v" for c in spec.value_columns
    )


def with_fragments_folded(storage: Storage, commits: list[int], stored: DataFrame) -> DataFrame:
    """`stored` with the fragments of `commits` folded in, as the table will hold them after compaction:
    one query, where applying `folded_fragments`' entries reads the stored rows a second time and
    numbers every entry."""
    return folded_into(storage.spark, _fragments_batch(storage, commits), stored, segmented=True)


def _fragments_batch(storage: Storage, commits: list[int]) -> PreparedBatch:
    """The fragments of `commits` as one batch whose arrival order is commit then offset: numbered
    `(commit - first commit) * span + (offset - least offset)` (span: the offsets' range), which keeps
    that order without ranking every fragment in one task (a window over them all), when it fits the
    bound `entry_offset` numbers within; ranked otherwise."""
    spark, spec = storage.spark, storage.definition
    names = columns(spec.column_names)
    fragments = log_entries(storage, commits, Origin.FRAGMENT)
    counted = fragment_counts(storage, min(commits), max(commits))
    if counted is None:
        row = select(
            spark,
            f"SELECT count_if({kind_in('_row_kind', RETRACTS)}) AS retractions, min(_offset) AS least, "
            "max(_offset) AS greatest FROM {fragments}",
            fragments=fragments,
        ).collect()[0]
        counted = (int(row["retractions"]), row["least"], row["greatest"])
    retractions, least, greatest = counted
    arrivals, arrival = None, "row_number() OVER (ORDER BY _segment, _position)"
    if least is not None and greatest is not None:
        span = int(greatest) - int(least) + 1
        last = (max(commits) - min(commits) + 1) * span - 1
        if last <= ARRIVAL_BOUND:
            arrivals = (0, last)
            arrival = f"(_segment - {min(commits)}) * {span} + (_position - CAST({int(least)} AS BIGINT))"
    records = select(
        spark,
        f"SELECT {names}, _row_kind, _segment, CAST({arrival} AS BIGINT) AS _offset "
        f"FROM (SELECT {names}, _row_kind, _commit AS _segment, _offset AS _position FROM {{fragments}})",
        fragments=fragments,
    )
    return PreparedBatch(records, MergeContext(spec), retractions=retractions, arrivals=arrivals)
