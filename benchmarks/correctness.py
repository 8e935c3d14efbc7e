"""Correctness under speed: which true contacts of fast sphere pairs each system reports.

Every pair is one frame of motion (start -> end), far from every other pair. The ground
truth is the exact time of impact from ``panda3d_ccd.sweep.sphere_sphere_toi`` on the
float32 coordinates Panda3D holds. A reported pair that does not touch, or a report between
spheres of two different pairs, is a false alarm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from panda3d.core import (
    CollisionHandlerQueue,
    CollisionNode,
    CollisionSphere,
    CollisionTraverser,
    NodePath,
    PandaNode,
)

from panda3d_ccd import ContinuousCollision

from .scene import PairScene
from .systems import CountingMessenger, NoTasks

__all__ = ["CorrectnessRow", "measure_correctness"]

_TAG = "pair"


@dataclass(frozen=True)
class CorrectnessRow:
    """One system's result. ``caught / true_contacts`` is the share of true contacts it
    reported; ``false_alarms`` counts reported pairs that never touched."""

    system: str
    pairs: int
    true_contacts: int
    caught: int
    false_alarms: int

    @property
    def share(self) -> float:
        return self.caught / self.true_contacts if self.true_contacts else 1.0


def _row(system: str, scene: PairScene, reported: set[tuple[int, int]]) -> CorrectnessRow:
    hit = np.zeros(scene.m, bool)
    false_alarms = 0
    for i, j in reported:
        if i == j and scene.truth[i]:
            hit[i] = True
        else:
            false_alarms += 1
    return CorrectnessRow(
        system=system,
        pairs=scene.m,
        true_contacts=int(scene.truth.sum()),
        caught=int(hit.sum()),
        false_alarms=false_alarms,
    )


def _build(scene: PairScene, *, solids: bool) -> tuple[NodePath, list[NodePath], list[float]]:
    """Nodes of all pairs at their start positions, A then B of each pair; each tagged with
    its pair index. With ``solids`` each gets a CollisionNode child with its sphere."""
    render = NodePath("render")
    nodes: list[NodePath] = []
    radii: list[float] = []
    for i in range(scene.m):
        for label, start, r in (("a", scene.a0[i], scene.ra[i]), ("b", scene.b0[i], scene.rb[i])):
            node = render.attachNewNode(PandaNode(f"{label}{i}"))
            node.setPos(*start.tolist())
            node.setPythonTag(_TAG, i)
            if solids:
                cnode = CollisionNode(f"{label}{i}")
                cnode.addSolid(CollisionSphere(0.0, 0.0, 0.0, float(r)))
                node.attachNewNode(cnode)
            nodes.append(node)
            radii.append(float(r))
    PandaNode.resetAllPrevTransform()
    return render, nodes, radii


def _move_to_end(scene: PairScene, nodes: list[NodePath], *, fluid: bool) -> None:
    ends = np.empty((2 * scene.m, 3))
    ends[0::2], ends[1::2] = scene.a1, scene.b1
    for node, (x, y, z) in zip(nodes, ends.tolist()):
        if fluid:
            node.setFluidPos(x, y, z)
        else:
            node.setPos(x, y, z)


def _pair_key(i: int, j: int) -> tuple[int, int]:
    return (i, j) if i <= j else (j, i)


def plugin_reports(scene: PairScene, response: str) -> set[tuple[int, int]]:
    """Pairs (pair index of each side) the plugin reports in one ``step()``."""
    render, nodes, radii = _build(scene, solids=False)
    ccd = ContinuousCollision(taskmgr=NoTasks(), render=render, messenger=CountingMessenger())
    try:
        for node, r in zip(nodes, radii):
            ccd.add_sphere(node, r, response=response)
        ccd.step()  # a node's first pass sweeps nothing
        _move_to_end(scene, nodes, fluid=True)
        contacts = ccd.step()
        return {
            _pair_key(
                c.getFromNodePath().getPythonTag(_TAG), c.getIntoNodePath().getPythonTag(_TAG)
            )
            for c in contacts
        }
    finally:
        ccd.destroy()
        render.removeNode()


def traverser_reports(scene: PairScene, *, respect_prev: bool) -> set[tuple[int, int]]:
    """Pairs Panda3D's CollisionTraverser reports: every sphere a from- and into-object.

    With ``respect_prev`` the nodes are moved with setFluidPos and the traverser sweeps from
    the previous transform; without, they are placed at the end and tested there.
    """
    render, nodes, _radii = _build(scene, solids=True)
    traverser = CollisionTraverser("correctness")
    traverser.setRespectPrevTransform(respect_prev)
    queue = CollisionHandlerQueue()
    try:
        for node in nodes:
            traverser.addCollider(node.getChild(0), queue)
        _move_to_end(scene, nodes, fluid=respect_prev)
        traverser.traverse(render)
        reported = set()
        for k in range(queue.getNumEntries()):
            entry = queue.getEntry(k)
            i = entry.getFromNodePath().getParent().getPythonTag(_TAG)
            j = entry.getIntoNodePath().getParent().getPythonTag(_TAG)
            reported.add(_pair_key(i, j))
        return reported
    finally:
        traverser.clearColliders()
        render.removeNode()


def measure_correctness(scene: PairScene) -> list[CorrectnessRow]:
    """The table rows: the plugin (rewind and sensor responses) and Panda3D's traverser
    (respect-prev-transform with setFluidPos, and discrete at the end positions)."""
    return [
        _row("panda3d-ccd, response=rewind", scene, plugin_reports(scene, "rewind")),
        _row("panda3d-ccd, response=sensor", scene, plugin_reports(scene, "sensor")),
        _row(
            "CollisionTraverser, respect-prev-transform + setFluidPos",
            scene,
            traverser_reports(scene, respect_prev=True),
        ),
        _row(
            "CollisionTraverser, discrete (end positions)",
            scene,
            traverser_reports(scene, respect_prev=False),
        ),
    ]
