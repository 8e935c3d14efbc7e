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
motion; a growing one is pushed off by at most its growth each time), so one broad phase
with that margin finds every pair a slide can reach. Sensors
never change anyone's motion; they are tested once at the end against the final paths.

Pair sets, not shapes
---------------------
The bodies are spheres. What they run into is either another body (the sphere pairs,
where both sides can change) or a row of an obstacle table: planes, and every other kind
the geometry layer sweeps against (``_obstacles``). Obstacles never change, so their pairs
only ever wait for their own body. The loop below treats every obstacle table alike
(``_ObstaclePairs``) and never names a shape: a new kind is a new table class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _frames, _one_round
from ._arrays import cross as _cross
from ._arrays import isin_sorted as _isin_sorted
from ._arrays import length as _length
from ._arrays import nearest_clear as _nearest_clear
from ._arrays import row_all as _row_all
from ._arrays import row_any as _row_any
from ._arrays import row_max as _row_max
from ._arrays import unique as _unique
from ._frames import Frames

# The kinds of Hits.b, for the solver's callers.
from ._obstacles import PLANE as PLANE
from ._obstacles import Planes, Response
from ._paths import (
    HELD,
    SPHERE,
    Hits,
    Paths,
    Segments,
    concat_hits,
    earliest_of,
    empty_hits,
    in_step,
    pick,
    position,
    renumbered,
    slop,
    sub_steps,
    unit,
    velocity,
)
from ._tolerance import DIST_REL_EPS, MAX_ROUNDS, MAX_SLIDES, TURN_TOLERANCE
from .broadphase import _sphere_pairs
from .sweep.sphere_sphere import _relative_motion, _sphere_sphere_toi, sphere_sphere_overlap
from .sweep.sphere_sphere import _terms as _sphere_sphere_terms
from .sweep.sphere_sphere import _toi as _sphere_sphere_toi_of

REWIND, SLIDE, SENSOR, KINEMATIC = 0, 1, 2, 3

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


class PassResult(NamedTuple):
    end: Float  # (n, 3) final centres
    t_stop: Float  # (n,) time a rewound body stopped; 1.0 for those that ran their path
    moved: Bool  # (n,) final centre differs from p1 (must be written back)
    hits: Hits  # sorted by t
    candidates: int  # broad-phase pairs (sphere-sphere plus sphere-plane)
    rounds: int
    capped: bool  # MAX_ROUNDS reached: everything held at the earliest unresolved contact
    squeezed: int = 0  # bodies squeezed against what carried them, which then won
    yielded: Int = np.zeros(0, np.int64)  # (squeezed,) which: their rows, sorted
    one_round: bool = False  # _one_round took the pass (whole, or all but some clusters)


class Turns(NamedTuple):
    """Spheres whose own paths turn: a sphere off its node's origin on a node the game
    turns goes round an arc, not along its chord. Row ``frame[i]`` of ``frames`` is the
    motion of sphere i's node over the pass (-1: none), as it is interpolated when a stop
    turns the node back (a slerp of its turn, its origin linearly); a sphere not fixed in
    it (its scale changes, it jumped) keeps its chord."""

    frames: Frames
    frame: Int  # (n,)


def _grown_segment_toi(
    paths: Paths,
    i: Int,
    j: Int,
    start: Float,
    a0: Float,
    a1: Float,
    b0: Float,
    b1: Float,
) -> Float:
    """:func:`_segment_toi` where radii change within the frame."""
    s, shallow = _grown_pair_toi(paths, i, j, start, np.ones(len(i)), a0, a1, b0, b1)
    return np.where(shallow, np.inf, start + s * (1.0 - start))


def _grown_pair_toi(
    paths: Paths,
    i: Int,
    j: Int,
    t0: Float,
    t1: Float,
    a0: Float,
    a1: Float,
    b0: Float,
    b1: Float,
    pad: Float | float = 0.0,
) -> tuple[Float, Bool]:
    """(k,) times of impact, in the step t0 -> t1, of pairs (i, j) moving straight from a0,
    b0 to a1, b1 with their radii changing from those at t0 to those at t1 (``pad`` more,
    riders' strays), and (k,) which are too shallow to count. The gap |p| - R is convex on
    the step, so a sweep with the radii shrunk by the slop finds an overlap deeper than the
    slop exactly where there is one; that is the slop rule here."""
    r0 = paths.radius_at(i, t0) + paths.radius_at(j, t0) + pad
    r1 = paths.radius_at(i, t1) + paths.radius_at(j, t1) + pad
    zero = np.zeros(len(i))
    s = _sphere_sphere_toi(a0, a1, r0, b0, b1, zero, r1 - r0)
    sl = np.minimum(slop(a0, b0), 0.5 * np.maximum(r0, r1))
    d0, d1 = np.maximum(r0 - sl, 0.0), np.maximum(r1 - sl, 0.0)
    deep = np.isfinite(_sphere_sphere_toi(a0, a1, d0, b0, b1, zero, d1 - d0))
    return s, ~deep & ((r0 > 0) | (r1 > 0))


def _first_per_pair(hits: Hits) -> Hits:
    """Keep each pair's earliest contact: a slide can meet the same surface again later in
    the pass, and a pair has one contact (one event) per pass."""
    order = np.lexsort((hits.t, hits.kind, hits.b, hits.a))
    key = np.stack([hits.a[order], hits.b[order], hits.kind[order]], axis=1)
    first = np.ones(len(order), bool)
    first[1:] = np.any(key[1:] != key[:-1], axis=1)
    keep = np.sort(order[first])
    return Hits(*(col[keep] for col in hits))


def _segment_toi(paths: Paths, radius: Float, i: Int, j: Int) -> Float:
    """Times of impact of sphere pairs on their current segments, from the later start on.
    Pairs whose deepest approach on the segments stays within the slop do not count (but
    for two points, which meet exactly or not at all)."""
    if len(i) == 0:  # a round with nothing to retest: skip some forty numpy calls
        return np.zeros(0)
    rows_a, rows_b = paths.rows.take(i, axis=0), paths.rows.take(j, axis=0)
    start = np.maximum(rows_a[:, 6], rows_b[:, 6])
    if paths.ride is not None:
        return _ridden_segment_toi(paths, radius, i, j, start)
    a0, b0 = position(rows_a, start, paths.begun), position(rows_b, start, paths.begun)
    a1, b1 = rows_a[:, 3:6], rows_b[:, 3:6]
    if paths.grow is not None:
        return _grown_segment_toi(paths, i, j, start, a0, a1, b0, b1)
    s, shallow = straight_pair_toi(a0, a1, radius[i], b0, b1, radius[j])
    return np.where(shallow, np.inf, start + s * (1.0 - start))


def _ridden_segment_toi(paths: Paths, radius: Float, i: Int, j: Int, start: Float) -> Float:
    """:func:`_segment_toi` where riders are about (``Paths.ride``): two riders of one frame
    move straight in it, and are tested there, exactly; a rider with anything else is
    tested on the chords of sub-steps of its path, its radius grown by how far the path
    strays from them (cut so that this stays within TURN_TOLERANCE of the radius)."""
    ride_a, ride_b = paths.ride[i], paths.ride[j]  # type: ignore[index]
    same = (ride_a >= 0) & (ride_a == ride_b)
    end = np.ones(len(i))
    ra, rb = radius[i], radius[j]
    whole = np.where(same, 0.0, paths.stray(i, start, end) + paths.stray(j, start, end))
    allowed = rider_allowance(paths.xs, radius, i, j)
    pair, ta, tb = sub_steps(start, whole, allowed)
    ip, jp = i[pair], j[pair]
    a0, b0, a1, b1 = paths.at(ip, ta), paths.at(jp, ta), paths.at(ip, tb), paths.at(jp, tb)
    _into_frame(paths, same[pair], ip, jp, ta, a0, b0, a1, b1, tb)
    dev = np.where(same[pair], 0.0, paths.stray(ip, ta, tb) + paths.stray(jp, ta, tb))
    # (More than the bounds allowed for, where the sub-steps ran out: see Paths.over.)
    paths.over = max(paths.over, float((dev - allowed[pair]).max(initial=0.0)))
    if paths.grow is None:
        s, shallow = straight_pair_toi(a0, a1, ra[pair] + dev, b0, b1, rb[pair])
    else:  # (radii that change within the frame: each step's from its ends')
        s, shallow = _grown_pair_toi(paths, ip, jp, ta, tb, a0, a1, b0, b1, dev)
    return earliest_of(pair, in_step(s, ta, tb, shallow), len(i))


def rider_allowance(x: Float, radius: Float, i: Int, j: Int) -> Float:
    """(k,) how much a pair with a rider (i, j, at ``x``) is grown by in its sub-steps at
    most, where they do not run out: TURN_TOLERANCE of the larger radius, or the slop."""
    return np.maximum(TURN_TOLERANCE * np.maximum(radius[i], radius[j]), slop(x[i], x[j]))


def _into_frame(
    paths: Paths,
    same: Bool,
    i: Int,
    j: Int,
    t0: Float,
    a0: Float,
    b0: Float,
    a1: Float,
    b1: Float,
    t1: Float | None = None,
) -> None:
    """Rows ``same`` (two riders of one frame) of the pairs' ends at t0 and t1 (the end of
    the pass if None) replaced by their positions in that frame, where both move straight."""
    rows = np.flatnonzero(same)
    if len(rows) == 0:
        return
    ia, jb = i[rows], j[rows]
    a0[rows], b0[rows] = paths.local_at(ia, t0[rows]), paths.local_at(jb, t0[rows])
    if t1 is None:
        a1[rows], b1[rows] = paths.local[ia, 3:6], paths.local[jb, 3:6]  # type: ignore[index]
    else:
        a1[rows], b1[rows] = paths.local_at(ia, t1[rows]), paths.local_at(jb, t1[rows])


def straight_pair_toi(
    a0: Float, a1: Float, ra: Float, b0: Float, b1: Float, rb: Float, finite_only: bool = False
) -> tuple[Float, Bool]:
    """(k,) times of impact of sphere pairs moving straight from a0, b0 to a1, b1 over the
    frame (the kernel's), and (k,) whether each is too shallow to count: the pair's deepest
    approach stays within the slop (but for two points, which meet exactly or not at all).
    ``finite_only``: the caller reads ``shallow`` only where the time is finite; where no
    time is, none is looked at (all False)."""
    p, v = _relative_motion(a0, a1, b0, b1)
    # The kernel's terms hold v . v and p . v already (the same numbers).
    terms = _sphere_sphere_terms(a0, a1, ra, b0, b1, rb, relative=(p, v))
    s = _sphere_sphere_toi_of(terms)
    if finite_only and not np.isfinite(s).any():  # (most pairs found never touch)
        return s, np.zeros(len(s), bool)
    vv = terms.a
    u = np.divide(-terms.half_b, vv, out=np.zeros(len(p)), where=vv > 0)
    closest = _length(p + np.clip(u, 0.0, 1.0)[:, None] * v)
    reach = ra + rb
    # Spheres smaller than the slop count once they sink half their size; two points,
    # which cannot sink at all, when the kernel finds them meeting exactly.
    return s, (reach - closest <= np.minimum(slop(a0, b0), 0.5 * reach)) & (reach > 0)


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
    obstacles: Sequence[Any] = (),
    radius0: Float | None = None,
    static: Bool | None = None,
    kinematic: Bool | None = None,
    one_round_first: bool = True,
    all_finite: bool = False,
    turns: Turns | None = None,
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
    obstacles : sequence of obstacle tables, optional
        Further tables of things the bodies run into but never move, one per kind (see
        ``_obstacles``); the planes above are one more, first.
    radius0 : (n,) float64, optional
        Radii at the start of the frame, where they change (a node's scale); ``radius``
        is then the end. They change linearly in t, and stop changing when a body stops.
    static : (n,) bool, optional
        Spheres that never move (p0 == p1): never paired with each other, nor with a
        plane that does not move either, not even as sensors.
    kinematic : (n,) bool, optional
        Spheres the game moves and the pass never does (response KINEMATIC): bodies that
        touch one are stopped or deflected on their motion relative to it, and carried
        along by it; two kinematic ones, or one and an obstacle, only report.
    one_round_first : bool
        Try :func:`~panda3d_ccd._one_round.one_round` first (the same answer, for frames of
        isolated contacts, at a tenth of the cost; in a busy frame, the general solver
        then answers only the clusters of bodies it leaves); False: the general solver
        only.
    all_finite : bool
        Every row of p0 and p1 is finite (the caller has checked): not looked at again.
    turns : Turns, optional
        Spheres whose paths are arcs (their nodes turn about a point off their centres):
        tested on their arcs, in sub-steps as a body turning with a level piece is.
    """
    # float64 throughout (the broad phase's rounding pad assumes it).
    p0, p1, radius = (np.asarray(x, dtype=np.float64) for x in (p0, p1, radius))
    if radius0 is not None:
        radius0 = np.asarray(radius0, dtype=np.float64)
        if np.array_equal(radius0, radius):
            radius0 = None  # nothing grows: the exact same pass as without
    if turns is not None and not (turns.frame >= 0).any():
        turns = None
    tables = list(obstacles)
    if plane_normal is not None and len(plane_normal):
        planes = Planes(plane_normal, plane_offset0, plane_offset1, plane_mask, plane_group)  # type: ignore
        tables.insert(0, planes)
    # Where one round declines after its broad phase, its pairs are this frame's (the same
    # boxes: no slide, growth, carrying or statics), found once.
    known: _one_round.Declined | None = None
    if (
        one_round_first and radius0 is None and static is None and kinematic is None
        and turns is None
    ):  # fmt: skip
        if not all_finite:
            finite = _row_all(np.isfinite(p0)) & _row_all(np.isfinite(p1))
            if not finite.all():
                # Rows not finite (nodes out of the scene, a NaN transform) take no part
                # in the pass: the frame without them is one that one round may take.
                rows = np.flatnonzero(finite)
                part = solve(
                    p0[rows], p1[rows], radius[rows], response[rows], from_mask[rows],
                    into_mask[rows], obstacles=tables,
                    group=None if group is None else group[rows], all_finite=True,
                )  # fmt: skip
                return _widen(part, rows, len(p0))
            all_finite = True  # (looked at once: not again by one round or _general)
        quick = _one_round.one_round(
            p0, p1, radius, response, from_mask, into_mask, tables, group, all_finite
        )
        if isinstance(quick, PassResult):
            return quick
        if isinstance(quick, _one_round.Split):
            # One round answered all but a few clusters of bodies, the general solver the
            # rest: nothing in a cluster is near anything outside it.
            # (One round took the frame: nothing grows, none is static or kinematic, every
            # row is finite.)
            rows = quick.rows
            rest = _general(
                p0[rows], p1[rows], radius[rows], response[rows], from_mask[rows],
                into_mask[rows], tables, group=None if group is None else group[rows],
                all_finite=True, known=quick.known,
            )  # fmt: skip
            return quick.merge(rest)
        known = quick
    return _general(
        p0, p1, radius, response, from_mask, into_mask, tables, group=group, radius0=radius0,
        static=static, kinematic=kinematic, all_finite=all_finite, known=known, turns=turns,
    )  # fmt: skip


def _widen(part: PassResult, rows: Int, n: int) -> PassResult:
    """The answer for a frame of ``n`` rows whose rows ``rows`` alone are finite, from
    ``part``, the answer for those rows: the others end not finite, with no contact (as
    :func:`_general` leaves them)."""
    end = np.full((n, 3), np.nan)
    end[rows] = part.end
    t_stop = np.ones(n)
    t_stop[rows] = part.t_stop
    moved = np.zeros(n, bool)
    moved[rows] = part.moved
    return part._replace(
        end=end, t_stop=t_stop, moved=moved, hits=renumbered(part.hits, rows),
        yielded=rows[part.yielded],
    )  # fmt: skip


def _general(
    p0: Float,
    p1: Float,
    radius: Float,
    response: NDArray[np.int8],
    from_mask: NDArray[np.int64],
    into_mask: NDArray[np.int64],
    tables: list[Any],
    *,
    group: NDArray[np.int64] | None = None,
    radius0: Float | None = None,
    static: Bool | None = None,
    kinematic: Bool | None = None,
    all_finite: bool = False,
    known: _one_round.Declined | None = None,
    hopeful: bool = True,
    rider_pad: float = 0.0,
    turns: Turns | None = None,
) -> PassResult:
    """:func:`solve`'s general solver, on the obstacle ``tables`` (planes included); with
    ``known``, the broad phase's pairs one round found (a frame it declined).

    Where something moves by itself, a body it carries may go further than its own motion:
    by what carries it, at each of its contacts, at most ``carry_margin``. The bounds that
    let a round take many contacts at once must hold that far, and in a crowd such a reach
    ties every body to its neighbours: a round takes one contact. So the pass first hopes
    for what nearly every frame holds, a carry of one push (``hopeful``): a carried body
    goes at most its own motion and what carries it further. If a carried body's path
    ever leaves that reach (squeezed, pushed by several at once), the bounds may not
    hold: the pass is made again with the full margin."""
    # (The same call, with the full margin; and with riders' bounds padded more.)
    again = (p0, p1, radius, response, from_mask, into_mask, tables)
    again_kw = dict(
        group=group, radius0=radius0, static=static, kinematic=kinematic,
        all_finite=all_finite, known=known, hopeful=False, rider_pad=rider_pad, turns=turns,
    )  # fmt: skip

    def padded() -> PassResult:
        # A rider's pair was grown past what the bounds allowed for (its sub-steps ran
        # out): a contact may have been taken before one that came sooner. Again, with the
        # full margin and the bounds of pairs that may ride allowing twice the most any
        # has been grown past them, until that covers it (each time twice as much at
        # least, and no pair grows past its whole stray). Asked after each round's tests:
        # a pass that cannot be kept is not run on to the end.
        pad = {**again_kw, "rider_pad": 2.0 * paths.over}
        return _general(*again, **pad)  # type: ignore[arg-type]
    n = len(p0)
    if all_finite:
        finite = np.ones(n, bool)
    else:
        finite = _row_all(np.isfinite(p0)) & _row_all(np.isfinite(p1))
    p0 = np.where(finite[:, None], p0, np.nan)
    p1 = np.where(finite[:, None], p1, np.nan)
    solid = response != SENSOR
    slide = (response == SLIDE) & finite
    kin = (response == KINEMATIC) if kinematic is None else kinematic
    rigid = _Rigid(n, group)
    # A rigid group moves as one: a member whose own path is still is carried when a slide
    # group is deflected (a group turning about it), so stillness is the group's, that of
    # its solids: a sensor it carries (an offset one turning with a player turning in
    # place) never makes it move.
    own = _row_any(p0 != p1) if radius0 is None else _row_any(p0 != p1) | (radius0 != radius)
    # Spheres going round arcs (off-centre on a node the game turns): how far each strays
    # from its chord, and how fast it may go along the arc (bounds and boxes take both).
    arcs = None if turns is None else _Arcs.of(turns, p0, p1, finite & solid)
    if arcs is not None:
        own = own | arcs.on
    moving = rigid.spread_from(own, solid)
    # Every member of a slide's group bends with it (a sensor or a rewound body it carries).
    bends = rigid.spread_any(slide)
    size, own, reach = _reaches(
        p0, p1, radius, radius0, bends, rigid, None if arcs is None else arcs.speed
    )
    # (Boxes hold the arcs, bowed off their chords.)
    boxed = size if arcs is None else size + arcs.stray
    carry = carry_margin(own, kin & finite, tables)
    hopeful = hopeful and carry > 0
    if hopeful:
        carry /= MAX_SLIDES + 1
    # Still pairs matter to sensors (a ball resting inside a trigger zone stays "in"), so
    # the broad phase keeps them; solids drop them below: they cannot start a contact.
    # Straight paths are cut into pieces, so a fast mover's box does not take in the whole
    # crowd around its diagonal. Not slides: their bent paths may go anywhere in their ball.
    everyone = np.ones(n, bool) if static is None else ~static
    # A table that never moves and can be asked again (a static level) is asked only
    # about each body's straight path now, and again about every new segment a contact
    # gives it (_ObstaclePairs.extend): a fast slide's whole ball of reach would take in
    # thousands of triangles it never goes near.
    straight = np.ones(n, bool)
    # A moving plane is asked about the ends of a body's straight path against its own at
    # the same moments: a body off that path at some moment by up to its own motion (a
    # rewind stopped early and carried, a slide bent back) must be within the margin.
    found = [
        table.candidates(p0, p1, boxed, from_mask, everyone, straight)
        if _extendable(table)
        else table.candidates(
            p0, p1, boxed + reach + carry + (_astray(own, table) if carry > 0 else 0.0),
            from_mask, everyone, ~bends,
        )
        for table in tables
    ] if known is None else known.table_pairs  # fmt: skip
    # Carried: bodies that something moving by itself may carry (near a moving obstacle
    # row or a kinematic sphere), and what they may push in turn. Only those reach further
    # than their own motion, by ``carry``; found with the boxes grown that much, and again
    # while the set grows (a row of bodies pushed along).
    by_table = np.zeros(n, bool)
    if carry > 0:
        for table, (qi, qk) in zip(tables, found):
            by_table[qi[table.moving[qk]]] = True
    carried = by_table
    grown = carried | (kin & moving)
    while True:
        margin = np.where(grown, carry, 0.0)
        if known is None:
            ci, cj = _sphere_pairs(
                p0, p1, boxed + reach + margin, from_mask, into_mask, everyone, ~bends
            )
        else:  # (nothing is carried: the loop ends after this turn)
            ci, cj = known.pairs
        if group is not None:
            apart = group[ci] != group[cj]
            ci, cj = ci[apart], cj[apart]
        pair_sensor = ~(solid[ci] & solid[cj]) | (kin[ci] & kin[cj])
        if carry == 0:
            break
        # A carried body pushes what it is squeezed against (it yields to its carrier
        # and carries on whatever is in the way), so carrying passes along rows.
        solid_pairs = ~pair_sensor
        near = by_table.copy()
        near[ci[solid_pairs & kin[cj] & moving[cj]]] = True
        near[cj[solid_pairs & kin[ci] & moving[ci]]] = True
        seeds = np.flatnonzero(near & ~kin)
        carried = _carried_set(seeds, ci[solid_pairs], cj[solid_pairs], kin, rigid)
        if np.array_equal(carried | (kin & moving), grown):
            break
        grown = carried | (kin & moving)
    if carried.any():
        reach = np.where(carried, reach + carry, reach)
        # A body at rest may still be carried into anything near it.
        moving = moving | carried
    pair_solid = ~pair_sensor & (moving[ci] | moving[cj])

    t_stop = np.ones(n)
    paths = Paths(
        np.where(finite[:, None], p0, 0.0),
        np.where(finite[:, None], p1, 0.0),
        radius,
        radius0,
        t_stop,
    )
    # (The pass's frames of kinematic pieces: one for every table that has any.)
    paths.frames = next((o.frames for o in tables if getattr(o, "frames", None) is not None), None)
    if arcs is not None:
        paths.turn_with(turns.frames, turns.frame, np.flatnonzero(arcs.on), arcs.local)  # type: ignore[union-attr]
    # Carried bodies leave their straight paths, as slides do; so do arcs.
    bent = bends | carried if arcs is None else bends | carried | arcs.on
    # (A straight body that leaves its path, carried or round an arc, goes at most its own
    # motion's length: ``own`` is an arc's speed bound.)
    astray = carried if arcs is None else carried | arcs.on
    bound_reach = np.where(bent, reach + np.where(astray & ~bends, own, 0.0), own)
    bound_reach = np.where(finite, bound_reach, 0.0)
    # Carried bodies may ride a turning piece (and what they push, ride with them).
    # (Only moving rows turn, and they carry: none where nothing does, no call made.)
    turning = carry > 0 and any(getattr(t, "turning", np.zeros(0, bool)).any() for t in tables)
    ridable = carried if turning else None
    if arcs is not None:
        ridable = arcs.on if ridable is None else ridable | arcs.on
    pairs = _PairSet(
        paths, size, bent, bound_reach, ci[pair_solid], cj[pair_solid], ridable, rider_pad
    )
    # (A table that met no body and is not asked again, a kinematic piece far from all
    # of them, takes no part: no pairs to test, in any round.)
    struck = [
        _ObstaclePairs(table, paths, n, qi, qk, solid & ~kin, moving, group)
        for table, (qi, qk) in zip(tables, found)
        if len(qi) or _extendable(table)
    ]
    for o in struck:
        if _extendable(o.table):
            o.extendable(size, from_mask, everyone & finite)
    # Still: never changed by a contact (kinematic, or at rest with nothing near that moves
    # by itself and could carry it).
    still = (~rigid.spread_from(~paths.stationary(), solid) & ~carried) | kin
    slides = np.zeros(n, np.int64)
    pend_s = np.flatnonzero(np.isfinite(pairs.toi))
    first = np.full(n, np.inf)
    hits: list[Hits] = []
    rounds = 0
    capped = False
    t_hold = np.inf

    bending = bool(bends.any())
    while len(pend_s) or any(len(o.pend) for o in struck):
        t_s = pairs.toi[pend_s]
        t_o = [o.toi[o.pend] for o in struck]
        t_min = min([t_s.min(initial=np.inf), *(t.min(initial=np.inf) for t in t_o)])
        if rounds == MAX_ROUNDS:
            capped, t_hold = True, t_min
            unresolved = np.concatenate(
                [pairs.i[pend_s], pairs.j[pend_s], *(o.i[o.pend] for o in struck)]
            )
            # Through the pairs that can touch this frame only (bound <= 1), as when the
            # bounds are computed up front: a pair that cannot touch carries no change.
            near = pairs.earliest <= 1.0
            # The game moves kinematic rows: never held.
            held = rigid.spread_any(_reach(unresolved, pairs.i[near], pairs.j[near], still)) & ~kin
            break
        if paths.over > rider_pad:
            return padded()
        rounds += 1
        a_s, b_s = pairs.i[pend_s], pairs.j[pend_s]
        a_o = [o.i[o.pend] for o in struck]
        active = _unique(np.concatenate([a_s, b_s, *a_o]))
        np.minimum.at(first, a_s, t_s)
        np.minimum.at(first, b_s, t_s)
        for a, t in zip(a_o, t_o):
            np.minimum.at(first, a, t)
        soonest = rigid.spread_min(first.copy())  # (kept: ``first`` is reset below)
        if not rigid.trivial:
            active = rigid.members(_unique(rigid.group[active]))[0]
        # A stationary body is never changed by a contact, so it need not be "first".
        first_s = (still[a_s] | (t_s == soonest[a_s])) & (still[b_s] | (t_s == soonest[b_s]))
        # An obstacle contact within rounding of a slide's earliest is at that instant too
        # (several faces met at a vertex): all of them are taken, and answered, at once.
        # (A rewind stops at the first: what it is a rounding short of, it never meets.)
        instant = soonest + np.where(bends, paths.instant(), 0.0) if bending else soonest
        first_o = [t <= instant[a] for a, t in zip(a_o, t_o)]
        free = pairs.free(
            soonest, still, rigid, a_s[first_s], b_s[first_s], *(a[f] for a, f in zip(a_o, first_o))
        )
        acc_s = first_s & ((t_s == t_min) | (free[a_s] & free[b_s]))
        first[active] = np.inf

        a_s, b_s, t_s = a_s[acc_s], b_s[acc_s], t_s[acc_s]
        hs = _sphere_hits(paths, radius, a_s, b_s, t_s)
        pairs.toi[pend_s[acc_s]] = np.inf
        taken = [
            o.accept(f & ((soonest[a] == t_min) | free[a])) for o, a, f in zip(struck, a_o, first_o)
        ]
        accepted = [h for h, _ in taken]
        hits += [hs, *accepted]

        # Each accepted contact pushes on its moving bodies: (body, time, normal toward it,
        # and where what it touched carries it by the end of the pass).
        body = np.concatenate([a_s, b_s, *(h.a for h in accepted)])
        when = np.concatenate([t_s, t_s, *(soonest[h.a] for h in accepted)])
        push = np.concatenate([hs.normal, -hs.normal, *(r.push for _, r in taken)])
        # A kinematic sphere, or a body that yielded to its carrier, carries what it meets.
        pushing = kin | paths.yielded
        carry_a = _carried(paths, pushing, b_s, t_s, hs.pos_b, hs.normal, hs.pos_a)
        carry_b = _carried(paths, pushing, a_s, t_s, hs.pos_a, -hs.normal, hs.pos_b)
        carries = np.concatenate([carry_a, carry_b, *(r.carry for _, r in taken)])
        spheres = np.zeros(2 * len(a_s), bool)
        fixed = np.concatenate([spheres, *(~_row_any(r.carry != 0.0) for _, r in taken)])
        # What turns carries round (a rider pushing a sphere takes it round with it too).
        # And which moving piece each touched (only pieces move with frames).
        frame = source = None
        if paths.frames is not None:
            frame = np.concatenate([
                _ridden(paths, pushing, b_s), _ridden(paths, pushing, a_s),
                *(np.full(len(r.carry), -1) if r.frame is None else r.frame for _, r in taken),
            ])  # fmt: skip
            source = np.concatenate([
                np.full(2 * len(a_s), -1),
                *(np.full(len(r.carry), -1) if r.source is None else r.source for _, r in taken),
            ])  # fmt: skip
        # A squeezed body that yielded to its carrier gives way to everything else.
        keep = ~still[body] & ~(paths.yielded[body] & ~_row_any(carries != 0.0))
        keep &= ~paths.crushed[body]
        response = Response(
            push[keep], carries[keep], fixed[keep], None if frame is None else frame[keep],
            None if source is None else source[keep],
        )
        changed = _respond(
            paths, rigid, body[keep], when[keep], response, slide, slides, t_stop
        )
        if hopeful and _beyond_reach(
            paths, changed[carried[changed]], p0, p1, bound_reach, ~bends, carry
        ):
            return _general(*again, **again_kw)  # type: ignore[arg-type, misc]
        # _respond changes whole groups: a group is still once every member is.
        moves = np.zeros(n, bool)
        moves[changed] = ~paths.stationary_of(changed)
        still[changed] = ~rigid.spread_from(moves, solid)[changed] & ~carried[changed]
        dirty_s = pairs.pairs_of(changed)
        pairs.retest(dirty_s)
        pend_s = _unique(np.concatenate([pend_s, dirty_s]))
        pend_s = pend_s[np.isfinite(pairs.toi[pend_s])]
        for o in struck:
            o.retest(changed)
        # A body whose contact changed nothing (squeezed, crushed, still) goes on along the
        # same path to its next contact, whose time a table made exact only if it was the
        # body's earliest (Pieces.toi): now it is.
        # (_respond changes every body it answers: those are the ones kept out of it.)
        settling = [o for o in struck if o.table.earliest_only]
        if settling and not keep.all():
            quiet = np.zeros(n, bool)
            quiet[body[~keep]] = True
            quiet[changed] = False
            for o in settling:
                o.settle(np.flatnonzero(quiet))

    if paths.over > rider_pad:  # (grown in the last round's tests)
        return padded()
    solid_hits = _first_per_pair(concat_hits(hits))
    if capped:
        solid_hits = _hold(paths, held, t_hold, t_stop, solid_hits)

    sensor_rows = [(o.table, o.sensor_i, o.sensor_k) for o in struck]
    sensor_hits = _sensor_hits(paths, radius, ci[pair_sensor], cj[pair_sensor], solid, sensor_rows)
    end = np.where(finite[:, None], paths.xe, p1)
    moved = finite & _row_any(end != p1)
    return PassResult(
        end=end,
        t_stop=t_stop,
        moved=moved,
        hits=concat_hits([solid_hits, sensor_hits]),
        candidates=len(ci) + sum(o.count for o in struck),
        rounds=rounds,
        capped=capped,
        # (A sensor a squeezed body carries goes with it, and is no body squeezed.)
        squeezed=int(np.count_nonzero(paths.yielded & solid)),
        yielded=np.flatnonzero(paths.yielded & solid),
    )


def _reaches(
    p0: Float,
    p1: Float,
    radius: Float,
    radius0: Float | None,
    bends: Bool,
    rigid: _Rigid,
    speed: Float | None = None,
) -> tuple[Float, Float, Float]:
    """(n,) each sphere's size (a growing one boxed at its largest), the length of its own
    motion (at least ``speed``, where given: an arc's bound), and its reach beyond its
    straight path (``bends``: the members of slides' groups only)."""
    # A deflected path stays within |p1 - p0| of p0 (each slide only removes motion), so
    # slides get that margin in every broad phase: every pair a slide can ever reach is
    # known before the first round, which the batching relies on (a round takes a contact
    # once no neighbour in the pair set can change in time). In a slide group every member
    # moves at most as fast as the fastest one (a deflection carries all members by the
    # same motion), so each gets the group's largest reach. (A sweep too long to measure
    # is ignored by the broad phase anyway.)
    with np.errstate(over="ignore", invalid="ignore"):
        own = _length(p1 - p0)
    if speed is not None:
        own = np.maximum(own, speed)
    size = radius
    if radius0 is not None:
        size = np.maximum(radius0, radius)
        # A growing slide is also pushed off what it touches, by at most its growth at
        # each of its deflections (and the first contact): that much further it may go.
        own = own + (MAX_SLIDES + 1) * np.maximum(radius - radius0, 0.0)
    reach = np.where(bends, rigid.spread_max(np.where(bends & np.isfinite(own), own, 0.0)), 0.0)
    return size, own, reach


def _beyond_reach(
    paths: Paths, bodies: Int, p0: Float, p1: Float, reach: Float, straight: Bool, carry: float
) -> bool:
    """Whether the new segment of any of ``bodies`` (carried) leaves where the pass's
    bounds and boxes put it: the ball of ``reach`` t around its start at time t (the
    causality bounds), and for a body that is not deflected (``straight``: boxed by pieces
    of its straight path), within ``carry`` of that path (it left the path where it was
    stopped, and went at most that far from there). Both distances, less ``reach`` t for
    the first, are convex along a straight segment: its ends tell (its start was inside).

    A rider's path bows off its chord: by at most ``Paths.stray`` s, a curve whose
    acceleration is at most ``8 s / (1 - ts)^2`` (``Frames.chord_deviation``), so at most
    ``a (t - ts) (1 - t) / 2`` at time t. It stays in the ball if its chord does, bowed
    out that much at either end, or if it is never faster than ``reach``: the chord's
    speed and ``a (1 - ts) / 2`` more. Near its path, if its chord's ends are, that
    much nearer."""
    if len(bodies) == 0:
        return False
    start = paths.ts[bodies]
    stray = paths.stray(bodies, start, np.ones(len(bodies)))
    limit = reach[bodies] * (1.0 - DIST_REL_EPS)
    out = _length(paths.xe[bodies] - p0[bodies]) + stray > limit
    bowed = np.flatnonzero(stray > 0)
    if len(bowed):
        b, s = bodies[bowed], stray[bowed]
        out[bowed] |= _length(paths.xs[b] - p0[b]) + s > limit[bowed] * start[bowed]
        left = np.maximum(1.0 - start[bowed], 1e-300)
        fast = (_length(paths.xe[b] - paths.xs[b]) + 4.0 * s) / left > limit[bowed]
        out[bowed] &= fast
    on = np.flatnonzero(straight[bodies])
    if len(on):
        b = bodies[on]
        near = carry * (1.0 - DIST_REL_EPS) - stray[on]
        for x in (paths.xs[b], paths.xe[b]):
            out[on] |= _point_segment_distance(x, p0[b], p1[b]) > near
    return bool(out.any())


def _astray(own: Float, table: Any) -> Float | float:
    """How far from its straight path at a given moment a body may be, by its own motion,
    where ``table`` needs it: a table of moving planes, whose candidates compare the path
    with the planes at the same moments (not a box swept over the pass). (Asked only where
    something moves by itself.)"""
    if table.kind == PLANE and table.moving.any():
        return np.where(np.isfinite(own), own, 0.0)
    return 0.0


def carry_margin(own: Float, kinematic: Bool, tables: Sequence[Any]) -> float:
    """How much further than its own motion any body may go this pass: what moves by
    itself (kinematic spheres, of motion ``own``, and moving obstacle rows) carries what
    it touches, each time by at most its own motion, at each of the body's contacts."""
    shifts = [own[kinematic], *(t.shift[t.moving] for t in tables)]
    carry = (MAX_SLIDES + 1) * max((float(x.max(initial=0.0)) for x in shifts), default=0.0)
    return carry if np.isfinite(carry) else 0.0


def broad_phase_spheres(
    p0: Float,
    p1: Float,
    radius: Float,
    response: NDArray[np.int8],
    *,
    radius0: Float | None = None,
    group: NDArray[np.int64] | None = None,
    turns: Turns | None = None,
) -> tuple[Float, Float, Bool]:
    """What :func:`solve`'s broad phase boxes for each sphere: (n,) radius, (n,) margin and
    (n,) whether its sweep is cut into pieces. A caller that indexes static spheres of its
    own finds every one :func:`solve` could pair with these (``StaticIndex.sphere_pairs``
    with the same three), and hands only those over."""
    p0, p1, radius = (np.asarray(x, dtype=np.float64) for x in (p0, p1, radius))
    finite = _row_all(np.isfinite(p0)) & _row_all(np.isfinite(p1))
    rigid = _Rigid(len(p0), group)
    bends = rigid.spread_any((response == SLIDE) & finite)
    if radius0 is not None:
        radius0 = np.asarray(radius0, dtype=np.float64)
    arcs = None if turns is None else _Arcs.of(turns, p0, p1, finite & (response != SENSOR))
    speed = None if arcs is None else arcs.speed
    size, _own, reach = _reaches(p0, p1, radius, radius0, bends, rigid, speed)
    return (size if arcs is None else size + arcs.stray), reach, ~bends


class _Arcs(NamedTuple):
    """Of a pass's :class:`Turns`: which spheres go round arcs (finite, solid, on a node
    that turns), and per sphere how far its arc strays from its chord (the whole pass's
    ``Frames.chord_deviation``) and a bound on its speed along it (its node's origin's,
    its own in the node, and the turn's at its distance from the origin); 0 elsewhere."""

    on: Bool
    stray: Float
    speed: Float
    #: (k, 6) the place of each sphere ``on`` (in order) in its node at the start and at
    #: the end: the straight path it rides (``Paths.turn_with``).
    local: Float

    @classmethod
    def of(cls, turns: Turns, p0: Float, p1: Float, live: Bool) -> _Arcs | None:
        frames = turns.frames
        rows = np.flatnonzero(live & (turns.frame >= 0))
        f = turns.frame[rows]
        y0, y1 = p0[rows] - frames.pos0[f], p1[rows] - frames.pos1[f]
        local0 = _frames.unapply(frames.rot0[f], y0)
        local1 = _frames.unapply(frames.rot1[f], y1)
        # Fixed in its node (to the float32 rounding of the transforms read): a sphere that
        # jumped (new, teleported) or whose scale changes keeps its chord.
        size = np.maximum(_length(local0), _length(local1))
        fixed = _length(local1 - local0) <= _FIXED_REL * (1.0 + size + _row_max(np.abs(p1[rows])))
        keep = np.flatnonzero(fixed & (frames.angle[f] > 0))
        if not len(keep):
            return None
        rows, f, y0, y1 = rows[keep], f[keep], y0[keep], y1[keep]
        local0, local1, size = local0[keep], local1[keep], size[keep]
        n = len(p0)
        on, stray, speed = np.zeros(n, bool), np.zeros(n), np.zeros(n)
        on[rows] = True
        stray[rows] = frames.chord_deviation(f, np.zeros(len(f)), np.ones(len(f)), y0, y1)
        speed[rows] = (
            _length(frames.pos1[f] - frames.pos0[f]) + _length(local1 - local0)
            + frames.angle[f] * size
        )  # fmt: skip
        return cls(on, stray, speed, np.concatenate([local0, local1], axis=1))


#: How far (relative to the coordinates) a sphere's place in its node may differ between
#: the start and the end of a pass, read from float32 transforms, for it to be fixed there.
_FIXED_REL = 1e-5


class _ObstaclePairs:
    """The (body, row) pairs of one obstacle table: the solid ones under test, with their
    times of impact on the current segments, and the sensor ones, tested once at the end."""

    def __init__(
        self,
        table: Any,
        paths: Paths,
        n: int,
        qi: Int,
        qk: Int,
        solid: Bool,
        moving: Bool,
        group: NDArray[np.int64] | None,
    ) -> None:
        if group is not None and table.group is not None:
            apart = group[qi] != table.group[qk]
            qi, qk = qi[apart], qk[apart]
        self.table, self._paths, self._n = table, paths, n
        self._solid, self._moving = solid, moving
        self._group = group if table.group is not None else None
        self.count = len(qi)
        self._query: Any = None
        # ``solid``: bodies that respond (not sensors, not kinematic spheres).
        sensor = ~solid[qi] | table.sensor[qk]
        keep = ~sensor & (moving[qi] | table.moving[qk])
        self.sensor_i, self.sensor_k = qi[sensor], qk[sensor]
        self.i, self.k = qi[keep], qk[keep]
        self._by_body = _Adjacency(n, self.i)
        self.toi, self.extra = table.toi(paths, self.i, self.k)
        self.pend = np.flatnonzero(np.isfinite(self.toi))

    def extendable(self, size: Float, from_mask: Int, live: Bool) -> None:
        """Ask the table again about every new segment of a body (see :meth:`extend`)."""
        self._query = (size, from_mask, live)
        # The known sensor pairs, by key (the solid ones are found among their body's).
        self._sensor_keys = _unique(self.sensor_i * len(self.table.mask) + self.sensor_k)

    def _extend(self, changed: Int) -> tuple[Bool, Int]:
        """Ask the table about the new segments of ``changed`` bodies (those still moving):
        returns (n,) which bodies were asked, and the solid pairs their new segments meet,
        known ones and the new ones added here. Of an asked body's pairs only those need a
        time of impact: the query finds every pair a segment can touch (which is why the
        pairs it adds are all the new ones), so a known pair it leaves out cannot touch."""
        asked = np.zeros(self._n, bool)
        none = np.zeros(0, np.int64)
        if len(changed) == 0:
            return asked, none
        size, from_mask, live = self._query
        # A body now at rest sits on the segment it was asked about already: nothing new.
        idx = changed[live[changed] & ~self._paths.stationary_of(changed)]
        if len(idx) == 0:
            return asked, none
        asked[idx] = True
        paths, table = self._paths, self.table
        # (A rider's path bows off its chord by up to its stray.)
        reach = size[idx] + paths.stray(idx, paths.ts[idx], np.ones(len(idx)))
        qi, qk = table.candidates(
            paths.xs[idx], paths.xe[idx], reach, from_mask[idx], np.ones(len(idx), bool),
            np.ones(len(idx), bool),
        )  # fmt: skip
        qi = idx[qi]
        if self._group is not None:
            apart = self._group[qi] != table.group[qk]
            qi, qk = qi[apart], qk[apart]
        m = len(table.mask)
        key = qi * m + qk
        # The asked bodies' solid pairs met again, by key (each once: keys are unique).
        mine = self._by_body.pairs_of(idx)
        mine_key = self.i[mine] * m + self.k[mine]
        order = np.argsort(mine_key)
        mine, mine_key = mine[order], mine_key[order]
        at = np.minimum(np.searchsorted(mine_key, key), max(len(mine) - 1, 0))
        again = mine_key.take(at) == key if len(mine) else np.zeros(len(key), bool)
        met = mine[at[again]]
        # Neither an asked body's solid pair nor a sensor pair known already: new.
        new = ~again & ~_isin_sorted(key, self._sensor_keys)
        if not new.any():
            return asked, met
        qi, qk = qi[new], qk[new]
        self.count += len(qi)
        sensor = ~self._solid[qi] | table.sensor[qk]
        if sensor.any():
            self._sensor_keys = _unique(np.concatenate([self._sensor_keys, key[new][sensor]]))
        self.sensor_i = np.concatenate([self.sensor_i, qi[sensor]])
        self.sensor_k = np.concatenate([self.sensor_k, qk[sensor]])
        keep = ~sensor
        ni, nk = qi[keep], qk[keep]
        if len(ni) == 0:
            return asked, met
        start = len(self.i)
        self.i = np.concatenate([self.i, ni])
        self.k = np.concatenate([self.k, nk])
        self.toi = np.concatenate([self.toi, np.full(len(ni), np.inf)])
        if self.extra is not None:
            self.extra = np.concatenate(
                [self.extra, np.full((len(ni),) + self.extra.shape[1:], np.nan)]
            )
        self._by_body = _Adjacency(self._n, self.i)
        return asked, np.concatenate([met, start + np.arange(len(ni))])

    def accept(self, rows: Bool) -> tuple[Hits, Response]:
        """Take the pending pairs ``rows`` (of ``pend``): their contacts, now resolved."""
        taken = self.pend[rows]
        t = self.toi[taken]
        self.toi[taken] = np.inf
        extra = None if self.extra is None else self.extra[taken]
        return self.table.hits(self._paths, self.i[taken], self.k[taken], t, extra)

    def settle(self, bodies: Int) -> None:
        """Exact times for the pending pairs of ``bodies``, which go on along the paths
        they had past a contact taken without a response: of a body's times only its
        earliest was sure to be exact (see :meth:`~panda3d_ccd._pieces.Pieces.toi`), and
        the next one is now its earliest."""
        mine = self._by_body.pairs_of(bodies)
        mine = mine[np.isfinite(self.toi[mine])]
        if len(mine) == 0:
            return
        toi, extra = self.table.toi(self._paths, self.i[mine], self.k[mine], every=True)
        self.toi[mine] = toi
        if self.extra is not None:
            self.extra[mine] = extra
        self.pend = self.pend[np.isfinite(self.toi[self.pend])]

    def retest(self, changed: Int) -> None:
        """New times of impact for the pairs of bodies whose paths changed: of the bodies
        asked about their new segments (see :meth:`_extend`) the pairs those meet, of the
        others all their pairs (one kernel call for both)."""
        dirty = self._by_body.pairs_of(changed)
        met = None
        if self._query is not None:  # (a table that is asked again: a static level)
            asked, met = self._extend(changed)
            # An asked body's pairs its new segment does not meet: out of its reach.
            out = asked[self.i[dirty]]
            self.toi[dirty[out]] = np.inf
            dirty = dirty[~out]
        # A body now at rest for the rest of the pass (rewound, or stopped dead) cannot
        # start a contact with a row that does not move either: no kernel call for those.
        idle = self._paths.stationary_of(self.i[dirty]) & ~self.table.moving[self.k[dirty]]
        self.toi[dirty[idle]] = np.inf
        dirty = dirty[~idle] if met is None else np.concatenate([dirty[~idle], met])
        toi, extra = self.table.toi(self._paths, self.i[dirty], self.k[dirty])
        self.toi[dirty] = toi
        if self.extra is not None:
            self.extra[dirty] = extra
        pend = _unique(np.concatenate([self.pend, dirty]))
        self.pend = pend[np.isfinite(self.toi[pend])]


def _extendable(table: Any) -> bool:
    """A table that never moves and whose candidates can be asked for again (a level)."""
    return bool(getattr(table, "extendable", False)) and not table.moving.any()


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
        self,
        paths: Paths,
        radius: Float,
        slide: Bool,
        reach: Float,
        i: Int,
        j: Int,
        ridable: Bool | None = None,
        rider_pad: float = 0.0,
    ) -> None:
        self._paths, self._radius = paths, radius
        # Bounds use the frame's original paths, which every response stays within.
        self._bound_args = (
            paths.xs.copy(), paths.xe.copy(), radius, slide, reach, ridable, rider_pad
        )  # fmt: skip
        self._earliest: Float | None = None
        # The change bound's pairs, with bounds 0 and with the real ones (see free).
        self._crude: _ChangeGraph | None = None
        self._graph: _ChangeGraph | None = None
        if len(i) > _LAZY_PAIRS:
            earliest = self._bounds(i, j)
            # Pairs that cannot touch this frame whatever happens need no test at all.
            keep = earliest <= 1.0
            i, j, self._earliest = i[keep], j[keep], earliest[keep]
        self.i, self.j = i, j
        self._adjacency = _Adjacency(len(radius), self.i, self.j)
        self.toi = _segment_toi(paths, radius, self.i, self.j)

    def _bounds(self, i: Int, j: Int) -> Float:
        p0, p1, radius, slide, reach, ridable, pad = self._bound_args
        return _earliest_touch(
            p0, p1, radius, slide, i, j, reach=reach, ridable=ridable, rider_pad=pad
        )

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
            zero = np.zeros(len(self.i))
            if self._crude is None:
                self._crude = _ChangeGraph.of(self.i, self.j, zero)
            crude = _blocked(self._crude, first, still, rigid)
            if not any(crude[b].any() for b in bodies):
                return ~crude
        if self._graph is None:
            self._graph = _ChangeGraph.of(self.i, self.j, self.earliest)
        return ~_blocked(self._graph, first, still, rigid)

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
    ridable: Bool | None = None,
    rider_pad: float = 0.0,
) -> Float:
    """(k,) a time before which pair (i, j) cannot touch, whatever contacts do to either;
    ``inf`` where they never can this frame.

    A body that is never deflected (rewind) stays on its segment p0 -> p1: it can only stop
    early. A deflected one (slide) stays within t ``reach`` of p0 at time t: ``reach`` (n,)
    is |p1 - p0| by default, since every slide only removes motion; in a rigid group it is
    the group's largest. Two bodies cannot meet before those regions do.

    ``ridable`` (n,): bodies that may ride a turning piece. A pair with one is tested on
    sub-steps with its radii grown by up to ``rider_allowance`` (see
    :func:`_ridden_segment_toi`), and may touch that much sooner; ``rider_pad`` more,
    where a pass found them grown past that (their sub-steps ran out).
    """
    if reach is None:
        reach = _length(p1 - p0)
    big_r = radius[i] + radius[j]
    if ridable is not None:
        pad = rider_allowance(p0, radius, i, j) + rider_pad
        big_r = big_r + np.where(ridable[i] | ridable[j], pad, 0.0)
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


class _ChangeGraph(NamedTuple):
    """The pairs of a change bound (see :func:`_blocked`) each both ways, from ``src`` to
    ``to`` with its ``bound``, grouped by ``to``: the groups begin at ``starts``, and
    ``body`` is each group's. Made once a pass for each set of bounds: the pairs and their
    bounds stay while the rounds go on."""

    src: Int
    to: Int
    bound: Float
    starts: Int
    body: Int

    @classmethod
    def of(cls, i: Int, j: Int, earliest: Float) -> _ChangeGraph:
        to = np.concatenate([j, i])
        order = np.argsort(to, kind="stable")
        to = to[order]
        starts = np.flatnonzero(np.diff(to, prepend=-1))  # (bodies are >= 0)
        src = np.concatenate([i, j])[order]
        bound = np.concatenate([earliest, earliest])[order]
        return cls(src, to, bound, starts, to[starts])


def _blocked(graph: _ChangeGraph, first: Float, still: Bool, rigid: _Rigid) -> Bool:
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

    ``graph``: the pairs and their bounds ``earliest[b, c]`` (:class:`_ChangeGraph`). A
    sweep over every pair is one gather and one segmented minimum; in a crowd the fixpoint
    takes some thirty sweeps a round (a work list of the pairs next to a body whose bound
    fell cost more in bookkeeping than it saved).
    """
    change = np.where(still, np.inf, first)
    if len(graph.src) == 0:
        return np.zeros(len(first), bool)
    src, body, starts = graph.src, graph.body, graph.starts
    # A pair with a still body passes nothing on: that body never changes.
    bound = np.where(still[src] | still[graph.to], np.inf, graph.bound)
    while True:
        lowered = change.copy()
        reached = np.minimum.reduceat(np.maximum(bound, change[src]), starts)
        lowered[body] = np.minimum(change[body], reached)
        lowered = rigid.spread_min(lowered)
        if not (lowered < change).any():
            return ~still & (change < first)
        change = lowered


def _sphere_hits(paths: Paths, radius: Float, a: Int, b: Int, t: Float) -> Hits:
    rows_a, rows_b = paths.rows.take(a, axis=0), paths.rows.take(b, axis=0)
    begun = paths.begun
    if paths.ride is None:
        pa, pb = position(rows_a, t, begun), position(rows_b, t, begun)
    else:
        pa, pb = paths.at(a, t), paths.at(b, t)
    va, vb = velocity(rows_a, begun), velocity(rows_b, begun)
    # Coincident centres (two points meeting exactly) have no direction: use the motion.
    fallback = unit(vb - va, np.broadcast_to([0.0, 0.0, 1.0], pa.shape))
    normal = unit(pa - pb, fallback)
    speed = -np.einsum("ij,ij->i", va - vb, normal)
    if paths.grow is not None:
        speed += paths.growth_rate(a, t) + paths.growth_rate(b, t)
    point = pb + normal * paths.radius_at(b, t)[:, None]
    return Hits.of(a, b, SPHERE, t, point, normal, np.maximum(speed, 0.0), pa, pb)


#: Turns of keeping clear of two moving surfaces met at one instant (see _respond).
_CORNER_STEPS = 4
#: ``Paths.held_by`` of a contact with a fixed surface.
FIXED = -2


def _respond(
    paths: Paths,
    rigid: _Rigid,
    body: Int,
    when: Float,
    response: Response,
    slide: Bool,
    slides: Int,
    t_stop: Float,
) -> Int:
    """Stop (rewind) or deflect (slide) the bodies of accepted contacts, each rigid group
    as one: its spheres take the same displacement. Returns the sorted indices of the
    spheres whose paths changed.

    Against what moves by itself the response is the same in its frame, mapped back with
    its end transform (``response.carry``): a rewound body rides it from the contact on,
    and a slide keeps its own motion except what goes into the surface relative to it
    (frictionless: a ball on a rising lift rises with it, one on a conveyor stays put).
    """
    if len(body) == 0:
        return np.zeros(0, np.int64)
    push, carry, fixed, frame, source = response
    if fixed is None:
        fixed = ~_row_any(carry != 0.0)
    # All accepted contacts of one group share its time (each was its earliest).
    group = rigid.group[body]
    uniq, first_row = np.unique(group, return_index=True)
    lead = body[first_row]
    t = when[first_row]
    at_t = paths.at(lead, t)
    slides[lead] += 1
    deflect = slide[lead] & (slides[lead] <= MAX_SLIDES)
    # A stopped body keeps no motion of its own: only what carries it (its first contact's
    # surface, then kept clear of the others').
    remaining = np.where(deflect[:, None], paths.xe[lead] - at_t, carry[first_row])
    # Squeezed between what carries it and something that does not give way: past its
    # slides, a body yields to the carrier (the piece wins) and follows it to the end.
    carrying = _row_any(carry != 0.0)
    if carrying.any():
        rate = carry[carrying] / np.maximum(1.0 - when[carrying], 1e-300)[:, None]
        paths.carrier[body[carrying]] = rate
        if frame is not None:
            paths.carrier_frame[body[carrying]] = frame[carrying]
        if not rigid.trivial:
            # A rigid group is carried as one: each member by what carries one of them
            # (a gate pushing a tank's hull carries its turret, which may be the lead of
            # the group's next contact: a tank wedged by its turret then yields to it).
            rows = body[carrying]
            groups, last = np.unique(rigid.group[rows][::-1], return_index=True)
            source_of = rows[len(rows) - 1 - last]
            members, slot = rigid.members(groups)
            paths.carrier[members] = paths.carrier[source_of[slot]]
            paths.carrier_frame[members] = paths.carrier_frame[source_of[slot]]
    squeezed = (slides[lead] > MAX_SLIDES + 1) & _row_any(paths.carrier[lead] != 0.0)
    # Crushed between things that all move (no room left): it goes with the last of them.
    crushed = squeezed & (slides[lead] > 3 * MAX_SLIDES)
    carried_now = np.isin(uniq, group[carrying])
    squeezed &= ~carried_now | crushed
    # Remove the motion into each contact normal, one contact rank at a time (several
    # contacts of one group at the same instant are rare: a corner).
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    rank = np.arange(len(group)) - np.searchsorted(sorted_group, sorted_group)
    slot = np.searchsorted(uniq, sorted_group)
    # This instant's contacts of each group, by rank (k, ranks, 3).
    ranks = int(rank.max()) + 1
    now_n = np.zeros((len(uniq), ranks, 3))
    now_carry = np.zeros((len(uniq), ranks, 3))
    now_on = np.zeros((len(uniq), ranks), bool)
    now_n[slot, rank], now_carry[slot, rank], now_on[slot, rank] = push[order], carry[order], True
    # Touched something that moves at this same instant before: those surfaces still hold
    # the body (a corner of walls closing in takes it along all of them).
    previous, previous_carry = paths.normal[lead], paths.normal_carry[lead]
    moved = carried_now.copy()
    moved |= (paths.held_carry[lead] != 0.0).any(axis=(1, 2))
    same = (paths.held_t[lead] == t[:, None]) & moved[:, None]
    held = same.any(axis=1)
    now = (now_n, now_carry, now_on, same)
    # A growing slide keeps clear of what it touches: its motion away from each surface
    # must be at least what it still grows (nothing else: no growth, no push).
    grown = None if paths.grow is None else np.where(deflect, paths.growth_left(lead, t), 0.0)
    latest = np.zeros_like(remaining)
    latest_carry = np.zeros_like(remaining)
    for r in range(ranks):
        s = np.flatnonzero(now_on[:, r])
        nrm, by = now_n[s, r], now_carry[s, r]
        away = np.einsum("ij,ij->i", remaining[s] - by, nrm)
        if grown is not None:
            away -= grown[s]
        remaining[s] -= nrm * np.minimum(away, 0.0)[:, None]
        latest[s], latest_carry[s] = nrm, by
    # A slide meeting a fixed surface after others this pass: deflected from the motion it
    # meant to do (as Quake's slide move clips the original velocity by every plane it
    # touched): into a corner it goes into the corner, not back along the first wall. The
    # same against the faces of one moving piece, on the motion relative to it (which
    # ``carry`` takes away, and gives back after), where that piece is all it has touched
    # this pass: clipped from the original motion by the piece's faces alone, a slide
    # would lose what anything else deflected it by, and go back into that (a wall beside
    # a moving ramp), then back into the ramp, until its slides ran out.
    all_fixed = np.ones(len(uniq), bool)
    all_fixed[slot[~fixed[order]]] = False
    # Held only by fixed surfaces and moving pieces: touched nothing else, and no sphere
    # that moves holds it at this instant (a ball that yielded to a piece). Where spheres
    # press it, the exact crease and the free repeats below are not taken (see
    # ``unchanged``). (Asked only of bodies held at this instant, as both are.)
    of_pieces = held.copy()
    if held.any():
        piece = fixed if source is None else fixed | (source >= 0)
        of_pieces[slot[~piece[order]]] = False
        by_sphere = (paths.held_carry[lead] != 0.0).any(axis=2) & (paths.held_by[lead] < 0)
        of_pieces &= ~(same & by_sphere).any(axis=1)
    # What held it (``Paths.held_by``).
    surface = np.where(all_fixed, FIXED, -1 if source is None else source[first_row])
    again = deflect & ~held
    if grown is not None:
        again &= grown == 0
    if again.any():  # (a rewind never is: none of this for it)
        earlier = (paths.held_t[lead] >= 0.0) & (paths.held_t[lead] < t[:, None])
        prior = earlier & (paths.held_by[lead] == surface[:, None])
        alone = (surface >= 0) & ~(earlier & ~prior).any(axis=1)  # (a moving piece's)
        prior &= (all_fixed | alone)[:, None]
        several = now_on.sum(axis=1) > 1
        again &= prior.any(axis=1) | several
    if again.any():
        # One contact after that surface's earlier ones: Quake's clip of the motion meant
        # by the latest plane, then along the crease with one earlier plane it goes into,
        # or none (most slides on a level: rolling on over a floor's faces).
        g = np.flatnonzero(again & ~several)
        if len(g):
            by = carry[first_row[g]]
            remaining[g] = by + _clip_by_all(
                paths.motion[lead[g]] * (1.0 - t[g])[:, None] - by,
                latest[g],
                paths.held_n[lead[g]],
                prior[g],
            )
        # Several at one instant (the faces round a vertex): a crease of two is not enough.
        # The motion nearest the one meant clear of every one of them, and of that
        # surface's earlier ones (each of this instant relative to its own carry, the
        # earlier ones to the surface's); that meant is the original motion where there
        # are earlier ones, else what the segment had left.
        g = np.flatnonzero(again & several)
        if len(g):
            by = carry[first_row[g]]
            meant = np.where(
                prior[g].any(axis=1)[:, None],
                paths.motion[lead[g]] * (1.0 - t[g])[:, None],
                paths.xe[lead[g]] - at_t[g],
            )
            planes = np.concatenate([now_n[g], paths.held_n[lead[g]]], axis=1)
            own = np.einsum("ikj,ikj->ik", now_n[g], now_carry[g] - by[:, None])
            offsets = np.concatenate([own, np.zeros((len(g), HELD))], axis=1)
            on = np.concatenate([now_on[g], prior[g]], axis=1)
            clear = _nearest_clear(meant - by, planes, offsets, on)
            ok = _row_all(np.isfinite(clear))
            remaining[g[ok]] = by[ok] + clear[ok]
    # Deflected twice at one instant and sent back into the first surface: a wedge. Keep
    # only the motion along the crease of the two surfaces (parallel ones: none at all),
    # as a fluid pusher does, instead of bouncing between them until MAX_SLIDES.
    sliding = deflect.copy()
    back = np.einsum("ij,ij->i", remaining - previous_carry, previous)
    wedged = (paths.normal_t[lead] == t) & (back < (0.0 if grown is None else grown))
    if held.any():
        # Between surfaces that move: keep clear of all of them, by turns (each step only
        # adds motion away from one of them).
        slots = [
            (paths.held_n[lead, j], paths.held_carry[lead, j], same[:, j]) for j in range(HELD)
        ]
        slots.append((latest, latest_carry, held))
        meant = remaining.copy()
        for step in range(_CORNER_STEPS):
            before = remaining.copy()
            for nrm, by, on in slots:
                away = np.einsum("ij,ij->i", remaining - by, nrm)
                remaining -= np.where(on, np.minimum(away, 0.0), 0.0)[:, None] * nrm
            if step == 0:
                first = _length(remaining - before)
        # Turns close in on a wedge's crease only by a factor a turn: left a little short
        # of it, the body meets the surface it went into first again at this instant,
        # round after round, each a slide, until they run out and it yields to the piece
        # with room to spare (a windmill's blade coming down at 28 degrees onto a ball on
        # a one-sided road: into the road, then through it). Where the turns came most of
        # the way, the nearest motion clear of them all, exactly. Not where they did not
        # (each turn went nearly as far as the one before, or the crease is further on
        # than they went): the planes nearly face each other, and their crease is far
        # along the fixed surface, where the contact's tangent plane no longer stands for
        # the piece (an arm's tip coming down over a ball against a wall sent it 14 radii
        # along the wall in one frame). There the turns' answer stays, and the squeeze
        # goes on as before.
        # (A last turn that moved nothing left it clear of them all already.)
        last = _length(remaining - before)
        near_crease = (last > 0.0) & (last <= 0.6 * first)
        g = np.flatnonzero(of_pieces & near_crease)
        if len(g):
            meant, stepped = meant[g], remaining[g]
            planes = np.stack([nrm[g] for nrm, _, _ in slots], axis=1)
            offsets = np.stack([np.einsum("ij,ij->i", n[g], by[g]) for n, by, _ in slots], 1)
            on = np.stack([o[g] for _, _, o in slots], axis=1)
            clear = _nearest_clear(meant, planes, offsets, on)
            ok = _row_all(np.isfinite(clear))
            ok &= _length(clear - stepped) <= _length(stepped - meant)
            remaining[g[ok]] = clear[ok]
        wedged &= ~held
        # Squeezed: held at this instant by what carries it and by something that does not
        # give way, with no motion clear of them all (a lift rising into a ceiling). It is
        # known now: it yields to its carrier at once, as it would once its slides ran out
        # (each of them a round, going back and forth between the two at this instant), and
        # is crushed after as many more contacts as then. Where some motion is clear of them
        # all (a wedge of a turning gate and a wall, open on one side), nothing changes.
        stuck = _stuck(paths, lead, held & _row_any(paths.carrier[lead] != 0.0), grown, now)
        stuck &= ~crushed
        squeezed |= stuck
        deflect &= ~stuck
        slides[lead[stuck]] = np.maximum(slides[lead[stuck]], MAX_SLIDES + 2)
    if wedged.any():
        crease = _cross(previous[wedged], latest[wedged])
        along = unit(crease, np.zeros_like(crease))
        keep = np.einsum("ij,ij->i", remaining[wedged], along)
        remaining[wedged] = along * keep[:, None]
        if grown is not None:  # no room to grow in: it stops, and stops growing
            deflect &= ~(wedged & (grown > 0))
    # (A growing slide wedged with no room to grow in stops dead.)
    remaining[sliding & ~deflect] = 0.0
    displacement = np.where(squeezed[:, None], paths.carrier[lead] * (1.0 - t)[:, None], remaining)
    # What turns and carries the body (its own contact's, or its carrier's where it
    # yields) takes it round: its new segment turns with it.
    ride = None
    if frame is not None:
        ride = np.full(len(uniq), -1)
        np.maximum.at(ride, np.searchsorted(uniq, group), frame)
        ride = np.where(squeezed, paths.carrier_frame[lead], ride)
    members, slot = rigid.members(uniq)
    # Held at this instant by something that moves and answered already: a contact met
    # again at the very start of the segment this instant's answer gave, whose answer is
    # that same segment, changes nothing (a turning piece's sweep inflated by the stray
    # of a straight path from its own arc, or a fixed surface's by the arc of one riding
    # the piece, meets it again where it only touches). It spends no slide, and the body
    # goes on along that segment: each such contact spent one, in a crease of a turning
    # piece and a floor, round after round until the slides ran out and the body yielded
    # to the piece, into the floor, with room to spare. Only between pieces and fixed
    # surfaces: a sphere met again (or one that moves and holds it at this instant: a
    # ball that yielded to the piece) is met again because it moved, and the slides
    # spent on it are what bound those rounds (a stack of balls an arm squeezes against
    # a wall went on to the round cap, the top one into the arm). (A piece and a fixed
    # surface met in one round leave what held it unknown: it spends its slide, as before.)
    unchanged = deflect & ~squeezed & of_pieces & (paths.ts[lead] == t)
    if unchanged.any():
        end_now = paths.at(members, t[slot]) + displacement[slot]
        xe = paths.xe[members]
        near = _row_all(np.abs(end_now - xe) <= slop(end_now, xe)[:, None])
        near &= paths.ts[members] == t[slot]
        # (Where it would ride a turning piece it does not ride yet, it starts to: riding
        # keeps it out of the piece. It never stops riding for a contact that changes
        # nothing else: that would go on round after round, the piece's turn against the
        # fixed surface's.)
        if ride is not None:
            now_ride = np.full(len(members), -1) if paths.ride is None else paths.ride[members]
            near &= (ride[slot] == now_ride) | (ride[slot] < 0)
        every = np.ones(len(uniq), bool)
        np.logical_and.at(every, slot, near)
        unchanged &= every
    if unchanged.any():
        slides[lead[unchanged]] -= 1
        if unchanged.all():
            return np.zeros(0, np.int64)
        # The rest go on as answered: every per-group array of the response, theirs alone.
        keep = ~unchanged
        (deflect, squeezed, crushed, uniq, lead, t, at_t, displacement, latest, latest_carry,
         now_n, now_carry, now_on, surface) = (
            x[keep] for x in (deflect, squeezed, crushed, uniq, lead, t, at_t, displacement,
                              latest, latest_carry, now_n, now_carry, now_on, surface)
        )  # fmt: skip
        ride = None if ride is None else ride[keep]
        members, slot = rigid.members(uniq)
    paths.yielded[members[squeezed[slot]]] = True
    paths.crushed[members[crushed[slot]]] = True
    t_m = t[slot]
    at_m = paths.at(members, t_m)
    paths.normal[members] = latest[slot]
    paths.normal_carry[members] = latest_carry[slot]
    # Every contact of the instant is held (the faces round a vertex, met at once).
    count = paths.held_count[members]
    for r in range(ranks):
        on = now_on[slot, r]
        m, ring = members[on], (count[on] + r) % HELD
        paths.held_n[m, ring] = now_n[slot[on], r]
        paths.held_carry[m, ring] = now_carry[slot[on], r]
        paths.held_t[m, ring] = t_m[on]
        paths.held_by[m, ring] = surface[slot[on]]
    paths.held_count[members] = count + now_on.sum(axis=1)[slot]
    paths.normal_t[members] = t_m
    slides[members] = slides[lead][slot]
    stopped = ~deflect[slot]
    # A body once stopped stays stopped growing (carried on by what it touched, it may meet
    # more; its growth does not resume).
    gone = members[stopped]
    t_stop[gone] = np.minimum(t_stop[gone], t_m[stopped])
    end = at_m + displacement[slot]
    if not rigid.trivial:
        # A group the game turns (its target's turn) moves each member its own way: a slide
        # corrects them all by one translation, the lead's (the one the write-back can make
        # of their target, whose turn the game keeps), not the lead's motion given to all.
        # (Where the members' motions differ by no more than the slop, it is the float32
        # rounding of their places, which must not be handed on from contact to contact.)
        own = (deflect & ~squeezed)[slot] & (members != lead[slot])
        if own.any():
            m, lead_m = members[own], lead[slot[own]]
            apart = (paths.xe[m] - at_m[own]) - (paths.xe[lead_m] - at_t[slot[own]])
            turned = _row_any(np.abs(apart) > slop(at_m[own], paths.xe[m])[:, None])
            end[np.flatnonzero(own)[turned]] += apart[turned]
    # (A body that went round an arc goes on straight, to where the turn the write-back
    # keeps for a slide puts it: round the arc, with the correction the slide gives it,
    # it would dip into what deflected it along the way, and be deflected again and again.)
    paths.restart(members, t_m, at_m, end, None if ride is None else ride[slot])
    return members


def _stuck(
    paths: Paths, lead: Int, held: Bool, grown: Float | None, now: tuple[Float, Float, Bool, Bool]
) -> Bool:
    """(k,) of the ``held`` groups (their ``lead``), those whose contacts at this instant
    (``now``: this round's normals, carries and which are on (k, ranks), and which of the
    held ones are of this instant (k, HELD)) leave no motion clear of them all, where one
    of them carries the body and another does not give way (carries nothing). Clear of a
    contact is what goes no further into it than its carry; a growing body is left out
    (it must also keep clear by its growth)."""
    now_n, now_carry, now_on, same = now
    rows = np.flatnonzero(held if grown is None else held & (grown == 0))
    out = np.zeros(len(lead), bool)
    if len(rows) == 0:
        return out
    lead = lead[rows]
    planes = np.concatenate([now_n[rows], paths.held_n[lead]], axis=1)
    carries = np.concatenate([now_carry[rows], paths.held_carry[lead]], axis=1)
    on = np.concatenate([now_on[rows], same[rows]], axis=1)
    moving = (carries != 0.0).any(axis=2)
    both = (on & moving).any(axis=1) & (on & ~moving).any(axis=1)
    offsets = np.einsum("ikj,ikj->ik", planes, carries)
    clear = _nearest_clear(np.zeros((len(rows), 3)), planes, offsets, on & both[:, None])
    out[rows] = both & ~_row_all(np.isfinite(clear))
    return out


def _clip_by_all(motion: Float, normal: Float, planes: Float, on: Bool) -> Float:
    """(k, 3) ``motion`` with what goes into ``normal`` removed; if that goes into one of
    the earlier ``planes`` (k, HELD, 3) that are ``on`` (k, HELD), only the motion along the
    crease of the two; into two or more of them (a corner), none."""
    out = motion - normal * np.minimum(np.einsum("ij,ij->i", motion, normal), 0.0)[:, None]
    eps = DIST_REL_EPS * _length(motion)
    into = on & (np.einsum("ikj,ij->ik", planes, out) < -eps[:, None])
    count = into.sum(axis=1)
    one = np.flatnonzero(count == 1)
    if len(one):
        other = planes[one, np.argmax(into[one], axis=1)]
        along = unit(_cross(normal[one], other), np.zeros_like(other))
        crease = along * np.einsum("ij,ij->i", motion[one], along)[:, None]
        # The crease may still go into a third one: then a corner too.
        third = on[one] & (np.einsum("ikj,ij->ik", planes[one], crease) < -eps[one, None])
        out[one] = np.where(third.any(axis=1)[:, None], 0.0, crease)
    out[count >= 2] = 0.0
    return out


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

    def spread_from(self, flags: Bool, solid: Bool) -> Bool:
        """Each sphere's flag, or any of its group's solids' (a sensor a body carries moves
        with it, never the other way round)."""
        if self.trivial:
            return flags
        return self.spread_any(flags & solid) | flags


def _carried_set(seeds: Int, i: Int, j: Int, kinematic: Bool, rigid: _Rigid) -> Bool:
    """(n,) the bodies a push from ``seeds`` may carry: through the pairs (i, j), and
    through the rigid groups, whose members move as one (a member pushed pushes what its
    group-mates touch); never a kinematic body."""
    carried = rigid.spread_any(_reach(seeds, i, j, kinematic) & ~kinematic)
    while not rigid.trivial:
        more = rigid.spread_any(_reach(np.flatnonzero(carried), i, j, kinematic) & ~kinematic)
        if np.array_equal(more, carried):
            break
        carried = more
    return carried


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


def _carried(
    paths: Paths,
    pushing: Bool,
    by: Int,
    t: Float,
    pos: Float,
    normal: Float,
    other: Float,
) -> Float:
    """(k, 3) how far spheres ``by``, touched at times ``t`` with their centres at ``pos``,
    take what touches them (centred at ``other``) by the end of the pass where they carry
    what they touch (``pushing``: kinematic spheres, bodies that yielded to their carrier):
    their centre's motion from then on, or where one turns with a piece (``Paths.ride``)
    that piece's motion of ``other``, and their surface's growth along the contact
    ``normal`` (out of them); zero for the others."""
    push = pushing[by]
    if not push.any():
        return np.zeros_like(pos)
    carry = paths.xe[by] - pos + normal * paths.growth_left(by, t)[:, None]
    turning = np.flatnonzero(push & paths.riding(by))
    if len(turning):
        f, x = paths.ride[by[turning]], other[turning]  # type: ignore[index]
        end = paths.frames.carried(f, t[turning], x)
        grow = paths.growth_left(by[turning], t[turning])
        carry[turning] = end - x + normal[turning] * grow[:, None]
    return np.where(push[:, None], carry, 0.0)


def _ridden(paths: Paths, pushing: Bool, by: Int) -> Int:
    """(k,) the frame each of spheres ``by`` turns with where it carries what it touches
    (see :func:`_carried`), -1 elsewhere."""
    if paths.ride is None:
        return np.full(len(by), -1)
    return np.where(pushing[by], paths.ride[by], -1)


def _hold(paths: Paths, held: Bool, t_hold: float, t_stop: Float, hits: Hits) -> Hits:
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
    paths.start_at(idx, t_hold)
    if paths.ride is not None:
        paths.ride[idx] = -1
    t_stop[idx] = np.minimum(t_stop[idx], t_hold)
    late = (hits.t > t_hold) & (
        held[hits.a] | ((hits.kind == SPHERE) & held[np.where(hits.kind == SPHERE, hits.b, 0)])
    )
    return Hits(*(col[~late] for col in hits))


def _sensor_hits(
    paths: Paths,
    radius: Float,
    ei: Int,
    ej: Int,
    solid: Bool,
    obstacles: Sequence[tuple[Any, Int, Int]],
) -> Hits:
    """Overlap intervals of sensor pairs, tested against every segment of the final paths:
    the sphere pairs (ei, ej), and per obstacle table its sensor (body, row) pairs, given as
    (table, i, k)."""
    obstacles = [(table, i, k) for table, i, k in obstacles if len(i)]
    if not len(ei) and not obstacles:
        return empty_hits()
    segs = paths.segments()  # (once: every table goes along the same segments)
    parts = []
    if len(ei):
        # The sensor on side a where only one side is one (the side its events are from).
        swap = solid[ei]
        a, b = np.where(swap, ej, ei), np.where(swap, ei, ej)
        parts.append(_sensor_sphere_rows(paths, segs, radius, a, b))
    parts += [table.sensor_hits(paths, segs, i, k) for table, i, k in obstacles]
    return concat_hits(parts)


def _sensor_sphere_rows(paths: Paths, segs: Segments, radius: Float, a: Int, b: Int) -> Hits:
    """Sphere pairs (a, b) of which one or both are sensors, over every pair of their
    segments (``segs``) that share time: a sensor has one segment, or its carrier's."""
    item, sb = segs.of(b)
    each, sa = segs.of(a[item])
    item, sb = item[each], sb[each]
    lo = np.maximum(segs.t0[sa], segs.t0[sb])
    hi = np.minimum(segs.t1[sa], segs.t1[sb])
    # (A segment of no time, stopped exactly at the end, is the end of the one before.)
    live = hi > lo
    item, sa, sb, lo, hi = item[live], sa[live], sb[live], lo[live], hi[live]
    ia, ib = a[item], b[item]
    span = hi - lo
    a_lo, a_hi, b_lo, b_hi = segs.at(sa, lo), segs.at(sa, hi), segs.at(sb, lo), segs.at(sb, hi)
    if paths.grow is None:
        enter, leave = sphere_sphere_overlap(a_lo, a_hi, radius[ia], b_lo, b_hi, radius[ib])
    else:  # both radii as one, linear on each segment (a stop is a segment's end)
        r_lo = paths.radius_at(ia, lo) + paths.radius_at(ib, lo)
        r_hi = paths.radius_at(ia, hi) + paths.radius_at(ib, hi)
        zero = np.zeros(len(ia))
        enter, leave = sphere_sphere_overlap(a_lo, a_hi, r_lo, b_lo, b_hi, zero, ra1=r_hi, rb1=zero)
    hit = np.isfinite(enter)
    item, sa, sb, ia, ib = item[hit], sa[hit], sb[hit], ia[hit], ib[hit]
    t_in = lo[hit] + enter[hit] * span[hit]
    t_out = lo[hit] + leave[hit] * span[hit]
    if len(item) == 0:
        return empty_hits()
    # (Both in item order: row by row, one pair's entry and exit.)
    first = pick(item, t_in)
    last = pick(item, -t_out)
    t_enter = t_in[first]
    t_exit = np.where(t_out[last] >= 1.0, np.nan, t_out[last])

    def geometry(rows: Int, t: Float) -> tuple[Float, Float, Float, Float]:
        pa, pb = segs.at(sa[rows], t), segs.at(sb[rows], t)
        normal = unit(pa - pb, np.broadcast_to([0.0, 0.0, 1.0], pa.shape))
        return pa, pb, normal, pb + normal * paths.radius_at(ib[rows], t)[:, None]

    pa, pb, nrm, point = geometry(first, t_enter)
    xa, xb, xn, xpoint = geometry(last, np.where(np.isnan(t_exit), 1.0, t_exit))
    rel = segs.velocity(sa[first]) - segs.velocity(sb[first])
    speed = np.maximum(-np.einsum("ij,ij->i", rel, nrm), 0.0)
    exit = (t_exit, xpoint, xn, xa, xb)
    return Hits.of(
        ia[first], ib[first], SPHERE, t_enter, point, nrm, speed, pa, pb, sensor=True, exit=exit
    )
