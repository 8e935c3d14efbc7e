"""Throughput of the swept sphere-triangle kernel on broad-phase candidates.

``python -m benchmarks.kernels [rows]`` from the repository root. The rows are what a broad
phase hands over: a moving sphere and a triangle whose bounding boxes overlap (the swept
sphere's box against the triangle's), so most rows still miss. No panda3d.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from panda3d_ccd.sweep import sphere_triangle_toi
from panda3d_ccd.sweep.sphere_triangle import _sweep

__all__ = ["triangle_candidates", "measure_triangle_rate"]


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


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for key, value in measure_triangle_rate(size).items():
        print(f"{key}: {value:,.4g}")
