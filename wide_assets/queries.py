"""A SELECT over DataFrames as a DataFrame, built without asking a Spark Connect server to check it first.

pyspark's Connect `spark.sql(text, frame=...)` sends the query to the server as a command and waits
while the server parses and analyzes it, then returns the same relation unexecuted: on Sail 0.7.2 that
round trip took 20 ms for a merge query over a 10,000-record batch, and the write's next queries, built
on top of it, each paid it again for the whole plan (`bench.write_phases`, docs/performance.md). A
query the library only builds on and runs later needs none of it: its errors surface when it runs.
The plan is built by pyspark's own Connect classes (the formatter and relations `spark.sql` itself
uses; pyspark is pinned at 4.0.1), so the server receives what `spark.sql` would have sent it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from wide_assets.session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

    from wide_assets.session import SparkSession

__all__ = ["select"]


def select(spark: SparkSession, text: str, **frames: DataFrame) -> DataFrame:
    """`spark.sql(text, **frames)` for a query (never a command: nothing runs here), with the frames it
    names as `{name}`. On Spark Connect the plan is built on the client alone; classic Spark analyzes it
    in the driver's own process, as `spark.sql` does."""
    if not is_connect(spark):
        return spark.sql(text, None, **frames)
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import SQL, SubqueryAlias
    from pyspark.sql.connect.sql_formatter import SQLStringFormatter

    connect = cast("ConnectSparkSession", spark)
    if not frames:  # as `spark.sql`: a text without frames is no format template
        return ConnectDataFrame(SQL(text, [], {}, []), connect)
    formatter = SQLStringFormatter(connect)
    query = formatter.format(text, **frames)
    views = [SubqueryAlias(frame._plan, name) for frame, name in formatter._temp_views]
    return ConnectDataFrame(SQL(query, [], {}, views), connect)
