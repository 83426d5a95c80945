"""A wide table kept in memory: the engine's merge logic (validation, fold, changelog, apply) on
DataFrames, without Delta, so it runs on classic JVM Spark as well as on Sail."""

from __future__ import annotations

from typing import Any

from wide_assets.batch import merge_batch, prepare_batch
from wide_assets.changelog import apply_images, final_images
from wide_assets.errors import merge_error
from wide_assets.schema import Column
from wide_assets.table_definition import TableDefinition


class MemoryTable:
    def __init__(
        self, spark: Any, columns: list[Any], primary_key: list[str], options: dict[str, str]
    ) -> None:
        self.spark = spark
        self.definition = TableDefinition.build(columns, primary_key, options)
        self.ddl = ", ".join(f"`{c.name}` {c.type}" for c in self.definition.columns)
        self.stored = spark.createDataFrame([], self.ddl)
        self.entries: list[dict[str, Any]] = []
        self.commits = 0

    def write(self, changes: Any, target_columns: list[str] | None = None) -> list[Any]:
        batch = prepare_batch(self.spark, self.definition, changes, target_columns)
        try:
            merged = merge_batch(self.spark, batch, self.stored).collect()
        except Exception as error:
            raise (merge_error(error) or error) from error
        self.commits += 1
        self.entries += [{**row.asDict(), "_commit": self.commits} for row in merged]
        frame = self.spark.createDataFrame(merged, f"_row_kind string, {self.ddl}, _offset bigint")
        applied = apply_images(
            self.spark, self.definition, self.stored, final_images(self.spark, self.definition, frame)
        )
        # Materialize: each write starts from plain rows, not from a growing query plan.
        self.stored = self.spark.createDataFrame(applied.collect(), self.ddl)
        return merged

    def read(self) -> Any:
        return self.stored


__all__ = ["Column", "MemoryTable"]
