"""The registered nodes that hold level pieces (polygons, boxes, capsules, inverse spheres),
and the solver tables made of them.

Static nodes are read once (when first seen in the scene, or teleported), baked into world
coordinates and indexed once per change of the static set. Kinematic nodes keep their
pieces in their own frame; each pass reads every active one's transform (one call per
node) and hands the solver its motion since the last pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from panda3d.core import (
    LMatrix3f,
    LQuaternionf,
    LVecBase3f,
    NodePath,
    TransformState,
    decomposeMatrix,
)

from ._arrays import isin_sorted
from ._frames import Frames
from ._level import Shapes
from ._pieces import BOX, CAPSULE, INV_SPHERE, KINDS, TRIANGLE, Pieces, welded

#: ``Hits.kind`` of kinematic tables: their shape's plus this (static ones keep theirs).
KINEMATIC_CODE = 4


@dataclass(eq=False)
class PieceNode:
    """One registered node's pieces."""

    uid: int
    owner: int
    nodepath: NodePath  # the component's copy of the CollisionNode's NodePath
    shapes: Shapes
    solids: list[Any]  # the node's solids, by index (Contact.getIntoSolid)
    into_mask: int
    static: bool
    sensor: bool
    handle: NodePath | None = None
    #: World (quat (4,), pos (3,)) at the end of the last pass; None: not yet read.
    prev: tuple[np.ndarray, np.ndarray] | None = None
    #: What the local rows were baked at (kinematic): the node's scale, or the whole
    #: linear part of its transform but its rotation where that shears or mirrors (see
    #: _placement).
    scale: tuple[float, ...] | None = None
    #: Static: the world rows, per kind; None until read.
    world: dict[int, tuple[np.ndarray, ...]] | None = None
    world_solid: dict[int, np.ndarray] = field(default_factory=dict)
    world_part: dict[int, np.ndarray] = field(default_factory=dict)
    bad: bool = False
    #: Has held a box under a sheared transform (warned, once).
    sheared_box: bool = False


class PieceNodes:
    """Every registered piece node, and the tables of this pass."""

    def __init__(self) -> None:
        self.nodes: list[PieceNode] = []
        self._by_owner: dict[int, PieceNode] = {}
        #: The static nodes, and those of them still to be read (registered or teleported
        #: since, or found out of the scene): kept as nodes come and go, not found per pass.
        self.statics: list[PieceNode] = []
        self.unread: dict[PieceNode, None] = {}
        #: The kinematic nodes (read each pass: a level's thousands of static ones are not
        #: looked at to find them).
        self.kinematic_nodes: list[PieceNode] = []
        self.static_paths: set[NodePath] = set()
        self._static_tables: list[Pieces] | None = None
        self._kinematic: tuple[tuple[int, ...], list[Pieces]] | None = None
        self._columns: dict[str, np.ndarray] | None = None
        self._records: list[tuple[int, NodePath, NodePath, bool, None]] | None = None
        #: Per table code: (m,) row in ``nodes``, solid index, part.
        self._where: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def add(self, node: PieceNode) -> None:
        self.nodes.append(node)
        self._by_owner[node.owner] = node
        if node.static:
            self.statics.append(node)
            self.unread[node] = None
            self.static_paths.add(node.nodepath)
        else:
            self.kinematic_nodes.append(node)
        self._changed(node.static)

    def drop(self, owners: set[int]) -> bool:
        gone = [self._by_owner.pop(owner) for owner in owners & self._by_owner.keys()]
        if not gone:
            return False
        kept = np.array([n.owner not in owners for n in self.nodes], bool)
        self.nodes = [n for n in self.nodes if n.owner not in owners]
        self.statics = [n for n in self.statics if n.owner not in owners]
        self.kinematic_nodes = [n for n in self.kinematic_nodes if n.owner not in owners]
        for node in gone:
            self.unread.pop(node, None)
            self.static_paths.discard(node.nodepath)
        # Tables name their nodes by row: every row after the dropped ones moved. A static
        # node's rows leave the static table, which is made again; where only kinematic
        # nodes went, its rows stay, renumbered (baking and welding a level again took a
        # streaming game's pass from 1.5 to 120 ms per platform removed).
        if any(node.static for node in gone):
            self._static_tables = None
        elif self._static_tables is not None:
            renumber = np.cumsum(kept) - 1
            for table in self._static_tables:
                table.node = renumber.take(table.node)
                _node, solid, part = self._where[table.kind]
                self._where[table.kind] = (table.node, solid, part)
        self._columns = self._records = self._kinematic = None
        return True

    def statics_changed(self) -> None:
        """Some static node left or came back to the scene: the static tables are made
        again (without it, or with it). (The kinematic ones follow their nodes in the
        scene each pass.)"""
        self._static_tables = None

    def reread(self, owners: set[int]) -> None:
        """Read these nodes again at the next pass, without sweeping (teleported)."""
        for owner in owners & self._by_owner.keys():
            node = self._by_owner[owner]
            node.prev = None
            if node.static:
                node.world = None
                self.unread[node] = None
                self._static_tables = None

    def _changed(self, static: bool) -> None:
        self._columns = self._records = None
        if static:
            self._static_tables = None
        else:
            self._kinematic = None

    # ------------------------------------------------------------------ per pass
    def tables(self, render: NodePath, out: set[int], warn: Any) -> list[Pieces]:
        """This pass's tables: the static ones, then the kinematic ones with their motion
        since the last pass. ``out``: owners of nodes out of the scene; ``warn(text)``."""
        top = render.getTop()
        tables: list[Pieces] = []
        if self.statics:
            if self._static_tables is None:
                for node in list(self.unread):
                    if node.nodepath.getTop() == top:
                        self._bake(node, render, warn)
                        del self.unread[node]
                self._static_tables = self._build(
                    [n for n in self.statics if n.world is not None and n.owner not in out],
                    True,
                )
            tables += self._static_tables
        moving = [n for n in self.kinematic_nodes if n.owner not in out]
        if not moving:
            return tables
        quat1, pos1, scales = self._read(moving, render, warn)
        ok = np.array([not n.bad for n in moving], bool)
        for node, scale, good in zip(moving, scales, ok.tolist()):
            if not good or (node.scale is not None and _same_shape(scale, node.scale)):
                continue
            if node.scale is not None:
                self._kinematic = None  # rebaked at its new scale
            if BOX in node.shapes.geometry and _sheared_shape(scale) and not node.sheared_box:
                warn(SHEARED_BOX.format(node=node.nodepath))
                node.sheared_box = True
            node.scale = scale
        live = [n for n, good in zip(moving, ok.tolist()) if good]
        key = tuple(n.uid for n in live)
        if self._kinematic is None or self._kinematic[0] != key:
            self._kinematic = (key, self._build(live, False))
        keep = np.flatnonzero(ok)
        quat1, pos1 = quat1[keep], pos1[keep]
        quat0, pos0 = quat1.copy(), pos1.copy()
        back = [f for f, node in enumerate(live) if node.prev is not None]
        if back:
            quat0[back] = [live[f].prev[0] for f in back]
            pos0[back] = [live[f].prev[1] for f in back]
        for node, q, p in zip(live, quat1, pos1):
            node.prev = (q, p)
        frames = Frames(quat0, pos0, quat1, pos1)
        for table in self._kinematic[1]:
            table.set_frames(frames)
        return tables + self._kinematic[1]

    def _read(
        self, nodes: list[PieceNode], render: NodePath, warn: Any
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[float, ...]]]:
        m = len(nodes)
        quat = np.full((m, 4), np.nan)
        pos = np.full((m, 3), np.nan)
        scales: list[tuple[float, ...]] = []
        for f, node in enumerate(nodes):
            ts = _net(node.nodepath, render)
            placed = None if ts is None else _placement(ts)
            scale: tuple[float, ...] = (1.0, 1.0, 1.0)
            good = False
            if placed is not None:
                q, scale = placed
                quat[f] = numbers = (q.getR(), q.getI(), q.getJ(), q.getK())
                pos[f] = place = tuple(ts.getPos())
                # A non-finite scale (setScale(inf), or a parent's) would scale every row.
                good = all(map(math.isfinite, (*numbers, *place, *scale)))
            if not good and not node.bad:
                warn(f"{node.nodepath} has a non-finite transform; skipped until it is finite")
            node.bad = not good
            scales.append(scale)
        return quat, pos, scales

    def _bake(self, node: PieceNode, render: NodePath, warn: Any) -> None:
        """A static node's rows in world coordinates (its whole transform, scale too)."""
        ts = _net(node.nodepath, render)
        mat = None
        if ts is not None:
            mat = np.array([list(ts.getMat().getRow(i)) for i in range(4)], np.float64)
        if mat is None or not np.isfinite(mat).all():
            if not node.bad:
                warn(f"{node.nodepath} has a non-finite transform; skipped until teleported")
            node.bad = True
            return
        node.bad = False
        lin, off = mat[:3, :3], mat[3, :3]  # Panda3D's row vectors: world = p @ lin + off

        def point(p: np.ndarray) -> np.ndarray:
            return p @ lin + off

        scale = _largest_stretch(lin)
        world: dict[int, tuple[np.ndarray, ...]] = {}
        solid = dict(node.shapes.solid)
        part = dict(node.shapes.part)
        geometry = node.shapes.geometry
        flip = np.linalg.det(lin) < 0  # a mirroring transform turns the winding over
        if TRIANGLE in geometry:
            a, b, c, two, across = geometry[TRIANGLE]
            world[TRIANGLE] = _wound(point(a), point(b), point(c), two, point(across), flip)
        if CAPSULE in geometry:
            a, b, r = geometry[CAPSULE]
            world[CAPSULE] = _capsules_under(a, b, r, lin, off)
        if INV_SPHERE in geometry:
            c, r = geometry[INV_SPHERE]
            world[INV_SPHERE] = (point(c), r * scale)
        node.world, node.world_solid, node.world_part = world, solid, part

    def _build(self, nodes: list[PieceNode], static: bool) -> list[Pieces]:
        """One table per kind over ``nodes`` (static: world rows; else local rows, scaled)."""
        row_of = {id(n): i for i, n in enumerate(self.nodes)}
        tables = []
        for kind in KINDS:
            parts, owner, rows, solid, part, frame = [], [], [], [], [], []
            for f, node in enumerate(nodes):
                source = node.world if static else node.shapes.geometry
                if source is None or kind not in source:
                    continue
                geometry = source[kind] if static else _scaled(kind, source[kind], node.scale)
                count = len(geometry[0])
                parts.append(geometry)
                owner.append(np.full(count, node.owner))
                rows.append(np.full(count, row_of[id(node)]))
                src_solid = node.world_solid if static else node.shapes.solid
                src_part = node.world_part if static else node.shapes.part
                solid.append(src_solid[kind])
                part.append(src_part[kind])
                frame.append(np.full(count, f))
            if not parts:
                continue
            geometry = tuple(np.concatenate(col) for col in zip(*parts))
            if static and kind == TRIANGLE and len(parts) > 1:
                # The seams between static nodes closed too, in world coordinates: those
                # of the triangles at a corner of an edge open in its own node (whose
                # seams were closed at registration, so that all of a corner's copies in
                # a node move alike; a box is closed). Each keeps its own node's
                # neighbours.
                a, b, c, two, across = geometry
                rim = _at_open_corners(np.stack([a, b, c], axis=1), across)
                corners = welded(np.stack([a[rim], b[rim], c[rim]], axis=1))
                a, b, c = a.copy(), b.copy(), c.copy()
                a[rim], b[rim], c[rim] = corners[:, 0], corners[:, 1], corners[:, 2]
                geometry = (a, b, c, two, across)
            node_rows = np.concatenate(rows)
            code = kind if static else kind + KINEMATIC_CODE
            mask = np.array([self.nodes[r].into_mask for r in node_rows], np.int64)
            sensor = np.array([self.nodes[r].sensor for r in node_rows], bool)
            table = Pieces(
                kind,
                geometry,
                mask,
                group=np.concatenate(owner),
                node=node_rows,
                frame=None if static else np.concatenate(frame),
                sensor=sensor,
                code=code,
            )
            self._where[code] = (node_rows, np.concatenate(solid), np.concatenate(part))
            tables.append(table)
        return tables

    # ------------------------------------------------------------------ contacts
    def columns(self) -> dict[str, np.ndarray]:
        """Per node: nodepath, handle, owner, into_mask, tangible, solids (cached; made
        again, not changed, when nodes come and go)."""
        if self._columns is None:
            nodes = self.nodes
            m = len(nodes)
            self._columns = {
                "nodepath": np.fromiter((n.nodepath for n in nodes), object, m),
                "handle": np.fromiter((n.handle for n in nodes), object, m),
                "owner": np.fromiter((n.owner for n in nodes), np.int64, m),
                "into_mask": np.fromiter((n.into_mask for n in nodes), np.int64, m),
                "tangible": np.fromiter((not n.sensor for n in nodes), bool, m),
                "solids": np.empty(m, object),
            }
            for i, node in enumerate(nodes):
                self._columns["solids"][i] = node.solids
        return self._columns

    def records(self) -> list[tuple[int, NodePath, NodePath, bool, None]]:
        """Per node, its body record for contacts: (owner, nodepath, handle, tangible,
        None), as :meth:`~._spheres.SphereTable.records` (cached with the columns)."""
        if self._records is None:
            cols = self.columns()
            self._records = list(zip(
                cols["owner"].tolist(), cols["nodepath"].tolist(), cols["handle"].tolist(),
                cols["tangible"].tolist(), [None] * len(cols["owner"]),
            ))  # fmt: skip
        return self._records

    def table_rows(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per table code, (m,) node row, solid index and part of each row of that table: a
        copy (tables made again replace their entries)."""
        return dict(self._where)

    def locate(self, code: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(node row, solid index, part) of rows of the table with ``code``."""
        node, solid, part = self._where[code]
        return node[rows], solid[rows], part[rows]

    def node_rows(self, code: int, rows: np.ndarray) -> np.ndarray:
        """The node row (in ``nodes``) of rows of the table with ``code``."""
        return self._where[code][0][rows]


def _at_open_corners(corners: np.ndarray, across: np.ndarray) -> np.ndarray:
    """Rows of triangles (t, 3, 3) with a corner (exactly) at an end of an edge that has no
    neighbour (``across`` NaN, see :func:`~._pieces.shared_edges`)."""
    open_ = np.isnan(across[:, :, 0])  # (t, 3) edge e runs from corner e to e + 1
    ends = np.ascontiguousarray(np.concatenate([corners[open_], corners[:, [1, 2, 0]][open_]]))
    every = np.ascontiguousarray(corners.reshape(-1, 3))
    # Points equal bit for bit: first those whose bits hash as an end's do (a binary search
    # among the ends' hashes), then of those, by their bytes. (The bytes alone, np.isin of
    # whole rows, sorted every corner of a level: 36 ms of a streamed world's 90 ms
    # rebuild, per chunk loaded or unloaded.)
    maybe = np.flatnonzero(isin_sorted(_bits_hash(every), np.unique(_bits_hash(ends))))
    key = np.dtype((np.void, 3 * corners.itemsize))
    near = np.zeros(len(every), bool)
    near[maybe] = np.isin(every[maybe].view(key).ravel(), ends.view(key).ravel())
    return np.flatnonzero(near.reshape(-1, 3).any(axis=1))


def _bits_hash(points: np.ndarray) -> np.ndarray:
    """(n,) int64 hash of the bits of points (n, 3) float64 (C-contiguous): equal points,
    equal hashes (the sums wrap)."""
    bits = points.view(np.int64)
    with np.errstate(over="ignore"):
        return (bits[:, 0] * np.int64(-0x61C8864680B583EB) + bits[:, 1]) * np.int64(
            0x632BE59BD9B4E019
        ) + bits[:, 2]


def _wound(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, two: np.ndarray, across: np.ndarray, flip: bool
) -> tuple[np.ndarray, ...]:
    """Triangle rows (``across`` (t, 3, 3) the far corners of their neighbours, see
    :func:`~._pieces.shared_edges`), wound back the other way where a mirroring transform
    turned them over: a, c, b, whose edges a-c, c-b, b-a are the old c-a, b-c, a-b."""
    if not flip:
        return (a, b, c, two, across)
    return (a, c, b, two, across[:, ::-1])


def _placement(ts: TransformState) -> tuple[Any, tuple[float, ...]] | None:
    """A kinematic node's rotation (a quaternion) and what its rows are baked at, so that
    its frame is that rotation and its position alone: its scale (sx, sy, sz); or, where
    its net transform shears (a node turned under a parent stretched along another axis)
    or mirrors, the 9 entries of D = L R^T, L the linear part of its matrix and R the
    rotation's (Panda3D composes L = scale shear rotation, with row vectors: a local
    point p is p D in the frame). None where the transform is not finite.

    A mirror is decomposed from the matrix, whatever components the transform was made
    of: under a parent scaled (-1, 1, 1), an unturned node's transform keeps that scale
    and no turn, and once it turns a little Panda3D decomposes its matrix into a half turn
    about y with scale (1, 1, -1). The same placement by two rotations half a turn apart,
    which a sweep between them would swing the piece through."""
    q, s = ts.getQuat(), ts.getScale()
    if not min(s[0], s[1], s[2]) < 0.0:  # (NaN compares false: found out by the caller)
        if not ts.hasNonzeroShear():
            return q, (s[0], s[1], s[2])
        return q, _less_rotation(ts.getMat(), q)
    mat = ts.getMat()
    if mat.isNan() or not all(map(math.isfinite, s)):
        return None
    # As Panda3D decomposes a transform made of a matrix (TransformState's components).
    scale, shear, hpr = LVecBase3f(), LVecBase3f(), LVecBase3f()
    decomposeMatrix(mat.getUpper3(), scale, shear, hpr)
    q = LQuaternionf()
    q.setHpr(hpr)
    return q, _less_rotation(mat, q)


def _less_rotation(mat: Any, quat: Any) -> tuple[float, ...]:
    """The 9 entries of D = L R^T (see :func:`_placement`)."""
    rot = LMatrix3f()
    quat.extractToMatrix(rot)
    linear, turn = np.array(mat.getUpper3(), np.float64), np.array(rot, np.float64)
    return tuple((linear @ turn.T).ravel().tolist())


def _sheared_shape(shape: tuple[float, ...]) -> bool:
    """Whether rows baked at ``shape`` (see :func:`_placement`) are under a shear."""
    return len(shape) == 9 and _shears(np.array(shape).reshape(3, 3))


def _same_shape(now: tuple[float, ...], baked: tuple[float, ...]) -> bool:
    """Whether rows baked at ``baked`` (see :func:`_placement`) stay as they are for
    ``now``: within the float32 rounding of a matrix decomposed again (a sheared or
    mirrored piece that a parent turns rigidly keeps its shape, but its D = L R^T drifts
    by up to 9e-7 of its size from one turn to the next, measured)."""
    if len(now) != len(baked):
        return False
    size = max(map(abs, baked))
    return max(abs(x - y) for x, y in zip(now, baked)) <= _SHAPE_ROUNDING * size


#: The relative change of what a kinematic node's rows are baked at taken for rounding.
_SHAPE_ROUNDING = 2e-6


def _scaled(
    kind: int, geometry: tuple[np.ndarray, ...], scale: tuple[float, ...] | None
) -> tuple[np.ndarray, ...]:
    """Node-local rows under what they are baked at (see :func:`_placement`): the node's
    scale, or a shear or mirror (its frame is then rigid)."""
    if scale is None or scale == (1.0, 1.0, 1.0):
        return geometry
    if len(scale) == 9:
        return _sheared(kind, geometry, np.array(scale, np.float64).reshape(3, 3))
    s = np.array(scale, np.float64)
    big = float(np.abs(s).max())
    if kind == TRIANGLE:
        a, b, c, two, across = geometry
        return _wound(a * s, b * s, c * s, two, across * s, np.prod(np.sign(s)) < 0)
    if kind == BOX:
        lo, hi = geometry[0] * s, geometry[1] * s  # a mirrored axis swaps its bounds
        return (np.minimum(lo, hi), np.maximum(lo, hi))
    if kind == CAPSULE:
        return _capsules_under(*geometry, np.diag(s))
    if kind == INV_SPHERE:
        return (geometry[0] * s, geometry[1] * big)
    return geometry


def _sheared(kind: int, geometry: tuple[np.ndarray, ...], d: np.ndarray) -> tuple[np.ndarray, ...]:
    """Node-local rows under the linear map p -> p d (a scale with a shear or a mirror), as a static
    node's are under its whole matrix (:meth:`PieceNodes._bake`); a box, which a shear
    makes no box, as the box of its frame that holds its image (see
    :data:`SHEARED_BOX`)."""
    if kind == TRIANGLE:
        a, b, c, two, across = geometry
        return _wound(a @ d, b @ d, c @ d, two, across @ d, bool(np.linalg.det(d) < 0))
    if kind == BOX:
        lo, hi = geometry
        corners = [np.stack([x, y, z], axis=1) @ d for x in (lo[:, 0], hi[:, 0])
                   for y in (lo[:, 1], hi[:, 1]) for z in (lo[:, 2], hi[:, 2])]  # fmt: skip
        return (np.minimum.reduce(corners), np.maximum.reduce(corners))
    if kind == CAPSULE:
        return _capsules_under(*geometry, d)
    if kind == INV_SPHERE:
        return (geometry[0] @ d, geometry[1] * _largest_stretch(d))
    return geometry


#: The warning for a sensor box under a sheared transform (once a node).
SHEARED_BOX = (
    "{node} holds a box under a sheared transform (turned under a parent stretched along "
    "another axis): a box no longer; it is tested as the box of its frame that holds it"
)


def _capsules_under(
    a: np.ndarray, b: np.ndarray, r: np.ndarray, linear: np.ndarray, offset: Any = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Capsules a, b (m, 3), r (m,) under the map p -> p linear + offset (row vectors):
    the image is a capsule with ellipsoid caps, held by the capsules returned. Under a
    scale of the node's axes (turned or not), along one of them (a pillar scaled taller),
    the capsule that holds it tightly: the radius the scale across the axis gives, the
    segment lengthened to reach the caps' tips; along none, the radius of the largest
    stretch. Under a shear, the ball of radius r becomes an ellipsoid leaning on the
    image's axis w: the radius is how far it reaches across w (r times the largest
    singular value of the map with w projected out), and the segment is lengthened at
    each end by how far it reaches along w."""
    wa, wb = a @ linear + offset, b @ linear + offset
    along = wb - wa
    length = np.sqrt((along**2).sum(axis=1))
    unit = along / np.where(length > 0, length, 1.0)[:, None]
    if _shears(linear):
        square = np.eye(3)[None] - unit[:, :, None] * unit[:, None, :]  # projects w out
        across = np.linalg.norm(linear[None] @ square, ord=2, axis=(1, 2))
        lengthwise = np.sqrt(((unit @ linear.T) ** 2).sum(axis=1))  # |linear w|
        radius = r * np.where(length > 0, across, _largest_stretch(linear))
        reach = r * np.where(length > 0, lengthwise, 0.0)
        return wa - reach[:, None] * unit, wb + reach[:, None] * unit, radius
    stretch = np.sqrt((linear**2).sum(axis=1))  # each node axis's
    d = np.abs(b - a)
    axis = d.argmax(axis=1)
    size = np.sqrt((d**2).sum(axis=1))
    aligned = (size > 0) & (d.max(axis=1) >= (1.0 - 1e-9) * size)
    across = np.where(np.arange(3)[None, :] == axis[:, None], 0.0, stretch[None, :]).max(axis=1)
    radius = r * np.where(aligned, across, stretch.max())
    reach = np.where(aligned, np.maximum(r * stretch[axis] - radius, 0.0), 0.0)
    return wa - reach[:, None] * unit, wb + reach[:, None] * unit, radius


def _shears(linear: np.ndarray) -> bool:
    """Whether the (3, 3) linear map (row vectors) shears: its rows are not square to
    each other (a scale of the node's axes, turned or not, keeps them square), by more
    than the float32 rounding of a turned node's matrix (cosines of some 1e-7)."""
    gram = linear @ linear.T
    size = np.sqrt(np.diag(gram))
    cosines = np.abs(gram - np.diag(np.diag(gram))) / np.maximum(np.outer(size, size), 1e-300)
    return bool(cosines.max() > 1e-6)


def _largest_stretch(linear: np.ndarray) -> float:
    """How much the (3, 3) linear map stretches a length at most: its largest singular
    value, which without a shear is its largest row's length."""
    if _shears(linear):
        return float(np.linalg.norm(linear, 2))
    return float(np.sqrt((linear**2).sum(axis=1)).max())


def _net(nodepath: NodePath, render: NodePath) -> TransformState | None:
    try:
        ts = nodepath.getTransform(render)
    except AssertionError:
        return None
    return None if ts.isInvalid() else ts


__all__ = ["PieceNode", "PieceNodes", "KINEMATIC_CODE"]
