"""A wide table's columns and primary key, and the per-column pieces options refer to (no dependencies)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

NOT_NULL = re.compile(r"\s+not\s+null\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    """One column of a wide table: a Spark SQL type name and whether it may hold NULL."""

    name: str
    type: str
    nullable: bool = True

    @classmethod
    def parse(cls, name: str, type_text: str) -> Column:
        """`("a", "int not null")` -> Column("a", "int", nullable=False)."""
        nullable = not NOT_NULL.search(type_text)
        return cls(name, NOT_NULL.sub("", type_text).strip().lower(), nullable)

    @property
    def base_type(self) -> str:
        """The type name without parameters: `decimal(10,2)` -> `decimal`."""
        return self.type.split("(", 1)[0].split("<", 1)[0].strip()

    @property
    def ddl(self) -> str:
        return f"`{self.name}` {self.type}" + ("" if self.nullable else " NOT NULL")


@dataclass(frozen=True)
class Schema:
    """The columns and the primary key of a table."""

    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @cached_property
    def value_columns(self) -> tuple[str, ...]:
        """Every column outside the primary key: the ones a merge changes."""
        return tuple(c for c in self.column_names if c not in self.primary_key)

    def column(self, name: str) -> Column:
        return self.columns[self.column_names.index(name)]


@dataclass(frozen=True)
class SequenceGroup:
    """Paimon `fields.<seq>[,<seq2>].sequence-group = <protected columns>`."""

    sequence_fields: tuple[str, ...]
    protected: tuple[str, ...]

    @property
    def option_key(self) -> str:
        return f"fields.{','.join(self.sequence_fields)}.sequence-group"


@dataclass(frozen=True)
class FieldFunction:
    """The aggregate function of one column, with that column's function options."""

    column: str
    name: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    # Paimon `nested_update`: the element fields keying, and ordering, the nested rows; the most rows.
    nested_key: tuple[str, ...] = ()
    nested_sequence: tuple[str, ...] = ()
    count_limit: int = 2**31 - 1
    # What a nested key with a NULL field does (Paimon's `fields.<f>.nested-key-null-strategy`): "merge"
    # (a key like any other, also when None: not configured), "ignore" (the row is dropped) or "error".
    nested_key_nulls: str | None = None
    # Paimon `merge_map_with_keytime`: the field of the map's ROW values holding the key's time.
    ts_field: str | None = None
