"""Exact swept test of a moving sphere against a solid half-space (a ``CollisionPlane``).

The plane is ``normal . x + offset = 0``, solid behind it. A contact is a touch while the
sphere moves into the plane; sliding along it or leaving it is not.

This module never imports panda3d.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_plane_toi
>>> sphere_plane_toi([[0, 0, 3]], [[0, 0, -3]], 1.0, (0, 0, 1), 0.0)
array([0.33333333])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._arrays import largest_abs, length
from .._tolerance import DIST_REL_EPS, ROUNDING_REL

__all__ = ["sphere_plane_toi", "sphere_plane_overlap"]

Float = NDArray[np.float64]


def _rowdot(a: Float, b: Float) -> Float:
    return np.einsum("ij,ij->i", a, b)


def _plane(normal: ArrayLike, offset: ArrayLike) -> tuple[Float, Float]:
    """Unit normals (n, 3) and offsets (n,) scaled to match, from any non-zero normal."""
    nrm = _check.points("normal", normal)
    off = np.asarray(offset, dtype=np.float64)
    if off.ndim > 1:
        raise ValueError(f"offset must be a scalar or have shape (n,), got {off.shape}")
    if off.ndim == 1 and off.shape[0] != 1 and nrm.shape[0] not in (1, off.shape[0]):
        raise ValueError(f"row counts do not match (normal: {nrm.shape}, offset: {off.shape})")
    size = np.linalg.norm(nrm, axis=1)
    bad = ~np.isfinite(size) | (size == 0)
    if np.any(bad):
        raise ValueError(f"normal must be finite and non-zero, got {nrm[bad][0].tolist()}")
    if not np.all(np.isfinite(off)):
        raise ValueError(f"offset must be finite, got {off}")
    return nrm / size[:, None], off / size


def _sphere_plane_terms(
    c0: ArrayLike,
    c1: ArrayLike,
    r: ArrayLike,
    normal: ArrayLike,
    offset: ArrayLike,
    r1: ArrayLike | None = None,
) -> tuple[Float, Float, Float, Float]:
    nrm, off = _plane(normal, offset)
    named = {
        "c0": _check.points("c0", c0),
        "c1": _check.points("c1", c1),
        "r": _check.lengths("r", r),
        "normal": nrm,
        "offset": off,
    }
    if r1 is not None:
        named["r1"] = _check.lengths("r1", r1)
    rows = _check.broadcast(tuple(named), *named.values())
    c0_, c1_, r_, nrm_, off_ = rows[:5]
    return _plane_terms(c0_, c1_, r_, nrm_, off_, None if r1 is None else rows[5] - r_)


def _plane_terms(
    c0_: Float,
    c1_: Float,
    r_: Float,
    nrm_: Float,
    off_: Float,
    grow: Float | None = None,
    coord_scale: Float | None = None,
) -> tuple[Float, Float, Float, Float]:
    """:func:`_sphere_plane_terms` of rows already checked: (k, 3) points and unit normals,
    (k,) radii and offsets; ``grow`` (k,) the radii's growth over the frame (None: none);
    ``coord_scale`` (k,) ``largest_abs(c0_, c1_)``, where the caller has it."""
    motion = c1_ - c0_
    d0 = _rowdot(nrm_, c0_) + off_
    dn = _rowdot(nrm_, motion)
    # The floor: a sphere sliding along a tilted plane far from the origin gets a normal
    # motion that is rounding noise of its coordinates, which must not read as "moving in".
    if coord_scale is None:
        coord_scale = largest_abs(c0_, c1_)
    approach_eps = DIST_REL_EPS * length(motion) + ROUNDING_REL * coord_scale
    if grow is not None:  # the gap shrinks by the growth too, linearly in t
        dn = dn - grow
        approach_eps = approach_eps + DIST_REL_EPS * np.abs(grow)
    return d0 - r_, dn, approach_eps, r_


def sphere_plane_toi(
    c0: ArrayLike,
    c1: ArrayLike,
    r: ArrayLike,
    normal: ArrayLike,
    offset: ArrayLike,
    *,
    r1: ArrayLike | None = None,
) -> Float:
    """Time of first contact of a moving sphere with a solid half-space.

    Parameters
    ----------
    c0, c1 : (n, 3) float64
        Sphere centres at the start and end of the frame.
    r : (n,) or scalar float64
        Radii, finite and >= 0.
    normal : (3,) or (n, 3) float64
        Plane normals (need not be unit length; they are normalised, and ``offset`` with
        them). The plane is ``normal . x + offset = 0``; the solid side is behind it.
    offset : scalar or (n,) float64
        Plane offsets.
    r1 : (n,) or scalar float64, optional
        Radii at the end of the frame, for spheres that grow or shrink (linearly in t);
        None: ``r`` throughout.

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] when the sphere first touches the plane while moving into
        it; ``inf`` where it does not. A sphere touching or behind the plane at t = 0 and
        moving further in gives 0.

    Examples
    --------
    The floor z = 0 (normal up, solid below): falling onto it, already in it and sinking
    further, already in it and climbing out.

    >>> sphere_plane_toi([[0, 0, 5], [0, 0, -2], [0, 0, -2]],
    ...                  [[0, 0, -3], [0, 0, -4], [0, 0, 4]], 1.0, (0, 0, 1), 0.0)
    array([0.5, 0. , inf])
    >>> sphere_plane_toi([[0, 0, 5]], [[0, 0, -3]], 1.0, (0, 0, 0), 0.0)
    Traceback (most recent call last):
        ...
    ValueError: normal must be finite and non-zero, got [0.0, 0.0, 0.0]
    """
    return _plane_toi(*_sphere_plane_terms(c0, c1, r, normal, offset, r1))


def _sphere_plane_toi(
    c0: Float, c1: Float, r: Float, normal: Float, offset: Float, coord_scale: Float | None = None
) -> Float:
    """:func:`sphere_plane_toi` of rows already checked (the solver's many small calls);
    ``coord_scale`` as for :func:`_plane_terms`."""
    return _plane_toi(*_plane_terms(c0, c1, r, normal, offset, coord_scale=coord_scale))


def _plane_toi(gap0: Float, dn: Float, approach_eps: Float, _r: Float) -> Float:
    approaching = dn < -approach_eps
    t = np.full(gap0.shape, np.inf)
    t[approaching & (gap0 <= 0)] = 0.0
    # gap0 > 0 >= gap0 + dn, so the divisor -dn >= gap0 > 0: never zero.
    crossing = approaching & (gap0 > 0) & (gap0 + dn <= 0)
    t[crossing] = gap0[crossing] / -dn[crossing]
    return t


def sphere_plane_overlap(
    c0: ArrayLike,
    c1: ArrayLike,
    r: ArrayLike,
    normal: ArrayLike,
    offset: ArrayLike,
    *,
    r1: ArrayLike | None = None,
) -> tuple[Float, Float]:
    """The part of the frame during which a moving sphere overlaps a half-space.

    Parameters are as for :func:`sphere_plane_toi`.

    Returns
    -------
    t_enter, t_exit : (n,) float64
        The overlap interval clipped to [0, 1], ``nan`` where there is none.

    Examples
    --------
    >>> sphere_plane_overlap([[0, 0, 3]], [[0, 0, -1]], 1.0, (0, 0, 1), 0.0)
    (array([0.5]), array([1.]))
    """
    gap0, dn, _eps, _r = _sphere_plane_terms(c0, c1, r, normal, offset, r1)
    gap1 = gap0 + dn
    enter = np.full(gap0.shape, np.nan)
    leave = np.full(gap0.shape, np.nan)
    hit = (gap0 < 0) | (gap1 < 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cross = np.where(dn != 0, -gap0 / np.where(dn != 0, dn, 1.0), np.nan)
    enter[hit] = np.where(gap0[hit] < 0, 0.0, cross[hit])
    leave[hit] = np.where(gap1[hit] < 0, 1.0, cross[hit])
    return enter, leave
