"""An independent oracle for bodies against level pieces (a plain module, imported by the
soak and the adversarial tests): closest distances to triangles, boxes and capsules,
written here from first principles (not the plugin's code), and the two checks a frame must
pass, in each piece's own frame:

* **no overlap created**: a body clear of a piece at the start of the frame (its centre at
  least ``r - tol`` from it, and in front of a one-sided triangle) is not deeper than that
  at the end;
* **no tunnelling**: a body clear of a piece at the start does not pass through it. For a
  triangle: the centre's path crosses the plane from the side it started on (the front of
  a one-sided triangle) to the other, at a point less than ``r - tol`` from the triangle
  (inside it by more than ``tol`` for a point). For a box or a capsule: the path comes
  closer than ``r - tol`` (the distance to a convex solid is convex along a segment, so a
  ternary search finds its minimum).

A body's path within the frame is read from where it was, where it touched something (the
plugin's contacts: their ``t`` and ``from_pos``) and where it is, straight between them in
the world: a stop or a slide bends the path only there. Straight in the world is not how a
body a piece carries moves: it is fixed in the piece's frame. So against a turning piece
the path is read both ways (straight in the world, and straight between the same knots in
the piece's frame), and a tunnel counts only where both readings pass through the piece. A
piece moves between Panda3D's transforms at the two ends, turning by slerp and its origin
linearly (the motion the plugin documents), sampled in ``steps`` sub-steps.

Where polygons share corners, Panda3D rebuilds each polygon's copy of a corner apart from
the others', and the plugin welds the copies into one surface: a triangle's ``slack``
(:meth:`Solid.with_shared_corners`) is how far another polygon's copy of one of its
corners is, and adds to ``tol`` for that triangle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Ternary-search iterations: the bracket shrinks by (2/3)**60 ~ 3e-11 of the segment.
_TERNARY = 60


# ---------------------------------------------------------------------------- distances
def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", u, v)


def segment_distance(q: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(k,) distances from points q (k, 3) to segments a-b (k, 3)."""
    e = b - a
    ee = _dot(e, e)
    s = np.divide(_dot(q - a, e), ee, out=np.zeros(len(q)), where=ee > 0)
    s = np.clip(s, 0.0, 1.0)
    return np.linalg.norm(q - a - s[:, None] * e, axis=1)


def triangle_distance(
    q: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For points q and triangles a, b, c (all (k, 3), counter-clockwise seen from the
    front): (k,) distance to the triangle, (k,) signed distance to its plane (positive in
    front), and (k,) signed distance of q's projection to the triangle's boundary within
    the plane (negative inside)."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    h = _dot(q - a, n)
    proj = q - h[:, None] * n
    inward = []
    for p, e in ((a, b - a), (b, c - b), (c, a - c)):
        m = np.cross(n, e)
        m /= np.linalg.norm(m, axis=1)[:, None]
        inward.append(_dot(proj - p, m))
    inward = np.stack(inward, axis=1)
    inside = np.all(inward >= 0, axis=1)
    to_edges = [
        segment_distance(proj, a, b),
        segment_distance(proj, b, c),
        segment_distance(proj, c, a),
    ]
    in_plane = np.where(inside, -inward.min(axis=1), np.min(to_edges, axis=0))
    outside_dist = np.sqrt(h * h + np.min(to_edges, axis=0) ** 2)
    return np.where(inside, np.abs(h), outside_dist), h, in_plane


def box_distance(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(k,) distances from q (k, 3) to boxes lo..hi (k, 3); 0 inside."""
    return np.linalg.norm(q - np.clip(q, lo, hi), axis=1)


def capsule_distance(q: np.ndarray, a: np.ndarray, b: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(k,) distances from q (k, 3) to capsules a-b (k, 3) of radius (k,); 0 inside."""
    return np.maximum(segment_distance(q, a, b) - radius, 0.0)


def min_on_segment(f, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """(k,) the minimum over each segment x0-x1 (k, 3) of a function f((k, 3)) -> (k,)
    that is convex along segments (a distance to a convex solid)."""
    lo, hi = np.zeros(len(x0)), np.ones(len(x0))
    for _ in range(_TERNARY):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        f1 = f(x0 + m1[:, None] * (x1 - x0))
        f2 = f(x0 + m2[:, None] * (x1 - x0))
        left = f1 < f2
        hi = np.where(left, m2, hi)
        lo = np.where(left, lo, m1)
    ends = np.minimum(f(x0), f(x1))
    return np.minimum(f(x0 + 0.5 * (lo + hi)[:, None] * (x1 - x0)), ends)


# ---------------------------------------------------------------------------- frames
def quat_matrix(quat: np.ndarray) -> np.ndarray:
    """(f, 3, 3) rotations (world = R @ local) of unit quaternions (f, 4) as (w, x, y, z),
    Panda3D's (r, i, j, k)."""
    w, x, y, z = quat.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(s, 4) unit quaternions from q0 to q1 ((4,) each) by the shorter arc at times t (s,)."""
    q0 = q0 / np.linalg.norm(q0)
    q1 = q1 / np.linalg.norm(q1)
    d = float(q0 @ q1)
    if d < 0:
        q1, d = -q1, -d
    angle = np.arccos(min(d, 1.0))
    if angle < 1e-9:
        q = (1 - t)[:, None] * q0 + t[:, None] * q1
    else:
        q = (np.sin((1 - t) * angle)[:, None] * q0 + np.sin(t * angle)[:, None] * q1) / np.sin(
            angle
        )
    return q / np.linalg.norm(q, axis=1)[:, None]


@dataclass
class Frame:
    """A node's world rotation (quaternion (4,) w, x, y, z) and origin (3,)."""

    quat: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(cls, nodepath, render) -> Frame | None:
        """Read from Panda3D (None if not finite)."""
        ts = nodepath.getTransform(render)
        q, p = ts.getQuat(), ts.getPos()
        quat = np.array([q.getR(), q.getI(), q.getJ(), q.getK()], np.float64)
        pos = np.array(tuple(p), np.float64)
        if not (np.isfinite(quat).all() and np.isfinite(pos).all()):
            return None
        return cls(quat, pos)

    @classmethod
    def identity(cls) -> Frame:
        return cls(np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3))


@dataclass
class Knots:
    """Bodies' paths over a frame: (n, K) times from 0 to 1 and (n, K, 3) world positions,
    straight between (a body's row padded at its end by repeating its last knot)."""

    t: np.ndarray
    x: np.ndarray

    @classmethod
    def straight(cls, x0: np.ndarray, x1: np.ndarray) -> Knots:
        n = len(x0)
        return cls(np.tile([0.0, 1.0], (n, 1)), np.stack([x0, x1], axis=1))

    @classmethod
    def through(cls, x0: np.ndarray, x1: np.ndarray, stops: list[list]) -> Knots:
        """From x0 to x1 ((n, 3)) through ``stops[i]``: (t, (3,) position) where body i
        touched something, as the plugin reports them (Contact.t and from_pos)."""
        n = len(x0)
        k = 2 + max((len(s) for s in stops), default=0)
        t = np.ones((n, k))
        x = np.repeat(x1[:, None], k, axis=1)
        t[:, 0], x[:, 0] = 0.0, x0
        for i, row in enumerate(stops):
            for j, (when, where) in enumerate(sorted(row, key=lambda s: s[0])):
                t[i, j + 1], x[i, j + 1] = when, where
        return cls(t, x)

    def at(self, s: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
        """(n, M, 3) positions at times s (n, M), through these knots' times and the
        positions x (n, K, 3) (default: the world ones)."""
        x = self.x if x is None else x
        kt = self.t
        j = np.clip((kt[:, None, :] <= s[:, :, None]).sum(-1) - 1, 0, kt.shape[1] - 2)
        t0, t1 = np.take_along_axis(kt, j, 1), np.take_along_axis(kt, j + 1, 1)
        x0 = np.take_along_axis(x, j[..., None], 1)
        x1 = np.take_along_axis(x, j[..., None] + 1, 1)
        f = np.divide(s - t0, t1 - t0, out=np.zeros_like(s), where=t1 > t0)
        return x0 + f[..., None] * (x1 - x0)


def _frames_at(start: Frame, end: Frame, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(*s.shape, 3, 3) rotations and (*s.shape, 3) origins of a frame at times s."""
    flat = s.reshape(-1)
    rot = quat_matrix(slerp(start.quat, end.quat, flat)).reshape(*s.shape, 3, 3)
    origin = start.pos + flat[:, None] * (end.pos - start.pos)
    return rot, origin.reshape(*s.shape, 3)


def local_paths(knots: Knots, start: Frame, end: Frame, steps: int) -> list[np.ndarray]:
    """The readings of the bodies' paths in a frame moving from ``start`` to ``end``: each
    (M, n, 3), sampled at every knot and at ``steps`` even sub-steps. The first: straight
    between the knots in the world; the second (only if ``steps`` > 1, for a turning
    frame): straight between the knots in the frame (carried by it)."""
    n = len(knots.t)
    grid = np.tile(np.linspace(0.0, 1.0, steps + 1), (n, 1))
    s = np.sort(np.concatenate([grid, knots.t], axis=1), axis=1)
    rot, origin = _frames_at(start, end, s)
    world = np.einsum("nmji,nmj->nmi", rot, knots.at(s) - origin)
    readings = [world.transpose(1, 0, 2)]
    if steps > 1:
        krot, korigin = _frames_at(start, end, knots.t)
        local = np.einsum("nkji,nkj->nki", krot, knots.x - korigin)
        readings.append(knots.at(s, local).transpose(1, 0, 2))
    return readings


# ---------------------------------------------------------------------------- solids
@dataclass
class Solid:
    """One node's pieces in its own coordinates: triangles (a, b, c (m, 3), ``two`` (m,)
    two-sided), boxes (lo, hi (m, 3)) and capsules (a, b (m, 3), radius (m,))."""

    name: str
    tri: tuple[np.ndarray, ...] = field(default_factory=lambda: _none(3) + (np.zeros(0, bool),))
    box: tuple[np.ndarray, ...] = field(default_factory=lambda: _none(2))
    cap: tuple[np.ndarray, ...] = field(default_factory=lambda: _none(2) + (np.zeros(0),))
    #: (m,) per triangle, added to the tolerance: see :meth:`with_shared_corners`.
    slack: np.ndarray | None = None

    @staticmethod
    def with_shared_corners(solids: list[Solid], key: np.ndarray) -> list[Solid]:
        """The triangle ``solids`` with each triangle's ``slack``: the farthest any copy of
        one of its corners (as Panda3D holds them) is from its own, where ``key`` (t, 3)
        int names the corner each of the solids' t triangles' corners is a copy of (in
        order, solid after solid)."""
        corners = np.concatenate([np.stack(s.tri[:3], axis=1) for s in solids]).reshape(-1, 3)
        key = key.reshape(-1)
        order = np.argsort(key, kind="stable")
        k, p = key[order], corners[order]
        start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        lo = np.minimum.reduceat(p, start, axis=0)
        hi = np.maximum.reduceat(p, start, axis=0)
        group = np.cumsum(np.r_[True, k[1:] != k[:-1]]) - 1
        # The farthest another copy can be: within the box of all the copies.
        far = np.zeros(len(p))
        far[order] = np.linalg.norm(np.maximum(hi[group] - p, p - lo[group]), axis=1)
        per_tri = far.reshape(-1, 3).max(axis=1)
        out, at = [], 0
        for s in solids:
            m = len(s.tri[0])
            out.append(Solid(s.name, s.tri, s.box, s.cap, per_tri[at : at + m]))
            at += m
        return out

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(m, 3) lo and hi of every row: triangles, then boxes, then capsules."""
        a, b, c, _ = self.tri
        lo = [np.minimum(np.minimum(a, b), c), self.box[0]]
        hi = [np.maximum(np.maximum(a, b), c), self.box[1]]
        ca, cb, cr = self.cap
        lo.append(np.minimum(ca, cb) - cr[:, None])
        hi.append(np.maximum(ca, cb) + cr[:, None])
        return np.concatenate(lo), np.concatenate(hi)

    def distance(self, q: np.ndarray) -> float:
        """Distance from the point q (3,) to the nearest piece; a one-sided triangle only
        from the front (behind one, q counts as far from it)."""
        best = np.inf
        a, b, c, two = self.tri
        if len(a):
            d, h, _ = triangle_distance(np.broadcast_to(q, a.shape), a, b, c)
            best = min(best, float(np.where((h >= 0) | two, d, np.inf).min()))
        lo, hi = self.box
        if len(lo):
            best = min(best, float(box_distance(np.broadcast_to(q, lo.shape), lo, hi).min()))
        ca, cb, cr = self.cap
        if len(ca):
            gap = capsule_distance(np.broadcast_to(q, ca.shape), ca, cb, cr)
            best = min(best, float(gap.min()))
        return best


def _none(count: int) -> tuple[np.ndarray, ...]:
    return tuple(np.zeros((0, 3)) for _ in range(count))


class Findings:
    """What the checks found: (body, solid name, row, kind, measure) per failure."""

    def __init__(self) -> None:
        self.overlaps: list[tuple[int, str, int, str, float]] = []
        self.tunnels: list[tuple[int, str, int, str, float]] = []


def check(
    solid: Solid,
    knots: Knots,
    r: np.ndarray,
    tol: np.ndarray,
    start: Frame,
    end: Frame,
    steps: int,
    found: Findings,
    bodies: np.ndarray | None = None,
) -> None:
    """Check bodies on paths ``knots`` (n bodies; radii r, tolerances tol (n,)) against
    ``solid`` moving from ``start`` to ``end``; failures go to ``found``, named by
    ``bodies`` (n,) (default 0..n-1)."""
    n = len(knots.t)
    if n == 0:
        return
    names = np.arange(n) if bodies is None else bodies
    readings = local_paths(knots, start, end, steps)
    ends = readings[0][[0, -1]]
    segments = len(readings[0]) - 1
    lo_path = np.min([w.min(axis=0) for w in readings], axis=0)
    hi_path = np.max([w.max(axis=0) for w in readings], axis=0)
    slack = np.zeros(len(solid.tri[0])) if solid.slack is None else solid.slack
    reach = (r + np.abs(tol) + slack.max(initial=0.0))[:, None]
    lo, hi = solid.bounds()
    low, high = lo_path - reach, hi_path + reach
    near = np.all((low[:, None] <= hi[None]) & (high[:, None] >= lo[None]), axis=2)
    i, k = np.nonzero(near)
    m_tri, m_box = len(solid.tri[0]), len(solid.box[0])

    def report(into, rows, what, kind, measure):
        for j in np.flatnonzero(what):
            into.append((int(names[i_[j]]), solid.name, int(rows[j]), kind, float(measure[j])))

    # ---- triangles
    sel = k < m_tri
    if sel.any():
        i_, row = i[sel], k[sel]
        a, b, c, two = (g[row] for g in solid.tri)
        rb, tb = r[i_], tol[i_] + slack[row]
        d0, h0, _ = triangle_distance(ends[0, i_], a, b, c)
        d1, h1, _ = triangle_distance(ends[1, i_], a, b, c)
        side = np.where(two & (h0 < 0), -1.0, 1.0)
        clear = (side * h0 >= -tb) & (d0 >= rb - tb)
        overlap = clear & (side * h1 >= -tb) & (d1 < rb - tb)
        tunnel = clear.copy()
        depth = np.full(len(i_), -np.inf)
        for paths in readings:
            crossed = np.zeros(len(i_), bool)
            for s in range(segments):
                pa, pb = paths[s, i_], paths[s + 1, i_]
                ha = side * triangle_distance(pa, a, b, c)[1]
                hb = side * triangle_distance(pb, a, b, c)[1]
                across = (ha >= -tb) & (hb < -tb)
                frac = np.divide(ha, ha - hb, out=np.zeros_like(ha), where=across)
                q = pa + np.clip(frac, 0.0, 1.0)[:, None] * (pb - pa)
                g = triangle_distance(q, a, b, c)[2]
                hit = across & (g < rb - tb) & ~crossed
                depth[hit] = np.maximum(depth[hit], g[hit] - rb[hit])
                crossed |= hit
            tunnel &= crossed
        report(found.overlaps, row, overlap, "triangle", d1 - rb)
        report(found.tunnels, row, tunnel, "triangle", depth)
    # ---- boxes and capsules: closed convex solids
    for kind, first, stop in (("box", m_tri, m_tri + m_box), ("capsule", m_tri + m_box, len(lo))):
        sel = (k >= first) & (k < stop)
        if not sel.any():
            continue
        i_, row = i[sel], k[sel] - first
        if kind == "box":
            blo, bhi = solid.box[0][row], solid.box[1][row]

            def dist(q, blo=blo, bhi=bhi):
                return box_distance(q, blo, bhi)
        else:
            ca, cb, cr = (g[row] for g in solid.cap)

            def dist(q, ca=ca, cb=cb, cr=cr):
                return capsule_distance(q, ca, cb, cr)

        rb, tb = r[i_], tol[i_]
        d0, d1 = dist(ends[0, i_]), dist(ends[1, i_])
        clear = d0 >= rb - tb
        overlap = clear & (d1 < rb - tb)
        # Closest on the path: the larger of the two readings' (both must come too close).
        closest = np.full(len(i_), -np.inf)
        for paths in readings:
            reading = np.full(len(i_), np.inf)
            for s in range(segments):
                reading = np.minimum(reading, min_on_segment(dist, paths[s, i_], paths[s + 1, i_]))
            closest = np.maximum(closest, reading)
        tunnel = clear & ~overlap & (closest < rb - tb)
        report(found.overlaps, row, overlap, kind, d1 - rb)
        report(found.tunnels, row, tunnel, kind, closest - rb)
