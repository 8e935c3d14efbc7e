"""The ray grid (no panda3d): many rays walking a uniform grid of a static mesh get each
ray's first hit exactly as the point kernel tested on every (ray, triangle) pair gives it
(a sliver's within a few seam slops of its box: the kernel's slop grows a sliver along
its length by its length over its width).

Strongest predicates: the grid's (t, triangle) per ray equal, bit for bit, to the closest
of the point kernel's hits over every pair (ties to the lower tie key, then triangle), on
random soups (degenerate triangles, slivers, huge triangles), a terrain of shared edges,
and rays along the cells' walls, parallel to the axes, starting outside the grid, of no
length, long enough for many windows; the column kernel equal, bit for bit, to the row
kernel; ``World.first`` on the grid equal to ``closest`` of ``World.cast`` (the tree) with
masks per ray, sensors, removed nodes, a hit the single cast's box rule passes over, and
rays too far out to walk.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panda3d_ccd import _raygrid
from panda3d_ccd._pieces import TRIANGLE, Pieces
from panda3d_ccd._queries import PieceRows, World, closest
from panda3d_ccd._raygrid import RayGrid
from panda3d_ccd._tolerance import SEAM_REL
from panda3d_ccd.sweep import sphere_triangle
from panda3d_ccd.sweep.sphere_triangle import (
    _point_contacts,
    _point_data,
    _point_hits,
    _point_times,
)

FULL = 0xFFFFFFFF


def brute_first(p0, p1, data, tie, a, b, c):
    """(n,) t and triangle of each ray's first hit by the point kernel over every pair
    (inf, -1 where none); ties to the lower (tie, triangle). A sliver's hits count within
    _REACH seam slops of the mesh around its box only (where the grid follows it)."""
    n, m = len(p0), len(data)
    q, k = np.divmod(np.arange(n * m), m)
    rows, hits = _point_hits(p0[q], p1[q], data[k])
    q, k = q[rows], k[rows]
    keep = counted(a, b, c, data)(k, hits.point)
    q, k, hits = q[keep], k[keep], type(hits)(*(col[keep] for col in hits))
    t = np.full(n, np.inf)
    item = np.full(n, -1)
    order = np.lexsort((k, tie[k], hits.t, q))
    lead = np.ones(len(order), bool)
    lead[1:] = q[order][1:] != q[order][:-1]
    t[q[order[lead]]] = hits.t[order[lead]]
    item[q[order[lead]]] = k[order[lead]]
    return t, item


def counted(a, b, c, data):
    """Whether the hits (at points (p, 3)) on triangles k (p,) count: all but a sliver's
    beyond _REACH seam slops of the mesh around its box. (The grid follows a sliver that
    far, and may list it farther, in a coarse cell; a single cast passes over such a hit,
    as the queries' box test does.)"""
    lo = np.minimum(np.minimum(a, b), c)
    hi = np.maximum(np.maximum(a, b), c)
    reach = _raygrid._REACH * SEAM_REL * max(np.abs(lo).max(), np.abs(hi).max())
    _corners, grow, _ok = _raygrid._grown(a, b, c, data[:, 17])

    def keep(k, point):
        near = np.all((point >= lo[k] - reach) & (point <= hi[k] + reach), axis=1)
        return near | (grow[k] <= 2.0)

    return keep


def grid_first(a, b, c, two, p0, p1, tie):
    data = _point_data(a, b, c, two)
    grid = RayGrid(a, b, c, data[:, 17])
    columns = np.ascontiguousarray(data.T)
    origin = np.ascontiguousarray(p0.T)
    direction = np.ascontiguousarray((p1 - p0).T)
    keep = counted(a, b, c, data)

    def hits(q, i):
        at, t = _point_times(origin, direction, columns, q, i)
        q, i = q[at], i[at]
        ok = keep(i, p0[q] + t[:, None] * (p1 - p0)[q])
        return at[ok], t[ok]

    t, item = grid.first(p0, p1, hits, tie)
    return (t, item), brute_first(p0, p1, data, tie, a, b, c), grid


def soup(rng, m, span=30.0):
    a = rng.uniform(-span, span, (m, 3))
    size = rng.choice([0.0, 0.3, 2.0, 15.0, 80.0], size=(m, 1))
    b = a + size * rng.normal(size=(m, 3))
    c = a + size * rng.normal(size=(m, 3))
    # Slivers: c almost on the line a-b.
    sliver = rng.random(m) < 0.1
    c[sliver] = a[sliver] + (b - a)[sliver] * rng.random((sliver.sum(), 1)) + 1e-7
    return a, b, c


def terrain(rng, cells=12, cell=1.7):
    """Two triangles per square of a height field: every inner edge shared."""
    x, y = np.meshgrid(np.arange(cells + 1) * cell, np.arange(cells + 1) * cell, indexing="ij")
    z = rng.uniform(-1, 1, x.shape)
    p = np.stack([x, y, z], axis=-1)
    v00, v10, v01, v11 = p[:-1, :-1], p[1:, :-1], p[:-1, 1:], p[1:, 1:]
    # Each square cut along its diagonal v00-v11, both halves facing up.
    a = np.concatenate([v00, v00]).reshape(-1, 3)
    b = np.concatenate([v10, v11]).reshape(-1, 3)
    c = np.concatenate([v11, v01]).reshape(-1, 3)
    return a, b, c


def rays(rng, n, span, grid=None):
    p0 = rng.uniform(-span, span, (n, 3))
    length = rng.choice([0.0, 1.0, 10.0, 4 * span], size=(n, 1))
    p1 = p0 + length * rng.normal(size=(n, 3))
    s = n // 8
    p1[:s, 1:] = p0[:s, 1:]  # along x
    p1[s : 2 * s, :2] = p0[s : 2 * s, :2]  # along z
    p1[2 * s : 3 * s] = p0[2 * s : 3 * s]  # no length
    # From far outside the mesh's box, through it.
    p0[3 * s : 4 * s] = rng.normal(size=(s, 3)) * 10 * span
    p1[3 * s : 4 * s] = -p0[3 * s : 4 * s]
    if grid is not None:
        # On the cells' walls: a coordinate (two for some) on a wall, moving along it.
        walls = grid.origin + grid.h * rng.integers(0, grid.dims, (s, 3))
        rows = np.arange(4 * s, 5 * s)
        p0[rows, 0] = p1[rows, 0] = walls[:, 0]
        p0[rows[::2], 1] = p1[rows[::2], 1] = walls[::2, 1]
    return p0, p1


def assert_same(got, want):
    (t, item), (t_want, item_want) = got, want
    assert np.array_equal(t, t_want)
    assert np.array_equal(item, item_want)


# ------------------------------------------------------------------ the grid


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([1.0, 1e-3, 300.0]))
def test_the_grid_gives_every_rays_first_hit_of_the_kernel_over_every_pair(seed, scale):
    rng = np.random.default_rng(seed)
    a, b, c = (v * scale for v in soup(rng, 300))
    two = rng.random(300) < 0.3
    grid = RayGrid(a, b, c, _point_data(a, b, c, two)[:, 17])
    p0, p1 = rays(rng, 400, 30.0 * scale, grid)
    tie = rng.integers(0, 4, 300)
    got, want, _grid = grid_first(a, b, c, two, p0, p1, tie)
    assert_same(got, want)
    assert np.isfinite(want[0]).sum() > 20


def test_rays_down_a_terrain_of_shared_edges_hit_as_every_pair_does():
    """Aimed at vertices and edges (the seams), and straight down along the cells' walls:
    the same hit as the kernel over every pair, and never a fall through the surface."""
    rng = np.random.default_rng(3)
    a, b, c = terrain(rng)
    m = len(a)
    two = np.zeros(m, bool)
    grid = RayGrid(a, b, c, _point_data(a, b, c, two)[:, 17])
    corners = np.concatenate([a, b, c])
    target = np.concatenate([corners, 0.5 * (a + b), 0.5 * (b + c), 0.5 * (c + a)])
    target = target[(target[:, 0] > 0) & (target[:, 0] < 12 * 1.7)
                    & (target[:, 1] > 0) & (target[:, 1] < 12 * 1.7)]  # fmt: skip
    up = rng.normal(size=(len(target), 3)) * [0.3, 0.3, 0.0] + [0.0, 0.0, 1.0]
    p0 = target + 5.0 * up
    p1 = target - 5.0 * up
    got, want, _grid = grid_first(a, b, c, two, p0, p1, np.zeros(m, np.int64))
    assert_same(got, want)
    assert np.isfinite(got[0]).all()
    # Straight down along the cells' walls.
    walls = grid.origin + grid.h * np.arange(1, grid.dims[0] - 1)[:, None]
    x, y = np.meshgrid(walls[:, 0], np.linspace(0.1, 20.3, 7))
    p0 = np.stack([x.ravel(), y.ravel(), np.full(x.size, 9.0)], axis=1)
    p1 = p0 - [0.0, 0.0, 20.0]
    inside = (p0[:, 0] > 0) & (p0[:, 0] < 12 * 1.7)
    got, want, _grid = grid_first(a, b, c, two, p0, p1, np.zeros(m, np.int64))
    assert_same(got, want)
    assert np.isfinite(got[0][inside]).all()


def test_an_empty_or_degenerate_mesh_is_never_hit():
    rng = np.random.default_rng(1)
    p0, p1 = rays(rng, 64, 10.0)
    for a in (np.zeros((0, 3)), rng.integers(-5, 5, (5, 3)).astype(np.float64)):
        b = a + 1.0  # zero-area triangles: a, b, c on a line
        c = a + 2.0
        grid = RayGrid(a, b, c, np.full(len(a), 1e-3))
        assert grid.pairs == 0
        t, item = grid.first(p0, p1, lambda q, i: (np.zeros(0, np.int64), np.zeros(0)),
                             np.zeros(len(a), np.int64))  # fmt: skip
        assert np.all(np.isinf(t)) and np.all(item == -1)


def test_a_huge_triangle_and_many_small_ones_share_the_grid():
    """One triangle spans the whole mesh (the bottom of a level): it is listed in the cells
    its plane crosses only, and every ray down reaches it where nothing else is."""
    rng = np.random.default_rng(7)
    a, b, c = terrain(rng, cells=20, cell=1.0)
    big = np.array([[-5.0, -5, -3]]), np.array([[100.0, -5, -3]]), np.array([[-5.0, 100, -3]])
    a, b, c = (np.concatenate([v, w]) for v, w in zip((a, b, c), big))
    m = len(a)
    two = np.zeros(m, bool)
    p0 = np.column_stack([rng.uniform(-4, 40, 500), rng.uniform(-4, 40, 500), np.full(500, 5.0)])
    p1 = p0 - [0.0, 0.0, 10.0]
    got, want, grid = grid_first(a, b, c, two, p0, p1, np.zeros(m, np.int64))
    assert_same(got, want)
    assert np.isfinite(got[0]).all()
    assert np.all(got[1][(p0[:, 0] > 21) | (p0[:, 1] > 21)] == m - 1)
    assert grid.pairs < 8 * m


# ------------------------------------------------------------------ the column kernel


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_the_column_kernel_is_the_row_kernel_bit_for_bit(seed):
    """Against the plain-Python row kernel (_point_rows), an implementation of its own;
    _point_hits, the numpy row form, is the column kernel (checked here too)."""
    rng = np.random.default_rng(seed)
    m, n, p = 200, 300, 5000
    a, b, c = soup(rng, m, span=3.0)
    data = _point_data(a, b, c, rng.random(m) < 0.4)
    p0 = rng.normal(size=(n, 3)) * 4
    p1 = rng.normal(size=(n, 3)) * 4
    q = rng.integers(0, n, p)
    k = rng.integers(0, m, p)
    rows, want = sphere_triangle._point_rows(p0[q], p1[q], data[k])
    numpy_rows, numpy_rows_hits = _point_hits(p0[q], p1[q], data[k])
    assert np.array_equal(numpy_rows, rows)
    for got_col, want_col in zip(numpy_rows_hits, want):
        assert np.array_equal(got_col, want_col)
    origin, direction = np.ascontiguousarray(p0.T), np.ascontiguousarray((p1 - p0).T)
    columns = np.ascontiguousarray(data.T)
    with mock.patch.object(sphere_triangle, "_POINT_CHUNK", 700):  # slices too
        at, t = _point_times(origin, direction, columns, q, k)
    assert len(rows) > 50
    assert np.array_equal(at, rows)
    assert np.array_equal(t, want.t)
    got = _point_contacts(origin, direction, columns, q[at], k[at], t)
    assert np.array_equal(got.point, want.point)
    assert np.array_equal(got.normal, want.normal)
    assert np.array_equal(got.feature, want.feature)


# ------------------------------------------------------------------ a batch on the grid


def level(rng, m=500):
    a, b, c = soup(rng, m, span=20.0)
    two = rng.random(m) < 0.3
    mask = np.where(rng.random(m) < 0.5, 1, 2).astype(np.int64)
    sensor = rng.random(m) < 0.1
    table = Pieces(TRIANGLE, (a, b, c, two), mask, sensor=sensor)
    node = rng.integers(0, 6, m)
    return World([], None, [PieceRows(table, node, np.zeros(m, np.int64), np.arange(m))])


def assert_first_is_closest_of_cast(world, p0, p1, mask, sensors, dead, exact=True):
    """World.first on the grid against closest() of World.cast: equal (``exact``), or to
    rounding where rays go another way (in pieces along their length)."""
    k = len(p0)
    r = np.zeros(k)
    every = world.cast(p0, p1, r, mask, sensors)
    keep = ~dead[every.node]
    every = type(every)(*(col[keep] for col in every))
    best = closest(every, k)
    first = world.first(p0, p1, r, mask, sensors, dead)
    assert len(np.unique(first.query)) == len(first.query)
    t = np.full(k, np.inf)
    t[first.query] = first.t
    want = np.where(best >= 0, every.t[np.maximum(best, 0)], np.inf)
    rows = best[first.query]
    if exact:
        assert np.array_equal(t, want)
        for got, col in zip(first[2:], every[2:]):
            assert np.array_equal(got, col[rows])
    else:
        assert np.array_equal(np.isfinite(t), np.isfinite(want))
        assert np.allclose(t[np.isfinite(t)], want[np.isfinite(want)], rtol=1e-12, atol=0)
        # A point p0 + t d of a ray from far out rounds as its coordinates do.
        scale = np.abs(np.concatenate([p0, p1], axis=1)).max(axis=1)[first.query]
        assert np.all(np.abs(first.point - every.point[rows]) <= 1e-14 * scale[:, None])
        for got, col in zip(first[4:], every[4:]):
            assert np.array_equal(got, col[rows])
    return first


@pytest.mark.parametrize("sensors", [True, False])
def test_a_batch_on_the_grid_is_the_closest_of_every_hit(sensors):
    """Masks that differ by ray, sensors, removed nodes: the grid's first hits are the
    tree's (World.cast: every hit of each whole ray) closest, every column alike."""
    rng = np.random.default_rng(9)
    world = level(rng)
    assert world.pieces[0].table.ray_grid() is not None
    k = 1200
    p0 = rng.uniform(-25, 25, (k, 3))
    p1 = p0 + rng.normal(size=(k, 3)) * rng.choice([2.0, 20.0, 60.0], size=(k, 1))
    mask = rng.choice([1, 2, 3], k).astype(np.int64)
    dead = np.zeros(6, bool)
    first = assert_first_is_closest_of_cast(world, p0, p1, mask, sensors, dead)
    assert len(first.query) > k // 4
    dead[[1, 4]] = True
    first = assert_first_is_closest_of_cast(world, p0, p1, np.full(k, 3, np.int64), sensors, dead)
    assert not np.isin(first.node, [1, 4]).any()


def test_a_hit_past_a_slivers_box_is_passed_over_as_a_single_cast_does():
    """The point kernel hits a thin triangle a little past its sharp corner (within the
    seam slop of both long edges); a single cast never asks it there (the ray misses its
    box by more than its own slop). The batch passes over that hit too, and finds the
    floor behind it."""
    a = np.array([[0.0, 0, 0], [-50.0, -50, -1]])
    b = np.array([[10.0, -0.1, 0], [50.0, -50, -1]])
    c = np.array([[10.0, 0.1, 0], [0.0, 50, -1]])
    m = 2
    table = Pieces(TRIANGLE, (a, b, c, np.zeros(m, bool)), np.full(m, FULL, np.int64))
    world = World([], None, [PieceRows(table, np.arange(m), np.zeros(m, np.int64), np.arange(m))])
    k = 300
    x = np.where(np.arange(k) % 2 == 0, -0.02, 5.0)
    p0 = np.column_stack([x, np.zeros(k), np.full(k, 1.0)])
    p1 = p0 - [0.0, 0.0, 3.0]
    data = table.point_data()
    kernel = _point_hits(p0[:1], p1[:1], data[:1])[0]
    assert kernel.tolist() == [0]  # the kernel alone hits the sliver past its corner
    first = assert_first_is_closest_of_cast(world, p0, p1, np.full(k, FULL, np.int64), True,
                                            np.zeros(m, bool))  # fmt: skip
    node = np.full(k, -1)
    node[first.query] = first.node
    assert np.all(node[::2] == 1) and np.all(node[1::2] == 0)


def test_rays_too_far_out_to_walk_are_cast_against_the_tree():
    rng = np.random.default_rng(4)
    world = level(rng)
    k = 400
    p0 = rng.normal(size=(k, 3))
    p0 /= np.linalg.norm(p0, axis=1)[:, None]
    p0[: k // 2] *= 1e9  # far beyond the grid's reach: the other way
    p0[k // 2 :] *= 40.0
    p1 = rng.uniform(-10, 10, (k, 3))
    grid = world.pieces[0].table.ray_grid()[0]
    scale = np.abs(np.concatenate([p0, p1], axis=1)).max(axis=1)
    assert (~grid.walkable(scale)).sum() == k // 2
    first = assert_first_is_closest_of_cast(world, p0, p1, np.full(k, 3, np.int64), True,
                                            np.zeros(6, bool), exact=False)  # fmt: skip
    assert np.isin(first.query, np.arange(k // 2)).sum() > 20


@pytest.mark.parametrize("scale", [1e-60, 1e-5, 1e5, 1e60])
@pytest.mark.parametrize("walks", [True, False])
def test_meshes_at_extreme_scales_are_hit_as_the_tree_hits_them(scale, walks):
    """At any scale the point kernel works at, the rays walk the grid and hit as the tree
    does; a mesh beyond the grid's range of scales (made so here by narrowing it) gets an
    empty grid, and every ray is cast against the tree instead."""
    rng = np.random.default_rng(12)
    a, b, c = (v * scale for v in terrain(rng, cells=10, cell=1.0))
    m = len(a)
    table = Pieces(TRIANGLE, (a, b, c, np.zeros(m, bool)), np.full(m, FULL, np.int64))
    world = World([], None, [PieceRows(table, np.arange(m), np.zeros(m, np.int64), np.arange(m))])
    scales = _raygrid._SCALES if walks else (2 * _raygrid._SCALES[1], np.inf)
    with mock.patch.object(_raygrid, "_SCALES", scales):
        grid = table.ray_grid()[0]
    assert (grid.pairs > 0) == walks
    k = 300
    p0 = np.column_stack([rng.uniform(0.5, 9.5, (k, 2)), np.full(k, 4.0)]) * scale
    p1 = p0 - np.array([0.0, 0.0, 8.0]) * scale
    assert grid.walkable(np.abs(np.concatenate([p0, p1], axis=1)).max(axis=1)).all() == walks
    first = assert_first_is_closest_of_cast(world, p0, p1, np.full(k, FULL, np.int64), True,
                                            np.zeros(m, bool), exact=walks)  # fmt: skip
    assert len(first.query) == k
