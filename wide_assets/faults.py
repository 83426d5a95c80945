"""Named crash points for fault-injection tests: a process killed there must recover cleanly.

Set `WIDE_ASSETS_CRASH_AT=<point>` and the process SIGKILLs itself when it reaches that point, exactly
as a machine failure would stop it (no cleanup, no exception handlers); `<point>:<n>` kills it the
n-th time it reaches the point (a run passes some points once per source).
"""

from __future__ import annotations

import os
import signal

CRASH_POINT = "WIDE_ASSETS_CRASH_AT"
_reached: dict[str, int] = {}


def checkpoint(point: str) -> None:
    """SIGKILL this process if `WIDE_ASSETS_CRASH_AT` names `point` (and this is its n-th time here)."""
    name, _, nth = os.environ.get(CRASH_POINT, "").partition(":")
    if name != point:
        return
    _reached[point] = _reached.get(point, 0) + 1
    if _reached[point] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
