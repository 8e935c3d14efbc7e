"""Bodies whose radius changes within the frame (``solve(radius0=...)``): growing into a
surface is a contact, a rewound body stops growing where it stopped moving, and a slide
keeps clear of the surface as it grows."""

from __future__ import annotations

import numpy as np
import pytest

from panda3d_ccd._solver import PLANE, REWIND, SENSOR, SLIDE, solve
from panda3d_ccd._tolerance import SLOP_REL

MASK = np.int64(0xFFFFF)
FLOOR = dict(
    plane_normal=np.array([[0.0, 0.0, 1.0]]),
    plane_offset0=np.zeros(1),
    plane_offset1=np.zeros(1),
    plane_mask=np.full(1, MASK),
)


def run(p0, p1, radius0, radius, response, **kwargs):
    p0 = np.asarray(p0, np.float64)
    n = len(p0)
    return solve(
        p0,
        np.asarray(p1, np.float64),
        np.asarray(radius, np.float64),
        np.asarray(response, np.int8),
        np.full(n, MASK),
        np.full(n, MASK),
        radius0=np.asarray(radius0, np.float64),
        **kwargs,
    )


def end_radius(res, radius0, radius):
    """The radius each body ends with: it stops changing when the body stops."""
    radius0, radius = np.asarray(radius0, float), np.asarray(radius, float)
    return radius0 + np.minimum(res.t_stop, 1.0) * (radius - radius0)


@pytest.mark.parametrize(
    "z0, t",
    [(1.0, 0.0), (2.0, 0.5), (3.0, 1.0)],
    ids=["resting, grows at once", "grows into it halfway", "grows to touch at the end"],
)
def test_a_rewind_ball_growing_into_the_floor_stops_touching_it(z0, t):
    res = run([[0, 0, z0]], [[0, 0, z0]], [1.0], [3.0], [REWIND], **FLOOR)
    if t == 1.0:  # touching only at the very end: not yet a contact
        assert len(res.hits.t) == 0
        return
    assert res.hits.t.tolist() == [t] and res.hits.kind.tolist() == [PLANE]
    assert res.t_stop.tolist() == [t]
    assert end_radius(res, [1.0], [3.0]).tolist() == [z0]  # touching the floor, not in it
    assert res.hits.speed[0] == pytest.approx(2.0)  # the growth, per frame


def test_a_growing_slide_rises_off_the_floor_as_it_grows():
    res = run([[0, 0, 2]], [[4, 0, 2]], [1.0], [3.0], [SLIDE], **FLOOR)
    assert res.hits.t.tolist() == [0.5]
    np.testing.assert_allclose(res.end, [[4.0, 0.0, 3.0]], rtol=1e-12)
    assert res.t_stop.tolist() == [1.0]  # it went on growing to its full size


def test_two_bodies_growing_into_each_other_both_stop_touching():
    res = run([[0, 0, 0], [5, 0, 0]], [[0, 0, 0], [5, 0, 0]], [1, 1], [2, 4], [REWIND, REWIND])
    assert res.hits.t.tolist() == [0.75]  # 2 + 4t = 5
    r = end_radius(res, [1, 1], [2, 4])
    assert r.tolist() == [1.75, 3.25]
    assert np.linalg.norm(res.end[1] - res.end[0]) == pytest.approx(r.sum())


def test_a_growing_sensor_reports_what_it_reaches_and_moves_nothing():
    """An explosion: a sensor from radius 0 to 10 in one frame, among still bodies."""
    p = np.array([[0, 0, 0], [5, 0, 0], [0, 8, 0], [20, 0, 0]], float)
    res = run(p, p, [0, 1, 1, 1], [10, 1, 1, 1], [SENSOR, REWIND, REWIND, REWIND])
    assert sorted(zip(res.hits.b.tolist(), res.hits.t.tolist())) == [
        (1, pytest.approx(0.4)),
        (2, pytest.approx(0.7)),
    ]
    assert res.hits.sensor.all()
    np.testing.assert_array_equal(res.end, p)


def test_without_growth_radius0_changes_nothing_bit_for_bit():
    rng = np.random.default_rng(5)
    p0 = rng.uniform(-6, 6, (80, 3))
    p1 = p0 + rng.normal(size=(80, 3)) * 2
    radius = rng.uniform(0.2, 1.0, 80)
    response = rng.choice([REWIND, SLIDE, SENSOR], 80).astype(np.int8)
    plain = solve(p0, p1, radius, response, np.full(80, MASK), np.full(80, MASK), **FLOOR)
    same = solve(
        p0, p1, radius, response, np.full(80, MASK), np.full(80, MASK), radius0=radius, **FLOOR
    )
    assert len(plain.hits.t) > 10
    for a, b in zip(plain, same):
        if isinstance(a, tuple):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(12))
def test_random_growing_scenes_end_with_no_overlap_beyond_the_slop(seed):
    """Bodies moving and growing (or shrinking) in a box of walls: at the end, no two solids
    and no solid and wall overlap deeper than the slop, however fast they grew."""
    rng = np.random.default_rng(seed)
    n, box = 40, 8.0
    p0 = np.empty((0, 3))
    radius0 = np.empty(0)
    while len(p0) < n:
        c, r = rng.uniform(-box + 1, box - 1, 3), rng.uniform(0.2, 0.8)
        if len(p0) == 0 or np.all(np.linalg.norm(p0 - c, axis=1) > radius0 + r):
            p0, radius0 = np.vstack([p0, c]), np.append(radius0, r)
    p1 = p0 + rng.normal(size=(n, 3)) * rng.choice([0.0, 0.5, 3.0], (n, 1))
    radius = radius0 * rng.choice([0.5, 1.0, 2.0, 4.0], n)
    response = rng.choice([REWIND, SLIDE], n).astype(np.int8)
    walls = np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], float)
    kwargs = dict(
        plane_normal=walls,
        plane_offset0=np.full(6, box),
        plane_offset1=np.full(6, box),
        plane_mask=np.full(6, MASK),
    )
    res = run(p0, p1, radius0, radius, response, **kwargs)
    assert not res.capped
    r = end_radius(res, radius0, radius)
    slop = SLOP_REL * 20
    gaps = np.linalg.norm(res.end[:, None] - res.end[None], axis=2) - (r[:, None] + r[None])
    np.fill_diagonal(gaps, np.inf)
    assert gaps.min() >= -slop
    wall_gap = res.end @ walls.T + box - r[:, None]
    assert wall_gap.min() >= -slop
    assert len(res.hits.t) > 0
