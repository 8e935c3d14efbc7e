"""Exact swept test of a moving sphere against a fixed triangle (a ``CollisionPolygon``).

The triangle ``a, b, c`` has its front on the side of ``(b - a) x (c - a)`` (counter-clockwise
seen from the front, as Panda3D's ``CollisionPolygon``). By default it is one-sided: a contact
counts only while the sphere's centre is in front of (or on) its plane, so a sphere coming
from behind passes through. ``two_sided=True`` makes both sides solid. A degenerate triangle
(zero area) acts as its edges and vertices, from both sides.

A contact is a touch while approaching: with d(t) the distance from the centre to the
triangle, the first time d = r while d decreases; a sphere already overlapping gives 0 if d
decreases at the start, inf otherwise (d is convex, so it never decreases later). A
one-sided triangle's window opens when the centre reaches the front; a sphere crossing the
plane while overlapping the triangle and approaching it (near an edge, moving toward it)
touches at that moment. Tangential grazes are never contacts (tested by depth, see
:mod:`._features`).

Feature indices in the returned :class:`~._result.Sweep`: FACE 0; EDGE 0: a-b, 1: b-c,
2: c-a; VERTEX 0, 1, 2: a, b, c.

This module never imports panda3d.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_triangle_toi
>>> sphere_triangle_toi([[0.2, 0.2, 3]], [[0.2, 0.2, -1]], 1.0, [0, 0, 0], [2, 0, 0], [0, 2, 0])
array([0.5])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _check
from .._tolerance import DEGENERATE_REL, ROUNDING_REL, SEAM_REL
from . import _features as F
from ._result import EDGE, FACE, VERTEX, Sweep

__all__ = ["sphere_triangle_toi"]

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]

#: Rows per block of the cheap cull: numpy's elementwise passes over arrays that stay in
#: the cache run about 8 times faster per element than over arrays of a million rows.
_BLOCK = 16384

#: Relative slack of the cull's comparisons, far above their rounding, far below anything
#: that would keep many rows alive.
_CULL_SLACK = 1e-9

#: The cull's test in space asks only triangles whose area (twice it, |e1 x e2|) is at
#: least this much of the longest edge squared: a sliver's computed normal is too far off
#: square to its edges for it (see _culled).
_SHAPED = 1e-5


def sphere_triangle_toi(
    c0: ArrayLike,
    c1: ArrayLike,
    r: ArrayLike,
    a: ArrayLike,
    b: ArrayLike,
    c: ArrayLike,
    *,
    two_sided: ArrayLike = False,
) -> Float:
    """Time of first contact of a moving sphere with a fixed triangle.

    Parameters
    ----------
    c0, c1 : (n, 3) float64
        Sphere centres at the start (t = 0) and end (t = 1) of the frame.
    r : (n,) or scalar float64
        Radii, finite and >= 0 (0 casts a point: a ray or segment test).
    a, b, c : (n, 3) float64
        Triangle corners; the front is the side of ``(b - a) x (c - a)``.
    two_sided : bool or (n,) bool
        Whether the back is solid too (default: one-sided, as ``CollisionPolygon``).

    Returns
    -------
    t : (n,) float64
        Normalised time in [0, 1] of the first touch while approaching; ``inf`` where none.

    Examples
    --------
    A sphere falling onto the face; rising through it from behind (one-sided: it passes;
    two-sided: it touches at t = 0.25); sliding along the face at height r (a graze).

    >>> tri = ([0, 0, 0], [2, 0, 0], [0, 2, 0])
    >>> sphere_triangle_toi([[0.5, 0.5, 2], [0.5, 0.5, -2], [0.5, 0.5, 1]],
    ...                     [[0.5, 0.5, 0], [0.5, 0.5, 2], [3, 0.5, 1]], 1.0, *tri)
    array([0.5, inf, inf])
    >>> sphere_triangle_toi([[0.5, 0.5, -2]], [[0.5, 0.5, 2]], 1.0, *tri, two_sided=True)
    array([0.25])
    >>> nan = float("nan")
    >>> sphere_triangle_toi([[0, 0, 1]], [[0, 0, 0]], 1.0, [0, 0, 0], [1, 0, 0], [0, 1, nan])
    Traceback (most recent call last):
        ...
    ValueError: c must be finite, got [0.0, 1.0, nan] in row 0
    """
    rows = _checked(c0, c1, r, a, b, c)
    two = _check.flags("two_sided", two_sided, len(rows[0]), False)
    return _toi(*rows, two)


def _checked(c0, c1, r, a, b, c) -> list[np.ndarray]:
    names = ("c0", "c1", "r", "a", "b", "c")
    return _check.broadcast(
        names,
        _check.coordinates("c0", c0),
        _check.coordinates("c1", c1),
        _check.lengths("r", r),
        _check.coordinates("a", a),
        _check.coordinates("b", b),
        _check.coordinates("c", c),
    )


def _toi(c0: Float, c1: Float, r: Float, a: Float, b: Float, c: Float, two: Bool) -> Float:
    t = np.full(len(c0), np.inf)
    for rows, part in _blocks(c0, c1, r, a, b, c, two, None, False):
        t[rows] = part[0]
    return t


def _sweep(
    c0: Float,
    c1: Float,
    r: Float,
    a: Float,
    b: Float,
    c: Float,
    two_sided: ArrayLike = False,
    sides: Float | None = None,
    *,
    shrunk: Float | None = None,
    first_of: NDArray[np.int64] | None = None,
    within: Float | None = None,
) -> Sweep:
    """:func:`sphere_triangle_toi` of rows already checked and broadcast ((k, 3) float64,
    (k,) float64; ``two_sided`` a bool or (k,) bool), with where and how each touched.

    ``sides`` (k, 3, 3): for each edge e shared with a neighbour of the same surface (a
    polygon's fan diagonal, a seam of a mesh), the side the neighbour lies on (see
    :func:`neighbour_sides`), NaN where none. Where a sphere already within r of the
    triangle is nearest such an edge from the neighbour's side, the neighbour decides (see
    :func:`_exact`).

    ``shrunk`` (k,): only the rows that touch at these radii too (each at most its r)
    touch; the rest miss. The culls then run at ``shrunk`` (a row they clear there misses
    there), and the rows they keep are tested at both radii in one exact stage, whose
    fixed cost, about a thousand numpy calls, is then paid once: the slop rule of
    :meth:`~panda3d_ccd._pieces.Pieces._sweep` at the cost of one call.

    ``first_of`` (k,) int and ``within`` (k,) float: the rows' groups (the rows of one
    body) and how much later than a group's earliest contact another is at the same
    instant. Then only a group's earliest contacts, and those within ``within`` of them,
    are sure to be exact; every other row comes back no earlier than that either, but its
    time may not be its own: a row whose first entry is later is not asked whether the
    entry is its neighbour's (see :func:`_exact`), which could only make it later still."""
    k = len(c0)
    two = np.asarray(two_sided, dtype=bool)
    if two.shape != (k,):  # (a table's rows come with theirs: np.broadcast_to costs 5 us)
        two = np.broadcast_to(two, (k,))
    t = np.full(k, np.inf)
    point = np.full((k, 3), np.nan)
    normal = np.full((k, 3), np.nan)
    feature = np.full(k, -1, dtype=np.int8)
    index = np.full(k, -1, dtype=np.int64)
    first = None
    if first_of is not None:
        first = _First(first_of, np.zeros(k) if within is None else within, shrunk is not None)
    for rows, (tt, pp, nn, ff, ii) in _blocks(c0, c1, r, a, b, c, two, sides, True, shrunk, first):
        t[rows] = tt
        point[rows] = pp.T
        normal[rows] = nn.T
        feature[rows] = ff
        index[rows] = ii
    return Sweep(t, point, normal, feature, index)


def _sweep_deep(
    c0: Float,
    c1: Float,
    r: Float,
    shrunk: Float,
    *triangles: ArrayLike,
    first_of: NDArray[np.int64] | None = None,
    within: Float | None = None,
) -> Sweep:
    """:func:`_sweep` with ``shrunk`` (the table's ``deep`` entry: the slop rule in one
    call), ``triangles`` its a, b, c, two_sided and sides."""
    return _sweep(c0, c1, r, *triangles, shrunk=shrunk, first_of=first_of, within=within)


def neighbour_sides(a: Float, b: Float, c: Float, _two: ArrayLike, across: Float) -> Float:
    """(m, 3, 3) of triangles a, b, c (m, 3) whose neighbours' far corners are ``across``
    (m, 3, 3), NaN where an edge has none: for each edge (a-b, b-c, c-a), the unit vector
    square to it toward that corner (in the neighbour's plane: the side it lies on); NaN
    where none. Made once per table, for the kernel's ``sides``."""
    out = np.full(across.shape, np.nan)
    for e, (p, q) in enumerate(((a, b), (b, c), (c, a))):
        run = q - p
        far = across[:, e] - p
        with np.errstate(invalid="ignore", divide="ignore"):
            toward = far - run * ((far * run).sum(axis=1) / (run * run).sum(axis=1))[:, None]
            size = np.sqrt((toward * toward).sum(axis=1))
            out[:, e] = np.where((size > 0)[:, None], toward / size[:, None], np.nan)
    return out


def _point_data(
    a: Float, b: Float, c: Float, two_sided: ArrayLike = False, _sides: Float | None = None
) -> Float:
    """(m, 18) what :func:`_point_sweep` needs of triangles a, b, c (m, 3), computed once
    per mesh: the plane's normal n = (b - a) x (c - a) and offset -n . a; for each edge
    a-b, b-c, c-a the unit normal in the plane pointing inward, then its offset (the
    inward distance of a point x from the edge is that normal . x less the offset); 1
    where the triangle is two-sided; and how far outside an edge a ray still hits it,
    ``SEAM_REL`` of the triangle's largest coordinate magnitude."""
    n = np.cross(b - a, c - a)
    size = np.sqrt((n * n).sum(axis=1))
    inward, offsets = [], []
    for p, q in ((a, b), (b, c), (c, a)):
        u = q - p
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.cross(n, u) / (size * np.sqrt((u * u).sum(axis=1)))[:, None]
        inward.append(m)
        offsets.append((m * p).sum(axis=1))
    two = np.broadcast_to(np.asarray(two_sided, dtype=np.float64), (len(a),))
    scale = np.maximum(np.maximum(np.abs(a).max(axis=1), np.abs(b).max(axis=1)),
                       np.abs(c).max(axis=1))  # fmt: skip
    columns = [-(n * a).sum(axis=1), *offsets, two, SEAM_REL * scale]
    return np.concatenate([n, *inward, np.stack(columns, axis=1)], axis=1)[
        :, [0, 1, 2, 12, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17]
    ]


def _point_sweep(c0: Float, c1: Float, data: Float) -> Sweep:
    """:func:`_sweep` with radius 0 (a ray or segment) on rows already checked, the
    triangles given by their :func:`_point_data` (k, 18): the same contacts (a crossing of
    the front, or of either side where two-sided, inside the triangle or on its boundary)
    in some twenty numpy calls instead of a thousand. One row per row given; the rows hit
    alone, as :func:`_point_hits`.

    Where the ray crosses the plane, the crossing must lie inside every edge, or outside
    by no more than the seam slop (``SEAM_REL`` of the triangle's size): a ray aimed at an
    edge two triangles share hits one of them at least, and so does one threading the
    seam between polygons whose shared corners Panda3D rebuilt apart (see ``SEAM_REL``).
    A zero-area triangle is never hit (the full kernel's edges are only ever met by a ray
    along them exactly)."""
    k = len(c0)
    rows, hits = _point_hits(c0, c1, data)
    t = np.full(k, np.inf)
    point = np.full((k, 3), np.nan)
    normal = np.full((k, 3), np.nan)
    feature = np.full(k, -1, np.int8)
    index = np.full(k, -1, np.int64)
    t[rows], point[rows], normal[rows] = hits.t, hits.point, hits.normal
    feature[rows], index[rows] = hits.feature, hits.index
    return Sweep(t, point, normal, feature, index)


def _point_hits(c0: Float, c1: Float, data: Float) -> tuple[NDArray[np.int64], Sweep]:
    """The rows of :func:`_point_sweep` that hit, (h,) increasing, and their Sweep (h rows):
    a caller that wants the hits alone skips gathering them out of every row."""
    k = len(c0)
    if k <= _SCALAR_ROWS:
        return _point_rows(c0, c1, data)
    # The column kernel, each row its own pair, on contiguous columns (its gathers from
    # strided ones cost ten times more at a million rows).
    origin = np.ascontiguousarray(c0.T)
    direction = np.ascontiguousarray((c1 - c0).T)
    columns = np.ascontiguousarray(data.T)
    pair = np.arange(k)
    rows, t = _point_times(origin, direction, columns, pair, pair)
    return rows, _point_contacts(origin, direction, columns, rows, rows, t)


def _point_rows(c0: Float, c1: Float, data: Float) -> tuple[NDArray[np.int64], Sweep]:
    """:func:`_point_hits` of a few rows in plain Python: a lone ray meets a handful of
    candidates, and each numpy call costs more than their arithmetic. The same sums in the
    same order, so the same answers, bit for bit."""
    rows: list[int] = []
    t: list[float] = []
    point: list[tuple[float, float, float]] = []
    normal: list[tuple[float, float, float]] = []
    for j, ((ox, oy, oz), (ex, ey, ez), row) in enumerate(
        zip(c0.tolist(), c1.tolist(), data.tolist())
    ):
        dx, dy, dz = ex - ox, ey - oy, ez - oz
        nx, ny, nz, off = row[0:4]
        s0 = nx * ox + ny * oy + nz * oz + off
        dn = nx * dx + ny * dy + nz * dz
        if dn < 0.0 and s0 >= 0.0 and s0 + dn <= 0.0:
            flip = False
        elif row[16] and dn > 0.0 and s0 <= 0.0 and s0 + dn >= 0.0:
            flip = True
        else:
            continue
        tj = s0 / -dn
        x, y, z = ox + tj * dx, oy + tj * dy, oz + tj * dz
        slop = -row[17]
        if (row[4] * x + row[5] * y + row[6] * z - row[13] < slop
                or row[7] * x + row[8] * y + row[9] * z - row[14] < slop
                or row[10] * x + row[11] * y + row[12] * z - row[15] < slop):  # fmt: skip
            continue
        size = math.sqrt(nx * nx + ny * ny + nz * nz)
        if flip:
            nx, ny, nz = -nx, -ny, -nz
        rows.append(j)
        t.append(tj)
        point.append((x, y, z))
        normal.append((nx / size, ny / size, nz / size))
    h = len(rows)
    return np.array(rows, np.int64), Sweep(
        np.array(t, np.float64), np.array(point, np.float64).reshape(h, 3),
        np.array(normal, np.float64).reshape(h, 3), np.full(h, FACE, np.int8),
        np.zeros(h, np.int64),
    )  # fmt: skip


#: Up to this many rows, :func:`_point_sweep` works in plain Python.
_SCALAR_ROWS = 12
#: :func:`_point_times` works on slices of this many pairs.
_POINT_CHUNK = 16384


def _point_times(
    origin: Float,
    direction: Float,
    columns: Float,
    q: NDArray[np.int64],
    k: NDArray[np.int64],
    two_sided: bool = True,
) -> tuple[NDArray[np.int64], Float]:
    """Which (ray ``q[j]``, triangle ``k[j]``) pairs the point kernel finds a hit for, and
    its t: the rays as (3, n) columns ``origin`` and ``direction`` (end less start), the
    triangles as the (18, m) columns of their :func:`_point_data` (its transpose);
    ``two_sided`` False if none of the triangles is (no crossing from behind counts).

    The same sums in the same order as :func:`_point_rows`, so the same t, bit for bit;
    over columns gathered per pair (a sum over the rows of a (p, 3) array costs several
    times three column operations), in place where it can. :func:`_point_hits` is this
    with each row its own pair. Returns (h,) positions into q and k, increasing, and (h,)
    t."""
    if len(q) > 2 * _POINT_CHUNK:
        # In slices whose temporaries stay in the cache (and in memory already mapped:
        # a fresh array of a megabyte costs more in page faults than its arithmetic).
        starts = range(0, len(q), _POINT_CHUNK)
        parts = [_point_times(origin, direction, columns, q[s : s + _POINT_CHUNK],
                              k[s : s + _POINT_CHUNK], two_sided) for s in starts]  # fmt: skip
        rows = np.concatenate([at + s for (at, _t), s in zip(parts, starts)])
        return rows, np.concatenate([t for _at, t in parts])
    x0, y0, z0 = origin[0].take(q), origin[1].take(q), origin[2].take(q)
    dx, dy, dz = direction[0].take(q), direction[1].take(q), direction[2].take(q)
    nx, ny, nz = columns[0].take(k), columns[1].take(k), columns[2].take(k)
    s0 = nx * x0
    s0 += ny * y0
    s0 += nz * z0
    s0 += columns[3].take(k)
    dn = nx * dx
    dn += ny * dy
    dn += nz * dz
    end = s0 + dn
    inside = s0 >= 0.0
    inside &= end <= 0.0
    inside &= dn < 0.0
    if two_sided:
        back = (s0 <= 0.0) & (end >= 0.0) & (dn > 0.0)
        if back.any():
            inside |= back & (columns[16].take(k) != 0.0)
    # Most pairs cross their plane (a ray's neighbours in a cell lie about where it
    # hits): every pair goes on to the first edge, rather than gathering those that do;
    # about half the rest lie beyond it, and only the others go on to the next two.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = s0 / -dn
        x, y, z = t * dx, t * dy, t * dz
        x += x0
        y += y0
        z += z0
        slop = -columns[17].take(k)
        inside &= _edge(columns, 0, k, x, y, z) >= slop
        rows = np.flatnonzero(inside)
        k, x, y, z, slop = k.take(rows), x.take(rows), y.take(rows), z.take(rows), slop.take(rows)
        worst = np.minimum(_edge(columns, 1, k, x, y, z), _edge(columns, 2, k, x, y, z))
        keep = worst >= slop
    rows = rows[keep]
    return rows, t.take(rows)


def _edge(columns: Float, e: int, k: NDArray[np.int64], x: Float, y: Float, z: Float) -> Float:
    """(p,) how far points x, y, z (p,) lie inside edge e of triangles k (their
    :func:`_point_data` columns): the sums of :func:`_point_rows`, in its order."""
    c = 4 + 3 * e
    dist = columns[c].take(k)
    dist *= x
    part = columns[c + 1].take(k)
    part *= y
    dist += part
    part = columns[c + 2].take(k)
    part *= z
    dist += part
    dist -= columns[13 + e].take(k)
    return dist


def _point_contacts(
    origin: Float, direction: Float, columns: Float, q: NDArray[np.int64], k: NDArray[np.int64],
    t: Float,
) -> Sweep:
    """The Sweep (h rows) of hits :func:`_point_times` found (rays q, triangles k, times
    t): the same points and normals as :func:`_point_rows`, bit for bit."""
    nx, ny, nz = columns[0].take(k), columns[1].take(k), columns[2].take(k)
    dx, dy, dz = direction[0].take(q), direction[1].take(q), direction[2].take(q)
    point = np.stack([origin[0].take(q) + t * dx, origin[1].take(q) + t * dy,
                      origin[2].take(q) + t * dz], axis=1)  # fmt: skip
    # Crossed from behind (two-sided): the normal faces the ray.
    size = np.sqrt(nx * nx + ny * ny + nz * nz)
    size = np.where(nx * dx + ny * dy + nz * dz > 0.0, -size, size)
    normal = np.stack([nx / size, ny / size, nz / size], axis=1)
    h = len(q)
    return Sweep(t, point, normal, np.full(h, FACE, np.int8), np.zeros(h, np.int64))


def _blocks(c0, c1, r, a, b, c, two, sides, contacts, shrunk=None, first=None):
    """Yield (rows, results of :func:`_exact`) for the rows that survive the culls, about
    ``_BLOCK`` of them at a time; with ``shrunk`` (k,) radii, culled at those and tested at
    both radii in one call (the rows twice over), for the rows that touch at both; with
    ``first`` (a :class:`_First` of all the rows), exact where :func:`_sweep` says.

    Each block of the input is turned into columns once, while it is in the cache; the
    culls run over those, and the survivors are gathered from them (several times faster
    than gathering the rows of the whole (n, 3) arrays later, or than working on strided
    columns of (k, 3) arrays) and batched for the exact stage, whose fixed cost per call
    (about a thousand numpy calls) is worth spreading over many rows. What the culls
    computed of the survivors' triangles and paths goes with them (see :class:`_Shape`).
    """
    # (_may_touch answers for this first cull alone: the two must stay one test.)
    batch: list[tuple] = []
    batched = 0
    for lo in range(0, len(c0), _BLOCK):
        cols = [F.columns(x[lo : lo + _BLOCK]) for x in (c0, c1, a, b, c)]
        rb, tb = r[lo : lo + _BLOCK], two[lo : lo + _BLOCK]
        least = rb if shrunk is None else shrunk[lo : lo + _BLOCK]
        near, plane = _cull_plane(*cols, least, tb)
        keep = near.nonzero()[0]
        cols = [F.take(x, keep) for x in cols]
        rb, tb, least = rb[keep], tb[keep], least[keep]
        alive, shape = _culled(*cols, least, tb, tuple(F.take(x, keep) for x in plane))
        kept = alive.nonzero()[0]
        if len(kept):
            # (With ``shrunk``, the radius of each copy: at full radius, then shrunk.)
            radii = rb if shrunk is None else F.stack([rb, least]).reshape(2, -1)
            batch.append((keep[kept] + lo, kept, (*cols, *shape, tb), radii))
            batched += len(kept)
        if batched >= _BLOCK or (batched and lo + _BLOCK >= len(c0)):
            rows, (*cols, tb), rb = _gathered(batch, shrunk is not None)
            cols, shape = cols[:5], _Shape(*cols[5:])
            beside = None if sides is None else sides.take(rows, axis=0)
            if shrunk is not None and beside is not None:
                beside = np.concatenate([beside, beside])
            mine = None if first is None else first.take(rows)
            found = _exact(*cols, rb, tb, beside, shape, contacts, mine, shrunk is not None)
            if contacts:
                t, hits, *contact = found
                yield rows[hits], (t[hits], *contact)
            else:  # (times alone: only without ``shrunk``, see _toi)
                yield rows, found
            batch, batched = [], 0


def _gathered(batch: list[tuple], twice: bool) -> tuple[NDArray, list[NDArray], Float]:
    """A batch's rows, columns and radii, the exact stage's input: each of its blocks is
    (its survivors' rows, ``kept``: which of its culled rows they are, its culled columns,
    their radii: (n,), or with ``twice`` (2, n), at full radius and shrunk). With
    ``twice`` the rows come twice over, at full radius and then shrunk: a batch of one
    block, the usual, is gathered so at once, not gathered and then copied."""
    if len(batch) == 1:
        rows, kept, arrays, radii = batch[0]
        pick = F.stack([kept, kept]) if twice else kept
        return rows, [F.take(x, pick) for x in arrays], F.take(radii, kept).reshape(-1)
    rows = np.concatenate([part[0] for part in batch])
    arrays = [
        np.concatenate([F.take(x, part[1]) for part, x in zip(batch, xs)], axis=-1)
        for xs in zip(*(part[2] for part in batch))
    ]
    if twice:
        arrays = [np.concatenate([x, x], axis=-1) for x in arrays]
    radii = np.concatenate([F.take(part[3], part[1]) for part in batch], axis=-1)
    return rows, arrays, radii.reshape(-1)


class _Shape(NamedTuple):
    """What the culls compute of rows' triangles and paths that the exact stage needs
    again: the same numbers, gathered rather than made again. The raw normal
    ``n = e1 x e2`` (3, k) and its length (k,), the longest edge squared (k,), the speed
    (k,), and the edges' inward normals ``n x edge`` of a-b, b-c, c-a (3, 3, k)
    (coordinate, edge, row) with their lengths (3, k)."""

    normal: Float
    area2: Float
    longest2: Float
    speed: Float
    inward: Float
    size_in: Float


def _may_touch(
    c0: Float, c1: Float, r: Float, a: Float, b: Float, c: Float, two: Bool, *_sides: Float
) -> Bool:
    """(k,) False for the rows of :func:`_sweep` (its arguments) that the kernel's first
    cull finds clear of their triangle's plane slab (they miss); True for the rest."""
    two = np.broadcast_to(np.asarray(two, dtype=bool), (len(r),))  # as _sweep reads it
    return _cull_plane(*(F.columns(x) for x in (c0, c1, a, b, c)), r, two)[0]


def _cull_plane(
    c0: Float, c1: Float, a: Float, b: Float, c: Float, r: Float, two: Bool
) -> tuple[Bool, tuple[Float, Float, Float]]:
    """(k,) the rows whose path, inflated by r, reaches the triangle's plane slab (and its
    front, when one-sided), of (3, k) columns; and what :func:`_culled` takes of them again:
    the raw normal ``n`` (3, k), the start's height over the plane in units of |n| and |n|
    (k,)."""
    n = F.cross(b - a, c - a)
    s0 = F.dot(n, c0 - a)
    s1 = F.dot(n, c1 - a)
    area2 = F.norm(n)
    reach = r * area2
    lo = np.minimum(s0, s1)
    hi = np.maximum(s0, s1)
    slack = _CULL_SLACK * (reach + np.abs(lo) + np.abs(hi))
    near = (lo <= reach + slack) & (hi >= -reach - slack)
    # One-sided: contacts count only while the centre is in front of (or on) the plane.
    return near & (two | (hi >= -slack)), (n, s0, area2)


def _culled(
    c0: Float, c1: Float, a: Float, b: Float, c: Float, r: Float, two: Bool,
    plane: tuple[Float, Float, Float],
) -> tuple[Bool, _Shape]:
    """Rows that may touch, by three cheap separations: (3, k) columns and what
    :func:`_cull_plane` found of them (``plane``) in, (k,) bool and the rows'
    :class:`_Shape` out.

    The lines of the edges in the triangle's plane: the rounded triangle lies on the inner
    side of each, widened by r; a path wholly beyond one of them within :func:`_window`
    misses. A path wholly beyond one of them, but within r of it, is tested in space: the
    triangle lies in the half of its plane inside that line, so the path's least distance
    to that half-plane (across the line and over the plane at once) is at most its distance
    to the triangle; farther than r, it misses. (A ball rolling on a mesh is within r of
    each line of the triangles beside its own, but about r over their plane: a third of
    the rows the first two tests kept in the level benchmark, which this one drops.) A
    centre moving away from all three corners moves away from every point of the triangle:
    its distance grows from the start (and, being convex, never shrinks later).
    """
    e1 = b - a
    e2 = c - a
    eb = c - b
    v = c1 - c0
    w0 = c0 - a
    n, s0, area2 = plane
    speed = F.norm(v)
    longest2 = _longest2(F.stack([e1, e2, eb]))
    # Above the rounding of the exact stage: a few ulps of its coordinates, of its motion
    # and of its triangle's size.
    size = _row_sum(np.abs(c0)) + _row_sum(np.abs(a)) + 2 * (speed + r + np.sqrt(longest2))
    slack = _CULL_SLACK * size
    # The exact stage's own test on the same numbers: a degenerate triangle has no plane.
    has_plane = area2 > DEGENERATE_REL * longest2
    ds = F.dot(n, v)
    lo, hi = _window(area2, has_plane, s0, ds, r, two, slack)

    # Heights over each edge's line in units of |n x edge|, which the slack also scales;
    # the edges a-b, b-c, c-a from their starts (n x (a - c) is e2 x n), (3, 3, k)
    # (coordinate, edge, row): a row's own values broadcast over its three edges.
    w = F.stack([w0, w0 - e1, w0 - e2]).reshape(3, 3, -1)
    inward = F.cross(F.stack([n, n, e2]), F.stack([e1, eb, n])).reshape(3, 3, -1)
    v3 = v[:, None]
    h0 = F.dot(w, inward)
    dh = F.dot(v3, inward)
    size_in = F.norm(inward)
    reach = r + slack
    nearest = np.maximum(h0 + lo * dh, h0 + hi * dh)
    alive = nearest >= -reach * size_in
    # Wholly beyond a line but within r of it: the least distance in space decides (only
    # those entries: on a large batch most are not), where the triangle is no sliver: its
    # normal, a cross product of two nearly parallel edges, is then off square to them by
    # up to the rounding over its size (a reviewer's slivers, |n| 2e-12 of the longest edge
    # squared, had it off by up to 3e-5, and contacts were dropped): at 1e-5 of it, by
    # less than 1e-10, far within the slack.
    shaped = area2 > _SHAPED * longest2
    edge, row = (alive & (nearest < 0) & shaped).nonzero()
    if len(row):
        least = _least_squared(
            h0[edge, row], dh[edge, row], size_in[edge, row], s0.take(row), ds.take(row),
            area2.take(row), lo.take(row), hi.take(row),
        )  # fmt: skip
        far = least > reach.take(row) ** 2
        alive[edge[far], row[far]] = False
    # Rates of the distances to the corners, with a margin far above their rounding in the
    # exact stage.
    closing = F.dot(w, v3) <= speed * slack
    shape = _Shape(n, area2, longest2, speed, inward, size_in)
    return F.every(alive, 3) & F.some(closing, 3), shape


def _row_sum(x: Float) -> Float:
    """(k,) sums of (3, k) columns, ``x.sum(axis=0)`` of non-negative x bit for bit (a
    reduction over the short axis costs twice the two sums)."""
    out = x[0] + x[1]
    out += x[2]
    return out


def _longest2(edges: Float) -> Float:
    """(k,) the longest of three edges stacked (3, 3 k) (see F.stack), squared."""
    return F.dot(edges, edges).reshape(3, -1).max(axis=0)


def _least_squared(
    h0: Float, dh: Float, size_in: Float, s0: Float, ds: Float, area2: Float, lo: Float,
    hi: Float,
) -> Float:
    """(q,) for q (row, edge) entries of a row's path beyond an edge's line, the least over
    times lo to hi of the centre's squared distance to that line in the plane (its heights
    over the line ``h0 + t dh`` in units of ``size_in`` > 0) and to the plane at once (its
    heights ``s0 + t ds`` in units of ``area2`` > 0). Both distances are linear in t: the
    least of the sum of their squares is at the vertex of a parabola, or at an end of the
    interval."""
    x0, dx = h0 / size_in, dh / size_in
    y0, dy = s0 / area2, ds / area2
    curve = dx * dx + dy * dy
    t = -(x0 * dx + y0 * dy) / np.where(curve > 0, curve, 1.0)
    t = np.minimum(np.maximum(t, lo), hi)
    x = x0 + t * dx
    y = y0 + t * dy
    return x * x + y * y


def _window(
    area2: Float, has_plane: Bool, s0: Float, ds: Float, r: Float, two: Bool, margin: Float
) -> tuple[Float, Float]:
    """(k,) times lo <= hi such that a row cannot touch outside [lo, hi]: while its centre
    is farther than r (plus ``margin``) from the plane, the triangle is farther still, and
    behind a one-sided triangle's plane by more than ``margin`` nothing counts.

    ``margin`` keeps the times far from the exact stage's own rounding: a centre beyond the
    slab by ``margin`` moving so slowly that rounding could flip its direction would take
    far longer than the frame to reach it. ``area2`` (k,) is the length of the raw normal
    ``n = e1 x e2``, ``has_plane`` whether the triangle is not degenerate, ``s0`` and ``ds``
    the start (relative to the corner a) and the motion along n. A degenerate triangle:
    [0, 1].
    """
    top = (r + margin) * area2
    bottom = np.where(two, -top, -margin * area2)
    moving = has_plane & (ds != 0)
    ds = np.where(moving, ds, 1.0)
    t_bottom = (bottom - s0) / ds
    t_top = (top - s0) / ds
    lo = np.where(moving, np.minimum(t_bottom, t_top).clip(0.0, 1.0), 0.0)
    hi = np.where(moving, np.maximum(t_bottom, t_top).clip(0.0, 1.0), 1.0)
    return lo, hi


class _Triangles:
    """The triangles of some rows, relative to their corner a: the edges a-b, b-c, c-a by
    their starts, runs and inward normals ``normal x edge`` (toward the inside of each
    edge's line, in the plane), as (3, 3, k) columns (coordinate, edge, row), so that a
    test of the three edges is one call of each kind (their ``reshape(3, -1)``: stacked
    edge after edge, see F.stack). ``shape``: the rows' :class:`_Shape`."""

    def __init__(self, e1: Float, e2: Float, eb: Float, shape: _Shape) -> None:
        self.starts = F.stack([np.zeros(e1.shape), e1, e2]).reshape(3, 3, -1)
        self.edges = F.stack([e1, eb, -e2]).reshape(3, 3, -1)
        self.normal_raw = shape.normal
        # (The culls' e2 x n for c-a is n x (a - c), bit for bit: the same products.)
        self.inward = shape.inward
        self._size_in = shape.size_in

    def widen(self, tol: Float) -> None:
        """Take points up to ``tol`` (k,) outside an edge's line as on the face: a point aimed
        exactly at an edge two triangles share must not fall between them by a rounding
        (it has no edge piece to catch it)."""
        self.slack = -tol * self._size_in

    def inside(self, w: Float, rows: NDArray | None = None, wide: bool = False) -> Bool:
        """(q,) whether points project into the triangles (of ``rows``, or all), edges
        included, given as ``w`` (3, 3, q): each point less each edge's start; with
        ``wide``, up to the tolerance of :meth:`widen` beyond them (for entries: where the
        sphere already overlaps, the nearest feature must be the exact one)."""
        pick = (lambda x: x) if rows is None else (lambda x: F.take(x, rows))
        # Inside each edge's line: (p - start) . (normal x edge) >= -slack.
        return F.every(F.dot(w, pick(self.inward)) >= (pick(self.slack) if wide else 0.0), 3)

    def in_face(self, p: Float, rows: NDArray, wide: bool = False) -> Bool:
        """(q,) :meth:`inside` of the points p (3, q) of ``rows``."""
        return self.inside(p[:, None] - F.take(self.starts, rows), rows, wide)


def _exact(
    c0: Float,
    c1: Float,
    a: Float,
    b: Float,
    c: Float,
    r: Float,
    two: Bool,
    sides: Float | None,
    shape: _Shape,
    contacts: bool = False,
    first: _First | None = None,
    twice: bool = False,
) -> tuple:
    """The exact test on (3, k) columns of rows that survived the cull (and their
    :class:`_Shape`): ``(t,)``, or with ``contacts`` ``(t, hits, point, normal, feature,
    index)``: the contacts of the rows ``hits`` that touch, with point and normal as
    columns. ``twice``: the rows are twice over, at full radius and then shrunk (see
    :func:`_blocks`); the hits are then the first copies' rows that touch in both.

    A sphere already within r of the triangle where its window opens (at the start, or
    crossing the plane from behind) touches if it approaches the nearest feature. Where
    that feature is on an edge shared with a neighbour (``sides`` (k, 3, 3) the side of
    each edge the neighbour lies on, NaN where none) and the centre lies beyond that
    edge's line but on the neighbour's side of it, the neighbour is at least as near (it
    holds the edge) and decides: the surface's distance is the nearer of the two. Without
    this, a ball passing up through a one-sided floor from behind, overlapping the diagonal
    its quad is fanned along while drifting toward it, stops there, half inside. So with a
    first entry on such an edge or a corner on it: the neighbour was within r first (see
    :class:`_Neighbours`). Beyond both sides' lines (outside a ridge's edge) both keep it.
    Of a flat surface's corner, the triangles on either side of each shared edge's line:
    the one on the centre's side keeps its contact, so a corner is never lost.

    With ``first`` (see :func:`_sweep`'s ``first_of``), a row whose first contact is later
    than a sure one of its group is not asked about its neighbours."""
    k = len(r)
    w0 = c0 - a
    v = c1 - c0
    e1 = b - a
    e2 = c - a
    tri = _Triangles(e1, e2, c - b, shape)
    area2, longest2, speed = shape.area2, shape.longest2, shape.speed
    flat = area2 <= DEGENERATE_REL * longest2
    n = np.where(flat, 0.0, tri.normal_raw / np.where(flat, 1.0, area2))
    s0 = F.dot(n, w0)
    dn = F.dot(n, v)
    longest = np.sqrt(longest2)
    size = np.maximum(r, longest)
    # A bound on the largest coordinate (at most about 4 times it), for the rounding noise.
    c0_abs, a_abs = np.abs(c0), np.abs(a)
    coord_scale = (
        np.maximum(np.maximum(c0_abs[0], c0_abs[1]), c0_abs[2])
        + np.maximum(np.maximum(a_abs[0], a_abs[1]), a_abs[2])
        + speed
        + longest
    )
    approach_eps, tol = F.thresholds(speed, size, coord_scale)
    tri.widen(tol)
    # A centre on the plane up to rounding is on it: its side (and whether it approaches
    # the face it sits on) must not be decided by the noise.
    s0 = np.where(np.abs(s0) <= ROUNDING_REL * coord_scale, 0.0, s0)

    # The window of times in which contacts count: all the frame, or (one-sided) while the
    # centre is in front of the plane.
    one = ~two & ~flat
    behind = one & (s0 < 0)
    crossing = behind & (dn > 0) & (-s0 <= dn)
    closed = behind & ~crossing
    leaving = one & (s0 >= 0) & (dn < 0) & (s0 < -dn)
    t_lo = np.where(crossing, -s0 / np.where(crossing, dn, 1.0), 0.0)
    t_hi = np.where(leaving, s0 / np.where(leaving, -dn, 1.0), 1.0)
    # Everything is measured from where the window opens: the point p at t_lo, on the plane
    # exactly where the window opens at a crossing (rounding must not leave it a hair
    # behind the face with the sphere moving out, which would read as "approaching").
    p = w0 + t_lo * v
    s_p = np.where(crossing, 0.0, s0)
    p -= np.where(crossing, F.dot(n, p), 0.0) * n
    motion = F.Motion(v, np.zeros(k), t_hi - t_lo, approach_eps, tol)

    # The pieces: offset faces, edge cylinders, vertex spheres. Each gives its first entry
    # after t_lo, and the distance from p to its feature with that distance's rate; the
    # nearest feature decides alone where p is already within r of the triangle.
    best = F.Best(k)
    near = F.Best(k)
    # Over the face and within r of it is inside; farther than r from the plane is outside
    # whatever the projection.
    beyond = np.abs(s_p) > r
    # The centre less each edge's start (corner): the projection onto the face here, and
    # the edges' and corners' pieces below.
    w = p[:, None] - tri.starts
    on_face = ~beyond & ~flat & tri.inside(w)
    near.offer(np.where(on_face, np.abs(s_p), np.inf), FACE, 0)
    near_rate = s_p * dn
    for side in (1.0, -1.0):
        moving_in = ~flat & (side * dn < -approach_eps)
        if side < 0:
            moving_in &= two
        rows = moving_in.nonzero()[0]
        if len(rows):
            face_t = np.full(k, np.inf)
            face_t[rows] = _face_time(side, rows, s_p, dn, r, p, motion, tri)
            best.offer(face_t, FACE, 0)
    # The edges and vertices matter only where the face does not decide: a face reached
    # from farther than r is the first contact (before it the centre is farther than r from
    # the plane, so from everything), and a point within r over the face is nearest to it.
    rest = np.where(beyond, ~np.isfinite(best.t), ~on_face).nonzero()[0]
    late = rest[:0]  # rows whose contact is not at the start after all
    if len(rest):
        # The three edges, then the three corners, each kind in one call (see F.stack):
        # the rows' values gathered thrice over, the first third this row's own.
        q = len(rest)
        thrice = F.stack([rest] * 3)
        m3 = motion.take(thrice)
        m = F.Motion(*(x[..., :q] for x in m3))
        r3 = F.take(r, thrice)
        corner = F.take(w, rest).reshape(3, -1)
        pr = corner[:, :q]  # (a's start is 0)
        edge = F.edge_entry(corner, F.take(tri.edges, rest).reshape(3, -1), r3, m3)
        vertex = F.vertex_entry(corner, r3, m3, F.take(speed, thrice))
        # The first entry over the six pieces, edges first where equal (as if offered one
        # by one in that order).
        entry, which = F.earliest(F.stack([edge.t, vertex.t]), 6)
        best.offer_rows(rest, entry, np.where(which < 3, EDGE, VERTEX), which % 3)
        # The nearest feature and its rate: edges first, as for the entries.
        dist, which = F.earliest(F.stack([edge.dist, vertex.dist]), 6)
        rates = F.stack([edge.rate, vertex.rate]).reshape(6, -1)
        rate_rest = np.where(which >= 0, rates[which, np.arange(q)], 0.0)
        closer = dist < near.t[rest]
        near_rate[rest[closer]] = rate_rest[closer]
        near.offer_rows(rest, dist, np.where(which < 3, EDGE, VERTEX), which % 3)
        if sides is not None:
            look, start = _looked(sides, rest, best, near, near_rate, r, m)
            if first is not None and len(look):
                # The neighbours can only move a contact later, or away: where a row's is
                # later than a sure one of its group already, they need not be asked.
                t, _inside = _times(near, near_rate, best, r, t_lo, closed, approach_eps, late)
                asked = ~first.later(t, rest[look])[rest[look]]
                look, start = look[asked], start[asked]
            late = _leave_to_neighbours(
                sides, rest, look, start, tri, two, dn > approach_eps, pr, m, best, near,
                near_rate, r, edge.dist, vertex.dist,
            )  # fmt: skip

    t, inside = _times(near, near_rate, best, r, t_lo, closed, approach_eps, late)
    if not contacts:
        return (t,)

    # The contacts of the rows that touch (twice over: of the first copies, where both
    # copies touch), gathered: a few of the rows.
    h = k // 2 if twice else k
    touch = np.isfinite(t[:h])
    if twice:
        touch &= np.isfinite(t[h:])
    hits = touch.nonzero()[0]
    from_start = inside[hits]
    feature = np.where(from_start, near.feature[hits], best.feature[hits])
    feature = feature.astype(np.int8, copy=False)
    index = np.where(from_start, near.index[hits], best.index[hits])
    v, n = F.take(v, hits), F.take(n, hits)
    centre = F.take(p, hits) + np.where(from_start, 0.0, t[hits] - t_lo[hits]) * v
    point = centre - F.dot(n, centre) * n
    # On an edge, the nearest point of that edge; on a corner, the corner (each row's
    # own, picked out of the three computed for every row at once).
    starts = F.take(tri.starts, hits)
    on_edges = F.closest_on_segment(centre[:, None], starts, F.take(tri.edges, hits))[0]
    own = (slice(None), np.maximum(index, 0), np.arange(len(hits)))  # (-1, none: any)
    point = np.where(feature == EDGE, on_edges[own], point)
    point = np.where(feature == VERTEX, starts[own], point)
    gap = centre - point
    apart = F.norm(gap)
    zero = apart == 0
    normal = F.unit(gap, apart)
    if np.count_nonzero(zero):
        # Where the centre is within rounding of the contact point, the side it is on.
        s_p = s_p[hits]
        side = np.where(flat[hits], 0.0, np.where(s_p > 0, 1.0, np.where(s_p < 0, -1.0, 0.0)))
        fallback = side * n - (side == 0) * F.unit(v, speed[hits])
        normal[:, zero] = fallback[:, zero]
    # Touching a face from outside, the normal is the face's on the side approached (a
    # point, r = 0, has no direction from the contact to its centre).
    by_face = ~from_start & (feature == FACE)
    normal = np.where(by_face, np.where(dn[hits] < 0, 1.0, -1.0) * n, normal)
    return t, hits, point + F.take(a, hits), normal, feature, index


def _times(
    near: F.Best,
    near_rate: Float,
    best: F.Best,
    r: Float,
    t_lo: Float,
    closed: Bool,
    approach_eps: Float,
    late: NDArray,
) -> tuple[Float, Bool]:
    """(k,) the rows' times of first contact (see :func:`_exact`), and whether each is
    within r of its nearest feature where its window opens (``late``: rows whose contact
    there is later after all, see :func:`_leave_to_neighbours`)."""
    inside = near.t <= r
    inside[late] = False
    approaching = (near.t > 0) & (near_rate < -near.t * approach_eps)
    t = np.where(inside, np.where(approaching, t_lo, np.inf), t_lo + best.t)
    t[closed] = np.inf
    return t, inside


class _First(NamedTuple):
    """Rows' groups and margins (see :func:`_sweep`'s ``first_of``). ``twins``: the exact
    stage's rows are these twice over, at full radius and then shrunk (see
    :func:`_blocks`), and a row touches only where both copies do."""

    group: NDArray[np.int64]
    within: Float
    twins: bool

    def take(self, rows: NDArray) -> _First:
        return _First(self.group.take(rows), self.within.take(rows), self.twins)

    def later(self, t: Float, unsure: NDArray) -> Bool:
        """Of rows with times ``t`` (twice over with ``twins``), those later by more than
        ``within`` than a sure time of their group: finite, of a row not in ``unsure`` (whose
        time may yet move later), in both copies with ``twins``."""
        sure = np.isfinite(t)
        sure[unsure] = False
        h = len(self.group)
        if self.twins:
            sure = sure[:h] & sure[h:]
        if not np.count_nonzero(sure):
            return np.zeros(len(t), bool)
        earliest = np.full(self.group.max() + 1, np.inf)
        np.minimum.at(earliest, self.group[sure], t[:h][sure])
        later = t[:h] > earliest[self.group] + self.within
        return np.concatenate([later, later]) if self.twins else later


def _looked(
    sides: Float, rest: NDArray, best: F.Best, near: F.Best, near_rate: Float, r: Float,
    m: F.Motion,
) -> tuple[NDArray, Bool]:
    """The ``rest`` rows (indices into them) :func:`_leave_to_neighbours` looks at: those
    of triangles with a shared edge that would touch by an edge or a corner, a first entry
    or a start within r of the nearest feature approaching it; and (l,) which are starts."""
    entry = best.feature[rest] > FACE  # a first entry on an edge or a corner (-1: none)
    nearest = near.t[rest]
    start = (nearest <= r[rest]) & (nearest > 0)
    start &= near_rate[rest] < -nearest * m.approach_eps
    has = F.some(np.isfinite(sides[:, :, 0].take(rest, axis=0).T), 3)  # any edge shared
    look = ((entry | start) & has).nonzero()[0]
    return look, start[look]


def _leave_to_neighbours(
    sides: Float,
    rest: NDArray,
    look: NDArray,
    start: Bool,
    tri: _Triangles,
    two: Bool,
    away: Bool,
    p: Float,
    m: F.Motion,
    best: F.Best,
    near: F.Best,
    near_rate: Float,
    r: Float,
    edge_dist: Float,
    vertex_dist: Float,
) -> NDArray:
    """Of the ``rest`` rows (their centres p (3, q) where the window opens, their motion
    m; ``two`` and ``away`` (k,): two-sided, moving away from the plane), leave to the
    neighbours what is theirs (see :class:`_Neighbours`): a first entry in
    ``best`` becomes inf, a start within r of the nearest feature in ``near`` is no longer
    approaching (``near_rate`` 0). Where the centre then comes back over this triangle's
    side of the edge within r of it and approaching it, that is the contact, as a late
    entry in ``best``: returns those rows (of all k) whose start was so moved. Only the
    rows ``look`` (of rest; ``start`` (l,) which are starts, see :func:`_looked`) that
    would touch by an edge or a corner are looked at. A contact only ever moves later."""
    if not len(look):
        return look
    q = len(rest)
    rows = rest[look]
    feature = best.feature[rows]
    entry = (feature > FACE) & ~start
    t, index = np.where(entry, best.t[rows], 0.0), best.index[rows]
    v = F.take(m.v, look)
    # Where the centre is when it touches: at the entry, or where the window opens.
    at = F.take(p, look) + t * v
    # Behind a one-sided neighbour, it counts for nothing; but a start may be left to it
    # there while the centre moves away from this plane (a ball passing up through a
    # curved surface from behind, past a corner of this triangle), an entry never.
    behind = two[rows] | (away[rows] & start)
    neighbours = _Neighbours(sides.take(rows, axis=0), rows, tri, m.tol[look], behind)
    side = neighbours.beyond(at)  # (3, l)
    gone = np.zeros(len(look), bool)
    if np.count_nonzero(entry):
        # The first entry, where it is the neighbour's. Corner j is on edges j and j - 1.
        cols = np.arange(len(look))
        which = np.maximum(index, 0)  # (-1: none, not an entry)
        own = side[which, cols]
        before = side[(which + 2) % 3, cols]
        gone = entry & (own | ((feature == VERTEX) & before))
        best.t[rows[gone]] = np.inf
    if np.count_nonzero(start):
        # The nearest point on a shared edge: within it, or at either of its ends.
        edges = F.take(edge_dist.reshape(3, q), look)
        corners = F.take(vertex_dist.reshape(3, q), look)
        least = near.t[rows]
        on = (edges <= least) | (corners <= least) | (corners[[1, 2, 0]] <= least)
        beyond = start & F.some(side & on, 3)
        near_rate[rows[beyond]] = 0.0  # the neighbour's to decide: not approaching here
        gone |= beyond
    if not np.count_nonzero(gone):
        return look[:0]
    # Coming back over this side of every edge it was beyond: the neighbour, nearer,
    # decided only while the centre was on its side (at a concave crease this triangle's
    # distance can then go on falling below the neighbour's). Back over one edge, the
    # centre may be over another neighbour: that one's, till it is back from there too (a
    # straight path is back over an edge's line once and for all).
    g = gone.nonzero()[0]
    across = F.take(side, g)
    for _ in range(3):
        vg = F.take(v, g)
        later, edge = neighbours.back(F.take(at, g), vg, across, g)
        back = (np.isfinite(later) & (t[g] + later <= m.t_hi[look[g]])).nonzero()[0]
        if not len(back):
            return look[:0]
        g, later, edge, across = g[back], later[back], edge[back], F.take(across, back)
        vg = F.take(v, g)
        c = F.take(at, g) + later * vg
        more = neighbours.beyond(c, g) & ~across
        if not np.count_nonzero(more):
            break
        across |= more
    when = t[g] + later
    dist, rate = neighbours.nearest_rate(c, vg, g)
    eps = m.approach_eps[look[g]]
    hit = (dist <= r[rows[g]]) & (rate < -dist * eps)
    late = rows[g[hit]]
    best.t[late] = when[hit]
    best.feature[late] = EDGE
    best.index[late] = edge[hit]
    return late[start[g[hit]]]


class _Neighbours:
    """The edges some rows of triangles share with a neighbour of their surface, and which
    points of those rows are the neighbour's to decide.

    A point beyond a shared edge's line, but not beyond the neighbour's line for the same
    edge (in the neighbour's plane), has the neighbour at least as near as the edge (the
    neighbour holds it): the surface's distance there is the neighbour's. Touching this
    triangle's edge, or the corners at its ends, from there is not this triangle's contact.
    Beyond both lines (outside a ridge) it is both triangles' to decide. "Beyond" is by
    more than ``tol`` and "not beyond" by no more, so that of two coplanar neighbours,
    whose lines are one up to rounding, one always decides. The three edges are tested in
    one go, stacked (see F.stack)."""

    def __init__(
        self, sides: Float, rows: NDArray, tri: _Triangles, tol: Float, behind: Bool
    ) -> None:
        # sides (q, 3, 3) the neighbours' sides (unit, NaN where none) of ``rows`` of tri.
        self.q = len(rows)
        self._offsets = np.array([[0], [1], [2]]) * self.q
        stacked = sides.transpose(2, 1, 0).reshape(3, -1)  # (3, 3 q), edge after edge
        self.shared = np.isfinite(stacked[0])
        self.toward = np.where(self.shared, stacked, 0.0)
        self.starts = F.take(tri.starts, rows).reshape(3, -1)
        self.inward = F.take(tri.inward, rows).reshape(3, -1)
        self.out = F.take(tri.slack, rows).reshape(-1)  # -tol |inward|
        self.slack = -F.stack([tol] * 3)
        # The neighbour's front (one-sided, as this triangle): it counts only there, but
        # for rows that may leave it to a neighbour they are behind (``behind`` (q,), see
        # _leave_to_neighbours). Its normal is its side vector across the edge run back:
        # toward x run.
        self.runs = F.take(tri.edges, rows).reshape(3, -1)
        self.front = F.cross(self.toward, self.runs)
        self.front_slack = self.slack * F.norm(self.runs)
        self.two = F.stack([behind] * 3)

    def beyond(self, p: Float, rows: NDArray | None = None) -> Bool:
        """(3, n): per edge, whether the points p (3, n) (of ``rows``, indices into this
        object's; default all) are the neighbour's to decide: beyond this triangle's line,
        not beyond the neighbour's, and where the neighbour counts (in front of it), or
        behind it where that may be left to it (see ``behind``)."""
        n = self.q if rows is None else len(rows)
        at = None if rows is None else self._stacked(rows)
        pick = (lambda x: x) if at is None else (lambda x: F.take(x, at))
        w = F.stack([p] * 3) - pick(self.starts)
        out = pick(self.shared) & (F.dot(w, pick(self.inward)) < pick(self.out))
        out &= F.dot(w, pick(self.toward)) >= pick(self.slack)
        out &= pick(self.two) | (F.dot(w, pick(self.front)) >= pick(self.front_slack))
        return out.reshape(3, n)

    def _stacked(self, rows: NDArray) -> NDArray:
        """Where ``rows`` are in this object's stacked columns, edge after edge."""
        return (rows + self._offsets).ravel()

    def nearest_rate(self, c: Float, v: Float, rows: NDArray) -> tuple[Float, Float]:
        """(n,) distance from points c (3, n) of ``rows`` (indices into this object's;
        relative to corner a, on the boundary of the face's prism or outside it) to the
        triangle, over its edges, and that distance times its rate of change along v."""
        n = len(rows)
        pick = self._stacked(rows)
        cc = F.stack([c] * 3)
        on, _u = F.closest_on_segment(cc, F.take(self.starts, pick), F.take(self.runs, pick))
        gap = cc - on
        dist, which = F.earliest(F.norm(gap), 3)
        which = np.maximum(which, 0)  # (-1: none, inf)
        return dist, F.dot(F.take(gap, which * n + np.arange(n)), v)

    def back(self, p: Float, v: Float, side: Bool, rows: NDArray) -> tuple[Float, NDArray]:
        """(n,) how long after points p (3, n) of ``rows`` (indices into this object's)
        moving by v the centre is back on this triangle's side of every edge it is the
        neighbour's across (``side`` (3, n)); inf if it never is. And (n,) the last such
        edge."""
        n = len(rows)
        pick = self._stacked(rows)
        inward = F.take(self.inward, pick)
        height = F.dot(F.stack([p] * 3) - F.take(self.starts, pick), inward)
        rate = F.dot(F.stack([v] * 3), inward)
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(rate > 0, np.maximum(-height / rate, 0.0), np.inf)
        wait = np.where(side.reshape(-1), wait, 0.0).reshape(3, n)
        return wait.max(axis=0), wait.argmax(axis=0)


def _face_time(
    side: float, rows: NDArray, s0: Float, dn: Float, r: Float, w0: Float, m: F.Motion, tri
) -> Float:
    """Time the centre reaches the offset plane on ``side`` (1 front, -1 back) within the
    face, for rows moving toward that side's plane; moved to the window's start if
    rounding put it just before."""
    s0, dn, r, t_lo, t_hi = s0[rows], dn[rows], r[rows], m.t_lo[rows], m.t_hi[rows]
    entry = (side * s0 - r) / (-side * dn)
    t = np.maximum(entry, t_lo)
    # Moved to t_lo only from the right side of the plane, where the distance is the
    # offset that decreases (from the other side, moving in is moving away).
    ok = ((entry >= t_lo) | (side * (s0 + t_lo * dn) > 0)) & (t <= t_hi)
    centre = F.take(w0, rows) + np.where(ok, t, 0.0) * F.take(m.v, rows)
    ok &= tri.in_face(centre, rows, wide=True)
    return np.where(ok, t, np.inf)
