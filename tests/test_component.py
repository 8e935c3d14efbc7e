"""The ContinuousCollision component as a Panda3D game uses it: the task, registration,
what is swept, the three responses, events and the contact object.

Exact analytic answers throughout. Node positions are float32 in the pip build of
Panda3D, so positions read back from nodes are compared to 1e-6 relative.
"""

from __future__ import annotations

import builtins
import math

import pytest
from direct.interval.LerpInterval import LerpPosInterval
from panda3d.core import (
    BitMask32,
    CollisionBox,
    CollisionCapsule,
    CollisionNode,
    CollisionParabola,
    CollisionPlane,
    CollisionSphere,
    LParabola,
    LPlane,
    LPoint3,
    LQuaternion,
    LVector3,
    NodePath,
    loadPrcFileData,
    unloadPrcFile,
)

from panda3d_ccd import ContinuousCollision
from panda3d_ccd._tolerance import TURN_TOLERANCE

EPS = 1e-6
UP = LPlane(LVector3(0, 0, 1), LPoint3(0, 0, 0))


# ---------------------------------------------------------------------------- helpers
def node(parent, name, pos=(0, 0, 0)):
    np_ = parent.attachNewNode(name)
    np_.setPos(*pos)
    return np_


def floor(ccd, parent, name="floor", z=0.0):
    np_ = node(parent, name, (0, 0, z))
    ccd.add_plane(np_, UP)
    return np_


def wall(ccd, parent, name, normal, point, **masks):
    np_ = node(parent, name)
    ccd.add_plane(np_, LPlane(LVector3(*normal), LPoint3(*point)), **masks)
    return np_


def met(contacts):
    """Sorted (from name, into name, t to 6 places) of contacts."""
    return sorted((c.from_np.getName(), c.into_np.getName(), round(c.t, 6)) for c in contacts)


def sphere_node(parent, name, radius, *, tangible=True):
    """A CollisionNode ``name`` below ``parent`` holding one sphere of ``radius`` at its
    origin (intangible: a sensor's)."""
    np_ = parent.attachNewNode(CollisionNode(name))
    np_.node().addSolid(CollisionSphere(0, 0, 0, radius))
    np_.node().modifySolid(0).setTangible(tangible)
    return np_


def pos(np_, render):
    return tuple(np_.getPos(render))


def assert_vec(actual, expected, tol=EPS):
    assert tuple(actual) == pytest.approx(tuple(expected), abs=tol)


def find_task(base, name="panda3d-ccd"):
    tasks = base.taskMgr.getTasksNamed(name)
    assert len(tasks) == 1, tasks
    return tasks[0]


# ---------------------------------------------------------------------------- the task
def test_default_task_sort_is_25_between_intervals_and_collision_loop(base):
    ccd = ContinuousCollision(base)
    try:
        assert find_task(base).getSort() == 25
        sorts = {
            name: find_task(base, name).getSort()
            for name in ("ivalLoop", "collisionLoop", "igLoop")
        }
        assert sorts["ivalLoop"] < 25 < sorts["collisionLoop"] < sorts["igLoop"]
    finally:
        ccd.destroy()
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []


def test_task_sort_argument(base):
    ccd = ContinuousCollision(base, task_sort=40)
    try:
        assert find_task(base).getSort() == 40
    finally:
        ccd.destroy()


def test_task_sort_prc_variable_and_argument_overrides_it(base):
    page = loadPrcFileData("ccd-test", "ccd-task-sort 33")
    try:
        ccd = ContinuousCollision(base)
        assert find_task(base).getSort() == 33
        ccd.destroy()
        ccd = ContinuousCollision(base, task_sort=21)
        assert find_task(base).getSort() == 21
        ccd.destroy()
    finally:
        unloadPrcFile(page)
    ccd = ContinuousCollision(base)
    assert find_task(base).getSort() == 25
    ccd.destroy()


@pytest.mark.parametrize("sort", [2.5, "25", True])
def test_task_sort_must_be_an_int(base, sort):
    with pytest.raises(ValueError, match=r"^task_sort must be an int, got "):
        ContinuousCollision(base, task_sort=sort)
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []


def test_destroy_removes_the_task_is_idempotent_and_ends_the_component(base):
    ccd = ContinuousCollision(base)
    ccd.destroy()
    ccd.destroy()
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []
    ball = node(base.render, "ball")
    with pytest.raises(RuntimeError, match="was destroyed"):
        ccd.add_sphere(ball, 1.0)
    with pytest.raises(RuntimeError, match="was destroyed"):
        ccd.step()
    base.taskMgr.step()  # nothing left to run


def test_two_components_need_distinct_task_names(base):
    a = ContinuousCollision(base)
    b = ContinuousCollision(base, task_name="ccd-second", task_sort=26)
    try:
        assert find_task(base).getSort() == 25
        assert find_task(base, "ccd-second").getSort() == 26
    finally:
        a.destroy()
        b.destroy()


def test_a_game_that_removes_the_task_drives_the_passes_itself(base, ccd, recorder):
    """The README's way to run passes from the game's own loop (a fixed step): remove the
    task by its name; frames then run no pass, step() does."""
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()
    base.taskMgr.remove(ccd.task_name)
    ball.setPos(0, 0, -5)
    base.taskMgr.step()
    assert_vec(pos(ball, render), (0, 0, -5))  # no pass ran
    ball.setPos(0, 0, 5)
    ccd.teleport(ball)
    ccd.step()
    ball.setPos(0, 0, -5)
    ccd.step()
    assert_vec(pos(ball, render), (0, 0, 1))


def test_the_task_runs_one_pass_per_frame(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    base.taskMgr.step()
    assert_vec(pos(ball, render), (0, 0, 1))
    assert recorder.names() == ["ball-into-floor"]


def test_injected_handles_need_no_showbase(base, recorder, monkeypatch):
    monkeypatch.delattr(builtins, "base")
    world = NodePath("world")
    ccd = ContinuousCollision(taskmgr=base.taskMgr, render=world, messenger=recorder)
    ccd.add_in_pattern("%fn-into-%in")
    try:
        floor(ccd, world)
        ball = node(world, "ball", (0, 0, 5))
        ccd.add_sphere(ball, 1.0)
        ccd.step()  # first pass: sweeps nothing
        ball.setPos(0, 0, -5)
        base.taskMgr.step()
        assert_vec(pos(ball, world), (0, 0, 1))
        assert recorder.names() == ["ball-into-floor"]
        assert recorder.sent[0][1].world == world
    finally:
        ccd.destroy()


def test_without_showbase_or_handles_is_a_value_error(base, monkeypatch):
    monkeypatch.delattr(builtins, "base")
    with pytest.raises(ValueError, match=r"^no ShowBase running: pass base, or taskmgr="):
        ContinuousCollision(render=base.render)


def test_world_coordinates_are_relative_to_the_given_render(base, make_ccd, recorder):
    # A "render" that is itself moved and scaled: everything is measured in its space.
    world = base.render.attachNewNode("world")
    world.setPos(100, -50, 7)
    world.setScale(3)
    ccd = make_ccd(render=world)
    floor(ccd, world)
    ball = node(world, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, world), (0, 0, 1))
    assert_vec(c.point, (0, 0, 0))
    assert_vec(c.getSurfacePoint(base.render), (100, -50, 7))


def test_pass_runs_after_intervals_and_before_a_later_task(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 50))
    ccd.add_sphere(ball, 1.0)
    seen = []

    def probe(label):
        def task(t):
            seen.append((label, ball.getZ(render)))
            return t.cont

        return task

    base.taskMgr.add(probe("after ivalLoop"), "probe-22", sort=22)
    base.taskMgr.add(probe("after ccd"), "probe-27", sort=27)
    # One second from z=50 to z=-50: the floor is crossed in frame 31 of 60.
    ival = LerpPosInterval(ball, 1.0, (0, 0, -50), startPos=(0, 0, 50))
    ival.start()
    try:
        for _ in range(70):
            base.taskMgr.step()
    finally:
        ival.finish()
        base.taskMgr.remove("probe-22")
        base.taskMgr.remove("probe-27")
    before = [z for label, z in seen if label == "after ivalLoop"]
    after = [z for label, z in seen if label == "after ccd"]
    assert len(before) == len(after) == 70
    assert min(before) < -40  # the interval really drives the ball deep into the floor
    assert min(after) >= 1.0 - EPS  # but no frame ends below it
    assert after[-1] == pytest.approx(1.0, abs=EPS)


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("radius", "message"),
    [
        (-1.0, r"^radius must be finite and >= 0, got -1\.0$"),
        (-1e-300, r"^radius must be finite and >= 0, got "),
        (math.nan, r"^radius must be finite and >= 0, got nan$"),
        (math.inf, r"^radius must be finite and >= 0, got inf$"),
        (-math.inf, r"^radius must be finite and >= 0, got -inf$"),
        ("big", r"^radius must be a number, got 'big'$"),
        (None, r"^radius must be a number, got None$"),
        (10**400, r"^radius must be finite and >= 0, got 1000"),
        (1e39, r"^radius must fit Panda3D's float32 \(up to 3\.4e38\), got 1e\+39$"),
    ],
)
def test_bad_radius(base, ccd, radius, message):
    with pytest.raises(ValueError, match=message):
        ccd.add_sphere(node(base.render, "ball"), radius)
    assert ccd.colliders == 0


def test_zero_radius_is_a_point(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "point", (0, 0, 5))
    ccd.add_sphere(ball, 0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.5, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 0))


def test_bad_nodepaths(base, ccd):
    with pytest.raises(ValueError, match=r"^nodepath is empty \(NodePath\(\) or a removed node\)$"):
        ccd.add_sphere(NodePath(), 1.0)
    gone = node(base.render, "gone")
    gone.removeNode()
    with pytest.raises(ValueError, match=r"^nodepath is empty"):
        ccd.add_sphere(gone, 1.0)
    with pytest.raises(ValueError, match=r"^nodepath is empty"):
        ccd.add_plane(NodePath(), UP)
    with pytest.raises(ValueError, match=r"^nodepath must be a NodePath, got 'ball'$"):
        ccd.add_sphere("ball", 1.0)
    assert ccd.colliders == 0


def test_node_registered_twice(base, ccd):
    ball = node(base.render, "ball")
    ccd.add_sphere(ball, 1.0)
    with pytest.raises(ValueError, match=r"^nodepath render/ball is already registered$"):
        ccd.add_sphere(ball, 2.0)
    with pytest.raises(ValueError, match=r"is already registered$"):
        ccd.add_plane(ball, UP)
    cnode = base.render.attachNewNode(CollisionNode("cn"))
    cnode.node().addSolid(CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(cnode)
    with pytest.raises(ValueError, match=r"^nodepath render/cn is already registered$"):
        ccd.add_collision_node(cnode)
    assert ccd.colliders == 2


def test_unknown_response(base, ccd):
    with pytest.raises(
        ValueError,
        match=r"^response must be one of 'rewind', 'slide', 'sensor', 'kinematic', got 'bounce'$",
    ):
        ccd.add_sphere(node(base.render, "ball"), 1.0, response="bounce")
    assert ccd.colliders == 0


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (-1, r"must fit in 32 bits \(0 to 2\*\*32 - 1\), got -1$"),
        (2**32, r"must fit in 32 bits \(0 to 2\*\*32 - 1\), got 4294967296$"),
        (1.0, r"must be a BitMask32 or an int, got 1\.0$"),
        (True, r"must be a BitMask32 or an int, got True$"),
        ("1", r"must be a BitMask32 or an int, got '1'$"),
    ],
)
@pytest.mark.parametrize("which", ["from_mask", "into_mask"])
def test_bad_masks(base, ccd, mask, message, which):
    with pytest.raises(ValueError, match="^" + which + " " + message):
        ccd.add_sphere(node(base.render, "ball"), 1.0, **{which: mask})
    if which == "into_mask":
        with pytest.raises(ValueError, match="^into_mask " + message):
            ccd.add_plane(node(base.render, "floor"), UP, into_mask=mask)
    assert ccd.colliders == 0


def test_good_masks(base, ccd):
    ccd.add_sphere(node(base.render, "a"), 1.0, from_mask=0, into_mask=2**32 - 1)
    ccd.add_sphere(node(base.render, "b"), 1.0, from_mask=BitMask32.bit(31))
    ccd.add_plane(node(base.render, "c"), UP, into_mask=BitMask32.allOn())
    assert ccd.colliders == 3


def test_bad_center(base, ccd):
    with pytest.raises(ValueError, match=r"^center must be finite, got \(0, nan, 0\)$"):
        ccd.add_sphere(node(base.render, "ball"), 1.0, center=(0, math.nan, 0))
    with pytest.raises(ValueError, match=r"^center must be three numbers, got \(0, 0\)$"):
        ccd.add_sphere(node(base.render, "ball2"), 1.0, center=(0, 0))


def test_bad_planes(base, ccd):
    with pytest.raises(ValueError, match=r"^plane must have a finite, non-zero normal, got "):
        ccd.add_plane(node(base.render, "p"), LPlane(0, 0, 0, 1))
    with pytest.raises(
        ValueError, match=r"^plane must be a panda3d.core.Plane, got \(0, 0, 1, 0\)$"
    ):
        ccd.add_plane(node(base.render, "q"), (0, 0, 1, 0))
    assert ccd.colliders == 0


@pytest.mark.parametrize(
    ("solid", "name"),
    [
        (CollisionBox(LPoint3(0, 0, 0), 1, 1, 1), "CollisionBox"),
        (CollisionCapsule(0, 0, 0, 0, 0, 1, 0.5), "CollisionCapsule"),
    ],
)
@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_a_piece_cannot_be_a_body(base, ccd, solid, name, response):
    # The plugin moves bodies; a box or a capsule is a piece the game moves (kinematic).
    cnode = base.render.attachNewNode(CollisionNode("mixed"))
    cnode.node().addSolid(CollisionSphere(0, 0, 0, 1))  # fine on its own
    cnode.node().addSolid(solid)
    with pytest.raises(
        ValueError,
        match=rf"^render/mixed holds a {name}, which the plugin cannot move: response must "
        rf"be 'kinematic' or 'sensor', got '{response}'$",
    ):
        ccd.add_collision_node(cnode, response=response)
    assert ccd.colliders == 0  # all or nothing


def test_an_unsupported_solid_is_refused(base, ccd):
    cnode = base.render.attachNewNode(CollisionNode("arc"))
    cnode.node().addSolid(CollisionSphere(0, 0, 0, 1))
    arc = LParabola(LVector3(0, 0, -1), LVector3(1, 0, 0), LPoint3(0, 0, 0))
    cnode.node().addSolid(CollisionParabola(arc, 0, 1))
    with pytest.raises(
        ValueError,
        match=r"^render/arc holds a CollisionParabola; panda3d-ccd sweeps CollisionSphere, "
        r"CollisionPlane, CollisionPolygon, CollisionBox, CollisionCapsule and "
        r"CollisionInvSphere, and casts CollisionRay, CollisionSegment and CollisionLine$",
    ):
        ccd.add_collision_node(cnode)
    assert ccd.colliders == 0


def test_an_intangible_plane_is_refused_rather_than_made_solid(base, ccd):
    """A "fell out of the world" trigger plane (setTangible(False)): the traverser's
    pusher lets a ball through it; a plane here is always solid, so it is refused."""
    cnode = base.render.attachNewNode(CollisionNode("abyss"))
    cnode.node().addSolid(CollisionSphere(0, 0, 0, 1))
    plane = CollisionPlane(LPlane(LVector3(0, 0, 1), LPoint3(0, 0, -50)))
    plane.setTangible(False)
    cnode.node().addSolid(plane)
    with pytest.raises(
        ValueError,
        match=r"^render/abyss: solid 1 is an intangible CollisionPlane; a plane here is always "
        r"a solid half-space \(for a trigger, use a sensor CollisionBox\)$",
    ):
        ccd.add_collision_node(cnode, response="sensor")
    assert ccd.colliders == 0


def test_collision_node_errors(base, ccd):
    with pytest.raises(ValueError, match=r"^nodepath render/plain is not a CollisionNode$"):
        ccd.add_collision_node(node(base.render, "plain"))
    # add_collision_nodes checks its arguments whatever is under its root (here nothing).
    with pytest.raises(ValueError, match=r"^response must be one of .*, got 3$"):
        ccd.add_collision_nodes(node(base.render, "empty-level"), response=3)
    with pytest.raises(ValueError, match=r"^static must be True or False, got 'x'$"):
        ccd.add_collision_nodes(node(base.render, "empty-level"), static="x")
    empty = base.render.attachNewNode(CollisionNode("empty"))
    with pytest.raises(ValueError, match=r"^render/empty holds no collision solids$"):
        ccd.add_collision_node(empty)
    assert ccd.colliders == 0


def test_remove_and_teleport_of_unknown_nodes(base, ccd):
    ball = node(base.render, "ball")
    unknown = (
        r"^nodepath render/ball is not registered, nor the target of a registered node, "
        r"nor above one$"
    )
    for call in (ccd.remove, ccd.teleport):
        with pytest.raises(ValueError, match=unknown):
            call(ball)
    for call in (ccd.remove, ccd.teleport):
        with pytest.raises(ValueError, match=r"^nodepath must be a NodePath, got \[1\]$"):
            call([1])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"render": "render"}, r"^render must be a NodePath that is not empty, got 'render'$"),
        ({"render": NodePath()}, r"^render must be a NodePath that is not empty, got "),
        ({"task_name": 5}, r"^task_name must be a str, got 5$"),
    ],
)
def test_bad_component_arguments(base, arguments, message):
    with pytest.raises(ValueError, match=message):
        ContinuousCollision(base, **arguments)
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []


def test_show_debug_parent_must_be_a_nodepath(ccd):
    with pytest.raises(ValueError, match=r"^show_debug's parent must be a NodePath, got 'x'$"):
        ccd.show_debug("x")


# ---------------------------------------------------------------------------- space and scale
def test_radius_follows_net_scale(base, ccd):
    render = base.render
    floor(ccd, render)
    parent = node(render, "parent")
    parent.setScale(2)
    ball = node(parent, "ball", (0, 0, 5))  # world z = 10
    ccd.add_sphere(ball, 1.0)  # world radius 2
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)  # world z = -10
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 2))


def test_center_is_in_node_space_and_scaled(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 10))
    ball.setScale(3)
    ccd.add_sphere(ball, 0.5, center=(0, 0, -1))  # world: centre 3 below, radius 1.5
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, 0)
    (c,) = ccd.step()
    # centre z goes 7 -> -3 and touches at 1.5: t = 5.5 / 10
    assert c.t == pytest.approx(0.55, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 4.5))
    assert_vec(c.from_pos, (0, 0, 1.5))


# ---------------------------------------------------------------------------- what is swept
def test_set_pos_is_swept(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 1))


def test_set_fluid_pos_is_swept(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setFluidPos(0, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 1))


def test_moving_parent_is_swept(base, ccd):
    render = base.render
    floor(ccd, render)
    parent = node(render, "parent", (3, 0, 5))
    ball = node(parent, "ball", (1, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    parent.setPos(3, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (4, 0, 1))
    assert_vec(pos(parent, render), (3, 0, -5))  # only the collider itself is moved


def test_previous_position_is_where_the_plugin_left_it(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ball.setPos(0, 0, 3)
    assert ccd.step() == []
    # Moved twice between passes: only the last position counts; swept from z=3.
    ball.setPos(0, 0, 100)
    ball.setPos(0, 0, -3)
    (c,) = ccd.step()
    assert c.t == pytest.approx(2 / 6, abs=1e-12)
    # From the rewound position on.
    ball.setPos(0, 0, 0.5)
    (c,) = ccd.step()
    assert c.t == 0.0
    assert_vec(pos(ball, render), (0, 0, 1))


def test_respect_prev_transform_uses_panda_previous_transform(base, make_ccd):
    render = base.render
    ccd = make_ccd(respect_prev_transform=True)
    assert ccd.respect_prev_transform is True
    floor(ccd, render)
    fluid = node(render, "fluid", (0, 0, 5))
    jump = node(render, "jump", (10, 0, 5))
    ccd.add_sphere(fluid, 1.0)
    ccd.add_sphere(jump, 1.0)
    ccd.step()  # first pass: sweeps nothing
    fluid.setFluidPos(0, 0, -5)
    jump.setPos(10, 0, -5)  # Panda3D's teleport: previous = current
    (c,) = ccd.step()
    assert c.from_np == fluid and c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(fluid, render), (0, 0, 1))
    assert_vec(pos(jump, render), (10, 0, -5))


def test_respect_prev_transform_sweeps_a_fluid_parent(base, make_ccd):
    render = base.render
    ccd = make_ccd(respect_prev_transform=True)
    floor(ccd, render)
    parent = node(render, "parent", (2, 0, 5))
    ball = node(parent, "ball", (1, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    parent.setFluidPos(2, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (3, 0, 1))


def test_respect_prev_transform_over_frames(base, make_ccd):
    render = base.render
    ccd = make_ccd(respect_prev_transform=True)
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 10))
    ccd.add_sphere(ball, 1.0)

    def fall(task):
        ball.setFluidPos(ball.getPos() + LVector3(0, 0, -4))
        return task.cont

    base.taskMgr.add(fall, "fall", sort=0)
    try:
        zs = []
        for _ in range(5):
            base.taskMgr.step()
            zs.append(ball.getZ())
    finally:
        base.taskMgr.remove("fall")
    assert zs == pytest.approx([6, 2, 1, 1, 1], abs=EPS)


def test_respect_prev_transform_prc(base):
    page = loadPrcFileData("ccd-test", "ccd-respect-prev-transform 1")
    try:
        ccd = ContinuousCollision(base)
        assert ccd.respect_prev_transform is True
        ccd.destroy()
        ccd = ContinuousCollision(base, respect_prev_transform=False)
        assert ccd.respect_prev_transform is False
        ccd.destroy()
    finally:
        unloadPrcFile(page)
    ccd = ContinuousCollision(base)
    assert ccd.respect_prev_transform is False
    ccd.destroy()


def test_moving_plane_is_swept(base, ccd):
    render = base.render
    plane = floor(ccd, render, z=0)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    plane.setZ(10)
    ball.setZ(4)
    (c,) = ccd.step()
    # ball bottom 4 - t meets floor 10 t at t = 4 / 11; from then on the floor carries it:
    # it ends resting on the floor, not inside it.
    assert c.t == pytest.approx(4 / 11, abs=1e-12)
    assert c.into_np == plane
    assert_vec(pos(ball, render), (0, 0, 11))
    assert_vec(c.point, (0, 0, 40 / 11))


def test_plane_is_in_its_node_space(base, ccd):
    render = base.render
    holder = node(render, "holder", (0, 0, -3))
    holder.setScale(2)
    ccd.add_plane(holder, LPlane(LVector3(0, 0, 1), LPoint3(0, 0, 1)))  # world z = -1
    turned = node(render, "turned", (20, 0, 0))
    turned.setHpr(0, 0, 90)  # its +z axis becomes world +x or -x
    ccd.add_plane(turned, UP)
    normal = render.getRelativeVector(turned, LVector3(0, 0, 1))
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -10)
    (c,) = ccd.step()
    assert c.into_np == holder and c.t == pytest.approx(5 / 15, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 0))
    # The turned plane is a wall through x = 20 facing along `normal`: a ball 15 in front
    # of it, moving 15 through it, touches after 14 of 30.
    assert_vec((abs(normal[0]), normal[1], normal[2]), (1, 0, 0))
    n = round(normal[0])
    probe = node(render, "probe", (20 + 15 * n, 10, 5))
    ccd.add_sphere(probe, 1.0)
    ccd.step()
    probe.setPos(20 - 15 * n, 10, 5)
    (c,) = ccd.step()
    # float32 rotation: the normal is off world x by ~4e-8
    assert c.into_np == turned and c.t == pytest.approx(14 / 30, abs=1e-6)
    assert_vec(pos(probe, render), (20 + n, 10, 5))
    assert_vec(c.normal, normal)


def test_plane_moved_by_its_parent(base, ccd):
    render = base.render
    parent = node(render, "parent", (0, 0, -10))
    plane = node(parent, "floor")
    ccd.add_plane(plane, UP)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    parent.setZ(10)  # floor from -10 to 10; the ball is still
    # A still ball is carried on by the floor from the contact: it ends resting on it.
    (c,) = ccd.step()
    assert c.t == pytest.approx(14 / 20, abs=1e-12)
    assert_vec(c.normal, (0, 0, 1))
    assert_vec(pos(ball, render), (0, 0, 11))


# ---------------------------------------------------------------------------- teleport
def test_teleport_is_not_swept_once(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ball.setPos(0, 0, -5)
    ccd.teleport(ball)
    assert ccd.step() == []
    assert_vec(pos(ball, render), (0, 0, -5))
    # The next pass sweeps again, from where the teleport left it.
    ball.setPos(0, 0, 5)
    assert ccd.step() == []  # leaving the solid side is not a contact
    ball.setPos(0, 0, -5)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)


def test_teleport_a_static_sphere_rereads_it(base, ccd):
    render = base.render
    post = node(render, "post", (0, 0, 0))
    ccd.add_sphere(post, 1.0, static=True)
    ccd.step()  # first pass: sweeps nothing
    post.setPos(100, 0, 0)  # breaks the promise: not seen until teleport()
    ball = node(render, "ball", (-5, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()
    ball.setPos(5, 0, 0)
    (c,) = [x for x in ccd.step() if x.from_np == ball]
    assert c.into_np == post and c.t == pytest.approx(0.3, abs=1e-12)
    assert_vec(c.into_pos, (0, 0, 0))
    ccd.teleport(post)
    ball.setPos(95, 0, 0)
    assert ccd.step() == []
    ball.setPos(105, 0, 0)
    (c,) = [x for x in ccd.step() if x.from_np == ball]
    assert c.into_np == post and c.t == pytest.approx(0.3, abs=1e-12)
    assert_vec(c.into_pos, (100, 0, 0))
    assert_vec(pos(ball, render), (98, 0, 0))


def test_teleport_a_plane(base, ccd):
    render = base.render
    plane = floor(ccd, render, z=-10)
    probe = node(render, "probe")
    ccd.add_sphere(probe, 1.0, response="sensor")
    plane.setZ(10)  # jumps past the probe, which is inside the solid from the frame's start
    ccd.teleport(plane)
    (c,) = ccd.step()
    assert c.t == 0.0  # swept, the floor would reach it at 9 / 20
    probe.setZ(0.5)
    (c,) = ccd.step()
    assert c.t == 0.0


# ---------------------------------------------------------------------------- rewind
def test_rewind_interpolates_orientation_by_slerp(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPosHpr((0, 0, -5), (90, 0, 0))
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert_vec(pos(ball, render), (0, 0, 1))
    expected = LQuaternion()
    expected.setHpr((36, 0, 0))
    assert ball.getQuat(render).almostSameDirection(expected, 1e-6)
    assert ball.getH(render) == pytest.approx(36, abs=1e-4)


def test_rewind_slerp_general_axis(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    q0 = LQuaternion()
    q0.setHpr((10, 20, 30))
    q1 = LQuaternion()
    q1.setHpr((100, -40, 70))
    ball.setQuat(q0)
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    ball.setQuat(q1)
    ccd.step()
    # Reference slerp computed independently from the angle between the two.
    a = [q0.getR(), q0.getI(), q0.getJ(), q0.getK()]
    b = [q1.getR(), q1.getI(), q1.getJ(), q1.getK()]
    dot = sum(x * y for x, y in zip(a, b))
    if dot < 0:
        b, dot = [-x for x in b], -dot
    theta = math.acos(dot)
    t = 0.4
    ref = [
        (math.sin((1 - t) * theta) * x + math.sin(t * theta) * y) / math.sin(theta)
        for x, y in zip(a, b)
    ]
    assert ball.getQuat(render).almostSameDirection(LQuaternion(*ref), 1e-5)


def test_rewind_with_center_offset_and_rotation(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0, center=(2, 0, 0))
    ccd.step()  # first pass: sweeps nothing
    ball.setPosHpr((0, 0, -5), (90, 0, 0))
    (c,) = ccd.step()
    # The centre goes round an arc from (2, 0, 5) to (0, 2, -5), its node turning at a
    # steady rate while it falls: it touches at t = 0.4, 36 degrees round (not on the
    # chord, at (1.2, 0.8, 1), where the node turned back to 36 degrees could not put it).
    assert c.t == pytest.approx(0.4, abs=1e-12)
    on_arc = (2 * math.cos(math.radians(36)), 2 * math.sin(math.radians(36)), 1.0)
    assert_vec(c.from_pos, on_arc)
    assert_vec(render.getRelativePoint(ball, (2, 0, 0)), on_arc)
    assert_vec(ball.getPos(render), (0, 0, 1))
    assert ball.getH(render) == pytest.approx(36, abs=1e-4)


def test_two_moving_rewind_spheres_stop_at_the_same_moment(base, ccd):
    render = base.render
    a = node(render, "a", (-10, 0, 0))
    b = node(render, "b", (10, 0, 0))
    ccd.add_sphere(a, 1.0)
    ccd.add_sphere(b, 1.0)
    ccd.step()  # first pass: sweeps nothing
    a.setPos(10, 0, 0)
    b.setPos(-10, 0, 0)
    contacts = ccd.step()
    assert [(c.from_np.getName(), c.into_np.getName()) for c in contacts] == [
        ("a", "b"),
        ("b", "a"),
    ]
    assert [c.t for c in contacts] == pytest.approx([0.45, 0.45], abs=1e-12)
    assert_vec(pos(a, render), (-1, 0, 0))
    assert_vec(pos(b, render), (1, 0, 0))


def test_rewind_chain_of_three(base, ccd):
    # a runs into b which is still; b is not pushed; c runs into a from behind later on.
    render = base.render
    a = node(render, "a", (0, 0, 0))
    b = node(render, "b", (10, 0, 0))
    c = node(render, "c", (-3, 0, 0))
    for n in (a, b, c):
        ccd.add_sphere(n, 1.0)
    ccd.step()  # first pass: sweeps nothing
    a.setPos(20, 0, 0)  # touches b at t = 8/20
    c.setPos(17, 0, 0)  # follows a at the same speed, 1 behind
    contacts = ccd.step()
    # a and c move at the same speed until a stops at t = 0.4 (x = 8); c (at -3 + 8 = 5)
    # then closes the gap 1 at 20 per frame: t = 0.45, c stops at x = 6.
    got = [(round(x.t, 9), x.from_np.getName(), x.into_np.getName()) for x in contacts]
    assert [t for t, _, _ in got] == [0.4, 0.4, 0.45, 0.45]
    assert sorted(got) == [(0.4, "a", "b"), (0.4, "b", "a"), (0.45, "a", "c"), (0.45, "c", "a")]
    assert_vec(pos(a, render), (8, 0, 0))
    assert_vec(pos(b, render), (10, 0, 0))
    assert_vec(pos(c, render), (6, 0, 0))


@pytest.mark.parametrize("count", [60, 70, 200])
def test_a_queue_into_a_wall_and_a_bystander(base, ccd, count):
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (0, 0, 0))
    queue = []
    for k in range(count):
        unit = node(render, f"u{k}", (-1 - 0.81 * k, 0, 0))
        ccd.add_sphere(unit, 0.4)
        queue.append(unit)
    bystander = node(render, "bystander", (-10, 100, 0))
    ccd.add_sphere(bystander, 0.4)
    ccd.step()  # first pass: sweeps nothing
    for unit in queue:
        unit.setX(unit.getX() + 5)
    bystander.setX(-5)
    ccd.step()
    assert pos(bystander, render) == (-5.0, 100.0, 0.0)
    # Each stops touching the one ahead: x_k = -0.4 - 0.8 k.
    xs = [unit.getX() for unit in queue]
    assert xs == pytest.approx([-0.4 - 0.8 * k for k in range(count)], abs=1e-5)


# ---------------------------------------------------------------------------- slide
def test_slide_keeps_the_tangential_motion(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 2))
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(4, 0, -2)
    (c,) = ccd.step()
    assert c.t == pytest.approx(0.25, abs=1e-12)
    assert_vec(c.from_pos, (1, 0, 1))
    assert_vec(pos(ball, render), (4, 0, 1))


def test_several_slides_in_one_frame(base, ccd):
    render = base.render
    floor(ccd, render)
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    ball = node(render, "ball", (0, 0, 2))
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(8, 3, -2)
    contacts = ccd.step()
    # floor at t = 0.25 at (2, .75, 1); slides toward (8, 3, 1); wall x = 4 after 2/6 of it.
    assert [(c.into_np.getName(), c.t) for c in contacts] == [
        ("floor", pytest.approx(0.25, abs=1e-12)),
        ("wall", pytest.approx(0.5, abs=1e-12)),
    ]
    assert_vec(contacts[1].from_pos, (4, 1.5, 1))
    assert_vec(pos(ball, render), (4, 3, 1))


@pytest.mark.parametrize("x0", [0.0, 0.3, -0.7])
def test_slide_into_a_wedge_follows_the_crease(base, ccd, recorder, x0):
    render = base.render
    wall(ccd, render, "left", (1, 0, 1), (0, 0, 0))
    wall(ccd, render, "right", (-1, 0, 1), (0, 0, 0))
    ball = node(render, "ball", (x0, 0, 5))
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(x0, 8, -5)
    contacts = ccd.step()
    # Both normals have no y: all of the y motion survives; x and z end in the crease.
    assert_vec(pos(ball, render), (0, 8, math.sqrt(2)))
    assert sorted(c.into_np.getName() for c in contacts) == ["left", "right"]
    assert len(recorder.names()) == 2


def test_slide_deflected_out_of_its_box_through_a_sensor(base, ccd, recorder):
    render = base.render
    wall(ccd, render, "ramp", (1, 0, 1), (0, 0, 0))
    zone = node(render, "zone", (0, 0, 3))
    ccd.add_sphere(zone, 1.0, response="sensor")
    ball = node(render, "ball", (0, 0, 6))
    ccd.add_sphere(ball, 0.5, response="slide")
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -6)
    ccd.step()
    names = recorder.names()
    assert sorted(names) == [
        "ball-into-ramp",
        "ball-into-zone",
        "ball-out-zone",
        "zone-into-ball",
        "zone-out-ball",
    ]


def test_slide_along_another_sphere(base, ccd):
    render = base.render
    post = node(render, "post", (0, 0, 0))
    ccd.add_sphere(post, 1.0, static=True)
    ball = node(render, "ball", (-5, 0, 0))
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(5, 0, 0)  # head on: nothing tangential is left
    (c,) = [x for x in ccd.step() if x.from_np == ball]
    assert c.t == pytest.approx(0.3, abs=1e-12)
    assert_vec(pos(ball, render), (-2, 0, 0))
    assert_vec(post.getPos(render), (0, 0, 0))


# ---------------------------------------------------------------------------- sensor
def test_sensor_is_never_stopped_and_never_stops_anyone(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    ghost = node(render, "ghost", (0, 0, 5))
    ccd.add_sphere(ghost, 1.0, response="sensor")
    ball = node(render, "ball", (5, 0, 2))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ghost.setPos(0, 0, -5)  # through the floor
    ball.setPos(-5, 0, 2)  # through the ghost's path (1.41 from it at t = 0.4)
    contacts = ccd.step()
    assert_vec(pos(ghost, render), (0, 0, -5))
    assert_vec(pos(ball, render), (-5, 0, 2))
    assert {(c.from_np.getName(), c.into_np.getName()) for c in contacts} == {
        ("ghost", "floor"),
        ("ghost", "ball"),
        ("ball", "ghost"),
    }
    (g,) = [c for c in contacts if c.into_np.getName() == "floor"]
    assert g.t == pytest.approx(0.4, abs=1e-12)
    assert not g.from_tangible and g.into_tangible


def test_fast_object_through_a_sensor_gives_in_then_out(base, ccd, recorder):
    render = base.render
    zone = node(render, "zone")
    ccd.add_sphere(zone, 1.0, response="sensor")
    bullet = node(render, "bullet", (-1000, 0, 0))
    ccd.add_sphere(bullet, 0.05)
    ccd.step()  # first pass: sweeps nothing
    bullet.setPos(1000, 0, 0)
    ccd.step()
    assert_vec(pos(bullet, render), (1000, 0, 0), tol=1e-3)
    names = recorder.names()
    assert sorted(names[:2]) == ["bullet-into-zone", "zone-into-bullet"]
    assert sorted(names[2:]) == ["bullet-out-zone", "zone-out-bullet"]
    ts = [c.t for _, c in recorder.sent]
    t_in, t_out = (1000 - 1.05) / 2000, (1000 + 1.05) / 2000
    assert ts == pytest.approx([t_in, t_in, t_out, t_out], abs=1e-12)
    recorder.clear()
    ccd.step()
    assert recorder.sent == []


def test_sensor_entered_and_stayed_in(base, ccd, recorder):
    render = base.render
    zone = node(render, "zone")
    ccd.add_sphere(zone, 5.0, response="sensor", from_mask=0)
    ball = node(render, "ball", (-10, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, 0)
    ccd.step()
    assert recorder.names() == ["ball-into-zone"]
    assert recorder.sent[0][1].t == pytest.approx(0.4, abs=1e-12)
    assert recorder.sent[0][1].into_tangible is False
    recorder.clear()
    ball.setPos(1, 0, 0)  # still inside
    ccd.step()
    assert recorder.names() == ["ball-again-zone"]
    recorder.clear()
    ball.setPos(10, 0, 0)  # leaves at x = 6 after 5 of 9
    ccd.step()
    # It was inside for part of this frame too: again (at 0), then out at the exit.
    assert recorder.names() == ["ball-again-zone", "ball-out-zone"]
    assert [c.t for _, c in recorder.sent] == pytest.approx([0, 5 / 9], abs=1e-12)
    recorder.clear()
    ball.setPos(20, 0, 0)
    ccd.step()
    assert recorder.sent == []


# ---------------------------------------------------------------------------- events
def test_still_inside_a_sensor_gets_again_not_out(base, ccd, recorder):
    render = base.render
    zone = node(render, "zone")
    ccd.add_sphere(zone, 3.0, response="sensor", from_mask=0)
    ball = node(render, "ball", (-10, 0, 0))
    ccd.add_sphere(ball, 0.5)
    ball.setX(0)
    ccd.step()
    for _ in range(3):
        ccd.step()
    ball.setX(0.1)
    ccd.step()
    assert recorder.names() == ["ball-into-zone"] + ["ball-again-zone"] * 4


def test_events_go_through_the_messenger(base, make_ccd, listener):
    render = base.render
    ccd = make_ccd(messenger=base.messenger)
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    got = []
    for kind in ("into", "again", "out"):
        listener.accept(
            f"ball-{kind}-floor",
            lambda c, k=kind: got.append((k, c, tuple(c.getFromNodePath().getPos(render)))),
        )
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(0, 0, -5)
    base.taskMgr.step()
    ball.setPos(0, 0, -1)  # pushes on: again
    base.taskMgr.step()
    ball.setPos(0, 0, 3)  # leaves
    base.taskMgr.step()
    assert [k for k, _, _ in got] == ["into", "again", "out"]
    # Handlers see final positions.
    assert_vec(got[0][2], (0, 0, 1))
    assert_vec(got[1][2], (0, 0, 1))
    assert got[0][1].getT() == pytest.approx(0.4, abs=1e-12)
    assert got[1][1].getT() == 0.0
    assert got[2][1] is got[1][1]  # an out carries the pair's last contact


def test_handlers_see_every_node_at_its_final_position(base, ccd, recorder, listener):
    render = base.render
    a = node(render, "a", (-10, 0, 0))
    b = node(render, "b", (10, 0, 0))
    ccd.add_sphere(a, 1.0)
    ccd.add_sphere(b, 1.0)
    seen = []
    listener.accept("a-into-b", lambda c: seen.append((pos(a, render), pos(b, render))))
    ccd.step()  # first pass: sweeps nothing
    a.setPos(10, 0, 0)
    b.setPos(-10, 0, 0)
    ccd.step()
    (positions,) = seen
    assert_vec(positions[0], (-1, 0, 0))
    assert_vec(positions[1], (1, 0, 0))


def test_events_within_a_frame_are_in_time_order(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    balls = []
    for k, height in enumerate([7.0, 3.0, 9.0, 5.0]):
        ball = node(render, f"ball{k}", (4 * k, 0, height))
        ccd.add_sphere(ball, 1.0)
        balls.append(ball)
    ccd.step()  # first pass: sweeps nothing
    for ball in balls:
        ball.setZ(ball.getZ() - 10)
    contacts = ccd.step()
    expected = sorted((h - 1) / 10 for h in [7.0, 3.0, 9.0, 5.0])
    assert [c.t for c in contacts] == pytest.approx(expected, abs=1e-12)
    assert recorder.names() == [
        "ball1-into-floor",
        "ball3-into-floor",
        "ball0-into-floor",
        "ball2-into-floor",
    ]
    assert [c for _, c in recorder.sent] == contacts


def test_event_per_allowed_direction(base, ccd, recorder):
    render = base.render
    pairs = [  # (from_mask, into_mask) of a; b has from 0b10, into 0b01
        ((0b01, 0b10), ["a-into-b", "b-into-a"]),
        ((0b01, 0b00), ["a-into-b"]),
        ((0b00, 0b10), ["b-into-a"]),
        ((0b10, 0b01), []),
    ]
    for k, ((fm, im), expected) in enumerate(pairs):
        a = node(render, "a", (-5, 10 * k, 0))
        b = node(render, "b", (5, 10 * k, 0))
        ccd.add_sphere(a, 1.0, from_mask=fm, into_mask=im)
        ccd.add_sphere(b, 1.0, from_mask=0b10, into_mask=0b01)
        ccd.step()  # first pass: sweeps nothing
        a.setX(5)
        recorder.clear()
        ccd.step()
        assert recorder.names() == expected, (fm, im)
        # A pair whose masks allow neither direction is not solid to each other.
        assert_vec(pos(a, render), (3 if expected else 5, 10 * k, 0))
        ccd.remove(a)
        ccd.remove(b)


def test_planes_are_into_only_and_masked(base, ccd, recorder):
    render = base.render
    solid = node(render, "solid", (0, 0, 0))
    ccd.add_plane(solid, UP, into_mask=0b100)
    ghost_wall = node(render, "glass", (0, 0, 2))
    ccd.add_plane(ghost_wall, UP, into_mask=0b001)
    ball = node(render, "ball", (0, 0, 10))
    ccd.add_sphere(ball, 1.0, from_mask=0b110)
    ccd.step()  # first pass: sweeps nothing
    ball.setZ(-10)
    ccd.step()
    assert recorder.names() == ["ball-into-solid"]
    assert_vec(pos(ball, render), (0, 0, 1))


def test_remove_sends_out_events_and_forgets(base, ccd, recorder):
    render = base.render
    floor_np = floor(ccd, render)
    a = node(render, "a", (0, 0, 5))
    b = node(render, "b", (0, 0, 10))
    ccd.add_sphere(a, 1.0)
    ccd.add_sphere(b, 1.0)
    ccd.step()  # first pass: sweeps nothing
    a.setZ(-5)
    b.setZ(2.5)  # lands on a
    ccd.step()
    assert sorted(recorder.names()) == ["a-into-b", "a-into-floor", "b-into-a"]
    recorder.clear()
    ccd.remove(a)
    assert sorted(recorder.names()) == ["a-out-b", "a-out-floor", "b-out-a"]
    recorder.clear()
    b.setZ(-5)
    ccd.step()
    assert recorder.names() == ["b-into-floor"]
    assert_vec(pos(b, render), (0, 0, 1))
    recorder.clear()
    ccd.remove(render.find("floor"))  # an equal NodePath, not the same object
    assert recorder.names() == ["b-out-floor"]
    assert ccd.colliders == 1
    assert floor_np.getZ() == 0


def test_removed_from_scene_graph_is_dropped_with_out_events(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setZ(-5)
    ccd.step()
    recorder.clear()
    ball.removeNode()
    ccd.step()
    assert recorder.names() == ["ball-out-floor"]
    assert ccd.colliders == 1


def _balanced(names):
    """Per (from, into) pair: in (again)* out, ..., ending closed."""
    state = {}
    for name in names:
        f, kind, i = name.split("-")
        key = (f, i)
        if kind == "into":
            assert not state.get(key), f"{name}: already in"
            state[key] = True
        else:
            assert state.get(key), f"{name}: not in"
            if kind == "out":
                state[key] = False
    assert not any(state.values()), state


def _shoot(base, ccd, listener, also_remove_node):
    render = base.render
    target = node(render, "target")
    ccd.add_sphere(target, 1.0)
    bullet = node(render, "bullet", (-10, 0, 0))
    ccd.add_sphere(bullet, 0.1)

    def hit(contact):  # the usual game code: the bullet is gone on its first hit
        if ccd.colliders == 2:
            ccd.remove(bullet)
            if also_remove_node:
                bullet.removeNode()

    listener.accept("bullet-into-target", hit)
    listener.accept("target-into-bullet", hit)
    ccd.step()  # first pass: sweeps nothing
    bullet.setPos(10, 0, 0)
    ccd.step()
    ccd.step()


def test_remove_inside_a_handler_keeps_events_balanced(base, ccd, recorder, listener):
    _shoot(base, ccd, listener, also_remove_node=False)
    ccd.destroy()
    _balanced(recorder.names())


def test_remove_node_inside_a_handler(base, ccd, recorder, listener):
    _shoot(base, ccd, listener, also_remove_node=True)
    assert ccd.colliders == 1


def test_destroy_inside_a_handler(base, make_ccd, recorder, listener):
    render = base.render
    ccd = make_ccd()
    floor(ccd, render)
    balls = []
    for k, z in enumerate([3.0, 5.0, 7.0]):
        ball = node(render, f"ball{k}", (3 * k, 0, z))
        ccd.add_sphere(ball, 1.0)
        balls.append(ball)
    listener.accept("ball0-into-floor", lambda c: ccd.destroy())  # the first of three hits
    ccd.step()  # first pass: sweeps nothing
    for ball in balls:
        ball.setZ(-5)
    ccd.step()
    assert recorder.names() == ["ball0-into-floor", "ball0-out-floor"]
    assert base.taskMgr.getTasksNamed("panda3d-ccd") == []


def test_destroy_sends_out_events(base, make_ccd, recorder):
    render = base.render
    ccd = make_ccd()
    floor(ccd, render)
    zone = node(render, "zone", (20, 0, 3))  # clear of the floor
    ccd.add_sphere(zone, 1.5, response="sensor")
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ball.setZ(-5)
    ccd.step()
    ball.setPos(20, 0, 1)
    ccd.step()  # leaves the floor (out), enters the zone
    recorder.clear()
    ccd.destroy()
    assert sorted(recorder.names()) == ["ball-out-zone", "zone-out-ball"]
    assert ccd.contacts == []


def test_pattern_language(base, ccd, recorder):
    render = base.render
    ccd.clear_in_patterns()
    ccd.clear_again_patterns()
    ccd.clear_out_patterns()
    ccd.addInPattern("hit-%fn-%fs-%in-%is-%ig")
    ccd.addInPattern("%(team)ihenemy-%(team)it")
    ccd.addInPattern("%(team)fx%fn-untagged")
    floor(ccd, render)
    zone = node(render, "zone", (0, 0, 4))
    zone.setTag("team", "red")
    ccd.add_sphere(zone, 1.0, response="sensor", from_mask=0)
    ball = node(render, "ball", (0, 0, 8))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setZ(-2)
    ccd.step()
    assert recorder.names() == [
        "hit-ball-t-zone-i-c",
        "enemy-red",
        "ball-untagged",
        "hit-ball-t-floor-t-c",
        "ball-untagged",
    ]


def test_collision_node_uses_the_node_masks_and_tangibility(base, ccd, recorder):
    render = base.render
    floor_np = render.attachNewNode(CollisionNode("floor"))
    floor_np.node().addSolid(CollisionPlane(UP))
    floor_np.node().setIntoCollideMask(BitMask32.bit(3))
    ccd.add_collision_node(floor_np)
    trigger = render.attachNewNode(CollisionNode("trigger"))
    solid = CollisionSphere(0, 0, 0, 2)
    solid.setTangible(False)
    trigger.node().addSolid(solid)
    trigger.setPos(10, 0, 3)
    ccd.add_collision_node(trigger)
    ball = render.attachNewNode(CollisionNode("ball"))
    ball.node().addSolid(CollisionSphere(0, 0, 0, 1))
    ball.node().setFromCollideMask(BitMask32.bit(3) | BitMask32.bit(0))
    ball.node().setIntoCollideMask(BitMask32.bit(0))
    ball.setPos(0, 0, 5)
    ccd.add_collision_node(ball)
    ccd.step()  # first pass: sweeps nothing
    ball.setPos(20, 0, -5)  # through the trigger (which is not stopped nor stops)
    ccd.step()
    # ball x = 20 t, z = 5 - 10 t: 3 from the trigger's centre at t = 0.38, floor at 0.4
    names = recorder.names()
    assert sorted(names[:2]) == ["ball-into-trigger", "trigger-into-ball"]
    assert names[2:] == ["ball-into-floor"]
    assert [c.t for _, c in recorder.sent] == pytest.approx([0.38, 0.38, 0.4], abs=1e-12)
    assert_vec(pos(ball, render), (8, 0, 1))
    tangible = {name: (c.from_tangible, c.into_tangible) for name, c in recorder.sent}
    assert tangible == {
        "ball-into-trigger": (True, False),
        "trigger-into-ball": (False, True),
        "ball-into-floor": (True, True),
    }


def test_collision_node_centers_and_multiple_spheres(base, ccd):
    render = base.render
    floor(ccd, render)
    body = render.attachNewNode(CollisionNode("body"))
    body.node().addSolid(CollisionSphere(0, 0, 0, 1))
    body.node().addSolid(CollisionSphere(3, 0, -2, 0.5))  # a low foot, 2.5 below the centre
    body.setPos(0, 0, 10)
    ccd.add_collision_node(body)
    ccd.step()  # first pass: sweeps nothing
    body.setZ(-10)
    contacts = ccd.step()
    # The foot lands first (its centre goes 8 -> -12, touches at 0.5: t = 7.5 / 20).
    assert contacts[0].t == pytest.approx(0.375, abs=1e-12)
    assert_vec(pos(body, render), (0, 0, 2.5))


def test_a_node_stopped_by_one_solid_reports_no_later_contact(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    body = render.attachNewNode(CollisionNode("body"))
    body.node().addSolid(CollisionSphere(0, 0, 0, 1))
    body.node().addSolid(CollisionSphere(3, 0, -2, 0.5))
    body.setPos(0, 0, 10)
    ccd.add_collision_node(body)
    ccd.step()  # first pass: sweeps nothing
    body.setZ(-10)
    contacts = ccd.step()
    assert_vec(pos(body, render), (0, 0, 2.5))
    # The main sphere's centre ends at z = 2.5: it never touched the floor.
    assert [c.t for c in contacts] == pytest.approx([0.375], abs=1e-12)
    assert recorder.names() == ["body-into-floor"]


def test_a_stopped_multi_solid_node_is_still_hit(base, ccd, recorder):
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    body = render.attachNewNode(CollisionNode("N"))
    body.node().addSolid(CollisionSphere(0, 0, 0, 1))
    body.node().addSolid(CollisionSphere(0, 5, 0, 1))
    ccd.add_collision_node(body)
    dropper = node(render, "D", (2.5, 5, 10))
    ccd.add_sphere(dropper, 1.0)
    ccd.step()  # first pass: sweeps nothing
    body.setX(10)  # stopped by the wall at t = 0.4, x = 4
    dropper.setZ(-10)  # then falls onto N's second solid, at (4, 5, 0) from then on
    contacts = ccd.step()
    assert_vec(pos(body, render), (4, 0, 0))
    assert_vec(pos(dropper, render), (2.5, 5, math.sqrt(1.75)))
    t_hit = (10 - math.sqrt(1.75)) / 20
    got = [(c.from_np.getName(), c.into_np.getName(), c.t) for c in contacts]
    assert got[0] == ("N", "wall", pytest.approx(0.4, abs=1e-12))
    assert sorted(got[1:]) == [
        ("D", "N", pytest.approx(t_hit, abs=1e-9)),
        ("N", "D", pytest.approx(t_hit, abs=1e-9)),
    ]
    assert sorted(recorder.names()) == ["D-into-N", "N-into-D", "N-into-wall"]


def test_a_sliding_node_with_several_solids_stays_out_of_the_walls(base, ccd):
    render = base.render
    floor(ccd, render)
    wall(ccd, render, "wall", (-1, 0, 0), (10, 0, 0))
    body = render.attachNewNode(CollisionNode("N"))
    body.node().addSolid(CollisionSphere(0, 0, 0, 1))  # low sphere: the floor's
    body.node().addSolid(CollisionSphere(4, 0, 3, 1))  # high sphere: the wall's
    body.setPos(0, 0, 5)
    ccd.add_collision_node(body, response="slide")
    ccd.step()  # first pass: sweeps nothing
    body.setPos(12, 0, -3)
    contacts = ccd.step()
    low = render.getRelativePoint(body, (0, 0, 0))
    high = render.getRelativePoint(body, (4, 0, 3))
    assert low[2] >= 1 - EPS and high[0] <= 9 + EPS  # no solid inside a wall
    # Rigidly: the high sphere meets the wall at t = 5/12 (node at (5, 0, 5/3)); the rest
    # of the motion, (7, 0, -14/3), loses its x; the low sphere lands at node z = 1, t = 0.5.
    assert_vec(pos(body, render), (5, 0, 1))
    assert [(c.into_np.getName(), c.t) for c in contacts] == [
        ("wall", pytest.approx(5 / 12, abs=1e-9)),
        ("floor", pytest.approx(0.5, abs=1e-9)),
    ]


def tank_with_turret(ccd, render, turret_first=False):
    """A tank body (r 1 at the origin) and a turret body (r 0.5) on it at local (0, 0, 3),
    registered in either order, and the first pass made."""
    tank = node(render, "tank")
    turret = node(tank, "turret", (0, 0, 3))
    for nodepath, radius in [(tank, 1.0), (turret, 0.5)][:: -1 if turret_first else 1]:
        ccd.add_sphere(nodepath, radius)
    ccd.step()
    return tank, turret


@pytest.mark.parametrize("turret_first", [False, True])
def test_a_registered_child_is_stopped_by_its_parents_contact_alone(
    base, ccd, recorder, turret_first
):
    # The turret's own path would touch the wall later (t 0.45): the hierarchy never got
    # there, whichever was registered first. The game's move of the turret on its tank is
    # rewound with the tank, to the contact's instant (t 0.4): the whole model is put
    # back as it was then.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    tank, turret = tank_with_turret(ccd, render, turret_first)
    tank.setX(10)
    turret.setPosHpr(0, 1, 3, 30, 0, 0)  # the game moves and turns it on its tank
    contacts = ccd.step()
    assert_vec(pos(tank, render), (4, 0, 0))
    assert_vec(turret.getPos(), (0, 0.4, 3))
    assert turret.getH() == pytest.approx(12, abs=1e-4)
    assert [(c.from_np.getName(), c.t) for c in contacts] == [("tank", pytest.approx(0.4))]
    assert recorder.names() == ["tank-into-wall"]


def test_a_turret_turned_into_a_wall_stops_turning_and_leaves_its_tank_where_it_is(
    base, ccd, recorder
):
    # A still tank (r 1 at the origin), its turret's sphere (r 0.5) 2 off its centre, the
    # turret turned 20 degrees toward a wall at x 1.1 by the game. The turret's arc meets
    # the wall where its centre reaches x 0.6, at t = asin(0.3) / 20deg; tested on its arc
    # in sub-steps, each inflated by its stray from its chord, it stops at most 2% of its
    # radius short, and the rewind puts the turret's turn back to that instant. It used to
    # keep its end turn and move the tank to make room: 0.08 away, where nothing swept it;
    # then (its contact found on the chord, its turn rewound on the arc) to end up to the
    # chord's sagitta past the touch, 2 (1 - cos 10deg) = 0.03 inside the wall.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (1.1, 0, 0))
    tank = node(render, "tank")
    turret = node(tank, "turret")
    ccd.add_sphere(tank, 1.0, response="rewind")
    ccd.add_sphere(turret, 0.5, center=(0, 2, 0), response="rewind")
    ccd.step()
    turret.setH(-20)
    contacts = ccd.step()
    touch = math.degrees(math.asin(0.3)) / 20
    ((name, t),) = [(c.from_np.getName(), c.t) for c in contacts]
    assert name == "turret" and t <= touch
    assert tank.getPos(render) == (0, 0, 0) and tank.getH(render) == 0
    assert turret.getH() == pytest.approx(-20 * t, abs=1e-4)
    x = render.getRelativePoint(turret, (0, 2, 0))[0]
    assert 0.6 - TURN_TOLERANCE * 0.5 <= x <= 0.6 + 1e-6


@pytest.mark.parametrize("response", ["rewind", "slide"])
@pytest.mark.parametrize("step", [30.0, 40.0])
def test_a_turret_swung_fast_past_a_wall_never_passes_through_it(base, ccd, response, step):
    """A tank (r 1) held against a post (it cannot back away), its turret (r 0.4, 1.5 off
    centre on a node of its own) turned by the game ``step`` degrees a frame toward a wall
    at x 0 whose nearest point the turret's arc passes: swept round its arc, the turret
    stops touching the wall (up to 2% of its radius short) and is held there, every frame,
    as long as the game turns it on. On its chord (until session 39) the next frame's chord
    ran along the wall and the turret swung on through it, 0.05 deep on the way. (A slide
    is deflected first, and goes on along the chord of the rest of its turn until it is
    stopped: there it may be that chord's sagitta past the touch, see the README.)"""
    render = base.render
    wall(ccd, render, "wall", (1, 0, 0), (0, 0, 0))  # x = 0, facing +x
    post = node(render, "post", (3.8, 0, 0))
    ccd.add_sphere(post, 1.0, static=True)
    tank = node(render, "tank", (1.8, 0, 0))
    turret = node(tank, "turret")
    ccd.add_sphere(tank, 1.0, response=response)
    ccd.add_sphere(turret, 0.4, center=(0, 1.5, 0), response=response)
    ccd.step()
    sagitta = 0.0 if response == "rewind" else 1.5 * (1 - math.cos(math.radians(step / 2)))
    held = set()
    for _ in range(8):
        turret.setH(turret.getH() + step)  # toward -x: the tip's arc passes x = 0.3
        ccd.step()
        assert tank.getPos(render) == (1.8, 0, 0)
        x = render.getRelativePoint(turret, LPoint3(0, 1.5, 0)).x
        assert x >= 0.4 - sagitta - 1e-6  # never in the wall (a slide: see above)
        if x <= 0.4 + TURN_TOLERANCE * 0.4:
            held.add(round(turret.getH(), 3))
    assert len(held) == 1  # held touching from the frame it reached the wall, not turned on


def test_a_registered_childs_contact_stops_its_parent(base, ccd, recorder):
    render = base.render
    post = node(render, "post", (6, 0, 3))
    ccd.add_sphere(post, 0.5, static=True)  # only the turret's height meets it
    tank, turret = tank_with_turret(ccd, render)
    tank.setX(10)
    contacts = ccd.step()
    assert_vec(pos(tank, render), (5, 0, 0))  # the turret 1 from the post's centre
    assert_vec(turret.getPos(), (0, 0, 3))
    assert [(c.from_np.getName(), c.into_np.getName(), c.t) for c in contacts] == [
        ("turret", "post", pytest.approx(0.5)),
        ("post", "turret", pytest.approx(0.5)),
    ]


@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_collision_nodes_sharing_a_target_move_as_one_body(base, ccd, recorder, response):
    # Two CollisionNodes of one model, each given the model as its target (as
    # CollisionHandlerPusher.addCollider(collider, target)): the body's contact decides
    # where the model ends; the head, whose own path would reach the wall at t 0.45 and
    # would leave the body 0.5 inside it, follows.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    player = node(render, "player")
    parts = {}
    for name, (center, radius) in {"body": ((0, 0, 0), 1.0), "head": ((0, 0, 3), 0.5)}.items():
        parts[name] = player.attachNewNode(CollisionNode(name))
        parts[name].node().addSolid(CollisionSphere(*center, radius))
        ccd.add_collision_node(parts[name], response=response, target=player)
    ccd.step()
    player.setPos(10, 3, 0)
    contacts = ccd.step()
    assert_vec(pos(player, render), (4, 1.2, 0) if response == "rewind" else (4, 3, 0))
    assert [(c.from_np.getName(), c.t) for c in contacts] == [("body", pytest.approx(0.4))]
    # Nothing between the two: the game lowers the head into the body (its node's place
    # on the target is read every pass), and no contact comes of it.
    parts["head"].setZ(-2)
    player.setX(3)
    assert ccd.step() == []
    assert_vec(pos(player, render), (3, 1.2 if response == "rewind" else 3, 0))


def test_a_model_the_game_turns_slides_its_off_centre_collider_along_a_wall(base, ccd, recorder):
    """A body and an off-centre head of one model (each its own CollisionNode, the model
    their target), turned in place by the game 3 degrees a frame until the head swings
    into a wall: the slide takes the model back so that the head stays touching the wall,
    never in it, while it turns on. (The head's own motion into the wall was given to the
    whole model as a translation, which the write-back then undid with the turn: the head
    went up to 0.5 into the wall; found by a helper porting a shooter.)"""
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (0, 0, 0))  # the plane x = 0, facing -x
    model = node(render, "model", (-0.8, 0, 0))
    model.setH(180)  # the head 0.9 out along -y
    for name, (center, radius) in {"body": ((0, 0, 0), 0.7), "head": ((0, 0.9, 0), 0.4)}.items():
        part = model.attachNewNode(CollisionNode(name))
        part.node().addSolid(CollisionSphere(*center, radius))
        ccd.add_collision_node(part, response="slide", target=model)
    ccd.step()
    touching = 0
    for _ in range(40):
        model.setH(model.getH() + 3)
        ccd.step()
        head = model.getPos(render) + render.getRelativeVector(model, LVector3(0, 0.9, 0))
        assert head.x + 0.4 <= 1e-6  # never in the wall
        assert model.getX() + 0.7 <= 1e-6
        # (Its arc is swept in sub-steps, each inflated by its stray: it may stop short of
        # the wall by that, 2% of its radius.)
        touching += -(head.x + 0.4) <= TURN_TOLERANCE * 0.4
    assert touching > 20  # it slid along the wall, touching it, most of the way round
    assert recorder.names()[0] == "head-into-wall"


def test_a_body_reparented_under_another_is_carried_from_then_on(base, ccd, recorder):
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    tank = node(render, "tank")
    ccd.add_sphere(tank, 1.0)
    crate = node(render, "crate", (0, 0, 3))
    ccd.add_sphere(crate, 0.5)
    ccd.step()
    crate.wrtReparentTo(tank)  # picked up
    ccd.step()
    tank.setX(10)
    ccd.step()
    assert_vec(pos(tank, render), (4, 0, 0))
    assert_vec(crate.getPos(), (0, 0, 3))
    crate.wrtReparentTo(render)  # put down: on its own again
    tank.setX(2)
    crate.setX(10)
    contacts = ccd.step()
    assert_vec(pos(tank, render), (2, 0, 0))
    assert_vec(pos(crate, render), (4.5, 0, 3))
    assert [c.from_np.getName() for c in contacts] == ["crate"]


def test_a_carrier_removed_leaves_its_carried_body_on_its_own(base, ccd, recorder):
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    tank, turret = tank_with_turret(ccd, render)
    ccd.remove(tank, below=False)
    tank.setX(10)
    contacts = ccd.step()
    assert_vec(pos(turret, render), (4.5, 0, 3))
    assert_vec(turret.getPos(), (-5.5, 0, 3))  # written on its own, off its mount
    assert [(c.from_np.getName(), c.t) for c in contacts] == [("turret", pytest.approx(0.45))]
    assert recorder.names() == ["turret-into-wall"]


def test_a_carrier_removed_takes_its_carried_body_with_it_by_default(base, ccd, recorder):
    """remove() forgets the registered nodes below the one given (``below=False`` keeps
    them, above); anything but a bool there is refused."""
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    tank, turret = tank_with_turret(ccd, render)
    with pytest.raises(ValueError, match="^below must be True or False, got 1$"):
        ccd.remove(tank, below=1)
    ccd.remove(tank)
    assert ccd.colliders == 1  # the wall
    tank.setX(10)
    assert ccd.step() == [] and recorder.names() == []
    assert_vec(pos(turret, render), (10, 0, 3))


@pytest.mark.parametrize("static", [False, True], ids=["post", "static post"])
def test_a_rewound_body_carried_by_a_slide_meets_what_the_bend_takes_it_to(
    base, ccd, recorder, static
):
    # The tank slides along the wall from t 0.4, up to y 10; its turret (rewind) goes with
    # it and meets the post at (4, 8.6, 3) at t 0.76, far off its own straight path. With
    # over 128 bodies the broad phase cuts straight paths into pieces: the turret's must be
    # boxed as its slide's (it was not, and the turret passed through the post).
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    for i in range(200):
        ccd.add_sphere(node(render, f"idle{i}", (100 + 3 * (i % 20), 100 + 3 * (i // 20), 0)), 0.5)
    ccd.add_sphere(node(render, "post", (4, 8.6, 3)), 0.5, static=static)
    tank = node(render, "tank")
    ccd.add_sphere(tank, 1.0, response="slide")
    turret = node(tank, "turret", (0, 0, 3))
    ccd.add_sphere(turret, 0.5, response="rewind")
    ccd.step()
    tank.setPos(10, 10, 0)
    contacts = ccd.step()
    assert_vec(pos(tank, render), (4, 7.6, 0))
    assert met(contacts) == [
        ("post", "turret", 0.76), ("tank", "wall", 0.4), ("turret", "post", 0.76),
    ]  # fmt: skip


def player_with_pickup_radius(ccd, render, response, on_target=False):
    """A player node with a body (CollisionNode "player-c", r 1, from bit 1) registered
    with ``target=player``, and a trigger radius below it (CollisionNode "pickup-radius",
    an intangible r 1.5, from bits 1 and 2), registered as a sensor of its own (or with
    ``target=player`` too); the first pass made."""
    player = node(render, "player")
    body = sphere_node(player, "player-c", 1)
    body.node().setFromCollideMask(BitMask32.bit(1))
    ccd.add_collision_node(body, target=player, response=response)
    radius = sphere_node(player, "pickup-radius", 1.5, tangible=False)
    radius.node().setFromCollideMask(BitMask32.bit(1) | BitMask32.bit(2))
    ccd.add_collision_node(radius, target=player if on_target else None)
    ccd.step()
    return player


def pickup(ccd, render, name, at, kind):
    """A static trigger of r 0.2 at ``at``: an intangible CollisionBox, or a sensor sphere."""
    if kind == "box":
        np_ = render.attachNewNode(CollisionNode(name))
        np_.node().addSolid(CollisionBox(LPoint3(*at), 0.2, 0.2, 0.2))
        np_.node().modifySolid(0).setTangible(False)
        ccd.add_collision_node(np_, static=True)
    else:
        np_ = node(render, name, at)
        ccd.add_sphere(np_, 0.2, response="sensor", static=True)
    return np_


@pytest.mark.parametrize("on_target", [False, True], ids=["below", "on its target"])
@pytest.mark.parametrize("kind", ["box", "sphere"])
def test_a_sensor_on_a_stopped_body_reports_only_where_the_body_went(
    base, ccd, recorder, kind, on_target
):
    # The player stops at x 4 (t 0.4): its pickup radius reaches x 5.5, never the pickup
    # at x 8 nor the line at x 6 it would have crossed on its own straight path (at t 0.63
    # and 0.45), nor the player it rides on.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0), into_mask=BitMask32.bit(1))
    wall(ccd, render, "line", (-1, 0, 0), (6, 0, 0), into_mask=BitMask32.bit(2))
    pickup(ccd, render, "near", (3.5, 0, 0), kind)
    pickup(ccd, render, "far", (8, 0, 0), kind)
    player = player_with_pickup_radius(ccd, render, "rewind", on_target)
    player.setX(10)
    contacts = ccd.step()
    assert_vec(pos(player, render), (4, 0, 0))
    both = [("near", "pickup-radius", 0.18), ("near", "player-c", 0.23)] * (kind == "sphere")
    assert met(contacts) == both + [
        ("pickup-radius", "near", 0.18), ("pickup-radius", "wall", 0.35),
        ("player-c", "near", 0.23), ("player-c", "wall", 0.4),
    ]  # fmt: skip
    # The next pass, standing still: the pickup radius is still in the same two, with
    # nothing new and nothing out (the body at rest against the wall is out of it).
    sent = recorder.names()
    recorder.clear()
    again = ccd.step()
    assert sorted((c.from_np.getName(), c.into_np.getName()) for c in again) == sorted(
        [("pickup-radius", "near"), ("player-c", "near"), ("pickup-radius", "wall")]
        + [("near", "pickup-radius"), ("near", "player-c")] * (kind == "sphere")
    )
    assert [n for n in recorder.names() if "pickup-radius" in n and "-again-" not in n] == []
    assert [n for n in sent + recorder.names() if "far" in n or "line" in n] == []


def test_a_sensor_below_a_body_is_carried_whatever_its_target(base, ccd, recorder):
    # The body is registered on its own node (the plugin moves that), the sensor below it
    # with the player above both as its target: the sensor still goes where the body goes.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    pickup(ccd, render, "far", (8, 0, 0), "sphere")
    player = node(render, "player")
    body = sphere_node(player, "player-c", 1)
    ccd.add_collision_node(body, response="rewind")
    radius = sphere_node(body, "pickup-radius", 1.5, tangible=False)
    ccd.add_collision_node(radius, target=player)
    ccd.step()
    player.setX(10)
    contacts = ccd.step()
    assert_vec(pos(body, render), (4, 0, 0))
    assert met(contacts) == [("pickup-radius", "wall", 0.35), ("player-c", "wall", 0.4)]


def test_a_sensor_on_the_node_its_body_moves_is_carried(base, ccd, recorder):
    # The body is a CollisionNode below the player with the player as its target; the
    # sensor is a sphere registered on the player node itself, a child of render.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0))
    pickup(ccd, render, "far", (8, 0, 0), "sphere")
    player = node(render, "player")
    ccd.add_collision_node(sphere_node(player, "player-c", 1), target=player, response="rewind")
    ccd.add_sphere(player, 1.5, response="sensor")
    ccd.step()
    player.setX(10)
    contacts = ccd.step()
    assert_vec(pos(player, render), (4, 0, 0))
    assert met(contacts) == [("player", "wall", 0.35), ("player-c", "wall", 0.4)]


@pytest.mark.parametrize("response", ["rewind", "slide"])
def test_a_carried_sensor_turning_with_its_still_carrier_never_moves_it(
    base, ccd, recorder, response
):
    # The player turns in place (its body's centre stays put) with a sensor 3 in front of
    # it; a ball runs into the player at t 0.75. A body that does not move is not moved by
    # a contact, whatever its sensor does: the turn the game made stays whole.
    render = base.render
    player = node(render, "player")
    ccd.add_collision_node(sphere_node(player, "player-c", 1), target=player, response=response)
    interact = sphere_node(player, "interact", 0.5, tangible=False)
    interact.setY(3)
    ccd.add_collision_node(interact)
    ball = node(render, "ball", (-6, 0, 0))
    ccd.add_sphere(ball, 0.5, response="rewind")
    ccd.step()
    player.setH(90)
    ball.setX(0)
    contacts = ccd.step()
    assert player.getH() == pytest.approx(90) and pos(player, render) == (0, 0, 0)
    assert_vec(pos(ball, render), (-1.5, 0, 0))
    assert met(contacts) == [
        ("ball", "interact", 0.666667), ("ball", "player-c", 0.75),
        ("interact", "ball", 0.666667), ("player-c", "ball", 0.75),
    ]  # fmt: skip


@pytest.mark.parametrize("response", ["sensor", "rewind"])
def test_what_a_slide_carries_meets_a_static_on_its_bend_among_many_statics(
    base, ccd, recorder, response
):
    # Over 256 static spheres are found through the static index: it must box what a slide
    # carries as the slide (a sensor, or a rewound body, 16 above the player), not as its
    # own straight path cut into pieces. The coin at (4, 8, 16) is on the bend (t 0.63).
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0), into_mask=BitMask32.bit(1))
    for i in range(300):
        far = node(render, f"far{i}", (200 + 3 * (i % 20), 200 + 3 * (i // 20), 0))
        ccd.add_sphere(far, 0.2, response="sensor", static=True)
    coin = node(render, "coin", (4, 8, 16))
    ccd.add_sphere(coin, 0.2, response=response, static=True, into_mask=BitMask32.bit(2))
    player = node(render, "player")
    ccd.add_sphere(player, 1.0, response="slide", from_mask=BitMask32.bit(1))
    top = node(player, "top", (0, 0, 16))
    ccd.add_sphere(top, 1.5, response=response, from_mask=BitMask32.bit(2), into_mask=0)
    ccd.step()
    player.setPos(10, 10, 0)
    contacts = ccd.step()
    assert met(contacts) == [("player", "wall", 0.4), ("top", "coin", 0.63)]
    assert_vec(pos(player, render), (4, 10, 0) if response == "sensor" else (4, 6.3, 0))


@pytest.mark.parametrize("kind", ["box", "sphere"])
def test_a_sensor_on_a_sliding_body_goes_round_the_bend_with_it(base, ccd, recorder, kind):
    # The player slides along the wall at x 5 from t 0.4 on, up to y 10: its pickup radius
    # takes the pickup at (4, 8) on the way (y 6.3, t 0.63), not the one at (8, 8) on its
    # own straight path.
    render = base.render
    wall(ccd, render, "wall", (-1, 0, 0), (5, 0, 0), into_mask=BitMask32.bit(1))
    pickup(ccd, render, "bent", (4, 8, 0), kind)
    pickup(ccd, render, "straight", (8, 8, 0), kind)
    player = player_with_pickup_radius(ccd, render, "slide")
    player.setPos(10, 10, 0)
    contacts = ccd.step()
    assert_vec(pos(player, render), (4, 10, 0))
    both = [("bent", "pickup-radius", 0.63), ("bent", "player-c", 0.68)] * (kind == "sphere")
    assert met(contacts) == both + [
        ("pickup-radius", "bent", 0.63), ("pickup-radius", "wall", 0.35),
        ("player-c", "bent", 0.68), ("player-c", "wall", 0.4),
    ]  # fmt: skip
    entry = next(c for c in contacts if c.from_np.getName() == "pickup-radius" and c.t > 0.6)
    assert_vec(entry.getSurfacePoint(render), (4, 7.8, 0))  # the box's face, the sphere's side
    assert_vec(entry.from_pos, (4, 6.3, 0))  # on the bend, where the player then was
    assert "pickup-radius-into-straight" not in recorder.names()


def test_no_collision_between_the_solids_of_one_node(base, ccd, recorder):
    render = base.render
    body = render.attachNewNode(CollisionNode("body"))
    body.node().addSolid(CollisionSphere(-1, 0, 0, 1.5))
    body.node().addSolid(CollisionSphere(1, 0, 0, 1.5))  # overlapping halves of one body
    ccd.add_collision_node(body)
    body.setPos(5, 3, 1)
    assert ccd.step() == []
    assert_vec(pos(body, render), (5, 3, 1))


def test_a_spinning_node_does_not_collide_with_itself(base, ccd, recorder):
    render = base.render
    body = render.attachNewNode(CollisionNode("body"))
    body.node().addSolid(CollisionSphere(-1, 0, 0, 0.8))
    body.node().addSolid(CollisionSphere(1, 0, 0, 0.8))  # 0.4 apart, never overlapping
    ccd.add_collision_node(body)
    body.setH(90)
    assert ccd.step() == []
    assert recorder.sent == []
    assert body.getH() == pytest.approx(90, abs=1e-4)


# ---------------------------------------------------------------------------- contact
def test_contact_fields_against_a_plane(base, ccd):
    render = base.render
    floor_np = floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    base.taskMgr.step()  # advance the clock past the first frame
    ball.setPos(3, 0, -5)
    # The clock ticks at the end of taskMgr.step(): this frame's time is the current one.
    frame_time = base.clock.getFrameTime()
    base.taskMgr.step()
    (c,) = ccd.contacts
    assert c.t == pytest.approx(0.4, abs=1e-12)
    assert c.time == pytest.approx(frame_time - 0.6 / 60, abs=1e-9)
    assert c.from_np == ball and c.into_np == floor_np
    assert_vec(c.point, (1.2, 0, 0))
    assert_vec(c.normal, (0, 0, 1))
    assert c.approach_speed == pytest.approx(10 * 60, rel=1e-9)
    assert_vec(c.from_pos, (1.2, 0, 1))
    assert c.into_pos is None
    assert c.from_tangible and c.into_tangible
    # CollisionEntry's getters, in another node's space.
    other = node(render, "other", (1, 0, 0))
    other.setScale(2)
    assert c.getFromNodePath() == ball and c.getIntoNodePath() == floor_np
    assert c.getFromNode() == ball.node()
    assert c.getT() == c.t
    assert_vec(c.getSurfacePoint(render), (1.2, 0, 0))
    assert_vec(c.getSurfacePoint(other), (0.1, 0, 0))
    assert_vec(c.getSurfaceNormal(render), (0, 0, 1))
    assert_vec(c.getInteriorPoint(render), (1.2, 0, 0))
    assert_vec(c.getContactPos(render), (1.2, 0, 1))
    assert_vec(c.getContactNormal(render), (0, 0, 1))
    assert c.collided() and c.hasSurfacePoint() and c.getRespectPrevTransform()


def test_contact_fields_between_spheres(base, ccd):
    render = base.render
    a = node(render, "a", (0, -10, 0))
    b = node(render, "b", (0, 10, 0))
    ccd.add_sphere(a, 1.0)
    ccd.add_sphere(b, 2.0)
    ccd.step()  # first pass: sweeps nothing
    a.setPos(0, 10, 0)
    b.setPos(0, 0, 0)
    ab, ba = ccd.step()
    # distance 20 - 30 t reaches 1 + 2 at t = 17/30
    t = 17 / 30
    assert ab.t == pytest.approx(t, abs=1e-12) and ba.t == ab.t
    a_at, b_at = (0, -10 + 20 * t, 0), (0, 10 - 10 * t, 0)
    assert (ab.from_np, ab.into_np, ba.from_np, ba.into_np) == (a, b, b, a)
    assert_vec(ab.from_pos, a_at)
    assert_vec(ab.into_pos, b_at)
    assert_vec(ba.from_pos, b_at)
    assert_vec(ba.into_pos, a_at)
    assert_vec(ab.normal, (0, -1, 0))  # out of b, toward a
    assert_vec(ba.normal, (0, 1, 0))  # out of a, toward b
    assert_vec(ab.point, (0, b_at[1] - 2, 0))  # on b's surface
    assert_vec(ba.point, (0, a_at[1] + 1, 0))  # on a's surface
    assert ab.approach_speed == pytest.approx(30 * 60, rel=1e-9)
    assert ba.approach_speed == ab.approach_speed
    assert_vec(pos(a, render), a_at)
    assert_vec(pos(b, render), b_at)


def test_contacts_property_and_step_return_the_last_pass(base, ccd):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 5))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setZ(-5)
    returned = ccd.step()
    assert ccd.contacts == returned and len(returned) == 1
    copy = ccd.contacts
    copy.clear()
    assert len(ccd.contacts) == 1  # a copy each time
    assert ccd.step() == [] and ccd.contacts == []


# ---------------------------------------------------------------------------- no sticking
def test_resting_ball_slides_freely_along_the_floor(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 3))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setZ(-1)
    ccd.step()
    assert recorder.names() == ["ball-into-floor"]
    recorder.clear()
    for k in range(1, 50):
        target = (0.37 * k, -0.11 * k, 1.0)
        ball.setPos(*target)
        ccd.step()
        assert pos(ball, render) == tuple(LPoint3(*target))  # exactly where it was put
    assert recorder.names() == ["ball-out-floor"]


def test_resting_against_a_wall_leaves_it(base, ccd, recorder):
    render = base.render
    wall(ccd, render, "wall", (1, 0, 0), (0, 0, 0))
    ball = node(render, "ball", (5, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setX(-5)
    ccd.step()
    assert_vec(pos(ball, render), (1, 0, 0))
    ball.setPos(1.5, 2, 0)
    ccd.step()
    assert pos(ball, render) == (1.5, 2.0, 0.0)
    assert recorder.names() == ["ball-into-wall", "ball-out-wall"]


def test_resting_against_a_sphere_leaves_it(base, ccd, recorder):
    render = base.render
    post = node(render, "post")
    ccd.add_sphere(post, 1.0, static=True)
    ball = node(render, "ball", (5, 0, 0))
    ccd.add_sphere(ball, 1.0)
    ccd.step()  # first pass: sweeps nothing
    ball.setX(-5)
    ccd.step()
    assert_vec(pos(ball, render), (2, 0, 0))
    # Around the post, tangentially, then away.
    ball.setPos(2, 0.001, 0)
    ccd.step()
    ball.setPos(4, 1, 0)
    ccd.step()
    assert pos(ball, render) == tuple(LPoint3(4, 1, 0))
    assert sorted(recorder.names()) == [
        "ball-into-post",
        "ball-out-post",
        "post-into-ball",
        "post-out-ball",
    ]


def test_slide_pushed_diagonally_keeps_its_tangential_motion_every_frame(base, ccd, recorder):
    render = base.render
    floor(ccd, render)
    ball = node(render, "ball", (0, 0, 1))  # resting
    ccd.add_sphere(ball, 1.0, response="slide")
    ccd.step()  # first pass: sweeps nothing
    for k in range(1, 30):
        ball.setPos(ball.getPos() + LVector3(1, 0.5, -1))
        ccd.step()
        assert_vec(pos(ball, render), (k, 0.5 * k, 1))
    assert recorder.names() == ["ball-into-floor"] + ["ball-again-floor"] * 28


def test_the_round_cap_warns_once_counts_and_never_holds_a_kinematic_sphere(
    base, ccd, monkeypatch
):
    """The cap holds the bodies the unresolved contacts reach, where they were at the
    earliest of them; a kinematic sphere among them stays where the game put it."""
    import panda3d_ccd._solver as solver
    import panda3d_ccd.component as component

    warned = []
    monkeypatch.setattr(component.notify, "warning", warned.append)
    monkeypatch.setattr(solver, "MAX_ROUNDS", 1)
    render = base.render
    wall = node(render, "wall")
    ccd.add_plane(wall, LPlane(LVector3(-1, 0, 0), LPoint3(10, 0, 0)))
    # A queue: each ball can only be stopped once the one ahead of it has been.
    balls = [node(render, f"ball{k}", (-3.0 * k, 0, 0)) for k in range(4)]
    for ball in balls:
        ccd.add_sphere(ball, 1.0)
    pusher = node(render, "pusher", (-12, 0, 0))  # behind the queue, moved by the game
    ccd.add_sphere(pusher, 1.0, response="kinematic")
    ccd.step()  # first pass: sweeps nothing
    for frame in range(3):
        for k, ball in enumerate(balls):
            ball.setX(-3.0 * k + 30.0 * (frame + 1))
        pusher.setX(-12 + 30.0 * (frame + 1))
        ccd.step()
        assert_vec(pos(pusher, render), (-12 + 30.0 * (frame + 1), 0, 0))
    assert ccd.capped_passes == 3
    assert len(warned) == 1 and "round" in warned[0]


@pytest.mark.parametrize(
    "scale0, scale1, expected",
    [((1, 1, 1), (-1, 1, 1), (-1, 1, 1)),
     # Growing 1 -> 3 and flipped: x + r = 20 t + 1 + 2 t meets the wall at t = 9 / 22,
     # at size 1 + 2 t = 20 / 11, mirrored.
     ((1, 1, 1), (-3, 3, 3), (-20 / 11, 20 / 11, 20 / 11))],
    ids=["flipped", "flipped-and-growing"],
)  # fmt: skip
def test_a_body_mirrored_in_the_frame_it_stops_keeps_its_size_and_its_mirror(
    base, ccd, scale0, scale1, expected
):
    """A 2D-style character turned to face the other way with setSx(-1) in the frame it
    runs into a wall: rewound, its scale is each axis's size where it stopped, mirrored as
    the game left it; never an axis through 0 (a flat, singular node)."""
    render = base.render
    wall = node(render, "wall")
    ccd.add_plane(wall, LPlane(LVector3(-1, 0, 0), LPoint3(10, 0, 0)))  # solid beyond x = 10
    hero = node(render, "hero", (0, 0, 0))
    hero.setScale(*scale0)
    ccd.add_sphere(hero, 1.0)
    ccd.step()
    hero.setScale(*scale1)
    hero.setX(20)
    ccd.step()
    assert_vec(hero.getScale(), expected)
    assert_vec(pos(hero, render), (10 - max(map(abs, expected)), 0, 0))
