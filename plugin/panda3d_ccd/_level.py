"""Level pieces from Panda3D collision solids: the converter from a CollisionNode's
polygons, boxes, capsules and inverse spheres to rows of the geometry's kinds.

Solids are read once, at registration, in the node's own coordinates; polygons with more
than three vertices are fanned into triangles. The rows then live in the component's
tables (static ones baked into world coordinates once, kinematic ones kept in their node's
frame).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from panda3d.core import (
    CollisionBox,
    CollisionCapsule,
    CollisionInvSphere,
    CollisionPolygon,
    PTA_LVecBase3f,
)

from ._pieces import BOX, CAPSULE, INV_SPHERE, TRIANGLE, seams
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


def read_solids(
    name: str, solids: list[tuple[int, Any]], two_sided: bool, sensor: bool = False
) -> Shapes:
    """The pieces of ``solids`` ((index in the node, solid) pairs) of the node ``name``
    (a solid box as its 12 faces: triangles 0-5 and 6-11 are the two halves of faces -x,
    +x, -y, +y, -z, +z; a ``sensor`` node's box as one box row, a volume: a body inside it
    overlaps it); ValueError naming the node and the index of a degenerate or non-planar
    polygon, or of a box, capsule or inverse sphere that is not finite (or a box whose min
    corner is above its max)."""
    rows: dict[int, list[Any]] = {TRIANGLE: [], BOX: [], CAPSULE: [], INV_SPHERE: []}
    owner: dict[int, list[int]] = {kind: [] for kind in rows}
    part: dict[int, list[int]] = {kind: [] for kind in rows}
    polygons = [(index, solid) for index, solid in solids if type(solid) is CollisionPolygon]
    if polygons:
        tri, owner[TRIANGLE], part[TRIANGLE] = _fan_all(name, polygons)
        rows[TRIANGLE].extend(tri)
    polygon_rows = len(rows[TRIANGLE])  # the polygons' triangles, before the boxes'
    for index, solid in solids:
        kind = type(solid)
        if kind is CollisionPolygon:
            continue
        if kind is CollisionBox:
            # A box is its 12 faces, facing out. The triangle kernel culls the many pairs
            # that cannot touch before its exact stage (the box kernel has no such cull
            # and costs some 2 ms a call in the demo), and one table for all polygons and
            # boxes is one kernel call a round, not two.
            lo = np.array([tuple(solid.getMin())], np.float64)
            hi = np.array([tuple(solid.getMax())], np.float64)
            _finite(name, index, "a box", lo, hi)
            if np.any(lo > hi):
                raise ValueError(
                    f"{name}: solid {index} is a box whose min corner {lo[0].tolist()} is "
                    f"above its max corner {hi[0].tolist()} on some axis"
                )
            if sensor:
                # A trigger volume: a body wholly inside is in it, far from every face.
                rows[BOX].append((lo[0], hi[0]))
                owner[BOX].append(index)
                part[BOX].append(0)
                continue
            for j, tri in enumerate(box_triangles(lo, hi)):
                rows[TRIANGLE].append(tri)
                owner[TRIANGLE].append(index)
                part[TRIANGLE].append(j)
        elif kind is CollisionCapsule:
            a, b = tuple(solid.getPointA()), tuple(solid.getPointB())
            _finite(name, index, "a capsule", a, b, solid.getRadius())
            rows[CAPSULE].append((a, b, solid.getRadius()))
            owner[CAPSULE].append(index)
            part[CAPSULE].append(0)
        elif kind is CollisionInvSphere:
            _finite(name, index, "an inverse sphere", tuple(solid.getCenter()), solid.getRadius())
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
            # The polygons' seams closed exactly (Panda3D rebuilds their shared corners
            # apart; a box's, made here, are exact copies already).
            corners, across = seams(np.array(found, np.float64).reshape(-1, 3, 3), polygon_rows)
            two = np.full(len(corners), bool(two_sided))
            a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
            shapes.geometry[kind] = (a, b, c, two, across)
        elif kind == BOX:
            lo = np.array([f[0] for f in found], np.float64)
            shapes.geometry[kind] = (lo, np.array([f[1] for f in found], np.float64))
        elif kind == CAPSULE:
            a = np.array([f[0] for f in found], np.float64)
            b = np.array([f[1] for f in found], np.float64)
            shapes.geometry[kind] = (a, b, np.array([f[2] for f in found], np.float64))
        else:
            c = np.array([f[0] for f in found], np.float64)
            shapes.geometry[kind] = (c, np.array([f[1] for f in found], np.float64))
    return shapes


def _finite(name: str, index: int, what: str, *values: Any) -> None:
    """ValueError naming the node and solid ``index`` (``what``, "a box") unless every number of
    ``values`` is finite: one such solid would make every pass that reads it fail."""
    numbers = np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in values])
    if not np.isfinite(numbers).all():
        bad = numbers[~np.isfinite(numbers)][0]
        raise ValueError(f"{name}: solid {index} is {what} with a non-finite value ({bad})")


def _fan_all(name: str, polygons: list[tuple[int, Any]]) -> tuple[np.ndarray, list[int], list[int]]:
    """(t, 3, 3) triangles (p0, p_i, p_i+1) of convex polygons in their winding, with each
    one's solid index and part, in solid order; polygons of one vertex count at a time
    (registering a level reads 30,000 of them)."""
    counts = np.fromiter((s.getNumPoints() for _i, s in polygons), np.int64, len(polygons))
    pta = PTA_LVecBase3f()
    deque(map(pta.pushBack, (p for _i, s in polygons for p in s.getPoints())), maxlen=0)
    flat = np.frombuffer(pta, np.float32).reshape(-1, 3).astype(np.float64)
    index = np.fromiter((i for i, _s in polygons), np.int64, len(polygons))
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    few = np.flatnonzero(counts < 3)
    if len(few):
        raise ValueError(
            f"{name}: solid {index[few[0]]} is a polygon with fewer than 3 finite points"
        )
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for c in np.unique(counts).tolist():
        rows = np.flatnonzero(counts == c)
        pts = flat[start[rows][:, None] + np.arange(c)]  # (k, c, 3)
        bad = ~np.isfinite(pts).all(axis=(1, 2))
        edge = pts - pts[:, :1]
        normal = np.cross(edge[:, 1:-1], edge[:, 2:]).sum(axis=1)
        size = np.abs(edge).max(axis=(1, 2))
        area2 = np.linalg.norm(normal, axis=1)
        bad |= area2 <= DEGENERATE_REL * size * size
        if bad.any():
            raise ValueError(
                f"{name}: solid {index[rows[np.argmax(bad)]]} is a degenerate polygon (no area)"
            )
        # Convex: every corner turns the same way as the whole (a concave polygon fanned
        # from its first corner would cover its notch; Panda3D's traverser does not take
        # one either).
        side = pts[:, np.r_[1:c, 0]] - pts
        turn = np.einsum("kcj,kj->kc", np.cross(side, side[:, np.r_[1:c, 0]]), normal)
        concave = (turn < -DEGENERATE_REL * size[:, None] ** 2 * area2[:, None]).any(axis=1)
        if concave.any():
            k = int(np.argmax(concave))
            raise ValueError(f"{name}: solid {index[rows[k]]} is a concave polygon")
        off = np.abs(np.einsum("kcj,kj->kc", edge, normal / area2[:, None])).max(axis=1)
        warped = off > _PLANAR_REL * size
        if warped.any():
            k = int(np.argmax(warped))
            raise ValueError(
                f"{name}: solid {index[rows[k]]} is a non-planar polygon (a vertex "
                f"{off[k]:.3g} off its plane)"
            )
        fan = np.stack(
            [np.stack([pts[:, 0], pts[:, i], pts[:, i + 1]], axis=1) for i in range(1, c - 1)],
            axis=1,
        )  # (k, c - 2, 3, 3)
        parts.append(
            (
                fan.reshape(-1, 3, 3),
                np.repeat(index[rows], c - 2),
                np.tile(np.arange(c - 2), len(rows)),
            )
        )
    tri, owner, part = (np.concatenate(col) for col in zip(*parts))
    order = np.lexsort((part, owner))
    return tri[order], owner[order].tolist(), part[order].tolist()


def box_triangles(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(12 k, 3, 3) outward-facing triangles of boxes lo, hi (k, 3): a turned static box
    is baked into world coordinates as its faces."""
    corner = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)])
    # Faces as corner indices, counter-clockwise seen from outside.
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [(q[0], q[1], q[2]) for q in quads] + [(q[0], q[2], q[3]) for q in quads]
    pts = lo[:, None, :] + corner[None] * (hi - lo)[:, None, :]  # (k, 8, 3)
    return pts[:, np.array(tris)].reshape(-1, 3, 3)
