"""The deployment's own demo pipelines (not part of the installable library): one module per wide table."""
