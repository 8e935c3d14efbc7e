"""The two collision systems the demo can run on the same scene.

:class:`PluginSystem` is panda3d-ccd's :class:`~panda3d_ccd.ContinuousCollision`: the
arena's static CollisionNodes through ``add_collision_nodes(..., static=True)``, the lift,
the gate and the targets as kinematic colliders the game moves.
:class:`TraverserSystem` is the best Panda3D offers on its own: a ``CollisionTraverser``
with ``setRespectPrevTransform(True)`` (movers are moved with ``setFluidPos``), the arena's
CollisionNodes as they came from the egg, a ``CollisionHandlerEvent`` with the same event
patterns for balls and projectiles and a ``CollisionHandlerFluidPusher`` for the walking
player. Both send the same event names with an argument answering to the same getters, so
the level's handlers serve both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from panda3d.core import (
    BitMask32,
    CollisionHandlerEvent,
    CollisionHandlerFluidPusher,
    CollisionNode,
    CollisionSphere,
    CollisionTraverser,
    NodePath,
)

from panda3d_ccd import ContinuousCollision

if TYPE_CHECKING:
    from .level import Body

__all__ = ["CollisionSystem", "PluginSystem", "TraverserSystem", "SYSTEMS", "TASK_SORT"]

#: Sort of the collision pass: after the level moves things (10), before rendering (50).
TASK_SORT = 25


class CollisionSystem(Protocol):
    """What the level needs from a collision system."""

    name: str

    def add_level(self, root: NodePath, pieces: list[Body]) -> None:
        """The arena's static CollisionNodes, all under ``root``."""

    def add(self, body: Body) -> None: ...

    def remove(self, body: Body) -> None: ...

    def teleport(self, body: Body) -> None: ...

    def place_at_contact(self, body: Body, entry: Any) -> None: ...

    @property
    def colliders(self) -> int: ...

    def set_debug(self, on: bool) -> None: ...

    def destroy(self) -> None: ...


class PluginSystem:
    """panda3d-ccd: sweeps every sphere, puts movers back at the contact, then sends events."""

    name = "plugin"

    def __init__(self, base: Any, pattern: str) -> None:
        self.ccd = ContinuousCollision(base, task_sort=TASK_SORT, task_name="demo-ccd")
        self.ccd.add_in_pattern(pattern)
        self.ccd.add_again_pattern(pattern)

    def add_level(self, root: NodePath, pieces: list[Body]) -> None:
        self.ccd.add_collision_nodes(root, static=True)

    def add(self, body: Body) -> None:
        if body.piece is not None:  # the lift or the gate: the egg's CollisionNode
            self.ccd.add_collision_node(body.np, response="kinematic")
            return
        self.ccd.add_sphere(
            body.np,
            body.radius,
            from_mask=body.from_mask,
            into_mask=body.into_mask,
            response=body.response,
            static=body.static,
        )

    def remove(self, body: Body) -> None:
        self.ccd.remove(body.np)

    def teleport(self, body: Body) -> None:
        self.ccd.teleport(body.np)

    def place_at_contact(self, body: Body, entry: Any) -> None:
        """Nothing to do: the plugin already stopped (or slid) the body at the contact."""

    @property
    def colliders(self) -> int:
        return self.ccd.colliders

    def set_debug(self, on: bool) -> None:
        if on:
            self.ccd.show_debug()
        else:
            self.ccd.hide_debug()

    def destroy(self) -> None:
        self.ccd.destroy()


class TraverserSystem:
    """Panda3D's CollisionTraverser, respecting previous transforms.

    Balls and projectiles go to a CollisionHandlerEvent: Panda3D only reports, it moves
    nothing, so, as a game using it must, the level's handlers call
    :meth:`place_at_contact` to put them back where they touched. The walking player goes
    to a CollisionHandlerFluidPusher, Panda3D's own sliding response, which sends the same
    events. The arena's CollisionNodes are in the scene graph already: nothing to add.
    """

    name = "traverser"

    def __init__(self, base: Any, pattern: str) -> None:
        self._render: NodePath = base.render
        self._event_mgr = base.eventMgr
        self._taskmgr = base.taskMgr
        self.traverser = CollisionTraverser("demo-traverser")
        self.traverser.setRespectPrevTransform(True)
        self.handler = CollisionHandlerEvent()
        self.pusher = CollisionHandlerFluidPusher()
        for handler in (self.handler, self.pusher):
            handler.addInPattern(pattern)
            handler.addAgainPattern(pattern)
        self._nodes: dict[int, NodePath] = {}
        self._level: list[NodePath] = []
        self._debug = False
        self._task = self._taskmgr.add(self._step, "demo-traverser", sort=TASK_SORT)

    def _step(self, task: Any) -> int:
        self.traverser.traverse(self._render)
        # CollisionHandlerEvent queues its events; dispatch them now, inside the collision
        # pass, as the plugin does, instead of at the next frame's eventManager task.
        self._event_mgr.doEvents()
        return task.cont

    def add_level(self, root: NodePath, pieces: list[Body]) -> None:
        self._level.extend(body.np for body in pieces)

    def add(self, body: Body) -> None:
        if body.piece is not None:  # the lift or the gate: already in the scene graph
            self._level.append(body.np)
            if self._debug:
                body.np.show()
            return
        node = CollisionNode(body.np.getName())
        solid = CollisionSphere(0, 0, 0, body.radius)
        solid.setTangible(not body.sensor)
        node.addSolid(solid)
        node.setFromCollideMask(BitMask32(body.from_mask))
        node.setIntoCollideMask(BitMask32(body.into_mask))
        path = body.np.attachNewNode(node)
        if self._debug:
            path.show()
        self._nodes[body.uid] = path
        if body.response == "slide":
            self.pusher.addCollider(path, body.np)
            self.traverser.addCollider(path, self.pusher)
        elif body.is_mover:
            self.traverser.addCollider(path, self.handler)

    def remove(self, body: Body) -> None:
        if body.piece is not None:
            return
        path = self._nodes.pop(body.uid)
        self.traverser.removeCollider(path)
        self.pusher.removeCollider(path)
        path.removeNode()

    def teleport(self, body: Body) -> None:
        """Nothing to do: ``setPos`` already reset the node's previous transform."""

    def place_at_contact(self, body: Body, entry: Any) -> None:
        """Put a mover back where it touched: the earliest contact of the frame wins."""
        if body.response == "slide":
            return  # the fluid pusher has placed it
        t = entry.getT()
        if 0.0 < t <= 1.0:
            if t < body.t_hit:
                body.t_hit = t
                pos = body.p0 + t * (body.p1 - body.p0)
                body.np.setFluidPos(*pos)
            return
        # No usable time: a sphere that ends overlapping a sphere is not swept (t = 0),
        # nor is anything hit by a moving into node. All a game can do is push it out
        # along the normal, as CollisionHandlerPusher would.
        normal = np.array(entry.getSurfaceNormal(self._render), float)
        point = np.array(entry.getSurfacePoint(self._render), float)
        pos = np.array(body.np.getPos(self._render), float)
        depth = body.radius - float(np.dot(pos - point, normal))
        if depth > 0:
            body.np.setFluidPos(*(pos + normal * depth))

    @property
    def colliders(self) -> int:
        return len(self._nodes) + len(self._level)

    def set_debug(self, on: bool) -> None:
        self._debug = on
        for path in [*self._nodes.values(), *self._level]:
            if on:
                path.show()
            else:
                path.hide()
        if on:
            self.traverser.showCollisions(self._render)
        else:
            self.traverser.hideCollisions()

    def destroy(self) -> None:
        self._taskmgr.remove(self._task)
        self.set_debug(False)
        self.traverser.clearColliders()
        self.pusher.clearColliders()
        for path in self._nodes.values():
            path.removeNode()
        self._nodes.clear()
        self._level.clear()


SYSTEMS: dict[str, type] = {"plugin": PluginSystem, "traverser": TraverserSystem}
