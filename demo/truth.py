"""The demo's own ground truth: which hits *should* happen this frame, and who went through.

Independent of the collision system under test: every mover's straight path for the frame
(where it starts, where the game's velocity takes it) is checked analytically against the
walls, pillars, targets, pickups and the other movers with the exact kernels of
``panda3d_ccd.sweep``. The level then compares these expected hits with the events the
system actually sent, and checks where the movers really ended up.

Radii are shrunk by :data:`GRAZE` for these checks: a hit the truth expects goes at least
that deep, so float32 node positions and a system's own tolerances cannot turn a mere graze
into a "missed" hit or a "tunnelled" object.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from panda3d_ccd.sweep import sphere_plane_toi, sphere_sphere_toi

__all__ = ["GRAZE", "Expected", "expected_hits", "went_into"]

#: How far (world units) two shapes must overlap to count as a true hit.
GRAZE = 1e-3

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


class Expected(NamedTuple):
    """Hits expected this frame, one row each.

    ``solid`` rows (``sensor`` False) are each mover's earliest hit with anything solid: it
    is stopped or deflected there, so later hits along the straight path are not owed.
    ``sensor`` rows are every pickup a path touches. ``kind`` says what ``other`` indexes:
    0 an obstacle sphere, 1 a plane, 2 another mover.
    """

    mover: Int  # (k,)
    other: Int  # (k,)
    kind: Int  # (k,)
    t: Float  # (k,) time of impact, fraction of the frame
    sensor: Bool  # (k,)


def _shrunk_toi(a0: Float, a1: Float, ra: Float, b0: Float, b1: Float, rb: Float) -> Float:
    """sphere_sphere_toi with each radius reduced by GRAZE / 2 (never below zero)."""
    if len(a0) == 0:
        return np.zeros(0)
    half = GRAZE / 2
    return sphere_sphere_toi(a0, a1, np.maximum(ra - half, 0.0), b0, b1,
                             np.maximum(rb - half, 0.0))


def _mover_pairs(m0: Float, m1: Float, radius: Float, m_from: Int, m_into: Int
                 ) -> tuple[Int, Int]:
    """Pairs (i < j) of movers whose swept boxes overlap and whose masks let them meet.

    Sweep and prune on x, then a y test: without it a few hundred balls would mean
    ~10^5 exact tests a frame.
    """
    can = np.flatnonzero(((m_from & np.bitwise_or.reduce(m_into, initial=0)) != 0)
                         | ((m_into & np.bitwise_or.reduce(m_from, initial=0)) != 0))
    lo = np.minimum(m0[can], m1[can]) - radius[can, None]
    hi = np.maximum(m0[can], m1[can]) + radius[can, None]
    order = np.argsort(lo[:, 0], kind="stable")
    lo_x = lo[order, 0]
    # For each box (in x order), the later boxes starting before it ends.
    end = np.searchsorted(lo_x, hi[order, 0], side="right")
    start = np.arange(len(order)) + 1
    count = np.maximum(end - start, 0)
    first = np.repeat(np.arange(len(order)), count)
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    second = np.repeat(start, count) + offset
    a, b = can[order[first]], can[order[second]]
    ia, ib = order[first], order[second]
    overlap = np.all((lo[ia, 1:] <= hi[ib, 1:]) & (lo[ib, 1:] <= hi[ia, 1:]), axis=1)
    meet = ((m_from[a] & m_into[b]) | (m_from[b] & m_into[a])) != 0
    keep = overlap & meet
    a, b = a[keep], b[keep]
    return np.minimum(a, b), np.maximum(a, b)


def expected_hits(
    m0: Float,
    m1: Float,
    m_radius: Float,
    m_from: Int,
    m_into: Int,
    s0: Float,
    s1: Float,
    s_radius: Float,
    s_into: Int,
    s_sensor: Bool,
    plane_normal: Float,
    plane_offset: Float,
    plane_into: Int,
) -> Expected:
    """Expected hits of movers against obstacle spheres, planes and each other, one frame.

    Parameters
    ----------
    m0, m1 : (n, 3) float64
        Mover centres at the start and (by the game's velocity) the end of the frame.
    m_radius : (n,) float64
    m_from, m_into : (n,) int64
        Movers' from- and into-masks (two movers meet if either's from meets the other's into).
    s0, s1 : (k, 3) float64
        Obstacle sphere centres at the start and end of the frame.
    s_radius : (k,) float64
    s_into : (k,) int64
        Obstacles' into-masks (obstacles are never "from").
    s_sensor : (k,) bool
        Obstacles that are sensors (pickups).
    plane_normal : (p, 3) float64, unit
    plane_offset : (p,) float64
        Planes ``normal . x + offset = 0``, solid behind.
    plane_into : (p,) int64
    """
    mi, sj = np.nonzero((m_from[:, None] & s_into[None, :]) != 0)
    ts = _shrunk_toi(m0[mi], m1[mi], m_radius[mi], s0[sj], s1[sj], s_radius[sj])
    mp, pk = np.nonzero((m_from[:, None] & plane_into[None, :]) != 0)
    tp = (
        sphere_plane_toi(m0[mp], m1[mp], np.maximum(m_radius[mp] - GRAZE, 0.0),
                         plane_normal[pk], plane_offset[pk])
        if len(mp) else np.zeros(0)
    )
    ua, ub = _mover_pairs(m0, m1, m_radius, m_from, m_into)
    tm = _shrunk_toi(m0[ua], m1[ua], m_radius[ua], m0[ub], m1[ub], m_radius[ub])

    sensor_rows = np.isfinite(ts) & s_sensor[sj]
    solid_rows = np.isfinite(ts) & ~s_sensor[sj]
    hit_p = np.isfinite(tp)
    hit_m = np.isfinite(tm)

    # Earliest solid hit per mover over every kind of obstacle; a pair of movers is a
    # candidate for both of them.
    mover = np.concatenate([mi[solid_rows], mp[hit_p], ua[hit_m], ub[hit_m]])
    other = np.concatenate([sj[solid_rows], pk[hit_p], ub[hit_m], ua[hit_m]])
    kind = np.concatenate([
        np.zeros(solid_rows.sum(), np.int64),
        np.ones(hit_p.sum(), np.int64),
        np.full(2 * hit_m.sum(), 2, np.int64),
    ])
    t = np.concatenate([ts[solid_rows], tp[hit_p], tm[hit_m], tm[hit_m]])
    order = np.lexsort((t, mover))
    first = np.ones(len(order), bool)
    first[1:] = mover[order][1:] != mover[order][:-1]
    pick = order[first]

    count = int(sensor_rows.sum())
    return Expected(
        mover=np.concatenate([mover[pick], mi[sensor_rows]]),
        other=np.concatenate([other[pick], sj[sensor_rows]]),
        kind=np.concatenate([kind[pick], np.zeros(count, np.int64)]),
        t=np.concatenate([t[pick], ts[sensor_rows]]),
        sensor=np.concatenate([np.zeros(len(pick), bool), np.ones(count, bool)]),
    )


def went_into(p0: Float, q: Float, radius: Float, centre: Float, c_radius: Float) -> Bool:
    """Which straight moves p0 -> q took a mover's centre deep into a fixed sphere.

    "Deep" is within ``c_radius + radius / 2`` of the sphere's centre: at least half the
    mover inside it. A system that stops a mover at the contact never gets there; one that
    lets it through, or pushes it out on the far side, does.

    Parameters
    ----------
    p0, q : (n, 3) float64
        Where each mover started the frame and where it really ended it.
    radius : (n,) float64
    centre : (k, 3) float64
        Centres of fixed spheres (pillars).
    c_radius : (k,) float64

    Returns
    -------
    (n,) bool
    """
    n, k = len(p0), len(centre)
    if n == 0 or k == 0:
        return np.zeros(n, bool)
    step = (q - p0)[:, None, :]  # (n, 1, 3)
    rel = centre[None, :, :] - p0[:, None, :]  # (n, k, 3)
    length2 = np.einsum("nij,nij->ni", step, step)
    along = np.divide(np.einsum("nkj,nij->nk", rel, step), length2,
                      out=np.zeros((n, k)), where=length2 > 0)
    closest = p0[:, None, :] + np.clip(along, 0.0, 1.0)[:, :, None] * step
    dist = np.linalg.norm(centre[None, :, :] - closest, axis=2)
    return np.any(dist < c_radius[None, :] + radius[:, None] / 2, axis=1)
