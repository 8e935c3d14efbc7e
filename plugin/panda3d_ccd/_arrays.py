"""Small array helpers shared by the per-frame code."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


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

