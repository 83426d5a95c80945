"""Per-record column sets (`_set_columns`, docs/semantics.md 7.1) against plain-Python folds.

Each record names the columns it sets: a listed column takes the record's value, NULL included; an
unlisted one keeps what the key held. The oracles below fold the records of each commit in the
table's merge order by hand, with late (older sequence), out-of-order and duplicated records.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from wide_assets import WideTable
from wide_assets.component.declaration import SourceDeclaration, unknown_fields
from wide_assets.errors import InvalidInputError
from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.ingest import ingest, landed_files

Row = dict[str, Any]
VALUES = ("a", "b", "c")


def _records(rng: random.Random, commit: int, with_deletes: bool) -> list[Row]:
    """One commit's records over keys 1-4: random values (often NULL), random column sets, a sequence
    that goes back in time (late records), and an exact repeat of an earlier record now and then."""
    records: list[Row] = []
    for _ in range(rng.randint(3, 8)):
        if records and rng.random() < 0.2:
            records.append(dict(records[rng.randrange(len(records))]))  # a duplicate, delivered again
            continue
        listed = [c for c in VALUES if rng.random() < 0.5]
        kind = "-D" if with_deletes and rng.random() < 0.15 else "+I"
        records.append(
            {
                "k": rng.randint(1, 4),
                "a": rng.choice([None, f"a{commit}{rng.randint(0, 9)}"]),
                "b": rng.choice([None, rng.randint(0, 99)]),
                "c": rng.choice([None, f"c{commit}{rng.randint(0, 9)}"]),
                "g": rng.choice([None, rng.randint(0, 12)]),
                "_row_kind": kind,
                "_set_columns": None if rng.random() < 0.15 else listed,
            }
        )
    return records


def _listed(record: Row, column: str) -> bool:
    return record["_set_columns"] is None or column in record["_set_columns"]


def _partial_update_with_group(table: dict[int, Row], records: list[Row]) -> None:
    """Paimon partial-update, group `g` protecting `a`, `b`; `c` ungrouped (P1 as a target write: the
    record's value as given). Arrival order. A record touches the group when `g` is set and it lists
    `a` or `b` (else its `g` counts as NULL, P6); an equal or newer `g` writes the listed columns."""
    for record in records:
        row = table.setdefault(record["k"], {"a": None, "b": None, "c": None, "g": None})
        if _listed(record, "c"):
            row["c"] = record["c"]
        touches = record["g"] is not None and (_listed(record, "a") or _listed(record, "b"))
        if touches and (row["g"] is None or record["g"] >= row["g"]):
            row["g"] = record["g"]
            for column in ("a", "b"):
                if _listed(record, column):
                    row[column] = record[column]


def _deduplicate_by_sequence(table: dict[int, Row], records: list[Row]) -> None:
    """Paimon deduplicate with `sequence.field` g: per key, the stored row and the commit's records in
    order of (g NULL first, stored row first, arrival); each record sets its listed columns and g,
    the others keep the value folded so far; a last -D removes the row."""
    keys = dict.fromkeys(r["k"] for r in records)
    for key in keys:
        stored = table.pop(key, None)
        mine = [(i, r) for i, r in enumerate(records) if r["k"] == key]
        items: list[tuple[tuple[Any, ...], Row | None]] = [
            ((r["g"] is not None, r["g"] or 0, 1, i), r) for i, r in mine
        ]
        if stored is not None:
            items.append(((stored["g"] is not None, stored["g"] or 0, 0, -1), None))
        state: Row | None = None
        for _, record in sorted(items, key=lambda item: item[0]):
            if record is None:
                state = dict(stored or {})
            elif record["_row_kind"] == "-D":
                state = None
            else:
                previous = state or {"a": None, "b": None, "c": None}
                state = {c: record[c] if _listed(record, c) else previous[c] for c in VALUES}
                state["g"] = record["g"]
        if state is not None:
            table[key] = state


def _last_row(table: dict[int, Row], records: list[Row]) -> None:
    """Fluss last row: each record at once, in arrival order; a delete removes the row."""
    for record in records:
        if record["_row_kind"] == "-D":
            table.pop(record["k"], None)
            continue
        row = table.setdefault(record["k"], {"a": None, "b": None, "c": None, "g": None})
        for column in (*VALUES, "g"):
            if _listed(record, column):
                row[column] = record[column]


SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("a", pa.string()),
        ("b", pa.int64()),
        ("c", pa.string()),
        ("g", pa.int32()),
        ("_row_kind", pa.string()),
        ("_set_columns", pa.list_(pa.string())),
    ]
)
COLUMNS = [("k", "int"), ("a", "string"), ("b", "bigint"), ("c", "string"), ("g", "int")]

CASES = [
    pytest.param(
        {"merge-engine": "partial-update", "fields.g.sequence-group": "a,b"},
        _partial_update_with_group,
        False,
        id="paimon-partial-update-group",
    ),
    pytest.param(
        {"merge-engine": "deduplicate", "sequence.field": "g"},
        _deduplicate_by_sequence,
        True,
        id="paimon-deduplicate-sequence",
    ),
    pytest.param({"table.delete.behavior": "allow"}, _last_row, True, id="fluss-last-row"),
]


@pytest.mark.parametrize(("options", "oracle", "with_deletes"), CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_column_sets_match_a_plain_fold(
    spark: Any, tmp_path: Any, options: dict[str, str], oracle: Any, with_deletes: bool, seed: int
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    rng = random.Random(seed)
    expected: dict[int, Row] = {}
    for commit in range(4):
        records = _records(rng, commit, with_deletes)
        # The column set names only value columns (the sequence `g` of deduplicate is always set).
        table.write(spark.createDataFrame(pa.Table.from_pylist(records, schema=SCHEMA)))
        oracle(expected, records)
    rows = {r.k: {c: r[c] for c in (*VALUES, "g")} for r in table.read().collect()}
    assert rows == expected


def test_a_column_set_naming_an_unknown_column_is_refused(spark: Any, tmp_path: Any) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "partial-update"})
    record = {"k": 1, "a": "x", "b": 1, "c": None, "g": 1, "_row_kind": "+I", "_set_columns": ["a", "d"]}
    with pytest.raises(InvalidInputError, match=r"the record of key \(1\) names \['d'\]"):
        table.write(spark.createDataFrame(pa.Table.from_pylist([record], schema=SCHEMA)))


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"merge-engine": "first-row"}, "first-row merge engine takes no per-record column sets"),
        ({"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"}, "aggregation merge engine"),
        (
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "a,b",
                "fields.b.aggregate-function": "sum",
            },
            "columns b have aggregate functions",
        ),
        # Writers that skip the lookup of the stored rows: the lists would be lost in the log (S5).
        (
            {"merge-engine": "partial-update", "fields.g.sequence-group": "a,b", "write-only": "true"},
            "the table is write-only",
        ),
        ({"merge-engine": "deduplicate", "write-only": "true"}, "the table is write-only"),
    ],
)
def test_column_sets_are_refused_where_they_mean_nothing(
    spark: Any, tmp_path: Any, options: dict[str, str], refusal: str
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    record = {"k": 1, "a": "x", "b": 1, "c": None, "g": 1, "_row_kind": "+I", "_set_columns": ["a"]}
    with pytest.raises(InvalidInputError, match=refusal):
        table.write(spark.createDataFrame(pa.Table.from_pylist([record], schema=SCHEMA)))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # By hand: `a` is listed and takes the NULL; `b`, `c` are not and keep 1 and 'c'; `g` too,
        # except as deduplicate's `sequence.field`, which is always the record's own (S1, S2).
        ({"merge-engine": "partial-update", "write-only": "true"}, (1, None, 1, "c", 1)),
        ({"merge-engine": "deduplicate", "sequence.field": "g", "write-only": "true"}, (1, None, 1, "c", 2)),
    ],
)
def test_a_write_only_table_whose_writers_look_up_the_stored_rows_takes_column_sets(
    spark: Any, tmp_path: Any, options: dict[str, str], expected: tuple[Any, ...]
) -> None:
    """S5: such writers merge each commit with the stored rows as a copy-on-write table's do (a
    partial-update without sequence groups rejects a delete merged with the stored row; a
    `sequence.field` orders the stored row among the records), so the lists are applied then."""
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    assert not table.definition.merge.lookup_free_writes
    first = {"k": 1, "a": "x", "b": 1, "c": "c", "g": 1, "_row_kind": "+I", "_set_columns": None}
    second = {"k": 1, "a": None, "b": 9, "c": None, "g": 2, "_row_kind": "+I", "_set_columns": ["a"]}
    for record in (first, second):
        table.write(spark.createDataFrame(pa.Table.from_pylist([record], schema=SCHEMA)))
    assert [tuple(r) for r in table.read().collect()] == [expected]
    table.compact()
    assert [tuple(r) for r in table.read().collect()] == [expected]


# A declared source whose records list the columns they set, with `phone` NULLs ignored: three runs,
# with a late record (older op time), records out of order within a file and a duplicate delivered
# again under another file name. Columns of the table: name, email, phone in one sequence group.
PROFILE = SourceSpec(
    name="profiles",
    description="Profile edits: each names the fields it changed.",
    files=("profiles/*.csv",),
    columns=(
        ("user_id", "bigint"),
        ("name", "string"),
        ("email", "string"),
        ("phone", "string"),
        ("changed", "string"),
        ("ts", "bigint"),
    ),
    primary_key=("user_id",),
    feeds={"name": "name", "email": "email", "phone": "phone", "ts": "profile_ts"},
    op_time="ts",
    set_columns="changed",
    ignore_null_updates=("phone",),
)
PROFILE_WIDE = WideTableSpec(
    name="profile_wide",
    description="Per user: the profile fields.",
    group="profile_wide",
    columns=(
        ("user_id", "bigint"),
        ("name", "string"),
        ("email", "string"),
        ("phone", "string"),
        ("profile_ts", "bigint"),
    ),
    primary_key=("user_id",),
    options={"merge-engine": "partial-update", "fields.profile_ts.sequence-group": "name,email,phone"},
    sources=(PROFILE,),
)
PROFILE_RUNS = [
    [
        '1,Ann,ann@x,555,"name,email,phone",10',
        '2,Bob,,,"name,email",12',
        "1,,,,email,14",  # Ann's email cleared: a listed NULL writes NULL
        '1,Anne,,,"name,phone",13',  # out of order: older than the group's 14, so not applied
    ],
    [
        "1,Annie,,,name,11",  # late: older than the group's 14, changes nothing
        '2,,bob@y,,"email,phone",15',  # phone NULL is ignored: stays NULL
        "",
    ],
    [
        '2,,bob@y,,"email,phone",15',  # the duplicate of run 2's record, delivered again
        '2,Rob,,777,"name,phone",16',
        "2,,,,phone,17",  # a NULL phone is ignored: nothing is set, the group's op time stays 16
    ],
]


def _profile_oracle(runs: list[list[str]]) -> dict[int, tuple[Any, ...]]:
    """Plain Python: per user, the group's newest op time so far; a record whose op time is at least
    it sets the columns it lists (a NULL phone is not set) and moves the op time; others do nothing."""
    import csv

    rows: dict[int, dict[str, Any]] = {}
    for lines in runs:
        for fields in csv.reader(line for line in lines if line.strip(", ")):
            user, name, email, phone, changed, ts = fields
            values = {"name": name or None, "email": email or None, "phone": phone or None}
            listed = [c for c in changed.split(",") if not (c == "phone" and values["phone"] is None)]
            row = rows.setdefault(int(user), {"name": None, "email": None, "phone": None, "ts": None})
            if listed and (row["ts"] is None or int(ts) >= row["ts"]):
                row["ts"] = int(ts)
                row.update({c: values[c] for c in listed})
    return {k: (r["name"], r["email"], r["phone"], r["ts"]) for k, r in rows.items()}


def test_a_declared_source_sets_the_columns_each_record_lists(spark: Any, tmp_path: Path) -> None:
    declared = PROFILE_WIDE
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "profiles").mkdir(parents=True)
    table = open_wide_table(spark, declared, str(lake / "profile_wide"))
    paths = {"profiles": str(lake / "profiles")}
    for number, lines in enumerate(PROFILE_RUNS):
        body = [line for line in lines if line.strip(", ")]
        header = "user_id,name,email,phone,changed,ts"
        (landing / "profiles" / f"p{number}.csv").write_text("\n".join([header, *body]) + "\n", "utf-8")
        ingest(spark, PROFILE, landed_files(landing, PROFILE), paths["profiles"])
        apply_sources(spark, declared, table, paths)
    rows = {r.user_id: (r.name, r.email, r.phone, r.profile_ts) for r in table.read().collect()}
    assert rows == _profile_oracle(PROFILE_RUNS)
    assert rows[1] == ("Ann", None, "555", 14)
    assert rows[2] == ("Rob", "bob@y", "777", 16)


def test_a_record_naming_a_column_its_source_does_not_feed_is_refused(spark: Any, tmp_path: Path) -> None:
    declared = PROFILE_WIDE
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "profiles").mkdir(parents=True)
    text = 'user_id,name,email,phone,changed,ts\n1,Ann,,,"name,adress",10\n'
    (landing / "profiles" / "p.csv").write_text(text, "utf-8")
    table = open_wide_table(spark, declared, str(lake / "profile_wide"))
    ingest(spark, PROFILE, landed_files(landing, PROFILE), str(lake / "profiles"))
    with pytest.raises(InvalidInputError, match=r"profiles/p.csv line 2 names \['adress'\]"):
        apply_sources(spark, declared, table, {"profiles": str(lake / "profiles")})


def test_declared_column_sets_are_checked_when_definitions_load() -> None:
    with pytest.raises(
        ValueError, match=r"set_columns 'changd' is not among its columns.*did you mean 'changed'"
    ):
        replace(PROFILE, set_columns="changd")
    with pytest.raises(ValueError, match=r"ignore_null_updates \['fone'\] are not value columns it feeds"):
        replace(PROFILE, ignore_null_updates=("fone",))


def test_a_misspelled_column_set_field_is_refused_in_the_yaml() -> None:
    source = SourceDeclaration.model_validate(
        {
            "name": "profiles",
            "description": "Profile edits.",
            "files": ["profiles/*.csv"],
            "columns": {"user_id": "bigint", "name": "string", "changed": "string"},
            "feeds": {"name": "name"},
            "set_colums": "changed",
        }
    )
    problems = [p.args[0] for p in unknown_fields(source, ("sources", 0))]
    assert problems == ["source has no field 'set_colums' (did you mean 'set_columns'?)"]
