"""Exact swept test of a moving sphere against a fixed axis-aligned box (a ``CollisionBox``).

The box ``lo``-``hi`` (lo <= hi; equal on an axis: a flat box) swept against a sphere of
radius r is a rounded box: six offset faces, twelve edge cylinders and eight corner spheres.
The box is solid: a centre inside it approaches when it moves in through every nearest face
(the signed distance decreases). A contact is a touch while approaching; an overlapping
sphere moving away or along gives inf, and grazes are no contact (tested by depth).

Feature indices in the returned :class:`~._result.Sweep`:

- FACE ``2 axis + side``: 0..5 = -x, +x, -y, +y, -z, +z;
- EDGE ``4 axis + 2 side_j + side_k``, for the edge running along ``axis`` at the sides
  (0 low, 1 high) of the other two axes j < k: 0..3 along x at (y, z) = (lo, lo), (lo, hi),
  (hi, lo), (hi, hi); 4..7 along y at (x, z); 8..11 along z at (x, y);
- VERTEX ``4 side_x + 2 side_y + side_z``: 0 is ``lo``, 7 is ``hi``.

This module never imports panda3d.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_box_toi
>>> sphere_box_toi([[0, 0, 5]], [[0, 0, -5]], 1.0, [-1, -1, -1], [1, 1, 1])
array([0.3])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._arrays import largest_abs
from . import _features as F
from ._result import EDGE, FACE, VERTEX, Sweep

__all__ = ["sphere_box_toi"]

Float = NDArray[np.float64]

_OTHER = ((1, 2), (0, 2), (0, 1))


def _edge_tables() -> tuple[Float, Float]:
    """Edge ``4 axis + 2 sj + sm``, from its start to its end in units of the half sizes:
    along ``axis`` from its low face, at the low (0) or high (1) side of the other two
    axes j < m. (12, 3) each."""
    starts, vectors = np.zeros((12, 3)), np.zeros((12, 3))
    for axis, (j, m) in enumerate(_OTHER):
        for sj in (0, 1):
            for sm in (0, 1):
                edge = 4 * axis + 2 * sj + sm
                starts[edge, [axis, j, m]] = -1.0, 2.0 * sj - 1.0, 2.0 * sm - 1.0
                vectors[edge, axis] = 2.0
    return starts, vectors


_EDGE_STARTS, _EDGE_VECTORS = _edge_tables()
#: Corner ``4 x + 2 y + z`` (each 0 low, 1 high) in units of the half sizes, (8, 3).
_CORNERS = np.array([[(c >> 2) & 1, (c >> 1) & 1, c & 1] for c in range(8)]) * 2.0 - 1.0


def sphere_box_toi(
    c0: ArrayLike, c1: ArrayLike, r: ArrayLike, lo: ArrayLike, hi: ArrayLike
) -> Float:
    """Time of first contact of a moving sphere with a fixed axis-aligned box.

    Parameters
    ----------
    c0, c1 : (n, 3) float64
        Sphere centres at the start (t = 0) and end (t = 1) of the frame.
    r : (n,) or scalar float64
        Radii, finite and >= 0.
    lo, hi : (n, 3) float64
        The box's lowest and highest corners, ``lo <= hi``.

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] of the first touch while approaching; ``inf`` where none.

    Examples
    --------
    Onto the top face, onto the edge along y at x = z = 1 (diagonally), onto the corner
    ``hi`` along the diagonal, sliding along the top face (a graze).

    >>> s = 1 / 2 ** 0.5
    >>> sphere_box_toi([[0, 0, 5], [1 + 3 * s, 0, 1 + 3 * s], [3, 3, 3], [-5, 0, 2]],
    ...                [[0, 0, -5], [1, 0, 1], [1, 1, 1], [5, 0, 2]], 1.0, [-1, -1, -1], [1, 1, 1])
    array([0.3       , 0.66666667, 0.71132487,        inf])
    >>> sphere_box_toi([[0, 0, 5]], [[0, 0, -5]], 1.0, [1, -1, -1], [-1, 1, 1])
    Traceback (most recent call last):
        ...
    ValueError: lo must be <= hi, got lo [1.0, -1.0, -1.0] and hi [-1.0, 1.0, 1.0] in row 0
    """
    names = ("c0", "c1", "r", "lo", "hi")
    rows = _check.broadcast(
        names,
        _check.coordinates("c0", c0),
        _check.coordinates("c1", c1),
        _check.lengths("r", r),
        _check.coordinates("lo", lo),
        _check.coordinates("hi", hi),
    )
    bad = np.flatnonzero(~(rows[3] <= rows[4]).all(axis=1))
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"lo must be <= hi, got lo {rows[3][i].tolist()} and hi {rows[4][i].tolist()}"
            f" in row {i}"
        )
    return _sweep(*rows).t


def _sweep(c0: Float, c1: Float, r: Float, lo: Float, hi: Float) -> Sweep:
    """:func:`sphere_box_toi` of rows already checked and broadcast ((k, 3) float64,
    (k,) float64), with where and how each touched."""
    k = len(c0)
    mid = 0.5 * (lo + hi)
    half = F.columns(0.5 * (hi - lo))
    w0 = F.columns(c0 - mid)
    v = F.columns(c1 - c0)
    speed = F.norm(v)
    size = np.maximum(r, 2.0 * F.norm(half))
    approach_eps, tol = F.thresholds(speed, size, largest_abs(c0, c1, lo, hi))
    motion = F.Motion(v, np.zeros(k), np.ones(k), approach_eps, tol)

    near = np.clip(w0, -half, half)
    gap = w0 - near
    dist = F.norm(gap)
    start_inside = dist <= r
    approaching = (dist > 0) & (F.dot(gap, v) < -dist * approach_eps)
    # Inside the box the signed distance is the largest of the faces' (negative) plane
    # distances; it decreases only if it does for every face that is nearest.
    depth = np.concatenate([half - w0, half + w0])  # +x, +y, +z then -x, -y, -z
    rate = np.concatenate([v, -v])
    nearest = depth == depth.min(axis=0)
    deeper = ~np.any(nearest & ~(rate < -approach_eps), axis=0)
    buried = dist == 0
    approaching = np.where(buried, deeper, approaching)

    best = F.Best(k)
    for axis in range(3):
        for side in (-1.0, 1.0):
            s0 = side * w0[axis] - half[axis]
            dn = side * v[axis]
            moving_in = dn < -approach_eps
            entry = np.divide(s0 - r, -dn, where=moving_in, out=np.full(k, np.inf))
            t = np.maximum(entry, 0.0)
            ok = moving_in & ((entry >= 0) | (s0 > 0)) & (t <= 1.0)
            centre = w0 + np.where(ok, t, 0.0) * v
            # Edges included, with the tolerance: an entry exactly through an edge must
            # not fall between the two faces by a rounding (a point has no edge piece).
            for o in _OTHER[axis]:
                ok &= np.abs(centre[o]) <= half[o] + tol
            best.offer(np.where(ok, t, np.inf), FACE, 2 * axis + (side > 0))
    # The twelve edges, then the eight corners, each kind in one call (see F.stack).
    edges = F.stack(list(_EDGE_VECTORS[:, :, None] * half))
    starts = F.stack(list(w0 - _EDGE_STARTS[:, :, None] * half))
    best.offer_pieces(F.edge_entry(starts, edges, F.stack([r] * 12), motion.repeat(12)).t, 12, EDGE)
    corners = F.stack(list(w0 - _CORNERS[:, :, None] * half))
    entry = F.vertex_entry(corners, F.stack([r] * 8), motion.repeat(8), F.stack([speed] * 8))
    best.offer_pieces(entry.t, 8, VERTEX)

    t = np.where(start_inside, np.where(approaching, 0.0, np.inf), best.t)
    hit = np.isfinite(t)
    from_start = hit & start_inside
    centre = w0 + np.where(hit, t, 0.0) * v
    point = np.clip(centre, -half, half)
    outside = np.abs(centre) > half
    clipped = outside.sum(axis=0)
    side_hi = centre > 0
    rows = np.arange(k)
    # Where the contact is with a centre inside the box, the nearest face.
    face_of = np.argmin(depth, axis=0)  # 0..2: +axis, 3..5: -axis
    start_face = np.where(face_of < 3, 2 * face_of + 1, 2 * (face_of - 3))
    free = np.argmin(outside, axis=0)  # the one unclipped axis of an edge contact
    j_of = np.where(free == 0, 1, 0)
    m_of = np.where(free == 2, 1, 2)
    out_axis = np.argmax(outside, axis=0)  # the one clipped axis of a face contact
    start_feature = np.select([clipped == 3, clipped == 2], [VERTEX, EDGE], FACE)
    start_index = np.select(
        [clipped == 3, clipped == 2, clipped == 1],
        [
            4 * side_hi[0] + 2 * side_hi[1] + side_hi[2],
            4 * free + 2 * side_hi[j_of, rows] + side_hi[m_of, rows],
            2 * out_axis + side_hi[out_axis, rows],
        ],
        start_face,
    )
    feature = np.where(from_start, start_feature, best.feature).astype(np.int8)
    index = np.where(from_start, start_index, best.index).astype(np.int64)
    feature[~hit] = -1
    index[~hit] = -1

    on_face = feature == FACE
    face_axis = np.where(on_face, index // 2, 0)
    face_normal = np.zeros((3, k))
    face_normal[face_axis, rows] = np.where(index % 2 == 1, 1.0, -1.0)
    # A centre inside the box touches through its nearest face: project it there.
    inner = rows[from_start & buried]
    point[face_axis[inner], inner] = (
        face_normal[face_axis[inner], inner] * half[face_axis[inner], inner]
    )
    normal = np.where(on_face, face_normal, F.unit(centre - point)).T
    point = point.T + mid
    point[~hit] = np.nan
    normal[~hit] = np.nan
    return Sweep(t, point, normal, feature, index)
