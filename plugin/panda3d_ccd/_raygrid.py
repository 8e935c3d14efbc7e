"""A uniform grid of a static mesh's triangles, for casting many rays at once. Pure numpy.

The static index (:class:`~._index.StaticIndex`) answers a batch of rays by descending its
tree level by level: some 75 (ray, node) box tests a ray on a level of 33,000 triangles,
each a dozen numpy element operations. A grid answers the same batch by walking each ray
through the cells it crosses (a 3-d DDA, vectorised: the cells where it crosses each
axis's cell walls) and testing the triangles listed in them, a window of cells at a time
from the ray's start, so that a ray stops after the window where it first hits; a ray
crosses a few cells, most of them empty, before it hits.

A triangle is listed in every cell touched by what the point kernel accepts as a hit: the
triangle grown by the seam slop outside each edge
(:func:`~.sweep.sphere_triangle._point_data`), a similar triangle about the incentre
(tested against each cell of its box by separating axes, the cells grown by a rounding
pad). So every hit the kernel can report at a point of a ray lies in a cell the ray
crosses, where the triangle is listed. A sliver's grown triangle can reach far along its
length; its box is cut at ``_REACH`` seam slops of the whole mesh around the triangle's
own box (a single cast's index reaches no farther than its ray's slop either).

This module never imports panda3d.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ._arrays import ranges
from ._tolerance import DIST_REL_EPS, SEAM_REL

__all__ = ["RayGrid"]

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Cell edge as a fraction of the triangles' median box diagonal. Smaller cells list
#: fewer triangles a ray passes beside but cost more cells a ray and a longer build: on
#: the query benchmark's level (33,000 triangles, median diagonal 2.9), 0.5, 0.6 and 0.7
#: of it answered 10,000 rays within the machine's noise of each other (0.90 to 0.94 of
#: Bullet's loop, medians of four), 0.85 in 1.01; 0.5 took over twice as long to build.
_CELL = 0.7
#: At most this many cells per triangle (and at least _MIN_CELLS): a mesh spread thin
#: over a huge box gets larger cells rather than a huge empty array.
_CELLS_PER_ITEM = 16
_MIN_CELLS = 4096
#: How far a sliver's grown triangle is followed beyond its own box, in seam slops of
#: the mesh (the largest coordinate magnitude times SEAM_REL).
_REACH = 64.0
#: Rays whose coordinates reach beyond this many times the mesh's scale are not walked
#: (the caller casts them another way): a single cast takes hits within a seam slop of
#: the ray's own scale of a triangle's box, which reaches past a sliver's listing (cut at
#: _REACH slops of the mesh's scale) once the ray's scale passes _REACH times the mesh's.
_FAR = _REACH
#: Meshes whose largest coordinate magnitude lies outside this range get an empty grid
#: and no ray walks it.
_SCALES = (1e-150, 1e150)
#: The first window of cells a ray walks is this many cells long; each next one doubles.
_FIRST_WINDOW = 4.0
#: How near a wall (in cells) a ray's position on another axis counts as crossing it at
#: the same time (far above the rounding of cell positions, which are at most some
#: thousands; a ray passing this near an edge of the grid merely lists a cell more).
_TIE = 1e-9
_GROWTH = 2.0
#: Building takes the (triangle, cell) pairs of the triangles' boxes this many at a time.
_BUILD_SLICE = 1 << 16


#: Row k of column a: the axis (a + 1 + k) % 3, one of the two other than a.
_OTHER = np.array([[1, 2, 0], [2, 0, 1]])


def _others(x: NDArray) -> NDArray:
    """(2, 3 r) of (3, r) values per axis and ray: row k holds, at ``axis * r + ray``,
    the ray's value on axis (axis + 1 + k) % 3 (the two axes a wall of ``axis`` is not
    on, as :meth:`Cells._walk` fans its walls out)."""
    return x.take(_OTHER, axis=0).reshape(2, -1)


class Cells:
    """A uniform grid of cells, each listing items, and the walk of segments through it:
    what :class:`RayGrid` and :class:`~._reachgrid.ReachGrid` share. A subclass sets
    ``origin`` (3,), ``h``, ``dims`` (3,) and ``stride`` with :meth:`_shape` (grid
    coordinates are (x - origin) / h, the listed cells inside [1, dims - 1]) and files
    its (cell, item) entries with :meth:`_file`."""

    origin: Float
    h: float
    dims: Int
    stride: tuple[int, int, int]

    def _shape(self, box_lo: Float, box_hi: Float, h: float, items: int) -> None:
        """Cells of edge ``h`` (larger, while there would be more than ``_CELLS_PER_ITEM``
        a listed item, at least ``_MIN_CELLS``) over the box box_lo..box_hi (3,), with
        one empty cell beyond it on each side (a position rounded just outside the box
        stays in the array): that box spans [1, dims - 1] of grid coordinates."""
        span = np.maximum(box_hi - box_lo, 0.0)
        budget = max(_CELLS_PER_ITEM * items, _MIN_CELLS)
        # The count falls about as h cubed.
        while np.prod(np.ceil(span / h) + 2.0) > budget:
            h *= 1.25
        self.dims = (np.ceil(span / h).astype(np.int64) + 2).clip(3, None)
        self.h = h
        self.origin = box_lo - h
        #: A cell (i, j, k)'s flat index is i * stride[0] + j * stride[1] + k.
        self.stride = (int(self.dims[1] * self.dims[2]), int(self.dims[2]), 1)
        self._strides = np.array(self.stride, np.int64)
        #: (2, 3) the strides of the two other axes of each (see _others).
        self._along = self._strides.take(_OTHER)
        #: Per axis (3, 1), the far side of the box in grid coordinates (see :meth:`_clip`).
        self._top = (self.dims - 1).astype(np.float64)[:, None]

    def _ranges(self, lo: Float, hi: Float) -> tuple[Int, Int]:
        """(k, 3) the first and last cells, per axis, of boxes lo, hi (k, 3)."""
        top = self.dims - 2
        i0 = np.clip(((lo - self.origin) / self.h).astype(np.int64), 1, top)
        i1 = np.clip(((hi - self.origin) / self.h).astype(np.int64), 1, top)
        return i0, i1

    def _file(self, flat: Int, item: Int) -> None:
        """List ``item`` (p,) in the cells of flat index ``flat`` (p,)."""
        order = np.argsort(flat, kind="stable")
        self._items = item[order]
        cells = int(np.prod(self.dims))
        count = np.bincount(flat, minlength=cells)
        #: Per cell, where its items start in _items (int32: half the memory to fetch
        #: from, and _items never holds 2**31 entries), and whether it has any (a walk
        #: meets mostly empty cells: one byte each says so from a far smaller array).
        self._start = np.zeros(cells + 1, np.int32 if len(item) < 2**31 else np.int64)
        np.cumsum(count, out=self._start[1:])
        self._some = count > 0

    def _clip(self, u0: Float, du: Float) -> tuple[Float, Float]:
        """(k,) the part [near, far] of each ray's [0, 1] inside the mesh's box; near >
        far where it misses the box."""
        # The three axes in whole (3, k) blocks, at a third of the numpy calls: the same
        # arithmetic on each element, and the axes folded in the same order (max, min
        # exact). An axis the ray does not move along gets a huge finite inverse (never
        # inf: 0 * inf would be nan), so its slab is all or nothing.
        inv = 1.0 / np.where(np.abs(du) < 1e-300, 1e-300, du)
        with np.errstate(over="ignore", invalid="ignore"):
            t1 = (1.0 - u0) * inv
            t2 = (self._top - u0) * inv
        enter, leave = np.minimum(t1, t2), np.maximum(t1, t2)
        near = np.maximum(np.maximum(np.maximum(0.0, enter[0]), enter[1]), enter[2])
        far = np.minimum(np.minimum(np.minimum(1.0, leave[0]), leave[1]), leave[2])
        return near, far

    def _walk(
        self, u0: Float, du: Float, rows: Int, ta: Float, tb: Float, first: bool
    ) -> tuple[Int, Int]:
        """(ray, cell) of every cell that lists something among those each ray ``rows``
        (r,) crosses from ta to tb (r,): the cell at ta (if ``first``: else the last
        window ended in it), then each cell it enters through a wall of one of the axes.

        The walls of all three axes are walked at once, each wall an entry ``axis * r +
        ray`` of (3, r) tables fanned out, with the two other axes of each entry in the
        rows of (2, 3 r) tables: a call costs a few dozen numpy calls whatever the rays'
        directions, and no more element work than an axis at a time."""
        stride = self._strides
        r = len(rows)
        o = u0.take(rows, axis=1)
        d = du.take(rows, axis=1)
        # Within the box, so positions are >= 1 less a rounding: truncation floors.
        start = (o + ta * d).astype(np.int64)
        end = (o + tb * d).astype(np.int64)
        # (ray, flat cell) of every cell met, in parts. Most cells a ray crosses are empty:
        # they are dropped once, at the end.
        ray_parts, cell_parts = [], []
        if first:
            ray_parts.append(np.arange(r))
            cell_parts.append(stride @ start)
        count = np.abs(end - start).ravel()
        ends = np.cumsum(count)
        if len(ends) and ends[-1]:
            # Per ray and axis: which way it steps, and the time of the n-th wall it
            # crosses, a + n * b (a wall is the entered cell's low side going up, its high
            # side down); then per wall, its ray and axis.
            down = d < 0.0
            sign = np.where(down, -1, 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                a = (start - o + down) / d
                b = sign / d
            entry = np.repeat(np.arange(3 * r), count)
            step = np.arange(1, ends[-1] + 1) - (ends - count).take(entry)
            axis, ray = np.divmod(entry, r)
            t = a.take(entry) + step * b.take(entry)
            # The cell entered, exactly, on the axis crossed (in flat index units).
            across = stride[:, None]
            flat = (start * across).take(entry) + step * (sign * across).take(entry)
            # The two other axes of each entry, by the (2, 3 r) tables of _others.
            at = _others(o).take(entry, axis=1)
            at += t * _others(d).take(entry, axis=1)
            cell = at.astype(np.int64)
            along = self._along.take(axis, axis=1)
            flat += cell[0] * along[0] + cell[1] * along[1]
            ray_parts.append(ray)
            cell_parts.append(flat)
            # A wall of another axis crossed at (nearly) the same time, through an edge of
            # the grid: rounding may put both crossings just short of the other's wall,
            # and the walk would list the two side cells, never the diagonal one the ray
            # runs on into. So where the position is within _TIE of the wall ahead, the
            # cell beyond it is listed too (toward the wall ahead on each axis).
            at += _others(np.where(down, -_TIE, _TIE)).take(entry, axis=1)
            beyond = (at.astype(np.int64) - cell) * along
            one, two = beyond
            near = np.flatnonzero(one | two)
            if len(near):
                ray = ray.take(near)
                flat, one, two = flat.take(near), one.take(near), two.take(near)
                ray_parts.append(ray)
                cell_parts.append(flat + one + two)
                both = np.flatnonzero((one != 0) & (two != 0))  # the side cells as well
                if len(both):
                    ray, flat = ray.take(both), flat.take(both)
                    ray_parts += [ray, ray]
                    cell_parts += [flat + one.take(both), flat + two.take(both)]
        if not ray_parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ray = np.concatenate(ray_parts) if len(ray_parts) > 1 else ray_parts[0]
        flat = np.concatenate(cell_parts) if len(cell_parts) > 1 else cell_parts[0]
        some = np.flatnonzero(self._some.take(flat))
        return rows.take(ray.take(some)), flat.take(some)

    def _listed(self, ray: Int, cell: Int) -> tuple[Int, Int]:
        """(ray, item) of every item listed in each cell (rays as given)."""
        start = self._start.take(cell)
        count = self._start.take(cell + 1) - start
        slot = ranges(start, count)
        return np.repeat(ray, count), self._items.take(slot)


class RayGrid(Cells):
    """The cells of a uniform grid that each triangle of a static mesh can be hit in.

    Parameters
    ----------
    a, b, c : (m, 3) float64
        The triangles' corners, finite.
    slop : (m,) float64
        How far outside an edge the point kernel still hits each triangle (column 17 of
        :func:`~.sweep.sphere_triangle._point_data`).

    Notes
    -----
    Building costs a sort of the (triangle, cell) pairs, a few per triangle; the grid
    keeps an int32 and a byte per cell and an int64 per pair. A zero-area triangle, which
    the point kernel never hits, is listed nowhere.
    """

    def __init__(self, a: Float, b: Float, c: Float, slop: Float) -> None:
        m = len(a)
        self.size = m
        lo = np.minimum(np.minimum(a, b), c)
        hi = np.maximum(np.maximum(a, b), c)
        scale = float(max(np.abs(lo).max(initial=0.0), np.abs(hi).max(initial=0.0), 1e-300))
        #: Rays reaching beyond this coordinate magnitude are not walked (see _FAR); none
        #: is on a mesh at a scale where a cell's arithmetic could overflow or go subnormal.
        self.far = _FAR * scale if _SCALES[0] <= scale <= _SCALES[1] else -1.0
        if self.far < 0:
            a = b = c = np.zeros((0, 3))
            slop = np.zeros(0)
            lo = hi = np.zeros((0, 3))
        # Well above the rounding of every position computed here (cells, kernel points).
        pad = 4.0 * DIST_REL_EPS * scale
        corners, grow, ok = _grown(a, b, c, slop)
        # Grown to more than twice its size: a sliver (see _build).
        wide = grow > 2.0
        reach = _REACH * SEAM_REL * scale
        grown_lo = np.minimum(np.minimum(corners[0], corners[1]), corners[2])
        grown_hi = np.maximum(np.maximum(corners[0], corners[1]), corners[2])
        lo_ = np.maximum(grown_lo, lo - reach) - pad
        hi_ = np.minimum(grown_hi, hi + reach) + pad
        items = np.flatnonzero(ok)
        lo_, hi_ = lo_[items], hi_[items]
        if len(items):
            box_lo, box_hi = lo_.min(axis=0), hi_.max(axis=0)
        else:
            box_lo = box_hi = np.zeros(3)
        diag = np.sqrt(((hi - lo) ** 2).sum(axis=1))
        size = float(np.median(diag[items])) if len(items) else 1.0
        self._shape(box_lo, box_hi, max(_CELL * size, 1e-300), len(items))
        self._build(items, lo_, hi_, [v[items] for v in corners], wide[items], pad)

    def _build(
        self, items: Int, lo: Float, hi: Float, corners: list[Float], wide: Bool, pad: float
    ) -> None:
        """List each triangle ``items`` (boxes lo, hi, grown ``corners``) in the cells its
        box overlaps that its grown triangle touches (cells grown by ``pad``); those
        ``wide`` in every cell of their box."""
        h, stride = self.h, self.stride
        i0, i1 = self._ranges(lo, hi)
        span = i1 - i0 + 1
        count = span[:, 0] * span[:, 1] * span[:, 2]
        half = np.full(3, 0.5 * h + pad)
        # The (triangle, cell) pairs of the boxes a slice at a time, cut anywhere (a huge
        # triangle's box too): their temporaries stay in the cache, and the peak memory
        # small.
        ends = np.cumsum(count)
        total = int(ends[-1]) if len(ends) else 0
        flats, kept = [], []
        for first in range(0, total, _BUILD_SLICE):
            pair = np.arange(first, min(first + _BUILD_SLICE, total))
            row = np.searchsorted(ends, pair, side="right")
            local = pair - (ends.take(row) - count.take(row))
            sy, sz = span[row, 1], span[row, 2]
            cell = np.stack([local // (sy * sz), (local // sz) % sy, local % sz]) + i0[row].T
            # The corners as seen from each cell's centre, per axis.
            v = [[np.take(corner[:, axis], row) - (self.origin[axis] + (cell[axis] + 0.5) * h)
                  for axis in range(3)] for corner in corners]  # fmt: skip
            touch = _touches(v, half)
            # A sliver's grown corners lie far off: rounding there could drop a cell it
            # touches, so it keeps every cell of its (cut) box.
            touch |= np.take(wide, row)
            cell = cell[:, touch]
            flats.append(cell[0] * stride[0] + cell[1] * stride[1] + cell[2])
            kept.append(items[row[touch]])
        flat = np.concatenate(flats) if flats else np.zeros(0, np.int64)
        item = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        self._file(flat, item)

    @property
    def pairs(self) -> int:
        """How many (triangle, cell) entries the grid holds."""
        return len(self._items)

    def walkable(self, scale: Float) -> Bool:
        """(k,) which rays :meth:`first` can walk, given their (k,) largest coordinate
        magnitudes: finite, and not so far out that their cell positions would round by
        a cell's pad."""
        return scale <= self.far

    def first(
        self,
        p0: Float,
        p1: Float,
        hits: Callable[[Int, Int], tuple[Int, Float]],
        tie: Int,
    ) -> tuple[Float, Int]:
        """Each ray's first hit among the triangles.

        Parameters
        ----------
        p0, p1 : (k, 3) float64
            The rays, from p0 to p1, all :meth:`walkable`.
        hits : callable
            ``hits(q, i)`` with (p,) int64 rays and triangles: (h,) positions of the
            pairs that hit and (h,) their t in [0, 1] (the kernel, and whatever else
            decides a hit: masks, sensors, removed nodes).
        tie : (m,) int64
            Among hits at the same t, the lower ``tie``, then the lower triangle, wins.

        Returns
        -------
        t : (k,) float64
            The first hit's t, inf where none.
        item : (k,) int64
            Its triangle, -1 where none.
        """
        k = len(p0)
        best_t = np.full(k, np.inf)
        if k == 0 or self.pairs == 0:
            return best_t, np.full(k, -1, np.int64)
        best_key = np.full(k, _NO_KEY)
        # One key for the tie rule: (tie, triangle) in lexical order.
        tie = tie.astype(np.int64) * self.size
        h = self.h
        u0 = np.ascontiguousarray(((p0 - self.origin) / h).T)
        du = np.ascontiguousarray(((p1 - p0) / h).T)
        near, far = self._clip(u0, du)
        cells = np.sqrt((du * du).sum(axis=0))
        rows = np.flatnonzero(near <= far)
        ta = near[rows]
        window = _FIRST_WINDOW
        while len(rows):
            with np.errstate(divide="ignore", invalid="ignore"):
                tb = ta + window / cells.take(rows)
            tb = np.fmin(tb, far.take(rows))
            ray, cell = self._walk(u0, du, rows, ta, tb, window == _FIRST_WINDOW)
            q, i = self._listed(ray, cell)
            at, t = hits(q, i)
            if len(at):
                i = i.take(at)
                _improve(best_t, best_key, q.take(at), t, tie.take(i) + i)
            done = (best_t.take(rows) <= tb) | (tb >= far.take(rows))
            rows, ta = rows[~done], tb[~done]
            window *= _GROWTH
        found = best_key != _NO_KEY
        return best_t, np.where(found, best_key % self.size, -1)


def _grown(a: Float, b: Float, c: Float, slop: Float) -> tuple[list[Float], Float, Bool]:
    """The corners (three (m, 3)) of the triangles grown by ``slop`` (m,) outside each
    edge, (m,) the factor each grew by, and (m,) which are real triangles (non-zero area:
    the point kernel hits no other; their corners are set to 0).

    Moving each edge's line out by s makes a similar triangle about the incentre, scaled
    by 1 + s / inradius."""
    la = np.sqrt(((b - c) ** 2).sum(axis=1))
    lb = np.sqrt(((c - a) ** 2).sum(axis=1))
    lc = np.sqrt(((a - b) ** 2).sum(axis=1))
    perimeter = la + lb + lc
    area2 = np.sqrt((np.cross(b - a, c - a) ** 2).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        centre = (la[:, None] * a + lb[:, None] * b + lc[:, None] * c) / perimeter[:, None]
        grow = 1.0 + slop / (area2 / perimeter)
        corners = [centre + (v - centre) * grow[:, None] for v in (a, b, c)]
    ok = area2 > 0
    for v in corners:
        ok &= np.isfinite(v).all(axis=1)
    return [np.where(ok[:, None], v, 0.0) for v in corners], grow, ok


def _touches(v: list[list[Float]], half: Float) -> Bool:
    """(p,) whether triangles of corners v (v[corner][axis] (p,), relative to a box's
    centre) touch the box of half extents ``half`` (3,) (the separating axis test: the
    triangle's plane and the nine edge-by-axis directions; the box's own axes are the
    caller's overlap of boxes). Rounding is on the side of touching."""
    slack = 1.0 + 1e-9
    e = [float(x) for x in half]
    f = [[v[(j + 1) % 3][axis] - v[j][axis] for axis in range(3)] for j in range(3)]
    # The plane: |n . v0| within the box's reach along n.
    n = [f[0][1] * f[1][2] - f[0][2] * f[1][1], f[0][2] * f[1][0] - f[0][0] * f[1][2],
         f[0][0] * f[1][1] - f[0][1] * f[1][0]]  # fmt: skip
    dist = np.abs(n[0] * v[0][0] + n[1] * v[0][1] + n[2] * v[0][2])
    keep = dist <= (e[0] * np.abs(n[0]) + e[1] * np.abs(n[1]) + e[2] * np.abs(n[2])) * slack
    for j in range(3):
        start, other = v[j], v[(j + 2) % 3]  # the edge's first corner, and the corner off it
        fx, fy, fz = f[j]
        # Axis x cross the edge: (0, -fz, fy); y: (fz, 0, -fx); z: (-fy, fx, 0).
        for (u, w), (gu, gw), (eu, ew) in (
            ((1, 2), (fz, fy), (e[1], e[2])),
            ((0, 2), (fz, fx), (e[0], e[2])),
            ((0, 1), (fy, fx), (e[0], e[1])),
        ):
            p0 = gw * start[w] - gu * start[u]
            p1 = gw * other[w] - gu * other[u]
            r = (eu * np.abs(gu) + ew * np.abs(gw)) * slack
            keep &= (np.minimum(p0, p1) <= r) & (np.maximum(p0, p1) >= -r)
    return keep


def _improve(best_t: Float, best_key: Int, q: Int, t: Float, key: Int) -> None:
    """Lower best_t, best_key (k,) where hits (ray q, t, key) come first: at a lower t, or
    at the same t with a lower key."""
    round_t = np.full(len(best_t), np.inf)
    np.minimum.at(round_t, q, t)
    low = t == round_t.take(q)
    round_key = np.full(len(best_t), _NO_KEY)
    np.minimum.at(round_key, q[low], key[low])
    better = (round_t < best_t) | ((round_t == best_t) & (round_key < best_key))
    best_t[better] = round_t[better]
    best_key[better] = round_key[better]


_NO_KEY = np.iinfo(np.int64).max
