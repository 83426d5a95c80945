"""Apache DataSketches HLL and Theta sketches in BYTES columns: Paimon's union of two, and their estimates.

Paimon's `hll_sketch` and `theta_sketch` (HllSketchUtil.union, ThetaSketch.union) merge serialized
sketches with datasketches-java; this is the same operation with the C++ library's Python binding,
whose serialized forms the Java library reads and writes (DataSketches' cross-language format).
"""

from __future__ import annotations

from typing import Any, Literal

SketchKind = Literal["hll", "theta"]
# What Paimon's `ThetaSketch.union` builds (`Sketches.setOperationBuilder().buildUnion()`): a union of
# 2^12 nominal entries, the library's default, as is the default seed both libraries hash with.
THETA_UNION_LG_K = 12


def _library() -> Any:
    """The DataSketches binding, imported when a sketch is first read (not with wide_assets)."""
    import datasketches  # type: ignore[import-untyped]  # it ships no type information

    return datasketches


def union(kind: SketchKind, accumulator: bytes, incoming: bytes) -> bytes:
    """`incoming` merged into `accumulator` as Paimon merges them.

    HLL: a union started from `incoming` (Java's `Union.heapify`, which keeps its lgK) updated with
    `accumulator`, the result an HLL_4 sketch in compact form. Theta: a union of 2^12 nominal entries
    updated with both, the result a compact ordered sketch."""
    datasketches = _library()
    if kind == "hll":
        started = datasketches.hll_sketch.deserialize(incoming)
        hll = datasketches.hll_union(started.lg_config_k)
        hll.update(started)
        hll.update(datasketches.hll_sketch.deserialize(accumulator))
        return bytes(hll.get_result(datasketches.tgt_hll_type.HLL_4).serialize_compact())
    theta = datasketches.theta_union(THETA_UNION_LG_K)
    theta.update(datasketches.compact_theta_sketch.deserialize(accumulator))
    theta.update(datasketches.compact_theta_sketch.deserialize(incoming))
    return bytes(theta.get_result().serialize())


def union_all(kind: SketchKind, sketches: list[bytes]) -> bytes:
    """The sketches merged in order, each into the union of those before it (a lone one unchanged)."""
    merged = sketches[0]
    for incoming in sketches[1:]:
        merged = union(kind, merged, incoming)
    return merged


def estimate(kind: SketchKind, sketch: bytes) -> float:
    """The number of distinct values a stored sketch estimates (`hll_sketch` or `theta_sketch` column).

    On Sail and JVM Spark, SQL reads an HLL column's estimate as well: `hll_sketch_estimate(column)`
    (rounded to a whole number)."""
    datasketches = _library()
    if kind == "hll":
        return float(datasketches.hll_sketch.deserialize(sketch).get_estimate())
    return float(datasketches.compact_theta_sketch.deserialize(sketch).get_estimate())
