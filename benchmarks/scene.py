"""The benchmark's scenes as plain arrays: no panda3d here, so every system sees the same
numbers and the generator can be tested on its own.

Two generators:

* :class:`MovingSpheres`: ``n`` spheres in a box at a fixed density, non-overlapping at the
  start (jittered grid), 10% fast movers among slow ones, bouncing off the box walls. The
  bounce is folded into the position analytically, so frame ``f`` of any run is the same
  array whatever was asked before it.
* :func:`fast_pairs`: isolated pairs of fast spheres, each pair far from the others, with
  the ground truth (does the pair touch during the frame?) from the plugin's exact kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from panda3d_ccd.sweep import sphere_sphere_toi

__all__ = ["MovingSpheres", "PairScene", "fast_pairs"]

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]

#: Panda3D stores positions as float32: every position handed to the engine is rounded to
#: float32 first, so the ground truth is computed on exactly the coordinates Panda3D holds.
_F32 = np.float32


def _round_f32(x: Float) -> Float:
    return np.asarray(x, dtype=_F32).astype(np.float64)


def _unit_vectors(rng: np.random.Generator, n: int) -> Float:
    """(n, 3) float64 directions uniform on the sphere."""
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@dataclass(frozen=True)
class MovingSpheres:
    """Spheres of one radius bouncing inside the box ``[0, side]^3``.

    Attributes
    ----------
    radius : float
    side : float
        Box edge, ``density_factor * n ** (1/3)``: the density does not depend on ``n``.
    start : (n, 3) float64
        Centres at frame 0, at least ``2 * radius`` apart.
    velocity : (n, 3) float64
        Units per frame.
    fast : (n,) bool
        The fast movers.
    """

    radius: float
    side: float
    start: Float
    velocity: Float
    fast: Bool

    @classmethod
    def generate(
        cls,
        n: int,
        *,
        seed: int,
        radius: float = 0.5,
        density_factor: float = 4.0,
        fast_share: float = 0.1,
        fast_speed: float = 50.0,
        slow_speed: float = 0.5,
    ) -> MovingSpheres:
        """A scene of ``n`` spheres; speeds vary by +-25% around the nominal ones."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        rng = np.random.default_rng(seed)
        side = density_factor * n ** (1.0 / 3.0)
        cells = math.ceil(n ** (1.0 / 3.0) - 1e-9)
        cell = side / cells
        if cell < 2.0 * radius:
            raise ValueError(
                f"density_factor {density_factor} leaves cells of {cell:.3g}, "
                f"smaller than a sphere (diameter {2 * radius})"
            )
        chosen = rng.choice(cells**3, size=n, replace=False)
        ijk = np.stack(np.unravel_index(chosen, (cells,) * 3), axis=1).astype(np.float64)
        jitter = rng.uniform(-1.0, 1.0, size=(n, 3)) * (0.5 * cell - radius)
        start = (ijk + 0.5) * cell + jitter
        fast = np.zeros(n, bool)
        fast[rng.choice(n, size=int(round(fast_share * n)), replace=False)] = True
        speed = np.where(fast, fast_speed, slow_speed) * rng.uniform(0.75, 1.25, size=n)
        velocity = _unit_vectors(rng, n) * speed[:, None]
        return cls(radius=radius, side=side, start=start, velocity=velocity, fast=fast)

    @property
    def n(self) -> int:
        return len(self.start)

    def positions(self, frame: int) -> Float:
        """(n, 3) float64 centres at ``frame``, reflected off the walls.

        Each coordinate moves freely on the line and is folded back into
        ``[radius, side - radius]`` (a triangle wave), which is exactly an elastic bounce.
        The straight segment between two frames stays inside the box, which is convex.
        """
        lo = self.radius
        width = self.side - 2.0 * self.radius
        u = np.mod(self.start - lo + self.velocity * frame, 2.0 * width)
        return _round_f32(lo + width - np.abs(u - width))

    def wall_planes(self) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
        """The six walls as (inward normal, point on the plane); solid outside the box."""
        s = self.side
        return [
            ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
            ((-1.0, 0.0, 0.0), (s, 0.0, 0.0)),
            ((0.0, 1.0, 0.0), (0.0, 0.0, 0.0)),
            ((0.0, -1.0, 0.0), (0.0, s, 0.0)),
            ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0)),
            ((0.0, 0.0, -1.0), (0.0, 0.0, s)),
        ]


@dataclass(frozen=True)
class PairScene:
    """Pairs of spheres A and B moving during one frame, far apart from other pairs.

    Attributes
    ----------
    a0, a1, b0, b1 : (m, 3) float64
        World centres at the start and end of the frame (float32-representable).
    ra, rb : (m,) float64
    truth : (m,) bool
        The surfaces touch during the frame (finite exact time of impact).
    """

    a0: Float
    a1: Float
    b0: Float
    b1: Float
    ra: Float
    rb: Float
    truth: Bool

    @property
    def m(self) -> int:
        return len(self.ra)


def _closest_distance(a0: Float, a1: Float, b0: Float, b1: Float) -> Float:
    """(m,) smallest centre distance over t in [0, 1] for linear motion."""
    d0 = a0 - b0
    dv = (a1 - a0) - (b1 - b0)
    vv = np.einsum("ij,ij->i", dv, dv)
    t = np.clip(
        np.divide(-np.einsum("ij,ij->i", d0, dv), vv, out=np.zeros_like(vv), where=vv > 0),
        0.0,
        1.0,
    )
    return np.linalg.norm(d0 + t[:, None] * dv, axis=1)


def fast_pairs(
    m: int,
    *,
    seed: int,
    speed: tuple[float, float] = (20.0, 60.0),
    radius: tuple[float, float] = (0.25, 1.0),
    grazing_margin: float = 0.02,
) -> PairScene:
    """``m`` pairs of fast spheres, about half of which touch during the frame.

    Each pair is built around a meeting moment ``tc`` (uniform in the frame): at ``tc`` the
    centres are ``d`` apart with ``d`` uniform in ``[0, 2 (ra + rb)]``, and both spheres
    cross the frame at ``speed`` units in random directions. Pairs that overlap at the start
    or whose closest approach is within ``grazing_margin`` of touching are drawn again, so
    float32 rounding inside Panda3D never decides an outcome. Pairs sit on a grid with a
    spacing larger than any pair's extent, so no two pairs can meet.
    """
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    rng = np.random.default_rng(seed)
    rows: list[tuple[Float, ...]] = []
    have = 0
    while have < m:
        k = 2 * (m - have) + 16
        ra = rng.uniform(*radius, size=k)
        rb = rng.uniform(*radius, size=k)
        va = _unit_vectors(rng, k) * rng.uniform(*speed, size=k)[:, None]
        vb = _unit_vectors(rng, k) * rng.uniform(*speed, size=k)[:, None]
        tc = rng.uniform(0.0, 1.0, size=k)
        sep = _unit_vectors(rng, k) * ((ra + rb) * rng.uniform(0.0, 2.0, size=k))[:, None]
        a0 = 0.5 * sep - va * tc[:, None]
        b0 = -0.5 * sep - vb * tc[:, None]
        a1, b1 = a0 + va, b0 + vb
        touch = ra + rb
        start_gap = np.linalg.norm(a0 - b0, axis=1)
        closest = _closest_distance(a0, a1, b0, b1)
        ok = (start_gap > touch * (1 + grazing_margin)) & (
            np.abs(closest - touch) > grazing_margin * touch
        )
        take = np.flatnonzero(ok)[: m - have]
        rows.append(tuple(x[take] for x in (a0, a1, b0, b1, ra, rb)))
        have += len(take)
    a0, a1, b0, b1, ra, rb = (np.concatenate(col) for col in zip(*rows))
    # Pair i is centred on its own grid cell; a pair never leaves a ball of this radius.
    extent = float(np.max(np.linalg.norm(np.concatenate([a0, a1, b0, b1]), axis=1)))
    spacing = 2.0 * (extent + radius[1]) + 1.0
    per_side = math.ceil(m ** (1.0 / 3.0) - 1e-9)
    grid = np.stack(np.unravel_index(np.arange(m), (per_side,) * 3), axis=1) * spacing
    a0, a1, b0, b1 = (_round_f32(x + grid) for x in (a0, a1, b0, b1))
    ra, rb = _round_f32(ra), _round_f32(rb)
    truth = np.isfinite(sphere_sphere_toi(a0, a1, ra, b0, b1, rb))
    return PairScene(a0=a0, a1=a1, b0=b0, b1=b1, ra=ra, rb=rb, truth=truth)
