"""Analytic answers for the swept-sphere kernels in :mod:`panda3d_ccd.sweep`.

Every expected value here is worked out by hand from the geometry (the comment beside each
row says how), never taken from the kernel. Warnings are errors in this module: a static
pair must not divide by zero on its way to ``inf``.
"""

from __future__ import annotations

import doctest
import math
import re

import numpy as np
import pytest

from panda3d_ccd import sweep
from panda3d_ccd.sweep import (
    sphere_plane_overlap,
    sphere_plane_toi,
    sphere_sphere_overlap,
    sphere_sphere_toi,
)

pytestmark = pytest.mark.filterwarnings("error")

INF = math.inf
NAN = math.nan
SQRT2 = math.sqrt(2.0)


def _one(value: np.ndarray) -> float:
    """The single entry of a (1,) result, checking that the shape and dtype are right."""
    assert value.shape == (1,)
    assert value.dtype == np.float64
    return float(value[0])


# ----------------------------------------------------------------------------------------
# sphere_sphere_toi
# ----------------------------------------------------------------------------------------

# (id, a0, a1, ra, b0, b1, rb, expected t)
SPHERE_SPHERE = [
    # B static at the origin, A from x=-5 to 5, R=1: touches at x=-1, t = 4/10.
    ("head-on, B static", (-5, 0, 0), (5, 0, 0), 0.5, (0, 0, 0), (0, 0, 0), 0.5, 0.4),
    # p0 = (-8,0,0), v = (8,0,0), R = 2: -8 + 8t = -2.
    ("head-on, both moving", (-4, 0, 0), (0, 0, 0), 1, (4, 0, 0), (0, 0, 0), 1, 0.75),
    # A is static; B comes from x=10 to 0, R=2: contact at x=2, t = 8/10.
    ("one static (A)", (0, 0, 0), (0, 0, 0), 1, (10, 0, 0), (0, 0, 0), 1, 0.8),
    # p(t) = (1-2t)(-3, 4, 0), |p| = 5|1-2t| = 2.5 at t = 1/4.
    ("crossing paths", (-3, 0, 0), (3, 0, 0), 1, (0, -4, 0), (0, 4, 0), 1.5, 0.25),
    # Same crossing, but B's path lies 10 above A's: closest 10 > R = 2.5.
    ("crossing paths, miss", (-3, 0, 0), (3, 0, 0), 1, (0, -4, 10), (0, 4, 10), 1.5, INF),
    # Impact parameter 0.6, R = 1: contact at x = -0.8, t = 4.2/10.
    ("off-centre hit", (-5, 0.6, 0), (5, 0.6, 0), 0.5, (0, 0, 0), (0, 0, 0), 0.5, 0.42),
    ("near miss", (-5, 1.5, 0), (5, 1.5, 0), 0.5, (0, 0, 0), (0, 0, 0), 0.5, INF),
    # Tunnelling: 0.2 of contact distance crossed in a 200-unit step, t = 99.8/200.
    ("thin and fast", (-100, 0, 0), (100, 0, 0), 0.1, (0, 0, 0), (0, 0, 0), 0.1, 0.499),
    ("both static, apart", (0, 0, 0), (0, 0, 0), 1, (5, 0, 0), (5, 0, 0), 1, INF),
    ("both static, touching", (0, 0, 0), (0, 0, 0), 1, (2, 0, 0), (2, 0, 0), 1, INF),
    ("both static, overlapping", (0, 0, 0), (0, 0, 0), 1, (1, 0, 0), (1, 0, 0), 1, INF),
    ("both static, concentric", (1, 2, 3), (1, 2, 3), 1, (1, 2, 3), (1, 2, 3), 2, INF),
    ("same motion, overlapping", (0, 0, 0), (3, 1, 2), 1, (0.5, 0, 0), (3.5, 1, 2), 1, INF),
    ("same motion, touching", (0, 0, 0), (0, 5, 0), 1, (2, 0, 0), (2, 5, 0), 1, INF),
    ("overlapping, approaching", (0, 0, 0), (1, 0, 0), 1, (1, 0, 0), (1, 0, 0), 1, 0.0),
    ("overlapping, separating", (0, 0, 0), (-1, 0, 0), 1, (1, 0, 0), (1, 0, 0), 1, INF),
    ("touching, approaching", (0, 0, 0), (1, 0, 0), 1, (2, 0, 0), (2, 0, 0), 1, 0.0),
    ("touching, separating", (0, 0, 0), (-1, 0, 0), 1, (2, 0, 0), (2, 0, 0), 1, INF),
    # Touching and moving perpendicular to the line of centres: distance only grows.
    ("touching, tangential", (0, 0, 0), (0, 5, 0), 1, (2, 0, 0), (2, 0, 0), 1, INF),
    # Concentric and moving: the distance between centres grows from 0.
    ("concentric, moving", (0, 0, 0), (1, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, INF),
    ("point into sphere", (-5, 0, 0), (5, 0, 0), 0, (0, 0, 0), (0, 0, 0), 1, 0.4),
    ("sphere onto point", (0, 0, 0), (0, 0, 0), 0, (0, -5, 0), (0, 5, 0), 1, 0.4),
    ("point off-centre", (-5, 0.6, 0), (5, 0.6, 0), 0, (0, 0, 0), (0, 0, 0), 1, 0.42),
    # |x| = 1 reached exactly at the end of the frame.
    ("touch at t=1, B static", (-3, 0, 0), (-1, 0, 0), 0.5, (0, 0, 0), (0, 0, 0), 0.5, 1.0),
    ("touch at t=1, both", (-3, 0, 0), (-1.5, 0, 0), 1.5, (3, 0, 0), (1.5, 0, 0), 1.5, 1.0),
    ("stops short", (-3, 0, 0), (-1.5, 0, 0), 0.5, (0, 0, 0), (0, 0, 0), 0.5, INF),
    ("moving away", (-3, 0, 0), (-5, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, INF),
    ("already past", (3, 0, 0), (9, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, INF),
]


@pytest.mark.parametrize(
    "a0, a1, ra, b0, b1, rb, expected",
    [row[1:] for row in SPHERE_SPHERE],
    ids=[row[0] for row in SPHERE_SPHERE],
)
def test_sphere_sphere_toi_table(a0, a1, ra, b0, b1, rb, expected):
    t = _one(sphere_sphere_toi(a0, a1, ra, b0, b1, rb))
    if math.isinf(expected):
        assert t == INF
    else:
        assert t == pytest.approx(expected, rel=1e-14, abs=1e-15)


def test_sphere_sphere_toi_table_vectorised():
    """All rows in one call: the masks must keep every row's answer apart."""
    cols = list(zip(*SPHERE_SPHERE))
    t = sphere_sphere_toi(
        np.array(cols[1], dtype=float),
        np.array(cols[2], dtype=float),
        np.array(cols[3], dtype=float),
        np.array(cols[4], dtype=float),
        np.array(cols[5], dtype=float),
        np.array(cols[6], dtype=float),
    )
    np.testing.assert_allclose(t, np.array(cols[7]), rtol=1e-14, atol=1e-15)


# Tangent paths: exactly touching at the closest approach. Either answer is allowed.
GRAZES = [
    # A's path passes at distance 2 = R from B's centre; closest at x = 0, t = 1/2.
    ("sphere graze", (-5, 2, 0), (5, 2, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.5),
    ("point graze", (-5, 1, 0), (5, 1, 0), 0, (0, 0, 0), (0, 0, 0), 1, 0.5),
    # Two points on a collision course: R = 0, the quadratic's double root at t = 1/2.
    ("point onto point", (-1, 0, 0), (1, 0, 0), 0, (0, 0, 0), (0, 0, 0), 0, 0.5),
]


@pytest.mark.parametrize(
    "a0, a1, ra, b0, b1, rb, tangent_t",
    [row[1:] for row in GRAZES],
    ids=[row[0] for row in GRAZES],
)
def test_sphere_sphere_toi_graze_either_way(a0, a1, ra, b0, b1, rb, tangent_t):
    t = _one(sphere_sphere_toi(a0, a1, ra, b0, b1, rb))
    assert t == INF or t == pytest.approx(tangent_t, abs=1e-7)


def test_sphere_sphere_toi_radii_broadcast():
    a0 = [(-5, 0, 0), (-5, 0, 0), (-5, 0, 0)]
    a1 = [(5, 0, 0), (5, 0, 0), (5, 0, 0)]
    # R = 1, 2, 3: contact at x = -R, t = (5 - R) / 10.
    t = sphere_sphere_toi(a0, a1, [0.5, 1.0, 1.5], (0, 0, 0), (0, 0, 0), [0.5, 1.0, 1.5])
    np.testing.assert_allclose(t, [0.4, 0.3, 0.2], rtol=1e-15)
    # A scalar for one radius, (n,) for the other.
    t = sphere_sphere_toi(a0, a1, 0.5, (0, 0, 0), (0, 0, 0), [0.5, 1.5, 2.5])
    np.testing.assert_allclose(t, [0.4, 0.3, 0.2], rtol=1e-15)


# ----------------------------------------------------------------------------------------
# Large coordinates and speeds: exact answers that survive only careful arithmetic.
# ----------------------------------------------------------------------------------------

C = np.array([1e6, 1e6, 1e6])
X, Y, Z = np.eye(3)


def test_large_coordinates_large_speed_head_on():
    # R = 2; A starts 500002 from B's centre and moves 1e6: gap 500000 closes at t = 1/2.
    a0 = C - 500002 * X
    t = _one(sphere_sphere_toi(a0, a0 + 1e6 * X, 1.5, C, C, 0.5))
    assert t == 0.5


def test_large_coordinates_large_speed_off_centre():
    # R = 5, impact parameter 3: contact 4 before the closest approach (3-4-5), after
    # 250000 of a 1e6 path.
    a0 = C + (-250004, 3, 0)
    t = _one(sphere_sphere_toi(a0, a0 + 1e6 * X, 2.0, C, C, 3.0))
    assert t == pytest.approx(0.25, rel=1e-15)


def test_large_coordinates_large_speed_both_moving():
    # p(t) = (1 - 2t)(-3e5, 4e5, 0), |p| = 5e5 |1 - 2t| = 5 at t = 1/2 - 1e-5 / 2.
    t = _one(sphere_sphere_toi(C - 3e5 * X, C + 3e5 * X, 2.0, C - 4e5 * Y, C + 4e5 * Y, 3.0))
    assert t == pytest.approx(0.499995, abs=1e-15)


def test_large_coordinates_small_motion():
    # Millimetre steps far from the origin: x from -3 to 1 about C, R = 1: t = 2/4.
    t = _one(sphere_sphere_toi(C - 3 * X, C + X, 0.5, C, C, 0.5))
    assert t == 0.5


def test_large_speed_at_origin():
    # A crosses 2e6 in one frame; R = 1; contact at x = -1 after 1e6 - 1: t = (1e6-1)/2e6.
    t = _one(sphere_sphere_toi(-1e6 * X, 1e6 * X, 0.25, (0, 0, 0), (0, 0, 0), 0.75))
    assert t == pytest.approx((1e6 - 1) / 2e6, rel=1e-15)


def test_large_coordinates_pairs_moving_together_are_not_contacts():
    """Regression: a1 - a0 and b1 - b0 round differently far from the origin.

    The relative motion of two bodies given the same displacement is then rounding noise,
    random in direction; it used to read as "approaching" about half the time, so resting
    pairs carried by a moving parent reported a contact at t = 0 every frame.
    """
    rng = np.random.default_rng(11)
    n = 200
    a0 = C + rng.uniform(-1e3, 1e3, (n, 3))
    d = rng.uniform(-1e6, 1e6, (n, 3))
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    for gap in (2.0, 1.5):  # touching (R = 2), overlapping by 0.5
        b0 = a0 + gap * u
        t = sphere_sphere_toi(a0, a0 + d, 1.0, b0, b0 + d, 1.0)
        np.testing.assert_array_equal(t, np.full(n, INF))


def test_large_coordinates_slow_real_approach_still_counts():
    # The noise floor must stay far below real motion: touching far from the origin and
    # pushing in by 1e-6 per frame is a contact at t = 0.
    a0 = C + (0.5, 0.0, 0.0)
    b0 = a0 + (2.0, 0.0, 0.0)
    t = _one(sphere_sphere_toi(a0, a0 + 1e-6 * X, 1.0, b0, b0, 1.0))
    assert t == 0.0


# ----------------------------------------------------------------------------------------
# sphere_plane_toi
# ----------------------------------------------------------------------------------------

UP = (0, 0, 1)

# (id, c0, c1, r, normal, offset, expected t)
SPHERE_PLANE = [
    # gap 4 at the start, normal motion -8: t = 1/2.
    ("from front", (0, 0, 5), (0, 0, -3), 1, UP, 0, 0.5),
    ("from front, oblique motion", (0, 0, 5), (8, -3, -3), 1, UP, 0, 0.5),
    ("from front, point", (0, 0, 2), (0, 0, -2), 0, UP, 0, 0.5),
    # Plane z = 10 (offset -10): gap 8, motion -20.
    ("offset plane", (0, 0, 20), (0, 0, 0), 2, UP, -10, 0.4),
    # Normal (0,0,2), offset -4: the plane z = 2 after normalising both.
    ("non-unit normal", (0, 0, 7), (0, 0, -3), 1, (0, 0, 2), -4, 0.4),
    # Plane x + y = 0; centre distance 6/sqrt2, r = sqrt2: gap 2 sqrt2, speed 6 sqrt2.
    ("oblique normal", (3, 3, 0), (-3, -3, 0), SQRT2, (1, 1, 0), 0, 1 / 3),
    # Solid side z > 0 (normal points down): gap 4, motion -10 along the normal.
    ("downward normal", (0, 0, -5), (0, 0, 5), 1, (0, 0, -1), 0, 0.4),
    ("behind, moving in", (0, 0, -2), (0, 0, -4), 1, UP, 0, 0.0),
    ("behind, moving out", (0, 0, -2), (0, 0, 4), 1, UP, 0, INF),
    ("behind, parallel", (0, 0, -3), (5, 0, -3), 1, UP, 0, INF),
    ("behind, static", (0, 0, -3), (0, 0, -3), 1, UP, 0, INF),
    ("penetrating, moving in", (0, 0, 0.5), (0, 0, 0), 1, UP, 0, 0.0),
    ("penetrating, moving out", (0, 0, 0.5), (0, 0, 1), 1, UP, 0, INF),
    ("touching, moving in", (0, 0, 1), (0, 0, 0), 1, UP, 0, 0.0),
    ("touching, moving out", (0, 0, 1), (0, 0, 2), 1, UP, 0, INF),
    ("touching, sliding along", (0, 0, 1), (5, 3, 1), 1, UP, 0, INF),
    ("in front, parallel", (0, 0, 3), (5, 0, 3), 1, UP, 0, INF),
    ("in front, static", (0, 0, 3), (0, 0, 3), 1, UP, 0, INF),
    ("in front, moving away", (0, 0, 3), (0, 0, 9), 1, UP, 0, INF),
    ("stops short", (0, 0, 5), (0, 0, 2), 1, UP, 0, INF),
    ("touch at t=1", (0, 0, 5), (0, 0, 1), 1, UP, 0, 1.0),
]


@pytest.mark.parametrize(
    "c0, c1, r, normal, offset, expected",
    [row[1:] for row in SPHERE_PLANE],
    ids=[row[0] for row in SPHERE_PLANE],
)
def test_sphere_plane_toi_table(c0, c1, r, normal, offset, expected):
    t = _one(sphere_plane_toi(c0, c1, r, normal, offset))
    if math.isinf(expected):
        assert t == INF
    else:
        assert t == pytest.approx(expected, rel=1e-14, abs=1e-15)


def test_sphere_plane_toi_table_vectorised():
    """All rows in one call, with per-row normals and offsets."""
    cols = list(zip(*SPHERE_PLANE))
    t = sphere_plane_toi(
        np.array(cols[1], dtype=float),
        np.array(cols[2], dtype=float),
        np.array(cols[3], dtype=float),
        np.array(cols[4], dtype=float),
        np.array(cols[5], dtype=float),
    )
    np.testing.assert_allclose(t, np.array(cols[6]), rtol=1e-14, atol=1e-15)


def test_sphere_plane_toi_one_plane_many_spheres():
    # Plane z = 0, r = 1; starting heights 5, 3, 2 moving -8: gaps 4, 2, 1 -> t = gap / 8.
    c0 = [(0, 0, 5), (1, 0, 3), (0, 2, 2)]
    c1 = [(0, 0, -3), (1, 0, -5), (0, 2, -6)]
    np.testing.assert_array_equal(sphere_plane_toi(c0, c1, 1.0, UP, 0.0), [0.5, 0.25, 0.125])
    # One offset per sphere: the planes z = 0, 1, -1 -> gaps 4, 1, 2.
    t = sphere_plane_toi(c0, c1, 1.0, UP, [0.0, -1.0, 1.0])
    np.testing.assert_array_equal(t, [0.5, 0.125, 0.25])


def test_sphere_plane_toi_large_coordinates_large_speed():
    # Plane z = 1e6; centre 500001 above it, r = 1, moving 1e6 down: t = 1/2.
    c0 = (1e6, -1e6, 1e6 + 500001)
    c1 = (1e6, -1e6, 1e6 - 499999)
    assert _one(sphere_plane_toi(c0, c1, 1.0, UP, -1e6)) == 0.5
    # The same scene ending exactly in touch.
    c1 = (2e6, -2e6, 1e6 + 1)
    assert _one(sphere_plane_toi(c0, c1, 1.0, UP, -1e6)) == 1.0


def test_sphere_plane_toi_tilted_plane_far_away_sliding_is_not_a_contact():
    """Regression: sliding slowly along a tilted plane far from the origin.

    c1 = c0 + d with d parallel to the plane rounds to a motion whose normal component is
    noise of the coordinates (about 1e-10 here), far above the old threshold 1e-9 |d| for
    a slide of 1e-3, so a touching sphere "moved in" at t = 0 about half the time.
    """
    rng = np.random.default_rng(7)
    n = 200
    normal = rng.normal(size=(n, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    along = np.cross(normal, rng.normal(size=(n, 3)))
    along *= rng.uniform(1e-4, 1e-2, (n, 1)) / np.linalg.norm(along, axis=1)[:, None]
    c0 = C + rng.uniform(-1e3, 1e3, (n, 3))
    offset = 1.0 - np.einsum("ij,ij->i", normal, c0)  # centres 1 in front: touching, r = 1
    t = sphere_plane_toi(c0, c0 + along, 1.0, normal, offset)
    np.testing.assert_array_equal(t, np.full(n, INF))


def test_sphere_plane_toi_tilted_plane_far_away_slow_approach():
    n = np.array([3.0, 4.0, 0.0]) / 5.0
    c0 = C + (0.25, 0.5, 0.75)
    offset = 1.0 + 5e-7 - c0 @ n  # 5e-7 in front of touching
    # 1e-6 straight in: contact half-way (to the ~1e-10 rounding of c0 . n at 1e6).
    t = _one(sphere_plane_toi(c0, c0 - 1e-6 * n, 1.0, n, offset))
    assert t == pytest.approx(0.5, abs=1e-3)


# ----------------------------------------------------------------------------------------
# Shapes: empty inputs, (3,) points, dtype
# ----------------------------------------------------------------------------------------

E = np.empty((0, 3))


@pytest.mark.parametrize(
    "call",
    [
        lambda: sphere_sphere_toi(E, E, 1.0, E, E, 1.0),
        lambda: sphere_sphere_toi(E, E, np.empty(0), E, E, np.empty(0)),
        lambda: sphere_plane_toi(E, E, 1.0, UP, 0.0),
        lambda: sphere_plane_toi(E, E, np.empty(0), E, np.empty(0)),
    ],
    ids=["sphere scalar radii", "sphere (0,) radii", "plane (3,) normal", "plane (0,3) normal"],
)
def test_empty_inputs_give_empty_outputs(call):
    t = call()
    assert t.shape == (0,)
    assert t.dtype == np.float64


@pytest.mark.parametrize(
    "call",
    [
        lambda: sphere_sphere_overlap(E, E, 1.0, E, E, 1.0),
        lambda: sphere_plane_overlap(E, E, 1.0, UP, 0.0),
    ],
    ids=["sphere", "plane"],
)
def test_empty_inputs_give_empty_overlaps(call):
    enter, leave = call()
    assert enter.shape == leave.shape == (0,)
    assert enter.dtype == leave.dtype == np.float64


def test_single_points_and_integer_input():
    # (3,) points are one row; integer input is converted to float64.
    t = sphere_sphere_toi(
        np.array([-5, 0, 0]), np.array([5, 0, 0]), 1, np.zeros(3, int), (0, 0, 0), 0
    )
    assert t.dtype == np.float64 and t.tolist() == [0.4]


# ----------------------------------------------------------------------------------------
# Overlap intervals
# ----------------------------------------------------------------------------------------

# (id, a0, a1, ra, b0, b1, rb, enter, exit); B is at the origin unless it moves.
SPHERE_OVERLAPS = [
    # |x| <= 2 for x = -4 + 8t: t in [1/4, 3/4].
    ("pass through", (-4, 0, 0), (4, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.25, 0.75),
    # Both moving: p = (-8 + 16t, 0, 0), |p| <= 2 for t in [3/8, 5/8].
    ("pass through, both", (-4, 0, 0), (4, 0, 0), 1, (4, 0, 0), (-4, 0, 0), 1, 0.375, 0.625),
    # Impact parameter 1.2 with R = 2: chord half-length 1.6, x in [-1.6, 1.6], x = -4+8t.
    ("off-centre chord", (-4, 1.2, 0), (4, 1.2, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.3, 0.7),
    ("start inside, leave", (0, 0, 0), (4, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.0, 0.5),
    ("start inside, separating", (1, 0, 0), (4, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.0, 1 / 3),
    ("inside throughout", (0, 0, 0), (1, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.0, 1.0),
    ("end inside", (-4, 0, 0), (0, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.5, 1.0),
    ("static inside", (1, 0, 0), (1, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, 0.0, 1.0),
    ("together inside", (1, 0, 0), (5, 3, 0), 1, (0, 0, 0), (4, 3, 0), 1, 0.0, 1.0),
    ("never (miss)", (-4, 5, 0), (4, 5, 0), 1, (0, 0, 0), (0, 0, 0), 1, NAN, NAN),
    ("never (short)", (-8, 0, 0), (-4, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, NAN, NAN),
    ("never (away)", (-3, 0, 0), (-8, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, NAN, NAN),
    ("never (static)", (5, 0, 0), (5, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, NAN, NAN),
    ("static touching", (2, 0, 0), (2, 0, 0), 1, (0, 0, 0), (0, 0, 0), 1, NAN, NAN),
]


@pytest.mark.parametrize(
    "a0, a1, ra, b0, b1, rb, enter, leave",
    [row[1:] for row in SPHERE_OVERLAPS],
    ids=[row[0] for row in SPHERE_OVERLAPS],
)
def test_sphere_sphere_overlap_table(a0, a1, ra, b0, b1, rb, enter, leave):
    got = sphere_sphere_overlap(a0, a1, ra, b0, b1, rb)
    np.testing.assert_allclose([_one(got[0]), _one(got[1])], [enter, leave], rtol=1e-14, atol=1e-15)


def test_sphere_sphere_overlap_tangential_start_just_inside():
    """Regression: starting just inside and moving tangentially gave (0, nan).

    The quarter discriminant a R^2 - |p0 x v|^2 rounded to <= 0 although it is exactly
    >= -a c > 0 when the spheres start inside; the interval must be closed, and tiny.
    """
    a0 = [5.039606457248774, 2.0835651376990687, -3.3610925523016726]
    a1 = [-18.31737562925708, 33.685682478177945, -18.792065359457723]
    enter, leave = sphere_sphere_overlap(a0, a1, 6.405920704482398, (0, 0, 0), (0, 0, 0), 0.0)
    assert _one(enter) == 0.0
    assert 0.0 <= _one(leave) < 1e-6


def test_sphere_sphere_overlap_graze_either_way():
    enter, leave = sphere_sphere_overlap((-4, 2, 0), (4, 2, 0), 1, (0, 0, 0), (0, 0, 0), 1)
    pair = (_one(enter), _one(leave))
    assert all(map(math.isnan, pair)) or pair == pytest.approx((0.5, 0.5), abs=1e-7)


def test_overlap_of_tiny_relative_motion_does_not_overflow():
    """Regression: a relative motion of ~1e-154 put the roots beyond the float range, and
    the overflow escaped as a RuntimeWarning (an error here). They never meet: nan, nan."""
    enter, leave = sphere_sphere_overlap(
        (0, 0, 0),
        (0, 0, 4.99143167e-154),
        0.0,
        (0, 4, 1.99657267e-151),
        (0, 4, 2.0015641e-151),
        0.0,
    )
    assert math.isnan(_one(enter)) and math.isnan(_one(leave))
    # The same in a half-space 3 below a sphere that creeps 1e-310 towards it.
    enter, leave = sphere_plane_overlap((0, 0, 0), (0, 0, -1e-310), 1.0, UP, 4.0)
    assert math.isnan(_one(enter)) and math.isnan(_one(leave))
    # Starting inside and creeping: inside for the whole frame.
    enter, leave = sphere_sphere_overlap(
        (0, 0, 0), (0, 0, 1e-300), 1.0, (0, 0.5, 0), (0, 0.5, 0), 1.0
    )
    assert (_one(enter), _one(leave)) == (0.0, 1.0)


# (id, c0, c1, r, normal, offset, enter, exit)
PLANE_OVERLAPS = [
    ("from front, ends inside", (0, 0, 5), (0, 0, -3), 1, UP, 0, 0.5, 1.0),
    ("from front, deep", (0, 0, 5), (0, 0, -100), 1, UP, 0, 4 / 105, 1.0),
    ("behind, moving out", (0, 0, -3), (0, 0, 5), 1, UP, 0, 0.0, 0.5),
    ("behind, moving in", (0, 0, -3), (0, 0, -5), 1, UP, 0, 0.0, 1.0),
    ("behind, static", (0, 0, -3), (0, 0, -3), 1, UP, 0, 0.0, 1.0),
    ("touching, moving in", (0, 0, 1), (0, 0, -1), 1, UP, 0, 0.0, 1.0),
    ("non-unit normal", (0, 0, 7), (0, 0, -3), 1, (0, 0, 2), -4, 0.4, 1.0),
    ("never (parallel)", (0, 0, 3), (5, 0, 3), 1, UP, 0, NAN, NAN),
    ("never (short)", (0, 0, 5), (0, 0, 3), 1, UP, 0, NAN, NAN),
    ("never (away)", (0, 0, 5), (0, 0, 9), 1, UP, 0, NAN, NAN),
    ("never (static)", (0, 0, 5), (0, 0, 5), 1, UP, 0, NAN, NAN),
]


@pytest.mark.parametrize(
    "c0, c1, r, normal, offset, enter, leave",
    [row[1:] for row in PLANE_OVERLAPS],
    ids=[row[0] for row in PLANE_OVERLAPS],
)
def test_sphere_plane_overlap_table(c0, c1, r, normal, offset, enter, leave):
    got = sphere_plane_overlap(c0, c1, r, normal, offset)
    np.testing.assert_allclose([_one(got[0]), _one(got[1])], [enter, leave], rtol=1e-14, atol=1e-15)


def test_overlap_tables_vectorised():
    cols = list(zip(*SPHERE_OVERLAPS))
    enter, leave = sphere_sphere_overlap(*(np.array(c, dtype=float) for c in cols[1:7]))
    np.testing.assert_allclose(enter, cols[7], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(leave, cols[8], rtol=1e-14, atol=1e-15)
    cols = list(zip(*PLANE_OVERLAPS))
    enter, leave = sphere_plane_overlap(*(np.array(c, dtype=float) for c in cols[1:6]))
    np.testing.assert_allclose(enter, cols[6], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(leave, cols[7], rtol=1e-14, atol=1e-15)


# ----------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------

P = (0.0, 0.0, 0.0)
Q = (1.0, 0.0, 0.0)
PP = [P, P]
PPP = [P, P, P]

SPHERE_ERRORS = [
    ("negative ra", (P, Q, -1.0, P, P, 1.0), "ra must be finite and >= 0, got -1.0"),
    ("nan rb", (P, Q, 1.0, P, P, math.nan), "rb must be finite and >= 0, got nan"),
    ("inf in ra array", (PP, PP, [1.0, INF], PP, PP, 1.0), "ra must be finite and >= 0, got inf"),
    (
        "negative in rb array",
        (PP, PP, 1.0, PP, PP, [1.0, -2.5]),
        "rb must be finite and >= 0, got -2.5",
    ),
    ("2-d ra", (P, Q, [[1.0]], P, P, 1.0), "ra must be a scalar or have shape (n,), got (1, 1)"),
    ("a0 of length 2", ((0, 0), Q, 1.0, P, P, 1.0), "a0 must have shape (n, 3), got (2,)"),
    (
        "a1 with 4 columns",
        (P, [(1, 0, 0, 0)], 1.0, P, P, 1.0),
        "a1 must have shape (n, 3), got (1, 4)",
    ),
    (
        "b0 3-d",
        (P, Q, 1.0, np.zeros((1, 1, 3)), P, 1.0),
        "b0 must have shape (n, 3), got (1, 1, 3)",
    ),
    ("b1 empty list", (P, Q, 1.0, P, [], 1.0), "b1 must have shape (n, 3), got (0,)"),
    (
        "row counts",
        (PP, PPP, 1.0, P, P, 1.0),
        "row counts do not match (a0: (2, 3), a1: (3, 3), ra: (), b0: (1, 3), b1: (1, 3), rb: ())",
    ),
    (
        "radius rows",
        (PP, PP, [1.0, 1.0, 1.0], P, P, 1.0),
        "row counts do not match (a0: (2, 3), a1: (2, 3), ra: (3,), b0: (1, 3), b1: (1, 3), "
        "rb: ())",
    ),
]


@pytest.mark.parametrize("func", [sphere_sphere_toi, sphere_sphere_overlap])
@pytest.mark.parametrize(
    "args, message", [row[1:] for row in SPHERE_ERRORS], ids=[row[0] for row in SPHERE_ERRORS]
)
def test_sphere_sphere_bad_input(func, args, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        func(*args)


PLANE_ERRORS = [
    ("negative r", (P, Q, -0.5, UP, 0.0), "r must be finite and >= 0, got -0.5"),
    ("inf r", (P, Q, INF, UP, 0.0), "r must be finite and >= 0, got inf"),
    (
        "zero normal",
        (P, Q, 1.0, (0, 0, 0), 0.0),
        "normal must be finite and non-zero, got [0.0, 0.0, 0.0]",
    ),
    (
        "nan normal row",
        (PP, PP, 1.0, [UP, (0, math.nan, 1)], 0.0),
        "normal must be finite and non-zero, got [0.0, nan, 1.0]",
    ),
    ("normal of length 2", (P, Q, 1.0, (0, 1), 0.0), "normal must have shape (n, 3), got (2,)"),
    ("nan offset", (P, Q, 1.0, UP, math.nan), "offset must be finite, got nan"),
    (
        "2-d offset",
        (P, Q, 1.0, UP, [[0.0]]),
        "offset must be a scalar or have shape (n,), got (1, 1)",
    ),
    ("c0 of length 4", ((0, 0, 0, 0), Q, 1.0, UP, 0.0), "c0 must have shape (n, 3), got (4,)"),
    ("c1 3-d", (P, np.zeros((2, 1, 3)), 1.0, UP, 0.0), "c1 must have shape (n, 3), got (2, 1, 3)"),
    (
        "normal and offset rows",
        (PP, PP, 1.0, [UP, UP], [0.0, 1.0, 2.0]),
        "row counts do not match (normal: (2, 3), offset: (3,))",
    ),
    (
        "sphere and plane rows",
        (PPP, PPP, 1.0, [UP, UP], 0.0),
        "row counts do not match (c0: (3, 3), c1: (3, 3), r: (), normal: (2, 3), offset: (2,))",
    ),
]


@pytest.mark.parametrize("func", [sphere_plane_toi, sphere_plane_overlap])
@pytest.mark.parametrize(
    "args, message", [row[1:] for row in PLANE_ERRORS], ids=[row[0] for row in PLANE_ERRORS]
)
def test_sphere_plane_bad_input(func, args, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        func(*args)


# ----------------------------------------------------------------------------------------
# The module's own examples
# ----------------------------------------------------------------------------------------


def test_docstring_examples():
    """The Examples sections run here too, so plain ``pytest`` checks them."""
    modules = (sweep, sweep.sphere_sphere, sweep.sphere_plane)
    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS) for m in modules]
    assert sum(r.failed for r in results) == 0
    assert sum(r.attempted for r in results) >= 11
