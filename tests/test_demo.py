"""The bundled demo: headless runs (no tunnelling, deterministic), the screenshot, the
no-display message, and the demo's independent ground truth."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo.truth import expected_hits, went_into  # noqa: E402

TIMING_FIELDS = {"ms_per_frame"}


def run_demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def summary(proc: subprocess.CompletedProcess) -> dict[str, str]:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("summary: ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return dict(field.split("=", 1) for field in lines[0][len("summary: ") :].split())


@pytest.fixture(scope="module")
def plugin_runs() -> list[subprocess.CompletedProcess]:
    """The same 300-frame headless run, twice."""
    return [run_demo("--headless", "--frames", "300") for _ in range(2)]


def test_headless_plugin_run_has_no_tunnelling(plugin_runs):
    proc = plugin_runs[0]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fields = summary(proc)
    assert fields["system"] == "plugin"
    assert fields["frames"] == "300"
    assert fields["tunnelled"] == "0"
    assert fields["missed"] == "0"
    # A lively level: hundreds of true hits, every one of them reported.
    assert int(fields["caught"]) > 1000
    assert int(fields["contacts"]) >= int(fields["caught"])
    assert int(fields["score"]) > 20
    assert float(fields["ms_per_frame"]) > 0


def test_same_seed_same_summary(plugin_runs):
    first, second = (summary(proc) for proc in plugin_runs)
    for name in TIMING_FIELDS:
        first.pop(name)
        second.pop(name)
    assert first == second


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
    colours = {image.getXelVal(x, y) for x in range(0, 320, 2) for y in range(0, 240, 2)}
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
WALL, PILLAR, BALL, PICKUP = 1, 2, 8, 16


def _truth(m0, m1, radius, m_from, m_into, s=(), planes=()):
    """expected_hits with obstacles given as (centre0, centre1, radius, into, sensor) and
    planes as (normal, offset, into)."""
    s0 = np.array([o[0] for o in s], float).reshape(-1, 3)
    s1 = np.array([o[1] for o in s], float).reshape(-1, 3)
    return expected_hits(
        np.array(m0, float),
        np.array(m1, float),
        np.array(radius, float),
        np.array(m_from, np.int64),
        np.array(m_into, np.int64),
        s0,
        s1,
        np.array([o[2] for o in s], float),
        np.array([o[3] for o in s], np.int64),
        np.array([o[4] for o in s], bool),
        np.array([p[0] for p in planes], float).reshape(-1, 3),
        np.array([p[1] for p in planes], float),
        np.array([p[2] for p in planes], np.int64),
    )


def test_truth_takes_the_earliest_solid_hit_and_every_sensor():
    # A projectile along +x: a pickup at x = 3, a pillar at x = 6, the wall x = 10 behind it.
    exp = _truth(
        [[0, 0, 1]],
        [[20, 0, 1]],
        [0.5],
        [WALL | PILLAR | PICKUP],
        [0],
        s=[((3, 0, 1), (3, 0, 1), 1.0, PICKUP, True), ((6, 0, 1), (6, 0, 1), 1.0, PILLAR, False)],
        planes=[((-1, 0, 0), 10.0, WALL)],
    )
    rows = sorted(zip(exp.sensor.tolist(), exp.kind.tolist(), exp.other.tolist()))
    assert rows == [(False, 0, 1), (True, 0, 0)]
    solid = np.flatnonzero(~exp.sensor)[0]
    assert exp.t[solid] == pytest.approx(4.5 / 20, abs=1e-4)


def test_truth_respects_masks_and_grazes():
    # Mask says no: nothing. A path reaching only 1e-4 (< GRAZE) into a sphere: a graze.
    none = _truth(
        [[0, 0, 1]],
        [[20, 0, 1]],
        [0.5],
        [WALL],
        [0],
        s=[
            ((6, 0, 1), (6, 0, 1), 1.0, PILLAR, False),
            ((12, 1.5 - 1e-4, 1), (12, 1.5 - 1e-4, 1), 1.0, WALL, False),
        ],
    )
    assert len(none.t) == 0


def test_truth_pairs_of_movers_count_for_both():
    exp = _truth(
        [[0, 0, 1], [4, 0, 1]], [[2, 0, 1], [2, 0, 1]], [0.5, 0.5], [BALL, BALL], [BALL, BALL]
    )
    assert sorted(zip(exp.mover.tolist(), exp.other.tolist(), exp.kind.tolist())) == [
        (0, 1, 2),
        (1, 0, 2),
    ]
    assert exp.t == pytest.approx([0.75, 0.75], abs=1e-3)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ((2.0, 0.0, 0.0), False),  # stopped touching the pillar (radius 1 + 1 at x = 4)
        ((8.0, 0.0, 0.0), True),  # went straight through
        ((8.0, 4.0, 0.0), False),  # passed beside it
        ((4.0, 1.4, 0.0), True),  # ended more than half inside
    ],
)
def test_went_into(q, expected):
    got = went_into(
        np.array([[0.0, 0.0, 0.0]]),
        np.array([q]),
        np.array([1.0]),
        np.array([[4.0, 0.0, 0.0]]),
        np.array([1.0]),
    )
    assert got.tolist() == [expected]
