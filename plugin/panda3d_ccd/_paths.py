"""The pieces of a pass that every pair set shares: the bodies' piecewise-linear paths,
the rows of contacts they produce (:class:`Hits`), and the slop. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _frames
from ._arrays import largest_abs as _largest_abs
from ._arrays import length as _length
from ._arrays import row_all as _row_all
from ._arrays import row_max as _row_max
from ._tolerance import DIST_REL_EPS, MAX_SUBSTEPS, SLOP_REL
from .sweep._result import FACE

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Kinds of ``b`` in :class:`Hits`: a body sphere, or a row of an obstacle table. Every
#: obstacle table names its kind (``_obstacles``).
SPHERE = 0


class Hits(NamedTuple):
    """Contacts of one pass, one row each. ``a`` is a body sphere; ``b`` is a sphere
    (``kind`` SPHERE) or a row of the obstacle table of its ``kind``, touched at ``feature``
    (FACE, EDGE or VERTEX) number ``part``. Rows of sensor pairs carry the exit, others have
    ``t_exit`` nan."""

    a: Int  # (k,)
    b: Int  # (k,)
    kind: NDArray[np.int8]  # (k,) SPHERE or an obstacle kind
    feature: NDArray[np.int8]  # (k,) FACE, EDGE or VERTEX of b
    part: Int  # (k,) which face, edge or vertex of b
    sensor: Bool  # (k,) either side is a sensor
    t: Float  # (k,) time of impact (entry, for sensor pairs)
    point: Float  # (k, 3) world contact point
    normal: Float  # (k, 3) unit, out of b toward a
    speed: Float  # (k,) approach speed along the normal, units per frame
    pos_a: Float  # (k, 3) centre of a at t
    pos_b: Float  # (k, 3) centre of b at t (nan where b is not a sphere)
    t_exit: Float  # (k,) time a sensor pair stopped overlapping; nan if still at the end
    exit_point: Float  # (k, 3)
    exit_normal: Float  # (k, 3)
    exit_pos_a: Float  # (k, 3)
    exit_pos_b: Float  # (k, 3)

    @classmethod
    def of(
        cls,
        a: Int,
        b: Int,
        kind: int,
        t: Float,
        point: Float,
        normal: Float,
        speed: Float,
        pos_a: Float,
        pos_b: Float | None = None,
        *,
        sensor: bool = False,
        feature: NDArray[np.int8] | None = None,
        part: Int | None = None,
        exit: tuple[Float, Float, Float, Float, Float | None] | None = None,
    ) -> Hits:
        """Rows of one kind; ``pos_b`` None is nan, ``feature`` and ``part`` None are FACE
        and 0; ``exit`` is (t_exit, point, normal, pos_a, pos_b), None for none."""
        k = len(a)
        if k == 0 and _EMPTY is not None:
            return _EMPTY  # many rounds have no contact of some kind: no eleven arrays
        nan3 = np.full((k, 3), np.nan)
        if exit is None:
            exit = (np.full(k, np.nan), nan3, nan3, nan3, nan3)
        t_exit, exit_point, exit_normal, exit_pos_a, exit_pos_b = exit
        return cls(
            a,
            b,
            np.full(k, kind, np.int8),
            np.full(k, FACE, np.int8) if feature is None else feature,
            np.zeros(k, np.int64) if part is None else part,
            np.full(k, sensor),
            t,
            point,
            normal,
            speed,
            pos_a,
            nan3 if pos_b is None else pos_b,
            t_exit,
            exit_point,
            exit_normal,
            exit_pos_a,
            nan3 if exit_pos_b is None else exit_pos_b,
        )


def empty_hits() -> Hits:
    """No contact (one shared value: nothing writes into a Hits' columns)."""
    return _EMPTY


def _no_hits() -> Hits:
    none, z, z3 = np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3))
    return Hits.of(none, none, SPHERE, z, z3, z3, z, z3)


_EMPTY: Hits | None = None
_EMPTY = _no_hits()


def concat_hits(parts: list[Hits]) -> Hits:
    """The rows of all parts, sorted by time (stable). Hits has many columns, so empty
    parts are left out and a lone part already in order is returned as it is."""
    parts = [part for part in parts if len(part.t)]
    if not parts:
        return empty_hits()
    merged = parts[0]
    if len(parts) > 1:
        merged = Hits(*_each_once(np.concatenate, zip(*parts)))
    if len(merged.t) < 2 or np.all(merged.t[1:] >= merged.t[:-1]):
        return merged  # what a stable sort would give
    order = np.argsort(merged.t, kind="stable")
    return Hits(*_each_once(lambda col: col[order], merged))


def renumbered(hits: Hits, rows: Int) -> Hits:
    """``hits`` of a pass over some rows of a frame (its bodies numbered 0 to len(rows)),
    numbered as the frame: body k is row ``rows[k]`` (obstacle rows stay as they are)."""
    b = hits.b.copy()
    spheres = hits.kind == SPHERE
    b[spheres] = rows[b[spheres]]
    return hits._replace(a=rows[hits.a], b=b)


def _each_once(make: Callable[[Any], Float], columns: Iterable[Any]) -> list[Float]:
    """``make`` of each column, made once for columns that are the same arrays: a Hits'
    unset columns are one nan array (nothing writes into a Hits' columns)."""
    made: dict[Any, Float] = {}
    out = []
    for column in columns:
        key = tuple(map(id, column)) if isinstance(column, tuple) else id(column)
        if key not in made:
            made[key] = make(column)
        out.append(made[key])
    return out


def unit(v: Float, fallback: Float) -> Float:
    """Rows of v normalised; rows of zero length take the matching row of fallback."""
    length = _length(v)
    ok = length > 0
    out = np.array(fallback, dtype=np.float64, copy=True)
    out[ok] = v[ok] / length[ok, None]
    return out


#: How many of its last contacts a body holds in a pass (``Paths.held_n``).
HELD = 8


class Paths:
    """Current piecewise-linear paths of the spheres, and the log of finished segments."""

    def __init__(
        self, p0: Float, p1: Float, radius: Float, radius0: Float | None, t_stop: Float
    ) -> None:
        # Radii at the end of the frame, and (growth) at its start: a radius changes
        # linearly in t until the body is stopped (``t_stop``, shared with the solver),
        # and is held from then on.
        self.radius = radius
        self.grow = None if radius0 is None else radius - radius0
        self.t_stop = t_stop
        # One row per body: segment start point, end point and start time. xs, xe and ts
        # are views of it; a test of many pairs gathers each side's rows in one go.
        self.rows = np.zeros((len(p0), 7))
        self.xs = self.rows[:, 0:3]
        self.xe = self.rows[:, 3:6]
        self.ts = self.rows[:, 6]
        self.xs[:] = p0
        self.xe[:] = p1
        # Start times change only through start_at (read-only here): until it is called,
        # every segment is the whole frame's straight path (``begun`` False), on which a
        # position or a velocity needs no division.
        self.ts.flags.writeable = False
        self.begun = False
        # Each body's own motion over the whole pass (a slide meeting a second fixed
        # surface is deflected from what it meant to do, not from its first deflection).
        self.motion = self.xe - self.xs
        self.log: list[tuple[Int, Float, Float, Float, Float]] = []
        # Riders: a body carried by a turning piece turns with it. Its current segment is
        # straight in the piece's frame (row ``ride`` of ``frames``), from ``local`` [:3]
        # at ``ts`` to ``local`` [3:] at the end; ``xs`` and ``xe`` stay its world
        # positions at those two times (the chord of its path). None until the first.
        self.frames: Any = None
        self.ride: Int | None = None
        self.local: Float | None = None
        #: By how much more than ``_solver.rider_allowance`` a rider's pair was grown at
        #: most (its sub-steps ran out: the pass's bounds did not allow for it; 0: none).
        self.over = 0.0

    def turn_with(self, frames: Any, frame: Int, rows: Int, local: Float) -> None:
        """Bodies ``rows`` go round arcs: each rides row ``frame`` (of all bodies) of
        ``frames`` (its own node's motion), straight in it from ``local`` (k, 6) [:3], its
        place in that frame at the start, to [3:], at the end. ``frames``' rows go after
        those of the pieces' frames, if any."""
        n = len(self.xs)
        offset = 0 if self.frames is None else len(self.frames.angle)
        self.frames = _frames.Frames.joined(self.frames, frames)
        if self.ride is None:
            self.ride = np.full(n, -1, np.int64)
            self.local = np.zeros((n, 6))
        self.ride[rows] = frame[rows] + offset
        self.local[rows] = local  # type: ignore[index]

    # What only responses read and write (slides, carrying), made on first use: a pass of
    # a few rewinds (most frames, ``_one_round``) never needs it.

    @cached_property
    def normal(self) -> Float:
        """The last contact normal that deflected each body (slides in a wedge)."""
        return np.zeros_like(self.xs)

    @cached_property
    def normal_t(self) -> Float:
        """When :attr:`normal` was met (-1: never)."""
        return np.full(len(self.xs), -1.0)

    @cached_property
    def normal_carry(self) -> Float:
        return np.zeros_like(self.xs)

    @cached_property
    def held_n(self) -> Float:
        """The last ``HELD`` contacts' normals, carries, times and what they were (corners
        of moving walls, the faces round a vertex)."""
        return np.zeros((len(self.xs), HELD, 3))

    @cached_property
    def held_carry(self) -> Float:
        return np.zeros((len(self.xs), HELD, 3))

    @cached_property
    def held_t(self) -> Float:
        return np.full((len(self.xs), HELD), -1.0)

    @cached_property
    def held_by(self) -> Int:
        """What held each of those contacts: ``FIXED`` (-2) a fixed surface, a row of the
        pass's ``Frames`` the moving piece (``Response.source``), -1 anything else."""
        return np.full((len(self.xs), HELD), -1)

    @cached_property
    def held_count(self) -> Int:
        """How many contacts each body has held this pass (the next slot is this modulo
        ``HELD``)."""
        return np.zeros(len(self.xs), np.int64)

    @cached_property
    def crushed(self) -> Bool:
        return np.zeros(len(self.xs), bool)

    @cached_property
    def carrier(self) -> Float:
        """What last carried each body (kinematic contacts): its carry per unit of time
        left (see ``_solver._respond``)."""
        return np.zeros_like(self.xs)

    @cached_property
    def carrier_frame(self) -> Int:
        """The frame :attr:`carrier` turns with (``ride``), -1 for none."""
        return np.full(len(self.xs), -1, np.int64)

    @cached_property
    def yielded(self) -> Bool:
        """Bodies squeezed against something that yielded to their carrier."""
        return np.zeros(len(self.xs), bool)

    def at(self, idx: Int, t: Float) -> Float:
        """(k, 3) positions of bodies idx at times t (k,) (t >= their segment start)."""
        out = position(self.rows.take(idx, axis=0), t, self.begun)
        if self.ride is not None:
            on = np.flatnonzero(self.ride[idx] >= 0)
            if len(on):
                rot, pos = self.frames.at(self.ride[idx[on]], t[on])
                out[on] = _frames.apply(rot, self.local_at(idx[on], t[on])) + pos
        return out

    def riding(self, idx: Int) -> Bool:
        """(k,) bodies of idx whose current segment turns with a piece (see ``ride``)."""
        if self.ride is None:
            return np.zeros(len(idx), bool)
        return self.ride[idx] >= 0

    def local_at(self, idx: Int, t: Float) -> Float:
        """(k, 3) positions of riders idx at times t in the frames they ride."""
        rows = self.local[idx]  # type: ignore[index]
        ts = self.ts[idx]
        span = 1.0 - ts
        frac = np.divide(t - ts, span, out=np.zeros_like(span), where=span > 0)
        return rows[:, 0:3] + frac[:, None] * (rows[:, 3:6] - rows[:, 0:3])

    def stray_axis(self, idx: Int) -> Float:
        """(k, 3) the world axis the riders of idx turn about (their stray is across it
        only); zero for the others."""
        out = np.zeros((len(idx), 3))
        if self.ride is not None:
            on = np.flatnonzero(self.ride[idx] >= 0)
            out[on] = self.frames.world_axis[self.ride[idx[on]]]
        return out

    def stray(self, idx: Int, t0: Float, t1: Float) -> Float:
        """(k,) how far the paths of bodies idx between t0 and t1 (within their current
        segments) may stray from the straight line between their ends there: 0 but for
        riders, whose local straight path turns with their piece (``Frames.chord_deviation``
        holds for it too: its bound takes only the turn and the lengths of the offsets)."""
        out = np.zeros(len(idx))
        if self.ride is None:
            return out
        on = np.flatnonzero(self.ride[idx] >= 0)
        if len(on):
            rows, a, b = idx[on], t0[on], t1[on]
            out[on] = self.frames.chord_deviation(
                self.ride[rows], a, b, self.local_at(rows, a), self.local_at(rows, b)
            )
        return out

    def velocity(self, idx: Int) -> Float:
        """(k, 3) velocities in units per frame on the current segments."""
        return velocity(self.rows.take(idx, axis=0), self.begun)

    def radius_at(self, idx: Int, t: Float) -> Float:
        """(k,) radii of bodies idx at times t (their end radii where none grows)."""
        if self.grow is None:
            return self.radius[idx]
        grow = self.grow[idx]
        return self.radius[idx] - grow + np.minimum(t, self.t_stop[idx]) * grow

    def growth_rate(self, idx: Int, t: Float) -> Float:
        """(k,) how fast the radii of bodies idx grow at t, per frame (0 once stopped)."""
        if self.grow is None:
            return np.zeros(len(idx))
        return np.where(t < self.t_stop[idx], self.grow[idx], 0.0)

    def growth_left(self, idx: Int, t: Float) -> Float:
        """(k,) how much the radii of bodies idx still grow after t this frame."""
        return self.radius_at(idx, np.ones(len(idx))) - self.radius_at(idx, t)

    def stationary(self) -> Bool:
        """(n,) bodies whose current segment neither moves nor grows."""
        still = _row_all(self.xs == self.xe)
        if self.grow is not None:
            still &= (self.grow == 0) | (self.t_stop < 1.0)
        return still

    def instant(self, idx: Int | None = None) -> Float:
        """(k,) the time the current segments of bodies ``idx`` (default all) take to move
        ``DIST_REL_EPS`` of their coordinates: contacts closer in time than that are at one
        place, to rounding (a slide meets them at once)."""
        ts, xs, xe = self.ts, self.xs, self.xe
        if idx is not None:
            ts, xs, xe = ts[idx], xs[idx], xe[idx]
        span = np.maximum(1.0 - ts, 1e-300)
        speed = _length(xe - xs) / span
        scale = DIST_REL_EPS * np.maximum(1.0, _row_max(np.abs(xe)))
        return np.where(speed > 0.0, scale / np.maximum(speed, 1e-300), 0.0)

    def stationary_of(self, idx: Int) -> Bool:
        still = _row_all(self.xs[idx] == self.xe[idx])
        if self.grow is not None:
            still &= (self.grow[idx] == 0) | (self.t_stop[idx] < 1.0)
        return still

    def restart(
        self, idx: Int, t: Float, at_t: Float, new_end: Float, ride: Int | None = None
    ) -> None:
        """Close the current segments of idx (k,) int at t (k,) and start new ones from at_t
        to new_end (k, 3): straight, or where ``ride`` (k,) names a row of ``frames``,
        straight in that frame (turning with it). The log keeps idx, t and at_t (the chord
        of a rider's segment): the caller writes into none of them afterwards."""
        # (Rows gathered by an index array are copies already.)
        self.log.append((idx, self.ts[idx], t, self.xs[idx], at_t))
        self.xs[idx] = at_t
        self.xe[idx] = new_end
        self.start_at(idx, t)
        if ride is not None and self.ride is None and (ride >= 0).any():
            self.ride = np.full(len(self.xs), -1, np.int64)
            self.local = np.zeros((len(self.xs), 6))
        if self.ride is None:
            return
        self.ride[idx] = -1 if ride is None else ride
        on = np.flatnonzero(self.ride[idx] >= 0)
        if len(on):
            f, rows = self.ride[idx[on]], idx[on]
            rot, pos = self.frames.at(f, t[on])
            self.local[rows, 0:3] = _frames.unapply(rot, at_t[on] - pos)  # type: ignore[index]
            end = _frames.unapply(self.frames.rot1[f], new_end[on] - self.frames.pos1[f])
            self.local[rows, 3:6] = end  # type: ignore[index]

    def start_at(self, idx: Int, t: Float | float) -> None:
        """Set the start times of the current segments of idx."""
        self.rows[idx, 6] = t
        self.begun = True

    def segments(self) -> Segments:
        """All segments (finished and current), sorted by body then start time."""
        n = len(self.xs)
        parts = [*self.log, (np.arange(n), self.ts, np.ones(n), self.xs, self.xe)]
        body, t0, t1, x0, x1 = (np.concatenate(col) for col in zip(*parts))
        order = np.lexsort((t0, body))
        body = body[order]
        start = np.searchsorted(body, np.arange(n))
        count = np.diff(np.append(start, len(body)))
        return Segments(body, t0[order], t1[order], x0[order], x1[order], start, count)


class Segments(NamedTuple):
    """Every segment of a pass's paths, finished and current, sorted by body then start
    time: what the tests made once at the end of a pass (sensors) go along. A sensor has
    one, from 0 to 1, unless it is carried by a body (one rigid group): then it has its
    carrier's."""

    body: Int  # (s,)
    t0: Float  # (s,) start and end times
    t1: Float
    x0: Float  # (s, 3) positions at t0 and t1 (a rider's: the chord)
    x1: Float
    start: Int  # (n,) each body's first segment
    count: Int  # (n,) and how many it has

    def of(self, idx: Int) -> tuple[Int, Int]:
        """For bodies ``idx`` (k,), one row per segment of each: (index into idx, segment)."""
        reps = self.count[idx]
        item = np.repeat(np.arange(len(idx)), reps)
        offset = np.arange(len(item)) - np.repeat(np.cumsum(reps) - reps, reps)
        return item, self.start[idx][item] + offset

    def at(self, seg: Int, t: Float) -> Float:
        """(k, 3) positions on segments ``seg`` at times ``t`` within them."""
        t0, span = self.t0[seg], self.t1[seg] - self.t0[seg]
        frac = np.divide(t - t0, span, out=np.zeros_like(span), where=span > 0)
        return self.x0[seg] + frac[:, None] * (self.x1[seg] - self.x0[seg])

    def velocity(self, seg: Int) -> Float:
        """(k, 3) velocities on segments ``seg``, units per frame."""
        span = self.t1[seg] - self.t0[seg]
        inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
        return (self.x1[seg] - self.x0[seg]) * inv[:, None]


def pick(item: Int, key: Float) -> Int:
    """Row index of the smallest key per item (the first entry, or with -key the last exit,
    of a pair over its segments)."""
    order = np.lexsort((key, item))
    first = np.ones(len(order), bool)
    first[1:] = item[order][1:] != item[order][:-1]
    return order[first]


def sub_steps(start: Float, stray: Float, allowed: Float) -> tuple[Int, Float, Float]:
    """Pairs' rests of the pass, from ``start`` (k,) to 1, cut into sub-steps where a path
    strays ``stray`` (k,) from its chord over it and only ``allowed`` (k,) is (a turn's
    stray is quadratic in the step): rows of (pair, step start, step end). Steps lie on a
    fixed grid (j / steps), so a pair's steps are the same whatever its segment's start;
    at most MAX_SUBSTEPS."""
    steps = np.ceil(
        np.sqrt(stray / np.maximum(allowed, 1e-300)) / np.maximum(1.0 - start, 1e-12)
    )
    # (As np.clip(np.nan_to_num(...)), without their Python wrappers: nan -> 1, inf ->
    # MAX_SUBSTEPS.)
    steps = np.where(np.isnan(steps), 1.0, np.minimum(np.maximum(steps, 1.0), MAX_SUBSTEPS))
    steps = steps.astype(np.int64)
    # The first step of a pair starts at its segment's start.
    first = np.floor(start * steps).astype(np.int64)
    # (On a grid point, start * steps can round below it: that step would be empty.)
    first += (first + 1) / steps <= start
    count = np.maximum(steps - first, 1)
    pair = np.repeat(np.arange(len(start)), count)
    j = first[pair] + (np.arange(len(pair)) - np.repeat(np.cumsum(count) - count, count))
    ta = np.maximum(j / steps[pair], start[pair])
    tb = np.minimum((j + 1) / steps[pair], 1.0)
    return pair, ta, tb


def in_step(s: Float, ta: Float, tb: Float, shallow: Bool | None = None) -> Float:
    """Times in the pass of times ``s`` within sub-steps ta -> tb (inf: none; ``shallow``:
    none either): inf where there is none, never nan (inf times a step of no length, the
    pass's end, would be, and a nan would win the pair's :func:`earliest_of`)."""
    hit = np.isfinite(s) if shallow is None else np.isfinite(s) & ~shallow
    return np.where(hit, ta + np.where(hit, s, 0.0) * (tb - ta), np.inf)


def earliest_of(pair: Int, t: Float, k: int) -> Float:
    """(k,) each pair's earliest time among its sub-steps' rows ``t`` (inf for none)."""
    out = np.full(k, np.inf)
    np.minimum.at(out, pair, t)
    return out


def position(rows: Float, t: Float, begun: bool = True) -> Float:
    """(k, 3) positions at times t (k,) on segments given as rows of _Paths.rows; begun
    False: every segment starts at 0 (its fraction is t itself, to the bit)."""
    if not begun:
        return rows[:, 0:3] + t[:, None] * (rows[:, 3:6] - rows[:, 0:3])
    ts = rows[:, 6]
    span = 1.0 - ts
    frac = np.divide(t - ts, span, out=np.zeros_like(span), where=span > 0)
    return rows[:, 0:3] + frac[:, None] * (rows[:, 3:6] - rows[:, 0:3])


def velocity(rows: Float, begun: bool = True) -> Float:
    """(k, 3) velocities in units per frame on segments given as rows of _Paths.rows; begun
    False: every segment starts at 0 (its span is 1)."""
    if not begun:
        return rows[:, 3:6] - rows[:, 0:3]
    span = 1.0 - rows[:, 6]
    inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
    return (rows[:, 3:6] - rows[:, 0:3]) * inv[:, None]


def slop(*points: Float) -> Float:
    """(k,) penetration too shallow to count as a contact, for pairs near these points.

    Panda3D stores positions in float32: a ball moved along a tilted floor by setPos
    arrives up to ~1e-7 of its coordinates inside it. Counting that as an approach would
    stop the ball (it would stick); ignoring contacts that could never sink deeper than
    this keeps every overlap within it.
    """
    return slop_of(_largest_abs(*points))


def slop_of(scale: Float) -> Float:
    """:func:`slop` of points whose largest coordinate magnitudes are ``scale`` (k,)."""
    return SLOP_REL * np.maximum(1.0, scale)
