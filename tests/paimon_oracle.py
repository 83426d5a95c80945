"""Runs table workloads through Apache Paimon itself (its Java API, `jvm/oracle/PaimonOracle.java`) and
returns each one's merged rows and, with a `changelog-producer`, each commit's changelog (as Paimon's
streaming read gets it), or the error Paimon raised, as Python values.

The program is compiled once per session with `javac` against the pinned paimon-bundle jar (`make jars`)
and pyspark's jars (Hadoop, Jackson); one JVM runs every workload of a call, one JSON line each way.
Each commit is followed by a full compaction, so every commit merges with the stored row, the model of
`docs/semantics.md` §0.1.
"""

from __future__ import annotations

import base64
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


Rows = tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Outcome:
    """Merged rows (sorted, as tuples of Python values) or an error message; with a changelog producer,
    each commit's changelog too (sorted, a row kind before the values)."""

    rows: Rows | None
    error: str | None
    changelog: tuple[Rows, ...] | None = None


def _split(inner: str) -> list[str]:
    """The comma-separated parts of a nested type's parameters, commas inside `<>` and `()` kept."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        depth += (c in "<(") - (c in ">)")
        if c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    return [*parts, inner[start:]]


def _nested(spark_type: str) -> tuple[str, list[str]]:
    """`array<int>` -> ("array", ["int"]); `struct<a:int,b:string>` -> ("struct", ["int", "string"]);
    a flat type -> (its name, [])."""
    for kind in ("array", "map", "struct"):
        if spark_type.startswith(kind + "<"):
            parts = _split(spark_type[len(kind) + 1 : -1])
            return kind, [part.split(":", 1)[1] for part in parts] if kind == "struct" else parts
    return spark_type, []


def _encode(value: Any, spark_type: str) -> Any:
    if value is None:
        return None
    kind, inner = _nested(spark_type)
    if kind == "array":
        return [_encode(v, inner[0]) for v in value]
    if kind == "map":
        return [[_encode(k, inner[0]), _encode(v, inner[1])] for k, v in value.items()]
    if kind == "struct":
        return [_encode(v, t) for v, t in zip(value, inner, strict=True)]
    if spark_type == "binary":
        return base64.b64encode(value).decode()
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
    kind, inner = _nested(spark_type)
    if kind == "array":
        return [_decode(v, inner[0]) for v in value]
    if kind == "map":
        return plain({_decode(k, inner[0]): _decode(v, inner[1]) for k, v in value}, spark_type)
    if kind == "struct":
        return tuple(_decode(v, t) for v, t in zip(value, inner, strict=True))
    if spark_type == "binary":
        return base64.b64decode(value)
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


def plain(value: Any, spark_type: str) -> Any:
    """A value as both sides compare it: a map as its entries sorted by key (its order is a hash
    table's), a struct as a tuple, nested values likewise, bytes as `bytes`."""
    if value is None:
        return None
    kind, inner = _nested(spark_type)
    if kind == "array":
        return [plain(v, inner[0]) for v in value]
    if kind == "map":
        entries = ((plain(k, inner[0]), plain(v, inner[1])) for k, v in value.items())
        return tuple(sorted(entries, key=lambda entry: repr(entry[0])))
    if kind == "struct":
        return tuple(plain(v, t) for v, t in zip(value, inner, strict=True))
    if spark_type == "binary":
        return bytes(value)  # Spark returns a bytearray
    return value


def sort_rows(rows: Sequence[tuple[Any, ...]]) -> Rows:
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
                    "columns": [list(column) for column in w.columns],
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

        def decoded(row: list[Any]) -> tuple[Any, ...]:
            return tuple(_decode(v, t) for v, (_, t) in zip(row, workload.columns, strict=True))

        rows = sort_rows([decoded(row[1:]) for row in answer["rows"]])
        if "changelog" not in answer:
            return Outcome(rows, None)
        changelog = tuple(sort_rows([(row[0], *decoded(row[1:])) for row in c]) for c in answer["changelog"])
        return Outcome(rows, None, changelog)
