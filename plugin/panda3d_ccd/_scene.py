"""Scene queries as the component answers them: the world the last pass left, as
:class:`~._queries.World` tables, and the casts' hits as Contacts or arrays.

Each pass hands over references to what it ended with (no copies, no work); the tables
are made on the first query after it.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
from panda3d.core import (
    CollisionLine,
    CollisionRay,
    CollisionSegment,
    LMatrix4f,
    NodePath,
    PTA_LMatrix4f,
    PTA_LVecBase3f,
)

from . import _args, _check
from ._arrays import row_all
from ._queries import Found, PieceRows, PlaneRows, SphereRows, World, firsts
from ._rays import LINE, RAY, SEGMENT, cast_rays, firsts_per_node
from .contact import Contact

__all__ = [
    "QueryResult",
    "Snapshot",
    "PieceView",
    "SceneQueries",
    "RayNode",
    "RayNodes",
    "ray_touches",
]

ALL_BITS = 0xFFFFFFFF
#: Names of the features of a piece (Contact.feature).
FEATURES = ("face", "edge", "vertex")


class QueryResult(NamedTuple):
    """The answers of a batch of k casts, one row each."""

    #: (k,) float64: fraction of the way from ``from_pos`` to ``to_pos`` of the first hit;
    #: ``inf`` where nothing was hit.
    t: np.ndarray
    #: (k, 3) float64: world point of the hit on the collider's surface (nan where none).
    point: np.ndarray
    #: (k, 3) float64: world unit normal of that surface, toward the cast (nan where none).
    normal: np.ndarray
    #: (k,) int64: index into :attr:`nodes` of the collider hit (-1 where none).
    collider: np.ndarray
    #: The colliders' NodePaths (those ``collider`` names), as the game registered them.
    nodes: list[NodePath]


class Snapshot(NamedTuple):
    """References to what a pass left (see :meth:`SceneQueries.snapshot`)."""

    spheres: Any  # SphereTable: the dynamic spheres
    statics: Any  # SphereTable: the static spheres
    left_out: set[int]  # owners of nodes out of the scene (not queried)
    planes: list[Any]  # the pass's live planes
    plane_normal: np.ndarray  # (m, 3)
    plane_offset: np.ndarray  # (m,) at the end of the pass
    tables: list[Any]  # the pass's piece tables
    pieces: Any  # PieceView: the piece nodes as the pass left them
    sensor_code: int  # the solver's SENSOR response
    static_rows: np.ndarray  # rows of ``statics`` in the scene and finite
    static_index: Any  # StaticIndex of those rows' boxes, or None (the component's own)


class _Parts:
    """A column of a World's nodes kept as the parts it came in (static spheres, dynamic
    ones, planes, piece nodes), gathered only for the nodes asked: joining 30,000 static
    spheres' NodePaths each pass, and letting them go at the next, cost half a
    millisecond a pass with a ray collider among them."""

    def __init__(self, parts: list[np.ndarray], starts: np.ndarray) -> None:
        self._parts = parts
        self._starts = starts
        self._first = starts.tolist()

    def __getitem__(self, node: Any) -> Any:
        if not isinstance(node, np.ndarray):
            node = int(node)
            j = bisect_right(self._first, node) - 1
            return self._parts[j][node - self._first[j]]
        node = np.asarray(node, np.int64)
        which = np.searchsorted(self._starts, node, "right") - 1
        first = self._parts[0]
        out = np.empty((len(node), *first.shape[1:]), first.dtype)
        for j in np.unique(which).tolist():
            rows = which == j
            out[rows] = self._parts[j][node[rows] - self._starts[j]]
        return out


class PieceView(NamedTuple):
    """The piece nodes as a pass left them: a node registered or removed after it
    (``remove()`` between passes, or in a handler) changes the component's PieceNodes,
    never these."""

    columns: dict[str, np.ndarray]  # PieceNodes.columns(), one row per node
    where: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]  # per table code: node, solid, part

    @classmethod
    def of(cls, pieces: Any) -> PieceView:
        return cls(pieces.columns(), pieces.table_rows())


class _Columns(NamedTuple):
    """Per node of a World: what Contacts need."""

    nodepath: _Parts  # object
    handle: _Parts  # object
    owner: np.ndarray  # int64
    solid: _Parts  # object: per piece node its solids; per other node its solid or None
    is_piece: np.ndarray  # bool
    center: _Parts  # (3,) float64: a sphere's centre, nan otherwise


class SceneQueries:
    """The queries of one component: ``alive(owner) -> bool`` says whether a node is still
    registered, ``live() -> (k,) int64`` every such node; ``world`` is the root NodePath
    of the coordinates."""

    def __init__(self, world: NodePath, clock: Any, alive: Any, live: Any) -> None:
        self._root = world
        self._clock = clock
        self._alive = alive
        self._live = live
        self._snapshot: Snapshot | None = None
        self._built: tuple[World, _Columns] | None = None
        self._statics: tuple[tuple[int, int, int], _Part] | None = None

    def snapshot(self, snapshot: Snapshot) -> None:
        """What the pass just ended with; the World is made from it on the next query."""
        self._snapshot = snapshot
        self._built = None

    def forget(self) -> None:
        self._snapshot = None
        self._built = None
        self._statics = None

    # ------------------------------------------------------------------ the world
    def _world(self) -> tuple[World, _Columns] | None:
        if self._built is None and self._snapshot is not None:
            s = self._snapshot
            # The static spheres' part is made again only when they changed (the
            # component makes a new index, or new rows, then): a pass with a ray collider
            # among 30,000 statics would otherwise remake it every frame.
            key = (id(s.static_index), id(s.static_rows), id(s.statics.prev_center))
            if self._statics is None or self._statics[0] != key:
                self._statics = (key, _static_part(s))
            self._built = _build(s, self._statics[1])
        return self._built

    # ------------------------------------------------------------------ public forms
    def closest(self, radius: Any, from_pos: Any, to_pos: Any, mask: Any, sensors: Any) -> Any:
        cast = self._cast_one(radius, from_pos, to_pos, mask, sensors)
        if cast is None:
            return None
        found, columns, p0, p1 = cast
        # By time, the first whose node is still registered (a node removed since the
        # pass is never returned); ties to the lower node, whatever the tables' order.
        rows = [0] if len(found.t) == 1 else np.lexsort((found.node, found.t)).tolist()
        for row in rows:
            if self._hittable(columns, int(found.node[row])):
                return self._contact(found, columns, row, p0, p1)
        return None

    def all(self, from_pos: Any, to_pos: Any, mask: Any, sensors: Any) -> list[Contact]:
        cast = self._cast_one(0.0, from_pos, to_pos, mask, sensors)
        if cast is None:
            return []
        found, columns, p0, p1 = cast
        return [self._contact(found, columns, row, p0, p1) for row in firsts(found).tolist()
                if self._hittable(columns, int(found.node[row]))]  # fmt: skip

    def _hittable(self, columns: _Columns, node: int) -> bool:
        """Node ``node`` is still registered and in the scene (the game may have removed or
        detached it since the pass)."""
        return self._alive(int(columns.owner[node])) and (
            columns.nodepath[node].getTop() == self._root.getTop()
        )

    def batch(self, radius: Any, from_pos: Any, to_pos: Any, mask: Any, sensors: Any) -> Any:
        p0 = _check.coordinates("from_pos", from_pos, single=False)
        p1 = _check.coordinates("to_pos", to_pos, single=False)
        if p1.shape != p0.shape:
            raise ValueError(f"to_pos must have the same shape as from_pos {p0.shape}, "
                             f"got {p1.shape}")  # fmt: skip
        k = len(p0)
        r = _radius(radius, k)
        bits = _args.mask("mask", mask)
        flag = _args.flag("sensors", sensors)
        t = np.full(k, np.inf)
        point = np.full((k, 3), np.nan)
        normal = np.full((k, 3), np.nan)
        collider = np.full(k, -1, np.int64)
        built = self._world()
        if built is None or k == 0:
            return QueryResult(t, point, normal, collider, [])
        world, columns = built
        dead = ~np.isin(columns.owner, self._live())
        masks = np.full(k, bits, np.int64)
        found = world.first(p0, p1, r, masks, flag, dead)
        # A node the game took out of the scene since the pass (removeNode(), detachNode())
        # is not hit: looked at only among those hit, and the casts made again without.
        top = self._root.getTop()
        while True:
            nodes, which = np.unique(found.node, return_inverse=True)
            gone = [n for n in nodes.tolist() if columns.nodepath[n].getTop() != top]
            if not gone:
                break
            dead[gone] = True
            found = world.first(p0, p1, r, masks, flag, dead)
        q = found.query
        t[q] = found.t
        point[q] = found.point
        normal[q] = found.normal
        collider[q] = which
        return QueryResult(t, point, normal, collider, columns.handle[nodes].tolist())

    # ------------------------------------------------------------------ internals
    def _cast_one(
        self, radius: Any, from_pos: Any, to_pos: Any, mask: Any, sensors: Any
    ) -> tuple[Found, _Columns, tuple[float, ...], tuple[float, ...]] | None:
        p0 = _args.vector("from_pos", from_pos)
        p1 = _args.vector("to_pos", to_pos)
        r = _args.length("radius", radius)
        bits = _args.mask("mask", mask)
        flag = _args.flag("sensors", sensors)
        built = self._world()
        if built is None:
            return None
        world, columns = built
        ends = np.array([p0, p1])
        found = world.cast(ends[:1], ends[1:], np.array([r]), np.array([bits], np.int64), flag)
        return found, columns, p0, p1

    def _contact(
        self,
        found: Found,
        columns: _Columns,
        row: int,
        p0: tuple[float, ...],
        p1: tuple[float, ...],
    ) -> Contact:
        node = int(found.node[row])
        t = float(found.t[row])
        center = columns.center[node]
        at = [a + t * (b - a) for a, b in zip(p0, p1)]
        # Rounded to float32 as LPoint3 would (one conversion for the four vectors).
        f32 = array("f", [*found.point[row].tolist(), *found.normal[row].tolist(), *at,
                          *center.tolist()]).tolist()  # fmt: skip
        point, normal, at, centre = f32[0:3], f32[3:6], f32[6:9], f32[9:12]
        contact = Contact._unchecked(
            t,
            self._clock.getFrameTime(),
            NodePath(),
            columns.nodepath[node],
            tuple(point),
            tuple(normal),
            0.0,
            tuple(at),
            None if math.isnan(centre[0]) else tuple(centre),
            True,
            not bool(found.sensor[row]),
            self._root,
            NodePath(),
            columns.handle[node],
        )
        solid = int(found.solid[row])
        if columns.is_piece[node] and solid >= 0:
            contact._into_solid = columns.solid[node][solid]
            feature = int(found.feature[row])
            contact._feature = FEATURES[feature] if feature >= 0 else None
            contact._part = int(found.part[row])
        elif columns.solid[node] is not None:
            contact._into_solid = columns.solid[node]
        return contact


class _Part(NamedTuple):
    """Some nodes of a World: their rows, and their columns for Contacts."""

    rows: SphereRows
    nodepath: np.ndarray
    handle: np.ndarray
    owner: np.ndarray
    solid: np.ndarray
    center: np.ndarray


def _static_part(s: Snapshot) -> _Part:
    """The static spheres, the World's first nodes (so their node numbers hold from pass
    to pass): the rows the component indexed, with its index."""
    t, rows = s.statics, s.static_rows
    if s.static_index is None:  # a few: their own index, if any, is made of finite rows
        rows = rows[np.isfinite(t.prev_center[rows]).all(axis=1)
                    & np.isfinite(t.world_radius[rows])]  # fmt: skip
    return _Part(
        SphereRows(t.prev_center[rows], t.world_radius[rows], t.into_mask[rows],
                   t.response[rows] == s.sensor_code, np.arange(len(rows)),
                   s.static_index),  # fmt: skip
        t.nodepath[rows], t.handle[rows], t.owner[rows], t.solid[rows], t.prev_center[rows],
    )  # fmt: skip


def _build(s: Snapshot, statics: _Part) -> tuple[World, _Columns]:
    """The World of a pass's snapshot, with its node columns: the static spheres, the
    dynamic spheres read this pass, the planes, then the piece nodes."""
    out = np.fromiter(s.left_out, np.int64, len(s.left_out))
    start = len(statics.owner)
    table = s.spheres
    rows = np.flatnonzero(
        np.isfinite(table.prev_center).all(axis=1)
        & np.isfinite(table.world_radius)
        & ~table.bad
        & ~np.isin(table.owner, out)
    )
    m = len(rows)
    dynamic = _Part(
        SphereRows(table.prev_center[rows], table.world_radius[rows], table.into_mask[rows],
                   table.response[rows] == s.sensor_code, start + np.arange(m)),
        table.nodepath[rows], table.handle[rows], table.owner[rows], table.solid[rows],
        table.prev_center[rows],
    )  # fmt: skip
    start += m
    m = len(s.planes)
    planes = _Part(
        PlaneRows(s.plane_normal, s.plane_offset,  # type: ignore[arg-type]
                  np.fromiter((p.into_mask for p in s.planes), np.int64, m),
                  np.zeros(m, bool), start + np.arange(m)),
        np.fromiter((p.nodepath for p in s.planes), object, m),
        np.fromiter((p.handle for p in s.planes), object, m),
        np.fromiter((p.owner for p in s.planes), np.int64, m),
        np.fromiter((p.solid for p in s.planes), object, m),
        np.full((m, 3), np.nan),
    )  # fmt: skip
    start += m
    cols = s.pieces.columns
    pieces = []
    for table in s.tables:
        node, solid_ix, part = s.pieces.where[table.kind]
        pieces.append(PieceRows(table, start + node, solid_ix, part))
    k = len(cols["owner"])
    parts = [statics, dynamic, planes]
    starts = np.cumsum([0, *(len(p.owner) for p in parts)])
    is_piece = np.zeros(start + k, bool)
    is_piece[start:] = True

    def column(name: str, pieces: np.ndarray) -> _Parts:
        return _Parts([*(getattr(p, name) for p in parts), pieces], starts)

    solids = cols["solids"]
    columns = _Columns(
        column("nodepath", cols["nodepath"]),
        column("handle", cols["handle"]),
        np.concatenate([*(p.owner for p in parts), cols["owner"]]),
        column("solid", solids),
        is_piece,
        column("center", np.full((k, 3), np.nan)),
    )
    return World([statics.rows, dynamic.rows], planes.rows, pieces), columns  # type: ignore[arg-type]


# ------------------------------------------------------------------ argument checks
def _radius(value: Any, k: int) -> np.ndarray:
    r = _check.lengths("radius", value)
    if r.ndim == 1 and len(r) != k:
        raise ValueError(f"radius must be a scalar or have shape ({k},), got {r.shape}")
    return np.broadcast_to(r, (k,)).astype(np.float64)


# ------------------------------------------------------------------ ray colliders
@dataclass(eq=False)
class RayNode:
    """One registered CollisionNode of rays, segments and lines (from-only colliders)."""

    uid: int
    owner: int
    nodepath: NodePath  # the component's own copy
    solids: list[Any]  # CollisionRay, CollisionSegment, CollisionLine
    from_mask: int
    handle: NodePath | None = None  # the game's NodePath, as registered
    bad: bool = False  # a non-finite transform at the last pass (warned once)
    bad_solid: bool = False  # a non-finite solid at the last pass (warned once)
    changed: bool = False  # solids not those registered at the last pass (warned once)

    def __post_init__(self) -> None:
        #: Per solid: its type and kind, and whether it is tangible (``%fs``), as registered.
        self.types = tuple(map(type, self.solids))
        self.kinds = [RAY_TYPES[type(solid)] for solid in self.solids]
        self.tangible = [bool(solid.isTangible()) for solid in self.solids]


def ray_ends(solid: Any) -> tuple[Any, Any]:
    """A ray solid's two vectors in its node's space: a segment's ends, a ray's or a
    line's origin and direction."""
    if type(solid) is CollisionSegment:
        return solid.getPointA(), solid.getPointB()
    return solid.getOrigin(), solid.getDirection()


#: Panda3D's ray solids and their kinds. Exact types: CollisionLine derives from
#: CollisionRay (a line is a ray both ways).
RAY_TYPES = {CollisionRay: RAY, CollisionSegment: SEGMENT, CollisionLine: LINE}

_NAN_MAT = LMatrix4f(*[math.nan] * 16)


class RayNodes:
    """The registered ray nodes, each read once a pass and cast in the queries' world."""

    def __init__(self) -> None:
        self.nodes: list[RayNode] = []

    def __len__(self) -> int:
        return len(self.nodes)

    def add(self, node: RayNode) -> None:
        self.nodes.append(node)

    def drop(self, owners: set[int]) -> None:
        self.nodes = [n for n in self.nodes if n.owner not in owners]

    def read(self, render: NodePath, out: set[int], warn: Any) -> _Rays:
        """This pass's rays in world space: one transform read per node in the scene (not
        in ``out``, owners of nodes out of it), and its solids as they are now (a picking
        ray is aimed anew each frame, through the solid the game keeps or through
        ``modifySolid``). A node with a non-finite transform, or whose solids are no longer
        the rays it was registered with, is skipped, with one ``warn(text)`` until it is
        right again."""
        nodes = [n for n in self.nodes if n.owner not in out] if out else self.nodes
        mats = PTA_LMatrix4f()
        solids = []
        for node in nodes:
            try:
                ts = node.nodepath.getTransform(render)
                mats.pushBack(_NAN_MAT if ts.isInvalid() else ts.getMat())
            except AssertionError:  # a NaN in the chain trips an assertion in Panda3D
                mats.pushBack(_NAN_MAT)
            # The node's own: modifySolid() copies a solid that the plugin holds too.
            solids.append(node.nodepath.node().getSolids())
        mat = np.frombuffer(mats, np.float32).reshape(-1, 4, 4).astype(np.float64)
        good = np.isfinite(mat).reshape(-1, 16).all(axis=1)
        for f, (node, ok) in enumerate(zip(nodes, good.tolist())):
            if not ok and not node.bad:
                warn(f"{node.nodepath} has a non-finite transform; ray skipped until it is "
                     "finite again")  # fmt: skip
            node.bad = not ok
            same = tuple(map(type, solids[f])) == node.types
            if ok and not same and not node.changed:
                warn(f"{node.nodepath}'s solids are no longer the rays it was registered with; "
                     "skipped until they are (remove it and register it again)")  # fmt: skip
            node.changed = not same
            good[f] = ok and same
        live = [n for n, ok in zip(nodes, good.tolist()) if ok]
        mat = mat[good]
        kind = np.array([k for n in live for k in n.kinds], np.int8)
        node = np.repeat(np.arange(len(live)), [len(n.solids) for n in live])
        a, b = PTA_LVecBase3f(), PTA_LVecBase3f()
        now = [s for f, ok in enumerate(good.tolist()) if ok for s in solids[f]]
        for solid in now:
            start, end = ray_ends(solid)
            a.pushBack(start)
            b.pushBack(end)
        k = len(kind)
        a_ = np.frombuffer(a, np.float32).reshape(k, 3).astype(np.float64)
        b_ = np.frombuffer(b, np.float32).reshape(k, 3).astype(np.float64)
        rot, move = mat[node, :3, :3], mat[node, 3, :3]
        # Panda3D's row vectors: a point is p @ rot + move, a direction d @ rot.
        world_a = np.einsum("ki,kij->kj", a_, rot) + move
        world_b = np.einsum("ki,kij->kj", b_, rot) + np.where((kind == SEGMENT)[:, None], move, 0.0)
        # A solid aimed anew with a NaN (a picking ray at a zero vector) hits nothing.
        bad = np.bincount(node, ~(row_all(np.isfinite(world_a)) & row_all(np.isfinite(world_b))),
                          len(live)) > 0  # fmt: skip
        for n, nan in zip(live, bad.tolist()):
            if nan and not n.bad_solid:
                warn(f"{n.nodepath} has a ray that is not finite; it hits nothing until it is")
            n.bad_solid = nan
        mask = np.array([n.from_mask for n in live], np.int64)[node]
        tangible = np.array([t for n in live for t in n.tangible], bool)
        return _Rays(live, kind, world_a, world_b, mask, node, tangible, now)


class _Rays(NamedTuple):
    """A pass's k rays: the nodes read, (k,) kind, (k, 3) world a and b (see
    :func:`~._rays.cast_rays`), (k,) from mask, node (row of ``nodes``), tangible and solid."""

    nodes: list[RayNode]
    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    mask: np.ndarray
    node: np.ndarray
    tangible: np.ndarray
    solids: list[Any]  # (k,) each ray's CollisionRay, CollisionSegment or CollisionLine


def ray_touches(
    queries: SceneQueries, rays: RayNodes, out: set[int], warn: Any
) -> list[tuple[tuple[int, int], Contact, None]]:
    """The ray nodes' contacts in the world of ``queries``' last snapshot (taken by the
    pass that calls this), one per (ray node, node hit): its first hit along the ray,
    keyed (ray owner, into owner) as the pass's other contacts are. ``out``: owners of
    nodes out of the scene; ``warn(text)`` for a ray node's non-finite transform."""
    read = rays.read(queries._root, out, warn)
    built = queries._world()
    if built is None or not len(read.kind):
        return []
    world, columns = built
    hits = cast_rays(world, read.kind, read.a, read.b, read.mask)
    owner = np.array([n.owner for n in read.nodes], np.int64)[read.node]
    # Per node hit, not per World node: a node of several spheres is one World node each.
    rows = firsts_per_node(hits._replace(node=columns.owner[hits.node]), owner, read.a)
    if not len(rows):
        return []
    rows = rows[row_all(np.isfinite(hits.point[rows])) & row_all(np.isfinite(hits.normal[rows]))]
    ray, node = hits.ray[rows], hits.node[rows]

    def f32(v: np.ndarray) -> list[tuple[float, ...]]:
        # Rounded to float32, as LPoint3 would hold them (beyond its range: left out).
        with np.errstate(over="ignore"):
            return list(map(tuple, v.astype(np.float32).astype(np.float64).tolist()))

    point = f32(hits.point[rows])
    with np.errstate(over="ignore"):
        fits = row_all(np.isfinite(hits.point[rows].astype(np.float32)))
    center = columns.center[node]
    into_pos: list[Any] = f32(center)
    for i in np.flatnonzero(np.isnan(center[:, 0])).tolist():
        into_pos[i] = None
    of_ray = read.node[ray]
    from_np = [read.nodes[i].nodepath for i in of_ray.tolist()]
    from_handle = [read.nodes[i].handle for i in of_ray.tolist()]
    contacts = list(
        map(
            Contact._unchecked,
            hits.t[rows].tolist(),
            repeat(queries._clock.getFrameTime()),
            from_np,
            columns.nodepath[node].tolist(),
            point,
            f32(hits.normal[rows]),
            repeat(0.0),
            point,
            into_pos,
            read.tangible[ray].tolist(),
            (~hits.sensor[rows]).tolist(),
            repeat(queries._root),
            from_handle,
            columns.handle[node].tolist(),
            repeat(None),
            [read.solids[j] for j in ray.tolist()],
        )
    )
    for i in np.flatnonzero(columns.is_piece[node]).tolist():
        n, solid = int(node[i]), int(hits.solid[rows[i]])
        if solid >= 0:
            feature = int(hits.feature[rows[i]])
            contacts[i]._into_solid = columns.solid[n][solid]
            contacts[i]._feature = FEATURES[feature] if feature >= 0 else None
            contacts[i]._part = int(hits.part[rows[i]])
    for i in np.flatnonzero(~columns.is_piece[node]).tolist():
        contacts[i]._into_solid = columns.solid[int(node[i])]
    keys = zip(owner[ray].tolist(), columns.owner[node].tolist())
    return [(key, c, None) for key, c, ok in zip(keys, contacts, fits.tolist()) if ok]
