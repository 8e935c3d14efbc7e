"""Small array helpers shared by the per-frame code."""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from ._tolerance import DEGENERATE_REL, DIST_REL_EPS

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]


def unique(values: NDArray) -> NDArray:
    """Sorted unique values, by a sort.

    ``np.unique`` without ``return_index`` (and ``np.union1d``, which calls it) takes a
    hash path in numpy 2.x that costs about 180 us for 100 integers and 2 ms for 10,000;
    a sort costs 3 us and 0.2 ms.
    """
    ordered = np.sort(values)
    keep = np.ones(len(ordered), bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def ranges(starts: NDArray | int, counts: NDArray) -> NDArray:
    """Concatenated ranges ``arange(s, s + c)`` for each start (or one for all) and count,
    without a loop."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) + np.repeat(starts - (ends - counts), counts)


def isin_sorted(values: NDArray, ordered: NDArray) -> NDArray:
    """(k,) whether each of ``values`` is in ``ordered`` (sorted, unique): ``np.isin``,
    by a binary search. ``np.isin`` makes both sides unique first, by the hash path of
    ``np.unique`` (see :func:`unique`): 3.7 ms a pass at 1,000 sliding movers on a level."""
    if len(ordered) == 0:
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered.take(at) == values


# Reductions across the three columns of (k, 3) arrays, spelled out by column: numpy's
# axis=1 reductions over a length-3 axis cost 6 to 20 times more at k = 10,000 (a norm
# 352 us against 48 us, a max 462 us against 16 us), with the same results bit for bit.


def length(v: NDArray) -> NDArray:
    """(k,) Euclidean lengths of the rows of v (k, 3); ``np.linalg.norm(v, axis=1)``."""
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    return np.sqrt(x * x + y * y + z * z)


def lengths(*vectors: NDArray) -> tuple[NDArray, ...]:
    """:func:`length` of each of several (k, 3) arrays of one k, in one call: the same
    numbers (each row's own), at a third of the numpy calls for three arrays (the
    per-pass geometry of turning pieces asks for a few at a time, on few rows)."""
    return tuple(length(np.concatenate(vectors)).reshape(len(vectors), len(vectors[0])))


#: The coordinates each term of a cross product takes: a x b = a[NEXT] b[LAST] -
#: a[LAST] b[NEXT] (rows here, columns in the kernels' ``_features.cross``).
CROSS_NEXT, CROSS_LAST = np.array([1, 2, 0]), np.array([2, 0, 1])


def cross(a: NDArray, b: NDArray) -> NDArray:
    """(k, 3) cross products of the rows of a and b (k, 3): ``np.cross(a, b)``, the same
    products and differences in the same order (so the same bits), without its Python
    wrapper (some 10 us a call, several calls a pass where pieces turn)."""
    return a[:, CROSS_NEXT] * b[:, CROSS_LAST] - a[:, CROSS_LAST] * b[:, CROSS_NEXT]


def norm(v: NDArray) -> NDArray:
    """(k,) Euclidean lengths of the rows of v (k, w) of any width (quaternions):
    ``np.linalg.norm(v, axis=1)``, which computes just this, behind a Python wrapper that
    costs more than the arithmetic at the row counts of a pass. (For (k, 3) rows,
    :func:`length`: the same numbers, faster at many rows.)"""
    return np.sqrt(np.add.reduce(v * v, axis=1))


def row_max(v: NDArray) -> NDArray:
    """(k,) largest of each row of v (k, 3); ``v.max(axis=1)``, nan included."""
    return np.maximum(np.maximum(v[:, 0], v[:, 1]), v[:, 2])


def row_all(flags: NDArray) -> NDArray:
    """(k,) rows of flags (k, 3) that are all true."""
    return flags[:, 0] & flags[:, 1] & flags[:, 2]


def row_any(flags: NDArray) -> NDArray:
    """(k,) rows of flags (k, 3) with any true."""
    return flags[:, 0] | flags[:, 1] | flags[:, 2]


def largest_abs(*points: NDArray) -> NDArray:
    """(k,) largest coordinate magnitude of each row across the (k, 3) arrays points."""
    # The magnitudes' largest by element first, then across the row once: the same
    # value (a largest of the same numbers, nan included), with one row reduction in all.
    scale = np.abs(points[0])
    for p in points[1:]:
        np.maximum(scale, np.abs(p), out=scale)
    return row_max(scale)


def nearest_clear(motion: Float, normals: Float, offsets: Float, on: Bool) -> Float:
    """(k, 3) the point nearest ``motion`` (k, 3) with ``normal . x >= offset`` for each
    plane (k, p, 3), (k, p) that is ``on`` (k, p); nan rows where there is none. It lies on
    at most three of them (in 3D), so each face, edge and vertex of that region is tried:
    the nearest of those that are clear of every plane."""
    k = len(motion)
    # The planes that are on first: only those are combined.
    order = np.argsort(~on, axis=1, kind="stable")
    on = np.take_along_axis(on, order, axis=1)
    n = np.take_along_axis(normals, order[:, :, None], axis=1)
    b = np.take_along_axis(offsets, order, axis=1)
    p = int(on.sum(axis=1).max(initial=0))
    on, n, b = on[:, :p], n[:, :p], b[:, :p]
    eps = DIST_REL_EPS * np.maximum(1.0, length(motion))
    best = np.where(_clear_of(motion, n, b, on, eps)[:, None], motion, np.nan)
    gap = np.where(np.isfinite(best[:, 0]), 0.0, np.inf)
    for size in (1, 2, 3):
        combos = np.array(list(itertools.combinations(range(p), size)), np.int64)
        if not len(combos):
            break
        # (k, c) candidates: the nearest point on each combination's planes.
        c = len(combos)
        x = _on_planes(
            np.repeat(motion, c, axis=0),
            n[:, combos].reshape(k * c, size, 3),
            b[:, combos].reshape(k * c, size),
        )
        live = on[:, combos].all(axis=2).reshape(-1) & row_all(np.isfinite(x))
        rows = np.repeat(np.arange(k), c)
        fits = live.copy()
        r = rows[live]
        fits[live] = _clear_of(x[live], n[r], b[r], on[r], eps[r])
        d = np.where(fits, ((x - motion[rows]) ** 2).sum(axis=1), np.inf).reshape(k, c)
        pick = np.argmin(d, axis=1)
        near = d[np.arange(k), pick]
        better = near < gap
        best[better] = x.reshape(k, c, 3)[better, pick[better]]
        gap[better] = near[better]
    return best


def _clear_of(x: Float, n: Float, b: Float, on: Bool, eps: Float) -> Bool:
    """(k,) points x (k, 3) on the front of every plane ``n . x >= b`` that is on, to eps."""
    return ((np.einsum("ikj,ij->ik", n, x) >= b - eps[:, None]) | ~on).all(axis=1)


def _on_planes(motion: Float, n: Float, b: Float) -> Float:
    """(k, 3) the point nearest ``motion`` on the planes ``n . x = b`` (k, c, 3), (k, c),
    c of 1 to 3; nan where they do not meet in one point, line or plane."""
    c = n.shape[1]
    if c == 1:
        over = np.einsum("ij,ij->i", motion, n[:, 0]) - b[:, 0]
        return motion - n[:, 0] * over[:, None]
    if c == 2:  # a third row keeps the coordinate along their crease
        crease = cross(n[:, 0], n[:, 1])
        n = np.concatenate([n, crease[:, None]], axis=1)
        b = np.concatenate([b, np.einsum("ij,ij->i", crease, motion)[:, None]], axis=1)
    solid = np.abs(np.linalg.det(n)) > DEGENERATE_REL
    x = np.full_like(motion, np.nan)
    if solid.any():
        x[solid] = np.linalg.solve(n[solid], b[solid][:, :, None])[:, :, 0]
    return x
