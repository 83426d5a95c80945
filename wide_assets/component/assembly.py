"""Refusals of what a declaration asks of its table beyond the table itself: its checks, automation,
compaction and SQL tables, each at the field that asks for it (`DeclarationProblem`)."""

from __future__ import annotations

import string

from wide_assets.component.declaration import (
    AutomationDeclaration,
    ChecksDeclaration,
    CompactionDeclaration,
    SqlTableDeclaration,
)
from wide_assets.component.refusal import DeclarationProblem
from wide_assets.errors import did_you_mean
from wide_assets.pipelines import WideTableSpec
from wide_assets.pipelines.specs import IDENTIFIER

__all__ = ["check_assembly"]


def check_assembly(
    spec: WideTableSpec,
    checks: ChecksDeclaration,
    automation: AutomationDeclaration,
    compaction: CompactionDeclaration | None,
    sql_tables: list[SqlTableDeclaration],
) -> None:
    """Refuse, at the field that asks for it, what the declaration's checks, automation, compaction or
    SQL tables ask of `spec` but cannot be built: raises `DeclarationProblem`."""
    from dagster._utils.schedules import is_valid_cron_string

    from wide_assets.pipelines.convergence import convergence_refusal

    if checks.quarantine == "block" and all(source.max_bad_records is None for source in spec.sources):
        raise DeclarationProblem(
            f"table {spec.name}: quarantine: block needs a source that quarantines; none of "
            f"{[source.name for source in spec.sources]} sets max_bad_records (a bad record fails its run).",
            ("checks", "quarantine"),
        )
    if checks.convergence:
        refusal = convergence_refusal(spec)
        if refusal:
            raise DeclarationProblem(refusal, ("checks", "convergence"))
    crons: list[tuple[tuple[str | int, ...], str | None]] = [
        (("automation", "schedule"), automation.schedule)
    ]
    if compaction is not None:
        crons.append((("compaction", "cron"), compaction.cron))
        unknown = [c for c in compaction.z_order if c not in spec.column_names]
        if unknown:
            raise DeclarationProblem(
                f"table {spec.name}: z_order columns {unknown} are not among its columns "
                f"{list(spec.column_names)}{did_you_mean(unknown[0], spec.column_names)}.",
                ("compaction", "z_order"),
            )
    taken = {spec.name, *(source.name for source in spec.sources)}
    if spec.history is not None:
        taken.add(f"{spec.name}_history")
    for index, table in enumerate(sql_tables):
        crons.append((("sql_tables", index, "cron"), table.cron))
        if not IDENTIFIER.fullmatch(table.name) or table.name in taken:
            raise DeclarationProblem(
                f"table {spec.name}: sql table {table.name!r} needs a name of letters, digits and '_' that no "
                f"other asset of the table has {sorted(taken)}.",
                ("sql_tables", index, "name"),
            )
        taken.add(table.name)
        read = {field for _, field, _, _ in string.Formatter().parse(table.sql) if field is not None}
        if read != {spec.name}:
            raise DeclarationProblem(
                f"table {spec.name}: sql table {table.name} reads {sorted(read)}; its SQL reads the wide table, "
                f"as {{{spec.name}}}, and nothing else.",
                ("sql_tables", index, "sql"),
            )
    for where, cron in crons:
        if cron is not None and not is_valid_cron_string(cron):
            raise DeclarationProblem(
                f"table {spec.name}: {where[-1]} {cron!r} is not a cron expression (e.g. '0 * * * *').",
                where,
            )
