"""The level benchmark (``python -m benchmarks --level``) on a tiny level: its tables, the
plugin's promise that no fired sphere ends beyond a front face, and the generator and
oracle it is built on, each checked against an independent method."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.level_mesh import (  # noqa: E402
    FAST,
    SLOW,
    Level,
    LevelMotion,
    Volley,
    box_triangles,
    front_crossings,
    inside_solid,
)

SYSTEMS = {
    "panda3d-ccd", "CollisionTraverser", "Bullet sweeps", "Bullet slides", "Bullet doPhysics",
    "floor",
}  # fmt: skip
PLUGIN_ROWS = ("panda3d-ccd, response=slide", "panda3d-ccd, response=rewind")


@pytest.fixture(scope="module")
def level_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("level")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--level", "--quick", "--cells", "16",
         "--sizes", "5,20", "--frames", "2", "--warmup", "1", "--fired", "80",
         "--no-plot", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def small() -> Level:
    return Level.generate(24, tile=8, seed=3)


def test_level_tables_have_every_size_and_system(level_run: tuple[str, dict]) -> None:
    stdout, record = level_run
    assert (
        "| movers | plugin ms | traverser ms | Bullet sweeps ms | Bullet slides ms "
        "| Bullet doPhysics ms " in stdout
    )
    assert "| set-up | ms |" in stdout
    assert [row["n"] for row in record["timing"]] == [5, 20]
    for row in record["timing"]:
        assert set(row["ms"]) == SYSTEMS
        assert all(v is not None and v > 0 for v in row["ms"].values()), row["ms"]
        assert row["register_ms"] > 0 and row["first_pass_ms"] > 0
        assert row["stats"]["panda3d-ccd candidates"] >= 0
        # Every slide sweeps at least once a sphere.
        assert row["stats"]["Bullet slides sweeps"] >= row["n"]
    assert "| 5 |" in stdout and "| 20 |" in stdout
    # 16 x 16 cells: 512 terrain triangles in one tile, four skirts of 32 and a bottom of 2,
    # one wall and four props of 12 triangles each.
    assert (
        "702 triangles (512 terrain, 130 closing the ground below, 1 walls, 4 props) in 11 "
        "CollisionNodes" in stdout
    )


def test_no_sphere_fired_through_the_plugin_ends_beyond_a_front_face(
    level_run: tuple[str, dict],
) -> None:
    stdout, record = level_run
    rows = {row["system"]: row for row in record["volley"]}
    assert len(rows) == 5
    assert rows["Bullet collide-and-slide (up to 8 sweepTestClosest)"]["bends"] == "its hits"
    for row in rows.values():
        assert row["fired"] == 80 and row["frames"] == 3
        # Every straight path goes through the face it was aimed at.
        assert row["crossing"] == 80
    for name in PLUGIN_ROWS:
        row = rows[name]
        assert row["inside"] == row["first"] == row["tunnelled"] == 0
        assert row["bends"] == "its contacts"
        assert f"| {name} | 80 | 80 | 0 | 0.0% | 0 | 0 | 0.0% | its contacts |" in stdout


@pytest.fixture(scope="module")
def floor_and_wall() -> Any:
    """Bullet's collide-and-slide against a floor (z = 0, facing up) and a wall (x = 4,
    facing -x), each two triangles 40 units wide."""
    from benchmarks.level import _MESH_GROUP, _bullet_world, bullet_slide
    from panda3d.bullet import BulletSphereShape
    from panda3d.core import BitMask32

    floor = [[[-20, -20, 0], [20, -20, 0], [20, 20, 0]], [[-20, -20, 0], [20, 20, 0], [-20, 20, 0]]]
    wall = [[[4, -20, -20], [4, 20, 20], [4, 20, -20]], [[4, -20, -20], [4, -20, 20], [4, 20, 20]]]
    world, root = _bullet_world(np.array(floor + wall, dtype=float))
    yield bullet_slide(world, BulletSphereShape(0.5), BitMask32.bit(_MESH_GROUP))
    root.removeNode()


def test_bullet_slide_falls_onto_the_floor_and_slides_along_it(floor_and_wall: Any) -> None:
    from benchmarks.level import SLIDE_SKIN

    # Down onto the floor at half the motion: touches at (1, 0, 0.5), keeps the motion
    # along it and ends SLIDE_SKIN above it, having swept twice (the hit, then free).
    end, sweeps, bends = floor_and_wall((-1.0, 0.0, 2.0), (3.0, 0.0, -1.0))
    np.testing.assert_allclose(list(bends[0]), [1.0, 0.0, 0.5], atol=1e-3)
    np.testing.assert_allclose(list(end), [3.0, 0.0, 0.5 + SLIDE_SKIN], atol=1e-3)
    assert (sweeps, len(bends)) == (2, 1)
    # Nothing in the way: one sweep, straight to the target.
    end, sweeps, bends = floor_and_wall((0.0, 0.0, 3.0), (1.0, 2.0, 3.0))
    assert (tuple(end), sweeps, bends) == ((1.0, 2.0, 3.0), 1, [])


def test_bullet_slide_stops_in_the_crease_of_floor_and_wall(floor_and_wall: Any) -> None:
    # Along the floor into the wall at 45 degrees: slides along the wall's foot to y = 3.
    end, sweeps, bends = floor_and_wall((0.0, 0.0, 0.5 + 1e-3), (6.0, 3.0, -1.0))
    np.testing.assert_allclose(list(end), [3.5, 3.0, 0.5], atol=2e-3)
    assert sweeps == len(bends) + 1 <= 4


def test_default_benchmark_options_are_unchanged() -> None:
    from benchmarks.cli import parse_args

    game = parse_args([])
    assert not game.level and not game.pileup
    assert game.sizes == [10, 30, 100, 300, 1000, 3000, 10000]
    assert (game.frames, game.warmup, game.demo_frames) == (100, 10, 300)
    assert game.profile_n == [10, 100]
    args = parse_args(["--pileup"])
    assert args.sizes == [100, 1000, 3000, 10000, 30000]
    assert (args.frames, args.warmup, args.profile_n) == (10, 3, [10000])
    level = parse_args(["--level"])
    assert level.sizes == [10, 100, 1000] and level.cells == 120 and level.fired == 1000
    assert args.response == "rewind" and level.response == "slide"


def test_default_level_has_over_30000_triangles_in_tiles_walls_and_props() -> None:
    level = Level.generate()
    assert level.terrain_triangles == 28_800 >= 25_000
    assert level.triangles.shape == (32_882, 3, 3)
    assert len(level.names) == len(level.counts) == 25 + 4 + 1 + 60 + 200
    assert level.counts.sum() == 32_882
    np.testing.assert_array_equal(level.counts[:25], 1152)
    np.testing.assert_array_equal(level.counts[25:30], [240, 240, 240, 240, 2])
    np.testing.assert_array_equal(level.counts[30:], 12)
    assert level.first_box == 32_882 - 260 * 12


def test_terrain_faces_up_and_boxes_face_out(small: Level) -> None:
    tri = small.triangles
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    terrain, boxes = small.terrain_triangles, small.first_box
    assert np.all(normal[:terrain, 2] > 0)
    # The skirts face away from the level's middle, level with the ground; the bottom down.
    middle = np.array([small.side / 2, small.side / 2])
    skirt = tri[terrain : boxes - 2]
    out = np.einsum("ij,ij->i", normal[terrain : boxes - 2, :2], skirt.mean(axis=1)[:, :2] - middle)
    assert np.all(out > 0) and np.all(normal[terrain : boxes - 2, 2] == 0)
    assert np.all(normal[boxes - 2 : boxes, :2] == 0) and np.all(normal[boxes - 2 : boxes, 2] < 0)
    centre = np.repeat(small.box_center, 12, axis=0)
    out = np.einsum("ij,ij->i", normal[boxes:], tri[boxes:].mean(axis=1) - centre)
    assert np.all(out > 0)
    # Gentle slopes: no terrain triangle steeper than 40 degrees.
    unit_z = normal[:terrain, 2] / np.linalg.norm(normal[:terrain], axis=1)
    assert unit_z.min() > np.cos(np.radians(40))


def test_each_tile_holds_its_own_cells(small: Level) -> None:
    # 24 cells in tiles of 8: nine tiles of 128 triangles, each inside its 16 x 16 square.
    np.testing.assert_array_equal(small.counts[:9], 128)
    first = 0
    for name, count in zip(small.names[:9], small.counts[:9]):
        _, i, j = name.split("-")
        xy = small.triangles[first : first + count, :, :2]
        assert xy[..., 0].min() == 16 * int(i) and xy[..., 0].max() == 16 * int(i) + 16
        assert xy[..., 1].min() == 16 * int(j) and xy[..., 1].max() == 16 * int(j) + 16
        first += count


def test_boxes_stand_in_the_ground(small: Level) -> None:
    # Every bottom corner is below the terrain under it: no gap to roll into.
    corners = box_triangles(small.box_center, small.box_half, small.box_yaw).reshape(-1, 3)
    bottom = corners[np.isin(corners[:, 2], small.box_center[:, 2] - small.box_half[:, 2])]
    assert len(bottom) > 0
    assert np.all(bottom[:, 2] < small.height_at(bottom[:, 0], bottom[:, 1])[0])


@pytest.mark.parametrize(
    ("p0", "p1", "expected"),
    [
        ([0.2, 0.2, 1.0], [0.2, 0.2, -1.0], True),  # front to back, inside
        ([0.2, 0.2, -1.0], [0.2, 0.2, 1.0], False),  # back to front
        ([2.0, 2.0, 1.0], [2.0, 2.0, -1.0], False),  # beside the triangle
        ([0.5, 0.5, 1.0], [0.5, 0.5, -1.0], True),  # through the hypotenuse
        ([0.0, 0.0, 1.0], [0.0, 0.0, -1.0], True),  # through a corner
        ([0.2, 0.2, 1.0], [0.2, 0.2, 0.0], False),  # ends on the plane
        ([0.2, 0.2, 1.0], [0.2, 0.2, 0.01], False),  # stops in front
        ([-1.0, 0.2, 0.5], [2.0, 0.2, 0.5], False),  # parallel
        ([-1.0, 0.2, 1.0], [1.0, 0.2, -1.0], True),  # slanted, crossing at (0, 0.2)
    ],
)
def test_front_crossing_table(p0: list[float], p1: list[float], expected: bool) -> None:
    tri = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    assert front_crossings(np.array([p0]), np.array([p1]), tri).tolist() == [expected]


def test_inside_solid_agrees_with_the_level_own_distances(small: Level) -> None:
    # Two independent methods: a ray cast through the triangles, and the generator's
    # height field and box distances. Points within 1e-6 of a surface are left out.
    rng = np.random.default_rng(5)
    p = rng.uniform([0.5, 0.5, -8], [small.side - 0.5, small.side - 0.5, 10], (3000, 3))
    gap = small.clearance(p, radius=0.0)
    sure = np.abs(gap) > 1e-6
    np.testing.assert_array_equal(inside_solid(p[sure], small.triangles), gap[sure] < 0)
    assert 0.2 < (gap < 0).mean() < 0.8


def test_every_segment_from_free_space_into_the_solid_crosses_a_front_face(
    small: Level,
) -> None:
    # Points around the whole level too, beside it and under it: the ground is closed, so
    # no way into a solid avoids a front face.
    rng = np.random.default_rng(6)
    depth = small.heights.min() - 20
    lo, hi = [-10, -10, depth - 10], [small.side + 10, small.side + 10, 12]
    p = rng.uniform(lo, hi, (6000, 3))
    inside = inside_solid(p, small.triangles)
    free, solid = p[~inside][:500], p[inside][:500]
    assert len(free) == len(solid) == 500
    assert front_crossings(free, solid, small.triangles).all()
    # Beside the level or below its bottom is free space.
    outside = (p[:, 0] < 0) | (p[:, 0] > small.side) | (p[:, 2] < depth)
    assert outside.sum() > 500 and not inside[outside].any()
    # High above the level nothing is crossed.
    above = free + [0.0, 0.0, 40.0]
    assert not front_crossings(above, above + [3.0, 1.0, 0.0], small.triangles).any()


def test_motion_starts_every_frame_clear_of_the_level(small: Level) -> None:
    motion = LevelMotion.generate(small, 60, 12, seed=4)
    assert motion.start.shape == motion.end.shape == (13, 60, 3)
    assert motion.fast.sum() == 6
    for k in range(13):
        assert not inside_solid(motion.start[k], small.triangles).any()
        assert small.clearance(motion.start[k]).min() >= 0.0
    # Slow spheres roll at about SLOW a frame (+-20%, plus what the ground lifts).
    step = np.linalg.norm(motion.end[1:] - motion.start[:-1], axis=2)
    assert np.all((step[:, ~motion.fast] > 0.8 * SLOW) & (step[:, ~motion.fast] < 1.3 * SLOW))
    assert np.all((step[:, motion.fast] > 0.8 * FAST) & (step[:, motion.fast] < 1.2 * FAST))
    # The game keeps pressing them into the level: a good share of frames end in contact.
    assert (small.clearance(motion.end[1:].reshape(-1, 3)) < 0).mean() > 0.2
    again = LevelMotion.generate(small, 60, 12, seed=4)
    np.testing.assert_array_equal(again.end, motion.end)


def test_volley_starts_free_and_aims_through_its_target(small: Level) -> None:
    volley = Volley.generate(small, 300, seed=2)
    assert not inside_solid(volley.start, small.triangles).any()
    assert small.clearance(volley.start).min() >= 0.3
    tri = small.triangles[volley.target]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    speed = np.linalg.norm(volley.velocity, axis=1)
    cos = -np.einsum("ij,ij->i", volley.velocity, normal) / speed
    assert cos.min() >= np.cos(np.radians(60)) - 1e-9
    assert np.all((speed >= 0.8 * FAST) & (speed <= 1.2 * FAST))
    # The first frame's straight path already goes through the face aimed at.
    end = volley.start + volley.velocity
    assert all(front_crossings(volley.start[i : i + 1], end[i : i + 1], tri[i]) for i in range(300))
    on_terrain = volley.target < small.terrain_triangles
    assert 0.3 < on_terrain.mean() < 0.7


# The level benchmark's volley found this on main at 63d8f7e ("a slide into a second fixed
# surface clips its original motion"); fbedb18 slid along the wall. Reduced from the
# default level (seed 1, sphere 6 of the volley, frame 3) to four terrain triangles and
# the wall's box.




@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_a_bodys_later_contacts_left_inexact_change_no_answer(response, monkeypatch) -> None:
    """The triangle kernel is exact only for each body's earliest contacts and those a
    slide meets at the same instant (``Pieces._sweep``'s ``first``): the level benchmark's
    first frames at 1,000 movers end bit for bit where they end with every contact exact.
    (With no margin for a slide's instant, one sphere ends 5 units off.)"""
    from benchmarks.level import _Plugin, _Spheres, build_level
    from panda3d.core import NodePath, PandaNode

    import panda3d_ccd._pieces as pieces
    import panda3d_ccd.sweep.sphere_triangle as tri_mod

    build = build_level(Level.generate(120, seed=1))
    motion = LevelMotion.generate(build.level, 1000, 5, seed=1001)
    sweep, later = pieces.Pieces._sweep, tri_mod._First.later
    skipped = []

    def counted(self, t, unsure):
        out = later(self, t, unsure)
        skipped.append(int(out[unsure].sum()))
        return out

    monkeypatch.setattr(tri_mod._First, "later", counted)

    def run(exact: bool) -> tuple[list[np.ndarray], list[list[tuple]]]:
        if exact:
            monkeypatch.setattr(
                pieces.Pieces, "_sweep", lambda self, *a, first=None, **k: sweep(self, *a, **k)
            )
        render = NodePath("render")
        build.root.reparentTo(render)
        spheres = _Spheres.build(render, motion.start[0])
        PandaNode.resetAllPrevTransform()
        plugin = _Plugin(spheres, build.root, response)
        ends, contacts = [], []
        for k in range(1, 5):
            spheres.move(motion.frame(k)[1])
            plugin.run()
            ends.append(spheres.read())
            contacts.append([
                (c.getFromNodePath().getName(), c.getIntoNodePath().getName(), c.t,
                 tuple(c.getSurfacePoint(render)), tuple(c.getSurfaceNormal(render)))
                for c in plugin.ccd.contacts
            ])  # fmt: skip
        plugin.close()
        spheres.remove()
        build.root.detachNode()
        return ends, contacts

    grouped, touched = run(exact=False)
    assert sum(skipped) > 1000  # (rows not asked about their neighbours)
    ends, contacts = run(exact=True)
    for got, want in zip(grouped, ends):
        np.testing.assert_array_equal(got, want)
    # And every contact, its time, point and normal, in the same order.
    assert touched == contacts and sum(map(len, contacts)) > 100
    # Not vacuous: many spheres were stopped or turned by the level.
    assert (np.abs(grouped[-1] - motion.frame(4)[1]).max(axis=1) > 1e-3).sum() > 50
