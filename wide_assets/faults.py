"""Named crash points for fault-injection tests: a process killed there must recover cleanly.

Set `WIDE_ASSETS_CRASH_AT=<point>` and the process SIGKILLs itself when it reaches that point, exactly
as a machine failure would stop it (no cleanup, no exception handlers).
"""

from __future__ import annotations

import os
import signal

CRASH_POINT = "WIDE_ASSETS_CRASH_AT"


def checkpoint(point: str) -> None:
    if os.environ.get(CRASH_POINT) == point:
        os.kill(os.getpid(), signal.SIGKILL)
