"""The benchmark still runs, and its correctness table holds the plugin to its promise.

``python -m benchmarks`` is run as CI would run it (a subprocess from the repository root)
on tiny sizes; no timing is asserted, only what the tables say. The scene generator's own
invariants are checked in-process.
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

from benchmarks.scene import MovingSpheres, fast_pairs  # noqa: E402

from panda3d_ccd.sweep import sphere_sphere_toi  # noqa: E402

PLUGIN_ROWS = ("panda3d-ccd, response=rewind", "panda3d-ccd, response=sensor")
TRAVERSER_ROWS = (
    "CollisionTraverser, respect-prev-transform + setFluidPos",
    "CollisionTraverser, discrete (end positions)",
)


def run_benchmarks(out: Path, *args: str) -> tuple[str, dict]:
    """``python -m benchmarks ARGS --no-plot --out OUT`` from the repository root, as CI
    would run it: its stdout and the results.json it wrote."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", *args, "--no-plot", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    return run_benchmarks(
        tmp_path_factory.mktemp("bench"),
        "--pileup", "--quick", "--sizes", "40,150", "--frames", "2", "--warmup", "1",
        "--pairs", "300", "--mem-n", "40", "--mem-frames", "20",
    )  # fmt: skip


def test_timing_table_has_every_size_and_system(quick_run: tuple[str, dict]) -> None:
    stdout, record = quick_run
    assert "| n | plugin ms | traverser ms | bullet ms | floor ms | traverser/plugin " in stdout
    assert [r["n"] for r in record["timing"]] == [40, 150]
    for row in record["timing"]:
        assert set(row["ms"]) == {"panda3d-ccd", "CollisionTraverser", "Bullet", "floor"}
        assert all(v is not None and v > 0 for v in row["ms"].values()), row["ms"]
        assert row["stats"]["panda3d-ccd candidates"] >= 0
    assert "| 40 |" in stdout and "| 150 |" in stdout


def test_plugin_reports_every_true_contact_and_no_false_alarm(
    quick_run: tuple[str, dict],
) -> None:
    stdout, record = quick_run
    rows = {row["system"]: row for row in record["correctness"]}
    assert set(rows) == set(PLUGIN_ROWS) | set(TRAVERSER_ROWS)
    for name in PLUGIN_ROWS:
        row = rows[name]
        assert row["pairs"] == 300
        assert row["true_contacts"] > 50
        assert row["caught"] == row["true_contacts"]
        assert row["false_alarms"] == 0
        line = f"| {name} | 300 | {row['true_contacts']:,} | {row['caught']:,} | 100.0% | 0 |"
        assert line in stdout
    # Panda3D's discrete test can only see pairs overlapping at the end of the frame.
    discrete = rows[TRAVERSER_ROWS[1]]
    assert discrete["caught"] < discrete["true_contacts"]


def test_memory_line_is_reported(quick_run: tuple[str, dict]) -> None:
    stdout, record = quick_run
    mem = record["memory"]
    assert mem["n"] == 40 and mem["frames"] == 20
    assert len(mem["traced_kib"]) == len(mem["frames_at"]) == len(mem["contacts"]) >= 2
    assert "Memory: plugin pass at n=40, 20 frames" in stdout


@pytest.mark.parametrize("n", [1, 7, 100, 1000])
def test_scene_starts_apart_and_stays_in_the_box(n: int) -> None:
    scene = MovingSpheres.generate(n, seed=3)
    start = scene.positions(0)
    if n > 1:
        gap = np.linalg.norm(start[:, None] - start[None], axis=2) + np.eye(n) * 1e9
        assert gap.min() >= 2 * scene.radius
    for frame in (0, 1, 2, 17, 1000):
        p = scene.positions(frame)
        assert p.shape == (n, 3)
        assert p.min() >= scene.radius - 1e-4 and p.max() <= scene.side - scene.radius + 1e-4
    assert scene.fast.sum() == round(0.1 * n)
    assert scene.side == pytest.approx(4.0 * n ** (1 / 3))


def test_bounce_is_elastic_within_a_frame() -> None:
    """Between two frames without a wall hit each coordinate moves by the speed along it
    (its sign flipped by earlier bounces); positions are a pure function of the frame."""
    scene = MovingSpheres.generate(50, seed=5)
    p0, p1 = scene.positions(3), scene.positions(4)
    slow = ~scene.fast
    inside = np.all((p0 > 1.0) & (p0 < scene.side - 1.0), axis=1) & slow
    assert inside.sum() > 10
    np.testing.assert_allclose(np.abs(p1 - p0)[inside], np.abs(scene.velocity[inside]), atol=1e-4)
    np.testing.assert_array_equal(scene.positions(3), p0)
    speeds = np.linalg.norm(scene.velocity, axis=1)
    assert np.all((speeds[scene.fast] >= 37.5) & (speeds[scene.fast] <= 62.5))
    assert np.all((speeds[slow] >= 0.375) & (speeds[slow] <= 0.625))


def test_fast_pairs_truth_is_the_exact_kernel_and_pairs_are_isolated() -> None:
    pairs = fast_pairs(200, seed=2)
    assert pairs.m == 200
    truth = np.isfinite(
        sphere_sphere_toi(pairs.a0, pairs.a1, pairs.ra, pairs.b0, pairs.b1, pairs.rb)
    )
    np.testing.assert_array_equal(pairs.truth, truth)
    assert 0.3 < pairs.truth.mean() < 0.9
    # The boxes around each pair's whole motion (grown by the radii) never overlap.
    points = np.stack([pairs.a0, pairs.a1, pairs.b0, pairs.b1])
    grow = np.maximum(pairs.ra, pairs.rb)[:, None]
    lo, hi = points.min(axis=0) - grow, points.max(axis=0) + grow
    apart = np.any((lo[:, None] > hi[None]) | (hi[:, None] < lo[None]), axis=2)
    np.fill_diagonal(apart, True)
    assert apart.all()


def test_walls_option_runs_every_system_with_the_box_closed(tmp_path: Path) -> None:
    # --walls adds the box's six walls as planes: one node each for the plugin (a node is
    # registered once), one CollisionNode for the traverser, plane bodies for Bullet.
    _, record = run_benchmarks(
        tmp_path,
        "--pileup", "--walls", "--sizes", "60", "--frames", "2", "--warmup", "1",
        "--pairs", "0", "--mem-frames", "0",
    )  # fmt: skip
    assert "walls on" in record["setup"]
    assert all(v is not None and v > 0 for v in record["timing"][0]["ms"].values())


def test_phase_table_times_every_phase_including_the_broad_phase() -> None:
    # The table wraps the component's and the solver's functions by name; one renamed
    # behind its back must fail here, not vanish from the table.
    from benchmarks.profiling import PileUpPasses, phase_table
    from benchmarks.systems import PluginOptions

    passes = PileUpPasses(150, seed=1, plugin=PluginOptions(), walls=True)
    table = phase_table(passes, frames=2, warmup=1)
    for label in (
        "read every sphere's transforms",
        "solve: broad phase, times of impact, resolution",
        "(inside solve) broad phase, sphere pairs",
        "(inside solve) broad phase, sphere-plane pairs",
        "write moved nodes back",
        "build Contact objects",
        "**whole step()**",
    ):
        assert f"| {label} |" in table


def test_the_profile_puts_what_the_pass_called_in_its_phases() -> None:
    # step() runs the pass in _step(): the table must look inside it, or every phase
    # reads 0 and the whole pass lands in "other".
    import re

    from benchmarks.profiling import PileUpPasses, profile_plugin
    from benchmarks.systems import PluginOptions

    passes = PileUpPasses(150, seed=1, plugin=PluginOptions(), walls=True)
    table = profile_plugin(passes, frames=3, warmup=1).by_phase
    share = dict(re.findall(r"\| \*\*(\w[\w ]*)\*\* \| \| \| \*\*[^*]+\*\* \| \*\*(\d+)%", table))
    assert set(share) >= {"read", "solve", "write back", "events", "other"}
    assert int(share["solve"]) > 0 and int(share["read"]) > 0
    assert int(share["other"]) < 50


def test_geometry_option_runs_only_the_geometry_table(tmp_path: Path) -> None:
    stdout, record = run_benchmarks(
        tmp_path,
        "--geometry", "--quick", "--triangles", "3000", "--sizes", "5,60", "--frames", "1",
        "--kernel-pairs", "2000",
    )  # fmt: skip
    assert "| case | n | ms | pairs | note |" in stdout
    assert "timing" not in record and "correctness" not in record
    rows = {(row["case"], row["n"]): row for row in record["geometry"]}
    assert rows[("build index (terrain + walls)", 3000)]["ms"] > 0
    for n in (5, 60):
        row = rows[("query, fast movers cut into pieces", n)]
        assert row["ms"] > 0 and row["pairs"] > 0
    cut = rows[("query, fast movers cut into pieces", 60)]["pairs"]
    assert rows[("query, whole swept boxes", 60)]["pairs"] > cut
    assert rows[("query, spheres 1,000 units above the mesh", 60)]["pairs"] == 0
    kernel = rows[("sphere-triangle kernel, one call", 2000)]
    assert kernel["ms"] > 0 and "tests/s" in kernel["note"]


def test_geometry_mesh_has_the_triangles_asked_for_and_flat_walls() -> None:
    from benchmarks.geometry import level_mesh

    for m in (1, 2, 101, 5000):
        a, b, c = level_mesh(m, seed=2)
        assert a.shape == b.shape == c.shape == (m, 3)
    a, b, c = level_mesh(5000, seed=2)
    lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    walls = hi[:, 2] - lo[:, 2] == 12.0
    assert walls.sum() == 5000 - 2 * 48**2  # the terrain: 48 x 48 cells, 95% at most
    flat = (hi[walls, 0] == lo[walls, 0]) | (hi[walls, 1] == lo[walls, 1])
    assert 0.5 < flat.mean() < 0.8  # two thirds axis-aligned, a third slanted


def test_statics_option_times_the_three_passes(tmp_path: Path) -> None:
    stdout, record = run_benchmarks(tmp_path, "--statics", "--quick", "--movers", "3")
    assert "| pass | statics | movers | ms per pass | against no statics |" in stdout
    rows = {row["case"]: row for row in record["statics"]}
    assert rows["no statics"]["statics"] == 0 and rows["no statics"]["ratio"] == 1.0
    assert rows["static spheres"]["statics"] == 1000
    assert all(row["ms"] > 0 and row["movers"] == 3 for row in rows.values())
