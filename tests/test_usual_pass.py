"""The usual pass takes shortcuts, and must answer exactly as the general code does.

A pass where no sphere is new, teleported or non-finite reads each node in the scene once
in one go and skips the general bookkeeping; walls that read the same bits keep their
arrays; contacts are built from body columns kept from pass to pass; nodes apart (one
sphere each, children of render) are written in any order. Three colliders that touch
nothing make every pass take the general code: a node of two spheres registered out of the
scene (it is inactive, and no longer is every node one sphere: the nodes in the scene are
read in one go, but not all of them), a static sphere that never collides (handed to the
solver, so the bodies are made again each pass) and a plane that never collides either, in
and out of the scene (its arrays are made again each pass, and every other pass it is
back in the scene: the general read).
The same game played with
and without them must move every node to the same float32 position and send the same
events with the same contacts, frame by frame.

The checks a pass makes on the solver's contacts before building them unchecked are pinned
here too: garbage handed over by the solver is still refused as ``Contact()`` refuses it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from panda3d.core import (
    CollisionBox,
    CollisionNode,
    CollisionSphere,
    LPlane,
    LPoint3,
    LVector3,
    NodePath,
    PandaNode,
    Point3,
)

from panda3d_ccd import ContinuousCollision, _solver

PATTERNS = ("%fn-into-%in", "%fn-again-%in", "%fn-out-%in")


class Messenger:
    """Records what the component sends, and runs the game's handler on it."""

    def __init__(self, handler):
        self.sent = []
        self.handler = handler

    def send(self, name, sentArgs=None, taskChain=None):  # noqa: N803 (Messenger's name)
        self.sent.append((name, sentArgs[0]))
        self.handler(name, sentArgs[0])


class NoTasks:
    def add(self, *args, **kwargs):
        return None

    def remove(self, task):
        pass


def contact_fields(contact):
    """Everything a handler can ask a contact, as plain values."""
    return (
        contact.getFromNodePath().getName(),
        contact.getIntoNodePath().getName(),
        contact.getT(),
        contact._time,
        contact._point,
        contact._normal,
        contact._approach_speed,
        contact._from_pos,
        contact._into_pos,
        contact.from_tangible,
        contact.into_tangible,
        str(contact.getIntoSolid()),
        contact._feature,
        contact._part,
    )


def play(respect, scaled, frames, *, forced):
    """A game of bodies of every kind bouncing in a box, one wall of it moving every third
    frame, with a node added and one removed on the way, and a body that grows into a wall
    (rewound in scale, never moved). With ``scaled`` some nodes are scaled and some have
    two spheres; otherwise every node is unscaled every fourth frame, when the one growing
    grows to scale 1. With ``forced``, the three colliders that force the general code.
    Returns, per frame, every node's position and scale, the events, the contacts, and what rays
    cast down onto every body hit."""
    rng = np.random.default_rng(5)
    render = NodePath("render")
    side = 7.0
    bodies, velocity, index = [], [], {}

    def bounce(name, contact):
        frm = contact.getFromNodePath()
        if "-out-" in name or frm.getName() not in index:
            return
        i = index[frm.getName()]
        normal = np.array(contact.getSurfaceNormal(render))
        closing = velocity[i] @ normal
        if closing < 0:
            velocity[i] -= 2 * closing * normal

    messenger = Messenger(bounce)
    ccd = ContinuousCollision(
        taskmgr=NoTasks(), render=render, messenger=messenger, respect_prev_transform=respect
    )
    for pattern, add in zip(
        PATTERNS, (ccd.add_in_pattern, ccd.add_again_pattern, ccd.add_out_pattern)
    ):
        add(pattern)
    walls = []
    for k, axis in enumerate(np.vstack([np.eye(3), -np.eye(3)])):
        walls.append(render.attachNewNode(f"wall{k}"))
        ccd.add_plane(walls[-1], LPlane(LVector3(*-axis), Point3(*(axis * side / 2))))

    def add_body(i):
        body = render.attachNewNode(f"b{i}")
        body.setPos(*rng.uniform(-side / 2 + 1, side / 2 - 1, 3))
        bodies.append(body)
        direction = rng.normal(size=3)
        velocity.append(direction * (1.5 if i % 5 == 0 else 0.25) / np.linalg.norm(direction))
        index[f"b{i}"] = i
        response = ("rewind", "slide", "sensor")[i % 3]
        if i % 4 == 1:
            # Off-centre spheres on a collision node, moved through a target.
            solids = CollisionNode(f"c{i}")
            solids.addSolid(CollisionSphere(0.2, 0, 0, 0.3))
            if scaled:
                solids.addSolid(CollisionSphere(-0.2, 0.1, 0, 0.25))
                body.setScale(1.2)
            ccd.add_collision_node(body.attachNewNode(solids), target=body, response=response)
            index[f"c{i}"] = i
        else:
            ccd.add_sphere(body, 0.35, center=(0.1 * (i % 2), 0, 0), response=response)

    for i in range(16):
        add_body(i)
    # Nested bodies, both run into a wall: the order of writes matters.
    bodies[6].setPos(2.3, -2, -2)
    bodies[7].setPos(1.2, -1, -2)
    bodies[7].wrtReparentTo(bodies[6])
    velocity[6], velocity[7] = np.array([0.6, 0, 0]), np.array([0.9, 0, 0])
    # A second node moving through the same target as b15's own sphere, both into a
    # wall: the larger sphere, further along, meets it first and is written first.
    solids = CollisionNode("d15")
    solids.addSolid(CollisionSphere(0, 1.0, 0, 0.5))
    ccd.add_collision_node(bodies[15].attachNewNode(solids), target=bodies[15])
    bodies[15].setPos(1.4, 0.5, 1.5)
    velocity[15] = np.array([0.6, 0, 0])
    # The body that grows into a wall.
    bodies[12].setPos(0, 0, side / 2 - (0.6 if scaled else 0.3))
    velocity[12] = np.zeros(3)
    box = render.attachNewNode(CollisionNode("box"))
    box.node().addSolid(CollisionBox(Point3(0, 0, 0), 0.5, 0.5, 0.5))
    ccd.add_collision_node(box)
    if forced:
        pooled = CollisionNode("pooled")
        pooled.addSolid(CollisionSphere(0, 0, 0, 1))
        pooled.addSolid(CollisionSphere(1, 0, 0, 1))
        ccd.add_collision_node(NodePath(pooled))
        far = render.attachNewNode("far")
        far.setPos(100, 100, 100)
        ccd.add_sphere(far, 1.0, static=True, from_mask=0, into_mask=0)
        # In and out of the scene in turn: the planes differ every other pass.
        away = render.attachNewNode("away")
        ccd.add_plane(away, LPlane(LVector3(-1, 0, 0), Point3(100, 0, 0)), into_mask=0)
    log = []
    for frame in range(frames):
        if frame % 3:  # as ShowBase does at the start of a frame; not every game does
            PandaNode.resetAllPrevTransform()
        for i, body in enumerate(bodies):
            if not body.isEmpty():
                body.setFluidPos(render, body.getPos(render) + LVector3(*velocity[i]))
        bodies[3].setH(bodies[3].getH() + 9)
        bodies[8].setScale(1.0 + 0.1 * (frame % 4))  # a radius that grows within frames
        bodies[12].setScale(1.0 + 0.1 * frame if scaled else 0.5 + 0.5 * (frame % 2 == 0))
        if frame % 3 == 0:  # still in between: its plane's arrays are used again
            walls[0].setFluidX(0.02 * (frame % 10))
        box.setFluidPos(math.sin(frame / 4), 0, 0)
        if frame == 20:
            add_body(16)
        if frame == 40:
            ccd.remove(bodies[10])
        if forced:
            away.reparentTo(render) if frame % 2 else away.detachNode()
        messenger.sent.clear()
        contacts = ccd.step()
        tops = np.array([b.getPos(render) if not b.isEmpty() else (0, 0, 0) for b in bodies])
        rays = ccd.ray_test_batch(tops + (0, 0, 2), tops)
        log.append((
            [tuple(b.getPos(render)) + tuple(b.getScale(render)) for b in bodies],
            [(name, contact_fields(c)) for name, c in messenger.sent],
            [contact_fields(c) for c in contacts],
            rays.t.tolist(),
            [rays.nodes[c].getName() if c >= 0 else None for c in rays.collider.tolist()],
        ))  # fmt: skip
    ccd.destroy()
    return log


def shortcuts(monkeypatch):
    """Counts, over the passes that follow, of those that took each usual-pass shortcut:
    the read of every node in one go, the last pass's planes, the last pass's bodies; and
    of those that read the nodes in the scene in one go (some are out), or took the
    general read."""
    taken = {"read": 0, "planes": 0, "bodies": 0, "in scene": 0, "general read": 0}

    def count(name, key, took):
        real = getattr(ContinuousCollision, name)

        def spy(self, *args):
            before = (self._plane_frame, self._bodies)
            result = real(self, *args)
            taken[key] += took(result, *before)
            return result

        monkeypatch.setattr(ContinuousCollision, name, spy)

    count("_read_usual", "read", lambda read, *_: read is not None and read.valid is None)
    count("_read_usual", "in scene", lambda read, *_: read is not None and read.valid is not None)
    count("_read_any", "general read", lambda *_: True)
    count("_read_planes", "planes", lambda result, planes, bodies: result is planes)
    count("_bodies_of", "bodies", lambda result, planes, bodies: result is bodies)
    return taken


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("respect", [False, True])
def test_the_usual_pass_answers_as_the_general_one(respect, scaled, monkeypatch):
    taken = shortcuts(monkeypatch)
    usual = play(respect, scaled, 60, forced=False)
    took = dict(taken)
    taken.update({key: 0 for key in taken})
    general = play(respect, scaled, 60, forced=True)
    # The usual game took each shortcut in many passes, the forced one never; the forced
    # one read the nodes in the scene in one go, or took the general read, in turn.
    usual_keys = ("read", "planes", "bodies")
    assert min(took[key] for key in usual_keys) >= 15, took
    assert not any(taken[key] for key in usual_keys), taken
    assert taken["in scene"] >= 15 and taken["general read"] >= 15, taken
    assert sum(len(frame[1]) for frame in usual) > 100  # the game has contacts
    for frame, (ours, theirs) in enumerate(zip(usual, general)):
        assert ours == theirs, f"frame {frame}"


# ------------------------------------------------------------------ the contact checks
def _spoil(field, value):
    """A solver that hands over its first contact with ``field`` of the hits set to
    ``value``."""
    real = _solver.solve

    def solve(*args, **kwargs):
        result = real(*args, **kwargs)
        hits = result.hits
        column = getattr(hits, field).copy()
        column[0] = value
        return result._replace(hits=hits._replace(**{field: column}))

    return solve


def _frame_with_one_hit(base, ccd, plane):
    render = base.render
    ball = render.attachNewNode("ball")
    ccd.add_sphere(ball, 0.5)
    if plane:
        ccd.add_plane(render.attachNewNode("floor"), LPlane(LVector3(0, 0, 1), LPoint3(0, 0, 0)))
        ball.setPos(0, 0, 2)
    else:
        ccd.add_sphere(render.attachNewNode("post"), 0.5)
        ball.setPos(-3, 0, 0)
    ccd.step()
    ball.setFluidPos(0, 0, -1) if plane else ball.setFluidPos(3, 0, 0)


@pytest.mark.parametrize(
    ("field", "value", "plane", "message"),
    [
        ("t", -0.25, False, r"^t must be a finite number in \[0, 1\], got -0\.25$"),
        ("t", 1.5, True, r"^t must be a finite number in \[0, 1\], got 1\.5$"),
        ("t", math.nan, False, r"^t must be a finite number in \[0, 1\], got nan$"),
        ("speed", -1.0, False, r"^approach_speed must be finite and >= 0, got -60\.0$"),
        ("speed", math.inf, True, r"^approach_speed must be finite and >= 0, got inf$"),
        ("point", math.nan, True, r"^point must be a sequence of 3 finite numbers"),
        ("normal", math.inf, False, r"^normal must be a sequence of 3 finite numbers"),
        ("pos_a", 1e39, True, r"^from_pos must be a sequence of 3 finite numbers"),
        ("pos_b", math.nan, False, r"^into_pos must be a sequence of 3 finite numbers"),
    ],
)
def test_garbage_from_the_solver_is_refused_as_contact_refuses_it(
    base, ccd, monkeypatch, field, value, plane, message
):
    _frame_with_one_hit(base, ccd, plane)
    monkeypatch.setattr(_solver, "solve", _spoil(field, value))
    with pytest.raises(ValueError, match=message):
        ccd.step()


def test_a_plane_contact_has_no_into_centre(base, ccd, monkeypatch):
    """The solver leaves a plane's centre nan: no reason to refuse the contact."""
    _frame_with_one_hit(base, ccd, plane=True)
    monkeypatch.setattr(_solver, "solve", _spoil("pos_b", math.nan))
    (contact,) = ccd.step()
    assert contact.getIntoNodePath().getName() == "floor"
    assert contact.getContactPos(base.render) == LPoint3(0, 0, 0.5)
    assert contact._into_pos is None
