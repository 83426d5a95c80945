"""Landed files that cannot be ingested as they are: a CSV line with the wrong number of fields, a
truncated Parquet file, a pattern that matches nothing. Each error names the file (and line), a
quarantining source quarantines the bad part and ingests the rest, and a misspelled pattern fails.

Oracles: the landed lines written here, by hand.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from wide_assets.errors import InvalidInputError
from wide_assets.pipelines import SourceSpec
from wide_assets.pipelines.ingest import (
    BadSourceRecords,
    ingest,
    landed_files,
    quarantine_path,
    require_landed,
)


def source(format_: str, files: str, max_bad_records: int | None) -> SourceSpec:
    return SourceSpec(
        name="payments",
        description="Payments per order.",
        files=(files,),
        columns=(("order_id", "bigint"), ("amount", "int"), ("method", "string")),
        primary_key=("order_id",),
        feeds={"amount": "amount", "method": "method"},
        format=format_,
        max_bad_records=max_bad_records,
    )


def rows(spark: Any, path: str, *columns: str) -> set[tuple[Any, ...]]:
    return {tuple(r[c] for c in columns) for r in spark.read.format("delta").load(path).collect()}


SHORT_LINE = "order_id,amount,method\n1,10,card\n2,20\n3,30,cash\n"


def test_a_csv_line_with_the_wrong_number_of_fields_is_quarantined_with_its_file_and_line(
    any_spark: Any, tmp_path: Path
) -> None:
    # On both engines: classic pyspark pickles the parsed rows to the JVM, which refused a row kind that
    # was a Python enum member (a CSV without `_row_kind`).
    spark = any_spark
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p1.csv").write_text(SHORT_LINE + '4,"40",card,extra\n', "utf-8")
    cdc = str(tmp_path / "cdc")
    result = ingest(
        spark, source("csv", "in/*.csv", 5), landed_files(tmp_path, source("csv", "in/*.csv", 5)), cdc
    )
    assert result.quarantined == 2
    assert rows(spark, cdc, "order_id", "amount", "method", "_source_line") == {
        (1, 10, "card", 2),
        (3, 30, "cash", 4),
    }
    assert rows(spark, quarantine_path(cdc), "_source_file", "_source_line", "_reason", "_record") == {
        ("in/p1.csv", 3, "2 field(s), the header has 3 (malformed line)", "2,20"),
        ("in/p1.csv", 5, "4 field(s), the header has 3 (malformed line)", '4,"40",card,extra'),
    }


def test_a_bad_csv_line_fails_a_source_without_quarantine_naming_file_and_line(
    spark: Any, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p1.csv").write_text(SHORT_LINE, "utf-8")
    strict = source("csv", "in/*.csv", None)
    cdc = str(tmp_path / "cdc")
    with pytest.raises(InvalidInputError) as raised:
        ingest(spark, strict, landed_files(tmp_path, strict), cdc)
    assert "in/p1.csv line 3: 2 field(s), the header has 3 (malformed line)" in str(raised.value)
    assert not DeltaTable.is_deltatable(cdc)  # nothing ingested


def parquet(path: Path, order_ids: list[int]) -> None:
    table = pa.table(
        {
            "order_id": pa.array(order_ids, pa.int64()),
            "amount": pa.array([10 * i for i in order_ids], pa.int32()),
            "method": pa.array(["card"] * len(order_ids)),
        }
    )
    pq.write_table(table, path)


def truncated_parquet(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    parquet(tmp_path / "in" / "p1.parquet", [1, 2])
    parquet(tmp_path / "in" / "p2.parquet", [3, 4])
    whole = (tmp_path / "in" / "p2.parquet").read_bytes()
    (tmp_path / "in" / "p2.parquet").write_bytes(whole[: len(whole) // 2])
    parquet(tmp_path / "in" / "p3.parquet", [5])


def test_a_truncated_parquet_file_fails_a_source_without_quarantine_naming_the_file(
    spark: Any, tmp_path: Path
) -> None:
    truncated_parquet(tmp_path)
    strict = source("parquet", "in/*.parquet", None)
    with pytest.raises(InvalidInputError) as raised:
        ingest(spark, strict, landed_files(tmp_path, strict), str(tmp_path / "cdc"))
    assert "Source payments: file in/p2.parquet cannot be read: it is not a readable Parquet file" in str(
        raised.value
    )


def test_a_quarantining_source_quarantines_an_unreadable_file_and_ingests_its_other_files(
    spark: Any, tmp_path: Path
) -> None:
    truncated_parquet(tmp_path)
    lenient = source("parquet", "in/*.parquet", 1)
    cdc = str(tmp_path / "cdc")
    result = ingest(spark, lenient, landed_files(tmp_path, lenient), cdc)
    assert result.quarantined == 1
    assert rows(spark, cdc, "order_id", "amount", "_source_file") == {
        (1, 10, "in/p1.parquet"),
        (2, 20, "in/p1.parquet"),
        (5, 50, "in/p3.parquet"),
    }
    [(file, line, reason)] = rows(spark, quarantine_path(cdc), "_source_file", "_source_line", "_reason")
    assert (file, line) == ("in/p2.parquet", 1)
    assert reason.startswith("file in/p2.parquet cannot be read: it is not a readable Parquet file")
    assert reason.endswith("(unreadable file)")


def test_a_quarantining_source_with_a_binary_column_quarantines_its_bad_parquet_records(
    spark: Any, tmp_path: Path
) -> None:
    """Bytes that are not UTF-8 are kept as base64 in the quarantined record's text."""
    (tmp_path / "in").mkdir()
    blobs = pa.table({"order_id": pa.array([1, None], pa.int64()), "blob": [b"\xff\xfe", b"\x80"]})
    pq.write_table(blobs, tmp_path / "in" / "b1.parquet")
    spec = SourceSpec(
        name="attachments",
        description="Attachments per order.",
        files=("in/*.parquet",),
        columns=(("order_id", "bigint"), ("blob", "binary")),
        primary_key=("order_id",),
        feeds={"blob": "blob"},
        format="parquet",
        max_bad_records=1,
    )
    cdc = str(tmp_path / "cdc")
    assert ingest(spark, spec, landed_files(tmp_path, spec), cdc).quarantined == 1
    [ingested] = spark.read.format("delta").load(cdc).collect()
    assert (ingested.order_id, bytes(ingested.blob)) == (1, b"\xff\xfe")
    [(line, reason, record)] = rows(spark, quarantine_path(cdc), "_source_line", "_reason", "_record")
    assert (line, record) == (2, "gA==")  # 0x80, base64
    assert reason == "column order_id: NULL primary key (missing key)"


def test_a_csv_file_that_is_not_utf8_names_its_line(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p1.csv").write_bytes(b"order_id,amount,method\n1,10,card\n2,20,\xff\n")
    strict = source("csv", "in/*.csv", None)
    with pytest.raises(InvalidInputError, match=r"file in/p1\.csv cannot be read: line 3 is not UTF-8"):
        ingest(spark, strict, landed_files(tmp_path, strict), str(tmp_path / "cdc"))


def test_a_pattern_that_matches_nothing_is_an_error_naming_the_pattern_and_folder(
    spark: Any, tmp_path: Path
) -> None:
    (tmp_path / "payments").mkdir()
    (tmp_path / "payments" / "p1.csv").write_text(SHORT_LINE, "utf-8")
    cdc = str(tmp_path / "cdc")
    misspelled = source("csv", "payments/*.cvs", None)
    with pytest.raises(InvalidInputError) as raised:
        require_landed(tmp_path, misspelled, landed_files(tmp_path, misspelled), cdc)
    assert (
        f"no file under {tmp_path} matches 'payments/*.cvs': {tmp_path / 'payments'} holds p1.csv, which it "
        "nearly matches" in str(raised.value)
    )
    (tmp_path / "payments_2026-01-01.csv").write_text(SHORT_LINE, "utf-8")
    flat = source("csv", "paymnts_*.csv", None)
    with pytest.raises(InvalidInputError, match=r"holds payments_2026-01-01\.csv, which it nearly matches"):
        require_landed(tmp_path, flat, [], cdc)
    folder = source("csv", "paymnets/*.csv", None)
    with pytest.raises(InvalidInputError) as raised:
        require_landed(tmp_path, folder, [], cdc)
    assert f"{tmp_path / 'paymnets'} does not exist (did you mean {tmp_path / 'payments'}?)" in str(
        raised.value
    )


def test_a_source_waiting_for_its_first_file_runs_and_one_cleaned_up_after_ingestion_passes(
    spark: Any, tmp_path: Path
) -> None:
    waiting = source("csv", "refunds/*.csv", None)
    cdc = str(tmp_path / "cdc")
    # No folder yet, nor a folder of a close name: waiting, said in the note.
    assert require_landed(tmp_path, waiting, [], cdc) == (
        f"waiting for its first file: nothing matches 'refunds/*.csv' ({tmp_path / 'refunds'} does not exist yet)"
    )
    # A folder holding other sources' files, none of them like the pattern: waiting too.
    (tmp_path / "chargebacks_001.csv").write_text(SHORT_LINE, "utf-8")
    flat = source("csv", "refunds_*.csv", None)
    assert require_landed(tmp_path, flat, [], cdc) == (
        f"waiting for its first file: nothing matches 'refunds_*.csv' ({tmp_path})"
    )
    (tmp_path / "refunds").mkdir()
    (tmp_path / "refunds" / "r1.csv").write_text(SHORT_LINE.replace("2,20\n", ""), "utf-8")
    ingest(spark, waiting, landed_files(tmp_path, waiting), cdc)
    (tmp_path / "refunds" / "r1.csv").unlink()
    (tmp_path / "refunds" / "r1.cvs").write_text(
        "a misspelled name is fine once files were ingested", "utf-8"
    )
    assert require_landed(tmp_path, waiting, landed_files(tmp_path, waiting), cdc) is None


def test_duplicate_records_are_counted_and_quarantined_but_only_malformed_ones_count_against_the_limit(
    spark: Any, tmp_path: Path
) -> None:
    # Records are duplicates only where a source has an op time.
    spec = replace(
        source("csv", "in/*.csv", 1),
        columns=(("order_id", "bigint"), ("amount", "int"), ("op_ts", "timestamp")),
        feeds={"amount": "amount"},
        op_time="op_ts",
    )
    folder, cdc = tmp_path / "in", str(tmp_path / "cdc")
    folder.mkdir()
    header, first, second = (
        "order_id,amount,op_ts\n",
        "1,10,2026-11-01 10:00:00\n",
        "2,20,2026-11-01 10:00:00\n",
    )
    # A record repeated in its own file is a duplicate of its first line.
    (folder / "d1.csv").write_text(header + first + second + first, "utf-8")
    result = ingest(spark, spec, landed_files(tmp_path, spec), cdc)
    assert (result.appended, result.quarantined, result.duplicates) == (2, 1, 1)
    # One of an earlier run, one of its own file and one malformed record: three quarantined, one
    # malformed, so within the limit of one.
    third = "3,30,2026-11-02 10:00:00\n"
    (folder / "d2.csv").write_text(
        header + second + third + third + "4,40,2026-11-02 10:00:00,extra\n", "utf-8"
    )
    result = ingest(spark, spec, landed_files(tmp_path, spec), cdc)
    assert (result.appended, result.quarantined, result.duplicates) == (1, 3, 2)
    assert rows(spark, quarantine_path(cdc), "_source_file", "_source_line", "_reason") == {
        ("in/d1.csv", 4, "duplicate of in/d1.csv line 2 (duplicate record)"),
        ("in/d2.csv", 2, "duplicate of in/d1.csv line 3 (duplicate record)"),
        ("in/d2.csv", 4, "duplicate of in/d2.csv line 3 (duplicate record)"),
        ("in/d2.csv", 5, "4 field(s), the header has 3 (malformed line)"),
    }
    # Two malformed records are over the limit, whatever the duplicates beside them: nothing is ingested.
    (folder / "d3.csv").write_text(header + first + "5,50\n" + "6,60\n", "utf-8")
    with pytest.raises(BadSourceRecords) as raised:
        ingest(spark, spec, landed_files(tmp_path, spec), cdc)
    assert raised.value.count == 2
    assert {r[0] for r in rows(spark, cdc, "order_id")} == {1, 2, 3}
