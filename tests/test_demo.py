"""The bundled demo: its arena model (the egg is what the generator writes, and Panda3D loads
from it exactly the solids the arena describes), headless runs (no tunnelling, every kind of
level piece hit and reported, deterministic), the screenshot, the no-display message, and
the demo's independent ground truth."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo import arena  # noqa: E402
from demo.make_arena import EGG_PATH, egg_text  # noqa: E402
from demo.truth import (  # noqa: E402
    GRAZE,
    Boxes,
    Capsules,
    Movers,
    Scene,
    Spheres,
    Triangles,
    expected_hits,
    went_into,
)

TIMING_FIELDS = {"ms_per_frame"}


def run_demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )


def fields_of(line: str) -> dict[str, str]:
    return dict(field.split("=", 1) for field in line[len("summary: "):].split())


def summary(proc: subprocess.CompletedProcess) -> dict[str, str]:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("summary: ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return fields_of(lines[0])


# ---------------------------------------------------------------- the arena model
def test_the_committed_egg_is_what_the_generator_writes():
    assert EGG_PATH.read_text() == egg_text(), "run `python -m demo.make_arena`"


def _loaded_pieces():
    from panda3d.core import Filename, Loader, LoaderOptions, NodePath

    options = LoaderOptions(LoaderOptions.LF_no_cache)
    root = NodePath(Loader.getGlobalPtr().loadSync(Filename.fromOsSpecific(str(EGG_PATH)),
                                                   options))
    found = root.findAllMatches("**/+CollisionNode")
    return root, {int(path.getNetTag("piece")): path for path in found}


def test_the_egg_loads_into_the_collision_solids_the_arena_describes():
    from panda3d.core import CollisionBox, CollisionCapsule, CollisionPolygon

    root, nodes = _loaded_pieces()
    assert sorted(nodes) == list(range(len(arena.PIECES)))
    for index, piece in enumerate(arena.PIECES):
        path = nodes[index]
        node = path.node()
        assert path.getName() == piece.name
        assert node.getIntoCollideMask().getWord() == piece.mask
        assert node.getFromCollideMask().getWord() == 0
        solids = list(node.getSolids())
        frame = path.getNetTransform()
        np.testing.assert_allclose(frame.getPos(), piece.origin, atol=1e-5)
        assert frame.getHpr()[0] == pytest.approx(piece.heading, abs=1e-4)
        if piece.solid == "polyset":
            assert [type(s) for s in solids] == [CollisionPolygon] * len(piece.faces)
            for solid, face in zip(solids, piece.faces):
                # The same corners in the same (counter-clockwise) order, and Panda3D's
                # front is the face's front.
                np.testing.assert_allclose(np.array(solid.getPoints()), face.points, atol=1e-5)
                np.testing.assert_allclose(solid.getNormal(), face.normal, atol=1e-6)
        elif piece.solid == "box":
            assert [type(s) for s in solids] == [CollisionBox]
            np.testing.assert_allclose(solids[0].getMin(), piece.lo, atol=1e-5)
            np.testing.assert_allclose(solids[0].getMax(), piece.hi, atol=1e-5)
        else:
            assert [type(s) for s in solids] == [CollisionCapsule]
            ends = sorted([tuple(solids[0].getPointA()), tuple(solids[0].getPointB())],
                          key=lambda p: p[2])
            np.testing.assert_allclose(ends, [piece.a, piece.b], atol=1e-5)
            assert solids[0].getRadius() == pytest.approx(piece.radius, abs=1e-5)
    # The lift and the gate each under a rig of their own, which the game moves.
    for name, piece in (("lift-rig", arena.LIFT), ("gate-rig", arena.GATE)):
        rig = root.find(f"**/{name}")
        assert rig.find("**/+CollisionNode").getNetTag("piece") == str(
            arena.PIECES.index(piece))


@pytest.mark.parametrize("index", range(len(arena.PIECES)))
def test_every_face_faces_out_of_its_piece(index):
    """Polygons are one-sided: each front must face away from the solid behind it (every
    piece is convex but the platform, whose faces still face away from its centre)."""
    piece = arena.PIECES[index]
    points = np.array([p for face in piece.faces for p in face.points])
    centre = points.mean(axis=0)
    if piece.solid == "tube":
        centre = (np.array(piece.a) + np.array(piece.b)) / 2
    for face in piece.faces:
        middle = np.array(face.points).mean(axis=0)
        if piece is arena.FLOOR:
            assert face.normal == pytest.approx((0, 0, 1))
        elif piece.solid == "tube":
            for point, normal in zip(face.points, face.normals):
                # On the capsule's surface, the normal pointing straight out of it.
                axis = np.clip(point[2], piece.a[2], piece.b[2])
                off = np.array(point) - np.array([piece.a[0], piece.a[1], axis])
                assert np.linalg.norm(off) == pytest.approx(piece.radius)
                np.testing.assert_allclose(normal, off / piece.radius, atol=1e-12)
        else:
            assert np.dot(face.normal, middle - centre) > 0


def test_targets_paths_keep_clear_of_the_level():
    """A kinematic target must never squeeze a ball (at most 1.6 wide) against the level."""
    from demo.level import TARGET_RADIUS, TARGETS, Level

    for spec in TARGETS:
        times = np.linspace(0.0, 2 * math.pi / abs(spec[4]), 720)
        centres = np.array([Level._target_pos(spec, float(t)) for t in times])
        assert arena.footprint_clearance(centres).min() - TARGET_RADIUS > 2.0


def test_the_lift_goes_from_flush_to_risen_and_back():
    period = np.linspace(0.0, arena.LIFT_PERIOD, 801)
    heights = np.array([arena.lift_height(float(t)) for t in period])
    assert heights.min() == pytest.approx(arena.PLATFORM_TOP, abs=1e-4)
    assert heights.max() == pytest.approx(arena.PLATFORM_TOP + arena.LIFT_RISE, abs=1e-4)
    assert arena.lift_height(arena.LIFT_DOWN) == pytest.approx(arena.PLATFORM_TOP)
    # Its bottom never comes above the floor: no pit opens in the platform.
    assert heights.max() + arena.LIFT.lo[2] <= 0.0
    step = 1e-5
    for t in (0.3, 2.9, 5.0):
        slope = (arena.lift_height(t + step) - arena.lift_height(t - step)) / (2 * step)
        assert arena.lift_speed(t) == pytest.approx(slope, rel=1e-6)


# ---------------------------------------------------------------- running it
@pytest.fixture(scope="module")
def plugin_run() -> subprocess.CompletedProcess:
    return run_demo("--headless", "--frames", "300")


def test_headless_plugin_run_has_no_tunnelling(plugin_run):
    assert plugin_run.returncode == 0, plugin_run.stdout + plugin_run.stderr
    fields = summary(plugin_run)
    assert fields["system"] == "plugin"
    assert fields["frames"] == "300"
    assert fields["tunnelled"] == "0"
    assert fields["missed"] == "0"
    # A lively level: thousands of true hits, every one of them reported.
    assert int(fields["caught"]) > 2000
    assert int(fields["contacts"]) >= int(fields["caught"])
    assert int(fields["score"]) > 20
    assert float(fields["ms_per_frame"]) > 0


def test_every_kind_of_piece_is_hit_and_reported_and_the_run_is_deterministic(
        base, plugin_run):
    """In process, the same 300 frames: the truth expects hits on every kind of piece of
    the level (and on the moving lift, gate and targets), the plugin reports each of them,
    the scripted player rides the lift up, and the summary is the command line's."""
    from demo.level import PLAYER_RADIUS, Level
    from demo.run import summary_line

    level = Level(base, seed=7, balls=60, system="plugin")
    expected: Counter[str] = Counter()
    heights = []

    def count(task):
        every = {**{b.uid: b for b in level.bodies.values()},
                 **{b.uid: b for b in level.pieces.values()}}
        expected.update(every[other].kind for _, other, _, _ in level._expected)
        return task.cont

    def watch(task):
        heights.append(level.player.np.getZ(base.render))
        return task.cont

    base.taskMgr.add(count, "count", sort=11)
    base.taskMgr.add(watch, "watch", sort=28)
    try:
        for _ in range(300):
            base.taskMgr.step()
        line = summary_line(level)
    finally:
        # The task manager outlives this ShowBase: tasks left behind would run in the
        # next test.
        base.taskMgr.remove("count")
        base.taskMgr.remove("watch")
        level.destroy()
    assert set(expected) >= {"wall", "floor", "ramp", "platform", "crate", "pillar", "lift",
                             "gate", "target", "ball", "pickup"}
    ours, theirs = fields_of(line), summary(plugin_run)
    for name in TIMING_FIELDS:
        ours.pop(name)
        theirs.pop(name)
    assert ours == theirs
    assert ours["missed"] == "0"
    # Carried up by the lift: at the last frame (5 s) standing on its top, still rising.
    assert max(heights) == pytest.approx(arena.lift_height(5.0) + PLAYER_RADIUS, abs=0.02)
    assert max(heights) > arena.PLATFORM_TOP + PLAYER_RADIUS + 2.5


def test_different_seed_different_run():
    proc = run_demo("--headless", "--frames", "60", "--seed", "8")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary(proc)["seed"] == "8"


def test_traverser_run_shows_tunnelling():
    """The comparison has something to show: Panda3D's best tunnels in the same level."""
    proc = run_demo("--headless", "--frames", "300", "--system", "traverser")
    fields = summary(proc)
    assert fields["system"] == "traverser"
    assert int(fields["tunnelled"]) > 0
    assert proc.returncode == 1
    assert "tunnelled" in proc.stderr


def test_screenshot_is_written_at_size_and_not_blank(tmp_path):
    from panda3d.core import Filename, PNMImage

    path = tmp_path / "shot.png"
    proc = run_demo("--screenshot", str(path), "--size", "320x240", "--frames", "40")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.is_file()
    image = PNMImage()
    assert image.read(Filename.fromOsSpecific(str(path)))
    assert (image.getXSize(), image.getYSize()) == (320, 240)
    colours = {
        image.getXelVal(x, y) for x in range(0, 320, 2) for y in range(0, 240, 2)
    }
    assert len(colours) > 300


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 display variables")
def test_no_display_says_so_and_points_to_headless():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = run_demo(env=env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "could not open a window" in proc.stderr
    assert "--headless" in proc.stderr


def test_bad_size_is_refused():
    proc = run_demo("--screenshot", "x.png", "--size", "big")
    assert proc.returncode == 2
    assert "size must look like 800x600, got 'big'" in proc.stderr


# ---------------------------------------------------------------- the ground truth
LEVEL, PILLAR, BALL, PICKUP = 1, 2, 8, 16


def _rows(items, width=3):
    return np.array(items, float).reshape(-1, width)


def _ints(items):
    return np.array(items, np.int64)


def _movers(c0, c1, radius, from_mask, into_mask=None, uid=None):
    n = len(c0)
    return Movers(_rows(c0), _rows(c1), np.array(radius, float), _ints(from_mask),
                  _ints(into_mask or [0] * n), _ints(uid or range(100, 100 + n)))


def _scene(spheres=(), triangles=(), boxes=(), capsules=()):
    """Obstacles as tuples: spheres (c0, c1, radius, into, sensor, uid); triangles (a, b, c,
    into, uid); boxes (lo, hi, origin0, heading0, origin1, heading1, into, uid); capsules
    (a, b, radius, into, uid)."""
    def column(items, i, kind):
        values = [item[i] for item in items]
        if kind == "p":
            return _rows(values)
        return _ints(values) if kind == "i" else np.array(values, kind)

    return Scene(
        Spheres(*(column(spheres, i, k) for i, k in
                  enumerate(["p", "p", float, "i", bool, "i"]))),
        Triangles(*(column(triangles, i, k) for i, k in enumerate(["p", "p", "p", "i", "i"]))),
        Boxes(*(column(boxes, i, k) for i, k in
                enumerate(["p", "p", "p", float, "p", float, "i", "i"]))),
        Capsules(*(column(capsules, i, k) for i, k in enumerate(["p", "p", float, "i", "i"]))),
    )


# A wall: the square x = 5, |y|, |z| <= 4, its front facing -x (toward the origin).
WALL = [((5, -4, -4), (5, 4, 4), (5, 4, -4), 1, 7), ((5, -4, -4), (5, -4, 4), (5, 4, 4), 1, 7)]


def test_truth_takes_the_earliest_solid_hit_and_every_sensor():
    # A projectile along +x: a pickup at x = 1, a capsule at x = 3 (radius 0.5), the wall at
    # x = 5 behind it: the capsule is the solid hit, the pickup is touched on the way.
    exp = expected_hits(
        _movers([[-2, 0, 0]], [[8, 0, 0]], [0.5], [LEVEL | PILLAR | PICKUP]),
        _scene(spheres=[((1, 0, 0), (1, 0, 0), 0.5, PICKUP, True, 3)],
               triangles=WALL,
               capsules=[((3, 0, -2), (3, 0, 2), 0.5, PILLAR, 5)]),
    )
    rows = sorted(zip(exp.sensor.tolist(), exp.other.tolist()))
    assert rows == [(False, 5), (True, 3)]
    solid = np.flatnonzero(~exp.sensor)[0]
    # The centre stops 0.5 + 0.5 (less the graze) before x = 3: at x = 2 out of -2..8.
    assert exp.t[solid] == pytest.approx((4.0 + GRAZE) / 10, abs=1e-9)


def test_truth_polygons_are_one_sided():
    front = expected_hits(_movers([[0, 0, 0]], [[8, 0, 0]], [0.5], [LEVEL]),
                          _scene(triangles=WALL))
    back = expected_hits(_movers([[8, 0, 0]], [[0, 0, 0]], [0.5], [LEVEL]),
                         _scene(triangles=WALL))
    assert front.other.tolist() == [7]
    assert front.t == pytest.approx([(4.5 + GRAZE) / 8])
    assert len(back.t) == 0


def test_truth_respects_masks_and_grazes():
    # Mask says no: nothing. A path reaching only 1e-4 (< GRAZE) into a crate: a graze.
    crate = ((-1, -1, -1), (1, 1, 1), (6, 0, 0), 0.0, (6, 0, 0), 0.0, LEVEL, 9)
    none = expected_hits(_movers([[0, 0, 0]], [[20, 0, 0]], [0.5], [PILLAR]),
                         _scene(triangles=WALL, boxes=[crate]))
    assert len(none.t) == 0
    graze = expected_hits(_movers([[0, 1.5 - 1e-4, 0]], [[20, 1.5 - 1e-4, 0]], [0.5],
                                  [LEVEL]), _scene(boxes=[crate]))
    assert len(graze.t) == 0


def test_truth_follows_a_turned_crate():
    # A crate turned 45 degrees at (6, 0): its corner points at the mover, sqrt(2) out.
    crate = ((-1, -1, -1), (1, 1, 1), (6, 0, 0), math.pi / 4, (6, 0, 0), math.pi / 4,
             LEVEL, 9)
    exp = expected_hits(_movers([[0, 0, 0]], [[6, 0, 0]], [0.5], [LEVEL]),
                        _scene(boxes=[crate]))
    assert exp.t == pytest.approx([(6 - math.sqrt(2) - 0.5 + GRAZE) / 6], abs=1e-9)


def test_truth_follows_a_turning_gate():
    """A still sphere at (4, 1), radius 0.5, swept by a bar (|x| <= 6, |y| <= 0.25) turning
    from heading 0 to 0.2 rad: the bar's +y face meets it when
    -4 sin h + cos h = 0.25 + r (r less the graze), at h = acos((0.25 + r) / sqrt(17)) - atan(4).
    """
    gate = ((-6, -0.25, -1), (6, 0.25, 1), (0, 0, 0), 0.0, (0, 0, 0), 0.2, LEVEL, 11)
    exp = expected_hits(_movers([[4, 1, 0]], [[4, 1, 0]], [0.5], [LEVEL]),
                        _scene(boxes=[gate]))
    h = math.acos((0.75 - GRAZE) / math.sqrt(17)) - math.atan(4)
    # Followed in TURN_STEPS straight pieces: off the arc by under 1e-3 of the frame.
    assert exp.t == pytest.approx([h / 0.2], abs=1e-3)
    assert exp.other.tolist() == [11]


def test_truth_follows_the_lift_and_pairs_of_movers_count_for_both():
    # The lift's top rises from z = -2 to z = 0 under a still sphere at the origin.
    lift = ((-1, -1, -4), (1, 1, 0), (0, 0, -2), 0.0, (0, 0, 0), 0.0, LEVEL, 13)
    exp = expected_hits(_movers([[0, 0, 0], [9, 0, 0], [13, 0, 0]],
                                [[0, 0, 0], [11, 0, 0], [11, 0, 0]], [0.5, 0.5, 0.5],
                                [LEVEL, BALL, BALL], [0, BALL, BALL], [1, 2, 3]),
                        _scene(boxes=[lift]))
    rows = sorted(zip(exp.mover.tolist(), exp.other.tolist(), exp.t.tolist()))
    assert [r[:2] for r in rows] == [(0, 13), (1, 3), (2, 2)]
    assert rows[0][2] == pytest.approx((1.5 + GRAZE) / 2)
    assert rows[1][2] == pytest.approx(rows[2][2])
    assert rows[1][2] == pytest.approx(0.75 + GRAZE / 4, abs=1e-9)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ((4.2, 0.0, 0.0), False),  # stopped touching the wall (its face at x = 5)
        ((4.6, 0.0, 0.0), True),  # more than half its radius behind the front face
        ((9.0, 0.0, 0.0), True),  # went straight through
        ((4.6, 6.0, 0.0), False),  # passed beside it
    ],
)
def test_went_into_a_wall(q, expected):
    got = went_into(_rows([[0, 0, 0]]), _rows([q]), np.array([1.0]), _scene(triangles=WALL))
    assert got.tolist() == [expected]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ((0.0, 2.0, 0.0), False),  # touching the gate's side (y = 1) at the end
        ((0.0, 1.4, 0.0), True),  # more than half inside it
        # Through where the gate ends, but it was elsewhere then: a moving box is judged
        # only where it ends.
        ((0.0, -3.0, 0.0), False),
    ],
)
def test_went_into_a_moving_box_is_judged_where_both_end(q, expected):
    # The gate turned from along y to along x: where it ends, its sides are at y = +-1.
    gate = ((-5, -1, -1), (5, 1, 1), (0, 0, 0), math.pi / 2, (0, 0, 0), 0.0, LEVEL, 11)
    got = went_into(_rows([[0, 9, 0]]), _rows([q]), np.array([1.0]), _scene(boxes=[gate]))
    assert got.tolist() == [expected]
