"""Obstacle tables: the kinds of ``b`` that bodies run into but never move.

Each kind is one table class with the same four methods, which the solver calls without
naming a shape (as Box2D's ``s_registers`` or Jolt's ``CollisionDispatch``):

- ``candidates(p0, p1, reach, from_mask, moving, split)``: the (body, row) pairs of the
  broad phase, collide masks and motion already applied (``split``: straight sweeps that
  may be boxed in pieces);
- ``toi(paths, i, k)``: times of impact on the bodies' current segments (``paths`` also
  knows each body's radius, which may change within the frame), and (p, d) floats per pair
  that the table wants back with its hits;
- ``hits(paths, i, k, t, extra, response=True)``: the :class:`Hits` rows of accepted
  contacts, and their :class:`Response` (the normal to slide along at the end of the pass,
  and how far the obstacle carries the body's point of contact by then: 0 for what does
  not move), or None with ``response`` False (a caller that only rewinds);
- ``sensor_hits(paths, segs, i, k)``: overlap intervals over the bodies' final paths,
  ``segs`` (:class:`~panda3d_ccd._paths.Segments`), made once a pass.

A table also carries ``kind``, ``mask`` (m,) into masks, ``moving`` (m,), ``sensor`` (m,)
(rows that only report) and ``any_sensor`` (whether any row does), ``shift`` (m,) (how far
any point of a row moves over the pass) and ``group`` (m,) or None (never tested against
the bodies of its own rigid group).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._arrays import largest_abs
from ._arrays import length as _length
from ._paths import (
    Bool,
    Float,
    Hits,
    Int,
    Paths,
    Segments,
    earliest_of,
    in_step,
    pick,
    slop_of,
    sub_steps,
)
from ._tolerance import TURN_TOLERANCE
from .broadphase import _sphere_plane_pairs
from .sweep.sphere_plane import _sphere_plane_toi, sphere_plane_overlap

#: Kinds of obstacle (``Hits.kind``); 0 is a body sphere.
PLANE = 1


class Response(NamedTuple):
    """How accepted contacts change their bodies' paths (one row each)."""

    push: Float  # (k, 3) unit normal of the surface at the end of the pass
    carry: Float  # (k, 3) where the surface takes the body's contact point by then
    #: (k,) what was touched stays where it is (a fixed surface: no sphere, no carry);
    #: None: decided from ``carry``
    fixed: Bool | None = None
    #: (k,) the row of the pass's ``Frames`` of a turning piece that carries the body on
    #: (the body then turns with it: ``Paths.ride``), -1 for none; None: none at all
    frame: Int | None = None
    #: (k,) the row of the pass's ``Frames`` of the moving piece touched, -1 for anything
    #: else (the faces of one piece move as one: a slide meeting several of them is
    #: deflected by all of them on its motion relative to the piece, as by a fixed
    #: surface's); None: none at all
    source: Int | None = None


class Planes:
    """Solid half-spaces ``normal . x + offset = 0`` that translate along their normals:
    offsets ``off0`` at the start of the frame and ``off1`` at the end."""

    kind = PLANE
    #: Every pair's time of impact is exact (see ``Pieces.earliest_only``).
    earliest_only = False

    def __init__(
        self,
        normal: Float,
        off0: Float,
        off1: Float,
        mask: NDArray[np.int64],
        group: NDArray[np.int64] | None = None,
    ) -> None:
        self.normal, self.off0, self.off1, self.mask, self.group = normal, off0, off1, mask, group
        # Lengths of the normals in float64: unit normals from elsewhere are often 1 ulp
        # off, and the broad phase and the exact test take them scaled to length 1, as the
        # public functions do.
        self.length = _length(normal)
        self.moving = off0 != off1
        self.sensor = np.zeros(len(mask), bool)
        self.any_sensor = False  # (planes are solid)
        self.shift = np.abs(off1 - off0) / self.length

    # Once per table: a table that lives as long as its planes read the same (the
    # component's walls) is asked for candidates every pass.
    @cached_property
    def _unit(self) -> tuple[Float, Float, Float, Float]:
        """Normals scaled to length 1, both offsets with them, and the larger of each
        plane's two in magnitude (the broad phase scales its pad by it)."""
        length = self.length
        off0, off1 = self.off0 / length, self.off1 / length
        return self.normal / length[:, None], off0, off1, np.maximum(np.abs(off0), np.abs(off1))

    def candidates(
        self, p0: Float, p1: Float, reach: Float, from_mask: Int, moving: Bool, split: Any = None
    ) -> tuple[Int, Int]:
        nrm, off0, off1, scale = self._unit
        return _sphere_plane_pairs(
            p0, p1, reach, nrm, off0, off1, from_mask, self.mask, moving, self.moving, scale
        )

    def toi(self, paths: Paths, i: Int, k: Int, every: bool = False) -> tuple[Float, None]:
        """Times of impact of spheres with (translating) planes on the current segments,
        every pair's exact (``every``, which a table's ``toi`` takes, changes nothing here)."""
        if len(i) == 0:  # most scenes' rounds: no plane pair to retest
            return np.zeros(0), None
        off0, off1 = self.off0, self.off1
        start = paths.ts[i]
        n = self.normal[k]
        off_start = _plane_offset_at(off0[k], off1[k], start)
        # A translating plane is a fixed plane in the frame of the plane: move the sphere's
        # end by the plane's displacement along its normal instead.
        c0 = paths.at(i, start)
        end = paths.xe[i] + n * (off1[k] - off_start)[:, None]
        radius = paths.radius_at(i, start)
        if paths.grow is not None:  # so does a growing radius
            end -= n * paths.growth_left(i, start)[:, None]
        s, shallow = self._toi(c0, end, radius, k, off_start)
        t = np.where(shallow, np.inf, start + s * (1.0 - start))
        riders = np.flatnonzero(paths.riding(i)) if paths.ride is not None else ()
        if len(riders):  # (a pass without riders: not an operation more)
            t[riders] = self._ridden_toi(paths, i[riders], k[riders], start[riders])
        return t, None

    def _ridden_toi(self, paths: Paths, i: Int, k: Int, start: Float) -> Float:
        """:meth:`toi` of riders (``Paths.ride``): on the chords of sub-steps of their
        paths, each inflated by how far the path strays from it across its turn's axis."""
        n = self.normal[k]
        along = np.einsum("ij,ij->i", paths.stray_axis(i), n) / self.length[k]
        across = np.sqrt(np.maximum(1.0 - along * along, 0.0))
        whole = paths.stray(i, start, np.ones(len(i))) * across
        allowed = np.maximum(
            TURN_TOLERANCE * paths.radius_at(i, start), slop_of(largest_abs(paths.xs[i]))
        )
        pair, ta, tb = sub_steps(start, whole, allowed)
        ip, kp, n = i[pair], k[pair], n[pair]
        off_a = _plane_offset_at(self.off0[kp], self.off1[kp], ta)
        off_b = _plane_offset_at(self.off0[kp], self.off1[kp], tb)
        radius = paths.radius_at(ip, ta)
        c0 = paths.at(ip, ta)
        c1 = paths.at(ip, tb) + n * (off_b - off_a)[:, None]
        c1 -= n * (paths.radius_at(ip, tb) - radius)[:, None]
        dev = paths.stray(ip, ta, tb) * across[pair]
        s, shallow = self._toi(c0, c1, radius + dev, kp, off_a)
        return earliest_of(pair, in_step(s, ta, tb, shallow), len(i))

    def first_toi(self, paths: Paths, i: Int, k: Int) -> tuple[Float, None]:
        """:meth:`toi` of bodies i on their whole straight paths (no segment begun yet),
        of constant radius, against planes ``k`` that do not move: the same numbers."""
        s, shallow = self._toi(paths.xs[i], paths.xe[i], paths.radius[i], k, self.off0[k])
        return np.where(shallow, np.inf, s), None

    def _toi(self, c0: Float, end: Float, radius: Float, k: Int, off: Float) -> tuple[Float, Bool]:
        """The kernel's times of impact from c0 to end (in the planes' frame), and which are
        too shallow to count."""
        n = self.normal[k]
        length = self.length[k]  # the exact test takes the normal at length 1 (see __init__)
        # (The kernel's rounding floor and the slop scale with the same coordinates.)
        scale = largest_abs(c0, end)
        s = _sphere_plane_toi(c0, end, radius, n / length[:, None], off / length, scale)
        deepest = np.minimum(
            np.einsum("ij,ij->i", n, c0) + off, np.einsum("ij,ij->i", n, end) + off
        )
        return s, radius - deepest <= slop_of(scale)

    def hits(
        self, paths: Paths, a: Int, k: Int, t: Float, extra: Any = None, response: bool = True
    ) -> tuple[Hits, Response | None]:
        off0, off1 = self.off0, self.off1
        pa = paths.at(a, t)
        nrm = self.normal[k]
        dist = np.einsum("ij,ij->i", nrm, pa) + _plane_offset_at(off0[k], off1[k], t)
        point = pa - nrm * dist[:, None]
        speed = -(np.einsum("ij,ij->i", paths.velocity(a), nrm) + off1[k] - off0[k])
        if paths.grow is not None:
            speed += paths.growth_rate(a, t)
        hits = Hits.of(a, k, PLANE, t, point, nrm.copy(), np.maximum(speed, 0.0), pa)
        if not response:
            return hits, None
        # A translating plane takes a body touching it along: its offset still to change.
        left = (off1[k] - _plane_offset_at(off0[k], off1[k], t)) / self.length[k]
        return hits, Response(hits.normal, -hits.normal * left[:, None])

    def sensor_hits(self, paths: Paths, segs: Segments, i: Int, k: Int) -> Hits:
        """Overlap intervals of bodies i with planes k over every segment of the bodies'
        paths (a sensor carried by a body goes where its carrier goes)."""
        item, seg = segs.of(i)
        lo, hi = segs.t0[seg], segs.t1[seg]
        live = hi > lo  # (a segment of no time: stopped exactly at the end)
        item, seg, lo, hi = item[live], seg[live], lo[live], hi[live]
        ii, kk = i[item], k[item]
        off0, off1 = self.off0[kk], self.off1[kk]
        nrm = self.normal[kk]
        # In the plane's frame at the start: a plane that moves moves the body instead,
        # and a radius that grows brings its centre nearer.
        c0 = segs.x0[seg] + nrm * (_plane_offset_at(off0, off1, lo) - off0)[:, None]
        c1 = segs.x1[seg] + nrm * (_plane_offset_at(off0, off1, hi) - off0)[:, None]
        radius = paths.radius_at(ii, lo)
        if paths.grow is not None:
            c1 -= nrm * (paths.radius_at(ii, hi) - radius)[:, None]
        enter, leave = sphere_plane_overlap(c0, c1, radius, nrm, off0)
        hit = np.isfinite(enter)
        item, seg, lo, hi, ii, kk = item[hit], seg[hit], lo[hit], hi[hit], ii[hit], kk[hit]
        t_in = lo + enter[hit] * (hi - lo)
        t_out = lo + leave[hit] * (hi - lo)
        # (Both in item order: row by row, one pair's entry and exit, and its normal.)
        first, last = pick(item, t_in), pick(item, -t_out)
        a, b, nrm = ii[first], kk[first], self.normal[kk[first]]
        t_enter = t_in[first]
        t_exit = np.where(t_out[last] >= 1.0, np.nan, t_out[last])

        def geometry(rows: Int, t: Float) -> tuple[Float, Float]:
            pa, row = segs.at(seg[rows], t), kk[rows]
            dist = np.einsum("ij,ij->i", nrm, pa) + _plane_offset_at(
                self.off0[row], self.off1[row], t
            )
            return pa, pa - nrm * dist[:, None]

        pa, point = geometry(first, t_enter)
        xa, xpoint = geometry(last, np.where(np.isnan(t_exit), 1.0, t_exit))
        v = segs.velocity(seg[first])
        speed = -(np.einsum("ij,ij->i", v, nrm) + self.off1[b] - self.off0[b])
        if paths.grow is not None:
            speed += paths.growth_rate(a, t_enter)
        speed = np.maximum(speed, 0.0)
        exit = (t_exit, xpoint, nrm.copy(), xa, None)
        return Hits.of(a, b, PLANE, t_enter, point, nrm.copy(), speed, pa, sensor=True, exit=exit)


def _plane_offset_at(off0: Float, off1: Float, t: Float) -> Float:
    return off0 + t * (off1 - off0)
