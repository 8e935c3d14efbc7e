"""Every swept kernel described as a case, for the shared harness in test_kernel_harness.py.

A *case* says how to call one kernel on rows of an *instance* (a dict of column arrays, one
row per test: (n, 3) points and (n,) lengths), how to make random instances, and how far a
point is from the obstacle: an exact distance written here, independently of the kernels
(closest point on a triangle, segment, box; distance to the wall of an inverse sphere), with
its gradient, so the tests can tell "penetrating" and "approaching" at any moment of the path.
A new kind of obstacle adds a case to :data:`CASES`, not new test code.

Conventions, whatever the kernel:

- the moving sphere has centre ``c0 + t (c1 - c0)`` for t in [0, 1] and radius ``r``; for the
  sphere pair, ``relative`` turns the instance into this form (B's frame of reference);
- ``distance`` is *signed* where the obstacle is a solid (negative inside it, so a point
  sinking in still reads as approaching) and unsigned for a triangle, which has no inside;
  the rate ``gradient . v`` is d(distance)/dt;
- ``height`` (one-sided triangles only) is the signed height of the centre over the
  triangle's plane: a contact counts only while it is >= 0;
- ``claims`` marks the rows where a missed contact may be claimed at all (a degenerate
  triangle may act as its edges or give no contact, so it is never claimed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from panda3d_ccd import sweep

Float = NDArray[np.float64]
Instance = dict[str, np.ndarray]

#: Distances within ``DIST_REL * (largest of r, |motion|, obstacle size) + COORD_REL *
#: (largest coordinate)`` count as equal: 10 times the kernels' graze tolerance (1e-9), and
#: 70 times their coordinate-rounding floor (64 ulps), so a graze the kernel may ignore is
#: never claimed, while the harness's own float64 rounding (~1e-15 relative) stays far below.
DIST_REL = 1e-8
COORD_REL = 1e-12


# ----------------------------------------------------------------------------------------
# Small vector helpers, rows of (..., 3)
# ----------------------------------------------------------------------------------------


def _dot(u: Float, w: Float) -> Float:
    # By component: a sum over a last axis of 3 costs several times more on (n, m, 3).
    return u[..., 0] * w[..., 0] + u[..., 1] * w[..., 1] + u[..., 2] * w[..., 2]


def _norm(u: Float) -> Float:
    return np.sqrt(_dot(u, u))


def _normalised(u: Float) -> Float:
    size = _norm(u)[..., None]
    return u / np.where(size > 0, size, 1.0)


def _unit(rng: np.random.Generator, n: int) -> Float:
    """(n, 3) random unit vectors."""
    u = rng.normal(size=(n, 3))
    return u / _norm(u)[:, None]


def _perpendicular(rng: np.random.Generator, nrm: Float) -> Float:
    """(n, 3) random unit vectors perpendicular to the unit rows of ``nrm``."""
    side = np.cross(nrm, _unit(rng, len(nrm)))
    # A random direction parallel to nrm is a measure-zero draw; redraw it once anyway.
    small = _norm(side) < 1e-3
    side[small] = np.cross(nrm[small], _unit(rng, int(small.sum())))
    return _normalised(side)


def _pick(rng: np.random.Generator, n: int, choices, p=None) -> np.ndarray:
    return np.asarray(choices)[rng.choice(len(choices), size=n, p=p)]


def _scenes(rng: np.random.Generator, n: int) -> tuple[Float, Float]:
    """Per row: the scene's size (obstacle and motions) and its origin (up to 1e4 away)."""
    size = _pick(rng, n, [0.01, 1.0, 1.0, 10.0, 100.0])
    far = _pick(rng, n, [0.0, 0.0, 10.0, 1e3, 1e4])
    return size, _unit(rng, n) * far[:, None]


def _radii(rng: np.random.Generator, size: Float) -> Float:
    """Sphere radii: points (r = 0) in about one row of six, and one in twelve so small
    (1e-12 to 2e-9 of the scene) that its depth is within the kernels' graze tolerance."""
    n = len(size)
    tiny = _pick(rng, n, [1e-12, 1e-10, 2e-9]) * size
    pick = rng.random(n)
    return np.where(pick < 0.17, 0.0, np.where(pick < 0.25, tiny, rng.uniform(0.02, 1.0, n) * size))


# ----------------------------------------------------------------------------------------
# Motions relative to a point of the obstacle's surface
# ----------------------------------------------------------------------------------------

#: Relative inward lean of an almost-tangential motion (negative: leaning out).
LEANS = [0.0, 0.0, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6, 1e-3, -1e-3]

MOTIONS = ("aimed", "graze", "along", "inside", "away", "free")


def motions(
    rng: np.random.Generator,
    q: Float,
    nrm: Float,
    r: Float,
    size: Float,
    centre: Float,
) -> tuple[Float, Float]:
    """Start and end centres (n, 3) around the surface points ``q`` with unit normals ``nrm``
    (out of the obstacle; anywhere in the normal cone at an edge or corner).

    Each row is one of :data:`MOTIONS`: aimed in at an angle (starting touching, falling
    short, or passing through); grazing the tangent plane at the touching position (exactly,
    or leaning in or out by a hair); moving along the surface while overlapping it; starting
    overlapping (or with the centre inside) in any direction; moving away from a touch or
    from a gap; or anywhere within three sizes of ``centre``.
    """
    n = len(q)
    mode = rng.integers(0, len(MOTIONS), n)
    tangent = _perpendicular(rng, nrm)
    touch = q + r[:, None] * nrm
    length = rng.uniform(0.1, 3.0, n) * size
    lean = _pick(rng, n, LEANS)
    leaning = _normalised(tangent - lean[:, None] * nrm)
    through = rng.uniform(0.0, 1.0, n)[:, None]

    # aimed: touch at `touch` (or before it) moving in; reach < 1 falls short.
    cosine = np.where(rng.random(n) < 0.2, 1.0, rng.uniform(0.05, 1.0, n))
    inward = -cosine[:, None] * nrm + np.sqrt(1.0 - cosine**2)[:, None] * tangent
    back = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.0, 2.0, n) * size)
    reach = rng.uniform(0.2, 3.0, n)
    aimed0 = touch - back[:, None] * inward
    aimed1 = aimed0 + (np.where(back > 0, back * reach, length))[:, None] * inward

    graze0 = touch - through * length[:, None] * leaning
    graze1 = graze0 + length[:, None] * leaning

    depth = rng.uniform(0.0, 1.0, n) * r
    along0 = touch - depth[:, None] * nrm - through * length[:, None] * leaning
    along1 = along0 + length[:, None] * leaning

    height = rng.uniform(-0.5, 1.0, n) * r - rng.uniform(0.0, 0.2, n) * size
    inside0 = q + height[:, None] * nrm
    inside1 = inside0 + _unit(rng, n) * length[:, None]

    gap = np.where(rng.random(n) < 0.4, 0.0, rng.uniform(0.0, 1.0, n) * size)
    lift = rng.uniform(0.0, 1.0, n)
    outward = lift[:, None] * nrm + np.sqrt(1.0 - lift**2)[:, None] * tangent
    away0 = touch + gap[:, None] * nrm
    away1 = away0 + length[:, None] * outward

    free0 = centre + rng.uniform(-3.0, 3.0, (n, 3)) * size[:, None]
    free1 = centre + rng.uniform(-3.0, 3.0, (n, 3)) * size[:, None]

    starts = np.stack([aimed0, graze0, along0, inside0, away0, free0])
    ends = np.stack([aimed1, graze1, along1, inside1, away1, free1])
    rows = np.arange(n)
    return starts[mode, rows], ends[mode, rows]


# ----------------------------------------------------------------------------------------
# Exact distances: (n, m, 3) points against (n, ...) obstacles -> (n, m) distance and
# (n, m, 3) unit gradient (zero where it is undefined: on a triangle, on a capsule's axis)
# ----------------------------------------------------------------------------------------


def _rows3(*arrays: Float) -> list[Float]:
    """(n, 3) obstacle columns as (n, 1, 3), to broadcast against (n, m, 3) points."""
    return [np.asarray(a, dtype=np.float64)[:, None, :] for a in arrays]


def _from_difference(diff: Float, sign: float | Float = 1.0) -> tuple[Float, Float]:
    """Distance |diff| and gradient diff / |diff| (0 where diff is 0)."""
    d = _norm(diff)
    return d, diff / np.where(d > 0, d, 1.0)[..., None] * np.asarray(sign)[..., None]


def segment_closest(p: Float, a: Float, b: Float) -> Float:
    """Closest points (n, m, 3) to ``p`` on the segments a-b ((n, 1, 3) each; a == b is a
    point)."""
    ab = b - a
    length2 = _dot(ab, ab)
    u = _dot(p - a, ab) / np.where(length2 > 0, length2, 1.0)
    return a + np.clip(u, 0.0, 1.0)[..., None] * ab


def ball_distance(p: Float, centre: Float, radius: Float) -> tuple[Float, Float]:
    d, g = _from_difference(p - centre)
    return d - radius[:, None], g


def inv_sphere_distance(p: Float, centre: Float, radius: Float) -> tuple[Float, Float]:
    """Distance from a point inside to the wall (negative: in the wall), and its gradient
    (toward the centre)."""
    d, g = _from_difference(p - centre)
    return radius[:, None] - d, -g


def half_space_distance(p: Float, normal: Float, offset: Float) -> tuple[Float, Float]:
    size = _norm(normal)
    unit = normal / size[:, None]
    d = _dot(p, unit[:, None, :]) + (offset / size)[:, None]
    return d, np.broadcast_to(unit[:, None, :], p.shape)


def capsule_distance(p: Float, a: Float, b: Float, radius: Float) -> tuple[Float, Float]:
    a_, b_ = _rows3(a, b)
    d, g = _from_difference(p - segment_closest(p, a_, b_))
    return d - radius[:, None], g


def box_distance(p: Float, lo: Float, hi: Float) -> tuple[Float, Float]:
    """Signed distance to the box lo..hi: outside, to the clamped point; inside, minus the
    depth below the nearest face (gradient: that face's outward normal)."""
    lo_, hi_ = _rows3(lo, hi)
    centre = 0.5 * (lo_ + hi_)
    half = 0.5 * (hi_ - lo_)
    local = p - centre
    beyond = np.abs(local) - half
    outside = np.any(beyond > 0, axis=-1)
    d_out, g_out = _from_difference(local - np.clip(local, -half, half))
    axis = np.argmax(beyond, axis=-1)
    d_in = np.take_along_axis(beyond, axis[..., None], axis=-1)[..., 0]
    side = np.take_along_axis(local, axis[..., None], axis=-1)[..., 0]
    g_in = np.zeros_like(p)
    # Midway between two faces (always, on a flat box's plane) the two tie: no gradient.
    np.put_along_axis(g_in, axis[..., None], np.sign(side)[..., None], axis=-1)
    return np.where(outside, d_out, d_in), np.where(outside[..., None], g_out, g_in)


def triangle_normal(a: Float, b: Float, c: Float) -> Float:
    """(n, 3) (b - a) x (c - a): the front side, length twice the area."""
    return np.cross(b - a, c - a)


def degenerate(a: Float, b: Float, c: Float) -> NDArray[np.bool_]:
    """(n,) triangles too thin for a face: area below 1e-6 of their longest edge squared."""
    longest2 = np.maximum(np.maximum(_dot(b - a, b - a), _dot(c - b, c - b)), _dot(a - c, a - c))
    return _norm(triangle_normal(a, b, c)) <= 1e-6 * longest2


def triangle_distance(p: Float, a: Float, b: Float, c: Float) -> tuple[Float, Float]:
    """Unsigned distance to the triangle: the nearest of its face (where the point projects
    inside it) and its three edges; a zero-area triangle is only its edges."""
    a_, b_, c_ = _rows3(a, b, c)
    # Work from vertex a, so that coordinates of 1e4 do not swamp a small triangle.
    pa, ba, ca = p - a_, b_ - a_, c_ - a_
    zero = np.zeros_like(ba)
    best = None
    for u, w in ((zero, ba), (ba, ca), (ca, zero)):
        q = segment_closest(pa, u, w)
        dist = _norm(pa - q)
        if best is None:
            best, best_q = dist, q
        else:
            nearer = dist < best
            best = np.where(nearer, dist, best)
            best_q = np.where(nearer[..., None], q, best_q)
    nrm = np.cross(ba, ca)
    area2 = _dot(nrm, nrm)
    flat = ~degenerate(a, b, c)[:, None]
    h = _dot(pa, nrm) / np.where(area2 > 0, area2, 1.0)
    proj = pa - h[..., None] * nrm
    inside = np.broadcast_to(flat, h.shape).copy()
    for u, w in ((zero, ba), (ba, ca), (ca, zero)):
        inside &= _dot(np.cross(w - u, proj - u), nrm) >= 0
    face_q = np.where(inside[..., None], proj, best_q)
    return _from_difference(pa - face_q)


def triangle_height(p: Float, a: Float, b: Float, c: Float) -> Float:
    """(n, m) signed height of points over the triangle's plane (0 for a degenerate one)."""
    nrm = _normalised(triangle_normal(a, b, c))
    nrm[degenerate(a, b, c)] = 0.0
    return _dot(p - a[:, None, :], nrm[:, None, :])


# ----------------------------------------------------------------------------------------
# Surface samplers: points q (n, 3) on the obstacle and a unit normal in the normal cone
# there (faces, edges and vertices in about equal numbers)
# ----------------------------------------------------------------------------------------


def triangle_surface(rng, a: Float, b: Float, c: Float) -> tuple[Float, Float]:
    n = len(a)
    verts = np.stack([a, b, c], axis=1)  # (n, 3, 3)
    nrm = _normalised(triangle_normal(a, b, c))
    side = np.where(rng.random(n) < 0.5, -1.0, 1.0)[:, None]
    edge = np.roll(verts, -1, axis=1) - verts  # edge i: vertex i to i + 1
    out = _normalised(np.cross(edge, nrm[:, None, :]))  # in-plane, away from the third vertex
    opposite = np.roll(verts, -2, axis=1)
    out *= np.where(_dot(opposite - verts, out) > 0, -1.0, 1.0)[..., None]
    rows = np.arange(n)
    i = rng.integers(0, 3, n)

    bary = rng.dirichlet([1.0, 1.0, 1.0], n)
    face_q = np.einsum("ij,ijk->ik", bary, verts)
    face_n = side * nrm

    along = rng.uniform(0.0, 1.0, n)[:, None]
    edge_q = verts[rows, i] + along * edge[rows, i]
    phi = rng.uniform(0.0, np.pi / 2, n)[:, None]
    edge_n = np.cos(phi) * out[rows, i] + np.sin(phi) * face_n

    weights = rng.uniform(0.0, 1.0, (n, 2))
    lift = rng.uniform(-2.0, 2.0, n)[:, None]
    vert_n = weights[:, :1] * out[rows, i] + weights[:, 1:] * out[rows, (i + 2) % 3] + lift * nrm
    vert_q = verts[rows, i]

    feature = rng.integers(0, 3, n)
    thin = degenerate(a, b, c)
    # A zero-area triangle is its edges (a segment or a point), with any normal.
    feature[thin] = 1
    edge_n[thin] = _unit(rng, int(thin.sum()))
    q = np.stack([face_q, edge_q, vert_q])[feature, rows]
    normal = _normalised(np.stack([face_n, edge_n, vert_n])[feature, rows])
    return q, normal


def ball_surface(rng, centre: Float, radius: Float) -> tuple[Float, Float]:
    u = _unit(rng, len(centre))
    return centre + radius[:, None] * u, u


def box_surface(rng, lo: Float, hi: Float) -> tuple[Float, Float]:
    """A face, edge or corner: one, two or three axes pinned to a side of the box."""
    n = len(lo)
    q = lo + rng.uniform(0.0, 1.0, (n, 3)) * (hi - lo)
    pinned_count = rng.integers(1, 4, n)
    order = np.argsort(rng.random((n, 3)), axis=1)
    pinned = np.zeros((n, 3), bool)
    np.put_along_axis(pinned, order, np.arange(3)[None, :] < pinned_count[:, None], axis=1)
    upper = rng.random((n, 3)) < 0.5
    q = np.where(pinned, np.where(upper, hi, lo), q)
    weight = np.where(pinned, rng.uniform(0.05, 1.0, (n, 3)), 0.0)
    normal = _normalised(np.where(upper, weight, -weight))
    return q, normal


def capsule_surface(rng, a: Float, b: Float, radius: Float) -> tuple[Float, Float]:
    n = len(a)
    u = _pick(rng, n, [0.0, 1.0, 0.5, 0.5])
    u = np.where(u == 0.5, rng.uniform(0.0, 1.0, n), u)
    axis = b - a
    spine = a + u[:, None] * axis
    unit_axis = _normalised(axis)
    body = _perpendicular(rng, np.where(_norm(axis)[:, None] > 0, unit_axis, _unit(rng, n)))
    cap = _unit(rng, n)
    cap *= np.where(_dot(cap, axis) * (0.5 - u) > 0, -1.0, 1.0)[:, None]
    normal = np.where(((u == 0) | (u == 1))[:, None], cap, body)
    return spine + radius[:, None] * normal, normal


# ----------------------------------------------------------------------------------------
# Generators: n random rows of each kind
# ----------------------------------------------------------------------------------------


def _triangles(rng, n: int) -> Instance:
    size, origin = _scenes(rng, n)
    a, b, c = (origin + rng.uniform(-1.0, 1.0, (n, 3)) * size[:, None] for _ in range(3))
    # One row in ten degenerate: collinear, two vertices coincident, or all three.
    kind = _pick(rng, n, [0, 1, 2, 3], p=[0.9, 0.04, 0.03, 0.03])
    s = rng.uniform(-0.5, 1.5, n)[:, None]
    c = np.where((kind == 1)[:, None], a + s * (b - a), c)
    b = np.where((kind == 2)[:, None], a, b)
    b = np.where((kind == 3)[:, None], a, b)
    c = np.where((kind == 3)[:, None], a, c)
    r = _radii(rng, size)
    q, nrm = triangle_surface(rng, a, b, c)
    c0, c1 = motions(rng, q, nrm, r, size, (a + b + c) / 3)
    return {"c0": c0, "c1": c1, "r": r, "a": a, "b": b, "c": c}


def _boxes(rng, n: int) -> Instance:
    size, origin = _scenes(rng, n)
    lo = origin + rng.uniform(-1.0, 0.0, (n, 3)) * size[:, None]
    extent = rng.uniform(0.05, 2.0, (n, 3)) * size[:, None]
    # About one row in twelve is flat on one axis (lo == hi there).
    flat = (rng.random((n, 3)) < 0.03) & (np.arange(3) == rng.integers(0, 3, n)[:, None])
    hi = np.where(flat, lo, lo + extent)
    r = _radii(rng, size)
    q, nrm = box_surface(rng, lo, hi)
    c0, c1 = motions(rng, q, nrm, r, size, 0.5 * (lo + hi))
    return {"c0": c0, "c1": c1, "r": r, "lo": lo, "hi": hi}


def _capsules(rng, n: int) -> Instance:
    size, origin = _scenes(rng, n)
    a = origin + rng.uniform(-1.0, 1.0, (n, 3)) * size[:, None]
    b = a + rng.uniform(-2.0, 2.0, (n, 3)) * size[:, None]
    b = np.where((rng.random(n) < 0.08)[:, None], a, b)  # zero length: a sphere
    radius = np.where(rng.random(n) < 0.05, 0.0, rng.uniform(0.05, 1.0, n) * size)
    r = _radii(rng, size)
    q, nrm = capsule_surface(rng, a, b, radius)
    c0, c1 = motions(rng, q, nrm, r, size, 0.5 * (a + b))
    return {"c0": c0, "c1": c1, "r": r, "a": a, "b": b, "radius": radius}


def _inv_spheres(rng, n: int) -> Instance:
    size, origin = _scenes(rng, n)
    centre = origin + rng.uniform(-1.0, 1.0, (n, 3)) * size[:, None]
    radius = rng.uniform(0.5, 2.0, n) * size
    r = np.where(rng.random(n) < 0.17, 0.0, rng.uniform(0.0, 0.9, n) * radius)
    u = _unit(rng, n)
    # The wall's normal points in, toward the free space where the sphere lives.
    c0, c1 = motions(rng, centre + radius[:, None] * u, -u, r, size, centre)
    return {"c0": c0, "c1": c1, "r": r, "center": centre, "radius": radius}


def _planes(rng, n: int) -> Instance:
    size, origin = _scenes(rng, n)
    unit = _unit(rng, n)
    normal = unit * _pick(rng, n, [1.0, 1.0, 1e-3, 7.5])[:, None]
    anchor = origin + rng.uniform(-1.0, 1.0, (n, 3)) * size[:, None]
    offset = -_dot(unit, anchor) * _norm(normal)
    r = _radii(rng, size)
    q = anchor + _perpendicular(rng, unit) * rng.uniform(0.0, 2.0, n)[:, None] * size[:, None]
    c0, c1 = motions(rng, q, unit, r, size, anchor)
    return {"c0": c0, "c1": c1, "r": r, "normal": normal, "offset": offset}


def _sphere_pairs(rng, n: int) -> Instance:
    """Sphere A moving past sphere B, which moves too (or not, one row in three)."""
    size, origin = _scenes(rng, n)
    b0 = origin + rng.uniform(-1.0, 1.0, (n, 3)) * size[:, None]
    rb = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.02, 1.0, n) * size)
    ra = _radii(rng, size)
    u = _unit(rng, n)
    c0, c1 = motions(rng, b0 + rb[:, None] * u, u, ra, size, b0)
    shift = rng.uniform(-3.0, 3.0, (n, 3)) * size[:, None]
    shift[rng.random(n) < 0.33] = 0.0
    return {"a0": c0, "a1": c1 + shift, "ra": ra, "b0": b0, "b1": b0 + shift, "rb": rb}


# ----------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------


def _moving_sphere(inst: Instance) -> tuple[Float, Float, Float]:
    return inst["c0"], inst["c1"] - inst["c0"], inst["r"]


def _pair_relative(inst: Instance) -> tuple[Float, Float, Float]:
    """A's centre and motion in B's frame (B at the origin, still)."""
    v = (inst["a1"] - inst["a0"]) - (inst["b1"] - inst["b0"])
    return inst["a0"] - inst["b0"], v, inst["ra"]


def _translate_points(names: tuple[str, ...]):
    def translate(inst: Instance, shift: Float) -> Instance:
        return {k: (v + shift if k in names else v) for k, v in inst.items()}

    return translate


def _translate_plane(inst: Instance, shift: Float) -> Instance:
    # n . (x - s) + offset = 0 is the plane moved by s.
    moved = dict(inst, c0=inst["c0"] + shift, c1=inst["c1"] + shift)
    moved["offset"] = inst["offset"] - _dot(inst["normal"], shift)
    return moved


def _always(inst: Instance) -> NDArray[np.bool_]:
    return np.ones(len(next(iter(inst.values()))), bool)


@dataclass(frozen=True)
class KernelCase:
    """One kernel under the harness.

    ``distance(inst, p)`` takes the centres ``p`` (n, m, 3) in the frame given by
    ``relative`` and returns the (n, m) distance to the obstacle and its (n, m, 3) gradient.
    """

    id: str
    function: str
    args: tuple[str, ...]
    points: tuple[str, ...]
    generate: Callable[[np.random.Generator, int], Instance]
    distance: Callable[[Instance, Float], tuple[Float, Float]]
    size: Callable[[Instance], Float]
    keywords: Mapping[str, object] = field(default_factory=dict)
    relative: Callable[[Instance], tuple[Float, Float, Float]] = _moving_sphere
    height: Callable[[Instance, Float], Float] | None = None
    claims: Callable[[Instance], NDArray[np.bool_]] = _always
    translate: Callable[[Instance, Float], Instance] | None = None
    #: A random point of the obstacle's surface per row, and a normal there (in the frame
    #: of ``relative``); None for an unbounded obstacle. Used to check ``distance`` itself.
    surface: Callable[[np.random.Generator, Instance], tuple[Float, Float]] | None = None
    #: Whether the distance is convex along a path (not so for the inverse sphere, whose
    #: wall curves around the sphere: an overlapping sphere moving away can turn back).
    convex: bool = True

    @property
    def available(self) -> bool:
        return hasattr(sweep, self.function)

    def call(self, inst: Instance) -> Float:
        kernel = getattr(sweep, self.function)
        with np.errstate(divide="raise", over="raise", invalid="raise"):
            return kernel(*(inst[name] for name in self.args), **self.keywords)

    def moved(self, inst: Instance, shift: Float) -> Instance:
        if self.translate is not None:
            return self.translate(inst, shift)
        return _translate_points(self.points)(inst, shift)

    def tolerance(self, inst: Instance) -> tuple[Float, Float]:
        """(n,) distance tolerance and (n,) tolerance on the rate d(distance)/dt."""
        _c0, v, r = self.relative(inst)
        speed = _norm(v)
        coords = np.max([np.max(np.abs(inst[k]), axis=1) for k in self.points], axis=0)
        local = np.maximum(np.maximum(r, speed), self.size(inst))
        return DIST_REL * local + COORD_REL * coords, DIST_REL * speed + COORD_REL * coords


def rows(inst: Instance, index) -> Instance:
    """The rows ``index`` (a slice or an index array) of an instance."""
    return {k: v[index] for k, v in inst.items()}


def _extent(*names: str):
    def size(inst: Instance) -> Float:
        pts = np.stack([inst[k] for k in names])
        return np.max(np.max(pts, axis=0) - np.min(pts, axis=0), axis=1)

    return size


def _triangle_claims(inst: Instance) -> NDArray[np.bool_]:
    return ~degenerate(inst["a"], inst["b"], inst["c"])


def _triangle_height(inst: Instance, p: Float) -> Float:
    return triangle_height(p, inst["a"], inst["b"], inst["c"])


def _triangle_dist(inst: Instance, p: Float) -> tuple[Float, Float]:
    return triangle_distance(p, inst["a"], inst["b"], inst["c"])


_TRIANGLE = dict(
    function="sphere_triangle_toi",
    args=("c0", "c1", "r", "a", "b", "c"),
    points=("c0", "c1", "a", "b", "c"),
    generate=_triangles,
    distance=_triangle_dist,
    size=_extent("a", "b", "c"),
    claims=_triangle_claims,
    surface=lambda rng, inst: triangle_surface(rng, inst["a"], inst["b"], inst["c"]),
)

CASES: list[KernelCase] = [
    KernelCase(
        id="sphere_sphere",
        function="sphere_sphere_toi",
        args=("a0", "a1", "ra", "b0", "b1", "rb"),
        points=("a0", "a1", "b0", "b1"),
        generate=_sphere_pairs,
        distance=lambda inst, p: ball_distance(p, np.zeros((len(p), 1, 3)), inst["rb"]),
        size=lambda inst: inst["rb"],
        relative=_pair_relative,
        surface=lambda rng, inst: ball_surface(rng, np.zeros_like(inst["b0"]), inst["rb"]),
    ),
    KernelCase(
        id="sphere_plane",
        function="sphere_plane_toi",
        args=("c0", "c1", "r", "normal", "offset"),
        points=("c0", "c1"),
        generate=_planes,
        distance=lambda inst, p: half_space_distance(p, inst["normal"], inst["offset"]),
        size=lambda inst: np.abs(inst["offset"]) / _norm(inst["normal"]),
        translate=_translate_plane,
    ),
    KernelCase(id="sphere_triangle", height=_triangle_height, **_TRIANGLE),
    KernelCase(id="sphere_triangle_two_sided", keywords={"two_sided": True}, **_TRIANGLE),
    KernelCase(
        id="sphere_box",
        function="sphere_box_toi",
        args=("c0", "c1", "r", "lo", "hi"),
        points=("c0", "c1", "lo", "hi"),
        generate=_boxes,
        distance=lambda inst, p: box_distance(p, inst["lo"], inst["hi"]),
        size=_extent("lo", "hi"),
        surface=lambda rng, inst: box_surface(rng, inst["lo"], inst["hi"]),
    ),
    KernelCase(
        id="sphere_capsule",
        function="sphere_capsule_toi",
        args=("c0", "c1", "r", "a", "b", "radius"),
        points=("c0", "c1", "a", "b"),
        generate=_capsules,
        distance=lambda inst, p: capsule_distance(p, inst["a"], inst["b"], inst["radius"]),
        size=lambda inst: _norm(inst["b"] - inst["a"]) + inst["radius"],
        surface=lambda rng, inst: capsule_surface(rng, inst["a"], inst["b"], inst["radius"]),
    ),
    KernelCase(
        id="sphere_inv_sphere",
        function="sphere_inv_sphere_toi",
        args=("c0", "c1", "r", "center", "radius"),
        points=("c0", "c1", "center"),
        generate=_inv_spheres,
        distance=lambda inst, p: inv_sphere_distance(p, inst["center"][:, None, :], inst["radius"]),
        size=lambda inst: inst["radius"],
        surface=lambda rng, inst: ball_surface(rng, inst["center"], inst["radius"]),
        convex=False,
    ),
]


# ----------------------------------------------------------------------------------------
# Sampling a path
# ----------------------------------------------------------------------------------------

#: The dense grid of moments, and the finer grid laid over the deepest part of each path.
COARSE = np.linspace(0.0, 1.0, 2001)
FINE = np.linspace(0.0, 1.0, 401)
#: Rows evaluated at once (bounds the (rows, samples, 3) temporaries to a few MB).
CHUNK = 64


@dataclass(frozen=True)
class Samples:
    """The path of each row at moments ``t`` (n, m): ``gap`` = distance - r (negative:
    penetrating), ``rate`` = d(distance)/dt, ``height`` over a one-sided triangle (else
    None)."""

    t: Float
    gap: Float
    rate: Float
    height: Float | None


def evaluate(case: KernelCase, inst: Instance, times: Float) -> Samples:
    """The path of each row at ``times``: (m,) for every row alike, or (n, m)."""
    c0, v, r = case.relative(inst)
    times = np.broadcast_to(np.asarray(times, dtype=np.float64), (len(c0), np.shape(times)[-1]))
    p = c0[:, None, :] + times[..., None] * v[:, None, :]
    d, g = case.distance(inst, p)
    height = case.height(inst, p) if case.height is not None else None
    return Samples(times, d - r[:, None], _dot(g, v[:, None, :]), height)


def owed(case: KernelCase, inst: Instance, s: Samples) -> NDArray[np.bool_]:
    """(n, m) moments at which a contact must already have happened: penetrating deeper than
    the tolerance, approaching faster than rounding could fake, and (one-sided) in front."""
    tol, rate_tol = case.tolerance(inst)
    must = (s.gap < -tol[:, None]) & (s.rate < -rate_tol[:, None])
    if s.height is not None:
        must &= s.height > tol[:, None]
    return must & case.claims(inst)[:, None]


def first_owed(case: KernelCase, inst: Instance) -> Float:
    """(n,) the earliest sampled moment at which a contact is owed; inf where none.

    Each path is sampled at :data:`COARSE`, then again at :data:`FINE` across the four
    coarse steps around its deepest admissible point, where a shallow pass is shortest.
    """
    n = len(inst["r" if "r" in inst else "ra"])
    first = np.full(n, np.inf)
    for start in range(0, n, CHUNK):  # chunks of rows, to bound memory; not a loop per row
        part = slice(start, start + CHUNK)
        sub = rows(inst, part)
        tol, _rate_tol = case.tolerance(sub)
        coarse = evaluate(case, sub, COARSE)
        admissible = coarse.gap
        if coarse.height is not None:
            admissible = np.where(coarse.height > tol[:, None], coarse.gap, np.inf)
        k = np.argmin(admissible, axis=1)
        lo = COARSE[np.maximum(k - 2, 0)]
        hi = COARSE[np.minimum(k + 2, len(COARSE) - 1)]
        fine = evaluate(case, sub, lo[:, None] + (hi - lo)[:, None] * FINE[None, :])
        for s in (coarse, fine):
            when = np.where(owed(case, sub, s), s.t, np.inf)
            first[part] = np.minimum(first[part], when.min(axis=1))
    return first


def deepest(case: KernelCase, inst: Instance, grid: Float = COARSE, fine: Float = FINE) -> Float:
    """(n,) the smallest gap (distance - r) along each path, sampled at ``grid`` and then at
    ``fine`` around its smallest sample as in :func:`first_owed` (the distance is convex, or
    for the inverse sphere concave, along a path): negative where the sphere penetrates the
    obstacle somewhere."""
    n = len(inst["r" if "r" in inst else "ra"])
    least = np.empty(n)
    for start in range(0, n, CHUNK):
        part = slice(start, start + CHUNK)
        sub = rows(inst, part)
        coarse = evaluate(case, sub, grid).gap
        k = np.argmin(coarse, axis=1)
        lo = grid[np.maximum(k - 2, 0)]
        hi = grid[np.minimum(k + 2, len(grid) - 1)]
        near = evaluate(case, sub, lo[:, None] + (hi - lo)[:, None] * fine[None, :]).gap
        least[part] = np.minimum(coarse.min(axis=1), near.min(axis=1))
    return least


def case(case_id: str) -> KernelCase:
    """The case called ``case_id``."""
    return next(c for c in CASES if c.id == case_id)


def shared_edges(rng: np.random.Generator, n: int, span: float):
    """n pairs of triangles folded (by up to 30 degrees) about a shared edge a-b at random,
    not round, coordinates within ``span``, both facing +up, and a path aimed at a random
    point of the edge from above: ((a, b, c), (b, a, d), c0, c1, front, behind), where
    ``front`` / ``behind`` (n,) say which paths start in front of / behind both."""
    a, b = rng.uniform(-span, span, (n, 3)), rng.uniform(-span, span, (n, 3))
    mid = 0.5 * (a + b)
    side = np.cross(b - a, rng.normal(size=(n, 3)))
    side /= np.linalg.norm(side, axis=1)[:, None]
    up = np.cross(b - a, side)
    up /= np.linalg.norm(up, axis=1)[:, None]
    fold = rng.uniform(-0.5, 0.5, (n, 1))
    first, second = (a, b, mid + 5 * side + 5 * fold * up), (b, a, mid - 5 * side + 5 * fold * up)
    aim = a + rng.uniform(0, 1, (n, 1)) * (b - a)
    towards = -up + 0.4 * rng.normal(size=(n, 3))
    c0, c1 = aim - 3 * towards, aim + 3 * towards
    front, behind = np.ones(n, bool), np.ones(n, bool)
    for tri in (first, second):
        normal = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        assert np.all(np.einsum("ij,ij->i", normal, up) > 0)  # both face +up
        front &= np.einsum("ij,ij->i", normal, c0 - tri[0]) > 0
        behind &= np.einsum("ij,ij->i", normal, c0 - tri[0]) < 0
    return first, second, c0, c1, front, behind
