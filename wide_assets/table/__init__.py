"""A wide table on Delta Lake: the `WideTable` facade and the records its calls return."""

from wide_assets.errors import WideTableError
from wide_assets.table.health import TableHealth
from wide_assets.table.log import CommitInfo, CompactionInfo, Txn
from wide_assets.table.protocol import WriteResult
from wide_assets.table.publish import PublishResult
from wide_assets.table.wide_table import WideTable

__all__ = [
    "CommitInfo",
    "CompactionInfo",
    "PublishResult",
    "TableHealth",
    "Txn",
    "WideTable",
    "WideTableError",
    "WriteResult",
]
