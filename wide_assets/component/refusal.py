"""A refused declaration as one block: the defs.yaml, the line and field, what is wrong and the fix.

`wide_table_spec` raises `DeclarationProblem` with the path of the field at fault inside `attributes`;
the component turns it into a `DeclarationError` located in the YAML when it loads. So does a value
the YAML's schema refuses (a value not among a field's choices, a required field left out):
Dagster validates the YAML before the component loads and would report it as a traceback, so the
component's model keeps such errors aside (`invalid_yaml`) and the load refuses the first one. Under `dg check
defs` and `dagster definitions validate` (which set `DAGSTER_IS_DEFS_VALIDATION_CLI`, Dagster's
switch for code that behaves differently in validation mode) the block is the whole report: it is
printed on stderr and the command exits with status 1, instead of Dagster's traceback of the load.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from wide_assets.errors import did_you_mean

if TYPE_CHECKING:
    from dagster_shared.yaml_utils.source_position import SourcePositionTree

__all__ = ["VALIDATION_MODE", "DeclarationError", "DeclarationProblem", "invalid_yaml", "refuse"]

VALIDATION_MODE = "DAGSTER_IS_DEFS_VALIDATION_CLI"
KeyPath = Sequence[str | int]


class DeclarationProblem(ValueError):
    """What is wrong with a declaration, and where inside its `attributes` (e.g. `("sources", 0, "feeds")`)."""

    def __init__(self, problem: str, key_path: KeyPath) -> None:
        super().__init__(problem)
        self.problem = problem
        self.key_path = tuple(key_path)


class DeclarationError(ValueError):
    """A declaration refused at load, located in its defs.yaml."""

    def __init__(self, file: str, line: int, field: str, problem: str) -> None:
        self.file, self.line, self.field, self.problem = file, line, field, problem
        super().__init__(f"{file}:{line}: {field}\n  {problem}")


def _field(key_path: KeyPath) -> str:
    text = "attributes"
    for part in key_path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def refuse(problem: DeclarationProblem, tree: SourcePositionTree | None, folder: Path) -> NoReturn:
    """Raise `problem` as a `DeclarationError` at the closest line of the YAML that holds its field
    (or report it and exit in validation mode)."""
    file, line = str(folder / "defs.yaml"), 1
    if tree is not None:
        position, _ = tree.lookup_closest_and_path(["attributes", *problem.key_path], None)
        file, line = position.filename, position.start.line
    error = DeclarationError(file, line, _field(problem.key_path), problem.problem)
    if os.environ.get(VALIDATION_MODE):
        print(str(error), file=sys.stderr)
        raise SystemExit(1)
    raise error from None


def invalid_yaml(error: Mapping[str, Any], field_help: str | None) -> DeclarationProblem:
    """A pydantic error of the YAML's validation as a `DeclarationProblem` at its field: a value not
    among the field's choices names them (and the closest), a missing field what it is for
    (`field_help`, its description)."""
    where = tuple(part for part in error["loc"] if isinstance(part, str | int))
    name = str(where[-1]) if where else "attributes"
    value = error.get("input")
    expected = (error.get("ctx") or {}).get("expected")
    if error["type"] == "missing":
        return DeclarationProblem(f"`{name}` is required here: {field_help or 'see its description'}", where)
    if expected is not None:
        choices = [choice.strip(" '") for choice in str(expected).replace(" or ", ", ").split(",")]
        closest = did_you_mean(str(value), choices)
        return DeclarationProblem(
            f"`{name}` is {value!r}, which is not one of {', '.join(choices)}{closest}.", where
        )
    return DeclarationProblem(f"`{name}` is {value!r}: {error['msg']}.", where)
