"""One continuous-collision pass over arrays: broad phase, exact times of impact, and
time-ordered resolution. Pure numpy; the Panda3D component feeds it and applies the result.

How the resolution stays exact without a loop per contact
---------------------------------------------------------
Every solid (non-sensor) sphere follows a piecewise-linear path: its current segment runs
from ``xs`` at time ``ts`` to ``xe`` at time 1. Each pair of candidates keeps its time of
impact on the pair's current segments. A round accepts, all at once, every contact that is
the earliest pending contact of each of its moving bodies: such contacts cannot disturb one
another, and the globally earliest one is always among them, so every round makes progress.
A body whose motion is changed by an accepted contact (stopped by ``rewind``, deflected by
``slide``) gets a new segment starting at the contact time, and only the pairs involving it
are tested again, from that time on: before it, neither path changed, so the old answer
("no contact yet") still holds. A stationary segment is never changed by a contact, which is
what lets a pillar or a wall absorb any number of hits in a single round.

Deflected paths stay inside the ball of radius |p1 - p0| around p0 (each slide only removes
motion), so one broad phase with that margin finds every pair a slide can reach. Sensors
never change anyone's motion; they are tested once at the end against the final paths.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._tolerance import MAX_ROUNDS, MAX_SLIDES
from .broadphase import sphere_pairs, sphere_plane_pairs
from .sweep import (
    sphere_plane_overlap,
    sphere_plane_toi,
    sphere_sphere_overlap,
    sphere_sphere_toi,
)

REWIND, SLIDE, SENSOR = 0, 1, 2

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


class Hits(NamedTuple):
    """Contacts of one pass, one row each. ``a`` is a sphere; ``b`` is a sphere, or a plane
    where ``b_plane``. Rows of sensor pairs carry the exit, others have ``t_exit`` nan."""

    a: Int  # (k,)
    b: Int  # (k,)
    b_plane: Bool  # (k,)
    sensor: Bool  # (k,) either side is a sensor
    t: Float  # (k,) time of impact (entry, for sensor pairs)
    point: Float  # (k, 3) world contact point
    normal: Float  # (k, 3) unit, out of b toward a
    speed: Float  # (k,) approach speed along the normal, units per frame
    pos_a: Float  # (k, 3) centre of a at t
    pos_b: Float  # (k, 3) centre of b at t (nan for planes)
    t_exit: Float  # (k,) time a sensor pair stopped overlapping; nan if still at the end
    exit_point: Float  # (k, 3)
    exit_normal: Float  # (k, 3)
    exit_pos_a: Float  # (k, 3)
    exit_pos_b: Float  # (k, 3)


class PassResult(NamedTuple):
    end: Float  # (n, 3) final centres
    t_stop: Float  # (n,) time a rewound body stopped; 1.0 for those that ran their path
    moved: Bool  # (n,) final centre differs from p1 (must be written back)
    hits: Hits  # sorted by t
    candidates: int  # broad-phase pairs (sphere-sphere plus sphere-plane)
    rounds: int
    capped: bool  # MAX_ROUNDS reached: everything held at the earliest unresolved contact


def _empty_hits() -> Hits:
    z3 = np.zeros((0, 3))
    z = np.zeros(0)
    zi = np.zeros(0, np.int64)
    zb = np.zeros(0, bool)
    return Hits(zi, zi, zb, zb, z, z3, z3, z, z3, z3, z, z3, z3, z3, z3)


def _concat_hits(parts: list[Hits]) -> Hits:
    if not parts:
        return _empty_hits()
    merged = Hits(*(np.concatenate(col) for col in zip(*parts)))
    order = np.argsort(merged.t, kind="stable")
    return Hits(*(col[order] for col in merged))


def _unit(v: Float, fallback: Float) -> Float:
    """Rows of v normalised; rows of zero length take the matching row of fallback."""
    length = np.linalg.norm(v, axis=1)
    ok = length > 0
    out = np.array(fallback, dtype=np.float64, copy=True)
    out[ok] = v[ok] / length[ok, None]
    return out


class _Paths:
    """Current piecewise-linear paths of the spheres, and the log of finished segments."""

    def __init__(self, p0: Float, p1: Float) -> None:
        self.xs = p0.copy()
        self.xe = p1.copy()
        self.ts = np.zeros(len(p0))
        self.log: list[tuple[Int, Float, Float, Float, Float]] = []

    def at(self, idx: Int, t: Float) -> Float:
        """(k, 3) positions of bodies idx at times t (t >= their segment start)."""
        ts = self.ts[idx]
        span = 1.0 - ts
        frac = np.divide(t - ts, span, out=np.zeros_like(span), where=span > 0)
        return self.xs[idx] + frac[:, None] * (self.xe[idx] - self.xs[idx])

    def velocity(self, idx: Int) -> Float:
        """(k, 3) velocities in units per frame on the current segments."""
        span = 1.0 - self.ts[idx]
        inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
        return (self.xe[idx] - self.xs[idx]) * inv[:, None]

    def stationary(self) -> Bool:
        return np.all(self.xs == self.xe, axis=1)

    def restart(self, idx: Int, t: Float, at_t: Float, new_end: Float) -> None:
        """Close the current segments of idx at t and start new ones from at_t to new_end."""
        self.log.append((idx, self.ts[idx].copy(), t.copy(), self.xs[idx].copy(), at_t.copy()))
        self.xs[idx] = at_t
        self.xe[idx] = new_end
        self.ts[idx] = t

    def segments(self) -> tuple[Int, Float, Float, Float, Float]:
        """All segments (finished and current), sorted by body then start time."""
        n = len(self.xs)
        parts = [*self.log, (np.arange(n), self.ts, np.ones(n), self.xs, self.xe)]
        body, t0, t1, x0, x1 = (np.concatenate(col) for col in zip(*parts))
        order = np.lexsort((t0, body))
        return body[order], t0[order], t1[order], x0[order], x1[order]


def _segment_toi(
    paths: _Paths, radius: Float, i: Int, j: Int
) -> Float:
    """Times of impact of sphere pairs on their current segments, from the later start on."""
    start = np.maximum(paths.ts[i], paths.ts[j])
    s = sphere_sphere_toi(
        paths.at(i, start), paths.xe[i], radius[i], paths.at(j, start), paths.xe[j], radius[j]
    )
    return start + s * (1.0 - start)


def _plane_offset_at(off0: Float, off1: Float, t: Float) -> Float:
    return off0 + t * (off1 - off0)


def _segment_plane_toi(
    paths: _Paths, radius: Float, i: Int, k: Int, normal: Float, off0: Float, off1: Float
) -> Float:
    """Times of impact of spheres with (translating) planes on the current segments."""
    start = paths.ts[i]
    n = normal[k]
    off_start = _plane_offset_at(off0[k], off1[k], start)
    # A translating plane is a fixed plane in the frame of the plane: move the sphere's end
    # by the plane's displacement along its normal instead.
    end = paths.xe[i] + n * (off1[k] - off_start)[:, None]
    s = sphere_plane_toi(paths.at(i, start), end, radius[i], n, off_start)
    return start + s * (1.0 - start)


def solve(
    p0: Float,
    p1: Float,
    radius: Float,
    response: NDArray[np.int8],
    from_mask: NDArray[np.int64],
    into_mask: NDArray[np.int64],
    *,
    plane_normal: Float | None = None,
    plane_offset0: Float | None = None,
    plane_offset1: Float | None = None,
    plane_mask: NDArray[np.int64] | None = None,
) -> PassResult:
    """Run one pass.

    Parameters
    ----------
    p0, p1 : (n, 3) float64
        Sphere centres at the start and end of the frame. Rows that are not finite are
        ignored (no contact, left where they are).
    radius : (n,) float64
    response : (n,) int8
        REWIND, SLIDE or SENSOR per sphere.
    from_mask, into_mask : (n,) int64
        32-bit collide masks.
    plane_normal : (m, 3) float64, unit
    plane_offset0, plane_offset1 : (m,) float64
        Plane offsets at the start and end of the frame (planes translate; they never
        respond to contacts).
    plane_mask : (m,) int64
        Into masks of the planes.
    """
    n = len(p0)
    m = 0 if plane_normal is None else len(plane_normal)
    if m == 0:
        plane_normal = np.zeros((0, 3))
        plane_offset0 = plane_offset1 = np.zeros(0)
        plane_mask = np.zeros(0, np.int64)
    assert plane_offset0 is not None and plane_offset1 is not None and plane_mask is not None

    finite = np.all(np.isfinite(p0), axis=1) & np.all(np.isfinite(p1), axis=1)
    p0 = np.where(finite[:, None], p0, np.nan)
    p1 = np.where(finite[:, None], p1, np.nan)
    solid = response != SENSOR
    slide = response == SLIDE
    moving = np.any(p0 != p1, axis=1)
    # Deflected paths stay within |p1 - p0| of p0: one broad phase covers every slide.
    reach = np.where(slide & finite, np.linalg.norm(p1 - p0, axis=1), 0.0)

    ci, cj = sphere_pairs(p0, p1, radius, from_mask, into_mask, moving=moving, margin=reach)
    qi, qk = sphere_plane_pairs(
        p0,
        p1,
        radius + reach,
        plane_normal,
        plane_offset0,
        from_mask,
        plane_mask,
        moving=moving,
        plane_moving=plane_offset0 != plane_offset1,
        plane_offsets1=plane_offset1,
    )
    candidates = len(ci) + len(qi)

    pair_solid = solid[ci] & solid[cj]
    si, sj = ci[pair_solid], cj[pair_solid]
    plane_solid = solid[qi]
    pi, pk = qi[plane_solid], qk[plane_solid]

    paths = _Paths(np.where(finite[:, None], p0, 0.0), np.where(finite[:, None], p1, 0.0))
    earliest = _earliest_touch(paths.xs, paths.xe, radius, si, sj)
    t_stop = np.ones(n)
    slides = np.zeros(n, np.int64)
    toi_s = np.full(len(si), np.inf)
    toi_p = np.full(len(pi), np.inf)
    dirty_s = np.ones(len(si), bool)
    dirty_p = np.ones(len(pi), bool)
    hits: list[Hits] = []
    rounds = 0
    capped = False

    while True:
        if dirty_s.any():
            d = np.flatnonzero(dirty_s)
            toi_s[d] = _segment_toi(paths, radius, si[d], sj[d])
        if dirty_p.any():
            d = np.flatnonzero(dirty_p)
            toi_p[d] = _segment_plane_toi(
                paths, radius, pi[d], pk[d], plane_normal, plane_offset0, plane_offset1
            )
        pending_s = np.isfinite(toi_s)
        pending_p = np.isfinite(toi_p)
        if not (pending_s.any() or pending_p.any()):
            break
        if rounds == MAX_ROUNDS:
            capped = True
            t_hold = min(toi_s[pending_s].min(initial=np.inf), toi_p[pending_p].min(initial=np.inf))
            break
        rounds += 1

        still = paths.stationary()
        first = np.full(n, np.inf)
        np.minimum.at(first, si, toi_s)
        np.minimum.at(first, sj, toi_s)
        np.minimum.at(first, pi, toi_p)
        t_min = min(toi_s.min(initial=np.inf), toi_p.min(initial=np.inf))
        free = ~_blocked(si, sj, toi_s, first, still, earliest)
        # A stationary body is never changed by a contact, so it need not be "first".
        acc_s = (
            pending_s
            & (still[si] | (toi_s == first[si]))
            & (still[sj] | (toi_s == first[sj]))
            & ((toi_s == t_min) | (free[si] & free[sj]))
        )
        acc_p = pending_p & (toi_p == first[pi]) & ((toi_p == t_min) | free[pi])

        a_s, b_s, t_s = si[acc_s], sj[acc_s], toi_s[acc_s]
        a_p, k_p, t_p = pi[acc_p], pk[acc_p], toi_p[acc_p]
        hs = _sphere_hits(paths, radius, a_s, b_s, t_s)
        hp = _plane_hits(paths, a_p, k_p, t_p, plane_normal, plane_offset0, plane_offset1)
        hits += [hs, hp]

        # Each accepted contact pushes on its moving bodies: (body, time, normal toward it).
        body = np.concatenate([a_s, b_s, a_p])
        when = np.concatenate([t_s, t_s, t_p])
        push = np.concatenate([hs.normal, -hs.normal, hp.normal])
        keep = ~still[body]
        changed = _respond(paths, body[keep], when[keep], push[keep], slide, slides, t_stop)

        toi_s[acc_s] = np.inf
        toi_p[acc_p] = np.inf
        dirty_s = changed[si] | changed[sj]
        dirty_p = changed[pi]

    solid_hits = _concat_hits(hits)
    if capped:
        solid_hits = _hold(paths, solid, t_hold, t_stop, solid_hits)

    sensor_hits = _sensor_hits(
        paths,
        radius,
        ci[~pair_solid],
        cj[~pair_solid],
        solid,
        qi[~plane_solid],
        qk[~plane_solid],
        plane_normal,
        plane_offset0,
        plane_offset1,
    )
    end = np.where(finite[:, None], paths.xe, p1)
    moved = finite & np.any(end != p1, axis=1)
    return PassResult(
        end=end,
        t_stop=t_stop,
        moved=moved,
        hits=_concat_hits([solid_hits, sensor_hits]),
        candidates=candidates,
        rounds=rounds,
        capped=capped,
    )


def _earliest_touch(p0: Float, p1: Float, radius: Float, i: Int, j: Int) -> Float:
    """(k,) a time before which pair (i, j) cannot touch, whatever contacts do to either.

    Every response only stops or shortens motion, so a body is always within t |p1 - p0|
    of p0 at time t; two bodies cannot meet before their gap closes at their full speeds.
    """
    reach = np.linalg.norm(p1 - p0, axis=1)
    gap = np.linalg.norm(p0[i] - p0[j], axis=1) - radius[i] - radius[j]
    speed = reach[i] + reach[j]
    bound = np.divide(gap, speed, out=np.full(len(i), np.inf), where=speed > 0)
    return np.where(gap <= 0, 0.0, bound)


def _blocked(i: Int, j: Int, toi: Float, first: Float, still: Bool, earliest: Float) -> Bool:
    """(n,) bodies whose earliest contact cannot be accepted yet: a moving neighbour could
    still change its path and reach them before that time.

    The globally earliest contact is always safe; these are the others a round may take at
    the same time. Two bodies whose earliest contact is with each other are safe only
    together, so a neighbour that blocks one blocks both.
    """
    n = len(first)
    mutual = np.isfinite(toi) & (toi == first[i]) & (toi == first[j])
    threat_i = ~still[j] & (earliest < first[i]) & ~mutual
    threat_j = ~still[i] & (earliest < first[j]) & ~mutual
    blocked = np.zeros(n, bool)
    blocked[i[threat_i]] = True
    blocked[j[threat_j]] = True
    mi, mj = i[mutual], j[mutual]
    while True:
        grown = blocked.copy()
        grown[mi] |= blocked[mj]
        grown[mj] |= blocked[mi]
        if np.array_equal(grown, blocked):
            return blocked & ~still
        blocked = grown


def _sphere_hits(paths: _Paths, radius: Float, a: Int, b: Int, t: Float) -> Hits:
    pa = paths.at(a, t)
    pb = paths.at(b, t)
    va = paths.velocity(a)
    vb = paths.velocity(b)
    # Coincident centres (two points meeting exactly) have no direction: use the motion.
    fallback = _unit(vb - va, np.broadcast_to([0.0, 0.0, 1.0], pa.shape))
    normal = _unit(pa - pb, fallback)
    speed = np.maximum(-np.einsum("ij,ij->i", va - vb, normal), 0.0)
    point = pb + normal * radius[b][:, None]
    nan3 = np.full(pa.shape, np.nan)
    k = len(a)
    return Hits(a, b, np.zeros(k, bool), np.zeros(k, bool), t, point, normal, speed, pa, pb,
                np.full(k, np.nan), nan3, nan3, nan3, nan3)


def _plane_hits(
    paths: _Paths, a: Int, k: Int, t: Float, normal: Float, off0: Float, off1: Float
) -> Hits:
    pa = paths.at(a, t)
    nrm = normal[k]
    dist = np.einsum("ij,ij->i", nrm, pa) + _plane_offset_at(off0[k], off1[k], t)
    point = pa - nrm * dist[:, None]
    speed = np.maximum(-(np.einsum("ij,ij->i", paths.velocity(a), nrm) + off1[k] - off0[k]), 0.0)
    nan3 = np.full(pa.shape, np.nan)
    count = len(a)
    return Hits(a, k, np.ones(count, bool), np.zeros(count, bool), t, point, nrm.copy(), speed,
                pa, nan3, np.full(count, np.nan), nan3, nan3, nan3, nan3)


def _respond(
    paths: _Paths,
    body: Int,
    when: Float,
    push: Float,
    slide: Bool,
    slides: Int,
    t_stop: Float,
) -> Bool:
    """Stop (rewind) or deflect (slide) the bodies of accepted contacts; which changed."""
    changed = np.zeros(len(paths.xs), bool)
    if len(body) == 0:
        return changed
    # All accepted contacts of one body share its time (each was its earliest).
    uniq, first_row = np.unique(body, return_index=True)
    t = when[first_row]
    at_t = paths.at(uniq, t)
    remaining = paths.xe[uniq] - at_t
    slides[uniq] += 1
    deflect = slide[uniq] & (slides[uniq] <= MAX_SLIDES)
    # Remove the motion into each contact normal, one contact rank at a time (several
    # contacts of one body at the same instant are rare: a corner).
    order = np.argsort(body, kind="stable")
    sorted_body = body[order]
    rank = np.arange(len(body)) - np.searchsorted(sorted_body, sorted_body)
    slot = np.searchsorted(uniq, sorted_body)
    for r in range(int(rank.max()) + 1):
        rows = rank == r
        s = slot[rows]
        nrm = push[order][rows]
        into = np.minimum(np.einsum("ij,ij->i", remaining[s], nrm), 0.0)
        remaining[s] -= nrm * into[:, None]
    new_end = np.where(deflect[:, None], at_t + remaining, at_t)
    t_stop[uniq[~deflect]] = t[~deflect]
    paths.restart(uniq, t, at_t, new_end)
    changed[uniq] = True
    return changed


def _hold(paths: _Paths, solid: Bool, t_hold: float, t_stop: Float, hits: Hits) -> Hits:
    """Iteration cap reached: stop every solid body where it was at t_hold, when no contact
    was yet unresolved, so nothing is left overlapping; drop the contacts after it."""
    body, t0, t1, x0, x1 = paths.segments()
    # Segments of one body are contiguous in time: clip them at t_hold.
    keep = solid[body] & (t0 <= t_hold)
    body, t0, t1, x0, x1 = body[keep], t0[keep], t1[keep], x0[keep], x1[keep]
    span = t1 - t0
    frac = np.divide(t_hold - t0, span, out=np.zeros_like(span), where=span > 0)
    cut = t1 > t_hold
    x1 = np.where(cut[:, None], x0 + np.clip(frac, 0.0, 1.0)[:, None] * (x1 - x0), x1)
    t1 = np.minimum(t1, t_hold)
    paths.log = [(body, t0, t1, x0, x1)]
    held = np.flatnonzero(solid)
    # Sorted by (body, t0): the last row of each body ends at t_hold.
    last = np.full(len(paths.xs), -1)
    last[body] = np.arange(len(body))
    pos = x1[last[held]]
    paths.xs[held] = pos
    paths.xe[held] = pos
    paths.ts[held] = t_hold
    t_stop[held] = np.minimum(t_stop[held], t_hold)
    early = hits.t <= t_hold
    return Hits(*(col[early] for col in hits))


def _sensor_hits(
    paths: _Paths,
    radius: Float,
    ei: Int,
    ej: Int,
    solid: Bool,
    qi: Int,
    qk: Int,
    normal: Float,
    off0: Float,
    off1: Float,
) -> Hits:
    """Overlap intervals of sensor pairs, tested against every segment of the final paths."""
    parts = []
    if len(ei) or len(qi):
        body, t0, t1, x0, x1 = paths.segments()
        start = np.searchsorted(body, np.arange(len(paths.xs)))
        count = np.diff(np.append(start, len(body)))
    if len(ei):
        # Put the sensor on side a when only one side is a sensor: it has a single segment.
        swap = solid[ei]
        a = np.where(swap, ej, ei)
        b = np.where(swap, ei, ej)
        parts.append(_sensor_sphere_rows(paths, radius, a, b, body, t0, t1, x0, x1, start, count))
    if len(qi):
        parts.append(_sensor_plane_rows(paths, radius, qi, qk, normal, off0, off1))
    return _concat_hits(parts)


def _expand(owner: Int, start: Int, count: Int) -> tuple[Int, Int]:
    """For each item with owner o, one row per segment of o: (item index, segment index)."""
    reps = count[owner]
    item = np.repeat(np.arange(len(owner)), reps)
    offset = np.arange(len(item)) - np.repeat(np.cumsum(reps) - reps, reps)
    return item, start[owner][item] + offset


def _sensor_sphere_rows(
    paths: _Paths,
    radius: Float,
    a: Int,
    b: Int,
    body: Int,
    t0: Float,
    t1: Float,
    x0: Float,
    x1: Float,
    start: Int,
    count: Int,
) -> Hits:
    """a: sensor spheres (one linear segment each); b: any sphere, all of its segments."""
    item, seg = _expand(b, start, count)
    ia = a[item]
    ib = b[item]
    lo, hi = t0[seg], t1[seg]
    span = hi - lo
    a_lo = _sensor_at(paths, ia, lo)
    a_hi = _sensor_at(paths, ia, hi)
    enter, leave = sphere_sphere_overlap(a_lo, a_hi, radius[ia], x0[seg], x1[seg], radius[ib])
    hit = (span > 0) & np.isfinite(enter)
    # A zero-length final segment (stopped exactly at t = 1) still overlaps at its instant.
    item, seg, ia, ib = item[hit], seg[hit], ia[hit], ib[hit]
    t_in = lo[hit] + enter[hit] * span[hit]
    t_out = lo[hit] + leave[hit] * span[hit]
    if len(item) == 0:
        return _empty_hits()
    first = _pick(item, t_in)
    last = _pick(item, -t_out)
    t_enter = t_in[first]
    t_exit = np.where(t_out[last] >= 1.0, np.nan, t_out[last])

    def geometry(rows: Int, t: Float) -> tuple[Float, Float, Float, Float]:
        s = seg[rows]
        frac = np.divide(t - t0[s], t1[s] - t0[s], out=np.zeros_like(t), where=t1[s] > t0[s])
        pb = x0[s] + frac[:, None] * (x1[s] - x0[s])
        pa = _sensor_at(paths, ia[rows], t)
        normal = _unit(pa - pb, np.broadcast_to([0.0, 0.0, 1.0], pa.shape))
        return pa, pb, normal, pb + normal * radius[ib[rows]][:, None]

    pa, pb, nrm, point = geometry(first, t_enter)
    xa, xb, xn, xpoint = geometry(last, np.where(np.isnan(t_exit), 1.0, t_exit))
    rel = _sensor_velocity(paths, ia[first]) - (x1[seg[first]] - x0[seg[first]]) / np.maximum(
        (t1[seg[first]] - t0[seg[first]])[:, None], 1e-300
    )
    speed = np.maximum(-np.einsum("ij,ij->i", rel, nrm), 0.0)
    k = len(first)
    return Hits(ia[first], ib[first], np.zeros(k, bool), np.ones(k, bool), t_enter, point, nrm,
                speed, pa, pb, t_exit, xpoint, xn, xa, xb)


def _pick(item: Int, key: Float) -> Int:
    """Row index of the smallest key per item (items sorted ascending)."""
    order = np.lexsort((key, item))
    first = np.ones(len(order), bool)
    first[1:] = item[order][1:] != item[order][:-1]
    return order[first]


def _sensor_at(paths: _Paths, idx: Int, t: Float) -> Float:
    """Position of never-deflected bodies (sensors) at any time in the frame."""
    return paths.xs[idx] + t[:, None] * (paths.xe[idx] - paths.xs[idx])


def _sensor_velocity(paths: _Paths, idx: Int) -> Float:
    return paths.xe[idx] - paths.xs[idx]


def _sensor_plane_rows(
    paths: _Paths, radius: Float, i: Int, k: Int, normal: Float, off0: Float, off1: Float
) -> Hits:
    nrm = normal[k]
    c0 = paths.xs[i]
    c1 = paths.xe[i] + nrm * (off1[k] - off0[k])[:, None]
    enter, leave = sphere_plane_overlap(c0, c1, radius[i], nrm, off0[k])
    hit = np.isfinite(enter)
    i, k, nrm, enter, leave = i[hit], k[hit], nrm[hit], enter[hit], leave[hit]
    t_exit = np.where(leave >= 1.0, np.nan, leave)

    def geometry(t: Float) -> tuple[Float, Float]:
        pa = _sensor_at(paths, i, t)
        dist = np.einsum("ij,ij->i", nrm, pa) + _plane_offset_at(off0[k], off1[k], t)
        return pa, pa - nrm * dist[:, None]

    pa, point = geometry(enter)
    xa, xpoint = geometry(np.where(np.isnan(t_exit), 1.0, t_exit))
    v = _sensor_velocity(paths, i)
    speed = np.maximum(-(np.einsum("ij,ij->i", v, nrm) + off1[k] - off0[k]), 0.0)
    nan3 = np.full(pa.shape, np.nan)
    c = len(i)
    return Hits(i, k, np.ones(c, bool), np.ones(c, bool), enter, point, nrm.copy(), speed, pa,
                nan3, t_exit, xpoint, nrm.copy(), xa, nan3)
