"""Reads a Flink SQL `CREATE TABLE` statement (Paimon's or Fluss's) into a wide table's columns, primary key
and options.

Covered: `CREATE TABLE [IF NOT EXISTS] [catalog.][db.]name (...) [COMMENT '...'] [PARTITIONED BY (...)]
[WITH ('key' = 'value', ...)]` with `--` and `/* */` comments and an optional trailing `;`; physical
columns with Flink's type names (table `FLINK_TYPES`), `NOT NULL` and `COMMENT`; the primary key as a
table constraint (`[CONSTRAINT name] PRIMARY KEY (a, b) NOT ENFORCED`) or inline on one column
(`a BIGINT PRIMARY KEY NOT ENFORCED`); options verbatim, as quoted strings. Accepted with no effect:
column and table `COMMENT`s, `WATERMARK FOR ... AS ...` (event time drives Flink's operators, not a
table's merge), and `PARTITIONED BY` (columns must be primary-key columns, as Paimon and Fluss require
of a primary-key table; rows are placed by bucket here). Refused with a message naming the column or
the position: computed and metadata columns (not stored), types Spark has no equal of (`TIME`,
`MULTISET`, `TIMESTAMP(p)` above microseconds, ...), `NOT NULL` inside `ARRAY`/`MAP`/`ROW`, and any
other clause (`LIKE`, `AS SELECT`, Hive's `STORED AS`, ...).

Types become the Spark SQL type strings the rest of the code uses, with Flink's meaning: `TIMESTAMP(p)`
has no time zone (Spark `timestamp_ntz`) and `TIMESTAMP_LTZ(p)` / `TIMESTAMP(p) WITH LOCAL TIME ZONE` is
an instant (Spark `timestamp`); `CHAR(n)`/`VARCHAR(n)` are `string` and `BINARY(n)`/`VARBINARY(n)`/
`BYTES` are `binary`, since Flink does not enforce those lengths either by default
(`table.exec.sink.type-length-enforcer` = IGNORE).

Why sqlglot with a small dialect of our own: sqlglot (pinned in pyproject) tokenizes and parses the
statement, constraints and `WITH` list, but has no Flink dialect. Its Hive dialect is the closest and is
extended here only where Flink differs: `ROW<...>` is a struct, `BYTES` and `TIMESTAMP_LTZ` are type
names, `''` escapes a quote, `WATERMARK` is a schema constraint, and an unknown type name is kept (as a
user-defined type) so that it can be reported with the closest valid name instead of sqlglot's
"Expecting )". Type meanings are mapped here, never taken from sqlglot's Hive/Spark semantics (where
`TIMESTAMP` has a time zone).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlglot import TokenType, exp
from sqlglot.dialects.hive import Hive
from sqlglot.errors import ParseError, TokenError
from sqlglot.parsers.hive import HiveParser

from wide_assets.errors import InvalidOptionError, did_you_mean
from wide_assets.schema import Column

__all__ = ["CreateTable", "parse_create_table"]

log = logging.getLogger(__name__)

# Flink's type names, for the closest-name hint of an unknown one.
FLINK_TYPES = (
    "CHAR",
    "VARCHAR",
    "STRING",
    "BOOLEAN",
    "BINARY",
    "VARBINARY",
    "BYTES",
    "DECIMAL",
    "DEC",
    "NUMERIC",
    "TINYINT",
    "SMALLINT",
    "INT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "ARRAY",
    "MAP",
    "ROW",
)
_SIMPLE_TYPES = {
    exp.DType.TEXT: "string",
    exp.DType.VARCHAR: "string",
    exp.DType.CHAR: "string",
    exp.DType.BOOLEAN: "boolean",
    exp.DType.BINARY: "binary",
    exp.DType.VARBINARY: "binary",
    exp.DType.TINYINT: "tinyint",
    exp.DType.SMALLINT: "smallint",
    exp.DType.INT: "int",
    exp.DType.BIGINT: "bigint",
    exp.DType.FLOAT: "float",
    exp.DType.DOUBLE: "double",
    exp.DType.DATE: "date",
}
_TIMESTAMPS = {exp.DType.TIMESTAMP: "timestamp_ntz", exp.DType.TIMESTAMPLTZ: "timestamp"}
# Spark timestamps hold microseconds.
MAX_TIMESTAMP_PRECISION = 6
# Flink's defaults: DECIMAL = DECIMAL(10, 0); TIMESTAMP = TIMESTAMP(6).
DEFAULT_DECIMAL = (10, 0)
MAX_DECIMAL_PRECISION = 38
# Why a construct sqlglot stops at cannot be read, by the word it stopped at.
_PARSE_HINTS = {
    "NOT": "NOT NULL is supported on columns, not inside ARRAY<...> or MAP<...>",
    "METADATA": "metadata columns (METADATA FROM ...) are connector metadata, not stored columns",
    "MULTISET": "MULTISET has no Spark equivalent",
    "RAW": "RAW has no Spark equivalent",
}
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Flink(Hive):
    """Hive's dialect with Flink's type names, string escapes and WATERMARK (see the module docstring)."""

    SUPPORTS_USER_DEFINED_TYPES = True

    class Tokenizer(Hive.Tokenizer):
        QUOTES: ClassVar[list[str | tuple[str, str]]] = ["'"]
        STRING_ESCAPES: ClassVar[list[str]] = ["'"]
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **Hive.Tokenizer.KEYWORDS,
            "ROW": TokenType.STRUCT,
            "BYTES": TokenType.VARBINARY,
            "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
        }

    class Parser(HiveParser):
        CONSTRAINT_PARSERS: ClassVar[dict[str, Any]] = {
            **HiveParser.CONSTRAINT_PARSERS,
            "WATERMARK": lambda self: self.expression(
                exp.WatermarkColumnConstraint(
                    this=self._match(TokenType.FOR) and self._parse_column(),
                    expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
                )
            ),
        }
        SCHEMA_UNNAMED_CONSTRAINTS: ClassVar[set[str]] = {*HiveParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}


@dataclass(frozen=True)
class CreateTable:
    """What a `CREATE TABLE` declares: the table's name (without catalog and database), its columns with
    Spark SQL types, its primary key, and its `WITH` options verbatim."""

    name: str
    columns: list[Column] = field(default_factory=list)
    primary_key: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)


def parse_create_table(ddl: str) -> CreateTable:
    """The definition a Flink SQL `CREATE TABLE` statement declares; InvalidOptionError names what is
    wrong (line and column, or the column and construct) when it cannot be read."""
    create = _statement(ddl)
    schema = create.this
    if not isinstance(schema, exp.Schema):
        raise InvalidOptionError("CREATE TABLE needs a column list: CREATE TABLE name (column type, ...).")
    columns: list[Column] = []
    key: tuple[str, ...] = ()
    watermarks: list[str] = []
    for element in schema.expressions:
        if isinstance(element, exp.ColumnDef):
            column, inline_key = _column(ddl, element)
            columns.append(column)
            if inline_key:
                key = _one_primary_key(key, (column.name,))
        elif isinstance(element, exp.PrimaryKey | exp.Constraint):
            key = _one_primary_key(key, _constraint_key(element))
        elif isinstance(element, exp.WatermarkColumnConstraint):
            watermarks.append(element.this.name)
        else:
            raise InvalidOptionError(f"Cannot read the table element '{element.sql(dialect=_Flink)}'.")
    names = [c.name for c in columns]
    for name in (*key, *watermarks):
        if name not in names:
            raise InvalidOptionError(f"Column '{name}' is not declared{did_you_mean(name, names)}.")
    if watermarks:
        log.warning("WATERMARK FOR %s has no effect on a wide table.", ", ".join(watermarks))
    options, partition_keys = _properties(create)
    if any(k not in key for k in partition_keys):
        raise InvalidOptionError(
            f"PARTITIONED BY ({', '.join(partition_keys)}) must name primary key columns "
            f"({', '.join(key) or 'none declared'}), as Paimon and Fluss require of a primary-key table."
        )
    if partition_keys:
        log.warning("PARTITIONED BY (%s) has no effect on a wide table.", ", ".join(partition_keys))
    # A primary key column is NOT NULL whether declared so or not; the storage enforces it either way.
    columns = [Column(c.name, c.type) if c.name in key else c for c in columns]
    return CreateTable(create.this.this.name, columns, key, options)


def _statement(ddl: str) -> exp.Create:
    try:
        statements = [s for s in _Flink().parse(ddl) if s is not None]
    except ParseError as error:
        raise InvalidOptionError(_parse_error(error)) from None
    except TokenError as error:
        raise InvalidOptionError(
            f"Cannot read the CREATE TABLE statement (an unterminated quote or comment?): {error}"
        ) from None
    if len(statements) != 1:
        raise InvalidOptionError(f"Expected one CREATE TABLE statement, found {len(statements)} statements.")
    [statement] = statements
    if not isinstance(statement, exp.Create) or statement.kind != "TABLE":
        raise InvalidOptionError(f"Expected a CREATE TABLE statement, found: {statement.sql()[:60]}")
    if statement.expression is not None:
        raise InvalidOptionError("CREATE TABLE ... AS SELECT is not supported: declare the columns.")
    return statement


def _parse_error(error: ParseError) -> str:
    first = error.errors[0]
    word = str(first.get("highlight") or "")
    column = int(first["col"]) - len(word) + 1
    message = f"Cannot read the CREATE TABLE statement at line {first['line']}, column {column}"
    message += f" ('{word}'): {first['description']}" if word else f": {first['description']}"
    # sqlglot stops at an unknown type name, or at the `<`/`(` after one it took for a user type.
    before = re.findall(r"\w+", str(first.get("start_context") or ""))
    culprit = before[-1] if word in ("<", "(") and before else word
    hint = _PARSE_HINTS.get(culprit.upper())
    if hint is None and culprit.isidentifier() and culprit.upper() not in FLINK_TYPES:
        suggestion = did_you_mean(culprit.upper(), FLINK_TYPES)
        hint = f"unknown type '{culprit}'{suggestion}" if suggestion else None
    return message + (f"; {hint}." if hint else ".")


def _position(ddl: str, node: exp.Expr) -> str:
    start = node.meta.get("start") if node.meta else None
    if start is None:
        return ""
    line = ddl.count("\n", 0, start) + 1
    return f" (line {line}, column {start - ddl.rfind(chr(10), 0, start)})"


def _column(ddl: str, definition: exp.ColumnDef) -> tuple[Column, bool]:
    """The column a definition declares, and whether it declares itself the primary key."""
    name = definition.this.name
    where = f"Column '{name}'{_position(ddl, definition.this)}"
    kind = definition.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise InvalidOptionError(f"{where} is computed (AS ...): a wide table stores declared columns only.")
    nullable, inline_key = True, False
    for constraint in definition.constraints:
        inner = constraint.kind
        if isinstance(inner, exp.NotNullColumnConstraint):
            nullable = bool(inner.args.get("allow_null"))
        elif isinstance(inner, exp.PrimaryKeyColumnConstraint):
            inline_key = True
        elif not isinstance(inner, exp.CommentColumnConstraint):
            raise InvalidOptionError(f"{where}: '{constraint.sql(dialect=_Flink)}' is not supported.")
    type_text = _spark_type(kind, where)
    return Column.parse(name, type_text if nullable else f"{type_text} not null"), inline_key


def _spark_type(kind: exp.DataType, where: str) -> str:
    """The Spark SQL type of a Flink type, with Flink's meaning (module docstring)."""
    dtype = kind.this
    if dtype in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[dtype]
    params = [int(p.name) for p in kind.expressions if isinstance(p, exp.DataTypeParam)]
    if dtype == exp.DType.DECIMAL:
        precision, scale = (*params, *DEFAULT_DECIMAL[len(params) :])[:2]
        if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
            raise InvalidOptionError(
                f"{where}: DECIMAL({precision}, {scale}) needs 1 <= precision <= 38 and 0 <= scale <= precision."
            )
        return f"decimal({precision},{scale})"
    if dtype in _TIMESTAMPS:
        if params and params[0] > MAX_TIMESTAMP_PRECISION:
            raise InvalidOptionError(
                f"{where}: precision {params[0]} is finer than the microseconds a Spark timestamp holds "
                f"(at most {MAX_TIMESTAMP_PRECISION}); declare TIMESTAMP(6) or coarser."
            )
        return _TIMESTAMPS[dtype]
    nested = [e for e in kind.expressions if isinstance(e, exp.DataType)]
    if dtype == exp.DType.ARRAY and len(nested) == 1:
        return f"array<{_spark_type(nested[0], where)}>"
    if dtype == exp.DType.MAP and len(nested) == 2:
        return f"map<{_spark_type(nested[0], where)},{_spark_type(nested[1], where)}>"
    if dtype == exp.DType.STRUCT:
        return f"struct<{','.join(_struct_field(f, where) for f in kind.expressions)}>"
    if dtype == exp.DType.USERDEFINED:
        written = str(kind.args.get("kind"))
        hint = did_you_mean(written.upper(), FLINK_TYPES) or f"; Flink's types are {', '.join(FLINK_TYPES)}"
        raise InvalidOptionError(f"{where} has an unknown type '{written}'{hint}.")
    raise InvalidOptionError(f"{where}: type {kind.sql()} has no Spark equivalent here.")


def _struct_field(definition: exp.Expr, where: str) -> str:
    if not isinstance(definition, exp.ColumnDef) or not isinstance(definition.args.get("kind"), exp.DataType):
        raise InvalidOptionError(f"{where}: cannot read the ROW field '{definition.sql(dialect=_Flink)}'.")
    name = definition.this.name
    for constraint in definition.constraints:
        if isinstance(constraint.kind, exp.NotNullColumnConstraint):
            raise InvalidOptionError(f"{where}: NOT NULL is supported on columns, not on ROW field '{name}'.")
        if not isinstance(constraint.kind, exp.CommentColumnConstraint):
            raise InvalidOptionError(f"{where}: '{constraint.sql(dialect=_Flink)}' on ROW field '{name}'.")
    quoted = name if _PLAIN_NAME.fullmatch(name) else f"`{name.replace('`', '``')}`"
    return f"{quoted}:{_spark_type(definition.args['kind'], where)}"


def _constraint_key(element: exp.Expr) -> tuple[str, ...]:
    primary = element if isinstance(element, exp.PrimaryKey) else element.find(exp.PrimaryKey)
    if primary is None:
        raise InvalidOptionError(
            f"Only the PRIMARY KEY constraint is supported, not '{element.sql(dialect=_Flink)}'."
        )
    return tuple(part.name for part in primary.expressions)


def _one_primary_key(declared: tuple[str, ...], found: tuple[str, ...]) -> tuple[str, ...]:
    if declared:
        raise InvalidOptionError(
            f"The primary key is declared twice: ({', '.join(declared)}) and ({', '.join(found)})."
        )
    return found


def _properties(create: exp.Create) -> tuple[dict[str, str], tuple[str, ...]]:
    """The `WITH` options verbatim, and the PARTITIONED BY columns."""
    options: dict[str, str] = {}
    partition_keys: tuple[str, ...] = ()
    properties = create.args.get("properties")
    for prop in properties.expressions if properties else ():
        if isinstance(prop, exp.Property) and type(prop) is exp.Property:
            key, value = prop.this, prop.args.get("value")
            if not (isinstance(key, exp.Literal) and isinstance(value, exp.Literal) and value.is_string):
                raise InvalidOptionError(f"Options are quoted strings ('key' = 'value'), not {prop.sql()}.")
            if key.name in options:
                raise InvalidOptionError(f"Option '{key.name}' is given twice.")
            options[key.name] = value.name
        elif isinstance(prop, exp.PartitionedByProperty):
            partition_keys = tuple(part.name for part in prop.this.expressions)
        elif not isinstance(prop, exp.SchemaCommentProperty):
            raise InvalidOptionError(f"'{prop.sql(dialect=_Flink)}' is not part of a Flink CREATE TABLE.")
    return options, partition_keys
