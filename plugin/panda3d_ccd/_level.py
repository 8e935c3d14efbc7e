"""Level pieces from Panda3D collision solids: the converter from a CollisionNode's
polygons, boxes, capsules and inverse spheres to rows of the geometry's kinds.

Solids are read once, at registration, in the node's own coordinates; polygons with more
than three vertices are fanned into triangles. The rows then live in the component's
tables (static ones baked into world coordinates once, kinematic ones kept in their node's
frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from panda3d.core import CollisionBox, CollisionCapsule, CollisionInvSphere, CollisionPolygon

from ._pieces import BOX, CAPSULE, INV_SPHERE, TRIANGLE
from ._tolerance import DEGENERATE_REL

#: A polygon vertex farther than this fraction of the polygon's size from the plane of its
#: first three is non-planar (Panda3D's own CollisionPolygon is always planar to float32).
_PLANAR_REL = 1e-4

#: The solid types that become pieces (exact types: CollisionPolygon derives from
#: CollisionPlane and CollisionInvSphere from CollisionSphere).
PIECE_TYPES = (CollisionPolygon, CollisionBox, CollisionCapsule, CollisionInvSphere)


@dataclass
class Shapes:
    """One node's pieces, per kind: ``geometry[kind]`` the kernel's arrays (node-local),
    ``solid[kind]`` (r,) the index of the solid each row came from, ``part[kind]`` (r,)
    which triangle of its polygon a row is (0 for other kinds)."""

    geometry: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict)
    solid: dict[int, np.ndarray] = field(default_factory=dict)
    part: dict[int, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(s) for s in self.solid.values())


def read_solids(name: str, solids: list[tuple[int, Any]], two_sided: bool) -> Shapes:
    """The pieces of ``solids`` ((index in the node, solid) pairs) of the node ``name``
    (a box as its 12 faces: triangles 0-5 and 6-11 are the two halves of faces -x, +x,
    -y, +y, -z, +z);
    ValueError naming the node and the index of a degenerate or non-planar polygon."""
    rows: dict[int, list[Any]] = {TRIANGLE: [], BOX: [], CAPSULE: [], INV_SPHERE: []}
    owner: dict[int, list[int]] = {kind: [] for kind in rows}
    part: dict[int, list[int]] = {kind: [] for kind in rows}
    for index, solid in solids:
        kind = type(solid)
        if kind is CollisionPolygon:
            points = np.array([tuple(p) for p in solid.getPoints()], np.float64)
            for j, tri in enumerate(_fan(name, index, points)):
                rows[TRIANGLE].append(tri)
                owner[TRIANGLE].append(index)
                part[TRIANGLE].append(j)
        elif kind is CollisionBox:
            # A box is its 12 faces, facing out. The triangle kernel culls the many pairs
            # that cannot touch before its exact stage (the box kernel has no such cull
            # and costs some 2 ms a call in the demo), and one table for all polygons and
            # boxes is one kernel call a round, not two.
            lo = np.array([tuple(solid.getMin())], np.float64)
            hi = np.array([tuple(solid.getMax())], np.float64)
            for j, tri in enumerate(box_triangles(lo, hi)):
                rows[TRIANGLE].append(tri)
                owner[TRIANGLE].append(index)
                part[TRIANGLE].append(j)
        elif kind is CollisionCapsule:
            a, b = tuple(solid.getPointA()), tuple(solid.getPointB())
            rows[CAPSULE].append((a, b, solid.getRadius()))
            owner[CAPSULE].append(index)
            part[CAPSULE].append(0)
        elif kind is CollisionInvSphere:
            rows[INV_SPHERE].append((tuple(solid.getCenter()), solid.getRadius()))
            owner[INV_SPHERE].append(index)
            part[INV_SPHERE].append(0)
    shapes = Shapes()
    for kind, found in rows.items():
        if not found:
            continue
        shapes.solid[kind] = np.array(owner[kind], np.int64)
        shapes.part[kind] = np.array(part[kind], np.int64)
        if kind == TRIANGLE:
            corners = np.array(found, np.float64).reshape(-1, 3, 3)
            two = np.full(len(corners), bool(two_sided))
            shapes.geometry[kind] = (corners[:, 0], corners[:, 1], corners[:, 2], two)
        elif kind == BOX:
            box = np.array(found, np.float64).reshape(-1, 2, 3)
            shapes.geometry[kind] = (box[:, 0], box[:, 1])
        elif kind == CAPSULE:
            a = np.array([f[0] for f in found], np.float64)
            b = np.array([f[1] for f in found], np.float64)
            shapes.geometry[kind] = (a, b, np.array([f[2] for f in found], np.float64))
        else:
            c = np.array([f[0] for f in found], np.float64)
            shapes.geometry[kind] = (c, np.array([f[1] for f in found], np.float64))
    return shapes


def _fan(name: str, index: int, points: np.ndarray) -> list[np.ndarray]:
    """Triangles (p0, p_i, p_i+1) of a convex polygon, in its winding."""
    if len(points) < 3 or not np.isfinite(points).all():
        raise ValueError(f"{name}: solid {index} is a polygon with fewer than 3 finite points")
    edge = points - points[0]
    normal = np.zeros(3)
    for i in range(1, len(points) - 1):
        normal += np.cross(edge[i], edge[i + 1])
    size = np.abs(edge).max()
    area2 = float(np.linalg.norm(normal))
    if area2 <= DEGENERATE_REL * size * size:
        raise ValueError(f"{name}: solid {index} is a degenerate polygon (no area)")
    off = np.abs(edge @ (normal / area2))
    if off.max() > _PLANAR_REL * size:
        raise ValueError(
            f"{name}: solid {index} is a non-planar polygon (a vertex {off.max():.3g} off "
            "its plane)"
        )
    return [np.stack([points[0], points[i], points[i + 1]]) for i in range(1, len(points) - 1)]


def box_triangles(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(12 k, 3, 3) outward-facing triangles of boxes lo, hi (k, 3): a turned static box
    is baked into world coordinates as its faces."""
    corner = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)])
    # Faces as corner indices, counter-clockwise seen from outside.
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [(q[0], q[1], q[2]) for q in quads] + [(q[0], q[2], q[3]) for q in quads]
    pts = lo[:, None, :] + corner[None] * (hi - lo)[:, None, :]  # (k, 8, 3)
    return pts[:, np.array(tris)].reshape(-1, 3, 3)
