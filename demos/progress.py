"""Progress bars for long command-line work: on stderr, drawn only on a terminal, silenced on request.

stdout stays the commands' result (tables, figures, JSON), so piping or capturing it never picks up a
bar; lines printed while a bar is drawn go through `note` so they do not tear it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, Never, TypeVar

from tqdm import tqdm

__all__ = ["bar", "note", "steps"]

T = TypeVar("T")


def bar(iterable: Iterable[T], *, description: str = "", unit: str = "it", quiet: bool = False) -> tqdm[T]:
    """`iterable`, with a progress bar while it is consumed."""
    return tqdm(iterable, desc=description, unit=unit, **_shown(quiet))


def steps(total: int, *, unit: str = "step", quiet: bool = False) -> tqdm[Never]:
    """A bar advanced by hand (`update()`, `set_description()`) up to `total`."""
    return tqdm(total=total, unit=unit, **_shown(quiet))


def note(*parts: Any) -> None:
    """`print` to stdout without breaking a progress bar that is being drawn."""
    tqdm.write(" ".join(str(p) for p in parts), file=sys.stdout)


def _shown(quiet: bool) -> dict[str, Any]:
    # disable=None: tqdm draws only when its file (stderr) is a terminal.
    return {"file": sys.stderr, "disable": True if quiet else None, "dynamic_ncols": True}
