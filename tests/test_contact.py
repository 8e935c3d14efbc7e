"""Contact: construction, validation, and CollisionEntry-compatible getters."""

from __future__ import annotations

import math

import pytest
from panda3d.core import (
    CollisionHandlerQueue,
    CollisionNode,
    CollisionSphere,
    CollisionTraverser,
    LMatrix4,
    LPoint3,
    LVector3,
    NodePath,
)

from panda3d_ccd.contact import Contact


@pytest.fixture
def scene():
    """A root, a from and an into node, and two transformed spaces with exact matrices.

    ``a`` maps local (x, y, z) to world (1 - 2y, 2 + 2x, 3 + 2z): a 90 degree turn about Z,
    scale 2, translation (1, 2, 3). ``b`` (child of ``a``) maps (x, y, z) to a's
    (x, -4z, 4y - 1). Their entries are small powers of two, so Panda3D's float32
    arithmetic is exact and the getters can be compared with ``==``.
    """
    root = NodePath("render")
    ball = root.attach_new_node("ball")
    wall = root.attach_new_node("wall")
    a = root.attach_new_node("a")
    a.set_mat(LMatrix4(0, 2, 0, 0, -2, 0, 0, 0, 0, 0, 2, 0, 1, 2, 3, 1))
    b = a.attach_new_node("b")
    b.set_mat(LMatrix4(1, 0, 0, 0, 0, 0, 4, 0, 0, -4, 0, 0, 0, 0, -1, 1))
    return root, ball, wall, a, b


def make(root, ball, wall, **over):
    kw = dict(
        t=0.25,
        time=12.5,
        from_np=ball,
        into_np=wall,
        point=(3, 4, 5),
        normal=(0, 0, 1),
        approach_speed=2.0,
        from_pos=(3, 4, 6),
        into_pos=(3, 4, 4),
        from_tangible=True,
        into_tangible=False,
        world=root,
    )
    kw.update(over)
    return Contact(**kw)


def test_attributes_hold_the_given_values(scene):
    root, ball, wall, _, _ = scene
    c = make(root, ball, wall)
    assert (c.t, c.time, c.approach_speed) == (0.25, 12.5, 2.0)
    assert c.from_np == ball and c.into_np == wall and c.world == root
    assert c.from_node_path == ball and c.into_node_path == wall
    assert c.from_node == ball.node() and c.into_node == wall.node()
    assert type(c.point) is LPoint3 and c.point == LPoint3(3, 4, 5)
    assert type(c.normal) is LVector3 and c.normal == LVector3(0, 0, 1)
    assert type(c.from_pos) is LPoint3 and c.from_pos == LPoint3(3, 4, 6)
    assert type(c.into_pos) is LPoint3 and c.into_pos == LPoint3(3, 4, 4)
    assert (c.from_tangible, c.into_tangible) == (True, False)
    assert c.respect_prev_transform is True
    assert make(root, ball, wall, into_pos=None).into_pos is None


def test_is_immutable(scene):
    root, ball, wall, _, _ = scene
    src = LPoint3(3, 4, 5)
    c = make(root, ball, wall, point=src)
    src.set(9, 9, 9)  # the caller's vector is copied in
    c.point.set(8, 8, 8)  # and copied out
    c.get_surface_point(root).set(7, 7, 7)
    assert c.point == LPoint3(3, 4, 5)
    with pytest.raises(AttributeError):
        c.t = 0.5
    with pytest.raises(AttributeError):
        c.extra = 1
    assert not hasattr(c, "__dict__")


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("t", -0.1, "t must be a finite number in [0, 1], got -0.1"),
        ("t", 1.5, "t must be a finite number in [0, 1], got 1.5"),
        ("t", math.nan, "t must be a finite number in [0, 1], got nan"),
        ("t", "soon", "t must be a finite number, got 'soon'"),
        ("time", math.inf, "time must be a finite number, got inf"),
        ("approach_speed", -1.0, "approach_speed must be finite and >= 0, got -1.0"),
        ("approach_speed", math.nan, "approach_speed must be finite and >= 0, got nan"),
        ("point", (1, 2), "point must be a sequence of 3 finite numbers, got (1, 2)"),
        (
            "normal",
            (0, math.nan, 1),
            "normal must be a sequence of 3 finite numbers, got (0, nan, 1)",
        ),
        ("from_pos", None, "from_pos must be a sequence of 3 finite numbers, got None"),
        ("into_pos", "abc", "into_pos must be a sequence of 3 finite numbers, got 'abc'"),
        ("from_np", NodePath(), "from_np must be a non-empty NodePath, got "),
        ("into_np", "wall", "into_np must be a non-empty NodePath, got 'wall'"),
        ("world", None, "world must be a non-empty NodePath, got None"),
    ],
)
def test_bad_input_raises_value_error_naming_it(scene, field, value, message):
    root, ball, wall, _, _ = scene
    with pytest.raises(ValueError) as info:
        make(root, ball, wall, **{field: value})
    assert str(info.value).startswith(message)


def test_keyword_only(scene):
    root, ball, wall, _, _ = scene
    with pytest.raises(TypeError):
        Contact(0.5, 0.0, ball, wall)  # type: ignore[misc]


def test_getters_in_world_space(scene):
    root, ball, wall, _, _ = scene
    c = make(root, ball, wall)
    assert c.getSurfacePoint(root) == LPoint3(3, 4, 5)
    assert c.getInteriorPoint(root) == LPoint3(3, 4, 5)
    assert c.getSurfaceNormal(root) == LVector3(0, 0, 1)
    assert c.getContactNormal(root) == LVector3(0, 0, 1)
    assert c.getContactPos(root) == LPoint3(3, 4, 6)
    assert c.getT() == 0.25
    assert c.getFromNodePath() == ball and c.getIntoNodePath() == wall
    assert c.getFromNode() == ball.node() and c.getIntoNode() == wall.node()


def test_getters_relative_to_transformed_nodes(scene):
    root, ball, wall, a, b = scene
    c = make(root, ball, wall)
    # World (3, 4, 5) in a: 1 - 2y = 3, 2 + 2x = 4, 3 + 2z = 5.
    assert c.getSurfacePoint(a) == LPoint3(1, -1, 1)
    assert c.getInteriorPoint(a) == LPoint3(1, -1, 1)
    assert c.getContactPos(a) == LPoint3(1, -1, 1.5)
    # Vectors ignore translation and, like CollisionEntry, are scaled, not renormalised.
    assert c.getSurfaceNormal(a) == LVector3(0, 0, 0.5)
    assert c.getContactNormal(a) == LVector3(0, 0, 0.5)
    # a's (1, -1, 1) in b: x = 1, -4z = -1, 4y - 1 = 1.
    assert c.getSurfacePoint(b) == LPoint3(1, 0.5, 0.25)
    assert c.getContactPos(b) == LPoint3(1, 0.625, 0.25)
    assert c.getSurfaceNormal(b) == LVector3(0, 0.125, 0)
    assert type(c.getSurfacePoint(b)) is LPoint3 and type(c.getSurfaceNormal(b)) is LVector3


def test_world_other_than_the_root(scene):
    root, ball, wall, a, b = scene
    # The same physical contact, stored relative to ``a`` instead of the root.
    c = make(root, ball, wall, world=a, point=(1, -1, 1), normal=(0, 0, 0.5), from_pos=(1, -1, 1.5))
    assert c.getSurfacePoint(root) == LPoint3(3, 4, 5)
    assert c.getContactPos(root) == LPoint3(3, 4, 6)
    assert c.getSurfaceNormal(root) == LVector3(0, 0, 1)
    assert c.getSurfacePoint(b) == LPoint3(1, 0.5, 0.25)
    # An empty NodePath means the root of the graph, as in CollisionEntry.
    assert c.getSurfacePoint(NodePath()) == LPoint3(3, 4, 5)
    assert c.getSurfaceNormal(NodePath()) == LVector3(0, 0, 1)


def test_get_all_fill_in_place(scene):
    root, ball, wall, a, _ = scene
    c = make(root, ball, wall)
    sp, sn, ip = LPoint3(), LVector3(), LPoint3()
    assert c.getAll(a, sp, sn, ip) is True
    assert (sp, sn, ip) == (LPoint3(1, -1, 1), LVector3(0, 0, 0.5), LPoint3(1, -1, 1))
    cp, cn = LPoint3(), LVector3()
    assert c.getAllContactInfo(a, cp, cn) is True
    assert (cp, cn) == (LPoint3(1, -1, 1.5), LVector3(0, 0, 0.5))


def test_flags(scene):
    root, ball, wall, _, _ = scene
    c = make(root, ball, wall)
    flags = [
        c.hasSurfacePoint(),
        c.hasSurfaceNormal(),
        c.hasInteriorPoint(),
        c.hasContactPos(),
        c.hasContactNormal(),
        c.getRespectPrevTransform(),
        c.collided(),
    ]
    assert flags == [True] * 7


CAMEL_SNAKE = [
    ("getFromNodePath", "get_from_node_path"),
    ("getIntoNodePath", "get_into_node_path"),
    ("getFromNode", "get_from_node"),
    ("getIntoNode", "get_into_node"),
    ("getSurfacePoint", "get_surface_point"),
    ("getSurfaceNormal", "get_surface_normal"),
    ("getInteriorPoint", "get_interior_point"),
    ("getContactPos", "get_contact_pos"),
    ("getContactNormal", "get_contact_normal"),
    ("getAll", "get_all"),
    ("getAllContactInfo", "get_all_contact_info"),
    ("getT", "get_t"),
    ("getRespectPrevTransform", "get_respect_prev_transform"),
    ("hasSurfacePoint", "has_surface_point"),
    ("hasSurfaceNormal", "has_surface_normal"),
    ("hasInteriorPoint", "has_interior_point"),
    ("hasContactPos", "has_contact_pos"),
    ("hasContactNormal", "has_contact_normal"),
]


@pytest.mark.parametrize("camel, snake", CAMEL_SNAKE)
def test_camel_case_twins_are_the_same_method(camel, snake):
    from panda3d.core import CollisionEntry

    assert getattr(Contact, camel) is getattr(Contact, snake)
    # ... and both names exist on Panda3D's CollisionEntry, so handlers port unchanged.
    assert hasattr(CollisionEntry, camel) and hasattr(CollisionEntry, snake)


def test_repr(scene):
    root, ball, wall, _, _ = scene
    c = make(root, ball, wall, t=0.4, point=(1.5, -2, 0), normal=(0, 1, 0))
    assert repr(c) == (
        "Contact(from=render/ball into=render/wall t=0.4 point=(1.5, -2, 0) normal=(0, 1, 0))"
    )


def test_getters_match_a_real_collision_entry():
    """Build a Contact from Panda3D's own CollisionEntry and compare every getter.

    The into sphere sits under rotated, scaled and translated parents, so the entry stores
    its values in a transformed space and converts them; the Contact stores world values
    and must give the same answers in every space.
    """
    render = NodePath("render")
    parent = render.attach_new_node("parent")
    parent.set_pos(2, -1, 0.5)
    parent.set_hpr(30, 10, -20)
    parent.set_scale(1.5)
    into = parent.attach_new_node(CollisionNode("wall"))
    into.node().add_solid(CollisionSphere(0.2, 0, 0, 1))
    into.set_h(45)
    ball = render.attach_new_node(CollisionNode("ball"))
    ball.node().add_solid(CollisionSphere(0, 0, 0, 0.5))
    ball.set_pos(into.get_pos(render) + LVector3(1.2, 0.4, 0.3))
    other = render.attach_new_node("other")
    other.set_pos(-3, 4, 1)
    other.set_hpr(-60, 25, 5)
    other.set_scale(0.5, 2, 1.25)

    trav = CollisionTraverser()
    queue = CollisionHandlerQueue()
    trav.add_collider(ball, queue)
    trav.traverse(render)
    assert queue.get_num_entries() == 1
    entry = queue.get_entry(0)

    c = Contact(
        t=0.5,
        time=0.0,
        from_np=entry.get_from_node_path(),
        into_np=entry.get_into_node_path(),
        point=entry.get_surface_point(render),
        normal=entry.get_surface_normal(render),
        approach_speed=0.0,
        from_pos=entry.get_contact_pos(render),
        into_pos=None,
        from_tangible=True,
        into_tangible=True,
        world=render,
    )
    for space in (render, parent, into, ball, other, NodePath()):
        for name in (
            "get_surface_point",
            "get_surface_normal",
            "get_contact_pos",
            "get_contact_normal",
        ):
            ours, theirs = getattr(c, name)(space), getattr(entry, name)(space)
            assert type(ours) is type(theirs)
            assert tuple(ours) == pytest.approx(tuple(theirs), abs=1e-5), (name, space)
    assert c.get_from_node_path() == entry.get_from_node_path() == ball
    assert c.get_into_node_path() == entry.get_into_node_path() == into
    assert c.get_into_node() == entry.get_into_node()


def test_an_event_names_the_into_solid_as_the_traversers_entry_does(base, ccd, recorder):
    """Balls dropped onto a node of two spheres, onto a floor plane and onto a sphere added
    with add_sphere: each event's getIntoSolid() is the solid hit (the second sphere of
    the pair, as a CollisionTraverser's entry names it; the CollisionPlane), and None for
    the sphere given without a solid."""
    from panda3d.core import CollisionPlane, LPlane, LPoint3

    render = base.render

    def node(name, *solids, pos):
        path = render.attach_new_node(CollisionNode(name))
        for solid in solids:
            path.node().add_solid(solid)
        path.set_pos(*pos)
        return path

    first, second = CollisionSphere(-3, 0, 0, 1), CollisionSphere(3, 0, 0, 1)
    plane = CollisionPlane(LPlane((0, 0, 1), LPoint3(0, 0, -5)))
    pair = node("pair", first, second, pos=(0, 0, 0))
    floor = node("floor", plane, pos=(0, 0, 0))
    ccd.add_collision_node(pair, response="kinematic")
    ccd.add_collision_node(floor)
    bare = render.attach_new_node("bare")
    bare.set_pos(-20, 0, 0)
    ccd.add_sphere(bare, 1.0, response="kinematic")
    balls = {
        "onpair": node("onpair", CollisionSphere(0, 0, 0, 0.5), pos=(3, 0, 4)),
        "onfloor": node("onfloor", CollisionSphere(0, 0, 0, 0.5), pos=(10, 0, 0)),
        "onbare": node("onbare", CollisionSphere(0, 0, 0, 0.5), pos=(-20, 0, 4)),
    }
    for ball in balls.values():
        ccd.add_collision_node(ball)
    ccd.step()
    for ball in balls.values():
        ball.set_z(ball.get_z() - 6)
    recorder.clear()
    ccd.step()
    got = {name: c.getIntoSolid() for name, c in recorder.sent if "-into-" in name}
    assert got["onpair-into-pair"] == second and got["onfloor-into-floor"] == plane
    assert got["onbare-into-bare"] is None
    # The kinematic pair's own from side names the ball's solid.
    assert got["pair-into-onpair"] == balls["onpair"].node().get_solid(0)
    # Panda3D's traverser names the same solid of the pair for that contact.
    probe = node("probe", CollisionSphere(0, 0, 0, 0.5), pos=(3, 0, 1.45))
    trav, queue = CollisionTraverser(), CollisionHandlerQueue()
    trav.add_collider(probe, queue)
    trav.traverse(render)
    entries = [queue.get_entry(i) for i in range(queue.get_num_entries())]
    assert [e.into_solid for e in entries if e.get_into_node_path() == pair] == [second]


def test_get_from_get_into_and_has_into_name_the_solids_as_the_traversers_entry_does(
    base, ccd, recorder
):
    """CollisionEntry's solid getters on a Contact: a ball of two spheres (its second one
    hits) dropped on a polygon, the same scene through Panda3D's traverser; a ray
    collider's contact names its segment; a sphere added with add_sphere and a plane added
    with add_plane have no solid (None, hasInto() False); a scene query has no from node."""
    from panda3d.core import CollisionPolygon, CollisionSegment, LPlane, LPoint3

    render = base.render
    floor = render.attach_new_node(CollisionNode("floor"))
    tile = CollisionPolygon(LPoint3(-5, -5, 0), LPoint3(5, -5, 0), LPoint3(5, 5, 0),
                            LPoint3(-5, 5, 0))  # fmt: skip
    floor.node().add_solid(tile)
    ball = render.attach_new_node(CollisionNode("ball"))
    high, low = CollisionSphere(0, 0, 1, 0.5), CollisionSphere(0, 0, 0, 0.5)
    ball.node().add_solid(high)
    ball.node().add_solid(low)
    ball.set_pos(0, 0, 0.3)  # only the low sphere reaches into the floor
    trav, queue = CollisionTraverser(), CollisionHandlerQueue()
    trav.add_collider(ball, queue)
    trav.traverse(render)
    entry = queue.get_entry(0)
    assert queue.get_num_entries() == 1 and entry.get_from() == low
    ball.set_pos(0, 0, 5)
    ccd.add_collision_node(floor, static=True)
    ccd.add_collision_node(ball)
    shot = render.attach_new_node(CollisionNode("shot"))
    segment = CollisionSegment(2, 2, 3, 2, 2, -3)
    shot.node().add_solid(segment)
    ccd.add_collision_node(shot)
    bare = render.attach_new_node("bare")
    bare.set_pos(20, 0, 5)
    ccd.add_sphere(bare, 0.5)
    ccd.add_plane(render.attach_new_node("ground"), LPlane((0, 0, 1), LPoint3(0, 0, -1)))
    ccd.step()
    recorder.clear()
    ball.set_fluid_pos(0, 0, -2)
    bare.set_fluid_pos(20, 0, -3)
    ccd.step()
    got = dict(recorder.sent)
    c = got["ball-into-floor"]
    assert (c.getFrom(), c.getInto(), c.hasInto()) == (entry.get_from(), entry.get_into(), True)
    assert c.getInto() == tile and c.from_solid == low
    c = got["shot-again-floor"]  # (its in was the first pass's)
    assert (c.getFrom(), c.getInto(), c.hasInto()) == (segment, tile, True)
    c = got["bare-into-ground"]
    assert (c.getFrom(), c.getInto(), c.hasInto()) == (None, None, False)
    hit = ccd.ray_test_closest((3, 3, 3), (3, 3, -3))
    assert hit.getIntoNodePath() == floor and hit.getInto() == tile
    assert hit.getFromNodePath().is_empty() and hit.getFromNode() is None
    assert hit.getFrom() is None
