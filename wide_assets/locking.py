"""An optional advisory file lock beside a table on local disk: it saves racing local writers the
retries of the commit protocol, which is what keeps them correct (`wide_assets.table.arbiter`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

# Set to "off" to let local writers race as remote ones do (the concurrency tests run this way).
LOCAL_LOCK_ENV = "WIDE_ASSETS_LOCAL_LOCK"


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """Hold `<path>.lock` for the block when `path` is on local disk and the lock is not turned off."""
    remote = "://" in path and not path.startswith("file://")
    if remote or os.environ.get(LOCAL_LOCK_ENV, "on") == "off":
        yield
        return
    lock_path = Path(path.removeprefix("file://").rstrip("/") + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
