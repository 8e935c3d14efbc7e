"""The level benchmark (issue 12): spheres moving over a level of some 32,000 polygons.

``python -m benchmarks --level`` builds one level (:class:`benchmarks.level_mesh.Level`:
terrain tiles, walls and props as CollisionNodes of CollisionPolygons) and, on that level
and the same motion (:class:`benchmarks.level_mesh.LevelMotion`), times per frame:

* the plugin: ``add_collision_nodes(level, static=True)``, every sphere
  ``add_sphere(node, r, response="slide")``, the nodes moved with setFluidPos, ``step()``;
* Panda3D's CollisionTraverser with respect-prev-transform and a
  CollisionHandlerFluidPusher, every sphere a from-object;
* Bullet against a BulletTriangleMesh of the same triangles: one ``sweepTestClosest`` per
  sphere from its previous to its current position; Bullet's collide-and-slide (the
  plugin's ``slide`` done with those sweeps, a sphere at a time, as a kinematic character
  controller does it); and ``doPhysics`` on rigid spheres with CCD (placed at the previous
  position, with the velocity that reaches the current);
* the floor: reading every sphere's position.

Spheres collide with the level only, in every system (a sweep against a mesh knows no
other spheres). Each system's response is undone before the next one runs, so all see the
same motion. Then :func:`measure_volley` fires fast spheres straight at front faces and
counts, with :func:`benchmarks.level_mesh.front_crossings`, those that end a frame beyond
a front face.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from panda3d.core import (
    BitMask32,
    CollisionHandlerFluidPusher,
    CollisionNode,
    CollisionPolygon,
    CollisionSphere,
    CollisionTraverser,
    NodePath,
    PandaNode,
    Point3,
    PTA_int,
    PTA_LVecBase3f,
    TransformState,
    Vec3,
    loadPrcFileData,
    unloadPrcFile,
)

from panda3d_ccd import ContinuousCollision

from .level_mesh import RADIUS, Level, LevelMotion, Volley, front_crossings, inside_solid
from .report import _cell, _ms, _ratio
from .systems import FRAME_DT, CountingMessenger, NoTasks, begin_frame, end_frame

__all__ = [
    "PLUGIN",
    "TRAVERSER",
    "SWEEPS",
    "SLIDES",
    "PHYSICS",
    "FLOOR",
    "SYSTEMS",
    "LevelBuild",
    "LevelResult",
    "VolleyRow",
    "build_level",
    "time_level",
    "measure_volley",
    "level_table",
    "level_detail_table",
    "registration_table",
    "volley_table",
]

Float = NDArray[np.float64]

PLUGIN, TRAVERSER = "panda3d-ccd", "CollisionTraverser"
SWEEPS, SLIDES = "Bullet sweeps", "Bullet slides"
PHYSICS, FLOOR = "Bullet doPhysics", "floor"
SYSTEMS = (PLUGIN, TRAVERSER, SWEEPS, SLIDES, PHYSICS, FLOOR)

#: Level triangles are into-only; spheres are from-only (into mask 0), so they never test
#: each other, as the sweeps (sphere against mesh) do not.
_LEVEL_MASK = BitMask32.bit(0)
#: Bullet groups: the mesh is group 0, the spheres group 1, and 1 does not meet 1.
_MESH_GROUP, _SPHERE_GROUP = 0, 1
#: Bullet's collide-and-slide: at most this many sweeps a sphere a frame, and each hit
#: leaves the sphere this far off the surface, so that the next sweep, along it, does not
#: start touching it (btKinematicCharacterController keeps such a margin too).
SLIDE_SWEEPS, SLIDE_SKIN = 8, 1e-4


# ---------------------------------------------------------------------- the scene
@dataclass
class LevelBuild:
    """The level as Panda3D and Bullet hold it, built once per run.

    Attributes
    ----------
    level : Level
    root : NodePath
        "level", one CollisionNode per tile, wall and prop, holding CollisionPolygons.
    scene_ms, bullet_ms : float
        Time to build the CollisionNodes, and Bullet's mesh and shape from numpy.
    """

    level: Level
    root: NodePath
    scene_ms: float
    bullet_ms: float

    @property
    def nodes(self) -> int:
        return self.root.getNumChildren()


def build_level(level: Level) -> LevelBuild:
    """The level's CollisionNodes under a root "level" (a game would load them from an
    egg), and the time Bullet takes to build its mesh of the same triangles."""
    t0 = time.perf_counter()
    root = NodePath("level")
    first = 0
    corners = level.triangles.tolist()
    for name, count in zip(level.names, level.counts.tolist()):
        cnode = CollisionNode(name)
        cnode.setFromCollideMask(0)
        cnode.setIntoCollideMask(_LEVEL_MASK)
        for a, b, c in corners[first : first + count]:
            cnode.addSolid(CollisionPolygon(Point3(*a), Point3(*b), Point3(*c)))
        root.attachNewNode(cnode)
        first += count
    scene_ms = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    _bullet_mesh_body(level.triangles)
    bullet_ms = 1e3 * (time.perf_counter() - t0)
    return LevelBuild(level, root, scene_ms, bullet_ms)


def _bullet_mesh_body(triangles: Float) -> Any:
    """A static BulletRigidBodyNode with a BulletTriangleMeshShape of (m, 3, 3) triangles,
    built from numpy in one call (addArray)."""
    from panda3d.bullet import BulletRigidBodyNode, BulletTriangleMesh, BulletTriangleMeshShape

    m = len(triangles)
    points = PTA_LVecBase3f.emptyArray(3 * m)
    memoryview(points).cast("B").cast("f")[:] = triangles.astype(np.float32).ravel()
    indices = PTA_int.emptyArray(3 * m)
    memoryview(indices).cast("B").cast("i")[:] = np.arange(3 * m, dtype=np.int32)
    mesh = BulletTriangleMesh()
    mesh.addArray(points, indices, False)
    body = BulletRigidBodyNode("level")
    body.addShape(BulletTriangleMeshShape(mesh, dynamic=False))
    body.setIntoCollideMask(BitMask32.bit(_MESH_GROUP))
    return body


def _bullet_world(triangles: Float) -> tuple[Any, NodePath]:
    """A BulletWorld without gravity holding the level's mesh, in which spheres (group
    ``_SPHERE_GROUP``) meet the mesh and not each other."""
    from panda3d.bullet import BulletWorld

    # The filter algorithm is read when a world is made; the page is dropped at once so
    # that no other world of the process changes.
    page = loadPrcFileData("", "bullet-filter-algorithm groups-mask")
    try:
        world = BulletWorld()
    finally:
        unloadPrcFile(page)
    world.setGravity(Vec3(0, 0, 0))
    world.setGroupCollisionFlag(_SPHERE_GROUP, _SPHERE_GROUP, False)
    world.setGroupCollisionFlag(_MESH_GROUP, _SPHERE_GROUP, True)
    root = NodePath("bullet")
    body = _bullet_mesh_body(triangles)
    root.attachNewNode(body)
    world.attachRigidBody(body)
    return world, root


@dataclass
class _Spheres:
    """One node per sphere under ``render``, with a CollisionNode child (a from-object for
    the traverser)."""

    render: NodePath
    nodes: list[NodePath]
    solids: list[NodePath]

    @classmethod
    def build(cls, render: NodePath, start: Float) -> _Spheres:
        nodes, solids = [], []
        for i, (x, y, z) in enumerate(start.tolist()):
            node = render.attachNewNode(PandaNode(f"sphere{i}"))
            node.setPos(x, y, z)
            cnode = CollisionNode(f"sphere{i}")
            cnode.addSolid(CollisionSphere(0.0, 0.0, 0.0, RADIUS))
            cnode.setIntoCollideMask(0)
            cnode.setFromCollideMask(_LEVEL_MASK)
            solids.append(node.attachNewNode(cnode))
            nodes.append(node)
        return cls(render, nodes, solids)

    def move(self, positions: Float) -> None:
        """setFluidPos to (n, 3) float64 positions: the previous transform is kept."""
        for node, (x, y, z) in zip(self.nodes, positions.tolist()):
            node.setFluidPos(x, y, z)

    def place(self, previous: Float, current: Float) -> None:
        """Put every node back on the frame's motion ``previous -> current``, whatever a
        system's response did (setPos resets the previous transform, setFluidPos keeps it)."""
        for node, (x0, y0, z0), (x1, y1, z1) in zip(
            self.nodes, previous.tolist(), current.tolist()
        ):
            node.setPos(x0, y0, z0)
            node.setFluidPos(x1, y1, z1)

    def read(self) -> Float:
        """(n, 3) float64 positions, one getPos per node."""
        flat = itertools.chain.from_iterable([node.getPos(self.render) for node in self.nodes])
        return np.fromiter(flat, np.float64, 3 * len(self.nodes)).reshape(-1, 3)

    def remove(self) -> None:
        for node in self.nodes:
            node.removeNode()


# ---------------------------------------------------------------------- the systems
@dataclass
class _System:
    """One timed system: ``prepare`` (untimed), ``run`` (timed), ``after`` (untimed)."""

    name: str
    spheres: _Spheres
    stats: dict[str, list[float]] = field(default_factory=dict)

    def prepare(self, previous: Float, current: Float) -> None:
        pass

    def run(self) -> None:
        raise NotImplementedError

    def after(self, previous: Float, current: Float) -> None:
        pass

    def close(self) -> None:
        pass

    def _count(self, key: str, value: float) -> None:
        self.stats.setdefault(key, []).append(float(value))

    def _moved(self, current: Float) -> int:
        """How many spheres the system's response took off the game's positions."""
        return int(np.any(np.abs(self.spheres.read() - current) > 1e-4, axis=1).sum())


class _Plugin(_System):
    """panda3d-ccd, with an in-pattern set (a game listens to its events)."""

    def __init__(self, spheres: _Spheres, level_root: NodePath, response: str = "slide") -> None:
        super().__init__(PLUGIN, spheres)
        self.ccd = ContinuousCollision(
            taskmgr=NoTasks(),
            render=spheres.render,
            messenger=CountingMessenger(),
            respect_prev_transform=True,
            task_name="level",
        )
        self.ccd.add_in_pattern("%fn-into-%in")
        t0 = time.perf_counter()
        self.ccd.add_collision_nodes(level_root, static=True)
        self.register_ms = 1e3 * (time.perf_counter() - t0)
        for node in spheres.nodes:
            self.ccd.add_sphere(node, RADIUS, response=response, into_mask=0)

    def run(self) -> None:
        self.ccd.step()

    def after(self, previous: Float, current: Float) -> None:
        self._count("contacts", len(self.ccd.contacts))
        self._count("candidates", self.ccd.candidate_count)
        self._count("rounds", self.ccd.rounds)
        self._count("moved", self._moved(current))

    def close(self) -> None:
        self.ccd.destroy()


class _Traverser(_System):
    """CollisionTraverser (respect-prev-transform) with a CollisionHandlerFluidPusher."""

    def __init__(self, spheres: _Spheres) -> None:
        super().__init__(TRAVERSER, spheres)
        self.traverser = CollisionTraverser("level")
        self.traverser.setRespectPrevTransform(True)
        self.pusher = CollisionHandlerFluidPusher()
        for node, solid in zip(spheres.nodes, spheres.solids):
            self.pusher.addCollider(solid, node)
            self.traverser.addCollider(solid, self.pusher)

    def run(self) -> None:
        self.traverser.traverse(self.spheres.render)

    def after(self, previous: Float, current: Float) -> None:
        self._count("moved", self._moved(current))

    def close(self) -> None:
        self.traverser.clearColliders()
        self.pusher.clearColliders()


class _Sweeps(_System):
    """One BulletWorld.sweepTestClosest per sphere, previous to current position, against
    the mesh alone. The positions come from numpy (a game holds them): no scene read."""

    def __init__(self, spheres: _Spheres, triangles: Float) -> None:
        from panda3d.bullet import BulletSphereShape

        super().__init__(SWEEPS, spheres)
        self.world, self.root = _bullet_world(triangles)
        self.shape = BulletSphereShape(RADIUS)
        self.mask = BitMask32.bit(_MESH_GROUP)
        self.motion: list[tuple[list[float], list[float]]] = []
        self.hits = 0

    def prepare(self, previous: Float, current: Float) -> None:
        self.motion = list(zip(previous.tolist(), current.tolist()))

    def run(self) -> None:
        sweep, shape, mask, at = self.world.sweepTestClosest, self.shape, self.mask, _at
        hits = 0
        for p0, p1 in self.motion:
            hits += sweep(shape, at(*p0), at(*p1), mask, 0.0).hasHit()
        self.hits = hits

    def after(self, previous: Float, current: Float) -> None:
        self._count("hits", self.hits)

    def close(self) -> None:
        self.root.removeNode()


class _Slides(_Sweeps):
    """Bullet's collide-and-slide: what the plugin's ``slide`` does, done with Bullet's
    sweeps one sphere at a time (:func:`bullet_slide`), from positions already in numpy."""

    def __init__(self, spheres: _Spheres, triangles: Float) -> None:
        super().__init__(spheres, triangles)
        self.name = SLIDES
        self.slide = bullet_slide(self.world, self.shape, self.mask)
        self.sweeps = 0

    def run(self) -> None:
        slide, sweeps = self.slide, 0
        for p0, p1 in self.motion:
            sweeps += slide(p0, p1)[1]
        self.sweeps = sweeps

    def after(self, previous: Float, current: Float) -> None:
        self._count("sweeps", self.sweeps)


def bullet_slide(
    world: Any, shape: Any, mask: BitMask32
) -> Callable[[Sequence[float], Sequence[float]], tuple[Point3, int, list[Point3]]]:
    """``slide(p0, p1)``: where a sphere asked to move from ``p0`` to ``p1`` ends by
    collide-and-slide against ``world``, how many sweeps that took, and the centres at
    its hits. Each step sweeps from where the sphere is towards its target; at a hit it
    moves there (``SLIDE_SKIN`` off the surface, along the hit's normal), the motion left
    loses its part into the surface, and the next step sweeps what is left, at most
    ``SLIDE_SWEEPS`` steps (the last hit then holds it)."""
    sweep = world.sweepTestClosest

    def slide(p0: Sequence[float], p1: Sequence[float]) -> tuple[Point3, int, list[Point3]]:
        at, target = Point3(*p0), Point3(*p1)
        bends = []
        for step in range(1, SLIDE_SWEEPS + 1):
            hit = sweep(shape, _at(*at), _at(*target), mask, 0.0)
            if not hit.hasHit():
                return target, step, bends
            normal = hit.getHitNormal()
            touch = at + (target - at) * hit.getHitFraction()
            bends.append(touch)
            left = target - touch
            left -= normal * min(left.dot(normal), 0.0)
            at = touch + normal * SLIDE_SKIN
            target = at + left
        return at, SLIDE_SWEEPS, bends

    return slide


def _at(x: float, y: float, z: float) -> TransformState:
    return TransformState.makePos(Point3(x, y, z))


class _Physics(_System):
    """Bullet's doPhysics on rigid spheres with CCD (motion threshold = radius, swept
    sphere 0.9 radius, as the main benchmark sets them), no gravity, never sleeping: a full
    dynamics step, a reference rather than the same task."""

    def __init__(self, spheres: _Spheres, triangles: Float, start: Float) -> None:
        super().__init__(PHYSICS, spheres)
        self.world, self.root = _bullet_world(triangles)
        self.bodies = _bullet_spheres(self.world, self.root, start)

    def prepare(self, previous: Float, current: Float) -> None:
        velocity = ((current - previous) / FRAME_DT).tolist()
        for body_np, (x, y, z), v in zip(self.bodies, previous.tolist(), velocity):
            body_np.setPos(x, y, z)
            body = body_np.node()
            body.setLinearVelocity(Vec3(*v))
            body.setAngularVelocity(Vec3(0, 0, 0))

    def run(self) -> None:
        self.world.doPhysics(FRAME_DT, 1, FRAME_DT)

    def after(self, previous: Float, current: Float) -> None:
        self._count("manifolds", self.world.getNumManifolds())

    def close(self) -> None:
        for body_np in self.bodies:
            self.world.removeRigidBody(body_np.node())
        self.root.removeNode()


def _bullet_spheres(world: Any, root: NodePath, start: Float) -> list[NodePath]:
    from panda3d.bullet import BulletRigidBodyNode, BulletSphereShape

    shape = BulletSphereShape(RADIUS)
    bodies = []
    for i, (x, y, z) in enumerate(start.tolist()):
        body = BulletRigidBodyNode(f"sphere{i}")
        body.addShape(shape)
        body.setMass(1.0)
        body.setDeactivationEnabled(False)
        body.setCcdMotionThreshold(RADIUS)
        body.setCcdSweptSphereRadius(0.9 * RADIUS)
        body.setIntoCollideMask(BitMask32.bit(_SPHERE_GROUP))
        body_np = root.attachNewNode(body)
        body_np.setPos(x, y, z)  # before joining the world: not all at the origin at once
        world.attachRigidBody(body)
        bodies.append(body_np)
    return bodies


class _Floor(_System):
    """Read every sphere's position into numpy: the least any pass over them costs."""

    def __init__(self, spheres: _Spheres) -> None:
        super().__init__(FLOOR, spheres)
        self.last: Float = np.zeros((0, 3))

    def run(self) -> None:
        self.last = self.spheres.read()

    def after(self, previous: Float, current: Float) -> None:
        # The harness itself is checked every frame: every node is where the game put it.
        if not np.allclose(self.last, current, rtol=0.0, atol=1e-3):
            worst = float(np.max(np.abs(self.last - current)))
            raise RuntimeError(f"nodes are not at the motion's positions (off by {worst})")


# ---------------------------------------------------------------------- timing
@dataclass
class LevelResult:
    """One movers count: medians in ``ms`` (None: not run, ``notes`` says why), every timed
    frame in ``samples``, per-frame counters' medians in ``stats``, and the plugin's
    registration of the level and first pass (ms)."""

    n: int
    ms: dict[str, float | None] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)
    register_ms: float | None = None
    first_pass_ms: float | None = None


def time_level(
    build: LevelBuild,
    n: int,
    *,
    frames: int = 10,
    warmup: int = 3,
    seed: int = 1,
    limit_s: float = 3.0,
    systems: Sequence[str] = SYSTEMS,
    response: str = "slide",
) -> LevelResult:
    """Time every system on ``n`` movers over the level, ``frames`` frames after
    ``warmup``, the plugin's spheres with ``response``. A system whose first frame takes
    longer than ``limit_s`` reports that frame alone and is not run again."""
    level = build.level
    motion = LevelMotion.generate(level, n, warmup + frames, seed=seed + n)
    render = NodePath("render")
    build.root.reparentTo(render)
    spheres = _Spheres.build(render, motion.start[0])
    PandaNode.resetAllPrevTransform()
    result = LevelResult(n)
    makers: dict[str, Callable[[], _System]] = {
        PLUGIN: lambda: _Plugin(spheres, build.root, response),
        TRAVERSER: lambda: _Traverser(spheres),
        SWEEPS: lambda: _Sweeps(spheres, level.triangles),
        SLIDES: lambda: _Slides(spheres, level.triangles),
        PHYSICS: lambda: _Physics(spheres, level.triangles, motion.start[0]),
        FLOOR: lambda: _Floor(spheres),
    }
    active: list[_System] = []
    try:
        for name in systems:
            active.append(makers[name]())
            if isinstance(active[-1], _Plugin):
                result.register_ms = active[-1].register_ms
        _run(motion, spheres, active, result, warmup=warmup, limit_s=limit_s)
    finally:
        for system in active:
            system.close()
        spheres.remove()
        build.root.detachNode()
        render.removeNode()
    for system in active:
        for key, values in system.stats.items():
            result.stats[f"{system.name} {key}"] = float(np.median(values[warmup:] or values))
    for name, values in result.samples.items():
        if name not in result.ms:
            result.ms[name] = float(np.median(values))
    return result


def _run(
    motion: LevelMotion,
    spheres: _Spheres,
    active: list[_System],
    result: LevelResult,
    *,
    warmup: int,
    limit_s: float,
) -> None:
    gc.collect()
    for k in range(1, motion.frames + 1):
        previous, current = motion.frame(k)
        begin_frame()
        spheres.move(current)
        # Rotating the order keeps "who runs first" from favouring one system.
        shift = k % len(active) if active else 0
        for system in active[shift:] + active[:shift]:
            system.prepare(previous, current)
            t0 = time.perf_counter()
            system.run()
            ms = 1e3 * (time.perf_counter() - t0)
            system.after(previous, current)
            spheres.place(previous, current)
            if k == 1 and system.name == PLUGIN:
                result.first_pass_ms = ms
            if k > warmup:
                result.samples.setdefault(system.name, []).append(ms)
            elif k == 1 and ms > 1e3 * limit_s:
                result.ms[system.name] = ms
                result.notes[system.name] = "1 frame, over the limit"
        for system in [s for s in active if s.name in result.notes]:
            system.close()
            active.remove(system)
        # The game's own positions for the next frame: rolled onto the ground, respawned.
        for node, (x, y, z) in zip(spheres.nodes, motion.start[k].tolist()):
            node.setPos(x, y, z)
        end_frame()


# ---------------------------------------------------------------------- the volley
@dataclass
class VolleyRow:
    """Fast spheres fired at front faces, in one system: how many, how many a straight
    path would take through a front face, how many ended a frame inside the level's
    solids, and how many paths crossed a front face in the first frame and in any frame.
    ``bends`` says where the path of a frame is taken to bend (see :func:`measure_volley`)."""

    system: str
    fired: int
    frames: int
    crossing: int
    inside: int
    first: int
    tunnelled: int
    bends: str

    @property
    def share_inside(self) -> float:
        return self.inside / self.fired if self.fired else 0.0

    @property
    def share(self) -> float:
        return self.tunnelled / self.fired if self.fired else 0.0


#: Where each frame's path bends, per sphere: (3,) points, in order; None: not known.
Bends = list[list[tuple[float, float, float]]]


def measure_volley(
    build: LevelBuild, fired: int, *, frames: int = 3, seed: int = 1
) -> list[VolleyRow]:
    """Fire ``fired`` spheres at the level, each pushed by its velocity for ``frames``
    frames (the game moves it on from wherever the system left it), in each system.

    Two counts, both plain numpy on the level's triangles, independent of the plugin:

    * ended inside a solid (:func:`benchmarks.level_mesh.inside_solid` on the positions
      at the end of every frame): exact, but blind to a sphere that went through a wall
      and out of it;
    * its path crossed a front face from front to back inside the triangle
      (:func:`benchmarks.level_mesh.front_crossings`). Only a frame's start and end are
      seen, and a sliding path bends where it touches, so the path is taken through the
      points where the system says it touched (the plugin's contacts, ``getContactPos``:
      the centre at the contact; Bullet's collide-and-slide: its hits), or, for systems
      that do not say, through where a sphere
      moving straight as asked first touches the level (Bullet's sweepTestClosest). A
      path that bends again in the frame, around a wall's end say, can then cut a corner
      and be counted although the sphere went round: for those systems this count is an
      upper bound. That holds for the plugin too: it reports one contact per pair of
      nodes a pass (the first), so a slide that bends again against the same node (along
      a terrain tile, round a wall's end) is drawn straight from its first contact.
    """
    level = build.level
    tri = level.triangles
    volley = Volley.generate(level, fired, seed=seed)
    straight = front_crossings(volley.start, volley.start + frames * volley.velocity, tri)
    contacts, touch = "its contacts", "first touch (Bullet sweep)"
    runs = [
        ("panda3d-ccd, response=slide", contacts,
         lambda: _fire_plugin(build, volley, frames, "slide")),
        ("panda3d-ccd, response=rewind", contacts,
         lambda: _fire_plugin(build, volley, frames, "rewind")),
        ("CollisionTraverser + FluidPusher, respect-prev-transform", touch,
         lambda: _fire_traverser(build, volley, frames)),
        (f"Bullet collide-and-slide (up to {SLIDE_SWEEPS} sweepTestClosest)", "its hits",
         lambda: _fire_slides(build, volley, frames)),
        ("Bullet doPhysics, CCD (threshold r, swept sphere 0.9 r)", touch,
         lambda: _fire_physics(build, volley, frames)),
    ]  # fmt: skip
    first_touch = _first_touch(tri)
    rows = []
    for name, how, run in runs:
        path, bends = run()
        crossed, inside = [], []
        for k in range(frames):
            p0, p1 = path[k], path[k + 1]
            if bends[k] is None:
                bent = [[tuple(q)] for q in first_touch(p0, p0 + volley.velocity).tolist()]
            else:
                bent = bends[k]
            crossed.append(_path_crossings(p0, p1, bent, tri))
            inside.append(inside_solid(p1, tri))
        rows.append(
            VolleyRow(
                name,
                fired,
                frames,
                crossing=int(straight.sum()),
                inside=int(np.any(inside, axis=0).sum()),
                first=int(crossed[0].sum()),
                tunnelled=int(np.any(crossed, axis=0).sum()),
                bends=how,
            )
        )
    return rows


def _path_crossings(p0: Float, p1: Float, bends: Bends, triangles: Float) -> NDArray[np.bool_]:
    """(k,) bool: does the path from ``p0[i]`` through ``bends[i]`` to ``p1[i]`` ((k, 3)
    float64 ends) cross a front face of (m, 3, 3) float64 ``triangles``?"""
    starts: list[Any] = []
    ends: list[Any] = []
    owner: list[int] = []
    for i, (a, points, b) in enumerate(zip(p0.tolist(), bends, p1.tolist())):
        chain = [a, *points, b]
        starts += chain[:-1]
        ends += chain[1:]
        owner += [i] * (len(chain) - 1)
    crossed = front_crossings(np.array(starts), np.array(ends), triangles)
    return np.bincount(owner, weights=crossed, minlength=len(p0)) > 0


def _first_touch(triangles: Float) -> Callable[[Float, Float], Float]:
    """``touch(p0, p1)``: (n, 3) float64 centres where spheres moving straight from ``p0``
    to ``p1`` ((n, 3) float64 each) first touch the mesh (``p1`` if they never do), by
    Bullet's sweepTestClosest against the same triangles."""
    from panda3d.bullet import BulletSphereShape

    world, root = _bullet_world(triangles)
    shape, mask = BulletSphereShape(RADIUS), BitMask32.bit(_MESH_GROUP)

    def touch(p0: Float, p1: Float) -> Float:
        fraction = np.ones(len(p0))
        for i, (a, b) in enumerate(zip(p0.tolist(), p1.tolist())):
            hit = world.sweepTestClosest(shape, _at(*a), _at(*b), mask, 0.0)
            if hit.hasHit():
                fraction[i] = hit.getHitFraction()
        return p0 + fraction[:, None] * (p1 - p0)

    touch.root = root  # type: ignore[attr-defined]  # the world lives as long as touch
    return touch


Advance = Callable[[Float], "tuple[Float, Bends | None]"]


def _fire(volley: Volley, frames: int, advance: Advance) -> tuple[Float, list[Bends | None]]:
    """(frames + 1, k, 3) float64 positions and each frame's bends: each frame the game
    asks for ``position + velocity``; ``advance`` returns where the system left every
    sphere, and where it says each path bent (None: it does not say)."""
    path, bends = [volley.start], []
    for _ in range(frames):
        position, bent = advance(path[-1] + volley.velocity)
        path.append(position)
        bends.append(bent)
    return np.array(path), bends


def _in_scene(build: LevelBuild, volley: Volley, body: Callable[[_Spheres], Any]) -> Any:
    render = NodePath("render")
    build.root.reparentTo(render)
    spheres = _Spheres.build(render, volley.start)
    try:
        return body(spheres)
    finally:
        spheres.remove()
        build.root.detachNode()
        render.removeNode()


def _fire_plugin(
    build: LevelBuild, volley: Volley, frames: int, response: str
) -> tuple[Float, list[Bends | None]]:
    def body(spheres: _Spheres) -> tuple[Float, list[Bends | None]]:
        system = _Plugin(spheres, build.root, response)
        index = {node: i for i, node in enumerate(spheres.nodes)}
        try:

            def advance(target: Float) -> tuple[Float, Bends | None]:
                begin_frame()
                spheres.move(target)
                system.ccd.step()
                bends: Bends = [[] for _ in spheres.nodes]
                for contact in system.ccd.contacts:
                    i = index.get(contact.getFromNodePath())
                    if i is not None:
                        bends[i].append(tuple(contact.getContactPos(spheres.render)))
                return spheres.read(), bends

            return _fire(volley, frames, advance)
        finally:
            system.close()

    return _in_scene(build, volley, body)


def _fire_traverser(
    build: LevelBuild, volley: Volley, frames: int
) -> tuple[Float, list[Bends | None]]:
    def body(spheres: _Spheres) -> tuple[Float, list[Bends | None]]:
        system = _Traverser(spheres)
        try:

            def advance(target: Float) -> tuple[Float, Bends | None]:
                begin_frame()
                spheres.move(target)
                system.run()
                return spheres.read(), None

            return _fire(volley, frames, advance)
        finally:
            system.close()

    return _in_scene(build, volley, body)


def _fire_slides(
    build: LevelBuild, volley: Volley, frames: int
) -> tuple[Float, list[Bends | None]]:
    from panda3d.bullet import BulletSphereShape

    world, root = _bullet_world(build.level.triangles)
    slide = bullet_slide(world, BulletSphereShape(RADIUS), BitMask32.bit(_MESH_GROUP))
    where = np.asarray(volley.start)

    def advance(target: Float) -> tuple[Float, Bends | None]:
        nonlocal where
        ends, bends = [], []
        for p0, p1 in zip(where.tolist(), target.tolist()):
            end, _sweeps, hits = slide(p0, p1)
            ends.append(tuple(end))
            bends.append([tuple(hit) for hit in hits])
        where = np.array(ends)
        return where, bends

    try:
        return _fire(volley, frames, advance)
    finally:
        root.removeNode()


def _fire_physics(
    build: LevelBuild, volley: Volley, frames: int
) -> tuple[Float, list[Bends | None]]:
    world, root = _bullet_world(build.level.triangles)
    bodies = _bullet_spheres(world, root, volley.start)
    velocity = [Vec3(*v) for v in (volley.velocity / FRAME_DT).tolist()]

    def advance(target: Float) -> tuple[Float, Bends | None]:
        for body_np, v in zip(bodies, velocity):
            body_np.node().setLinearVelocity(v)
        world.doPhysics(FRAME_DT, 1, FRAME_DT)
        flat = itertools.chain.from_iterable([body_np.getPos() for body_np in bodies])
        return np.fromiter(flat, np.float64, 3 * len(bodies)).reshape(-1, 3), None

    try:
        return _fire(volley, frames, advance)
    finally:
        for body_np in bodies:
            world.removeRigidBody(body_np.node())
        root.removeNode()


# ---------------------------------------------------------------------- tables
def level_table(results: Sequence[LevelResult]) -> str:
    """Time per frame in milliseconds (medians), one row per movers count."""
    lines = [
        "| movers | plugin ms | traverser ms | Bullet sweeps ms | Bullet slides ms "
        "| Bullet doPhysics ms | floor ms | traverser/plugin | plugin/sweeps | plugin/slides "
        "| plugin/floor |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        plugin = r.ms.get(PLUGIN)
        lines.append(
            f"| {r.n:,} | {_cell(r, PLUGIN)} | {_cell(r, TRAVERSER)} | {_cell(r, SWEEPS)} "
            f"| {_cell(r, SLIDES)} | {_cell(r, PHYSICS)} | {_cell(r, FLOOR)} "
            f"| {_ratio(r.ms.get(TRAVERSER), plugin)} | {_ratio(plugin, r.ms.get(SWEEPS))} "
            f"| {_ratio(plugin, r.ms.get(SLIDES))} | {_ratio(plugin, r.ms.get(FLOOR))} |"
        )
    return "\n".join(lines)


def level_detail_table(results: Sequence[LevelResult]) -> str:
    """What a frame held (medians): the plugin's work, and what each response did."""
    keys = [
        ("plugin contacts", f"{PLUGIN} contacts"),
        ("plugin candidate pairs", f"{PLUGIN} candidates"),
        ("plugin rounds", f"{PLUGIN} rounds"),
        ("spheres the plugin moved", f"{PLUGIN} moved"),
        ("spheres the pusher moved", f"{TRAVERSER} moved"),
        ("sweeps that hit", f"{SWEEPS} hits"),
        ("sweeps the slides made", f"{SLIDES} sweeps"),
        ("Bullet manifolds", f"{PHYSICS} manifolds"),
    ]
    lines = [
        "| movers | " + " | ".join(label for label, _ in keys) + " |",
        "|---:|" + "---:|" * len(keys),
    ]
    for r in results:
        cells = ["-" if r.stats.get(key) is None else f"{r.stats[key]:,.0f}" for _, key in keys]
        lines.append(f"| {r.n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def registration_table(build: LevelBuild, results: Sequence[LevelResult]) -> str:
    """Set-up costs: the scene, Bullet's mesh, and the plugin's registration of the level
    and first pass at each movers count."""
    level = build.level
    lines = [
        "| set-up | ms |",
        "|---|---:|",
        f"| Panda3D scene: {len(level.triangles):,} CollisionPolygons in {build.nodes} "
        f"CollisionNodes (Python loop, once) | {_ms(build.scene_ms)} |",
        f"| Bullet: BulletTriangleMesh.addArray + BulletTriangleMeshShape | "
        f"{_ms(build.bullet_ms)} |",
    ]
    for r in results:
        lines.append(
            f"| plugin: add_collision_nodes(level, static=True), {r.n:,} movers | "
            f"{_ms(r.register_ms)} |"
        )
        lines.append(f"| plugin: first pass, {r.n:,} movers | {_ms(r.first_pass_ms)} |")
    return "\n".join(lines)


def volley_table(rows: Sequence[VolleyRow]) -> str:
    frames = rows[0].frames if rows else 0
    lines = [
        "| system | fired | straight path crosses a front face | ended a frame inside a solid "
        "| share | path crossed a front face: frame 1 | any of "
        f"{frames} frames | share | path bent at |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.system} | {row.fired:,} | {row.crossing:,} | {row.inside:,} "
            f"| {100 * row.share_inside:.1f}% | {row.first:,} | {row.tunnelled:,} "
            f"| {100 * row.share:.1f}% | {row.bends} |"
        )
    return "\n".join(lines)
