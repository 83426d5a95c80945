"""Progress bars for long command-line work: on stderr, drawn only on a terminal, silenced on request.

stdout stays the commands' result (tables, figures, JSON), so piping or capturing it never picks up a
bar; lines printed while a bar is drawn go through `note` so they do not tear it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar, cast

from tqdm import tqdm

__all__ = ["bar", "note"]

T = TypeVar("T")


def bar(
    iterable: Iterable[T] | None = None,
    *,
    total: int | None = None,
    description: str = "",
    unit: str = "it",
    quiet: bool = False,
) -> tqdm[T]:
    """A progress bar over `iterable` (or updated by hand up to `total`); off when `quiet` or when
    stderr is not a terminal (tqdm's `disable=None`)."""
    # Without an iterable tqdm's stubs type the bar as tqdm[Never]; it then yields nothing anyway.
    return cast(
        "tqdm[T]",
        tqdm(
            iterable,
            total=total,
            desc=description,
            unit=unit,
            file=sys.stderr,
            disable=True if quiet else None,
            dynamic_ncols=True,
        ),
    )


def note(*parts: Any) -> None:
    """`print` to stdout without breaking a progress bar that is being drawn."""
    tqdm.write(" ".join(str(p) for p in parts), file=sys.stdout)
