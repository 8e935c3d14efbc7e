"""Adversarial cases for the ray grid (review of the merge 56f9ee3): where a batch of 256
or more rays (walking :class:`~panda3d_ccd._raygrid.RayGrid`) does not give each ray the
first hit the single cast (``ray_test_closest``, the tree) gives it.

Oracles: a flat floor's analytic hit (t = 0.5 for a ray from height h to -h), the point
kernel over every (ray, triangle) pair, and the single cast of each ray.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
from panda3d.core import CollisionPolygon, LPoint3
from scene_nodes import collision_node as cnode
from test_ray_grid import grid_first

from panda3d_ccd._pieces import TRIANGLE, Pieces
from panda3d_ccd._queries import PieceRows, World
from panda3d_ccd._raygrid import RayGrid
from panda3d_ccd.sweep.sphere_triangle import _point_data

FULL = 0xFFFFFFFF


def floor_triangles(cells=40):
    """A flat floor at z = 0 over [0, cells]^2, two triangles a unit square, facing up:
    symmetric under x <-> y, so the grid's origin is the same on x and y."""
    x, y = np.meshgrid(np.arange(cells + 1.0), np.arange(cells + 1.0), indexing="ij")
    p = np.stack([x, y, np.zeros_like(x)], axis=-1)
    v00, v10, v01, v11 = p[:-1, :-1], p[1:, :-1], p[:-1, 1:], p[1:, 1:]
    a = np.concatenate([v00, v00]).reshape(-1, 3)
    b = np.concatenate([v10, v11]).reshape(-1, 3)
    c = np.concatenate([v11, v01]).reshape(-1, 3)
    return a, b, c


def diagonal_rays(rng, k, cells=40):
    """Rays along x = y, from height h down to -h: each crosses z = 0 at (s, s) (t = 0.5)
    and passes exactly through the grid's cell corners on its diagonal."""
    s = rng.uniform(1, cells - 1, k)
    half = rng.uniform(0.5, 20, k)
    h = rng.uniform(0.1, 3, k)
    p0 = np.column_stack([s - half, s - half, h])
    p1 = np.column_stack([s + half, s + half, -h])
    return p0, p1


# ------------------------------------------------------------------ the walk's corners


def test_the_grid_walk_visits_the_cell_beyond_a_corner_it_passes_through():
    """A ray through a corner of four cells (x and y walls crossed at the same time) goes
    from one cell straight into the diagonal one. The walk enters a cell per wall crossed,
    at the other axes' positions at that time: where both round to just short of the wall,
    it lists the two side cells and never the diagonal cell the ray runs through next."""
    a, b, c = floor_triangles()
    m = len(a)
    rng = np.random.default_rng(1)
    p0, p1 = diagonal_rays(rng, 2000)
    (t, _item), (t_want, _item_want), _grid = grid_first(
        a, b, c, np.zeros(m, bool), p0, p1, np.zeros(m, np.int64)
    )
    assert np.all(t_want == 0.5)  # the kernel over every pair: every ray hits the floor
    missed = np.flatnonzero(t != t_want)
    assert len(missed) == 0, f"{len(missed)} of 2000 rays fell through, e.g. {p0[missed[0]]}"


def test_diagonal_rays_hit_a_static_floor_in_a_batch_as_one_by_one(base, ccd):
    """The same through the public API: a floor of 3,200 CollisionPolygon triangles, 1,000
    rays along x = y coming down on it. Each single cast hits the floor at t = 0.5; the
    batch must too (it let some 4% fall through)."""
    a, b, c = floor_triangles()
    tris = [CollisionPolygon(*(LPoint3(*map(float, v)) for v in corners))
            for corners in zip(a, b, c)]  # fmt: skip
    floor = cnode(base.render, "floor", *tris)
    ccd.add_collision_node(floor, static=True)
    ccd.step()
    rng = np.random.default_rng(1)
    p0, p1 = diagonal_rays(rng, 1000)
    res = ccd.ray_test_batch(p0, p1)
    for i in range(0, 1000, 50):
        single = ccd.ray_test_closest(p0[i], p1[i])
        assert single is not None and single.getT() == 0.5
    missed = np.flatnonzero(res.t != 0.5)
    for i in missed[:5]:  # the single casts of the rays the batch lost hit the floor
        single = ccd.ray_test_closest(p0[i], p1[i])
        assert single is not None and single.getT() == 0.5
    assert len(missed) == 0, (
        f"{len(missed)} of 1000 rays fell through the floor in the batch, e.g. "
        f"{p0[missed[0]].tolist()} -> {p1[missed[0]].tolist()}"
    )


# ------------------------------------------------------------------ a sliver, a long ray


def sliver_world():
    """A unit square of 300 small triangles (small cells) and one sliver along y = 0.5
    from x = 0 to 1, 1e-6 wide: the point kernel accepts it far past its end (its edges'
    slop), and a single cast asks it wherever the ray passes within SEAM_REL of the ray's
    own scale of its box."""
    rng = np.random.default_rng(0)
    n = 300
    a = np.column_stack([rng.uniform(0, 1, n), rng.uniform(0, 1, n), np.full(n, -0.5)])
    b = a + [0.003, 0, 0]
    c = a + [0, 0.003, 0]
    a = np.concatenate([a, [[0.0, 0.5, 0.0]]])
    b = np.concatenate([b, [[1.0, 0.5, 0.0]]])
    c = np.concatenate([c, [[0.5, 0.5 + 1e-6, 0.0]]])
    m = len(a)
    table = Pieces(TRIANGLE, (a, b, c, np.zeros(m, bool)), np.full(m, FULL, np.int64))
    rows = PieceRows(table, np.arange(m), np.zeros(m, np.int64), np.arange(m))
    return World([], None, [rows]), m


def test_a_long_ray_grazing_a_slivers_far_end_is_hit_in_a_batch_as_alone():
    """Rays 10,000 long (coordinates 5,000 over a mesh of scale 1) pass 0.004 to 0.1
    beyond the sliver's end. A single cast's box rule reaches SEAM_REL * 5000 = 0.15
    around the sliver's box, and the kernel hits it there; the grid lists the sliver only
    _REACH (64) seam slops of the mesh around its box, 0.002. Rays walked the grid up to
    1e4 times the mesh's scale and missed it; now only up to _REACH times (beyond, the
    tree casts them), where a single cast's reach stays within the listing."""
    world, m = sliver_world()
    k = 300
    x = np.linspace(1.004, 1.1, k)
    p0 = np.column_stack([x, np.full(k, 0.5), np.full(k, 5000.0)])
    p1 = np.column_stack([x, np.full(k, 0.5), np.full(k, -5000.0)])
    mask = np.full(k, FULL, np.int64)
    r = np.zeros(k)
    dead = np.zeros(m, bool)
    table = world.pieces[0].table
    scale = np.abs(np.concatenate([p0, p1], axis=1)).max(axis=1)
    assert not table.ray_grid()[0].walkable(scale).any()
    single = [world.first(p0[i : i + 1], p1[i : i + 1], r[:1], mask[:1], True, dead)
              for i in range(k)]  # fmt: skip
    want = np.array([f.node[0] if len(f.t) else -1 for f in single])
    assert np.all(want == m - 1)  # each ray alone hits the sliver
    first = world.first(p0, p1, r, mask, True, dead)
    got = np.full(k, -1)
    got[first.query] = first.node
    differ = np.flatnonzero(got != want)
    assert len(differ) == 0, (
        f"{len(differ)} of {k} rays: the batch misses the sliver a single cast hits, e.g. "
        f"x = {x[differ[0]]}"
    )
    assert not np.isnan(first.t).any()


# ------------------------------------------------------------------ memory of the build


def build_peak(a, b, c):
    """The peak bytes numpy allocates building the grid of triangles a, b, c."""
    slop = _point_data(a, b, c)[:, 17]
    tracemalloc.start()
    try:
        RayGrid(a, b, c, slop)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_one_huge_tilted_triangle_does_not_multiply_the_grids_build_memory():
    """100,000 small triangles in a 100-unit cube, and the same with one triangle across
    the whole cube, tilted (its box is every cell). The build takes the (triangle, cell)
    pairs a slice of rows at a time, but a row's box is never cut: the big triangle's
    million cells go through the separating-axis test at once, some 300 bytes each
    (measured: peak 75 MB -> 312 MB here; at 300,000 triangles 246 MB -> 1.1 GB)."""
    rng = np.random.default_rng(0)
    m = 100_000
    a = rng.uniform(0, 100, (m, 3))
    b = a + rng.normal(size=(m, 3)) * 0.3
    c = a + rng.normal(size=(m, 3)) * 0.3
    plain = build_peak(a, b, c)
    big = [np.array([[0.0, 0, 0]]), np.array([[100.0, 0, 100]]), np.array([[0.0, 100, 50]])]
    a, b, c = (np.concatenate([v, w]) for v, w in zip((a, b, c), big))
    with_big = build_peak(a, b, c)
    assert with_big < 2 * plain, f"{plain / 1e6:.0f} MB -> {with_big / 1e6:.0f} MB"
