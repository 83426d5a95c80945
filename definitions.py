"""The `wide_assets` code location: every demo's definitions plus the per-environment resources."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from demos import first_customer_touch, product_360, product_review_stats, user_rec_wide
from resources import resources_for_env
from wide_assets.pipelines import LandingZone

PROJECT_ROOT = Path(__file__).resolve().parent

defs = dg.Definitions.merge(
    user_rec_wide.defs,
    first_customer_touch.defs,
    product_review_stats.defs,
    product_360.defs,
    dg.Definitions(
        resources={**resources_for_env(), "landing": LandingZone(root=str(PROJECT_ROOT / "data"))}
    ),
)
