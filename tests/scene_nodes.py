"""Collision nodes as the tests build them: one helper for every test module."""

from __future__ import annotations

from panda3d.core import BitMask32, CollisionNode


def collision_node(
    parent, name, *solids, pos=(0, 0, 0), hpr=(0, 0, 0), from_mask=None, into_mask=None
):
    """A CollisionNode ``name`` holding ``solids`` under ``parent`` at ``pos``, ``hpr``;
    the masks Panda3D's defaults where None."""
    node = CollisionNode(name)
    for solid in solids:
        node.addSolid(solid)
    if from_mask is not None:
        node.setFromCollideMask(from_mask)
    if into_mask is not None:
        node.setIntoCollideMask(into_mask)
    path = parent.attachNewNode(node)
    path.setPosHpr(*pos, *hpr)
    return path


def ray_node(parent, name, *solids, pos=(0, 0, 0), from_mask=None):
    """A from-only node, as Panda3D's samples make them: into mask off."""
    return collision_node(
        parent, name, *solids, pos=pos, from_mask=from_mask, into_mask=BitMask32.allOff()
    )
