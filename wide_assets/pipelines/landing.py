"""The landing zone resource: the directory where source files arrive before they are ingested."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from wide_assets.pipelines.ingest import LandedFile, landed_files, landed_fingerprints
from wide_assets.pipelines.specs import SourceSpec

__all__ = ["LandingZone"]


class LandingZone(dg.ConfigurableResource["LandingZone"]):
    """Directory holding the sources' landed files (file patterns in specs are relative to it)."""

    root: str = Field(description="Landing directory; source file patterns are globs relative to it.")

    def files(self, source: SourceSpec) -> list[LandedFile]:
        """The files that match `source`'s patterns now, sorted by name, with their content hashes."""
        return landed_files(self.root, source)

    def fingerprints(self, source: SourceSpec) -> dict[str, str]:
        """Name -> size and modification time of `source`'s files now: a cheap change detector."""
        return landed_fingerprints(self.root, source)
