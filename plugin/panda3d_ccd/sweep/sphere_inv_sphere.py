"""Exact swept test of a moving sphere inside a fixed inverse sphere (a ``CollisionInvSphere``).

The inverse sphere ``(center, radius)`` is solid everywhere outside the sphere; the moving
sphere lives inside and touches the wall when its centre, moving outward, reaches
``radius - r`` from the centre. The obstacle is not convex, so the convex kernels' rule
"overlapping and not approaching: never" does not hold here: a sphere overlapping the wall
and moving inward crosses the room and touches the far wall (at the later root), and a
straight path tangent to the wall from inside goes into it at once (t = 0). A sphere
larger than the room is always overlapping and touches as soon as its centre moves away from
the room's centre.

Feature indices in the returned :class:`~._result.Sweep`: FACE 0 (the wall).

This module never imports panda3d.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_inv_sphere_toi
>>> sphere_inv_sphere_toi([[0, 0, 0]], [[8, 0, 0]], 1.0, [0, 0, 0], 5.0)
array([0.5])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._arrays import largest_abs
from . import _features as F
from ._result import FACE, Sweep

__all__ = ["sphere_inv_sphere_toi"]

Float = NDArray[np.float64]


def sphere_inv_sphere_toi(
    c0: ArrayLike, c1: ArrayLike, r: ArrayLike, center: ArrayLike, radius: ArrayLike
) -> Float:
    """Time of first contact of a moving sphere with the wall of an inverse sphere.

    Parameters
    ----------
    c0, c1 : (n, 3) float64
        Sphere centres at the start (t = 0) and end (t = 1) of the frame.
    r : (n,) or scalar float64
        Sphere radii, finite and >= 0.
    center : (n, 3) float64
        Centres of the inverse spheres.
    radius : (n,) or scalar float64
        Their radii, finite and >= 0; the solid is outside.

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] of the first touch while moving outward; ``inf`` where none.

    Examples
    --------
    Out to the wall; overlapping the wall and moving outward (0); overlapping and moving
    inward, across the room to the far wall; staying inside.

    >>> sphere_inv_sphere_toi([[0, 0, 0], [4.5, 0, 0], [4.5, 0, 0], [0, 0, 0]],
    ...                       [[8, 0, 0], [5, 0, 0], [-4.5, 0, 0], [1, 1, 0]], 1.0, [0, 0, 0], 5.0)
    array([0.5       , 0.        , 0.94444444,        inf])
    >>> sphere_inv_sphere_toi([[0, 0, 0]], [[8, 0, 0]], 1.0, [0, 0], 5.0)
    Traceback (most recent call last):
        ...
    ValueError: center must have shape (n, 3), got (2,)
    """
    names = ("c0", "c1", "r", "center", "radius")
    rows = _check.broadcast(
        names,
        _check.coordinates("c0", c0),
        _check.coordinates("c1", c1),
        _check.lengths("r", r),
        _check.coordinates("center", center),
        _check.lengths("radius", radius),
    )
    return _sweep(*rows).t


def _sweep(c0: Float, c1: Float, r: Float, center: Float, radius: Float) -> Sweep:
    """:func:`sphere_inv_sphere_toi` of rows already checked and broadcast ((k, 3) float64,
    (k,) float64), with where and how each touched."""
    p0 = F.columns(c0 - center)
    v = F.columns(c1 - c0)
    room = radius - r  # how far the centre may go from the room's centre
    speed = F.norm(v)
    a = speed * speed
    half_b = F.dot(p0, v)
    dist = F.norm(p0)
    approach_eps, _tol = F.thresholds(speed, np.maximum(r, radius), largest_abs(c0, c1, center))
    overlapping = dist >= room
    outward = half_b > dist * approach_eps
    moving = a > 0

    has_room = room > 0
    off_line = F.norm(F.cross(p0, v))
    disc = a * np.maximum(room, 0.0) ** 2 - off_line * off_line
    crosses = moving & has_room & (disc > 0)
    sq = np.sqrt(np.where(crosses, disc, 0.0))
    c = (dist - room) * (dist + room)
    # The later root (the outward crossing), in the form without cancellation for each
    # sign of half_b: (-b + sq) / a, or c / (-b - sq) = -c / (b + sq).
    later = np.where(
        half_b < 0,
        (-half_b + sq) / np.where(crosses, a, 1.0),
        -c / np.where(crosses & (half_b + sq > 0), half_b + sq, 1.0),
    )
    # Never inside the room along this line (or no room): outward from the closest approach.
    closest = -half_b / np.where(moving, a, 1.0)
    t = np.where(crosses, later, np.where(moving & overlapping, closest, np.inf))
    t = np.maximum(t, 0.0)
    t[overlapping & outward] = 0.0
    t[~moving | (t > 1.0)] = np.inf

    hit = np.isfinite(t)
    centre = p0 + np.where(hit, t, 0.0) * v
    out = F.unit(centre, fallback=F.unit(v, speed)).T
    point = center + radius[:, None] * out
    normal = -out
    point[~hit] = np.nan
    normal[~hit] = np.nan
    feature = np.where(hit, FACE, -1).astype(np.int8)
    index = np.where(hit, 0, -1).astype(np.int64)
    return Sweep(t, point, normal, feature, index)
