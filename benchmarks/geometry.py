"""Geometry benchmark: the static index over a level mesh, and the sphere-triangle kernel.

No panda3d here: the mesh and the spheres are plain arrays in the mesh's own frame, as the
solver will hand them to :class:`panda3d_ccd.broadphase.StaticIndex`.

* build: the index of a terrain (a bumpy height field, two triangles per cell) plus some
  walls, axis-aligned (boxes of zero thickness) and slanted, ``triangles`` in all;
* query: ``n`` spheres of radius 0.5 just over the terrain, 90% moving 0.5 units a frame
  and 10% about 50, the fast ones cut into pieces (``split``, as the solver does), and
  once with whole boxes at the largest ``n`` for comparison;
* far: as many spheres 1,000 units above the mesh (each query ends at the root);
* kernel: ``panda3d_ccd.sweep.sphere_triangle_toi`` on about ``kernel_pairs`` candidate
  pairs from the index, in one call, if that kernel exists.

Times are medians of ``repeats`` runs after one untimed run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from panda3d_ccd import sweep
from panda3d_ccd.broadphase import StaticIndex

__all__ = ["GeometryRow", "level_mesh", "measure_geometry", "geometry_table"]

Float = NDArray[np.float64]

#: The terrain is this share of the mesh; walls (two triangles each) are the rest.
_TERRAIN_SHARE = 0.95
_RADIUS = 0.5
_SLOW, _FAST = 0.5, 50.0


@dataclass
class GeometryRow:
    """One line of the table: what was timed, its size, milliseconds (None: not run),
    pairs found (None: not a query) and a note."""

    case: str
    n: int
    ms: float | None
    pairs: int | None = None
    note: str = ""


def level_mesh(triangles: int, seed: int = 1) -> tuple[Float, Float, Float]:
    """(m, 3) float64 corners ``a, b, c`` of a level of exactly ``triangles`` triangles:
    a height field over ``[0, side]^2`` (heights within about 5) and wall quads on it.

    A third of the walls lie in planes x = const, a third in y = const, a third slanted.
    """
    rng = np.random.default_rng(seed)
    side = max(1, math.isqrt(int(_TERRAIN_SHARE * triangles / 2)))
    x, y = np.meshgrid(np.arange(side + 1.0), np.arange(side + 1.0), indexing="ij")
    height = 3 * np.sin(0.1 * x) + 2 * np.cos(0.13 * y) + 0.3 * rng.standard_normal(x.shape)
    grid = np.stack([x, y, height], axis=-1)
    p, q = grid[:-1, :-1].reshape(-1, 3), grid[1:, :-1].reshape(-1, 3)
    r, s = grid[1:, 1:].reshape(-1, 3), grid[:-1, 1:].reshape(-1, 3)
    a, b, c = np.concatenate([p, p]), np.concatenate([q, r]), np.concatenate([r, s])
    a, b, c = a[:triangles], b[:triangles], c[:triangles]
    quads = -(-(triangles - len(a)) // 2)
    base = rng.uniform(0, side, (quads, 3))
    base[:, 2] = -6.0
    angle = rng.uniform(0, np.pi, quads)
    angle[: quads // 3] = 0.0
    angle[quads // 3 : 2 * quads // 3] = np.pi / 2
    width = rng.uniform(2, 10, quads)[:, None]
    along = np.stack([np.cos(angle), np.sin(angle), np.zeros(quads)], axis=1) * width
    # Exact zeros for the axis-aligned walls, whatever cos(pi / 2) rounds to.
    along[np.abs(along) < 1e-9] = 0.0
    up = np.array([0.0, 0.0, 12.0])
    wa = np.concatenate([base, base])
    wb = np.concatenate([base + along, base + along + up])
    wc = np.concatenate([base + along + up, base + up])
    extra = triangles - len(a)
    return (
        np.concatenate([a, wa[:extra]]),
        np.concatenate([b, wb[:extra]]),
        np.concatenate([c, wc[:extra]]),
    )


def _spheres(n: int, side: float, seed: int, lift: float = 0.0) -> tuple[Float, Float, NDArray]:
    """Centres p0, p1 (n, 3) over the terrain (raised by ``lift``), 10% fast, and which."""
    rng = np.random.default_rng(seed)
    p0 = rng.uniform([0, 0, -4], [side, side, 6], (n, 3)) + [0, 0, lift]
    d = rng.standard_normal((n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    fast = np.arange(n) < round(0.1 * n)
    speed = np.where(fast, _FAST * rng.uniform(0.75, 1.25, n), _SLOW)
    return p0, p0 + d * speed[:, None], fast


def _median_ms(
    repeats: int, run: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[float, Any]:
    result = run(*args, **kwargs)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times)), result


def measure_geometry(
    triangles: int = 100_000,
    sizes: Sequence[int] = (10, 100, 1000, 10_000),
    *,
    kernel_pairs: int = 1_000_000,
    repeats: int = 5,
    seed: int = 1,
) -> list[GeometryRow]:
    """Time the index's build and queries, and the sphere-triangle kernel if present."""
    a, b, c = level_mesh(triangles, seed)
    side = float(a[:, 0].max())
    rows = []
    ms, index = _median_ms(repeats, StaticIndex.of_triangles, a, b, c)
    rows.append(GeometryRow("build index (terrain + walls)", triangles, ms))
    for n in sizes:
        p0, p1, fast = _spheres(n, side, seed + n)
        ms, (i, _) = _median_ms(repeats, index.sphere_pairs, p0, p1, _RADIUS, split=fast)
        rows.append(GeometryRow("query, fast movers cut into pieces", n, ms, len(i)))
    if sizes:
        n = max(sizes)
        p0, p1, fast = _spheres(n, side, seed + n)
        ms, (i, _) = _median_ms(repeats, index.sphere_pairs, p0, p1, _RADIUS)
        rows.append(GeometryRow("query, whole swept boxes", n, ms, len(i)))
        p0, p1, _ = _spheres(n, side, seed + n, lift=1000.0)
        ms, (i, _) = _median_ms(repeats, index.sphere_pairs, p0, p1, _RADIUS)
        rows.append(GeometryRow("query, spheres 1,000 units above the mesh", n, ms, len(i)))
    rows.append(_kernel_row(a, b, c, index, side, kernel_pairs, seed))
    return rows


def _kernel_row(
    a: Float, b: Float, c: Float, index: StaticIndex, side: float, pairs: int, seed: int
) -> GeometryRow:
    """Sphere-triangle tests per second in one call, on candidate pairs from the index.

    HOOK: ``sphere_triangle_toi(c0, c1, r, a, b, c)`` is being written on another branch;
    until it is merged this row reads "n/a (kernel not present)".
    """
    case = "sphere-triangle kernel, one call"
    kernel = getattr(sweep, "sphere_triangle_toi", None)
    if kernel is None:
        return GeometryRow(case, pairs, None, note="n/a (kernel not present)")
    p0, p1, fast = _spheres(10_000, side, seed)
    i, k = index.sphere_pairs(p0, p1, _RADIUS, split=fast)
    if len(i) == 0:
        return GeometryRow(case, 0, None, note="n/a (no candidate pairs)")
    # The candidates found, repeated up to the size asked for: one call on ~pairs rows.
    take = np.resize(np.arange(len(i)), pairs)
    args = (p0[i][take], p1[i][take], _RADIUS, a[k][take], b[k][take], c[k][take])
    kernel(*(arg[:1000] if isinstance(arg, np.ndarray) else arg for arg in args))
    t0 = time.perf_counter()
    toi = np.asarray(kernel(*args))
    seconds = time.perf_counter() - t0
    hits = int(np.isfinite(toi).sum())
    rate = pairs / seconds
    return GeometryRow(
        case, pairs, 1e3 * seconds, note=f"{rate:,.0f} tests/s; {hits:,} contacts"
    )


def geometry_table(rows: Sequence[GeometryRow]) -> str:
    """The rows as a markdown table."""
    lines = ["| case | n | ms | pairs | note |", "|---|---:|---:|---:|---|"]
    for row in rows:
        ms = "-" if row.ms is None else (f"{row.ms:,.1f}" if row.ms >= 10 else f"{row.ms:.2f}")
        pairs = "-" if row.pairs is None else f"{row.pairs:,}"
        lines.append(f"| {row.case} | {row.n:,} | {ms} | {pairs} | {row.note} |")
    return "\n".join(lines)
