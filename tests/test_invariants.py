"""What must hold on every frame, checked over many random frames through the component.

* no tunnelling out of a closed box at any speed;
* no overlap created between solid spheres;
* every contact is real (its bodies touch at its time, on the frame's paths);
* no contact missed (first contact time against the analytic kernel and dense sampling,
  and against Panda3D's own traverser and Bullet where those are known to be right);
* no sticking along a tilted floor;
* events in time order, correctly named, balanced in/out, also after destroy().

Node positions are float32 in Panda3D's pip build: tolerances are 1e-6 of the scene scale,
and inputs of analytic checks are read back from the nodes so they are exactly what the
plugin saw.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from panda3d.core import (
    BitMask32,
    CollisionHandlerQueue,
    CollisionNode,
    CollisionSphere,
    CollisionTraverser,
    LPlane,
    LPoint3,
    LVector3,
    PandaNode,
    TransformState,
)

from panda3d_ccd import ContinuousCollision, sphere_sphere_toi

REL = 1e-6
KIND = {"into": "in", "again": "again", "out": "out"}


# ---------------------------------------------------------------------------- helpers
class EventLog:
    """Checks the event stream as it comes: names, in/again/out balance, time order."""

    def __init__(self):
        self.open: set[tuple[str, str]] = set()
        self.seen: list = []  # every contact delivered so far (kept alive for identity)
        self.seen_ids: set[int] = set()
        self.counts = {"in": 0, "again": 0, "out": 0}

    def check_frame(self, sent, contacts):
        """sent: this frame's (name, contact); contacts: this frame's ccd.contacts."""
        stale = True
        last_t = -1.0
        this_frame = {id(c) for c in contacts}
        for name, c in sent:
            f, i = c.from_np.getName(), c.into_np.getName()
            kind = None
            for word, k in KIND.items():
                if name == f"{f}-{word}-{i}":
                    kind = k
            assert kind is not None, (name, c)
            key = (f, i)
            if kind == "in":
                assert key not in self.open, name
                self.open.add(key)
            elif kind == "again":
                assert key in self.open, name
            else:
                assert key in self.open, name
                self.open.discard(key)
            self.counts[kind] += 1
            # First the outs of pairs that ended between frames (they carry an older
            # contact), then this frame's contacts by time.
            if stale and kind == "out" and id(c) in self.seen_ids:
                continue
            stale = False
            assert id(c) not in self.seen_ids, f"old contact re-sent in the frame: {name}"
            if kind != "out":
                assert id(c) in this_frame, name
            assert c.t >= last_t, f"events out of time order: {name} at {c.t} after {last_t}"
            last_t = c.t
        for _, c in sent:
            if id(c) not in self.seen_ids:
                self.seen_ids.add(id(c))
                self.seen.append(c)

    def check_destroy(self, sent):
        for name, c in sent:
            f, i = c.from_np.getName(), c.into_np.getName()
            assert name == f"{f}-out-{i}", name
            assert (f, i) in self.open, name
            self.open.discard((f, i))
            self.counts["out"] += 1
        assert self.open == set()
        assert self.counts["in"] == self.counts["out"]


def patterns(ccd):
    ccd.add_in_pattern("%fn-into-%in")
    ccd.add_again_pattern("%fn-again-%in")
    ccd.add_out_pattern("%fn-out-%in")


def positions(nodes, render):
    return np.array([tuple(n.getPos(render)) for n in nodes], dtype=np.float64)


def box_planes(half):
    """(normal, point) of the 6 inward-facing walls of the cube [-half, half]^3."""
    walls = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            normal = [0.0, 0.0, 0.0]
            normal[axis] = sign
            point = [0.0, 0.0, 0.0]
            point[axis] = -sign * half
            walls.append((normal, point))
    return walls


def world_planes(ccd_nodes, render):
    """(m, 4) unit world planes (n, d) of registered (nodepath, LPlane)s."""
    out = []
    for np_, plane in ccd_nodes:
        a, b, c, d = plane * np_.getMat(render)
        length = np.sqrt(a * a + b * b + c * c)
        out.append((a / length, b / length, c / length, d / length))
    return np.array(out)


def slop(p0, p1, floor):
    """(n,) the plugin's documented slop per body: 1e-6 of its coordinates over the frame
    (start and commanded end), never below 1e-6 of the scene's size ``floor``."""
    coords = np.maximum(np.abs(p0).max(axis=1), np.abs(p1).max(axis=1))
    return REL * np.maximum(coords, floor)


def random_directions(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def random_speeds(rng, n):
    """Mostly slow, some fast, some very fast (up to 1e4 units per frame)."""
    kind = rng.random(n)
    slow = rng.uniform(0.01, 2.0, n)
    fast = rng.uniform(5.0, 200.0, n)
    very = 10 ** rng.uniform(3, 4, n)
    return np.where(kind < 0.6, slow, np.where(kind < 0.85, fast, very))


# ---------------------------------------------------------------------------- no tunnelling
@pytest.mark.parametrize("response", ["rewind", "slide"])
@pytest.mark.parametrize("turned", [False, True])
def test_no_tunnelling_out_of_a_closed_box(base, response, turned):
    render = base.render
    rng = np.random.default_rng(7 if turned else 3)
    half = 10.0
    scale = 1e3 if turned else half  # a turned box also sits far from the origin
    ccd = ContinuousCollision(base)
    box = render.attachNewNode("box")
    if turned:
        box.setPosHpr((700.0, -300.0, 250.0), (31.0, -17.0, 63.0))
    walls = []
    for k, (normal, point) in enumerate(box_planes(half)):
        np_ = box.attachNewNode(f"wall{k}")
        plane = LPlane(LVector3(*normal), LPoint3(*point))
        ccd.add_plane(np_, plane)
        walls.append((np_, plane))
    planes = world_planes(walls, render)
    radii = rng.uniform(0.1, 2.0, 6)
    balls = []
    for k, r in enumerate(radii):
        ball = box.attachNewNode(f"ball{k}")
        ball.setPos(*(-half + 2 + 3 * k, 0, 0))
        ccd.add_sphere(ball, float(r), response=response)
        balls.append(ball)
    ccd.step()  # first pass: sweeps nothing
    tol = REL * scale
    for _frame in range(150):
        p0 = positions(balls, render)
        v = random_directions(rng, len(balls)) * random_speeds(rng, len(balls))[:, None]
        for ball, target in zip(balls, p0 + v):
            ball.setPos(render, *target)
        ccd.step()
        p = positions(balls, render)
        signed = p @ planes[:, :3].T + planes[:, 3]  # (balls, walls)
        assert np.all(signed >= radii[:, None] - tol), signed - radii[:, None]
        d = np.linalg.norm(p[:, None] - p[None], axis=2)
        d0 = np.linalg.norm(p0[:, None] - p0[None], axis=2)
        big_r = radii[:, None] + radii[None]
        off = ~np.eye(len(balls), dtype=bool)
        created = off & (d0 >= big_r - tol) & (d < big_r - tol)
        assert not created.any(), np.argwhere(created)
    ccd.destroy()


@pytest.mark.parametrize("seed", range(6))
def test_bullet_hits_a_small_target_exactly(base, ccd, seed):
    render = base.render
    rng = np.random.default_rng(seed)
    direction = random_directions(rng, 1)[0]
    side = np.cross(direction, random_directions(rng, 1)[0])
    side /= np.linalg.norm(side)
    offset = rng.uniform(0.0, 0.149)  # from the line through the target's centre
    centre = rng.uniform(-1, 1, 3)
    target = render.attachNewNode("target")
    target.setPos(*centre)
    ccd.add_sphere(target, 0.1)
    bullet = render.attachNewNode("bullet")
    start = centre + side * offset - direction * 500
    bullet.setPos(*start)
    ccd.add_sphere(bullet, 0.05)
    ccd.step()  # first pass: sweeps nothing
    a0 = np.array(bullet.getPos(render))
    bullet.setPos(*(start + direction * 1000))
    a1 = np.array(bullet.getPos(render))
    b = np.array(target.getPos(render))
    contacts = [c for c in ccd.step() if c.from_np == bullet]
    assert len(contacts) == 1
    c = contacts[0]
    # Exact, on the very inputs the plugin read, and the closed form on the ideal ones.
    assert c.t == pytest.approx(sphere_sphere_toi(a0, a1, 0.05, b, b, 0.1)[0], abs=1e-12)
    ideal = (500 - np.sqrt(0.15**2 - offset**2)) / 1000
    assert c.t == pytest.approx(ideal, abs=1e-7)
    end = np.array(bullet.getPos(render))
    assert np.linalg.norm(end - b) == pytest.approx(0.15, abs=1e-6)  # left touching
    assert np.array(target.getPos(render)) == pytest.approx(b, abs=0)
    assert tuple(c.from_pos) == pytest.approx(tuple(end), abs=1e-6)


def test_bullet_agrees_with_bullet_physics_sweep(base, ccd):
    """Bullet's convex sweep as an independent oracle (it stops a hair early)."""
    from panda3d.bullet import BulletRigidBodyNode, BulletSphereShape, BulletWorld

    render = base.render
    world = BulletWorld()
    body = BulletRigidBodyNode("target")
    body.addShape(BulletSphereShape(0.1))
    world.attachRigidBody(body)
    target = render.attachNewNode("target")
    ccd.add_sphere(target, 0.1)
    rng = np.random.default_rng(11)
    for k in range(10):
        direction = random_directions(rng, 1)[0]
        side = np.cross(direction, [0.0, 0.0, 1.0])
        side /= np.linalg.norm(side)
        start = side * rng.uniform(0, 0.14) - direction * 500
        end = start + direction * 1000
        bullet = render.attachNewNode(f"bullet{k}")
        bullet.setPos(*start)
        ccd.add_sphere(bullet, 0.05)
        ccd.step()  # first pass: sweeps nothing
        bullet.setPos(*end)
        (c,) = [x for x in ccd.step() if x.from_np == bullet]
        hit = world.sweepTestClosest(
            BulletSphereShape(0.05),
            TransformState.makePos(LPoint3(*start)),
            TransformState.makePos(LPoint3(*end)),
            BitMask32.allOn(),
            0.0,
        )
        assert hit.hasHit()
        # Compare where the bullet's centre is at the hit, in distance along the path.
        assert c.t * 1000 == pytest.approx(hit.getHitFraction() * 1000, abs=2e-3)
        ccd.remove(bullet)
    world.removeRigidBody(body)


# ---------------------------------------------------------------------------- random scenes
def _place(rng, radii, half):
    """Non-overlapping centres inside the box, by rejection."""
    placed = np.zeros((0, 3))
    for r in radii:
        for _ in range(1000):
            p = rng.uniform(-half + r, half - r, 3)
            if len(placed) == 0 or np.all(
                np.linalg.norm(placed - p, axis=1) > radii[: len(placed)] + r + 1e-3
            ):
                placed = np.vstack([placed, p])
                break
        else:
            raise RuntimeError("scene too dense")
    return placed


MIXES = {"rewind+sensor": [0.7, 0.0, 0.3], "rewind+slide": [0.5, 0.5, 0.0], "all": [0.4, 0.4, 0.2]}


@pytest.mark.parametrize(
    ("seed", "count", "frames", "mix"),
    [
        (1, 50, 40, "rewind+sensor"),
        (2, 120, 25, "rewind+sensor"),
        (3, 200, 15, "rewind+sensor"),
        (4, 80, 30, "rewind+slide"),
        (5, 200, 15, "rewind+slide"),
        (1, 50, 40, "all"),
        (2, 120, 25, "all"),
        (3, 200, 15, "all"),
    ],
)
def test_random_scene_invariants_on_every_frame(base, recorder, seed, count, frames, mix):
    render = base.render
    rng = np.random.default_rng(seed)
    half = 30.0
    scale = half
    ccd = ContinuousCollision(base, messenger=recorder)
    patterns(ccd)
    walls = []
    for k, (normal, point) in enumerate(box_planes(half)):
        np_ = render.attachNewNode(f"wall{k}")
        plane = LPlane(LVector3(*normal), LPoint3(*point))
        ccd.add_plane(np_, plane)
        walls.append((np_, plane))
    planes = world_planes(walls, render)
    radii = rng.uniform(0.2, 2.0, count)
    kinds = rng.choice(["rewind", "slide", "sensor"], size=count, p=MIXES[mix])
    static = (rng.random(count) < 0.1) & (kinds != "sensor")
    start = _place(rng, radii, half)
    nodes = []
    for k in range(count):
        n = render.attachNewNode(f"s{k}")
        n.setPos(*start[k])
        ccd.add_sphere(n, float(radii[k]), response=str(kinds[k]), static=bool(static[k]))
        nodes.append(n)
    ccd.step()  # first pass: sweeps nothing
    solid = kinds != "sensor"
    sensor = ~solid
    big_r = radii[:, None] + radii[None]
    pair_solid = solid[:, None] & solid[None] & ~np.eye(count, dtype=bool)
    index = {n.getName(): k for k, n in enumerate(nodes)}
    log = EventLog()
    teleported = np.zeros(count, bool)

    for _frame in range(frames):
        p0 = positions(nodes, render)
        v = random_directions(rng, count) * random_speeds(rng, count)[:, None]
        v[static] = 0.0
        for k in np.flatnonzero(~static):
            nodes[k].setPos(*(p0[k] + v[k]))
        p1 = positions(nodes, render)  # what the plugin reads, float32
        p0[teleported] = p1[teleported]  # a teleport covers all motion up to the next pass
        teleported = np.zeros(count, bool)
        recorder.clear()
        contacts = ccd.step()
        p = positions(nodes, render)

        # Sensors and statics are never moved by the plugin.
        assert np.array_equal(p[sensor], p1[sensor])
        assert np.array_equal(p[static], p0[static])
        # No tunnelling out of the box.
        # (Tolerance: 1e-6 of the scene, or of the coordinates a body was sent to if larger.)
        body_tol = slop(p0, p1, scale)
        pair_tol = np.maximum(body_tol[:, None], body_tol[None])
        signed = p[solid] @ planes[:, :3].T + planes[:, 3]
        assert np.all(signed >= radii[solid, None] - body_tol[solid, None]), (
            signed - radii[solid, None]
        ).min()
        # No overlap created.
        d0 = np.linalg.norm(p0[:, None] - p0[None], axis=2)
        d = np.linalg.norm(p[:, None] - p[None], axis=2)
        created = pair_solid & (d0 >= big_r - pair_tol) & (d < big_r - pair_tol)
        assert not created.any(), [(i, j, d[i, j] - big_r[i, j]) for i, j in np.argwhere(created)]
        # Rewound bodies end on their own straight path.
        rewind = np.flatnonzero(kinds == "rewind")
        seg = p1[rewind] - p0[rewind]
        length2 = np.einsum("ij,ij->i", seg, seg)
        s_end = np.divide(
            np.einsum("ij,ij->i", p[rewind] - p0[rewind], seg),
            length2,
            out=np.ones(len(rewind)),
            where=length2 > 0,
        )
        assert np.all((s_end >= -1e-6) & (s_end <= 1 + 1e-6))
        on_path = p0[rewind] + s_end[:, None] * seg
        assert np.allclose(
            p[rewind], on_path, atol=REL * np.maximum(scale, np.sqrt(length2))[:, None]
        )
        s_stop = dict(zip(rewind, s_end))

        # Every contact is real, in time order, on the frame's paths.
        ts = [c.t for c in contacts]
        assert ts == sorted(ts)
        for c in contacts:
            f = index[c.from_np.getName()]
            fp = np.array(c.from_pos)
            motion = np.linalg.norm(p1[f] - p0[f])
            ctol = REL * max(scale, motion)
            # A sensor may start the frame already inside: then the contact is at t = 0
            # with the bodies overlapping; every other contact is a first touch.
            if c.into_pos is None:
                w = index_of_wall(c.into_np, walls)
                dist, reach = planes[w, :3] @ fp + planes[w, 3], radii[f]
                bodies = [(f, fp)]
            else:
                i = index[c.into_np.getName()]
                ip = np.array(c.into_pos)
                ctol = REL * max(scale, motion, np.linalg.norm(p1[i] - p0[i]))
                dist, reach = np.linalg.norm(fp - ip), big_r[f, i]
                bodies = [(f, fp), (i, ip)]
            if c.t == 0.0 and not (c.from_tangible and c.into_tangible):
                assert dist <= reach + ctol, c
            else:
                assert dist == pytest.approx(reach, abs=ctol), c
            for b, bp in bodies:
                if kinds[b] == "sensor" or static[b]:
                    expect = p0[b] + c.t * (p1[b] - p0[b])
                elif kinds[b] == "rewind":
                    expect = p0[b] + min(c.t, s_stop[b]) * (p1[b] - p0[b])
                else:  # slide: within reach of its start
                    reach = c.t * np.linalg.norm(p1[b] - p0[b])
                    assert np.linalg.norm(bp - p0[b]) <= reach + ctol
                    continue
                assert np.allclose(
                    bp, expect, atol=REL * max(scale, np.linalg.norm(p1[b] - p0[b]))
                ), (c, b)
        # The plugin moves a collider only for a contact: every other one ends where the
        # game put it, to the bit (also in frames where the solver hits its round cap).
        touched = {
            index[n.getName()]
            for c in contacts
            for n in (c.from_np, c.into_np)
            if n.getName() in index
        }
        untouched = np.array([k not in touched for k in range(count)])
        assert np.array_equal(p[untouched], p1[untouched]), np.flatnonzero(
            untouched & np.any(p != p1, axis=1)
        )
        log.check_frame(recorder.sent, contacts)

        # Sensors that flew off are brought back without a sweep.
        out = np.flatnonzero(sensor & np.any(np.abs(p) > half, axis=1))
        for k in out:
            nodes[k].setPos(*rng.uniform(-half + radii[k], half - radii[k], 3))
            ccd.teleport(nodes[k])
            teleported[k] = True

    assert log.counts["in"] > 0 and log.counts["out"] > 0
    recorder.clear()
    ccd.destroy()
    log.check_destroy(recorder.sent)


@pytest.mark.parametrize(
    "responses",
    [
        ["rewind"],
        ["rewind", "slide"],
    ],
)
def test_random_scene_of_collision_nodes_with_several_solids(base, recorder, responses):
    """Bodies made of one to three spheres (CollisionNodes, rigid), in a box: nothing leaves
    the box, no two bodies come to overlap, events stay balanced and keyed by node."""
    render = base.render
    rng = np.random.default_rng(9)
    half = 20.0
    ccd = ContinuousCollision(base, messenger=recorder)
    patterns(ccd)
    walls = []
    for k, (normal, point) in enumerate(box_planes(half)):
        np_ = render.attachNewNode(f"wall{k}")
        plane = LPlane(LVector3(*normal), LPoint3(*point))
        ccd.add_plane(np_, plane)
        walls.append((np_, plane))
    planes = world_planes(walls, render)
    bodies, owner, local, radius = [], [], [], []
    for k in range(30):
        for _ in range(1000):
            parts = rng.integers(1, 4)
            offsets = rng.uniform(-1.5, 1.5, (parts, 3))
            offsets[0] = 0.0
            radii = rng.uniform(0.3, 1.0, parts)
            centre = rng.uniform(-half + 3, half - 3, 3)
            world = centre + offsets
            clear = all(
                np.linalg.norm(world[q] - (np.array(bodies[owner[m]].getPos()) + local[m]))
                > radii[q] + radius[m] + 1e-3
                for q in range(parts)
                for m in range(len(owner))
            )
            if clear:
                break
        body = render.attachNewNode(CollisionNode(f"n{k}"))
        for q in range(parts):
            body.node().addSolid(CollisionSphere(LPoint3(*offsets[q]), radii[q]))
            owner.append(k)
            local.append(offsets[q])
            radius.append(radii[q])
        body.setPos(*centre)
        ccd.add_collision_node(body, response=str(rng.choice(responses)))
        bodies.append(body)
    ccd.step()  # first pass: sweeps nothing
    owner, local, radius = np.array(owner), np.array(local), np.array(radius)
    other = owner[:, None] != owner[None]
    big_r = radius[:, None] + radius[None]
    log = EventLog()

    def centres():
        return positions(bodies, render)[owner] + local

    for _frame in range(30):
        c0 = centres()
        speeds = random_speeds(rng, len(bodies))
        v = random_directions(rng, len(bodies)) * speeds[:, None]
        for body, step in zip(bodies, v):
            body.setPos(body.getPos() + LVector3(*step))
        c1 = centres()
        recorder.clear()
        contacts = ccd.step()
        c = centres()
        body_tol = slop(c0, c1, half)
        pair_tol = np.maximum(body_tol[:, None], body_tol[None])
        signed = c @ planes[:, :3].T + planes[:, 3]
        assert np.all(signed >= radius[:, None] - body_tol[:, None]), (
            signed - radius[:, None]
        ).min()
        d0 = np.linalg.norm(c0[:, None] - c0[None], axis=2)
        d = np.linalg.norm(c[:, None] - c[None], axis=2)
        created = other & (d0 >= big_r - pair_tol) & (d < big_r - pair_tol)
        assert not created.any(), [(owner[i], owner[j]) for i, j in np.argwhere(created)]
        keys = [(x.from_np.getName(), x.into_np.getName()) for x in contacts]
        assert len(keys) == len(set(keys)), "one contact per node pair per pass"
        log.check_frame(recorder.sent, contacts)
    recorder.clear()
    ccd.destroy()
    log.check_destroy(recorder.sent)


def index_of_wall(np_, walls):
    for k, (w, _plane) in enumerate(walls):
        if w == np_:
            return k
    raise AssertionError(f"unknown into node {np_}")


@pytest.mark.parametrize("responses", [["rewind", "sensor"], ["rewind", "slide", "sensor"]])
def test_events_balanced_with_removals_over_a_long_run(base, recorder, responses):
    render = base.render
    rng = np.random.default_rng(5)
    ccd = ContinuousCollision(base, messenger=recorder)
    patterns(ccd)
    log = EventLog()
    half = 8.0
    for k, (normal, point) in enumerate(box_planes(half)):
        ccd.add_plane(render.attachNewNode(f"wall{k}"), LPlane(LVector3(*normal), LPoint3(*point)))
    live = {}
    serial = 0
    for _frame in range(120):
        recorder.clear()
        # Now and then a body is removed (its pairs close at once) or a new one joins.
        if live and rng.random() < 0.15:
            name = rng.choice(sorted(live))
            ccd.remove(live.pop(name))
        if rng.random() < 0.3 or len(live) < 6:
            n = render.attachNewNode(f"b{serial}")
            serial += 1
            n.setPos(*rng.uniform(-half + 1, half - 1, 3))
            ccd.add_sphere(n, float(rng.uniform(0.3, 1.0)), response=str(rng.choice(responses)))
            live[n.getName()] = n
        removal = list(recorder.sent)
        for name, c in removal:
            assert name.split("-")[1] == "out"
            key = (c.from_np.getName(), c.into_np.getName())
            assert key in log.open
            log.open.discard(key)
            log.counts["out"] += 1
        recorder.clear()
        for n in live.values():
            v = random_directions(rng, 1)[0] * rng.uniform(0.1, 4.0)
            n.setPos(n.getPos() + LVector3(*v))
        contacts = ccd.step()
        log.check_frame(recorder.sent, contacts)
        for n in live.values():
            if np.any(np.abs(np.array(n.getPos())) > half):
                n.setPos(0, 0, 0)
                ccd.teleport(n)
    assert log.counts["in"] > 20
    recorder.clear()
    ccd.destroy()
    log.check_destroy(recorder.sent)


# ---------------------------------------------------------------------------- two bodies
coordinate = st.floats(-20, 20, allow_nan=False, width=32)
point = st.tuples(coordinate, coordinate, coordinate)
RESPONSES_A = ["rewind", "slide", "sensor"]
RESPONSES_B = ["rewind", "slide", "sensor", "static"]


@pytest.mark.parametrize("resp_b", RESPONSES_B)
@pytest.mark.parametrize("resp_a", RESPONSES_A)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    b0=point,
    va=point,
    vb=point,
    toward=point,
    speed=st.sampled_from([0.05, 1.0, 30.0, 1e4]),
    ra=st.floats(0.0, 3.0),
    rb=st.floats(0.05, 3.0),
    t_close=st.floats(0.0, 1.0),
    closeness=st.floats(0.0, 1.3),
)
def test_two_bodies_first_contact_is_exact_and_never_missed(
    base, resp_a, resp_b, b0, va, vb, toward, speed, ra, rb, t_close, closeness
):
    """a passes b at t_close, closeness * (ra + rb) from its centre: mostly a hit (< 1),
    sometimes a graze (about 1) or a near miss (> 1)."""
    toward = np.array(toward)
    assume(np.linalg.norm(toward) > 1e-3)
    render = base.render
    root = render.attachNewNode("scene")
    ccd = ContinuousCollision(base)
    try:
        big_r = ra + rb
        va_ = np.array(va) / 20 * speed
        vb_ = np.zeros(3) if resp_b == "static" else np.array(vb) / 20 * speed
        b0_ = np.array(b0)
        close = b0_ + t_close * vb_ + toward / np.linalg.norm(toward) * closeness * big_r
        a0 = close - t_close * va_
        a = root.attachNewNode("a")
        b = root.attachNewNode("b")
        a.setPos(*a0)
        b.setPos(*b0_)
        ccd.add_sphere(a, ra, response=resp_a)
        ccd.add_sphere(
            b, rb, response="rewind" if resp_b == "static" else resp_b, static=resp_b == "static"
        )
        ccd.step()  # first pass: sweeps nothing
        A0, B0 = np.array(a.getPos(render)), np.array(b.getPos(render))  # noqa: N806
        scale = max(1.0, np.abs(A0).max(), np.abs(B0).max())
        dist0 = np.linalg.norm(A0 - B0)
        assume(dist0 > big_r + 1e-6 * scale)  # starting in touch is not this test's subject
        a.setPos(*(a0 + va_))
        b.setPos(*(b0_ + vb_))
        A1, B1 = np.array(a.getPos(render)), np.array(b.getPos(render))  # noqa: N806
        scale = max(scale, np.abs(A1).max(), np.abs(B1).max())
        contacts = ccd.step()
        ts = [c.t for c in contacts]
        analytic = sphere_sphere_toi(A0, A1, ra, B0, B1, rb)[0]

        # Dense sampling of the straight paths.
        s = np.linspace(0.0, 1.0, 20001)
        gap = (
            np.linalg.norm((A0 + s[:, None] * (A1 - A0)) - (B0 + s[:, None] * (B1 - B0)), axis=1)
            - big_r
        )
        tol = 1e-6 * scale
        inside = np.flatnonzero(gap < -tol)
        if len(contacts) == 0:
            # Exact closest approach on the frame: no more than a touch (the plugin ignores
            # contacts that could not sink deeper than its slop, 1e-6 of the coordinates).
            d0, dv = A0 - B0, (A1 - A0) - (B1 - B0)
            s_min = np.clip(-(d0 @ dv) / (dv @ dv), 0.0, 1.0) if dv @ dv > 0 else 0.0
            assert np.linalg.norm(d0 + s_min * dv) >= big_r - tol, "missed"
            assert len(inside) == 0, f"missed: sampled overlap at t={s[inside[0]]}"
            return
        # Both directions (default masks), at the first contact's time.
        first = min(ts)
        assert sorted(
            (c.from_np.getName(), c.into_np.getName()) for c in contacts if c.t == first
        ) == [("a", "b"), ("b", "a")]
        assert first == pytest.approx(analytic, abs=1e-9)
        if len(inside):
            assert first <= s[inside[0]] + 1e-9
        # Real: the bodies touch at that time, on the straight paths.
        pa = A0 + first * (A1 - A0)
        pb = B0 + first * (B1 - B0)
        assert np.linalg.norm(pa - pb) == pytest.approx(big_r, abs=tol)
        c = next(c for c in contacts if c.t == first and c.from_np == a)
        assert tuple(c.from_pos) == pytest.approx(tuple(pa), abs=tol)
        assert tuple(c.into_pos) == pytest.approx(tuple(pb), abs=tol)
        normal = (pa - pb) / np.linalg.norm(pa - pb)
        assert tuple(c.normal) == pytest.approx(tuple(normal), abs=1e-5)
        # Where it ends: rewind spheres at the contact, sensors and statics untouched.
        for n, resp, P0, P1 in ((a, resp_a, A0, A1), (b, resp_b, B0, B1)):  # noqa: N806
            end = np.array(n.getPos(render))
            other_sensor = "sensor" in (resp_a, resp_b)
            if resp in ("sensor", "static") or other_sensor:
                assert np.array_equal(end, P1)
            elif resp == "rewind":
                assert tuple(end) == pytest.approx(tuple(P0 + first * (P1 - P0)), abs=tol)
    finally:
        ccd.destroy()
        root.removeNode()


@pytest.mark.parametrize("response", ["rewind", "slide"])
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    wall_angle=st.floats(0.0, 2 * np.pi),
    wall_distance=st.floats(2.0, 6.0),
    move_angle=st.floats(0.0, 2 * np.pi),
    move_length=st.floats(3.0, 12.0),
    offset=st.tuples(*[st.floats(-0.5, 0.5)] * 3),
    coin_at=st.floats(0.0, 1.0),
    coin_off=st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.floats(-1, 1)),
)
def test_a_carried_sensor_reports_what_its_carriers_path_meets(
    base, response, wall_angle, wall_distance, move_angle, move_length, offset, coin_at, coin_off
):
    """A player (r 1, at the origin) moves in the plane z = 0, perhaps into a wall, which
    stops it (rewind) or turns it along it (slide); a pickup radius (a sensor of r 1.5 at
    ``offset`` below it) must report a coin (a static sensor of r 0.3, near a point of the
    player's path) exactly when the player's real path brings it there: the oracle is that
    path, worked out by hand, and densely sampled."""
    normal = np.array([np.cos(wall_angle), np.sin(wall_angle), 0.0])  # toward the player
    s = np.linspace(0.0, 1.0, 20001)

    def path_to(p1: np.ndarray) -> tuple[np.ndarray, float]:
        """The player's path, sampled at s: straight to the wall, then stopped or along
        it; and when it meets the wall."""
        into = normal @ p1
        t_c = (wall_distance - 1.0) / -into if into < 0 else np.inf
        path = s[:, None] * p1
        if t_c <= 1.0:
            after = s > t_c
            along = p1 - into * normal if response == "slide" else np.zeros(3)
            path[after] = t_c * p1 + (s[after] - t_c)[:, None] * along
        return path, t_c

    aim = move_length * np.array([np.cos(move_angle), np.sin(move_angle), 0.0])
    coin = path_to(aim)[0][int(coin_at * (len(s) - 1))] + np.array(coin_off)
    render = base.render
    root = render.attachNewNode("scene")
    ccd = ContinuousCollision(base)
    try:
        wall = root.attachNewNode("wall")
        plane = LPlane(LVector3(*normal), LPoint3(*(-wall_distance * normal)))
        ccd.add_plane(wall, plane, into_mask=BitMask32.bit(1))
        player = root.attachNewNode("player")
        ccd.add_sphere(player, 1.0, response=response, from_mask=BitMask32.bit(1), into_mask=0)
        radius = player.attachNewNode("pickup-radius")
        radius.setPos(*offset)
        ccd.add_sphere(radius, 1.5, response="sensor", from_mask=BitMask32.bit(2), into_mask=0)
        coin_np = root.attachNewNode("coin")
        coin_np.setPos(*coin)
        ccd.add_sphere(
            coin_np, 0.3, response="sensor", static=True, from_mask=0, into_mask=BitMask32.bit(2)
        )
        ccd.step()
        o, c = np.array(radius.getPos()), np.array(coin_np.getPos())
        player.setPos(*aim)
        path, t_c = path_to(np.array(player.getPos()))
        gap = np.linalg.norm(path + o - c, axis=1) - 1.8
        assume(gap[0] > 1e-3 and abs(gap.min()) > 1e-3)  # no start inside, no graze
        contacts = ccd.step()
        assert np.array(player.getPos()) == pytest.approx(path[-1], abs=1e-4)
        found = [c.t for c in contacts if c.from_np == radius and c.into_np == coin_np]
        inside = np.flatnonzero(gap < 0)
        event("the wall met" if t_c <= 1.0 else "no wall")
        event("the coin met" if len(inside) else "no coin")
        if len(inside) == 0:
            assert found == []
        else:
            k = inside[0]
            # (Within the sampling, and the float32 rounding of the nodes' positions.)
            assert len(found) == 1 and s[k - 1] - 1e-6 <= found[0] <= s[k] + 1e-6
    finally:
        ccd.destroy()
        root.removeNode()


@pytest.mark.parametrize("response", ["rewind", "slide", "sensor"])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    normal=point,
    offset=st.floats(-5, 5),
    foot=point,
    tangential=point,
    gap=st.floats(0.0, 20.0),
    speed=st.sampled_from([0.05, 1.0, 30.0, 1e4]),
    t_hit=st.floats(0.01, 1.5),
    r=st.floats(0.0, 3.0),
)
def test_sphere_and_plane_first_contact(
    base, response, normal, offset, foot, tangential, gap, speed, t_hit, r
):
    """The ball starts gap * speed / 20 in front of the plane and would touch it at t_hit
    (a miss when t_hit > 1), with any sliding motion along it."""
    n = np.array(normal, dtype=np.float64)
    assume(np.linalg.norm(n) > 1e-3)
    render = base.render
    root = render.attachNewNode("scene")
    ccd = ContinuousCollision(base)
    try:
        wall = root.attachNewNode("wall")
        plane = LPlane(*n, offset)
        ccd.add_plane(wall, plane)
        a, b, c, d = plane
        unit = np.array([a, b, c], dtype=np.float64)
        length = np.linalg.norm(unit)
        unit, d = unit / length, d / length
        on_plane = np.array(foot) - (unit @ np.array(foot) + d) * unit
        height = gap / 20 * speed
        along = np.array(tangential) / 20 * speed
        along -= (along @ unit) * unit
        c0 = on_plane + unit * (r + height)
        ball = root.attachNewNode("ball")
        ball.setPos(*c0)
        ccd.add_sphere(ball, r, response=response)
        ccd.step()  # first pass: sweeps nothing
        P0 = np.array(ball.getPos(render))  # noqa: N806
        scale = max(1.0, np.abs(P0).max())
        assume(unit @ P0 + d > r + 1e-6 * scale)  # starts clear of it
        ball.setPos(*(c0 + along - unit * height / t_hit))
        P1 = np.array(ball.getPos(render))  # noqa: N806
        scale = max(scale, np.abs(P1).max())
        tol = 1e-6 * scale
        contacts = ccd.step()
        d0, d1 = unit @ P0 + d - r, unit @ P1 + d - r
        end = np.array(ball.getPos(render))
        if not contacts:
            assert d1 >= -tol, "missed"
            assert np.array_equal(end, P1)
            return
        (hit,) = contacts
        assert d1 <= tol
        # Panda3D normalises the world plane in float32: compare in distance, not time.
        assert hit.t == pytest.approx(d0 / (d0 - d1), abs=tol / (d0 - d1))
        at = P0 + hit.t * (P1 - P0)
        assert unit @ at + d == pytest.approx(r, abs=tol)
        assert tuple(hit.from_pos) == pytest.approx(tuple(at), abs=tol)
        assert tuple(hit.normal) == pytest.approx(tuple(unit), abs=1e-6)
        if response == "sensor":
            assert np.array_equal(end, P1)
        else:
            assert unit @ end + d >= r - tol
            if response == "rewind":
                assert tuple(end) == pytest.approx(tuple(at), abs=tol)
            else:  # the tangential rest of the motion is kept
                rest = (P1 - at) - ((P1 - at) @ unit) * unit
                assert tuple(end) == pytest.approx(tuple(at + rest), abs=tol)
    finally:
        ccd.destroy()
        root.removeNode()


# ---------------------------------------------------------------------------- Panda3D oracle
def _traverse(render, mover):
    trav = CollisionTraverser()
    trav.setRespectPrevTransform(True)
    queue = CollisionHandlerQueue()
    trav.addCollider(mover, queue)
    trav.traverse(render)
    return [queue.getEntry(k) for k in range(queue.getNumEntries())]


@pytest.mark.parametrize("through", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_sphere_into_static_sphere_agrees_with_panda3d_traverser(base, make_ccd, seed, through):
    """Panda3D's CollisionTraverser with respect-prev-transform sweeps a from-sphere into a
    still sphere exactly when the sphere ends the frame clear of it (it went through): there
    the time, contact position, surface point and normal must agree. When the sphere ends
    inside, Panda3D falls back to a discrete test (t = 0 at the end position); then only
    "there is a collision" is comparable."""
    render = base.render
    rng = np.random.default_rng(100 + seed)
    ccd = make_ccd(respect_prev_transform=True)
    post = render.attachNewNode(CollisionNode("post"))
    rb = float(rng.uniform(0.5, 2.0))
    post.node().addSolid(CollisionSphere(0, 0, 0, rb))
    post.setPos(*rng.uniform(-3, 3, 3))
    ccd.add_collision_node(post)
    mover = render.attachNewNode(CollisionNode("mover"))
    ra = float(rng.uniform(0.3, 1.5))
    mover.node().addSolid(CollisionSphere(0, 0, 0, ra))
    mover.node().setIntoCollideMask(0)
    big_r = ra + rb
    direction = random_directions(rng, 1)[0]
    side = np.cross(direction, random_directions(rng, 1)[0])
    side /= np.linalg.norm(side)
    off = rng.uniform(0, 0.9) * big_r
    centre = np.array(post.getPos(render))
    start = centre + side * off - direction * (big_r + 0.5)
    chord = 2 * np.sqrt(big_r**2 - off**2)
    entry = big_r + 0.5 - chord / 2
    length = entry + chord + 0.5 if through else entry + 0.3 * chord
    mover.setPos(*start)
    ccd.add_collision_node(mover)
    ccd.step()  # first pass: sweeps nothing
    PandaNode.resetAllPrevTransform()
    mover.setFluidPos(*(start + direction * length))
    (entry_,) = _traverse(render, mover)
    (c,) = [x for x in ccd.step() if x.from_np == mover]
    assert c.into_np == post == entry_.getIntoNodePath()
    assert c.getT() == pytest.approx(entry / length, abs=1e-6)
    if through:
        assert c.getT() == pytest.approx(entry_.getT(), abs=1e-5)
        for getter in ("getContactPos", "getSurfacePoint", "getSurfaceNormal"):
            ours = tuple(getattr(c, getter)(render))
            theirs = tuple(getattr(entry_, getter)(render))
            assert ours == pytest.approx(theirs, abs=1e-5), getter
        assert tuple(mover.getPos(render)) == pytest.approx(
            tuple(entry_.getContactPos(render)), abs=1e-5
        )
    else:
        assert entry_.getT() == 0.0  # Panda3D's discrete fallback


# ---------------------------------------------------------------------------- no sticking
TILTED = [
    ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0)),
    ((0.3, 0.1, 1.0), (0.0, 0.0, 0.0)),
    ((0.3, 0.1, 1.0), (30.0, -20.0, 5.0)),
    ((-1.0, 2.0, 0.5), (1e3, 2e2, -5e2)),
]


@pytest.mark.parametrize(("normal", "origin"), TILTED[1:])
def test_resting_on_a_tilted_floor_slides_freely(base, ccd, recorder, normal, origin):
    _slide_along_floor(base, ccd, recorder, normal, origin)


def test_resting_on_a_level_floor_slides_freely(base, ccd, recorder):
    _slide_along_floor(base, ccd, recorder, *TILTED[0])


def _slide_along_floor(base, ccd, recorder, normal, origin):
    render = base.render
    n = np.array(normal) / np.linalg.norm(normal)
    o = np.array(origin)
    floor = render.attachNewNode("floor")
    ccd.add_plane(floor, LPlane(LVector3(*n), LPoint3(*o)))
    tangent = np.cross(n, [0.0, 1.0, 0.0] if abs(n[1]) < 0.9 else [1.0, 0.0, 0.0])
    tangent /= np.linalg.norm(tangent)
    rest = o + n * 1.0
    ball = render.attachNewNode("ball")
    ball.setPos(*(rest + 3 * n))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(*(rest - n))
    ccd.step()
    assert recorder.names() == ["ball-into-floor"]
    recorder.clear()
    scale = max(1.0, np.abs(o).max())
    for k in range(1, 60):
        target = rest + tangent * 0.37 * k
        ball.setPos(*target)
        ccd.step()
        assert tuple(ball.getPos(render)) == pytest.approx(tuple(target), abs=REL * scale), k
    assert recorder.names() == ["ball-out-floor"]
