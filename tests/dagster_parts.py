"""What the tests take out of Dagster objects, typed: a `dg.Definitions`' parts for `dg.materialize`, its
asset definitions, a failed step's error and metadata, an asset check's examples."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg
from dagster_shared.error import SerializableErrorInfo

Materializable = dg.AssetsDefinition | dg.AssetSpec | dg.SourceAsset | dg.AssetChecksDefinition


def _materializable(parts: Iterable[Any]) -> list[Materializable]:
    listed = list(parts)
    kept = [p for p in listed if isinstance(p, Materializable)]
    assert len(kept) == len(listed), f"parts dg.materialize cannot run: {set(listed) - set(kept)}"
    return kept


def assets(defs: dg.Definitions) -> list[Materializable]:
    """Every asset of `defs`, as `dg.materialize` takes them."""
    return _materializable(defs.assets or [])


def assets_and_checks(defs: dg.Definitions) -> list[Materializable]:
    """Every asset and asset check of `defs`, as `dg.materialize` takes them."""
    return _materializable([*(defs.assets or []), *(defs.asset_checks or [])])


def asset_definitions(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    """The computed assets of `defs` (no bare specs or source assets)."""
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)]


def step_error(event: dg.DagsterEvent) -> SerializableErrorInfo:
    """The error of a step failure event."""
    error = event.step_failure_data.error
    assert error is not None, event
    return error


def step_failure_metadata(event: dg.DagsterEvent) -> Mapping[str, dg.MetadataValue]:
    """The metadata a step attached to the `dg.Failure` it raised."""
    data = event.step_failure_data.user_failure_data
    assert data is not None, event
    return data.metadata


def examples(evaluation: dg.AssetCheckEvaluation) -> list[str]:
    """The `examples` an asset check reported."""
    value = evaluation.metadata["examples"].value
    assert isinstance(value, list), value
    return [str(e) for e in value]
