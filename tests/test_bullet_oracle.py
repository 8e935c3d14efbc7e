"""The kernels against an independent oracle: Bullet's swept convex test.

``BulletWorld.sweepTestClosest`` moves a convex shape from one transform to another and
reports the fraction of the way at which it first hits a body in the world. Only the
relative motion matters, so B stays put at ``b0`` and A sweeps from ``a0`` to
``a0 + (a1 - a0) - (b1 - b0)``.

Bullet works in float32 and its convex cast stops once the gap is below its own epsilon
(1e-3), slightly before contact; the comparison is therefore in distance: the gap at
Bullet's fraction lies in [0, 1e-3], and ours is later by that gap over the rate at which
the path closes it. All cases are seeded and kept away from grazes, where the two may
legitimately differ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from panda3d_ccd.sweep import sphere_plane_toi, sphere_sphere_toi

bullet = pytest.importorskip("panda3d.bullet")
core = pytest.importorskip("panda3d.core")

pytestmark = pytest.mark.filterwarnings("error")

#: Bullet's convex-cast epsilon: it stops once the surfaces are this close.
BULLET_GAP = 1e-3
#: float32 rounding of coordinates of about 10, with a margin.
F32 = 1e-5


class Oracle:
    """One Bullet world; each query adds one static body, sweeps, and removes it."""

    def __init__(self) -> None:
        self.world = bullet.BulletWorld()
        self.root = core.NodePath("oracle")

    def _sweep(self, body_shape, position, radius: float, start, end) -> float | None:
        node = bullet.BulletRigidBodyNode("into")
        node.addShape(body_shape)
        path = self.root.attachNewNode(node)
        path.setPos(core.Point3(*position))
        self.world.attachRigidBody(node)
        try:
            result = self.world.sweepTestClosest(
                bullet.BulletSphereShape(radius),
                core.TransformState.makePos(core.Point3(*start)),
                core.TransformState.makePos(core.Point3(*end)),
                core.BitMask32.allOn(),
                0.0,
            )
        finally:
            self.world.removeRigidBody(node)
            path.removeNode()
        return result.getHitFraction() if result.hasHit() else None

    def sphere(self, a0, a1, ra, b0, b1, rb) -> float | None:
        start = np.asarray(a0, float)
        end = start + (np.asarray(a1, float) - start) - (np.asarray(b1, float) - b0)
        return self._sweep(bullet.BulletSphereShape(rb), b0, ra, start, end)

    def plane(self, c0, c1, r, normal, offset) -> float | None:
        length = float(np.linalg.norm(normal))
        # Bullet's plane is n . x = constant with a unit n; ours n . x + offset = 0.
        shape = bullet.BulletPlaneShape(core.Vec3(*(normal / length)), -offset / length)
        return self._sweep(shape, (0, 0, 0), r, c0, c1)


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle()


def _unit(rng: np.random.Generator) -> np.ndarray:
    u = rng.normal(size=3)
    return u / np.linalg.norm(u)


def _perpendicular(rng: np.random.Generator, d: np.ndarray) -> np.ndarray:
    side = np.cross(d, _unit(rng))
    return side / np.linalg.norm(side)


def _pair_case(rng, impact: float, reach: float, sign: float = 1.0):
    """A pair whose relative path heads along d (or away, sign -1), passing B's centre at
    ``impact`` times R, and going ``reach`` times as far as first contact needs. B moves too.

    Returns the case, the relative path length and, for a hit, the cosine between the path
    and the normal at contact (how fast the path closes the gap).
    """
    ra, rb = rng.uniform(0.05, 2.0, 2)
    big_r = ra + rb
    b0 = rng.uniform(-5, 5, 3)
    b1 = b0 + rng.uniform(-3, 3, 3)
    d = _unit(rng)
    h = impact * big_r
    along = big_r + rng.uniform(0.05, 5.0)  # start this far back along the path
    p0 = -d * along + _perpendicular(rng, d) * h
    needed = along - math.sqrt(max(big_r**2 - h**2, 0.0))
    length = reach * needed
    a0 = b0 + p0
    a1 = a0 + sign * d * length + (b1 - b0)
    cosine = math.sqrt(max(1.0 - impact**2, 0.0))
    return (a0, a1, ra, b0, b1, rb), length, cosine


def test_sphere_hits_agree_with_bullet(oracle):
    rng = np.random.default_rng(2024)
    bad = []
    for i in range(200):
        case, length, cosine = _pair_case(rng, rng.uniform(0, 0.8), rng.uniform(1.2, 4.0))
        ours = float(sphere_sphere_toi(*case)[0])
        theirs = oracle.sphere(*case)
        a0, a1, ra, b0, b1, rb = case
        if theirs is None or not math.isfinite(ours):
            bad.append((i, ours, theirs))
            continue
        v = (a1 - a0) - (b1 - b0)
        gap = float(np.linalg.norm(a0 - b0 + theirs * v)) - (ra + rb)
        lead = (ours - theirs) * length  # how far before our contact Bullet stopped
        if not (-F32 <= gap <= BULLET_GAP + F32):
            bad.append((i, "Bullet's gap", gap))
        if not (-F32 * (1 + length) <= lead <= (BULLET_GAP + F32) / cosine + F32 * length):
            bad.append((i, "lead", lead, ours, theirs, length, cosine))
    assert bad == []


@pytest.mark.parametrize(
    "seed, impact, reach, sign",
    [
        (1, (1.1, 2.0), (1.2, 4.0), 1.0),
        (2, (0.0, 0.8), (0.2, 0.9), 1.0),
        (3, (0.0, 2.0), (0.5, 4.0), -1.0),
    ],
    ids=["passes wide", "falls short", "moves away"],
)
def test_sphere_misses_agree_with_bullet(oracle, seed, impact, reach, sign):
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(40):
        case, _length, _cosine = _pair_case(rng, rng.uniform(*impact), rng.uniform(*reach), sign)
        results.append((float(sphere_sphere_toi(*case)[0]), oracle.sphere(*case)))
    assert results == [(math.inf, None)] * 40


@pytest.mark.parametrize("approaching", [True, False])
def test_sphere_overlapping_start_agrees_with_bullet(oracle, approaching):
    """Both count an overlap at the start only while the centres approach (then t = 0)."""
    rng = np.random.default_rng(7 if approaching else 8)
    results = []
    for _ in range(50):
        ra, rb = rng.uniform(0.1, 2.0, 2)
        b0 = rng.uniform(-5, 5, 3)
        p0 = _unit(rng) * (ra + rb) * rng.uniform(0.2, 0.95)
        # A direction at least ~3 degrees from tangential, towards or away from B.
        inward = -p0 / np.linalg.norm(p0)
        lean = rng.uniform(0.05, 1.0) * (1 if approaching else -1)
        v = (lean * inward + math.sqrt(1 - lean**2) * _perpendicular(rng, inward)) * rng.uniform(
            0.1, 5
        )
        case = (b0 + p0, b0 + p0 + v, ra, b0, b0, rb)
        results.append((float(sphere_sphere_toi(*case)[0]), oracle.sphere(*case)))
    expected = (0.0, 0.0) if approaching else (math.inf, None)
    assert results == [expected] * 50


def _plane_case(rng, reach: float, sign: float = 1.0, cos_range=(0.3, 1.0)):
    """A sphere in front of a random plane (any normal length), heading into it (or away)
    at an angle whose cosine with the normal is in ``cos_range``."""
    n_hat = _unit(rng)
    normal = n_hat * rng.uniform(0.2, 5.0)
    offset = rng.uniform(-5, 5) * float(np.linalg.norm(normal))
    r = rng.uniform(0.05, 2.0)
    foot = -offset / np.linalg.norm(normal) * n_hat + _perpendicular(rng, n_hat) * rng.uniform(0, 5)
    gap = rng.uniform(0.05, 5.0)
    c0 = foot + n_hat * (r + gap)
    cosine = rng.uniform(*cos_range)
    d = -cosine * n_hat + math.sqrt(1 - cosine**2) * _perpendicular(rng, n_hat)
    length = reach * gap / cosine if cosine > 0 else reach * 5.0
    return (c0, c0 + sign * d * length, r, normal, offset), length, cosine


def test_plane_hits_agree_with_bullet(oracle):
    rng = np.random.default_rng(99)
    bad = []
    for i in range(100):
        case, length, cosine = _plane_case(rng, rng.uniform(1.2, 4.0))
        ours = float(sphere_plane_toi(*case)[0])
        theirs = oracle.plane(*case)
        if theirs is None or not math.isfinite(ours):
            bad.append((i, ours, theirs))
            continue
        # Distance along the normal between the two answers (Bullet may also be late by
        # float32 rounding against a plane).
        if not abs(ours - theirs) * length * cosine <= BULLET_GAP + F32:
            bad.append((i, ours, theirs, length, cosine))
    assert bad == []


@pytest.mark.parametrize(
    "seed, reach, sign, cos_range",
    [
        (4, (0.2, 0.9), 1.0, (0.3, 1.0)),
        (5, (0.5, 4.0), -1.0, (0.3, 1.0)),
        (6, (0.5, 4.0), 1.0, (0.0, 0.0)),
    ],
    ids=["falls short", "moves away", "parallel"],
)
def test_plane_misses_agree_with_bullet(oracle, seed, reach, sign, cos_range):
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(30):
        case, _length, _cosine = _plane_case(rng, rng.uniform(*reach), sign, cos_range)
        results.append((float(sphere_plane_toi(*case)[0]), oracle.plane(*case)))
    assert results == [(math.inf, None)] * 30
