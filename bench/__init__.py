"""Benchmarks; run them as modules, e.g. `python -m bench.product_360`."""
