"""The idioms games use, each found by trying the plugin as a new user would (issue 13).

* A handler deletes the bullet with ``entry.getFromNodePath().removeNode()`` while that
  bullet has more events in the same pass.
* An ``in`` handler removes a sensor the other body passes right through within the frame:
  its ``out`` is still owed.
* Spawning: a node registered before it is attached, a node detached into a pool and
  attached again later, a node placed after registration.
* Flags are checked as strictly as every other argument.
* Two points (radius 0) that meet exactly.

Expected values are exact: positions read back from the float32 nodes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from event_checks import balanced
from panda3d.core import CollisionNode, CollisionSphere, LPlane, LPoint3, LVector3, NodePath

from panda3d_ccd import ContinuousCollision, sphere_sphere_toi

UP = LPlane(LVector3(0, 0, 1), LPoint3(0, 0, 0))
#: Solid beyond x = 10.
WALL = LPlane(LVector3(-1, 0, 0), LPoint3(10, 0, 0))


def node(parent, name, pos=(0, 0, 0)):
    np_ = parent.attachNewNode(name)
    np_.setPos(*pos)
    return np_


@pytest.fixture
def warnings_seen(monkeypatch):
    from panda3d_ccd import component

    seen: list[str] = []
    monkeypatch.setattr(component.notify, "warning", seen.append)
    return seen


def _remove_from_np(contact):
    contact.getFromNodePath().removeNode()


# ============================================================ 1. removeNode() in a handler
def test_remove_node_in_a_handler_with_a_second_in_pattern(
    base, ccd, recorder, listener, warnings_seen
):
    """Two in patterns: the second is thrown for the same event after the first one's
    handler has removed the bullet."""
    render = base.render
    target = node(render, "target")
    ccd.add_sphere(target, 1.0, static=True, from_mask=0)
    bullet = node(render, "bullet", (-10, 0, 0))
    ccd.add_sphere(bullet, 0.5)
    ccd.add_in_pattern("%fn-hit-%in")
    ccd.step()
    listener.accept("bullet-into-target", _remove_from_np)
    bullet.setPos(10, 0, 0)
    ccd.step()
    # Out of the scene by a handler: its pair closes in the pass (as with a later event).
    assert recorder.names() == ["bullet-into-target", "bullet-hit-target", "bullet-out-target"]
    assert bullet.isEmpty()  # the game's own NodePath, handed back in the contact
    colliders = ccd.colliders
    ccd.step()  # dropped at the next pass, as after any removeNode()
    assert recorder.names()[3:] == []
    assert ccd.colliders == colliders - 1 and warnings_seen == []
    recorder.clear()
    ccd.destroy()
    assert recorder.names() == []


def test_remove_node_in_a_handler_with_a_second_hit_in_the_pass(
    base, ccd, recorder, listener, warnings_seen
):
    """A tracer passes through two targets in one frame; the first hit deletes it: the
    second is not sent, and every in sent gets its out."""
    render = base.render
    for name, x in (("near", 0.0), ("far", 5.0)):
        ccd.add_sphere(node(render, name, (x, 0, 0)), 1.0, static=True, from_mask=0)
    bullet = node(render, "bullet", (-10, 0, 0))
    ccd.add_sphere(bullet, 0.1, response="sensor")
    other = node(render, "other", (-10, 0, 5))  # a second shot, untouched by the handler
    ccd.add_sphere(other, 0.1, response="sensor")
    ccd.step()
    listener.accept("bullet-into-near", _remove_from_np)
    bullet.setPos(20, 0, 0)
    other.setPos(20, 0, 5)
    ccd.step()
    assert recorder.names() == ["bullet-into-near", "bullet-out-near"]
    ccd.step()
    assert ccd.colliders == 3 and warnings_seen == []
    other.setPos(0, 0, 0)  # the other shot still collides
    ccd.step()
    assert recorder.names()[2:] == ["other-into-near"]
    ccd.destroy()
    assert balanced(recorder.names()) == []


def test_a_contact_hands_out_the_game_nodepath_and_a_live_one_once_it_is_emptied(
    base, ccd, listener
):
    render = base.render
    ccd.add_plane(node(render, "floor"), UP)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()
    seen = []

    def handler(contact):
        seen.append(contact.getFromNodePath() is ball)
        contact.getFromNodePath().removeNode()
        # As CollisionEntry's: still the node, now out of the scene.
        after = contact.getFromNodePath()
        seen.append((after.isEmpty(), after.getName(), after.getParent().isEmpty()))

    listener.accept("ball-into-floor", handler)
    ball.setZ(-5)
    ccd.step()
    assert seen == [True, (False, "ball", True)]


# ============================================================ 2. every in gets its out
def test_an_in_handler_that_removes_the_sensor_still_gets_its_out(base, ccd, recorder, listener):
    render = base.render
    pickup = node(render, "pickup")
    ccd.add_sphere(pickup, 1.0, response="sensor", from_mask=0)
    player = node(render, "player", (-5, 0, 0))
    ccd.add_sphere(player, 0.5)
    ccd.step()
    listener.accept("player-into-pickup", lambda c: ccd.remove(c.getIntoNodePath()))
    player.setPos(5, 0, 0)  # right through it within one frame
    ccd.step()
    assert recorder.names() == ["player-into-pickup", "player-out-pickup"]
    assert ccd.colliders == 1
    ccd.step()
    ccd.destroy()
    assert recorder.names() == ["player-into-pickup", "player-out-pickup"]


# ============================================================ 3. out of the scene
def test_a_node_registered_before_it_is_attached_collides_once_attached(
    base, ccd, recorder, warnings_seen
):
    render = base.render
    ccd.add_plane(node(render, "floor"), UP)
    spawn = NodePath("spawn")  # built, registered, attached later
    spawn.setPos(0, 0, -50)  # below the floor while out of the scene: no contact
    ccd.add_sphere(spawn, 1.0)
    ccd.step()
    assert recorder.names() == [] and ccd.colliders == 2
    spawn.reparentTo(render)
    spawn.setPos(0, 0, 5)  # attached: starts here, not swept from z = -50
    ccd.step()
    assert recorder.names() == []
    spawn.setZ(-5)
    ccd.step()
    assert recorder.names() == ["spawn-into-floor"]
    assert tuple(spawn.getPos(render)) == (0, 0, 1)
    assert warnings_seen == []


def test_a_pooled_node_is_inactive_while_detached_and_resumes_where_it_is_attached(
    base, ccd, recorder, warnings_seen
):
    render = base.render
    wall = node(render, "wall")
    ccd.add_plane(wall, WALL)
    zone = node(render, "zone", (0, 10, 0))
    ccd.add_sphere(zone, 2.0, response="sensor", from_mask=0)
    ball = node(render, "ball", (0, 5, 0))
    ccd.add_sphere(ball, 0.5)
    ccd.step()
    ball.setY(10)
    ccd.step()  # inside the zone: the pair is open
    assert recorder.names() == ["ball-into-zone"]

    ball.detachNode()  # into the pool
    ccd.step()
    assert recorder.names() == ["ball-into-zone", "ball-out-zone"]
    assert ccd.contacts == [] and ccd.colliders == 3
    # Moved through the wall while pooled, and a bullet through where it sits: nothing.
    ball.setPos(20, 0, 0)
    bullet = node(render, "bullet", (-30, 0, 0))
    ccd.add_sphere(bullet, 0.1, into_mask=0)
    ccd.step()
    bullet.setPos(5, 0, 0)
    ccd.step()
    assert recorder.names()[2:] == []

    ball.reparentTo(render)  # out of the pool beyond the wall: no sweep from (20, 0, 0)
    ball.setPos(5, 0, 0)
    ccd.step()
    assert recorder.names()[2:] == [] and tuple(ball.getPos(render)) == (5, 0, 0)
    ball.setX(20)  # and it collides again
    ccd.step()
    assert recorder.names()[2:] == ["ball-into-wall"]
    assert tuple(ball.getPos(render)) == (9.5, 0, 0)
    assert warnings_seen == []
    ccd.destroy()
    assert balanced(recorder.names()) == []


def test_a_node_under_a_detached_parent_is_inactive_not_dropped(base, ccd, recorder):
    render = base.render
    ccd.add_plane(node(render, "floor"), UP)
    holder = node(render, "holder")
    ball = node(holder, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()
    holder.detachNode()
    ball.setZ(-5)
    ccd.step()
    assert recorder.names() == [] and ccd.colliders == 2
    holder.reparentTo(render)
    ball.setZ(5)
    ccd.step()
    ball.setZ(-5)
    ccd.step()
    assert recorder.names() == ["ball-into-floor"]


def test_only_remove_node_drops_a_node(base, ccd, recorder, warnings_seen):
    render = base.render
    ccd.add_plane(node(render, "floor"), UP)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ball.setZ(0.5)
    ccd.step()
    ball.setZ(-5)
    ccd.step()
    assert recorder.names() == ["ball-into-floor"]
    ball.detachNode()
    ccd.step()
    assert ccd.colliders == 2 and recorder.names() == ["ball-into-floor", "ball-out-floor"]
    ball.removeNode()
    ccd.step()
    assert ccd.colliders == 1 and warnings_seen == []


def test_a_handler_that_detaches_a_node_closes_its_pairs_in_the_pass(base, ccd, recorder, listener):
    """Pooled by a handler: its other event of the pass is not sent, its open pairs close
    at the end of the pass, and it resumes where it is attached next."""
    render = base.render
    ccd.add_plane(node(render, "floor"), UP)
    zone = node(render, "zone", (0, 0, 2))
    ccd.add_sphere(zone, 1.0, response="sensor", from_mask=0)
    ball = node(render, "ball", (0, 0, 8))
    ccd.add_sphere(ball, 0.5)
    ccd.step()
    listener.accept("ball-into-zone", lambda c: c.getFromNodePath().detachNode())
    ball.setZ(-5)  # through the zone (in), then onto the floor (not sent)
    ccd.step()
    assert recorder.names() == ["ball-into-zone", "ball-out-zone"]
    assert tuple(ball.getPos()) == (0, 0, 0.5)  # stopped on the floor before the handler
    ball.reparentTo(render)
    ball.setPos(30, 0, -20)  # attached below the floor: not swept from (0, 0, 0.5)
    ccd.step()
    assert recorder.names()[2:] == []


def test_a_node_detached_by_the_handler_of_its_last_event_resumes_where_it_is_attached(
    base, ccd, recorder, listener
):
    """Masks that meet one way only: the bullet's in is its one event of the pass, and its
    handler pools it. Its pair closes in that pass, and attached again at a muzzle with a
    crate ahead before the next pass, it is not swept from the wall to the muzzle."""
    render = base.render
    statics = {"from_mask": 0, "into_mask": 1 << 0}
    ccd.add_sphere(node(render, "wall", (20, 0, 0)), 1.0, static=True, **statics)
    ccd.add_sphere(node(render, "crate", (10, 0, 0)), 1.0, static=True, **statics)
    bullet = NodePath("bullet")  # pooled: registered while detached
    ccd.add_sphere(bullet, 0.1, from_mask=1 << 0, into_mask=1 << 3)
    listener.accept("bullet-into-wall", lambda c: c.getFromNodePath().detachNode())
    ccd.step()
    bullet.reparentTo(render)
    bullet.setPos(15, 0, 0)  # past the crate
    ccd.step()
    bullet.setPos(30, 0, 0)  # into the wall: pooled by the handler
    ccd.step()
    assert recorder.names() == ["bullet-into-wall", "bullet-out-wall"]
    bullet.reparentTo(render)
    bullet.setPos(5, 0, 0)  # the muzzle, the crate ahead
    ccd.step()
    assert recorder.names()[2:] == [] and tuple(bullet.getPos(render)) == (5, 0, 0)


# A child of render is read by its own transform (the same as relative to render, without
# the walk up the graph); everything else through render, every pass.
def test_a_body_moved_under_another_parent_is_read_relative_to_render(base, ccd, recorder):
    """A child of render reparented (wrtReparentTo) under a moved, turned holder: its own
    transform is then relative to the holder, and its world path is what is swept."""
    render = base.render
    ccd.add_plane(node(render, "wall"), WALL)
    ball = node(render, "ball", (2, 0, 0))
    ccd.add_sphere(ball, 1.0)
    other = node(render, "other", (0, 40, 0))  # a child of render all along
    ccd.add_sphere(other, 1.0)
    ccd.step()
    holder = node(render, "holder", (0, 0, 0))
    holder.setH(90)
    ball.wrtReparentTo(holder)  # world (2, 0, 0); local (0, -2, 0)
    ccd.step()
    assert recorder.names() == [] and tuple(ball.getPos(render)) == pytest.approx((2, 0, 0))
    holder.setFluidPos(10, 0, 0)  # the ball to world (12, 0, 0): into the wall at x = 9
    other.setFluidPos(12, 40, 0)  # and the other from x = 0: at 9 as well
    contacts = ccd.step()
    assert sorted(recorder.names()) == ["ball-into-wall", "other-into-wall"]
    by_name = {c.from_np.getName(): c.t for c in contacts}
    assert by_name == {"ball": pytest.approx(0.7, abs=1e-6), "other": pytest.approx(0.75)}
    assert tuple(ball.getPos(render)) == pytest.approx((9, 0, 0), abs=1e-5)
    assert tuple(other.getPos(render)) == pytest.approx((9, 40, 0), abs=1e-5)


def test_children_of_render_and_of_a_group_are_each_read_where_they_are(base, ccd, recorder):
    """Spheres read by their own transform and through render in the same pass, in
    registration order mixed, each swept on its own path."""
    render = base.render
    ccd.add_plane(node(render, "wall"), WALL)
    group = node(render, "group", (0, 0, 10))
    group.setH(180)  # local +x is world -x
    balls = []
    for i in range(6):
        parent = group if i % 2 else render
        start = -i if i % 2 else i  # world x = i, in every case
        ball = node(parent, f"ball{i}", (start, 3 * i, 0))
        ccd.add_sphere(ball, 1.0)
        balls.append(ball)
    ccd.step()
    for i, ball in enumerate(balls):
        ball.setFluidPos(ball, (-(10 + i) if i % 2 else 10 + i, 0, 0))  # world x + 10 + i
    contacts = ccd.step()
    # From world x = i, 10 + i on: touching the wall at x = 9 at t = (9 - i) / (10 + i).
    by_name = {c.from_np.getName(): c.t for c in contacts}
    assert by_name == {f"ball{i}": pytest.approx((9 - i) / (10 + i)) for i in range(6)}
    for ball in balls:
        assert ball.getX(render) == pytest.approx(9, abs=1e-5)


def test_a_body_with_a_compass_effect_is_read_where_panda3d_puts_it(base, ccd, recorder):
    """A compass effect places a child of render by another node: its own transform is
    not its place, and the plugin reads it relative to render."""
    from panda3d.core import CompassEffect

    render = base.render
    ccd.add_plane(node(render, "wall"), WALL)
    ref = node(render, "ref", (5, 0, 0))
    probe = node(render, "probe")
    probe.setEffect(CompassEffect.make(ref, CompassEffect.P_pos))  # at the ref's (5, 0, 0)
    ccd.add_sphere(probe, 1.0, response="sensor")
    ccd.step()
    probe.setFluidPos(5, 0, 0)  # world x 5 -> 10: touching the wall's x = 10 from x = 9
    (c,) = ccd.step()
    assert recorder.names() == ["probe-into-wall"] and c.t == pytest.approx(0.8)


# ============================================================ 4. placed after registration
def test_a_spawn_placed_after_registration_is_not_swept(base, ccd, recorder):
    render = base.render
    ccd.add_plane(node(render, "wall"), WALL)
    spawn = node(render, "spawn")
    ccd.add_sphere(spawn, 1.0)
    spawn.setPos(20, 0, 0)  # placed beyond the wall before its first pass
    ccd.step()
    assert recorder.names() == [] and tuple(spawn.getPos()) == (20, 0, 0)


@pytest.mark.parametrize("moved", ["itself", "its parent"])
def test_a_spawn_under_a_turned_parent_is_swept_from_where_it_was_placed(
    base, ccd, recorder, moved
):
    """The first pass sweeps from the previous positions only: the parent's setH (which
    leaves Panda3D's previous transform unturned) is not motion; a setFluidPos, of the
    node or of its parent, is, in the parent's turned frame."""
    render = base.render
    target = node(render, "target", (0, 10, 0))
    ccd.add_sphere(target, 1.0, static=True)
    holder = node(render, "holder")
    holder.setH(90)  # local +x is world +y
    shot = node(holder, "shot", (2, 0, 0))  # world (0, 2, 0)
    ccd.add_sphere(shot, 0.5)
    if moved == "itself":
        shot.setFluidPos(22, 0, 0)  # world (0, 22, 0)
    else:
        holder.setFluidPos(0, 20, 0)  # the shot to world (0, 22, 0)
    contacts = ccd.step()
    assert sorted(recorder.names()) == ["shot-into-target", "target-into-shot"]
    # From world (0, 2, 0) along +y: touching the target at y = 8.5.
    assert [c.t for c in contacts] == pytest.approx([6.5 / 20] * 2, abs=1e-7)
    assert tuple(shot.getPos(render)) == pytest.approx((0, 8.5, 0), abs=1e-5)


def test_a_first_pass_is_relative_to_a_render_that_is_not_the_top(make_ccd, base, recorder):
    """With ``render=world`` under another node, a body beside world (the same top, so in
    the scene) whose common ancestor with world moves: it moves with world, not relative
    to it (their common ancestor's move cancels), and is not swept on its first pass."""
    scene = node(base.render, "scene", (3, 0, 0))
    world = node(scene, "world")
    ccd = make_ccd(render=world)
    post = node(world, "post", (-3, 0, 0))
    ccd.add_sphere(post, 1.0, static=True)
    ball = node(scene, "ball", (2, 0, 0))
    ccd.add_sphere(ball, 0.5)
    scene.setFluidPos(10, 0, 0)  # the ball and world move together
    assert ccd.step() == [] and recorder.names() == []
    assert tuple(ball.getPos(world)) == (2, 0, 0)


def test_a_collider_moved_on_its_target_before_its_first_pass_is_swept(base, ccd, recorder):
    render = base.render
    wall = node(render, "wall", (0, 0, 20))
    ccd.add_sphere(wall, 1.0, static=True)
    mover = node(render, "mover")
    mount = node(mover, "mount")
    shot = mount.attachNewNode(CollisionNode("shot"))
    shot.node().addSolid(CollisionSphere(0, 0, 0, 0.5))
    ccd.add_collision_node(shot, target=mover)
    mount.setFluidPos(0, 0, 40)  # on its target, from z 0 to 40 through the wall
    (c, _) = sorted(ccd.step(), key=lambda c: c.from_np.getName())
    assert c.from_np == shot and c.t == pytest.approx(18.5 / 40, abs=1e-12)
    assert tuple(shot.getPos(render)) == pytest.approx((0, 0, 18.5), abs=1e-5)


def test_a_spawn_turned_after_it_was_placed_is_not_swept_around_its_node(base, ccd, recorder):
    """setH leaves Panda3D's previous transform unturned: a sphere off its node's centre
    must not be swept from where the unturned node held it."""
    render = base.render
    target = node(render, "target", (1.2, 1.2, 0))
    ccd.add_sphere(target, 0.3, static=True)
    spawn = render.attachNewNode(CollisionNode("spawn"))
    spawn.node().addSolid(CollisionSphere(2, 0, 0, 0.5))
    ccd.add_collision_node(spawn)
    spawn.setH(90)  # the sphere from world (2, 0, 0) to (0, 2, 0), past the target
    ccd.step()
    assert recorder.names() == [] and spawn.getH() == 90 and tuple(spawn.getPos()) == (0, 0, 0)


def test_a_spawn_under_a_group_node_is_swept_from_its_exact_previous_position(
    base, ccd, recorder
):
    """Under a parent neither turned nor scaled (a game's "level" or "bullets" node), the
    first pass starts at the node's previous position exactly (its float32 value), as for
    a child of render: the analytic time to the bit's rounding."""
    render = base.render
    target = node(render, "target", (5, 0, 0))
    ccd.add_sphere(target, 1.0, static=True)
    group = node(render, "bullets", (0, 0.25, 0))
    shot = node(group, "shot", (0.1, 0, 0))
    ccd.add_sphere(shot, 0.1)
    shot.setFluidPos(50.3, 0, 0)
    x0, x1 = (float(np.float32(x)) for x in (0.1, 50.3))
    # The centres touch 1.1 apart: at x = 5 - sqrt(1.1^2 - 0.25^2).
    touch = 5 - np.sqrt(1.1**2 - 0.25**2)
    (c, _) = sorted(ccd.step(), key=lambda c: c.from_np.getName())
    assert c.from_np == shot and c.t == pytest.approx((touch - x0) / (x1 - x0), abs=1e-12)


def test_a_static_target_placed_after_registration_is_where_it_was_placed(base, ccd, recorder):
    render = base.render
    target = node(render, "target")
    ccd.add_sphere(target, 1.0, static=True)
    target.setPos(50, 0, 0)
    bullet = node(render, "bullet", (40, 0, 0))
    ccd.add_sphere(bullet, 0.5)
    ccd.step()
    bullet.setPos(60, 0, 0)
    contacts = ccd.step()
    assert sorted(c.getIntoNodePath().getName() for c in contacts) == ["bullet", "target"]
    assert [c.t for c in contacts] == pytest.approx([8.5 / 20] * 2, abs=1e-12)


def test_a_plane_moved_after_registration_is_not_swept(base, ccd, recorder):
    render = base.render
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    floor = node(render, "floor", (0, 0, -100))
    ccd.add_plane(floor, UP)
    floor.setZ(4.5)  # placed 0.5 deep in the ball: not a rise into it
    ccd.step()
    assert recorder.names() == [] and tuple(ball.getPos()) == (0, 0, 5)


# ============================================================ 8. strict flags
@pytest.mark.parametrize("value", ["yes", 1, 0, None, 1.0, np.int64(1)])
def test_static_must_be_a_bool(base, ccd, value):
    ball = node(base.render, "ball")
    message = f"static must be True or False, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ccd.add_sphere(ball, 1.0, static=value)
    assert ccd.colliders == 0
    ccd.add_sphere(ball, 1.0, static=np.bool_(True))
    assert ccd.colliders == 1


@pytest.mark.parametrize("value", ["no", 1, 0.0])
def test_respect_prev_transform_must_be_a_bool(base, value):
    message = f"respect_prev_transform must be True or False, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ContinuousCollision(base, respect_prev_transform=value)
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []


# ============================================================ 5. growing scale
@pytest.mark.parametrize("respect_prev", [False, True])
@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_a_ball_growing_into_the_floor_is_a_contact_and_ends_touching(
    base, make_ccd, recorder, response, respect_prev
):
    """Scale 1 to 3 in one frame, resting 0.5 above the floor and moving along it: the
    growth reaches the floor at t = 0.25. A rewind is stopped there, scale and all; a slide
    rises as it grows and keeps its motion along the floor."""
    ccd = make_ccd(respect_prev_transform=respect_prev)
    render = base.render
    floor = node(render, "floor")
    ccd.add_plane(floor, LPlane(LVector3(0, 0, 1), LPoint3(0, 0, 0)))
    ball = node(render, "ball", (0, 0, 1.5))
    ccd.add_sphere(ball, 1.0, response=response)
    base.taskMgr.step()

    def grow(task):  # in a task, as a game moves nodes (see the README on sort -51)
        ball.setScale(3)
        ball.setFluidX(4)  # Panda3D's previous transform keeps the start (and its scale)
        return task.done

    base.taskMgr.add(grow, "grow", sort=0)
    base.taskMgr.step()
    assert recorder.names() == ["ball-into-floor"]
    assert [c.t for c in ccd.contacts] == [0.25]
    scale = ball.getScale()
    assert scale[0] == scale[1] == scale[2]
    if response == "rewind":
        assert tuple(ball.getPos()) == (1.0, 0.0, 1.5) and scale[0] == 1.5
    else:
        assert tuple(ball.getPos()) == (4.0, 0.0, 3.0) and scale[0] == 3.0
    assert ball.getZ() - scale[0] == 0.0  # touching the floor, not in it


def test_two_balls_growing_into_each_other_both_stop_touching(base, ccd, recorder):
    render = base.render
    a, b = node(render, "a"), node(render, "b", (5, 0, 0))
    ccd.add_sphere(a, 1.0)
    ccd.add_sphere(b, 1.0)
    base.taskMgr.step()
    a.setScale(2)
    b.setScale(4)
    base.taskMgr.step()
    assert sorted(recorder.names()) == ["a-into-b", "b-into-a"]
    assert [c.t for c in ccd.contacts] == [0.75, 0.75]
    assert (a.getScale()[0], b.getScale()[0]) == (1.75, 3.25)
    assert (b.getPos() - a.getPos()).length() == pytest.approx(1.75 + 3.25, abs=1e-6)


def test_a_growing_sensor_sweeps_its_radius_too(base, ccd, recorder):
    """An explosion: a sensor whose scale goes from 0.01 to 10 in one frame reaches a ball
    8 away, and only that one."""
    render = base.render
    blast = node(render, "blast")
    blast.setScale(0.01)
    ccd.add_sphere(blast, 1.0, response="sensor")
    near, far = node(render, "near", (8, 0, 0)), node(render, "far", (0, 12, 0))
    ccd.add_sphere(near, 1.0, static=True)
    ccd.add_sphere(far, 1.0, static=True)
    base.taskMgr.step()
    blast.setScale(10)
    base.taskMgr.step()
    assert sorted(recorder.names()) == ["blast-into-near", "near-into-blast"]
    assert ccd.contacts[0].t == pytest.approx((7 - 0.01) / (10 - 0.01))
    assert blast.getScale()[0] == 10  # a sensor is never stopped


# ============================================================ 7. points
def test_the_kernel_says_two_points_meet():
    t = sphere_sphere_toi([[-1, 0, 0]], [[1, 0, 0]], 0.0, [[0, -1, 0]], [[0, 1, 0]], 0.0)
    assert t.tolist() == pytest.approx([0.5], abs=1e-12)


@pytest.mark.parametrize("response", ["rewind", "sensor"])
def test_two_points_that_meet_exactly_are_reported(base, ccd, recorder, response):
    render = base.render
    a = node(render, "a", (-1, 0, 0))
    b = node(render, "b", (0, -1, 0))
    ccd.add_sphere(a, 0.0, response=response)
    ccd.add_sphere(b, 0.0, response=response)
    ccd.step()
    a.setPos(1, 0, 0)
    b.setPos(0, 1, 0)
    contacts = ccd.step()
    assert [c.t for c in contacts] == pytest.approx([0.5, 0.5], abs=1e-12)
    # Sensors touch for an instant, so each pair also ends within the frame.
    passed = ["a-out-b", "b-out-a"] if response == "sensor" else []
    assert sorted(recorder.names()) == sorted(["a-into-b", "b-into-a", *passed])


def test_a_projectile_registered_and_moved_in_the_same_frame_is_swept(base, ccd, recorder):
    """Spawned at the muzzle (setPos) and moved with setFluidPos before its first pass, as
    a game's update task does: swept from the muzzle, so the target right in front of it
    is hit (the first pass starts at Panda3D's previous transform)."""
    render = base.render
    target = node(render, "target", (5, 0, 0))
    ccd.add_sphere(target, 1.0, static=True)
    ccd.step()
    shot = node(render, "shot", (0, 0, 0))  # at the muzzle
    ccd.add_sphere(shot, 0.1)
    shot.setFluidPos(50, 0, 0)  # its first frame of flight
    contacts = ccd.step()
    assert sorted(recorder.names()) == ["shot-into-target", "target-into-shot"]
    assert [c.t for c in contacts] == pytest.approx([3.9 / 50] * 2, abs=1e-12)
    assert tuple(shot.getPos()) == pytest.approx((3.9, 0, 0), abs=1e-6)


def test_a_projectile_spawned_in_a_task_is_swept_on_its_first_frame(base, ccd, recorder):
    """The same through ShowBase's frame: spawned and moved in a task at sort 10."""
    render = base.render
    target = node(render, "target", (5, 0, 0))
    ccd.add_sphere(target, 1.0, static=True)
    shots = []

    def fire(task):
        shot = node(render, "shot")
        ccd.add_sphere(shot, 0.1)
        shot.setFluidPos(50, 0, 0)
        shots.append(shot)
        return task.done

    base.taskMgr.step()
    base.taskMgr.add(fire, "fire", sort=10)
    base.taskMgr.step()
    assert sorted(recorder.names()) == ["shot-into-target", "target-into-shot"]
    assert tuple(shots[0].getPos()) == pytest.approx((3.9, 0, 0), abs=1e-6)


def test_a_teleport_in_a_handler_takes_the_next_frames_move_too(base, ccd, recorder, listener):
    """A drain's handler puts the ball back on the plunger and teleports it; the next
    frame's move, made before the next pass, is part of that jump (not swept: through the
    wall 10 ahead); with a pass run in between, the launch is swept and stops at the wall."""
    render = base.render
    ccd.add_plane(node(render, "wall"), WALL)
    ccd.add_sphere(node(render, "drain", (-20, 0, 0)), 1.0, static=True, response="sensor")
    ball = node(render, "ball", (-10, 0, 0))
    ccd.add_sphere(ball, 0.5)
    ccd.step()

    def drained(contact):
        ball.setPos(0, 0, 0)  # the plunger
        ccd.teleport(ball)

    listener.accept("ball-into-drain", drained)
    for launch_after_a_pass, end in ((False, 30.0), (True, 9.5)):
        ball.setFluidPos(-20, 0, 0)  # into the drain
        ccd.step()
        assert ball.getPos() == (0, 0, 0)
        if launch_after_a_pass:
            ccd.step()
        ball.setFluidPos(30, 0, 0)  # launched, through where the wall is
        ccd.step()
        assert ball.getX() == end
        ball.setPos(-10, 0, 0)
        ccd.teleport(ball)
        ccd.step()


# ======================================== a bullet that must not stop what it hits
def test_a_bullet_reports_a_kart_it_hits_through_a_carried_sensor_and_the_kart_drives_on(
    base, ccd, recorder
):
    """A Panda3D pusher moves only its from-object; here two solids that meet both stop.
    The README's recipe for a bullet that must not stop the kart it hits: its body's
    masks leave the karts out (walls still stop it), and a sensor carried on a child
    reports the kart; the game's removeNode() of the bullet takes both."""
    render = base.render
    kart = node(render, "kart")
    ccd.add_sphere(kart, 1.0, response="slide", from_mask=0b0001, into_mask=0b0010)
    wall = node(render, "wall")
    ccd.add_plane(wall, WALL, into_mask=0b0101)
    bullet = node(render, "bullet", (-6, 0, 0))
    ccd.add_sphere(bullet, 0.2, response="rewind", from_mask=0b0100, into_mask=0)
    hit = node(bullet, "hit")
    ccd.add_sphere(hit, 0.2, response="sensor", from_mask=0b0010, into_mask=0)
    ccd.step()
    kart.setFluidPos(1.5, 0, 0)  # the kart drives on, +x
    bullet.setFluidPos(9.0, 0, 0)  # the bullet overtakes it, through it, up to the wall
    ccd.step()
    assert tuple(kart.getPos()) == (1.5, 0, 0)  # not stopped by the bullet
    assert tuple(bullet.getPos()) == pytest.approx((9.0, 0, 0))  # short of the wall
    assert recorder.names() == ["hit-into-kart", "hit-out-kart"]  # the bullet's sensor only
    bullet.setFluidPos(12.0, 0, 0)  # into the wall: stopped touching it
    ccd.step()
    assert bullet.getX() == pytest.approx(9.8, abs=1e-5)
    colliders = ccd.colliders
    bullet.removeNode()
    ccd.step()
    assert ccd.colliders == colliders - 2
    assert balanced(recorder.names()) == []
