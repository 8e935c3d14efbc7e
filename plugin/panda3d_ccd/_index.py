"""A static index of boxes, built once per static mesh and queried each pass.

A level's triangles do not move, so their boxes are indexed once, in the mesh's own frame,
and every pass asks only which of them the moving spheres' swept boxes overlap. The index is
a linear bounding volume hierarchy (LBVH): items are sorted along a Morton curve through
their box centres, cut into leaves of ``_LEAF`` consecutive items, and a complete binary
tree is built over the leaves, one vectorised reduction per level. A query descends the
tree level by level with a frontier of (query, node) pairs, so it costs what it finds
(times the depth), and a query far from everything ends at the root. Node boxes are unions
of item boxes, so huge triangles, slivers, flat walls (zero thickness) and items all in
one place need no special case: the order only decides how tight the nodes are.

On a level the tree's nodes overlap at every scale (a terrain's triangles lie side by
side), and a body's query tests some hundred (query, node) pairs. The solver's queries
about a level (straight paths with a reach) walk a uniform grid instead, made on the first
such query: :class:`~._reachgrid.ReachGrid` lists each item in the cells within the
bodies' reach of its box, and a path meets a cell or two (a fast one a cell per cell
length), where the same slab test as the tree's picks the same pairs.

Boxes are grown by ``DIST_REL_EPS`` times their scale (their largest coordinate
magnitude), as the broad phase grows the swept boxes, so that surfaces touching within
float64 rounding are never lost.

This module never imports panda3d.

Examples
--------
>>> import numpy as np
>>> from panda3d_ccd.broadphase import StaticIndex
>>> a = np.array([[0.0, 0, 0], [10, 0, 0]])
>>> index = StaticIndex.of_triangles(a, a + [1, 0, 0], a + [0, 1, 0])
>>> index.query([[0.5, 0.5, -1], [-5, -5, -5]], [[0.6, 0.6, 1], [-4, -4, -4]])
(array([0]), array([0]))
>>> index.sphere_pairs([[5.0, 0.2, 1], [0, 0, 9]], [[11.0, 0.2, 1], [1, 1, 9]], 1.0)
(array([0]), array([1]))
>>> StaticIndex([[0.0, 0, 0]], [[1.0, -1, 1]])
Traceback (most recent call last):
    ...
ValueError: hi must be >= lo, got lo [0.0, 0.0, 0.0] and hi [1.0, -1.0, 1.0] at row 0
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _check
from ._arrays import largest_abs, unique
from ._reachgrid import ReachGrid
from ._tolerance import DIST_REL_EPS
from .broadphase import _swept_reach

__all__ = ["StaticIndex"]

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Items per leaf. Fewer mean tighter leaves but a deeper tree (one more level of frontier
#: work per halving). On the geometry benchmark's 100,000 triangles and 10,000 spheres
#: (best of 7), leaves of 2, 4, 8 and 16 built in 50, 35, 28 and 31 ms and answered in
#: 39, 38, 38 and 78 ms.
_LEAF = 4
#: Bits of each axis in a Morton code: three of them fill 63 bits of an int64.
_MORTON_BITS = 21


def _spread(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Each of the low 21 bits of x moved to every third bit (bit i to bit 3i)."""
    x = x & np.uint64(0x1FFFFF)
    x = (x | (x << np.uint64(32))) & np.uint64(0x1F00000000FFFF)
    x = (x | (x << np.uint64(16))) & np.uint64(0x1F0000FF0000FF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x100F00F00F00F00F)
    x = (x | (x << np.uint64(4))) & np.uint64(0x10C30C30C30C30C3)
    x = (x | (x << np.uint64(2))) & np.uint64(0x1249249249249249)
    return x


def _morton(lo: Float, hi: Float) -> NDArray[np.uint64]:
    """(m,) Morton codes of the centres of boxes lo, hi (3, m).

    Only an ordering heuristic: whatever it returns (all zero for coincident centres, say),
    the tree stays exact. Halves are summed rather than the ends, which cannot overflow.
    """
    centre = lo * 0.5 + hi * 0.5
    low = centre.min(axis=1)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # One scale for all three axes (a cube around the centres): scaling each axis to
        # its own span would split a flat terrain along its thin axis as often as along
        # the wide ones, and its nodes would overlap far more.
        span = (centre.max(axis=1) * 0.5 - low * 0.5).max()
        unit = (centre - low[:, None]) * 0.5 / span
    top = float(2**_MORTON_BITS - 1)
    cells = np.clip(np.nan_to_num(unit * top, nan=0.0, posinf=top, neginf=0.0), 0, top)
    # The three axes spread in one go (a third of the numpy calls: a kinematic table's
    # index is made again each pass its pieces move).
    q = _spread(cells.astype(np.uint64))
    return (q[0] << np.uint64(2)) | (q[1] << np.uint64(1)) | q[2]


def _padded(lo: Float, hi: Float) -> tuple[Float, Float]:
    """Boxes lo, hi (3, m) grown by the rounding pad, ``DIST_REL_EPS`` times each box's
    largest coordinate magnitude (the broad phase's pad for a reach of zero)."""
    pad = DIST_REL_EPS * np.maximum(np.abs(lo).max(axis=0), np.abs(hi).max(axis=0))
    with np.errstate(over="ignore"):
        return lo - pad, hi + pad


def _boxes(lo: ArrayLike, hi: ArrayLike, what: str) -> tuple[Float, Float]:
    """Checked boxes: (m, 3) float64 each, finite, ``lo <= hi``, returned as (3, m)."""
    lo_ = _check.points("lo", lo, single=False)
    hi_ = _check.points("hi", hi, single=False)
    if hi_.shape != lo_.shape:
        raise ValueError(f"hi must have the same shape as lo {lo_.shape}, got {hi_.shape}")
    for name, arr in (("lo", lo_), ("hi", hi_)):
        bad = ~np.isfinite(arr).all(axis=1)
        if np.any(bad):
            row = int(np.argmax(bad))
            raise ValueError(
                f"{name} must be finite ({what}), got {arr[row].tolist()} at row {row}"
            )
    flipped = (lo_ > hi_).any(axis=1)
    if np.any(flipped):
        row = int(np.argmax(flipped))
        raise ValueError(
            f"hi must be >= lo, got lo {lo_[row].tolist()} and hi {hi_[row].tolist()} at row {row}"
        )
    return np.ascontiguousarray(lo_.T), np.ascontiguousarray(hi_.T)


def _overlap(qlo: Float, qhi: Float, q: Int, lo: Float, hi: Float, k: Int) -> Bool:
    """(p,) whether closed boxes ``q[j]`` of qlo, qhi and ``k[j]`` of lo, hi (3, .)
    overlap."""
    take = np.take
    hit = take(qlo[0], q) <= take(hi[0], k)
    hit &= take(lo[0], k) <= take(qhi[0], q)
    hit &= take(qlo[1], q) <= take(hi[1], k)
    hit &= take(lo[1], k) <= take(qhi[1], q)
    hit &= take(qlo[2], q) <= take(hi[2], k)
    hit &= take(lo[2], k) <= take(qhi[2], q)
    return hit


def _crosses(origin: Float, inv: Float, grow: Float, q: Int, lo: Float, hi: Float, k: Int) -> Bool:
    """(p,) whether segments ``q[j]`` (origin (3, n) plus s times the direction whose
    inverse is inv (3, n), s in [0, 1]) cross boxes ``k[j]`` of lo, hi (3, .) grown by
    ``grow[q[j]]``: the slab test."""
    return _crosses_gathered(origin, inv, grow, q, lo.take(k, axis=1), hi.take(k, axis=1))


def _crosses_rows(origin: Float, inv: Float, grow: Float, q: Int, boxes: Float, k: Int) -> Bool:
    """:func:`_crosses` of boxes stored as rows (m, 6) (the low corner, then the high):
    each box's six numbers are gathered from one place (a cache line or two, where the
    columns of lo and hi are six), then made contiguous columns."""
    box = np.ascontiguousarray(boxes.take(k, axis=0).T)
    return _crosses_gathered(origin, inv, grow, q, box[:3], box[3:])


def _crosses_gathered(
    origin: Float, inv: Float, grow: Float, q: Int, lo: Float, hi: Float
) -> Bool:
    """:func:`_crosses` of the boxes already gathered, one per segment ``q[j]``: lo, hi
    (3, p) with contiguous rows."""
    g = np.take(grow, q)
    if len(q) <= _FUSED_SLABS:
        # Few pairs (a pass's queries, mostly): the three axes in whole (3, p) blocks,
        # at half the numpy calls; the same arithmetic on each element (max, min exact).
        o, iv = origin.take(q, axis=1), inv.take(q, axis=1)
        with np.errstate(over="ignore", invalid="ignore"):
            t1 = (lo - g - o) * iv
            t2 = (hi + g - o) * iv
        enter, leave = np.minimum(t1, t2), np.maximum(t1, t2)
        near = np.maximum(np.maximum(enter[0], enter[1]), enter[2])
        far = np.minimum(np.minimum(leave[0], leave[1]), leave[2])
        return (near <= far) & (near <= 1.0) & (far >= 0.0)

    # Many: an axis at a time, on contiguous rows: a third fewer element passes than
    # reducing (3, p) blocks, whose temporaries outgrow the cache (measured: 83 against
    # 285 us at 5,000 pairs, 51 against 60 at 3,000 the other way).
    def slab(axis: int) -> tuple[Float, Float]:
        o = np.take(origin[axis], q)
        iv = np.take(inv[axis], q)
        t1 = (lo[axis] - g - o) * iv
        t2 = (hi[axis] + g - o) * iv
        return np.minimum(t1, t2), np.maximum(t1, t2)

    with np.errstate(over="ignore", invalid="ignore"):
        near, far = slab(0)
        for axis in (1, 2):
            enter, leave = slab(axis)
            near = np.maximum(near, enter)
            far = np.minimum(far, leave)
    # Empty slots (nan boxes) give nan times: never a hit.
    return (near <= far) & (near <= 1.0) & (far >= 0.0)


def _segments(
    p0: Float, p1: Float, reach: Float, origin: Float | None = None,
    reached: tuple[Float, Float] | None = None,
) -> tuple[Float, Float, Float, Float]:
    """Segments p0, p1 (n, 3) with reaches (n,) as :func:`_crosses` takes them: (3, n)
    origins (``origin``, if given) and inverse directions, (n,) how much to grow each box,
    and (n,) each segment's largest coordinate magnitude (those two ``reached``, if the
    caller has them from the segments' swept boxes)."""
    if origin is None:
        origin = np.ascontiguousarray(p0.T)
    d = np.ascontiguousarray((p1 - p0).T)
    # Slab times of each axis; an axis the segment does not move along gets a huge
    # finite inverse (never inf: 0 * inf would be nan), so its slab is all or nothing.
    tiny = np.abs(d) < 1e-300
    inv = 1.0 / np.where(tiny, np.where(d < 0, -1e-300, 1e-300), d)
    if reached is not None:
        return origin, inv, *reached
    # The items' rounding pad, the query's own, and the reach.
    with np.errstate(over="ignore"):
        scale = largest_abs(p0, p1)
    return origin, inv, reach + DIST_REL_EPS * np.maximum(scale, reach), scale


def _slab(t: Float) -> Bool:
    """(k,) whether slab times t (6, k), the near faces' then the far faces' of k boxes,
    leave an interval that meets [0, 1]; nan boxes never do."""
    # Spelled out: a reduction over an axis of 3 costs more than two binary calls.
    near = np.maximum(np.maximum(np.maximum(t[0], t[1]), t[2]), 0.0)
    return near <= np.minimum(np.minimum(np.minimum(t[3], t[4]), t[5]), 1.0)


#: A lone segment tests every node of this level, then descends _ONE_STRIDE levels at a
#: time (on the benchmark level's 33,000 triangles, 51 to 54 us a ray, where the first
#: cut, 2048 nodes and then the 32 items under each, took 130).
_ONE_START = 7
_ONE_STRIDE = 4
#: ... and from this many levels above the leaves, straight to the items.
_ONE_TAIL = 3
#: A lone segment's faces in the order it meets them, per direction: (6, 1) rows of the
#: (6, nodes) boxes, keyed by the first three (the near face of each axis).
_ORDERS = {
    near: np.array([*near, *(r + 3 if r < 3 else r - 3 for r in near)])[:, None]
    for near in [(x, y, z) for x in (0, 3) for y in (1, 4) for z in (2, 5)]
}
#: The children offsets of a step of each number of levels.
_FANS = [np.arange(1 << bits) for bits in range(24)]
#: A query of r boxes starts at the level of about _WIDE_START / r nodes (see _pairs).
_WIDE_START = 2048
#: The reach grid (see :meth:`StaticIndex._walk_grid`) lists items at least this many
#: median item diagonals around their boxes, at most _GRID_MOST; a segment that reaches
#: farther asks the tree. A reach past the grid's rebuilds it at least _GRID_GROWTH times
#: larger, with _GRID_SPARE to spare (so a few rebuilds at most, ever).
_GRID_LEAST = 0.1
_GRID_MOST = 2.0
_GRID_GROWTH = 1.5
_GRID_SPARE = 1.125
#: Only an index of at least this many items has one: below it the tree answers
#: faster (measured on flat meshes, tree against grid: 89 against 183 us for 2 segments
#: among 100 triangles, 96 against 316 among 300, 103 against 174 among 1,000; from
#: 3,000 the grid wins, 147 against 205). The demo's level has 210 triangles and 7 capsules.
_GRID_FEWEST = 1024

#: Up to this many (segment, box) pairs, the slab test runs on whole (3, p) blocks (see
#: _crosses_gathered).
_FUSED_SLABS = 2048
#: Up to this many (query, item) pairs, a query tests them all at once rather than
#: descending the tree: each level of the descent is a test of its own (some thirty numpy
#: calls), and below this the one wider test costs less than the levels it replaces.
_ALL_PAIRS = 512
#: Up to this many items left out of the grid (see ReachGrid.big) are tested against every
#: segment; more get a tree of their own.
_BRUTE_BIG = 16


class StaticIndex:
    """Boxes of static items (a level's triangles), indexed once, queried by boxes.

    Parameters
    ----------
    lo, hi : (m, 3) float64
        Corners of the items' boxes, finite, ``lo <= hi``; flat boxes (walls) and repeated
        boxes are fine. ``m`` may be 0 (nothing is ever found).
    into_mask : (m,) or scalar integer, optional
        32-bit into-masks of the items (None: all bits on). A query row and an item pair up
        only if the query's from-mask and the item's into-mask share a bit.

    Notes
    -----
    The index keeps its own copies; nothing a query does changes them, and building twice
    from the same boxes gives the same index. Cost: building is one sort of ``m`` integer
    keys and about ``2 m / _LEAF`` box reductions; a query visits the nodes its box
    overlaps, about ``log2(m / _LEAF)`` per item found, and a box that misses the whole
    mesh stops at the root. The solver's reach grid (see :meth:`_walk_grid`) is a cache,
    made on its first query: a few entries per item.
    """

    def __init__(self, lo: ArrayLike, hi: ArrayLike, into_mask: ArrayLike | None = None) -> None:
        lo_, hi_ = _boxes(lo, hi, "item boxes")
        m = lo_.shape[1]
        self.size = m
        self.into_mask = _check.masks("into_mask", into_mask, m).copy()
        self._build(*_padded(lo_, hi_))

    def __len__(self) -> int:
        """The number of items indexed."""
        return self.size

    @cached_property
    def item_size(self) -> float:
        """The median diagonal of the items' boxes (0 with no items)."""
        if self.size == 0:
            return 0.0
        lo, hi = self._lo[:, : self.size], self._hi[:, : self.size]
        with np.errstate(over="ignore"):  # a mesh past 1e154 (its reach grid is empty)
            return float(np.median(np.sqrt(((hi - lo) ** 2).sum(axis=0))))

    @cached_property
    def _boxes(self) -> Float:
        """The item boxes as rows (slots, 6), the low corner then the high: for the reach
        grid's scattered gathers (made with the grid, for an index asked pass after pass)."""
        boxes = np.ascontiguousarray(np.concatenate([self._lo, self._hi]).T)
        boxes.flags.writeable = False
        return boxes

    @classmethod
    def of_triangles(
        cls, a: ArrayLike, b: ArrayLike, c: ArrayLike, into_mask: ArrayLike | None = None
    ) -> StaticIndex:
        """The index of the boxes of triangles ``a, b, c`` (m, 3) float64 (finite)."""
        corners = [_check.points(name, v, single=False) for name, v in zip("abc", (a, b, c))]
        for name, v in zip("abc", corners):
            if v.shape != corners[0].shape:
                raise ValueError(
                    f"{name} must have the same shape as a {corners[0].shape}, got {v.shape}"
                )
            bad = ~np.isfinite(v).all(axis=1)
            if np.any(bad):
                row = int(np.argmax(bad))
                raise ValueError(f"{name} must be finite, got {v[row].tolist()} at row {row}")
        a_, b_, c_ = corners
        lo = np.minimum(np.minimum(a_, b_), c_)
        hi = np.maximum(np.maximum(a_, b_), c_)
        return cls(lo, hi, into_mask)

    @classmethod
    def _of_padded(cls, lo: Float, hi: Float, into_mask: Int) -> StaticIndex:
        """The index of boxes lo, hi (3, m) already padded (checked, finite)."""
        index = cls.__new__(cls)
        index.size = lo.shape[1]
        index.into_mask = into_mask.copy()
        index._build(lo, hi)
        return index

    def _build(self, lo: Float, hi: Float) -> None:
        self._segment_columns: tuple[list[Float], Float] | None = None
        self._item_boxes: tuple[Float, Float] | None = None
        self._grid: tuple[ReachGrid, StaticIndex | None] | None = None
        m = self.size
        order = np.argsort(_morton(lo, hi), kind="stable") if m else np.zeros(0, np.int64)
        leaves = max(1, -(-m // _LEAF))
        depth = int(np.ceil(np.log2(leaves)))
        slots = (1 << depth) * _LEAF
        # Empty slots get a nan box: every comparison with it, and with a union that is all
        # empty, is false (the box test and the slab test alike), so the tree needs no
        # counts; the unions ignore it (fmin, fmax).
        self._lo = np.full((3, slots), np.nan)
        self._hi = np.full((3, slots), np.nan)
        self._lo[:, :m] = np.take(lo, order, axis=1)
        self._hi[:, :m] = np.take(hi, order, axis=1)
        self._ids = np.full(slots, -1, dtype=np.int64)
        self._ids[:m] = order
        mask = np.zeros(slots, dtype=np.int64)
        mask[:m] = np.take(self.into_mask, order)
        self._mask = mask
        #: The bits every item's mask has: a query with one of them needs no mask test.
        self._common_bits = int(np.bitwise_and.reduce(self.into_mask)) if m else 0
        # Levels from the leaves up, each a reduction over pairs of the one below.
        nlo = np.fmin.reduce(self._lo.reshape(3, -1, _LEAF), axis=2)
        nhi = np.fmax.reduce(self._hi.reshape(3, -1, _LEAF), axis=2)
        nmask = np.bitwise_or.reduce(mask.reshape(-1, _LEAF), axis=1)
        levels = [(nlo, nhi, nmask)]
        while nlo.shape[1] > 1:
            nlo = np.fmin.reduce(nlo.reshape(3, -1, 2), axis=2)
            nhi = np.fmax.reduce(nhi.reshape(3, -1, 2), axis=2)
            nmask = nmask.reshape(-1, 2)[:, 0] | nmask.reshape(-1, 2)[:, 1]
            levels.append((nlo, nhi, nmask))
        self._levels = levels[::-1]
        for arr in (self._lo, self._hi, self._ids, self._mask, self.into_mask):
            arr.flags.writeable = False
        for level in self._levels:
            for arr in level:
                arr.flags.writeable = False

    # --------------------------------------------------------------------------- queries

    def query(
        self, lo: ArrayLike, hi: ArrayLike, from_mask: ArrayLike | None = None
    ) -> tuple[Int, Int]:
        """Every (query box, item) pair whose boxes overlap.

        Parameters
        ----------
        lo, hi : (n, 3) float64
            Corners of the query boxes, finite, ``lo <= hi``. They get the same rounding
            pad as the items.
        from_mask : (n,) or scalar integer, optional
            32-bit from-masks of the queries (None: all bits on).

        Returns
        -------
        i, k : (p,) int64
            Query row and item of every pair whose closed padded boxes overlap and whose
            masks share a bit, each once, sorted by ``i`` then ``k``.
        """
        qlo, qhi = _boxes(lo, hi, "query boxes")
        n = qlo.shape[1]
        from_ = _check.masks("from_mask", from_mask, n)
        qlo, qhi = _padded(qlo, qhi)
        return self._pairs(qlo, qhi, np.arange(n), from_, n)

    def sphere_pairs(
        self,
        p0: ArrayLike,
        p1: ArrayLike,
        radius: ArrayLike,
        from_mask: ArrayLike | None = None,
        *,
        moving: ArrayLike | None = None,
        margin: ArrayLike | None = None,
        split: ArrayLike | None = None,
    ) -> tuple[Int, Int]:
        """Candidate (sphere, item) pairs: swept spheres whose boxes overlap an item's.

        The swept boxes are those of :func:`panda3d_ccd.broadphase.sphere_pairs`, in the
        index's frame: give ``p0, p1`` in the mesh's own coordinates.

        Parameters
        ----------
        p0, p1 : (n, 3) float64
            Sphere centres at the start and end of the frame. Rows with a non-finite value
            (or a swept box too large to measure) are ignored, as the broad phase does.
        radius : (n,) or scalar float64
            Radii, finite and >= 0.
        from_mask : (n,) or scalar integer, optional
            32-bit from-masks of the spheres (None: all bits on).
        moving : (n,) or scalar bool, optional
            Which spheres move (None: all). A still sphere cannot start a contact with a
            static item and is never reported.
        margin : (n,) or scalar float64, optional
            Extra reach, finite and >= 0, added to the radius.
        split : (n,) or scalar bool, optional
            Which sweeps to test as segments rather than boxes (None: none): the items
            whose boxes the segment comes within the reach of (per axis), as
            :meth:`segment_pairs` finds them. A fast mover then meets only the triangles
            along its path, not every one under the diagonal of its box; the pairs are
            those of the whole box or fewer, and still every item a point of the sweep
            reaches. Only for straight paths (a path that may bend within its box,
            ``margin``, needs the whole box).

        Returns
        -------
        i, k : (p,) int64
            Sphere and item of every pair found, each once, sorted by ``i`` then ``k``.
        """
        p0_, p1_ = _check.sweeps(p0, p1)
        n = p0_.shape[0]
        reach = _check.lengths("radius", radius, n)
        if margin is not None:
            reach = reach + _check.lengths("margin", margin, n)
        from_ = _check.masks("from_mask", from_mask, n)
        moves = _check.flags("moving", moving, n, default=True)
        cut = _check.flags("split", split, n, default=False)
        return self._sphere_pairs(p0_, p1_, reach, from_, moves, cut)

    def _sphere_pairs(
        self,
        p0: Float,
        p1: Float,
        reach: Float,
        from_: Int,
        moves: Bool,
        cut: Bool,
        grid: bool = False,
    ) -> tuple[Int, Int]:
        """:meth:`sphere_pairs` on arguments already checked and broadcast to (n,) rows,
        with ``reach`` the radius plus margin (for the solver, once per pass and again per
        round). ``grid``: the split rows may walk the reach grid (see :meth:`_walk_grid`;
        an index asked again and again, as a level's is)."""
        n = p0.shape[0]
        lo, hi, grow, scale = _swept_reach(p0, p1, reach)
        with np.errstate(invalid="ignore", over="ignore"):
            live = np.isfinite(hi - lo).all(axis=0) & moves & (from_ != 0)
        rows = np.flatnonzero(live)
        line = cut.take(rows)
        if not line.any():
            return self._pairs(np.take(lo, rows, axis=1), np.take(hi, rows, axis=1), rows,
                               from_, n)  # fmt: skip
        seg = rows[line]
        # (The boxes' growth and scale are the segment test's own: made once.)
        si, sk = self._segment_pairs(p0[seg], p1[seg], reach[seg], from_[seg], grid,
                                     (grow.take(seg), scale.take(seg)))  # fmt: skip
        if line.all():
            return seg.take(si), sk
        box = rows[~line]
        bi, bk = self._pairs(np.take(lo, box, axis=1), np.take(hi, box, axis=1), box, from_, n)
        # The two parts hold different rows: one sort orders them, with no pair twice.
        m = max(self.size, 1)
        key = np.sort(np.concatenate([bi, seg.take(si)]) * m + np.concatenate([bk, sk]))
        return np.divmod(key, m)

    def segment_pairs(
        self,
        p0: ArrayLike,
        p1: ArrayLike,
        reach: ArrayLike = 0.0,
        from_mask: ArrayLike | None = None,
    ) -> tuple[Int, Int]:
        """Candidate (segment, item) pairs: segments whose points come within ``reach`` of an
        item's box (a ray, or a cast sphere, against the index).

        Unlike :meth:`sphere_pairs`, which boxes each sweep, the segment itself is tested
        against each node's box grown by its reach (a slab test), so a long diagonal ray
        meets only the nodes it passes through, not every node under its box.

        Parameters
        ----------
        p0, p1 : (n, 3) float64
            Ends of the segments, finite.
        reach : (n,) or scalar float64
            How far from the segment an item may be, finite and >= 0 (a cast sphere's
            radius; 0 for a ray).
        from_mask : (n,) or scalar integer, optional
            32-bit from-masks of the segments (None: all bits on).

        Returns
        -------
        i, k : (p,) int64
            Segment and item of every pair found, each once, sorted by ``i`` then ``k``.

        Examples
        --------
        >>> a = np.array([[0.0, 0, 0], [10, 0, 0]])
        >>> index = StaticIndex.of_triangles(a, a + [1, 0, 0], a + [0, 1, 0])
        >>> index.segment_pairs([[-5.0, 0.5, 0], [0, 0, 5]], [[5.0, 0.5, 0], [0, 0, 6]])
        (array([0]), array([0]))
        """
        p0_, p1_ = _check.sweeps(p0, p1)
        n = p0_.shape[0]
        for name, arr in (("p0", p0_), ("p1", p1_)):
            bad = ~np.isfinite(arr).all(axis=1)
            if np.any(bad):
                row = int(np.argmax(bad))
                raise ValueError(f"{name} must be finite, got {arr[row].tolist()} at row {row}")
        return self._segment_pairs(
            p0_, p1_, _check.lengths("reach", reach, n), _check.masks("from_mask", from_mask, n)
        )

    def _segment_pairs(
        self, p0: Float, p1: Float, reach: Float, from_: Int, grid: bool = False,
        reached: tuple[Float, Float] | None = None,
    ) -> tuple[Int, Int]:
        """:meth:`segment_pairs` on rows already checked and broadcast to (n,); with
        ``grid``, the rows it can take walk the reach grid (:meth:`_walk_grid`), the rest
        descend the tree. Both apply the same test to the same boxes: same answers.
        ``reached``: the rows' growth and scale, where the caller has them (see
        :func:`_segments`)."""
        n = len(p0)
        empty = np.empty(0, dtype=np.int64)
        if self.size == 0 or n == 0:
            return empty, empty.copy()
        origin, inv, grow, scale = _segments(p0, p1, reach, reached=reached)
        if not grid or self.size < _GRID_FEWEST:
            q, k = self._descend(
                n, from_, lambda q, lo, hi, k: _crosses(origin, inv, grow, q, lo, hi, k)
            )
            return np.divmod(np.sort(q * self.size + k), self.size)
        walk = self._walk_grid(grow, scale)
        rest = np.flatnonzero(~walk)
        keys = []
        if len(rest):
            q, k = self._descend(
                len(rest), from_.take(rest),
                lambda q, lo, hi, k: _crosses(origin, inv, grow, rest.take(q), lo, hi, k),
            )  # fmt: skip
            keys.append(rest.take(q) * self.size + k)
        if len(rest) < n:
            keys.append(self._grid_pairs(p0, p1, origin, inv, grow, from_, np.flatnonzero(walk)))
        # A segment meets an item in every cell both cross: keep the pair once.
        key = unique(np.concatenate(keys) if len(keys) > 1 else keys[0])
        return np.divmod(key, self.size)

    def _walk_grid(self, grow: Float, scale: Float) -> Bool:
        """(n,) which segments, reaching ``grow`` (n,) with coordinates up to ``scale``
        (n,), walk the reach grid; made, or remade for a reach past its own, here.

        The grid lists each item in the cells around its box within the grid's reach
        (:class:`~._reachgrid.ReachGrid`): chosen from the segments first asked, so that
        a level's bodies (whose reaches rarely change) each meet a cell or two."""
        size = self.item_size
        fits = grow <= _GRID_MOST * size
        if not fits.any():
            return fits
        need = float(grow[fits].max())
        if self._grid is None or self._grid[0].reach < need:
            old = 0.0 if self._grid is None else self._grid[0].reach
            reach = min(max(_GRID_SPARE * need, _GRID_GROWTH * old, _GRID_LEAST * size),
                        _GRID_MOST * size)  # fmt: skip
            m = self.size
            grid = ReachGrid(self._lo[:, :m], self._hi[:, :m], reach, size)
            big = None
            if len(grid.big) > _BRUTE_BIG:
                big = StaticIndex._of_padded(
                    np.take(self._lo, grid.big, axis=1), np.take(self._hi, grid.big, axis=1),
                    np.take(self._mask, grid.big),
                )  # fmt: skip
            self._grid = (grid, big)
        return self._grid[0].walkable(scale, grow)

    def _grid_pairs(
        self, p0: Float, p1: Float, origin: Float, inv: Float, grow: Float, from_: Int, rows: Int
    ) -> Int:
        """Keys ``q * size + item`` (unsorted, repeated) of segments ``rows`` (origin, inv,
        grow as :func:`_segments` made them for all of p0, p1) that pass
        :func:`_crosses` and the masks, walking the reach grid and asking its tree of
        big items."""
        grid, big = self._grid  # type: ignore[misc]
        q, slot = grid.candidates(p0[rows], p1[rows])
        q = rows.take(q)
        if big is None and len(grid.big):
            # Few big items: every segment against each.
            q = np.concatenate([q, np.repeat(rows, len(grid.big))])
            slot = np.concatenate([slot, np.tile(grid.big, len(rows))])
        hit = _crosses_rows(origin, inv, grow, q, self._boxes, slot)
        if self._masked(from_.take(rows)):
            hit &= (from_.take(q) & self._mask.take(slot)) != 0
        keep = np.flatnonzero(hit)
        key = q.take(keep) * self.size + self._ids.take(slot.take(keep))
        if big is None:
            return key
        bq, bk = big._descend(
            len(rows), from_.take(rows),
            lambda q, lo, hi, k: _crosses(origin, inv, grow, rows.take(q), lo, hi, k),
        )  # fmt: skip
        # The tree of big items holds their slots in this index (its items' ids).
        slots = grid.big.take(bk)
        return np.concatenate([key, rows.take(bq) * self.size + self._ids.take(slots)])

    def _segment_test(
        self, p0: Float, p1: Float, reach: Float, origin: Float | None = None
    ) -> Callable[[Int, Int], Bool]:
        """The test :meth:`segment_pairs` applies to an item, for segments p0, p1 (n, 3)
        with reaches (n,) (and p0 as (3, n) columns, if the caller has them): a function
        of (p,) segments and items, (p,) whether the pair would be found (masks aside)."""
        origin, inv, grow, _scale = _segments(p0, p1, reach, origin)
        if self._item_boxes is None:
            lo = np.empty((3, self.size))
            hi = np.empty((3, self.size))
            lo[:, self._ids[: self.size]] = self._lo[:, : self.size]
            hi[:, self._ids[: self.size]] = self._hi[:, : self.size]
            self._item_boxes = (lo, hi)
        lo, hi = self._item_boxes
        return lambda q, k: _crosses(origin, inv, grow, q, lo, hi, k)

    def _segment_one(self, p0: Float, p1: Float, reach: float, from_mask: int) -> Int:
        """:meth:`segment_pairs` of one segment p0, p1 (3,): its items, sorted.

        A lone ray pays for numpy calls, not for elements, so it gets its own descent in
        the fewest: every node of a narrow level at once, then a few levels at a time, then
        straight to the items. Each box's faces are taken in the order the segment meets
        them (the near face of each axis, then the far one), so its slab times need no
        sorting."""
        if self.size == 0:
            return np.empty(0, dtype=np.int64)
        levels, slots = self._columns()
        (ox, oy, oz), (ex, ey, ez) = p0.tolist(), p1.tolist()
        scale = max(abs(ox), abs(oy), abs(oz), abs(ex), abs(ey), abs(ez))
        grow = reach + DIST_REL_EPS * max(scale, reach)
        # Per axis: the face met first (lo moving up, hi moving down), then the other; an
        # axis the segment does not move along gets a huge finite inverse (never inf: 0 *
        # inf would be nan), so its slab is all or nothing.
        rows, start, inv = [0, 0, 0, 0, 0, 0], [0.0] * 6, [0.0] * 6
        for axis, (o, e) in enumerate(((ox, ex), (oy, ey), (oz, ez))):
            d = e - o
            up = d >= 0.0
            i = 1.0 / d if abs(d) >= 1e-300 else (1e300 if up else -1e300)
            rows[axis], rows[axis + 3] = (axis, axis + 3) if up else (axis + 3, axis)
            start[axis] = o + grow if up else o - grow
            start[axis + 3] = o - grow if up else o + grow
            inv[axis] = inv[axis + 3] = i
        order = _ORDERS[(rows[0], rows[1], rows[2])]
        at, scale_t = np.array([start, inv])[:, :, None]
        last = len(levels) - 1
        level = min(last, _ONE_START)
        node = np.flatnonzero(_slab((levels[level][order[:, 0]] - at) * scale_t))
        while last - level > _ONE_TAIL:
            step = min(_ONE_STRIDE, last - level - _ONE_TAIL)
            level += step
            node = np.add.outer(node << step, _FANS[step]).ravel()
            node = node[_slab((levels[level][order, node] - at) * scale_t)]
        fan = (1 << (last - level)) * _LEAF
        slot = np.add.outer(node * fan, np.arange(fan)).ravel()
        slot = slot[_slab((slots[order, slot] - at) * scale_t)]
        if (from_mask & self._common_bits) == 0:
            slot = slot[(np.take(self._mask, slot) & from_mask) != 0]
        return np.sort(np.take(self._ids, slot))

    def _masked(self, masks: Int) -> bool:
        """Whether queries of these 32-bit from-masks need the mask test: not where some
        bit is in every mask and every item's (the common case)."""
        return bool((np.bitwise_and.reduce(masks) & self._common_bits) == 0)

    def _columns(self) -> tuple[list[Float], Float]:
        """The tree's boxes as (6, nodes) columns ``lo, hi`` per level and the items' as
        (6, slots), for :meth:`_segment_one`. Made on its first call."""
        if self._segment_columns is None:
            levels = [np.concatenate([lo, hi]) for lo, hi, _mask in self._levels]
            self._segment_columns = (levels, np.concatenate([self._lo, self._hi]))
        return self._segment_columns

    def _descend(
        self, r: int, mask: Int, test: Callable[[Int, Float, Float, Int], Bool]
    ) -> tuple[Int, Int]:
        """(query, item) of every pair ``test(q, lo, hi, node)`` keeps, for r queries with
        32-bit from-masks ``mask`` (r,): the test of (query, node) pairs against boxes lo,
        hi (3, .), level by level, then against the items. Unsorted.

        The frontier holds (query, node) pairs that pass; each level keeps those children
        that still do. Each item lies in one leaf, so each pair is found once."""
        # The mask test is skipped when some bit is in every mask (the common case).
        masked = self._masked(mask)
        if r * self.size <= _ALL_PAIRS:
            # A few items (a kinematic piece's boxes, a level's pillars) and a few queries:
            # every (query, item) pair at once, one test, the pairs the tree would find (a
            # node's box holds its items': a pair the test keeps, every ancestor keeps).
            q = np.repeat(np.arange(r), self.size)
            slot = np.tile(np.arange(self.size), r)  # (the items fill the first slots)
            hit = test(q, self._lo, self._hi, slot)
            if masked:
                hit &= (np.take(mask, q) & np.take(self._mask, slot)) != 0
            keep = np.flatnonzero(hit)
            return np.take(q, keep), np.take(self._ids, np.take(slot, keep))
        # A few queries start below the root, against every node of a level at once: the
        # levels above cost more numpy calls than the wider test does (each level is some
        # ten calls, whatever the frontier's size).
        start = min(len(self._levels) - 1, max(0, int(np.log2(_WIDE_START / r))))
        width = 1 << start
        q = np.repeat(np.arange(r), width)
        node = np.tile(np.arange(width, dtype=np.int64), r)
        for depth, (lo, hi, nmask) in enumerate(self._levels):
            if depth < start:
                continue
            if depth > start:
                q = np.repeat(q, 2)
                node = (node[:, None] * 2 + np.arange(2)).ravel()
            hit = test(q, lo, hi, node)
            if masked:
                hit &= (np.take(mask, q) & np.take(nmask, node)) != 0
            keep = np.flatnonzero(hit)
            q = np.take(q, keep)
            node = np.take(node, keep)
        q = np.repeat(q, _LEAF)
        slot = (node[:, None] * _LEAF + np.arange(_LEAF)).ravel()
        hit = test(q, self._lo, self._hi, slot)
        if masked:
            hit &= (np.take(mask, q) & np.take(self._mask, slot)) != 0
        keep = np.flatnonzero(hit)
        return np.take(q, keep), np.take(self._ids, np.take(slot, keep))

    def _pairs(self, qlo: Float, qhi: Float, ids: Int, from_: Int, n: int) -> tuple[Int, Int]:
        """Pairs (ids[q], item) for query boxes qlo, qhi (3, r) already padded, sorted."""
        empty = np.empty(0, dtype=np.int64)
        if self.size == 0 or qlo.shape[1] == 0:
            return empty, empty.copy()
        q, k = self._descend(
            qlo.shape[1], np.take(from_, ids), lambda q, lo, hi, k: _overlap(qlo, qhi, q, lo, hi, k)
        )
        i = np.take(ids, q)
        # Queries come out grouped in order already only if ids increase; sorting the keys
        # settles both orders at once.
        key = np.sort(i * self.size + k)
        return np.divmod(key, self.size)
