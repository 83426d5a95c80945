"""Errors users see, and the translation of a failed query into one; messages use Paimon's/Fluss's words."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator

# Prefix of the message a merge query aborts with (`sql.fail`), so the error can be told apart from
# an engine failure and re-raised as a MergeError carrying only the message.
ERROR_MARKER = "[wide_assets] "
# What JVM Spark appends to a `raise_error` message (`[USER_RAISED_EXCEPTION] <message> SQLSTATE: P0001`)
# and what pyspark may append after it; Sail reports the message alone.
_RAISED_SUFFIX = " SQLSTATE: P0001"
_STACK_TRACE = "\n\nJVM stacktrace:"


class WideTableError(Exception):
    """Base class of every error raised by wide_assets."""


class InvalidOptionError(WideTableError, ValueError):
    """A table definition (columns, primary key, options) is invalid; raised at `create`."""


class InvalidInputError(WideTableError, ValueError):
    """A write's input is invalid (NULL key, unknown row kind, bad column or type); nothing was committed."""


class MergeError(WideTableError):
    """A record could not be merged under the table's semantics (e.g. an unsupported retraction)."""


class TableStateError(WideTableError):
    """The table on disk is missing, not a wide table, or damaged."""


class ConcurrentWriteError(WideTableError):
    """Another writer committed the same input stream first; re-read the input and retry (nothing was
    committed by the failed write)."""


class StoreError(WideTableError):
    """The store failed during a write. `committed` says whether the write's commit landed: False,
    nothing of it is in the table (retrying the call is safe); None, it could not be found out while
    the store was down (look for `write_id` in `WideTable.commits()` before retrying)."""

    def __init__(self, message: str, committed: bool | None, write_id: str) -> None:
        super().__init__(message)
        self.committed = committed
        self.write_id = write_id


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` naming the candidate closest to a misspelled `name`, or "" if none is close."""
    closest = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{closest[0]}'?)" if closest else ""


def first_line(error: BaseException) -> str:
    """The first line of an error's message (engine errors carry long plans after it)."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def merge_error(error: BaseException) -> MergeError | None:
    """The MergeError that a `raise_error` in the merge query carried, if that is what failed."""
    text = str(error)
    start = text.find(ERROR_MARKER)
    if start < 0:
        return None
    message = text[start + len(ERROR_MARKER) :]
    # The message may span lines (Paimon's partial-update refusal does), so keep all of it up to
    # what the engine appended.
    for suffix in (_STACK_TRACE, _RAISED_SUFFIX):
        if suffix in message:
            message = message[: message.index(suffix)]
    return MergeError(message.strip())


@contextlib.contextmanager
def merge_errors() -> Iterator[None]:
    """Raise the MergeError a failed query carried (a `raise_error` in the merge), else the error."""
    try:
        yield
    except Exception as error:
        raise (merge_error(error) or error) from error
