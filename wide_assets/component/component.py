"""`WideTableComponent`: one `defs.yaml` declares one wide table and everything around it.

A thin front-end: the YAML becomes a `WideTableSpec` and the options of `wide_table_defs`, which build
the same assets, checks, job, schedule, sensors and compaction as a Python declaration would. Nothing
starts Spark when the definitions load; everything that can be wrong in a declaration is refused then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Self, Union, get_args, get_origin

import dagster as dg
from dagster.components.resolved.model import Resolver
from dagster.components.utils.translation import ResolvedTranslationFn
from pydantic import BaseModel, Field, PrivateAttr, ValidationError, create_model, model_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from wide_assets.component.assembly import check_assembly
from wide_assets.component.declaration import (
    AutomationDeclaration,
    ChecksDeclaration,
    CompactionDeclaration,
    HistoryDeclaration,
    SourceDeclaration,
    SourceDefaults,
    SqlTableDeclaration,
    TableDeclaration,
    unknown_fields,
    wide_table_spec,
)
from wide_assets.component.refusal import DeclarationProblem, invalid_yaml, refuse
from wide_assets.component.resources import SparkDeclaration, claim_shared_resources, table_resources
from wide_assets.component.scaffold import WideTableScaffolder
from wide_assets.pipelines import WideTableSpec, wide_table_defs
from wide_assets.pipelines.assets import SensorScope, materialized_table_asset, source_applier
from wide_assets.pipelines.locate import LakeLocator

if TYPE_CHECKING:
    from dagster_shared.yaml_utils.source_position import SourcePositionTree
    from pyspark.sql import SparkSession

    from wide_assets.pipelines.apply import SourceApplied
    from wide_assets.table import WideTable

__all__ = ["WideTableAsset", "WideTableComponent"]

# Where the model of the YAML keeps the errors of its validation (see `_keeping_errors`).
INVALID = "_invalid_yaml"


@dataclass(frozen=True)
class WideTableAsset:
    """Which of a table's assets a spec is, as `translation` (`{{ data.table }}`, `{{ data.source }}`)
    and `get_asset_spec` see it: the table's name, and the source's for a source's ingest asset."""

    table: str
    source: str | None = None


@dg.scaffold_with(WideTableScaffolder)
class WideTableComponent(dg.Component, dg.Resolvable, dg.Model):
    """A partial-update wide table on Delta Lake, fed by CDC sources, with its checks and automation.

    Builds: one ingest asset per source (`<group>/<source>`: landed files -> an append-only Delta
    change table, each file once), the table's asset (`<group>/<table>`: each source's new records
    as one exactly-once commit, merged the Paimon/Fluss way its options say), the blocking
    `primary_key_unique_not_null` and `converges_to_source_join` checks, optionally a history table
    (`<group>/<table>_history`, SCD type 2) with its checks, tables defined by SQL over it
    (`sql_tables`), the job `<table>_job`, an hourly schedule, a new-data sensor, and for write-only
    tables a compaction job. It brings its
    `spark`, `lake` and `landing` resources: the embedded Sail engine, `<project root>/lake` and
    `<project root>/data` unless `spark`, `lake` and `landing` say otherwise.

    Scaffold one with `dg scaffold defs wide_assets.WideTableComponent <table>`; it writes a
    commented defs.yaml to edit. Example:

    .. code-block:: yaml

        type: wide_assets.WideTableComponent
        attributes:
          table:
            name: customer_360
            description: One row per customer, its name and loyalty points from two sources.
            columns: {customer_id: string, name: string, name_ts: timestamp, points: int, points_ts: timestamp}
            primary_key: [customer_id]
            options:
              merge-engine: partial-update
              fields.name_ts.sequence-group: name
              fields.points_ts.sequence-group: points
              partial-update.remove-record-on-sequence-group: name_ts
          sources:
            - name: profiles
              description: Customer profile changes.
              files: [customer_360/profiles*.csv]
              columns: {customer_id: string, name: string, ts: timestamp}
              feeds: {name: name, ts: name_ts}
              op_time: ts
              deletes: remove-row
            - name: loyalty
              description: Loyalty point balance changes.
              format: debezium
              files: [customer_360/loyalty/*.jsonl]
              columns: {customer_id: string, points: int, ts: timestamp}
              feeds: {points: points, ts: points_ts}
              op_time: ts
              deletes: clear-columns
          translation:
            owners: [team:data]
            tags: {feed: "{{ data.source or data.table }}"}

    Extend it in Python where a declaration cannot say something: subclass it in a `component.py`
    beside the defs.yaml, override `get_asset_spec` (each asset's spec), `execute` (a run of the
    table's asset) or `build_defs` (use `self.spec`), and name the subclass in the defs.yaml's `type` (`.component.MyTable`).

    `translation` sets the group, owners, tags, kinds, description or metadata of each asset, per
    table and per source, as Dagster's own integration components do: its templates see
    `data.table` and `data.source` (None for the table's own assets). It does not change keys: the
    table's checks, jobs and sensors name its assets by key.
    """

    table: Annotated[TableDeclaration, Field(description="The wide table.")]
    sources: Annotated[
        list[SourceDeclaration],
        Field(
            description="Its sources; a run merges their records in op-time order, whatever order they are "
            "listed in."
        ),
    ]
    source_defaults: Annotated[
        SourceDefaults | None,
        Field(
            description="`format`, `op_time`, `deletes` or `max_bad_records` for every source that does "
            "not set its own."
        ),
    ] = None
    history: Annotated[
        HistoryDeclaration | None,
        Field(
            description="A history table (SCD type 2) of its tracked columns, with its checks; omit for none."
        ),
    ] = None
    sql_tables: Annotated[
        list[SqlTableDeclaration],
        Field(
            default_factory=list,
            description="Tables defined by Spark SQL over it (`{<table name>}`), recomputed on each "
            "materialization.",
        ),
    ]
    checks: Annotated[ChecksDeclaration, Field(description="Its asset checks.")] = ChecksDeclaration()
    automation: Annotated[
        AutomationDeclaration, Field(description="The schedule and sensors of its job.")
    ] = AutomationDeclaration()
    compaction: Annotated[
        CompactionDeclaration | None,
        Field(
            description="Compaction job and changelog export; omitted: only for write-only tables, with defaults."
        ),
    ] = None
    pool: Annotated[
        str | None,
        Field(
            description="Concurrency pool of every asset and op of the table (default: one per lake table, "
            "which the instance limits to one run at a time). A shared name serializes several tables."
        ),
    ] = None
    lake: Annotated[
        str | None,
        Field(
            description="Where the table and its sources' change tables are written: a directory (relative "
            "to the project root) or a URL (`s3://bucket/prefix`, credentials from the `AWS_*` variables). "
            "Default: $WIDE_ASSETS_LAKE, else `lake`. Every table of a project shares one lake."
        ),
    ] = None
    landing: Annotated[
        str,
        Field(
            description="The landing zone, the directory the sources' `files` globs are relative to "
            "(relative to the project root). Every table of a project shares one landing zone."
        ),
    ] = "data"
    translation: ResolvedTranslationFn[WideTableAsset] = None
    spark: Annotated[
        SparkDeclaration | None,
        Field(
            description="The Spark engine (default: the one $WIDE_ASSETS_ENGINE names, else embedded Sail). "
            "Every table of a project shares one engine."
        ),
    ] = None

    # Where each field of the defs.yaml stands (set by `load`), so that a refusal found while the
    # definitions are built still names its line.
    _positions: SourcePositionTree | None = PrivateAttr(default=None)

    @classmethod
    def model(cls) -> type[BaseModel]:
        """Dagster's model of the YAML, minus the template string it lets every top-level field be.

        With it, a misspelled field of a source failed twice (as a source, and as "not a valid
        string") and `dg check defs`' YAML check said only "not valid under any of the given schemas";
        without it, the check names the field at its line. Its validation keeps what is invalid aside
        for `load` to refuse as one located block (Dagster would print a traceback).
        """
        return _keeping_errors(_without_template_strings(cls, super().model()))

    @classmethod
    def load(cls, attributes: BaseModel | None, context: dg.ComponentLoadContext) -> Self:
        """The component, with no field it does not have (a refusal names the defs.yaml line and field),
        and where each field stands, for the refusals found as its definitions are built."""
        tree = context.resolution_context.source_position_tree
        invalid: list[Any] = getattr(attributes, INVALID, None) or []
        if invalid:
            refuse(invalid_yaml(invalid[0], _field_help(cls, invalid[0]["loc"])), tree, context.path)
        component = super().load(attributes, context)
        component._positions = tree
        for name in cls.model_fields:
            for problem in unknown_fields(getattr(component, name), (name,)):
                refuse(problem, tree, context.path)
        return component

    def _validated(self, folder: Path) -> WideTableSpec:
        """The spec, with everything the declaration asks of it checked as the definitions are built; a
        refusal names the defs.yaml line and field (`load` kept where each stands)."""
        try:
            spec = self.spec
            check_assembly(spec, self.checks, self.automation, self.compaction, self.sql_tables)
        except DeclarationProblem as problem:
            refuse(problem, self._positions, folder)
        return spec

    @cached_property
    def spec(self) -> WideTableSpec:
        """The declaration as a `WideTableSpec` (raises `DeclarationProblem` naming what is wrong)."""
        return wide_table_spec(self.table, self.sources, self.history, self.source_defaults)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self._validated(context.path)
        compaction = self.compaction
        health = self.checks.source_health
        export = (compaction or CompactionDeclaration.model_validate({})).export
        sensor: SensorScope | None = None if self.automation.sensor == "none" else self.automation.sensor
        table = wide_table_defs(
            spec,
            key_check=self.checks.primary_key,
            convergence=self.checks.convergence,
            rows_never_change=self.checks.rows_never_change,
            source_health=health.max_lag if health else None,
            quarantine_blocking=self.checks.quarantine == "block",
            sensor=sensor,
            schedule=self.automation.schedule,
            failure_sensor=self.automation.run_failure_sensor,
            automation_condition=dg.AutomationCondition.eager() if self.automation.eager else None,
            pool=self.pool,
            compaction=compaction.policy() if compaction else None,
            export_encoding=None if export == "none" else export,
            apply=self.execute,
        )
        sql_tables = [
            materialized_table_asset(
                declared.name,
                spec.group,
                declared.description,
                declared.sql,
                {spec.name: spec},
                tuple(declared.primary_key),
                dg.AutomationCondition.on_cron(declared.cron)
                if declared.cron
                else dg.AutomationCondition.eager(),
            )
            for declared in self.sql_tables
        ]
        table = dg.Definitions.merge(table, dg.Definitions(assets=sql_tables))
        sources = {source.name for source in spec.sources}

        def translated(asset: dg.AssetSpec) -> dg.AssetSpec:
            name = asset.key.path[-1]
            role = WideTableAsset(spec.name, name if name in sources else None)
            changed = self.get_asset_spec(asset, role)
            if changed.key != asset.key:
                raise DeclarationProblem(
                    f"table {spec.name}: translating the asset {asset.key.to_user_string()} changed its key "
                    f"to {changed.key.to_user_string()}; its checks, jobs and sensors name it by key, so "
                    "translate its group, owners, tags, kinds or description instead.",
                    ("translation",),
                )
            return changed

        # The non-preview form of `map_resolved_asset_specs`, which Dagster's post_processing calls too.
        resources = table_resources(context.project_root, self.lake, self.landing, self.spark)
        try:
            table = table.permissive_map_resolved_asset_specs(func=translated, selection=None)
            claim_shared_resources(context.component_tree, context.path, resources)
        except DeclarationProblem as problem:
            refuse(problem, self._positions, context.path)
        return dg.Definitions.merge(table, dg.Definitions(resources=resources))

    def execute(self, spark: SparkSession, table: WideTable, lake: LakeLocator) -> Sequence[SourceApplied]:
        """One run of the table's asset: each source's new records applied to `table`, once (override to
        add steps before or after; the materialization describes what it returns)."""
        return source_applier(self.spec)(spark, table, lake)

    def get_asset_spec(self, spec: dg.AssetSpec, asset: WideTableAsset) -> dg.AssetSpec:
        """The spec of one of the table's assets (override to change it; its key must stay): by default
        `spec` as `translation` says."""
        return self.translation(spec, asset) if self.translation else spec


@cache
def _without_template_strings(component: type[dg.Model], derived: type[BaseModel]) -> type[BaseModel]:
    """`derived` with each field that Dagster widened to `T | str` typed `T` again (fields whose own
    type admits a string keep it, and so do fields a resolver reads from a model of its own, such as
    `translation`)."""
    narrowed: dict[str, Any] = {}
    for name, field in derived.model_fields.items():
        declared = component.model_fields[name].annotation
        widened = field.annotation
        if (
            get_origin(widened) in (Union, UnionType)
            and str in get_args(widened)
            and str not in _members(declared)
            and not _resolved(declared)
        ):
            narrowed[name] = (declared, field)
    return create_model(derived.__name__, __base__=derived, **narrowed)


def _resolved(annotation: Any) -> bool:
    """Whether a member of `annotation` is `Annotated` with a Dagster `Resolver` (its YAML has a model
    of its own)."""
    return any(
        get_origin(member) is Annotated and any(isinstance(m, Resolver) for m in member.__metadata__)
        for member in _members(annotation)
    )


def _members(annotation: Any) -> tuple[Any, ...]:
    return get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)


@cache
def _keeping_errors(model: type[BaseModel]) -> type[BaseModel]:
    """`model`, whose validation keeps its errors (in `INVALID`, on an otherwise empty instance)
    instead of raising them: Dagster validates the YAML before `load`, where only the component knows
    how to refuse them as one block at their line."""

    class Kept(model):  # type: ignore[valid-type,misc]
        _invalid_yaml: list[Any] = PrivateAttr(default_factory=list)

        @model_validator(mode="wrap")
        @classmethod
        def _keep_errors(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
            try:
                return handler(data)
            except ValidationError as error:
                kept = cls.model_construct()
                kept._invalid_yaml = error.errors()
                return kept

    Kept.__name__ = Kept.__qualname__ = model.__name__
    return Kept


def _field_help(model: type[BaseModel], loc: Sequence[Any]) -> str | None:
    """The description of the field at `loc` (a pydantic error's location) in `model`'s YAML."""
    fields = model.model_fields
    found = None
    for part in loc:
        if not isinstance(part, str):
            continue
        field = fields.get(part)
        if field is None:
            return found
        found = field.description
        nested = _model_in(field.annotation)
        fields = nested.model_fields if nested else {}
    return found


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation holds (itself, in a list, optional or `Annotated`), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for member in get_args(annotation):
        found = _model_in(member)
        if found is not None:
            return found
    return None
