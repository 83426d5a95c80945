"""One writer at a time per table path on this machine (an advisory file lock beside the table)."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """Hold `<path>.lock` for the block; remote stores rely on the orchestrator's pool instead."""
    if "://" in path and not path.startswith("file://"):
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
