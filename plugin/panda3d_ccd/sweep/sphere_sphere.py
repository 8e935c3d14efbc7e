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

from typing import NamedTuple

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
    a0: ArrayLike,
    a1: ArrayLike,
    ra: ArrayLike,
    b0: ArrayLike,
    b1: ArrayLike,
    rb: ArrayLike,
    ra1: ArrayLike | None = None,
    rb1: ArrayLike | None = None,
) -> Terms:
    """Relative motion terms of |p0 + t v|^2 = (R + t w)^2 (w: the radii's growth).

    Returns ``c`` (|p0|^2 - R^2, factored), ``half_b`` (p0 . v - R w), ``a`` (v . v - w^2),
    ``disc`` (the quarter discriminant, computed as a R^2 - |p0 x v|^2 plus the growth's
    terms, so that it does not cancel when the motion is large against the gap), the
    approach threshold and the approach rate at t = 0 (|p0| times d(|p| - R)/dt).
    """
    named = {
        "a0": _check.points("a0", a0),
        "a1": _check.points("a1", a1),
        "ra": _check.lengths("ra", ra),
        "b0": _check.points("b0", b0),
        "b1": _check.points("b1", b1),
        "rb": _check.lengths("rb", rb),
    }
    grows = ra1 is not None or rb1 is not None
    if grows:
        named["ra1"] = _check.lengths("ra1", ra if ra1 is None else ra1)
        named["rb1"] = _check.lengths("rb1", rb if rb1 is None else rb1)
    rows = _check.broadcast(tuple(named), *named.values())
    a0_, a1_, ra_, b0_, b1_, rb_ = rows[:6]
    grow = (rows[6] + rows[7]) - (ra_ + rb_) if grows else None
    return _terms(a0_, a1_, ra_, b0_, b1_, rb_, grow)


def _relative_motion(a0: Float, a1: Float, b0: Float, b1: Float) -> tuple[Float, Float]:
    """(k, 3) p0 = a0 - b0, where A starts relative to B, and v, A's motion relative to
    B's over the frame."""
    return a0 - b0, (a1 - a0) - (b1 - b0)


class Terms(NamedTuple):
    c: Float
    half_b: Float
    a: Float
    disc: Float
    approach_eps: Float
    rate: Float
    big_r: Float  # the sum of the radii at the start


def _terms(
    a0_: Float,
    a1_: Float,
    ra_: Float,
    b0_: Float,
    b1_: Float,
    rb_: Float,
    grow: Float | None = None,
    relative: tuple[Float, Float] | None = None,
) -> Terms:
    """:func:`_sphere_sphere_terms` of rows already checked: (k, 3) points, (k,) radii, and
    ``grow`` (k,) the growth of the sum of the radii over the frame (None: none);
    ``relative``: (p0, v) of these rows, where the caller has them (:func:`_relative_motion`)."""
    p0, v = _relative_motion(a0_, a1_, b0_, b1_) if relative is None else relative
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
    if grow is None:
        approach_eps = dist0 * (DIST_REL_EPS * np.sqrt(a) + ROUNDING_REL * coord_scale)
        return Terms(c, half_b, a, disc, approach_eps, half_b, big_r)
    # Growing radii: the gap |p| - R shrinks at p0 . v / |p0| - w, and the quadratic takes
    # -R w into its middle term, -w^2 into its leading one (disc = b^2 - a c expanded).
    speed = np.sqrt(a) + np.abs(grow)
    approach_eps = dist0 * (DIST_REL_EPS * speed + ROUNDING_REL * coord_scale)
    rate = half_b - grow * dist0
    disc = disc + grow * (grow * dist0 * dist0 - 2.0 * big_r * half_b)
    return Terms(c, half_b - big_r * grow, a - grow * grow, disc, approach_eps, rate, big_r)


def sphere_sphere_toi(
    a0: ArrayLike,
    a1: ArrayLike,
    ra: ArrayLike,
    b0: ArrayLike,
    b1: ArrayLike,
    rb: ArrayLike,
    *,
    ra1: ArrayLike | None = None,
    rb1: ArrayLike | None = None,
) -> Float:
    """Time of first contact of two linearly moving (and growing) spheres.

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
    ra1, rb1 : (n,) or scalar float64, optional
        Radii at the end of the frame, for spheres that grow or shrink (linearly in t);
        None: ``ra`` and ``rb`` throughout. Growing towards each other is approaching.

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
    return _toi(_sphere_sphere_terms(a0, a1, ra, b0, b1, rb, ra1, rb1))


def _sphere_sphere_toi(
    a0: Float, a1: Float, ra: Float, b0: Float, b1: Float, rb: Float, grow: Float | None = None
) -> Float:
    """:func:`sphere_sphere_toi` of rows already checked (the solver's many small calls);
    ``grow`` (k,) is how much the sum of the radii grows over the frame."""
    return _toi(_terms(a0, a1, ra, b0, b1, rb, grow))


def _toi(terms: Terms) -> Float:
    c, half_b, _a, disc, approach_eps, rate, _big_r = terms
    approaching = rate < -approach_eps
    t = np.full(c.shape, np.inf)
    t[approaching & (c <= 0)] = 0.0
    ahead = approaching & (c > 0) & (disc >= 0)
    # Stable smaller root: t = c / (-b + sqrt(disc)); without growth the denominator is > 0
    # when approaching, so there is no division by |v|^2 and no cancellation. (Growing
    # radii can leave both roots behind: then it is <= 0, and there is no contact.)
    denom = -half_b[ahead] + np.sqrt(disc[ahead])
    root = np.divide(c[ahead], denom, out=np.full(len(denom), np.inf), where=denom > 0)
    t[ahead] = np.where(root <= 1.0, root, np.inf)
    return t


def sphere_sphere_overlap(
    a0: ArrayLike,
    a1: ArrayLike,
    ra: ArrayLike,
    b0: ArrayLike,
    b1: ArrayLike,
    rb: ArrayLike,
    *,
    ra1: ArrayLike | None = None,
    rb1: ArrayLike | None = None,
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
    terms = _sphere_sphere_terms(a0, a1, ra, b0, b1, rb, ra1, rb1)
    if ra1 is not None or rb1 is not None:
        return _grown_overlap(terms)
    c, half_b, a, disc, _eps, _rate, big_r = terms
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
    # Two points that meet exactly touch for an instant, and that counts as for solids.
    points = (big_r == 0) & np.isnan(enter)
    if points.any():
        meet = _toi(Terms(*(column[points] for column in terms)))
        enter[points] = leave[points] = np.where(np.isfinite(meet), meet, np.nan)
    return enter, leave


def _grown_overlap(terms: Terms) -> tuple[Float, Float]:
    """:func:`sphere_sphere_overlap` where radii grow: the quadratic f = a t^2 + 2 b t + c
    (negative inside) may open downwards, so its roots cut [0, 1] into at most three
    pieces, and the inside ones are those whose middle is inside. The gap |p| - R is convex
    while R >= 0 (all of [0, 1]), so they form one interval."""
    c, half_b, a, disc, _eps, _rate, _big_r = terms
    k = len(c)
    real = disc >= 0
    sq = np.sqrt(np.where(real, disc, 0.0))
    q = -(half_b + np.copysign(sq, half_b))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r1 = np.where(real & (a != 0), q / np.where(a != 0, a, 1.0), np.nan)
        r2 = np.where(real & (q != 0), c / np.where(q != 0, q, 1.0), np.nan)
    cuts = np.stack([np.zeros(k), r1, r2, np.ones(k)], axis=1)
    cuts = np.where(np.isfinite(cuts) & (cuts > 0) & (cuts < 1), cuts, 1.0)
    cuts[:, 0] = 0.0
    cuts = np.sort(cuts, axis=1)
    lo, hi = cuts[:, :-1], cuts[:, 1:]
    mid = 0.5 * (lo + hi)
    f = (a[:, None] * mid + 2.0 * half_b[:, None]) * mid + c[:, None]
    inside = (hi > lo) & (f < 0)
    inside[:, 0] |= c < 0
    enter = np.where(inside.any(axis=1), np.where(inside, lo, np.inf).min(axis=1), np.nan)
    leave = np.where(inside.any(axis=1), np.where(inside, hi, -np.inf).max(axis=1), np.nan)
    return enter, leave
