"""Parsing and validation of a definition into merge semantics (docs/semantics.md), without an engine."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from wide_assets.errors import InvalidOptionError
from wide_assets.merge import engine_for
from wide_assets.table_definition import TableDefinition

COLUMNS = [("k", "int"), ("a", "string"), ("b", "bigint"), ("seq_a", "bigint"), ("seq_b", "bigint")]


def spec(
    options: Mapping[str, object] | None = None, columns: list[tuple[str, str]] | None = None
) -> TableDefinition:
    return TableDefinition.build(columns or COLUMNS, ["k"], options)


def test_no_options_is_paimon_deduplicate() -> None:
    merge = spec().merge
    assert (merge.dialect, merge.engine, merge.changelog_producer) == ("paimon", "deduplicate", "none")


def test_any_table_option_selects_fluss_last_row() -> None:
    merge = spec({"table.delete.behavior": "allow"}).merge
    assert (merge.dialect, merge.engine, merge.delete_behavior) == ("fluss", "last_row", "allow")


def test_dialects_cannot_be_mixed() -> None:
    with pytest.raises(InvalidOptionError, match="mix the Paimon dialect"):
        spec({"merge-engine": "partial-update", "table.merge-engine": "first_row"})


def test_sequence_groups_are_parsed_per_source() -> None:
    merge = spec(
        {
            "merge-engine": "partial-update",
            "fields.seq_a.sequence-group": "a",
            "fields.seq_b.sequence-group": "b",
        }
    ).merge
    assert [(g.sequence_fields, g.protected) for g in merge.sequence_groups] == [
        (("seq_a",), ("a",)),
        (("seq_b",), ("b",)),
    ]
    assert merge.group_of("b") == merge.sequence_groups[1]
    assert merge.group_of("k") is None


def test_a_column_in_two_groups_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="defined repeatedly by multiple groups"):
        spec(
            {
                "merge-engine": "partial-update",
                "fields.seq_a.sequence-group": "a",
                "fields.seq_b.sequence-group": "a",
            }
        )


def test_unknown_field_in_a_group_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="nope can not be found in table schema"):
        spec({"merge-engine": "partial-update", "fields.seq_a.sequence-group": "nope"})


def test_aggregation_defaults_every_value_column_to_last_non_null_value() -> None:
    functions = spec({"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"}).merge.functions
    assert {c: f.name for c, f in functions.items()} == {
        "a": "last_non_null_value",
        "b": "sum",
        "seq_a": "last_non_null_value",
        "seq_b": "last_non_null_value",
    }


def test_a_function_refuses_a_column_type_it_cannot_fold() -> None:
    with pytest.raises(InvalidOptionError, match=r"sum column must be 'NumericType' but was 'STRING'"):
        spec({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})


def test_first_row_takes_no_sequence_field() -> None:
    with pytest.raises(InvalidOptionError, match="sequence field"):
        spec({"merge-engine": "first-row", "sequence.field": "seq_a"})


def test_versioned_needs_its_version_column() -> None:
    with pytest.raises(InvalidOptionError, match="ver-column"):
        spec({"table.merge-engine": "versioned", "table.delete.behavior": "ignore"})
    merge = spec(
        {
            "table.merge-engine": "versioned",
            "table.merge-engine.versioned.ver-column": "seq_a",
            "table.delete.behavior": "ignore",
        }
    ).merge
    assert merge.version_column == "seq_a"


@pytest.mark.parametrize(
    ("options", "lookup_free"),
    [
        ({"write-only": "true", "merge-engine": "partial-update", "fields.seq_a.sequence-group": "a"}, True),
        ({"write-only": "true"}, True),
        ({"write-only": "true", "sequence.field": "seq_a"}, False),  # the stored row's place depends on it
        ({"write-only": "true", "merge-engine": "aggregation"}, False),  # checks need the stored value
        ({"write-only": "true", "merge-engine": "partial-update"}, False),  # refuses deletes merged with rows
        ({"merge-engine": "partial-update", "fields.seq_a.sequence-group": "a"}, False),  # not write-only
    ],
)
def test_which_write_only_tables_need_no_lookup(options: dict[str, str], lookup_free: bool) -> None:
    assert spec(options).merge.lookup_free_writes is lookup_free


def test_changelog_at_compaction() -> None:
    assert spec({"write-only": "true", "changelog-producer": "lookup"}).merge.changelog_at_compaction
    assert spec(
        {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "3"}
    ).merge.changelog_at_compaction
    assert not spec({"changelog-producer": "lookup"}).merge.changelog_at_compaction


def test_buckets() -> None:
    bucketing = spec({"bucket": "4"}).bucketing
    assert bucketing is not None and (bucketing.count, bucketing.key) == (4, ("k",))
    assert bucketing.expression() == "CAST(pmod(xxhash64(`k`), 4) AS INT)"
    assert spec({"bucket": "-1"}).bucketing is None  # Paimon's dynamic bucket mode
    with pytest.raises(InvalidOptionError, match="should contains all bucket keys"):
        spec({"bucket": "4", "bucket-key": "a"})
    with pytest.raises(InvalidOptionError, match="Could not parse value 'four' for key 'bucket'"):
        spec({"bucket": "four"})


def test_definition_round_trips_through_json() -> None:
    original = spec({"merge-engine": "partial-update", "fields.seq_a.sequence-group": "a", "bucket": 2})
    assert TableDefinition.from_json(original.to_json()) == original
    assert original.options["bucket"] == "2"


def test_reserved_and_duplicate_columns_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="reserved"):
        spec(columns=[("k", "int"), ("_x", "int")])
    with pytest.raises(InvalidOptionError, match="must not contain duplicate fields"):
        spec(columns=[("k", "int"), ("a", "int"), ("a", "int")])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # Once a warning, and the table silently became `deduplicate`.
        (
            {"merge-engin": "partial-update"},
            "Unknown option 'merge-engin' for a Paimon table (did you mean 'merge-engine'?).",
        ),
        # Once accepted because any `table.*` key was taken as known.
        (
            {"table.delete.behaviour": "allow"},
            "Unknown option 'table.delete.behaviour' for a Fluss table (did you mean 'table.delete.behavior'?).",
        ),
        (
            {"merge-engine": "partial-update", "fields.seq_a.sequnce-group": "a"},
            "'sequnce-group' is not a per-field option of a Paimon table (did you mean 'sequence-group'?).",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.b.agg": "sum", "fields.b.listagg.delimeter": ";"},
            "(did you mean 'listagg.delimiter'?)",
        ),
        (
            {"rowkind.field": "op"},
            "Option 'rowkind.field' is not supported here: the row kind of a change is its `_row_kind` column.",
        ),
    ],
)
def test_a_misspelled_or_unsupported_option_is_an_error(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError) as refused:
        spec(options)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"merge-engine": "aggregation", "fields.bb.aggregate-function": "sum"},
            "Field bb can not be found in table schema. (did you mean 'b'?)",
        ),
        (
            {"merge-engine": "partial-update", "fields.seq_aa.sequence-group": "a"},
            "Field seq_aa can not be found in table schema. (did you mean 'seq_a'?)",
        ),
        (
            {"merge-engine": "partial-update", "fields.seq_a.sequence-group": "aa"},
            "Field aa can not be found in table schema (did you mean 'a'?)",
        ),
        ({"fields.bb.stats-mode": "full"}, "Field bb can not be found in table schema. (did you mean 'b'?)"),
        (
            {"table.merge-engine": "aggregation", "fields.bb.agg": "sum"},
            "Field bb can not be found in table schema. (did you mean 'b'?)",
        ),
    ],
)
def test_a_field_option_on_a_missing_column_names_the_closest_column(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidOptionError) as refused:
        spec(options)
    assert message == str(refused.value)


def test_storage_only_options_are_accepted_and_reported_as_ignored() -> None:
    paimon = spec(
        {
            "merge-engine": "partial-update",
            "bucket": "4",  # used: rows are placed by bucket
            "changelog.num-retained.max": "10",
            "snapshot.num-retained.min": "5",
            "file.format": "orc",
            "manifest.target-file-size": "8mb",
            "write-buffer-size": "256mb",
            "parquet.enable.dictionary": "false",
            "fields.a.stats-mode": "full",
            "connector": "paimon",
        }
    )
    assert paimon.ignored_options == (
        "changelog.num-retained.max",
        "connector",
        "fields.a.stats-mode",
        "file.format",
        "manifest.target-file-size",
        "parquet.enable.dictionary",
        "snapshot.num-retained.min",
        "write-buffer-size",
    )
    fluss = spec(
        {
            "table.merge-engine": "first_row",
            "bucket.num": "3",
            "table.datalake.enabled": "true",
            "table.datalake.format": "paimon",
            "table.log.ttl": "7d",
            "table.replication.factor": "3",
            "bootstrap.servers": "coordinator:9123",
        }
    )
    assert fluss.ignored_options == (
        "bootstrap.servers",
        "table.datalake.enabled",
        "table.datalake.format",
        "table.log.ttl",
        "table.replication.factor",
    )
    assert spec({"merge-engine": "partial-update", "fields.seq_a.sequence-group": "a"}).ignored_options == ()


def test_a_type_typo_in_columns_names_the_column_and_the_closest_type() -> None:
    with pytest.raises(InvalidOptionError) as refused:
        spec(columns=[("k", "int"), ("n", "bignt")])
    assert str(refused.value) == (
        "Column 'n' has type 'bignt', which is not a Spark SQL type: unknown type name 'bignt' "
        "(did you mean 'bigint'?)."
    )
    with pytest.raises(
        InvalidOptionError, match=r"Column 's' .* unknown type name 'strng' \(did you mean 'string'\?\)"
    ):
        spec(columns=[("k", "int"), ("s", "struct<a:int, b:strng not null>")])
    with pytest.raises(InvalidOptionError, match=r"Column 'd' .*expected 1 to 2 parameters, found 3"):
        spec(columns=[("k", "int"), ("d", "decimal(10,2,1)")])
    with pytest.raises(InvalidOptionError, match=r"Column 'm' .*expected ',' but found '>'"):
        spec(columns=[("k", "int"), ("m", "map<string>")])
    accepted = [
        ("k", "int not null"),
        ("a", "array<map<string,decimal(10,2)>>"),
        ("s", "struct<`x y`:int not null comment 'it''s', z:varchar(3)>"),
        ("t", "timestamp_ntz"),
        ("l", "long"),
    ]
    assert [c.type for c in spec(columns=accepted).columns][1] == "array<map<string,decimal(10,2)>>"


@pytest.mark.parametrize(
    ("options", "ignored"),
    [
        # Paimon's Options: `ignore-delete` if set, else the first fallback key set, in the order
        # first-row., deduplicate., partial-update. (CoreOptions.IGNORE_DELETE), whatever the engine.
        ({"ignore-delete": "false", "partial-update.ignore-delete": "true"}, False),
        ({"first-row.ignore-delete": "false", "deduplicate.ignore-delete": "true"}, False),
        ({"deduplicate.ignore-delete": "true", "partial-update.ignore-delete": "false"}, True),
        ({"merge-engine": "partial-update", "first-row.ignore-delete": "true"}, True),
        ({"merge-engine": "first-row", "partial-update.ignore-delete": "true"}, True),
    ],
)
def test_ignore_delete_takes_the_first_key_set(options: dict[str, object], ignored: bool) -> None:
    assert spec(options).merge.ignore_delete is ignored


def test_fluss_merge_engine_names_are_read_in_any_case() -> None:
    """MergeEngineType.fromString upper-cases the name."""
    assert spec({"table.merge-engine": "First_Row"}).merge.engine == "first_row"
    assert spec({"table.merge-engine": "AGGREGATION"}).merge.engine == "aggregation"


@pytest.mark.parametrize(
    ("options", "first_record_wins"),
    [
        ({"merge-engine": "first-row"}, True),
        ({"table.merge-engine": "FIRST_ROW"}, True),
        ({"merge-engine": "deduplicate"}, False),
        ({"merge-engine": "partial-update"}, False),
        ({"merge-engine": "aggregation"}, False),
        ({"table.delete.behavior": "allow"}, False),
        ({"table.merge-engine": "aggregation"}, False),
        ({"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "b"}, False),
    ],
)
def test_each_engine_name_selects_its_engine(options: dict[str, str], first_record_wins: bool) -> None:
    """Every engine the options name is registered under that name, and says whether a key's first
    record is its row for good (the two first-row engines, as Paimon's and Fluss's docs say)."""
    merge = spec(options).merge
    engine = engine_for(merge)
    assert engine.name == merge.engine
    assert engine.first_record_wins is first_record_wins
