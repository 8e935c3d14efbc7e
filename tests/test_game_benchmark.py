"""The game-like scene of ``python -m benchmarks`` and its numpy operation counter.

The scene is checked where it can be wrong: the plugin's copy of the game never leaves a
sphere past a wall or in another, every bounce keeps the sphere's speed, the spheres do
bounce; the counter is checked against a snippet whose operations are known one by one.
No timing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.game import (  # noqa: E402
    AGAIN_PATTERN,
    SWEEP_FLOOR,
    Game,
    SweepFloor,
    end_state,
    first_contacts,
    game_scene,
    time_game,
)
from benchmarks.opcount import OpCounter  # noqa: E402
from benchmarks.pooled import pooled_times  # noqa: E402
from benchmarks.systems import PluginOptions, PluginSystem, begin_frame, end_frame  # noqa: E402
from benchmarks.timing import PLUGIN, TRAVERSER  # noqa: E402


def _play(game: Game, frames: int) -> tuple[np.ndarray, int]:
    """Play ``frames`` frames; the end state of each and the events in all."""
    states, events = [], 0
    for _ in range(frames):
        begin_frame()
        game.move()
        game.system.run()
        events += game.bounce()
        state = end_state(game.positions(), game.scene)
        states.append((state.outside, state.overlapping))
        end_frame()
    return np.array(states), events


@pytest.mark.parametrize("kind", [PLUGIN, TRAVERSER])
def test_every_bounce_keeps_the_speed_and_the_spheres_do_bounce(kind: str) -> None:
    scene = game_scene(30, seed=4)
    game = Game(scene, kind)
    try:
        states, events = _play(game, 40)
        speed0 = np.linalg.norm(scene.velocity, axis=1)
        np.testing.assert_allclose(np.linalg.norm(game.velocity, axis=1), speed0, rtol=1e-12)
        turned = np.sum(game.velocity * scene.velocity, axis=1) < 0.0
        assert events >= 20 and turned.sum() >= 5, (events, turned.sum())
        if kind == PLUGIN:
            # Rewound at each contact: nothing ends past a wall or in another sphere.
            assert states.sum() == 0, states
    finally:
        game.close()


def test_the_timed_game_reports_every_system_and_a_bouncing_scene() -> None:
    result = time_game(12, seed=2, frames=25, warmup=1, limit_s=3.0)
    assert set(result.ms) == {"panda3d-ccd", "CollisionTraverser", "floor", SWEEP_FLOOR}
    assert all(ms is not None and ms > 0 for ms in result.ms.values())
    stats = result.stats
    assert stats["panda3d-ccd frames"] == stats["CollisionTraverser frames"] == 25
    assert 0 < stats["panda3d-ccd frames with contacts"] <= 25
    assert stats["panda3d-ccd outside"] == stats["panda3d-ccd overlapping"] == 0
    assert stats["panda3d-ccd rounds max"] >= 1 and "CollisionTraverser missed" in stats
    # One count per timed pass; a pass reads, solves and writes back whatever happens (a
    # quiet pass of 12 spheres in the walls: some 90 operations).
    assert len(result.ops) == 25 and min(result.ops) > 50
    assert result.ops_by["phase"]["read"] > 0 and result.ops_by["phase"]["solve"] > 0


@pytest.mark.parametrize("seed", range(5))
def test_the_sweep_floor_finds_each_spheres_first_contact_by_the_exact_kernels(seed) -> None:
    # Spheres apart in a box, moving up to 3 units: each one's first time of contact with a
    # wall or another sphere, by the plugin's exact kernels over every pair.
    from panda3d_ccd.sweep import sphere_plane_toi, sphere_sphere_toi

    rng = np.random.default_rng(seed)
    radius, side, n = 0.45, 8.0, 40
    p0 = np.zeros((0, 3))
    while len(p0) < n:  # apart from each other and from the walls
        p = rng.uniform(radius, side - radius, 3)
        if np.all(np.linalg.norm(p0 - p, axis=1) > 2 * radius):
            p0 = np.vstack([p0, p])
    p1 = p0 + rng.uniform(-3, 3, (n, 3))
    walls = [((1, 0, 0), 0.0), ((-1, 0, 0), side), ((0, 1, 0), 0.0), ((0, -1, 0), side),
             ((0, 0, 1), 0.0), ((0, 0, -1), side)]  # fmt: skip
    normal = np.array([w[0] for w in walls], np.float64)
    offset = np.array([w[1] for w in walls], np.float64)
    i, j = np.triu_indices(n, 1)
    t, by_wall, what = first_contacts(p0, p1, radius, normal, offset, i, j)

    expected = np.ones(n)
    for w in range(6):
        tw = sphere_plane_toi(p0, p1, radius, normal[w], offset[w])
        expected = np.fmin(expected, tw)
    tij = sphere_sphere_toi(p0[i], p1[i], radius, p0[j], p1[j], radius)
    for a, b, tt in zip(i, j, tij):
        expected[a], expected[b] = np.fmin(expected[a], tt), np.fmin(expected[b], tt)
    assert np.count_nonzero(expected < 1) >= n // 2  # the frames hold many contacts
    assert t == pytest.approx(expected, abs=1e-9)
    # What stopped each: the wall or the sphere met at that time.
    stopped = np.flatnonzero(t < 1)
    for k in stopped:
        if by_wall[k]:
            assert sphere_plane_toi(p0[k], p1[k], radius, normal[what[k]], offset[what[k]]) == (
                pytest.approx(t[k], abs=1e-9)
            )
        else:
            o = what[k]
            assert sphere_sphere_toi(p0[k], p1[k], radius, p0[o], p1[o], radius) == (
                pytest.approx(t[k], abs=1e-9)
            )


def test_the_sweep_floor_plays_the_game_and_writes_where_it_stopped() -> None:
    floor = SweepFloor(game_scene(30, seed=3))
    try:
        stops = 0
        for _ in range(40):
            begin_frame()
            floor.move()
            floor.run()
            moved, _by_wall, _what = floor.stopped
            stops += len(moved)
            read = np.array([tuple(node.getPos()) for node in floor.world.nodes])
            assert read == pytest.approx(floor.last, abs=1e-4)  # the stopped ones written
            floor.bounce()
            end_frame()
        assert stops > 0 and floor.contacts == stops
    finally:
        floor.close()


def _snippet(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    c = a + b  # ndarray.__add__
    d = c[a > 0]  # compare, a[...]
    d[0] = 1.0  # a[...] = v
    e = np.concatenate([c, d])  # np.concatenate
    np.linalg.norm(e)  # np.linalg.norm: one, not the operations it makes itself
    np.maximum.reduce(e)  # np.maximum.reduce
    e.astype(np.float32)  # ndarray.astype
    e += 1.0  # ndarray.__iadd__
    return -e  # ndarray.__neg__


def test_the_plugins_default_start_is_panda3ds_previous_transform_in_this_game() -> None:
    """The timed plugin sweeps from where it left each sphere (its default); in this game
    that is where Panda3D's previous transform puts each frame's start too, so a copy
    reading the previous transform plays exactly the same game."""
    scene = game_scene(150, seed=4)
    own, panda = Game(scene, PLUGIN), Game(scene, PLUGIN)
    assert not own.system.ccd.respect_prev_transform
    panda.system = PluginSystem(
        panda.world, PluginOptions(respect_prev_transform=True), panda.messenger
    )
    panda.system.ccd.add_again_pattern(AGAIN_PATTERN)
    events = 0
    for _ in range(40):
        begin_frame()
        own.move()
        panda.move()
        own.system.run()
        panda.system.run()
        events += own.bounce()
        panda.bounce()
        np.testing.assert_array_equal(own.positions(), panda.positions())
        end_frame()
    assert events > 40  # and they did bounce, rewound on their contacts


def test_the_counter_counts_each_operation_of_its_files_once() -> None:
    counter = OpCounter(root=Path(__file__).parent)
    a, b = np.arange(-2.0, 3.0), np.ones(5)
    with counter.counting():
        expected = _snippet(a, b)
    counts = counter.take()
    ops = sorted(what for (_phase, _where, what), k in counts.items() for _ in range(k))
    assert ops == sorted([
        "ndarray.__add__", "compare", "a[...]", "a[...] = v", "np.concatenate",
        "np.linalg.norm", "np.maximum.reduce", "ndarray.astype", "ndarray.__iadd__",
        "ndarray.__neg__",
    ])  # fmt: skip
    assert {where for _phase, where, _what in counts} == {"test_game_benchmark:_snippet"}
    # Same result, and everything put back: nothing is counted once the block is left.
    np.testing.assert_array_equal(_snippet(a, b), expected)
    assert counter.total == 0 and not counter.errors


def test_an_operation_raising_while_counted_is_recorded_and_raises() -> None:
    counter = OpCounter(root=Path(__file__).parent)
    with counter.counting(), pytest.raises(SystemError):
        np.ones(3) + np.ones(2)
    assert len(counter.errors) == 1 and "broadcast" in counter.errors[0]
    with pytest.raises(ValueError, match="broadcast"):
        np.ones(3) + np.ones(2)


def test_the_default_run_prints_the_game_tables_the_demo_and_the_profile(
    tmp_path: Path,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--sizes", "10,30", "--frames", "6",
         "--warmup", "1", "--demo-frames", "2", "--profile", "--profile-n", "10",
         "--profile-frames", "3", "--no-plot", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    record = json.loads((tmp_path / "results.json").read_text())
    assert (
        "| colliders | plugin ms | traverser ms | traverser/plugin | sweep floor ms "
        "| traverser/sweep floor | floor ms " in out
    )
    assert [row["n"] for row in record["timing"]] == [10, 30]
    for row in record["timing"]:
        assert row["ms"]["sweep floor"] > 0
        assert len(row["ops"]) == 6 and min(row["ops"]) > 0
        assert f"| {row['n']} | {row['side']:.1f} | panda3d-ccd | 6 |" in out
    assert "| colliders | read | solve | write back | events | other | all |" in out
    assert record["demo"]["plugin"] > 0 and record["demo"]["traverser"] > 0
    assert "## Profile of the plugin's pass at n=10" in out and "| **solve** |" in out
    assert (tmp_path / "results.md").read_text().strip() in out


def test_the_pooled_game_plays_as_the_plain_one_and_is_timed(monkeypatch) -> None:
    """A pool of detached nodes changes nothing in the game (the benchmark checks every
    sphere's end position to the bit, and raises otherwise); both copies are timed."""
    result = pooled_times(20, 3, 40)
    assert result["plain_ms"] > 0 and result["pooled_ms"] > 0
    assert result["ratio"] == result["pooled_ms"] / result["plain_ms"]
    # And the check can fail: a pool that moves a sphere of the game is caught.
    import benchmarks.pooled as pooled

    real = pooled.GamePasses
    made = []

    def passes(n, *, seed):
        made.append(real(n, seed=seed))
        if len(made) == 2:  # the pooled copy's first sphere starts elsewhere
            node = made[1].game.world.nodes[0]
            node.setX(node.getX() + 0.5)
        return made[-1]

    monkeypatch.setattr(pooled, "GamePasses", passes)
    with pytest.raises(RuntimeError, match="played differently"):
        pooled_times(20, 3, 5)
