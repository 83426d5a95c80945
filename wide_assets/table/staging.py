"""Rows handed to a write as Arrow or pandas, staged as one Parquet file under the table so that the
engine reads them once (Sail inlines `createDataFrame` rows into every plan that uses them, and a
MERGE reads its source several times), and deleted when the write is done.

The folder starts with `_`, so Delta readers and delta-rs's vacuum never look at it; a staged file
left by a killed process, or one the store failed to delete, is never read again, and the table's
`vacuum` deletes it after the retention.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from wide_assets.table.objects import TableFiles

STAGING_DIR = "_staging"
logger = logging.getLogger(__name__)


@contextlib.contextmanager
def staging_area(table_path: str) -> Iterator[Callable[[Any], str]]:
    """A function that stages an Arrow table and returns its URI, valid until the block ends."""
    files = TableFiles(table_path)
    staged: list[str] = []

    def stage(rows: Any) -> str:
        path = f"{STAGING_DIR}/{uuid.uuid4().hex}.parquet"
        files.write_parquet(path, rows, read_once=True)
        staged.append(path)
        return files.uri(path)

    try:
        yield stage
    finally:
        for path in staged:
            # Never raises: the block may end after the write's commit landed, and an error then would
            # make a caller's retry apply the write twice. What is left, `vacuum` deletes.
            try:
                files.delete(path)
            except Exception as error:
                logger.warning(
                    "%s: staged input %s not deleted (vacuum deletes it): %s", table_path, path, error
                )
