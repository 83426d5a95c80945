"""Which row groups of a data file can hold any of a batch's keys, from the bounds in the file's footer:
in a table whose files are clustered by key (`WideTable.optimize(z_order=[key])`), finding the rows a
commit replaces reads only the row groups where its keys can be, not every file's whole key column."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq


def row_groups_holding(metadata: pq.FileMetaData, keys: pa.Table) -> list[int]:
    """The row groups of a file whose key bounds do not rule out every row of `keys` (the key columns,
    NULL-free, cast to the file's types). A bound is trusted only where it is exact to compare with:
    a floating-point column's bounds leave NaN out, and a column without usable bounds rules nothing
    out."""
    columns = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    indices = {name: columns.get(name) for name in keys.column_names}
    return [
        group
        for group in range(metadata.num_row_groups)
        if all(
            _may_hold(metadata.row_group(group).column(index), keys.column(name))
            for name, index in indices.items()
            if index is not None
        )
    ]


def _may_hold(chunk: Any, values: pa.ChunkedArray) -> bool:
    """Whether some of `values` lies within the bounds of the column chunk `chunk` (True when they
    cannot be compared)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    statistics = chunk.statistics
    if statistics is None or not statistics.has_min_max or pa.types.is_floating(values.type):
        return True
    try:
        low = pa.scalar(statistics.min, type=values.type)
        high = pa.scalar(statistics.max, type=values.type)
        inside = pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high))
        return bool(pc.any(inside).as_py())
    except (pa.ArrowException, TypeError, ValueError):  # a logical type the bound does not convert to
        return True
