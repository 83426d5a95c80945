"""Check the Dagster UI in a real headless Chromium: `python scripts/ui_check.py [--out docs/screenshots]`.

Starts `dg dev` on 127.0.0.1 with a temporary DAGSTER_HOME and lake, launches `product_360_job`
through the webserver's GraphQL API, waits for it, then loads the asset graph, the product_360 asset
page with its checks and the run page in Chromium: saves a screenshot of each and asserts, on the
rendered DOM, that the assets and checks are listed and that the run succeeded. Exits non-zero
otherwise. Needs the Debian `chromium` package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = "product_360_job"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1600,1000",
    "--virtual-time-budget=15000",
)
DAGSTER_YAML = """storage:
  sqlite:
    base_dir:
      env: DAGSTER_HOME
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""
# (screenshot name, path, texts the rendered page must contain)
PAGES = (
    (
        "asset_graph",
        "/locations/wide_assets/asset-groups/product_360/lineage",
        ("product_360", "catalog", "pricing", "lifecycle", "reviews", "questions", "orders_enriched"),
    ),
    (
        "product_360_checks",
        "/assets/product_360/product_360?view=checks",
        ("converges_to_source_join", "primary_key_unique_not_null"),
    ),
)


def chromium() -> str | None:
    """The Chromium binary, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def _launch_and_wait(port: int, timeout: float) -> tuple[str, str]:
    """Launch the job through GraphQL; its run id and final status."""
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    run_id = client.submit_job_execution(JOB)
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        status = client.get_run_status(run_id).value
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(2)
    return run_id, status


def _mark_welcome_seen(port: int) -> None:
    """Dismiss the UI's one-time "Join the Dagster community" dialog, which would cover the pages."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def _browse(browser: str, url: str, screenshot: Path, profile: Path) -> str:
    """Screenshot `url` and return its rendered DOM."""
    flags = (*CHROMIUM_FLAGS, f"--user-data-dir={profile}")
    subprocess.run(
        [browser, *flags, f"--screenshot={screenshot}", url], check=True, capture_output=True, timeout=120
    )
    dom = subprocess.run([browser, *flags, "--dump-dom", url], check=True, capture_output=True, timeout=120)
    return dom.stdout.decode("utf-8", "replace")


def check_ui(out: Path, timeout: float = 600) -> list[str]:
    """Run the whole check; the problems found (empty when the UI shows everything)."""
    browser = chromium()
    if browser is None:
        return ["chromium is not installed (apt-get install -y chromium)"]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ui_check_") as tmp:
        home, lake = Path(tmp, "home"), Path(tmp, "lake")
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML, "utf-8")
        port = _free_port()
        # The project's environment counts as the active one, as `make dev` has it.
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "WIDE_ASSETS_LAKE": str(lake),
            "VIRTUAL_ENV": sys.prefix,
        }
        command = [str(Path(sys.executable).parent / "dg"), "dev", "--host", "127.0.0.1"]
        with Path(tmp, "dg_dev.log").open("wb") as log:
            server = subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                return _check_pages(
                    browser, f"http://127.0.0.1:{port}", port, out, Path(tmp, "profile"), timeout
                )
            finally:
                # Only the process group this script started.
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)


def _check_pages(browser: str, base: str, port: int, out: Path, profile: Path, timeout: float) -> list[str]:
    """Run the job through the server at `base`, then screenshot and inspect its pages."""
    problems = []
    _wait_for(f"{base}/server_info", timeout=120)
    _mark_welcome_seen(port)
    run_id, status = _launch_and_wait(port, timeout)
    print(f"run {run_id}: {status}")
    if status != "SUCCESS":
        problems.append(f"run {run_id} of {JOB} ended {status}")
    for name, path, texts in (*PAGES, ("run", f"/runs/{run_id}", (run_id[:8], "Success"))):
        screenshot = out / f"{name}.png"
        dom = _browse(browser, base + path, screenshot, profile)
        missing = [t for t in texts if t not in dom]
        print(f"{name}: {base + path} -> {screenshot} ({len(dom)} characters of DOM)")
        if missing:
            problems.append(f"{name} ({path}) does not show {missing}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    problems = check_ui(args.out)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
