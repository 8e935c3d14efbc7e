"""Soak and fuzz: random scenes under hypothesis, a long soak with every hostile event the
reliability issue lists, and extreme scales.

* Property tests: nothing tunnels out of a box of six planes, no overlap is created between
  solid spheres, a resting sphere moved along its floor ends exactly where it was moved, the
  events of every (from, into) pair are balanced, and a bullet's first contact agrees with
  dense sampling of its path.
* The soak (``@pytest.mark.slow``): colliders spawned (placed before or after
  registration, registered before they are attached) and removed (``remove()``,
  ``removeNode()``, and bullets deleted by an in handler with
  ``entry.getFromNodePath().removeNode()``), detached into a pool and attached again,
  teleported, made non-finite, and given speed spikes of 1e4 units per frame, in a closed
  box. Its size comes from the environment: ``CCD_SOAK_FRAMES`` (default
  200) and ``CCD_SOAK_COLLIDERS`` (default 300); the issue's full size is
  ``CCD_SOAK_FRAMES=20000 CCD_SOAK_COLLIDERS=500 pytest -s -m slow tests/test_soak.py``.
* Extreme scales: coordinates near 1e6, radii from 1e-4 to 1e4, 1e5 units per frame.
* The level soak (``@pytest.mark.slow``): a terrain mesh, static boxes and capsules, and
  kinematic pieces the test moves and turns, removes, detaches and makes non-finite, with
  rewind and slide spheres, points and bullets; every frame is checked by an independent
  oracle (tests/level_oracle.py) for tunnelling and created overlap against every piece.
  ``CCD_LEVEL_SOAK_FRAMES`` (default 50), ``CCD_LEVEL_SOAK_BODIES`` (default 50),
  ``CCD_LEVEL_SOAK_SEED`` (default 12).

``CCD_FUZZ_EXAMPLES`` (default 100) sets the examples per property test.

Tolerances are the plugin's documented slop: ``SLOP_REL`` times the coordinates' magnitude,
never below ``SLOP_REL`` (positions are float32 in Panda3D's pip build).
"""

from __future__ import annotations

import gc
import math
import os
import time
import traceback
import tracemalloc
from dataclasses import dataclass

import level_oracle
import numpy as np
import pytest
from event_checks import balanced
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from panda3d.core import (
    CollisionBox,
    CollisionCapsule,
    CollisionNode,
    CollisionPolygon,
    LPlane,
    LPoint3,
    LVector3,
    NodePath,
)

from panda3d_ccd import ContinuousCollision, sphere_plane_toi, sphere_sphere_toi
from panda3d_ccd._tolerance import SLOP_REL

#: Examples per property test; CCD_FUZZ_EXAMPLES=5000 for a long search.
FUZZ = settings(
    max_examples=int(os.environ.get("CCD_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


# ---------------------------------------------------------------------------- helpers
class EventCounter:
    """A messenger stand-in that checks the in / again / out protocol per (from, into) pair
    as events come, without keeping them (the soak sends millions)."""

    def __init__(self, on_in=None):
        self.open: set[tuple[str, str]] = set()
        self.counts = {"into": 0, "again": 0, "out": 0}
        self.violations: list[str] = []
        self.on_in = on_in  # a game's handler of in events: on_in(contact)

    def send(self, name, sentArgs=None, taskChain=None):  # noqa: N803 (Messenger's name)
        f, kind, i = name.split("-")
        key = (f, i)
        self.counts[kind] += 1
        if kind == "into":
            if key in self.open:
                self.violations.append(f"second in: {name}")
            self.open.add(key)
            if self.on_in is not None:
                self.on_in(sentArgs[0])
        elif key not in self.open:
            self.violations.append(f"{kind} without an in: {name}")
        elif kind == "out":
            self.open.discard(key)

    def unbalanced(self) -> int:
        return len(self.violations) + len(self.open)


def make_ccd(base, counter, **kwargs):
    ccd = ContinuousCollision(base, messenger=counter, task_name="ccd-soak", **kwargs)
    ccd.add_in_pattern("%fn-into-%in")
    ccd.add_again_pattern("%fn-again-%in")
    ccd.add_out_pattern("%fn-out-%in")
    return ccd


def read(nodes, render):
    """(n, 3) float64 world positions, exactly as float32 nodes hold them."""
    return np.array([tuple(n.getPos(render)) for n in nodes], dtype=np.float64).reshape(-1, 3)


def slop(*points):
    """(n,) the plugin's slop for bodies at these (n, 3) points."""
    scale = np.ones(len(points[0]))
    for p in points:
        scale = np.maximum(scale, np.abs(p).max(axis=1))
    return SLOP_REL * scale


def allowance(*points):
    """(n,) how deep a body may end up in another: the slop, plus the float32 rounding of
    the position the plugin writes back (under one ulp of the largest coordinate; taken
    twice, so that a pair of rounded bodies is covered too)."""
    scale = np.ones(len(points[0]))
    for p in points:
        scale = np.maximum(scale, np.abs(p).max(axis=1))
    # Beyond float32's range (a garbage position) the ulp is inf anyway: say so, quietly.
    in_range = np.minimum(scale, 1e38).astype(np.float32)
    ulp = np.where(scale > np.finfo(np.float32).max, np.inf, np.spacing(in_range))
    return SLOP_REL * scale + 2 * ulp.astype(np.float64)


def add_box(ccd, parent, half, prefix="wall"):
    """Six planes facing into the cube [-half, half]^3 of parent's space; returns (6, 4)
    world planes (unit normal, offset), read back from the nodes."""
    render = ccd._render
    planes = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            normal = [0.0, 0.0, 0.0]
            normal[axis] = sign
            point = [0.0, 0.0, 0.0]
            point[axis] = -sign * half
            wall = parent.attachNewNode(f"{prefix}{axis}{'p' if sign > 0 else 'n'}")
            plane = LPlane(LVector3(*normal), LPoint3(*point))
            ccd.add_plane(wall, plane)
            a, b, c, d = plane * wall.getMat(render)
            length = math.sqrt(a * a + b * b + c * c)
            planes.append((a / length, b / length, c / length, d / length))
    return np.array(planes)


def free_spot(rng, half, radius, centres, radii, margin=0.1, tries=200):
    """A point in [-half, half]^3 where a sphere of radius fits without touching any of
    (centres, radii); None if none was found."""
    for _ in range(tries):
        p = rng.uniform(-half + radius + margin, half - radius - margin, 3)
        if len(centres) == 0 or np.all(
            np.linalg.norm(centres - p, axis=1) > radii + radius + margin
        ):
            return p
    return None


def created_overlaps(p0, p, radii, solid, tol):
    """Pairs of solid spheres apart at the start (p0) and overlapping at the end (p), beyond
    tol ((n,) per body; a pair takes the larger). A cheap filter on squared distances, exact
    norms on the few candidates."""
    idx = np.flatnonzero(solid)
    if len(idx) < 2:
        return []
    q, q0, r, t = p[idx], p0[idx], radii[idx], tol[idx]
    sq = np.einsum("ij,ij->i", q, q)
    d2 = sq[:, None] + sq[None] - 2.0 * (q @ q.T)
    reach = r[:, None] + r[None]
    near = np.triu(d2 < (reach + 1e-3 * (1 + np.abs(q).max())) ** 2, 1)
    i, j = np.nonzero(near)
    pair_tol = np.maximum(t[i], t[j])
    big_r = r[i] + r[j]
    d = np.linalg.norm(q[i] - q[j], axis=1)
    d0 = np.linalg.norm(q0[i] - q0[j], axis=1)
    bad = (d0 >= big_r - pair_tol) & (d < big_r - pair_tol)
    return [
        (int(idx[a]), int(idx[b]), float(d[k] - big_r[k]))
        for k, (a, b) in enumerate(zip(i[bad], j[bad]))
    ]


def tunnelled(p, radii, planes, tol):
    """Indices of spheres further into a wall than tol."""
    signed = p @ planes[:, :3].T + planes[:, 3]
    return np.flatnonzero(np.any(signed < radii[:, None] - tol[:, None], axis=1))


# ============================================================================ fuzz
@FUZZ
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(2, 24),
    frames=st.integers(2, 10),
    top_speed=st.floats(-1.0, 4.0),
    turned=st.booleans(),
    mix=st.sampled_from(["rewind", "slide", "rewind+slide", "all"]),
)
def test_random_box_no_tunnel_no_overlap_balanced(
    base, seed, count, frames, top_speed, turned, mix
):
    rng = np.random.default_rng(seed)
    render = base.render
    root = render.attachNewNode("scene")
    counter = EventCounter()
    ccd = make_ccd(base, counter)
    try:
        box = root.attachNewNode("box")
        if turned:  # far from the origin and turned: the slop grows with the coordinates
            box.setPosHpr((700.0, -300.0, 250.0), tuple(rng.uniform(-180, 180, 3)))
        half = 10.0
        planes = add_box(ccd, box, half)
        kinds = {
            "rewind": ["rewind"],
            "slide": ["slide"],
            "rewind+slide": ["rewind", "slide"],
            "all": ["rewind", "slide", "sensor"],
        }[mix]
        radii = np.zeros(count)
        local = np.zeros((0, 3))
        nodes, responses = [], []
        for k in range(count):
            radii[k] = rng.uniform(0.05, 1.5)
            spot = free_spot(rng, half, radii[k], local, radii[:k])
            assume(spot is not None)
            local = np.vstack([local, spot])
            ball = box.attachNewNode(f"s{k}")
            ball.setPos(*spot)
            responses.append(str(rng.choice(kinds)))
            ccd.add_sphere(ball, float(radii[k]), response=responses[-1])
            nodes.append(ball)
        ccd.step()  # first pass: sweeps nothing
        solid = np.array([r != "sensor" for r in responses])
        fresh = np.zeros(count, bool)
        for _ in range(frames):
            p0 = read(nodes, render)
            v = rng.normal(size=(count, 3))
            v *= (10 ** rng.uniform(-2, top_speed, count) / np.linalg.norm(v, axis=1))[:, None]
            for ball, target in zip(nodes, p0 + v):
                ball.setPos(render, *target)
            p1 = read(nodes, render)
            p0[fresh] = p1[fresh]
            ccd.step()
            p = read(nodes, render)
            tol = allowance(p0, p1, p, np.full_like(p, half))
            assert list(tunnelled(p[solid], radii[solid], planes, tol[solid])) == []
            assert created_overlaps(p0, p, radii, solid, tol) == []
            assert counter.violations == []
            # Sensors fly through walls: bring them back (a teleport).
            fresh = ~solid & np.any(np.abs(read(nodes, box)) > half, axis=1)
            for k in np.flatnonzero(fresh):
                nodes[k].setPos(*rng.uniform(-half + radii[k], half - radii[k], 3))
                ccd.teleport(nodes[k])
        ccd.destroy()
        assert counter.unbalanced() == 0
        assert counter.counts["into"] == counter.counts["out"]
    finally:
        ccd.destroy()
        root.removeNode()


@pytest.mark.filterwarnings("ignore:Using `assume` outside a property-based test")
def test_a_body_pressed_into_a_wall_frame_after_frame_stays_within_slop_and_rounding(base):
    # Found by the fuzz test above (a random example, not CI's fixed ones): in a box at
    # (700, -300, 250), turned, a slow slide sphere on a wall is deflected into it by a
    # neighbour up to the slop (6.5e-4), written back 1e-4 deeper (float32 through the
    # turned parent), then pressed in the next frame: 8.8e-4 deep, against an allowance of
    # 8.1e-4 (slop plus two ulps). Over 300 frames of the same scene it stays below 9.2e-4.
    # Since a slide meeting a second wall is deflected from the motion it meant to do
    # (not from its first deflection), this scene ends within slop and rounding.
    test_random_box_no_tunnel_no_overlap_balanced.hypothesis.inner_test(
        base, seed=1870, count=20, frames=4, top_speed=3.5625, turned=True, mix="slide"
    )


@pytest.mark.xfail(
    strict=True,
    reason="known: the slop band lets a body sink into a wall up to 1e-6 of its coordinates; "
    "float32 write-back then adds up to two ulps, and a body still pressed there next frame "
    "keeps that depth, so over frames it can end a little past slop + rounding (README)",
)
@pytest.mark.filterwarnings("ignore:Using `assume` outside a property-based test")
def test_overlap_within_the_slop_can_be_carried_over_a_little_past_it(base):
    # Found by the fuzz test above (a random example): in the turned box at (700, -300,
    # 250), a slide sphere of radius 0.8 ends 9.1e-4 into a wall against an allowance of
    # 8.2e-4 (slop plus two ulps). Nothing tunnels.
    test_random_box_no_tunnel_no_overlap_balanced.hypothesis.inner_test(
        base, seed=194, count=20, frames=10, top_speed=3.5625, turned=True, mix="rewind+slide"
    )


unit_component = st.floats(-1.0, 1.0)


@FUZZ
@given(
    normal=st.tuples(unit_component, unit_component, unit_component),
    foot=st.tuples(*[st.floats(-1e3, 1e3)] * 3),
    radius=st.floats(1e-2, 1e2),
    moves=st.lists(st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0)), min_size=1, max_size=5),
    length=st.floats(1e-3, 1e2),
    response=st.sampled_from(["rewind", "slide"]),
)
def test_a_resting_sphere_moved_along_its_floor_ends_exactly_there(
    base, normal, foot, radius, moves, length, response
):
    n = np.array(normal)
    assume(np.linalg.norm(n) > 0.1)
    render = base.render
    root = render.attachNewNode("scene")
    counter = EventCounter()
    ccd = make_ccd(base, counter)
    try:
        floor = root.attachNewNode("floor")
        plane = LPlane(LVector3(*n), LPoint3(*foot))
        ccd.add_plane(floor, plane)
        a, b, c, d = plane
        unit = np.array([a, b, c], dtype=np.float64)
        unit, d = unit / np.linalg.norm(unit), d / np.linalg.norm(unit)
        # Two tangent directions of the floor.
        helper = np.eye(3)[np.argmin(np.abs(unit))]
        u = np.cross(unit, helper)
        u /= np.linalg.norm(u)
        w = np.cross(unit, u)
        foot_ = np.array(foot) - (unit @ np.array(foot) + d) * unit
        ball = root.attachNewNode("ball")
        ball.setPos(*(foot_ + unit * radius))
        ccd.add_sphere(ball, radius, response=response)
        ccd.step()
        for du, dw in moves:
            here = np.array(tuple(ball.getPos(render)))
            ball.setPos(*(here + length * (du * u + dw * w)))
            commanded = tuple(ball.getPos(render))
            assert ccd.step() == []
            assert tuple(ball.getPos(render)) == commanded
        assert counter.counts == {"into": 0, "again": 0, "out": 0}
    finally:
        ccd.destroy()
        root.removeNode()


@FUZZ
@given(
    seed=st.integers(0, 2**32 - 1),
    targets=st.integers(1, 6),
    speed=st.sampled_from([0.5, 20.0, 1e3, 1e4]),
    bullet_radius=st.sampled_from([0.0, 0.01, 0.3]),
    with_wall=st.booleans(),
)
# A target grazed within the slop, found by a random run: its kernel time is not a contact.
@example(seed=1560, targets=4, speed=1000.0, bullet_radius=0.3, with_wall=False)
def test_a_bullets_first_contact_agrees_with_dense_sampling(
    base, seed, targets, speed, bullet_radius, with_wall
):
    """A rewind bullet crosses a field of static targets (and maybe a wall): it stops at
    the earliest of the analytic times of impact, and dense sampling of its straight path
    finds no overlap before that time and finds one right after it, if any at all."""
    rng = np.random.default_rng(seed)
    render = base.render
    root = render.attachNewNode("scene")
    counter = EventCounter()
    ccd = make_ccd(base, counter)
    try:
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        start = rng.uniform(-5, 5, 3) - direction * speed / 2
        bullet = root.attachNewNode("bullet")
        bullet.setPos(*start)
        ccd.add_sphere(bullet, bullet_radius)
        ccd.step()  # first pass: sweeps nothing
        a0 = read([bullet], render)[0]
        bullet.setPos(*(start + direction * speed))
        a1 = read([bullet], render)[0]
        # Targets near the path (some hit, some missed), static.
        radii = rng.uniform(0.05, 2.0, targets)
        along = rng.uniform(-0.2, 1.2, targets)
        side = rng.normal(size=(targets, 3)) * 2.0
        centres = a0 + along[:, None] * (a1 - a0) + side
        nodes = []
        for k in range(targets):
            target = root.attachNewNode(f"t{k}")
            target.setPos(*centres[k])
            ccd.add_sphere(target, float(radii[k]), static=True)
            nodes.append(target)
        b = read(nodes, render)
        times = list(
            sphere_sphere_toi(
                np.repeat(a0[None], targets, 0),
                np.repeat(a1[None], targets, 0),
                bullet_radius,
                b,
                b,
                radii,
            )
        )
        assume(all(np.linalg.norm(a0 - b, axis=1) > radii + bullet_radius + 1e-3))
        # By the plugin's rule, a pass that never gets deeper than the slop is not a contact
        # (a resting body must not stick): a target it only grazes does not count.
        d = a1 - a0
        u = np.clip(((b - a0) @ d) / (d @ d), 0.0, 1.0)
        closest = np.linalg.norm(a0 + u[:, None] * d - b, axis=1)
        sinks = np.minimum(slop(np.repeat(a0[None], targets, 0), b), 0.5 * (radii + bullet_radius))
        grazed = radii + bullet_radius - closest <= sinks
        times = [np.inf if g else t for t, g in zip(times, grazed)]
        wall_plane = None
        if with_wall:
            n = -direction + rng.normal(size=3) * 0.3
            n /= np.linalg.norm(n)
            wall_at = a0 + rng.uniform(0.3, 1.3) * (a1 - a0)
            wall = root.attachNewNode("wall")
            ccd.add_plane(wall, LPlane(LVector3(*n), LPoint3(*wall_at)))
            # What the plugin reads: the plane through the node's matrix, in float32.
            pa, pb, pc, pd = LPlane(LVector3(*n), LPoint3(*wall_at)) * wall.getMat(render)
            length = math.sqrt(pa * pa + pb * pb + pc * pc)
            wall_plane = np.array([pa, pb, pc, pd]) / length
            assume(wall_plane[:3] @ a0 + wall_plane[3] > bullet_radius + 1e-3)
            deepest = min(wall_plane[:3] @ a0, wall_plane[:3] @ a1) + wall_plane[3]
            grazed_wall = bullet_radius - deepest <= slop(a0[None], a1[None])[0]
            times.append(
                np.inf
                if grazed_wall
                else sphere_plane_toi(
                    a0[None], a1[None], bullet_radius, wall_plane[None, :3], wall_plane[3:]
                )[0]
            )
        contacts = [c for c in ccd.step() if c.from_np == bullet]

        s = np.linspace(0.0, 1.0, 40001)
        path = a0 + s[:, None] * (a1 - a0)
        gaps = [
            np.linalg.norm(path - b[k], axis=1) - radii[k] - bullet_radius for k in range(targets)
        ]
        if wall_plane is not None:
            gaps.append(path @ wall_plane[:3] + wall_plane[3] - bullet_radius)
        gap = np.min(gaps, axis=0)
        tol = slop(a0[None], a1[None])[0] * 4
        inside = np.flatnonzero(gap < -tol)
        first = min(times)
        if not contacts:
            assert len(inside) == 0, f"missed: sampled overlap at t={s[inside[0]]}"
            return
        t = contacts[0].t
        assert t == pytest.approx(first, abs=1e-12)
        assert contacts[0].into_np.getName() == (
            "wall" if with_wall and times[-1] == first else f"t{int(np.argmin(times[:targets]))}"
        )
        assert np.all(gap[s < t] > -tol)  # nothing earlier
        if len(inside):
            assert t <= s[inside[0]]
        end = read([bullet], render)[0]
        scale = max(1.0, np.abs(a0).max(), np.abs(a1).max())
        assert tuple(end) == pytest.approx(tuple(a0 + t * (a1 - a0)), abs=1e-6 * scale)
    finally:
        ccd.destroy()
        root.removeNode()


# ============================================================================ extreme scales
EXTREME = [
    # centre of the target, bullet radius, target radius, units per frame, miss distance
    pytest.param((1e6, 1e6, 1e6), 1.0, 10.0, 1e5, 3.0, id="at-1e6-speed-1e5"),
    pytest.param((1e6, -1e6, 0.0), 0.0, 1e4, 1e5, 5e3, id="tracer-into-r1e4"),
    pytest.param((1e6, 0.0, 0.0), 1e4, 1e4, 1e5, 1e4, id="r1e4-pair-at-1e6"),
    pytest.param((1e6, 0.0, 0.0), 1e-4, 1e4, 1e5, 0.0, id="r1e-4-into-r1e4-at-1e6"),
    pytest.param((1e6, 0.0, 0.0), 2.0, 2.0, 1e5, 0.0, id="r2-pair-at-1e6"),
    pytest.param((0.0, 0.0, 0.0), 1e-4, 1e-4, 1.0, 1e-4, id="r1e-4-pair-near-origin"),
    pytest.param((0.0, 0.0, 0.0), 0.1, 0.1, 1e5, 0.0, id="r0.1-pair-speed-1e5"),
    pytest.param((-3e5, 2e5, 1e6), 50.0, 1e3, 1e5, 900.0, id="off-axis-1e6"),
]


@pytest.mark.parametrize(("centre", "ra", "rb", "speed", "miss"), EXTREME)
@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_extreme_scales_a_bullet_still_hits_its_target(base, centre, ra, rb, speed, miss, response):
    render = base.render
    ccd = make_ccd(base, EventCounter())
    try:
        target = render.attachNewNode("target")
        target.setPos(*centre)
        ccd.add_sphere(target, rb, static=True)
        bullet = render.attachNewNode("bullet")
        bullet.setPos(centre[0] - speed / 2, centre[1] + miss, centre[2])
        ccd.add_sphere(bullet, ra, response=response)
        ccd.step()  # first pass: sweeps nothing
        a0 = read([bullet], render)
        bullet.setPos(centre[0] + speed / 2, centre[1] + miss, centre[2])
        a1 = read([bullet], render)
        b = read([target], render)
        expected = sphere_sphere_toi(a0, a1, ra, b, b, rb)[0]
        assert 0.0 < expected < 1.0
        contacts = ccd.step()
        assert sorted((c.from_np.getName(), c.t) for c in contacts) == [
            ("bullet", expected),
            ("target", expected),
        ]
        end = read([bullet], render)[0]
        # Where it stopped or started sliding: on the target's surface (float32 spacing).
        touch = a0[0] + expected * (a1[0] - a0[0])
        spacing = float(np.spacing(np.float32(np.abs(touch).max())))
        if response == "rewind":
            assert tuple(end) == pytest.approx(tuple(touch), abs=2 * spacing)
        assert np.linalg.norm(end - b[0]) >= ra + rb - slop(a0, b)[0] - 2 * spacing
    finally:
        ccd.destroy()


@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_extreme_scales_nothing_tunnels_through_a_wall(base, response):
    """A box 2e5 wide centred at (1e6, 1e6, 1e6); spheres of radius 1e-4 to 1e4 at up to
    1e5 units per frame."""
    rng = np.random.default_rng(5)
    render = base.render
    counter = EventCounter()
    ccd = make_ccd(base, counter)
    try:
        box = render.attachNewNode("box")
        box.setPos(1e6, 1e6, 1e6)
        half = 1e5
        planes = add_box(ccd, box, half)
        count = 24
        radii = 10 ** rng.uniform(-4, 4, count)
        local = np.zeros((0, 3))
        nodes = []
        for k in range(count):
            spot = free_spot(rng, half, radii[k], local, radii[:k], margin=1e3)
            local = np.vstack([local, spot])
            ball = box.attachNewNode(f"s{k}")
            ball.setPos(*spot)
            ccd.add_sphere(ball, float(radii[k]), response=response)
            nodes.append(ball)
        ccd.step()  # first pass: sweeps nothing
        solid = np.ones(count, bool)
        hits = 0
        for _ in range(60):
            p0 = read(nodes, render)
            v = rng.normal(size=(count, 3))
            v *= (10 ** rng.uniform(2, 5, count) / np.linalg.norm(v, axis=1))[:, None]
            for ball, target in zip(nodes, p0 + v):
                ball.setPos(render, *target)
            p1 = read(nodes, render)
            hits += len(ccd.step())
            p = read(nodes, render)
            # The slop, plus the float32 spacing the written-back position is rounded to.
            tol = allowance(p0, p1, p)
            assert list(tunnelled(p, radii, planes, tol)) == []
            assert created_overlaps(p0, p, radii, solid, tol) == []
        assert hits > 50
        assert counter.violations == []
    finally:
        ccd.destroy()


# ============================================================================ the soak
SOAK_FRAMES = int(os.environ.get("CCD_SOAK_FRAMES", "200"))
SOAK_COLLIDERS = int(os.environ.get("CCD_SOAK_COLLIDERS", "300"))
SOAK_SEED = int(os.environ.get("CCD_SOAK_SEED", "2024"))
#: Growth of the traced Python heap allowed between the end of warm-up and the end.
MEMORY_BUDGET = 512 * 1024


class _Warnings:
    def __init__(self):
        self.non_finite = 0
        self.capped = 0
        self.other: list[str] = []

    def __call__(self, message):
        if "non-finite transform" in message:
            self.non_finite += 1
        elif "resolution stopped" in message:
            self.capped += 1
        else:
            self.other.append(message)


def _rss_kib():
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError):
        return -1


@pytest.mark.slow
def test_soak(base, monkeypatch):
    """Random spawns (in three orders), removals (remove(), removeNode(), and by a handler),
    a pool of detached nodes, teleports, non-finite transforms and speed spikes, frame
    after frame, in a closed box."""
    from panda3d_ccd import component

    frames, population = SOAK_FRAMES, SOAK_COLLIDERS
    warm_up = min(max(20, frames // 5), frames - 1)
    rng = np.random.default_rng(SOAK_SEED)
    render = base.render
    warned = _Warnings()
    monkeypatch.setattr(component.notify, "warning", warned)
    tracemalloc.start()
    started = time.perf_counter()
    handler_rng = np.random.default_rng(SOAK_SEED + 1)

    def delete_bullet(contact):
        """The usual game code: a bullet is deleted on a hit (half of the time here)."""
        bullet = contact.getFromNodePath()
        if bullet.getName().startswith("b") and handler_rng.random() < 0.5:
            bullet.removeNode()

    counter = EventCounter(on_in=delete_bullet)
    ccd = make_ccd(base, counter)
    half = 70.0
    planes = add_box(ccd, render, half)
    stats = dict(
        frames=0,
        contacts=0,
        exceptions=0,
        tunnelled=0,
        overlaps_created=0,
        spawned=0,
        removed=0,
        removed_by_remove_node=0,
        removed_by_handler=0,
        pooled=0,
        unpooled=0,
        teleported=0,
        non_finite=0,
        spikes=0,
        resumed_moved=0,
    )
    first_error = ""

    # Live colliders: parallel lists, compacted on removal.
    nodes: list = []
    radii: list[float] = []
    kinds: list[str] = []
    bad_for: list[int] = []  # frames left with a non-finite transform (0: fine)
    pool: list[list] = []  # detached nodes: [node, radius, kind, frames left out]
    serial = 0

    def spawn():
        nonlocal serial
        radius = float(rng.uniform(0.2, 1.5))
        centres = read(nodes, render)
        spot = free_spot(rng, half, radius, centres, np.array(radii))
        if spot is None:
            return None
        kind = str(
            rng.choice(
                ["rewind", "slide", "sensor", "static", "bullet"], p=[0.35, 0.35, 0.12, 0.08, 0.1]
            )
        )
        response = {"static": "rewind", "bullet": "rewind"}.get(kind, kind)
        name = f"{'b' if kind == 'bullet' else 's'}{serial}"
        serial += 1
        order = rng.integers(3)
        if order == 0:  # placed, then registered
            ball = render.attachNewNode(name)
            ball.setPos(*spot)
            ccd.add_sphere(ball, radius, response=response, static=kind == "static")
        elif order == 1:  # registered where it was built, then placed
            ball = render.attachNewNode(name)
            ccd.add_sphere(ball, radius, response=response, static=kind == "static")
            ball.setPos(*spot)
        else:  # registered before it is in the scene
            ball = NodePath(name)
            ccd.add_sphere(ball, radius, response=response, static=kind == "static")
            ball.reparentTo(render)
            ball.setPos(*spot)
        nodes.append(ball)
        radii.append(radius)
        kinds.append(kind)
        bad_for.append(0)
        return len(nodes) - 1

    def relocate(k):
        """A free spot for collider k (ignoring itself)."""
        others = [j for j in range(len(nodes)) if j != k]
        centres = read([nodes[j] for j in others], render)
        return free_spot(rng, half, radii[k], centres, np.array([radii[j] for j in others]))

    for _ in range(population):
        spawn()
    base.taskMgr.step()  # their first pass (nothing moved yet)

    heap_after_warm_up, rss_after_warm_up, snapshot_after_warm_up = 0, 0, None
    samples = []  # (frame, traced heap KiB, RSS KiB), ten over the run
    for frame in range(frames):
        if frame == warm_up:
            gc.collect()  # cyclic garbage is not growth
            heap_after_warm_up = tracemalloc.get_traced_memory()[0]
            rss_after_warm_up = _rss_kib()
            snapshot_after_warm_up = tracemalloc.take_snapshot()
        if frame % max(1, frames // 10) == 0:
            samples.append((frame, tracemalloc.get_traced_memory()[0] // 1024, _rss_kib()))
            # Progress (seen with -s): a long run that dies still leaves its numbers.
            print(f"soak frame {frame}: {time.perf_counter() - started:.0f} s, {stats}", flush=True)
        n = len(nodes)
        fresh = np.zeros(n, bool)  # not swept this frame: p0 = p1
        # ---- the game moves everything that moves
        p0 = read(nodes, render) if n else np.zeros((0, 3))
        good = np.array([b == 0 for b in bad_for])
        moving = good & np.array([k != "static" for k in kinds])
        v = rng.normal(size=(n, 3))
        speed = np.where(rng.random(n) < 0.9, rng.uniform(0.01, 0.5, n), rng.uniform(1, 10, n))
        spike = rng.random(n) < 0.002
        speed[spike] = 1e4
        speed[np.array([k == "bullet" for k in kinds], bool)] = rng.uniform(5, 40)
        stats["spikes"] += int(np.sum(spike & moving))
        v *= (speed / np.linalg.norm(v, axis=1))[:, None]
        fluid = rng.random(n) < 0.3
        for k in np.flatnonzero(moving):
            if fluid[k]:
                nodes[k].setFluidPos(*(p0[k] + v[k]))
            else:
                nodes[k].setPos(*(p0[k] + v[k]))
        # ---- teleports
        for k in rng.choice(n, size=min(n, 2), replace=False):
            if bad_for[k] == 0 and kinds[k] != "static":
                spot = relocate(k)
                if spot is not None:
                    nodes[k].setPos(*spot)
                    ccd.teleport(nodes[k])
                    fresh[k] = True
                    stats["teleported"] += 1
        # ---- non-finite transforms, and their end
        for k in range(n):
            if bad_for[k] > 0:
                bad_for[k] -= 1
                if bad_for[k] == 0:  # finite again, somewhere else: resumes, not swept
                    nodes[k].setScale(1)
                    spot = relocate(k)
                    nodes[k].setPos(*(spot if spot is not None else (0.0, 0.0, 0.0)))
                    fresh[k] = True
        if n and rng.random() < 0.5:
            k = int(rng.integers(n))
            if bad_for[k] == 0 and kinds[k] != "static" and not fresh[k]:
                how = rng.integers(3)
                if how == 0:
                    nodes[k].setPos(math.inf, 0, 0)
                elif how == 1:
                    nodes[k].setX(-math.inf)
                else:
                    nodes[k].setScale(math.inf)
                bad_for[k] = int(rng.integers(1, 6))
                stats["non_finite"] += 1
        # ---- removals (half by remove(), half behind the plugin's back) and spawns
        gone = []
        for k in rng.choice(n, size=min(n, 2), replace=False):
            if bad_for[k] == 0 and not fresh[k]:
                if rng.random() < 0.5:
                    ccd.remove(nodes[k])
                else:
                    stats["removed_by_remove_node"] += 1
                nodes[k].removeNode()
                gone.append(int(k))
        stats["removed"] += len(gone)
        keep = [k for k in range(n) if k not in gone]
        nodes = [nodes[k] for k in keep]
        radii = [radii[k] for k in keep]
        kinds = [kinds[k] for k in keep]
        bad_for = [bad_for[k] for k in keep]
        p0, fresh = p0[keep], fresh[keep]
        # ---- a pool: one node detached now and then, attached again some frames later
        for entry in list(pool):
            entry[3] -= 1
            if entry[3] <= 0:
                node_, radius, kind = entry[:3]
                spot = free_spot(rng, half, radius, read(nodes, render), np.array(radii))
                if spot is not None:
                    pool.remove(entry)
                    node_.reparentTo(render)
                    node_.setPos(*spot)
                    nodes.append(node_)
                    radii.append(radius)
                    kinds.append(kind)
                    bad_for.append(0)
                    p0 = np.vstack([p0, np.full((1, 3), np.nan)])
                    fresh = np.append(fresh, True)
                    stats["unpooled"] += 1
        if nodes and rng.random() < 0.3:
            k = int(rng.integers(len(nodes)))
            if bad_for[k] == 0 and not fresh[k]:
                nodes[k].detachNode()
                pool.append([nodes[k], radii[k], kinds[k], int(rng.integers(1, 10))])
                keep = [j for j in range(len(nodes)) if j != k]
                nodes = [nodes[j] for j in keep]
                radii = [radii[j] for j in keep]
                kinds = [kinds[j] for j in keep]
                bad_for = [bad_for[j] for j in keep]
                p0, fresh = p0[keep], fresh[keep]
                stats["pooled"] += 1
        while len(nodes) + len(pool) < population:
            if spawn() is None:
                break
            stats["spawned"] += 1
            p0 = np.vstack([p0, np.full((1, 3), np.nan)])
            fresh = np.append(fresh, True)

        # ---- the pass
        good = np.array([b == 0 for b in bad_for])
        p1 = np.full((len(nodes), 3), np.nan)
        p1[good] = read([nd for nd, g in zip(nodes, good) if g], render)
        p0[fresh] = p1[fresh]
        try:
            # A whole frame, as a game runs it: Panda3D's own tasks too (its state cache is
            # collected by garbageCollectStates, sort 46).
            base.taskMgr.step()
            contacts = ccd.contacts
        except Exception:  # counted, reported, and the soak goes on
            stats["exceptions"] += 1
            first_error = first_error or traceback.format_exc()
            contacts = []
        stats["contacts"] += len(contacts)
        stats["frames"] += 1
        # Bullets the handler deleted: gone from the game's lists too.
        keep = [k for k in range(len(nodes)) if not nodes[k].isEmpty()]
        if len(keep) < len(nodes):
            stats["removed_by_handler"] += len(nodes) - len(keep)
            nodes = [nodes[k] for k in keep]
            radii = [radii[k] for k in keep]
            kinds = [kinds[k] for k in keep]
            bad_for = [bad_for[k] for k in keep]
            p0, p1, fresh, good = p0[keep], p1[keep], fresh[keep], good[keep]

        # ---- the checks
        r = np.array(radii)
        p = np.full_like(p1, np.nan)
        p[good] = read([nd for nd, g in zip(nodes, good) if g], render)
        solid = good & np.array([k != "sensor" for k in kinds])
        tol = allowance(
            np.nan_to_num(p0), np.nan_to_num(p1), np.nan_to_num(p), np.full_like(p, half)
        )
        tol[~good] = 0
        stats["tunnelled"] += len(tunnelled(p[solid], r[solid], planes, tol[solid]))
        stats["overlaps_created"] += len(created_overlaps(p0, p, r, solid, tol))
        # Something that was not swept is never moved (no one can push a still body).
        stats["resumed_moved"] += int(np.sum(np.any(p[fresh & good] != p1[fresh & good], axis=1)))
        # Sensors fly through walls: bring them back.
        for k in np.flatnonzero(good & np.array([k == "sensor" for k in kinds])):
            if np.any(np.abs(p[k]) > half):
                spot = relocate(k)
                if spot is not None:
                    nodes[k].setPos(*spot)
                    ccd.teleport(nodes[k])

    gc.collect()
    heap_at_end = tracemalloc.get_traced_memory()[0]
    rss_at_end = _rss_kib()
    growth = [
        str(line)
        for line in tracemalloc.take_snapshot().compare_to(snapshot_after_warm_up, "lineno")[:8]
    ]
    tracemalloc.stop()
    registered = ccd.colliders
    internal = {name: len(getattr(ccd, name, ())) for name in ("_by_node", "_owner_of", "_node_of")}
    ccd.destroy()
    stats.update(
        colliders=population,
        seconds=round(time.perf_counter() - started, 1),
        warnings_non_finite=warned.non_finite,
        warnings_round_cap=warned.capped,
        unbalanced=counter.unbalanced(),
        events_in=counter.counts["into"],
        events_out=counter.counts["out"],
        heap_growth_kib=round((heap_at_end - heap_after_warm_up) / 1024, 1),
        heap_after_warm_up_kib=round(heap_after_warm_up / 1024, 1),
        rss_growth_kib=rss_at_end - rss_after_warm_up,
    )
    print("\nsoak:", ", ".join(f"{k}={v}" for k, v in stats.items()))
    print("soak memory (frame, traced KiB, RSS KiB):", samples)
    print("soak heap growth by line:\n" + "\n".join(growth))
    assert stats["exceptions"] == 0, first_error
    assert stats["tunnelled"] == 0
    assert stats["overlaps_created"] == 0
    assert stats["resumed_moved"] == 0
    assert stats["unbalanced"] == 0, counter.violations[:5]
    assert stats["events_in"] == stats["events_out"] > 0
    assert warned.non_finite == stats["non_finite"]  # one warning per episode
    assert warned.other == []  # removeNode() and detachNode() are quiet
    assert stats["removed_by_handler"] > 0 and stats["unpooled"] > 0
    assert registered == len(nodes) + len(pool) + len(planes)
    assert max(internal.values()) <= len(nodes) + len(pool) + len(planes)
    assert heap_at_end - heap_after_warm_up <= MEMORY_BUDGET, "\n".join(growth)


# ============================================================================ the level soak
LEVEL_FRAMES = int(os.environ.get("CCD_LEVEL_SOAK_FRAMES", "50"))
LEVEL_BODIES = int(os.environ.get("CCD_LEVEL_SOAK_BODIES", "50"))
LEVEL_SEED = int(os.environ.get("CCD_LEVEL_SOAK_SEED", "12"))
#: The level's half-width: six planes close it, the terrain covers its floor.
LEVEL_HALF = 30.0
#: Largest body radius; every moving piece keeps more than its diameter from everything
#: solid it could press a body against (the game's promise: a piece that crushes a body
#: into a wall wins, by design).
LEVEL_R_MAX = 1.0
#: Two soaks. "moving-spheres": rewind and slide spheres and bullets that the game moves
#: every frame, a piece made non-finite by setX(inf). "everything": the issue's whole mix,
#: also points (radius 0), bodies the game leaves at rest now and then, and the piece made
#: non-finite by setScale(inf). ``mix``: shares of rewind and slide spheres, rewind and
#: slide points, bullets; ``resting``: the chance a body is not moved in a frame.
LEVEL_VARIANTS = {
    "moving-spheres": dict(mix=[0.45, 0.4, 0.0, 0.0, 0.15], resting=0.0, scale=False),
    "everything": dict(mix=[0.35, 0.3, 0.1, 0.1, 0.15], resting=0.25, scale=True),
}


def terrain_triangles(cells: int, half: float) -> np.ndarray:
    """(cells, cells, 2, 3, 3) a rolling heightfield over [-half, half]^2, counter-clockwise
    seen from above (its front is up)."""
    xs = np.linspace(-half, half, cells + 1)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    z = -20.0 + 2.5 * np.sin(x / 4.0) * np.cos(y / 5.0) + 0.04 * x
    p = np.stack([x, y, z], -1)
    a, b, c, d = p[:-1, :-1], p[1:, :-1], p[1:, 1:], p[:-1, 1:]
    return np.stack([np.stack([a, b, c], -2), np.stack([a, c, d], -2)], 2)


def polygon_node(parent, name, corners):
    """A CollisionNode of CollisionPolygons (corners (m, k, 3), each counter-clockwise seen
    from its front); returns it and its (m', 3) triangle corners a, b, c as Panda3D holds
    them (fanned from the first corner)."""
    cnode = CollisionNode(name)
    tris = []
    for poly in corners:
        polygon = CollisionPolygon(*(LPoint3(*p) for p in poly))
        cnode.addSolid(polygon)
        held = np.array([tuple(p) for p in polygon.getPoints()], np.float64)
        tris += [held[[0, j, j + 1]] for j in range(1, len(held) - 1)]
    tris = np.array(tris).reshape(-1, 3, 3)
    return parent.attachNewNode(cnode), (tris[:, 0], tris[:, 1], tris[:, 2])


def static_level(rng, render, half):
    """The level soak's static level under render: a rolling terrain of 3,200 one-sided
    triangles in four nodes, eight boxes (six turned) and four capsules on it, from ``rng``.
    Returns its root, and per node its oracle solid and (constant) frame."""
    level = render.attachNewNode("level")
    statics: list[level_oracle.Solid] = []
    cells = 40
    tris = terrain_triangles(cells, half)
    keys = []
    for q in range(4):
        part = tris[(q // 2) * cells // 2 : (q // 2 + 1) * cells // 2]
        part = part[:, (q % 2) * cells // 2 : (q % 2 + 1) * cells // 2].reshape(-1, 3, 3)
        _, (a, b, c) = polygon_node(level, f"terrain{q}", part)
        statics.append(level_oracle.Solid(f"terrain{q}", tri=(a, b, c, np.zeros(len(a), bool))))
        # Which grid point each corner is a copy of (Panda3D holds each polygon's apart).
        grid = np.rint((np.stack([a, b, c], axis=1)[..., :2] + half) * cells / (2 * half))
        keys.append(grid[..., 0] * (cells + 1) + grid[..., 1])
    statics = level_oracle.Solid.with_shared_corners(statics, np.concatenate(keys).astype(int))
    heights = tris.reshape(-1, 3, 3)[:, :, 2]
    static_frames: list[level_oracle.Frame] = [level_oracle.Frame.identity()] * 4
    for k in range(8):  # boxes half sunk in the terrain, most of them turned
        x, y = rng.uniform(-half + 4, half - 4, 2)
        size = rng.uniform(0.5, 2.0, 3)
        holder = level.attachNewNode(f"boxholder{k}")
        holder.setPosHpr((x, y, -20.0), tuple(rng.uniform(-40, 40, 3)) if k % 4 else (0, 0, 0))
        box = holder.attachNewNode(CollisionNode(f"box{k}"))
        box.node().addSolid(CollisionBox(LPoint3(0, 0, 0), *size))
        statics.append(level_oracle.Solid(f"box{k}", box=(-size[None], size[None])))
        static_frames.append(level_oracle.Frame.of(box, render))
    for k in range(4):  # capsules lying on the terrain and leaning on it
        x, y = rng.uniform(-half + 6, half - 6, 2)
        ends = np.array([[x - 2, y, -19.0], [x + 2, y + rng.uniform(-2, 2), -16.0 + k]])
        radius = float(rng.uniform(0.4, 1.2))
        cap = level.attachNewNode(CollisionNode(f"cap{k}"))
        cap.node().addSolid(CollisionCapsule(LPoint3(*ends[0]), LPoint3(*ends[1]), radius))
        statics.append(level_oracle.Solid(f"cap{k}", cap=(ends[:1], ends[1:], np.array([radius]))))
        static_frames.append(level_oracle.Frame.identity())
    # The moving pieces stay above z = -7.5, more than a body's diameter above all that.
    assert max(heights.max(), -16.0 + 3 + 1.2, -20 + 2 * math.sqrt(3)) < -7.5 - 2 * LEVEL_R_MAX
    return level, statics, static_frames


@dataclass
class _Piece:
    """A kinematic piece the soak moves: its node, its oracle solid (local), and its motion
    ``schedule(tau) -> (pos, hpr)`` on its own clock (stopped while it is out of play)."""

    name: str
    node: NodePath
    solid: level_oracle.Solid
    schedule: object
    tau: int = 0
    out_for: int = 0  # frames left detached or non-finite
    out_how: str = ""
    fresh: bool = True


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [
        "moving-spheres",
        "everything",
    ],
)
def test_level_soak(base, monkeypatch, variant):
    """A level (a rolling terrain of 3,200 one-sided triangles in four nodes, turned static
    boxes and capsules, added with add_collision_nodes(static=True)) and kinematic pieces
    the game moves and turns every frame (a turning lift box, a tilting one-sided platform,
    a box turnstile and a two-sided polygon gate at up to 30 degrees a frame, turning target
    boxes on rails, a flipping door), some removed (remove(), removeNode(), by an in
    handler) and replaced, one detached and attached again, one made non-finite for a
    while; rewind and slide spheres, points and bullets, slow and fast. Every frame: no
    exception, nothing tunnelled through a piece or an overlap created with one (by the
    independent oracle of tests/level_oracle.py, in each piece's frame), no overlap
    created between bodies (except one squeezed by a moving piece, which wins by design),
    and the events balanced."""
    from panda3d_ccd import component

    frames, population = LEVEL_FRAMES, LEVEL_BODIES
    if variant == "everything" and "CCD_LEVEL_SOAK_FRAMES" not in os.environ:
        # Its mix takes longer to reach every event it checks for (a handler removing a
        # piece): 50 frames of seed 12 have none.
        frames = 80
    mix, resting, infinite_scale = LEVEL_VARIANTS[variant].values()
    rng = np.random.default_rng(LEVEL_SEED)
    render = base.render
    warned = _Warnings()
    monkeypatch.setattr(component.notify, "warning", warned)
    started = time.perf_counter()
    half = LEVEL_HALF
    stats = dict(
        frames=0,
        contacts=0,
        piece_contacts=0,
        kinematic_contacts=0,
        exceptions=0,
        tunnelled=0,
        overlaps_created=0,
        body_overlaps_created=0,
        body_overlaps_squeezed=0,
        spawned=0,
        bodies_removed=0,
        bullets_removed_by_handler=0,
        pieces_removed=0,
        pieces_removed_by_remove_node=0,
        pieces_removed_by_handler=0,
        pieces_spawned=0,
        detached=0,
        non_finite=0,
        rounds=0,
    )
    failures: list[str] = []
    first_error = ""
    sent: list[str] = []

    level, statics, static_frames = static_level(rng, render, half)

    def on_in(contact):
        into, frm = contact.getIntoNodePath(), contact.getFromNodePath()
        if into.isEmpty() or frm.isEmpty():
            return
        if into.getName() == "target2" and frame > frames // 10:
            into.removeNode()  # a game's target destroyed when hit
            stats["pieces_removed_by_handler"] += 1
        elif frm.getName().startswith("b") and handler_rng.random() < 0.5:
            frm.removeNode()  # a bullet spent on a hit
            stats["bullets_removed_by_handler"] += 1

    handler_rng = np.random.default_rng(LEVEL_SEED + 1)
    counter = EventCounter(on_in=on_in)
    recorder_send = counter.send

    def send(name, sentArgs=None, taskChain=None):  # noqa: N803 (Messenger's name)
        sent.append(name)
        recorder_send(name, sentArgs, taskChain)

    counter.send = send
    ccd = make_ccd(base, counter)
    planes = add_box(ccd, render, half)
    registered = ccd.add_collision_nodes(level, static=True)
    assert sorted(n.getName() for n in registered) == sorted(s.name for s in statics)

    # ---- the kinematic pieces
    pieces: list[_Piece] = []

    def box_piece(name, lo, hi, schedule):
        cnode = render.attachNewNode(CollisionNode(name))
        centre, half_size = (np.add(lo, hi) / 2), (np.subtract(hi, lo) / 2)
        cnode.node().addSolid(CollisionBox(LPoint3(*centre), *half_size))
        solid = level_oracle.Solid(name, box=(np.array([lo], float), np.array([hi], float)))
        return cnode, solid, schedule

    def poly_piece(name, corners, schedule, two_sided=False):
        cnode, (a, b, c) = polygon_node(render, name, corners)
        solid = level_oracle.Solid(name, tri=(a, b, c, np.full(len(a), two_sided)))
        return cnode, solid, schedule, two_sided

    def enter(made, two_sided=False):
        cnode, solid, schedule = made[:3]
        pos, hpr = schedule(0)
        cnode.setPosHpr(pos, hpr)
        ccd.add_collision_node(cnode, two_sided=two_sided)
        pieces.append(_Piece(cnode.getName(), cnode, solid, schedule))
        return pieces[-1]

    def square(size, z=0.0):
        s = size / 2
        return np.array([[[-s, -s, z], [s, -s, z], [s, s, z], [-s, s, z]]])

    def upright(width, height):
        w, h = width / 2, height / 2
        return np.array([[[-w, 0, -h], [w, 0, -h], [w, 0, h], [-w, 0, h]]])

    def target_schedule(k):
        return lambda tau: (
            (-17 + 6 * math.sin(0.1 * tau + k), 17.0, 6.0 * (k % 3)),
            (0.0, 0.0, 5.0 * tau),
        )

    enter(
        box_piece(
            "lift",
            (-3, -3, -0.4),
            (3, 3, 0.4),
            lambda tau: ((-17.0, -17.0, 5 + 12 * math.sin(0.05 * tau)), (2.0 * tau, 0, 0)),
        )
    )
    poly = poly_piece("platform", square(6.0),
                      lambda tau: ((17.0, -17.0, 5 + 10 * math.sin(0.07 * tau + 1)),
                                   (0.0, 10 * math.sin(0.03 * tau), 0.0)))  # fmt: skip
    enter(poly)

    # Turning at up to 30 degrees a frame (the derivative of the heading, so by the mean
    # value theorem no frame turns more).
    def turnstile(tau):
        return (0.0, 0.0, 6.0), (-1000.0 * math.cos(0.03 * tau + 0.5), 0.0, 0.0)

    def gate(tau):
        return (0.0, 0.0, 16.0), (-(30.0 / 0.021) * math.sin(0.021 * tau), 0.0, 0.0)

    enter(box_piece("turnstile", (-9, -0.3, -2), (9, 0.3, 2), turnstile))
    enter(poly_piece("gate", upright(16.0, 3.0), gate, two_sided=True), two_sided=True)
    door = poly_piece("door", square(4.0),
                      lambda tau: ((17.0, 17.0, 4.0), (0.0, 0.0, 10.0 * tau)))  # fmt: skip
    enter(door)
    for k in range(3):
        enter(box_piece(f"target{k}", (-0.75,) * 3, (0.75,) * 3, target_schedule(k)))
    replacements: list[tuple[int, int]] = []  # (frame due, lane)
    next_target = 3
    # Pieces are far enough apart that no body can be pinched between two of them.
    for piece in pieces:
        piece.tau = 1
    assert len(ccd.add_collision_nodes(NodePath("empty"))) == 0

    # ---- the bodies
    nodes: list = []
    radii: list[float] = []
    kinds: list[str] = []
    lives: list[int] = []  # frames left for a bullet (others: -1)
    velocity: dict[str, np.ndarray] = {}
    serial = 0

    def clearance(p, radius):
        """True if a sphere at p is clear of every solid, live piece and body."""
        if np.any(np.abs(p) > half - radius - 0.2):
            return False
        for solid, fr in zip(statics, static_frames):
            local = level_oracle.quat_matrix(fr.quat[None])[0].T @ (p - fr.pos)
            if solid.distance(local) < radius + 0.3:
                return False
        for piece in pieces:
            if piece.out_for:
                continue
            fr = level_oracle.Frame.of(piece.node, render)
            local = level_oracle.quat_matrix(fr.quat[None])[0].T @ (p - fr.pos)
            if piece.solid.distance(local) < radius + 0.6:
                return False
            # Nor in a turning piece's way this frame, nor behind a one-sided one.
            if piece.name in ("turnstile", "gate") and abs(p[2] - fr.pos[2]) < 3 + radius:
                if np.hypot(*(p - fr.pos)[:2]) < 10 + radius:
                    return False
        if nodes:
            centres = read(nodes, render)
            if np.any(np.linalg.norm(centres - p, axis=1) < np.array(radii) + radius + 0.2):
                return False
        return True

    def spawn(kind=None):
        nonlocal serial
        kind = kind or str(rng.choice(["rewind", "slide", "point", "pslide", "bullet"], p=mix))
        radius = {"point": 0.0, "pslide": 0.0, "bullet": 0.05}.get(
            kind, float(rng.uniform(0.2, LEVEL_R_MAX))
        )
        live = [pc for pc in pieces if not pc.out_for]
        for _ in range(50):
            p = rng.uniform(-half + 1.5, half - 1.5, 3)
            if live and rng.random() < 0.5:  # above a piece, to land on it or be hit by it
                at = np.array(tuple(live[int(rng.integers(len(live)))].node.getPos(render)))
                p = at + (*rng.uniform(-4, 4, 2), rng.uniform(1.5, 5.0))
            elif rng.random() < 0.5:
                p[2] = rng.uniform(-15.0, -5.0)  # near the terrain
            if clearance(p, radius):
                break
        else:
            return False
        name = f"{'b' if kind == 'bullet' else 's'}{serial}"
        serial += 1
        ball = render.attachNewNode(name)
        ball.setPos(*p)
        ccd.add_sphere(ball, radius, response="slide" if kind in ("slide", "pslide") else "rewind")
        if kind == "bullet":
            # Most bullets are aimed at a piece, many at the target a handler destroys.
            doomed = [pc for pc in live if pc.name == "target2"]
            live = doomed if doomed and rng.random() < 0.4 else live
            aim = live[int(rng.integers(len(live)))] if live and rng.random() < 0.8 else None
            goal = aim.node.getPos(render) if aim is not None else LPoint3(*rng.uniform(-20, 20, 3))
            d = np.array(tuple(goal)) - p
            velocity[name] = d / max(np.linalg.norm(d), 1e-9) * rng.uniform(8.0, 30.0)
        nodes.append(ball)
        radii.append(radius)
        kinds.append(kind)
        lives.append(int(rng.integers(8, 25)) if kind == "bullet" else -1)
        return True

    for _ in range(population):
        spawn()
    base.taskMgr.step()  # their first pass (nothing moved yet)

    frame = 0
    for frame in range(frames):
        if frame % max(1, frames // 6) == 0:
            print(f"level soak frame {frame}: {time.perf_counter() - started:.0f} s, {stats}",
                  flush=True)  # fmt: skip
        # ---- what the pieces do this frame
        start_frames = {}
        for piece in pieces:
            start_frames[piece.name] = (
                None if piece.out_for or piece.fresh else level_oracle.Frame.of(piece.node, render)
            )
            piece.fresh = False
        if frame == frames // 4:  # a target removed the polite way
            (gone,) = [p for p in pieces if p.name == "target0"]
            ccd.remove(gone.node)
            gone.node.removeNode()
            pieces.remove(gone)
            stats["pieces_removed"] += 1
            replacements.append((frame + 10, 0))
        if frame == (2 * frames) // 5:  # and one behind the plugin's back
            (gone,) = [p for p in pieces if p.name == "target1"]
            gone.node.removeNode()
            pieces.remove(gone)
            stats["pieces_removed_by_remove_node"] += 1
            replacements.append((frame + 10, 1))
        for due, lane in list(replacements):
            if frame >= due:
                made = box_piece(f"target{next_target}", (-0.75,) * 3, (0.75,) * 3,
                                 target_schedule(lane))  # fmt: skip
                pos, _ = made[2](0)
                if clearance(np.array(pos), 2.0):
                    piece = enter(made)
                    piece.tau = 1
                    next_target += 1
                    replacements.remove((due, lane))
                    stats["pieces_spawned"] += 1
                else:
                    made[0].removeNode()
        for piece in pieces:
            if piece.out_for:
                piece.out_for -= 1
                if piece.out_for == 0:  # back where it left: nothing to sweep
                    if piece.out_how == "detached":
                        piece.node.reparentTo(render)
                    else:
                        piece.node.setPosHprScale(*piece.schedule(piece.tau - 1), (1, 1, 1))
                    piece.fresh = True
                continue
            if piece.name == "platform" and frame % 80 == 40:
                piece.node.detachNode()
                piece.out_for, piece.out_how = 6, "detached"
                stats["detached"] += 1
                continue
            if piece.name == "gate" and frame == frames // 2:
                if infinite_scale:
                    piece.node.setScale(math.inf)
                else:
                    piece.node.setX(math.inf)
                piece.out_for, piece.out_how = 5, "non-finite"
                stats["non_finite"] += 1
                continue
            pos, hpr = piece.schedule(piece.tau)
            piece.tau += 1
            piece.node.setPosHpr(pos, hpr)
        end_frames = {
            p.name: None if p.out_for or p.fresh else level_oracle.Frame.of(p.node, render)
            for p in pieces
        }
        # ---- the bodies
        n = len(nodes)
        p0 = read(nodes, render)
        fresh = np.zeros(n, bool)
        for k in range(n):
            name = nodes[k].getName()
            if kinds[k] != "bullet" and rng.random() < resting:
                continue  # left where it is this frame
            if kinds[k] == "bullet":
                v = velocity[name]
            elif rng.random() < 0.1:
                v = rng.normal(size=3) * rng.uniform(2.0, 12.0) / math.sqrt(3)
            else:
                v = rng.normal(size=3) * rng.uniform(0.01, 0.5) / math.sqrt(3) + (0, 0, -0.2)
            if rng.random() < 0.3:
                nodes[k].setFluidPos(*(p0[k] + v))
            else:
                nodes[k].setPos(*(p0[k] + v))
        # A few bodies leave: a bullet at the end of its life, now and then anyone.
        gone = []
        for k in range(n):
            lives[k] -= 1 if lives[k] > 0 else 0
            if lives[k] == 0 or rng.random() < 0.003:
                if rng.random() < 0.5:
                    ccd.remove(nodes[k])
                nodes[k].removeNode()
                gone.append(k)
        keep = [k for k in range(n) if k not in gone]
        stats["bodies_removed"] += len(gone)
        nodes, radii, kinds, lives = (
            [lst[k] for k in keep] for lst in (nodes, radii, kinds, lives)
        )
        p0, fresh = p0[keep], fresh[keep]
        while len(nodes) < population:
            if not spawn():
                break
            stats["spawned"] += 1
            p0 = np.vstack([p0, read(nodes[-1:], render)])
            fresh = np.append(fresh, True)
        p1 = read(nodes, render)
        p0[fresh] = p1[fresh]

        # ---- the pass
        try:
            base.taskMgr.step()
            contacts = ccd.contacts
        except Exception:
            stats["exceptions"] += 1
            first_error = first_error or traceback.format_exc()
            contacts = []
        stats["frames"] += 1
        stats["contacts"] += len(contacts)
        stats["rounds"] += ccd.rounds
        piece_names = {p.name for p in pieces} | {s.name for s in statics}
        kinematic_names = {p.name for p in pieces}
        squeezed = set()
        for c in contacts:
            into = c.into_np.getName() if not c.into_np.isEmpty() else ""
            if into in piece_names:
                stats["piece_contacts"] += 1
            if into in kinematic_names or into.startswith("target"):
                stats["kinematic_contacts"] += 1
                squeezed.add(c.from_np.getName() if not c.from_np.isEmpty() else "")
        # Pieces and bullets the handler deleted: gone from the game's lists too.
        for piece in [p for p in pieces if p.node.isEmpty()]:
            pieces.remove(piece)
            replacements.append((frame + 10, 2))
        alive = [k for k in range(len(nodes)) if not nodes[k].isEmpty()]
        nodes, radii, kinds, lives = (
            [lst[k] for k in alive] for lst in (nodes, radii, kinds, lives)
        )
        p0, p1, fresh = p0[alive], p1[alive], fresh[alive]

        # ---- the checks (bodies spawned this frame were not swept: nothing to check)
        p = read(nodes, render)
        r = np.array(radii)
        tol = allowance(p0, p1, p, np.full_like(p, half))
        found = level_oracle.Findings()
        swept = np.flatnonzero(~fresh)
        stops: dict[NodePath, list] = {}
        for c in contacts:
            stops.setdefault(c.from_np, []).append((c.t, np.array(tuple(c.from_pos))))
        knots = level_oracle.Knots.through(
            p0[swept], p[swept], [stops.get(nodes[k], []) for k in swept]
        )
        for solid, fr in zip(statics, static_frames):
            level_oracle.check(solid, knots, r[swept], tol[swept], fr, fr, 1, found, swept)
        for piece in pieces:
            f0, f1 = start_frames.get(piece.name), end_frames.get(piece.name)
            if f0 is None or f1 is None:
                continue
            turning = abs(abs(float(f0.quat @ f1.quat)) - 1.0) > 1e-12
            steps = 16 if turning else 1
            level_oracle.check(
                piece.solid, knots, r[swept], tol[swept], f0, f1, steps, found, swept
            )
        for what, items in (("tunnelled", found.tunnels), ("overlaps_created", found.overlaps)):
            stats[what] += len(items)
            for body, solid_name, row, kind, depth in items[: 3 - len(failures)]:
                failures.append(
                    f"frame {frame}: {what} {nodes[body].getName()} ({kinds[body]}, "
                    f"r={radii[body]}) {solid_name} {kind} {row} by {depth:.3g}: "
                    f"{p0[body].tolist()} -> {p1[body].tolist()} -> {p[body].tolist()}; "
                    + "; ".join(
                        f"{c.into_np.getName()} at {c.t:.6g} from {tuple(c.from_pos)} normal "
                        f"{tuple(c.normal)} {c.feature}"
                        for c in contacts
                        if c.from_np == nodes[body]
                    )
                )
        for a, b, depth in created_overlaps(p0, p, r, ~fresh, tol):
            names_ab = {nodes[a].getName(), nodes[b].getName()}
            if names_ab & squeezed:
                stats["body_overlaps_squeezed"] += 1
            else:
                stats["body_overlaps_created"] += 1
                failures.append(f"frame {frame}: {sorted(names_ab)} overlap by {depth:.3g}")
        # Bodies in the planes' walls are counted with the pieces.
        walled = tunnelled(p[swept], r[swept], planes, tol[swept])
        stats["tunnelled"] += len(walled)
        failures += [f"frame {frame}: {nodes[swept[k]].getName()} in a wall" for k in walled]
        if failures or stats["exceptions"]:
            break  # the first frame that fails tells what there is to tell

    ccd.destroy()
    level.removeNode()
    stats.update(
        seconds=round(time.perf_counter() - started, 1),
        warnings_non_finite=warned.non_finite,
        unbalanced=counter.unbalanced(),
        events_in=counter.counts["into"],
        events_out=counter.counts["out"],
    )
    print("\nlevel soak:", ", ".join(f"{k}={v}" for k, v in stats.items()))
    print("\n".join(failures))
    assert stats["exceptions"] == 0, first_error
    assert failures == []
    assert stats["frames"] == frames
    assert stats["tunnelled"] == 0 and stats["overlaps_created"] == 0
    assert stats["body_overlaps_created"] == 0
    assert balanced(sent) == [] and stats["unbalanced"] == 0
    assert stats["events_in"] == stats["events_out"] > 0
    assert warned.non_finite == stats["non_finite"]  # one warning per episode
    assert warned.other == []
    assert stats["pieces_removed_by_handler"] >= 1 and stats["pieces_spawned"] >= 2
    assert stats["kinematic_contacts"] > 0 and stats["piece_contacts"] > stats["kinematic_contacts"]
