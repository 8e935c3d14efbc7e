"""Scene queries: rays and sphere casts against what the last pass left. Pure numpy.

A query is a cast: a point (a ray, radius 0) or a sphere moving from ``p0`` to ``p1``
against a world that stands still (spheres, planes and level pieces, each where the last
pass left it). It hits what the bodies' kernels say a body would first touch: the first
time the cast touches a surface while approaching it (a one-sided polygon from its front
only; a cast starting inside a solid gives 0 if it moves deeper, nothing if it moves out).

Each kind of target is one table: spheres (:class:`SphereRows`), planes
(:class:`PlaneRows`) and level pieces (:class:`PieceRows`, over the solver's own
:class:`~._pieces.Pieces`, whose kind table gives the kernels). Static rows are found
through their index; kinematic pieces are cast against in their own frame, at the
transform the last pass read.

This module never imports panda3d.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _frames
from ._arrays import largest_abs, length
from ._index import StaticIndex, _morton
from ._pieces import Pieces
from ._raygrid import RayGrid
from ._tolerance import SEAM_REL
from .sweep._result import Sweep
from .sweep.sphere_plane import _sphere_plane_toi
from .sweep.sphere_sphere import _sphere_sphere_toi
from .sweep.sphere_triangle import _point_contacts, _point_times

__all__ = ["Found", "SphereRows", "PlaneRows", "PieceRows", "World", "closest", "firsts"]

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Up to this many spheres are cast against directly; more get an index (built on the
#: first query after a pass).
_FEW_SPHERES = 64
#: :meth:`World.first` casts fewer than this in one go, more in blocks of _BLOCK nearby
#: starts, each along its length in pieces from _FIRST_PIECE typical piece sizes long.
_FEW_CASTS = 256
_BLOCK = 2048
_FIRST_PIECE = 16.0


class Found(NamedTuple):
    """Hits of casts, one row per (cast, target row) that touches; unsorted."""

    query: Int  # (h,) which cast
    t: Float  # (h,) fraction of the cast, in [0, 1]
    point: Float  # (h, 3) world point on the target's surface
    normal: Float  # (h, 3) world unit normal, out of the surface toward the cast
    node: Int  # (h,) the target's node (an index the caller gave)
    solid: Int  # (h,) which solid of the node (-1: the node is one solid)
    part: Int  # (h,) which triangle of the solid's fan or face of its box (0 otherwise)
    feature: NDArray[np.int8]  # (h,) face, edge or vertex of a piece (-1 otherwise)
    sensor: Bool  # (h,) the target only reports (intangible)


def _empty() -> Found:
    none = np.zeros(0, np.int64)
    return Found(none, np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)), none, none, none,
                 np.zeros(0, np.int8), np.zeros(0, bool))  # fmt: skip


class SphereRows(NamedTuple):
    """Spheres: (m, 3) centres, (m,) radii, into masks, sensor flags and node indices, and
    an index of their boxes if the caller keeps one (else one is made when needed)."""

    center: Float
    radius: Float
    mask: Int
    sensor: Bool
    node: Int
    index: StaticIndex | None = None


class PlaneRows(NamedTuple):
    """Planes ``normal . x + offset = 0``, solid behind: (m, 3) unit normals, (m,) offsets,
    into masks, sensor flags and node indices."""

    normal: Float
    offset: Float
    mask: Int
    sensor: Bool
    node: Int


class PieceRows(NamedTuple):
    """A table of level pieces (static: world rows; kinematic: rows in their frames, cast
    against at the frames' end transforms) and (m,) node, solid and part of each row."""

    table: Pieces
    node: Int
    solid: Int
    part: Int


class World:
    """What the queries see: tables of spheres, planes and pieces, standing still."""

    def __init__(
        self, spheres: list[SphereRows], planes: PlaneRows | None, pieces: list[PieceRows]
    ) -> None:
        self.spheres = [s for s in spheres if len(s.radius)]
        self.planes = planes if planes is not None and len(planes.offset) else None
        self.pieces = [p for p in pieces if len(p.table)]
        #: Per piece table, (m, 3) node, solid and part of each row: one gather for all.
        self._piece_meta = [np.stack([p.node, p.solid, p.part], axis=1) for p in self.pieces]
        self._sphere_index: dict[int, StaticIndex] = {}
        self._size: float | None = None

    def cast(
        self,
        p0: Float,
        p1: Float,
        radius: Float,
        mask: Int,
        sensors: bool,
        skip: frozenset[int] = frozenset(),
        exact: bool = False,
    ) -> Found:
        """Every hit of casts p0 -> p1 (k, 3) with radii (k,) and from masks (k,) (but on
        the piece tables numbered in ``skip``). With ``exact``, a point cast (radius 0)
        meets only what it truly crosses: the sweep kernel's, without the seam slop of the
        point kernel (see :meth:`_pieces`)."""
        found = [self._spheres(j, rows, p0, p1, radius, mask, sensors)
                 for j, rows in enumerate(self.spheres)]  # fmt: skip
        if self.planes is not None:
            found.append(self._planes(self.planes, p0, p1, radius, mask, sensors))
        found += [self._pieces(j, rows, p0, p1, radius, mask, sensors, exact)
                  for j, rows in enumerate(self.pieces) if j not in skip]  # fmt: skip
        return _concat([f for f in found if len(f.t)])

    def first(
        self, p0: Float, p1: Float, radius: Float, mask: Int, sensors: bool, dead: Bool
    ) -> Found:
        """Each cast's first hit (of a node not ``dead`` (nodes,)): :meth:`cast` and
        :func:`closest`, at a fraction of the work for many casts.

        Many rays walk the grid of each static mesh (:class:`~._raygrid.RayGrid`) and
        are cast against everything else in blocks (:meth:`_blocks`); the first of
        their hits wins."""
        k = len(p0)
        if k < _FEW_CASTS:
            return self._firsts(self.cast(p0, p1, radius, mask, sensors), k, dead)
        grids: dict[int, tuple[RayGrid, Float]] = {}
        if not radius.any():
            for j, rows in enumerate(self.pieces):
                grid = rows.table.ray_grid()
                if grid is not None:
                    grids[j] = grid
        if not grids:
            return self._blocks(p0, p1, radius, mask, sensors, dead)
        scale = largest_abs(p0, p1)
        walk = np.ones(k, bool)
        for grid, _columns in grids.values():
            walk &= grid.walkable(scale)
        if not walk.any():
            return self._blocks(p0, p1, radius, mask, sensors, dead)
        out: list[Found] = []
        # In the order of their starts along a Morton curve: neighbours walk the same
        # cells one after the other, while they are in the cache.
        rows = np.argsort(_morton_order(p0))
        if not walk.all():  # far out: cast the other way against everything
            rest = np.flatnonzero(~walk)
            found = self._blocks(p0[rest], p1[rest], radius[rest], mask[rest], sensors, dead)
            out.append(found._replace(query=rest[found.query]))
            rows = rows[walk[rows]]
        a, b, m, r, scale = p0[rows], p1[rows], mask[rows], radius[rows], scale[rows]
        skip = frozenset(grids)
        parts = [self._grid_first(j, grid, columns, a, b, m, scale, sensors, dead)
                 for j, (grid, columns) in grids.items()]  # fmt: skip
        if self.spheres or self.planes is not None or len(skip) < len(self.pieces):
            parts.append(self._blocks(a, b, r, m, sensors, dead, skip))
        out += [f._replace(query=rows[f.query]) for f in parts]
        out = [f for f in out if len(f.t)]
        if len(out) == 1:  # one first hit a cast already
            return out[0]
        found = _concat(out)
        best = closest(found, k)
        return Found(*(col[best[best >= 0]] for col in found))

    def _blocks(
        self,
        p0: Float,
        p1: Float,
        radius: Float,
        mask: Int,
        sensors: bool,
        dead: Bool,
        skip: frozenset[int] = frozenset(),
    ) -> Found:
        """:meth:`first` of many casts against all but the piece tables in ``skip``.

        The casts are taken in blocks of nearby starts (their descents of an index then
        touch the same nodes, in the cache), and each along its length in pieces that
        double from ``_FIRST_PIECE`` typical piece sizes: a cast stops at the first piece
        where it hits something, so a long ray that hits at once never descends the
        index along the rest of its length."""
        k = len(p0)
        order = np.argsort(_morton_order(p0), kind="stable")
        length_ = length(p1 - p0)
        piece = _FIRST_PIECE * self._typical_size()
        out: list[Found] = []
        for block in range(0, k, _BLOCK):
            rows = order[block : block + _BLOCK]
            lo = np.zeros(len(rows))
            reach = piece
            while len(rows):
                with np.errstate(divide="ignore", invalid="ignore"):
                    hi = np.minimum(lo + reach / length_[rows], 1.0)
                hi = np.where(np.isfinite(hi), hi, 1.0)
                d = p1[rows] - p0[rows]
                a = p0[rows] + lo[:, None] * d
                b = np.where((hi >= 1.0)[:, None], p1[rows], p0[rows] + hi[:, None] * d)
                cast = self.cast(a, b, radius[rows], mask[rows], sensors, skip)
                found = self._firsts(cast, len(rows), dead)
                done = hi >= 1.0
                if len(found.t):
                    j = found.query
                    done[j] = True
                    out.append(found._replace(query=rows[j], t=lo[j] + found.t * (hi[j] - lo[j])))
                rows, lo = rows[~done], hi[~done]
                reach *= 2.0
        return _concat(out)

    def _grid_first(
        self,
        j: int,
        grid: RayGrid,
        columns: Float,
        p0: Float,
        p1: Float,
        mask: Int,
        scale: Float,
        sensors: bool,
        dead: Bool,
    ) -> Found:
        """Each ray's first hit in piece table ``j`` (static triangles), walking its grid
        (``scale`` (k,) the rays' largest coordinate magnitudes):
        hits the point kernel finds, of a triangle the ray's mask and ``sensors`` allow,
        of a node not ``dead``, and (as a single cast's) whose box the ray passes within
        its seam slop of (:meth:`~._index.StaticIndex.segment_pairs`)."""
        rows = self.pieces[j]
        table = rows.table
        meta = self._piece_meta[j]
        node = np.ascontiguousarray(meta[:, 0])
        origin = np.ascontiguousarray(p0.T)
        direction = np.ascontiguousarray((p1 - p0).T)
        # Triangles no ray may hit; the masks per pair only where they differ by ray.
        blocked = dead[node]
        if not sensors:
            blocked = blocked | table.sensor
        per_pair = not (mask == mask[0]).all()
        if not per_pair:
            blocked = blocked | ((table.mask & mask[0]) == 0)
        if not blocked.any():
            blocked = None
        size = max(len(table), 1)
        passed_over: Int | None = None  # (ray * size + triangle) of hits not to count

        two_sided = bool(table.geometry[3].any())

        def hits(q: Int, i: Int) -> tuple[Int, Float]:
            at, t = _point_times(origin, direction, columns, q, i, two_sided)
            keep = None
            if blocked is not None:
                keep = ~np.take(blocked, np.take(i, at))
            if per_pair:
                allow = (np.take(mask, np.take(q, at)) & np.take(table.mask, np.take(i, at))) != 0
                keep = allow if keep is None else keep & allow
            if passed_over is not None:
                key = np.take(q, at) * size + np.take(i, at)
                out = ~np.isin(key, passed_over)
                keep = out if keep is None else keep & out
            return (at, t) if keep is None else (at[keep], t[keep])

        t, item = grid.first(p0, p1, hits, node)
        # A single cast finds a triangle only if it passes within its seam slop of its box
        # (segment_pairs): the first hit of a ray that does not is passed over, and the
        # ray walked again (rare: a hit lies in its triangle's box, or within the slop).
        near = table.index()._segment_test(p0, p1, SEAM_REL * scale, origin)
        while True:
            q = np.flatnonzero(item >= 0)
            far = q[~near(q, item[q])]
            if not len(far):
                break
            key = far * size + item[far]
            passed_over = key if passed_over is None else np.concatenate([passed_over, key])
            t[far], item[far] = grid.first(
                p0[far], p1[far], lambda q, i, far=far: hits(far[q], i), node
            )
        q = np.flatnonzero(item >= 0)
        k = item[q]
        found = _point_contacts(origin, direction, columns, q, k, t[q])
        node, solid, part = meta[k].T
        return Found(q, found.t, found.point, found.normal, node, solid, part, found.feature,
                     table.sensor[k])  # fmt: skip

    def _firsts(self, found: Found, k: int, dead: Bool) -> Found:
        if len(found.t) == 0:
            return found
        live = ~dead[found.node]
        if not live.all():
            found = Found(*(col[live] for col in found))
        best = closest(found, k)
        return Found(*(col[best[best >= 0]] for col in found))

    def _typical_size(self) -> float:
        """A typical size of a piece (the median box diagonal of the largest table), for
        the length of :meth:`first`'s pieces; 1 where there are none."""
        if self._size is None:
            sizes = [p.table.index().item_size for p in self.pieces
                     if p.table.spec.bounds is not None]  # fmt: skip
            self._size = max(sizes) if sizes else 1.0
        return self._size

    # ------------------------------------------------------------------ per kind
    def _spheres(
        self, j: int, rows: SphereRows, p0: Float, p1: Float, r: Float, mask: Int, sensors: bool
    ) -> Found:
        m = len(rows.radius)
        if m <= _FEW_SPHERES or len(p0) * m <= 4096:
            q, k = np.divmod(np.arange(len(p0) * m), m)
        else:
            index = rows.index if rows.index is not None else self._sphere_index.get(j)
            if index is None:
                index = StaticIndex(rows.center - rows.radius[:, None],
                                    rows.center + rows.radius[:, None])  # fmt: skip
                self._sphere_index[j] = index
            if len(p0) == 1:
                k = index._segment_one(p0[0], p1[0], float(r[0]), int(mask[0]))
                q = np.zeros(len(k), np.int64)
            else:
                q, k = index._segment_pairs(p0, p1, r, mask)
        keep = _allowed(mask[q], rows.mask[k], rows.sensor[k], sensors)
        q, k = q[keep], k[keep]
        c = rows.center[k]
        t = _sphere_sphere_toi(p0[q], p1[q], r[q], c, c, rows.radius[k])
        hit = np.isfinite(t)
        q, k, t, c = q[hit], k[hit], t[hit], c[hit]
        at = p0[q] + t[:, None] * (p1[q] - p0[q])
        normal = _unit(at - c, p0[q] - p1[q])
        point = c + normal * rows.radius[k][:, None]
        return _found(q, t, point, normal, rows.node[k], rows.sensor[k])

    def _planes(
        self, rows: PlaneRows, p0: Float, p1: Float, r: Float, mask: Int, sensors: bool
    ) -> Found:
        m = len(rows.offset)
        q, k = np.divmod(np.arange(len(p0) * m), m)
        keep = _allowed(mask[q], rows.mask[k], rows.sensor[k], sensors)
        q, k = q[keep], k[keep]
        t = _sphere_plane_toi(p0[q], p1[q], r[q], rows.normal[k], rows.offset[k])
        hit = np.isfinite(t)
        q, k, t = q[hit], k[hit], t[hit]
        normal = rows.normal[k]
        at = p0[q] + t[:, None] * (p1[q] - p0[q])
        point = at - normal * (np.einsum("ij,ij->i", normal, at) + rows.offset[k])[:, None]
        return _found(q, t, point, normal, rows.node[k], rows.sensor[k])

    def _pieces(
        self,
        j: int,
        rows: PieceRows,
        p0: Float,
        p1: Float,
        r: Float,
        mask: Int,
        sensors: bool,
        exact: bool = False,
    ) -> Found:
        table = rows.table
        spec = table.spec
        zero = r == 0
        if not exact and spec.point is not None and zero.any() and not zero.all():
            # A batch mixing rays and spheres: the rays with the point kernel (its seam
            # slop keeps one aimed at a seam from falling through), the rest as spheres.
            parts = []
            for cast in (np.flatnonzero(zero), np.flatnonzero(~zero)):
                found = self._pieces(j, rows, p0[cast], p1[cast], r[cast], mask[cast], sensors)
                parts.append(found._replace(query=cast[found.query]))
            return _concat(parts)
        point = not exact and spec.point is not None and not r.any()
        # A point cast (a ray) is asked of the index with the point kernel's slop around
        # it (SEAM_REL): a ray threading the seam between two polygons meets both.
        if spec.bounds is None:  # unbounded rows (the solid outside an inverse sphere)
            m = len(table)
            q, k = np.divmod(np.arange(len(p0) * m), m)
            keep = (mask[q] & table.mask[k]) != 0
            q, k = q[keep], k[keep]
        elif len(p0) == 1:  # a lone cast: its own descent, its slop in plain Python
            if point:
                reach = SEAM_REL * max(map(abs, p0[0].tolist() + p1[0].tolist()))
            else:
                reach = float(r[0])
            k = table.index()._segment_one(p0[0], p1[0], reach, int(mask[0]))
            q = np.zeros(len(k), np.int64)
        else:
            if point:
                q, k = table.index()._segment_pairs(p0, p1, SEAM_REL * largest_abs(p0, p1), mask)
            else:
                # A static table's index is asked again and again: worth its reach grid.
                q, k = table.index()._segment_pairs(p0, p1, r, mask, grid=table.extendable)
        if not sensors:
            keep = ~table.sensor[k]
            q, k = q[keep], k[keep]
        if len(q) == 0:
            return _empty()
        c0, c1 = p0[q], p1[q]
        frames = table.frames if table.frame is not None else None
        if frames is not None:
            f = table.frame[k]
            rot, pos = frames.rot1[f], frames.pos1[f]
            c0, c1 = _frames.unapply(rot, c0 - pos), _frames.unapply(rot, c1 - pos)
        data = table.point_data()
        if point and data is not None:
            hit, found = spec.point(c0, c1, data[k])
            q, k = q[hit], k[hit]
        else:
            found = spec.sweep(c0, c1, r[q], *table.rows(k))
            hit = np.flatnonzero(np.isfinite(found.t))
            if len(hit) < len(q):
                q, k = q[hit], k[hit]
                found = Sweep(*(col[hit] for col in found))
        point, normal = found.point, found.normal
        if frames is not None:
            f = table.frame[k]
            point = _frames.apply(frames.rot1[f], point) + frames.pos1[f]
            normal = _frames.apply(frames.rot1[f], normal)
        node, solid, part = self._piece_meta[j][k].T
        return Found(q, found.t, point, normal, node, solid, part, found.feature,
                     table.sensor[k])  # fmt: skip


def _concat(parts: list[Found]) -> Found:
    if not parts:
        return _empty()
    if len(parts) == 1:
        return parts[0]
    return Found(*(np.concatenate(cols) for cols in zip(*parts)))


def _morton_order(p: Float) -> NDArray[np.uint64]:
    """(k,) Morton codes of points p (k, 3): casts in this order start near each other."""
    cols = np.ascontiguousarray(p.T)
    return _morton(cols, cols)


def _allowed(from_mask: Int, into_mask: Int, sensor: Bool, sensors: bool) -> Bool:
    keep = (from_mask & into_mask) != 0
    return keep if sensors else keep & ~sensor


def _unit(v: Float, fallback: Float) -> Float:
    size = length(v)
    ok = size > 0
    out = np.where(ok[:, None], v, fallback)
    size = np.where(ok, size, length(out))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = out / size[:, None]
    return np.where(np.isfinite(out), out, [0.0, 0.0, 1.0])


def _found(q: Int, t: Float, point: Float, normal: Float, node: Int, sensor: Bool) -> Found:
    h = len(q)
    return Found(q, t, point, normal, node, np.full(h, -1, np.int64), np.zeros(h, np.int64),
                 np.full(h, -1, np.int8), sensor)  # fmt: skip


def closest(found: Found, k: int) -> Int:
    """(k,) row of ``found`` of each cast's first hit (-1 where none); ties go to the lower
    node, so the answer does not depend on the order of the tables."""
    best = np.full(k, -1, np.int64)
    if len(found.t) == 0:
        return best
    order = np.lexsort((found.node, found.t, found.query))
    lead = np.ones(len(order), bool)
    lead[1:] = found.query[order][1:] != found.query[order][:-1]
    best[found.query[order[lead]]] = order[lead]
    return best


def firsts(found: Found) -> Int:
    """Rows of ``found``: each cast's first hit of each (node, solid), sorted by cast then
    t (a polygon fanned into triangles, hit on a diagonal, is one hit)."""
    if len(found.t) == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((found.t, found.solid, found.node, found.query))
    q, n, s = found.query[order], found.node[order], found.solid[order]
    lead = np.ones(len(order), bool)
    lead[1:] = (q[1:] != q[:-1]) | (n[1:] != n[:-1]) | (s[1:] != s[:-1])
    rows = order[lead]
    return rows[np.lexsort((found.node[rows], found.t[rows], found.query[rows]))]
