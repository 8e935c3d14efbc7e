"""A uniform grid of a static index's item boxes, for the solver's segment queries. Pure
numpy.

The static index (:class:`~._index.StaticIndex`) answers which item boxes a segment comes
within ``reach`` of by descending its tree level by level. On a level, where the nodes of
the tree overlap (a terrain's triangles lie side by side at every scale), a body's query
tests some hundred (query, node) pairs, each a dozen numpy element operations. The grid
answers the same question by walking each segment through the cells it crosses (the walk
of :class:`~._raygrid.RayGrid`) and testing the items listed there: a slow body meets one
or two cells, a fast one a cell every cell length of its path.

Each item is listed in every cell its box grown by the grid's ``reach`` overlaps (and a
rounding pad beyond). A segment point within ``reach`` of an item's box (per axis: the
tests of the index are boxes) lies in that grown box, so in a cell listing the item: every
pair the index's segment test accepts, for a segment whose reach is at most the grid's, is
among the grid's candidates, and the caller applies that same test to them.

Items whose grown box spans more than ``_MOST_CELLS`` cells (and the largest, while the
listing would pass ``_ENTRIES_PER_ITEM`` entries per item) are left out of the grid and
returned as ``big``: the caller asks a tree of them.

This module never imports panda3d.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ._arrays import ranges
from ._raygrid import _SCALES, Cells
from ._tolerance import DIST_REL_EPS

__all__ = ["ReachGrid"]

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Cell edge as a fraction of the items' median box diagonal, and at least _CELL_REACHES
#: times the grid's reach. On the level benchmark's 33,000 triangles (median diagonal
#: 2.9) and the queries of its 1,000 bodies (reach 0.5), edges of 1.5, 2.0, 2.5 and 3.0
#: answered in 1.13, 1.02, 1.15 and 1.19 ms a call; 1.0 took 0.66 s to build.
_CELL = 0.7
_CELL_REACHES = 2.0
#: An item listed in more cells than this goes to the tree of big items instead; so do the
#: largest while the listing holds more than _ENTRIES_PER_ITEM entries per item.
_MOST_CELLS = 1 << 14
_ENTRIES_PER_ITEM = 32
#: Segments reaching beyond this many times the items' scale are not walked (the caller
#: asks the tree): their cell positions would round by more than the cells' pad.
_FAR = 1.0e4


class ReachGrid(Cells):
    """The cells of a uniform grid that lie within ``reach`` of each item's box.

    Parameters
    ----------
    lo, hi : (3, m) float64
        The items' boxes, finite, ``lo <= hi`` (the index's padded boxes, in its order).
    reach : float
        How far from its box an item is listed; segments of a reach up to this may walk.
    size : float
        A typical item's size (the median box diagonal): the cells' edge follows it.

    Attributes
    ----------
    big : (b,) int64
        The items not listed (see the module's notes), sorted.
    """

    def __init__(self, lo: Float, hi: Float, reach: float, size: float) -> None:
        m = lo.shape[1]
        self.reach = reach
        scale = float(max(np.abs(lo).max(initial=0.0), np.abs(hi).max(initial=0.0)))
        #: Segments reaching beyond this coordinate magnitude are not walked (see _FAR).
        self.far = _FAR * scale if _SCALES[0] <= scale <= _SCALES[1] else -1.0
        if self.far < 0:
            lo = hi = np.zeros((3, 0))
            m = 0
        # Well above the rounding of every position computed here (cells, slab times).
        pad = 4.0 * DIST_REL_EPS * scale
        grown_lo, grown_hi = lo - (reach + pad), hi + (reach + pad)
        box_lo = grown_lo.min(axis=1, initial=np.inf) if m else np.zeros(3)
        box_hi = grown_hi.max(axis=1, initial=-np.inf) if m else np.zeros(3)
        self._shape(box_lo, box_hi, max(_CELL * size, _CELL_REACHES * reach, 1e-300), m)
        i0, i1 = self._ranges(grown_lo.T, grown_hi.T)
        span = i1 - i0 + 1
        count = span[:, 0] * span[:, 1] * span[:, 2]
        # The most cells first out, while the rest would hold too many entries.
        order = np.argsort(count, kind="stable")
        fits = np.cumsum(count[order]) <= _ENTRIES_PER_ITEM * max(m, 1)
        fits &= count[order] <= _MOST_CELLS
        listed = np.zeros(m, bool)
        listed[order[fits]] = True
        self.big = np.flatnonzero(~listed)
        items = np.flatnonzero(listed)
        stride = self.stride
        # The cells of each box an axis at a time (each row of one axis fanned out along
        # the next): no divisions, and each pass as long as its output.
        flat = (i0[items] * stride).sum(axis=1)
        row = items
        for axis in range(3):
            n = span[:, axis].take(row)
            flat = np.repeat(flat, n) + ranges(0, n) * stride[axis]
            row = np.repeat(row, n)
        self._file(flat, row)

    def walkable(self, scale: Float, grow: Float) -> Bool:
        """(k,) which segments :meth:`candidates` can walk, given their (k,) largest
        coordinate magnitudes and how far (k,) from a box they reach."""
        return (scale <= self.far) & (grow <= self.reach)

    def candidates(self, p0: Float, p1: Float) -> tuple[Int, Int]:
        """(segment, item) of every item listed in a cell that segments p0, p1 (k, 3)
        (all :meth:`walkable`) cross; an item once per cell it is met in."""
        h = self.h
        u0 = np.ascontiguousarray(((p0 - self.origin) / h).T)
        du = np.ascontiguousarray(((p1 - p0) / h).T)
        near, far = self._clip(u0, du)
        rows = np.flatnonzero(near <= far)
        if len(rows) == 0 or len(self._items) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ray, cell = self._walk(u0, du, rows, near.take(rows), far.take(rows), True)
        return self._listed(ray, cell)
