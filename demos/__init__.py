"""The demos' Python side: the tables of `wide_assets_defs/<table>/` loaded by name, the landing-file
generator and `python -m demos`. Not part of the installable library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

    from wide_assets import WideTableComponent

__all__ = ["declared", "declared_defs"]


def declared(name: str) -> WideTableComponent:
    """The component declared in `wide_assets_defs/<name>/defs.yaml` (its `.spec` is the table's spec)."""
    from definitions import DECLARATIONS
    from wide_assets import WideTableComponent

    return DECLARATIONS.load_component(name, WideTableComponent)


def declared_defs(name: str) -> dg.Definitions:
    """What the declaration in `wide_assets_defs/<name>/` builds, without its resources (callers bind
    their own lake and landing zone)."""
    from dagster._record import replace

    from definitions import DECLARATIONS

    return replace(DECLARATIONS.build_defs(name), resources={})
