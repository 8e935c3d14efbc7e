"""The level of the level benchmark as plain arrays (no panda3d here), its motion, and the
oracle that says whether a moved sphere ended beyond a front face.

* :class:`Level`: a terrain height field (two triangles per cell, gentle slopes) with walls
  and props standing on it (closed boxes, twelve triangles each, faces counter-clockwise
  seen from outside), the triangles grouped by the CollisionNode that will hold them:
  terrain tiles first, then one node per wall and per prop.
* :class:`LevelMotion`: spheres over the terrain, 90% slow ones rolling along the ground
  (aimed partly down, lifted back onto it and pushed out of boxes, as a game would keep
  them), 10% fast ones fired partly down, respawned once their path meets a front face.
  Frame ``k`` moves every sphere from ``start[k - 1]`` to ``end[k]``; every system sees
  that same motion.
* :class:`Volley`: fast spheres fired straight at front faces, for the correctness table.
* :func:`front_crossings` and :func:`inside_solid`: the oracle, plain segment-triangle
  and ray-triangle tests against the ``(m, 3, 3)`` triangles, independent of the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Level", "LevelMotion", "Volley", "front_crossings", "inside_solid", "box_triangles"]

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]
Int = NDArray[np.int64]

RADIUS = 0.5
#: Units per frame (+-20% each way), as the issue describes the motion.
SLOW, FAST = 0.3, 50.0
FAST_SHARE = 0.1
#: Share of the box's barycentric tolerance in the oracle: a crossing on a shared edge
#: counts for both triangles rather than for neither.
_EDGE_TOL = 1e-9
#: Gap kept between a resolved slow sphere and the surface, so that the next frame starts
#: clear of it (the terrain lift is exact only for the triangle under the centre).
_CLEAR = 0.05


def _box_template() -> Float:
    """(12, 3, 3) float64 corners of the cube [-1, 1]^3, two triangles per face, each
    counter-clockwise seen from outside (its normal points out)."""
    faces = []
    for axis in range(3):
        u, w = (axis + 1) % 3, (axis + 2) % 3
        for sign in (-1.0, 1.0):
            quad = np.zeros((4, 3))
            quad[:, axis] = sign
            quad[:, u] = [-1, 1, 1, -1]
            quad[:, w] = [-1, -1, 1, 1]
            # (e_u x e_w) is +e_axis for this cyclic order: the -axis face is reversed.
            if sign < 0:
                quad = quad[::-1]
            faces += [quad[[0, 1, 2]], quad[[0, 2, 3]]]
    return np.array(faces)


_BOX = _box_template()


def _yaw_matrices(yaw: Float) -> Float:
    """(k, 3, 3) rotations about +z by ``yaw`` radians."""
    c, s = np.cos(yaw), np.sin(yaw)
    m = np.zeros((len(yaw), 3, 3))
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1], m[:, 2, 2] = c, -s, s, c, 1.0
    return m


def _skirts(grid: Float, depth: float) -> Float:
    """(4, 2 cells, 3, 3) float64: the terrain's four edges (x = 0, x = side, y = 0,
    y = side) closed down to ``depth``, facing out, so that nothing enters the ground from
    the side. ``grid`` is (cells + 1, cells + 1, 3) float64."""
    out = []
    for edge, outward in (
        (grid[0], (-1.0, 0.0, 0.0)),
        (grid[-1], (1.0, 0.0, 0.0)),
        (grid[:, 0], (0.0, -1.0, 0.0)),
        (grid[:, -1], (0.0, 1.0, 0.0)),
    ):
        top0, top1 = edge[:-1], edge[1:]
        bot0, bot1 = top0.copy(), top1.copy()
        bot0[:, 2] = bot1[:, 2] = depth
        tris = np.concatenate(
            [np.stack([top0, bot0, bot1], axis=1), np.stack([top0, bot1, top1], axis=1)]
        )
        back = _normals(tris) @ np.array(outward) < 0
        tris[back] = tris[back][:, ::-1]
        out.append(tris)
    return np.array(out)


def box_triangles(center: Float, half: Float, yaw: Float) -> Float:
    """(12 k, 3, 3) float64 triangles of k boxes: ``center`` (k, 3), ``half`` extents (k, 3),
    ``yaw`` (k,) radians about +z; box i owns rows 12 i to 12 i + 11."""
    local = _BOX[None] * half[:, None, None, :]  # (k, 12, 3, 3)
    world = np.einsum("kij,ktvj->ktvi", _yaw_matrices(yaw), local) + center[:, None, None]
    return world.reshape(-1, 3, 3)


def _normals(triangles: Float) -> Float:
    """(m, 3) float64 unnormalised front normals (b - a) x (c - a)."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    return np.cross(b - a, c - a)


@dataclass(frozen=True)
class Level:
    """A terrain of ``cells`` x ``cells`` square cells of edge ``cell`` over
    ``[0, side]^2``, with boxes (walls, then props) standing on it.

    Attributes
    ----------
    heights : (cells + 1, cells + 1) float64
        Terrain height at grid point (i, j), i.e. at (i * cell, j * cell).
    box_center, box_half : (k, 3) float64
        Box centres and half extents (walls first, then props).
    box_yaw : (k,) float64
        Rotation of each box about +z, radians.
    walls : int
        How many of the boxes are walls.
    triangles : (m, 3, 3) float64
        Every triangle, node by node: terrain tiles, the four skirts and the bottom (the
        ground is a closed solid: nothing gets under it from the side or from below), then
        the boxes in order (from row :attr:`first_box`).
    counts : (nodes,) int64
        Triangles per node, in the order of ``names``.
    names : tuple of str
        Node names: ``terrain-<i>-<j>``, ``skirt-<edge>``, ``bottom``, ``wall-<k>``,
        ``prop-<k>``.
    """

    cells: int
    cell: float
    heights: Float
    box_center: Float
    box_half: Float
    box_yaw: Float
    walls: int
    triangles: Float
    counts: Int
    names: tuple[str, ...]

    @property
    def side(self) -> float:
        return self.cells * self.cell

    @property
    def terrain_triangles(self) -> int:
        """The terrain's top surface: rows 0 to this."""
        return 2 * self.cells**2

    @property
    def first_box(self) -> int:
        """Row of the first box triangle (after the terrain, its skirts and bottom)."""
        return 2 * self.cells**2 + 8 * self.cells + 2

    @classmethod
    def generate(
        cls,
        cells: int = 120,
        *,
        cell: float = 2.0,
        tile: int = 24,
        walls: int | None = None,
        props: int | None = None,
        seed: int = 1,
    ) -> Level:
        """The level: ``2 cells^2`` terrain triangles in tiles of ``tile`` x ``tile``
        cells, closed into a solid by four skirts (``2 cells`` triangles each) and a bottom
        (2), and ``walls`` walls and ``props`` props (by default 60 and 200 per 120 x 120
        cells, scaled with the area). The defaults give 28,800 terrain triangles in 25
        tiles, and 32,882 triangles in 290 nodes in all."""
        if cells < 2 or tile < 1:
            raise ValueError(f"cells must be >= 2 and tile >= 1, got cells={cells}, tile={tile}")
        area = (cells / 120) ** 2
        walls = max(1, round(60 * area)) if walls is None else walls
        props = max(1, round(200 * area)) if props is None else props
        rng = np.random.default_rng(seed)
        side = cells * cell
        x = np.arange(cells + 1) * cell
        gx, gy = np.meshgrid(x, x, indexing="ij")
        tau = 2 * np.pi
        heights = (
            3.0 * np.sin(tau * gx / 90)
            + 2.0 * np.cos(tau * gy / 70)
            + 1.2 * np.sin(tau * (gx + gy) / 41)
            + 0.15 * rng.standard_normal(gx.shape)
        )
        grid = np.stack([gx, gy, heights], axis=-1)
        p, q, r, s = grid[:-1, :-1], grid[1:, :-1], grid[1:, 1:], grid[:-1, 1:]
        # Cell (i, j): (p, q, r) below its diagonal, (p, r, s) above; both face +z.
        cell_tris = np.stack(
            [np.stack([p, q, r], axis=-2), np.stack([p, r, s], axis=-2)], axis=2
        )  # (cells, cells, 2, 3, 3)
        ti, tj = np.meshgrid(np.arange(cells) // tile, np.arange(cells) // tile, indexing="ij")
        tiles = -(-cells // tile)
        tile_id = np.repeat((ti * tiles + tj).ravel(), 2)
        order = np.argsort(tile_id, kind="stable")
        terrain = cell_tris.reshape(-1, 3, 3)[order]
        tile_counts = np.bincount(tile_id, minlength=tiles * tiles)
        names = [f"terrain-{i}-{j}" for i in range(tiles) for j in range(tiles)]
        counts = [int(c) for c in tile_counts]
        depth = heights.min() - 20.0
        skirts = _skirts(grid, depth)
        c = [[0, 0, depth], [0, side, depth], [side, side, depth], [side, 0, depth]]
        bottom = np.array([[c[0], c[1], c[2]], [c[0], c[2], c[3]]], np.float64)  # faces -z
        terrain = np.concatenate([terrain, skirts.reshape(-1, 3, 3), bottom])
        names += [f"skirt-{edge}" for edge in ("west", "east", "south", "north")] + ["bottom"]
        counts += [skirts.shape[1]] * 4 + [2]

        level = cls(cells, cell, heights, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), 0,
                    terrain, np.array(counts), tuple(names))  # fmt: skip
        center, half, yaw = level._boxes(rng, walls, props, side)
        boxes = box_triangles(center, half, yaw)
        names += [f"wall-{k}" for k in range(walls)] + [f"prop-{k}" for k in range(props)]
        counts += [12] * (walls + props)
        return cls(cells, cell, heights, center, half, yaw, walls,
                   np.concatenate([terrain, boxes]), np.array(counts), tuple(names))  # fmt: skip

    def _boxes(
        self, rng: np.random.Generator, walls: int, props: int, side: float
    ) -> tuple[Float, Float, Float]:
        """Walls (1 thick, 12 to 40 long but at most a third of the side, 4 to 8 above the
        ground; half of them axis aligned) and props (1 to 4 on each side), each sunk below
        the lowest terrain under its footprint so that no gap opens under it."""
        length = np.minimum(rng.uniform(12, 40, walls), side / 3)
        wall_half = np.stack([length / 2, np.full(walls, 0.5), np.zeros(walls)], axis=1)
        wall_yaw = rng.uniform(0, np.pi, walls)
        wall_yaw[: walls // 4] = 0.0
        wall_yaw[walls // 4 : walls // 2] = np.pi / 2
        wall_rise = rng.uniform(4, 8, walls)
        prop_half = rng.uniform(0.5, 2.0, (props, 3))
        prop_yaw = rng.uniform(0, np.pi, props)
        half = np.concatenate([wall_half, prop_half])
        yaw = np.concatenate([wall_yaw, prop_yaw])
        reach = np.hypot(half[:, 0], half[:, 1]) + 2.0
        xy = rng.uniform(reach[:, None], side - reach[:, None], (len(half), 2))
        # The terrain under a 5 x 5 grid over each footprint (its corners included).
        u = np.linspace(-1, 1, 5)
        fu, fv = (g.ravel() for g in np.meshgrid(u, u, indexing="ij"))
        local = np.stack([fu[None] * half[:, :1], fv[None] * half[:, 1:2]], axis=-1)
        c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        px = xy[:, :1] + c * local[..., 0] - s * local[..., 1]
        py = xy[:, 1:] + s * local[..., 0] + c * local[..., 1]
        ground = self.height_at(px.ravel(), py.ravel())[0].reshape(px.shape)
        bottom = ground.min(axis=1) - np.where(np.arange(len(half)) < walls, 1.0, 0.3)
        top = np.concatenate([ground[:walls].max(axis=1) + wall_rise,
                              ground[walls:].min(axis=1) + 2 * prop_half[:, 2]])  # fmt: skip
        half[:, 2] = (top - bottom) / 2
        center = np.column_stack([xy, (top + bottom) / 2])
        return center, half, yaw

    # ------------------------------------------------------------------ queries
    def height_at(self, x: Float, y: Float) -> tuple[Float, Float]:
        """Terrain height (n,) float64 at points (x, y) and the unit normal (n, 3) float64
        of the triangle under each; points off the terrain take its nearest edge cell."""
        gx = np.asarray(x, np.float64) / self.cell
        gy = np.asarray(y, np.float64) / self.cell
        i = np.clip(np.floor(gx), 0, self.cells - 1).astype(np.int64)
        j = np.clip(np.floor(gy), 0, self.cells - 1).astype(np.int64)
        u, v = np.clip(gx - i, 0, 1), np.clip(gy - j, 0, 1)
        h = self.heights
        hp, hq, hr, hs = h[i, j], h[i + 1, j], h[i + 1, j + 1], h[i, j + 1]
        lower = u >= v  # triangle (p, q, r)
        dx = np.where(lower, hq - hp, hr - hs)
        dy = np.where(lower, hr - hq, hs - hp)
        z = hp + u * dx + v * dy
        normal = np.stack([-dx / self.cell, -dy / self.cell, np.ones_like(z)], axis=1)
        return z, normal / np.linalg.norm(normal, axis=1, keepdims=True)

    def box_distance(self, points: Float) -> tuple[Float, Float]:
        """Signed distance (n,) float64 from each point to the nearest box (negative
        inside) and the unit direction (n, 3) float64 that increases it fastest."""
        points = np.asarray(points, np.float64)
        n = len(points)
        if len(self.box_half) == 0:
            return np.full(n, np.inf), np.tile([0.0, 0.0, 1.0], (n, 1))
        rot = _yaw_matrices(self.box_yaw)  # (k, 3, 3)
        local = np.einsum("kji,nkj->nki", rot, points[:, None] - self.box_center[None])
        q = np.abs(local) - self.box_half[None]  # (n, k, 3)
        outside = np.linalg.norm(np.maximum(q, 0), axis=2)
        inside = np.minimum(q.max(axis=2), 0)
        dist = outside + inside
        k = np.argmin(dist, axis=1)
        rows = np.arange(n)
        qk, lk = q[rows, k], local[rows, k]
        away = np.maximum(qk, 0) * np.sign(lk)
        norm = np.linalg.norm(away, axis=1, keepdims=True)
        face = np.eye(3)[np.argmax(qk, axis=1)] * np.sign(lk)
        grad_local = np.where(norm > 0, away / np.where(norm > 0, norm, 1), face)
        grad = np.einsum("nij,nj->ni", rot[k], grad_local)
        return dist[rows, k], grad

    def clearance(self, points: Float, radius: float = RADIUS) -> Float:
        """(n,) float64 gap between spheres of ``radius`` at ``points`` and the level
        (negative: overlapping). Against the terrain it is the distance to the plane of
        the triangle under the centre: exact on a flat patch, close on these slopes."""
        points = np.asarray(points, np.float64)
        z, normal = self.height_at(points[:, 0], points[:, 1])
        terrain = (points[:, 2] - z) * normal[:, 2]
        return np.minimum(terrain, self.box_distance(points)[0]) - radius

    def resolve(self, points: Float, radius: float = RADIUS) -> tuple[Float, Bool]:
        """Where a game that keeps its spheres out of the level puts them: pushed out of
        boxes, then lifted onto the terrain, twice. Returns the (n, 3) float64 positions and
        (n,) bool, which ones a box pushed."""
        p = np.array(points, np.float64)
        pushed = np.zeros(len(p), bool)
        for _ in range(2):
            dist, grad = self.box_distance(p)
            hit = dist < radius + _CLEAR
            p[hit] += grad[hit] * (radius + _CLEAR - dist[hit])[:, None]
            pushed |= hit
            z, normal = self.height_at(p[:, 0], p[:, 1])
            floor = z + (radius + _CLEAR) / normal[:, 2]
            p[:, 2] = np.maximum(p[:, 2], floor)
        return p, pushed

    def free_points(
        self, rng: np.random.Generator, n: int, low: float, high: float, margin: float = 5.0
    ) -> Float:
        """(n, 3) float64 centres ``low`` to ``high`` from the plane of the terrain triangle
        under them, ``margin`` inside its edges, whose sphere of radius RADIUS clears every
        box by 0.3."""
        out = np.zeros((0, 3))
        while len(out) < n:
            xy = rng.uniform(margin, self.side - margin, (2 * n, 2))
            z, normal = self.height_at(xy[:, 0], xy[:, 1])
            p = np.column_stack([xy, z + rng.uniform(low, high, 2 * n) / normal[:, 2]])
            out = np.concatenate([out, p[self.box_distance(p)[0] > RADIUS + 0.3]])
        return out[:n]


# ---------------------------------------------------------------------- the oracle
def front_crossings(p0: Float, p1: Float, triangles: Float, *, chunk: int = 64) -> Bool:
    """(s,) bool: does segment ``p0[i] -> p1[i]`` ((s, 3) float64 each) cross some
    triangle's plane from its front side (where (b - a) x (c - a) points) to its back,
    inside the triangle (edges included)? ``triangles`` is (m, 3, 3) float64.

    Plain numpy over (segment, triangle) pairs whose boxes overlap, ``chunk`` segments at
    a time; nothing from panda3d_ccd.

    >>> tri = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], float)
    >>> front_crossings(np.array([[.2, .2, 1], [.2, .2, -1], [2, 2, 1]]),
    ...                 np.array([[.2, .2, -1], [.2, .2, 1], [2, 2, -1]]), tri).tolist()
    [True, False, False]
    """
    p0 = np.asarray(p0, np.float64).reshape(-1, 3)
    p1 = np.asarray(p1, np.float64).reshape(-1, 3)
    tri = np.asarray(triangles, np.float64).reshape(-1, 3, 3)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    normal = _normals(tri)
    lo, hi = tri.min(axis=1), tri.max(axis=1)
    out = np.zeros(len(p0), bool)
    for first in range(0, len(p0), chunk):
        s0, s1 = p0[first : first + chunk], p1[first : first + chunk]
        slo, shi = np.minimum(s0, s1), np.maximum(s0, s1)
        near = np.all((slo[:, None] <= hi[None]) & (shi[:, None] >= lo[None]), axis=2)
        i, k = np.nonzero(near)
        n = normal[k]
        d0 = np.einsum("ij,ij->i", s0[i] - a[k], n)
        d1 = np.einsum("ij,ij->i", s1[i] - a[k], n)
        through = (d0 > 0) & (d1 < 0)
        i, k, n, d0, d1 = i[through], k[through], n[through], d0[through], d1[through]
        x = s0[i] + (d0 / (d0 - d1))[:, None] * (s1[i] - s0[i])
        tol = -_EDGE_TOL * np.einsum("ij,ij->i", n, n)
        inside = np.ones(len(i), bool)
        for u, v in ((a, b), (b, c), (c, a)):
            edge = np.cross(v[k] - u[k], x - u[k])
            inside &= np.einsum("ij,ij->i", edge, n) >= tol
        out[first + i[inside]] = True
    return out


def inside_solid(points: Float, triangles: Float) -> Bool:
    """(n,) bool: is each point ((n, 3) float64) behind the level's surface? A ray from the
    point straight up counts +1 for each face it meets looking up (its front normal has
    z > 0: the ray leaves a solid there) and -1 for each looking down (it enters one): a
    positive sum means the point is inside some solid. Solids may overlap (boxes sunk into
    the terrain).

    >>> tri = np.array([[[0, 0, 0], [9, 0, 0], [0, 9, 0]]], float)
    >>> inside_solid(np.array([[1, 1, -1], [1, 1, 1], [20, 1, -1]]), tri).tolist()
    [True, False, False]
    """
    pts = np.asarray(points, np.float64).reshape(-1, 3)
    tri = np.asarray(triangles, np.float64).reshape(-1, 3, 3)
    normal = _normals(tri)
    lo, hi = tri.min(axis=1), tri.max(axis=1)
    xy = pts[:, None, :2]
    near = np.all((xy >= lo[None, :, :2]) & (xy <= hi[None, :, :2]), axis=2)
    near &= (pts[:, None, 2] <= hi[None, :, 2]) & (normal[None, :, 2] != 0)
    i, k = np.nonzero(near)
    a, b, c, n = tri[k, 0], tri[k, 1], tri[k, 2], normal[k]
    x = pts[i]
    # Where the vertical line through the point meets the triangle's plane.
    z = a[:, 2] - ((x[:, 0] - a[:, 0]) * n[:, 0] + (x[:, 1] - a[:, 1]) * n[:, 1]) / n[:, 2]
    hit = np.column_stack([x[:, :2], z])
    inside = z > x[:, 2]
    for u, v in ((a, b), (b, c), (c, a)):
        edge = (v[:, 0] - u[:, 0]) * (hit[:, 1] - u[:, 1]) - (v[:, 1] - u[:, 1]) * (
            hit[:, 0] - u[:, 0]
        )
        inside &= edge * np.sign(n[:, 2]) >= 0
    winding = np.bincount(i[inside], np.sign(n[inside, 2]), minlength=len(pts))
    return winding > 0


# ---------------------------------------------------------------------- motion
def _unit(v: Float) -> Float:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _aim(rng: np.random.Generator, fast: Bool) -> Float:
    """(n, 3) float64 velocities in units per frame: a random heading, pitched down 5 to
    35 degrees for fast spheres and by 0.03 to 0.08 units a frame for slow ones."""
    n = len(fast)
    heading = rng.uniform(0, 2 * np.pi, n)
    pitch = np.radians(rng.uniform(5, 35, n))
    speed = np.where(fast, FAST, SLOW) * rng.uniform(0.8, 1.2, n)
    horizontal = np.where(fast, np.cos(pitch), 1.0) * speed
    down = np.where(fast, np.sin(pitch) * speed, rng.uniform(0.03, 0.08, n))
    return np.column_stack([np.cos(heading) * horizontal, np.sin(heading) * horizontal, -down])


@dataclass(frozen=True)
class LevelMotion:
    """``n`` spheres of radius RADIUS over a level for ``frames`` frames.

    Attributes
    ----------
    start : (frames + 1, n, 3) float64
        Where each sphere is at the beginning of frame k + 1 (row 0: the spawn).
    end : (frames + 1, n, 3) float64
        Where the game moves it during frame k (row 0 equals ``start[0]``): frame k's
        motion is ``start[k - 1] -> end[k]``.
    fast : (n,) bool
    """

    start: Float
    end: Float
    fast: Bool

    @property
    def n(self) -> int:
        return self.start.shape[1]

    @property
    def frames(self) -> int:
        return len(self.start) - 1

    def frame(self, k: int) -> tuple[Float, Float]:
        """Frame k's motion (k >= 1): previous (n, 3) and current (n, 3) positions."""
        return self.start[k - 1], self.end[k]

    @classmethod
    def generate(cls, level: Level, n: int, frames: int, *, seed: int = 1) -> LevelMotion:
        """Slow spheres start 0.02 to 0.3 above the ground and roll; each frame the game
        lifts them back onto it and pushes them out of boxes (re-aiming those a box
        pushed, or that near the level's edge). Fast ones start 3 to 20 above the ground;
        once a path crosses a front face, ends overlapping the level or leaves it, the
        sphere is respawned (setPos: no sweep) with a new aim."""
        if n < 1 or frames < 0:
            raise ValueError(f"n must be >= 1 and frames >= 0, got n={n}, frames={frames}")
        rng = np.random.default_rng(seed)
        fast = np.arange(n) < round(FAST_SHARE * n)
        p = np.empty((n, 3))
        p[~fast] = level.free_points(rng, int((~fast).sum()), RADIUS + 0.02, RADIUS + 0.3)
        p[fast] = level.free_points(rng, int(fast.sum()), 3.0, 20.0)
        v = _aim(rng, fast)
        starts, ends = [p], [p]
        edge = 5.0
        for _ in range(frames):
            q = p + v
            resolved, pushed = level.resolve(q)
            off = np.any((q[:, :2] < edge) | (q[:, :2] > level.side - edge), axis=1)
            off |= q[:, 2] > level.heights.max() + 40
            spent = fast & (off | (level.clearance(q) < 0))
            fly = fast & ~spent
            spent[fly] = front_crossings(p[fly], q[fly], level.triangles)
            nxt = np.where(fast[:, None], q, resolved)
            if spent.any():
                nxt[spent] = level.free_points(rng, int(spent.sum()), 3.0, 20.0)
            turn = spent | (~fast & (pushed | off))
            if turn.any():
                v[turn] = _aim(rng, fast[turn])
            starts.append(nxt)
            ends.append(q)
            p = nxt
        return cls(np.array(starts), np.array(ends), fast)


# ---------------------------------------------------------------------- the volley
@dataclass(frozen=True)
class Volley:
    """Fast spheres fired straight at the level's front faces.

    Attributes
    ----------
    start : (k, 3) float64
        Clear of the level by at least 0.3, 5 to 35 units before the face aimed at.
    velocity : (k, 3) float64
        Units per frame, about FAST (+-20%), within 60 degrees of the face's inward normal.
    target : (k,) int64
        Row of the triangle aimed at (half terrain, half walls and props).
    """

    start: Float
    velocity: Float
    target: Int

    @classmethod
    def generate(cls, level: Level, k: int, *, seed: int = 1) -> Volley:
        rng = np.random.default_rng(seed)
        tri = level.triangles
        unit = _unit(_normals(tri))
        terrain = np.arange(level.terrain_triangles)
        # Box faces a sphere can reach: not the buried bottoms.
        boxes = np.flatnonzero(unit[:, 2] > -0.5)
        boxes = boxes[boxes >= level.first_box]
        start, velocity, target = np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64)
        while len(start) < k:
            m = 4 * k
            rows = np.where(rng.random(m) < 0.5, rng.choice(terrain, m), rng.choice(boxes, m))
            r1, r2 = np.sqrt(rng.random(m)), rng.random(m)
            a, b, c = tri[rows, 0], tri[rows, 1], tri[rows, 2]
            point = (1 - r1)[:, None] * a + (r1 * (1 - r2))[:, None] * b + (r1 * r2)[:, None] * c
            n = unit[rows]
            side = _unit(np.cross(n, rng.normal(size=(m, 3))))
            tilt = np.radians(rng.uniform(0, 60, m))[:, None]
            d = -np.cos(tilt) * n + np.sin(tilt) * side
            p0 = point - d * rng.uniform(5, 35, m)[:, None]
            ok = level.clearance(point + n * (RADIUS + 0.2)) >= 0.1  # the face is exposed
            ok &= level.clearance(p0) >= 0.3
            ok &= np.all((p0[:, :2] > 1) & (p0[:, :2] < level.side - 1), axis=1)
            speed = FAST * rng.uniform(0.8, 1.2, m)[:, None]
            start = np.concatenate([start, p0[ok]])
            velocity = np.concatenate([velocity, (d * speed)[ok]])
            target = np.concatenate([target, rows[ok]])
        return cls(start[:k], velocity[:k], target[:k])
