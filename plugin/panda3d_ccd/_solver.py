"""One continuous-collision pass over arrays: broad phase, exact times of impact, and
time-ordered resolution. Pure numpy; the Panda3D component feeds it and applies the result.

How the resolution stays exact without a loop per contact
---------------------------------------------------------
Every solid (non-sensor) sphere follows a piecewise-linear path: its current segment runs
from ``xs`` at time ``ts`` to ``xe`` at time 1. Each pair of candidates keeps its time of
impact on the pair's current segments. A round accepts, all at once, every contact that is
the earliest pending contact of each of its moving bodies and that no neighbour can change
in time to pre-empt (see ``_blocked``): such contacts cannot disturb one another, and the
globally earliest one is always among them, so every round makes progress.
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

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._arrays import largest_abs as _largest_abs
from ._arrays import length as _length
from ._arrays import row_all as _row_all
from ._arrays import row_any as _row_any
from ._arrays import row_max as _row_max
from ._arrays import unique as _unique
from ._tolerance import DIST_REL_EPS, MAX_ROUNDS, MAX_SLIDES, SLOP_REL
from .broadphase import _sphere_pairs, _sphere_plane_pairs
from .sweep.sphere_plane import _sphere_plane_toi, sphere_plane_overlap
from .sweep.sphere_sphere import _sphere_sphere_toi, sphere_sphere_overlap

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
    """The rows of all parts, sorted by time (stable). Hits has fifteen columns, so empty
    parts are left out and a lone part already in order is returned as it is."""
    parts = [part for part in parts if len(part.t)]
    if not parts:
        return _empty_hits()
    merged = parts[0] if len(parts) == 1 else Hits(*(np.concatenate(c) for c in zip(*parts)))
    if np.all(merged.t[1:] >= merged.t[:-1]):
        return merged  # what a stable sort would give
    order = np.argsort(merged.t, kind="stable")
    return Hits(*(col[order] for col in merged))


def _first_per_pair(hits: Hits) -> Hits:
    """Keep each pair's earliest contact: a slide can meet the same surface again later in
    the pass, and a pair has one contact (one event) per pass."""
    order = np.lexsort((hits.t, hits.b_plane, hits.b, hits.a))
    key = np.stack([hits.a[order], hits.b[order], hits.b_plane[order]], axis=1)
    first = np.ones(len(order), bool)
    first[1:] = np.any(key[1:] != key[:-1], axis=1)
    keep = np.sort(order[first])
    return Hits(*(col[keep] for col in hits))


def _unit(v: Float, fallback: Float) -> Float:
    """Rows of v normalised; rows of zero length take the matching row of fallback."""
    length = _length(v)
    ok = length > 0
    out = np.array(fallback, dtype=np.float64, copy=True)
    out[ok] = v[ok] / length[ok, None]
    return out


class _Paths:
    """Current piecewise-linear paths of the spheres, and the log of finished segments."""

    def __init__(self, p0: Float, p1: Float) -> None:
        # One row per body: segment start point, end point and start time. xs, xe and ts
        # are views of it; a test of many pairs gathers each side's rows in one go.
        self.rows = np.zeros((len(p0), 7))
        self.xs = self.rows[:, 0:3]
        self.xe = self.rows[:, 3:6]
        self.ts = self.rows[:, 6]
        self.xs[:] = p0
        self.xe[:] = p1
        # The last contact normal that deflected each body, and when (slides in a wedge).
        self.normal = np.zeros_like(self.xs)
        self.normal_t = np.full(len(p0), -1.0)
        self.log: list[tuple[Int, Float, Float, Float, Float]] = []

    def at(self, idx: Int, t: Float) -> Float:
        """(k, 3) positions of bodies idx at times t (t >= their segment start)."""
        return _position(self.rows[idx], t)

    def velocity(self, idx: Int) -> Float:
        """(k, 3) velocities in units per frame on the current segments."""
        return _velocity(self.rows[idx])

    def stationary(self) -> Bool:
        return _row_all(self.xs == self.xe)

    def stationary_of(self, idx: Int) -> Bool:
        return _row_all(self.xs[idx] == self.xe[idx])

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


def _position(rows: Float, t: Float) -> Float:
    """(k, 3) positions at times t on segments given as rows of _Paths.rows."""
    ts = rows[:, 6]
    span = 1.0 - ts
    frac = np.divide(t - ts, span, out=np.zeros_like(span), where=span > 0)
    return rows[:, 0:3] + frac[:, None] * (rows[:, 3:6] - rows[:, 0:3])


def _velocity(rows: Float) -> Float:
    """(k, 3) velocities in units per frame on segments given as rows of _Paths.rows."""
    span = 1.0 - rows[:, 6]
    inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
    return (rows[:, 3:6] - rows[:, 0:3]) * inv[:, None]


def _slop(*points: Float) -> Float:
    """(k,) penetration too shallow to count as a contact, for pairs near these points.

    Panda3D stores positions in float32: a ball moved along a tilted floor by setPos
    arrives up to ~1e-7 of its coordinates inside it. Counting that as an approach would
    stop the ball (it would stick); ignoring contacts that could never sink deeper than
    this keeps every overlap within it.
    """
    return SLOP_REL * np.maximum(1.0, _largest_abs(*points))


def _segment_toi(paths: _Paths, radius: Float, i: Int, j: Int) -> Float:
    """Times of impact of sphere pairs on their current segments, from the later start on.
    Pairs whose deepest approach on the segments stays within the slop do not count."""
    if len(i) == 0:  # a round with nothing to retest: skip some forty numpy calls
        return np.zeros(0)
    rows_a, rows_b = paths.rows[i], paths.rows[j]
    start = np.maximum(rows_a[:, 6], rows_b[:, 6])
    a0, b0 = _position(rows_a, start), _position(rows_b, start)
    a1, b1 = rows_a[:, 3:6], rows_b[:, 3:6]
    s = _sphere_sphere_toi(a0, a1, radius[i], b0, b1, radius[j])
    p = a0 - b0
    v = (a1 - a0) - (b1 - b0)
    vv = np.einsum("ij,ij->i", v, v)
    u = np.divide(-np.einsum("ij,ij->i", p, v), vv, out=np.zeros(len(p)), where=vv > 0)
    closest = _length(p + np.clip(u, 0.0, 1.0)[:, None] * v)
    shallow = radius[i] + radius[j] - closest <= _slop(a0, b0)
    return np.where(shallow, np.inf, start + s * (1.0 - start))


def _plane_offset_at(off0: Float, off1: Float, t: Float) -> Float:
    return off0 + t * (off1 - off0)


def _segment_plane_toi(paths: _Paths, radius: Float, i: Int, k: Int, planes: Any) -> Float:
    """Times of impact of spheres with (translating) planes on the current segments."""
    if len(i) == 0:  # most scenes' rounds: no plane pair to retest
        return np.zeros(0)
    off0, off1 = planes.off0, planes.off1
    start = paths.ts[i]
    n = planes.normal[k]
    off_start = _plane_offset_at(off0[k], off1[k], start)
    # A translating plane is a fixed plane in the frame of the plane: move the sphere's end
    # by the plane's displacement along its normal instead.
    c0 = paths.at(i, start)
    end = paths.xe[i] + n * (off1[k] - off_start)[:, None]
    length = planes.length[k]  # the exact test takes the normal at length 1 (see _Planes)
    s = _sphere_plane_toi(c0, end, radius[i], n / length[:, None], off_start / length)
    deepest = np.minimum(
        np.einsum("ij,ij->i", n, c0) + off_start, np.einsum("ij,ij->i", n, end) + off_start
    )
    shallow = radius[i] - deepest <= _slop(c0, end)
    return np.where(shallow, np.inf, start + s * (1.0 - start))


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
    group: NDArray[np.int64] | None = None,
    plane_group: NDArray[np.int64] | None = None,
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
    group : (n,) int64, optional
        Rigid groups (the solids of one node): a group's spheres are never tested against
        each other, and a contact of one stops or deflects them all alike.
    plane_group : (m,) int64, optional
        The group of each plane: never tested against the spheres of its own group.
    """
    # float64 throughout (the broad phase's rounding pad assumes it).
    p0, p1, radius = (np.asarray(x, dtype=np.float64) for x in (p0, p1, radius))
    n = len(p0)
    if plane_normal is None or len(plane_normal) == 0:
        planes = _Planes.of(np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros(0, np.int64))
    else:
        planes = _Planes.of(plane_normal, plane_offset0, plane_offset1, plane_mask)  # type: ignore
    finite = _row_all(np.isfinite(p0)) & _row_all(np.isfinite(p1))
    p0 = np.where(finite[:, None], p0, np.nan)
    p1 = np.where(finite[:, None], p1, np.nan)
    solid = response != SENSOR
    slide = (response == SLIDE) & finite
    rigid = _Rigid(n, group)
    # A rigid group moves as one: a member whose own path is still is carried when a slide
    # group is deflected (a group turning about it), so stillness is the group's.
    moving = rigid.spread_any(_row_any(p0 != p1))
    # A deflected path stays within |p1 - p0| of p0 (each slide only removes motion), so
    # slides get that margin in both broad phases: every pair a slide can ever reach is
    # known before the first round, which the batching relies on (a round takes a contact
    # once no neighbour in the pair set can change in time). In a slide group every member
    # moves at most as fast as the fastest one (a deflection carries all members by the
    # same motion), so each gets the group's largest reach. (A sweep too long to measure
    # is ignored by the broad phase anyway.)
    with np.errstate(over="ignore", invalid="ignore"):
        own = _length(p1 - p0)
    reach = np.where(slide, rigid.spread_max(np.where(slide & np.isfinite(own), own, 0.0)), 0.0)

    # Still pairs matter to sensors (a ball resting inside a trigger zone stays "in"), so
    # the broad phase keeps them; solids drop them below: they cannot start a contact.
    # Straight paths are cut into pieces, so a fast mover's box does not take in the whole
    # crowd around its diagonal. Not slides: their bent paths may go anywhere in their ball.
    everyone = np.ones(n, bool)
    ci, cj = _sphere_pairs(p0, p1, radius + reach, from_mask, into_mask, everyone, ~slide)
    plane_moving = planes.off0 != planes.off1
    qi, qk = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(planes.normal):
        qi, qk = _sphere_plane_pairs(
            p0, p1, radius + reach, *planes.unit(), from_mask, planes.mask, everyone,
            plane_moving,
        )  # fmt: skip
    if group is not None:
        apart = group[ci] != group[cj]
        ci, cj = ci[apart], cj[apart]
        if plane_group is not None:
            apart = group[qi] != plane_group[qk]
            qi, qk = qi[apart], qk[apart]
    pair_sensor = ~(solid[ci] & solid[cj])
    pair_solid = ~pair_sensor & (moving[ci] | moving[cj])
    plane_sensor = ~solid[qi]
    plane_solid = ~plane_sensor & (moving[qi] | plane_moving[qk])
    pi, pk = qi[plane_solid], qk[plane_solid]

    paths = _Paths(np.where(finite[:, None], p0, 0.0), np.where(finite[:, None], p1, 0.0))
    bound_reach = np.where(slide, reach, np.where(finite, own, 0.0))
    pairs = _PairSet(paths, radius, slide, bound_reach, ci[pair_solid], cj[pair_solid])
    by_body_plane = _Adjacency(n, pi)
    still = ~rigid.spread_any(~paths.stationary())
    t_stop = np.ones(n)
    slides = np.zeros(n, np.int64)
    toi_p = _segment_plane_toi(paths, radius, pi, pk, planes)
    pend_s = np.flatnonzero(np.isfinite(pairs.toi))
    pend_p = np.flatnonzero(np.isfinite(toi_p))
    first = np.full(n, np.inf)
    hits: list[Hits] = []
    rounds = 0
    capped = False
    t_hold = np.inf

    while len(pend_s) or len(pend_p):
        t_s, t_p = pairs.toi[pend_s], toi_p[pend_p]
        t_min = min(t_s.min(initial=np.inf), t_p.min(initial=np.inf))
        if rounds == MAX_ROUNDS:
            capped, t_hold = True, t_min
            unresolved = np.concatenate([pairs.i[pend_s], pairs.j[pend_s], pi[pend_p]])
            # Through the pairs that can touch this frame only (bound <= 1), as when the
            # bounds are computed up front: a pair that cannot touch carries no change.
            near = pairs.earliest <= 1.0
            held = rigid.spread_any(_reach(unresolved, pairs.i[near], pairs.j[near], still))
            break
        rounds += 1
        a_s, b_s, a_p = pairs.i[pend_s], pairs.j[pend_s], pi[pend_p]
        active = _unique(np.concatenate([a_s, b_s, a_p]))
        np.minimum.at(first, a_s, t_s)
        np.minimum.at(first, b_s, t_s)
        np.minimum.at(first, a_p, t_p)
        soonest = rigid.spread_min(first)
        if not rigid.trivial:
            active = rigid.members(_unique(rigid.group[active]))[0]
        # A stationary body is never changed by a contact, so it need not be "first".
        first_s = (still[a_s] | (t_s == soonest[a_s])) & (still[b_s] | (t_s == soonest[b_s]))
        first_p = t_p == soonest[a_p]
        free = pairs.free(soonest, still, rigid, a_s[first_s], b_s[first_s], a_p[first_p])
        acc_s = first_s & ((t_s == t_min) | (free[a_s] & free[b_s]))
        acc_p = first_p & ((t_p == t_min) | free[a_p])
        first[active] = np.inf

        a_s, b_s, t_s = a_s[acc_s], b_s[acc_s], t_s[acc_s]
        k_p, a_p, t_p = pk[pend_p[acc_p]], a_p[acc_p], t_p[acc_p]
        hs = _sphere_hits(paths, radius, a_s, b_s, t_s)
        hp = _plane_hits(paths, a_p, k_p, t_p, planes)
        hits += [hs, hp]
        pairs.toi[pend_s[acc_s]] = np.inf
        toi_p[pend_p[acc_p]] = np.inf

        # Each accepted contact pushes on its moving bodies: (body, time, normal toward it).
        body = np.concatenate([a_s, b_s, a_p])
        when = np.concatenate([t_s, t_s, t_p])
        push = np.concatenate([hs.normal, -hs.normal, hp.normal])
        keep = ~still[body]
        changed = _respond(paths, rigid, body[keep], when[keep], push[keep], slide, slides, t_stop)
        # _respond changes whole groups: a group is still once every member is.
        moves = np.zeros(n, bool)
        moves[changed] = ~paths.stationary_of(changed)
        still[changed] = ~rigid.spread_any(moves)[changed]
        dirty_s = pairs.pairs_of(changed)
        dirty_p = by_body_plane.pairs_of(changed)
        pairs.retest(dirty_s)
        toi_p[dirty_p] = _segment_plane_toi(paths, radius, pi[dirty_p], pk[dirty_p], planes)
        pend_s = _unique(np.concatenate([pend_s, dirty_s]))
        pend_s = pend_s[np.isfinite(pairs.toi[pend_s])]
        pend_p = _unique(np.concatenate([pend_p, dirty_p]))
        pend_p = pend_p[np.isfinite(toi_p[pend_p])]

    solid_hits = _first_per_pair(_concat_hits(hits))
    if capped:
        solid_hits = _hold(paths, held, t_hold, t_stop, solid_hits)

    sensor_hits = _sensor_hits(
        paths, radius, ci[pair_sensor], cj[pair_sensor], solid, qi[plane_sensor],
        qk[plane_sensor], planes,
    )  # fmt: skip
    end = np.where(finite[:, None], paths.xe, p1)
    moved = finite & _row_any(end != p1)
    return PassResult(
        end=end,
        t_stop=t_stop,
        moved=moved,
        hits=_concat_hits([solid_hits, sensor_hits]),
        candidates=len(ci) + len(qi),
        rounds=rounds,
        capped=capped,
    )


class _Planes(NamedTuple):
    normal: Float  # (m, 3)
    off0: Float  # (m,)
    off1: Float  # (m,)
    mask: NDArray[np.int64]  # (m,)
    # Lengths of the normals in float64: unit normals from elsewhere are often 1 ulp off,
    # and the broad phase and the exact test take them scaled to length 1, as the public
    # functions do.
    length: Float  # (m,)

    @classmethod
    def of(cls, normal: Float, off0: Float, off1: Float, mask: NDArray[np.int64]) -> _Planes:
        return cls(normal, off0, off1, mask, _length(normal))

    def unit(self) -> tuple[Float, Float, Float]:
        """Normals scaled to length 1, and both offsets with them."""
        length = self.length
        return self.normal / length[:, None], self.off0 / length, self.off1 / length


class _Adjacency:
    """The pairs each body belongs to (compressed rows), so that a round can gather the
    pairs of a few bodies without scanning every pair."""

    def __init__(self, n: int, *ends: Int) -> None:
        body = np.concatenate(ends)
        pair = np.tile(np.arange(len(ends[0])), len(ends))
        order = np.argsort(body, kind="stable")
        self._pair = pair[order]
        self._start = np.searchsorted(body[order], np.arange(n + 1))

    def pairs_of(self, bodies: Int) -> Int:
        """Sorted unique indices of the pairs that involve any of bodies."""
        lo = self._start[bodies]
        count = self._start[bodies + 1] - lo
        total = int(count.sum())
        offset = np.repeat(lo - (np.cumsum(count) - count), count)
        return _unique(self._pair[offset + np.arange(total)])


#: Up to this many solid pairs, the causality bounds are computed only if a round needs
#: them (see _PairSet.free); above it, up front, where they also drop the many pairs that
#: cannot touch this frame before any time of impact is computed.
_LAZY_PAIRS = 256


class _PairSet:
    """The solid sphere pairs under test: times of impact on the current segments, and for
    each a time before which it cannot touch (see _earliest_touch)."""

    def __init__(
        self, paths: _Paths, radius: Float, slide: Bool, reach: Float, i: Int, j: Int
    ) -> None:
        self._paths, self._radius = paths, radius
        # Bounds use the frame's original paths, which every response stays within.
        self._bound_args = (paths.xs.copy(), paths.xe.copy(), radius, slide, reach)
        self._earliest: Float | None = None
        if len(i) > _LAZY_PAIRS:
            earliest = self._bounds(i, j)
            # Pairs that cannot touch this frame whatever happens need no test at all.
            keep = earliest <= 1.0
            i, j, self._earliest = i[keep], j[keep], earliest[keep]
        self.i, self.j = i, j
        self._adjacency = _Adjacency(len(radius), self.i, self.j)
        self.toi = _segment_toi(paths, radius, self.i, self.j)

    def _bounds(self, i: Int, j: Int) -> Float:
        p0, p1, radius, slide, reach = self._bound_args
        return _earliest_touch(p0, p1, radius, slide, i, j, reach=reach)

    @property
    def earliest(self) -> Float:
        if self._earliest is None:
            self._earliest = self._bounds(self.i, self.j)
        return self._earliest

    def free(self, first: Float, still: Bool, rigid: _Rigid, *bodies: Int) -> Bool:
        """(n,) bodies whose earliest contact no neighbour can pre-empt (see _blocked);
        exact for the given bodies, whose contacts a round is about to judge.

        While the bounds are not yet computed, the change bound is first taken with a bound
        of 0 for every pair: that can only make a body look more threatened, so a body it
        leaves free is free. Only if one of the given bodies looks threatened are the real
        bounds computed (in a small scene of isolated contacts, never).
        """
        if self._earliest is None:
            crude = _blocked(self.i, self.j, self.toi, first, still, np.zeros(len(self.i)), rigid)
            if not any(crude[b].any() for b in bodies):
                return ~crude
        return ~_blocked(self.i, self.j, self.toi, first, still, self.earliest, rigid)

    def pairs_of(self, bodies: Int) -> Int:
        return self._adjacency.pairs_of(bodies)

    def retest(self, idx: Int) -> None:
        self.toi[idx] = _segment_toi(self._paths, self._radius, self.i[idx], self.j[idx])


#: Steps of the prefix bound's bisection: it ends within 1/32 of the frame below the true
#: moment. Eight steps (1/256) saved at most one round a frame on nine benchmark frames.
_BISECTIONS = 5


def _earliest_touch(
    p0: Float,
    p1: Float,
    radius: Float,
    deflect: Bool,
    i: Int,
    j: Int,
    *,
    reach: Float | None = None,
) -> Float:
    """(k,) a time before which pair (i, j) cannot touch, whatever contacts do to either;
    ``inf`` where they never can this frame.

    A body that is never deflected (rewind) stays on its segment p0 -> p1: it can only stop
    early. A deflected one (slide) stays within t ``reach`` of p0 at time t: ``reach`` (n,)
    is |p1 - p0| by default, since every slide only removes motion; in a rigid group it is
    the group's largest. Two bodies cannot meet before those regions do.
    """
    if reach is None:
        reach = _length(p1 - p0)
    big_r = radius[i] + radius[j]
    gap = _length(p0[i] - p0[j]) - big_r
    speed = reach[i] + reach[j]
    bound = np.divide(gap, speed, out=np.full(len(i), np.inf), where=speed > 0)
    bound = np.where(gap <= 0, 0.0, bound)
    scale = 1.0 + _row_max(np.abs(p0[i])) + reach[i] + reach[j] + big_r
    slack = DIST_REL_EPS * scale
    straight_i, straight_j = ~deflect[i], ~deflect[j]
    both = np.flatnonzero(straight_i & straight_j)
    travelled = _Prefixes(p0[i[both]], p1[i[both]], p0[j[both]], p1[j[both]])
    apart = travelled.distance(1.0) > big_r[both] + slack[both]
    bound[both[apart]] = np.inf
    # Both straight and their segments do come close: they can touch only once the parts
    # of their paths travelled so far do. That distance only shrinks with time, so a short
    # bisection brackets the moment; its lower end is a safe bound. (The ball bound alone
    # treats a fast mover as a threat to everything within its speed, which serialises
    # every contact near its path.)
    close = np.flatnonzero(~apart & (bound[both] < 1.0))
    if len(close):
        near = both[close]
        travelled = travelled.take(close)
        lo, hi = bound[near], np.ones(len(near))
        limit = big_r[near] + slack[near]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            reached = travelled.distance(mid) <= limit
            hi = np.where(reached, mid, hi)
            lo = np.where(reached, lo, mid)
        bound[near] = lo
    # One straight, one deflected: the deflected one must first reach the other's segment.
    for seg, ball, mask in ((i, j, straight_i & ~straight_j), (j, i, straight_j & ~straight_i)):
        rows = np.flatnonzero(mask)
        if len(rows) == 0:
            continue
        s, b = seg[rows], ball[rows]
        d = _point_segment_distance(p0[b], p0[s], p1[s]) - big_r[rows] - slack[rows]
        rate = reach[b]
        late = np.divide(d, rate, out=np.full(len(rows), np.inf), where=rate > 0)
        bound[rows] = np.where(d > 0, np.maximum(bound[rows], late), bound[rows])
    return bound


def _point_segment_distance(p: Float, a: Float, b: Float) -> Float:
    """(k,) distance from points p to segments a -> b (all (k, 3))."""
    d = b - a
    dd = np.einsum("ij,ij->i", d, d)
    s = np.divide(np.einsum("ij,ij->i", p - a, d), dd, out=np.zeros(len(p)), where=dd > 0)
    closest = a + np.clip(s, 0.0, 1.0)[:, None] * d
    return _length(p - closest)


def _segment_distance(a0: Float, a1: Float, b0: Float, b1: Float) -> Float:
    """(k,) shortest distance between segments a0 -> a1 and b0 -> b1."""
    return _Prefixes(a0, a1, b0, b1).distance(1.0)


class _Prefixes:
    """Pairs of straight paths a0 -> a1 and b0 -> b1, and the distance between the parts of
    them travelled by time s: segments a0 -> a0 + s (a1 - a0) and b0 -> b0 + s (b1 - b0).

    Ericson's closest points of two segments (Real-Time Collision Detection, 5.1.9), with
    its dot products taken once for the whole paths: for a prefix they only scale by s, so
    each further s costs a few operations on (k,) arrays. Closest points are u and w along
    the paths' motions (the fractions of the prefixes, times s).
    """

    def __init__(self, a0: Float, a1: Float, b0: Float, b1: Float) -> None:
        self.r = a0 - b0
        self.da = a1 - a0
        self.db = b1 - b0
        aa = np.einsum("ij,ij->i", self.da, self.da)
        bb = np.einsum("ij,ij->i", self.db, self.db)
        ab = np.einsum("ij,ij->i", self.da, self.db)
        self.ar = np.einsum("ij,ij->i", self.da, self.r)
        self.br = np.einsum("ij,ij->i", self.db, self.r)
        zeros = np.zeros(len(aa))
        self.inv_aa = np.divide(1.0, aa, out=zeros.copy(), where=aa > 0)
        self.inv_bb = np.divide(1.0, bb, out=zeros.copy(), where=bb > 0)
        self.ab = ab
        # a's point nearest b0 (w = 0), and nearest b's whole line (0 if parallel). Where b
        # is a point, w is 0 throughout, so that is a's point nearest b0 too.
        self.u_b0 = np.maximum(-self.ar * self.inv_aa, 0.0)
        denom = aa * bb - ab * ab
        lines = np.divide(ab * self.br - self.ar * bb, denom, out=zeros, where=denom > 0)
        self.u_line = np.where(bb > 0, lines, self.u_b0)

    def take(self, rows: Int) -> _Prefixes:
        part = object.__new__(_Prefixes)
        part.__dict__ = {key: value[rows] for key, value in self.__dict__.items()}
        return part

    def distance(self, s: Float | float) -> Float:
        """(k,) distance between the prefixes at s (scalar or (k,), in [0, 1])."""
        u = np.minimum(np.maximum(self.u_line, 0.0), s)
        w = (self.ab * u + self.br) * self.inv_bb
        # w off b's prefix: clamp it, and take a's point nearest the clamped end.
        u = np.where(w < 0, np.minimum(self.u_b0, s), u)
        far = np.minimum(np.maximum((self.ab * s - self.ar) * self.inv_aa, 0.0), s)
        u = np.where(w > s, far, u)
        w = np.minimum(np.maximum(w, 0.0), s)
        gap = self.r + u[:, None] * self.da - w[:, None] * self.db
        return np.sqrt(np.einsum("ij,ij->i", gap, gap))


def _blocked(
    i: Int, j: Int, toi: Float, first: Float, still: Bool, earliest: Float, rigid: _Rigid
) -> Bool:
    """(n,) bodies whose earliest contact cannot be accepted yet: a neighbour could change
    its path early enough to reach them before that time.

    A body's path changes only at a contact of its own: at its earliest pending one
    (``first``), or at a new one that a changed neighbour c brings, no sooner than c's own
    change and no sooner than the pair's causality bound. The earliest moment each body
    can change is therefore the fixpoint of
    ``change[b] = min(first[b], min over neighbours c of max(earliest[b, c], change[c]))``,
    iterated down from ``first``; a body may take its earliest contact only if nothing
    can change it before then. The globally earliest contact is always free, and a
    neighbour that could change only at or after a body's contact never blocks it (the
    old rule blocked on any moving neighbour close enough, however late it could change).
    Still bodies never change, so they neither block nor are blocked.
    """
    live = ~still[i] & ~still[j] & np.isfinite(earliest)
    i, j, earliest = i[live], j[live], earliest[live]
    change = np.where(still, np.inf, first)
    # Bellman-Ford on a work list: only pairs next to a body whose bound just fell.
    adjacency = _Adjacency(len(first), i, j)
    frontier = np.arange(len(i))
    while len(frontier):
        a, b, e = i[frontier], j[frontier], earliest[frontier]
        lowered = change.copy()
        np.minimum.at(lowered, a, np.maximum(e, change[b]))
        np.minimum.at(lowered, b, np.maximum(e, change[a]))
        lowered = rigid.spread_min(lowered)
        fell = np.flatnonzero(lowered < change)
        change = lowered
        frontier = adjacency.pairs_of(fell) if len(fell) else fell
    return ~still & (change < first)


def _sphere_hits(paths: _Paths, radius: Float, a: Int, b: Int, t: Float) -> Hits:
    rows_a, rows_b = paths.rows[a], paths.rows[b]
    pa, pb = _position(rows_a, t), _position(rows_b, t)
    va, vb = _velocity(rows_a), _velocity(rows_b)
    # Coincident centres (two points meeting exactly) have no direction: use the motion.
    fallback = _unit(vb - va, np.broadcast_to([0.0, 0.0, 1.0], pa.shape))
    normal = _unit(pa - pb, fallback)
    speed = np.maximum(-np.einsum("ij,ij->i", va - vb, normal), 0.0)
    point = pb + normal * radius[b][:, None]
    nan3 = np.full(pa.shape, np.nan)
    k = len(a)
    return Hits(
        a,
        b,
        np.zeros(k, bool),
        np.zeros(k, bool),
        t,
        point,
        normal,
        speed,
        pa,
        pb,
        np.full(k, np.nan),
        nan3,
        nan3,
        nan3,
        nan3,
    )


def _plane_hits(paths: _Paths, a: Int, k: Int, t: Float, planes: Any) -> Hits:
    off0, off1 = planes.off0, planes.off1
    pa = paths.at(a, t)
    nrm = planes.normal[k]
    dist = np.einsum("ij,ij->i", nrm, pa) + _plane_offset_at(off0[k], off1[k], t)
    point = pa - nrm * dist[:, None]
    speed = np.maximum(-(np.einsum("ij,ij->i", paths.velocity(a), nrm) + off1[k] - off0[k]), 0.0)
    nan3 = np.full(pa.shape, np.nan)
    count = len(a)
    return Hits(
        a,
        k,
        np.ones(count, bool),
        np.zeros(count, bool),
        t,
        point,
        nrm.copy(),
        speed,
        pa,
        nan3,
        np.full(count, np.nan),
        nan3,
        nan3,
        nan3,
        nan3,
    )


def _respond(
    paths: _Paths,
    rigid: _Rigid,
    body: Int,
    when: Float,
    push: Float,
    slide: Bool,
    slides: Int,
    t_stop: Float,
) -> Int:
    """Stop (rewind) or deflect (slide) the bodies of accepted contacts, each rigid group
    as one: its spheres take the same displacement. Returns the sorted indices of the
    spheres whose paths changed."""
    if len(body) == 0:
        return np.zeros(0, np.int64)
    # All accepted contacts of one group share its time (each was its earliest).
    group = rigid.group[body]
    uniq, first_row = np.unique(group, return_index=True)
    lead = body[first_row]
    t = when[first_row]
    at_t = paths.at(lead, t)
    remaining = paths.xe[lead] - at_t
    slides[lead] += 1
    deflect = slide[lead] & (slides[lead] <= MAX_SLIDES)
    # Remove the motion into each contact normal, one contact rank at a time (several
    # contacts of one group at the same instant are rare: a corner).
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    rank = np.arange(len(group)) - np.searchsorted(sorted_group, sorted_group)
    slot = np.searchsorted(uniq, sorted_group)
    latest = np.zeros_like(remaining)
    for r in range(int(rank.max()) + 1):
        rows = rank == r
        s = slot[rows]
        nrm = push[order][rows]
        into = np.minimum(np.einsum("ij,ij->i", remaining[s], nrm), 0.0)
        remaining[s] -= nrm * into[:, None]
        latest[s] = nrm
    # Deflected twice at one instant and sent back into the first surface: a wedge. Keep
    # only the motion along the crease of the two surfaces (parallel ones: none at all),
    # as a fluid pusher does, instead of bouncing between them until MAX_SLIDES.
    previous = paths.normal[lead]
    wedged = (paths.normal_t[lead] == t) & (np.einsum("ij,ij->i", remaining, previous) < 0)
    if wedged.any():
        crease = np.cross(previous[wedged], latest[wedged])
        along = _unit(crease, np.zeros_like(crease))
        keep = np.einsum("ij,ij->i", remaining[wedged], along)
        remaining[wedged] = along * keep[:, None]
    displacement = np.where(deflect[:, None], remaining, 0.0)
    members, slot = rigid.members(uniq)
    t_m = t[slot]
    at_m = paths.at(members, t_m)
    paths.normal[members] = latest[slot]
    paths.normal_t[members] = t_m
    slides[members] = slides[lead][slot]
    stopped = ~deflect[slot]
    t_stop[members[stopped]] = t_m[stopped]
    paths.restart(members, t_m, at_m, at_m + displacement[slot])
    return members


class _Rigid:
    """Spheres that move as one body (the solids of one node): a contact of one stops or
    deflects them all, so they wait for the group's earliest contact, together."""

    def __init__(self, n: int, group: NDArray[np.int64] | None) -> None:
        self.trivial = group is None or len(_unique(group)) == len(group)
        if self.trivial:
            self.group = np.arange(n)
            return
        order = np.argsort(group, kind="stable")
        ordered = group[order]
        first = np.ones(n, bool)
        first[1:] = ordered[1:] != ordered[:-1]
        self.group = np.empty(n, np.int64)
        self.group[order] = np.cumsum(first) - 1
        self._order = order
        self._start = np.append(np.flatnonzero(first), n)

    def members(self, groups: Int) -> tuple[Int, Int]:
        """Sorted spheres of the sorted unique groups, and each one's index in groups."""
        if self.trivial:
            return groups, np.arange(len(groups))
        lo = self._start[groups]
        count = self._start[groups + 1] - lo
        slot = np.repeat(np.arange(len(groups)), count)
        rows = np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
        members = self._order[rows]
        order = np.argsort(members, kind="stable")
        return members[order], slot[order]

    def spread_min(self, values: Float) -> Float:
        """Each sphere's value replaced by the smallest of its group."""
        if self.trivial:
            return values
        low = np.full(int(self.group.max()) + 1, np.inf)
        np.minimum.at(low, self.group, values)
        return low[self.group]

    def spread_max(self, values: Float) -> Float:
        """Each sphere's value replaced by the largest of its group."""
        return values if self.trivial else -self.spread_min(-values)

    def spread_any(self, flags: Bool) -> Bool:
        if self.trivial:
            return flags
        hit = np.zeros(int(self.group.max()) + 1, bool)
        hit[self.group[flags]] = True
        return hit[self.group]


def _reach(seeds: Int, i: Int, j: Int, still: Bool) -> Bool:
    """(n,) the seeds and every body a change of theirs could reach through the pairs,
    passing on only through bodies that can still change (a still one never does)."""
    mark = np.zeros(len(still), bool)
    mark[seeds] = True
    while True:
        spread_i = mark[i] & ~still[i]
        spread_j = mark[j] & ~still[j]
        grown = mark.copy()
        grown[j[spread_i]] = True
        grown[i[spread_j]] = True
        if np.array_equal(grown, mark):
            return mark
        mark = grown


def _hold(paths: _Paths, held: Bool, t_hold: float, t_stop: Float, hits: Hits) -> Hits:
    """Iteration cap reached: stop the held bodies (those the unresolved contacts could
    reach) where they were at t_hold, when nothing was unresolved yet, so nothing is left
    overlapping; drop their contacts after it. Every other body keeps its resolved path."""
    idx = np.flatnonzero(held)
    current = (idx, paths.ts[idx].copy(), np.ones(len(idx)), paths.xs[idx], paths.xe[idx])
    body, t0, t1, x0, x1 = (np.concatenate(col) for col in zip(*paths.log, current))
    mine = held[body]
    keep = ~mine | (t0 <= t_hold)
    body, t0, t1, x0, x1, mine = body[keep], t0[keep], t1[keep], x0[keep], x1[keep], mine[keep]
    cut = mine & (t1 > t_hold)
    span = t1 - t0
    frac = np.divide(t_hold - t0, span, out=np.zeros_like(span), where=span > 0)
    x1 = np.where(cut[:, None], x0 + np.clip(frac, 0.0, 1.0)[:, None] * (x1 - x0), x1)
    t1 = np.where(cut, t_hold, t1)
    paths.log = [(body, t0, t1, x0, x1)]
    # Each held body's last row (by start time) now ends where it was at t_hold.
    order = np.lexsort((t0, body))
    last = np.full(len(paths.xs), -1)
    last[body[order]] = order
    pos = x1[last[idx]]
    paths.xs[idx] = pos
    paths.xe[idx] = pos
    paths.ts[idx] = t_hold
    t_stop[idx] = np.minimum(t_stop[idx], t_hold)
    late = (hits.t > t_hold) & (
        held[hits.a] | (~hits.b_plane & held[np.where(hits.b_plane, 0, hits.b)])
    )
    return Hits(*(col[~late] for col in hits))


def _sensor_hits(
    paths: _Paths,
    radius: Float,
    ei: Int,
    ej: Int,
    solid: Bool,
    qi: Int,
    qk: Int,
    planes: Any,
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
        parts.append(_sensor_plane_rows(paths, radius, qi, qk, planes))
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
    return Hits(
        ia[first],
        ib[first],
        np.zeros(k, bool),
        np.ones(k, bool),
        t_enter,
        point,
        nrm,
        speed,
        pa,
        pb,
        t_exit,
        xpoint,
        xn,
        xa,
        xb,
    )


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


def _sensor_plane_rows(paths: _Paths, radius: Float, i: Int, k: Int, planes: Any) -> Hits:
    off0, off1 = planes.off0, planes.off1
    nrm = planes.normal[k]
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
    return Hits(
        i,
        k,
        np.ones(c, bool),
        np.ones(c, bool),
        enter,
        point,
        nrm.copy(),
        speed,
        pa,
        nan3,
        t_exit,
        xpoint,
        nrm.copy(),
        xa,
        nan3,
    )
