"""The query geometry layer (no panda3d): the index's segment descent against brute force,
the point kernel against the full kernel at radius 0 (the same hits, and more only within
the seam slop), and a batch's blocked, piecewise first hits against every hit of every
cast.

Strongest predicates: equality of pair sets with an exhaustive slab test of every (segment,
padded box) pair; the point kernel's hits, times and normals equal to the sphere kernel's
(to rounding) on random rows; a watertight seam (a ray aimed at a shared edge hits one of
the two triangles); ``World.first`` equal to ``closest`` of ``World.cast`` for every cast.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import shared_edges

from panda3d_ccd import _index, _queries
from panda3d_ccd._pieces import TRIANGLE, Pieces
from panda3d_ccd._queries import PieceRows, PlaneRows, SphereRows, World, closest
from panda3d_ccd._tolerance import DIST_REL_EPS, SEAM_REL
from panda3d_ccd.broadphase import StaticIndex
from panda3d_ccd.sweep.sphere_triangle import _point_data, _point_sweep, _sweep

FULL = 0xFFFFFFFF


def brute_segments(p0, p1, reach, lo, hi):
    """(i, k) of every segment that comes within reach of a padded box: the slab test on
    every pair, from the definitions (boxes padded by DIST_REL_EPS times their largest
    coordinate, segments by their reach and their own largest coordinate)."""
    scale = np.maximum(np.abs(lo).max(axis=1), np.abs(hi).max(axis=1))
    lo = lo - DIST_REL_EPS * scale[:, None]
    hi = hi + DIST_REL_EPS * scale[:, None]
    qscale = np.maximum(np.abs(p0).max(axis=1), np.abs(p1).max(axis=1))
    grow = reach + DIST_REL_EPS * np.maximum(qscale, reach)
    d = p1 - p0
    near = np.zeros((len(p0), len(lo)))
    far = np.ones((len(p0), len(lo)))
    for axis in range(3):
        o = p0[:, axis, None]
        a = lo[None, :, axis] - grow[:, None] - o
        b = hi[None, :, axis] + grow[:, None] - o
        v = d[:, axis, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = a / v, b / v
        still = v == 0
        inside = (a <= 0) & (b >= 0)
        lo_t = np.where(still, np.where(inside, -np.inf, np.inf), np.minimum(t1, t2))
        hi_t = np.where(still, np.where(inside, np.inf, -np.inf), np.maximum(t1, t2))
        near, far = np.maximum(near, lo_t), np.minimum(far, hi_t)
    i, k = np.nonzero(near <= far)
    return i.tolist(), k.tolist()


def listed(pairs):
    return pairs[0].tolist(), pairs[1].tolist()


def soup(rng, m, span=40.0):
    a = rng.uniform(-span, span, (m, 3))
    size = rng.choice([0.0, 0.3, 2.0, 15.0], size=(m, 1))
    return a, a + size * rng.normal(size=(m, 3)), a + size * rng.normal(size=(m, 3))


def segments(rng, n, span=50.0):
    p0 = rng.uniform(-span, span, (n, 3))
    length = rng.choice([0.0, 1.0, 10.0, 100.0], size=(n, 1))
    p1 = p0 + length * rng.normal(size=(n, 3))
    # Rows along an axis (a zero component: the slab of a still axis) and of no length.
    p1[: n // 8, 1:] = p0[: n // 8, 1:]
    p1[n // 8 : n // 4] = p0[n // 8 : n // 4]
    return p0, p1


# ------------------------------------------------------------------ the segment descent


@pytest.mark.parametrize("leaf", [1, 2, 4])
@pytest.mark.parametrize("seed", range(4))
def test_segment_pairs_equal_brute_force(leaf, seed):
    rng = np.random.default_rng(seed)
    a, b, c = soup(rng, int(rng.integers(1, 400)))
    p0, p1 = segments(rng, 80)
    reach = rng.choice([0.0, 0.5, 3.0], size=80)
    with mock.patch.object(_index, "_LEAF", leaf):
        index = StaticIndex.of_triangles(a, b, c)
        got = index.segment_pairs(p0, p1, reach)
        lone = [index._segment_one(p0[j], p1[j], reach[j], FULL).tolist() for j in range(80)]
    lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    want = brute_segments(p0, p1, reach, lo, hi)
    assert listed(got) == want
    assert len(want[0]) > 0
    for j in range(80):  # one segment alone: its own descent, the same items
        assert lone[j] == [k for i, k in zip(*want) if i == j]


@settings(max_examples=30, deadline=None)
@given(
    items=st.integers(1, 200),
    n=st.integers(1, 40),
    masks=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_segment_pairs_with_masks_equal_brute_force(items, n, masks, seed):
    rng = np.random.default_rng(seed)
    a, b, c = soup(rng, items, span=10.0)
    p0, p1 = segments(rng, n, span=12.0)
    imask = rng.choice([1, 2, 3, 4], size=items) if masks else None
    qmask = rng.choice([1, 2, 6], size=n) if masks else None
    index = StaticIndex.of_triangles(a, b, c, imask)
    got = listed(index.segment_pairs(p0, p1, 0.25, qmask))
    lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    i, k = brute_segments(p0, p1, np.full(n, 0.25), lo, hi)
    if masks:
        keep = [(qmask[q] & imask[t]) != 0 for q, t in zip(i, k)]
        i = [q for q, ok in zip(i, keep) if ok]
        k = [t for t, ok in zip(k, keep) if ok]
    assert got == (i, k)
    for j in range(n):
        qm = FULL if qmask is None else int(qmask[j])
        assert index._segment_one(p0[j], p1[j], 0.25, qm).tolist() == [
            t for q, t in zip(i, k) if q == j
        ]


def test_a_long_diagonal_ray_meets_only_what_it_passes():
    """The slab test, not the ray's box: a diagonal across a grid of small boxes meets the
    diagonal's boxes, where its box holds them all."""
    g = np.arange(20.0)
    x, y = np.meshgrid(g, g, indexing="ij")
    lo = np.stack([x.ravel(), y.ravel(), np.zeros(400)], axis=1)
    index = StaticIndex(lo, lo + [0.5, 0.5, 0.5])
    i, k = index.segment_pairs([[0.25, 0.25, 0.25]], [[19.25, 19.25, 0.25]])
    assert sorted(k.tolist()) == [21 * j for j in range(20)]  # (j, j) is item 20 j + j


def test_segment_pairs_bad_input_names_the_argument():
    index = StaticIndex.of_triangles([[0.0, 0, 0]], [[1.0, 0, 0]], [[0.0, 1, 0]])
    with pytest.raises(ValueError, match="p0 must be finite"):
        index.segment_pairs([[np.nan, 0, 0]], [[0.0, 0, 0]])
    with pytest.raises(ValueError, match="p1 must have the same shape"):
        index.segment_pairs([[0.0, 0, 0]], [[0.0, 0, 0], [1, 1, 1]])
    with pytest.raises(ValueError, match="reach must be finite and >= 0"):
        index.segment_pairs([[0.0, 0, 0]], [[0.0, 0, 1]], -1.0)


# ------------------------------------------------------------------ the point kernel


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([1.0, 100.0, 1e4]))
def test_point_kernel_finds_what_the_sphere_kernel_finds_at_radius_0(seed, scale):
    rng = np.random.default_rng(seed)
    n = 4000
    a, b, c = (rng.normal(size=(n, 3)) * scale for _ in range(3))
    c0 = rng.normal(size=(n, 3)) * 2 * scale
    c1 = rng.normal(size=(n, 3)) * 2 * scale
    two = rng.random(n) < 0.3
    data = _point_data(a, b, c, two)
    fast = _point_sweep(c0, c1, data)
    full = _sweep(c0, c1, np.zeros(n), a, b, c, two)
    hit = np.isfinite(full.t)
    assert hit.sum() > 0
    # Every hit of the full kernel, and more only within the seam slop: a ray that passes
    # outside an edge by at most SEAM_REL of the triangle's size (times the sine of their
    # angle) also hits.
    assert np.all(np.isfinite(fast.t)[hit])
    extra = np.flatnonzero(np.isfinite(fast.t) & ~hit)
    if len(extra):
        # Where it crosses the plane, the ray is outside an edge by at most the slop.
        outside = _outside(fast.point[extra], a[extra], b[extra], c[extra])
        size = np.abs(np.stack([a[extra], b[extra], c[extra]])).max(axis=(0, 2))
        assert np.all(outside <= SEAM_REL * size * (1 + 1e-9))
    assert len(extra) <= n // 1000
    both = np.isfinite(fast.t) & hit
    assert np.allclose(fast.t[both], full.t[both], rtol=0, atol=1e-12)
    assert np.allclose(fast.normal[both], full.normal[both], atol=1e-12)
    assert np.allclose(fast.point[both], full.point[both], rtol=0, atol=1e-12 * scale)
    assert np.all(fast.feature[both] == 0)


def _outside(p, a, b, c):
    """(n,) how far points p lie outside triangles a, b, c in their planes (0 inside)."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    worst = np.zeros(len(p))
    for u, v in ((a, b), (b, c), (c, a)):
        inward = np.cross(n, v - u)
        inward /= np.linalg.norm(inward, axis=1)[:, None]
        worst = np.maximum(worst, -np.einsum("ij,ij->i", p - u, inward))
    return worst


def test_point_kernel_is_watertight_along_a_shared_edge():
    """A ray aimed at an edge two triangles share, at random (not round) coordinates, hits
    one of them at least: from the front of both, or from behind both where two-sided."""
    n = 20000
    first, second, c0, c1, front, behind = shared_edges(np.random.default_rng(11), n, 500.0)
    assert front.sum() > n // 2
    # Two-sided, from behind both as well. (A ray in front of one and behind the other
    # sees them folded over each other: at their edge it grazes a ridge, and within
    # rounding may pass it, as it may pass any silhouette.)
    for two, rows in ((False, front), (True, front | behind)):
        t1 = _point_sweep(c0, c1, _point_data(*first, two)).t
        t2 = _point_sweep(c0, c1, _point_data(*second, two)).t
        lost = rows & ~np.isfinite(t1) & ~np.isfinite(t2)
        assert lost.sum() == 0


def test_point_kernel_one_sided_and_two_sided():
    a, b, c = np.array([[0.0, 0, 0]]), np.array([[2.0, 0, 0]]), np.array([[0.0, 2, 0]])
    down = (np.array([[0.5, 0.5, 1.0]]), np.array([[0.5, 0.5, -3.0]]))
    up = (down[1], down[0])
    one, two = _point_data(a, b, c, False), _point_data(a, b, c, True)
    got = _point_sweep(*down, one)
    assert got.t.tolist() == [0.25] and got.normal.tolist() == [[0.0, 0.0, 1.0]]
    assert got.point.tolist() == [[0.5, 0.5, 0.0]]
    assert _point_sweep(*up, one).t.tolist() == [np.inf]
    back = _point_sweep(*up, two)
    assert back.t.tolist() == [0.75] and back.normal.tolist() == [[0.0, 0.0, -1.0]]
    # Along the plane (a graze) and short of it: nothing.
    assert _point_sweep(np.array([[-1.0, 0.5, 0]]), np.array([[3.0, 0.5, 0]]), two).t[0] == np.inf
    assert _point_sweep(down[0], np.array([[0.5, 0.5, 0.5]]), one).t[0] == np.inf


# ------------------------------------------------------------------ a batch's first hits


def world_of(rng):
    a, b, c = soup(rng, 600, span=30.0)
    two = rng.random(600) < 0.3
    m = len(a)
    table = Pieces(TRIANGLE, (a, b, c, two), np.full(m, FULL, np.int64))
    nodes = rng.integers(0, 5, m)
    centers = rng.uniform(-30, 30, (40, 3))
    spheres = SphereRows(centers, rng.uniform(0.2, 2.0, 40), np.full(40, FULL, np.int64),
                         np.zeros(40, bool), 5 + np.arange(40))  # fmt: skip
    planes = PlaneRows(np.array([[0.0, 0.0, 1.0]]), np.array([35.0]), np.array([FULL]),
                       np.zeros(1, bool), np.array([45]))  # fmt: skip
    rows = PieceRows(table, nodes, np.arange(m), np.zeros(m, np.int64))
    return World([spheres], planes, [rows])


@pytest.mark.parametrize("radius", [0.0, 0.4])
def test_first_equals_the_closest_of_every_hit(radius):
    """Blocks of nearby starts and pieces along each cast (made small here, so that casts
    cross many) give each cast the hit the whole cast's closest would."""
    rng = np.random.default_rng(5)
    world = world_of(rng)
    k = 1500
    p0 = rng.uniform(-30, 30, (k, 3))
    p1 = p0 + rng.normal(size=(k, 3)) * rng.choice([1.0, 20.0, 80.0], size=(k, 1))
    r = np.full(k, radius)
    mask = np.full(k, FULL, np.int64)
    dead = np.zeros(46, bool)
    every = world.cast(p0, p1, r, mask, True)
    best = closest(every, k)
    with mock.patch.object(_queries, "_BLOCK", 200), mock.patch.object(
        _queries, "_FIRST_PIECE", 0.5
    ):
        first = world.first(p0, p1, r, mask, True, dead)
    t = np.full(k, np.inf)
    t[first.query] = first.t
    want = np.where(best >= 0, every.t[np.maximum(best, 0)], np.inf)
    assert np.array_equal(np.isfinite(t), np.isfinite(want))
    assert np.allclose(t[np.isfinite(t)], want[np.isfinite(want)], rtol=0, atol=1e-9)
    assert np.isfinite(t).sum() > k // 4
    assert len(np.unique(first.query)) == len(first.query)
    # A dead node is passed over: the next hit behind it comes instead.
    dead[:5] = True
    alive = world.first(p0, p1, r, mask, True, dead)
    assert not np.isin(alive.node, np.arange(5)).any()
    keep = ~np.isin(every.node, np.arange(5))
    rest = closest(type(every)(*(col[keep] for col in every)), k)
    assert np.array_equal(np.sort(alive.query), np.flatnonzero(rest >= 0))
