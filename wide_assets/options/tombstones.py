"""The option `wide-assets.tombstone-retention` (ours, neither Paimon's nor Fluss's): parsed, and
refused for tables on which a delete has no sequence to remember. docs/semantics.md 7.2."""

from __future__ import annotations

import re
from collections.abc import Mapping

from wide_assets.errors import InvalidOptionError
from wide_assets.options.common import MergeOptions
from wide_assets.schema import Schema

TOMBSTONE_RETENTION = "wide-assets.tombstone-retention"
_DURATION = re.compile(r"^\s*(?P<n>\d+(\.\d+)?)\s*(?P<unit>[a-z]+)\s*$", re.IGNORECASE)
_SECONDS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}


def retention_seconds(options: Mapping[str, str]) -> float | None:
    """The declared retention of tombstones in seconds (`30 d`, `12 h`, `90 min`), None when not set."""
    text = options.get(TOMBSTONE_RETENTION)
    if text is None:
        return None
    match = _DURATION.match(text)
    if match is None or match["unit"].lower() not in _SECONDS or float(match["n"]) <= 0:
        raise InvalidOptionError(
            f"Could not parse value '{text}' for key '{TOMBSTONE_RETENTION}': write a positive duration "
            "such as '30 d', '12 h', '90 min' or '3600 s'."
        )
    return float(match["n"]) * _SECONDS[match["unit"].lower()]


def tombstone_time_columns(merge: MergeOptions) -> tuple[str, ...]:
    """The columns whose greatest non-NULL value is a record's time, compared with a tombstone's:
    `sequence.field`, or the sequence fields of every sequence group."""
    if merge.sequence_fields:
        return merge.sequence_fields
    return tuple(f for g in merge.sequence_groups for f in g.sequence_fields)


def check_tombstones(schema: Schema, merge: MergeOptions) -> None:
    """Refuse `wide-assets.tombstone-retention` where a delete has no one sequence to remember."""
    if merge.tombstone_retention_s is None:
        return
    refusal = _refusal(schema, merge)
    if refusal is not None:
        raise InvalidOptionError(f"Option '{TOMBSTONE_RETENTION}' cannot be used here: {refusal}.")


def _refusal(schema: Schema, merge: MergeOptions) -> str | None:
    if merge.dialect == "fluss":
        return "a Fluss table has no sequence that orders a delete against a later record"
    if merge.engine == "first-row":
        return "a first-row table keeps the first record and takes no deletes"
    if merge.ignore_delete:
        return "'ignore-delete' drops every delete before the merge"
    removes = (
        merge.engine == "deduplicate"
        or merge.remove_record_on_delete
        or merge.remove_record_on_sequence_group
    )
    if not removes:
        return (
            "no delete removes a row of this table; set 'partial-update.remove-record-on-delete', "
            "'partial-update.remove-record-on-sequence-group' or 'aggregation.remove-record-on-delete'"
        )
    if merge.lookup_free_writes:
        return "a write-only table folds its records at compaction, where no tombstone is read"
    if merge.sequence_descending:
        return "'sequence.field.sort-order' = 'descending' makes a smaller value the newer one"
    if len(merge.sequence_fields) > 1 or any(len(g.sequence_fields) > 1 for g in merge.sequence_groups):
        return "a sequence of several fields has no single time to compare"
    columns = tombstone_time_columns(merge)
    if not columns:
        return (
            "the table has no sequence ('sequence.field' or sequence groups), so a late record cannot be "
            "told from a newer one"
        )
    types = {schema.column(c).type.lower() for c in columns}
    if len(types) > 1:
        return f"its sequence fields {list(columns)} have different types {sorted(types)}; a record's time is their greatest value"
    return None
