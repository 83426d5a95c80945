"""The pure merge core: each engine a fold over one key's records as Spark SQL, separate from I/O and Dagster."""

from wide_assets.merge.context import MergeContext
from wide_assets.merge.plan import (
    ARRIVAL_BOUND,
    changelog_read_from_merge,
    entry_offset,
    folded_into_query,
    logs_unchanged_rows,
    merge_query,
    refusal_query,
)
from wide_assets.merge.registry import engine_for

__all__ = [
    "ARRIVAL_BOUND",
    "MergeContext",
    "changelog_read_from_merge",
    "engine_for",
    "entry_offset",
    "folded_into_query",
    "logs_unchanged_rows",
    "merge_query",
    "refusal_query",
]
