"""Demo wide tables, each one spec turned into Dagster definitions by the pipeline factories."""
