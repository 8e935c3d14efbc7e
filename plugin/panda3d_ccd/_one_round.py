"""The pass of most game frames, in one round: a few isolated contacts, each body stopped
at its first. Pure numpy; :func:`~panda3d_ccd._solver.solve` tries it first.

Most frames of a game have a few contacts far apart: a ball reaches a wall, two meet. The
general solver's machinery (causality bounds, rounds, slides, carrying) costs about a
thousand numpy operations a pass whatever the scene holds; this path costs a tenth of that
and gives the general solver's answer exactly (the same kernels, the same arithmetic:
``tests/test_one_round.py`` compares the two on random frames). It takes a frame only when
that answer is one round:

- nothing but rewound bodies, sensors and obstacles that do not move this pass (planes,
  a static level; no slide, no kinematic sphere, no moving piece, no growing or static
  sphere, no rigid group of several spheres), every row finite;
- each body stops at its earliest contact, and no stop can change another pair's answer:
  every pair of moving solid spheres near each other stops at the same moment (both stopped
  by their contact, or neither stopped), or one of them never moves, or the one that moves
  on after the other stopped does not touch it on the rest of its straight path. (A
  rewound body stays on its straight path; until the first of a pair stops, their paths
  are the ones whose time of impact is known.)

Where some bodies break that rule, it answers the rest and leaves the general solver
only those bodies' clusters (:class:`Split`): each body in trouble, and every body the
broad phase's pairs join it to, directly or through others. Nothing in a cluster is near
anything outside it, so the two answers do not touch, and together they are the general
solver's answer on the whole frame (but for the last bits of a contact's approach speed,
which the general solver may compute on a path it restarted at that very time), or a
better one where the whole frame would reach the general solver's round cap and the
clusters do not. A busy frame of thousands of bodies has a few such clusters: the
general solver's rounds then run on tens of rows, not thousands.

Where every body is in one cluster (a pile), or the frame is not one it takes, it
declines, having changed nothing, and the general solver runs: with the broad phase's
pairs where it got that far (:class:`Declined`), which are the general solver's own for
such a frame, so that a declined frame does not pay for them twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _solver
from ._arrays import row_any as _row_any
from ._arrays import unique as _unique
from ._paths import Hits, Paths, concat_hits, empty_hits, renumbered
from .broadphase import _sphere_pairs

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


#: No rows (shared: never written into).
_NO_ROWS = np.zeros(0, np.int64)
_NO_ROWS.flags.writeable = False


class Declined(NamedTuple):
    """A frame :func:`one_round` declined after its broad phase: the (i, j) sphere pairs and
    each obstacle table's (sphere, row) pairs it found, before any group filter."""

    pairs: tuple[Int, Int]
    table_pairs: list[tuple[Int, Int]]


class Split(NamedTuple):
    """A frame one round answered but for a few clusters of bodies (``rows``, in order),
    each a cluster of the broad phase's pairs that nothing outside it is near: ``result``
    is one round's answer for the rest (the rows' entries stand in), ``known`` the pairs
    among the rows, numbered as ``rows``, for the general solver to answer them."""

    result: Any  # _solver.PassResult
    rows: Int
    known: Declined

    def merge(self, part: Any) -> Any:
        """The frame's answer: ``result`` with the rows' own, ``part`` (the general
        solver's answer for the rows alone, numbered as ``rows``), written into
        ``result``'s arrays (a Split is merged once)."""
        rows, result = self.rows, self.result
        result.end[rows] = part.end
        result.t_stop[rows] = part.t_stop
        result.moved[rows] = part.moved
        return result._replace(
            hits=concat_hits([result.hits, renumbered(part.hits, rows)]),
            rounds=max(result.rounds, part.rounds),
            capped=part.capped,
            squeezed=part.squeezed,
            yielded=rows[part.yielded],
        )


class _Struck(NamedTuple):
    """One table's solid pairs (moving body ``i``, row ``k``) and their first times of
    impact ``t``, with what its hits need (``extra``, as the table's ``first_toi`` gives)."""

    table: Any
    i: Int
    k: Int
    t: Float
    extra: Any


def one_round(
    p0: Float,
    p1: Float,
    radius: Float,
    response: NDArray[np.int8],
    from_mask: Int,
    into_mask: Int,
    tables: Sequence[Any],
    group: Int | None,
    all_finite: bool = False,
) -> Any:
    """The :class:`~panda3d_ccd._solver.PassResult` of a frame of isolated contacts; where
    clusters of bodies need the general solver (see the module), :class:`Split`, or where
    all do, :class:`Declined`; None where it does not apply.
    ``tables``: the obstacle tables (:class:`~panda3d_ccd._obstacles.Planes`,
    :class:`~panda3d_ccd._pieces.Pieces`), each with its rows' ``group``; the caller has
    checked that no sphere grows and none is static (and, with ``all_finite``, that every
    row of p0 and p1 is finite)."""
    rewind = response == _solver.REWIND
    # (None: no sphere is a sensor, the common case: no sensor pair of spheres to find.)
    sensor = None
    if not rewind.all():
        sensor = response == _solver.SENSOR
        if not np.all(sensor | rewind):
            return None
    if any(table.moving.any() for table in tables):
        return None
    # Each sphere must be the only one of its group (none is tested against another of
    # its own, then). (Owners numbered in the order nodes were registered are increasing:
    # no sort.)
    if group is not None and not np.all(group[1:] > group[:-1]):
        if len(_unique(group)) != len(group):
            return None
    if not (all_finite or (np.isfinite(p0).all() and np.isfinite(p1).all())):
        return None
    n = len(p0)
    everyone = np.ones(n, bool)
    moving = _row_any(p0 != p1)
    pairs = ci, cj = _sphere_pairs(p0, p1, radius, from_mask, into_mask, everyone, everyone)
    if sensor is None:
        pair_sensor = None
        pair_solid = moving[ci] | moving[cj]
    else:
        pair_sensor = sensor[ci] | sensor[cj]
        pair_solid = ~pair_sensor & (moving[ci] | moving[cj])
    si, sj = ci[pair_solid], cj[pair_solid]
    t_stop = np.ones(n)
    paths = Paths(p0, p1, radius, None, t_stop)
    toi = _pair_toi(p0, p1, radius, si, sj)

    # Each table's pairs (as the general solver asks for them: the straight paths, at the
    # radius), the solid ones with their times of impact.
    table_pairs: list[tuple[Int, Int]] = []
    sensor_rows: list[tuple[Any, Int, Int]] = []
    struck: list[_Struck] = []
    candidates = len(ci)
    for table in tables:
        qi, qk = table.candidates(p0, p1, radius, from_mask, everyone, everyone)
        table_pairs.append((qi, qk))
        if group is not None and table.group is not None:
            apart = group[qi] != table.group[qk]
            qi, qk = qi[apart], qk[apart]
        candidates += len(qi)
        if sensor is None and not table.any_sensor:
            body = moving[qi]  # (no sensor pair: neither side is one)
        else:
            quiet = table.sensor[qk] if sensor is None else sensor[qi] | table.sensor[qk]
            sensor_rows.append((table, qi[quiet], qk[quiet]))
            body = ~quiet & moving[qi]
        pi, pk = qi[body], qk[body]
        if len(pi):
            struck.append(_Struck(table, pi, pk, *table.first_toi(paths, pi, pk)))

    # Each moving body's earliest contact: where it stops. (Nothing to find in a frame
    # without a solid pair: nothing stops.)
    hits: list[Hits] = []
    stopped = _NO_ROWS
    split: Bool | None = None  # the bodies left to the general solver
    if len(si) or struck:
        first = np.full(n, np.inf)
        if len(si):
            np.minimum.at(first, si, toi)
            np.minimum.at(first, sj, toi)
        for o in struck:
            np.minimum.at(first, o.i, o.t)
        stops = moving & np.isfinite(first)
        s = np.where(stops, first, 1.0)
        # The contacts that stop their bodies: each body's earliest, where the other side
        # is still, or stops at that same moment.
        table_taken = [np.isfinite(o.t) & (o.t == s[o.i]) for o in struck]
        # One round's answer is the frame's only if every stop is such a contact (a body's
        # earliest contact may be with another's path past that one's own stop) and no
        # stop changes another pair's answer (see the module).
        held = np.zeros(n, bool)
        if len(si):
            moving_i, moving_j, s_i, s_j = moving[si], moving[sj], s[si], s[sj]
            sphere_taken = (
                np.isfinite(toi) & (~moving_i | (toi == s_i)) & (~moving_j | (toi == s_j))
            )
            held[si[sphere_taken]] = held[sj[sphere_taken]] = True
        for o, taken in zip(struck, table_taken):
            held[o.i[taken]] = True
        trouble = stops & ~held
        if len(si):
            differ = np.flatnonzero((s_i != s_j) & moving_i & moving_j)
            if len(differ):
                meet = differ[_meet_after_stop(paths, radius, si[differ], sj[differ], s)]
                trouble[si[meet]] = trouble[sj[meet]] = True
        if trouble.any():
            # Each body in trouble, and everything its cluster of pairs joins it to, is
            # the general solver's; one round answers the rest.
            split = _solver._reach(np.flatnonzero(trouble), ci, cj, np.zeros(n, bool))
            if split.all():
                return Declined(pairs, table_pairs)
            stops &= ~split
            table_taken = [taken & ~split[o.i] for o, taken in zip(struck, table_taken)]
        if len(si):
            if split is not None:
                sphere_taken &= ~split[si]
            if sphere_taken.any():
                taken = sphere_taken
                hits.append(_solver._sphere_hits(paths, radius, si[taken], sj[taken], toi[taken]))
        for o, taken in zip(struck, table_taken):
            if taken.any():
                # In time order (a stable sort: ties as found): a table's hits are made row
                # by row, and where they are the frame's only ones (bodies that meet the
                # level alone) the pass's hits need no sort of their many columns after.
                rows = np.flatnonzero(taken)
                rows = rows[np.argsort(o.t[rows], kind="stable")]
                extra = None if o.extra is None else o.extra[rows]
                found, _none = o.table.hits(
                    paths, o.i[rows], o.k[rows], o.t[rows], extra, response=False
                )
                hits.append(found)
        # (Every body with a contact moves: the one of a sphere pair that moves, or the
        # body of a table pair. So a frame with a contact stops some body.)
        stopped = np.flatnonzero(stops)
        if len(stopped):
            t = first[stopped]
            at_t = paths.at(stopped, t)
            t_stop[stopped] = t
            paths.restart(stopped, t, at_t, at_t + 0.0)

    if split is not None:
        if pair_sensor is not None:
            pair_sensor &= ~split[ci]
        sensor_rows = [(table, *_outside(split, qi, qk)) for table, qi, qk in sensor_rows]
    sensor_hits = empty_hits()
    sensor_rows = [rows for rows in sensor_rows if len(rows[1])]
    if pair_sensor is None:
        if sensor_rows:
            sensor_hits = _solver._sensor_hits(
                paths, radius, _NO_ROWS, _NO_ROWS, everyone, sensor_rows
            )
    elif pair_sensor.any() or sensor_rows:
        sensor_hits = _solver._sensor_hits(
            paths, radius, ci[pair_sensor], cj[pair_sensor], ~sensor, sensor_rows
        )
    end = paths.xe.copy()
    # (Where nothing stopped, every body ends at p1, finite: none moved.)
    result = _solver.PassResult(
        end=end,
        t_stop=t_stop,
        moved=_row_any(end != p1) if len(stopped) else np.zeros(n, bool),
        # (Sorted once: a stable sort of sorted parts and the rest is that of them all.)
        hits=concat_hits([*hits, sensor_hits]),
        candidates=candidates,
        rounds=int(len(stopped) > 0),
        capped=False,
        one_round=True,
    )
    if split is None:
        return result
    rows = np.flatnonzero(split)
    number = np.cumsum(split) - 1
    inside = split[ci]
    table_known = []
    for qi, qk in table_pairs:
        mine = split[qi]
        table_known.append((number[qi[mine]], qk[mine]))
    return Split(result, rows, Declined((number[ci[inside]], number[cj[inside]]), table_known))


def _outside(split: Bool, i: Int, k: Int) -> tuple[Int, Int]:
    """The pairs (body ``i``, row ``k``) whose body is not in ``split``."""
    keep = ~split[i]
    return i[keep], k[keep]


def _pair_toi(p0: Float, p1: Float, radius: Float, i: Int, j: Int) -> Float:
    """(k,) times of impact of pairs (i, j) on their straight paths; inf where none."""
    if len(i) == 0:
        return np.zeros(0)
    s, shallow = _solver.straight_pair_toi(
        p0[i], p1[i], radius[i], p0[j], p1[j], radius[j], finite_only=True
    )
    return np.where(shallow, np.inf, s)


def _meet_after_stop(paths: Paths, radius: Float, i: Int, j: Int, s: Float) -> Bool:
    """(k,) whether each pair (i, j) of moving bodies that stop at different times ``s``
    could touch once the first has stopped: the one stopped, the other on its straight path from
    then to the end of the frame (a superset of the rest of its path: it may stop later).
    Before the first stop both are on their straight paths, where their time of impact is
    no earlier than either stop."""
    early = s[i] < s[j]
    a, b = np.where(early, i, j), np.where(early, j, i)
    t = s[a]
    at_a = paths.at(a, t)
    s_b, shallow = _solver.straight_pair_toi(
        at_a, at_a, radius[a], paths.at(b, t), paths.xe[b], radius[b], finite_only=True
    )
    return np.isfinite(s_b) & ~shallow


class Backoff:
    """When a caller running pass after pass should let :func:`solve` try one round first.

    Where most frames are isolated contacts (a game of tens of colliders), one round takes
    nearly every pass. Where few are (thousands of colliders, a pile), each try that
    declines is work thrown away before the general solver starts again. So: try every
    pass while it takes them; after one it declines, skip the next pass, and after each
    further decline in a row skip twice as many, up to ``longest``.
    """

    def __init__(self, longest: int = 32) -> None:
        self.longest = longest
        self._skip = 0
        self._wait = 0

    def ready(self) -> bool:
        """Whether to try one round this pass (call once a pass)."""
        if self._wait:
            self._wait -= 1
            return False
        return True

    def record(self, taken: bool) -> None:
        """What the try made of this pass: taken, or declined."""
        self._skip = 0 if taken else min(max(1, 2 * self._skip), self.longest)
        self._wait = self._skip
