"""Spheres whose radius changes within the frame (a node's scale growing): the radius is
swept linearly in t, so growing into something is a contact like moving into it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panda3d_ccd.sweep import (
    sphere_plane_overlap,
    sphere_plane_toi,
    sphere_sphere_overlap,
    sphere_sphere_toi,
)

ORIGIN = [0.0, 0.0, 0.0]

# (a0, a1, ra, ra1, b, rb, rb1, t): b is still at b; analytic answers.
SPHERE_TABLE = [
    ("still, grows to touch at the end", ORIGIN, ORIGIN, 1.0, 3.0, [4, 0, 0], 1.0, 1.0, 1.0),
    ("still, grows through", ORIGIN, ORIGIN, 1.0, 5.0, [4, 0, 0], 1.0, 1.0, 0.5),
    ("both grow", ORIGIN, ORIGIN, 1.0, 2.0, [4, 0, 0], 1.0, 3.0, 2 / 3),
    ("moving in while growing", ORIGIN, [1, 0, 0], 1.0, 2.0, [4, 0, 0], 1.0, 1.0, 1.0),
    ("moving away, growing faster", ORIGIN, [-1, 0, 0], 1.0, 5.0, [4, 0, 0], 1.0, 1.0, 2 / 3),
    ("moving away as fast as it grows", ORIGIN, [-2, 0, 0], 1.0, 3.0, [4, 0, 0], 1.0, 1.0, np.inf),
    ("moving in, shrinking as fast", ORIGIN, [2, 0, 0], 1.0, 0.0, [4, 0, 0], 1.0, 0.0, np.inf),
    ("touching and growing", ORIGIN, ORIGIN, 2.0, 3.0, [4, 0, 0], 2.0, 2.0, 0.0),
    ("touching and shrinking", ORIGIN, ORIGIN, 2.0, 1.0, [4, 0, 0], 2.0, 2.0, np.inf),
    ("a point growing into a point", ORIGIN, ORIGIN, 0.0, 2.0, [1, 0, 0], 0.0, 0.0, 0.5),
]


@pytest.mark.parametrize(
    "a0, a1, ra, ra1, b, rb, rb1, t",
    [row[1:] for row in SPHERE_TABLE],
    ids=[row[0] for row in SPHERE_TABLE],
)
def test_growing_sphere_pairs_analytic(a0, a1, ra, ra1, b, rb, rb1, t):
    got = sphere_sphere_toi([a0], [a1], ra, [b], [b], rb, ra1=ra1, rb1=rb1)
    np.testing.assert_allclose(got, [t], rtol=1e-12, atol=0)
    # The same pair seen from the other side.
    back = sphere_sphere_toi([b], [b], rb, [a0], [a1], ra, ra1=rb1, rb1=ra1)
    np.testing.assert_allclose(back, [t], rtol=1e-12, atol=0)


PLANE_TABLE = [
    ("resting, grows into the floor", [0, 0, 1], [0, 0, 1], 1.0, 3.0, 0.0),
    ("above, grows to touch", [0, 0, 2], [0, 0, 2], 1.0, 3.0, 0.5),
    ("rising as fast as it grows", [0, 0, 2], [0, 0, 4], 1.0, 3.0, np.inf),
    ("falling and growing", [0, 0, 5], [0, 0, 1], 1.0, 3.0, 2 / 3),
    ("resting, shrinking", [0, 0, 1], [0, 0, 1], 1.0, 0.5, np.inf),
]


@pytest.mark.parametrize(
    "c0, c1, r, r1, t", [row[1:] for row in PLANE_TABLE], ids=[row[0] for row in PLANE_TABLE]
)
def test_growing_sphere_and_plane_analytic(c0, c1, r, r1, t):
    got = sphere_plane_toi([c0], [c1], r, (0, 0, 1), 0.0, r1=r1)
    np.testing.assert_allclose(got, [t], rtol=1e-12, atol=0)


def test_growing_overlaps_analytic():
    b = [[4, 0, 0], ORIGIN, [1, 0, 0]]
    enter, leave = sphere_sphere_overlap(
        [ORIGIN, [-4, 0, 0], ORIGIN], [ORIGIN, [4, 0, 0], ORIGIN], [1.0, 1.0, 2.0], b, b,
        [1.0, 1.0, 1.0], ra1=[5.0, 1.0, 0.0], rb1=[1.0, 1.0, 0.5],
    )  # fmt: skip
    np.testing.assert_allclose(enter, [0.5, 0.25, 0.0], rtol=1e-12)
    np.testing.assert_allclose(leave, [1.0, 0.75, 0.8], rtol=1e-12)
    enter, leave = sphere_plane_overlap(
        [[0, 0, 2], [0, 0, 0.5]], [[0, 0, 2], [0, 0, 0.5]], 1.0, (0, 0, 1), 0.0, r1=[3.0, 0.0]
    )
    np.testing.assert_allclose(enter, [0.5, 0.0], rtol=1e-12)
    np.testing.assert_allclose(leave, [1.0, 0.5], rtol=1e-12)


def test_end_radii_equal_to_the_start_change_nothing_bit_for_bit():
    rng = np.random.default_rng(3)
    a0, a1, b0, b1 = (rng.uniform(-5, 5, (500, 3)) for _ in range(4))
    ra, rb = rng.uniform(0, 2, 500), rng.uniform(0, 2, 500)
    plain = sphere_sphere_toi(a0, a1, ra, b0, b1, rb)
    assert np.isfinite(plain).sum() > 50
    same = sphere_sphere_toi(a0, a1, ra, b0, b1, rb, ra1=ra, rb1=rb)
    np.testing.assert_array_equal(plain, same)
    for got, want in zip(
        sphere_sphere_overlap(a0, a1, ra, b0, b1, rb, ra1=ra, rb1=rb),
        sphere_sphere_overlap(a0, a1, ra, b0, b1, rb),
    ):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    plain = sphere_plane_toi(a0, a1, ra, (0, 0, 1), 0.0)
    np.testing.assert_array_equal(plain, sphere_plane_toi(a0, a1, ra, (0, 0, 1), 0.0, r1=ra))


coordinate = st.floats(-10, 10)
point = st.tuples(coordinate, coordinate, coordinate)
radius = st.floats(0, 3)


@settings(max_examples=300, deadline=None)
@given(point, point, radius, radius, point, point, radius, radius)
def test_growing_pairs_against_dense_sampling(a0, a1, ra, ra1, b0, b1, rb, rb1):
    """The first contact is a touching moment, nothing overlaps deeper before it, and the
    overlap interval brackets every overlapping sample."""
    a0, a1, b0, b1 = (np.array([p], float) for p in (a0, a1, b0, b1))
    t = sphere_sphere_toi(a0, a1, ra, b0, b1, rb, ra1=ra1, rb1=rb1)[0]
    enter, leave = sphere_sphere_overlap(a0, a1, ra, b0, b1, rb, ra1=ra1, rb1=rb1)
    s = np.linspace(0, 1, 4001)
    gap = np.linalg.norm((a0 - b0) + s[:, None] * ((a1 - a0) - (b1 - b0)), axis=1) - (
        (ra + rb) + s * ((ra1 + rb1) - (ra + rb))
    )
    tol = 1e-9 * (1 + 30)
    if gap[0] > tol:  # starts apart: entering is approaching
        before = s < (t if np.isfinite(t) else 2.0)
        assert np.all(gap[before] > -1e-6), "overlapped before the reported contact"
        if np.isfinite(t):

            def gap_at(u):
                return np.linalg.norm((a0 - b0) + u * ((a1 - a0) - (b1 - b0))) - (
                    (ra + rb) + u * ((ra1 + rb1) - (ra + rb))
                )

            # Where the touch is a double root (two points shrinking onto each other at
            # once), t is conditioned like sqrt(eps): allow that much time, at the gap's
            # rate there.
            rate = abs(gap_at(min(t + 1e-6, 1.0)) - gap_at(max(t - 1e-6, 0.0))) / 2e-6
            assert abs(gap_at(t)) <= 1e-9 * 40 + 3e-8 * rate
    inside = gap < -1e-6
    if inside.any():
        assert np.isfinite(enter[0]) and np.isfinite(leave[0])
        assert enter[0] <= s[inside].min() + 1e-9 and leave[0] >= s[inside].max() - 1e-9
    if np.isfinite(enter[0]):
        mid = 0.5 * (enter[0] + leave[0])
        g = np.interp(mid, s, gap)
        assert g <= 1e-6
