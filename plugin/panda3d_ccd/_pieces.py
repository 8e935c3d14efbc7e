"""Level pieces as obstacle tables: triangles, boxes, capsules and inverse spheres, each in
the frame of the node that holds it. Pure numpy.

One class, :class:`Pieces`, serves every kind; a kind is one :class:`Kind` entry (its
kernel, its rows' bounds and a closest-point function), as Box2D's ``s_registers``: a new
kind is one more entry.

Static pieces (``frames`` None) are in world coordinates and indexed once. Kinematic
pieces are in their node's own coordinates, and the node moves by a rigid motion over the
pass (:class:`~._frames.Frames`). A body is tested on its motion relative to the piece, in
the piece's frame: the chord from its local position at the segment's start to its local
position at the end. Where the frame turns, the true local path is curved; the piece is
swept inflated by the most the curve can stray from the chord (``Frames.chord_deviation``),
so no contact is missed, and the frame is cut into sub-steps so that this stays small
against the body (a body stops at most that much short of a turning piece).

A contact with a kinematic piece also says how the piece carries the body on (``carry``:
where the body's point of contact is taken by the piece by the end of the pass) and the
piece's normal at the end of the pass (``push``): the solver applies the response in the
piece's frame and maps it back with the piece's end transform.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _frames
from ._arrays import cross as _cross
from ._arrays import largest_abs
from ._arrays import length as _length
from ._arrays import lengths as _lengths
from ._frames import Frames
from ._index import StaticIndex, _padded
from ._obstacles import Response
from ._paths import Bool, Float, Hits, Int, Paths, Segments, in_step, pick, slop, sub_steps, unit
from ._raygrid import RayGrid
from ._tolerance import DIST_REL_EPS, ROUNDING_REL, TURN_TOLERANCE, WELD_FOLDED, WELD_GAP, WELD_REL
from .sweep import sphere_box as _box
from .sweep import sphere_capsule as _capsule
from .sweep import sphere_inv_sphere as _inv
from .sweep import sphere_triangle as _tri
from .sweep._result import EDGE, FACE, VERTEX, Sweep

#: Kinds of obstacle (``Hits.kind``), after SPHERE (0) and PLANE (1).
TRIANGLE, BOX, CAPSULE, INV_SPHERE = 2, 3, 4, 5


class Kind(NamedTuple):
    """One kind of piece: how its rows are swept, bounded and measured."""

    code: int
    name: str
    #: (c0, c1, r, *geometry rows) -> Sweep, rows checked and broadcast.
    sweep: Callable[..., Sweep]
    #: (*geometry) -> (lo, hi) (m, 3) boxes of the rows; None: unbounded (every body).
    bounds: Callable[..., tuple[Float, Float]] | None
    #: (p, *geometry rows) -> ((k, 3) closest point of the solid, (k,) distance to it);
    #: with ``features=True`` also the feature (FACE, EDGE, VERTEX) and its index there, as
    #: the kernel names them.
    closest: Callable[..., tuple[Any, ...]]
    #: Where the kind has a faster kernel for a point (radius 0: rays) than ``sweep``:
    #: ``point_data(*geometry)`` -> (m, w) rows computed once per table, and
    #: ``point(c0, c1, data rows)`` -> ((h,) rows that hit, their Sweep). None: ``sweep``
    #: with radius 0.
    point_data: Callable[..., Float] | None = None
    point: Callable[..., Sweep] | None = None
    #: ``cull(c0, c1, r, *geometry rows)`` -> (k,) bool, False only for rows whose
    #: ``sweep`` surely misses, as the kernel's own first cull finds them; None: none.
    cull: Callable[..., NDArray[np.bool_]] | None = None
    #: ``deep(c0, c1, r, shrunk, *geometry rows, first_of=None, within=None)`` -> ``sweep``
    #: at r of the rows that touch at the radii ``shrunk`` too, the rest missing (the slop
    #: rule in one kernel call); with ``first_of`` (k,) the rows' groups and ``within``
    #: (k,), exact for each group's earliest contacts and those up to ``within`` later, the
    #: others no earlier than that. None: ``sweep`` at both radii.
    deep: Callable[..., Sweep] | None = None
    #: ``grown(c0, c1, ra, rb, sl, *geometry rows)`` -> (k,) times (inf: none; NaN: left
    #: to ``sweep``) and their (point, normal, feature, index), where spheres growing from
    #: radius ra to rb along c0 -> c1 first touch the rows (``sweep``, at the largest
    #: radius, stops them short, at a point they may not touch, or counts nothing where
    #: they overlap the row at rb and do not move into it), with the slop rule (``sl``).
    grown: Callable[..., tuple[Float, Float, Float, NDArray[np.int8], Int]] | None = None


def _triangle_bounds(a: Float, b: Float, c: Float, *_flags: NDArray) -> tuple[Float, Float]:
    return np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)


def _triangle_closest(
    p: Float, a: Float, b: Float, c: Float, *_flags: NDArray, features: bool = False
) -> tuple[Any, ...]:
    """Closest points of triangles to points p (Ericson, Real-Time Collision Detection
    5.1.5), by regions, all rows at once; the region is the feature (the kernel's names:
    edges a-b, b-c, c-a; corners a, b, c; the face for a point over it, its edges
    included)."""
    ab, ac, ap = b - a, c - a, p - a

    def dot(u: Float, v: Float) -> Float:
        return np.einsum("ij,ij->i", u, v)

    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = p - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = p - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v = vb / denom
        w = vc / denom
        out = a + v[:, None] * ab + w[:, None] * ac
        t_ab = d1 / (d1 - d3)
        t_ac = d2 / (d2 - d6)
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
    regions = [
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + t_ab[:, None] * ab, EDGE, 0),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + t_ac[:, None] * ac, EDGE, 2),
        ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), b + t_bc[:, None] * (c - b), EDGE, 1),
        ((d6 >= 0) & (d5 <= d6), c, VERTEX, 2),
        ((d3 >= 0) & (d4 <= d3), b, VERTEX, 1),
        ((d1 <= 0) & (d2 <= 0), a, VERTEX, 0),
    ]
    for where, point, _kind, _which in regions:  # the last (vertex regions) first in Ericson's
        out = np.where(where[:, None], point, out)
    lost = ~np.isfinite(out).all(axis=1)  # a degenerate triangle: its corner a
    out[lost] = a[lost]
    if not features:
        return out, _length(p - out)
    feature = np.full(len(p), FACE, np.int8)
    index = np.zeros(len(p), np.int64)
    for where, _point, kind, which in regions:
        feature[where], index[where] = kind, which
    # A point over the face, edges included, touches the face (as the kernel names it).
    over = (va >= 0) & (vb >= 0) & (vc >= 0) & (denom > 0)
    feature[over], index[over] = FACE, 0
    feature[lost], index[lost] = VERTEX, 0
    return out, _length(p - out), feature, index


def shared_edges(corners: np.ndarray) -> np.ndarray:
    """(t, 3, 3) of triangles (t, 3, 3): for each edge e (a-b, b-c, c-a), the far corner
    of another of them that has that edge run the other way (a polygon's fan diagonal, a
    seam of a mesh wound one way, the edge between two faces of a box); NaN where none.
    See :func:`_edge_matches` for how corners are matched."""
    return _across(corners, *_edge_matches(corners))


def welded(corners: np.ndarray) -> np.ndarray:
    """Polygons' triangles (t, 3, 3) with the copies of each corner of an edge two of them
    share made one, exactly (every copy takes the value of one copy), where they are a
    crack apart (:func:`seams`)."""
    return seams(corners, len(corners))[0]


def seams(corners: np.ndarray, polygons: int) -> tuple[np.ndarray, np.ndarray]:
    """Triangles (t, 3, 3) whose first ``polygons`` are polygons' (the rest are exact, a
    box's faces) with the polygons' copies of each corner of an edge two of them share
    made one, where they are a crack apart, and the :func:`shared_edges` of them all: the
    edges matched once for both.

    Panda3D rebuilds a CollisionPolygon's corners from 2-d points and a float32 matrix, so
    the corners two polygons share come out apart: a few ulps near the origin, more for
    small polygons far from it (about 2e-5 of a 1.7-unit triangle's coordinates at 800).
    A sphere spans such a crack; a point (radius 0) sliding along one polygon into a
    valley seam passed under its neighbour's edge and through the surface.

    Edges are matched loosely (``WELD_REL`` of the coordinates, see :func:`_edge_matches`),
    and a modelled feature can be that small (a curb, a slit, a thin slab): a pair is
    welded only where its copies are no farther apart than Panda3D's rebuild can put
    them (:func:`_rebuild_error`, and at most ``WELD_GAP`` of the shortest edge of either
    triangle), and its two triangles lie on either side of the edge, not folded onto each
    other. A triangle that welding would give two equal corners keeps its own."""
    edge, other = _edge_matches(corners)
    matched = edge, other
    mine = (edge < 3 * polygons) & (other < 3 * polygons)
    edge, other = edge[mine], other[mine]
    n = 3 * len(corners)
    # Edge f runs from corner f to the next corner of its triangle; its match runs back.
    t, e = np.divmod(edge, 3)
    to, eo = np.divmod(other, 3)
    flat = corners.reshape(-1, 3)
    start, end = edge, 3 * t + (e + 1) % 3
    back, front = 3 * to + (eo + 1) % 3, other  # the copies of start and end
    sides = (corners[:, [1, 2, 0]] - corners).reshape(-1, 3)  # each corner's edge
    shortest = _length(sides).reshape(-1, 3).min(axis=1)
    size = np.minimum(shortest[t], shortest[to])
    gap = np.maximum(np.abs(flat[start] - flat[back]), np.abs(flat[end] - flat[front])).max(axis=1)
    largest = np.abs(corners).max(axis=(1, 2))
    magnitude = np.maximum(largest[t], largest[to])
    crack = gap <= np.minimum(WELD_GAP * size, _rebuild_error(magnitude, size))
    # The edge crossed with the way to each triangle's third corner: opposite on a seam,
    # the same on two triangles folded onto each other.
    run = flat[end] - flat[start]
    own = _cross(run, flat[3 * t + (e + 2) % 3] - flat[start])
    theirs = _cross(run, flat[3 * to + (eo + 2) % 3] - flat[start])
    folded = np.einsum("ij,ij->i", own, theirs) > WELD_FOLDED * _length(own) * _length(theirs)
    weld = np.flatnonzero(crack & ~folded)
    if not len(weld):
        return corners, _across(corners, *matched)
    u = np.concatenate([start[weld], end[weld]])
    v = np.concatenate([back[weld], front[weld]])
    # Each copy of a corner labelled with the least index of its copies (joined along
    # shared edges; halving the paths each round).
    label = np.arange(n)
    while True:
        least = np.minimum(label[u], label[v])
        before = label.copy()
        np.minimum.at(label, u, least)
        np.minimum.at(label, v, least)
        label = label[label]
        if np.array_equal(label, before):
            break
    tri = label.reshape(-1, 3)
    keep = (tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 0] == tri[:, 2])
    tri[keep] = np.arange(n).reshape(-1, 3)[keep]
    out = flat[tri.ravel()].reshape(corners.shape)
    return out, _across(out, *matched)


def _rebuild_error(magnitude: np.ndarray, size: np.ndarray) -> np.ndarray:
    """About three times the farthest apart Panda3D rebuilds the copies of a polygon corner of
    ``magnitude`` shared by triangles whose edges are at least ``size`` long: eight float32
    spacings, and the rounding of the plane's placement, which grows as the magnitude
    squared over the size (measured at most: 3.7e-7 of the coordinates at 5 for 1.7-unit
    triangles, 3.3e-6 at 200, 1.8e-5 at 800; 3.4e-5 at 200 for 0.2-unit ones; 3.6 cm at
    1,000 for 1-unit ones)."""
    ulp = 2.0**-23 * np.maximum(magnitude, 1.0)
    return 8.0 * ulp + ulp * magnitude / np.maximum(size, 1e-300)


def _across(corners: np.ndarray, edge: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(t, 3, 3) the far corner of each matched ``edge``'s ``other`` (see
    :func:`_edge_matches`), NaN for the rest."""
    across = np.full((len(corners), 3, 3), np.nan)
    far = corners[:, [2, 0, 1]].reshape(-1, 3)  # the corner off each edge, edge order
    across.reshape(-1, 3)[edge] = far[other]
    return across


def _edge_matches(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of triangles (t, 3, 3), the edges (flat: 3 triangle + e, e 0 for a-b, 1 for b-c, 2
    for c-a) that another triangle has run the other way, and that other edge of each.

    Corners are matched to ``WELD_REL`` of their own magnitude: Panda3D rebuilds the
    corners polygons share a few float32 ulps apart (see ``SEAM_REL``). Two grids half a
    cell apart each match what the other splits across a cell's wall; a seam missed (two
    rounding misses, one per grid) is only an edge treated as the surface's border.
    The second grid also sizes its cells half an octave off the first: copies of a corner
    at a power of two (8.0 and 7.9999995, common in levels built on round numbers) take
    cells of two sizes in the first grid, and one in the second."""
    t = len(corners)
    matched = np.full(3 * t, -1)
    if t < 2:
        return matched[:0], matched[:0]
    magnitude = np.abs(corners).max(axis=2)  # (t, 3)
    for shift, octave in ((0.0, 1.0), (0.5, np.sqrt(2.0))):
        # Each corner's cell: its magnitude's power of two, then the grid of that size
        # times WELD_REL (two copies of a corner differ by a few ulps of the same
        # magnitude), each coordinate then within 2^15 of 0; one int64 key per cell.
        power = np.frexp(np.maximum(magnitude * octave, 1.0))[1]  # (t, 3), <= 1025
        scaled = corners / (WELD_REL * np.ldexp(1.0, power))[..., None]
        cell = np.floor(scaled + shift).astype(np.int64) + 2**15
        key = ((power * 2**16 + cell[..., 0]) * 2**16 + cell[..., 1]) * 2**16 + cell[..., 2]
        _, ids = np.unique(key.ravel(), return_inverse=True)
        ids = ids.reshape(t, 3)
        start, end = ids.ravel(), ids[:, [1, 2, 0]].ravel()
        count = int(ids.max()) + 1
        forward = start * count + end
        order = np.argsort(forward, kind="stable")
        backward = end * count + start
        at = np.minimum(np.searchsorted(forward, backward, sorter=order), len(order) - 1)
        other = order[at]
        found = (forward[other] == backward) & (start != end)
        pick = np.flatnonzero(found & (matched < 0))
        matched[pick] = other[pick]
    edge = np.flatnonzero(matched >= 0)
    return edge, matched[edge]


def _box_bounds(lo: Float, hi: Float) -> tuple[Float, Float]:
    return lo, hi


def _box_closest(p: Float, lo: Float, hi: Float, features: bool = False) -> tuple[Any, ...]:
    near = np.clip(p, lo, hi)
    if not features:
        return near, _length(p - near)
    # The feature as the kernel names it (see sphere_box): by the axes clipped, each's side.
    outside = (p < lo) | (p > hi)
    up = (p > 0.5 * (lo + hi)).astype(np.int64)
    clipped = outside.sum(axis=1)
    rows = np.arange(len(p))
    free = np.argmin(outside, axis=1)  # an edge's one unclipped axis
    j, m = np.where(free == 0, 1, 0), np.where(free == 2, 1, 2)
    out_axis = np.argmax(outside, axis=1)  # a face's one clipped axis
    # A point inside: the nearest face.
    depth = np.concatenate([hi - p, p - lo], axis=1)
    face_of = np.argmin(depth, axis=1)  # 0..2: +axis, 3..5: -axis
    feature = np.select([clipped == 3, clipped == 2], [VERTEX, EDGE], FACE).astype(np.int8)
    index = np.select(
        [clipped == 3, clipped == 2, clipped == 1],
        [
            4 * up[:, 0] + 2 * up[:, 1] + up[:, 2],
            4 * free + 2 * up[rows, j] + up[rows, m],
            2 * out_axis + up[rows, out_axis],
        ],
        np.where(face_of < 3, 2 * face_of + 1, 2 * (face_of - 3)),
    )
    return near, _length(p - near), feature, index


def _capsule_bounds(a: Float, b: Float, radius: Float) -> tuple[Float, Float]:
    r = radius[:, None]
    return np.minimum(a, b) - r, np.maximum(a, b) + r


def _capsule_closest(
    p: Float, a: Float, b: Float, radius: Float, features: bool = False
) -> tuple[Any, ...]:
    axis = b - a
    aa = np.einsum("ij,ij->i", axis, axis)
    s = np.divide(np.einsum("ij,ij->i", p - a, axis), aa, out=np.zeros(len(p)), where=aa > 0)
    on = a + np.clip(s, 0.0, 1.0)[:, None] * axis
    gap = p - on
    dist = _length(gap)
    out = on + unit(gap, np.zeros_like(gap)) * np.minimum(radius, dist)[:, None]
    if not features:
        return out, np.maximum(dist - radius, 0.0)
    # The body (EDGE 0), or the cap at a (VERTEX 0) or at b (VERTEX 1), as the kernel.
    cap = (s <= 0.0) | (s >= 1.0) | (aa == 0)
    feature = np.where(cap, VERTEX, EDGE).astype(np.int8)
    index = ((s >= 1.0) & (aa > 0)).astype(np.int64)
    return out, np.maximum(dist - radius, 0.0), feature, index


def _inv_closest(
    p: Float, center: Float, radius: Float, features: bool = False
) -> tuple[Any, ...]:
    gap = p - center
    dist = _length(gap)
    fallback = np.broadcast_to([0.0, 0.0, 1.0], gap.shape)
    out = center + unit(gap, fallback) * radius[:, None]
    found = (np.where((dist >= radius)[:, None], p, out), np.maximum(radius - dist, 0.0))
    if not features:
        return found
    return (*found, np.full(len(p), FACE, np.int8), np.zeros(len(p), np.int64))


#: Newton steps :func:`_advance` takes at most, to each of its roots (each step a
#: closest-point call on the rows still going).
_ADVANCE_STEPS = 32
#: The gap, relative to the slop, at which :func:`_advance` calls a growing sphere touching.
_ADVANCE_GAP = 1e-3


def _rate_eps(c0: Float, c1: Float, g: Float, *more: Float) -> Float:
    """(k,) how fast (per unit of the segment) a gap may change by rounding alone, for
    centres moving c0 -> c1 while their radii grow by ``g`` (``more``: other points whose
    coordinates enter the sums)."""
    scale = np.maximum(1.0, largest_abs(c0, c1, *more))
    return DIST_REL_EPS * (_length(c1 - c0) + np.abs(g)) + ROUNDING_REL * scale


def _first_root(
    closest: Callable[..., tuple[Any, ...]],
    c0: Float,
    v: Float,
    ra: Float,
    g: Float,
    geometry: tuple[NDArray, ...],
    front: Callable[[Float, Int], Bool] | None,
    s: Float,
    rows: Int,
    tol: Float,
    eps: Float,
) -> Float:
    """Newton's method on the gap d(s) - (ra + s g) of ``rows`` from ``s`` (a copy is
    changed), to the first s in [s, 1] where it is at most ``tol`` and shrinking: (k,) s
    there (inf where none: it stops shrinking first, or goes on past 1, or its centre is
    behind a one-sided ``front``). The gap is convex along the path (see
    :func:`_advance`): from above its first root, the steps never pass it. Out of steps,
    where it got to (short of the root)."""
    s = s.copy()
    out = np.full(len(c0), np.inf)
    for step in range(_ADVANCE_STEPS + 1):
        if not len(rows):
            break
        c = c0[rows] + s[rows, None] * v[rows]
        q, d = closest(c, *(x[rows] for x in geometry))
        gap = d - (ra[rows] + s[rows] * g[rows])
        # The gap's rate: the centre's velocity along c - q (d's gradient), less the growth.
        rate = np.full(len(rows), np.inf)
        np.divide(np.einsum("ij,ij->i", c - q, v[rows]), d, out=rate, where=d > 0)
        rate -= g[rows]
        closing = rate < -eps[rows]
        if front is not None:
            closing &= front(c, rows)
        touch = closing & ((gap <= tol[rows]) | (step == _ADVANCE_STEPS))
        out[rows[touch]] = s[rows[touch]]
        nxt = s[rows] - np.where(closing & ~touch, gap / np.where(closing, rate, -1.0), 0.0)
        on = closing & ~touch & (nxt <= 1.0)
        rows = rows[on]
        s[rows] = nxt[on]
    return out


def _advance(
    closest: Callable[..., tuple[Any, ...]],
    c0: Float,
    c1: Float,
    ra: Float,
    rb: Float,
    sl: Float,
    geometry: tuple[NDArray, ...],
    front: Callable[[Float, Int], Bool] | None = None,
) -> tuple[Float, Float, Float, NDArray[np.int8], Int]:
    """:class:`Kind` ``grown`` of a convex solid, given its ``closest``; ``front(c, rows)``
    says where a centre counts (a one-sided triangle's front).

    The gap g(s) = d(s) - r(s), d the distance from the centre to the solid (convex along a
    straight path) and r the radius (linear in s), is convex: its first root is found by
    Newton's method from s = 0 (conservative advancement), whose steps on a convex
    function from above never pass that root, and the sphere is called touching within
    ``_ADVANCE_GAP`` of the slop short of it. As the kernels' slop rule, it counts only
    where the gap goes on below minus the slop (found the same way, from there). Rows
    whose centre starts in or on the solid (no gradient), or behind ``front``, are left
    to the sweep (NaN), as is a shrinking sphere's."""
    k = len(c0)
    v = c1 - c0
    g = rb - ra
    eps = _rate_eps(c0, c1, g)
    tol = _ADVANCE_GAP * sl
    d0 = closest(c0, *geometry)[1]
    asked = (g > 0) & (d0 > 0)
    if front is not None:
        asked &= front(c0, np.arange(k))
    touch = _first_root(
        closest, c0, v, ra, g, geometry, front, np.zeros(k), np.flatnonzero(asked), tol, eps
    )
    # Deeper than the slop, if it were not stopped: the gap's root at minus the slop.
    hit = np.flatnonzero(np.isfinite(touch))
    deep = _first_root(closest, c0, v, ra - sl, g, geometry, front, touch, hit, tol, eps)
    hit = hit[np.isfinite(deep[hit])]
    s = np.where(asked, np.inf, np.nan)
    s[hit] = touch[hit]
    point = np.full((k, 3), np.nan)
    normal = np.full((k, 3), np.nan)
    feature = np.full(k, -1, np.int8)
    index = np.full(k, -1, np.int64)
    if len(hit):
        centre = c0[hit] + s[hit, None] * v[hit]
        point[hit], _d, feature[hit], index[hit] = closest(
            centre, *(x[hit] for x in geometry), features=True
        )
        normal[hit] = unit(centre - point[hit], np.zeros_like(centre))
    return s, point, normal, feature, index


def _triangle_grown(
    c0: Float, c1: Float, ra: Float, rb: Float, sl: Float, a: Float, b: Float, c: Float,
    two: Bool, *_sides: Float,
) -> tuple[Float, Float, Float, NDArray[np.int8], Int]:
    """:class:`Kind` ``grown`` of triangles: counted only from the front of a one-sided
    one, as its kernel counts them."""
    n = _cross(b - a, c - a)

    def front(p: Float, rows: Int) -> Bool:
        return two[rows] | (np.einsum("ij,ij->i", n[rows], p - a[rows]) >= 0.0)

    return _advance(_triangle_closest, c0, c1, ra, rb, sl, (a, b, c), front)  # fmt: skip


def _convex_grown(
    closest: Callable[..., tuple[Float, Float, NDArray[np.int8], Int]],
) -> Callable[..., tuple[Float, Float, Float, NDArray[np.int8], Int]]:
    """:class:`Kind` ``grown`` of a convex solid with nothing one-sided (boxes, capsules)."""

    def grown(c0: Float, c1: Float, ra: Float, rb: Float, sl: Float, *geometry: NDArray):
        return _advance(closest, c0, c1, ra, rb, sl, geometry)

    return grown


def _inv_grown(
    c0: Float, c1: Float, ra: Float, rb: Float, sl: Float, center: Float, radius: Float
) -> tuple[Float, Float, Float, NDArray[np.int8], Int]:
    """:class:`Kind` ``grown`` of inverse spheres (solid outside the ball), for spheres
    inside the room at the start: they touch the wall where |p(s)| = R - r(s) (p from the
    ball's centre), which squared is a quadratic in s; its first root in [0, 1], counted
    where the root for the room grown by the slop is in [0, 1] too (the slop rule). (Not
    convex: no Newton steps here.) A sphere already at (or past) the wall touches it at
    once where it grows or moves out faster than rounding; else it is left to the sweep
    (moving in, it may cross the room to the far wall)."""
    p0 = c0 - center
    v = c1 - c0
    g = rb - ra
    dist = _length(p0)
    aa = np.einsum("ij,ij->i", v, v) - g * g
    pv = np.einsum("ij,ij->i", p0, v)

    def first(room: Float) -> Float:
        # |p0 + s v|^2 = (room - s g)^2; from inside (c < 0) the first root is -c / (b + sq)
        # (for aa < 0, growing faster than moving, b >= g (room - |p0|) > 0).
        half_b = pv + room * g
        c = (dist - room) * (dist + room)
        disc = half_b * half_b - aa * c
        sq = np.sqrt(np.maximum(disc, 0.0))
        # (A double root, a path that touches the wall just as it leaves it, may round
        # to a disc a hair below 0.)
        ok = (disc >= -ROUNDING_REL * half_b * half_b) & (half_b + sq > 0.0)
        s = np.full(len(c), np.inf)
        np.divide(-c, half_b + sq, out=s, where=ok)
        return np.where(s <= 1.0, np.maximum(s, 0.0), np.inf)

    inside = dist < radius - ra
    s = np.where(inside, first(radius - ra), np.nan)
    s[inside & ~np.isfinite(first(radius - ra + sl))] = np.inf
    eps = _rate_eps(c0, c1, g, center)
    deepens = pv / np.where(dist > 0, dist, 1.0) + g > eps
    s[~inside & deepens] = 0.0
    s[g <= 0] = np.nan
    hit = np.isfinite(s)
    out = unit(p0 + np.where(hit, s, 0.0)[:, None] * v,
               unit(v, np.broadcast_to([0.0, 0.0, 1.0], v.shape)))  # fmt: skip
    point = np.where(hit[:, None], center + radius[:, None] * out, np.nan)
    normal = np.where(hit[:, None], -out, np.nan)
    return (s, point, normal, np.where(hit, FACE, -1).astype(np.int8),
            np.where(hit, 0, -1).astype(np.int64))  # fmt: skip


KINDS = {
    TRIANGLE: Kind(TRIANGLE, "triangle", _tri._sweep, _triangle_bounds, _triangle_closest,
                   _tri._point_data, _tri._point_hits, _tri._may_touch, _tri._sweep_deep,
                   _triangle_grown),
    BOX: Kind(BOX, "box", _box._sweep, _box_bounds, _box_closest,
              grown=_convex_grown(_box_closest)),
    CAPSULE: Kind(CAPSULE, "capsule", _capsule._sweep, _capsule_bounds, _capsule_closest,
                  grown=_convex_grown(_capsule_closest)),
    INV_SPHERE: Kind(INV_SPHERE, "inverse sphere", _inv._sweep, None, _inv_closest,
                     grown=_inv_grown),
}


class Pieces:
    """Rows of one kind of piece: ``geometry`` a tuple of (m, ...) arrays in the kernel's
    argument order after the sphere's (triangles: a, b, c, two_sided, and the far corners
    of their neighbours (see :func:`shared_edges`), kept as the sides those lie on (see
    :func:`~.sweep.sphere_triangle.neighbour_sides`); boxes: lo, hi; capsules: a,
    b, radius; inverse spheres: center, radius), in world coordinates
    (``frames`` None) or in those of each row's frame (``frame`` (m,) rows of ``frames``).

    ``mask`` (m,) into masks, ``group`` (m,) rigid group (never tested against the bodies
    of its own), ``node`` (m,) for the caller: which registered node each row is.
    """

    def __init__(
        self,
        kind: int,
        geometry: tuple[NDArray, ...],
        mask: Int,
        group: Int | None = None,
        node: Int | None = None,
        frame: Int | None = None,
        frames: Frames | None = None,
        sensor: Bool | None = None,
        code: int | None = None,
    ) -> None:
        #: ``Hits.kind`` of this table's rows: its shape's, or ``code`` where several
        #: tables of one shape meet in a pass (static and kinematic triangles).
        self.kind = kind if code is None else code
        self.shape = kind
        self.spec = KINDS[kind]
        if kind == TRIANGLE and len(geometry) > 4:
            # The neighbours' far corners as the sides they lie on, once per table.
            geometry = (*geometry[:4], _tri.neighbour_sides(*geometry))
        self.geometry = geometry
        self.mask = mask
        self.group = group
        m = len(mask)
        self.node = np.arange(m) if node is None else node
        self.frame = frame
        #: (m,) rows that only report (intangible solids, sensor nodes).
        self.sensor = np.zeros(m, bool) if sensor is None else sensor
        self.any_sensor = sensor is not None and bool(sensor.any())
        self._index: StaticIndex | None = None
        self._point_data: Float | None = None
        self._ray_grid: tuple[RayGrid, Float] | None = None
        #: The rows' local boxes as (m, 3) centres and half-extents, and (m,) the farthest
        #: a point of each lies from its frame's origin (kinematic rows), once made.
        self._local_box: tuple[Float, Float, Float] | None = None
        #: The rows' world boxes over the pass (kinematic rows), as the index holds them.
        self._world_box: tuple[Float, Float] | None = None
        #: The skin's cast world of this table (see :func:`~._skin._world_of`), once made.
        self.skin_world: Any = None
        self.set_frames(frames)

    @property
    def earliest_only(self) -> bool:
        """Whether :meth:`toi` is exact only for each body's earliest contacts (a kind
        with ``deep``: triangles), so that the solver must ask again for a body's next."""
        return self.spec.deep is not None

    def __len__(self) -> int:
        return len(self.mask)

    def set_frames(self, frames: Frames | None) -> None:
        """This pass's motion of the rows' frames (kinematic pieces)."""
        self.frames = frames
        m = len(self.mask)
        if frames is None or self.frame is None:
            self.moving = self.turning = np.zeros(m, bool)
            self.shift = np.zeros(m)
            return
        f = self.frame
        self.moving = frames.moving[f]
        turn = frames.angle[f]
        #: (m,) rows whose frame turns this pass (their local paths curve).
        self.turning = self.moving & (turn > 0)
        if self.spec.bounds is not None:
            if self._local_box is None:
                lo, hi = self.spec.bounds(*self.geometry)
                centre, extent = 0.5 * (lo + hi), 0.5 * (hi - lo)
                # (And how far a point of each row lies from the frame's origin, at most.)
                self._local_box = (centre, extent, _length(centre) + _length(extent))
            centre, extent, far = self._local_box
            rot0, rot1 = frames.rot0[f], frames.rot1[f]
            w0 = _frames.apply(rot0, centre) + frames.pos0[f]
            w1 = _frames.apply(rot1, centre) + frames.pos1[f]
            # The row's local box turned with its frame, at each end: the exact world
            # boxes of the turned boxes (|R| times the half-extents). Each point of the row
            # goes from the one to the other along a chord, which the two boxes' own box
            # holds, straying from it by at most its arc's sagitta, (angle^2 / 8) times its
            # distance from the frame's origin. (The sphere round the row held it too, but
            # a long or flat row's far from tightly: a sensor box 800 x 800 x 40 under a
            # level was met by every body above it, 60 units over its top.)
            e0 = _frames.apply(np.abs(rot0), extent)
            e1 = _frames.apply(np.abs(rot1), extent)
            bend = (turn**2 * far / 8.0)[:, None]
            box = (np.minimum(w0 - e0, w1 - e1) - bend, np.maximum(w0 + e0, w1 + e1) + bend)
            # Rows whose boxes are those of the last pass (a sensor box read each pass, a
            # piece at rest) keep its index: only a moving table's is made again.
            last, self._world_box = self._world_box, box
            if last is None or not all(map(np.array_equal, last, box)):
                self._index = None
            #: How far any point of each row moves over the pass (bounds a carry).
            self.shift = _length(w1 - w0) + 2.0 * np.sin(0.5 * turn) * far
        else:
            self.shift = np.full(m, np.inf)
            self._index = None

    @property
    def extendable(self) -> bool:
        """Static rows: the solver may ask for candidates again, per new segment."""
        return self.frames is None or self.frame is None

    def point_data(self) -> Float | None:
        """The kind's per-row data for point casts (see :class:`Kind`), made once."""
        if self._point_data is None and self.spec.point_data is not None:
            # Column-major: a batch of rays reads it as (w, m) columns (its transpose),
            # a lone ray a few rows.
            self._point_data = np.asfortranarray(self.spec.point_data(*self.geometry))
        return self._point_data

    def ray_grid(self) -> tuple[RayGrid, Float] | None:
        """For casting many rays at once: the grid of the rows (static triangles) and the
        (w, m) columns of their point data, made on first use; None for other kinds and
        for kinematic rows."""
        if self._ray_grid is None:
            data = self.point_data()
            if self.shape != TRIANGLE or data is None or self.frame is not None:
                return None
            a, b, c = self.geometry[:3]
            self._ray_grid = (RayGrid(a, b, c, data[:, 17]), data.T)
        return self._ray_grid

    def rows(self, k: Int) -> tuple[NDArray, ...]:
        # np.take: rows of (m, 3) arrays gathered four times faster than by fancy indexing.
        return tuple(g.take(k, axis=0) for g in self.geometry)

    # ------------------------------------------------------------------ broad phase
    def candidates(
        self,
        p0: Float,
        p1: Float,
        reach: Float,
        from_mask: Int,
        moving: Bool,
        split: Bool | None = None,
    ) -> tuple[Int, Int]:
        n, m = len(p0), len(self.mask)
        if n == 0 or m == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if self.spec.bounds is None:
            # Unbounded rows (the solid outside an inverse sphere): every body can reach them.
            live = np.isfinite(p0).all(axis=1) & np.isfinite(p1).all(axis=1)
            ok = live[:, None] & ((from_mask[:, None] & self.mask[None, :]) != 0)
            ok &= moving[:, None] | self.moving[None, :]
            i, k = np.nonzero(ok)
            return i.astype(np.int64), k.astype(np.int64)
        cut = np.zeros(n, bool) if split is None else split
        # A still body can start a contact only with a moving row: the index asks every
        # body, and moving rows keep their still bodies. Static rows' index is asked pass
        # after pass: worth its reach grid.
        i, k = self.index()._sphere_pairs(
            p0, p1, reach, from_mask, np.ones(n, bool), cut, grid=self.extendable
        )
        keep = moving[i] | self.moving[k]
        return i[keep], k[keep]

    def index(self) -> StaticIndex:
        """The index of the rows' world boxes (static rows), or of the boxes they sweep over
        this pass (kinematic rows); built on first use. Bounded kinds only."""
        if self._index is None:
            bounds = self.spec.bounds
            if bounds is None:
                raise ValueError(f"{self.spec.name} rows are unbounded: they have no index")
            if self.frames is None or self.frame is None:
                self._index = StaticIndex(*bounds(*self.geometry), self.mask)
            else:
                # Remade every pass, from boxes the pass made of finite frames: without the
                # public constructor's checks, the same index.
                lo, hi = self._world_box
                self._index = StaticIndex._of_padded(
                    *_padded(np.ascontiguousarray(lo.T), np.ascontiguousarray(hi.T)), self.mask
                )
        return self._index

    # ------------------------------------------------------------------ narrow phase
    def toi(self, paths: Paths, i: Int, k: Int, every: bool = False) -> tuple[Float, Float]:
        """Times of impact of bodies i with rows k on the bodies' current segments, and per
        pair (p, 8) what the hit needs later: local point, local normal, feature, index.
        Exact for each body's earliest contacts and those a slide meets at that instant;
        a later one may come back earlier than it is, never that early (its time is not
        taken before the body's path changes and it is asked again), unless ``every``."""
        extra = np.full((len(i), 8), np.nan)
        if len(i) == 0:
            return np.zeros(0), extra
        start = paths.ts[i]
        end = np.ones(len(i))
        # A growing body is swept at its largest radius this segment (it may stop short).
        radii = None
        if paths.grow is None:
            r = paths.radius_at(i, start)
        else:
            radii = paths.radius_at(i, start), paths.radius_at(i, end)
            r = np.maximum(*radii)
        # Against rows still or only translating, a path is straight in their frames.
        if self.frames is None or self.frame is None or not self.turning[k].any():
            # (ndarray.take gathers rows about four times faster than fancy indexing.)
            xs, xe = paths.xs.take(i, axis=0), paths.xe.take(i, axis=0)
            c0, c1 = self._local(i, k, start, xs), self._local(i, k, end, xe)
            # Only each body's earliest contacts need be exact, and those a slide meets
            # at the same instant (Paths.instant; in the segment's time, twice over for
            # rounding): the solver asks again before it takes a later one.
            first = None
            if not every:
                first = i, 2.0 * paths.instant(i) / np.maximum(1.0 - start, 1e-300)
            t, extra = self._sweep(
                c0, c1, r, np.zeros(len(i)), k, extra, first=first, radii=radii
            )
            hit = np.isfinite(t)
            t = np.where(hit, start + np.where(hit, t, 0.0) * (1.0 - start), np.inf)
            riders = np.flatnonzero(paths.riding(i)) if paths.ride is not None else ()
            if len(riders):  # (their paths turn: sub-steps, as against a turning piece)
                t[riders], extra[riders] = self._substeps(
                    paths, i[riders], k[riders], start[riders], r[riders], extra[riders]
                )
            return t, extra
        return self._substeps(paths, i, k, start, r, extra)

    def first_toi(self, paths: Paths, i: Int, k: Int) -> tuple[Float, Float]:
        """:meth:`toi` on paths none of which has begun a new segment (the one-round pass)."""
        return self.toi(paths, i, k)

    def _local(self, i: Int, k: Int, t: Float, x: Float) -> Float:
        """(p, 3) world points x at times t in the frames of rows k."""
        if self.frames is None or self.frame is None:
            return x
        rot, pos = self.frames.at(self.frame[k], t)
        return _frames.unapply(rot, x - pos)

    def _sweep(
        self,
        c0: Float,
        c1: Float,
        r: Float,
        dev: Float,
        k: Int,
        extra: Float,
        axis: Float | None = None,
        first: tuple[Int, Float] | None = None,
        radii: tuple[Float, Float] | None = None,
    ) -> tuple[Float, Float]:
        """Local sweeps of rows k inflated by dev (strays across the local ``axis`` only,
        if given), with the slop rule: a contact that could never sink deeper than the slop
        (a ball rolling on float32 positions along a floor or across its seams) does not
        count. The distance to a convex piece is convex along a segment, so a sweep with
        the radius shrunk by the slop finds a deeper overlap exactly where there is one.
        ``first`` ((p,) the rows' bodies, (p,) times): only a body's earliest contacts,
        and those up to that time later, need be exact; a later one may come back earlier
        than it is, but never within that time of the earliest (a ``deep`` kind's).

        ``radii`` ((p,) each at the segment's start and end; r is their larger): where a
        sphere grows, the sweep at r stops it short of what it reaches (at the start, where
        it overlaps the row at r and moves into it, at a point it may never touch), and
        counts nothing where it overlaps the row at r without moving into it: the kind's
        ``grown`` answers those rows instead, where it can."""
        geometry = self.rows(k)
        reach = r + dev
        loose = None
        if self.shape == TRIANGLE:
            if axis is not None:
                geometry, reach = _grown_in_plane(geometry, r, dev, axis)
            c0, loose = _onto_front(c0, c1, geometry)
        # The rows at full radius, then at the radius less the slop (a row that misses at
        # full radius misses at less). A kind with ``deep`` tests both in one exact stage
        # (the rows its culls keep at the less, twice). Else few rows: both in one call,
        # whose cost is then mostly per call; many: the second only for the rows that hit.
        sl = np.minimum(slop(c0, c1) if loose is None else loose, 0.5 * reach)
        shrunk = np.maximum(reach - sl, 0.0)
        p = len(c0)
        # A call of few rows costs mostly its fixed cost: where no row can sink deeper
        # than the slop (balls rolling on a floor, resting on a lift), the kernel's own
        # cheap first cull says so alone, and the call is skipped.
        cull = self.spec.cull
        if p <= _CULL_FIRST and cull is not None and not cull(c0, c1, shrunk, *geometry).any():
            return np.full(p, np.inf), extra
        if self.spec.deep is not None:
            first_of, within = (None, None) if first is None else first
            found = self.spec.deep(
                c0, c1, reach, shrunk, *geometry, first_of=first_of, within=within
            )
            t = found.t
        elif p <= _BOTH_AT_ONCE:
            both = self.spec.sweep(
                np.concatenate([c0, c0]),
                np.concatenate([c1, c1]),
                np.concatenate([reach, shrunk]),
                *(np.concatenate([g, g]) for g in geometry),
            )
            found = Sweep(*(col[:p] for col in both))
            t = np.where(np.isfinite(both.t[p:]), found.t, np.inf)
        else:
            found = self.spec.sweep(c0, c1, reach, *geometry)
            hit = np.flatnonzero(np.isfinite(found.t))
            deep = self.spec.sweep(
                c0[hit], c1[hit], shrunk[hit], *(g.take(hit, axis=0) for g in geometry)
            )
            deep_hit = hit[np.isfinite(deep.t)]
            t = np.full(p, np.inf)
            t[deep_hit] = found.t[deep_hit]
        ok = np.isfinite(t)
        extra[ok, 0:3] = found.point[ok]
        extra[ok, 3:6] = found.normal[ok]
        extra[ok, 6] = found.feature[ok]
        extra[ok, 7] = found.index[ok]
        if radii is not None and self.spec.grown is not None:
            ra, rb = radii
            rows = np.flatnonzero(rb > ra)
            if len(rows):
                pad = reach[rows] - r[rows]  # (a turning piece's stray, the radius's or in-plane)
                tg, *rest = self.spec.grown(
                    *(x[rows] for x in (c0, c1)), ra[rows] + pad, rb[rows] + pad, sl[rows],
                    *(x[rows] for x in geometry),
                )  # fmt: skip
                answered = ~np.isnan(tg)
                rows, t = rows[answered], t.copy()
                t[rows] = tg[answered]
                point, normal, feature, index = (x[answered] for x in rest)
                extra[rows, 0:3], extra[rows, 3:6] = point, normal
                extra[rows, 6], extra[rows, 7] = feature, index
        return t, extra

    def _substeps(
        self, paths: Paths, i: Int, k: Int, start: Float, r: Float, extra: Float
    ) -> tuple[Float, Float]:
        """Times of impact where a path turns (turning rows, or bodies that ride a turning
        piece: ``Paths.ride``): the rest of the pass from ``start`` cut into sub-steps of a
        fixed grid (so a pair's steps are the same whatever its segment's start), each
        tested on the local chord with the piece inflated by how far the path may stray."""
        x0, x1 = paths.xs[i], paths.xe[i]
        end = np.ones(len(i))
        # The deviation of one step over the rest of the pass, and how many steps bring it
        # within the tolerance (quadratic in the step); a rider strays from its own chord
        # as well, but not in the frame it rides, where it moves straight: one exact step.
        whole = paths.stray(i, start, end)
        frames = self.frames if self.frame is not None else None
        own = np.zeros(len(i), bool)
        if frames is not None:
            f = self.frame[k]  # type: ignore[index]
            y0 = x0 - (frames.pos0[f] + start[:, None] * (frames.pos1[f] - frames.pos0[f]))
            y1 = x1 - frames.pos1[f]
            whole += frames.chord_deviation(f, start, end, y0, y1)
            if paths.ride is not None:
                own = paths.ride[i] == f
                whole[own] = 0.0
        allowed = np.maximum(TURN_TOLERANCE * r, slop(x0, x1))
        pair, ta, tb = sub_steps(start, whole, allowed)
        ip = i[pair]
        xa, xb = paths.at(ip, ta), paths.at(ip, tb)
        stray = paths.stray(ip, ta, tb)
        # A rider strays across its own turn's axis (in the rows' coordinates).
        axis = paths.stray_axis(ip)
        if frames is None:
            ca, cb, dev = xa, xb, stray
        else:
            fp = f[pair]
            rot_a, pos_a = frames.at(fp, ta)
            rot_b, pos_b = frames.at(fp, tb)
            dev = frames.chord_deviation(fp, ta, tb, xa - pos_a, xb - pos_b)
            ca, cb = _frames.unapply(rot_a, xa - pos_a), _frames.unapply(rot_b, xb - pos_b)
            # Where both the piece and the body turn, about axes of their own: all round.
            axis = np.where(
                (stray > 0)[:, None],
                np.where((dev > 0)[:, None], 0.0, _frames.unapply(rot_a, axis)),
                frames.axis[fp],
            )
            dev = dev + stray
            mine = np.flatnonzero(own[pair])
            if len(mine):
                dev[mine] = 0.0
                ca[mine] = paths.local_at(ip[mine], ta[mine])
                cb[mine] = paths.local_at(ip[mine], tb[mine])
        radii = None if paths.grow is None else (paths.radius_at(ip, ta), paths.radius_at(ip, tb))
        s, found = self._sweep(
            ca, cb, r[pair], dev, k[pair], np.full((len(pair), 8), np.nan), axis, radii=radii
        )
        t_rows = in_step(s, ta, tb)
        best = pick(pair, t_rows)  # the earliest step's contact of each pair
        t = np.full(len(i), np.inf)
        t[pair[best]] = t_rows[best]
        extra[pair[best]] = found[best]
        return t, extra

    # ------------------------------------------------------------------ contacts
    def hits(
        self, paths: Paths, a: Int, k: Int, t: Float, extra: Float, response: bool = True
    ) -> tuple[Hits, Response | None]:
        pa = paths.at(a, t)
        point, normal = extra[:, 0:3], extra[:, 3:6]
        feature = extra[:, 6].astype(np.int8)
        part = extra[:, 7].astype(np.int64)
        v = paths.velocity(a)
        if self.frames is None or self.frame is None:
            speed = -np.einsum("ij,ij->i", v, normal)
            if paths.grow is not None:
                speed += paths.growth_rate(a, t)
            hits = Hits.of(a, k, self.kind, t, point, normal, np.maximum(speed, 0.0), pa,
                           feature=feature, part=part)  # fmt: skip
            return hits, Response(normal, np.zeros_like(pa)) if response else None
        frames, f = self.frames, self.frame[k]
        rot, pos = frames.at(f, t)
        world_point = _frames.apply(rot, point) + pos
        world_normal = _frames.apply(rot, normal)
        push = _frames.apply(frames.rot1[f], normal)
        carry = frames.carried(f, t, pa) - pa
        # A piece that did not move this pass carries nothing: its turn there and back
        # rounds to some 1e-16, which would make it a moving surface to the response (a
        # slide into the crease of a still, turned piece lost its motion along it).
        carry[~self.moving[k]] = 0.0
        # A turning piece carries the body round with it (its path then turns too).
        ride = np.where(self.turning[k], f, -1)
        # The surface's own velocity at the point, over the pass.
        surface = (_frames.apply(frames.rot1[f], point) + frames.pos1[f]) - (
            _frames.apply(frames.rot0[f], point) + frames.pos0[f]
        )
        speed = -np.einsum("ij,ij->i", v - surface, world_normal)
        if paths.grow is not None:
            speed += paths.growth_rate(a, t)
        hits = Hits.of(a, k, self.kind, t, world_point, world_normal, np.maximum(speed, 0.0), pa,
                       feature=feature, part=part)  # fmt: skip
        return hits, Response(push, carry, None, ride, np.where(self.moving[k], f, -1))

    def sensor_hits(self, paths: Paths, segs: Segments, i: Int, k: Int) -> Hits:
        """Overlap intervals of bodies i with rows k over every segment of the bodies'
        final paths, both sides of a triangle alike (a trigger volume crossed in one frame:
        in, then out)."""
        t0, t1, x0, x1 = segs.t0, segs.t1, segs.x0, segs.x1
        item, seg = segs.of(i)
        ii, kk = i[item], k[item]
        lo, hi = t0[seg], t1[seg]
        c0 = self._local(ii, kk, lo, x0[seg])
        c1 = self._local(ii, kk, hi, x1[seg])
        ra, rb = paths.radius_at(ii, lo), paths.radius_at(ii, hi)
        r = np.maximum(ra, rb)
        geometry = list(self.rows(kk))
        if self.shape == TRIANGLE:
            geometry[3] = np.ones(len(ii), bool)
        closest = self.spec.closest
        inside0 = closest(c0, *geometry)[1] <= ra
        inside1 = closest(c1, *geometry)[1] <= rb
        forward = self.spec.sweep(c0, c1, r, *geometry).t
        backward = self.spec.sweep(c1, c0, r, *geometry).t
        enter = np.where(inside0, 0.0, forward)
        leave = np.where(inside1, 1.0, 1.0 - backward)
        if paths.grow is not None and self.spec.grown is not None:
            # Swept above at the larger radius: a sphere that grows is in only when its
            # growth reaches the row (a blast), and one that shrinks is out when it has
            # shrunk away (time run backward), as the kind's ``grown`` finds them. (A
            # shrinking one's in, and a growing one's out, stay the larger radius's.)
            sl = np.minimum(slop(c0, c1), 0.5 * r)
            for rows, ends, radii, reverse in (
                (np.flatnonzero(~inside0 & (rb > ra)), (c0, c1), (ra, rb), False),
                (np.flatnonzero(~inside1 & (ra > rb)), (c1, c0), (rb, ra), True),
            ):
                if len(rows):
                    s = self.spec.grown(*(x[rows] for x in (*ends, *radii, sl, *geometry)))[0]
                    answered = rows[~np.isnan(s)]
                    s = s[~np.isnan(s)]
                    if reverse:
                        leave[answered] = 1.0 - s
                    else:
                        enter[answered] = s
        hit = (hi > lo) & np.isfinite(enter) & np.isfinite(leave) & (leave >= enter)
        if not hit.any():
            return Hits.of(*(np.zeros(0, np.int64),) * 2, self.kind, *_NONE)
        item, ii, kk, lo, hi = item[hit], ii[hit], kk[hit], lo[hit], hi[hit]
        t_in = lo + enter[hit] * (hi - lo)
        t_out = lo + leave[hit] * (hi - lo)
        first, last = pick(item, t_in), pick(item, -t_out)
        a, b = ii[first], kk[first]
        t_enter = t_in[first]
        t_exit = np.where(t_out[last] >= 1.0, np.nan, t_out[last])
        geometry = [g[hit] for g in geometry]

        def at(rows: Int, t: Float) -> tuple[Float, Float, Float]:
            pa = segs.at(seg[hit][rows], t)
            local = self._local(ii[rows], kk[rows], t, pa)
            near = closest(local, *(g[rows] for g in geometry))[0]
            nrm = unit(local - near, np.broadcast_to([0.0, 0.0, 1.0], local.shape))
            if self.frames is not None and self.frame is not None:
                rot, pos = self.frames.at(self.frame[kk[rows]], t)
                near, nrm = _frames.apply(rot, near) + pos, _frames.apply(rot, nrm)
            return pa, near, nrm

        pa, point, nrm = at(first, t_enter)
        xa, xpoint, xn = at(last, np.where(np.isnan(t_exit), 1.0, t_exit))
        speed = np.maximum(-np.einsum("ij,ij->i", segs.velocity(seg[hit][first]), nrm), 0.0)
        exit = (t_exit, xpoint, xn, xa, None)
        return Hits.of(a, b, self.kind, t_enter, point, nrm, speed, pa, sensor=True, exit=exit)


def _onto_front(c0: Float, c1: Float, geometry: tuple[NDArray, ...]) -> tuple[Float, Float]:
    """Starts on a one-sided triangle's plane, or behind it by no more than the slop, and
    moving in: put just in front of it. Returns the starts, and the slop of the paths
    from them (:func:`~._paths.slop`), which the caller needs too.

    Panda3D keeps positions in float32: a point (or a sphere smaller than the rounding)
    stopped on a face is written back on its plane or up to a rounding behind it, where
    the kernel sees it moving away from the face (its distance grows behind it), and the
    next push into the face would pass through. Within the slop it is where it was
    stopped: in front, touching."""
    a, b, c, two = geometry[:4]
    normal = _cross(b - a, c - a)
    size = _length(normal)
    s0 = np.einsum("ij,ij->i", normal, c0 - a)
    loose = slop(c0, c1)
    band = loose * size
    inward = np.einsum("ij,ij->i", normal, c1 - c0) < 0.0
    near = ~two & inward & (s0 <= 0.0) & (s0 >= -band) & (size > 0)
    if not np.count_nonzero(near):
        return c0, loose
    # Just in front (far above the kernel's own rounding, far below the slop): the touch
    # is at once, so the body stops where it is.
    ahead = _AHEAD * band[near]
    out = c0.copy()
    out[near] += normal[near] * ((ahead - s0[near]) / size[near] ** 2)[:, None]
    return out, slop(out, c1)


def _grown_in_plane(
    geometry: tuple[NDArray, ...], r: Float, dev: Float, axis: Float
) -> tuple[tuple[NDArray, ...], Float]:
    """Triangles and radii that hold each triangle swept by a turning piece's deviation:
    the body's local path strays from its chord by at most ``dev``, across the turn's
    ``axis`` only. Inflating the radius by ``dev`` holds it in every direction; where the
    face is across the axis (a turntable's top), most of that stray lies in the face's
    plane, and the triangle grown in its plane by ``dev`` (each edge pushed out: scaled
    about its incentre) with the radius inflated only by the stray along its normal holds
    it too, and keeps a ball resting on the face, and on the seams between its triangles,
    touching rather than inside."""
    a, b, c = geometry[:3]
    cross = _cross(b - a, c - a)
    twice_area = _length(cross)
    sides = _lengths(c - b, a - c, b - a)
    perimeter = sides[0] + sides[1] + sides[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        along = np.abs(np.einsum("ij,ij->i", cross, axis)) / twice_area
        normal_dev = dev * np.sqrt(np.maximum(1.0 - along * along, 0.0))
        scale = dev * perimeter / twice_area  # dev over the inradius
        centre = (sides[0][:, None] * a + sides[1][:, None] * b + sides[2][:, None] * c) / (
            perimeter[:, None]
        )
        # A corner moves by its distance from the incentre times the growth over the
        # inradius: sharp corners (far from the incentre) would reach far.
        corner = np.maximum.reduce(_lengths(a - centre, b - centre, c - centre))
        sharp = corner * perimeter / twice_area  # the farthest corner over the inradius
    # Faces along the axis, slivers and sharp corners keep the ball.
    grow = (scale <= _MOST_GROWTH) & (sharp <= _SHARPEST) & (normal_dev < 0.5 * dev)
    if not grow.any():
        return geometry, r + dev
    g = np.flatnonzero(grow)
    centre = centre[g]
    factor = 1.0 + scale[g, None]
    a, b, c = a.copy(), b.copy(), c.copy()
    for v in (a, b, c):
        v[g] = centre + (v[g] - centre) * factor
    return (a, b, c, *geometry[3:]), r + np.where(grow, normal_dev, dev)


#: A triangle is grown in its plane (:func:`_grown_in_plane`) only while the growth is at
#: most this fraction of its inradius (its corners then move at most that much of their
#: distance from its incentre).
_MOST_GROWTH = 1.0
#: ... and only where no corner is farther than this many inradii from its incentre (no
#: corner sharper than 14 degrees): a corner then moves at most this many times the growth,
#: the most a body may stop short of it. (At 4, 29 degrees, a rectangle twice as long as
#: it is wide, fanned, was inflated all round: a tester's pinball ball, swept across such
#: a floor by a flipper, touched it in most passes.)
_SHARPEST = 8.0
#: Where :func:`_onto_front` puts a start, as a fraction of the slop in front of the face.
_AHEAD = 1e-3
#: Up to this many rows a piece table sweeps them at both radii in one kernel call (see
#: Pieces._sweep): a kernel call's fixed cost is some 0.3 ms, a row's about 0.6 us.
_BOTH_AT_ONCE = 1024
#: Up to this many rows, a sweep first asks the kind's cull whether any row can sink
#: deeper than the slop (many rows seldom all stay shallow, and the kernel culls them).
_CULL_FIRST = 32


_NONE = (np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)))
