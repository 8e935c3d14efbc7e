"""Exact swept test of a moving sphere against a fixed capsule (a ``CollisionCapsule``).

The capsule is the segment ``a``-``b`` inflated by ``radius``; swept against a sphere of
radius r it is the segment inflated by r + radius: a cylinder clipped to the segment and a
sphere at each end. A zero-length capsule is a sphere. A contact is a touch while
approaching (the distance from the centre to the capsule decreasing); an overlapping sphere
moving away or along gives inf, and grazes are no contact (tested by depth).

Feature indices in the returned :class:`~._result.Sweep`: EDGE 0 the body, VERTEX 0 the
cap at ``a``, VERTEX 1 the cap at ``b``.

This module never imports panda3d.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_capsule_toi
>>> sphere_capsule_toi([[1, 5, 0]], [[1, -5, 0]], 0.5, [0, 0, 0], [2, 0, 0], 0.5)
array([0.4])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._arrays import largest_abs
from . import _features as F
from ._result import EDGE, VERTEX, Sweep

__all__ = ["sphere_capsule_toi"]

Float = NDArray[np.float64]


def sphere_capsule_toi(
    c0: ArrayLike, c1: ArrayLike, r: ArrayLike, a: ArrayLike, b: ArrayLike, radius: ArrayLike
) -> Float:
    """Time of first contact of a moving sphere with a fixed capsule.

    Parameters
    ----------
    c0, c1 : (n, 3) float64
        Sphere centres at the start (t = 0) and end (t = 1) of the frame.
    r : (n,) or scalar float64
        Sphere radii, finite and >= 0.
    a, b : (n, 3) float64
        Ends of the capsule's segment (equal: the capsule is a sphere).
    radius : (n,) or scalar float64
        Capsule radii, finite and >= 0.

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] of the first touch while approaching; ``inf`` where none.

    Examples
    --------
    Onto the body, onto the cap at ``b`` along the axis, sliding along the body (a graze).

    >>> sphere_capsule_toi([[1, 5, 0], [9, 0, 0], [-3, 1, 0]], [[1, -5, 0], [3, 0, 0], [5, 1, 0]],
    ...                    0.5, [0, 0, 0], [2, 0, 0], 0.5)
    array([0.4, 1. , inf])
    >>> sphere_capsule_toi([[1, 5, 0]], [[1, -5, 0]], 0.5, [0, 0, 0], [2, 0, 0], -0.5)
    Traceback (most recent call last):
        ...
    ValueError: radius must be finite and >= 0, got -0.5
    """
    names = ("c0", "c1", "r", "a", "b", "radius")
    rows = _check.broadcast(
        names,
        _check.coordinates("c0", c0),
        _check.coordinates("c1", c1),
        _check.lengths("r", r),
        _check.coordinates("a", a),
        _check.coordinates("b", b),
        _check.lengths("radius", radius),
    )
    return _sweep(*rows).t


def _sweep(c0: Float, c1: Float, r: Float, a: Float, b: Float, radius: Float) -> Sweep:
    """:func:`sphere_capsule_toi` of rows already checked and broadcast ((k, 3) float64,
    (k,) float64), with where and how each touched."""
    k = len(c0)
    w0 = F.columns(c0 - a)
    v = F.columns(c1 - c0)
    axis = F.columns(b - a)
    reach = r + radius
    speed = F.norm(v)
    size = np.maximum(reach, F.norm(axis) + radius)
    approach_eps, tol = F.thresholds(speed, size, largest_abs(c0, c1, a, b))
    motion = F.Motion(v, np.zeros(k), np.ones(k), approach_eps, tol)

    origin = np.zeros_like(w0)
    near, u0 = F.closest_on_segment(w0, origin, axis)
    gap = w0 - near
    dist = F.norm(gap)
    start_inside = dist <= reach
    approaching = (dist > 0) & (F.dot(gap, v) < -dist * approach_eps)

    best = F.Best(k)
    best.offer(F.edge_entry(w0, axis, reach, motion).t, EDGE, 0)
    best.offer(F.vertex_entry(w0, reach, motion, speed).t, VERTEX, 0)
    best.offer(F.vertex_entry(w0 - axis, reach, motion, speed).t, VERTEX, 1)
    t = np.where(start_inside, np.where(approaching, 0.0, np.inf), best.t)

    hit = np.isfinite(t)
    from_start = hit & start_inside
    feature = np.where(from_start, np.where(u0 == 0, VERTEX, EDGE), best.feature)
    index = np.where(from_start, np.where(u0 == 1, 1, 0), best.index)
    # A zero-length capsule is one sphere: its cap at a.
    ends = from_start & (u0 == 1) & (F.dot(axis, axis) > 0)
    feature = np.where(ends, VERTEX, feature).astype(np.int8)
    feature[~hit] = -1
    index[~hit] = -1
    centre = w0 + np.where(hit, t, 0.0) * v
    on_axis = F.closest_on_segment(centre, origin, axis)[0]
    normal = F.unit(centre - on_axis)
    point = (on_axis + radius * normal).T + a
    normal = normal.T
    point[~hit] = np.nan
    normal[~hit] = np.nan
    return Sweep(t, point, normal, feature, index)
