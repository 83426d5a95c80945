"""Shared fixtures: the Spark engines (Sail or a Connect server, classic JVM Spark with Delta, a
parametrized pair) and a local S3 server."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from engine import ENGINE, JVM, WHOLE_JVM_TIER
from servers import S3Endpoint, patched_environ, seaweedfs

from wide_assets import WideTable
from wide_assets.schema import Column
from wide_assets.session import activate, get_spark, stop_spark

# The tests' JVMs (this process's, every child pytest's, `dg launch`'s, the Connect server's and the
# cluster's executors) live for minutes on tiny tables, where the C2 compiler's CPU never pays back: on
# C1 alone, tests/test_engine_parity.py used 78 instead of 128 CPU-seconds (same wall time on a quiet
# machine), and CI's 2 cores are shared by two workers. The product keeps the JVM's default (C2 wins
# on large writes); a value the caller set is kept.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")
# A JVM write of a small table costs seconds (Delta replays the log in Spark jobs for each new
# version), so `make test` keeps the `engine` fixture's jvm-delta parameter on every third such test of
# each file (the first, fourth, ...) and deselects the others (`pytest --collect-only` counts them);
# `WIDE_ASSETS_JVM_FUNCTIONS=all` runs every one.
JVM_ENGINE_EVERY = 1 if os.environ.get("WIDE_ASSETS_JVM_FUNCTIONS") == "all" else 3
# The longest files, longest first (per-file test time of a whole run, `--junitxml`): collected
# first, they start first under `--dist loadfile --no-loadscope-reorder` (`make test`), so the run
# does not end with one worker on a 10-minute file while the other idles.
LONGEST_FILES = (
    "tests/test_jvm_connect.py",
    "tests/test_jvm_cluster.py",
    "tests/test_jvm_delta.py",
    "tests/test_distributed.py",
    "tests/test_functions.py",
    "tests/reliability/test_multi_writer.py",
    "tests/reliability/test_store_outage.py",
    "tests/test_product_360.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: dict[str, int] = {}
    dropped = []
    for item in items:
        # Marked tests repeat, in another JVM shape, what a bounded test already runs (their files say
        # which), as test_jvm_delta.py's whole tier does.
        if not WHOLE_JVM_TIER and item.get_closest_marker("whole_jvm_tier") is not None:
            dropped.append(item)
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("engine") != "jvm-delta":
            continue
        module = item.nodeid.split("::")[0]
        seen[module] = seen.get(module, -1) + 1
        if seen[module] % JVM_ENGINE_EVERY:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session", autouse=True)
def _engines(request: pytest.FixtureRequest) -> Iterator[None]:
    # The JVM starts first, before any Spark Connect (gRPC) client or Sail server thread exists in this
    # process: pyspark launches it by fork with a preexec_fn, which races with those threads (seen once
    # in three parallel runs: "Java gateway process exited before sending its port number"). Only
    # when a collected test uses it: the unit tier starts no engine.
    uses_jvm = any(
        {"jvm_spark", "any_spark", "engine"} & set(getattr(item, "fixturenames", ()))
        for item in request.session.items
    )
    if uses_jvm and shutil.which("java") is not None:
        get_spark(JVM)
    elif uses_jvm and os.environ.get("CI"):
        # CI must run every JVM test: a machine without Java fails here instead of skipping them.
        raise RuntimeError("the JVM tests need `java` on PATH")
    yield
    stop_spark()


@pytest.fixture(scope="session")
def spark() -> Any:
    """Embedded Sail session, or one on the server WIDE_ASSETS_SPARK_REMOTE names (Spark Connect client)."""
    return get_spark(ENGINE)


@pytest.fixture(scope="session")
def jvm_spark() -> Any:
    """Classic JVM Spark (local[2], or the master WIDE_ASSETS_SPARK_MASTER names) with delta-spark."""
    if shutil.which("java") is None:
        pytest.skip("classic Spark needs a JVM and `java` is not on PATH")
    return get_spark(JVM)


@pytest.fixture(autouse=True)
def _engine_dispatch(request: pytest.FixtureRequest) -> None:
    # pyspark picks Connect vs classic `functions`/`Window` from one process-wide flag, so point it at
    # the engine this test uses; tests asking for both engines must call `activate` themselves.
    names = set(request.fixturenames)
    if "any_spark" in names:
        return
    wanted = [name for name in ("spark", "jvm_spark") if name in names]
    if len(wanted) == 1:
        activate(request.getfixturevalue(wanted[0]))


@pytest.fixture(params=[pytest.param("sail"), pytest.param("jvm", marks=pytest.mark.jvm)])
def any_spark(request: pytest.FixtureRequest) -> Any:
    """The same test once on Sail and once on classic JVM Spark."""
    fixture = "spark" if request.param == "sail" else "jvm_spark"
    return activate(request.getfixturevalue(fixture))


# make(columns, primary_key, options) -> a table with `write(frame)` and `read()`.
Factory = Callable[[Sequence[tuple[str, str] | Column], list[str], dict[str, str]], Any]


@pytest.fixture(params=["sail-delta", pytest.param("jvm-delta", marks=pytest.mark.jvm)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Factory]:
    """(spark, make_table): a Delta WideTable on Sail, or on classic JVM Spark with delta-spark."""
    counter = itertools.count()
    spark: Any = activate(request.getfixturevalue("spark" if request.param == "sail-delta" else "jvm_spark"))
    return spark, lambda c, k, o: WideTable.create(spark, tmp_path / f"t{next(counter)}", c, k, o)


@pytest.fixture
def tmp_lake(tmp_path: Path) -> Path:
    """An empty lake directory private to the test."""
    lake = tmp_path / "lake"
    lake.mkdir()
    return lake


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """A SeaweedFS S3 server with an empty bucket; its AWS_* variables are set in this process (and
    so in the children it starts) for the rest of the session: Sail and delta-rs read them there."""
    with seaweedfs(tmp_path_factory.mktemp("s3")) as endpoint, patched_environ(endpoint.env):
        yield endpoint
