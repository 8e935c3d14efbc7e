"""Invariants of the swept-sphere kernels, checked with hypothesis.

The reference implementations below are scalar pure Python and share no code with the
kernels: they take the float64 inputs as exact rationals (``fractions.Fraction``), so every
decision (approaching? overlapping at the start? a real root? before t = 1?) is exact, and
only the final root is rounded once. A plain-float quadratic would itself misjudge grazes
of small spheres far from the origin, and could not tell a kernel bug from its own.

Rounding can only matter within a distance ``TOL_REL * scale`` of a boundary case (touching
at the start or end, a graze, a path perpendicular to the line of centres). Where a case
is that close, either answer is accepted, but a finite answer must still be a moment of
touching while approaching; everywhere else the kernel must agree with the reference.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from panda3d_ccd.sweep import (
    sphere_plane_overlap,
    sphere_plane_toi,
    sphere_sphere_overlap,
    sphere_sphere_toi,
)

pytestmark = pytest.mark.filterwarnings("error")

INF = math.inf
#: Distances within this fraction of the scene scale count as equal (kernels: ~1e-15).
TOL_REL = 1e-9
#: Paths this close to perpendicular to the line of centres are boundary cases.
ANGLE_REL = 2e-9
#: Rounding noise of coordinates of magnitude S, relative to S (with a wide margin).
NOISE_REL = 1e-12
SAMPLES = np.linspace(0.0, 1.0, 2001)

FEW = settings(max_examples=80, deadline=None)
SOME = settings(max_examples=150, deadline=None)


# Found by hypothesis: exact relative motions of 1e-200 that float64 rounds to zero.
_Z = np.zeros(3)
_TINY_MOTIONS = [
    (
        _Z,
        np.array([0, 0, 1e-5]),
        0.0,
        np.array([0, 5e-4, 4.6e-200]),
        np.array([0, 5e-4, 1e-5]),
        1e-3,
    ),
    (
        _Z,
        np.array([0, 0, 1e-5]),
        0.0,
        np.array([0, 1e-3, 9.2e-200]),
        np.array([0, 1e-3, 1e-5]),
        1e-3,
    ),
]


# ----------------------------------------------------------------------------------------
# Strategies
# ----------------------------------------------------------------------------------------


def _unit_interval() -> st.SearchStrategy[float]:
    return st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)


VEC = st.tuples(_unit_interval(), _unit_interval(), _unit_interval()).map(np.array)
#: Size of the scene (coordinates and radii), its distance from the origin, and speeds.
SIZES = st.sampled_from([1e-3, 1.0, 1e3, 1e6])
FAR = st.sampled_from([0.0, 1e3, 1e6])
SPEEDS = st.sampled_from([0.0, 0.01, 1.0, 10.0, 1e3])


def _direction(draw) -> np.ndarray:
    d = draw(VEC)
    length = float(np.linalg.norm(d))
    assume(length > 0.1)
    return d / length


def _perpendicular(draw, direction: np.ndarray) -> np.ndarray:
    side = np.cross(direction, _direction(draw))
    length = float(np.linalg.norm(side))
    assume(length > 0.1)
    return side / length


#: Relative size of the inward part of an almost-sideways motion.
LEANS = st.sampled_from([0.0, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6, 1e-3, -1e-3])


@st.composite
def sphere_pairs(draw):
    """(a0, a1, ra, b0, b1, rb): points (3,) float64, radii float.

    Placements: anywhere, touching, overlapping. Motions: anywhere, aimed at the other
    sphere (impact parameter 0 to 1.5 R, reaching 0.2 to 3 times as far as needed),
    sideways (perpendicular to the line of centres, leaning in or out by a hair), together,
    or B static.
    """
    size = draw(SIZES)
    origin = draw(VEC) * draw(FAR)
    ra = draw(st.floats(0.0, 1.0)) * size
    rb = draw(st.floats(0.0, 1.0)) * size
    big_r = ra + rb
    a0 = origin + 4 * size * draw(VEC)
    placement = draw(st.sampled_from(["free", "free", "touching", "overlapping"]))
    if placement == "touching":
        b0 = a0 + big_r * _direction(draw)
    elif placement == "overlapping":
        b0 = a0 + draw(st.floats(0.0, 1.0)) * big_r * _direction(draw)
    else:
        b0 = origin + 4 * size * draw(VEC)
    p0 = a0 - b0
    dist0 = float(np.linalg.norm(p0))
    motion = draw(
        st.sampled_from(["free", "aimed", "aimed", "aimed", "sideways", "together", "b static"])
    )
    if motion in ("aimed", "sideways") and dist0 < 1e-6 * size:
        motion = "free"
    db = size * draw(SPEEDS) * draw(VEC)
    if motion == "aimed":
        inward = -p0 / dist0
        aim = inward * dist0 + _perpendicular(draw, inward) * draw(st.floats(0, 1.5)) * big_r
        da = db + draw(st.floats(0.2, 3.0)) * aim
    elif motion == "sideways":
        inward = -p0 / dist0
        speed = size * draw(st.sampled_from([0.01, 1.0, 1e3]))
        da = db + speed * (_perpendicular(draw, inward) + draw(LEANS) * inward)
    else:
        da = size * draw(SPEEDS) * draw(VEC)
        db = {"together": da, "b static": np.zeros(3)}.get(motion, db)
    return a0, a0 + da, ra, b0, b0 + db, rb


@st.composite
def sphere_planes(draw):
    """(c0, c1, r, normal, offset): any non-zero normal, plane near the sphere.

    Placements: anywhere within 4 sizes of the plane, or touching. Motions: anywhere,
    aimed into the plane (reaching 0.2 to 3 times as far as needed), or sideways (parallel,
    leaning in or out by a hair).
    """
    size = draw(SIZES)
    origin = draw(VEC) * draw(FAR)
    r = draw(st.floats(0.0, 1.0)) * size
    n_hat = _direction(draw)
    normal = n_hat * draw(st.sampled_from([1.0, 0.001, 7.5, 1e4]))
    c0 = origin + 4 * size * draw(VEC)
    placement = draw(st.sampled_from(["free", "free", "touching"]))
    # Signed distance of c0 from the plane, before scaling the normal.
    height = r if placement == "touching" else 4 * size * draw(_unit_interval())
    offset = (height - float(n_hat @ c0)) * float(np.linalg.norm(normal))
    motion = draw(st.sampled_from(["free", "aimed", "aimed", "sideways"]))
    slide = size * draw(SPEEDS) * np.cross(n_hat, draw(VEC))
    if motion == "aimed":
        depth = max(height - r, 0.0) + size * draw(st.floats(0.0, 0.5))
        m = slide - draw(st.floats(0.2, 3.0)) * depth * n_hat
    elif motion == "sideways":
        m = slide + draw(LEANS) * float(np.linalg.norm(slide)) * n_hat
    else:
        m = size * draw(SPEEDS) * draw(VEC)
    return c0, c0 + m, r, normal, offset


# ----------------------------------------------------------------------------------------
# Scalar references (exact decisions)
# ----------------------------------------------------------------------------------------


def _dot(u, w):
    return u[0] * w[0] + u[1] * w[1] + u[2] * w[2]


def _sqrt(x: Fraction) -> Fraction:
    """sqrt(x) to float precision for a rational of any magnitude (no under/overflow)."""
    if x == 0:
        return Fraction(0)
    half_exponent = (x.numerator.bit_length() - x.denominator.bit_length()) // 2
    scale = Fraction(2) ** half_exponent
    return Fraction(math.sqrt(float(x / (scale * scale)))) * scale


def reference_sphere_sphere_toi(a0, a1, ra, b0, b1, rb) -> float:
    """First approaching touch of |p + t v| = R on [0, 1], decided exactly."""
    f = [[Fraction(float(x)) for x in pt] for pt in (a0, a1, b0, b1)]
    fa0, fa1, fb0, fb1 = f
    p = [fa0[i] - fb0[i] for i in range(3)]
    v = [(fa1[i] - fa0[i]) - (fb1[i] - fb0[i]) for i in range(3)]
    big_r = Fraction(float(ra)) + Fraction(float(rb))
    a = _dot(v, v)
    b = _dot(p, v)  # half the linear coefficient
    c = _dot(p, p) - big_r * big_r
    if b >= 0:  # receding, sliding, or no relative motion (a == 0 gives b == 0)
        return INF
    if c <= 0:  # touching or overlapping at the start, approaching
        return 0.0
    disc = b * b - a * c
    if disc < 0:
        return INF
    # The smaller root is c / (-b + sqrt(disc)); it is <= 1 iff sqrt(disc) >= c + b.
    if c + b > 0 and disc < (c + b) ** 2:
        return INF
    return min(float(c / (-b + _sqrt(disc))), 1.0)


def reference_sphere_plane_toi(c0, c1, r, normal, offset) -> float:
    """First touch of n.x + offset = r |n| while moving in, decided exactly."""
    n = [Fraction(float(x)) for x in normal]
    fc0 = [Fraction(float(x)) for x in c0]
    m = [Fraction(float(x1)) - x0 for x0, x1 in zip(fc0, c1)]
    fr = Fraction(float(r))
    nn = _dot(n, n)
    h0 = _dot(n, fc0) + Fraction(float(offset))  # |n| times the centre's height
    dn = _dot(n, m)

    def touching_or_in(h: Fraction) -> bool:  # h <= r |n|, without the square root
        return h <= 0 or h * h <= fr * fr * nn

    if dn >= 0:
        return INF
    if touching_or_in(h0):
        return 0.0
    if not touching_or_in(h0 + dn):
        return INF
    return min(float((h0 - fr * _sqrt(nn)) / -dn), 1.0)


# ----------------------------------------------------------------------------------------
# Geometry helpers for the checks
# ----------------------------------------------------------------------------------------


def _norm(x, axis=-1):
    """Euclidean norm that neither underflows nor overflows (motions of 1e-200 occur)."""
    x = np.asarray(x, dtype=float)
    big = np.max(np.abs(x), axis=axis, keepdims=True)
    safe = np.where(big > 0, big, 1.0)
    return np.squeeze(big * np.sqrt(np.sum((x / safe) ** 2, axis=axis, keepdims=True)), axis)


class Pair:
    """Relative motion of a sphere pair in float64, and its scale."""

    def __init__(self, case, extra_scale: float = 0.0):
        a0, a1, ra, b0, b1, rb = (np.asarray(x, dtype=float) for x in case)
        self.p0 = a0 - b0
        self.v = (a1 - a0) - (b1 - b0)
        # The relative motion without rounding: bodies given the same displacement can have
        # a float v of 0 and an exact one of 1e-19, or the other way round.
        self.v_exact = np.array(
            [
                float((Fraction(x1) - Fraction(x0)) - (Fraction(y1) - Fraction(y0)))
                for x0, x1, y0, y1 in zip(a0.tolist(), a1.tolist(), b0.tolist(), b1.tolist())
            ]
        )
        self.radius = float(ra + rb)
        self.speed = float(_norm(self.v))
        coords = float(np.max(np.abs([a0, a1, b0, b1])))
        self.scale = max(coords, self.radius, self.speed, extra_scale)
        self.tol = TOL_REL * self.scale

    def distance(self, t):
        return _norm(self.p0 + np.multiply.outer(t, self.v))

    def rate_times_distance(self, t):
        """(d distance / dt) * distance = p(t) . v."""
        return (self.p0 + np.multiply.outer(t, self.v)) @ self.v

    def rate_tol(self, dist):
        """Rounding bound on p(t) . v: from the angle, from noise in v and in p."""
        noise = NOISE_REL * self.scale
        return dist * (ANGLE_REL * self.speed + noise) + noise * self.speed

    def borderline(self) -> bool:
        """Within rounding of touching at t = 0 or 1, a graze, or a perpendicular start."""
        d0, d1 = self.distance(0.0), self.distance(1.0)
        near = abs(d0 - self.radius) <= self.tol or abs(d1 - self.radius) <= self.tol
        if self.speed > 0:
            closest = float(_norm(np.cross(self.p0, self.v / self.speed)))
            near |= abs(closest - self.radius) <= self.tol
        speed_exact = float(_norm(self.v_exact))
        if speed_exact > 0:
            # The same bound as rate_tol, divided by the speed (which may underflow).
            noise = NOISE_REL * self.scale
            rate_tol = d0 * (ANGLE_REL + noise / speed_exact) + noise
            near |= abs(float(self.p0 @ (self.v_exact / speed_exact))) <= rate_tol
        return bool(near)

    def assert_contact(self, t: float) -> None:
        """t is in [0, 1] and the surfaces touch (or overlap, at 0) while approaching."""
        assert 0.0 <= t <= 1.0
        d = self.distance(t)
        if t > 0:
            assert abs(d - self.radius) <= self.tol
        else:
            assert d <= self.radius + self.tol
        # A graze may land a hair past the closest approach, where the rate is ~0; and
        # where the centres (nearly) meet, the direction of p(t) is rounding noise.
        slack = (1e-6 * d + NOISE_REL * self.scale) * self.speed
        assert self.rate_times_distance(t) <= slack


class PlaneCase:
    """Signed height of the sphere's surface over a plane, in float64, and its scale."""

    def __init__(self, case, extra_scale: float = 0.0):
        c0, c1, r, normal, offset = (np.asarray(x, dtype=float) for x in case)
        length = float(np.linalg.norm(normal))
        self.n = normal / length
        self.c0 = c0
        self.m = c1 - c0
        self.r = float(r)
        self.offset = float(offset) / length
        self.dn = float(self.n @ self.m)
        coords = float(np.max(np.abs([c0, c1])))
        motion = float(_norm(self.m))
        self.motion = motion
        self.scale = max(coords, self.r, motion, abs(self.offset), extra_scale)
        self.tol = TOL_REL * self.scale
        self.rate_tol = ANGLE_REL * motion + NOISE_REL * self.scale

    def gap(self, t):
        """Height of the sphere's lowest point over the plane (negative: in the solid)."""
        return (self.c0 + np.multiply.outer(t, self.m)) @ self.n + self.offset - self.r

    def borderline(self) -> bool:
        near = abs(self.gap(0.0)) <= self.tol or abs(self.gap(1.0)) <= self.tol
        return bool(near or (self.motion > 0 and abs(self.dn) <= self.rate_tol))

    def assert_contact(self, t: float) -> None:
        assert 0.0 <= t <= 1.0
        g = float(self.gap(t))
        if t > 0:
            assert abs(g) <= self.tol
        else:
            assert g <= self.tol
        assert self.dn < 0


def _assert_agree(t: float, expected: float, geometry) -> None:
    """t equals the exact answer, except within rounding of a boundary case."""
    if geometry.borderline():
        if math.isfinite(t):
            geometry.assert_contact(t)
        return
    assert math.isinf(t) == math.isinf(expected)
    if expected == 0.0:
        assert t == 0.0
    elif math.isfinite(t):
        speed = geometry.speed if isinstance(geometry, Pair) else abs(geometry.dn)
        assert abs(t - expected) * speed <= geometry.tol


def _swap(case):
    a0, a1, ra, b0, b1, rb = case
    return b0, b1, rb, a0, a1, ra


def _rows(func, case):
    return func(*(np.asarray(x, dtype=float)[None] for x in case))


# ----------------------------------------------------------------------------------------
# Symmetry
# ----------------------------------------------------------------------------------------


@SOME
@given(case=sphere_pairs())
def test_swapping_a_and_b_changes_nothing(case):
    # p and v only change sign, and IEEE subtraction is antisymmetric: bit-identical.
    np.testing.assert_array_equal(
        _rows(sphere_sphere_toi, case), _rows(sphere_sphere_toi, _swap(case))
    )
    np.testing.assert_array_equal(
        _rows(sphere_sphere_overlap, case), _rows(sphere_sphere_overlap, _swap(case))
    )


# ----------------------------------------------------------------------------------------
# Translation
# ----------------------------------------------------------------------------------------

GRID = st.integers(-4096, 4096).map(lambda k: k / 1024)  # [-4, 4] in steps of 2**-10
GRID_VEC = st.tuples(GRID, GRID, GRID).map(np.array)
GRID_SHIFT = st.tuples(*[st.integers(-1000, 1000).map(lambda k: k * 1024.0)] * 3).map(np.array)


@SOME
@given(
    a0=GRID_VEC,
    a1=GRID_VEC,
    b0=GRID_VEC,
    b1=GRID_VEC,
    ra=GRID.map(abs),
    rb=GRID.map(abs),
    shift=GRID_SHIFT,
)
def test_exact_translation_changes_no_bit(a0, a1, b0, b1, ra, rb, shift):
    """On a grid where every shifted coordinate is exact, the results must be identical.

    The coordinate-noise floor grows with the shift, but stays below the smallest non-zero
    p0 . v the grid allows (2**-20), so it cannot flip a decision here.
    """
    case = (a0, a1, ra, b0, b1, rb)
    moved = (a0 + shift, a1 + shift, ra, b0 + shift, b1 + shift, rb)
    np.testing.assert_array_equal(_rows(sphere_sphere_toi, case), _rows(sphere_sphere_toi, moved))
    np.testing.assert_array_equal(
        _rows(sphere_sphere_overlap, case), _rows(sphere_sphere_overlap, moved)
    )


SHIFTS = st.tuples(_unit_interval(), _unit_interval(), _unit_interval(), FAR).map(
    lambda x: np.array(x[:3]) * x[3]
)


@SOME
@given(case=sphere_pairs(), shift=SHIFTS)
# Found by hypothesis: B's offset of 1e-15 from A's centre is lost when shifted by 1e3.
@example(
    case=(_Z, np.array([1e-5, 0, 0]), 0.0, np.array([1e-15, 0, 0]), np.array([1e-15, 0, 0]), 1e-3),
    shift=np.array([1e3, 0, 0]),
)
def test_translating_the_scene_changes_nothing(case, shift):
    a0, a1, ra, b0, b1, rb = case
    moved = (a0 + shift, a1 + shift, ra, b0 + shift, b1 + shift, rb)
    t = float(_rows(sphere_sphere_toi, case)[0])
    t_moved = float(_rows(sphere_sphere_toi, moved)[0])
    geometry = Pair(case, extra_scale=float(np.max(np.abs(shift))) * 2)
    if geometry.borderline():
        for value, scene in ((t, case), (t_moved, moved)):
            if math.isfinite(value):
                Pair(scene).assert_contact(value)
        return
    assert math.isinf(t) == math.isinf(t_moved)
    if math.isfinite(t):
        assert abs(t - t_moved) * geometry.speed <= geometry.tol


@SOME
@given(case=sphere_planes(), shift=SHIFTS)
def test_translating_a_plane_scene_changes_nothing(case, shift):
    c0, c1, r, normal, offset = case
    moved = (c0 + shift, c1 + shift, r, normal, offset - float(normal @ shift))
    t = float(_rows(sphere_plane_toi, case)[0])
    t_moved = float(_rows(sphere_plane_toi, moved)[0])
    geometry = PlaneCase(case, extra_scale=float(np.max(np.abs(shift))) * 2)
    if geometry.borderline():
        for value, scene in ((t, case), (t_moved, moved)):
            if math.isfinite(value):
                PlaneCase(scene).assert_contact(value)
        return
    assert math.isinf(t) == math.isinf(t_moved)
    if math.isfinite(t):
        assert abs(t - t_moved) * abs(geometry.dn) <= geometry.tol


# ----------------------------------------------------------------------------------------
# Vectorised == scalar reference
# ----------------------------------------------------------------------------------------


@SOME
@given(cases=st.lists(sphere_pairs(), min_size=1, max_size=6))
@example(cases=_TINY_MOTIONS)
def test_sphere_sphere_vectorised_equals_scalar_reference(cases):
    columns = [np.array(col, dtype=float) for col in zip(*cases)]
    t = sphere_sphere_toi(*columns)
    assert t.shape == (len(cases),) and t.dtype == np.float64
    for i, case in enumerate(cases):
        # Row i of a batch is exactly the kernel on that row alone...
        assert t[i] == _rows(sphere_sphere_toi, case)[0]
        # ...and agrees with the independent scalar reference.
        _assert_agree(float(t[i]), reference_sphere_sphere_toi(*case), Pair(case))


@SOME
@given(cases=st.lists(sphere_planes(), min_size=1, max_size=6))
# Found by hypothesis: sinking by 1e-171, a motion whose square underflows.
@example(
    cases=[
        (_Z, _Z, 0.0, np.array([0, 0, 1.0]), 0.0),
        (np.array([0, 4e-3, 0]), np.array([0, 4e-3, -9.5e-172]), 1e-3, np.array([0, 0, 1.0]), 0.0),
    ]
)
def test_sphere_plane_vectorised_equals_scalar_reference(cases):
    columns = [np.array(col, dtype=float) for col in zip(*cases)]
    t = sphere_plane_toi(*columns)
    assert t.shape == (len(cases),) and t.dtype == np.float64
    for i, case in enumerate(cases):
        assert t[i] == _rows(sphere_plane_toi, case)[0]
        _assert_agree(float(t[i]), reference_sphere_plane_toi(*case), PlaneCase(case))


@FEW
@given(
    cases=st.lists(sphere_pairs(), min_size=1, max_size=5), ra=st.floats(0, 3), rb=st.floats(0, 3)
)
def test_scalar_radius_equals_repeated_radius(cases, ra, rb):
    a0, a1, _ra, b0, b1, _rb = (np.array(col, dtype=float) for col in zip(*cases))
    n = len(cases)
    np.testing.assert_array_equal(
        sphere_sphere_toi(a0, a1, ra, b0, b1, rb),
        sphere_sphere_toi(a0, a1, np.full(n, ra), b0, b1, np.full(n, rb)),
    )


@FEW
@given(cases=st.lists(sphere_planes(), min_size=1, max_size=5))
def test_one_plane_equals_repeated_plane(cases):
    c0, c1, r, normal, offset = (np.array(col, dtype=float) for col in zip(*cases))
    n = len(cases)
    np.testing.assert_array_equal(
        sphere_plane_toi(c0, c1, r, normal[0], offset[0]),
        sphere_plane_toi(c0, c1, r, np.tile(normal[0], (n, 1)), np.full(n, offset[0])),
    )


# ----------------------------------------------------------------------------------------
# Dense sampling: no contact missed, every contact real
# ----------------------------------------------------------------------------------------


@SOME
@given(case=sphere_pairs())
# Found by hypothesis: two points meeting head-on (R = 0), a graze at t = 1/2.
@example(case=(_Z, np.full(3, 0.008), 0.0, np.full(3, 0.004), np.full(3, 0.004), 0.0))
def test_sphere_sphere_against_dense_sampling(case):
    t = float(_rows(sphere_sphere_toi, case)[0])
    pair = Pair(case)
    dist = pair.distance(SAMPLES)
    rate = pair.rate_times_distance(SAMPLES)
    inside = dist < pair.radius - pair.tol
    approaching = rate < -pair.rate_tol(dist)
    started_outside = dist[0] > pair.radius + pair.tol
    # Inside while approaching, or inside after starting outside: by convexity of the
    # distance, a contact happened at or before that sample.
    must = inside & (approaching | started_outside)
    if must.any():
        assert t <= SAMPLES[np.argmax(must)] + 1e-12
    if math.isfinite(t):
        pair.assert_contact(t)
        # Nothing earlier: not inside at any sample before t, unless inside from the start.
        if started_outside:
            assert not np.any(inside & (SAMPLES < t - 1e-12))


@SOME
@given(case=sphere_planes())
def test_sphere_plane_against_dense_sampling(case):
    t = float(_rows(sphere_plane_toi, case)[0])
    plane = PlaneCase(case)
    gap = plane.gap(SAMPLES)
    inside = gap < -plane.tol
    started_outside = gap[0] > plane.tol
    must = inside & ((plane.dn < -plane.rate_tol) | started_outside)
    if must.any():
        assert t <= SAMPLES[np.argmax(must)] + 1e-12
    if math.isfinite(t):
        plane.assert_contact(t)
        if started_outside:
            assert not np.any(inside & (SAMPLES < t - 1e-12))


def _assert_interval(enter: float, leave: float, inside, outside) -> None:
    """The overlap interval holds every clearly-inside sample and no clearly-outside one."""
    assert math.isnan(enter) == math.isnan(leave)
    if math.isnan(enter):
        assert not inside.any()
        return
    assert 0.0 <= enter <= leave <= 1.0
    slack = 1e-12
    assert np.all((SAMPLES[inside] >= enter - slack) & (SAMPLES[inside] <= leave + slack))
    assert not np.any((SAMPLES[outside] > enter + slack) & (SAMPLES[outside] < leave - slack))


@SOME
@given(case=sphere_pairs())
# Found by hypothesis: starting a hair inside (1e-15) with a motion of 4e-162, whose
# a c product underflows: entry at 0 and no exit root, which once gave t_exit = nan.
@example(
    case=(
        _Z,
        np.array([0.0, 4.1420026e-162, 0.0]),
        0.0,
        np.array([0.0, 1.0, 2.0]) / np.sqrt(5.0) * (1 - 20 * 2.0**-53),
        np.array([0.0, 1.0, 2.0]) / np.sqrt(5.0) * (1 - 20 * 2.0**-53),
        1.0,
    )
)
def test_sphere_sphere_overlap_against_dense_sampling(case):
    enter, leave = (float(x[0]) for x in _rows(sphere_sphere_overlap, case))
    pair = Pair(case)
    dist = pair.distance(SAMPLES)
    _assert_interval(enter, leave, dist < pair.radius - pair.tol, dist > pair.radius + pair.tol)
    # The overlap begins with the first contact, unless it was there from the start.
    t = float(_rows(sphere_sphere_toi, case)[0])
    if not pair.borderline() and (math.isfinite(t) or enter > 0):
        assert abs(enter - t) * pair.speed <= pair.tol


@SOME
@given(case=sphere_planes())
def test_sphere_plane_overlap_against_dense_sampling(case):
    enter, leave = (float(x[0]) for x in _rows(sphere_plane_overlap, case))
    plane = PlaneCase(case)
    gap = plane.gap(SAMPLES)
    _assert_interval(enter, leave, gap < -plane.tol, gap > plane.tol)
    t = float(_rows(sphere_plane_toi, case)[0])
    if not plane.borderline() and (math.isfinite(t) or enter > 0):
        assert abs(enter - t) * abs(plane.dn) <= plane.tol


# ----------------------------------------------------------------------------------------
# Motions that can never be contacts, at any scale
# ----------------------------------------------------------------------------------------


@SOME
@given(case=sphere_pairs(), d=VEC, speed=st.sampled_from([1e-3, 1.0, 1e3, 1e6]))
def test_same_displacement_is_never_a_contact(case, d, speed):
    """Both bodies moved by one displacement (a1 = a0 + d, b1 = b0 + d, rounded)."""
    a0, _a1, ra, b0, _b1, rb = case
    d = d * speed
    moved = (a0, a0 + d, ra, b0, b0 + d, rb)
    assert _rows(sphere_sphere_toi, moved).tolist() == [INF]
    pair = Pair(moved)
    enter, leave = (float(x[0]) for x in _rows(sphere_sphere_overlap, moved))
    dist0 = float(pair.distance(0.0))
    if dist0 < pair.radius - pair.tol:
        assert (enter, leave) == (0.0, 1.0)
    elif dist0 > pair.radius + pair.tol:
        assert math.isnan(enter) and math.isnan(leave)


@SOME
@given(case=sphere_planes(), w=VEC, speed=st.sampled_from([1e-3, 1.0, 1e3, 1e6]))
def test_motion_along_the_plane_is_never_a_contact(case, w, speed):
    c0, _c1, r, normal, offset = case
    n_hat = normal / np.linalg.norm(normal)
    along = np.cross(n_hat, w)
    # Cancellation in the cross product leaves a normal part ~1e-16 |w|: keep it << |along|.
    assume(np.linalg.norm(along) > 1e-3 * np.linalg.norm(w))
    moved = (c0, c0 + speed * along, r, normal, offset)
    assert _rows(sphere_plane_toi, moved).tolist() == [INF]
