"""Parsing and validation of Paimon's and Fluss's table options into the merge semantics they select."""
