"""The pure-numpy pass: time-ordered resolution, checked against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from panda3d_ccd import _solver
from panda3d_ccd._solver import PLANE, REWIND, SENSOR, SLIDE, SPHERE, solve
from panda3d_ccd._tolerance import SLOP_REL
from panda3d_ccd.sweep import sphere_plane_toi, sphere_sphere_toi

MASK = np.int64(0xFFFFF)
BOX = 10.0
# Overlap allowed by the slop (positions near the box are at most ~1e3 here).
SLOP = SLOP_REL * 1e3
WALLS = np.array(
    [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], dtype=np.float64
)


def run(p0, p1, radius, response, *, walls=False):
    p0 = np.asarray(p0, np.float64)
    n = len(p0)
    kwargs = {}
    if walls:
        off = np.full(6, BOX)
        kwargs = dict(
            plane_normal=WALLS, plane_offset0=off, plane_offset1=off, plane_mask=np.full(6, MASK)
        )
    return solve(
        p0,
        np.asarray(p1, np.float64),
        np.asarray(radius, np.float64),
        np.asarray(response, np.int8),
        np.full(n, MASK),
        np.full(n, MASK),
        **kwargs,
    )


def random_scene(rng, n, speeds=(0.1, 1.0, 10.0, 1000.0)):
    """Non-overlapping spheres inside the box, with mixed speeds and responses."""
    centres, radii = [], []
    for r in rng.uniform(0.0, 1.0, n):
        for _ in range(50):
            c = rng.uniform(-BOX + r, BOX - r, 3)
            if all(np.linalg.norm(c - q) > r + s for q, s in zip(centres, radii)):
                centres.append(c)
                radii.append(r)
                break
    p0 = np.array(centres)
    v = rng.normal(size=p0.shape) * rng.choice(speeds, size=(len(p0), 1))
    v[rng.random(len(p0)) < 0.2] = 0.0
    response = rng.choice([REWIND, SLIDE, SENSOR], size=len(p0), p=[0.45, 0.45, 0.1])
    return p0, p0 + v, np.array(radii), response.astype(np.int8)


# ------------------------------------------------------------------ analytic cases
def test_bullet_stops_touching_the_target_at_the_analytic_time():
    res = run([[-500, 0, 0], [0, 0, 0]], [[500, 0, 0], [0, 0, 0]], [0.05, 0.1], [REWIND] * 2)
    assert res.hits.t.tolist() == [pytest.approx((500 - 0.15) / 1000, abs=1e-15)]
    assert res.end[0].tolist() == pytest.approx([-0.15, 0, 0], abs=1e-12)
    assert res.hits.normal[0].tolist() == [-1.0, 0.0, 0.0]
    assert res.hits.speed[0] == pytest.approx(1000.0)


def test_two_rewind_spheres_meeting_are_both_rewound_to_the_same_moment():
    res = run([[-5, 0, 0], [5, 0, 0]], [[5, 0, 0], [-5, 0, 0]], [1, 1], [REWIND] * 2)
    assert res.hits.t.tolist() == [pytest.approx(0.4)]
    assert res.t_stop.tolist() == [pytest.approx(0.4)] * 2
    assert res.end.tolist() == [pytest.approx([-1, 0, 0]), pytest.approx([1, 0, 0])]


def test_slide_keeps_the_tangential_motion_and_slides_again_into_a_corner():
    # Touching the floor (z = -10 + 1), pushed diagonally into it, then into the x wall.
    res = run([[0, 0, -9]], [[12, 0, -13]], [1], [SLIDE], walls=True)
    assert res.hits.t.tolist() == [0.0, pytest.approx(9 / 12)]
    assert res.end[0].tolist() == pytest.approx([9, 0, -9])


def test_sensor_pass_through_reports_entry_and_exit_and_moves_nothing():
    res = run([[-5, 0, 0], [0, 0, 0]], [[5, 0, 0], [0, 0, 0]], [0.1, 1], [REWIND, SENSOR])
    assert res.hits.sensor.tolist() == [True]
    assert res.hits.t.tolist() == [pytest.approx(0.39)]
    assert res.hits.t_exit.tolist() == [pytest.approx(0.61)]
    assert not res.moved.any()


@pytest.mark.parametrize("offset", [0.0, 250.0])
def test_two_points_meeting_exactly_are_a_contact_at_the_kernels_time(offset):
    """A point cannot sink into a point, so the slop rule must not drop their meeting."""
    p0 = np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]) + offset
    p1 = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]) + offset
    kernel = sphere_sphere_toi(p0[:1], p1[:1], 0.0, p0[1:], p1[1:], 0.0)
    res = run(p0, p1, [0.0, 0.0], [REWIND, REWIND])
    assert kernel.tolist() == [0.5]
    assert res.hits.t.tolist() == [0.5]
    np.testing.assert_array_equal(res.end, np.full((2, 3), offset))
    # A point passing beside another one, however close, is not a contact.
    res = run(p0, p1 + [[0.0, 0.0, 0.0], [0.0, 1e-9, 0.0]], [0.0, 0.0], [REWIND, REWIND])
    assert len(res.hits.t) == 0


def test_resting_contact_moving_along_or_away_is_not_a_contact():
    along = run([[0, 0, -9]], [[5, 3, -9]], [1], [REWIND], walls=True)
    away = run([[0, 0, -9]], [[0, 0, -5]], [1], [REWIND], walls=True)
    assert len(along.hits.t) == 0 and along.end[0].tolist() == [5, 3, -9]
    assert len(away.hits.t) == 0 and away.end[0].tolist() == [0, 0, -5]


def test_non_finite_rows_are_ignored_and_others_still_collide():
    p0 = [[np.nan, 0, 0], [-5, 0, 0], [0, 0, 0]]
    p1 = [[np.nan, 0, 0], [5, 0, 0], [0, 0, 0]]
    res = run(p0, p1, [1, 0.5, 0.5], [REWIND] * 3)
    assert res.hits.a.tolist() == [1] and res.hits.b.tolist() == [2]
    assert not res.moved[0]


def test_a_pillar_absorbs_many_hits_in_one_round():
    # Balls converge on a pillar from all around, at different times; their paths stop
    # short of one another, so the causality bound lets one round take every hit.
    k = 20
    angle = np.linspace(0, 2 * np.pi, k, endpoint=False)
    direction = np.stack([np.cos(angle), np.sin(angle), np.zeros(k)], axis=1)
    start = 20 + 0.1 * np.arange(k)
    p0 = np.vstack([[0, 0, 0], direction * start[:, None]])
    p1 = np.vstack([[0, 0, 0], direction * 4.0])
    res = run(p0, p1, np.r_[5.0, np.full(k, 0.1)], [REWIND] * (k + 1))
    assert res.rounds == 1
    assert sorted(res.hits.a.tolist()) == [0] * k or sorted(res.hits.b.tolist()) == list(
        range(1, k + 1)
    )
    expected = (start - 5.1) / (start - 4.0)
    assert np.sort(res.hits.t) == pytest.approx(np.sort(expected), abs=1e-12)


# ------------------------------------------------------------------ invariants
@pytest.mark.parametrize("seed", range(12))
def test_random_scenes_hold_every_invariant(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        p0, p1, radius, response = random_scene(rng, int(rng.integers(2, 30)))
        res = run(p0, p1, radius, response, walls=True)
        solid = response != SENSOR
        end = res.end
        # Nothing ends outside the box of planes.
        inside = end @ WALLS.T + BOX - radius[:, None]
        assert inside[solid].min(initial=0) >= -SLOP
        # No overlap created among solids (they did not overlap at the start).
        gap = np.linalg.norm(end[:, None] - end[None], axis=2) - (radius[:, None] + radius)
        np.fill_diagonal(gap, np.inf)
        assert gap[np.ix_(solid, solid)].min(initial=np.inf) >= -SLOP
        # Contacts in time order, all within the frame.
        assert np.all(np.diff(res.hits.t) >= 0)
        assert np.all((res.hits.t >= 0) & (res.hits.t <= 1))
        # Every contact respects the causality bound that let the solver batch it.
        sphere = (res.hits.kind == SPHERE) & ~res.hits.sensor
        a, b = res.hits.a[sphere], res.hits.b[sphere]
        bound = _solver._earliest_touch(p0, p1, radius, response == SLIDE, a, b)
        assert np.all(res.hits.t[sphere] >= bound - 1e-12)
        # At each solid contact the surfaces touch (or started overlapping at t = 0).
        dist = np.linalg.norm(res.hits.pos_a[sphere] - res.hits.pos_b[sphere], axis=1)
        touching = np.isclose(dist, radius[a] + radius[b], rtol=1e-9, atol=1e-9)
        assert np.all(touching | (res.hits.t[sphere] == 0))


def test_unimpeded_pairs_agree_with_the_analytic_kernel():
    # Two bodies alone: the solver's first contact is exactly the kernel's time of impact.
    rng = np.random.default_rng(7)
    for _ in range(200):
        p0 = rng.normal(size=(2, 3)) * 5
        p1 = p0 + rng.normal(size=(2, 3)) * 10
        radius = rng.uniform(0.1, 2, 2)
        if np.linalg.norm(p0[0] - p0[1]) <= radius.sum():
            continue
        expected = sphere_sphere_toi(p0[:1], p1[:1], radius[0], p0[1:], p1[1:], radius[1])[0]
        res = run(p0, p1, radius, [REWIND, REWIND])
        if np.isinf(expected):
            assert len(res.hits.t) == 0
        else:
            assert res.hits.t.tolist() == [expected]


def test_the_iteration_cap_holds_everything_safely(monkeypatch):
    monkeypatch.setattr(_solver, "MAX_ROUNDS", 1)
    rng = np.random.default_rng(11)
    capped = 0
    for _ in range(60):
        p0, p1, radius, response = random_scene(rng, 30, speeds=(5.0, 20.0))
        res = run(p0, p1, radius, response, walls=True)
        capped += res.capped
        solid = response != SENSOR
        gap = np.linalg.norm(res.end[:, None] - res.end[None], axis=2) - (radius[:, None] + radius)
        np.fill_diagonal(gap, np.inf)
        assert gap[np.ix_(solid, solid)].min(initial=np.inf) >= -SLOP
        inside = res.end @ WALLS.T + BOX - radius[:, None]
        assert inside[solid].min(initial=0) >= -SLOP
        if res.capped:
            held = res.t_stop[solid].max()
            solid_hits = ~res.hits.sensor
            assert np.all(res.hits.t[solid_hits] <= held)
            assert np.all(res.t_stop[solid] <= held)
    assert capped >= 10  # the fallback really ran


def test_a_deflected_slide_finds_a_body_outside_its_swept_box():
    # A diagonal wall deflects the slide into (1, -1); the sphere it then meets lies
    # outside the box of its straight path, so only the incremental broad phase sees it.
    normal = np.array([[-1.0, -1.0, 0.0]]) / np.sqrt(2)
    offset = np.array([3 / np.sqrt(2)])
    p0 = np.array([[0.0, 0, 0], [3.6, -2.3, 0]])
    p1 = np.array([[6.0, 0, 0], [3.6, -2.3, 0]])
    radius = np.array([0.5, 0.5])
    res = solve(
        p0,
        p1,
        radius,
        np.array([SLIDE, REWIND], np.int8),
        np.full(2, MASK),
        np.full(2, MASK),
        plane_normal=normal,
        plane_offset0=offset,
        plane_offset1=offset,
        plane_mask=np.array([MASK]),
    )
    assert (res.hits.kind == PLANE).tolist() == [True, False]
    straight_box_y = (p0[0, 1] - radius[0], p1[0, 1] + radius[0])
    assert p0[1, 1] + radius[1] < straight_box_y[0]  # out of the straight path's reach
    gap = np.linalg.norm(res.end[0] - res.end[1]) - radius.sum()
    assert gap == pytest.approx(0.0, abs=1e-9)  # stopped touching it, not through it


# ------------------------------------------------------------------ helpers
def test_segment_distance_matches_dense_sampling():
    rng = np.random.default_rng(3)
    k = 400
    a0, a1, b0, b1 = (rng.normal(size=(k, 3)) for _ in range(4))
    a1[:50] = a0[:50]  # a point
    b1[50:100] = b0[50:100]  # a point on the other side
    b1[100:150] = b0[100:150] + (a1[100:150] - a0[100:150])  # parallel
    s = np.linspace(0, 1, 601)
    pa = a0[:, None] + s[None, :, None] * (a1 - a0)[:, None]
    pb = b0[:, None] + s[None, :, None] * (b1 - b0)[:, None]
    sampled = np.array(
        [np.linalg.norm(pa[i][:, None] - pb[i][None], axis=2).min() for i in range(k)]
    )
    exact = _solver._segment_distance(a0, a1, b0, b1)
    assert np.all(exact <= sampled + 1e-12)  # never more than any sampled pair
    assert np.all(sampled - exact <= 1e-2)  # and close to the sampled minimum


def test_prefix_distance_matches_dense_sampling_of_the_travelled_parts():
    # The causality bound's bisection asks how close two straight paths have come by time
    # s: the distance between a0 -> a0 + s da and b0 -> b0 + s db, from dot products of the
    # whole paths. Points, parallel paths and s = 0 included.
    rng = np.random.default_rng(11)
    k = 400
    a0, a1, b0, b1 = (rng.normal(size=(k, 3)) for _ in range(4))
    a1[:50] = a0[:50]
    b1[50:100] = b0[50:100]
    a1[100:120], b1[100:120] = a0[100:120], b0[100:120]  # two points
    b1[120:170] = b0[120:170] + (a1[120:170] - a0[120:170]) * rng.uniform(-2, 2, (50, 1))
    s = rng.uniform(0, 1, k)
    s[170:190] = 0.0
    s[190:210] = 1.0
    u = np.linspace(0, 1, 601)[None, :, None] * s[:, None, None]
    pa = a0[:, None] + u * (a1 - a0)[:, None]
    pb = b0[:, None] + u * (b1 - b0)[:, None]
    sampled = np.array(
        [np.linalg.norm(pa[i][:, None] - pb[i][None], axis=2).min() for i in range(k)]
    )
    exact = _solver._Prefixes(a0, a1, b0, b1).distance(s)
    assert np.all(exact <= sampled + 1e-12)
    assert np.all(sampled - exact <= 1e-2)
    rows = np.arange(0, k, 3)
    part = _solver._Prefixes(a0, a1, b0, b1).take(rows).distance(s[rows])
    assert np.array_equal(part, exact[rows])


def test_no_stopping_pattern_beats_the_causality_bound():
    # Two straight (rewind) bodies may each stop anywhere on their segment at any time:
    # whatever they do, they must not touch before _earliest_touch says they can.
    rng = np.random.default_rng(5)
    k = 3000
    p0 = rng.normal(size=(2 * k, 3)) * 1.5
    p1 = p0 + rng.normal(size=(2 * k, 3)) * rng.choice([0.5, 5.0, 50.0], size=(2 * k, 1))
    radius = rng.uniform(0.2, 1.0, 2 * k)
    i, j = np.arange(0, 2 * k, 2), np.arange(1, 2 * k, 2)
    start_gap = np.linalg.norm(p0[i] - p0[j], axis=1) - radius[i] - radius[j]
    keep = start_gap > 0
    i, j = i[keep], j[keep]
    bound = _solver._earliest_touch(p0, p1, radius, np.zeros(2 * k, bool), i, j)
    stop_i, stop_j = rng.uniform(0, 1, len(i)), rng.uniform(0, 1, len(i))
    t = np.linspace(0, 1, 1001)[None, :, None]
    pos_i = p0[i][:, None] + np.minimum(t, stop_i[:, None, None]) * (p1[i] - p0[i])[:, None]
    pos_j = p0[j][:, None] + np.minimum(t, stop_j[:, None, None]) * (p1[j] - p0[j])[:, None]
    touching = np.linalg.norm(pos_i - pos_j, axis=2) <= (radius[i] + radius[j])[:, None]
    first_touch = np.where(touching.any(axis=1), np.argmax(touching, axis=1) / 1000.0, np.inf)
    assert np.all(first_touch >= bound - 1e-12)
    assert np.isfinite(first_touch).sum() > 100  # the scenes do touch, often


@pytest.mark.parametrize("seed", range(6))
def test_batched_rounds_match_a_strictly_serial_solver(monkeypatch, seed):
    # Accepting only the globally earliest contact each round is time order by
    # construction; the batching (causality bound, neighbour blocking) must change nothing,
    # slides included (their margin puts every pair they can reach in the set up front).
    rng = np.random.default_rng(100 + seed)
    scenes = []
    for _ in range(8):
        scenes.append(random_scene(rng, int(rng.integers(10, 40))))
    batched = [run(*scene, walls=True) for scene in scenes]
    monkeypatch.setattr(_solver, "_blocked", lambda graph, first, still, *a: ~still)
    serial = [run(*scene, walls=True) for scene in scenes]
    for fast, slow in zip(batched, serial):
        assert fast.end == pytest.approx(slow.end, abs=1e-9)
        assert fast.hits.t == pytest.approx(slow.hits.t, abs=1e-12)
        assert sorted(zip(fast.hits.a, fast.hits.b)) == sorted(zip(slow.hits.a, slow.hits.b))
        assert fast.rounds <= slow.rounds
    assert sum(s.rounds for s in serial) > sum(f.rounds for f in batched)


@pytest.mark.parametrize("seed", range(3))
def test_dense_fast_scene_matches_the_serial_solver_in_few_rounds(monkeypatch, seed):
    # The benchmark's kind of scene: fast movers crossing a crowd of slow spheres, where
    # long chains of contacts form. The change bound lets a round take every contact no
    # neighbour can pre-empt; it must still give exactly the serial answer.
    rng = np.random.default_rng(200 + seed)
    n, side = 300, 26.0
    grid = np.stack(np.meshgrid(*[np.arange(7)] * 3, indexing="ij"), -1).reshape(-1, 3)
    p0 = (grid[rng.choice(len(grid), n, replace=False)] + 0.5) * (side / 7)
    p0 += rng.uniform(-0.6, 0.6, p0.shape)
    fast = rng.random(n) < 0.3
    v = rng.normal(size=(n, 3))
    v *= (np.where(fast, 25.0, 0.5) / np.linalg.norm(v, axis=1))[:, None]
    radius = np.full(n, 1.0)
    response = np.full(n, REWIND, np.int8)
    batched = run(p0, p0 + v, radius, response)
    monkeypatch.setattr(_solver, "_blocked", lambda graph, first, still, *a: ~still)
    serial = run(p0, p0 + v, radius, response)
    assert len(serial.hits.t) > 60  # the scene does crowd
    assert not batched.capped and not serial.capped
    assert np.array_equal(batched.end, serial.end)
    assert np.array_equal(batched.t_stop, serial.t_stop)
    assert np.array_equal(np.sort(batched.hits.t), np.sort(serial.hits.t))
    assert sorted(zip(batched.hits.a, batched.hits.b)) == sorted(zip(serial.hits.a, serial.hits.b))
    assert batched.rounds * 4 <= serial.rounds


@pytest.mark.parametrize("max_rounds", [None, 1, 3])
def test_bounds_computed_only_when_a_round_needs_them_give_the_same_pass(monkeypatch, max_rounds):
    # Small pair sets compute the causality bounds lazily: first the change bound with
    # every bound 0 (which can only block more), the real bounds only if that blocks a
    # contact being judged. The pass must be exactly the one with bounds up front, and the
    # scenes must take both branches; at the round cap too, where what is held is found
    # through the pairs (only those that can touch this frame).
    if max_rounds is not None:
        monkeypatch.setattr(_solver, "MAX_ROUNDS", max_rounds)
    rng = np.random.default_rng(31)
    scenes = [random_scene(rng, int(rng.integers(3, 40))) for _ in range(60)]
    computed = []
    bounds = _solver._PairSet._bounds

    def counting(self, i, j):
        computed.append(len(i))
        return bounds(self, i, j)

    monkeypatch.setattr(_solver._PairSet, "_bounds", counting)
    lazy = []
    for scene in scenes:
        before = len(computed)
        lazy.append(run(*scene, walls=True))
        lazy[-1] = (lazy[-1], len(computed) > before)
    monkeypatch.setattr(_solver, "_LAZY_PAIRS", -1)
    for scene, (res, _needed) in zip(scenes, lazy):
        eager = run(*scene, walls=True)
        assert np.array_equal(res.end, eager.end)
        assert np.array_equal(res.t_stop, eager.t_stop)
        for col_lazy, col_eager in zip(res.hits, eager.hits):
            assert np.array_equal(col_lazy, col_eager, equal_nan=True)
        assert res.rounds == eager.rounds
    needed = [needed for _res, needed in lazy]
    rounds = [res.rounds for res, _needed in lazy]
    if max_rounds is None:
        assert any(needed) and not all(needed)
        assert any(r > 0 and not n for r, n in zip(rounds, needed))
    else:
        assert sum(res.capped for res, _needed in lazy) >= 10


def test_a_tilted_plane_gives_the_kernels_exact_time_whatever_its_normals_rounding():
    # Unit normals computed elsewhere (a / |a| in Python floats) are 1 ulp off length 1 a
    # third of the time; the solver must still give sphere_plane_toi's answer bit for bit
    # (that function scales the normal to length 1 itself).
    rng = np.random.default_rng(12)
    off_length = 0
    for _ in range(300):
        a, b, c = rng.normal(size=3)
        length = math.sqrt(a * a + b * b + c * c)
        normal = np.array([[a / length, b / length, c / length]])
        off_length += np.linalg.norm(normal) != 1.0
        p0 = rng.normal(size=(1, 3)) * 3
        p1 = p0 - normal * rng.uniform(8, 30)
        offset = np.array([rng.uniform(-2, 2) - float(normal[0] @ p0[0]) + 5.0])
        res = solve(
            p0, p1, np.array([0.5]), np.array([REWIND], np.int8), np.array([MASK]),
            np.array([MASK]), plane_normal=normal, plane_offset0=offset,
            plane_offset1=offset, plane_mask=np.array([MASK]),
        )  # fmt: skip
        assert res.hits.t.tolist() == sphere_plane_toi(p0, p1, 0.5, normal, offset).tolist()
    assert off_length > 30


def test_a_chain_of_stops_two_neighbours_away_is_waited_for():
    # D stops on E at t = 0.05; C, whose full path never meets D's, then runs into the
    # stopped D; A then runs into the stopped C before it would reach F. Nothing about
    # A's own pending contacts (only F, at t = 0.89) says so: the bound on when A's
    # neighbours can change must follow the chain E -> D -> C -> A.
    p0 = [[0, 0, 0], [-1.5, 0, 0], [-1.9, -5, 0], [-2.6, -0.6, -9], [-2.6, -0.6, 0.9]]
    p1 = [[0, 0, 0], [8.5, 0, 0], [-1.9, 5, 0], [-2.6, -0.6, 1], [-2.6, -0.6, 0.9]]
    res = run(p0, p1, [0.5] * 5, [REWIND] * 5)
    e, d, c, a, f = range(5)
    y_c = -np.sqrt(1.0 - 0.9**2)  # C's centre when it meets D, stopped at x = -1
    z_a = -np.sqrt(1.0 - 0.7**2 - (0.6 + y_c) ** 2)  # A's centre when it meets C
    assert res.t_stop[d] == pytest.approx(0.05, abs=1e-12)
    assert res.t_stop[c] == pytest.approx((5.0 + y_c) / 10.0, abs=1e-12)
    assert res.t_stop[a] == pytest.approx((9.0 + z_a) / 10.0, abs=1e-12)
    pairs = sorted(zip(res.hits.a.tolist(), res.hits.b.tolist()))
    assert pairs == [(e, d), (d, c), (c, a)]  # F is never reached
