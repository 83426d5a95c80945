"""Which engine a table's options select."""

from __future__ import annotations

from wide_assets.merge.aggregation import Aggregation
from wide_assets.merge.deduplicate import Deduplicate
from wide_assets.merge.engine import MergeEngine
from wide_assets.merge.first_row import FirstRow
from wide_assets.merge.fluss_aggregation import FlussAggregation
from wide_assets.merge.fluss_first_row import FlussFirstRow
from wide_assets.merge.last_row import LastRow
from wide_assets.merge.partial_update import PartialUpdate
from wide_assets.merge.versioned import Versioned
from wide_assets.options.common import MergeOptions

ENGINES: dict[tuple[str, str], MergeEngine] = {
    ("paimon", "deduplicate"): Deduplicate(),
    ("paimon", "partial-update"): PartialUpdate(),
    ("paimon", "aggregation"): Aggregation(),
    ("paimon", "first-row"): FirstRow(),
    ("fluss", "last_row"): LastRow(),
    ("fluss", "first_row"): FlussFirstRow(),
    ("fluss", "versioned"): Versioned(),
    ("fluss", "aggregation"): FlussAggregation(),
}


def engine_for(merge: MergeOptions) -> MergeEngine:
    return ENGINES[(merge.dialect, merge.engine)]
