"""Pieces shared by the swept kernels of a sphere against a fixed convex obstacle.

A sphere of radius r swept against an obstacle is a point swept against the obstacle
inflated by r, and the inflated obstacle is a union of simple pieces: offset planes clipped
to a face (a slab), infinite cylinders clipped to an edge, and spheres around the vertices.
The entry into the union is the earliest entry into any piece when the point starts outside
it. Whether it starts inside, and whether it approaches, is decided by the nearest feature:
each piece also reports the distance from the start to its feature and that distance's rate
(a :class:`Piece`), so both decisions come from the same numbers (see
:func:`quadratic_entry` for the rounding gap between them).

Every function here works on rows already checked and translated to the obstacle's own
origin, with vectors stored as COLUMNS: (3, k) float64, one contiguous array per
coordinate, so that row-wise dot and cross products run over contiguous memory (several
times faster than over the strided columns of (k, 3) arrays). Per-row values are (k,) float64.
This module never imports panda3d.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._arrays import CROSS_LAST as _LAST
from .._arrays import CROSS_NEXT as _NEXT
from .._tolerance import DIST_REL_EPS, ROUNDING_REL

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]
Int = NDArray[np.int64]


def columns(rows: Float) -> Float:
    """(3, k) contiguous columns of (k, 3) rows."""
    return np.ascontiguousarray(rows.T)


def take(x: NDArray, rows: NDArray) -> NDArray:
    """The rows (indices) of (k,) values or (3, k) columns: ``x[..., rows]``, by
    ndarray.take, which gathers about three times faster than fancy indexing (and the
    method skips np.take's Python wrapper)."""
    return x.take(rows, axis=-1)


def dot(a: Float, b: Float) -> Float:
    """(k,) dot products of (3, k) columns."""
    # One product of the whole columns, then the rows summed in order: the same sums as
    # spelled out by row, at half the numpy calls (each costs more than its arithmetic
    # below some thousand rows, and the kernels make about a hundred of these a call),
    # summed into the product's own first row (no fresh arrays: a third less time).
    p = a * b
    out = p[0]
    out += p[1]
    out += p[2]
    return out


def cross(a: Float, b: Float) -> Float:
    """(3, k) cross products of (3, k) columns."""
    if a.shape[1] <= _SMALL:
        # Rows rotated by np.take: four gathers and three products of whole columns.
        return a.take(_NEXT, 0) * b.take(_LAST, 0) - a.take(_LAST, 0) * b.take(_NEXT, 0)
    # Many rows: written row by row into one array (fresh (3, k) temporaries that large
    # cost more to allocate than to fill).
    out = np.empty((3, a.shape[1]))
    term = np.empty(a.shape[1])
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        np.multiply(a[j], b[k], out=out[i])
        np.multiply(a[k], b[j], out=term)
        out[i] -= term
    return out


#: Up to how many rows :func:`cross` computes it by whole columns (beyond that, row by row
#: into one array was faster, measured).
_SMALL = 2048


def norm(a: Float) -> Float:
    """(k,) lengths of (3, k) columns."""
    out = dot(a, a)
    return np.sqrt(out, out=out) if isinstance(out, np.ndarray) else np.sqrt(out)


def unit(v: Float, size: Float | None = None, fallback: Float | None = None) -> Float:
    """(3, k) columns of v scaled to unit length; ``fallback`` (or 0) where v is 0."""
    size = norm(v) if size is None else size
    zero = size == 0
    out = v / np.where(zero, 1.0, size)
    if fallback is not None:
        out = np.where(zero, fallback, out)
    return out


class Motion(NamedTuple):
    """Per-row constants of a swept point, shared by every piece of one obstacle."""

    v: Float  # (3, k) motion over the frame
    t_lo: Float  # (k,) start of the time window in which contacts count
    t_hi: Float  # (k,) its end
    approach_eps: Float  # (k,) rate of change of a distance that is rounding noise
    tol: Float  # (k,) depth below which a touch is a graze

    def take(self, rows: NDArray) -> Motion:
        """The same constants for a subset of rows (indices or a mask)."""
        return Motion(*(take(x, rows) for x in self))

    def repeat(self, p: int) -> Motion:
        """The same constants for p pieces stacked (see :func:`stack`)."""
        return Motion(*(stack([x] * p) for x in self))


def stack(parts: list[Float]) -> Float:
    """p pieces' (k,) values or (3, k) columns as one (p k,) or (3, p k), piece after
    piece: the kernels test the pieces of an obstacle (a box's twelve edges, a
    triangle's three corners) in one call each, not one call a piece, as a call costs
    more than its arithmetic at the row counts of a pass."""
    return np.concatenate(parts, axis=-1)


def every(x: Bool, p: int) -> Bool:
    """(k,) whether all of p pieces' (p k,) flags stacked (see :func:`stack`) hold: the
    pieces and-ed one by one (``all(axis=0)`` takes twice as long on a few hundred rows)."""
    x = x.reshape(p, -1)
    out = x[0] & x[1]
    for i in range(2, p):
        out &= x[i]
    return out


def some(x: Bool, p: int) -> Bool:
    """(k,) whether any of p pieces' (p k,) flags stacked holds (see :func:`every`)."""
    x = x.reshape(p, -1)
    out = x[0] | x[1]
    for i in range(2, p):
        out |= x[i]
    return out


def earliest(t: Float, p: int) -> tuple[Float, NDArray[np.int64]]:
    """(k,) least of the values of p pieces stacked (p k,) (see :func:`stack`) and which
    piece gave it, the first of equal ones; inf and -1 where none is less than inf (nan
    counts as none). The same as offering the pieces in order to a :class:`Best`."""
    t = t.reshape(p, -1)
    t = np.where(np.isnan(t), np.inf, t)
    least = t.min(axis=0)
    return least, np.where(least < np.inf, t.argmin(axis=0), -1)


def thresholds(speed: Float, size: Float, coord_scale: Float) -> tuple[Float, Float]:
    """(approach_eps, tol) of rows: the approach threshold of sphere_plane, and the graze
    depth ``DIST_REL_EPS * scale + ROUNDING_REL * coord_scale``.

    ``size`` is the largest of the radius and the obstacle's size; ``coord_scale`` the
    largest coordinate magnitude before translation (the rounding of the translated values
    is relative to it, not to their own, smaller, magnitude).
    """
    noise = ROUNDING_REL * coord_scale
    approach_eps = DIST_REL_EPS * speed + noise
    tol = DIST_REL_EPS * np.maximum(speed, size) + noise
    return approach_eps, tol


def graze_depth(r: Float, m: Motion) -> Float:
    """(k,) how deep an edge or a vertex must be met not to be a graze: the tolerance, but
    at most half the radius (a sphere smaller than the tolerance still hits an edge it
    goes through; a point, r = 0, hits edges and vertices through the faces beside them)."""
    return np.minimum(m.tol, 0.5 * r)


def quadratic_entry(
    gap: Float,
    dist: Float,
    half_b: Float,
    a: Float,
    disc: Float,
    keep: Bool,
    r: Float,
    m: Motion,
) -> Float:
    """First time in the window at which a point is inside ``f(t) <= 0`` and approaching,
    ``f(t) = a t^2 + 2 half_b t + c`` with ``c = gap (dist + r)`` (``gap = dist - r``).

    Rows not in ``keep`` (grazes, no motion across the piece) get inf. The entry root is
    the stable ``c / (-half_b + sqrt(disc))``. A root before ``t_lo`` moves to ``t_lo`` when
    the point is still inside and approaching there: rounding can put a point that the
    caller's overlap test found just outside a piece just inside it, and the contact must
    then be at ``t_lo``, not lost.
    """
    ok = keep & (half_b < 0)
    # (The root of every row: only those in ``ok`` are divided by, and a masked ufunc
    # costs twice a plain one.)
    sq = np.sqrt(np.maximum(disc, 0.0))
    entry = np.divide(gap * (dist + r), -half_b + sq, where=ok, out=np.full(gap.shape, np.inf))
    early = entry < m.t_lo
    approaching = half_b + a * m.t_lo < -r * m.approach_eps
    t = np.maximum(entry, m.t_lo)
    ok &= (~early | approaching) & (t <= m.t_hi)
    return np.where(ok, t, np.inf)


class Piece(NamedTuple):
    """What one piece of an inflated obstacle says about rows of swept points."""

    t: Float  # (k,) first time in the window inside the piece and approaching; inf if none
    dist: Float  # (k,) distance at t = 0 from the point to the piece's feature, where that
    #              feature is the nearest of its kind (an edge: projection within it); inf
    rate: Float  # (k,) that distance times its rate of change at t = 0


def vertex_entry(w0: Float, r: Float, m: Motion, speed: Float) -> Piece:
    """Entry of the point ``w0 + t v`` ((3, k) columns) into the sphere of radius r at the
    origin (a vertex's piece); t is inf where none in the window or a graze.

    Graze, by depth: r - (distance from the path's line to the vertex) <= tol (or half the
    radius, for a sphere smaller than the tolerance: it must still hit what it goes
    through).
    """
    v = m.v
    wxv = cross(w0, v)
    off_line = norm(wxv)  # |v| times the distance from the line to the vertex
    keep = r * speed - off_line > graze_depth(r, m) * speed
    dist = norm(w0)
    disc = speed * speed * r * r - off_line * off_line
    half_b = dot(w0, v)
    t = quadratic_entry(dist - r, dist, half_b, speed * speed, disc, keep, r, m)
    return Piece(t, dist, half_b)


def edge_entry(w0: Float, edge: Float, r: Float, m: Motion) -> Piece:
    """Entry of the point ``w0 + t v`` into the cylinder of radius r around the segment
    from the origin to ``edge``, clipped to the segment; t is inf where none.

    Graze, by depth: r - (distance between the path's line and the edge's line) <= tol (or
    r / 2, see :func:`vertex_entry`); a path parallel to the edge never enters through the
    side. A zero-length edge is no
    piece (its ends' spheres cover it).
    """
    v = m.v
    size = norm(edge)
    has = size > 0
    axis = edge / np.where(has, size, 1.0)
    vxe = cross(v, axis)
    wxe = cross(w0, axis)
    a = dot(vxe, vxe)
    across = np.sqrt(a)  # speed across the edge
    # (w0 x v) . axis = w0 . (v x axis): |v x axis| times the distance between the lines.
    skew = np.abs(dot(w0, vxe))
    keep = has & (r * across - skew > graze_depth(r, m) * across)
    dist = norm(wxe)
    disc = a * r * r - skew * skew
    half_b = dot(wxe, vxe)
    t = quadratic_entry(dist - r, dist, half_b, a, disc, keep, r, m)
    hit = np.isfinite(t)
    along0 = dot(w0, axis)
    along_v = dot(v, axis)
    along = along0 + np.where(hit, t, 0.0) * along_v
    inside = hit & (along >= 0) & (along <= size)
    within = has & (along0 >= 0) & (along0 <= size)
    return Piece(np.where(inside, t, np.inf), np.where(within, dist, np.inf), half_b)


def closest_on_segment(p: Float, start: Float, edge: Float) -> tuple[Float, Float]:
    """Closest points (3, k) of the segments ``start + u edge``, u in [0, 1], to the points
    p, and u (k,). A zero-length segment is its start point."""
    size2 = dot(edge, edge)
    has = size2 > 0
    u = (dot(p - start, edge) / np.where(has, size2, 1.0)).clip(0.0, 1.0)
    u = np.where(has, u, 0.0)
    return start + u * edge, u


class Best:
    """Running earliest candidate per row, with its feature and index; ties keep the first
    piece offered (faces before edges before vertices)."""

    def __init__(self, k: int) -> None:
        self.t = np.full(k, np.inf)
        self.feature = np.full(k, -1, dtype=np.int8)
        self.index = np.full(k, -1, dtype=np.int64)

    def offer(self, t: Float, feature: int | NDArray, index: int | NDArray) -> None:
        better = t < self.t
        self.t = np.where(better, t, self.t)
        # np.where keeps the arrays' own types; astype then copies only if it must.
        self.feature = np.where(better, feature, self.feature).astype(np.int8, copy=False)
        self.index = np.where(better, index, self.index).astype(np.int64, copy=False)

    def offer_pieces(self, t: Float, p: int, feature: int) -> None:
        """Offer p pieces of one kind at once, their times stacked (p k,) (see
        :func:`stack`), indexed 0, 1, ...: the same as offering them one by one in that
        order."""
        least, which = earliest(t, p)
        self.offer(least, feature, which)

    def offer_rows(self, rows: NDArray, t: Float, feature: NDArray, index: NDArray) -> None:
        """Offer candidates (times t, their features and indices) computed for the rows
        (indices) of this."""
        better = t < self.t[rows]
        picked = rows[better]
        self.t[picked] = t[better]
        self.feature[picked] = feature[better]
        self.index[picked] = index[better]
