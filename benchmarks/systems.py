"""The scene graph of one benchmark size and the four systems timed on it.

Every sphere is one node under ``render`` (what the plugin registers and the floor reads)
with a CollisionNode child holding a CollisionSphere (what Panda3D's traverser tests).
Bullet keeps its own rigid bodies under a separate root, driven to the same positions each
frame: a BulletRigidBodyNode reacts to every transform change of its own node, so sharing
the nodes would bill Bullet's bookkeeping to the plugin's write-back.

Each system has three hooks: :meth:`System.prepare` (untimed set-up for the frame),
:meth:`System.run` (the timed pass) and :meth:`System.after` (untimed clean-up, e.g. undo
the plugin's rewinds so the next system sees the generator's positions).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from panda3d.core import (
    CollisionHandler,
    CollisionHandlerQueue,
    CollisionNode,
    CollisionPlane,
    CollisionSphere,
    CollisionTraverser,
    NodePath,
    PandaNode,
    Plane,
    Point3,
    RenderState,
    TransformState,
    Vec3,
)

from panda3d_ccd import ContinuousCollision
from panda3d_ccd._tolerance import MAX_ROUNDS

from .scene import MovingSpheres

__all__ = [
    "FRAME_DT",
    "World",
    "System",
    "PluginOptions",
    "PluginSystem",
    "TraverserSystem",
    "BulletSystem",
    "FloorSystem",
    "NoTasks",
    "CountingMessenger",
    "read_positions",
    "begin_frame",
    "end_frame",
]

Float = NDArray[np.float64]

#: Frame length handed to Bullet and implied by the "units per frame" speeds (60 Hz).
FRAME_DT = 1.0 / 60.0


class NoTasks:
    """Stands in for ``taskMgr``: the component registers its task here and it never runs,
    so the benchmark calls ``step()`` itself and the pass runs exactly once per frame."""

    def add(self, *args: Any, **kwargs: Any) -> object:
        return object()

    def remove(self, task: object) -> None:
        pass


class CountingMessenger:
    """Stands in for ``messenger``: counts the events the plugin sends."""

    def __init__(self) -> None:
        self.count = 0

    def send(self, event: str, sentArgs: Any = None, taskChain: Any = None) -> None:  # noqa: N803
        self.count += 1


def read_positions(nodes: list[NodePath], render: NodePath) -> Float:
    """(n, 3) float64 world positions of ``nodes``: one scene-graph read per node."""
    # Iterating an LPoint3f yields its floats; fromiter skips the per-node tuple.
    flat = itertools.chain.from_iterable([node.getPos(render) for node in nodes])
    return np.fromiter(flat, np.float64, 3 * len(nodes)).reshape(len(nodes), 3)


def begin_frame() -> None:
    """What ShowBase's resetPrevTransform task (sort -51) does at the start of a frame."""
    PandaNode.resetAllPrevTransform()


def end_frame() -> None:
    """What ShowBase's garbageCollectStates task (sort 46) does every frame: free the
    transform and render states nothing uses any more. Without it Panda3D's state cache
    keeps every position ever set, and grows without bound."""
    TransformState.garbageCollect()
    RenderState.garbageCollect()


@dataclass
class World:
    """The sphere nodes of one scene, direct children of ``render``.

    Attributes
    ----------
    nodes : list of NodePath
        One per sphere, positioned at the sphere's centre.
    solids : list of NodePath
        The CollisionNode child of each node (radius ``scene.radius``, centred).
    walls : NodePath or None
        A CollisionNode with the six box walls as CollisionPlanes (into-only).
    """

    scene: MovingSpheres
    render: NodePath
    nodes: list[NodePath]
    solids: list[NodePath]
    walls: NodePath | None

    @classmethod
    def build(cls, scene: MovingSpheres, *, walls: bool) -> World:
        render = NodePath("render")
        nodes: list[NodePath] = []
        solids: list[NodePath] = []
        start = scene.positions(0)
        for i in range(scene.n):
            node = render.attachNewNode(PandaNode(f"sphere{i}"))
            node.setPos(*start[i])
            cnode = CollisionNode(f"sphere{i}")
            cnode.addSolid(CollisionSphere(0.0, 0.0, 0.0, scene.radius))
            solids.append(node.attachNewNode(cnode))
            nodes.append(node)
        wall_np = None
        if walls:
            cnode = CollisionNode("walls")
            for normal, point in scene.wall_planes():
                cnode.addSolid(CollisionPlane(Plane(Vec3(*normal), Point3(*point))))
            cnode.setFromCollideMask(0)
            wall_np = render.attachNewNode(cnode)
        PandaNode.resetAllPrevTransform()
        return cls(scene=scene, render=render, nodes=nodes, solids=solids, walls=wall_np)

    def move(self, positions: Float) -> None:
        """setFluidPos every node to ``positions`` ((n, 3) float64); keeps the previous
        transform, as a game moving its objects during the frame does."""
        for node, (x, y, z) in zip(self.nodes, positions.tolist()):
            node.setFluidPos(x, y, z)

    def destroy(self) -> None:
        self.render.removeNode()
        self.nodes.clear()
        self.solids.clear()


@dataclass
class System:
    """One timed system. ``stats`` collects per-frame counters (medians are reported)."""

    name: str
    world: World
    stats: dict[str, list[float]] = field(default_factory=dict)

    def prepare(self, frame: int, previous: Float, current: Float) -> None:
        """Untimed set-up before the frame's pass (positions are (n, 3) float64)."""

    def run(self) -> None:
        raise NotImplementedError

    def after(self, current: Float) -> None:
        """Untimed clean-up after the pass."""

    def close(self) -> None:
        pass

    def _count(self, key: str, value: float) -> None:
        self.stats.setdefault(key, []).append(float(value))


@dataclass(frozen=True)
class PluginOptions:
    """How the plugin is set up: every sphere's ``response``, and whether it sweeps from
    Panda3D's previous transform (see :class:`PluginSystem`)."""

    response: str = "rewind"
    respect_prev_transform: bool = True


class PluginSystem(System):
    """panda3d-ccd: one ``ContinuousCollision.step()`` per frame, with an in-pattern set
    (a game listens to its events) and a counting messenger.

    With ``respect_prev_transform`` (the benchmark's default) the plugin sweeps from
    Panda3D's previous transform, i.e. exactly the generator's motion, as the traverser
    does. Without it the plugin sweeps from where it left each collider; since the
    generator puts rewound nodes back on their course every frame, those sweeps start from
    the old contact points, and contacts pile up frame after frame (a workload no game
    would produce).
    """

    def __init__(
        self, world: World, options: PluginOptions, messenger: Any = None
    ) -> None:
        super().__init__("panda3d-ccd", world)
        self.messenger = CountingMessenger() if messenger is None else messenger
        self.ccd = ContinuousCollision(
            taskmgr=NoTasks(),
            render=world.render,
            messenger=self.messenger,
            respect_prev_transform=options.respect_prev_transform,
        )
        self.ccd.add_in_pattern("%fn-into-%in")
        for node in world.nodes:
            self.ccd.add_sphere(node, world.scene.radius, response=options.response)
        self.wall_nodes: list[NodePath] = []
        if world.walls is not None:
            # One node per wall: a node is registered once, with one plane.
            for k, (normal, point) in enumerate(world.scene.wall_planes()):
                wall = world.render.attachNewNode(f"ccd-wall{k}")
                self.ccd.add_plane(wall, Plane(Vec3(*normal), Point3(*point)))
                self.wall_nodes.append(wall)

    def run(self) -> None:
        self.ccd.step()

    def after(self, current: Float) -> None:
        self._count("candidates", self.ccd.candidate_count)
        self._count("rounds", self.ccd.rounds)
        # The solver stops at MAX_ROUNDS and holds what is unresolved (it warns): a pass
        # cut short is cheaper than a finished one, so the share of such frames is shown.
        self._count("capped", self.ccd.rounds >= MAX_ROUNDS)
        self._count("contacts", len(self.ccd.contacts))
        # Rewound nodes go back to the generator's positions (previous transform kept), so
        # the other systems see the same motion.
        self.world.move(current)

    def close(self) -> None:
        self.ccd.destroy()
        for wall in self.wall_nodes:
            wall.removeNode()


class TraverserSystem(System):
    """Panda3D's CollisionTraverser: every sphere a from- and into-object, swept from its
    previous transform (respect-prev-transform), into ``handler`` (by default a
    CollisionHandlerQueue, whose entries are counted)."""

    def __init__(self, world: World, handler: CollisionHandler | None = None) -> None:
        super().__init__("CollisionTraverser", world)
        self.traverser = CollisionTraverser("bench")
        self.traverser.setRespectPrevTransform(True)
        self.handler = CollisionHandlerQueue() if handler is None else handler
        for solid in world.solids:
            self.traverser.addCollider(solid, self.handler)

    def run(self) -> None:
        self.traverser.traverse(self.world.render)

    def after(self, current: Float) -> None:
        if isinstance(self.handler, CollisionHandlerQueue):
            self._count("entries", self.handler.getNumEntries())

    def close(self) -> None:
        self.traverser.clearColliders()


class BulletSystem(System):
    """Bullet as a reference: dynamic spheres (no gravity, never sleeping) with continuous
    collision on (motion threshold = radius, swept sphere 0.9 radius). Each frame every
    body is put at the generator's previous position with the velocity that reaches the
    current one in one step; ``doPhysics`` then integrates, collides and resolves.
    That is a full dynamics step, not the same task as the plugin's pass."""

    def __init__(self, world: World) -> None:
        super().__init__("Bullet", world)
        from panda3d.bullet import (
            BulletPlaneShape,
            BulletRigidBodyNode,
            BulletSphereShape,
            BulletWorld,
        )

        scene = world.scene
        self.bullet = BulletWorld()
        self.bullet.setGravity(Vec3(0, 0, 0))
        self.root = NodePath("bullet")
        shape = BulletSphereShape(scene.radius)
        start = scene.positions(0)
        self.bodies: list[NodePath] = []
        for i in range(scene.n):
            body = BulletRigidBodyNode(f"sphere{i}")
            body.addShape(shape)
            body.setMass(1.0)
            body.setDeactivationEnabled(False)
            body.setCcdMotionThreshold(scene.radius)
            body.setCcdSweptSphereRadius(0.9 * scene.radius)
            body_np = self.root.attachNewNode(body)
            # Placed before it joins the world: bodies attached at the origin all overlap
            # there, and Bullet's pair cache grows quadratically before they move apart.
            body_np.setPos(*start[i])
            self.bullet.attachRigidBody(body)
            self.bodies.append(body_np)
        if world.walls is not None:
            for normal, point in scene.wall_planes():
                wall = BulletRigidBodyNode("wall")
                constant = float(np.dot(normal, point))
                wall.addShape(BulletPlaneShape(Vec3(*normal), constant))
                self.bullet.attachRigidBody(wall)
                self.root.attachNewNode(wall)

    def prepare(self, frame: int, previous: Float, current: Float) -> None:
        velocity = ((current - previous) / FRAME_DT).tolist()
        for body_np, (x, y, z), v in zip(self.bodies, previous.tolist(), velocity):
            body_np.setPos(x, y, z)
            node = body_np.node()
            node.setLinearVelocity(Vec3(*v))
            node.setAngularVelocity(Vec3(0, 0, 0))

    def run(self) -> None:
        self.bullet.doPhysics(FRAME_DT, 1, FRAME_DT)

    def after(self, current: Float) -> None:
        self._count("manifolds", self.bullet.getNumManifolds())

    def close(self) -> None:
        for body_np in self.bodies:
            self.bullet.removeRigidBody(body_np.node())
        self.root.removeNode()
        self.bodies.clear()


class FloorSystem(System):
    """The floor: read every node's world position into an (n, 3) float64 array, the one
    scene-graph read per node that any pass over these nodes must make."""

    def __init__(self, world: World) -> None:
        super().__init__("floor", world)
        self.last: Float = np.zeros((0, 3))

    def run(self) -> None:
        self.last = read_positions(self.world.nodes, self.world.render)

    def after(self, current: Float) -> None:
        # The harness itself is checked every frame: every node is where the generator put it.
        if not np.allclose(self.last, current, rtol=0.0, atol=1e-3):
            worst = float(np.max(np.abs(self.last - current)))
            raise RuntimeError(f"nodes are not at the generator's positions (off by {worst})")
