"""The pure merge core: each engine a fold over one key's records as Spark SQL, separate from I/O and Dagster."""

from wide_assets.merge.context import MergeContext
from wide_assets.merge.plan import merge_query
from wide_assets.merge.registry import engine_for

__all__ = ["MergeContext", "engine_for", "merge_query"]
