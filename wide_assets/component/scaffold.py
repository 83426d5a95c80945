"""`dg scaffold defs wide_assets.WideTableComponent <table>`: a commented defs.yaml that loads and runs.

The template is a small customer table fed by two CSV sources, each with its own sequence group,
and sample landed files for it (written once under the project's `data/<table>/`, the component's
default landing zone), so the new table materializes and its checks pass before it is edited.
"""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
from dagster.components.scaffold.scaffold import NoParams

__all__ = ["WideTableScaffolder", "defs_yaml", "sample_files"]

LANDING = "data"


def defs_yaml(type_name: str, table: str) -> str:
    """The commented defs.yaml of a new table named `table`."""
    return f"""\
# A wide table and everything around it: {type_name}.
# Check it with `dg check defs`; run it with `dg launch --job {table}_job` (or in `dg dev`).
# Every field is listed by `dg utils inspect-component {type_name}`.
type: {type_name}

attributes:
  table:
    name: {table}
    description: One row per customer, assembled from its profile and loyalty changes.
    # Column name: Spark SQL type, in table order. A `ddl:` with a Flink CREATE TABLE statement may
    # replace columns, primary_key and options.
    columns:
      customer_id: string
      name: string
      profile_ts: timestamp
      points: int
      points_ts: timestamp
    primary_key: [customer_id]
    # Paimon (or Fluss, with `table.*` keys) options, verbatim. One sequence group per source, on
    # its op time: a late record never overwrites newer data, nor another source's columns.
    options:
      merge-engine: partial-update
      fields.profile_ts.sequence-group: name
      fields.points_ts.sequence-group: points
      # A profile delete removes the whole customer row.
      partial-update.remove-record-on-sequence-group: profile_ts

  # A run merges the sources' records by op time, whatever their order here; files are globs under
  # the landing zone ({LANDING}/). `source_defaults` sets format, op_time, deletes or
  # max_bad_records for every source that does not set its own, e.g.
  # source_defaults: {{format: debezium, op_time: changed_at}}
  sources:
    - name: profiles
      description: Customer profile changes; a delete removes the customer.
      format: csv  # csv, parquet, debezium, flink-json, or delta (with `table:` instead of `files:`)
      files: ["{table}/profiles*.csv"]
      columns: {{customer_id: string, name: string, changed_at: timestamp}}
      feeds: {{name: name, changed_at: profile_ts}}  # source column: wide column
      op_time: changed_at
      deletes: remove-row  # what a -D means: remove-row, clear-columns or ignore
    - name: loyalty
      description: Loyalty point balance changes; a delete clears the balance.
      files: ["{table}/loyalty*.csv"]
      columns: {{customer_id: string, points: int, changed_at: timestamp}}
      feeds: {{points: points, changed_at: points_ts}}
      op_time: changed_at
      deletes: clear-columns

  checks:
    primary_key: true  # blocking: the key is unique and never NULL
    # Blocking: every row equals the join of each source's latest state by op time with the delete
    # rules above, computed from the ingested records without the merge.
    convergence: true
    # source_health: {{max_lag_hours: 24}}  # warnings: freshness, schema drift, quarantine growth

  # A history table ({table}_history, SCD type 2): one row per customer per interval in which
  # its tracked columns held one value, from __START_AT to __END_AT (op times; NULL: open).
  # history: {{track_except: [profile_ts, points_ts]}}

  automation:
    schedule: "0 * * * *"  # cron of {table}_job; null for none
    sensor: table  # new-data sensor: table, per-source or none
    eager: false  # materialize the table as soon as a source was ingested

  # compaction: {{cron: "0 3 * * *", max_pending_commits: 10}}  # needed with `write-only: true`
  # pool: lake_writers  # one concurrency pool for all of this table's assets
"""


def sample_files(table: str) -> dict[str, str]:
    """Landed CSV files for the template's two sources (path under the landing zone -> content)."""
    return {
        f"{table}/profiles_001.csv": "_row_kind,customer_id,name,changed_at\n"
        "+I,c1,Ada,2025-01-05 09:00:00\n"
        "+I,c2,Grace,2025-01-05 09:01:00\n"
        "+U,c1,Ada Lovelace,2025-01-05 10:00:00\n",
        f"{table}/loyalty_001.csv": "_row_kind,customer_id,points,changed_at\n"
        "+I,c1,10,2025-01-05 09:30:00\n"
        "+I,c2,5,2025-01-05 09:31:00\n"
        "+U,c1,25,2025-01-05 11:00:00\n"
        "-D,c2,5,2025-01-05 12:00:00\n",
    }


class WideTableScaffolder(dg.Scaffolder[NoParams]):
    """Writes the defs.yaml, and the sample files where none exist yet."""

    def scaffold(self, request: dg.ScaffoldRequest[NoParams]) -> None:
        # The default python-format scaffold (a component.py returning the component) fits as it is.
        from dagster.components.component_scaffolding import scaffold_component

        if request.scaffold_format != "yaml":
            scaffold_component(request)
            return
        table = re.sub(r"\W", "_", request.target_path.name)
        (request.target_path / "defs.yaml").write_text(defs_yaml(request.type_name, table), encoding="utf-8")
        if request.project_root is None:
            return
        for name, content in sample_files(table).items():
            path = Path(request.project_root) / LANDING / name
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
