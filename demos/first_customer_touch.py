"""The first_row variant (seed 001, "first_row merge type ... to retrieve the first event for a customer"):
`customer_events` -> `first_customer_touch`, the first event each customer ever sent us.

Dialect: Paimon `merge-engine` = `first-row` with `changelog-producer` = `lookup`, not Fluss
`first_row`. Both keep the same rows; they differ on what the events feed must not do. Paimon rejects
a retraction (`-U`/`-D`: "First row merge engine can not accept DELETE/UPDATE_BEFORE records") and so
fails the run, where Fluss ignores deletes silently. An event stream is append-only, so a retraction
means the feed changed contract, and we want to hear about it. `lookup` makes the changelog explicit:
insert-only, one `+I` per customer in the commit that first saw them: the feed of new first touches.

"First" is by arrival: the source's `_offset` order (landed files by name, then line), which is what
first_row keeps. It is not the earliest `event_ts`: first_row never revises a key, so an event that
arrives late with an earlier timestamp (c003's in events_002.csv) does not replace the touch already
recorded, and sorting one batch by `event_ts` would only make the answer depend on how files were
batched. Earliest by event time would be Paimon `deduplicate` with `sequence.field` = `event_ts` and
`sequence.field.sort-order` = `descending`, a table whose rows can change (and whose changelog has
-U/+U), which is what a first touch must not do.
"""

from __future__ import annotations

from wide_assets.pipelines import (
    SourceSpec,
    WideTableSpec,
    first_row_check,
    unchanged_rows_check,
    wide_table_defs,
)

__all__ = ["CUSTOMER_EVENTS", "FIRST_CUSTOMER_TOUCH", "defs"]

CUSTOMER_EVENTS = SourceSpec(
    name="customer_events",
    description="Every interaction a customer has with us, in arrival order.",
    files=("customer_events/*.csv",),
    columns=(
        ("customer_id", "string"),
        ("event_type", "string"),
        ("channel", "string"),
        ("event_ts", "timestamp_ntz"),
    ),
    # The key the events are about (the table's key), not a unique id of an event.
    primary_key=("customer_id",),
    feeds={"event_type": "first_event_type", "channel": "first_channel", "event_ts": "first_event_ts"},
    op_time="event_ts",
)

FIRST_CUSTOMER_TOUCH = WideTableSpec(
    name="first_customer_touch",
    description="Per customer: the first event we received from them, fixed once recorded.",
    group="first_touch",
    columns=(
        ("customer_id", "string"),
        ("first_event_type", "string"),
        ("first_channel", "string"),
        ("first_event_ts", "timestamp_ntz"),
    ),
    primary_key=("customer_id",),
    options={"merge-engine": "first-row", "changelog-producer": "lookup"},
    sources=(CUSTOMER_EVENTS,),
)

defs = wide_table_defs(
    FIRST_CUSTOMER_TOUCH,
    checks=[
        unchanged_rows_check(
            FIRST_CUSTOMER_TOUCH,
            name="first_touch_never_changes",
            description="A customer's first touch, once recorded, is identical in every later version.",
        ),
        first_row_check(
            FIRST_CUSTOMER_TOUCH,
            name="first_touch_matches_source",
            description="Each customer's first touch is their earliest-arriving event in customer_events.",
        ),
    ],
)
