"""Broad phase: exact agreement with an exhaustive n^2 search, and input validation.

The strongest predicate is equality: the grid search must return exactly the pairs an
all-pairs swept-box test returns (none missed, none extra, each once, sorted). The
brute-force reference below recomputes the boxes from the documented definition instead of
calling the module's helpers. The private tuning constants are patched down in some tests
so that small scenes also run the deep paths (several size classes, chunked batches, the
binary-search lookup used for sparse scenes).
"""

from __future__ import annotations

import doctest
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panda3d_ccd import broadphase
from panda3d_ccd._tolerance import DIST_REL_EPS
from panda3d_ccd.broadphase import sphere_pairs, sphere_plane_pairs
from panda3d_ccd.sweep import sphere_plane_toi, sphere_sphere_toi

FULL = 0xFFFFFFFF


# ---------------------------------------------------------------------------- references


def brute_sphere_pairs(p0, p1, radius, from_mask=None, into_mask=None, moving=None, margin=None):
    """All pairs by the definition: closed swept boxes grown by reach and the rounding pad."""
    p0 = np.asarray(p0, float).reshape(-1, 3)
    p1 = np.asarray(p1, float).reshape(-1, 3)
    n = len(p0)
    reach = np.broadcast_to(np.asarray(radius, float), (n,)).copy()
    if margin is not None:
        reach = reach + np.broadcast_to(np.asarray(margin, float), (n,))
    fm = np.broadcast_to(FULL if from_mask is None else np.asarray(from_mask), (n,))
    im = np.broadcast_to(FULL if into_mask is None else np.asarray(into_mask), (n,))
    mv = np.broadcast_to(True if moving is None else np.asarray(moving), (n,))
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.maximum(np.abs(p0).max(axis=1), np.abs(p1).max(axis=1))
        grow = reach + DIST_REL_EPS * np.maximum(scale, reach)
        lo = np.minimum(p0, p1) - grow[:, None]
        hi = np.maximum(p0, p1) + grow[:, None]
        ok = np.isfinite(hi - lo).all(axis=1)
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            if not (ok[i] and ok[j]):
                continue
            if not (np.all(lo[i] <= hi[j]) and np.all(lo[j] <= hi[i])):
                continue
            if (int(fm[i]) & int(im[j])) | (int(fm[j]) & int(im[i])) == 0:
                continue
            if not (mv[i] or mv[j]):
                continue
            out.append((i, j))
    return out


def brute_sphere_pairs_fast(p0, p1, radius, margin=None):
    """The same definition, vectorised by rows, for scenes of a few thousand spheres."""
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    n = len(p0)
    reach = np.broadcast_to(np.asarray(radius, float), (n,)).copy()
    if margin is not None:
        reach = reach + margin
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.maximum(np.abs(p0).max(axis=1), np.abs(p1).max(axis=1))
        grow = reach + DIST_REL_EPS * np.maximum(scale, reach)
        lo = np.minimum(p0, p1) - grow[:, None]
        hi = np.maximum(p0, p1) + grow[:, None]
        ok = np.isfinite(hi - lo).all(axis=1)
    keys = []
    for s in range(0, n, 256):
        hit = np.all(lo[s : s + 256, None] <= hi[None], axis=2)
        hit &= np.all(lo[None] <= hi[s : s + 256, None], axis=2)
        i, j = np.nonzero(hit)
        i = i + s
        keep = (i < j) & ok[i] & ok[j]
        keys.append(i[keep] * n + j[keep])
    key = np.sort(np.concatenate(keys))
    return key // n, key % n


def brute_plane_pairs(p0, p1, radius, normals, offsets, smask, pmask, moving, pmoving, off1):
    """Sphere-plane candidates by the definition, one pair at a time."""
    out = []
    for i in range(len(p0)):
        if not (np.all(np.isfinite(p0[i])) and np.all(np.isfinite(p1[i]))):
            continue
        for k in range(len(normals)):
            length = float(np.linalg.norm(normals[k]))
            nrm = np.asarray(normals[k], float) / length
            o0, o1 = offsets[k] / length, off1[k] / length
            d0 = p0[i][0] * nrm[0] + p0[i][1] * nrm[1] + p0[i][2] * nrm[2] + o0
            d1 = p1[i][0] * nrm[0] + p1[i][1] * nrm[1] + p1[i][2] * nrm[2] + o1
            scale = max(np.abs(p0[i]).max(), np.abs(p1[i]).max(), radius[i], abs(o0), abs(o1))
            if min(d0, d1) - radius[i] > DIST_REL_EPS * scale:
                continue
            if int(smask[i]) & int(pmask[k]) == 0:
                continue
            if not (moving[i] or pmoving[k]):
                continue
            out.append((i, k))
    return out


def as_list(pairs):
    i, j = pairs
    assert i.dtype == np.int64 and j.dtype == np.int64
    return list(zip(i.tolist(), j.tolist()))


def check_structure(pairs):
    """i < j, sorted by (i, j), no repeats."""
    i, j = pairs
    assert np.all(i < j)
    key = i * (int(j.max(initial=0)) + 1) + j
    assert np.all(np.diff(key) > 0)


@contextmanager
def deep_paths(
    brute_max=2, chunk=5, dense=True, max_key=2.0**62, sweep=False, sweep_work=40, cells="on"
) -> Iterator[None]:
    """Make a small scene take every path of the grid search: sweeps cut into pieces (with
    ``split``), more size classes, batches of a few rows, and optionally the grid numbered
    by occupied cells with binary-search lookups (``dense=False``), even with neighbouring
    cells merged (small ``max_key``). With ``sweep``, sort and sweep instead of the grid
    wherever it takes the boxes (``sweep_work`` small: it gives some of them back).
    ``cells``: "on" (boxes of a few median sizes pair in cells), "off" (the grids take
    every class) or "dense" (the cells give up on all but the sparsest scenes)."""
    edge = {"on": broadphase._CELL_EDGE, "off": 0.0, "dense": broadphase._CELL_EDGE}[cells]
    with (
        mock.patch.object(broadphase, "_CELL_EDGE", edge),
        mock.patch.object(broadphase, "_CELL_PAIRS", 2 if cells == "dense" else 1 << 22),
        mock.patch.object(broadphase, "_PIECE_ROWS", 1),
        mock.patch.object(broadphase, "_BRUTE_MAX", brute_max),
        mock.patch.object(broadphase, "_SWEEP_MAX", 10**9 if sweep else 0),
        mock.patch.object(broadphase, "_SWEEP_WORK", sweep_work),
        mock.patch.object(broadphase, "_CHUNK", chunk),
        mock.patch.object(broadphase, "_DENSE_PER_BOX", 32 if dense else -1),
        mock.patch.object(broadphase, "_DENSE_MIN", 4096 if dense else 0),
        mock.patch.object(broadphase, "_MAX_KEY", max_key),
    ):
        yield


# ---------------------------------------------------------------------------- strategies

COORD = st.floats(-20, 20, allow_nan=False)
LENGTHS = st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0, 3.0])


@st.composite
def scenes(draw, max_n=40):
    """Spheres in a small region (so that many boxes overlap), some fast, some not finite,
    with radii, margins, masks and moving flags drawn from small sets so that ties and
    exact touching happen."""
    n = draw(st.integers(0, max_n))
    grid = draw(st.booleans())
    if grid:
        # Integer coordinates make exactly touching boxes common.
        ints = st.integers(-6, 6).map(float)
        p0 = np.array(draw(st.lists(st.tuples(ints, ints, ints), min_size=n, max_size=n)))
    else:
        p0 = np.array(draw(st.lists(st.tuples(COORD, COORD, COORD), min_size=n, max_size=n)))
    p0 = p0.reshape(n, 3)
    speed = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 2.0, 40.0]), min_size=n, max_size=n)))
    direction = np.array(
        draw(st.lists(st.tuples(COORD, COORD, COORD), min_size=n, max_size=n))
    ).reshape(n, 3)
    p1 = p0 + direction / 20.0 * speed[:, None]
    radius = np.array(draw(st.lists(LENGTHS, min_size=n, max_size=n)))
    margin = np.array(draw(st.lists(LENGTHS, min_size=n, max_size=n)))
    masks = st.sampled_from([0, 1, 2, 3, FULL, 0x80000000])
    from_mask = np.array(draw(st.lists(masks, min_size=n, max_size=n)), dtype=np.int64)
    into_mask = np.array(draw(st.lists(masks, min_size=n, max_size=n)), dtype=np.int64)
    moving = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    bad = np.array(draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, 2]), min_size=n, max_size=n)))
    p0[bad == 1, 0] = np.nan
    p1[bad == 2, 2] = np.inf
    return p0, p1, radius, from_mask, into_mask, moving, margin


# --------------------------------------------------------------- sphere pairs: agreement


@settings(max_examples=300, deadline=None)
@given(scene=scenes())
def test_equals_brute_force(scene):
    p0, p1, radius, fm, im, mv, margin = scene
    got = sphere_pairs(p0, p1, radius, fm, im, moving=mv, margin=margin)
    assert as_list(got) == brute_sphere_pairs(p0, p1, radius, fm, im, mv, margin)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scene=scenes(),
    dense=st.booleans(),
    chunk=st.sampled_from([1, 3, 64]),
    max_key=st.sampled_from([2.0**62, 30.0]),
    sweep=st.sampled_from([False, True]),
    sweep_work=st.sampled_from([0, 2, 40]),
    cells=st.sampled_from(["on", "off", "dense"]),
)
def test_equals_brute_force_on_every_path(scene, dense, chunk, max_key, sweep, sweep_work, cells):
    p0, p1, radius, fm, im, mv, margin = scene
    with deep_paths(
        chunk=chunk, dense=dense, max_key=max_key, sweep=sweep, sweep_work=sweep_work,
        cells=cells,
    ):  # fmt: skip
        got = sphere_pairs(p0, p1, radius, fm, im, moving=mv, margin=margin)
    assert as_list(got) == brute_sphere_pairs(p0, p1, radius, fm, im, mv, margin)


@settings(max_examples=100, deadline=None)
@given(scene=scenes(max_n=25))
def test_all_still_and_all_moving_defaults(scene):
    p0, p1, radius, _, _, _, _ = scene
    assert as_list(sphere_pairs(p0, p1, radius)) == brute_sphere_pairs(p0, p1, radius)
    none_moving = np.zeros(len(p0), dtype=bool)
    assert as_list(sphere_pairs(p0, p1, radius, moving=none_moving)) == []


def random_scene(kind: str, n: int, seed: int):
    """Seeded scenes of a few hundred to a few thousand spheres, each stressing one case."""
    rng = np.random.default_rng(seed)
    side = 4 * n ** (1 / 3)
    p0 = rng.uniform(0, side, (n, 3))
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    speed = np.where(rng.random(n) < 0.1, 50.0, 0.5) * rng.uniform(0.5, 1.5, n)
    radius = np.full(n, 0.5)
    if kind == "clustered":
        p0 = rng.normal(0, 1.5, (n, 3))
    elif kind == "flat":
        p0[:, 2] = 0.0
        d[:, 2] = 0.0
    elif kind == "line":
        p0 = np.zeros((n, 3))
        p0[:, 0] = np.arange(n) * 0.9
    elif kind == "mixed_sizes":
        radius = np.exp(rng.uniform(np.log(0.01), np.log(20.0), n))
    elif kind == "outliers":
        p0[: n // 20] *= 1e6
    elif kind == "two_clusters":
        p0[: n // 2] += 1e7
    elif kind == "parked":
        # A pool of still spheres parked at one far point, which must not cost n^2.
        p0[: n // 2] = (0.0, 0.0, -1e6)
        speed[: n // 2] = 0.0
    elif kind == "points":
        p0 = np.round(p0)
        speed[:] = 0.0
        radius[:] = 0.0
    elif kind == "huge":
        p0[: n // 10] = 1e300
        # Sweeps too long to measure in float64 are ignored.
        p0[n // 10 : n // 5, 0] = 1e308
        d[n // 10 : n // 5] = (-1.0, 0.0, 0.0)
        speed[n // 10 : n // 5] = 1.5e308
    elif kind == "all_fast":
        speed[:] = 50.0
    p1 = p0 + d * speed[:, None]
    return p0, p1, radius


KINDS = [
    "uniform",
    "clustered",
    "flat",
    "line",
    "mixed_sizes",
    "outliers",
    "points",
    "huge",
    "all_fast",
    "two_clusters",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_brute_force_on_large_scenes(kind, seed):
    p0, p1, radius = random_scene(kind, 600, seed)
    i, j = sphere_pairs(p0, p1, radius)
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius)
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_array_equal(j, bj)


@pytest.mark.parametrize("kind", ["uniform", "mixed_sizes", "outliers"])
def test_equals_brute_force_with_margins_and_sparse_lookup(kind):
    p0, p1, radius = random_scene(kind, 500, 7)
    margin = np.random.default_rng(3).choice([0.0, 0.0, 2.0, 10.0], len(p0))
    with deep_paths(brute_max=16, chunk=1000, dense=False):
        i, j = sphere_pairs(p0, p1, radius, margin=margin)
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius, margin)
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_array_equal(j, bj)


def test_still_pairs_are_never_enumerated():
    """Half of 4000 spheres parked at one point (still), the rest moving: the still pairs
    (two million of them) must be skipped by the search itself, not filtered afterwards."""
    p0, p1, radius = random_scene("parked", 4000, 2)
    moving = np.any(p0 != p1, axis=1)
    keys = mock.Mock(wraps=broadphase._pair_keys)
    with mock.patch.object(broadphase, "_pair_keys", keys):
        i, j = sphere_pairs(p0, p1, radius, moving=moving)
    assert sum(len(call.args[0]) for call in keys.call_args_list) == len(i)
    assert np.all(moving[i] | moving[j])
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius)
    keep = moving[bi] | moving[bj]
    np.testing.assert_array_equal(i, bi[keep])
    np.testing.assert_array_equal(j, bj[keep])


@pytest.mark.parametrize("spread", [0, 40])
def test_coincident_points(spread):
    """Zero-size boxes (points at the origin have no rounding pad either): all pairs of the
    coincident ones, and the spread ones only where they coincide too."""
    rng = np.random.default_rng(spread)
    p = np.zeros((100, 3))
    p[:spread] = rng.integers(-3, 4, (spread, 3))
    i, j = sphere_pairs(p, p, 0.0)
    bi, bj = brute_sphere_pairs_fast(p, p, np.zeros(100))
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_array_equal(j, bj)
    if spread == 0:
        assert len(i) == 100 * 99 // 2


@pytest.mark.parametrize("fast", [2.0, 50.0])
@pytest.mark.parametrize("still", [0.0, 0.3])
def test_a_game_crowd_pairs_up_in_cells_as_brute_force_does(fast, still):
    """The game-like scene's crowd (a tenth at ``fast`` units a frame, some still): its
    boxes pair up in the cells (those of fast movers at 50 units in the grids, against
    the cells' boxes), with the pairs of brute force."""
    rng = np.random.default_rng(int(fast) + int(10 * still))
    n = 3000
    p0 = rng.uniform(0, 4 * n ** (1 / 3), (n, 3))
    d = rng.normal(size=(n, 3))
    speed = np.where(rng.random(n) < 0.1, fast, 0.3) * rng.uniform(0.75, 1.25, n)
    speed[rng.random(n) < still] = 0.0
    p1 = p0 + d / np.linalg.norm(d, axis=1)[:, None] * speed[:, None]
    radius = np.full(n, 0.45)
    filed = []
    cell_pairs = broadphase._cell_pairs
    with mock.patch.object(
        broadphase, "_cell_pairs", lambda *a: filed.append(cell_pairs(*a)) or filed[-1]
    ):
        i, j = sphere_pairs(p0, p1, radius, moving=speed > 0)
    assert filed[0] is not None and filed[0].sum() >= 0.85 * n
    assert filed[0].all() == (fast == 2.0)
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius)
    keep = (speed[bi] > 0) | (speed[bj] > 0)
    assert len(i) > 150
    np.testing.assert_array_equal(i, bi[keep])
    np.testing.assert_array_equal(j, bj[keep])


@pytest.mark.parametrize("cells", ["on", "off"])
def test_the_grids_are_sized_for_the_queries_they_get(cells):
    """The grids' cell edge is chosen for the half queries of the class's own boxes where
    the grids pair the class (the cells declined), and for none where the cells did."""
    p0, p1, radius = random_scene("uniform", 3000, 4)
    hints = []
    cell_edge = broadphase._cell_edge
    with deep_paths(cells=cells, chunk=1 << 16), mock.patch.object(
        broadphase, "_cell_edge", lambda *a: hints.append(a[4]) or cell_edge(*a)
    ):
        sphere_pairs(p0, p1, radius)
    half = hints[0]
    assert half.dtype == bool and half.shape == (3000,)
    lo, hi = broadphase._swept_boxes(p0, p1, radius)
    size = (hi - lo).max(axis=0)
    class_ = size <= broadphase._CLASS_SPAN * np.partition(size, 1500)[1500]
    assert class_.sum() > 2000
    np.testing.assert_array_equal(half, class_ if cells == "off" else np.zeros(3000, bool))


def test_benchmark_scene_of_two_thousand():
    """The benchmark's scene (10% fast movers) at a size the reference can still check."""
    p0, p1, radius = random_scene("uniform", 2000, 11)
    i, j = sphere_pairs(p0, p1, radius)
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius)
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_array_equal(j, bj)


# ------------------------------------------------------------- sphere pairs: structure


@settings(max_examples=100, deadline=None)
@given(scene=scenes(), sweep=st.booleans())
def test_pairs_are_ordered_sorted_and_unique(scene, sweep):
    p0, p1, radius, fm, im, mv, margin = scene
    with deep_paths(sweep=sweep):
        pairs = sphere_pairs(p0, p1, radius, fm, im, moving=mv, margin=margin)
    check_structure(pairs)


@settings(max_examples=100, deadline=None)
@given(scene=scenes(), seed=st.integers(0, 2**32 - 1))
def test_relabelling_the_spheres_relabels_the_pairs(scene, seed):
    p0, p1, radius, fm, im, mv, margin = scene
    perm = np.random.default_rng(seed).permutation(len(p0))
    i, j = sphere_pairs(p0, p1, radius, fm, im, moving=mv, margin=margin)
    pi, pj = sphere_pairs(
        p0[perm], p1[perm], radius[perm], fm[perm], im[perm], moving=mv[perm], margin=margin[perm]
    )
    mapped = {tuple(sorted((int(perm[a]), int(perm[b])))) for a, b in zip(pi, pj)}
    assert mapped == set(zip(i.tolist(), j.tolist()))


def test_same_input_same_output():
    p0, p1, radius = random_scene("uniform", 3000, 5)
    first = sphere_pairs(p0, p1, radius)
    second = sphere_pairs(p0.copy(), p1.copy(), radius.copy())
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_empty_and_single_inputs():
    empty = np.zeros((0, 3))
    for pairs in (
        sphere_pairs(empty, empty, 1.0),
        sphere_pairs(empty, empty, np.zeros(0), np.zeros(0, np.int64), [], moving=[]),
        sphere_pairs([[0.0, 0, 0]], [[1.0, 0, 0]], 1.0),
        sphere_plane_pairs(empty, empty, 1.0, [[0.0, 0, 1]], [0.0]),
        sphere_plane_pairs([[0.0, 0, 0]], [[0.0, 0, 0]], 1.0, np.zeros((0, 3)), []),
    ):
        assert pairs[0].dtype == np.int64 and pairs[1].dtype == np.int64
        assert pairs[0].shape == (0,) and pairs[1].shape == (0,)


# ---------------------------------------------------------- sphere pairs: analytic cases


@pytest.mark.parametrize(
    ("p0", "p1", "radius", "kwargs", "expected"),
    [
        # Crossing paths: boxes overlap although the spheres never touch (a candidate).
        ([[0, 0, 0], [10, 0, 0]], [[10, 0, 0], [0, 0, 0]], 0.5, {}, [(0, 1)]),
        # 2 apart, radii 0.5: a gap of 1.
        ([[0, 0, 0], [2, 0, 0]], [[0, 0, 0], [2, 0, 0]], 0.5, {}, []),
        # The same gap bridged by margins.
        ([[0, 0, 0], [2, 0, 0]], [[0, 0, 0], [2, 0, 0]], 0.5, {"margin": 0.5}, [(0, 1)]),
        # Exactly touching boxes count.
        ([[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [1, 0, 0]], 0.5, {}, [(0, 1)]),
        # Touching only after rounding: 0.1 + 0.7 < 1.5 - 0.7 in float64; the pad keeps it.
        ([[0.1, 0, 0], [5, 0, 0]], [[0.1, 0, 0], [1.5, 0, 0]], 0.7, {}, [(0, 1)]),
        # A fast mover sweeping through three still spheres.
        (
            [[-100, 0, 0], [0, 0, 0], [10, 0.5, 0], [20, 0, 5]],
            [[100, 0, 0], [0, 0, 0], [10, 0.5, 0], [20, 0, 5]],
            0.5,
            {"moving": [True, False, False, False]},
            [(0, 1), (0, 2)],
        ),
        # Masks: sphere 0 only collides from bit 1 into bit 2.
        (
            [[0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]],
            [[0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]],
            0.5,
            {"from_mask": [1, 0, 0], "into_mask": [0, 1, 2]},
            [(0, 1)],
        ),
        # A zero mask on both sides never pairs; the other pair still does.
        (
            [[0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]],
            [[0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]],
            0.5,
            {"from_mask": [0, 4, 4], "into_mask": [0, 4, 4]},
            [(1, 2)],
        ),
        # Non-finite rows are ignored.
        (
            [[0, 0, 0], [np.nan, 0, 0], [0.5, 0, 0]],
            [[0, 0, 0], [0, 0, 0], [np.inf, 0, 0]],
            0.5,
            {},
            [],
        ),
    ],
)
def test_analytic_pairs(p0, p1, radius, kwargs, expected):
    assert as_list(sphere_pairs(p0, p1, radius, **kwargs)) == expected


def test_a_lone_mover_far_from_a_still_crowd():
    """Nothing to report at any level of the search (once crashed on an empty result)."""
    crowd = np.random.default_rng(0).uniform(0, 10, (60, 3))
    p0 = np.vstack([crowd, [[500.0, 0, 0]]])
    p1 = np.vstack([crowd, [[600.0, 0, 0]]])
    moving = np.arange(61) == 60
    assert as_list(sphere_pairs(p0, p1, 0.1, moving=moving)) == []


def test_masks_accept_unsigned_and_numpy_words():
    p = [[0.0, 0, 0], [0.5, 0, 0]]
    high = np.array([0x80000000, 0x80000000], dtype=np.uint32)
    assert as_list(sphere_pairs(p, p, 0.5, high, high)) == [(0, 1)]
    assert as_list(sphere_pairs(p, p, 0.5, high.astype(np.uint64), [1, 1])) == []
    assert as_list(sphere_pairs(p, p, 0.5, 2, 2)) == [(0, 1)]


# ------------------------------------------------- sphere pairs: superset of the kernel


@settings(max_examples=150, deadline=None)
@given(scene=scenes(max_n=30))
def test_every_kernel_contact_is_a_candidate(scene):
    p0, p1, radius, _, _, _, _ = scene
    n = len(p0)
    finite = np.isfinite(p0).all(axis=1) & np.isfinite(p1).all(axis=1)
    p0 = np.where(finite[:, None], p0, 0.0)
    p1 = np.where(finite[:, None], p1, 0.0)
    a, b = np.triu_indices(n, 1)
    toi = sphere_sphere_toi(p0[a], p1[a], radius[a], p0[b], p1[b], radius[b])
    candidates = set(as_list(sphere_pairs(p0, p1, radius)))
    assert {(int(i), int(j)) for i, j, t in zip(a, b, toi) if np.isfinite(t)} <= candidates


@pytest.mark.parametrize("seed", range(4))
def test_every_kernel_contact_is_a_candidate_in_a_crowd(seed):
    rng = np.random.default_rng(seed)
    n = 400
    p0 = rng.uniform(0, 12, (n, 3))
    p1 = p0 + rng.normal(0, 1, (n, 3)) * np.where(rng.random(n) < 0.1, 10.0, 0.5)[:, None]
    radius = rng.uniform(0.05, 0.6, n)
    a, b = np.triu_indices(n, 1)
    toi = sphere_sphere_toi(p0[a], p1[a], radius[a], p0[b], p1[b], radius[b])
    hits = np.isfinite(toi)
    assert hits.sum() > 50
    i, j = sphere_pairs(p0, p1, radius)
    key = set((i * n + j).tolist())
    assert set((a[hits] * n + b[hits]).tolist()) <= key


# ---------------------------------------------------------------------- plane pairs


@st.composite
def plane_scenes(draw):
    n = draw(st.integers(0, 12))
    m = draw(st.integers(0, 4))
    pts = st.lists(st.tuples(COORD, COORD, COORD), min_size=n, max_size=n)
    p0 = np.array(draw(pts), dtype=float).reshape(n, 3)
    p1 = p0 + np.array(draw(pts), dtype=float).reshape(n, 3) * draw(
        st.sampled_from([0.0, 0.1, 1.0])
    )
    radius = np.array(draw(st.lists(LENGTHS, min_size=n, max_size=n)))
    axis = st.sampled_from([(0, 0, 1), (0, 0, -2), (1, 1, 0), (0.3, -0.4, 0.5), (0, 1, 0)])
    normals = np.array(draw(st.lists(axis, min_size=m, max_size=m)), dtype=float).reshape(m, 3)
    offsets = np.array(draw(st.lists(st.integers(-10, 10), min_size=m, max_size=m)), float)
    shift = np.array(draw(st.lists(st.sampled_from([0, 0, 3, -7]), min_size=m, max_size=m)))
    masks = st.sampled_from([1, 2, 3, FULL])
    smask = np.array(draw(st.lists(masks, min_size=n, max_size=n)), dtype=np.int64)
    pmask = np.array(draw(st.lists(masks, min_size=m, max_size=m)), dtype=np.int64)
    moving = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if n and draw(st.booleans()):
        p0[0, 1] = np.nan
    return p0, p1, radius, normals, offsets, smask, pmask, moving, offsets + shift


@settings(max_examples=300, deadline=None)
@given(scene=plane_scenes(), explicit=st.booleans())
def test_plane_pairs_equal_brute_force(scene, explicit):
    p0, p1, radius, normals, offsets, smask, pmask, moving, off1 = scene
    pmoving = off1 != offsets
    got = sphere_plane_pairs(
        p0,
        p1,
        radius,
        normals,
        offsets,
        smask,
        pmask,
        moving=moving,
        plane_moving=pmoving if explicit else None,
        plane_offsets1=off1,
    )
    expected = brute_plane_pairs(
        p0, p1, radius, normals, offsets, smask, pmask, moving, pmoving, off1
    )
    assert as_list(got) == expected


@settings(max_examples=200, deadline=None)
@given(scene=plane_scenes())
def test_every_plane_contact_is_a_candidate(scene):
    p0, p1, radius, normals, offsets, _, _, _, _ = scene
    finite = np.isfinite(p0).all(axis=1)
    got = set(as_list(sphere_plane_pairs(p0, p1, radius, normals, offsets)))
    for k in range(len(normals)):
        toi = sphere_plane_toi(p0[finite], p1[finite], radius[finite], normals[k], offsets[k])
        for i in np.flatnonzero(finite)[np.isfinite(toi)]:
            assert (int(i), k) in got


@settings(max_examples=200, deadline=None)
@given(scene=plane_scenes())
def test_translating_planes_never_miss_a_sampled_touch(scene):
    p0, p1, radius, normals, offsets, _, _, _, off1 = scene
    got = set(as_list(sphere_plane_pairs(p0, p1, radius, normals, offsets, plane_offsets1=off1)))
    t = np.linspace(0, 1, 101)
    for i in np.flatnonzero(np.isfinite(p0).all(axis=1)):
        path = p0[i] + t[:, None] * (p1[i] - p0[i])
        for k in range(len(normals)):
            unit = normals[k] / np.linalg.norm(normals[k])
            length = np.linalg.norm(normals[k])
            offset = (offsets[k] + t * (off1[k] - offsets[k])) / length
            if np.any(path @ unit + offset <= radius[i]):
                assert (int(i), k) in got


@pytest.mark.parametrize(
    ("p0", "p1", "kwargs", "expected"),
    [
        # Falling through the floor z = 0, far from the wall.
        ([[0, 0, 3]], [[0, 0, -3]], {}, [(0, 0)]),
        # Staying 2 above it, radius 1.
        ([[0, 0, 2]], [[5, 0, 2]], {}, [(0, 1)]),
        # Still sphere, still planes: nothing can start.
        ([[0, 0, 0.5]], [[0, 0, 0.5]], {"moving": [False]}, []),
        # Still sphere, a plane rising into it.
        ([[0, 0, 3]], [[0, 0, 3]], {"moving": [False], "plane_offsets1": [-2.5, 5.0]}, [(0, 0)]),
        # Still sphere, moving plane flagged explicitly.
        (
            [[0, 0, 0.5]],
            [[0, 0, 0.5]],
            {"moving": [False], "plane_moving": [True, False]},
            [(0, 0)],
        ),
        # A still sphere touching the floor is reported when the sphere is said to move.
        ([[0, 0, 0.5]], [[0, 0, 0.5]], {}, [(0, 0)]),
        # The sphere's from mask must meet the plane's into mask.
        ([[0, 0, 3]], [[5, 0, -3]], {"sphere_from_mask": [2], "plane_into_mask": [1, 2]}, [(0, 1)]),
        # Deep inside the solid counts (half-space); the wall stays 3 away.
        ([[0, 0, -50]], [[1, 0, -50]], {}, [(0, 0)]),
    ],
)
def test_analytic_plane_pairs(p0, p1, kwargs, expected):
    # Plane 0: the floor z = 0, given with a non-unit normal. Plane 1: the wall x = 4,
    # solid beyond it (normal -x, offset 4).
    normals = [[0, 0, 3.0], [-1, 0, 0]]
    offsets = [0.0, 4.0]
    if "plane_offsets1" in kwargs:
        kwargs = dict(kwargs, plane_offsets1=np.array(kwargs["plane_offsets1"]) * [3.0, 1.0])
    assert as_list(sphere_plane_pairs(p0, p1, 1.0, normals, offsets, **kwargs)) == expected


# ------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p0": [1.0, 2.0, 3.0]}, r"p0 must have shape \(n, 3\), got \(3,\)"),
        ({"p1": np.zeros((3, 2))}, r"p1 must have shape \(n, 3\), got \(3, 2\)"),
        ({"p1": np.zeros((2, 3))}, r"p1 must have the same shape as p0 \(3, 3\), got \(2, 3\)"),
        ({"radius": -1.0}, r"radius must be finite and >= 0, got -1.0"),
        ({"radius": [0.5, np.nan, 0.5]}, r"radius must be finite and >= 0, got nan"),
        ({"radius": [0.5, 0.5]}, r"radius must be a scalar or have shape \(3,\), got \(2,\)"),
        ({"margin": [0.0, -2.0, 0.0]}, r"margin must be finite and >= 0, got -2.0"),
        ({"margin": np.inf}, r"margin must be finite and >= 0, got inf"),
        (
            {"from_mask": [1, -1, 1]},
            r"from_mask must hold 32-bit unsigned masks \(0 to 4294967295\), got -1",
        ),
        (
            {"into_mask": [1, 2**32, 1]},
            r"into_mask must hold 32-bit unsigned masks \(0 to 4294967295\), got 4294967296",
        ),
        (
            {"from_mask": [1.0, 2.0, 3.0]},
            r"from_mask must be an integer array of 32-bit masks, got dtype float64",
        ),
        (
            {"into_mask": [True, False, True]},
            r"into_mask must be an integer array of 32-bit masks, got dtype bool",
        ),
        ({"into_mask": [1, 2]}, r"into_mask must be a scalar or have shape \(3,\), got \(2,\)"),
        ({"moving": [1, 0, 1]}, r"moving must be a boolean array, got dtype int64"),
        ({"moving": [True, False]}, r"moving must be a scalar or have shape \(3,\), got \(2,\)"),
    ],
)
def test_sphere_pairs_rejects_bad_input(kwargs, message):
    args = {"p0": np.zeros((3, 3)), "p1": np.zeros((3, 3)), "radius": 0.5}
    args.update(kwargs)
    p0, p1, radius = args.pop("p0"), args.pop("p1"), args.pop("radius")
    with pytest.raises(ValueError, match=message):
        sphere_pairs(p0, p1, radius, **args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"normals": [0.0, 0.0, 1.0]}, r"normals must have shape \(n, 3\), got \(3,\)"),
        (
            {"normals": [[0.0, 0, 0], [0, 0, 1]]},
            r"normals must be finite and non-zero, got \[0.0, 0.0, 0.0\]",
        ),
        ({"offsets": [0.0]}, r"offsets must have shape \(2,\) to match normals, got \(1,\)"),
        ({"offsets": [0.0, np.nan]}, r"offsets must be finite, got nan"),
        (
            {"plane_offsets1": [0.0]},
            r"plane_offsets1 must have shape \(2,\) to match normals, got \(1,\)",
        ),
        ({"plane_offsets1": [np.inf, 0.0]}, r"plane_offsets1 must be finite, got inf"),
        ({"radius": [1.0, -1.0]}, r"radius must be finite and >= 0, got -1.0"),
        ({"sphere_from_mask": [2**33, 1]}, r"sphere_from_mask must hold 32-bit unsigned masks"),
        (
            {"plane_into_mask": [1, 2, 3]},
            r"plane_into_mask must be a scalar or have shape \(2,\), got \(3,\)",
        ),
        ({"plane_moving": [0.5, 1.0]}, r"plane_moving must be a boolean array, got dtype float64"),
        ({"p1": np.zeros((1, 3))}, r"p1 must have the same shape as p0 \(2, 3\), got \(1, 3\)"),
    ],
)
def test_sphere_plane_pairs_rejects_bad_input(kwargs, message):
    args = {
        "p0": np.zeros((2, 3)),
        "p1": np.zeros((2, 3)),
        "radius": 0.5,
        "normals": [[0.0, 0, 1], [1, 0, 0]],
        "offsets": [0.0, 1.0],
    }
    args.update(kwargs)
    positional = [args.pop(k) for k in ("p0", "p1", "radius", "normals", "offsets")]
    with pytest.raises(ValueError, match=message):
        sphere_plane_pairs(*positional, **args)


def test_geometry_layer_does_not_import_panda3d():
    code = (
        "import sys, numpy as np\n"
        "from panda3d_ccd.broadphase import sphere_pairs, sphere_plane_pairs\n"
        "sphere_pairs(np.zeros((60, 3)), np.ones((60, 3)), 0.5)\n"
        "assert not any(m == 'panda3d' or m.startswith('panda3d.') for m in sys.modules), "
        "sorted(m for m in sys.modules if m.startswith('panda3d'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_docstring_examples():
    """The module's Examples run here too, so plain ``pytest tests`` checks them."""
    result = doctest.testmod(broadphase)
    assert result.failed == 0
    assert result.attempted >= 5


# ------------------------------------------------------------ sphere pairs: split sweeps


def touching_sweeps(p0, p1, reach, pairs):
    """Those of pairs (i, j) whose swept spheres come within reach of each other anywhere
    on their segments (exact segment distance; time is ignored, as the broad phase does)."""
    from panda3d_ccd._solver import _segment_distance

    i = np.array([a for a, _ in pairs], dtype=np.int64)
    j = np.array([b for _, b in pairs], dtype=np.int64)
    if len(i) == 0:
        return set()
    d = _segment_distance(p0[i], p1[i], p0[j], p1[j])
    return {(int(a), int(b)) for a, b, ok in zip(i, j, d <= reach[i] + reach[j]) if ok}


@settings(max_examples=300, deadline=None)
@given(scene=scenes(), pattern=st.integers(0, 2**40), sweep=st.booleans())
def test_split_keeps_every_pair_whose_sweeps_touch(scene, pattern, sweep):
    p0, p1, radius, fm, im, mv, margin = scene
    n = len(p0)
    split = np.array([(pattern >> k) & 1 == 1 for k in range(n)], dtype=bool)
    with deep_paths(sweep=sweep):  # small scenes are not cut by default: all pairs are cheaper
        got = as_list(sphere_pairs(p0, p1, radius, fm, im, moving=mv, margin=margin, split=split))
    boxes = brute_sphere_pairs(p0, p1, radius, fm, im, mv, margin)
    assert set(got) <= set(boxes)
    assert got == sorted(set(got))
    reach = np.asarray(radius, float) + np.asarray(margin, float)
    assert touching_sweeps(p0, p1, reach, boxes) <= set(got)
    # Between two uncut sweeps nothing changes.
    whole = [(i, j) for i, j in boxes if not (split[i] or split[j])]
    assert [(i, j) for i, j in got if not (split[i] or split[j])] == whole


def test_split_cuts_the_benchmark_scene_down_to_what_lies_along_the_paths():
    p0, p1, radius = random_scene("uniform", 2000, 11)
    boxes = as_list(sphere_pairs(p0, p1, radius))
    got = as_list(sphere_pairs(p0, p1, radius, split=True))
    touching = touching_sweeps(p0, p1, radius, boxes)
    assert len(touching) > 100
    assert touching <= set(got) <= set(boxes)
    assert len(got) * 3 < len(boxes)  # fast movers' boxes took in the crowd; pieces do not


def test_split_pieces_cover_the_whole_sweep_end_to_end():
    # A long thin sweep with still spheres just touching it every 0.7 units, from its start
    # to its very end, and one just out of reach beyond the end: no gap anywhere. (1,430
    # spheres: enough to be cut.)
    x = np.append(np.arange(0.0, 1000.0, 0.7), 1000.0)
    beside = np.stack([x, np.ones_like(x), np.zeros_like(x)], axis=1)
    p0 = np.vstack([[0.0, 0, 0], beside, [1002.5, 0, 0]])
    p1 = p0.copy()
    p1[0] = [1000.0, 0, 0]
    moving = np.zeros(len(p0), dtype=bool)
    moving[0] = True
    i, j = sphere_pairs(p0, p1, 0.5, moving=moving, split=True)
    assert as_list((i, j)) == [(0, k) for k in range(1, len(x) + 1)]


def test_split_of_sweeps_too_short_to_cut_is_the_whole_boxes_answer(monkeypatch):
    # A game's usual frame: no sweep is longer than a piece, so nothing is cut and the
    # whole boxes are paired directly, with the same pairs as without split.
    rng = np.random.default_rng(5)
    n = 600
    p0 = rng.uniform(0, 4 * n ** (1 / 3), (n, 3))
    p1 = p0 + rng.normal(0, 0.3, (n, 3))
    radius = rng.uniform(0.3, 0.6, n)
    cut_into = []
    pieces = broadphase._pieces
    monkeypatch.setattr(
        broadphase, "_pieces", lambda *a: cut_into.append(pieces(*a)) or cut_into[-1]
    )
    got = as_list(sphere_pairs(p0, p1, radius, split=True))
    assert cut_into == [None]  # asked, and nothing was long enough to cut
    assert len(got) > 50
    assert got == as_list(sphere_pairs(p0, p1, radius))


def test_split_must_be_boolean():
    with pytest.raises(ValueError, match="split must be a boolean array, got dtype int64"):
        sphere_pairs(np.zeros((2, 3)), np.ones((2, 3)), 0.5, split=np.array([1, 0]))


@pytest.mark.parametrize("sweep", [False, True])
def test_boxes_touching_exactly_on_the_sweep_axis_pair_up(sweep):
    """Closed boxes: two that only touch (one's low end is the other's high end, on the
    axis they are sorted along) are a pair, whichever search pairs them."""
    # Three unit boxes in a row along x, touching; a fourth far off; x is the long axis.
    lo = np.array([[0.0, 1.0, 2.0, 9.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    hi = lo + 1.0
    boxes = broadphase._Boxes(lo, hi, np.arange(4), np.ones(4, bool))
    found: list = []
    with deep_paths(sweep=sweep):
        broadphase._box_pairs(boxes, 4, found)
    keys = sorted(np.concatenate(found).tolist())
    assert keys == [0 * 4 + 1, 1 * 4 + 2]


def test_cells_of_a_sparse_scene_sort_by_several_digits():
    """Cell keys past 16 bits (a sparse scene: pairs of spheres scattered over a wide
    region, some still) are sorted a 16-bit digit at a time: the pairs are brute force's."""
    rng = np.random.default_rng(11)
    half = 1000
    p0 = rng.uniform(0, 400, (half, 3))
    p0 = np.concatenate([p0, p0 + rng.uniform(-0.6, 0.6, (half, 3))])
    p1 = p0 + rng.normal(0, 0.2, p0.shape)
    radius = np.full(len(p0), 0.5)
    moving = rng.random(len(p0)) < 0.7
    bounds = []
    radix_order = broadphase._radix_order
    with (
        mock.patch.object(broadphase, "_SWEEP_MAX", 0),  # the cells, not sort and sweep
        mock.patch.object(
            broadphase, "_radix_order", lambda key, top: bounds.append(top) or radix_order(key, top)
        ),
    ):
        i, j = sphere_pairs(p0, p1, radius, moving=moving)
    assert len(bounds) == 1 and bounds[0] > 1 << 16  # the cells took them, by two digits
    bi, bj = brute_sphere_pairs_fast(p0, p1, radius)
    keep = moving[bi] | moving[bj]
    assert len(i) > 300
    np.testing.assert_array_equal(i, bi[keep])
    np.testing.assert_array_equal(j, bj[keep])
