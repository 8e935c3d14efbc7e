"""Ray colliders: CollisionRay, CollisionSegment and CollisionLine nodes registered with
``add_collision_node``, cast each pass once the bodies are resolved.

The oracle is Panda3D's own CollisionTraverser with a CollisionHandlerEvent over the very
same scene graph, traversed right after each pass: the same event names, frame by frame,
and the same surface points and normals (Panda3D computes in float32). Where the two
differ by design (a polygon's back, a ray starting inside a solid, a node of several
solids), the difference is pinned too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from panda3d.core import (
    BitMask32,
    CollisionBox,
    CollisionCapsule,
    CollisionHandlerEvent,
    CollisionHandlerQueue,
    CollisionLine,
    CollisionNode,
    CollisionPlane,
    CollisionPolygon,
    CollisionRay,
    CollisionSegment,
    CollisionSphere,
    CollisionTraverser,
    EventQueue,
    LPlane,
    LPoint3,
    LVector3,
    NodePath,
)
from scene_nodes import collision_node, ray_node

PATTERNS = ("%fn-into-%in", "%fn-again-%in", "%fn-out-%in")
#: Panda3D's answers are float32: points agree to this, relative to the scene's size.
TOL = 2e-5


# ---------------------------------------------------------------------------- helpers
class Traverser:
    """Panda3D's CollisionTraverser with a CollisionHandlerEvent on the same patterns (its
    events read straight off the global event queue after each traversal), and one with a
    CollisionHandlerQueue for this frame's entries: Panda3D 1.10's CollisionHandlerEvent
    sends an again event with the pair's entry of the frame before (pinned below)."""

    def __init__(self, render, rays):
        self.render = render
        self.trav = CollisionTraverser("events")
        self.handler = CollisionHandlerEvent()
        self.handler.addInPattern(PATTERNS[0])
        self.handler.addAgainPattern(PATTERNS[1])
        self.handler.addOutPattern(PATTERNS[2])
        self.now = CollisionTraverser("entries")
        self.entries = CollisionHandlerQueue()
        for ray in rays:
            self.trav.addCollider(ray, self.handler)
            self.now.addCollider(ray, self.entries)
        self.queue = EventQueue.getGlobalEventQueue()
        while not self.queue.isQueueEmpty():
            self.queue.dequeueEvent()

    def frame(self):
        """{event name: CollisionEntry of this frame for the pair}, of one traversal."""
        self.trav.traverse(self.render)
        self.now.traverse(self.render)
        current = {}
        for entry in self.entries.entries:
            # The first entry of a pair, as the CollisionHandlerEvent keeps it.
            current.setdefault((entry.getFromNodePath(), entry.getIntoNodePath()), entry)
        out = {}
        while not self.queue.isQueueEmpty():
            event = self.queue.dequeueEvent()
            entry = event.getParameter(0).getPtr()
            key = (entry.getFromNodePath(), entry.getIntoNodePath())
            out[event.name] = entry if "-out-" in event.name else current[key]
        return out


def plugin_frame(ccd, recorder, prefixes):
    """{event name: Contact} of one pass, the events of the ray nodes ``prefixes`` only."""
    recorder.clear()
    ccd.step()
    return {name: contact for name, contact in recorder.sent if name.split("-")[0] in prefixes}


def assert_same_frame(ours, theirs, render, scale=10.0):
    assert sorted(ours) == sorted(theirs)
    for name, contact in ours.items():
        entry = theirs[name]
        assert contact.getFromNodePath() == entry.getFromNodePath()
        assert contact.getIntoNodePath() == entry.getIntoNodePath()
        if "-out-" in name:
            continue
        np.testing.assert_allclose(
            contact.getSurfacePoint(render), entry.getSurfacePoint(render), atol=TOL * scale
        )
        np.testing.assert_allclose(
            contact.getSurfaceNormal(render), entry.getSurfaceNormal(render), atol=1e-5
        )


def quad(z, half_x, half_y):
    """A CollisionPolygon facing +z (counter-clockwise seen from above)."""
    return CollisionPolygon(
        LPoint3(-half_x, -half_y, z),
        LPoint3(half_x, -half_y, z),
        LPoint3(half_x, half_y, z),
        LPoint3(-half_x, half_y, z),
    )


def targets(ccd, render):
    """One target of each kind in its own lane (y), each crossing x = 0 as the frames go;
    a floor plane under everything. Returns (nodepath, x offset) of the movers."""
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1), pos=(0, 0, 1))
    ghost_sphere = CollisionSphere(0, 0, 0, 0.8)
    ghost_sphere.setTangible(False)
    ghost = collision_node(render, "ghost", ghost_sphere, pos=(0, 3, 0.5))
    crate = collision_node(render, "crate", CollisionBox(LPoint3(0, 0, 0), 1, 1, 1))
    crate.setPos(0, 6, 0)
    pill = collision_node(
        render, "pill", CollisionCapsule(LPoint3(0, -1, 0), LPoint3(0, 1, 0), 0.7), pos=(0, 9, 0)
    )
    panel = collision_node(render, "panel", quad(0.0, 1.5, 1.0), pos=(0, 12, 1))
    floor = collision_node(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, -5))))
    for np_ in (ball, ghost):
        ccd.add_collision_node(np_, response="kinematic")
    for np_ in (crate, pill, panel):
        ccd.add_collision_node(np_)
    ccd.add_collision_node(floor, static=True)
    return [(ball, 0.0), (ghost, 0.3), (crate, -0.4), (pill, 0.6), (panel, -0.2)]


def parade(movers, frame):
    # Steps of 0.7 from x = -4: no frame puts an edge or a tangent exactly on a ray.
    for np_, offset in movers:
        np_.setX(-4.0 + 0.7 * frame + offset)


# ------------------------------------------------------------------ against the traverser
def _rays(render, kind):
    """One ray collider of ``kind`` per lane, each looking down on its lane at x = 0."""
    rays = []
    for k in range(5):
        y = 3.0 * k
        if kind == "ray":
            solid = CollisionRay(0, 0, 10, 0, 0, -1)
        elif kind == "segment":  # down to below the targets, not to the floor
            solid = CollisionSegment(0, 0, 10, 0, 0, -2)
        else:  # a line, downwards: its first hit from minus infinity is from above
            solid = CollisionLine(0, 0, 3, 0, 0, -1)
        rays.append(ray_node(render, f"{kind}{k}", solid, pos=(0, y, 0)))
    return rays


@pytest.mark.parametrize("kind", ["ray", "segment", "line"])
def test_events_and_points_are_the_traversers_frame_by_frame(base, ccd, recorder, kind):
    render = base.render
    movers = targets(ccd, render)
    rays = _rays(render, kind)
    for ray in rays:
        ccd.add_collision_node(ray)
    oracle = Traverser(render, rays)
    names = {ray.getName() for ray in rays}
    seen = set()
    for frame in range(13):
        parade(movers, frame)
        ours = plugin_frame(ccd, recorder, names)
        assert_same_frame(ours, oracle.frame(), render)
        seen.update(tuple(name.split("-")[1:]) for name in ours)
    # Every kind of target was entered, touched again and left over the frames; the floor,
    # under everything, is reached by the rays and the lines.
    for target in ("ball", "ghost", "crate", "pill", "panel"):
        for event in ("into", "again", "out"):
            assert (event, target) in seen
    assert (("into", "floor") in seen) is (kind != "segment")


def test_turned_and_scaled_rays_agree_with_the_traverser(base, ccd, recorder):
    """A ray's origin and direction are in its node's space, under a turned, scaled parent."""
    render = base.render
    movers = targets(ccd, render)
    rig = render.attachNewNode("rig")
    rig.setPosHprScale((0.5, 5, 2), (20, -35, 10), (2, 2, 2))
    rays = [
        ray_node(rig, "tilted", CollisionRay(0, 0, 3, 0.1, 0.2, -1)),
        ray_node(rig, "across", CollisionSegment(-6, -1, -1, 6, 2, -2)),
        ray_node(rig, "through", CollisionLine(0, 1, 0, 0.3, -0.2, -1)),
    ]
    for ray in rays:
        ccd.add_collision_node(ray)
    oracle = Traverser(render, rays)
    hits = 0
    for frame in range(13):
        parade(movers, frame)
        rig.setH(20 + 3 * frame)
        ours = plugin_frame(ccd, recorder, {"tilted", "across", "through"})
        assert_same_frame(ours, oracle.frame(), render, scale=20.0)
        hits += len(ours)
    assert hits >= 20


def test_a_line_is_hit_first_from_minus_infinity(base, ccd, recorder):
    """Aimed up, a line meets a sphere's bottom first, wherever its origin lies."""
    render = base.render
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1), pos=(0, 0, 5))
    ccd.add_collision_node(ball, response="kinematic")
    up = ray_node(render, "up", CollisionLine(0, 0, 20, 0, 0, 1))
    ccd.add_collision_node(up)
    oracle = Traverser(render, [up])
    ours = plugin_frame(ccd, recorder, {"up"})
    assert list(ours) == ["up-into-ball"]
    assert tuple(ours["up-into-ball"].getSurfacePoint(render)) == (0, 0, 4)
    assert_same_frame(ours, oracle.frame(), render)


def test_a_line_meets_a_plane_behind_its_origin(base, ccd, recorder):
    """Aimed down from under the floor, a line still comes down onto it from above."""
    render = base.render
    floor = collision_node(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    ccd.add_collision_node(floor)
    down = ray_node(render, "down", CollisionLine(0, 0, -3, 0.5, 0, -1))
    ccd.add_collision_node(down)
    oracle = Traverser(render, [down])
    ours = plugin_frame(ccd, recorder, {"down"})
    assert list(ours) == ["down-into-floor"]
    assert tuple(ours["down-into-floor"].getSurfacePoint(render)) == (-1.5, 0, 0)
    assert_same_frame(ours, oracle.frame(), render)


def test_masks_decide_as_for_the_traverser(base, ccd, recorder):
    render = base.render
    bit0, bit1 = BitMask32.bit(0), BitMask32.bit(1)
    for name, y, mask in (("zero", 0, bit0), ("one", 3, bit1), ("both", 6, bit0 | bit1)):
        np_ = collision_node(
            render, name, CollisionSphere(0, 0, 0, 1), pos=(0, y, 0), into_mask=mask
        )
        ccd.add_collision_node(np_, response="kinematic")
    segment = CollisionSegment(0, -5, 0, 0, 10, 0)
    rays = [ray_node(render, "r0", segment, from_mask=bit0),
            ray_node(render, "r1", segment, from_mask=bit1),
            ray_node(render, "rnone", segment, from_mask=BitMask32.allOff())]  # fmt: skip
    for ray in rays:
        ccd.add_collision_node(ray)
    oracle = Traverser(render, rays)
    ours = plugin_frame(ccd, recorder, {"r0", "r1", "rnone"})
    assert sorted(ours) == ["r0-into-both", "r0-into-zero", "r1-into-both", "r1-into-one"]
    assert_same_frame(ours, oracle.frame(), render)


# ------------------------------------------------------------------ the Roaming Ralph idiom
def terrain_height(x, y):
    return 0.15 * x + 0.8 * math.sin(0.3 * y) + 0.02 * x * y


def terrain(render, size=20.0, cells=16):
    """A sloped, curved heightfield of triangles in one CollisionNode, into bit 0."""
    cnode = CollisionNode("terrain")
    step = 2 * size / cells

    def p(i, j):
        x, y = -size + i * step, -size + j * step
        return LPoint3(x, y, terrain_height(x, y))

    for i in range(cells):
        for j in range(cells):
            cnode.addSolid(CollisionPolygon(p(i, j), p(i + 1, j), p(i + 1, j + 1)))
            cnode.addSolid(CollisionPolygon(p(i, j), p(i + 1, j + 1), p(i, j + 1)))
    cnode.setIntoCollideMask(BitMask32.bit(0))
    cnode.setFromCollideMask(BitMask32.allOff())
    return render.attachNewNode(cnode)


def test_roaming_ralphs_ground_ray_works_unchanged(base, ccd, listener):
    """The sample's ground ray, with its handler on the in and again events: the player's Z
    follows the ground every frame, where Panda3D's traverser finds it under the player."""
    render = base.render
    level = terrain(render)
    ccd.add_collision_nodes(level, static=True)
    ralph = render.attachNewNode("ralph")
    ralph.setPos(-15, -12, 0)

    # As in the sample (its handler is a queue; here the events a CollisionHandlerEvent
    # would send): a ray from above the player's head, straight down, bit 0 only.
    ray = CollisionRay()
    ray.setOrigin(0, 0, 9)
    ray.setDirection(0, 0, -1)
    ray_col = CollisionNode("ralphRay")
    ray_col.addSolid(ray)
    ray_col.setFromCollideMask(BitMask32.bit(0))
    ray_col.setIntoCollideMask(BitMask32.allOff())
    ray_np = ralph.attachNewNode(ray_col)
    ccd.add_collision_node(ray_np)

    def on_ground(entry):
        ralph.setZ(entry.getSurfacePoint(render).getZ())

    listener.accept("ralphRay-into-terrain", on_ground)
    listener.accept("ralphRay-again-terrain", on_ground)

    def walk(task):
        ralph.setPos(ralph.getPos() + LVector3(0.9, 0.65, 0))
        return task.cont

    base.taskMgr.add(walk, "walk", sort=0)
    # Panda3D's own traverser, at its usual place (collisionLoop, after the plugin's task):
    # the same ray, from where the player stands once the handler has set its Z.
    queue = CollisionHandlerQueue()
    base.cTrav = CollisionTraverser()
    base.cTrav.addCollider(ray_np, queue)
    heights = []
    for _frame in range(30):
        base.taskMgr.step()
        entries = sorted(queue.entries, key=lambda e: e.getSurfacePoint(render).getZ())
        assert len(entries) >= 1 and entries[0].getIntoNode().name == "terrain"
        ground = entries[0].getSurfacePoint(render).getZ()
        z = ralph.getZ()
        assert z == pytest.approx(ground, abs=TOL * 20)
        assert z == pytest.approx(terrain_height(ralph.getX(), ralph.getY()), abs=0.2)
        heights.append(z)
    assert max(heights) - min(heights) > 3.0  # it did climb


# ------------------------------------------------------------------ what the rays see
def test_rays_see_the_bodies_where_the_pass_left_them(base, ccd, recorder):
    """A ball thrown through a wall is rewound to touch it; a ray over where the game put
    it misses, one over where the plugin left it hits, as the queries say."""
    render = base.render
    wall = collision_node(render, "wall", CollisionPlane(LPlane((-1, 0, 0), (5, 0, 0))))
    ccd.add_collision_node(wall)
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball)
    near = ray_node(render, "near", CollisionRay(4, 0, 10, 0, 0, -1))
    far = ray_node(render, "far", CollisionRay(9, 0, 10, 0, 0, -1))
    ccd.add_collision_node(near)
    ccd.add_collision_node(far)
    ccd.step()
    ball.setX(9)
    recorder.clear()
    ccd.step()
    assert ball.getX() == pytest.approx(4.0)
    assert recorder.names() == ["ball-into-wall", "near-into-ball"]
    hit = recorder.sent[1][1]
    assert tuple(hit.getSurfacePoint(render)) == pytest.approx((4, 0, 1))
    query = ccd.ray_test_closest((4, 0, 10), (4, 0, -10))
    assert query.getIntoNodePath() == ball
    assert tuple(query.getSurfacePoint(render)) == pytest.approx((4, 0, 1))


def test_a_segment_contact_is_the_ray_nodes(base, ccd, recorder):
    """Contact: from the ray's CollisionNode, t the fraction of the segment, the surface
    point as contact position, the into node's tangibility and solid."""
    render = base.render
    box_solid = CollisionBox(LPoint3(0, 0, 0), 1, 1, 1)
    box = collision_node(render, "box", box_solid, pos=(0, 0, 0))
    ccd.add_collision_node(box)
    probe = ray_node(render, "probe", CollisionSegment(0, 0, 9, 0, 0, -11))
    ccd.add_collision_node(probe)
    ccd.step()
    ((name, contact),) = recorder.sent
    assert name == "probe-into-box"
    assert contact.getFromNodePath() == probe and contact.getIntoNodePath() == box
    assert contact.getT() == pytest.approx(8 / 20)
    assert tuple(contact.getSurfacePoint(render)) == (0, 0, 1)
    assert tuple(contact.getContactPos(render)) == (0, 0, 1)
    assert tuple(contact.getSurfaceNormal(render)) == (0, 0, 1)
    assert contact.getIntoSolid() == box_solid
    assert contact.into_tangible and contact.from_tangible
    assert contact.feature == "face"
    assert ccd.contacts == [contact]


def test_ray_events_come_after_the_bodies_events(base, ccd, recorder):
    """The rays are cast once the frame's motion is resolved: a ray touching a ball near
    its own start still comes after the ball's hit late in the frame."""
    render = base.render
    wall = collision_node(render, "wall", CollisionPlane(LPlane((-1, 0, 0), (10, 0, 0))))
    ccd.add_collision_node(wall)
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball)
    ccd.step()
    ccd.add_collision_node(ray_node(render, "eye", CollisionRay(-3, 0, 0, 1, 0, 0)))
    ball.setX(9.5)
    recorder.clear()
    ccd.step()
    assert recorder.names() == ["ball-into-wall", "eye-into-ball", "eye-into-wall"]
    assert recorder.sent[0][1].getT() > recorder.sent[1][1].getT()


def test_a_body_handler_removing_the_ray_voids_its_events(base, ccd, recorder, listener):
    """Handlers run in the pass's order: the ball's hit removes the ray before the ray's own
    in event, which is then never sent, nor any out."""
    render = base.render
    wall = collision_node(render, "wall", CollisionPlane(LPlane((-1, 0, 0), (10, 0, 0))))
    ccd.add_collision_node(wall)
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball)
    ccd.step()
    eye = ray_node(render, "eye", CollisionRay(-3, 0, 0, 1, 0, 0))
    ccd.add_collision_node(eye)
    listener.accept("ball-into-wall", lambda entry: ccd.remove(eye))
    ball.setX(9.5)
    for _ in range(3):
        ccd.step()
    assert recorder.names() == ["ball-into-wall", "ball-out-wall"]  # it stays, touching
    assert ccd.colliders == 2


def test_a_level_with_a_ray_node_in_it(base, ccd, recorder):
    """add_collision_nodes takes a ray node among the level's nodes (default arguments)."""
    render = base.render
    level = render.attachNewNode("level")
    collision_node(level, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    ray_node(level, "probe", CollisionSegment(0, 0, 5, 0, 0, -5))
    assert sorted(n.getName() for n in ccd.add_collision_nodes(level)) == ["floor", "probe"]
    ccd.step()
    assert recorder.names() == ["probe-into-floor"]
    ccd.remove(level.find("probe"))
    ccd.remove(level.find("floor"))
    # A static level refuses its ray node, and with it the whole call.
    with pytest.raises(ValueError, match=r"^render/level/probe holds rays, cast each pass"):
        ccd.add_collision_nodes(level, static=True)
    assert ccd.colliders == 0


def test_one_contact_per_node_hit_the_nearest_of_its_solids(base, ccd, recorder):
    """Unlike the traverser, whose CollisionHandlerEvent keeps the first solid it tested."""
    render = base.render
    stack = collision_node(render, "stack", quad(0.0, 1, 1), quad(2.0, 1, 1))
    ccd.add_collision_node(stack)
    down = ray_node(render, "down", CollisionRay(0, 0, 9, 0, 0, -1))
    ccd.add_collision_node(down)
    oracle = Traverser(render, [down])
    ours = plugin_frame(ccd, recorder, {"down"})
    theirs = oracle.frame()
    assert list(ours) == list(theirs) == ["down-into-stack"]
    assert tuple(ours["down-into-stack"].getSurfacePoint(render)) == (0, 0, 2)
    assert tuple(theirs["down-into-stack"].getSurfacePoint(render)) == (0, 0, 0)


def test_one_contact_per_node_hit_the_nearest_of_its_spheres(base, ccd, recorder):
    """A node of two spheres is two rows of the world the rays are cast in, and still one
    (ray node, node) pair: one contact, at the nearer sphere (two were once handed to the
    pair tracker, which refused the frame)."""
    render = base.render
    pair = collision_node(render, "pair", CollisionSphere(0, 0, 2, 0.5),
                          CollisionSphere(0, 0, 0, 0.5))  # fmt: skip
    ccd.add_collision_node(pair)
    down = ray_node(render, "down", CollisionRay(0, 0, 9, 0, 0, -1))
    ccd.add_collision_node(down)
    ours = plugin_frame(ccd, recorder, {"down"})
    assert list(ours) == ["down-into-pair"] and recorder.names().count("down-into-pair") == 1
    assert tuple(ours["down-into-pair"].getSurfacePoint(render)) == (0, 0, 2.5)
    assert ours["down-into-pair"].getIntoSolid() == pair.node().getSolid(0)


def _behind_a_polygon(render):
    panel = collision_node(render, "panel", quad(0.0, 1, 1))
    return panel, CollisionRay(0, 0, -5, 0, 0, 1)


def _inside_a_sphere(render):
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    return ball, CollisionRay(0, 0, 0.5, 0, 0, 1)


def _a_line_out_of_a_plane(render):
    floor = collision_node(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    return floor, CollisionLine(0, 0, 5, 0, 0, 1)


@pytest.mark.parametrize("scene", [_behind_a_polygon, _inside_a_sphere, _a_line_out_of_a_plane])
def test_documented_differences_from_the_traverser(base, ccd, recorder, scene):
    """The plugin's contact rule (a surface is met approaching its front; from inside,
    going out, nothing) against the traverser, which hits a polygon's back, reports a ray
    starting inside a solid, and a line crossing a plane out of it."""
    render = base.render
    target, solid = scene(render)
    ccd.add_collision_node(target)
    probe = ray_node(render, "probe", solid)
    ccd.add_collision_node(probe)
    oracle = Traverser(render, [probe])
    assert plugin_frame(ccd, recorder, {"probe"}) == {}
    assert list(oracle.frame()) == [f"probe-into-{target.getName()}"]


# ------------------------------------------------------------------ a ray node's life
@pytest.fixture
def watched(base, ccd, recorder):
    """A ray resting on a ball: in, then again each pass."""
    render = base.render
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball, response="kinematic")
    ray = ray_node(render, "ray", CollisionRay(0, 0, 5, 0, 0, -1))
    ccd.add_collision_node(ray)
    ccd.step()
    ccd.step()
    assert recorder.names() == ["ray-into-ball", "ray-again-ball"]
    recorder.clear()
    return ray, ball


def _outs(recorder):
    return [c for name, c in recorder.sent if name == "ray-out-ball"]


def test_a_removed_ray_node_gets_one_out(base, ccd, recorder, watched):
    ray, _ball = watched
    ray.removeNode()
    for _ in range(3):
        ccd.step()
    assert recorder.names() == ["ray-out-ball"]
    assert ccd.colliders == 1


def test_a_ray_removed_with_remove_gets_one_out_at_once(base, ccd, recorder, watched):
    ray, _ball = watched
    ccd.remove(ray)
    assert recorder.names() == ["ray-out-ball"]
    for _ in range(3):
        ccd.step()
    assert recorder.names() == ["ray-out-ball"]


@pytest.mark.parametrize("how", ["removeNode", "remove"])
def test_a_ray_removed_by_its_own_handler_gets_one_out(base, ccd, recorder, listener, watched, how):
    ray, _ball = watched

    def gone(entry):
        if how == "removeNode":
            entry.getFromNodePath().removeNode()
        else:
            ccd.remove(entry.getFromNodePath())

    listener.accept("ray-again-ball", gone)
    for _ in range(4):
        ccd.step()
    assert recorder.names() == ["ray-again-ball", "ray-out-ball"]
    (out,) = _outs(recorder)
    assert out.getFromNodePath().getName() == "ray"


def test_a_removed_target_and_a_detached_ray(base, ccd, recorder, watched):
    ray, ball = watched
    ray.detachNode()
    ccd.step()
    ccd.step()
    assert recorder.names() == ["ray-out-ball"]
    ray.reparentTo(base.render)
    ccd.step()
    assert recorder.names() == ["ray-out-ball", "ray-into-ball"]
    ball.removeNode()
    ccd.step()
    ccd.step()
    assert recorder.names() == ["ray-out-ball", "ray-into-ball", "ray-out-ball"]


def test_a_non_finite_ray_is_skipped_with_one_warning(base, ccd, recorder, watched,
                                                       monkeypatch):  # fmt: skip
    import panda3d_ccd.component as component

    warned = []
    monkeypatch.setattr(component.notify, "warning", warned.append)
    ray, _ball = watched
    ray.setScale(math.inf)
    for _ in range(3):
        ccd.step()
    assert recorder.names() == ["ray-out-ball"]
    assert warned == ["render/ray has a non-finite transform; ray skipped until it is finite again"]
    ray.setScale(1)
    ccd.step()
    assert recorder.names() == ["ray-out-ball", "ray-into-ball"]


def test_a_ray_aimed_at_nan_hits_nothing_with_one_warning_until_it_is_finite(
    base, ccd, recorder, watched, monkeypatch
):
    """A picking ray aimed anew each frame, once along a normalised zero vector (NaN):
    the traverser's ray would hit nothing; so does this one, said once, and it comes back
    when it is finite again."""
    import panda3d_ccd.component as component

    warned = []
    monkeypatch.setattr(component.notify, "warning", warned.append)
    ray, _ball = watched
    solid = ray.node().modifySolid(0)
    solid.setDirection(math.nan, 0, -1)
    for _ in range(3):
        ccd.step()
    assert recorder.names() == ["ray-out-ball"]
    assert warned == ["render/ray has a ray that is not finite; it hits nothing until it is"]
    solid.setDirection(0, 0, -1)
    ccd.step()
    assert recorder.names() == ["ray-out-ball", "ray-into-ball"]


@pytest.mark.parametrize(
    "solid",
    [CollisionRay(0, 0, math.inf, 0, 0, -1), CollisionRay(0, 0, 5, math.nan, 0, -1),
     CollisionSegment(0, 0, 5, 0, 0, -math.inf), CollisionLine(0, 0, 5, 0, math.nan, 1)],
    ids=["ray-origin", "ray-direction", "segment", "line"],
)  # fmt: skip
def test_a_ray_solid_that_is_not_finite_is_refused_at_the_door(base, ccd, solid):
    node = ray_node(base.render, "shot", CollisionSegment(0, 0, 0, 1, 0, 0), solid)
    with pytest.raises(
        ValueError, match=rf"^render/shot: solid 1 is a {type(solid).__name__} that is not finite"
    ):
        ccd.add_collision_node(node)


def test_a_ray_aimed_through_modify_solid_is_cast_where_the_traverser_casts_it(
    base, ccd, recorder
):
    """``node.modifySolid(0).setDirection(...)`` copies the solid when another reference
    holds it (the plugin's own did): the ray must be read from the node each pass."""
    render = base.render
    for name, centre in (("below", (0, 0, 0)), ("aside", (0, 10, 5))):
        ball = collision_node(render, name, CollisionSphere(*centre, 1))
        ccd.add_collision_node(ball, response="kinematic")
    ray = ray_node(render, "ray", CollisionRay(0, 0, 5, 0, 0, -1))
    ccd.add_collision_node(ray)
    ccd.step()
    ray.node().modifySolid(0).setDirection(0, 1, 0)
    recorder.clear()
    ccd.step()
    trav, queue = CollisionTraverser(), CollisionHandlerQueue()
    trav.addCollider(ray, queue)
    trav.traverse(render)
    assert [queue.getEntry(i).getIntoNodePath().getName()
            for i in range(queue.getNumEntries())] == ["aside"]  # fmt: skip
    assert recorder.names() == ["ray-out-below", "ray-into-aside"]


def test_a_ray_node_whose_solids_change_is_skipped_with_one_warning(
    base, ccd, recorder, watched, monkeypatch
):
    import panda3d_ccd.component as component

    warned = []
    monkeypatch.setattr(component.notify, "warning", warned.append)
    ray, _ball = watched
    ray.node().addSolid(CollisionSphere(0, 0, 0, 1))
    ccd.step()
    ccd.step()
    assert recorder.names() == ["ray-out-ball"]
    assert warned == ["render/ray's solids are no longer the rays it was registered with; "
                      "skipped until they are (remove it and register it again)"]  # fmt: skip
    ray.node().removeSolid(1)
    ccd.step()
    assert recorder.names() == ["ray-out-ball", "ray-into-ball"]


def test_of_a_node_of_rays_of_different_lengths_the_contact_is_the_nearest_hit(
    base, ccd, recorder
):
    """Two segments from one point, 10 and 100 long, and a target of two spheres 8 and 20
    units down them: the contact is the one 8 away (t 0.8 of its segment), not the one
    whose t is lower (0.2 of the long one), as the traverser's nearest entry."""
    render = base.render
    target = collision_node(render, "X", CollisionSphere(8.5, 0, 0, 0.5),
                            CollisionSphere(0, 20.5, 0, 0.5))  # fmt: skip
    ccd.add_collision_node(target, response="kinematic")
    probe = ray_node(render, "probe", CollisionSegment(0, 0, 0, 10, 0, 0),
                     CollisionSegment(0, 0, 0, 0, 100, 0))  # fmt: skip
    ccd.add_collision_node(probe)
    ccd.step()
    trav, queue = CollisionTraverser(), CollisionHandlerQueue()
    trav.addCollider(probe, queue)
    trav.traverse(render)
    queue.sortEntries()
    nearest = queue.getEntry(0).getSurfacePoint(render)
    ((name, contact),) = recorder.sent
    assert name == "probe-into-X"
    assert nearest == LPoint3(8, 0, 0)
    assert tuple(contact.getSurfacePoint(render)) == pytest.approx(tuple(nearest))
    assert contact.getFrom() == probe.node().getSolid(0)


def test_a_picking_ray_aimed_anew_each_frame(base, ccd, recorder):
    """The solid is read each pass, as the traverser does (``setFromLens`` every frame)."""
    render = base.render
    for k in range(3):
        np_ = collision_node(render, f"ball{k}", CollisionSphere(0, 0, 0, 1), pos=(4 * k, 0, 0))
        ccd.add_collision_node(np_, response="kinematic")
    picker = CollisionRay()
    ccd.add_collision_node(ray_node(render, "picker", picker))
    hits = []
    for k in range(3):
        picker.setOrigin(4 * k, -10, 0)
        picker.setDirection(0, 1, 0)
        recorder.clear()
        ccd.step()
        hits.append([name for name in recorder.names() if "-into-" in name])
    assert hits == [["picker-into-ball0"], ["picker-into-ball1"], ["picker-into-ball2"]]


# ------------------------------------------------------------------ registration
def test_bad_ray_nodes_are_refused(base, ccd):
    render = base.render
    mixed = collision_node(
        render, "mixed", CollisionRay(0, 0, 0, 0, 0, -1), CollisionSphere(0, 0, 0, 1)
    )
    with pytest.raises(
        ValueError,
        match=r"^render/mixed mixes a CollisionSphere \(solid 1\) with rays; a node of "
        r"CollisionRay, CollisionSegment and CollisionLine solids holds only those: put the "
        r"others on a node of their own$",
    ):
        ccd.add_collision_node(mixed)
    ray = ray_node(render, "ray", CollisionSegment(0, 0, 0, 1, 0, 0))
    with pytest.raises(
        ValueError, match=r"^render/ray holds rays, which only report: response must be None, "
        r"got 'sensor'$"
    ):  # fmt: skip
        ccd.add_collision_node(ray, response="sensor")
    with pytest.raises(
        ValueError, match=r"^render/ray holds rays, cast each pass from where the node is then: "
        r"static must be False$"
    ):  # fmt: skip
        ccd.add_collision_node(ray, static=True)
    with pytest.raises(
        ValueError, match=r"^render/ray holds rays, which the plugin never moves: target must "
        r"be None, got render$"
    ):  # fmt: skip
        ccd.add_collision_node(ray, target=render)
    with pytest.raises(
        ValueError, match=r"^render/ray holds rays: two_sided applies to a node's polygons"
    ):
        ccd.add_collision_node(ray, two_sided=True)
    with pytest.raises(ValueError, match=r"^static must be True or False, got 1$"):
        ccd.add_collision_node(ray, static=1)
    assert ccd.colliders == 0
    ccd.add_collision_node(ray)
    assert ccd.colliders == 1
    with pytest.raises(ValueError, match=r"^nodepath render/ray is already registered$"):
        ccd.add_collision_node(NodePath(ray))


def test_rays_alone_then_a_target(base, ccd, recorder):
    """Nothing to hit: no events; a target registered later is hit from its first pass."""
    render = base.render
    ccd.add_collision_node(ray_node(render, "ray", CollisionRay(0, 0, 5, 0, 0, -1)))
    ccd.step()
    assert recorder.names() == [] and ccd.contacts == []
    ball = collision_node(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball, response="kinematic")
    ccd.step()
    assert recorder.names() == ["ray-into-ball"]
    assert ccd.contacts[0].getSurfacePoint(render) == LPoint3(0, 0, 1)


# ------------------------------------------------------------------ Panda3D's own quirks
def test_the_traversers_again_event_carries_the_frame_before(base):
    """Why the oracle above reads this frame's entries from a queue: Panda3D 1.10's
    CollisionHandlerEvent sends an again event with the pair's entry of the previous
    frame, so a ground ray's handler on again lags a frame behind; the plugin's is this
    pass's contact (the Roaming Ralph test above)."""
    render = base.render
    slope = collision_node(render, "slope", CollisionPolygon(
        LPoint3(-10, -10, -10), LPoint3(10, -10, 10), LPoint3(10, 10, 10), LPoint3(-10, 10, -10)
    ))  # fmt: skip
    probe = ray_node(render, "probe", CollisionRay(0, 0, 20, 0, 0, -1))
    events = Traverser(render, [probe])
    seen = []
    for x in range(4):
        probe.setX(x)
        events.trav.traverse(render)
        while not events.queue.isQueueEmpty():
            event = events.queue.dequeueEvent()
            seen.append((event.name, event.getParameter(0).getPtr().getSurfacePoint(slope)[0]))
    assert seen == [("probe-into-slope", 0), ("probe-again-slope", 0),
                    ("probe-again-slope", 1), ("probe-again-slope", 2)]  # fmt: skip


def test_a_ray_through_a_shared_edge_of_a_mesh_hits_it(base, ccd, recorder):
    render = base.render
    level = terrain(render)
    ccd.add_collision_node(level, static=True)
    # On the diagonal x = y of a cell, within float32 rounding (a Ralph walking on it).
    at = (-1.500002, -1.5000019, 8.2701256)
    ccd.add_collision_node(ray_node(render, "ray", CollisionRay(*at, 0, 0, -1)))
    ccd.step()
    assert recorder.names() == ["ray-into-terrain"]


# ------------------------------------------------------------------ the cast on its own
def _world(rng, planes):
    """Spheres, static triangles and turned, moved kinematic triangles and capsules, in a
    box of about 20 units; planes optionally. Node indices: spheres 0.., then the others."""
    from panda3d_ccd._frames import Frames
    from panda3d_ccd._pieces import CAPSULE, TRIANGLE, Pieces
    from panda3d_ccd._queries import PieceRows, PlaneRows, SphereRows, World

    m = 6
    spheres = SphereRows(rng.uniform(-10, 10, (m, 3)), rng.uniform(0.5, 2, m),
                         np.full(m, 1), rng.random(m) < 0.3, np.arange(m))  # fmt: skip
    a = rng.uniform(-10, 10, (m, 3))
    tri = Pieces(TRIANGLE, (a, a + rng.uniform(-3, 3, (m, 3)), a + rng.uniform(-3, 3, (m, 3)),
                            rng.random(m) < 0.5), np.full(m, 1))  # fmt: skip
    static = PieceRows(tri, m + np.arange(m), np.zeros(m, np.int64), np.zeros(m, np.int64))
    f = 3
    quat = rng.normal(size=(f, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    frames = Frames(quat, rng.uniform(-5, 5, (f, 3)), quat, rng.uniform(-5, 5, (f, 3)))
    b = rng.uniform(-3, 3, (m, 3))
    caps = Pieces(CAPSULE, (b, b + rng.uniform(-2, 2, (m, 3)), rng.uniform(0.3, 1, m)),
                  np.full(m, 1), frame=np.arange(m) % f, frames=frames)  # fmt: skip
    moving = PieceRows(caps, 2 * m + np.arange(m), np.zeros(m, np.int64), np.zeros(m, np.int64))
    plane_rows = None
    if planes:
        normal = rng.normal(size=(2, 3))
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        plane_rows = PlaneRows(normal, rng.uniform(5, 15, 2), np.full(2, 1), np.zeros(2, bool),
                               3 * m + np.arange(2))  # fmt: skip
    return World([spheres], plane_rows, [static, moving])


def _firsts(world, kind, a, b, far):
    """The oracle: each cast as one long segment (``far`` beyond everything), its first
    hit of each node, as {(row, node): point}."""
    from panda3d_ccd._rays import LINE, SEGMENT

    unit = b / np.linalg.norm(b, axis=1)[:, None]
    p0 = np.where((kind == LINE)[:, None], a - far * unit, a)
    p1 = np.where((kind == SEGMENT)[:, None], b, a + far * unit)
    found = world.cast(p0, p1, np.zeros(len(a)), np.ones(len(a), np.int64), True)
    best = {}
    for row in np.argsort(found.t, kind="stable").tolist():
        best.setdefault((int(found.query[row]), int(found.node[row])), found.point[row])
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("planes", [False, True])
def test_casts_find_what_one_long_segment_finds(seed, planes):
    """Rays and lines, cast to the world's bounds and the planes' crossings, find the same
    first hits as a segment a thousand times longer than the world; segments are cast as
    given. ``t`` orders each ray's hits as the distance along it does."""
    from panda3d_ccd._frames import apply
    from panda3d_ccd._rays import LINE, RAY, SEGMENT, cast_rays, firsts_per_node

    rng = np.random.default_rng(seed)
    world = _world(rng, planes)
    k = 60
    kind = np.array([RAY, SEGMENT, LINE] * (k // 3), np.int8)
    a = rng.uniform(-25, 25, (k, 3))
    # Aimed at the targets (a segment at a point beyond one), else few would hit anything.
    tri = world.pieces[0].table.geometry
    caps = world.pieces[1].table
    centres = np.concatenate([
        world.spheres[0].center, (tri[0] + tri[1] + tri[2]) / 3,
        apply(caps.frames.rot1[caps.frame], caps.geometry[0]) + caps.frames.pos1[caps.frame],
    ])  # fmt: skip
    aim = centres[rng.integers(0, len(centres), k)] + rng.normal(scale=0.3, size=(k, 3))
    b = np.where((kind == SEGMENT)[:, None], a + 2.5 * (aim - a), aim - a)
    hits = cast_rays(world, kind, a, b, np.ones(k, np.int64))
    rows = firsts_per_node(hits, np.arange(k), a)
    ours = {(int(hits.ray[r]), int(hits.node[r])): hits.point[r] for r in rows.tolist()}
    theirs = _firsts(world, kind, a, b, 2e4 if planes else 1e4)
    if planes:  # the oracle's planes reach only as far as its segment: those rays are ours
        far = {key for key, p in ours.items() if np.linalg.norm(p - a[key[0]]) > 1e4}
        ours = {key: p for key, p in ours.items() if key not in far}
    assert sorted(ours) == sorted(theirs)
    assert len(ours) >= 30
    for key, point in ours.items():
        np.testing.assert_allclose(point, theirs[key], atol=1e-7)
    # Per ray, t grows with the distance along it (a line's from minus infinity); a ray
    # starting inside a solid meets it at t = 0, at the surface point nearest its start.
    for r in np.unique(hits.ray[rows]).tolist():
        mine = rows[(hits.ray[rows] == r) & (hits.t[rows] > 0)]
        unit = b[r] / np.linalg.norm(b[r]) if kind[r] != SEGMENT else b[r] - a[r]
        along = (hits.point[mine] - a[r]) @ unit
        order = np.argsort(hits.t[mine], kind="stable")
        assert np.all(np.diff(along[order]) >= -1e-6)


def test_world_bounds_cover_every_target():
    from panda3d_ccd._frames import apply
    from panda3d_ccd._rays import world_bounds

    for seed in range(5):
        world = _world(np.random.default_rng(seed), planes=True)
        lo, hi = world_bounds(world)
        spheres = world.spheres[0]
        assert np.all(spheres.center - spheres.radius[:, None] >= lo)
        assert np.all(spheres.center + spheres.radius[:, None] <= hi)
        a, b, c, _two = world.pieces[0].table.geometry
        for v in (a, b, c):
            assert np.all((v >= lo) & (v <= hi))
        table = world.pieces[1].table
        frames, f = table.frames, table.frame
        for end in table.geometry[:2]:
            w = apply(frames.rot1[f], end) + frames.pos1[f]
            r = table.geometry[2][:, None]
            assert np.all((w - r >= lo) & (w + r <= hi))
