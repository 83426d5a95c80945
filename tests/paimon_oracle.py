"""Runs table workloads through Apache Paimon itself (its Java API, `jvm/oracle/PaimonOracle.java`) and
returns each one's merged rows, or the error Paimon raised, as Python values.

The program is compiled once per session with `javac` against the pinned paimon-bundle jar (`make jars`)
and pyspark's jars (Hadoop, Jackson); one JVM runs every workload of a call, one JSON line each way.
Each commit is followed by a full compaction, so every commit merges with the stored row, the model of
`docs/semantics.md` §0.1.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

PAIMON_VERSION = "1.4.2"
PAIMON_JAR = f"paimon-bundle-{PAIMON_VERSION}.jar"
SOURCE = Path(__file__).resolve().parent.parent / "jvm" / "oracle" / "PaimonOracle.java"
_EPOCH_DATE = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class Workload:
    """A table definition and its commits; a record is (row kind, values in column order)."""

    columns: tuple[tuple[str, str], ...]  # (name, Spark type: int, bigint, decimal(p,s), ...)
    primary_key: tuple[str, ...]
    options: dict[str, str]
    commits: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]

    def describe(self) -> str:
        lines = [f"columns={list(self.columns)} pk={list(self.primary_key)}", f"options={self.options}"]
        lines += [f"commit {n}: {list(commit)}" for n, commit in enumerate(self.commits)]
        return "\n".join(lines)


@dataclass(frozen=True)
class Outcome:
    """Merged rows (sorted, as tuples of Python values) or an error message."""

    rows: tuple[tuple[Any, ...], ...] | None
    error: str | None


def _encode(value: Any, spark_type: str) -> Any:
    if value is None:
        return None
    if spark_type in ("double", "float"):
        return repr(float(value)).replace("inf", "Infinity").replace("nan", "NaN")
    if spark_type.startswith("decimal"):
        return str(value)
    if spark_type == "date":
        return (value - _EPOCH_DATE).days
    if spark_type == "timestamp_ntz":
        return (value - _EPOCH) // timedelta(microseconds=1)
    return value


def _decode(value: Any, spark_type: str) -> Any:
    if value is None:
        return None
    if spark_type == "double":
        return float(value)
    if spark_type == "float":
        # Java's shortest text of a float names the float, not the double it widens to.
        return struct.unpack("f", struct.pack("f", float(value)))[0]
    if spark_type.startswith("decimal"):
        return Decimal(value)
    if spark_type == "date":
        return _EPOCH_DATE + timedelta(days=value)
    if spark_type == "timestamp_ntz":
        return _EPOCH + timedelta(microseconds=value)
    return value


def _paimon_type(spark_type: str) -> str:
    return {"string": "STRING", "timestamp_ntz": "TIMESTAMP"}.get(spark_type, spark_type.upper())


def sort_rows(rows: Sequence[tuple[Any, ...]]) -> tuple[tuple[Any, ...], ...]:
    """Rows in a total order (NULLs, NaN and mixed types included), by their text."""
    return tuple(sorted(rows, key=lambda row: [repr(v) for v in row]))


class PaimonOracle:
    """Compiles the oracle program once; `run` sends workloads through one JVM."""

    def __init__(self, jars: Path, work: Path) -> None:
        import pyspark

        bundle = jars / PAIMON_JAR
        if not bundle.is_file():
            raise FileNotFoundError(f"{bundle} is missing: run `make jars` (Maven Central)")
        self._classpath = os.pathsep.join([str(bundle), str(Path(pyspark.__file__).parent / "jars" / "*")])
        self._work = work
        classes = work / "classes"
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-cp", self._classpath, "-d", str(classes), str(SOURCE)],
            check=True,
            capture_output=True,
            text=True,
        )
        self._classes = classes

    def run(self, workloads: Sequence[Workload]) -> list[Outcome]:
        lines = [
            json.dumps(
                {
                    "columns": [[name, _paimon_type(t)] for name, t in w.columns],
                    "primary_key": list(w.primary_key),
                    "options": w.options,
                    "commits": [
                        [
                            [kind, [_encode(v, t) for v, (_, t) in zip(values, w.columns, strict=True)]]
                            for kind, values in c
                        ]
                        for c in w.commits
                    ],
                }
            )
            for w in workloads
        ]
        with tempfile.TemporaryDirectory(dir=self._work) as warehouse:
            done = subprocess.run(
                [
                    "java",
                    "-Xmx512m",
                    "-cp",
                    os.pathsep.join([str(self._classes), self._classpath]),
                    "PaimonOracle",
                    warehouse,
                ],
                input="\n".join(lines) + "\n",
                capture_output=True,
                text=True,
                check=False,
            )
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        if done.returncode != 0 or len(answers) != len(workloads):
            raise RuntimeError(f"the Paimon oracle failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return [self._outcome(answer, w) for answer, w in zip(answers, workloads, strict=True)]

    @staticmethod
    def _outcome(answer: dict[str, Any], workload: Workload) -> Outcome:
        if "error" in answer:
            return Outcome(None, answer["error"])
        kinds = {row[0] for row in answer["rows"]}
        if not kinds <= {"+I", "+U"}:
            raise RuntimeError(f"Paimon read retractions {kinds}: {answer['rows']}")
        rows = [
            tuple(_decode(v, t) for v, (_, t) in zip(row[1:], workload.columns, strict=True))
            for row in answer["rows"]
        ]
        return Outcome(sort_rows(rows), None)
