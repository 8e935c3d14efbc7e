"""The demo's own ground truth: which hits *should* happen this frame, and who went through.

Independent of the collision system under test: every mover's straight path for the frame
(where it starts, where the game's velocity takes it) is tested against the level as
:mod:`demo.arena` describes it (not as either system read it from the egg) and against the
other bodies, with the exact kernels of ``panda3d_ccd.sweep``: ``sphere_triangle_toi``
(walls, floor, ramps, platform: one-sided, as ``CollisionPolygon``), ``sphere_box_toi``
(crates, lift, gate), ``sphere_capsule_toi`` (pillars), ``sphere_sphere_toi`` (targets,
pickups, movers). Those kernels are themselves checked against Bullet and dense sampling in
the plugin's tests; what the truth does not share with the plugin is everything else: the
reading of the scene, the broad phase, the solver, the responses, the kinematic motion.

Moving boxes: the lift only translates, so a mover's path relative to it is straight and
one kernel call is exact. The gate turns; relative to it a straight path is a curve, which
the truth follows as :data:`TURN_STEPS` straight pieces (for the demo's gate the pieces
stray from the curve by well under :data:`GRAZE`).

Radii are shrunk by :data:`GRAZE` for these checks: a hit the truth expects goes at least
that deep, so float32 node positions and a system's own tolerances cannot turn a mere graze
into a "missed" hit or a "tunnelled" object.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from panda3d_ccd.sweep import (
    sphere_box_toi,
    sphere_capsule_toi,
    sphere_sphere_toi,
    sphere_triangle_toi,
)

__all__ = ["GRAZE", "TURN_STEPS", "Movers", "Spheres", "Triangles", "Boxes", "Capsules",
           "Scene", "Expected", "expected_hits", "went_into", "to_box_frame"]

#: How far (world units) two shapes must overlap to count as a true hit.
GRAZE = 1e-3
#: Straight pieces a frame's path is cut into relative to a turning box.
TURN_STEPS = 8

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


class Movers(NamedTuple):
    """The spheres the game moves by velocity; one row each."""

    c0: Float  # (n, 3) centre at the start of the frame
    c1: Float  # (n, 3) centre where the velocity takes it
    radius: Float  # (n,)
    from_mask: Int  # (n,)
    into_mask: Int  # (n,) two movers meet if either's from meets the other's into
    uid: Int  # (n,)


class Spheres(NamedTuple):
    """Obstacle spheres, moving straight over the frame (targets) or not (pickups)."""

    c0: Float  # (k, 3)
    c1: Float  # (k, 3)
    radius: Float  # (k,)
    into_mask: Int  # (k,)
    sensor: Bool  # (k,) touched, never stopped at (pickups)
    uid: Int  # (k,)


class Triangles(NamedTuple):
    """Fixed one-sided triangles, counter-clockwise seen from the solid front."""

    a: Float  # (k, 3)
    b: Float  # (k, 3)
    c: Float  # (k, 3)
    into_mask: Int  # (k,)
    uid: Int  # (k,)


class Boxes(NamedTuple):
    """Boxes lo..hi in their own frame, which is turned by ``heading`` (radians, about z)
    and moved to ``origin``; the frame goes from pose 0 to pose 1 over the frame, heading
    and origin linearly (equal poses: a fixed box)."""

    lo: Float  # (k, 3)
    hi: Float  # (k, 3)
    origin0: Float  # (k, 3)
    heading0: Float  # (k,)
    origin1: Float  # (k, 3)
    heading1: Float  # (k,)
    into_mask: Int  # (k,)
    uid: Int  # (k,)


class Capsules(NamedTuple):
    """Fixed capsules: the segment a-b inflated by ``radius``."""

    a: Float  # (k, 3)
    b: Float  # (k, 3)
    radius: Float  # (k,)
    into_mask: Int  # (k,)
    uid: Int  # (k,)


class Scene(NamedTuple):
    """Everything a mover can hit besides the other movers."""

    spheres: Spheres
    triangles: Triangles
    boxes: Boxes
    capsules: Capsules


class Expected(NamedTuple):
    """Hits expected this frame, one row each.

    ``solid`` rows (``sensor`` False) are each mover's earliest hit with anything solid: it
    is stopped or deflected there, so later hits along the straight path are not owed.
    ``sensor`` rows are every pickup a path touches.
    """

    mover: Int  # (k,) row of Movers
    other: Int  # (k,) uid of what it hits (an obstacle or another mover)
    t: Float  # (k,) time of impact, fraction of the frame
    sensor: Bool  # (k,)


def to_box_frame(points: Float, origin: Float, heading: Float) -> Float:
    """(n, 3) points in their boxes' frames. points, origin : (n, 3); heading : (n,)
    radians about z."""
    d = points - origin
    cos, sin = np.cos(heading), np.sin(heading)
    return np.stack([cos * d[:, 0] + sin * d[:, 1], -sin * d[:, 0] + cos * d[:, 1], d[:, 2]],
                    axis=1)


def _near(m_lo: Float, m_hi: Float, o_lo: Float, o_hi: Float) -> Bool:
    """(n, k) whether mover n's bounding box overlaps obstacle k's."""
    return np.all((m_lo[:, None, :] <= o_hi[None, :, :])
                  & (o_lo[None, :, :] <= m_hi[:, None, :]), axis=2)


def _candidates(m_lo: Float, m_hi: Float, m_from: Int, o_lo: Float, o_hi: Float, o_into: Int
                ) -> tuple[Int, Int]:
    """(mover, obstacle) pairs whose masks meet and whose bounding boxes overlap."""
    meet = (m_from[:, None] & o_into[None, :]) != 0
    return np.nonzero(meet & _near(m_lo, m_hi, o_lo, o_hi))


def _box_bounds(boxes: Boxes) -> tuple[Float, Float]:
    """(k, 3) world bounds of each box over both its poses (by its bounding sphere)."""
    centre = (boxes.lo + boxes.hi) / 2
    reach = np.linalg.norm(boxes.hi - boxes.lo, axis=1)[:, None] / 2
    ends = []
    for origin, heading in ((boxes.origin0, boxes.heading0), (boxes.origin1, boxes.heading1)):
        cos, sin = np.cos(heading), np.sin(heading)
        world = origin + np.stack([cos * centre[:, 0] - sin * centre[:, 1],
                                   sin * centre[:, 0] + cos * centre[:, 1], centre[:, 2]], 1)
        ends.append(world)
    return np.minimum(*ends) - reach, np.maximum(*ends) + reach


def _box_toi(c0: Float, c1: Float, r: Float, boxes: Boxes, j: Int) -> Float:
    """Times of first contact of paths c0 -> c1 (rows) with boxes j, following each box's
    frame: straight where it only translates, in TURN_STEPS pieces where it turns (all
    pieces of all rows in one kernel call)."""
    steps = np.where(boxes.heading0[j] != boxes.heading1[j], TURN_STEPS, 1)
    row = np.repeat(np.arange(len(j)), steps)
    k = np.arange(len(row)) - np.repeat(np.cumsum(steps) - steps, steps)
    n = steps[row]
    jr = j[row]

    def local(s: Float) -> Float:
        point = c0[row] + s[:, None] * (c1[row] - c0[row])
        origin = boxes.origin0[jr] + s[:, None] * (boxes.origin1[jr] - boxes.origin0[jr])
        heading = boxes.heading0[jr] + s * (boxes.heading1[jr] - boxes.heading0[jr])
        return to_box_frame(point, origin, heading)

    part = sphere_box_toi(local(k / n), local((k + 1) / n), r[row], boxes.lo[jr],
                          boxes.hi[jr])
    t = np.full(len(j), np.inf)
    np.minimum.at(t, row, (k + part) / n)
    return t


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


def _shrunk(radius: Float, by: float) -> Float:
    return np.maximum(radius - by, 0.0)


def expected_hits(movers: Movers, scene: Scene) -> Expected:
    """Expected hits of the movers against the scene and each other, one frame.

    Returns each mover's earliest solid hit (if any) and every sensor its path touches.
    """
    m0, m1, r = movers.c0, movers.c1, movers.radius
    m_lo, m_hi = np.minimum(m0, m1) - r[:, None], np.maximum(m0, m1) + r[:, None]
    found: list[tuple[Int, Int, Float, Bool]] = []  # (mover row, other uid, t, sensor)

    s = scene.spheres
    i, j = _candidates(m_lo, m_hi, movers.from_mask,
                       np.minimum(s.c0, s.c1) - s.radius[:, None],
                       np.maximum(s.c0, s.c1) + s.radius[:, None], s.into_mask)
    if len(i):
        t = sphere_sphere_toi(m0[i], m1[i], _shrunk(r[i], GRAZE / 2), s.c0[j], s.c1[j],
                              _shrunk(s.radius[j], GRAZE / 2))
        found.append((i, s.uid[j], t, s.sensor[j]))

    tri = scene.triangles
    i, j = _candidates(m_lo, m_hi, movers.from_mask,
                       np.minimum(np.minimum(tri.a, tri.b), tri.c),
                       np.maximum(np.maximum(tri.a, tri.b), tri.c), tri.into_mask)
    if len(i):
        t = sphere_triangle_toi(m0[i], m1[i], _shrunk(r[i], GRAZE), tri.a[j], tri.b[j],
                                tri.c[j])
        found.append((i, tri.uid[j], t, np.zeros(len(i), bool)))

    box = scene.boxes
    i, j = _candidates(m_lo, m_hi, movers.from_mask, *_box_bounds(box), box.into_mask)
    if len(i):
        t = _box_toi(m0[i], m1[i], _shrunk(r[i], GRAZE), box, j)
        found.append((i, box.uid[j], t, np.zeros(len(i), bool)))

    cap = scene.capsules
    i, j = _candidates(m_lo, m_hi, movers.from_mask,
                       np.minimum(cap.a, cap.b) - cap.radius[:, None],
                       np.maximum(cap.a, cap.b) + cap.radius[:, None], cap.into_mask)
    if len(i):
        t = sphere_capsule_toi(m0[i], m1[i], _shrunk(r[i], GRAZE), cap.a[j], cap.b[j],
                               cap.radius[j])
        found.append((i, cap.uid[j], t, np.zeros(len(i), bool)))

    ua, ub = _mover_pairs(m0, m1, r, movers.from_mask, movers.into_mask)
    if len(ua):
        t = sphere_sphere_toi(m0[ua], m1[ua], _shrunk(r[ua], GRAZE / 2), m0[ub], m1[ub],
                              _shrunk(r[ub], GRAZE / 2))
        # A pair of movers is a candidate hit for both of them.
        found.append((np.concatenate([ua, ub]), movers.uid[np.concatenate([ub, ua])],
                      np.concatenate([t, t]), np.zeros(2 * len(ua), bool)))

    if not found:
        return Expected(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
                        np.zeros(0, bool))
    mover, other, t, sensor = (np.concatenate(column) for column in zip(*found))
    hit = np.isfinite(t)
    solid = np.flatnonzero(hit & ~sensor)
    order = solid[np.lexsort((t[solid], mover[solid]))]
    first = np.ones(len(order), bool)
    first[1:] = mover[order][1:] != mover[order][:-1]
    pick = np.concatenate([order[first], np.flatnonzero(hit & sensor)])
    return Expected(mover[pick], other[pick], t[pick], sensor[pick])


def went_into(p0: Float, q: Float, radius: Float, scene: Scene) -> Bool:
    """Which movers went through something: their real move p0 -> q this frame took the
    centre deep into a fixed solid, or they end it deep inside a moving one.

    "Deep" is closer than ``radius / 2`` to a solid's surface, or behind a polygon's front
    face by that much: at least half the mover inside. A system that stops a mover at the
    contact never gets there; one that lets it through, or pushes it out on the far side,
    does. Fixed solids (triangles, capsules, boxes whose two poses are equal) are swept
    along p0 -> q; moving ones (boxes that move, spheres) are checked where they and the
    mover end the frame (pose 1, ``c1``). Sensors are skipped.

    Parameters
    ----------
    p0, q : (n, 3) float64
        Where each mover started the frame and where it really ended it.
    radius : (n,) float64
    scene : Scene

    Returns
    -------
    (n,) bool
    """
    n = len(p0)
    bad = np.zeros(n, bool)
    if n == 0:
        return bad
    half = radius / 2
    lo, hi = np.minimum(p0, q) - half[:, None], np.maximum(p0, q) + half[:, None]

    tri = scene.triangles
    i, j = np.nonzero(_near(lo, hi, np.minimum(np.minimum(tri.a, tri.b), tri.c),
                            np.maximum(np.maximum(tri.a, tri.b), tri.c)))
    if len(i):
        t = sphere_triangle_toi(p0[i], q[i], half[i], tri.a[j], tri.b[j], tri.c[j])
        bad[i[np.isfinite(t)]] = True

    cap = scene.capsules
    i, j = np.nonzero(_near(lo, hi, np.minimum(cap.a, cap.b) - cap.radius[:, None],
                            np.maximum(cap.a, cap.b) + cap.radius[:, None]))
    if len(i):
        t = sphere_capsule_toi(p0[i], q[i], half[i], cap.a[j], cap.b[j], cap.radius[j])
        bad[i[np.isfinite(t)]] = True

    box = scene.boxes
    i, j = np.nonzero(_near(lo, hi, *_box_bounds(box)))
    if len(i):
        fixed = np.all(box.origin0[j] == box.origin1[j], axis=1) & (
            box.heading0[j] == box.heading1[j])
        f = np.flatnonzero(fixed)
        t = sphere_box_toi(to_box_frame(p0[i[f]], box.origin1[j[f]], box.heading1[j[f]]),
                           to_box_frame(q[i[f]], box.origin1[j[f]], box.heading1[j[f]]),
                           half[i[f]], box.lo[j[f]], box.hi[j[f]])
        bad[i[f][np.isfinite(t)]] = True
        end = to_box_frame(q[i], box.origin1[j], box.heading1[j])
        gap = np.linalg.norm(end - np.clip(end, box.lo[j], box.hi[j]), axis=1)
        bad[i[gap < half[i]]] = True

    s = scene.spheres
    solid = np.flatnonzero(~s.sensor)
    if len(solid):
        gap = np.linalg.norm(q[:, None, :] - s.c1[solid][None, :, :], axis=2)
        bad |= np.any(gap < s.radius[solid][None, :] + half[:, None], axis=1)
    return bad
