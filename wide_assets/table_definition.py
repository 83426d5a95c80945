"""A wide table's declarative definition: its schema plus Paimon/Fluss options, parsed and validated.

Parsing and validation are pure Python, so a bad definition fails at `create` before any I/O, with
the messages Paimon and Fluss users already search for. Each dialect validates its own options
(`wide_assets.options.paimon`, `wide_assets.options.fluss`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_list
from wide_assets.options.common import (
    Dialect,
    MergeOptions,
    check_columns,
    check_option_names,
    dialect_of,
    name_list,
    option_text,
    parse_bool,
    unparsable,
)
from wide_assets.options.fluss import parse_fluss
from wide_assets.options.paimon import parse_paimon
from wide_assets.options.tombstones import check_tombstones, retention_seconds
from wide_assets.schema import Column, Schema
from wide_assets.sql import columns as column_list

BUCKET_COLUMN = "_bucket"


@dataclass(frozen=True)
class TableDefinition(Schema):
    """Columns, primary key and options of a wide table; `merge` holds the parsed semantics."""

    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        columns: Iterable[tuple[str, str] | Sequence[str] | Column],
        primary_key: Iterable[str],
        options: Mapping[str, object] | None = None,
    ) -> TableDefinition:
        parsed = tuple(c if isinstance(c, Column) else Column.parse(c[0], c[1]) for c in columns)
        opts = {str(k): option_text(v) for k, v in (options or {}).items()}
        spec = cls(parsed, tuple(primary_key), opts)
        spec.merge  # noqa: B018 - parse and validate eagerly so errors surface at create
        spec.bucketing  # noqa: B018
        spec.deletion_vectors  # noqa: B018
        return spec

    @cached_property
    def dialect(self) -> Dialect:
        """Fluss when any option is a `table.*` option, else Paimon; mixing them is refused."""
        return dialect_of(self.options)

    @cached_property
    def ignored_options(self) -> tuple[str, ...]:
        """The options that mean something only to Paimon's or Fluss's own storage, files, readers or
        jobs (`bucket.num` is used, `table.datalake.enabled`, `changelog.num-retained.max`, `file.format`,
        ...): accepted, with no effect on this table. A name that is neither used nor such an option is
        refused here, naming the closest valid name."""
        check_columns(self, self.dialect)
        return check_option_names(self, self.options, self.dialect)

    @cached_property
    def merge(self) -> MergeOptions:
        self.ignored_options  # noqa: B018 - refuse unknown option names before reading their values
        parse = parse_fluss if self.dialect == "fluss" else parse_paimon
        merge = replace(parse(self, self.options), tombstone_retention_s=retention_seconds(self.options))
        check_tombstones(self, merge)
        return merge

    @cached_property
    def bucketing(self) -> Bucketing | None:
        """Fixed buckets (Paimon `bucket`/`bucket-key`, Fluss `bucket.num`/`bucket.key`), or None."""
        return Bucketing.parse(self)

    @cached_property
    def deletion_vectors(self) -> bool:
        """Whether a write marks the rows it replaces as deleted (Delta deletion vectors, the default
        here) instead of rewriting their files (`deletion-vectors.enabled: false`, for readers that
        cannot read deletion vectors). Fixed when the table is created."""
        return parse_bool(self.options, "deletion-vectors.enabled", default=True)

    def to_json(self) -> str:
        return json.dumps(
            {
                "columns": [[c.name, c.type if c.nullable else f"{c.type} not null"] for c in self.columns],
                "primary_key": list(self.primary_key),
                "options": dict(self.options),
            },
            sort_keys=True,
        )

    def additions_over(self, stored: TableDefinition) -> tuple[tuple[Column, ...], dict[str, str]]:
        """The columns and options this definition adds to `stored`, when adding is all it does: the same
        primary key, the stored columns first and unchanged, then new ones; the stored options unchanged,
        and new ones only about the new columns (`fields.<new column>.<option>`), as a new source
        brings. Raises InvalidOptionError naming every other difference."""
        kept = self.columns[: len(stored.columns)]
        added = self.columns[len(stored.columns) :]
        problems = []
        if self.primary_key != stored.primary_key:
            problems.append(f"primary key {list(stored.primary_key)} -> {list(self.primary_key)}")
        if kept != stored.columns:
            declared = {c.name: c for c in self.columns}
            for column in stored.columns:
                now = declared.get(column.name)
                if now is None:
                    problems.append(f"column {column.name!r} removed")
                elif now != column:
                    problems.append(f"column {column.name!r}: {_typed(column)} -> {_typed(now)}")
            if not problems:
                inserted = [c.name for c in kept if c.name not in stored.column_names]
                problems.append(
                    f"new columns {inserted} stand before stored ones (they are added after them)"
                    if inserted
                    else f"columns reordered: {list(stored.column_names)} -> {list(self.column_names)}"
                )
        new_names = {c.name for c in added}
        for key in sorted(set(stored.options) | set(self.options)):
            before, after = stored.options.get(key), self.options.get(key)
            if before == after:
                continue
            if before is not None:
                problems.append(f"option {key!r}: {before!r} -> {after!r}")
            elif not _about(key, new_names):
                problems.append(f"option {key!r} added, which is not about a new column")
        if problems:
            raise InvalidOptionError(
                "The declared definition changes more than it adds: " + "; ".join(problems) + ". Only new "
                "nullable columns after the stored ones, with `fields.<column>.*` options of their own, are "
                "added to an existing table."
            )
        return added, {key: self.options[key] for key in self.options if key not in stored.options}

    @classmethod
    def from_json(cls, text: str) -> TableDefinition:
        data = json.loads(text)
        return cls.build(data["columns"], data["primary_key"], data["options"])


def _typed(column: Column) -> str:
    return column.type if column.nullable else f"{column.type} not null"


def _about(option: str, columns: set[str]) -> bool:
    """Whether `option` is a `fields.<names>.<option>` option whose names are all among `columns`."""
    named = re.fullmatch(r"fields\.(.+)\.[^.]+", option)
    return named is not None and set(named.group(1).split(",")) <= columns


@dataclass(frozen=True)
class Bucketing:
    """Rows placed in `count` buckets by hash(bucket key) mod count; each bucket is a Delta partition, so
    a MERGE rewrites and a lookup reads only the buckets its keys hash to."""

    count: int
    key: tuple[str, ...]

    @classmethod
    def parse(cls, spec: TableDefinition) -> Bucketing | None:
        option = "bucket.num" if "bucket.num" in spec.options else "bucket"
        text = spec.options.get(option)
        if text is None:
            return None
        try:
            count = int(text)
        except ValueError:
            raise unparsable(text, option) from None
        if count == -1 and option == "bucket":
            if "bucket-key" in spec.options:  # SchemaValidation.validateBucket
                raise InvalidOptionError(
                    "Cannot define 'bucket-key' with bucket = -1, please remove the 'bucket-key' setting "
                    "or specify a bucket number."
                )
            return None  # Paimon's dynamic bucket mode: no fixed placement
        if count < 1:
            if option == "bucket":
                raise InvalidOptionError("The number of buckets needs to be greater than 0.")
            # Fluss has no check of its own here.
            raise InvalidOptionError(f"Option '{option}' must be a positive number of buckets, got {count}.")
        key_option = "bucket.key" if "bucket.key" in spec.options else "bucket-key"
        key = name_list(spec.options.get(key_option, "")) or spec.primary_key
        if any(k not in spec.primary_key for k in key):
            raise InvalidOptionError(_bucket_key_error(spec, key_option, key))
        return cls(count, key)

    def expression(self) -> str:
        """The bucket of a row as SQL; xxhash64 gives the same values on Sail and JVM Spark."""
        return f"CAST(pmod(xxhash64({column_list(self.key)}), {self.count}) AS INT)"


def _bucket_key_error(spec: TableDefinition, key_option: str, key: tuple[str, ...]) -> str:
    """Why a bucket key outside the primary key is refused, in Paimon's (`bucket-key`, split on `,`
    untrimmed) or Fluss's (`bucket.key`, trimmed) words: first any name that is not a column."""
    if key_option == "bucket.key":
        written = [name.strip() for name in spec.options[key_option].split(",")]
        unknown = [name for name in key if name not in spec.column_names]
        if unknown:
            return f"Bucket key '{unknown[0]}' does not exist in the schema."
        return (
            "Bucket keys must be a subset of primary keys excluding partition keys for primary-key tables. "
            f"The primary keys are {java_list(spec.primary_key)}, the partition keys are [], but the "
            f"user-defined bucket keys are {java_list(written)}."
        )
    written = spec.options[key_option].split(",")
    if any(name not in spec.column_names for name in key):
        return f"Field names {java_list(spec.column_names)} should contains all bucket keys {java_list(written)}."
    return f"Primary keys {java_list(spec.primary_key)} should contains all bucket keys {java_list(written)}."
