"""Errors users see; each names the problem in the words of Paimon/Fluss where they have one."""


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
