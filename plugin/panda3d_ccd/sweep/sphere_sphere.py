"""Exact swept test of two moving spheres: when do they first touch?

Both bodies move linearly in the normalised frame time ``t`` in [0, 1]. A *contact* is a
moment when the surfaces touch while approaching; touching and moving apart, or sliding
along at constant distance, is not a contact (otherwise a resting ball would stick).

This module never imports panda3d: it is the geometry layer, usable on its own.

Examples
--------
>>> import numpy as np
>>> from panda3d_ccd.sweep import sphere_sphere_toi, sphere_plane_toi
>>> sphere_sphere_toi([[-5, 0, 0]], [[5, 0, 0]], 0.5, [[0, 0, 0]], [[0, 0, 0]], 0.5)
array([0.4])
>>> sphere_plane_toi([[0, 0, 3]], [[0, 0, -3]], 1.0, (0, 0, 1), 0.0)
array([0.33333333])
>>> sphere_sphere_toi([[0, 0, 0]], [[1, 0, 0]], -1.0, [[3, 0, 0]], [[3, 0, 0]], 1.0)
Traceback (most recent call last):
    ...
ValueError: ra must be finite and >= 0, got -1.0
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._arrays import largest_abs, length
from .._tolerance import DIST_REL_EPS, ROUNDING_REL

__all__ = ["sphere_sphere_toi", "sphere_sphere_overlap"]

Float = NDArray[np.float64]


def _rowdot(a: Float, b: Float) -> Float:
    return np.einsum("ij,ij->i", a, b)


def _sphere_sphere_terms(
    a0: ArrayLike, a1: ArrayLike, ra: ArrayLike, b0: ArrayLike, b1: ArrayLike, rb: ArrayLike
) -> tuple[Float, Float, Float, Float, Float]:
    """Relative motion terms of |p0 + t v|^2 = R^2.

    Returns ``c`` (|p0|^2 - R^2, factored), ``half_b`` (p0 . v), ``a`` (v . v), ``disc``
    (the quarter discriminant, computed as a R^2 - |p0 x v|^2 so that it does not cancel
    when the motion is large against the gap) and the approach threshold.
    """
    names = ("a0", "a1", "ra", "b0", "b1", "rb")
    a0_, a1_, ra_, b0_, b1_, rb_ = _check.broadcast(
        names,
        _check.points("a0", a0),
        _check.points("a1", a1),
        _check.lengths("ra", ra),
        _check.points("b0", b0),
        _check.points("b1", b1),
        _check.lengths("rb", rb),
    )
    return _terms(a0_, a1_, ra_, b0_, b1_, rb_)


def _terms(
    a0_: Float, a1_: Float, ra_: Float, b0_: Float, b1_: Float, rb_: Float
) -> tuple[Float, Float, Float, Float, Float]:
    """:func:`_sphere_sphere_terms` of rows already checked: (k, 3) points, (k,) radii."""
    p0 = a0_ - b0_
    v = (a1_ - a0_) - (b1_ - b0_)
    big_r = ra_ + rb_
    dist0 = length(p0)
    c = (dist0 - big_r) * (dist0 + big_r)
    half_b = _rowdot(p0, v)
    a = _rowdot(v, v)
    cx = p0[:, 1] * v[:, 2] - p0[:, 2] * v[:, 1]
    cy = p0[:, 2] * v[:, 0] - p0[:, 0] * v[:, 2]
    cz = p0[:, 0] * v[:, 1] - p0[:, 1] * v[:, 0]
    disc = a * big_r * big_r - (cx * cx + cy * cy + cz * cz)
    # Rounding leaves a tangential motion with p0 . v of order 1e-16 |p0||v|; without this
    # threshold a sphere resting against another would be "approaching" and stick. Bodies
    # moving together get a v that is pure rounding noise of their coordinates (random in
    # direction however small), so the threshold also has a floor at that noise.
    coord_scale = largest_abs(a0_, a1_, b0_, b1_)
    approach_eps = dist0 * (DIST_REL_EPS * np.sqrt(a) + ROUNDING_REL * coord_scale)
    return c, half_b, a, disc, approach_eps


def sphere_sphere_toi(
    a0: ArrayLike, a1: ArrayLike, ra: ArrayLike, b0: ArrayLike, b1: ArrayLike, rb: ArrayLike
) -> Float:
    """Time of first contact of two linearly moving spheres.

    Parameters
    ----------
    a0, a1 : (n, 3) float64
        Centres of sphere A at the start (t = 0) and end (t = 1) of the frame.
    ra : (n,) or scalar float64
        Radii of A, finite and >= 0 (0 is a point).
    b0, b1 : (n, 3) float64
        Centres of sphere B at the start and end of the frame.
    rb : (n,) or scalar float64
        Radii of B.

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] at which the surfaces first touch while approaching;
        ``np.inf`` where they do not. Spheres already touching or overlapping at t = 0 give 0
        if the distance between centres is decreasing, ``inf`` otherwise.

    Examples
    --------
    Two rows: A comes in head-on; A touches B and moves away (no contact).

    >>> sphere_sphere_toi([[-5, 0, 0], [-2, 0, 0]], [[5, 0, 0], [-3, 0, 0]], 1.0,
    ...                   [[0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]], 1.0)
    array([0.3, inf])
    >>> sphere_sphere_toi([[0, 0, 0]], [[1, 0, 0]], 1.0, [[3, 0, 0]], [[3, 0]], 1.0)
    Traceback (most recent call last):
        ...
    ValueError: b1 must have shape (n, 3), got (1, 2)
    """
    return _toi(*_sphere_sphere_terms(a0, a1, ra, b0, b1, rb))


def _sphere_sphere_toi(a0: Float, a1: Float, ra: Float, b0: Float, b1: Float, rb: Float) -> Float:
    """:func:`sphere_sphere_toi` of rows already checked (the solver's many small calls)."""
    return _toi(*_terms(a0, a1, ra, b0, b1, rb))


def _toi(c: Float, half_b: Float, _a: Float, disc: Float, approach_eps: Float) -> Float:
    approaching = half_b < -approach_eps
    t = np.full(c.shape, np.inf)
    t[approaching & (c <= 0)] = 0.0
    ahead = approaching & (c > 0) & (disc >= 0)
    # Stable smaller root: t = c / (-b + sqrt(disc)); the denominator is > 0 when approaching,
    # so there is no division by |v|^2 and no cancellation.
    root = c[ahead] / (-half_b[ahead] + np.sqrt(disc[ahead]))
    t[ahead] = np.where(root <= 1.0, root, np.inf)
    return t


def sphere_sphere_overlap(
    a0: ArrayLike, a1: ArrayLike, ra: ArrayLike, b0: ArrayLike, b1: ArrayLike, rb: ArrayLike
) -> tuple[Float, Float]:
    """The part of the frame during which two moving spheres overlap (for sensors).

    Parameters are as for :func:`sphere_sphere_toi`.

    Returns
    -------
    t_enter, t_exit : (n,) float64
        The overlap interval clipped to [0, 1]; ``t_enter`` is 0 where they overlap at the
        start, ``t_exit`` is 1 where they still overlap at the end. Both are ``nan`` where
        they never overlap during the frame.

    Examples
    --------
    >>> sphere_sphere_overlap([[-4, 0, 0]], [[4, 0, 0]], 1.0, [[0, 0, 0]], [[0, 0, 0]], 1.0)
    (array([0.25]), array([0.75]))
    """
    c, half_b, a, disc, _eps = _sphere_sphere_terms(a0, a1, ra, b0, b1, rb)
    enter = np.full(c.shape, np.nan)
    leave = np.full(c.shape, np.nan)
    inside0 = c < 0
    moving = a > 0
    enter[inside0] = 0.0
    # Exactly, disc = b^2 - a c >= -a c > 0 when they start inside (c < 0); rounding in the
    # cross-product form can make it <= 0 for a tangential start just inside, which left
    # t_enter = 0 with t_exit = nan.
    disc = np.maximum(disc, -a * c)
    real = moving & (disc > 0)
    # Inside at the start with no root to leave by: still, or a motion so small (1e-162)
    # that even -a c underflows to 0; either way still inside at the end.
    leave[inside0 & ~real] = 1.0
    sq = np.sqrt(np.where(real, disc, 0.0))
    # Roots of a t^2 + 2 b t + c: q = -(b + sign(b) sqrt(disc)), roots q / a and c / q.
    q = -(half_b + np.copysign(sq, half_b))
    # A tiny relative motion puts the roots beyond the float range: inf is the right answer
    # (they never meet, or they stay inside all frame), the overflow warning is not.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r1 = np.where(real, q / np.where(moving, a, 1.0), np.nan)
        r2 = np.where(real & (q != 0), c / np.where(q != 0, q, 1.0), np.nan)
    lo = np.fmin(r1, r2)
    hi = np.fmax(r1, r2)
    hit = real & (hi > 0) & (lo < 1)
    enter[hit] = np.maximum(lo[hit], 0.0)
    leave[hit] = np.minimum(hi[hit], 1.0)
    return enter, leave
