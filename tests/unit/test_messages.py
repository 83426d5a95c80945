"""Refusals of a table definition print exactly what Apache Paimon (master 5dacde51 = release-2.0.0) or
Apache Fluss (main 545c5539) print in the same situation. Each row names the upstream source of its text;
paths are under paimon-core/ / paimon-api/ (Paimon) and fluss-*/ (Fluss)."""

from __future__ import annotations

import pytest

from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_hash_order, java_list
from wide_assets.merge.first_row import RETRACT_REJECTED
from wide_assets.merge.partial_update import DELETE_REJECTED
from wide_assets.table_definition import TableDefinition

COLUMNS = [("k", "int"), ("a", "string"), ("b", "bigint"), ("s1", "bigint"), ("s2", "bigint")]
TYPED = [
    ("k", "int"),
    ("l", "array<int>"),
    ("d", "decimal(10,2)"),
    ("t", "timestamp"),
    ("m", "map<string,int>"),
    ("n", "int not null"),
]
PU = {"merge-engine": "partial-update"}
AGG = {"merge-engine": "aggregation"}
FLUSS_AGG = {"table.merge-engine": "aggregation"}
FACTORIES = (
    "bool_and\nbool_or\ncollect\nfirst_non_null_value\nfirst_not_null_value\nfirst_value\nhll_sketch\n"
    "last_non_null_value\nlast_value\nlistagg\nmax\nmerge_map\nmerge_map_with_keytime\nmin\nnested_update\n"
    "nested_partial_update\nprimary-key\nproduct\nrbm32\nrbm64\nsum\ntheta_sketch"
)
FLUSS_FUNCTIONS = (
    "bool_and, bool_or, first_value, first_value_ignore_nulls, last_value, last_value_ignore_nulls, listagg, "
    "max, min, product, rbm32, rbm64, string_agg, sum"
)
FLUSS_MAX_MIN_ROOTS = (
    "[CHAR, STRING, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DECIMAL, DATE, TIME_WITHOUT_TIME_ZONE, "
    "TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE]"
)

CASES: list[tuple[str, dict[str, str], str, list[tuple[str, str]] | None, list[str] | None]] = [
    # (id, options, exact message, columns (default COLUMNS), primary key (default [k]))
    # paimon-api options/Options.java:116-120 (booleans parsed in OptionsUtils.java:197-213)
    ("bool", {"ignore-delete": "yes"}, "Could not parse value 'yes' for key 'ignore-delete'.", None, None),
    # the same: a fallback key's value is reported under the main key
    (
        "bool-fallback",
        {"partial-update.ignore-delete": "Yes "},
        "Could not parse value 'Yes ' for key 'ignore-delete'.",
        None,
        None,
    ),
    # the same, for field options (ours once named the key 'v')
    (
        "bool-field",
        {**AGG, "fields.b.aggregate-function": "sum", "fields.b.ignore-retract": "yes"},
        "Could not parse value 'yes' for key 'fields.b.ignore-retract'.",
        None,
        None,
    ),
    # the same
    (
        "bool-distinct",
        {**AGG, "fields.a.aggregate-function": "listagg", "fields.a.distinct": "maybe"},
        "Could not parse value 'maybe' for key 'fields.a.distinct'.",
        None,
        None,
    ),
    # the same
    ("int", {"bucket": "four"}, "Could not parse value 'four' for key 'bucket'.", None, None),
    # the same
    (
        "int-delta-commits",
        {"full-compaction.delta-commits": "x"},
        "Could not parse value 'x' for key 'full-compaction.delta-commits'.",
        None,
        None,
    ),
    # the same (enum)
    (
        "merge-engine",
        {"merge-engine": "partial_update"},
        "Could not parse value 'partial_update' for key 'merge-engine'.",
        None,
        None,
    ),
    # the same (enum)
    (
        "changelog-producer",
        {"changelog-producer": "lookups"},
        "Could not parse value 'lookups' for key 'changelog-producer'.",
        None,
        None,
    ),
    # paimon-api schema/Schema.java:141-145 (same text in fluss-common metadata/Schema.java:755-759)
    (
        "duplicate-column",
        {},
        "Table column [k, a, a] must not contain duplicate fields. Found: [a]",
        [("k", "int"), ("a", "int"), ("a", "int")],
        None,
    ),
    # the same; the duplicates are a HashSet, printed in Java's hash order (checked on OpenJDK 17)
    (
        "duplicate-columns-hash-order",
        {},
        "Table column [k, alpha, zeta, alpha, zeta] must not contain duplicate fields. Found: [zeta, alpha]",
        [("k", "int"), ("alpha", "int"), ("zeta", "int"), ("alpha", "int"), ("zeta", "int")],
        None,
    ),
    # paimon-api schema/Schema.java:170-174 (same text in fluss-common metadata/Schema.java:776-780)
    (
        "primary-key",
        {},
        "Table column [k, a, b, s1, s2] should include all primary key constraint [k, x]",
        None,
        ["k", "x"],
    ),
    # paimon-core schema/SchemaValidation.java:720-736 (validateFieldsPrefix)
    (
        "field-key",
        {**PU, "fields.zz.sequence-group": "a"},
        "Field zz can not be found in table schema.",
        None,
        None,
    ),
    # the same: each name of a multi-field key
    (
        "field-key-multi",
        {**PU, "fields.s1,zz.sequence-group": "a"},
        "Field zz can not be found in table schema.",
        None,
        None,
    ),
    # paimon-core schema/SchemaValidation.java:1383-1384
    ("bucket-count", {"bucket": "0"}, "The number of buckets needs to be greater than 0.", None, None),
    # paimon-api schema/TableSchema.java:228-233
    (
        "bucket-key",
        {"bucket": "4", "bucket-key": "a"},
        "Primary keys [k] should contains all bucket keys [a].",
        None,
        None,
    ),
    # paimon-api schema/TableSchema.java:215-220 (the value is split on ',' untrimmed)
    (
        "bucket-key-unknown",
        {"bucket": "4", "bucket-key": "k, zz"},
        "Field names [k, a, b, s1, s2] should contains all bucket keys [k,  zz].",
        None,
        None,
    ),
    # fluss-common metadata/TableDescriptor.java:406-413
    (
        "fluss-bucket-key",
        {"bucket.num": "4", "bucket.key": "a", "table.delete.behavior": "allow"},
        "Bucket keys must be a subset of primary keys excluding partition keys for primary-key tables. "
        "The primary keys are [k], the partition keys are [], but the user-defined bucket keys are [a].",
        None,
        None,
    ),
    # fluss-common metadata/TableDescriptor.java:127
    (
        "fluss-bucket-key-unknown",
        {"bucket.num": "4", "bucket.key": "zz", "table.delete.behavior": "allow"},
        "Bucket key 'zz' does not exist in the schema.",
        None,
        None,
    ),
    # paimon-core mergetree/compact/PartialUpdateMergeFunction.java:649-657 (no period)
    (
        "group-protected-unknown",
        {**PU, "fields.s1.sequence-group": "a,nope"},
        "Field nope can not be found in table schema",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:460-465
    (
        "group-repeated",
        {**PU, "fields.s1.sequence-group": "a", "fields.s2.sequence-group": "a"},
        "Field a is defined repeatedly by multiple groups: fields.s2.sequence-group",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:68-70
    (
        "group-primary-key",
        {**PU, "fields.s1.sequence-group": "a,k"},
        "The sequence-group 'fields.s1.sequence-group' contains primary key field 'k', which is not allowed. "
        "Primary key columns cannot be put in sequence-group.",
        None,
        None,
    ),
    # paimon-api factories/FactoryUtil.java:65-76; identifiers in paimon-core's service file order
    (
        "unknown-function",
        {**AGG, "fields.a.aggregate-function": "median"},
        "Could not find any factory for identifier 'median' that implements "
        "'org.apache.paimon.mergetree.compact.aggregate.factory.FieldAggregatorFactory' in the classpath.\n\n"
        "Available factory identifiers are:\n\n" + FACTORIES,
        None,
        None,
    ),
    # aggregate/factory/FieldSumAggFactory.java:37
    (
        "type-sum",
        {**AGG, "fields.a.aggregate-function": "sum"},
        "Data type for sum column must be 'NumericType' but was 'STRING'.",
        None,
        None,
    ),
    # aggregate/factory/FieldMaxAggFactory.java:37
    (
        "type-max",
        {**AGG, "fields.l.aggregate-function": "max"},
        "Data type for max column 'l' must be comparable but was 'ARRAY<INT>'.",
        TYPED,
        None,
    ),
    # aggregate/factory/FieldCollectAggFactory.java:37
    (
        "type-collect",
        {**AGG, "fields.d.aggregate-function": "collect"},
        "Data type for collect column must be 'Array' but was 'DECIMAL(10, 2)'.",
        TYPED,
        None,
    ),
    # aggregate/factory/FieldRoaringBitmap32AggFactory.java:37
    (
        "type-rbm32",
        {**AGG, "fields.t.aggregate-function": "rbm32"},
        "Data type for roaring bitmap column must be 'VarBinaryType' but was 'TIMESTAMP(6) WITH LOCAL TIME ZONE'.",
        TYPED,
        None,
    ),
    # aggregate/factory/FieldBoolOrAggFactory.java:37
    (
        "type-bool-or",
        {**AGG, "fields.m.aggregate-function": "bool_or"},
        "Data type for bool or column must be 'BooleanType' but was 'MAP<STRING, INT>'.",
        TYPED,
        None,
    ),
    # aggregate/factory/FieldBoolAndAggFactory.java:37
    (
        "type-bool-and",
        {**AGG, "fields.n.aggregate-function": "bool_and"},
        "Data type for bool and column must be 'BooleanType' but was 'INT NOT NULL'.",
        TYPED,
        None,
    ),
    # aggregate/factory/FieldListaggAggFactory.java:37
    (
        "type-listagg",
        {**AGG, "fields.b.aggregate-function": "listagg"},
        "Data type for list agg column must be 'VarCharType' but was 'BIGINT'.",
        None,
        None,
    ),
    # aggregate/factory/FieldMergeMapAggFactory.java:37 (no period)
    (
        "type-merge-map",
        {**AGG, "fields.a.aggregate-function": "merge_map"},
        "Data type for merge map column must be 'MAP' but was 'STRING'",
        None,
        None,
    ),
    # paimon-core schema/SchemaValidation.java:1356-1358
    (
        "first-row-sequence",
        {"merge-engine": "first-row", "sequence.field": "s1"},
        "Do not support use sequence field on FIRST_ROW merge engine.",
        None,
        None,
    ),
    # SchemaValidation.java:334-339 (no period)
    (
        "first-row-producer",
        {"merge-engine": "first-row", "changelog-producer": "input"},
        "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:492-497
    (
        "ignore-delete-remove-record",
        {**PU, "ignore-delete": "true", "partial-update.remove-record-on-delete": "true"},
        "ignore-delete and partial-update.remove-record-on-delete have conflicting behavior so should not be "
        "enabled at the same time.",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:510-514
    (
        "group-remove-record",
        {**PU, "fields.s1.sequence-group": "a", "partial-update.remove-record-on-delete": "true"},
        "sequence-group and partial-update.remove-record-on-delete have conflicting behavior so should not be "
        "enabled at the same time.",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:721-725
    (
        "needs-group",
        {**PU, "fields.a.aggregate-function": "max"},
        "Must use sequence group for aggregation functions but not found for field a.",
        None,
        None,
    ),
    # the same: checked before the function is looked up
    (
        "needs-group-before-lookup",
        {**PU, "fields.a.aggregate-function": "median"},
        "Must use sequence group for aggregation functions but not found for field a.",
        None,
        None,
    ),
    # PartialUpdateMergeFunction.java:516-524 (the whole option value; no period)
    (
        "remove-on-group",
        {**PU, "fields.s1.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "s1,s2"},
        "field 's1,s2' defined in 'partial-update.remove-record-on-sequence-group' option must be part of "
        "sequence groups",
        None,
        None,
    ),
    # fluss-common metadata/MergeEngineType.java:76 (Flink DDL)
    (
        "fluss-merge-engine",
        {"table.merge-engine": "last-row"},
        "Unsupported merge engine type: last-row",
        None,
        None,
    ),
    # fluss-server utils/TableDescriptorValidation.java:688-691 + fluss-common config/Configuration.java:607-613
    (
        "fluss-delete-behavior",
        {"table.delete.behavior": "Remove"},
        "Invalid value for config 'table.delete.behavior'. Reason: Could not parse value 'Remove' for key "
        "'table.delete.behavior'.",
        None,
        None,
    ),
    # the same
    (
        "fluss-changelog-image",
        {"table.changelog.image": "half", "table.delete.behavior": "allow"},
        "Invalid value for config 'table.changelog.image'. Reason: Could not parse value 'half' for key "
        "'table.changelog.image'.",
        None,
        None,
    ),
    # fluss-server kv/rowmerger/FirstRowRowMerger.java:37-39
    (
        "fluss-first-row-delete",
        {"table.merge-engine": "first_row", "table.delete.behavior": "allow"},
        "DELETE is not supported for the first_row merge engine.",
        None,
        None,
    ),
    # fluss-server kv/rowmerger/VersionedRowMerger.java:57-59
    (
        "fluss-versioned-delete",
        {
            "table.merge-engine": "versioned",
            "table.delete.behavior": "allow",
            "table.merge-engine.versioned.ver-column": "b",
        },
        "DELETE is not supported for the versioned merge engine.",
        None,
        None,
    ),
    # TableDescriptorValidation.java:414-417
    (
        "fluss-ver-column",
        {"table.merge-engine": "versioned"},
        "'table.merge-engine.versioned.ver-column' must be set for versioned merge engine.",
        None,
        None,
    ),
    # TableDescriptorValidation.java:422-425
    (
        "fluss-ver-column-unknown",
        {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "zz"},
        "The version column 'zz' for versioned merge engine doesn't exist in schema.",
        None,
        None,
    ),
    # TableDescriptorValidation.java:435-440
    (
        "fluss-ver-column-type",
        {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "a"},
        "The version column 'a' for versioned merge engine must be one type of "
        "[INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got STRING.",
        None,
        None,
    ),
    # fluss-flink-common flink/utils/FlinkAggFunctionParser.java:122-129 (list: :143-148)
    (
        "fluss-unknown-function",
        {**FLUSS_AGG, "fields.a.agg": "Avg"},
        "Unknown aggregation function for column 'a': avg\nSupported functions: " + FLUSS_FUNCTIONS,
        None,
        None,
    ),
    # fluss-common metadata/AggFunctionType.java:192-199 wrapped by FlinkAggFunctionParser.java:201-209
    (
        "fluss-type-sum",
        {**FLUSS_AGG, "fields.a.agg": "sum"},
        "Invalid aggregation function configuration for column 'a': Data type for sum column must be part of "
        "[TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DECIMAL] but was 'STRING'.",
        None,
        None,
    ),
    # the same
    (
        "fluss-type-string-agg",
        {**FLUSS_AGG, "fields.t.agg": "string_agg"},
        "Invalid aggregation function configuration for column 't': Data type for string_agg column must be "
        "part of [STRING, CHAR] but was 'TIMESTAMP_LTZ(6)'.",
        TYPED,
        None,
    ),
    # fluss-common metadata/Schema.java:553-555
    (
        "fluss-auto-increment-multiple",
        {"auto-increment.fields": "b,s1"},
        "Multiple auto increment columns are not supported yet.",
        None,
        None,
    ),
    # fluss-common metadata/Schema.java:784-788
    (
        "fluss-auto-increment-unknown",
        {"auto-increment.fields": "zz"},
        "Auto increment column zz does not exist in table columns [k, a, b, s1, s2].",
        None,
        None,
    ),
    # fluss-common metadata/Schema.java:789-791
    (
        "fluss-auto-increment-key",
        {"auto-increment.fields": "k"},
        "Auto increment column can not be used as the primary key.",
        None,
        None,
    ),
    # fluss-common metadata/Schema.java:809-812
    (
        "fluss-auto-increment-type",
        {"auto-increment.fields": "a"},
        "The data type of auto increment column must be INT or BIGINT.",
        None,
        None,
    ),
    # paimon-core mergetree/compact/aggregate/factory/FieldAggregatorFactory.java:54-60 (the option
    # printed by ConfigOption.toString)
    (
        "remove-record-on-delete-ignore-retract",
        {**AGG, "aggregation.remove-record-on-delete": "true", "fields.b.ignore-retract": "true"},
        "Key: 'aggregation.remove-record-on-delete' , default: false (fallback keys: []) and "
        "fields.b.ignore-retract have conflicting behavior so should not be enabled at the same time.",
        None,
        None,
    ),
    # paimon-core schema/SchemaValidation.java:196-208
    (
        "delta-commits-lookup",
        {"changelog-producer": "lookup", "full-compaction.delta-commits": "1"},
        "'full-compaction.delta-commits' is incompatible with 'changelog-producer'='lookup'. Use "
        "'changelog-producer'='full-compaction' to get periodic full compaction with changelog generation, "
        "or remove 'full-compaction.delta-commits'.",
        None,
        None,
    ),
    # paimon-core schema/SchemaValidation.java:1374-1376
    (
        "dynamic-bucket-key",
        {"bucket": "-1", "bucket-key": "k"},
        "Cannot define 'bucket-key' with bucket = -1, please remove the 'bucket-key' setting or specify a "
        "bucket number.",
        None,
        None,
    ),
    # paimon-api schema/Schema.java:164-168
    (
        "duplicate-key",
        {},
        "Primary key constraint [k, a, k] must not contain duplicate columns. Found: [k]",
        None,
        ["k", "a", "k"],
    ),
    # fluss-common metadata/Schema.java:770-775 (the PrimaryKey constraint printed, named PK_<columns>)
    (
        "fluss-duplicate-key",
        {"table.delete.behavior": "allow"},
        "Primary key constraint CONSTRAINT PK_k_a_k PRIMARY KEY (k, a, k) must not contain duplicate "
        "columns. Found: [k]",
        None,
        ["k", "a", "k"],
    ),
    # fluss-server utils/TableDescriptorValidation.java:442-451
    (
        "fluss-aggregation-wal",
        {**FLUSS_AGG, "table.changelog.image": "WAL"},
        "Table with 'AGGREGATION' merge engine does not support 'WAL' changelog image mode. Aggregation merge "
        "engine tables require FULL changelog image mode for correct UNDO recovery. Please set "
        "'table.changelog.image' to 'FULL' or remove the setting.",
        None,
        None,
    ),
    # fluss-common metadata/AggFunctionType.java:167-177, wrapped by fluss-flink FlinkAggFunctionParser:205-208
    (
        "fluss-empty-delimiter",
        {**FLUSS_AGG, "fields.a.agg": "string_agg", "fields.a.string_agg.delimiter": ""},
        "Invalid aggregation function configuration for column 'a': Parameter 'delimiter' for aggregation "
        "function 'string_agg' must be a non-empty string",
        None,
        None,
    ),
    # fluss-common metadata/AggFunctionType.java:189-197 (MAX_MIN_TYPES: no BOOLEAN, no BYTES)
    *(
        (
            f"fluss-{function}-{type_}",
            {**FLUSS_AGG, "fields.f.agg": function},
            f"Invalid aggregation function configuration for column 'f': Data type for {function} column must "
            f"be part of {FLUSS_MAX_MIN_ROOTS} but was '{name}'.",
            [("k", "int"), ("f", type_)],
            None,
        )
        for function, type_, name in (("max", "boolean", "BOOLEAN"), ("min", "binary", "BYTES"))
    ),
    # paimon-core mergetree/compact/aggregate/factory/FieldNestedUpdateAggFactory.java:40-45, 66-70
    (
        "nested-update-type",
        {**AGG, "fields.l.aggregate-function": "nested_update"},
        "Data type for nested table column must be 'Array<Row>' but was 'ARRAY<INT>'.",
        TYPED,
        None,
    ),
    (
        "nested-sequence-needs-key",
        {**AGG, "fields.l.aggregate-function": "nested_update", "fields.l.nested-sequence-field": "v"},
        "Option 'fields.<field-name>.nested-sequence-field' requires 'fields.<field-name>.nested-key' to be "
        "configured.",
        [("k", "int"), ("l", "array<struct<k0:int,v:string>>")],
        None,
    ),
    # paimon-core mergetree/compact/aggregate/factory/FieldMergeMapWithKeyTimeAggFactory.java:39-55, 67-73
    (
        "keytime-value-type",
        {**AGG, "fields.m.aggregate-function": "merge_map_with_keytime"},
        "Value type of MAP for field 'm' must be ROW but was 'INT'",
        TYPED,
        None,
    ),
    (
        "keytime-ts-field",
        {**AGG, "fields.m.aggregate-function": "merge_map_with_keytime", "fields.m.ts-field": "ts"},
        "Timestamp field 'ts' not found in ROW type for field 'm'. Available fields: [v, t]",
        [("k", "int"), ("m", "map<string,struct<v:string,t:string>>")],
        None,
    ),
    # the same factory, :73-76 (checkOptionDependencies)
    (
        "nested-key-null-strategy-needs-key",
        {**AGG, "fields.l.aggregate-function": "nested_update", "fields.l.nested-key-null-strategy": "merge"},
        "Option 'fields.<field-name>.nested-key-null-strategy' requires 'fields.<field-name>.nested-key' to be "
        "configured.",
        [("k", "int"), ("l", "array<struct<k0:int,v:string>>")],
        None,
    ),
    # paimon-api options/Options.java:116-120 (enums parsed in OptionsUtils.java:103-121, any case)
    (
        "nested-key-null-strategy-value",
        {
            **AGG,
            "fields.l.aggregate-function": "nested_update",
            "fields.l.nested-key": "k0",
            "fields.l.nested-key-null-strategy": "skip",
        },
        "Could not parse value 'skip' for key 'fields.l.nested-key-null-strategy'.",
        [("k", "int"), ("l", "array<struct<k0:int,v:string>>")],
        None,
    ),
    # paimon-core mergetree/compact/aggregate/factory/Field{Hll,Theta}SketchAggFactory.java:34-37
    *(
        (
            f"{kind}-sketch-type",
            {**AGG, "fields.n.aggregate-function": f"{kind}_sketch"},
            f"Data type for {kind} sketch column must be 'VarBinaryType' but was 'INT NOT NULL'.",
            TYPED,
            None,
        )
        for kind in ("hll", "theta")
    ),
    # paimon-core mergetree/compact/aggregate/factory/FieldNestedPartialUpdateAggFactory.java:55-60
    (
        "nested-partial-update-type",
        {**AGG, "fields.l.aggregate-function": "nested_partial_update", "fields.l.nested-key": "k"},
        "Data type for nested table column must be 'Array<Row>' but was 'ARRAY<INT>'.",
        TYPED,
        None,
    ),
    # fluss-common metadata/MergeEngineType.java:67-78 (no LAST_ROW: a table without the option keeps it)
    (
        "fluss-last-row",
        {"table.merge-engine": "last_row"},
        "Unsupported merge engine type: last_row",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("options", "message", "columns", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refusal_prints_the_upstream_text(
    options: dict[str, str], message: str, columns: list[tuple[str, str]] | None, key: list[str] | None
) -> None:
    with pytest.raises(InvalidOptionError) as refused:
        TableDefinition.build(columns or COLUMNS, key or ["k"], options)
    assert str(refused.value) == message


def test_merge_refusals_are_paimons_multi_line_texts() -> None:
    # paimon-core mergetree/compact/PartialUpdateMergeFunction.java:182-191
    assert DELETE_REJECTED == (
        "By default, Partial update can not accept delete records, you can choose one of the following solutions:\n"
        "1. Configure 'ignore-delete' to ignore delete records.\n"
        "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete "
        "records.\n"
        "3. Configure 'sequence-group's to retract partial columns. Also configure "
        "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving deleted records "
        "of `specified sequence group`."
    )
    # paimon-core mergetree/compact/FirstRowMergeFunction.java:56-58
    assert RETRACT_REJECTED == (
        "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.\n"
        "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
    )


def test_an_aggregate_function_on_a_sequence_group_field_is_refused_in_our_words() -> None:
    # Paimon <= 1.3 refused this ("Should not defined aggregation function on sequence group: [s1]").
    with pytest.raises(InvalidOptionError) as refused:
        TableDefinition.build(
            COLUMNS, ["k"], {**PU, "fields.s1.sequence-group": "a", "fields.s1.aggregate-function": "max"}
        )
    assert str(refused.value) == (
        "Sequence field 's1' of 'fields.s1.sequence-group' orders its group and can not have an aggregate "
        "function ('fields.s1.aggregate-function')."
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # Paimon refuses both without a message (Preconditions.checkArgument, a failed projection).
        (
            {"fields.n.aggregate-function": "nested_partial_update"},
            "Function 'nested_partial_update' of column 'n' needs the nested key its rows are merged by: set "
            "'fields.n.nested-key' to the row fields forming it.",
        ),
        (
            {"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "k0,kk"},
            "Option 'fields.n.nested-key' names 'kk', which is not a field of the rows of column 'n': [k0, v].",
        ),
    ],
    ids=["nested-partial-update-needs-key", "nested-key-not-a-field"],
)
def test_nested_function_refusals_in_our_words(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError) as refused:
        TableDefinition.build(
            [("k", "int"), ("n", "array<struct<k0:int,v:string>>")], ["k"], {**AGG, **options}
        )
    assert str(refused.value) == message


def test_java_list_and_hash_order() -> None:
    assert java_list([]) == "[]" and java_list(["k", "a"]) == "[k, a]"
    # HashSet iteration order printed by OpenJDK 17 for these insertions ("Aa" and "BB" share a hash)
    names = ["zeta", "alpha", "k", "a", "bb", "Aa", "BB", "user_id", "uid"]
    assert java_hash_order(names) == ["zeta", "bb", "Aa", "BB", "a", "uid", "user_id", "alpha", "k"]
    many = ["c9", "b", "a", *(f"x{i}" for i in range(1, 15)), "\u3000x", "é"]  # resized past 16 buckets
    assert java_list(java_hash_order(many)) == (
        "[x8, a, x9, b, é, c9, x10, x12, x1, x11, x2, x14, x3, x13, x4, x5, \u3000x, x6, x7]"
    )
