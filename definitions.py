"""The `wide_assets` code location: the tables declared in `wide_assets_defs/`, plus the per-environment resources.

`wide_assets_defs/<table>/defs.yaml` declares one wide table each (`wide_assets.WideTableComponent`); `dg`
commands find that folder through `[tool.dg]` in pyproject.toml, and this module, the code location
they load, builds it. `DECLARATIONS` gives Python callers (tests, `python -m demos`) the loaded
components by folder name: `DECLARATIONS.load_component("product_360")`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from resources import resources_for_env
from wide_assets.pipelines import LandingZone

# Dagster's component loader and Definitions call Dagster's own beta and preview APIs (code references,
# sensor owners) when they build or copy definitions; those warnings, raised inside Dagster, say
# nothing about this project. Warnings raised from this project's code still show.
for _category in (dg.BetaWarning, dg.PreviewWarning):
    warnings.filterwarnings("ignore", category=_category, module=r"dagster\.")

PROJECT_ROOT = Path(__file__).resolve().parent
DECLARATIONS = dg.ComponentTree.for_project(PROJECT_ROOT)

defs = dg.Definitions.merge(
    DECLARATIONS.build_defs(),
    dg.Definitions(
        resources={**resources_for_env(), "landing": LandingZone(root=str(PROJECT_ROOT / "data"))}
    ),
)
