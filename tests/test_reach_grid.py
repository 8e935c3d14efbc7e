"""The static index's reach grid (what a level's index answers the solver's segment queries
with) against brute force.

Strongest predicate: equality. Whatever path a segment takes (the grid's cells, the few big
items tested against everyone, the tree of many big items, the tree for a reach past the
grid's or a segment too far out), the pairs are exactly those of an exhaustive slab test of
every (segment, padded box) pair (``brute_segments``, from the definitions), each once,
sorted; rows not split are exactly those of their swept boxes.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_query_geometry import brute_segments, segments, soup
from test_ray_grid_adversarial import diagonal_rays, floor_triangles
from test_static_index import MESHES, brute_spheres, terrain, triangle_boxes

from panda3d_ccd import _index, _reachgrid
from panda3d_ccd.broadphase import StaticIndex

FULL = 0xFFFFFFFF


@pytest.fixture(autouse=True)
def every_index_has_a_grid(monkeypatch):
    """These soups are small (tens to hundreds of items), below the size from which an index
    uses a reach grid (``_GRID_FEWEST``): here every index does, so the grid is what they
    test. (``test_a_small_index_answers_by_its_tree`` tests the default.)"""
    monkeypatch.setattr(_index, "_GRID_FEWEST", 0)


def grid_pairs(index, p0, p1, reach, from_mask=None):
    """The index's segment pairs through its reach grid (as the solver asks a level's)."""
    n = len(p0)
    fm = np.full(n, FULL, np.int64) if from_mask is None else np.asarray(from_mask, np.int64)
    i, k = index._segment_pairs(p0, p1, np.broadcast_to(reach, (n,)).astype(float), fm, True)
    assert i.dtype == np.int64 and k.dtype == np.int64
    return i.tolist(), k.tolist()


def walked(index, p0, p1, reach):
    """:func:`grid_pairs`, and how many segments walked the reach grid."""
    rows = []
    candidates = _reachgrid.ReachGrid.candidates

    def spy(grid, a, b):
        rows.append(len(a))
        return candidates(grid, a, b)

    with mock.patch.object(_reachgrid.ReachGrid, "candidates", spy):
        pairs = grid_pairs(index, p0, p1, reach)
    return pairs, sum(rows)


def masked(pairs, qmask, imask):
    i, k = pairs
    keep = [(int(qmask[q]) & int(imask[t])) != 0 for q, t in zip(i, k)]
    return [q for q, ok in zip(i, keep) if ok], [t for t, ok in zip(k, keep) if ok]


@pytest.mark.parametrize("seed", range(4))
def test_soups_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    a, b, c = soup(rng, int(rng.integers(50, 600)))
    p0, p1 = segments(rng, 120)
    # 3.0 is past the grid's largest reach on most soups: those rows descend the tree.
    reach = rng.choice([0.0, 0.25, 0.5, 3.0], size=120)
    index = StaticIndex.of_triangles(a, b, c)
    got, walks = walked(index, p0, p1, reach)
    tree = reach > index._grid[0].reach
    assert 0 < walks == 120 - tree.sum()
    want = brute_segments(p0, p1, reach, *triangle_boxes(a, b, c))
    assert got == want
    assert len(want[0]) > 0


@pytest.mark.parametrize("kind", sorted(MESHES))
@pytest.mark.parametrize("seed", range(2))
def test_awkward_meshes_equal_brute_force(kind, seed):
    """Walls (flat boxes), slivers, huge triangles over everything, all in one place."""
    rng = np.random.default_rng(seed)
    a, b, c = MESHES[kind](rng, 300)
    p0, p1 = segments(rng, 100, span=15.0)
    index = StaticIndex.of_triangles(a, b, c)
    reach = rng.choice([0.0, 0.1, 0.5], size=100)
    assert grid_pairs(index, p0, p1, reach) == brute_segments(
        p0, p1, reach, *triangle_boxes(a, b, c)
    )


@pytest.mark.parametrize("seed", range(3))
def test_masks_need_a_common_bit(seed):
    rng = np.random.default_rng(seed)
    a, b, c = soup(rng, 300, span=15.0)
    imask = rng.choice([1, 2, 3, 4], size=300)
    qmask = rng.choice([1, 2, 6], size=90)
    p0, p1 = segments(rng, 90, span=20.0)
    index = StaticIndex.of_triangles(a, b, c, imask)
    want = masked(brute_segments(p0, p1, np.full(90, 0.5), *triangle_boxes(a, b, c)),
                  qmask, imask)  # fmt: skip
    assert grid_pairs(index, p0, p1, 0.5, qmask) == want
    assert len(want[0]) > 0


def test_segments_along_cell_walls_edges_and_corners():
    """Segments lying in the planes between cells, along the lines where they meet, ending
    on them, and points on a cell's corner: a cell lost to rounding would lose pairs."""
    a, b, c = terrain(24)
    index = StaticIndex.of_triangles(a, b, c)
    grid_pairs(index, a[:1], a[:1], 0.5)  # builds the grid
    grid = index._grid[0]
    h, o = grid.h, grid.origin
    j = np.arange(1, 12, dtype=float)
    walls = o + h * np.stack([j, j, np.full(11, 2.0)], axis=1)
    p0 = np.concatenate([
        walls,  # corners, as points
        walls, walls * [1, 0, 1] + [0, o[1], 0], walls,
    ])  # fmt: skip
    p1 = np.concatenate([
        walls,
        walls + [0, 5 * h, 0],  # along a line where cells meet
        walls * [1, 0, 1] + [0, o[1], 0] + [0, 20 * h, 0],  # in a wall plane, across
        walls + [3 * h, 3 * h, 0],  # a diagonal from corner to corner
    ])  # fmt: skip
    for reach in (0.0, 0.25, 0.5):
        want = brute_segments(p0, p1, np.full(len(p0), reach), *triangle_boxes(a, b, c))
        assert grid_pairs(index, p0, p1, reach) == want
        assert len(want[0]) > 0


def test_a_larger_reach_rebuilds_the_grid_and_one_past_its_most_asks_the_tree():
    rng = np.random.default_rng(5)
    a, b, c = terrain(30)
    index = StaticIndex.of_triangles(a, b, c)
    p0, p1 = segments(rng, 60, span=20.0)
    p0[:, 2] = p1[:, 2] = 0.5
    boxes = triangle_boxes(a, b, c)
    reaches = []
    most = _index._GRID_MOST * index.item_size
    for reach in (0.1, 0.5, 0.4, 1.5, 0.8 * most, 2.0 * most):
        assert grid_pairs(index, p0, p1, reach) == brute_segments(
            p0, p1, np.full(60, reach), *boxes
        )
        reaches.append(index._grid[0].reach)
    # Each rebuild at least _GRID_GROWTH times the last; none for a smaller reach, nor for
    # one past the most (the tree answers it).
    assert reaches[1] > reaches[0] and reaches[2] == reaches[1]
    assert reaches[3] >= _index._GRID_GROWTH * reaches[2]
    assert 0.8 * most <= reaches[4] <= most and reaches[5] == reaches[4]
    with mock.patch.object(_reachgrid.ReachGrid, "candidates", side_effect=AssertionError):
        # Past the most reach: the grid is not walked.
        assert grid_pairs(index, p0, p1, 2.0 * most) == brute_segments(
            p0, p1, np.full(60, 2.0 * most), *boxes
        )


@pytest.mark.parametrize("most", [1, 8, 64])
def test_big_items_left_out_of_the_grid_are_still_found(most):
    """Items over ``_MOST_CELLS`` cells go to a brute test (up to ``_BRUTE_BIG``) or a tree
    of their own: the same pairs either way."""
    rng = np.random.default_rng(most)
    a, b, c = MESHES["huge"](rng, 400)
    p0, p1 = segments(rng, 100, span=15.0)
    index = StaticIndex.of_triangles(a, b, c)
    with mock.patch.object(_reachgrid, "_MOST_CELLS", most):
        got = grid_pairs(index, p0, p1, 0.5)
    big = len(index._grid[0].big)
    assert big > 0 and (index._grid[1] is None) == (big <= _index._BRUTE_BIG)
    assert got == brute_segments(p0, p1, np.full(100, 0.5), *triangle_boxes(a, b, c))


def test_segments_far_out_and_meshes_at_extreme_scales_ask_the_tree():
    rng = np.random.default_rng(7)
    a, b, c = soup(rng, 200, span=10.0)
    p0, p1 = segments(rng, 40, span=12.0)
    p1[:5] = p0[:5] + [1e6, 0, 0]  # past _FAR times the mesh's scale
    p0[5:8] += 1e9
    for scale in (1.0, 1e-160, 1e160):
        index = StaticIndex.of_triangles(a * scale, b * scale, c * scale)
        q0, q1 = p0 * scale, p1 * scale
        want = brute_segments(q0, q1, np.full(40, 0.3 * scale),
                              *triangle_boxes(a * scale, b * scale, c * scale))  # fmt: skip
        got, walks = walked(index, q0, q1, 0.3 * scale)
        assert got == want
        assert len(want[0]) > 0
        # The 8 far ones never walk; at the extreme scales no segment does.
        assert walks == (32 if scale == 1.0 else 0)


def test_sphere_pairs_split_rows_walk_the_grid_and_the_rest_are_boxed():
    """The solver's call: split rows as segments through the grid, the others (bent paths)
    by their whole swept boxes; still rows and empty masks never."""
    rng = np.random.default_rng(3)
    a, b, c = terrain(40)
    n = 200
    p0 = rng.uniform([0, 0, -1], [40, 40, 3], (n, 3))
    fast = np.arange(n) < 30
    p1 = p0 + rng.normal(size=(n, 3)) * np.where(fast, 25.0, 0.4)[:, None]
    p1[40:50] = p0[40:50]  # stopped bodies: zero-length paths
    reach = np.full(n, 0.5)
    cut = rng.random(n) < 0.8
    moves = rng.random(n) < 0.9
    fm = rng.choice([0, 1, FULL], size=n, p=[0.1, 0.2, 0.7]).astype(np.int64)
    imask = rng.choice([1, 2], size=len(a))
    index = StaticIndex.of_triangles(a, b, c, imask)
    got = index._sphere_pairs(p0, p1, reach, fm, moves, cut, grid=True)
    boxes = triangle_boxes(a, b, c)
    live = moves & (fm != 0)
    seg = np.flatnonzero(cut & live)
    si, sk = masked(brute_segments(p0[seg], p1[seg], reach[seg], *boxes), fm[seg], imask)
    bi, bk = brute_spheres(p0, p1, reach, *boxes, fm, imask, live & ~cut)
    want = sorted(zip([int(seg[q]) for q in si] + bi, sk + bk))
    assert list(zip(*(x.tolist() for x in got))) == want
    assert len(si) > 0 and len(bi) > 0
    # The same answers from the tree alone.
    again = index._sphere_pairs(p0, p1, reach, fm, moves, cut)
    assert [x.tolist() for x in again] == [x.tolist() for x in got]


@settings(max_examples=40, deadline=None)
@given(
    items=st.integers(1, 150),
    n=st.integers(1, 30),
    reach=st.sampled_from([0.0, 0.05, 0.5, 2.0]),
    second=st.sampled_from([0.0, 0.5, 4.0]),
    seed=st.integers(0, 2**16),
)
def test_any_scene_and_query_order_equal_brute_force(items, n, reach, second, seed):
    """A grid built for one reach answers the next query (of another) exactly too."""
    rng = np.random.default_rng(seed)
    a, b, c = soup(rng, items, span=10.0)
    index = StaticIndex.of_triangles(a, b, c)
    boxes = triangle_boxes(a, b, c)
    for r in (reach, second):
        p0, p1 = segments(rng, n, span=12.0)
        assert grid_pairs(index, p0, p1, r) == brute_segments(p0, p1, np.full(n, r), *boxes)


def test_empty_index_and_no_rows_find_nothing():
    empty = StaticIndex(np.zeros((0, 3)), np.zeros((0, 3)))
    p0, p1 = np.zeros((3, 3)), np.ones((3, 3))
    ones = np.full(3, FULL, np.int64)
    got = empty._sphere_pairs(p0, p1, np.ones(3), ones, np.ones(3, bool),
                              np.array([True, False, True]), grid=True)  # fmt: skip
    assert [x.tolist() for x in got] == [[], []]
    a, b, c = terrain(4)
    index = StaticIndex.of_triangles(a, b, c)
    assert grid_pairs(index, np.zeros((0, 3)), np.zeros((0, 3)), 0.5) == ([], [])


@pytest.mark.parametrize("reach", [0.0, 0.25])
def test_diagonal_segments_through_the_grids_corners_equal_brute_force(reach):
    """Segments along x = y over a floor symmetric in x and y (so the grid's cells are at
    the same places on both axes): each crosses an x wall and a y wall at the same moment,
    where rounding can put both crossings just short of the other's wall. The walk must
    still list the diagonal cell it runs on into (without that rule, 10 of these pairs were
    lost at reach 0)."""
    a, b, c = floor_triangles()
    p0, p1 = diagonal_rays(np.random.default_rng(1), 2000)
    index = StaticIndex.of_triangles(a, b, c)
    want = brute_segments(p0, p1, np.full(len(p0), reach), *triangle_boxes(a, b, c))
    got, walks = walked(index, p0, p1, reach)
    assert got == want
    assert walks == len(p0)


def test_a_small_index_answers_by_its_tree(monkeypatch):
    """Below ``_GRID_FEWEST`` items (the default: the fixture above is undone here) the
    solver's queries descend the tree, faster there, and find exactly the brute-force
    pairs; from it on they walk the grid, with the same pairs."""
    monkeypatch.undo()
    rng = np.random.default_rng(11)
    p0, p1 = segments(rng, 80)
    reach = rng.choice([0.0, 0.25, 0.5], size=80)
    for m, grid in ((300, False), (_index._GRID_FEWEST, True)):
        a, b, c = soup(rng, m)
        index = StaticIndex.of_triangles(a, b, c)
        got, walks = walked(index, p0, p1, reach)
        assert (walks > 0) == grid and (index._grid is not None) == grid
        assert got == brute_segments(p0, p1, reach, *triangle_boxes(a, b, c))
