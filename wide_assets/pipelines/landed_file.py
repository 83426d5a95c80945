"""A file in the landing zone, as ingest and snapshot sources identify it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LandedFile:
    """A file in the landing zone: its name relative to the zone (its identity) and content hash."""

    name: str
    path: Path
    sha256: str
