"""Throughput of the swept sphere-triangle kernel on broad-phase candidates, and what one
small call of each level kernel costs.

``python -m benchmarks.kernels [rows]`` from the repository root. The rows are what a broad
phase hands over: a moving sphere and a triangle whose bounding boxes overlap (the swept
sphere's box against the triangle's), so most rows still miss. A pass calls each kernel a
few times on tens to hundreds of rows, where the cost is the call's numpy operations, not
its arithmetic: :func:`measure_call_cost` times one call on a few such rows and counts its
operations. No panda3d.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from panda3d_ccd.sweep import sphere_box, sphere_capsule, sphere_triangle, sphere_triangle_toi
from panda3d_ccd.sweep.sphere_triangle import _sweep

from .opcount import OpCounter

__all__ = ["triangle_candidates", "measure_triangle_rate", "measure_call_cost"]


def triangle_candidates(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """``n`` rows (c0, c1, r, a, b, c) of spheres (radius 0.1 to 0.5, moving about 0.5
    a frame) against triangles (edges about 1) whose boxes overlap the swept sphere's box."""
    rng = np.random.default_rng(seed)
    parts: list[tuple[np.ndarray, ...]] = []
    found = 0
    while found < n:
        m = n
        c0 = rng.uniform(-100, 100, (m, 3))
        c1 = c0 + rng.normal(0, 0.3, (m, 3))
        r = rng.uniform(0.1, 0.5, m)
        centroid = c0 + rng.uniform(-1.5, 1.5, (m, 3))
        a, b, c = (centroid + rng.normal(0, 0.5, (m, 3)) for _ in range(3))
        lo = np.minimum(c0, c1) - r[:, None]
        hi = np.maximum(c0, c1) + r[:, None]
        t_lo = np.minimum(np.minimum(a, b), c)
        t_hi = np.maximum(np.maximum(a, b), c)
        rows = np.flatnonzero(np.all((lo <= t_hi) & (t_lo <= hi), axis=1))
        parts.append((c0[rows], c1[rows], r[rows], a[rows], b[rows], c[rows]))
        found += len(rows)
    return tuple(np.concatenate(column)[:n] for column in zip(*parts))


def measure_triangle_rate(n: int = 1_000_000, repeats: int = 5) -> dict[str, float]:
    """Best-of-``repeats`` tests per second of the public ``sphere_triangle_toi`` (checks
    included) and of the solver's core ``_sweep`` (contacts included), and the hit rate."""
    rows = triangle_candidates(n)
    k = len(rows[0])
    best_toi = best_sweep = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        t = sphere_triangle_toi(*rows)
        best_toi = min(best_toi, time.perf_counter() - start)
        start = time.perf_counter()
        _sweep(*rows)
        best_sweep = min(best_sweep, time.perf_counter() - start)
    return {
        "rows": float(k),
        "hit_fraction": float(np.isfinite(t).mean()),
        "toi_tests_per_second": k / best_toi,
        "sweep_tests_per_second": k / best_sweep,
    }


def measure_call_cost(rows: int = 30, repeats: int = 200) -> dict[str, dict[str, float]]:
    """Per level kernel (triangle, box, capsule), one ``_sweep`` call on ``rows`` broad-phase
    candidates: best-of-``repeats`` ms and the numpy operations it makes."""
    c0, c1, r, a, b, c = triangle_candidates(rows)
    lo = np.minimum(np.minimum(a, b), c)
    hi = np.maximum(np.maximum(a, b), c)
    calls = {
        "triangle": lambda: sphere_triangle._sweep(c0, c1, r, a, b, c),
        "box": lambda: sphere_box._sweep(c0, c1, r, lo, hi),
        "capsule": lambda: sphere_capsule._sweep(c0, c1, r, a, b, np.full(rows, 0.2)),
    }
    out: dict[str, dict[str, float]] = {}
    for name, call in calls.items():
        counter = OpCounter()
        with counter.counting():
            call()
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
        out[name] = {"ms": 1e3 * best, "numpy_ops": float(counter.total)}
    return out


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for key, value in measure_triangle_rate(size).items():
        print(f"{key}: {value:,.4g}")
    print("one call on 30 candidate rows:")
    for name, cost in measure_call_cost().items():
        print(f"  {name}: {cost['ms']:.3f} ms, {cost['numpy_ops']:.0f} numpy operations")
