"""The one-round pass (``_one_round``) against the general solver it stands in for.

Where it takes a frame, its answer must be the general solver's, bit for bit: every end,
every stop time, every contact with all its columns. Where its conditions fail it must
decline (and the general solver then runs). The scenes here are the kinds it takes (rewind
bodies, sensors, still planes, masks) at densities where it sometimes declines, so both
sides of its rule are exercised; the test also checks that both happened.
"""

from __future__ import annotations

import numpy as np
import pytest

from panda3d_ccd import _one_round, _solver
from panda3d_ccd._frames import Frames
from panda3d_ccd._obstacles import Planes
from panda3d_ccd._one_round import Backoff, Declined, Split, one_round
from panda3d_ccd._pieces import BOX, TRIANGLE, Pieces
from panda3d_ccd._solver import KINEMATIC, REWIND, SENSOR, SLIDE, PassResult, solve

WALLS = np.array(
    [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], dtype=np.float64
)


def random_frame(rng: np.random.Generator, n: int, *, side: float, sensors: float, masks: bool):
    """n spheres in a box of ``side`` closed by six walls, most slow, a few fast, some
    resting; some sensors; random masks if ``masks``."""
    p0 = rng.uniform(-side / 2, side / 2, (n, 3))
    speed = np.where(rng.random(n) < 0.1, 3.0, 0.4) * rng.uniform(0.5, 1.5, n)
    speed[rng.random(n) < 0.15] = 0.0
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    p1 = p0 + d * speed[:, None]
    radius = rng.uniform(0.2, 0.6, n)
    response = np.where(rng.random(n) < sensors, SENSOR, REWIND).astype(np.int8)
    if masks:
        from_mask = rng.integers(1, 4, n).astype(np.int64)
        into_mask = rng.integers(1, 4, n).astype(np.int64)
    else:
        from_mask = into_mask = np.full(n, 0xFFFFF, np.int64)
    off = np.full(6, side / 2 + 0.5)
    plane_mask = np.full(6, 0xFFFFF, np.int64)
    return p0, p1, radius, response, from_mask, into_mask, off, plane_mask


def general(frame):
    p0, p1, radius, response, from_mask, into_mask, off, plane_mask = frame
    return solve(
        p0, p1, radius, response, from_mask, into_mask,
        plane_normal=WALLS, plane_offset0=off, plane_offset1=off, plane_mask=plane_mask,
        one_round_first=False,
    )  # fmt: skip


def quick(frame):
    p0, p1, radius, response, from_mask, into_mask, off, plane_mask = frame
    planes = Planes(WALLS, off, off, plane_mask)
    return one_round(p0, p1, radius, response, from_mask, into_mask, [planes], None)


def by_pair(hits):
    """The hits' columns in one order (by pair and kind), whatever order they came in."""
    order = np.lexsort((hits.kind, hits.b, hits.a))
    return [np.asarray(col)[order] for col in hits]


def assert_same(one, ref, split=False):
    """Bit for bit; ``split``: but for a contact's approach speed, which may differ in its
    last bits (a frame split between one round and the general solver: the general solver
    may compute it on a path restarted at that instant, and numpy's dot products round
    differently with the rows' layout; found 4e-14 relative on a speed of 4e-4)."""
    np.testing.assert_array_equal(one.end, ref.end)
    np.testing.assert_array_equal(one.t_stop, ref.t_stop)
    np.testing.assert_array_equal(one.moved, ref.moved)
    assert one.capped == ref.capped
    assert one.candidates == ref.candidates
    # (The general solver may take a second round to learn what one round checks.)
    assert one.rounds <= ref.rounds and (one.rounds == 0) == (ref.rounds == 0)
    for name, a, b in zip(ref.hits._fields, by_pair(one.hits), by_pair(ref.hits)):
        if name == "speed" and split:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("masks", [False, True])
@pytest.mark.parametrize("sensors", [0.0, 0.2])
@pytest.mark.parametrize("n, side", [(10, 8.6), (30, 12.4), (100, 18.6), (300, 26.8)])
def test_where_it_takes_a_frame_it_gives_the_general_solvers_answer(n, side, sensors, masks):
    rng = np.random.default_rng(n * 7 + int(10 * sensors) + masks)
    taken = declined = with_hits = 0
    for _ in range(60):
        frame = random_frame(rng, n, side=side, sensors=sensors, masks=masks)
        one = quick(frame)
        if not isinstance(one, PassResult):
            declined += 1
            continue
        taken += 1
        ref = general(frame)
        assert_same(one, ref)
        with_hits += len(ref.hits.t) > 0
    # Both sides of the rule ran, and the frames taken had contacts to get right.
    assert taken >= 10 and with_hits >= 5
    if n >= 100:
        assert declined >= 1


def test_it_declines_what_it_does_not_handle():
    rng = np.random.default_rng(3)
    frame = random_frame(rng, 10, side=8.0, sensors=0.0, masks=False)
    p0, p1, radius, response, from_mask, into_mask, off, plane_mask = frame
    planes = Planes(WALLS, off, off, plane_mask)
    taken = one_round(p0, p1, radius, response, from_mask, into_mask, [planes], None)
    assert isinstance(taken, PassResult)
    for kind in (SLIDE, KINEMATIC):
        other = response.copy()
        other[4] = kind
        assert one_round(p0, p1, radius, other, from_mask, into_mask, [planes], None) is None
    moving = Planes(WALLS, off, off + 0.1, plane_mask)
    assert one_round(p0, p1, radius, response, from_mask, into_mask, [moving], None) is None
    # One sphere a node, in any order: taken.
    shuffled = np.random.default_rng(5).permutation(10)
    taken = one_round(p0, p1, radius, response, from_mask, into_mask, [planes], shuffled)
    assert isinstance(taken, PassResult)
    group = np.arange(10)
    group[3] = 4  # two spheres of one node
    assert one_round(p0, p1, radius, response, from_mask, into_mask, [planes], group) is None
    bad = p1.copy()
    bad[2] = np.nan
    assert one_round(p0, bad, radius, response, from_mask, into_mask, [planes], None) is None


def test_a_stop_that_changes_another_pair_is_left_to_the_general_solver():
    """A ball stopped by a wall early, with a second ball behind it on the same line: the
    second's contact with where the first stopped is not on the straight paths, so one
    round cannot know it; declined, and the general solver finds it."""
    p0 = np.array([[0.0, 0, 0], [-1.5, 0, 0]])
    p1 = np.array([[3.0, 0, 0], [1.5, 0, 0]])
    radius = np.array([0.5, 0.5])
    response = np.array([REWIND, REWIND], np.int8)
    mask = np.full(2, 1, np.int64)
    normal = np.array([[-1.0, 0, 0]])
    off = np.array([1.0])  # the wall x = 1, facing -x
    planes = Planes(normal, off, off, np.array([1]))
    declined = one_round(p0, p1, radius, response, mask, mask, [planes], None)
    # Declined after its broad phase: the pairs it found go to the general solver.
    assert isinstance(declined, Declined)
    assert [p.tolist() for p in declined.pairs] == [[0], [1]]
    ((plane_i, plane_k),) = declined.table_pairs
    assert [plane_i.tolist(), plane_k.tolist()] == [[0, 1], [0, 0]]
    result = solve(
        p0, p1, radius, response, mask, mask,
        plane_normal=normal, plane_offset0=off, plane_offset1=off, plane_mask=np.array([1]),
    )  # fmt: skip
    # The first stops touching the wall (x = 0.5); the second touching the first (x = -0.5).
    np.testing.assert_allclose(result.end[:, 0], [0.5, -0.5], atol=1e-12)
    assert result.rounds == 2


def test_solve_uses_it_and_the_general_solver_alike(monkeypatch):
    """solve() returns the one-round answer where it applies, the general one elsewhere;
    where one round declines after its broad phase, that broad phase is the only one."""
    calls = []
    real = _one_round.one_round

    def spy(*args):
        result = real(*args)
        calls.append(type(result))
        return result

    monkeypatch.setattr(_one_round, "one_round", spy)
    searched = []
    pairs = _solver._sphere_pairs

    def count(*args):
        searched.append(1)
        return pairs(*args)

    monkeypatch.setattr(_solver, "_sphere_pairs", count)
    monkeypatch.setattr(_one_round, "_sphere_pairs", count)
    rng = np.random.default_rng(11)
    for k in range(40):
        # (One frame in four a crowd: every body in one cluster, for the general solver.)
        frame = random_frame(rng, 100, side=3.0 if k % 4 == 0 else 18.6, sensors=0.1, masks=False)
        p0, p1, radius, response, from_mask, into_mask, off, plane_mask = frame
        searched.clear()
        result = solve(
            p0, p1, radius, response, from_mask, into_mask,
            plane_normal=WALLS, plane_offset0=off, plane_offset1=off, plane_mask=plane_mask,
        )  # fmt: skip
        assert len(searched) == 1
        ref = general(frame)
        assert result.one_round == (calls[-1] in (PassResult, Split))
        if result.one_round:
            assert_same(result, ref, split=True)
        else:
            assert_same_pass(result, ref)
    assert {PassResult, Split, Declined} <= set(calls)


def level_tables(rng: np.random.Generator, side: float):
    """A static level under a box of ``side``: a bumpy floor of triangles (one-sided, facing
    up) at about z = -side / 2, and a static sensor box (a trigger zone) in the middle."""
    cells = 8
    step = side / cells
    xs = np.arange(cells + 1) * step - side / 2
    height = rng.uniform(-0.3, 0.3, (cells + 1, cells + 1)) - side / 2
    grid = np.stack(np.meshgrid(xs, xs, indexing="ij"), axis=-1)
    corner = np.concatenate([grid, height[..., None]], axis=-1)
    p, q = corner[:-1, :-1].reshape(-1, 3), corner[1:, :-1].reshape(-1, 3)
    r, s = corner[1:, 1:].reshape(-1, 3), corner[:-1, 1:].reshape(-1, 3)
    a, b, c = np.concatenate([p, p]), np.concatenate([q, r]), np.concatenate([r, s])
    m = len(a)
    floor = Pieces(TRIANGLE, (a, b, c, np.zeros(m, bool)), np.full(m, 0xFFFFF, np.int64))
    zone = Pieces(BOX, (np.array([[-2.0, -2, -2]]), np.array([[2.0, 2, 2]])),
                  np.full(1, 0xFFFFF, np.int64), sensor=np.ones(1, bool))  # fmt: skip
    return [floor, zone]


@pytest.mark.parametrize("n, side", [(10, 8.6), (100, 18.6)])
def test_against_a_static_level_it_gives_the_general_solvers_answer(n, side):
    """The same rule with a static level's tables beside the planes: a floor of triangles
    the spheres fall onto (fast ones through it in one frame) and a sensor zone."""
    rng = np.random.default_rng(n)
    tables = level_tables(rng, side)
    taken = declined = on_level = zoned = 0
    for _ in range(40):
        p0, p1, radius, response, from_mask, into_mask, off, plane_mask = random_frame(
            rng, n, side=side, sensors=0.1, masks=False
        )
        p1[:, 2] -= np.where(rng.random(n) < 0.3, rng.uniform(0, side, n), 0.0)
        planes = Planes(WALLS[:4], off[:4], off[:4], plane_mask[:4])
        one = one_round(p0, p1, radius, response, from_mask, into_mask, [planes, *tables], None)
        ref = solve(
            p0, p1, radius, response, from_mask, into_mask, plane_normal=WALLS[:4],
            plane_offset0=off[:4], plane_offset1=off[:4], plane_mask=plane_mask[:4],
            obstacles=tables, one_round_first=False,
        )  # fmt: skip
        if not isinstance(one, PassResult):
            declined += 1
            continue
        taken += 1
        assert_same(one, ref)
        on_level += np.count_nonzero(ref.hits.kind == TRIANGLE)
        zoned += np.count_nonzero(ref.hits.kind == BOX)
    # Both sides of the rule ran; the frames taken had floor contacts and zone reports.
    assert taken >= 15 and on_level >= 100 and zoned >= 40
    if n >= 100:
        assert declined >= 1


def test_a_moving_level_piece_is_left_to_the_general_solver():
    rng = np.random.default_rng(2)
    p0, p1, radius, response, from_mask, into_mask, off, plane_mask = random_frame(
        rng, 10, side=8.6, sensors=0.0, masks=False
    )
    turn = np.array([[1.0, 0, 0, 0]])
    rising = Frames(turn, np.zeros((1, 3)), turn, np.array([[0.0, 0, 0.5]]))
    box = (np.array([[-1.0, -1, -5]]), np.array([[1.0, 1, -4]]))
    lift = Pieces(BOX, box, np.full(1, 0xFFFFF, np.int64), frame=np.zeros(1, np.int64))
    lift.set_frames(rising)
    still = Planes(WALLS, off, off, plane_mask)
    assert isinstance(
        one_round(p0, p1, radius, response, from_mask, into_mask, [still], None), PassResult
    )
    assert one_round(p0, p1, radius, response, from_mask, into_mask, [still, lift], None) is None


def assert_same_pass(result, ref):
    """Two general passes of one frame agree in every field."""
    for a, b in zip(result, ref):
        if isinstance(a, tuple):
            assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


def test_backoff_tries_every_pass_while_taken_and_backs_off_after_declines():
    backoff = Backoff(longest=4)
    tried = []
    # Taken, taken, then declined at every try.
    outcomes = iter([True, True] + [False] * 10)
    for _ in range(16):
        ready = backoff.ready()
        tried.append(ready)
        if ready:
            backoff.record(next(outcomes))
    # Every pass while taken; after declines, skip 1, then 2, then 4, then 4 passes.
    assert tried == [True, True, True, False, True, False, False, True] + [False] * 4 + [
        True, False, False, False,
    ]  # fmt: skip
    backoff.record(True)
    assert backoff.ready() and backoff.ready()


# ------------------------------------------------------------------------- split frames
def test_a_cluster_in_trouble_goes_to_the_general_solver_and_the_rest_is_one_rounds():
    """Two balls in a line behind a wall (the second meets where the first stops: not one
    round's to know) are rows 2 and 3; ball 0 meets a wall far away, ball 1 meets nothing.
    One round answers 0 and 1 and leaves the pair to the general solver, its pairs
    numbered as its rows; solve() puts the answers together under the frame's numbers."""
    p0 = np.array([[0.0, 20, 0], [0.0, -20, 0], [0.0, 0, 0], [-1.5, 0, 0]])
    p1 = np.array([[0.0, 20, 3], [0.0, -20, 1], [3.0, 0, 0], [1.5, 0, 0]])
    radius = np.full(4, 0.5)
    response = np.full(4, REWIND, np.int8)
    mask = np.full(4, 1, np.int64)
    normal = np.array([[-1.0, 0, 0], [0.0, 0, -1]])
    off = np.array([1.0, 2.0])  # the wall x = 1 facing -x, the ceiling z = 2 facing down
    planes = Planes(normal, off, off, np.array([1, 1]))
    split = one_round(p0, p1, radius, response, mask, mask, [planes], None)
    assert isinstance(split, Split)
    assert split.rows.tolist() == [2, 3]
    assert [p.tolist() for p in split.known.pairs] == [[0], [1]]
    ((plane_i, plane_k),) = split.known.table_pairs
    assert [plane_i.tolist(), plane_k.tolist()] == [[0, 1], [0, 0]]
    result = solve(
        p0, p1, radius, response, mask, mask,
        plane_normal=normal, plane_offset0=off, plane_offset1=off, plane_mask=np.array([1, 1]),
    )  # fmt: skip
    assert result.one_round and result.rounds == 2
    # Ball 0 stops under the ceiling (z = 1.5, t = 0.5), ball 1 runs its path, ball 2
    # stops at the wall (x = 0.5), ball 3 against ball 2 (x = -0.5).
    ends = [[0, 20, 1.5], [0, -20, 1], [0.5, 0, 0], [-0.5, 0, 0]]
    np.testing.assert_allclose(result.end, ends, rtol=0, atol=1e-15)
    np.testing.assert_allclose(result.t_stop, [0.5, 1.0, 1 / 6, 1 / 3], rtol=0, atol=1e-15)
    assert result.moved.tolist() == [True, False, True, True]
    hits = result.hits
    contacts = sorted(zip(hits.a.tolist(), hits.kind.tolist(), hits.b.tolist()))
    assert contacts == [(0, _solver.PLANE, 1), (2, _solver.SPHERE, 3), (2, _solver.PLANE, 0)]
    assert_same(result, general_of(p0, p1, radius, response, mask, normal, off))


def general_of(p0, p1, radius, response, mask, normal, off):
    return solve(
        p0, p1, radius, response, mask, mask, plane_normal=normal, plane_offset0=off,
        plane_offset1=off, plane_mask=np.ones(len(off), np.int64), one_round_first=False,
    )  # fmt: skip


@pytest.mark.parametrize("level", [False, True], ids=["planes", "static-level"])
@pytest.mark.parametrize("n, side", [(100, 12.0), (300, 16.0), (1000, 26.0)])
def test_where_it_splits_a_frame_solve_gives_the_general_solvers_answer(n, side, level):
    """Random frames dense enough that most have a cluster in trouble: solve()'s answer
    from one round and the general solver on the clusters is the general solver's on the
    whole frame: every end, stop time and contact bit for bit, but for the approach speed
    of a contact, which may differ in its last bits (the general solver computes it from
    a path it may have restarted at that very time)."""
    rng = np.random.default_rng(n + level)
    tables = level_tables(rng, side) if level else []
    splits = rows = 0
    for _ in range(16):
        p0, p1, radius, response, from_mask, into_mask, off, plane_mask = random_frame(
            rng, n, side=side, sensors=0.1, masks=False
        )
        if level:
            p1[:, 2] -= np.where(rng.random(n) < 0.3, rng.uniform(0, side, n), 0.0)
        args = (p0, p1, radius, response, from_mask, into_mask)
        planes = dict(
            plane_normal=WALLS, plane_offset0=off, plane_offset1=off, plane_mask=plane_mask
        )
        one = one_round(*args, [Planes(WALLS, off, off, plane_mask), *tables], None)
        if not isinstance(one, Split):
            continue
        splits += 1
        rows += len(one.rows)
        result = solve(*args, **planes, obstacles=tables)
        assert result.one_round
        assert_same(result, solve(*args, **planes, obstacles=tables, one_round_first=False), True)
    # Most frames split, leaving one round most of the bodies (fewer with the level,
    # where fast falling balls join many clusters).
    assert splits >= 6 and rows < (0.6 if level else 0.2) * n * splits


@pytest.mark.parametrize("n, side", [(30, 12.4), (300, 16.0)])
def test_rows_not_finite_leave_the_rest_to_one_round(n, side):
    """Frames where some rows are not finite (nodes out of the scene, a NaN transform:
    NaN or inf at the start, the end or both): solve() answers the finite rows as a frame
    of their own, one round first, and leaves the others NaN and still, with no contact:
    the general solver's answer on the whole frame (the speed's last bits aside)."""
    rng = np.random.default_rng(n)
    taken = 0
    for k in range(20):
        frame = random_frame(rng, n, side=side, sensors=0.1, masks=k % 2 == 1)
        p0, p1, radius, response, from_mask, into_mask, off, plane_mask = frame
        out = rng.choice(n, max(2, n // 10), replace=False)
        where = rng.integers(0, 3, len(out))  # at the start, the end, or both
        p0[out[where != 1], rng.integers(0, 3)] = np.nan
        p1[out[where != 0], rng.integers(0, 3)] = [np.nan, np.inf, -np.inf][k % 3]
        args = (p0, p1, radius, response, from_mask, into_mask)
        planes = dict(
            plane_normal=WALLS, plane_offset0=off, plane_offset1=off, plane_mask=plane_mask
        )
        result = solve(*args, **planes)
        ref = solve(*args, **planes, one_round_first=False)
        assert np.isnan(result.end[out]).all() and not result.moved[out].any()
        assert not np.isin(result.hits.a, out).any()
        if result.one_round:
            taken += 1
            assert_same(result, ref, split=True)
        else:
            assert_same_pass(result, ref)
    assert taken >= 5


def test_a_long_line_of_isolated_stops_is_answered_in_full_where_the_general_solver_caps():
    """300 balls side by side (1e-8 apart) run into the wall y = 1.4, each faster than its
    left neighbour, and far away a ball stopped by a wall has another behind it. One round
    answers the 300 (each stops at the wall: nothing it does reaches a neighbour); the
    general solver, whose bounds take them one a round, would stop at its round cap and
    hold most of them short. Split, the pair alone is the general solver's."""
    count, r = 300, 0.5
    p0 = np.zeros((count, 3))
    p0[:, 0] = np.arange(count) * (2 * r + 1e-8)
    p1 = p0.copy()
    p1[:, 1] = 1.0 + 0.01 * np.arange(count)
    p0 = np.vstack([p0, [[-20.0, 0, 100], [-18.5, 0, 100]]])
    p1 = np.vstack([p1, [[-23.0, 0, 100], [-21.5, 0, 100]]])
    n = len(p0)
    radius = np.full(n, r)
    response = np.full(n, REWIND, np.int8)
    mask = np.ones(n, np.int64)
    normal = np.array([[0.0, -1, 0], [1.0, 0, 0]])
    off = np.array([1.4, 21.0])  # y = 1.4 facing -y; x = -21 facing +x
    planes = [Planes(normal, off, off, mask[:2])]
    one = one_round(p0, p1, radius, response, mask, mask, planes, None)
    assert isinstance(one, Split) and one.rows.tolist() == [count, count + 1]
    result = solve(
        p0, p1, radius, response, mask, mask,
        plane_normal=normal, plane_offset0=off, plane_offset1=off, plane_mask=mask[:2],
    )  # fmt: skip
    assert not result.capped and result.rounds == 2
    np.testing.assert_allclose(result.end[:count, 1], 0.9, rtol=0, atol=1e-15)
    np.testing.assert_allclose(result.end[count:, 0], [-20.5, -19.5], rtol=0, atol=1e-12)
    assert len(result.hits.t) == count + 2
