"""product_review_stats (seed 003): reviews -> reviewer_ids -> product_review_stats -> product_review_averages.

Not a declaration: a dictionary table assigning dense ids, RoaringBitmaps of those ids aggregated per
product, and a table recomputed from another table's changelog are steps no wide-table declaration
says. The pipeline is Python (`demos/product_review_stats.py`); Dagster loads this file's
`Definitions` like any Python module in the defs folder.
"""

from __future__ import annotations

from demos.product_review_stats import defs

__all__ = ["defs"]
