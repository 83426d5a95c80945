"""The `wide_assets` code location: the tables declared in `wide_assets_defs/`, with the resources they bring.

`wide_assets_defs/<table>/defs.yaml` declares one wide table each (`wide_assets.WideTableComponent`); `dg`
commands find that folder through `[tool.dg]` in pyproject.toml, and this module, the code location
they load, builds it. Each declaration brings the `spark`, `lake` and `landing` resources (the engine
$WIDE_ASSETS_ENGINE names, `lake/` or $WIDE_ASSETS_LAKE, `data/`). `DECLARATIONS` gives Python callers (tests, `python -m demos`) the loaded
components by folder name: `DECLARATIONS.load_component("product_360")`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

# Dagster's component loader and Definitions call Dagster's own beta and preview APIs (code references,
# sensor owners) when they build or copy definitions; those warnings, raised inside Dagster, say
# nothing about this project. Warnings raised from this project's code still show.
for _category in (dg.BetaWarning, dg.PreviewWarning):
    warnings.filterwarnings("ignore", category=_category, module=r"dagster\.")

PROJECT_ROOT = Path(__file__).resolve().parent
DECLARATIONS = dg.ComponentTree.for_project(PROJECT_ROOT)

defs = DECLARATIONS.build_defs()
