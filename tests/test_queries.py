"""`wide_assets.queries.select`: the rows of `spark.sql`, with no request to a Spark Connect server
until the frame runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wide_assets.queries import select
from wide_assets.session import is_connect

QUERY = "SELECT a.id, a.id * 10 + b.id AS n FROM {a} a JOIN {b} b ON a.id = b.id % 3 WHERE '{{x}}' = '{{x}}'"


def _rows(frame: Any) -> list[tuple[int, int]]:
    return sorted((row.id, row.n) for row in frame.collect())


def test_a_select_holds_the_rows_of_spark_sql(any_spark: Any) -> None:
    a, b = any_spark.range(4), any_spark.range(7)
    expected = _rows(any_spark.sql(QUERY, a=a, b=b))
    assert expected == [(0, 0), (0, 3), (0, 6), (1, 11), (1, 14), (2, 22), (2, 25)]
    assert _rows(select(any_spark, QUERY, a=a, b=b)) == expected
    # Built on by another select, as the write builds its merge on its batch.
    nested = select(any_spark, "SELECT id, n + 1 AS n FROM {q}", q=select(any_spark, QUERY, a=a, b=b))
    assert _rows(nested) == [(i, n + 1) for i, n in expected]
    # Without frames the text is no format template, as for `spark.sql`.
    assert select(any_spark, "SELECT '{x}' AS x").collect()[0].x == "{x}"


def test_a_select_asks_the_server_nothing_until_it_runs(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_connect(spark)
    requests: list[str] = []
    client = spark.client

    def counted(name: str) -> Callable[..., Any]:
        sent = getattr(client, name)

        def send(*args: Any, **kwargs: Any) -> Any:
            requests.append(name)
            return sent(*args, **kwargs)

        return send

    for name in ("execute_command", "_execute_and_fetch", "_analyze"):
        monkeypatch.setattr(client, name, counted(name))
    a, b = spark.range(4), spark.range(7)
    broken = select(spark, "SELECT no_such_column FROM {a}", a=a)
    frame = select(spark, "SELECT id, n FROM {q}", q=select(spark, QUERY, a=a, b=b))
    assert requests == []
    assert len(_rows(frame)) == 7
    assert requests == ["_execute_and_fetch"]
    # So a query's mistake is reported where it runs.
    with pytest.raises(Exception, match="no_such_column"):
        broken.collect()
