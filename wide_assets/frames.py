"""Rows handed to the public API (a Spark DataFrame, a pandas DataFrame or a pyarrow Table) as a Spark
DataFrame, and the Arrow schema of table columns as Spark types them.

pandas and Arrow rows go to Spark as one Arrow table: pyspark 4.0's own pandas path
(`createDataFrame(pandas_df)`) fails on pandas 3 frames whose columns are chunked Arrow arrays
(`pd.concat`, multi-row-group `read_parquet`, `read_csv(engine="pyarrow")`), and the Arrow path takes
any number of chunks. A column that names a table column takes that column's type where Arrow converts
every value exactly (pandas 3's `str`, nullable `Int64`, integral floats from a column with NaN,
dictionaries); otherwise it keeps its own type (unsigned integers widened to one Spark has) and the
write's validation names the values that do not fit, as it does for a Spark DataFrame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from pyspark.sql import DataFrame

from wide_assets.errors import InvalidInputError, first_line
from wide_assets.schema import Column

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from wide_assets.session import SparkSession

    Rows: TypeAlias = DataFrame | pandas.DataFrame | pyarrow.Table

__all__ = ["arrow_schema", "spark_frame"]

ACCEPTED = "a Spark DataFrame, a pandas DataFrame or a pyarrow Table (or RecordBatch)"


def arrow_schema(spark: SparkSession, columns: Sequence[Column]) -> Any:
    """The Arrow schema of `columns` as Spark types them."""
    from pyspark.sql.pandas.types import to_arrow_schema

    ddl = ", ".join(c.ddl for c in columns)
    return to_arrow_schema(spark.createDataFrame([], ddl).schema)


def spark_frame(
    spark: SparkSession,
    rows: Rows,
    columns: Sequence[Column],
    what: str,
    stage: Callable[[Any], str] | None = None,
) -> DataFrame:
    """`rows` as a Spark DataFrame on `spark`; pandas and Arrow columns named like one of `columns` take
    its type where that is exact (see the module doc). `what` names the rows in errors. With `stage`
    (which writes an Arrow table as Parquet and returns where), the engine reads the staged file;
    without, the rows are inlined into the plan (Sail copies them into every plan that uses them).
    A Spark DataFrame is taken as it is, but for one whose plan inlines at least STAGED_INLINED_BYTES
    of local rows: with `stage`, those are staged too (the rows of `createDataFrame` as they are, any
    other such frame's as the engine computes them once)."""
    if isinstance(rows, DataFrame):
        if stage is None or inlined_bytes(rows) < STAGED_INLINED_BYTES:
            return rows
        local = local_rows(rows)
        staged = rows.toArrow() if local is None else local
        return spark.read.schema(to_spark_schema(staged.schema)).parquet(stage(staged))
    table = _arrow_table(rows, what)
    wanted = {
        f.name: f.type for f in arrow_schema(spark, [c for c in columns if c.name in table.column_names])
    }
    converted = [_converted(table[name], wanted.get(name)) for name in table.column_names]
    import pyarrow as pa

    # Built anew, without the pandas metadata (index, dtypes) that describes the columns as they were.
    table = pa.table(converted, names=table.column_names)
    try:
        if stage is None:
            return spark.createDataFrame(table)
        schema = to_spark_schema(table.schema)
    except Exception as error:  # a type Spark has no counterpart for, e.g. uint64
        raise InvalidInputError(f"The {what} cannot be converted to Spark: {first_line(error)}") from error
    # Outside the try: a store failing to take the staged file is not a problem of the rows.
    return spark.read.schema(schema).parquet(stage(table))


# A Spark Connect frame built from local rows carries them in its plan, and Sail 0.7.2 receives them
# anew with every query a write runs over its changes (validation, the merge, its checks): a first
# load of 500,000 such rows took 20.2 s, 3.1 s staged; at 1M rows the plan outgrows gRPC's 128 MB
# (bench.initial_load, docs/performance.md). Below this size the copies cost less than a staged file.
STAGED_INLINED_BYTES = 1 << 20


def inlined_bytes(frame: DataFrame) -> int:
    """The size of the local rows a Spark Connect frame's plan carries (0 for a classic frame, or rows
    the client uploaded once as a cached relation)."""
    from pyspark.sql.connect.plan import LocalRelation, LogicalPlan

    def size(node: Any) -> int:
        if isinstance(node, LocalRelation):
            return node._table.nbytes if node._table is not None else 0
        children = [
            child
            for value in vars(node).values()
            for child in (value if isinstance(value, list | tuple) else [value])
            if isinstance(child, LogicalPlan)
        ]
        return sum(size(child) for child in children)

    plan = getattr(frame, "_plan", None)
    return size(plan) if isinstance(plan, LogicalPlan) else 0


def local_rows(frame: DataFrame) -> Any | None:
    """The rows of a frame that is exactly `createDataFrame` of local rows, as an Arrow table with the
    names and types the engine gives them (its schema's, cast as Arrow casts safely); None for any
    other frame, or rows Arrow cannot cast so."""
    import json

    import pyarrow as pa
    from pyspark.sql.connect.plan import LocalRelation, ToDF
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    plan = getattr(frame, "_plan", None)
    names = None
    if isinstance(plan, ToDF):
        names, plan = list(plan._cols), plan._child
    if not isinstance(plan, LocalRelation) or plan._table is None:
        return None
    table = plan._table
    try:
        if plan._schema is not None:
            declared = StructType.fromJson(json.loads(plan._schema))
            types = pa.schema([f.with_nullable(True) for f in to_arrow_schema(declared)])
            table = table.rename_columns(declared.names).cast(types)
        return table if names is None else table.rename_columns(names)
    except (ValueError, TypeError, pa.ArrowException):  # not a JSON schema, or not castable: compute it
        return None


def to_spark_schema(schema: Any) -> Any:
    """The Spark schema of an Arrow schema (what `createDataFrame` would infer from it)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _arrow_table(rows: Any, what: str) -> Any:
    import pyarrow as pa

    if isinstance(rows, pa.Table):
        return rows
    if isinstance(rows, pa.RecordBatch):
        return pa.Table.from_batches([rows])
    import pandas as pd

    if not isinstance(rows, pd.DataFrame):
        raise InvalidInputError(
            f"The {what} must be {ACCEPTED}, not {type(rows).__module__}.{type(rows).__name__}."
        )
    if not rows.columns.is_unique:
        duplicated = sorted({str(c) for c in rows.columns[rows.columns.duplicated()]})
        raise InvalidInputError(f"The {what} have duplicate column names {duplicated}.")
    # A named index holds columns (e.g. after set_index("k")); an unnamed one is only row positions.
    keep_index = any(name is not None for name in rows.index.names)
    try:
        return pa.Table.from_pandas(rows, preserve_index=keep_index)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        raise InvalidInputError(f"The {what} cannot be converted to Arrow: {first_line(error)}") from error


def _converted(column: Any, wanted: Any) -> Any:
    """`column` as type `wanted` when Arrow converts every value exactly; else as it is, in a type Spark
    has (unsigned integers widened to signed ones, or to DECIMAL(20, 0))."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if wanted is not None and column.type != wanted:
        try:
            return column.cast(wanted)  # safe: fails on overflow, truncation or an unparsable value
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass
    if pa.types.is_unsigned_integer(column.type):
        signed = {8: pa.int16(), 16: pa.int32(), 32: pa.int64(), 64: pa.decimal128(20, 0)}
        return column.cast(signed[column.type.bit_width])
    return column
