"""The code blocks of README.md and docs/: every Python block runs as written, on the embedded Sail
engine, and every other code block says in a comment beside it why it does not run here.

Sybil parses the Markdown; a page's Python blocks run in order in one namespace (as a reader types
them one after the other), in a fresh Python process whose working directory is a new empty folder:
relative paths such as `lake/...` land there, as for a reader, and never in this repository's lake.
(The engine resolves relative paths against the directory it started in, so one process cannot run
two pages in two folders.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships its types as a separate package
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# A fence that opens a code block, and its language: none (or `text`) is a picture or a program's
# output, not code; `python` runs; any other needs `<!-- not run: <reason> -->` on the line before.
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!-- not run: \S.* -->\s*$")
OUTPUT = frozenset({"", "text"})

SYBIL = Sybil(parsers=[PythonCodeBlockParser(), SkipParser()])


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def fences(text: str) -> list[tuple[int, str]]:
    """(line number, language) of each opening fence."""
    opened: list[tuple[int, str]] = []
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if match is None:
            continue
        if not inside:
            opened.append((number, match.group("lang")))
        inside = not inside
    return opened


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_code_block_that_does_not_run_says_why(page: Path) -> None:
    lines = page.read_text("utf-8").splitlines()
    unmarked = [
        f"{page_id(page)}:{number} ({lang})"
        for number, lang in fences("\n".join(lines))
        if lang not in OUTPUT | {"python"} and (number < 2 or not NOT_RUN.match(lines[number - 2]))
    ]
    assert not unmarked, f"code blocks neither run nor marked `<!-- not run: why -->`: {unmarked}"


PYTHON_PAGES = [page for page in PAGES if any(lang == "python" for _, lang in fences(page.read_text()))]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=page_id)
def test_the_python_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, __file__, str(page)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{page_id(page)}: {done.stdout}{done.stderr[-4000:]}"


def run_page(page: Path) -> None:
    """Every Python block of `page`, in order, in this process; the first that fails raises, naming its line."""
    examples = list(SYBIL.parse(page))
    assert examples, f"{page_id(page)} has Python blocks, but Sybil found none"
    for example in examples:
        try:
            example.evaluate()
        except Exception as error:
            raise AssertionError(f"{page_id(page)}:{example.line}: the block fails: {error!r}") from error


def test_the_pages_with_python_blocks_are_found() -> None:
    # The parametrization above would pass vacuously if the fences were not recognized.
    assert {page_id(page) for page in PYTHON_PAGES} >= {
        "README.md",
        "docs/declaring/python.md",
        "docs/declaring/ddl.md",
    }


def subset_mismatches(part: Any, whole: Any, where: str) -> list[str]:
    """Where `part` says something `whole` does not: a key it lacks, another value, a list item
    (sources by name) it lacks."""
    if isinstance(part, dict) and isinstance(whole, dict):
        return [
            problem
            for key, value in part.items()
            for problem in (
                subset_mismatches(value, whole[key], f"{where}.{key}")
                if key in whole
                else [f"{where}.{key}: not in the file"]
            )
        ]
    if isinstance(part, list) and isinstance(whole, list) and all(isinstance(p, dict) for p in part):
        by_name = {item.get("name"): item for item in whole if isinstance(item, dict)}
        return [
            problem
            for item in part
            for problem in (
                subset_mismatches(item, by_name[item["name"]], f"{where}[{item['name']}]")
                if item.get("name") in by_name
                else [f"{where}: no item named {item.get('name')!r} in the file"]
            )
        ]
    return [] if part == whole else [f"{where}: {part!r} here, {whole!r} in the file"]


def test_the_readmes_first_table_is_part_of_the_declared_demo_table() -> None:
    # The README shows user_rec_wide's defs.yaml shortened; `dg check defs` loads the file itself,
    # so every line the README keeps must say what the file says.
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme[readme.index("## The first table, in YAML") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    shown = yaml.safe_load(block.group(1))
    declared = yaml.safe_load((ROOT / "wide_assets_defs/user_rec_wide/defs.yaml").read_text("utf-8"))
    assert subset_mismatches(shown, declared, "defs.yaml") == []


if __name__ == "__main__":
    run_page(Path(sys.argv[1]))
