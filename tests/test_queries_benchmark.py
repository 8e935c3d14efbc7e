"""The scene-query benchmark (``python -m benchmarks --queries``) on a tiny level: its
tables, the plugin's rays agreeing with Bullet's on every ray, and the rays and the
cross-check it is built on, each checked against an independent method."""

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

from benchmarks.level_mesh import Level, front_crossings, inside_solid  # noqa: E402
from benchmarks.queries import (  # noqa: E402
    GROUND_LENGTH,
    HITSCAN_LENGTH,
    Rays,
    bullet_ray_hits,
    cross_check,
)

RAYS, CALLS, SWEEPS = 300, 40, 60


@pytest.fixture(scope="module")
def queries_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("queries")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--queries", "--quick", "--cells", "16",
         "--rays", str(RAYS), "--calls", str(CALLS), "--sweeps", str(SWEEPS),
         "--frames", "1", "--no-plot", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def small() -> Level:
    return Level.generate(16, seed=1)


def _first_front_hit(rays: Rays, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k,) t and (k, 3) points of each ray's first front-face hit (inf / nan: none), by
    brute force over every (ray, triangle) pair: an oracle independent of both systems."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    n = np.cross(b - a, c - a)
    d = rays.end - rays.start
    den = d @ n.T  # (k, m)
    num = np.einsum("mj,mj->m", a, n)[None] - rays.start @ n.T
    with np.errstate(divide="ignore", invalid="ignore"):
        t = num / den
        x = rays.start[:, None] + t[..., None] * d[:, None]
        ok = (den < 0) & (t >= 0) & (t <= 1)
        for u, v in ((a, b), (b, c), (c, a)):
            ok &= np.einsum("kmj,mj->km", np.cross(v - u, x - u), n) >= 0
    t = np.where(ok, t, np.inf).min(axis=1)
    point = rays.start + np.where(np.isfinite(t), t, np.nan)[:, None] * d
    return t, point


def test_queries_tables_and_no_disagreement_with_bullet(queries_run: tuple[str, dict]) -> None:
    stdout, record = queries_run
    run = record["run"]
    assert "## Targets" in stdout
    assert "| system | call | casts | ms for all (median) |" in stdout
    assert "| system | call | calls | median ms | p95 ms | p99 ms |" in stdout
    assert (run["triangles"], run["nodes"]) == (702, 11)
    assert (run["rays"], run["sweeps"], run["repeats"]) == (RAYS, SWEEPS, 1)
    for batch, count in ((run["ray_batch"], RAYS), (run["sweep_batch"], SWEEPS)):
        assert [b["system"] for b in batch] == ["panda3d-ccd", "Bullet"]
        for b in batch:
            assert b["count"] == count and len(b["samples"]) == 1 and b["samples"][0] > 0
    assert [r["system"] for r in run["single"]] == [
        "panda3d-ccd", "CollisionTraverser", "Bullet", "panda3d-ccd", "Bullet"
    ]  # fmt: skip
    for row in run["single"]:
        assert row["calls"] == CALLS and 0 < row["median"] <= row["p95"] <= row["p99"]
    check = run["rays_check"]
    assert record["disagree"] == 0, check["examples"]
    assert check["front"] + check["miss"] + check["back"] == RAYS
    assert check["front_agree"] == check["front"]
    assert check["miss_agree"] + check["graze"] == check["miss"]
    # Every start is outside every solid: the first surface met is a front face.
    assert check["back"] == 0
    ground = check["kinds"]["ground"]
    assert ground == {"rays": RAYS // 2, "front": RAYS // 2, "miss": 0, "back": 0,
                      "graze": 0, "disagree": 0}  # fmt: skip
    assert check["kinds"]["hitscan"]["front"] > 0 and check["kinds"]["hitscan"]["miss"] > 0
    assert check["worst"] < 1e-3
    assert run["sweeps_check"]["sweeps"] == SWEEPS
    assert f"| all {RAYS} | {check['front']} | {check['front']} | {check['miss']} " in stdout


def test_default_queries_options() -> None:
    from benchmarks.cli import parse_args

    args = parse_args(["--queries"])
    assert (args.cells, args.rays, args.calls, args.sweeps, args.frames) == (
        120, 10_000, 500, 1000, 5
    )  # fmt: skip
    assert not parse_args([]).queries


def test_rays_are_half_ground_half_hitscan_from_free_space(small: Level) -> None:
    rays = Rays.generate(small, 400, seed=3)
    assert rays.start.shape == rays.end.shape == (400, 3) and rays.ground.sum() == 200
    d = rays.end - rays.start
    np.testing.assert_array_equal(d[rays.ground, :2], 0.0)
    np.testing.assert_allclose(d[rays.ground, 2], -GROUND_LENGTH, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rays.length[~rays.ground], HITSCAN_LENGTH, rtol=1e-12)
    assert not inside_solid(rays.start, small.triangles).any()
    assert small.clearance(rays.start, radius=0.0).min() >= 0.8
    # Every ground ray reaches the ground (or a prop standing on it) from above.
    assert front_crossings(rays.start[rays.ground], rays.end[rays.ground], small.triangles).all()
    # Shuffled: a prefix is the same mix.
    assert 0 < rays.head(20).ground.sum() < 20
    # Hitscan directions cover the sphere: up and down, every way round.
    unit = d[~rays.ground] / HITSCAN_LENGTH
    assert unit[:, 2].min() < -0.9 and unit[:, 2].max() > 0.9
    assert np.abs(unit.mean(axis=0)).max() < 0.15
    np.testing.assert_array_equal(Rays.generate(small, 400, seed=3).end, rays.end)


def test_bullet_agrees_with_an_exact_ray_cast_through_the_cross_check(small: Level) -> None:
    # Without the plugin: the brute-force oracle in its place, Bullet read as the
    # benchmark reads it. Zero disagreements means the rays, Bullet's side and hit
    # points are read right; the plugin is then held to the same check.
    rays = Rays.generate(small, 400, seed=4)
    t, point = _first_front_hit(rays, small.triangles)
    check = cross_check(rays, small.triangles, t, point, *bullet_ray_hits(small.triangles, rays))
    assert check.disagree == 0, check.examples
    assert check.back == 0 and check.front > 250 and check.miss > 20
    assert check.worst < 1e-3


_TRI = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
_DOWN = ([0.2, 0.2, 1.0], [0.2, 0.2, -1.0])  # meets the front at t = 0.5
_UP = ([0.2, 0.2, -1.0], [0.2, 0.2, 1.0])  # meets the back at t = 0.5
_AT = [0.2, 0.2, 0.0]
_NONE = (np.inf, [np.nan] * 3, -1)


@pytest.mark.parametrize(
    ("ray", "plugin", "bullet", "case", "agree"),
    [
        (_DOWN, (0.5, _AT), (0.5, _AT, 0), "front", True),
        (_DOWN, (0.5005, [0.2, 0.2, -0.001]), (0.5, _AT, 0), "front", True),  # within 2e-3
        (_DOWN, (0.505, [0.2, 0.2, -0.01]), (0.5, _AT, 0), "front", False),
        (_DOWN, (0.5, [0.21, 0.2, 0.0]), (0.5, _AT, 0), "front", False),  # same t, elsewhere
        (_DOWN, (np.inf, [np.nan] * 3), (0.5, _AT, 0), "front", False),
        (_DOWN, (np.inf, [np.nan] * 3), _NONE, "miss", True),
        (_DOWN, (0.5, _AT), _NONE, "miss", False),
        # Just outside the edge x = 0: within the seam slop (3e-5 of 1) a graze, beyond not.
        (([-1e-5, 0.2, 1.0], [-1e-5, 0.2, -1.0]), (0.5, [-1e-5, 0.2, 0.0]), _NONE, "miss", True),
        (([-1e-3, 0.2, 1.0], [-1e-3, 0.2, -1.0]), (0.5, [-1e-3, 0.2, 0.0]), _NONE, "miss", False),
        (_UP, (np.inf, [np.nan] * 3), (0.5, _AT, 0), "back", True),
        (_UP, (0.8, [0.2, 0.2, 0.6]), (0.5, _AT, 0), "back", True),
        (_UP, (0.3, [0.2, 0.2, -0.4]), (0.5, _AT, 0), "back", False),
    ],
)
def test_cross_check_table(
    ray: tuple[list[float], list[float]],
    plugin: tuple[float, list[float]],
    bullet: tuple[float, list[float], int],
    case: str,
    agree: bool,
) -> None:
    rays = Rays(np.array([ray[0]]), np.array([ray[1]]), np.array([False]))
    check = cross_check(
        rays, _TRI, np.array([plugin[0]]), np.array([plugin[1]]),
        np.array([bullet[0]]), np.array([bullet[1]]), np.array([bullet[2]]),
    )  # fmt: skip
    assert (check.front, check.miss, check.back) == tuple(int(case == c) for c in
                                                           ("front", "miss", "back"))
    assert check.disagree == (0 if agree else 1)
    assert check.kinds["hitscan"]["disagree"] == check.disagree
    assert len(check.examples) == check.disagree
