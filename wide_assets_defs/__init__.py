"""The project's declared tables: `<table>/defs.yaml` each, loaded by `definitions.py` (the `dg` defs folder)."""
