"""The JVM engines' Delta Lake: the pinned delta-spark jars (`make jars` fetches them into .jars/), the
Spark conf that loads them, and a JVM Spark Connect server started from the pip `pyspark` package.

`python -m wide_assets.jvm connect-server [--port 15002] [--master local[2]]` runs that server in the
foreground, as a deployment would, until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

__all__ = [
    "CONNECT_SERVER_CLASS",
    "DELTA_PACKAGES",
    "JARS_VARIABLE",
    "ConnectServer",
    "connect_server",
    "delta_conf",
    "delta_jars",
    "loopback_env",
]

# In step with jvm/pom.xml (tests/unit/test_jvm.py holds them together): Delta for Spark 4.0.x, built
# against the Spark 4.0.1 that the pip pyspark pinned in pyproject.toml ships.
DELTA_PACKAGES: tuple[str, ...] = ("io.delta:delta-spark_2.13:4.0.1", "io.delta:delta-storage:4.0.1")
# The folder holding the jars (`make` sets it to the project's .jars/). Unset: `.jars` in the working
# directory when `make jars` filled it (a project's root), else Spark resolves DELTA_PACKAGES from
# Maven itself (`spark.jars.packages`, into ~/.ivy2) on its first start.
JARS_VARIABLE = "WIDE_ASSETS_JARS"
PROJECT_JARS = Path(".jars")
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# Spark keeps its 100 most recently compiled classes (code generation) by default, and one small write
# of an 11-column table compiles 55-72: each write compiled everything again (1.5-3.0 s of Janino per
# write). With room for 1,000, a warm write compiles 16 (docs/performance.md).
CODEGEN_CACHE_CONF: Mapping[str, str] = MappingProxyType({"spark.sql.codegen.cache.maxEntries": "1000"})

_DELTA_SESSION: Mapping[str, str] = MappingProxyType(
    {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Delta replays a table's log in 50 tasks by default, sized for clusters: every read of a
        # small table paid for 50 tasks. The engine's shuffle width fits the tables a session reads.
        "spark.databricks.delta.snapshotPartitions": "4",
        # Delta's VACUUM lists a table's folders in this many tasks (Spark's default is 10,000, sized
        # for file listings of clusters): a VACUUM of a four-file table took 81 s on local[2], 6.5 s
        # with 4. Spark's own listings take min(paths, this), so only a huge listing is narrower.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
        # The engine writes the table's Parquet files itself (our commits name them). JVM Spark writes
        # timestamps as INT96 by default, whose footers carry no usable bounds: readers that prune by
        # the statistics we derive from them missed rows. Delta's own writer uses microseconds too.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
)
_STARTUP_TIMEOUT_S = 180.0


def delta_jars(environ: Mapping[str, str] | None = None) -> list[str]:
    """The jar files of DELTA_PACKAGES in $WIDE_ASSETS_JARS (or a filled `./.jars`); [] when there is
    none. A named folder that lacks one is an error naming it and `make jars`, never a session
    without Delta."""
    env = os.environ if environ is None else environ
    folder = env.get(JARS_VARIABLE, "").strip()
    if not folder:
        found = [PROJECT_JARS / name for name in _jar_names()]
        return [str(path.resolve()) for path in found] if all(p.is_file() for p in found) else []
    paths = [Path(folder) / name for name in _jar_names()]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{JARS_VARIABLE}={folder} lacks {', '.join(missing)}: run `make jars` (Maven Central), "
            f"or unset {JARS_VARIABLE} to let Spark resolve {', '.join(DELTA_PACKAGES)} itself"
        )
    return [str(path) for path in paths]


def delta_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark conf that loads Delta into a JVM session: the local jars, else their Maven coordinates."""
    jars = delta_jars(environ)
    loaded = {"spark.jars": ",".join(jars)} if jars else {"spark.jars.packages": ",".join(DELTA_PACKAGES)}
    return {**loaded, **_DELTA_SESSION}


def loopback_env(master: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`SPARK_LOCAL_IP=127.0.0.1` for a standalone cluster on this machine (`local-cluster[...]`) unless
    the environment names an address: without it Spark binds the cluster's master and workers to the
    host's outward address and their web UIs to 0.0.0.0. `local[N]` (no web UI: `spark.ui.enabled` is
    off) keeps Spark's own choice until loopback's cost there is settled (docs/deploy.md), and so does a
    remote master, whose executors must reach the driver."""
    env = os.environ if environ is None else environ
    on_this_machine = master.startswith("local-cluster[")
    return {"SPARK_LOCAL_IP": "127.0.0.1"} if on_this_machine and "SPARK_LOCAL_IP" not in env else {}


def _jar_names() -> list[str]:
    """The file names `mvn dependency:copy-dependencies` gives DELTA_PACKAGES' jars."""
    return [f"{artifact}-{version}.jar" for _, artifact, version in (c.split(":") for c in DELTA_PACKAGES)]


@dataclass(frozen=True)
class ConnectServer:
    """A JVM Spark Connect server process on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spark_submit() -> Path:
    import pyspark

    # The pip package is a Spark home of its own: bin/spark-submit and jars/, Spark Connect's included.
    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def server_command(port: int, master: str, conf: Mapping[str, str]) -> list[str]:
    """spark-submit of Spark's own Connect server class, with Delta and `conf`, bound to loopback."""
    settings = {
        **delta_conf(),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        **CODEGEN_CACHE_CONF,
        **conf,
    }
    flags = [flag for key, value in settings.items() for flag in ("--conf", f"{key}={value}")]
    return [
        str(_spark_submit()),
        "--class",
        CONNECT_SERVER_CLASS,
        "--name",
        "wide_assets Spark Connect server",
        "--master",
        master,
        *flags,
        "spark-internal",
    ]


@contextlib.contextmanager
def connect_server(
    log: Path, port: int | None = None, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> Iterator[ConnectServer]:
    """Start a JVM Spark Connect server with Delta, wait until it accepts connections, stop it on exit."""
    port = _free_port() if port is None else port
    command = server_command(port, master, conf or {})
    env = {
        **os.environ,
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        **loopback_env(master),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = ConnectServer(process, port, log)
    try:
        _wait_until_listening(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_listening(server: ConnectServer) -> None:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the Spark Connect server exited with {server.process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", server.port), timeout=1):
            return
        time.sleep(0.5)
    raise TimeoutError(
        f"the Spark Connect server did not listen on {server.port} in {_STARTUP_TIMEOUT_S:.0f} s"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m wide_assets.jvm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("connect-server", help="run a JVM Spark Connect server with Delta")
    serve.add_argument("--port", type=int, default=15002)
    serve.add_argument(
        "--master", default="local[2]", help="local[N], local-cluster[N,cores,MiB], spark://..."
    )
    serve.add_argument("--log", type=Path, default=Path("spark-connect-server.log"))
    args = parser.parse_args(argv)
    # SIGTERM (a service manager's stop) leaves through the context manager, which stops the JVM.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with connect_server(args.log, args.port, args.master) as server:
        print(f"Spark Connect server (JVM, Delta) listening; its log: {server.log}", flush=True)
        print(f"export WIDE_ASSETS_ENGINE=connect WIDE_ASSETS_SPARK_REMOTE={server.remote}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()


if __name__ == "__main__":
    main()
