"""Broad phase: which sphere pairs, and which sphere-plane pairs, need an exact swept test?

A sphere moving from ``p0`` to ``p1`` in one frame stays inside its *swept box*: the
axis-aligned box ``min(p0, p1) - reach`` to ``max(p0, p1) + reach``, with ``reach`` its
radius plus an optional margin. :func:`sphere_pairs` returns exactly the pairs whose swept
boxes overlap (closed boxes: touching counts) and whose collide masks and moving flags allow
a contact. :func:`sphere_plane_pairs` does the same against half-spaces, and
:class:`StaticIndex` (built once per static mesh) against a level's triangles.

Each box is grown by ``DIST_REL_EPS`` times its own scale (the largest of its coordinate
magnitudes and its reach) so that two surfaces touching within float64 rounding are never
lost; no other tolerance is involved.

The sphere search has no Python loop per box or per pair. Boxes of up to a few median
sizes are filed under every cell they touch and paired within cells (:func:`_cell_pairs`);
larger boxes, and scenes too dense for that, go to grids: boxes are split into size
classes (each at most half as many boxes as the last, so fast movers do not coarsen the
grid of the crowd); each class is filed in a uniform grid whose cell edge is chosen for
the queries it will get, and every box looks up the grid columns it covers in its own
class and in all finer ones. For scenes spread out in space the cost grows about as
n log n plus the number of pairs reported.

This module never imports panda3d: it is the geometry layer, usable on its own.

Examples
--------
>>> import numpy as np
>>> from panda3d_ccd.broadphase import sphere_pairs, sphere_plane_pairs
>>> p0 = np.array([[0.0, 0, 0], [10, 0, 0], [10, 0.8, 0]])
>>> p1 = np.array([[10.0, 0, 0], [10, 0, 0], [10, 0.8, 0]])
>>> sphere_pairs(p0, p1, 0.5)
(array([0, 0, 1]), array([1, 2, 2]))
>>> sphere_pairs(p0, p1, 0.5, moving=[True, False, False])
(array([0, 0]), array([1, 2]))
>>> sphere_plane_pairs(p0, p1, 0.5, [[-1.0, 0, 0]], [9.0], moving=[True, False, False])
(array([0]), array([0]))
>>> sphere_pairs(p0, p1, -0.5)
Traceback (most recent call last):
    ...
ValueError: radius must be finite and >= 0, got -0.5
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _check
from ._arrays import largest_abs, ranges, unique
from ._arrays import length as _length
from ._tolerance import DIST_REL_EPS

if TYPE_CHECKING:
    from ._index import StaticIndex

__all__ = ["StaticIndex", "sphere_pairs", "sphere_plane_pairs"]


def __getattr__(name: str) -> Any:
    # The static index (in its own module, which builds on the helpers below) is loaded on
    # first use: importing it here at the top would be circular.
    if name == "StaticIndex":
        from ._index import StaticIndex

        return StaticIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: At or below this many boxes, every pair is tested at once as an (m, m) table.
_BRUTE_MAX = 128
#: Above that and up to this many, sort and sweep along one axis (see _sweep_pairs), if the
#: boxes overlap on that axis in at most ``_SWEEP_WORK`` pairs per box; the grid otherwise.
#: On the game-like scene's first frame the broad phase took (table or grid -> sweep) 0.6
#: -> 0.3 ms at 300 spheres and 1.4 -> 0.8 ms at 1,000 (where the grid cost 1.2 ms at the
#: least); at 3,000 the grid was faster, and a sweep along a crowd's long axis, or past a
#: big box, tests many pairs that overlap on that axis alone.
_SWEEP_MAX = 2048
_SWEEP_WORK = 40
#: Sweeps are cut into pieces (``split``) only above this many spheres: below it, their
#: whole boxes are few enough to pair up directly.
_PIECE_ROWS = 128
#: A class holds the boxes at most this many times the median box size of what is left.
_CLASS_SPAN = 2.0
#: Cells of _cell_pairs: this many median box sizes a side; a box spanning more than two
#: of them along some axis goes to the grids. Where boxes sharing a cell make more than
#: ``_CELL_WORK`` pairs per box (a dense pile, or cells coarsened by long pieces), or
#: ``_CELL_PAIRS`` in all, the grids take over. The game-like scene makes about 2 per box.
_CELL_EDGE = 4.0
_CELL_WORK = 8
_CELL_PAIRS = 1 << 22
#: The eight steps (0 or 1 along each axis) from a box's lowest cell to its others, by
#: octant: bit k of an octant is its step along axis k.
_OFFSETS = np.array([[0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]])
#: [span, octant]: whether a box whose span code (bit k: two cells along axis k) is
#: ``span`` touches the cell of that octant: the octant steps only along spanned axes.
_TOUCHES = (np.arange(8)[None, :] & ~np.arange(8)[:, None]) == 0
#: Grid cell edges tried, as multiples of the class's median box size.
_CELL_TRIALS = 2.0 ** np.arange(-4, 3)
#: Estimated costs of looking up one grid column, and of taking a box from an inner cell
#: untested, relative to testing one box pair; they steer the choice of cell edge.
_COLUMN_COST = 4.0
_INNER_COST = 0.3
#: Largest number of grid cells: cell keys must fit in int64.
_MAX_KEY = 2.0**62
#: Rows of intermediate arrays handled at once, to bound memory on dense scenes.
_CHUNK = 1 << 16
#: A grid keeps a dense table of cell starts if it has at most this many cells per box
#: (plus a few); beyond that it numbers only the occupied cells and searches.
_DENSE_PER_BOX = 32
_DENSE_MIN = 4096
#: With ``split``, a sweep is cut into pieces about this many reaches long (its own reach,
#: or the median one if larger, so points do not shatter), at most ``_MAX_PIECES`` of them.
#: Shorter pieces box the swept capsule more tightly but cost grid work of their own; 8
#: was fastest over the benchmark scenes (fast movers at 50 units a frame in a crowd).
_PIECE_REACHES = 8.0
_MAX_PIECES = 64


# --------------------------------------------------------------------------- validation


def _positions(name: str, value: ArrayLike) -> Float:
    return _check.points(name, value, single=False)


def _planes(normals: ArrayLike, offsets: ArrayLike) -> tuple[Float, Float, Float]:
    """Unit normals (m, 3), offsets (m,) scaled to match, and the normals' lengths (m,)."""
    nrm = _positions("normals", normals)
    m = nrm.shape[0]
    off = np.asarray(offsets, dtype=np.float64)
    if off.shape != (m,):
        raise ValueError(f"offsets must have shape ({m},) to match normals, got {off.shape}")
    length = np.linalg.norm(nrm, axis=1)
    bad = ~np.isfinite(length) | (length == 0)
    if np.any(bad):
        raise ValueError(f"normals must be finite and non-zero, got {nrm[bad][0].tolist()}")
    if not np.all(np.isfinite(off)):
        raise ValueError(f"offsets must be finite, got {off[~np.isfinite(off)][0]}")
    return nrm / length[:, None], off / length, length


def _empty_pairs() -> tuple[Int, Int]:
    return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)


def _pair_keys(a: Int, b: Int, n: int) -> Int:
    """Pairs (a, b) of indices below n as single int64 keys ``min * n + max``."""
    return np.minimum(a, b) * n + np.maximum(a, b)


# ----------------------------------------------------------------------------- spheres


def _axis_major(p0: Float, p1: Float) -> tuple[Float, Float]:
    """p0, p1 (n, 3) as (3, n): contiguous copies where that pays (more than a table's
    worth of rows), the transposed views otherwise (the same values; a few rows are read
    as fast either way)."""
    if len(p0) <= _BRUTE_MAX:
        return p0.T, p1.T
    return np.ascontiguousarray(p0.T), np.ascontiguousarray(p1.T)


def _swept_boxes(p0: Float, p1: Float, reach: Float) -> tuple[Float, Float]:
    """Swept boxes grown by the rounding pad, as lo, hi (3, n): nan where not finite.

    Boxes are kept axis-major, one contiguous row per axis, throughout the search: numpy
    reduces and gathers rows of that layout many times faster than (n, 3) arrays.
    """
    lo, hi, _grow, _scale = _swept_reach(p0, p1, reach)
    return lo, hi


def _swept_reach(p0: Float, p1: Float, reach: Float) -> tuple[Float, Float, Float, Float]:
    """:func:`_swept_boxes`, and (n,) how far each box was grown and its sweep's largest
    coordinate magnitude (the same two numbers a segment test of the sweep takes: see
    ``_index._segments``)."""
    a, b = _axis_major(p0, p1)
    with np.errstate(invalid="ignore", over="ignore"):
        # (The largest of all six magnitudes, as the largest of each end's: the same value.)
        scale = np.maximum(np.abs(a), np.abs(b)).max(axis=0)
        grow = reach + DIST_REL_EPS * np.maximum(scale, reach)
        # (Axis-major, whatever the layout of a and b: the search reads rows of an axis.)
        lo = np.minimum(a, b, order="C") - grow
        hi = np.maximum(a, b, order="C") + grow
    return lo, hi, grow, scale


def _pieces(
    p0: Float, p1: Float, reach: Float, rows: Int, moving: Bool, cut: Bool
) -> _Boxes | None:
    """The boxes of the pieces of the sweeps of ``rows`` (one piece where not ``cut``),
    each piece carrying its sphere's index as its id; None where every sweep is one piece.
    Consecutive pieces share an endpoint computed by one formula, so the pieces cover the
    whole segment exactly, and each box gets the usual rounding pad."""
    a, b, r = (p0, p1, reach) if len(rows) == len(p0) else (p0[rows], p1[rows], reach[rows])
    length = _length(b - a)
    # A sweep shorter than _PIECE_REACHES of its own reaches is one piece whatever the
    # median (the piece edge is at least that long): the usual answer, without the median.
    if not np.any(cut[rows] & ~(length < _PIECE_REACHES * r)):
        return None
    edge = _PIECE_REACHES * np.maximum(r, np.median(r))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        count = np.ceil(np.where(edge > 0, length / edge, _MAX_PIECES))
    count = np.clip(np.nan_to_num(count, nan=1.0), 1, _MAX_PIECES).astype(np.int64)
    count[~cut[rows]] = 1
    if not (count > 1).any():
        return None  # no sweep long enough to cut (most frames of a game)
    owner = np.repeat(np.arange(len(rows)), count)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(count) - count, count)
    whole = count[owner]
    d = (b - a)[owner]
    start = a[owner] + (k / whole)[:, None] * d
    last = k + 1 == whole
    end = np.where(last[:, None], b[owner], a[owner] + ((k + 1) / whole)[:, None] * d)
    lo, hi = _swept_boxes(start, end, r[owner])
    ids = rows[owner]
    return _Boxes(lo, hi, ids, moving[ids])


def sphere_pairs(
    p0: ArrayLike,
    p1: ArrayLike,
    radius: ArrayLike,
    from_mask: ArrayLike | None = None,
    into_mask: ArrayLike | None = None,
    *,
    moving: ArrayLike | None = None,
    margin: ArrayLike | None = None,
    split: ArrayLike | None = None,
) -> tuple[Int, Int]:
    """Candidate pairs of moving spheres whose swept volumes could touch during the frame.

    Parameters
    ----------
    p0, p1 : (n, 3) float64
        Sphere centres at the start and end of the frame. Rows with a non-finite value are
        ignored: they are never reported; so are rows whose swept box is too large to
        measure in float64 (an extent beyond about 1e308).
    radius : (n,) or scalar float64
        Radii, finite and >= 0.
    from_mask, into_mask : (n,) or scalar integer, optional
        32-bit collide masks (BitMask32 words, 0 to 2**32 - 1); None means all bits on. A
        pair is a candidate only if ``(from_mask[i] & into_mask[j]) | (from_mask[j] &
        into_mask[i])`` is non-zero.
    moving : (n,) or scalar bool, optional
        Which spheres move this frame (None: all). A pair of two still spheres is never
        reported, since they cannot start a contact.
    margin : (n,) or scalar float64, optional
        Extra reach, finite and >= 0, added to the radius when bounding the sweep (for
        colliders whose path may bend within the frame).
    split : (n,) or scalar bool, optional
        Which sweeps to cut into pieces about eight reaches long, each boxed on its own
        (None: none). A fast mover's box then no longer takes in the whole crowd around its
        diagonal, only what lies along its path. Every pair whose swept spheres can touch
        is still reported (the pieces' boxes hold the sweep), and no pair the whole boxes
        would not report. Only for straight paths: a path that may bend within its box
        (``margin``) needs the whole box. Up to 128 spheres are not cut: pairing their
        whole boxes directly is cheaper than pieces.

    Returns
    -------
    i, j : (k,) int64
        Every pair whose swept boxes overlap (with ``split``: a piece of each) and that
        masks and ``moving`` allow, exactly once, with ``i < j``, sorted by ``i`` then
        ``j``.
    """
    p0_, p1_ = _check.sweeps(p0, p1)
    n = p0_.shape[0]
    reach = _check.lengths("radius", radius, n)
    if margin is not None:
        reach = reach + _check.lengths("margin", margin, n)
    from_ = _check.masks("from_mask", from_mask, n)
    into = _check.masks("into_mask", into_mask, n)
    moves = _check.flags("moving", moving, n, default=True)
    cut = _check.flags("split", split, n, default=False)
    return _sphere_pairs(p0_, p1_, reach, from_, into, moves, cut)


def _sphere_pairs(
    p0: Float, p1: Float, reach: Float, from_: Int, into: Int, moves: Bool, cut: Bool
) -> tuple[Int, Int]:
    """:func:`sphere_pairs` on arguments already checked and broadcast to (n,) rows, with
    ``reach`` the radius plus margin (the solver calls this once per pass)."""
    n = p0.shape[0]
    # Where some bit is in every mask (the common case), every pair passes the masks.
    masked = (np.bitwise_and.reduce(from_) & np.bitwise_and.reduce(into)) == 0
    pairable = None
    if masked:
        # Rows that can be in a pair at all (a from bit some row is into, or the reverse);
        # dropping them early keeps them out of the grid.
        pairable = (
            (from_ & np.bitwise_or.reduce(into)) | (into & np.bitwise_or.reduce(from_))
        ) != 0
        if not pairable.any():
            return _empty_pairs()  # (spheres that meet only the level, none another)
    lo, hi = _swept_boxes(p0, p1, reach)
    with np.errstate(invalid="ignore", over="ignore"):
        live = np.isfinite(hi - lo).all(axis=0)
    if pairable is not None:
        live &= pairable
    rows = np.flatnonzero(live)
    every = len(rows) == n
    if len(rows) < 2 or not np.any(moves if every else moves[rows]):
        return _empty_pairs()
    if len(rows) <= min(_BRUTE_MAX, _PIECE_ROWS):
        # A few: one table of every pair, found in order (i, then j).
        if every:
            i, j = _table_pairs(lo, hi, moves)
        else:
            a, b = _table_pairs(np.take(lo, rows, axis=1), np.take(hi, rows, axis=1), moves[rows])
            i, j = rows[a], rows[b]
        if masked:
            keep = ((from_[i] & into[j]) | (from_[j] & into[i])) != 0
            i, j = i[keep], j[keep]
        return i, j
    found: list[Int] = [np.empty(0, dtype=np.int64)]
    # Cutting pays only where the grid does: few boxes are all tested pairwise anyway.
    boxes = None
    if len(rows) > _PIECE_ROWS and np.any(cut[rows]):
        boxes = _pieces(p0, p1, reach, rows, moves, cut)
    if boxes is None and every:
        boxes = _Boxes(lo, hi, rows, moves)
    elif boxes is None:
        boxes = _Boxes(np.take(lo, rows, axis=1), np.take(hi, rows, axis=1), rows, moves[rows])
    _box_pairs(boxes, n, found)
    key = np.concatenate(found)
    if len(boxes.ids) > len(rows):
        # Pieces of one sweep pair up with each other, and two sweeps can meet in several
        # pieces: keep each pair of distinct spheres once.
        i, j = np.divmod(key, n)
        key = np.sort(key[i != j])
        fresh = np.ones(len(key), dtype=bool)
        fresh[1:] = key[1:] != key[:-1]
        key = key[fresh]
    # The mask filter is skipped when some bit is in every mask (the common case).
    if masked and (np.bitwise_and.reduce(from_[rows]) & np.bitwise_and.reduce(into[rows])) == 0:
        i, j = np.divmod(key, n)
        fi, fj = np.take(from_, i), np.take(from_, j)
        key = key[((fi & np.take(into, j)) | (fj & np.take(into, i))) != 0]
    key.sort()
    return np.divmod(key, n)


def _table_pairs(lo: Float, hi: Float, moving: Bool) -> tuple[Int, Int]:
    """(a, b), a < b, sorted by a then b: the pairs of overlapping closed boxes lo, hi
    (3, m) of which at least one moves, found as one (m, m) table."""
    hit = (lo[:, :, None] <= hi[:, None, :]).all(axis=0)
    hit &= hit.T
    if not moving.all():
        hit &= moving[:, None] | moving
    hit &= _above_diagonal(len(moving))  # symmetric: keep each pair once
    return np.nonzero(hit)


@cache
def _above_diagonal(m: int) -> Bool:
    """(m, m) read-only: True where the column is after the row (np.triu made once for
    each size of table, up to _BRUTE_MAX)."""
    upper = np.triu(np.ones((m, m), bool), 1)
    upper.flags.writeable = False
    return upper


# ----------------------------------------------------------------- box overlap search


class _Boxes:
    """Boxes lo, hi (3, m) float64, their indices ids (m,) and whether they move (m,)."""

    def __init__(self, lo: Float, hi: Float, ids: Int, moving: Bool) -> None:
        self.lo = lo
        self.hi = hi
        self.ids = ids
        self.moving = moving

    def __getitem__(self, rows: Int) -> _Boxes:
        if len(rows) == len(self.ids):
            return self  # rows are always increasing: all of them means no change
        take = np.take
        return _Boxes(
            take(self.lo, rows, axis=1),
            take(self.hi, rows, axis=1),
            self.ids[rows],
            self.moving[rows],
        )


def _box_pairs(boxes: _Boxes, n: int, found: list[Int]) -> None:
    """Append to ``found`` the pair keys (see :func:`_pair_keys`) of every pair of
    overlapping closed boxes of which at least one moves, each pair once.

    Where :func:`_cell_pairs` takes them (most scenes), the boxes of up to a few median
    sizes pair among themselves in cells and are this level's class. Otherwise the boxes
    no larger than ``_CLASS_SPAN`` times the median size (at least half of them)
    form this level's class and are filed in two grids, the moving and the still ones;
    the other boxes query them. The larger boxes are then paired among themselves
    recursively, so each pair is found at the level of its smaller box, and the recursion
    is at most log2(m) deep. Pairs of two still boxes are never looked at: a crowd at rest
    costs no more than its moving members.
    """
    lo, hi, ids, moving = boxes.lo, boxes.hi, boxes.ids, boxes.moving
    m = lo.shape[1]
    if _BRUTE_MAX < m <= _SWEEP_MAX and _sweep_pairs(boxes, n, found):
        return
    if m <= _BRUTE_MAX:
        # Every pair at once, as an (m, m) table: a few whole-table operations.
        a, b = _table_pairs(lo, hi, moving)
        found.append(_pair_keys(ids[a], ids[b], n))
        return
    size = (hi - lo).max(axis=0)
    median = float(np.partition(size, m // 2)[m // 2])  # no averaging: cannot overflow
    # Most scenes: the boxes of up to a few median sizes pair among themselves in cells
    # (they are then this level's class, whose pairs are all found), the others below.
    small = _cell_pairs(boxes, median, n, found)
    # The class's own boxes ask its grids too, unless the cells found their pairs.
    own = np.zeros(m, dtype=bool) if small is not None else size <= _CLASS_SPAN * median
    if small is None:
        small = own
    elif small.all():
        return
    rows = np.flatnonzero(small)
    flo = np.take(lo, rows, axis=1)
    fhi = np.take(hi, rows, axis=1)
    cell = _cell_edge(flo, fhi, lo, hi, own, median)
    # Moving boxes of the class are found by everything but the still boxes of the class;
    # among themselves with half queries, so that each pair comes up once.
    filed = np.flatnonzero(small & moving)
    if len(filed):
        asking = np.flatnonzero(~small | (own & moving))
        grid = _Grid(np.take(lo, filed, axis=1), np.take(hi, filed, axis=1), ids[filed], cell)
        grid.query(boxes[asking], (own & moving)[asking], n, found)
    # Still boxes of the class are found by the moving boxes only.
    filed = np.flatnonzero(small & ~moving)
    asking = np.flatnonzero(moving & (~small | own))
    if len(filed) and len(asking):
        grid = _Grid(np.take(lo, filed, axis=1), np.take(hi, filed, axis=1), ids[filed], cell)
        grid.query(boxes[asking], np.zeros(len(asking), dtype=bool), n, found)
    large = np.flatnonzero(~small)
    if len(large) > 1:
        _box_pairs(boxes[large], n, found)


def _cell_pairs(boxes: _Boxes, median: float, n: int, found: list[Int]) -> Bool | None:
    """Append to ``found`` the pairs among the boxes spanning at most two cells of
    ``_CELL_EDGE`` median sizes along each axis, and return which boxes those are; None,
    having found nothing, where cells would not do (points, far outliers, dense piles).

    Each box is filed under every cell it touches, the moving ones first in each cell; a
    moving box is tested against those after it in its cells. Two overlapping boxes share
    the cell that holds the larger of their lower corners on each axis, and are reported
    there only: once. Pairs of two still boxes are never looked at.
    """
    lo, hi, moving = boxes.lo, boxes.hi, boxes.moving
    m = lo.shape[1]
    edge = _CELL_EDGE * median
    if not 0.0 < edge < np.inf:
        return None
    origin = lo.min(axis=1)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        c0 = np.floor((lo - origin) / edge)
        span = np.floor((hi - origin) / edge) - c0
        dims = c0.max(axis=1) + 2
        if not np.prod(dims) * 16 * m < 2.0**62:
            return None  # far outliers: the grids number only the occupied cells
    small = span.max(axis=0) <= 1
    rows = np.flatnonzero(small)
    ids = boxes.ids
    if len(rows) < m:
        c0, span = np.take(c0, rows, axis=1), np.take(span, rows, axis=1)
        lo, hi = np.take(lo, rows, axis=1), np.take(hi, rows, axis=1)
        ids, moving = np.take(ids, rows), np.take(moving, rows)
    c0 = c0.astype(np.int64)
    dims = dims.astype(np.int64)
    # Each box's cells: its lowest, ``corner``, and those one step up along the axes it
    # spans two cells of. Its entries name them ``8 * box + octant``, in one flatnonzero.
    code = (span[0] + 2 * span[1] + 4 * span[2]).astype(np.intp)
    entry = np.flatnonzero(np.take(_TOUCHES, code, axis=0))
    corner = (c0[0] * dims[1] + c0[1]) * dims[2] + c0[2]
    step = (_OFFSETS[0] * dims[1] + _OFFSETS[1]) * dims[2] + _OFFSETS[2]
    key = np.take(corner, entry >> 3) + np.take(step, entry & 7)
    # By cell, the moving boxes first.
    cells = int(np.prod(dims))
    stirs = not moving.all()
    if stirs:
        order = _radix_order(key * 2 + ~np.take(moving, entry >> 3), 2 * cells)
    else:
        order = _radix_order(key, cells)
    key, entry = np.take(key, order), np.take(entry, order)
    # Where each cell's run of entries starts, and the end of all.
    e = len(entry)
    bound = np.empty(e + 1, dtype=bool)
    bound[0] = bound[e] = True
    np.not_equal(key[1:], key[:-1], out=bound[1:e])
    bound = np.flatnonzero(bound)
    ends = bound[1:]
    # The entries after each in its cell, all of which a moving box is tested against.
    later = np.repeat(ends, ends - bound[:-1]) - np.arange(1, e + 1)
    if stirs:
        later[~np.take(moving, entry >> 3)] = 0
    total = int(later.sum())
    if total > min(_CELL_WORK * len(rows), _CELL_PAIRS):
        return None
    a = np.repeat(entry, later)
    b = np.take(entry, ranges(np.arange(1, e + 1), later))
    # The pair's own cell holds the larger lowest cell of the two along each axis: there
    # along each axis one of them (or both) has taken no step up from its lowest cell.
    hit = (a & b & 7) == 0
    a >>= 3
    b >>= 3
    for axis in range(3):
        hit &= np.take(lo[axis], a) <= np.take(hi[axis], b)
        hit &= np.take(lo[axis], b) <= np.take(hi[axis], a)
    found.append(_pair_keys(np.take(ids, a[hit]), np.take(ids, b[hit]), n))
    return small


def _radix_order(key: Int, bound: int) -> Int:
    """Indices that sort ``key`` (integers from 0 to below ``bound``), by stable sorts of
    its 16-bit digits, the lowest first. numpy sorts 16-bit integers by counting (a radix
    sort): at 6,000 cell keys 21 us a digit, where ``np.sort`` of int64 takes 130 us."""
    order = None
    for shift in range(0, max(bound - 1, 1).bit_length(), 16):
        digits = (key if order is None else np.take(key, order)) >> shift
        step = np.argsort((digits & 0xFFFF).astype(np.uint16), kind="stable")
        order = step if order is None else np.take(order, step)
    assert order is not None
    return order


def _sweep_pairs(boxes: _Boxes, n: int, found: list[Int]) -> bool:
    """:func:`_box_pairs` by sort and sweep: boxes sorted by their low end on the axis they
    spread most along; each box meets the later ones that start before it ends there, and
    those pairs are tested on the other two axes. Returns False, having found nothing, if
    that would test more than ``_SWEEP_WORK`` pairs per box (then the grid does better)."""
    lo, hi = boxes.lo, boxes.hi
    m = lo.shape[1]
    axis = int(np.argmax(hi.max(axis=1) - lo.min(axis=1)))
    order = np.argsort(lo[axis], kind="stable")
    lo, hi = lo[:, order], hi[:, order]
    # Box k meets the boxes after it in this order that start no later than it ends.
    count = np.searchsorted(lo[axis], hi[axis], side="right") - np.arange(1, m + 1)
    count = np.maximum(count, 0)
    total = int(count.sum())
    if total > _SWEEP_WORK * m:
        return False
    a = np.repeat(np.arange(m), count)
    b = np.arange(total) - np.repeat(np.cumsum(count) - count, count) + a + 1
    other = [d for d in range(3) if d != axis]
    hit = (lo[other[0], a] <= hi[other[0], b]) & (lo[other[0], b] <= hi[other[0], a])
    hit &= (lo[other[1], a] <= hi[other[1], b]) & (lo[other[1], b] <= hi[other[1], a])
    moving = boxes.moving[order]
    hit &= moving[a] | moving[b]
    ids = boxes.ids[order]
    found.append(_pair_keys(ids[a[hit]], ids[b[hit]], n))
    return True


def _grid_axes(lo: Float, hi: Float) -> Int:
    """Axis order for a grid: the axis the boxes span most goes last, so that its runs of
    cells are contiguous and looked up at once."""
    return np.argsort(hi.max(axis=1) - lo.min(axis=1), kind="stable")


def _cell_edge(flo: Float, fhi: Float, lo: Float, hi: Float, half: Bool, median: float) -> float:
    """The grid cell edge, among a few multiples of the median box size, that minimises the
    estimated work of the queries ``lo, hi`` against the boxes ``flo, fhi`` to be filed.

    Work counts one unit per box tested and ``_COLUMN_COST`` per column looked up, with the
    boxes spread evenly over the region that holds the middle 90% of them (a few far ones
    would make the crowd look sparse). Large cells mean few columns but many boxes tested
    per query, small ones the reverse; the best edge depends on how far the queries reach,
    which a fixed rule cannot know (fast movers stretch their boxes).
    """
    axes = _grid_axes(flo, fhi)
    k = flo.shape[1]
    corner_span = (flo.max(axis=1) - flo.min(axis=1))[axes]
    picks = _sample(k)
    bulk = np.diff(np.quantile(flo[:, picks], [0.05, 0.95], axis=1), axis=0)[0][axes] / 0.9
    if median <= 0:
        # Points: about one per cell if spread out; any edge will do if they all coincide.
        median = float(bulk.max()) / np.cbrt(k) or float(corner_span.max()) or 1.0
    reach = (fhi - flo).max(axis=1)[axes]
    sample = _sample(lo.shape[1])
    with np.errstate(over="ignore"):
        edge = np.minimum(median * _CELL_TRIALS[:, None, None], np.finfo(np.float64).max)
    # Bounded, so that far-flung boxes (overflowing sums and ratios) leave every estimate
    # finite.
    grid = np.minimum(np.floor(np.minimum(bulk, corner_span)[:, None] / edge) + 1, 2.0**52)
    with np.errstate(over="ignore"):
        ext = (hi[:, sample] - lo[:, sample])[axes] + reach[:, None]
        ext[0, half[sample]] -= reach[0]
        cells = np.minimum(ext / edge + 1, grid)
        inner = np.clip((ext - reach[:, None]) / edge - 1, 0, grid) / grid
    columns = cells[:, 0] * cells[:, 1]
    share = cells / grid
    # Boxes in cells wholly inside a query need no test; they cost a fraction of one.
    tested = k * (
        share[:, 0] * share[:, 1] * share[:, 2]
        - (1 - _INNER_COST) * inner[:, 0] * inner[:, 1] * inner[:, 2]
    )
    # Occupied cells only are numbered when the grid would be sparse: at most k per axis.
    total = np.minimum(np.floor(corner_span[:, None] / edge) + 1, k).prod(axis=1)[:, 0]
    # Too many cells for a dense start table: each lookup becomes a binary search.
    lookup = np.where(total <= _DENSE_PER_BOX * k + _DENSE_MIN, _COLUMN_COST, 8 * _COLUMN_COST)
    # A query that would look up more columns than there are boxes tests them all instead.
    per_query = np.minimum(lookup[:, None] * columns + tested, k)
    work = per_query.mean(axis=1) * lo.shape[1] + 0.1 * np.minimum(total, 2**62)
    return float(edge[np.argmin(work), 0, 0])


def _sample(m: int) -> Int:
    """At most 256 evenly spread row numbers below m (deterministic)."""
    return unique(np.linspace(0, m - 1, min(m, 256)).astype(np.int64))


def _chunks(weights: Int, budget: int) -> list[tuple[int, int]]:
    """Consecutive slices of ``weights`` whose sums are about ``budget`` (to bound memory)."""
    if len(weights) == 0:
        return []
    cum = np.cumsum(weights)
    cuts = np.searchsorted(cum, np.arange(budget, cum[-1], budget), side="left") + 1
    bounds = unique(np.concatenate([[0], cuts, [len(weights)]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


class _Grid:
    """Boxes filed once each, under the grid cell of their lower corner, sorted by cell.

    Cells are keyed ``(cx * ny + cy) * nz + cz`` in the axis order of :func:`_grid_axes`:
    a run of cells along the last axis (a *column*) is one contiguous slice of the sorted
    boxes, found with two lookups. When a few far boxes (objects parked out of the way)
    would spread the grid over empty space, cells are numbered instead by the occupied
    cells along each axis; that keeps ranges ranges, and the grid small.
    """

    def __init__(self, lo: Float, hi: Float, ids: Int, cell: float) -> None:
        self.axes = _grid_axes(lo, hi)
        lo = lo[self.axes]
        hi = hi[self.axes]
        self.origin = lo.min(axis=1)
        self.cell = cell
        scale = max(float(np.abs(lo).max()), float(np.abs(hi).max()))
        # A box can only overlap a query box if its lower corner is at most its extent below
        # the query's; the pad covers rounding in the subtraction that uses it.
        self.reach = (hi - lo).max(axis=1) + 4 * DIST_REL_EPS * scale
        corner = self._cells(lo)
        self.levels: list[Float] | None = None
        self.dims = corner.max(axis=1) + 1
        self.merge = np.ones(3, dtype=np.int64)
        if np.prod(self.dims.astype(np.float64)) > _DENSE_PER_BOX * lo.shape[1] + _DENSE_MIN:
            self.levels = [unique(c).astype(np.float64) for c in corner]
            corner = np.stack([np.searchsorted(u, c) for u, c in zip(self.levels, corner)])
            self.dims = np.array([len(u) for u in self.levels], dtype=np.int64)
            # Keys must fit in int64: merge neighbouring cells (slower, never wrong) if not.
            while np.prod(self.dims.astype(np.float64)) > _MAX_KEY:
                k = int(np.argmax(self.dims))
                self.merge[k] *= 2
                self.dims[k] = (self.dims[k] + 1) // 2
            corner //= self.merge[:, None]
        key = self._key(corner[0], corner[1], corner[2])
        order = np.argsort(key, kind="stable")
        self.keys = np.take(key, order)
        self.ids = np.take(ids, order)
        self.lo = np.take(lo, order, axis=1)
        self.hi = np.take(hi, order, axis=1)
        # A dense table of where each cell starts is one gather per lookup; on sparse scenes
        # (far outliers) it would be too large, and a binary search takes over.
        ncells = int(np.prod(self.dims))
        self.starts: Int | None = None
        if ncells <= _DENSE_PER_BOX * len(key) + _DENSE_MIN:
            counts = np.bincount(self.keys, minlength=ncells)
            self.starts = np.concatenate([[0], np.cumsum(counts)])

    def _cells_float(self, x: Float) -> Float:
        # Clipped (monotonic: boxes that share a cell still do) to stay exact as integers.
        with np.errstate(over="ignore"):
            cells = np.floor((x - self.origin[:, None]) / self.cell)
        return np.clip(cells, -1, 2.0**52)

    def _cells(self, x: Float) -> Int:
        return np.maximum(self._cells_float(x), 0).astype(np.int64)

    def _key(self, cx: Int, cy: Int, cz: Int | int) -> Int:
        return (cx * self.dims[1] + cy) * self.dims[2] + cz

    def _find(self, key: Int) -> Int:
        """Position of the first filed box whose cell key is >= key."""
        if self.starts is not None:
            return np.take(self.starts, key)
        return np.searchsorted(self.keys, key, side="left")

    def query(self, boxes: _Boxes, half: Bool, n: int, found: list[Int]) -> None:
        """Append to ``found`` the pair keys of each query box and each filed box it
        overlaps.

        A ``half`` query sees only filed boxes whose lower corner along the first grid axis
        is above its own, or level with it and of larger index: applied to the filed boxes
        themselves, that finds each pair among them once.
        """
        lo = boxes.lo[self.axes]
        hi = boxes.hi[self.axes]
        ids = boxes.ids
        with np.errstate(over="ignore"):
            down = lo - self.reach[:, None]
        down[0] = np.where(half, lo[0], down[0])
        bottom = self._cells_float(down)
        top = self._cells_float(hi)
        # Cells strictly between the query's own corner cells hold only boxes that overlap
        # it (strictly above its lower corner, so the half rule holds too): no test needed.
        inner0 = self._cells_float(lo) + 1
        inner1 = top - 1
        if self.levels is not None:
            # First occupied cell at or above each lower bound, last at or below each upper.
            for k, u in enumerate(self.levels):
                bottom[k] = np.searchsorted(u, bottom[k], side="left") // self.merge[k]
                top[k] = (np.searchsorted(u, top[k], side="right") - 1) // self.merge[k]
                inner0[k] = np.searchsorted(u, inner0[k], side="left")
                inner1[k] = np.searchsorted(u, inner1[k], side="right") - 1
            if np.any(self.merge > 1):
                inner0[:] = 1
                inner1[:] = 0
        last = (self.dims - 1)[:, None]
        seen = np.all(top >= np.maximum(bottom, 0), axis=0) & np.all(bottom <= last, axis=0)
        inner0 = np.maximum(inner0, 0)
        inner1 = np.minimum(inner1, last)
        cored = np.all(inner0 <= inner1, axis=0)
        for is_half, is_cored in ((True, True), (True, False), (False, True), (False, False)):
            rows = np.flatnonzero(seen & (half == is_half) & (cored == is_cored))
            if len(rows) == 0:
                continue
            if self.starts is None:
                # Binary searches run several times faster on keys that come in order.
                corner = np.clip(bottom[:, rows], 0, last).astype(np.int64)
                rows = rows[np.argsort(self._key(*corner), kind="stable")]
            take = np.take
            queries = _Queries(take(ids, rows), take(lo, rows, axis=1), take(hi, rows, axis=1))
            span = _Span(
                np.clip(bottom[:, rows], 0, last).astype(np.int64),
                np.clip(top[:, rows], 0, last).astype(np.int64),
                inner0[:, rows].astype(np.int64) if is_cored else None,
                inner1[:, rows].astype(np.int64) if is_cored else None,
            )
            self._lookup(queries, span, is_half, n, found)

    def _lookup(self, queries: _Queries, span: _Span, half: bool, n: int, found: list[Int]) -> None:
        """Find the filed boxes in each query's cells; test them, except in its inner cells."""
        width = span.c1 - span.c0 + 1
        columns = width[0] * width[1]
        # A query covering at least as many columns as there are boxes scans them all.
        scan = columns >= len(self.keys)
        wide = np.flatnonzero(scan)
        if len(wide):
            count = np.full(len(wide), len(self.keys), dtype=np.int64)
            self._test(queries, wide, np.zeros_like(count), count, half, n, found)
        narrow = np.flatnonzero(~scan)
        for s, e in _chunks(columns[narrow], _CHUNK):
            which = np.repeat(narrow[s:e], columns[narrow[s:e]])
            step = ranges(0, columns[narrow[s:e]])
            wy = np.take(width[1], which)
            cx = np.take(span.c0[0], which) + step // wy
            cy = np.take(span.c0[1], which) + step % wy
            base = self._key(cx, cy, 0)
            z0 = np.take(span.c0[2], which)
            z1 = np.take(span.c1[2], which)
            if span.i0 is None or span.i1 is None:
                start = self._find(base + z0)
                count = self._find(base + z1 + 1) - start
                full = np.flatnonzero(count)
                self._test(queries, which[full], start[full], count[full], half, n, found)
                continue
            # Split each column into below / inner / above the query's inner cells; the
            # inner slice is empty unless the column itself is inner along x and y.
            inner = (np.take(span.i0[0], which) <= cx) & (cx <= np.take(span.i1[0], which))
            inner &= (np.take(span.i0[1], which) <= cy) & (cy <= np.take(span.i1[1], which))
            i0 = np.where(inner, np.maximum(np.take(span.i0[2], which), z0), z1 + 1)
            i1 = np.where(inner, np.minimum(np.take(span.i1[2], which), z1), z1)
            i1 = np.maximum(i1, i0 - 1)
            at = [self._find(base + z) for z in (z0, i0, i1 + 1, z1 + 1)]
            direct = np.flatnonzero(at[2] > at[1])
            if len(direct):
                count = at[2][direct] - at[1][direct]
                t = ranges(at[1][direct], count)
                qid = np.repeat(np.take(queries.ids, which[direct]), count)
                found.append(_pair_keys(qid, np.take(self.ids, t), n))
            which = np.concatenate([which, which])
            start = np.concatenate([at[0], at[2]])
            count = np.concatenate([at[1] - at[0], at[3] - at[2]])
            full = np.flatnonzero(count)
            self._test(queries, which[full], start[full], count[full], half, n, found)

    def _test(
        self,
        queries: _Queries,
        which: Int,
        start: Int,
        count: Int,
        half: bool,
        n: int,
        found: list[Int],
    ) -> None:
        """Exact box test of query ``which[k]`` against filed boxes start[k]:start[k]+count[k]."""
        for s, e in _chunks(count, _CHUNK):
            t = ranges(start[s:e], count[s:e])
            q = np.repeat(which[s:e], count[s:e])
            # One axis first: in sparse scenes most candidates fail it, and the other two are
            # then tested on the few left.
            for axes in ((2,), (0, 1)):
                hit = np.ones(len(t), dtype=bool)
                for k in axes:
                    hit &= np.take(queries.lo[k], q) <= np.take(self.hi[k], t)
                    hit &= np.take(self.lo[k], t) <= np.take(queries.hi[k], q)
                idx = np.flatnonzero(hit)
                q = np.take(q, idx)
                t = np.take(t, idx)
            qid = np.take(queries.ids, q)
            tid = np.take(self.ids, t)
            if half:
                lo_t = np.take(self.lo[0], t)
                lo_q = np.take(queries.lo[0], q)
                keep = np.flatnonzero((lo_t > lo_q) | ((lo_t == lo_q) & (tid > qid)))
                qid, tid = np.take(qid, keep), np.take(tid, keep)
            found.append(_pair_keys(qid, tid, n))


class _Queries:
    """Query boxes lo, hi (3, m) in grid axis order, and their indices (m,)."""

    def __init__(self, ids: Int, lo: Float, hi: Float) -> None:
        self.ids = ids
        self.lo = lo
        self.hi = hi


class _Span:
    """Cells c0..c1 (3, m) a query covers, and its inner cells i0..i1 (3, m) if it has any."""

    def __init__(self, c0: Int, c1: Int, i0: Int | None, i1: Int | None) -> None:
        self.c0 = c0
        self.c1 = c1
        self.i0 = i0
        self.i1 = i1


# ------------------------------------------------------------------------------ planes


def sphere_plane_pairs(
    p0: ArrayLike,
    p1: ArrayLike,
    radius: ArrayLike,
    normals: ArrayLike,
    offsets: ArrayLike,
    sphere_from_mask: ArrayLike | None = None,
    plane_into_mask: ArrayLike | None = None,
    *,
    moving: ArrayLike | None = None,
    plane_moving: ArrayLike | None = None,
    plane_offsets1: ArrayLike | None = None,
) -> tuple[Int, Int]:
    """Candidate (sphere, plane) pairs: spheres that come within their radius of a half-space.

    Parameters
    ----------
    p0, p1 : (n, 3) float64
        Sphere centres at the start and end of the frame; non-finite rows are ignored.
    radius : (n,) or scalar float64
        Radii (plus any margin), finite and >= 0.
    normals : (m, 3) float64
        Plane normals, finite and non-zero (normalised here, with the offsets). The plane
        is ``normal . x + offset = 0``; the solid is behind it.
    offsets : (m,) float64
        Plane offsets at the start of the frame.
    sphere_from_mask, plane_into_mask : (n,) and (m,) integer, optional
        32-bit masks (None: all bits on); a pair needs a common bit. Planes are into-only.
    moving : (n,) or scalar bool, optional
        Which spheres move (None: all).
    plane_moving : (m,) or scalar bool, optional
        Which planes move (None: those whose end offset differs from the start offset).
        A pair of a still sphere and a still plane is never reported.
    plane_offsets1 : (m,) float64, optional
        Offsets at the end of the frame, for planes that translate (None: no plane moves).

    Returns
    -------
    sphere, plane : (k,) int64
        Every pair with ``min(d0, d1) <= radius`` (within ``DIST_REL_EPS`` of the scale),
        where ``d0`` is the signed distance of ``p0`` to the plane at the start of the frame
        and ``d1`` that of ``p1`` to the plane at the end, sorted by sphere then plane.
        The signed distance is linear in time, so that is its minimum over the frame.
    """
    p0_, p1_ = _check.sweeps(p0, p1)
    n = p0_.shape[0]
    r = _check.lengths("radius", radius, n)
    nrm, off0, length = _planes(normals, offsets)
    m = nrm.shape[0]
    if plane_offsets1 is None:
        off1 = off0
    else:
        raw1 = np.asarray(plane_offsets1, dtype=np.float64)
        if raw1.shape != (m,):
            raise ValueError(
                f"plane_offsets1 must have shape ({m},) to match normals, got {raw1.shape}"
            )
        if not np.all(np.isfinite(raw1)):
            raise ValueError(f"plane_offsets1 must be finite, got {raw1[~np.isfinite(raw1)][0]}")
        off1 = raw1 / length
    from_ = _check.masks("sphere_from_mask", sphere_from_mask, n)
    into = _check.masks("plane_into_mask", plane_into_mask, m)
    moves = _check.flags("moving", moving, n, default=True)
    if plane_moving is None:
        plane_moves = off1 != off0
    else:
        plane_moves = _check.flags("plane_moving", plane_moving, m, default=False)
    return _sphere_plane_pairs(p0_, p1_, r, nrm, off0, off1, from_, into, moves, plane_moves)


def _sphere_plane_pairs(
    p0: Float,
    p1: Float,
    r: Float,
    nrm: Float,
    off0: Float,
    off1: Float,
    from_: Int,
    into: Int,
    moves: Bool,
    plane_moves: Bool,
    plane_scale: Float | None = None,
) -> tuple[Int, Int]:
    """:func:`sphere_plane_pairs` on arguments already checked: unit normals, offsets to
    match, and (n,) or (m,) rows; ``plane_scale`` (m,), each plane's larger offset
    magnitude, where the caller has it already."""
    if len(p0) == 0 or len(nrm) == 0:
        return _empty_pairs()
    with np.errstate(invalid="ignore", over="ignore"):
        # A matrix product: 4 to 40 times faster than the sums spelled out by axis, at 10
        # to 30,000 spheres and 6 to 100 planes (numpy 2.4; it rounds differently in the
        # last bits, well inside the pad). In place after it: fresh (n, m) temporaries
        # cost more than the arithmetic (at 3,000 spheres and 6 planes, four of them took
        # 210 us where the sums take 50).
        gap = p0 @ nrm.T
        gap += off0
        end = p1 @ nrm.T
        end += off1
        np.minimum(gap, end, out=gap)
        gap -= r[:, None]
        # Each sphere's largest coordinate magnitude at either end: nan or inf where one
        # is not finite.
        extent = largest_abs(p0, p1)
        if plane_scale is None:
            plane_scale = np.maximum(np.abs(off0), np.abs(off1))
        # The pad, DIST_REL_EPS times the larger scale: the larger of the two padded
        # (the same number: rounding is monotonic), nan where the sphere is not finite, so
        # that it is near nothing.
        pad = np.where(np.isfinite(extent), DIST_REL_EPS * np.maximum(extent, r), np.nan)
        near = gap <= np.maximum(pad[:, None], DIST_REL_EPS * plane_scale)
    # (Skipped where some bit is in every mask, the common case: every pair passes.)
    if (np.bitwise_and.reduce(from_) & np.bitwise_and.reduce(into)) == 0:
        near &= (from_[:, None] & into[None, :]) != 0
    if plane_moves.any():
        near &= moves[:, None] | plane_moves[None, :]
    elif not moves.all():
        near &= moves[:, None]
    # (np.nonzero of the table, by its flat positions: 15 times faster at 10,000 spheres,
    # where few of the 60,000 are near. int64 here, as np.intp may not be.)
    return np.divmod(np.flatnonzero(near).astype(np.int64, copy=False), near.shape[1])
