"""The README's "Add wide tables to your Dagster project", run as written in a fresh `dg` project.

The section's bash block runs verbatim in a temporary directory, except that `pip install` is a
shell function here: an editable install puts the package's directory on PYTHONPATH (what `pip
install -e` makes importable), and a named package must already be in this environment. A fresh
install of PySpark, Sail and Dagster would take minutes; everything else (`create-dagster project`,
`dg scaffold defs`, `dg check defs`, `dg launch`) is the user's own command.

Oracle: the scaffold's sample files, merged by hand (`SAMPLE_ROWS`), read back from the Delta table
the README names with delta-rs; and the run's own record of both blocking checks passing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
SECTION = "## Add wide tables to your Dagster project"

# `pip install -e DIR` makes DIR's package importable (DIR/src for a src layout); `pip install NAME`
# needs NAME installed already. Exported so that every later command sees it.
PIP = """\
pip() {
  [ "$1" = install ] || { echo "pip $*: only 'pip install' is run here" >&2; return 1; }
  shift
  while [ $# -gt 0 ]; do
    if [ "$1" = -e ]; then
      dir=$(cd "$2" && pwd); [ -d "$dir/src" ] && dir="$dir/src"
      export PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}"; shift 2
    else
      python -m pip show -q "$1" >/dev/null || { echo "$1 is not installed" >&2; return 1; }; shift
    fi
  done
}
"""


def readme_commands() -> str:
    """The first bash block of the README's section, with the repository's path filled in."""
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index(SECTION) :]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, f"no bash block under {SECTION!r}"
    return block.group(1).replace("/path/to/wide_assets", str(ROOT))


def ts(text: str) -> datetime:
    """A Spark `timestamp` as delta-rs reads it: an instant, in UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# By hand from the scaffold's sample files (`wide_assets/component/scaffold.py`): c1's newer profile
# and balance win; c2's loyalty delete clears only its points (`clear-columns`) and keeps the delete's
# time, as its sequence group moves forward.
SAMPLE_ROWS = {
    ("c1", "Ada Lovelace", ts("2025-01-05 10:00:00"), 25, ts("2025-01-05 11:00:00")),
    ("c2", "Grace", ts("2025-01-05 09:01:00"), None, ts("2025-01-05 12:00:00")),
}


@pytest.mark.slow
def test_the_readme_adds_a_wide_table_to_a_fresh_dg_project_and_launches_it(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "WIDE_ASSETS_"))},
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(VENV_BIN.parent),
        "PYTHONPATH": "",
    }
    script = f"set -euo pipefail\n{PIP}\n{readme_commands()}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert "wide_assets.WideTableComponent" in done.stdout
    assert "All definitions loaded successfully." in output
    for check in ("primary_key_unique_not_null", "converges_to_source_join"):
        assert f"Asset check '{check}' on 'customers/customers' passed" in output, output[-5000:]
    project = tmp_path / "my_project"
    assert (project / "src" / "my_project" / "defs" / "customers" / "defs.yaml").is_file()
    # delta-rs's DataFusion reader: the table has deletion vectors, which its Arrow reader refuses.
    path = str(project / "lake" / "customers" / "customers")
    table = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all())
    assert {tuple(row.values()) for row in table.to_pylist()} == SAMPLE_ROWS
