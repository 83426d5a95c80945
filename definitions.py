"""The `wide_assets` code location: the tables declared under `defs/`, plus the per-environment resources.

`defs/<table>/defs.yaml` declares one wide table each (`wide_assets.WideTableComponent`); `dg`
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

PROJECT_ROOT = Path(__file__).resolve().parent
DECLARATIONS = dg.ComponentTree.for_project(PROJECT_ROOT)


def _declared() -> dg.Definitions:
    """Everything the declarations build (a function: a code location holds one Definitions object)."""
    with warnings.catch_warnings():
        # Dagster's component loader calls its own beta and preview APIs (code references, sensor
        # owners); those warnings, raised inside Dagster, say nothing about this project.
        for category in (dg.BetaWarning, dg.PreviewWarning):
            warnings.filterwarnings("ignore", category=category, module=r"dagster\.")
        return DECLARATIONS.build_defs()


defs = dg.Definitions.merge(
    _declared(),
    dg.Definitions(
        resources={**resources_for_env(), "landing": LandingZone(root=str(PROJECT_ROOT / "data"))}
    ),
)
