"""The ContinuousCollision component: the plugin as a game sees it.

Each pass (one task per frame, between intervals and rendering) reads every registered
node's world transform once, hands the arrays to the solver, writes back only the nodes it
moved, and then sends CollisionHandlerEvent-style events through the messenger.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
from direct.directnotify.DirectNotifyGlobal import directNotify
from panda3d.core import (
    BitMask32,
    ClockObject,
    CollisionNode,
    CollisionPlane,
    CollisionSphere,
    ConfigVariableBool,
    ConfigVariableInt,
    LPlane,
    LPoint3,
    LQuaternion,
    LVecBase3,
    LVector3,
    NodePath,
    PStatCollector,
    PTA_LMatrix4f,
    PTA_LVecBase3f,
    PTA_LVecBase4f,
    TransformState,
)

from . import _args, _solver
from ._arrays import isin_sorted, length, row_all, row_any, unique
from ._events import EventPatterns, PairTracker, send_contact, send_events
from ._frames import Frames
from ._index import StaticIndex
from ._level import PIECE_TYPES, read_solids
from ._obstacles import Planes
from ._one_round import Backoff
from ._piecenodes import PieceNode, PieceNodes
from ._pieces import BOX
from ._scene import (
    ALL_BITS,
    RAY_TYPES,
    PieceView,
    QueryResult,
    RayNode,
    RayNodes,
    SceneQueries,
    Snapshot,
    ray_ends,
    ray_touches,
)
from ._skin import off_polygons
from ._spheres import SphereRecord, SphereTable
from .contact import Contact, _handed

__all__ = ["ContinuousCollision"]

notify = directNotify.newCategory("panda3d-ccd")

task_sort_config = ConfigVariableInt(
    "ccd-task-sort", 25, "Sort of the continuous-collision task (after ivalLoop, before igLoop)."
)
respect_prev_config = ConfigVariableBool(
    "ccd-respect-prev-transform",
    False,
    "Sweep from Panda3D's previous transform (setFluidPos) instead of where the plugin "
    "left each collider at the end of its last pass.",
)

RESPONSES = {
    "rewind": _solver.REWIND,
    "slide": _solver.SLIDE,
    "sensor": _solver.SENSOR,
    "kinematic": _solver.KINEMATIC,
}
#: Names of the features of a piece a contact touched (Contact.feature).
FEATURES = ("face", "edge", "vertex")
#: A hit's feature named (``Hits.feature``; -1, the last, is None).
_FEATURE_NAMES = np.array([*FEATURES, None], object)
DEFAULT_MASK = CollisionNode.getDefaultCollideMask().getWord()

_collect = {
    name: PStatCollector(f"App:CCD:{name}")
    for name in ("Read", "Broad and narrow phase", "Write back", "Events")
}
_count_colliders = PStatCollector("CCD colliders")
_count_candidates = PStatCollector("CCD candidate pairs")
_count_contacts = PStatCollector("CCD contacts")


def _response(value: Any) -> int:
    if not isinstance(value, str) or value not in RESPONSES:
        raise ValueError(
            f"response must be one of 'rewind', 'slide', 'sensor', 'kinematic', got {value!r}"
        )
    return RESPONSES[value]


def _nodepath(value: Any) -> NodePath:
    if not isinstance(value, NodePath):
        raise ValueError(f"nodepath must be a NodePath, got {value!r}")
    if value.isEmpty():
        raise ValueError("nodepath is empty (NodePath() or a removed node)")
    return value


@dataclass(eq=False)
class _Plane:
    uid: int
    owner: int
    nodepath: NodePath
    plane: LPlane
    into_mask: int
    solid: Any = None
    handle: NodePath | None = None  # the game's own NodePath, as registered
    prev_world: tuple[float, float, float, float] | None = None
    bad: bool = False
    #: The transform last read, and the world plane it gave: a TransformState is
    #: immutable and Panda3D hands out one object per distinct transform (kept here, its
    #: address is not reused), so the same address gives the same plane.
    read: tuple[TransformState, tuple[float, float, float, float] | None] | None = None


def _with_skins(
    result: _solver.PassResult,
    bodies: np.ndarray,
    ends: np.ndarray,
    carried: tuple[np.ndarray, np.ndarray] | None,
) -> _solver.PassResult:
    """``result`` with the ends (k, 3) of rows ``bodies`` moved a skin off a polygon (see
    :func:`~._skin.off_polygons`).

    A carried body's node is written through its carrier's rows (see
    :meth:`ContinuousCollision._carried`): they are moved by its skin, but one with a skin
    of its own. Two skins in a group may disagree (a foot on a floor, a hand on a ceiling):
    then the carrier takes none."""
    end, moved = result.end.copy(), result.moved.copy()
    end[bodies], moved[bodies] = ends, True
    if carried is not None:
        group, lead = carried
        leads = np.flatnonzero(lead)
        mine = bodies[bodies < len(group)]  # (static spheres after the dynamic ones)
        groups, counts = np.unique(group[mine], return_counts=True)
        alone = set(groups[counts == 1].tolist())
        for b, at in zip(bodies.tolist(), ends):
            if b < len(group) and int(group[b]) in alone:
                carrier = leads[group[leads] == group[b]]
                carrier = carrier[~np.isin(carrier, bodies)]
                end[carrier] = result.end[carrier] + (at - result.end[b])
                moved[carrier] = True
    return result._replace(end=end, moved=moved)


class _Bodies(NamedTuple):
    """Per-body columns for building contacts: the dynamic spheres' rows, then the static
    ones near something, then the planes', then the piece nodes'."""

    from_mask: np.ndarray  # (N,) int64; 0 for planes and pieces (into-only)
    into_mask: np.ndarray  # (N,) int64
    #: Per body: (owner, nodepath (the component's own copy), handle (the game's),
    #: tangible (False for sensors), solid (the CollisionSphere or CollisionPlane, or None)),
    #: as Python objects: each contact takes two, and a contact is a Python object anyway.
    records: list[tuple[int, NodePath, NodePath, bool, Any]]
    sensors: bool  # whether any body is a sensor (else no hit has an exit)
    #: What they were made of: the sphere table and its version, the piece nodes' columns
    #: and the planes (see ContinuousCollision._bodies_of).
    key: tuple[Any, ...] = ()
    version: int = -1

    @classmethod
    def of(
        cls,
        spheres: SphereTable,
        statics: SphereTable,
        near: np.ndarray,
        planes: list[_Plane],
        pieces: dict[str, np.ndarray],
        piece_records: list[tuple[int, NodePath, NodePath, bool, Any]],
    ) -> _Bodies:
        """The dynamic spheres, then the static ones ``near`` (rows of ``statics``) that
        this pass handed to the solver, then the planes, then the piece nodes (whose
        ``records`` are given)."""
        m = len(planes)
        k = len(pieces["owner"])

        def spheres_then(column: str, of_planes: np.ndarray, of_pieces: np.ndarray) -> np.ndarray:
            parts = [getattr(spheres, column), of_planes]
            if len(near):
                parts.insert(1, getattr(statics, column)[near])
            if k:
                parts.append(of_pieces)
            return np.concatenate(parts)

        sensor = _solver.SENSOR
        records = spheres.records(sensor)
        sensors = bool((spheres.response == sensor).any()) or not pieces["tangible"].all()
        if len(near):
            of_statics = statics.records(sensor)
            records = records + [of_statics[i] for i in near.tolist()]
            sensors = sensors or bool((statics.response[near] == sensor).any())
        records = records + [(p.owner, p.nodepath, p.handle, True, p.solid) for p in planes]
        return cls(
            from_mask=spheres_then("from_mask", np.zeros(m, np.int64), np.zeros(k, np.int64)),
            into_mask=spheres_then(
                "into_mask",
                np.fromiter((p.into_mask for p in planes), np.int64, m),
                pieces["into_mask"],
            ),
            records=records + piece_records,
            sensors=sensors,
        )


class _Reading(NamedTuple):
    """Transforms of m spheres read from the scene, and what they give."""

    transform: np.ndarray  # (m,) object: TransformState relative to render, or None
    center: np.ndarray  # (m, 3) world centre; nan where unreadable
    world_radius: np.ndarray  # (m,); nan where unreadable
    ok: np.ndarray  # (m,) bool: read (transform is not None)
    scaled: bool = True  # False: all read, all unscaled (world_radius is the local radius)


class _Frame(NamedTuple):
    """What a pass read: (n, 3) start and end centres, (n,) world radii at the start and
    the end (a node's scale may change), (n,) object TransformStates (None for spheres not
    read), (n,) bool the spheres read and finite at both ends, or None for all of them (the
    usual pass), whether any radius changed within the frame, and which nodes were read by
    their own transform (``ContinuousCollision._local``)."""

    start: np.ndarray
    end: np.ndarray
    radius0: np.ndarray
    radius: np.ndarray
    transforms: np.ndarray
    valid: np.ndarray | None
    grew: bool
    local: bool | np.ndarray


class _PlaneFrame(NamedTuple):
    """The planes a pass read (those with a finite transform), as the solver takes them."""

    planes: list[_Plane]
    normal: np.ndarray  # (m, 3) world unit normals
    off0: np.ndarray  # (m,) offsets at the start of the frame (along the current normal)
    off1: np.ndarray  # (m,) offsets at the end
    mask: np.ndarray  # (m,) int64 into masks
    group: np.ndarray  # (m,) int64 owners
    key: bytes  # the float64 bits the arrays were made of
    #: The solver's table of them (None for none), made once for as long as they read the
    #: same: walls that never move cost no numpy call to set up.
    table: Planes | None = None

    def moving(self) -> Planes:
        """The planes that move this frame, as the solver's table of them."""
        move = self.off0 != self.off1
        return Planes(self.normal[move], self.off0[move], self.off1[move], self.mask[move])


@dataclass(eq=False)
class _StaticCache:
    """The static spheres' index, and what is to be read or checked about them."""

    #: Over the static rows ``rows``; None: to be built at the next pass.
    index: StaticIndex | None = None
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: uids to read at the next pass: registered, teleported, or back in the scene.
    reread: set[int] = field(default_factory=set)
    #: Static nodes found out of the scene: looked at every pass until they are back.
    inactive: set[NodePath] = field(default_factory=set)
    #: Where the look at a few static nodes each pass (removed ones are dropped) goes on.
    cursor: int = 0


#: Static nodes looked at in turn each pass, besides those near something.
_STATIC_CHECKS = 32
#: Up to this many static spheres, every pass hands them all to the solver (its broad phase
#: pairs up to 512 boxes at once) instead of querying their index: the demo's 2.9 ms a
#: frame with the query became 2.1 ms, as before statics had an index.
_FEW_STATICS = 256
#: The "index" of that many: none.
_FEW = StaticIndex(np.zeros((0, 3)), np.zeros((0, 3)))
#: No rows (shared: never written into).
_NO_ROWS = np.zeros(0, np.int64)
_NO_ROWS.flags.writeable = False

#: How near (relative to the coordinates, at least 1) a node's last written place on its
#: parent must be to where a pass stopped it at its start to be put back there exactly:
#: float32 rounding of the place, far below the slop.
_PLACED_REL = 1e-6
#: A body that moves less than this in a pass (relative to its coordinates, at least 1: a
#: tenth of a float32 step) stayed where it was.
_STAYED_REL = 1e-8


@dataclass
class _State:
    spheres: SphereTable = field(default_factory=SphereTable)
    #: Static spheres: read when registered or teleported, indexed once, and handed to
    #: the solver only where something may reach them.
    statics: SphereTable = field(default_factory=SphereTable)
    planes: list[_Plane] = field(default_factory=list)


class ContinuousCollision:
    """Continuous collision detection and response for Panda3D nodes.

    Parameters
    ----------
    base : ShowBase, optional
        Supplies ``taskMgr``, ``render`` and ``messenger`` when they are not given.
    taskmgr, render, messenger : optional
        Injected engine handles (for tests, or an app without ShowBase).
    clock : ClockObject, optional
        Frame clock for contact times and approach speeds (the global clock by default).
    task_sort : int, optional
        Sort of the per-frame task; PRC ``ccd-task-sort`` (25: after intervals at 20, before
        Panda3D's own collisionLoop at 30 and rendering at 50).
    respect_prev_transform : bool, optional
        Sweep from Panda3D's previous transform instead of where the plugin left each
        collider; PRC ``ccd-respect-prev-transform``.
    task_name : str
        Name of the task (several components need distinct names).
    """

    def __init__(
        self,
        base: Any = None,
        *,
        taskmgr: Any = None,
        render: NodePath | None = None,
        messenger: Any = None,
        clock: ClockObject | None = None,
        task_sort: int | None = None,
        respect_prev_transform: bool | None = None,
        task_name: str = "panda3d-ccd",
    ) -> None:
        if base is None and (taskmgr is None or render is None or messenger is None):
            import builtins

            base = getattr(builtins, "base", None)
            if base is None:
                raise ValueError(
                    "no ShowBase running: pass base, or taskmgr=, render= and messenger="
                )
        self._taskmgr = taskmgr if taskmgr is not None else base.taskMgr
        self._render: NodePath = render if render is not None else base.render
        if not isinstance(self._render, NodePath) or self._render.isEmpty():
            raise ValueError(f"render must be a NodePath that is not empty, got {render!r}")
        if not isinstance(task_name, str):
            raise ValueError(f"task_name must be a str, got {task_name!r}")
        self._messenger = messenger if messenger is not None else base.messenger
        self._clock = clock if clock is not None else ClockObject.getGlobalClock()
        sort = task_sort_config.getValue() if task_sort is None else task_sort
        if isinstance(sort, bool) or not isinstance(sort, int):
            raise ValueError(f"task_sort must be an int, got {sort!r}")
        self.respect_prev_transform = (
            respect_prev_config.getValue()
            if respect_prev_transform is None
            else _args.flag("respect_prev_transform", respect_prev_transform)
        )
        self._state = _State()
        self._by_node: dict[NodePath, list[Any]] = {}
        self._uid = 0
        self._patterns = EventPatterns()
        self._pairs = PairTracker()
        self._contacts: list[Contact] = []
        self._teleported: set[int] = set()
        self._new: set[int] = set()  # spheres registered since the last pass
        self._unsent_in: set[tuple[int, int]] = set()
        # Out events held while a pass has read its rows (None: sent at once).
        self._held: list[Any] | None = None
        self._stepping = False  # a pass is under way (its handlers are running)
        # Node ids outlive remove() for the rest of a frame's events (see _forget).
        self._owner_of: dict[NodePath, int] = {}
        # The game's NodePath of each body's target (given as target=, not the node
        # itself): removeNode() on it drops the body, as on the node.
        self._target_of: dict[NodePath, NodePath] = {}
        self._node_of: dict[int, NodePath] = {}
        self._forgotten: set[int] = set()
        # Nodes registered but not under render at the last pass: not read, no contacts.
        self._inactive: set[NodePath] = set()
        # Static nodes are not scanned each pass (they would cost per frame what 30,000
        # pillars cost): only those a pass hands to the solver, and a few more in turn.
        self._dynamic: dict[NodePath, None] = {}
        # The dynamic nodes that were not children of render at the last scan, and their
        # parents then.
        self._away: dict[NodePath, NodePath] = {}
        self._kept_in_scene: tuple[int, set[NodePath], np.ndarray, list[NodePath]] | None = None
        self._statics = _StaticCache()
        self._pieces = PieceNodes()
        self._rays = RayNodes()
        # Where the look at a few static piece nodes each pass goes on.
        self._piece_cursor = 0
        # The last pass's planes and bodies, used again while nothing changes.
        self._plane_frame: _PlaneFrame | None = None
        #: (spheres.version, the planes' owners, whether no sphere shares a node with one).
        self._owners: tuple[int, np.ndarray, bool] | None = None
        # Per spheres.version: the bodies' distinct movers (numbered), each row's among them
        # (-1: not a body), each body node's, each mover's first body's owner, and whether
        # some mover moves two registered nodes' bodies (see _carried).
        self._movers: tuple[Any, ...] | None = None
        # Its parent and its transform on it where the last pass left it, of each node
        # between a carrier and a body it carries (the body's own node, a turret pivot: see
        # _moved_on_carriers) and each node below another that the pass wrote (see _move).
        self._on_parent: dict[NodePath, tuple[NodePath, TransformState]] = {}
        self._bodies: _Bodies | None = None
        self._debug: Any = None
        # Whether this pass lets the solver try its one-round path first (see Backoff).
        self._one_round = Backoff()
        self._queries = SceneQueries(self._render, self._clock, self._alive, self._live)
        self._destroyed = False
        self.task_name = task_name
        self._task = self._taskmgr.add(self._task_step, task_name, sort=sort)
        # Statistics of the last pass.
        self.candidate_count = 0
        self.rounds = 0
        #: Passes in which resolution hit its round cap (warned about once).
        self.capped_passes = 0
        #: Bodies of the last pass squeezed between a kinematic piece carrying them and
        #: something that would not give way: the piece won (they end touching it, and may
        #: end inside the other).
        self.squeezed = 0
        # Their nodes: (the plugin's own NodePath, the game's) each once.
        self._squeezed: list[tuple[NodePath, NodePath]] = []

    # ------------------------------------------------------------------ registration
    def add_sphere(
        self,
        nodepath: NodePath,
        radius: float,
        *,
        center: Iterable[float] = (0.0, 0.0, 0.0),
        from_mask: int | BitMask32 = DEFAULT_MASK,
        into_mask: int | BitMask32 = DEFAULT_MASK,
        response: str = "rewind",
        static: bool = False,
    ) -> None:
        """Register a sphere of ``radius`` around ``center`` (both in nodepath's space).

        ``response`` is ``"rewind"`` (stop at the contact), ``"slide"`` (keep the motion
        along the contact plane), ``"sensor"`` (report only; never stops or is stopped) or
        ``"kinematic"`` (the game moves it, the plugin never does; it stops, deflects and
        carries the bodies it meets). ``static=True`` promises the node never moves: it is
        read once, never again (call :meth:`teleport` after moving it anyway).
        """
        self._check_alive()
        handle, nodepath = nodepath, self._new_node(nodepath)
        owner = self._next_uid()
        sphere = self._make_sphere(
            owner, nodepath, radius, center, from_mask, into_mask, response, static, None
        )
        self._commit(nodepath, handle, owner, [sphere])

    def add_plane(
        self,
        nodepath: NodePath,
        plane: LPlane,
        *,
        into_mask: int | BitMask32 = DEFAULT_MASK,
    ) -> None:
        """Register a solid half-space: ``plane`` (a panda3d.core.Plane) in nodepath's
        space, solid behind it. Planes are into-only; they move with their node."""
        self._check_alive()
        handle, nodepath = nodepath, self._new_node(nodepath)
        owner = self._next_uid()
        entry = self._make_plane(owner, nodepath, plane, into_mask, None)
        self._commit(nodepath, handle, owner, [entry])

    def add_collision_node(
        self,
        nodepath: NodePath,
        *,
        response: str | None = None,
        static: bool = False,
        target: NodePath | None = None,
        two_sided: bool = False,
    ) -> None:
        """Register a CollisionNode's solids, with the node's own from/into collide masks,
        as one collider whose events name the node.

        Spheres and planes are accepted as before; polygons (fanned into triangles; one-sided
        unless ``two_sided``), boxes, capsules and inverse spheres make the node a level
        piece: ``"kinematic"`` by default (the game moves it, the plugin never does, and
        bodies touching it are carried on its motion) or ``"sensor"``. Sphere-only nodes are
        bodies, ``"rewind"`` by default. Intangible solids are sensors. A node of rays,
        segments and lines (nothing else) is a from-only collider, cast each pass once the
        bodies are resolved, from where it is then (no response, static or target).

        ``static=True`` promises the node never moves: read once, indexed once (call
        :meth:`teleport` after moving it anyway). ``target``: the ancestor the plugin reads
        and moves for a body, as ``CollisionHandlerPusher.addCollider(collider, target)``;
        the collision node keeps its transform relative to it, which is read every pass
        (a collider the game moves on its target is swept there).
        """
        self._check_alive()
        nodepath = _nodepath(nodepath)
        node = nodepath.node()
        if not isinstance(node, CollisionNode):
            raise ValueError(f"nodepath {nodepath} is not a CollisionNode")
        static = _args.flag("static", static)
        two_sided = _args.flag("two_sided", two_sided)
        solids = [node.getSolid(i) for i in range(node.getNumSolids())]
        if not solids:
            raise ValueError(f"{nodepath} holds no collision solids")
        if any(type(solid) in RAY_TYPES for solid in solids):
            self._add_rays(nodepath, solids, response, static, target, two_sided)
            return
        for solid in solids:
            # Exact types: CollisionPolygon derives from CollisionPlane (it is finite) and
            # CollisionInvSphere from CollisionSphere (it is hollow).
            if type(solid) not in (CollisionSphere, CollisionPlane, *PIECE_TYPES):
                raise ValueError(
                    f"{nodepath} holds a {type(solid).__name__}; panda3d-ccd sweeps "
                    "CollisionSphere, CollisionPlane, CollisionPolygon, CollisionBox, "
                    "CollisionCapsule and CollisionInvSphere, and casts CollisionRay, "
                    "CollisionSegment and CollisionLine"
                )
        pieces = [(i, s) for i, s in enumerate(solids) if type(s) in PIECE_TYPES]
        if response is None:
            response = "kinematic" if pieces else "rewind"
        _response(response)
        if pieces and response not in ("kinematic", "sensor"):
            raise ValueError(
                f"{nodepath} holds a {type(pieces[0][1]).__name__}, which the plugin cannot "
                f"move: response must be 'kinematic' or 'sensor', got {response!r}"
            )
        for i, solid in enumerate(solids):
            if type(solid) is CollisionPlane and not solid.isTangible():
                raise ValueError(
                    f"{nodepath}: solid {i} is an intangible CollisionPlane; a plane here is "
                    "always a solid half-space (for a trigger, use a sensor CollisionBox)"
                )
        tangible = {s.isTangible() for s in solids if type(s) is not CollisionPlane}
        if len(tangible) > 1:
            raise ValueError(
                f"{nodepath} mixes tangible and intangible solids; a node moves as one body, "
                "so put the intangible ones (sensors) on a node of their own"
            )
        mover = None
        to_mover = None
        if target is not None:
            target = _nodepath(target)
            if not (target == nodepath or target.isAncestorOf(nodepath)):
                raise ValueError(f"target {target} is not an ancestor of {nodepath}")
            if pieces or static or response == "kinematic":
                raise ValueError(
                    "target applies to a body the plugin moves (response 'rewind', 'slide' "
                    f"or 'sensor'), got {nodepath} as {response!r}" + (" static" if static else "")
                )
            mover = NodePath(target)
            to_mover = nodepath.getTransform(target)
        sensor = response == "sensor" or not all(x.isTangible() for _i, x in pieces)
        shapes = read_solids(str(nodepath), pieces, two_sided, sensor) if pieces else None
        handle, nodepath = nodepath, self._new_node(nodepath)
        from_mask = node.getFromCollideMask().getWord()
        into_mask = node.getIntoCollideMask().getWord()
        owner = self._next_uid()
        entries: list[Any] = []
        for solid in solids:
            if type(solid) is CollisionSphere:
                kind = response if solid.isTangible() else "sensor"
                if to_mover is None:
                    center, radius = tuple(solid.getCenter()), solid.getRadius()
                else:
                    center, radius = _on_target(solid, to_mover)
                sphere = self._make_sphere(
                    owner, nodepath, radius, center, from_mask, into_mask, kind,
                    static and kind != "sensor", solid,
                )  # fmt: skip
                sphere.mover = mover
                entries.append(sphere)
            elif type(solid) is CollisionPlane:
                entries.append(
                    self._make_plane(owner, nodepath, solid.getPlane(), into_mask, solid)
                )
        if shapes is not None:
            entries.append(
                PieceNode(
                    uid=self._next_uid(),
                    owner=owner,
                    nodepath=nodepath,
                    shapes=shapes,
                    solids=solids,
                    into_mask=into_mask,
                    # A sensor box is a volume in its node's own frame (a turned box is
                    # no box in world coordinates): read each pass like a kinematic node.
                    static=static and BOX not in shapes.geometry,
                    sensor=sensor,
                )
            )
        self._commit(nodepath, handle, owner, entries, target)

    def _add_rays(
        self,
        nodepath: NodePath,
        solids: list[Any],
        response: Any,
        static: bool,
        target: Any,
        two_sided: bool,
    ) -> None:
        """Register a node of rays, segments and lines: a from-only collider, cast each
        pass from where the node is once the bodies are resolved."""
        for i, solid in enumerate(solids):
            if type(solid) not in RAY_TYPES:
                raise ValueError(
                    f"{nodepath} mixes a {type(solid).__name__} (solid {i}) with rays; a node "
                    "of CollisionRay, CollisionSegment and CollisionLine solids holds only "
                    "those: put the others on a node of their own"
                )
        if response is not None:
            raise ValueError(
                f"{nodepath} holds rays, which only report: response must be None, got {response!r}"
            )
        if static:
            raise ValueError(
                f"{nodepath} holds rays, cast each pass from where the node is then: "
                "static must be False"
            )
        if target is not None:
            raise ValueError(
                f"{nodepath} holds rays, which the plugin never moves: target must be None, "
                f"got {target!r}"
            )
        if two_sided:
            raise ValueError(
                f"{nodepath} holds rays: two_sided applies to a node's polygons (a ray hits "
                "a polygon from the sides its own node was registered with)"
            )
        for i, solid in enumerate(solids):
            ends = ray_ends(solid)
            if not all(map(math.isfinite, (*ends[0], *ends[1]))):
                raise ValueError(
                    f"{nodepath}: solid {i} is a {type(solid).__name__} that is not finite "
                    f"({tuple(ends[0])}, {tuple(ends[1])})"
                )
        from_mask = nodepath.node().getFromCollideMask().getWord()
        handle, nodepath = nodepath, self._new_node(nodepath)
        owner = self._next_uid()
        entry = RayNode(
            uid=self._next_uid(), owner=owner, nodepath=nodepath, solids=solids,
            from_mask=from_mask,
        )  # fmt: skip
        self._commit(nodepath, handle, owner, [entry])

    def add_collision_nodes(
        self,
        root: NodePath,
        *,
        response: str | None = None,
        static: bool = False,
        two_sided: bool = False,
    ) -> list[NodePath]:
        """Register every CollisionNode at or under ``root`` (a loaded level, say), each as
        its own collider with :meth:`add_collision_node`'s rules, so events name each node.
        Returns the NodePaths registered. A node that is refused refuses the whole call
        (ValueError naming it), and then nothing is registered."""
        self._check_alive()
        root = _nodepath(root)
        # Checked here too: refused whatever is under root (nothing, say).
        if response is not None:
            _response(response)
        static, two_sided = _args.flag("static", static), _args.flag("two_sided", two_sided)
        found = root.findAllMatches("**/+CollisionNode")
        nodes = [root] if isinstance(root.node(), CollisionNode) else []
        nodes += [found.getPath(i) for i in range(found.getNumPaths())]
        nodes = [n for n in nodes if n.node().getNumSolids()]
        done: list[NodePath] = []
        try:
            for nodepath in nodes:
                self.add_collision_node(
                    nodepath, response=response, static=static, two_sided=two_sided
                )
                done.append(nodepath)
        except ValueError:
            for nodepath in done:
                entries = self._by_node.pop(NodePath(nodepath), None)
                if entries is not None:
                    self._dynamic.pop(NodePath(nodepath), None)
                    self._forget({e.owner for e in entries})
            raise
        return done

    def _new_node(self, nodepath: Any) -> NodePath:
        """Validate a node for registration; returns the plugin's own copy of the NodePath
        (the game's removeNode() empties the game's copy, never the plugin's)."""
        nodepath = _nodepath(nodepath)
        if nodepath in self._by_node:
            raise ValueError(f"nodepath {nodepath} is already registered")
        return NodePath(nodepath)

    def _commit(
        self,
        nodepath: NodePath,
        handle: NodePath,
        owner: int,
        entries: list[Any],
        target: NodePath | None = None,
    ) -> None:
        """Register a node's validated colliders, all at once (``target``: the game's
        NodePath given as its target, if any). A sphere's first pass starts at Panda3D's
        previous transform, where the game last placed it (setPos), so a spawn placed
        after registration is not swept from where it was built, while a setFluidPos move
        in the same frame is; a plane's first pass sweeps nothing."""
        for entry in entries:
            entry.handle = handle
            if isinstance(entry, SphereRecord) and entry.static:
                self._statics.reread.add(entry.uid)
                self._state.statics.add(entry)
            elif isinstance(entry, SphereRecord):
                self._new.add(entry.uid)
                self._read_sphere(entry)
                self._state.spheres.add(entry)
            elif isinstance(entry, PieceNode):
                self._pieces.add(entry)
            elif isinstance(entry, RayNode):
                self._rays.add(entry)
            else:
                self._teleported.add(entry.uid)
                entry.prev_world = self._world_plane(entry)
                self._state.planes.append(entry)
        self._by_node[nodepath] = entries
        if target is None or target is handle:
            self._target_of.pop(nodepath, None)  # (from an earlier registration)
        else:
            self._target_of[nodepath] = target
        if not all(getattr(e, "static", False) for e in entries):
            self._dynamic[nodepath] = None
        self._owner_of[nodepath] = owner
        self._node_of[owner] = nodepath

    def _next_uid(self) -> int:
        self._uid += 1
        return self._uid

    def _make_sphere(
        self,
        owner: int,
        nodepath: NodePath,
        radius: Any,
        center: Iterable[float],
        from_mask: Any,
        into_mask: Any,
        response: str,
        static: bool,
        solid: Any,
    ) -> SphereRecord:
        r = _args.length("radius", radius)
        kind = _response(response)
        static = _args.flag("static", static)
        if static and kind != _solver.SENSOR:
            # A static sphere is a kinematic one that never moves: never moved, and only
            # reported against other kinematic things.
            kind = _solver.KINEMATIC
        return SphereRecord(
            uid=self._next_uid(),
            owner=owner,
            nodepath=nodepath,
            radius=r,
            center=_args.vector("center", center),
            response=kind,
            from_mask=_args.mask("from_mask", from_mask),
            into_mask=_args.mask("into_mask", into_mask),
            static=static,
            solid=solid,
        )

    def _make_plane(
        self, owner: int, nodepath: NodePath, plane: Any, into_mask: Any, solid: Any
    ) -> _Plane:
        if not isinstance(plane, LPlane):
            raise ValueError(f"plane must be a panda3d.core.Plane, got {plane!r}")
        normal = plane.getNormal()
        if not all(math.isfinite(c) for c in (*normal, plane[3])) or normal.length() == 0:
            raise ValueError(f"plane must have a finite, non-zero normal, got {plane}")
        return _Plane(
            uid=self._next_uid(),
            owner=owner,
            nodepath=nodepath,
            plane=LPlane(plane),
            into_mask=_args.mask("into_mask", into_mask),
            solid=solid,
        )

    def remove(self, nodepath: NodePath, *, below: bool = True) -> None:
        """Forget every collider of nodepath, of the nodes registered with it as their
        ``target``, and (``below``) of the registered nodes below it: a game object's
        subtree, as removeNode() takes it (a projectile and the sensor on its child). With
        ``below=False``, those below stay (a tank's turret, carried by its hull until then,
        goes on on its own). Their open contacts get their out events now."""
        self._check_alive()
        if not isinstance(nodepath, NodePath):
            raise ValueError(f"nodepath must be a NodePath, got {nodepath!r}")
        below = _args.flag("below", below)
        if nodepath.isEmpty():
            # The game called removeNode() first: every node whose NodePath the game has
            # emptied is dropped, which includes this one, with what lies below.
            self._drop_removed()
            return
        owners = set()
        for registered in self._subtree(nodepath, below):
            self._dynamic.pop(registered, None)
            owners |= {e.owner for e in self._by_node.pop(registered)}
        self._forget(owners)

    def teleport(self, nodepath: NodePath) -> None:
        """The next pass does not sweep nodepath's jump (nor that of the nodes registered
        with it as their ``target``, nor below it: a turret on its tank): it starts from
        where it is then."""
        self._check_alive()
        nodepath = _nodepath(nodepath)
        jumped = self._subtree(nodepath)
        # (Nor is a move the game made on it read as a move on its carrier: see _write_back.)
        self._on_parent = {
            node: kept for node, kept in self._on_parent.items()
            if node != nodepath and not nodepath.isAncestorOf(node)
        }  # fmt: skip
        for registered in jumped:
            entries = self._by_node[registered]
            self._teleported.update(e.uid for e in entries)
            self._pieces.reread({e.owner for e in entries if isinstance(e, PieceNode)})
            if registered not in self._dynamic:
                self._statics.reread.update(e.uid for e in entries)

    def _subtree(self, nodepath: NodePath, below: bool = True) -> list[NodePath]:
        """The registered NodePath nodepath is, those registered with it as their
        ``target``, and (``below``) the registered nodes below it, each once; a ValueError
        if none. (Its subtree walked, not every registered node asked: a pool's bullets
        are teleported by the dozen a frame.)"""
        found = self._registered(nodepath, none_ok=True)
        if below:
            found += self._below(nodepath)
        if not found:
            raise ValueError(
                f"nodepath {nodepath} is not registered, nor the target of a registered node"
                + (", nor above one" if below else "")
            )
        return list(dict.fromkeys(found))  # (nodepath itself once)

    def _below(self, nodepath: NodePath) -> list[NodePath]:
        """The registered nodes below nodepath, stashed ones too."""
        by_node = self._by_node
        return [node for node in nodepath.findAllMatches("**;+s") if node in by_node]

    def _registered(self, nodepath: NodePath, none_ok: bool = False) -> list[NodePath]:
        """The registered NodePath nodepath is, and those registered with it as their
        ``target`` (the node the game moves, and deletes); a ValueError if none (unless
        ``none_ok``)."""
        by_node = self._by_node
        found = [nodepath] if nodepath in by_node else []
        # (Registered still: during a pass's events a node remove()d keeps its target
        # until the events end.)
        found += [
            node
            for node, target in self._target_of.items()
            if target == nodepath and node in by_node
        ]
        found = list(dict.fromkeys(found))  # (a node given itself as its target: once)
        if not found and not none_ok:
            raise ValueError(
                f"nodepath {nodepath} is not registered, nor the target of a registered node"
            )
        return found

    def _forget(self, owners: set[int]) -> None:
        """Drop the colliders of these nodes; their open pairs get out events now."""
        self._state.spheres.drop_owners(owners)
        if self._state.statics.drop_owners(owners):
            self._statics.index = None
        self._statics.inactive -= {self._node_of.get(owner) for owner in owners}
        self._state.planes = [p for p in self._state.planes if p.owner not in owners]
        self._pieces.drop(owners)
        self._rays.drop(owners)
        if self._teleported:
            alive = self._state.spheres.uids() | {p.uid for p in self._state.planes}
            self._teleported &= alive
        unsent = self._unsent_in
        events = self._pairs.close(lambda key: key[0] in owners or key[1] in owners)
        if unsent:
            events = [e for e in events if self._key(e[1]) not in unsent]
            self._forgotten |= owners  # their keys are needed until the frame's events end
        else:
            self._purge(owners)
        self._send(events)

    def _send(self, events: list[Any]) -> None:
        """Send events now, or hold them for the pass's events (see :meth:`step`)."""
        if self._held is not None:
            self._held += events
        else:
            send_events(self._messenger, self._patterns, events)

    def _purge(self, owners: set[int]) -> None:
        for owner in owners:
            nodepath = self._node_of.pop(owner, None)
            # A handler may have registered the node again since: that id stays.
            if self._owner_of.get(nodepath) == owner:
                del self._owner_of[nodepath]
                self._target_of.pop(nodepath, None)

    def _key(self, contact: Contact) -> tuple[int, int] | None:
        """The (from, into) node key of a contact of this frame, if still known."""
        frm = self._owner_of.get(contact._from_np)
        into = self._owner_of.get(contact._into_np)
        return None if frm is None or into is None else (frm, into)

    # ------------------------------------------------------------------ events
    def add_in_pattern(self, pattern: str) -> None:
        """Event name pattern sent when a pair starts touching (CollisionHandlerEvent's)."""
        self._patterns.add_in_pattern(pattern)

    def add_again_pattern(self, pattern: str) -> None:
        """Event name pattern sent for a pair that touched last pass and again this one."""
        self._patterns.add_again_pattern(pattern)

    def add_out_pattern(self, pattern: str) -> None:
        """Event name pattern sent when a pair stops touching."""
        self._patterns.add_out_pattern(pattern)

    def clear_in_patterns(self) -> None:
        self._patterns.clear_in_patterns()

    def clear_again_patterns(self) -> None:
        self._patterns.clear_again_patterns()

    def clear_out_patterns(self) -> None:
        self._patterns.clear_out_patterns()

    addInPattern = add_in_pattern
    addAgainPattern = add_again_pattern
    addOutPattern = add_out_pattern

    @property
    def contacts(self) -> list[Contact]:
        """The last pass's contacts, in time order (one per event direction)."""
        return list(self._contacts)

    @property
    def colliders(self) -> int:
        """Number of registered spheres and planes, and nodes of level pieces or rays."""
        state = self._state
        count = len(state.spheres) + len(state.statics) + len(state.planes) + len(self._pieces)
        return count + len(self._rays)

    # ------------------------------------------------------------------ the pass
    def _task_step(self, task: Any) -> int:
        self.step()
        return task.cont

    def step(self) -> list[Contact]:
        """Run one pass now (what the task runs each frame); returns :attr:`contacts`.
        Not from a handler of the pass's own events (RuntimeError): that pass's events are
        still being sent, and a second pass in between would send later ones first."""
        self._check_alive()
        if self._stepping:
            raise RuntimeError(
                "step() was called from a handler of its own events; the pass has not "
                "finished sending them (run the next pass from the next frame)"
            )
        self._stepping = True
        try:
            return self._step()
        finally:
            self._stepping = False

    def _step(self) -> list[Contact]:
        # Outs of pairs that end before the pass (nodes removed or detached since the last
        # one) are held for the pass's events, where a handler that raises loses no other
        # event and no collision of this pass.
        held: list[Any] = []
        self._held = held
        try:
            self._scan()
        finally:
            self._held = None
        spheres, statics = self._state.spheres, self._state.statics
        spheres.flush()
        statics.flush()

        _collect["Read"].start()
        frame = self._read_all(spheres)
        planes = self._read_planes(self._state.planes)
        tables = self._piece_tables()
        self._teleported.clear()
        _collect["Read"].stop()

        _collect["Broad and narrow phase"].start()
        # Bodies carried by another body (on its target, or below its node) move with it.
        carried = self._carried(spheres)
        owners = spheres.owner if carried is None else carried[0]
        turns = _turns(spheres, frame)
        near = _NO_ROWS
        if len(statics) or self._statics.inactive:
            # Dropping or closing statics here ends pairs; their outs wait for the events
            # below, as a handler may remove() a node and the frame's rows are read already.
            self._held = held
            try:
                near = self._near_statics(
                    spheres, frame, [planes.moving(), *tables], owners, turns
                )
            finally:
                self._held = None

        # The dynamic spheres, then the static ones near them: statics never move.
        def rows(dynamic: np.ndarray, static: np.ndarray) -> np.ndarray:
            return np.concatenate([dynamic, static[near]]) if len(near) else dynamic

        p0, p1 = rows(frame.start, statics.prev_center), rows(frame.end, statics.prev_center)
        radius = rows(frame.radius, statics.world_radius)
        # (None: no sphere's radius changed this frame; static ones never do.)
        radius0 = rows(frame.radius0, statics.world_radius) if frame.grew else None
        response = rows(spheres.response, statics.response)
        from_mask = rows(spheres.from_mask, statics.from_mask)
        trying = self._one_round.ready()
        while True:
            result = _solver.solve(
                p0,
                p1,
                radius,
                response,
                from_mask,
                rows(spheres.into_mask, statics.into_mask),
                group=self._groups(
                    spheres, planes, tables, near, carried, rows(owners, statics.owner)
                ),
                radius0=radius0,
                static=np.arange(len(p0)) >= len(frame.start) if len(near) else None,
                # (The planes first, as the solver puts planes given as arrays.)
                obstacles=tables if planes.table is None else [planes.table, *tables],
                one_round_first=trying,
                # (The usual read found every dynamic sphere finite; with statics, the
                # solver looks.)
                all_finite=frame.valid is None and not len(near),
                turns=None if turns is None else turns._replace(
                    frame=np.concatenate([turns.frame, np.full(len(near), -1)])
                ),
            )
            # Static piece nodes are not looked at each pass (see _look_at_static_pieces):
            # those the pass's contacts reach are looked at now, and one the game took out
            # of the scene since (removeNode() or detachNode() between passes, or in
            # another node's handler) is left out and the pass solved again without it.
            # Only a row with a hit changes anything a pass does.
            left = self._static_pieces_left(result.hits)
            if not left:
                break
            self._held = held
            try:
                self._leave_out(left)
            finally:
                self._held = None
            tables = self._piece_tables()
        if trying:
            self._one_round.record(result.one_round)
        _collect["Broad and narrow phase"].stop()
        if result.capped:
            if not self.capped_passes:  # once: a dense scene may cap every frame
                notify.warning(
                    f"resolution stopped after {result.rounds} rounds; the colliders it "
                    "could not resolve were held at the earliest unresolved contact "
                    "(see ContinuousCollision.capped_passes for how often)"
                )
            self.capped_passes += 1
        self.candidate_count = result.candidates
        self.rounds = result.rounds
        self.squeezed = result.squeezed

        _collect["Write back"].start()
        skinned = off_polygons(
            p0, p1, result.end, radius, response, from_mask, result.hits, tables
        )
        if skinned is not None:
            result = _with_skins(result, *skinned, carried)
        self._write_back(spheres, frame, result, carried)
        _collect["Write back"].stop()
        left_out = {self._owner_of[n] for n in self._inactive | self._statics.inactive
                    if n in self._owner_of}  # fmt: skip
        cache = self._statics
        static_rows, static_index = cache.rows, cache.index
        if static_index is None:  # the statics changed during the pass: not indexed yet
            static_rows = _NO_ROWS
            if len(statics.owner):
                out = list(left_out)
                static_rows = np.flatnonzero(~statics.bad & ~np.isin(statics.owner, out))
        self._queries.snapshot(Snapshot(
            spheres, statics, left_out, planes.planes, planes.normal, planes.off1, tables,
            PieceView.of(self._pieces),
            _solver.SENSOR, static_rows, None if static_index in (None, _FEW) else static_index,
        ))  # fmt: skip

        scene = (spheres, statics, near, planes.planes)
        touches = self._touches(scene, radius, result.hits, radius0, result.t_stop)
        self._squeezed = self._nodes_of(scene, result.yielded)
        rays: list[Any] = []
        if len(self._rays):
            # Cast now, in the world the queries see: the bodies where they ended.
            rays = ray_touches(self._queries, self._rays, left_out, notify.warning)
            touches += rays
        self._contacts = [enter for _key, enter, _exit in touches]
        events = self._pairs.advance(touches)
        if rays:
            # The rays were cast once the frame's motion was over: their events come after
            # the bodies' (their t is a fraction of the ray's cast, not of the frame).
            cast = {id(enter) for _key, enter, _exit in rays}
            events = [e for e in events if id(e[1]) not in cast] + [
                e for e in events if id(e[1]) in cast
            ]
        _count_colliders.setLevel(self.colliders)
        _count_candidates.setLevel(result.candidates)
        _count_contacts.setLevel(len(self._contacts))
        if self._debug is not None:
            # The static spheres the pass left out are drawn too, where they stand.
            out = [self._owner_of[nodepath] for nodepath in self._statics.inactive]
            shown = np.flatnonzero(~statics.bad & ~np.isin(statics.owner, out))
            shown = shown[~np.isin(shown, near)]
            still = (statics.response[shown], statics.world_radius[shown],
                     statics.prev_center[shown])  # fmt: skip
            self._debug.update(response, radius, p0, result, still)
        contacts = self.contacts
        # State is committed before any handler runs: a handler that raises cannot leave
        # the plugin half-updated, and the next pass is correct.
        _collect["Events"].start()
        # A handler may remove() a node (or destroy() everything): its open pairs are
        # closed then, and this frame's later events for it are void. A pair whose "in"
        # is among those never had it sent, so it gets no "out" either.
        key_of = {id(enter): key for key, enter, _exit in touches}
        key_of.update((id(leave), key) for key, _enter, leave in touches if leave is not None)
        self._unsent_in = {key_of[id(c)] for kind, c in events if kind == "in"}
        # Panda3D's own handler queues its events, so one raising handler loses no other
        # event: here too every event is delivered, then the first exception re-raised.
        failure: BaseException | None = None
        # Handlers change these in place (remove(), destroy(), add_in_pattern()), never
        # replace them, so each event still sees the state the handlers before it left.
        by_node, unsent, programs = self._by_node, self._unsent_in, self._patterns.programs
        owner_of = self._owner_of
        render = self._render
        top = render.getTop()

        def in_scene(nodepath: NodePath) -> bool:
            # A child of render is (the look at its parent costs half the walk to the top).
            return nodepath.getParent() == render or nodepath.getTop() == top

        sent = False  # (no handler ran: none took a node out of the scene)
        try:
            for kind, contact in held + events:
                todo = programs(kind)
                if kind == "out":
                    # Owed once its in was sent, also if a handler removed a node since: a
                    # pass-through's exit, or a pair that ended between frames.
                    if todo and key_of.get(id(contact)) not in unsent:
                        sent = True
                        try:
                            send_contact(self._messenger, todo, contact)
                        except Exception as exc:  # noqa: BLE001 - re-raised below
                            failure = failure or exc
                    continue
                # Without patterns of its kind an event sends nothing, so only an "in"
                # needs its node check (its pair's "out" is owed once it counts as sent).
                if not todo and kind != "in":
                    continue
                frm, into = contact._from_np, contact._into_np
                key = key_of[id(contact)]
                # (By id too: a handler may have removed a node and registered it again.)
                if (
                    frm in by_node
                    and into in by_node
                    and owner_of.get(frm) == key[0]
                    and owner_of.get(into) == key[1]
                ):
                    if not (in_scene(frm) and in_scene(into)):
                        continue
                    if kind == "in":
                        unsent.discard(key)
                    sent = sent or bool(todo)
                    try:
                        send_contact(self._messenger, todo, contact)
                    except Exception as exc:  # noqa: BLE001 - re-raised below
                        failure = failure or exc
            # A pair whose "in" was not sent (a node of it out of the scene by then) is not
            # kept open: no "again" or "out" may follow it (a node a later handler attaches
            # again starts the pair anew at the next pass). (Those of nodes removed are
            # closed already.)
            if unsent:
                self._pairs.close(unsent.__contains__)
            # The nodes of the pass's events that handlers took out of the scene
            # (removeNode(), detachNode()), looked at once all are sent: a node's last
            # event may be the one whose handler detaches it (with masks that meet one way
            # only, a pair sends one event), and a pool may attach it again before the
            # next pass's scan would see it gone. (Those out at the scan are closed.)
            left: set[NodePath] = set()
            if sent:
                named = {n for _kind, c in held + events for n in (c._from_np, c._into_np)}
                left = {n for n in named & by_node.keys() if not in_scene(n)}
                left -= self._inactive | self._statics.inactive
            looked = set(left)
            while left:
                # Their pairs close now (outs where the in was sent); the next pass starts
                # each where it is then, as if teleported (a pool may attach it again).
                for nodepath in left:
                    self._teleported.update(e.uid for e in by_node[nodepath])
                    self._pieces.reread({self._owner_of[nodepath]})
                closing = self._closing({e.owner for nodepath in left for e in by_node[nodepath]})
                try:
                    self._send(closing)
                except Exception as exc:  # noqa: BLE001 - re-raised below
                    failure = failure or exc
                # And the nodes those outs' handlers took out of the scene, in turn.
                named = {n for _kind, c in closing for n in (c._from_np, c._into_np)}
                left = {n for n in named & by_node.keys() if not in_scene(n)} - looked
                left -= self._inactive | self._statics.inactive
                looked |= left
            if failure is not None:
                raise failure
        finally:
            self._unsent_in = set()
            self._purge(self._forgotten)
            self._forgotten = set()
            _collect["Events"].stop()
        return contacts

    def _groups(
        self,
        spheres: SphereTable,
        planes: _PlaneFrame,
        tables: list[Any],
        near: np.ndarray,
        carried: tuple[np.ndarray, np.ndarray] | None,
        owners: np.ndarray,
    ) -> np.ndarray | None:
        """The solver's rigid groups, ``owners`` (each sphere's node, or the body carrying
        it: see :meth:`_carried`); None where no node has two spheres, nor a sphere and a
        plane (no static sphere near, no piece, no body carried): the same pass, without a
        group test per pair. Looked at again when spheres come or go or the planes
        change."""
        if carried is not None or len(near) or tables or not spheres.one_per_owner:
            return owners
        known = self._owners
        if known is None or known[0] != spheres.version or known[1] is not planes.group:
            apart = set(planes.group.tolist()).isdisjoint(spheres.owner.tolist())
            known = self._owners = (spheres.version, planes.group, apart)
        return None if known[2] else owners

    def _carried(self, spheres: SphereTable) -> tuple[np.ndarray, np.ndarray] | None:
        """Bodies that carry others: (n,) each dynamic sphere's rigid group (its node's
        owner, or the owner of the body carrying it) and (n,) whether the plugin writes its
        node (the carrier's own rows, one node a group); None where no body carries another.

        A body (rewind or slide) is carried where the node the plugin moves for it (its
        target, or its own node) is another body's too, or lies below another body's: the
        colliders of one model given one target, as ``CollisionHandlerPusher.addCollider
        (collider, target)`` takes them, or a turret registered on its tank. A sensor is
        carried where its own node is, or lies below, a body's (a pickup radius on the
        player, whatever its target: it is never written). Each moves as one rigid body
        with the topmost body carrying it: no contact between them, the group's earliest
        contact stops (or deflects) them all, a sensor goes along the path its carrier
        takes, and the carrier's node is written; a carried node keeps its place on it,
        but where a rewind stopped the group (see :meth:`_moved_on_carriers`). The hierarchy
        is looked at each pass, from the nodes that are not children of render (only
        those can be below another's)."""
        if not self._away:
            return None
        known = self._movers
        if known is None or known[0] != spheres.version:
            response = spheres.response
            body = np.flatnonzero((response == _solver.REWIND) | (response == _solver.SLIDE))
            movers, nodes = spheres.movers, spheres.nodepath
            slot: dict[NodePath, int] = {}
            for k in body.tolist():
                slot.setdefault(movers[k], len(slot))
            which = np.full(len(movers), -1, np.int64)
            which[body] = [slot[movers[k]] for k in body.tolist()]
            mover_of = {nodes[k]: slot[movers[k]] for k in body.tolist()}  # by body node
            # Each mover's first body's owner; whether some mover moves two bodies' nodes.
            _, first = np.unique(which[body], return_index=True)
            owner = spheres.owner[body[first]]
            shared = len(unique(spheres.owner[body])) > len(slot)
            # A sensor's own node may be a body's mover; below render, it is looked up from.
            sensor = np.flatnonzero(response == _solver.SENSOR)
            which[sensor] = [slot.get(nodes[k], -1) for k in sensor.tolist()]
            shared = shared or bool(np.any(which[sensor] >= 0))
            rows_of: dict[NodePath, list[int]] = {}  # each sensor node's rows
            for k in sensor.tolist():
                rows_of.setdefault(nodes[k], []).append(k)
            is_sensor = np.zeros(len(movers), bool)
            is_sensor[sensor] = True
            known = (spheres.version, slot, which, mover_of, owner, shared, rows_of, is_sensor)
            self._movers = known
        _version, slot, which, mover_of, owner, shared, rows_of, is_sensor = known
        if not slot:
            return None  # no body to carry anything
        # A body is carried from below only if its node is not a child of render: from
        # those bodies' movers (and those sensors' nodes), a walk up to render finds the
        # topmost body mover above.
        parent_of = self._away
        below = {mover_of[nodepath] for nodepath in parent_of if nodepath in mover_of}
        sensors = rows_of.keys() & parent_of.keys()
        root = np.arange(len(slot))
        if below or sensors:
            # Per node passed, the topmost body mover at or above it (-1: none): bodies
            # under one parent (a level's root) walk up from it once.
            top: dict[NodePath, int] = {self._render: -1}

            def topmost(node: NodePath) -> int:
                chain = []
                while node not in top and not node.isEmpty():
                    chain.append(node)
                    node = node.getParent()
                above = top.get(node, -1)
                for node in reversed(chain):
                    if above < 0:
                        above = slot.get(node, -1)
                    top[node] = above
                return above

            movers = list(slot)
            for i in below:
                above = topmost(movers[i].getParent())
                if above >= 0:
                    root[i] = above
            # Sensors walk up from their parents, each parent once (a pool of pickups).
            carrier = {parent: topmost(parent) for parent in set(map(parent_of.get, sensors))}
            carrier = {parent: above for parent, above in carrier.items() if above >= 0}
            if carrier:
                # Only the carried sensors' rows are looked at (not every sensor's).
                rows, tops = [], []
                for node in sensors:
                    if (above := carrier.get(parent_of[node], -1)) >= 0:
                        rows += rows_of[node]
                        tops += [above] * len(rows_of[node])
                which = which.copy()
                which[rows] = tops
        elif not shared:
            return None
        carried = which >= 0
        group = np.where(carried, owner[root[which]], spheres.owner)
        if np.array_equal(group, spheres.owner):
            return None
        # The carrier's rows: the bodies whose mover is the group's topmost one.
        lead = ~carried | ((root[which] == which) & ~is_sensor)
        return group, lead

    def _near_statics(
        self,
        spheres: SphereTable,
        frame: _Frame,
        movers: list[Any],
        group: np.ndarray,
        turns: _solver.Turns | None = None,
    ) -> np.ndarray:
        """Rows of the static spheres this pass's solver could pair with the dynamic ones
        (the same boxes as its broad phase, given the dynamic spheres' rigid ``group``s,
        from the static index) or with the planes that move (the solver's own plane
        candidates). Static nodes are looked at only here:
        those near something, and a few more in turn; one found removed is dropped, one
        out of the scene is inactive until it is back."""
        moving_planes = movers[0]
        statics, cache = self._state.statics, self._statics
        top = self._render.getTop()
        back = [nodepath for nodepath in cache.inactive if nodepath.getTop() == top]
        for nodepath in back:
            cache.inactive.discard(nodepath)
            cache.reread.update(e.uid for e in self._by_node[nodepath])
        if cache.reread:
            rows = np.flatnonzero(np.isin(statics.uid, list(cache.reread)))
            cache.reread.clear()
            self._read_statics(rows)
            # One read out of the scene (registered before it is attached, teleported while
            # detached) is inactive from the start: read again once it is back, wherever
            # its root was placed meanwhile.
            away = [nodepath for nodepath in dict.fromkeys(statics.nodepath[rows].tolist())
                    if nodepath.getTop() != top and nodepath not in cache.inactive]  # fmt: skip
            if away:
                cache.inactive.update(away)
                self._close({self._owner_of[nodepath] for nodepath in away})
        if cache.index is None:
            out = [self._owner_of[nodepath] for nodepath in cache.inactive]
            cache.rows = np.flatnonzero(~statics.bad & ~np.isin(statics.owner, out))
            cache.index = _FEW
            if len(cache.rows) > _FEW_STATICS:
                center, r = statics.prev_center[cache.rows], statics.world_radius[cache.rows]
                cache.index = StaticIndex(center - r[:, None], center + r[:, None])
        near = np.zeros(0, np.int64)
        if cache.index is _FEW:
            # A few: all of them, as still rows the solver's own broad phase takes in one
            # table; querying the index would cost more than it saves.
            near = cache.rows
        elif len(frame.start):
            size, margin, split = _solver.broad_phase_spheres(
                frame.start,
                frame.end,
                frame.radius,
                spheres.response,
                radius0=frame.radius0 if frame.grew else None,
                group=group,
                turns=turns,
            )
            n = len(size)
            # Carried by what moves by itself, a body may go further (as the solver's own
            # broad phase allows).
            with np.errstate(invalid="ignore", over="ignore"):
                own = length(frame.end - frame.start)
            kinematic = (spheres.response == _solver.KINEMATIC) & np.isfinite(own)
            margin = margin + _solver.carry_margin(own, kinematic, movers)
            _i, k = cache.index._sphere_pairs(
                frame.start, frame.end, size + margin, np.full(n, -1), np.ones(n, bool), split
            )
            near = cache.rows[unique(k)]
        if len(cache.rows) and len(moving_planes.mask):
            # Only a moving plane pairs with a static sphere; every indexed one is tested,
            # in one numpy pass per such plane.
            center = statics.prev_center[cache.rows]
            k, _j = moving_planes.candidates(
                center,
                center,
                statics.world_radius[cache.rows],
                statics.from_mask[cache.rows],
                np.zeros(len(center), bool),
            )
            near = unique(np.concatenate([near, cache.rows[k]]))
        # A few more in turn, so that a static node removed far from everything is dropped
        # too, in time.
        turn = np.arange(cache.cursor, cache.cursor + _STATIC_CHECKS) % max(len(statics), 1)
        cache.cursor = int(turn[-1] + 1) if len(statics) else 0
        looked = unique(np.concatenate([near, turn[: len(statics)]]))
        near_uid = statics.uid[near]
        nodes = dict.fromkeys(statics.nodepath[looked].tolist())
        count = len(self._by_node)
        self._drop_removed(nodes)
        # (One already inactive is looked at in turn too: it has left the index already.)
        left = [nodepath for nodepath in nodes
                if nodepath in self._by_node and nodepath not in cache.inactive
                and nodepath.getTop() != top]  # fmt: skip
        if left:
            cache.inactive.update(left)
            cache.index = None
            self._close({self._owner_of[nodepath] for nodepath in left})
        if left or len(self._by_node) != count:
            # Dropping a node shifts the rows: find the near ones that are left by uid.
            out = [self._owner_of[nodepath] for nodepath in left]
            near = np.flatnonzero(np.isin(statics.uid, near_uid) & ~np.isin(statics.owner, out))
        return near

    def _piece_tables(self) -> list[Any]:
        """This pass's tables of level pieces, those out of the scene left out (see
        :meth:`_look_at_static_pieces`)."""
        pieces = self._pieces
        if not len(pieces):
            return []
        inactive = self._statics.inactive
        out = {self._owner_of[np_] for np_ in self._inactive | inactive if np_ in self._owner_of}
        return pieces.tables(self._render, out, notify.warning)

    def _look_at_static_pieces(self) -> None:
        """Static piece nodes are looked at a few at a time (as static spheres are), with
        the scan, before the pass reads anything: one found removed is dropped, with what
        is registered below it (a body too), one out of the scene is left out until it is
        back, and then read again."""
        pieces = self._pieces
        if not len(pieces):
            return
        top = self._render.getTop()
        inactive = self._statics.inactive
        away = [np_ for np_ in inactive if np_ in pieces.static_paths]
        for nodepath in away:
            if nodepath.getTop() == top:
                inactive.discard(nodepath)
                pieces.reread({self._owner_of[nodepath]})  # (made again with it)
        statics = pieces.statics
        if statics:
            count = min(len(statics), _STATIC_CHECKS)
            turn = [statics[(self._piece_cursor + i) % len(statics)] for i in range(count)]
            self._piece_cursor = (self._piece_cursor + count) % len(statics)
            # (Unread ones are looked at each pass: one out of the scene is read once back.)
            looked = {n.nodepath: None for n in turn + list(pieces.unread)}
            # (And those still out of the scene: one a pass found out and left out may be
            # removed.)
            looked.update((np_, None) for np_ in away if np_ in inactive)
            self._drop_removed([np_ for np_ in looked if np_ in self._by_node])
            self._leave_out(
                [np_ for np_ in looked if np_ in self._by_node and np_ not in inactive
                 and np_.getTop() != top]
            )  # fmt: skip

    def _leave_out(self, nodepaths: list[NodePath]) -> None:
        """Static piece nodes found out of the scene: inactive until they are back (and
        read again then), their open pairs closed."""
        if nodepaths:
            self._statics.inactive.update(nodepaths)
            self._pieces.statics_changed()
            self._close({self._owner_of[np_] for np_ in nodepaths})

    def _static_pieces_left(self, hits: _solver.Hits) -> list[NodePath]:
        """The static piece nodes that ``hits`` reach and that are out of the scene now."""
        pieces = self._pieces
        if not pieces.statics:
            return []
        on = np.flatnonzero(hits.kind > _solver.PLANE)
        if not len(on):
            return []
        kind, row = hits.kind[on], hits.b[on]
        codes = set(kind.tolist())  # (most passes: one, a level's table)
        reached = set()
        for code in codes:
            reached.update(
                pieces.node_rows(code, row if len(codes) == 1 else row[kind == code]).tolist()
            )
        nodes, top = pieces.nodes, self._render.getTop()
        return [nodes[r].nodepath for r in reached
                if nodes[r].static and nodes[r].nodepath.getTop() != top]  # fmt: skip

    def _read_statics(self, rows: np.ndarray) -> None:
        """Read static spheres ``rows`` now (registered, teleported or back in the scene)."""
        statics = self._state.statics
        now = self._read_rows(statics, rows)
        # A finite transform may still overflow a huge radius or centre (as for dynamic
        # spheres in _read_all): the index takes only finite boxes.
        ok = now.ok & row_all(np.isfinite(now.center)) & np.isfinite(now.world_radius)
        for k in rows[~ok & ~statics.bad[rows]].tolist():
            notify.warning(
                f"{statics.nodepath[k]} has a non-finite transform; static sphere skipped "
                "until it is teleported"
            )
        bad = statics.bad.copy()
        bad[rows] = ~ok
        statics.bad = bad
        statics.prev_center[rows] = np.where(ok[:, None], now.center, np.nan)
        statics.world_radius[rows] = np.where(ok, now.world_radius, 0.0)
        statics.prev_transform[rows] = now.transform
        self._statics.index = None

    def _drop_removed(self, nodes: Iterable[NodePath] | None = None) -> None:
        """Nodes whose registered NodePath, or target, the game emptied (removeNode()):
        dropped, as by :meth:`remove`, with the registered nodes below them (removeNode()
        takes the subtree out of the game: a sensor carried on a child of a projectile the
        game deletes). Only ``nodes`` are looked at, if given."""
        by_node, target_of = self._by_node, self._target_of
        looked = by_node if nodes is None else nodes
        gone = [
            nodepath
            for nodepath in looked
            if by_node[nodepath][0].handle.isEmpty()
            or (nodepath in target_of and target_of[nodepath].isEmpty())
        ]
        # removeNode() detached the node it emptied (or the target): what lay below went out
        # of the game with it, registered nodes of any kind (a sensor on a child of a
        # projectile, a static plate on a crate). Only below a node detached where it was
        # emptied, its subtree's own top: a handle emptied by clear() leaves its node where
        # it is, in the scene or in a pool among others the game keeps.
        below = []
        for nodepath in gone:
            entry = by_node[nodepath][0]
            root = nodepath if entry.handle.isEmpty() else getattr(entry, "mover", None)
            if root is not None and root.getTop() == root:
                below += self._below(root)
        gone = list(dict.fromkeys(gone + below))
        for nodepath in gone:
            entries = by_node.pop(nodepath, None)
            if entries is None:  # an earlier one's out handler dropped it (remove())
                continue
            self._dynamic.pop(nodepath, None)
            self._forget({e.owner for e in entries})

    def _scan(self) -> None:
        """Drop removed nodes; find the nodes out of the scene (detached, pooled, not yet
        attached): inactive, their open pairs closed. A node back in the scene resumes
        where it is, as if teleported. First, a few static piece nodes (a removed one
        takes what is registered below it, bodies too, before they are looked at)."""
        self._look_at_static_pieces()
        render = self._render
        top = render.getTop()
        by_node = self._by_node
        dynamic = self._dynamic
        # One look at each node's parent: a child of render is in the scene (and is read by
        # its own transform: see _local). Only the others are followed up to their top,
        # a walk that costs twice the look on a game's scattered nodes. removeNode()
        # detaches a node as it empties the game's NodePath, so a removed node is out of
        # the scene too (the plugin's copy of its NodePath sees a top of its own), and only
        # those out are looked at again.
        parents = map(NodePath.getParent, dynamic)
        away = {nodepath: parent for nodepath, parent in zip(dynamic, parents) if parent != render}
        outside = [nodepath for nodepath in away if nodepath.getTop() != top]
        self._drop_removed(outside)
        self._away = {nodepath: away[nodepath] for nodepath in away if nodepath in dynamic}
        inactive = {nodepath for nodepath in outside if nodepath in self._dynamic}
        left, back = inactive - self._inactive, self._inactive - inactive
        self._inactive = inactive
        for nodepath in back & by_node.keys():
            self._teleported.update(e.uid for e in by_node[nodepath])
            self._pieces.reread({self._owner_of[nodepath]})
        if left:
            self._close({e.owner for nodepath in left for e in by_node[nodepath]})

    def _close(self, owners: set[int]) -> None:
        """Close the open pairs of these nodes (still registered): out events where the in
        was sent."""
        self._send(self._closing(owners))

    def _closing(self, owners: set[int]) -> list[Any]:
        """Close the open pairs of these nodes; returns the out events owed (their in
        sent), not sent yet."""
        events = self._pairs.close(lambda key: key[0] in owners or key[1] in owners)
        if self._unsent_in:
            events = [e for e in events if self._key(e[1]) not in self._unsent_in]
        return events

    def _net(self, nodepath: NodePath) -> TransformState | None:
        """The node's transform relative to render; None where Panda3D cannot compose it
        (a NaN in the chain trips an assertion inside getTransform)."""
        try:
            ts = nodepath.getTransform(self._render)
        except AssertionError:
            return None
        return None if ts.isInvalid() else ts

    def _read_sphere(self, sphere: SphereRecord) -> None:
        """Read a sphere's world centre (and radius) now; store it as its previous one."""
        ts = self._net(sphere.nodepath if sphere.mover is None else sphere.mover)
        try:
            if ts is None:
                raise AssertionError
            center, world_radius = _centers(
                [ts], np.array([sphere.radius]), np.array([sphere.center])
            )
        except AssertionError:  # not finite: skipped (and warned) at the next pass
            sphere.prev_center = (math.nan,) * 3
            return
        sphere.prev_center = tuple(center[0].tolist())
        sphere.world_radius = float(world_radius[0])
        sphere.prev_transform = ts

    def _local(self, spheres: SphereTable, rows: np.ndarray | None = None) -> bool | np.ndarray:
        """(n,) which dynamic spheres are read by their node's own transform: the ``plain``
        ones whose node the last scan found a child of render, whose own transform is its
        transform relative to render (Panda3D's getTransform(render) hands back that same
        transform), read without the walk up the graph that relating two nodes costs.
        True or False where all rows are alike. With ``rows`` (those of the nodes in the
        scene), for those rows only."""
        away = self._away
        plain, owner = spheres.plain, spheres.owner
        if rows is not None:
            away = [nodepath for nodepath in away if nodepath not in self._inactive]
            plain, owner = plain[rows], owner[rows]
        if not away:
            return True if spheres.all_plain else plain
        if len(away) == len(self._dynamic):
            return False
        owners = np.fromiter(map(self._owner_of.__getitem__, away), np.int64, len(away))
        return plain & ~np.isin(owner, owners)

    def _read_rows(
        self,
        spheres: SphereTable,
        rows: np.ndarray,
        *,
        previous: bool = False,
        local: bool | np.ndarray = False,
    ) -> _Reading:
        """Read the transforms of spheres ``rows`` (m,) relative to render (Panda3D's
        previous transforms if ``previous``), with one call per node where all is well;
        ``local``: :meth:`_local` of the table."""
        m = len(rows)
        get = NodePath.getPrevTransform if previous else NodePath.getTransform
        bad = spheres.bad[rows] if spheres.some_bad else None
        if bad is None or not bad.any():
            movers = spheres.movers
            read = _read(
                [movers[k] for k in rows.tolist()],
                get,
                self._render,
                spheres.radius[rows],
                None if spheres.centred else spheres.center[rows],
                local if isinstance(local, bool) else local[rows],
            )
            if read is not None:
                ts, center, world_radius, scaled = read
                return _Reading(_objects(ts), center, world_radius, np.ones(m, bool), scaled)
        # A NaN somewhere in a chain (Panda3D asserts while composing or reading), or a
        # node marked bad: the nodes not marked are read in one go again, and if that
        # asserts, every node one at a time (the culprit, marked bad, is read that way until
        # it is finite again).
        if bad is None:
            bad = np.zeros(m, bool)
        nodepaths = spheres.mover[rows]
        transform = np.full(m, None, object)
        center = np.full((m, 3), np.nan)
        world_radius = np.full(m, np.nan)
        ok = np.ones(m, bool)
        quick = np.flatnonzero(~bad)
        try:
            ts = list(map(get, nodepaths[quick].tolist(), repeat(self._render)))
            center[quick], world_radius[quick] = _centers(
                ts, spheres.radius[rows[quick]], spheres.center[rows[quick]]
            )
            transform[quick] = _objects(ts)
            careful = np.flatnonzero(bad)
        except AssertionError:
            careful = np.arange(m)
        for i in careful.tolist():
            k = rows[i]
            try:
                ts_i = get(nodepaths[i], self._render)
                if ts_i.isInvalid():
                    raise AssertionError
                c, w = _centers([ts_i], spheres.radius[k : k + 1], spheres.center[k : k + 1])
            except AssertionError:
                transform[i], center[i], world_radius[i], ok[i] = None, np.nan, np.nan, False
                continue
            transform[i], center[i], world_radius[i] = ts_i, c[0], w[0]
        return _Reading(transform, center, world_radius, ok)

    def _read_all(self, spheres: SphereTable) -> _Frame:
        """Read every dynamic sphere (the static ones are in their own table).

        The sphere columns a pass sets are new arrays, not written into once set: the
        frame may share them (the usual pass's ``radius`` is the local radius of unscaled
        spheres, its ``start`` the last pass's ``prev_center``)."""
        if len(spheres.grouped):
            self._regroup(spheres)
        if not (self._teleported or self._new or spheres.some_bad):
            frame = self._read_usual(spheres)
            if frame is not None:
                return frame
        return self._read_any(spheres)

    def _regroup(self, spheres: SphereTable) -> None:
        """The spheres read and moved through a target: their centres and radii on it as
        their collision nodes are now (a game may move a collider on its target, as a
        pusher's: a crouch, a lunge), swept from where the last pass left them. Where a
        node's transform relative to its target is not finite, its centre is NaN: the
        sphere is skipped, with one warning, as any non-finite one."""
        rows = spheres.grouped
        center, radius = spheres.center, spheres.radius
        now_center = center[rows]
        now_radius = radius[rows]
        for j, (nodepath, mover, solid) in enumerate(
            zip(spheres.nodepath[rows].tolist(), spheres.mover[rows].tolist(),
                spheres.solid[rows].tolist())
        ):  # fmt: skip
            c, r = (math.nan,) * 3, math.nan
            try:
                ts = nodepath.getTransform(mover)
                if not ts.isInvalid():
                    c, r = _on_target(solid, ts)  # as registered
            except AssertionError:
                pass
            if math.isfinite(r) and all(map(math.isfinite, c)):
                now_center[j], now_radius[j] = c, r
            else:
                now_center[j] = math.nan
        same = np.array_equal(now_center, center[rows]) and np.array_equal(now_radius, radius[rows])
        if not same:
            center, radius = center.copy(), radius.copy()
            center[rows], radius[rows] = now_center, now_radius
            spheres.reshape(center, radius)

    def _read_usual(self, spheres: SphereTable) -> _Frame | None:
        """The usual pass, where no sphere is new, teleported or back from a non-finite
        transform: each node in the scene read in one go, once (with its previous
        transform, if respected); the rows of those out of the scene are NaN, as
        :meth:`_read_any` leaves them. None, with nothing changed, where one turns out not
        finite after all: :meth:`_read_any` reads again, and warns."""
        render, movers, radius = self._render, spheres.movers, spheres.radius
        center = None if spheres.centred else spheres.center
        start, radius0 = spheres.prev_center, spheres.world_radius
        rows = None
        if self._inactive:
            rows, movers = self._in_scene(spheres)
            radius, start, radius0 = radius[rows], start[rows], radius0[rows]
            center = None if center is None else center[rows]
        local = self._local(spheres, rows)
        read = _read(movers, NodePath.getTransform, render, radius, center, local)
        if read is None:
            return None
        transforms, end, radius1, _scaled = read
        prev = None
        if self.respect_prev_transform:
            read = _read(movers, NodePath.getPrevTransform, render, radius, center, local)
            if read is None:
                return None
            prev, start, radius0, _scaled = read
        # (Otherwise where the plugin left each sphere, its radius too: the start of a
        # growth.)
        if not (np.isfinite(end).all() and np.isfinite(start).all()):
            return None
        for r in (radius1, radius0):
            if r is not radius and not np.isfinite(r).all():
                return None
        grew = radius0 is not radius1 and bool((radius0 != radius1).any())
        if rows is None:
            spheres.world_radius = radius1
            if prev is not None:
                spheres.prev_transform = _objects(prev)
            return _Frame(start, end, radius0, radius1, _objects(transforms), None, grew, local)
        # Columns this pass changes: copies (see _read_all).
        spheres.world_radius = _widened(radius1, rows, spheres.world_radius)
        if prev is not None:
            spheres.prev_transform = _widened(_objects(prev), rows, spheres.prev_transform)
        n = len(spheres.uid)
        nan = np.full((n, 3), np.nan)
        zero = np.zeros(n)
        valid = np.zeros(n, bool)
        valid[rows] = True
        if not isinstance(local, bool):
            local = _widened(local, rows, valid)  # (the rows out: never read)
        return _Frame(
            _widened(start, rows, nan), _widened(end, rows, nan), _widened(radius0, rows, zero),
            _widened(radius1, rows, zero), _widened(_objects(transforms), rows, np.full(n, None)),
            valid, grew, local,
        )  # fmt: skip

    def _in_scene(self, spheres: SphereTable) -> tuple[np.ndarray, list[NodePath]]:
        """The rows of the dynamic spheres whose nodes are in the scene, and their nodes
        read and moved (kept while neither the table nor the nodes out of it change: a
        pool of nodes detached for a while)."""
        kept = self._kept_in_scene
        if kept is not None and kept[0] == spheres.version and kept[1] == self._inactive:
            return kept[2], kept[3]
        owners = np.unique(np.fromiter(map(self._owner_of.__getitem__, self._inactive), np.int64))
        rows = np.flatnonzero(~isin_sorted(spheres.owner, owners))
        movers = spheres.movers
        in_scene = [movers[k] for k in rows.tolist()]
        self._kept_in_scene = (spheres.version, set(self._inactive), rows, in_scene)
        return rows, in_scene

    def _read_any(self, spheres: SphereTable) -> _Frame:
        """:meth:`_read_all` of any pass. An inactive sphere (out of the scene) is not
        read: its rows are NaN, as a skipped one's."""
        n = len(spheres.uid)
        start = np.full((n, 3), np.nan)
        end = np.full((n, 3), np.nan)
        radius = np.full(n, np.nan)
        transforms = np.full(n, None, object)
        teleported = np.zeros(n, bool)
        if self._teleported:
            teleported = np.isin(spheres.uid, np.fromiter(self._teleported, np.int64))
        inactive = np.zeros(n, bool)
        if self._inactive:
            owners = [self._owner_of[nodepath] for nodepath in self._inactive]
            inactive = np.isin(spheres.owner, np.array(owners, np.int64))
        new = np.zeros(n, bool)
        if self._new:
            new = np.isin(spheres.uid, np.fromiter(self._new, np.int64))
        # Columns this pass changes: copies (see _read_all).
        spheres.world_radius = spheres.world_radius.copy()
        spheres.prev_transform = spheres.prev_transform.copy()
        rows = np.flatnonzero(~inactive)
        local = self._local(spheres)
        now = self._read_rows(spheres, rows, local=local)
        transforms[rows] = now.transform
        end[rows] = now.center
        radius[rows] = now.world_radius
        # Where the plugin left each sphere, its radius too: the start of a growth.
        radius0 = radius.copy()
        radius0[rows] = np.where(now.ok, spheres.world_radius[rows], now.world_radius)
        spheres.world_radius[rows[now.ok]] = now.world_radius[now.ok]
        # Teleported, or back from a non-finite transform: no sweep from where it was.
        fresh = now.ok & (teleported[rows] | spheres.bad[rows])
        start[rows[fresh]] = now.center[fresh]
        radius0[rows[fresh]] = now.world_radius[fresh]
        spheres.prev_transform[rows[fresh]] = now.transform[fresh]
        swept = np.flatnonzero(now.ok & ~fresh)
        if not self.respect_prev_transform:
            # A node's first pass starts where the game last placed it: Panda3D's previous
            # transform (setPos resets it, setFluidPos keeps it), not where it was built.
            first = new[rows[swept]]
            start[rows[swept[~first]]] = spheres.prev_center[rows[swept[~first]]]
            swept = swept[first]
        if len(swept):
            prev = self._read_rows(spheres, rows[swept], previous=True, local=local)
            spheres.prev_transform[rows[swept[prev.ok]]] = prev.transform[prev.ok]
            # A garbage previous transform: do not sweep from it.
            start[rows[swept]] = np.where(prev.ok[:, None], prev.center, now.center[swept])
            radius0[rows[swept]] = np.where(prev.ok, prev.world_radius, now.world_radius[swept])
            # A first pass takes only positions from the previous transforms: setPos
            # resets them, setScale and setHpr do not, so a spawn placed, then scaled or
            # turned, or placed under a parent turned after it was placed, must not be
            # swept from its unscaled, unturned self (see _shift_by_positions).
            fresh = new[rows[swept]] & prev.ok
            radius0[rows[swept[fresh]]] = now.world_radius[swept[fresh]]
            if local is not False:
                # A child of render centred on its node starts at its previous position,
                # read already: the walk would sum up just that.
                own = ~row_any(spheres.center[rows[swept]] != 0.0)
                if local is not True:
                    own &= local[rows[swept]]
                fresh &= ~own
            if fresh.any():
                k = swept[fresh]
                # From the collision node (a target's moves are its ancestors').
                nodes, render = spheres.nodepath, self._render
                shift = [_shift_by_positions(nodes[j], render) for j in rows[k].tolist()]
                with np.errstate(invalid="ignore"):  # a NaN node: skipped just below
                    start[rows[k]] = now.center[k] + np.array(shift)
        self._new.clear()

        finite = row_all(np.isfinite(end)) & np.isfinite(radius)
        for k in np.flatnonzero(~finite & ~spheres.bad & ~inactive).tolist():
            notify.warning(
                f"{spheres.nodepath[k]} has a non-finite transform; skipped until it is "
                "finite again"
            )
        spheres.bad = ~finite & ~inactive
        end[~finite] = np.nan
        start[~finite] = np.nan
        radius[~finite] = 0.0
        radius0 = np.where(finite & np.isfinite(radius0), radius0, radius)
        # Read (so finite, or NaN above) and finite where the sweep starts.
        valid = row_all(np.isfinite(end)) & row_all(np.isfinite(start))
        grew = bool((radius0 != radius).any())
        return _Frame(start, end, radius0, radius, transforms, valid, grew, local)

    def _world_plane(self, entry: _Plane) -> tuple[float, float, float, float] | None:
        """(a, b, c, d) of the plane in world space, unit normal; None if not finite."""
        ts = self._net(entry.nodepath)
        if ts is None:
            return None
        read = entry.read
        if read is not None and read[0].this == ts.this:
            return read[1]
        world = self._plane_under(entry.plane, ts)
        entry.read = (ts, world)
        return world

    @staticmethod
    def _plane_under(plane: LPlane, ts: TransformState) -> tuple[float, float, float, float] | None:
        """(a, b, c, d) of ``plane`` under ``ts``, unit normal; None if not finite."""
        try:
            a, b, c, d = plane * ts.getMat()
        except AssertionError:
            return None
        length = math.sqrt(a * a + b * b + c * c)
        if not (math.isfinite(length) and length > 0 and math.isfinite(d)):
            return None
        return (a / length, b / length, c / length, d / length)

    def _read_planes(self, planes: list[_Plane]) -> _PlaneFrame:
        """The planes with a finite transform, their (m, 3) normals and (m,) offsets at the
        start and end of the frame: the last pass's arrays again where the same planes read
        the same, to the bit (walls that never move cost no numpy call)."""
        live: list[_Plane] = []
        values = array("d")
        inactive = {self._owner_of[nodepath] for nodepath in self._inactive}
        for p in planes:
            if p.owner in inactive:
                continue
            cur = self._world_plane(p)
            if cur is None:
                if not p.bad:
                    notify.warning(
                        f"{p.nodepath} has a non-finite transform; plane skipped until it is "
                        "finite again"
                    )
                p.bad = True
                continue
            # Back from a garbage transform, or teleported: no sweep from where it was.
            if p.bad or p.uid in self._teleported or p.prev_world is None:
                p.prev_world = cur
            prev = p.prev_world
            # The plane's start offset measured along its current normal: exact for a
            # translating plane, an approximation for a rotating one.
            off0 = (prev[0] * cur[0] + prev[1] * cur[1] + prev[2] * cur[2]) * prev[3]
            values.extend((*cur, off0))
            p.bad = False
            p.prev_world = cur
            live.append(p)
        key = values.tobytes()
        last = self._plane_frame
        if last is not None and last.key == key and last.planes == live:
            return last
        columns = np.frombuffer(key, np.float64).reshape(-1, 5)
        m = len(live)
        normal, off0, off1 = columns[:, :3], columns[:, 4], columns[:, 3]
        mask = np.fromiter((p.into_mask for p in live), np.int64, m)
        group = np.fromiter((p.owner for p in live), np.int64, m)
        table = Planes(normal, off0, off1, mask, group) if m else None
        last = self._plane_frame = _PlaneFrame(live, normal, off0, off1, mask, group, key, table)
        return last

    def _write_back(
        self,
        spheres: SphereTable,
        frame: _Frame,
        result: _solver.PassResult,
        carried: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Move the nodes the solver moved (of a group carried by a body, the carrier's
        alone: see :meth:`_carried`); record where every sphere is left (in new columns:
        see :meth:`_read_all`)."""
        p1 = frame.end
        n = len(p1)  # the dynamic spheres; the static ones after them never move
        moved = result.moved[:n]
        if frame.grew:
            # A body stopped while its scale changed is rewound in scale too, moved or not.
            moved = moved | ((result.t_stop[:n] < 1.0) & (frame.radius0 != frame.radius))
        if carried is not None:
            # A group moved by any of its spheres is written through its carrier's rows,
            # one a group (the carried nodes go with it).
            group, lead = carried
            moved = lead & np.isin(group, group[moved])
            moved &= np.isfinite(frame.end).all(axis=1)
            rows = np.flatnonzero(moved)
            # One row a group: the largest correction of its carrier's, as _move's order.
            correction = result.end[:n] - p1
            rows = rows[np.argsort(-length(correction[rows]), kind="stable")]
            written = rows[np.unique(group[rows], return_index=True)[1]]
            # The group is where its earliest contact's collider was stopped (or deflected):
            # written through that collider where it is the carrier's (sharing a target);
            # a carried body of its own keeps its place on the carrier, which is moved by
            # its correction (turned back with the carrier where a rewind turned it), but
            # in a rewound group where the game moved it on the carrier (below).
            hits = result.hits
            solid = ~hits.sensor
            other = np.where(hits.kind[solid] == _solver.SPHERE, hits.b[solid], -1)
            ends = np.stack([hits.a[solid], other], axis=1).ravel()  # (in time order)
            touched = ends[(ends >= 0) & (ends < n)]
            touched = touched[np.isfinite(correction[touched]).all(axis=1)]
            first = touched[np.unique(group[touched], return_index=True)[1]]
            by = written.copy()
            if len(first):
                at = np.minimum(np.searchsorted(group[first], group[written]), len(first) - 1)
                found = group[first[at]] == group[written]
                by[found] = first[at[found]]
            written = np.where(lead[by], by, written)
            # A group stopped (a rewind, or a slide held, wedged or squeezed) is put back as
            # it was when it stopped: each node the game moved on its carrier that frame too
            # (a gun it turned), written after the carrier, which is written through its own
            # answer where such a body stopped it. Moving the carrier to keep the gun's end
            # turn would move it where nothing swept it, into a wall beside it. (The solver
            # swept the gun round its arc: where it stopped is on it.) A slide deflected
            # keeps the game's turns: its carried nodes keep their place, its carrier moved
            # by their correction (the solver's answers for the group differ by that alone).
            rewound = result.t_stop[written] < 1.0
            chains = self._chains(spheres, carried)
            stopped = written[rewound]
            put_back = self._moved_on_carriers(chains, group, stopped, result.t_stop[stopped])
            moved_on_carrier = [
                k for k, nodes in chains.items() if any(n in put_back for n in nodes)
            ]
            carried_by = (by != written) & ~np.isin(by, moved_on_carrier)
            if carried_by.any():
                end = result.end.copy()
                for w, b in zip(written[carried_by].tolist(), by[carried_by].tolist()):
                    end[w] = result.end[b] - self._turned_back(spheres, frame, result, w,
                                                               p1[b] - p1[w])  # fmt: skip
                result = result._replace(end=end)
            moved = np.zeros(n, bool)
            moved[written] = True
        else:
            chains, put_back, moved_on_carrier = {}, {}, []
        moved = np.flatnonzero(moved)
        # Every sphere read is left where it was read, but those of the nodes written.
        center, transform, valid = p1, frame.transforms, frame.valid
        if valid is not None:
            center = np.where(valid[:, None], p1, spheres.prev_center)
            transform = np.where(valid, transform, spheres.prev_transform)
        written_on_parent: dict[NodePath, tuple[NodePath, TransformState]] = {}
        if len(moved):
            order = self._move(spheres, frame, result, moved, written_on_parent)
            if put_back:
                # Below the carrier (written above): each node the game moved on it put back
                # as it was at the stop's instant, on its parent (so in any order).
                for node, (then, now, t) in put_back.items():
                    node.setTransform(_between(then, now, t))
                order = np.concatenate([order, moved_on_carrier]).astype(np.int64)
            # Spheres of a node just written are read again (Panda3D keeps float32, so
            # where a node ended up is not exactly result.end).
            again = order
            if carried is not None:
                again = np.flatnonzero(np.isin(carried[0], carried[0][order]))
            elif not spheres.one_per_owner:
                again = np.flatnonzero(isin_sorted(spheres.owner, unique(spheres.owner[order])))
            if valid is not None:
                again = again[valid[again]]
            now = self._read_rows(spheres, again, local=frame.local)
            center = center.copy() if center is p1 else center
            center[again] = now.center
            transform = transform.copy() if transform is frame.transforms else transform
            transform[again] = now.transform
            if now.scaled or spheres.world_radius is not spheres.radius:
                radius = spheres.world_radius.copy()
                radius[again] = np.where(now.ok, now.world_radius, radius[again])
                spheres.world_radius = radius
        spheres.prev_center = center
        spheres.prev_transform = transform
        written_on_parent.update(
            (node, (node.getParent(), node.getTransform()))
            for nodes in chains.values()
            for node in nodes
        )
        self._on_parent = written_on_parent

    @staticmethod
    def _chains(
        spheres: SphereTable, carried: tuple[np.ndarray, np.ndarray]
    ) -> dict[int, list[NodePath]]:
        """Per carried body (a row, one a node of its own), the nodes from its node up to
        its carrier's (that one left out), top down: the nodes the game may move on the
        carrier (a turret pivot, the gun's own node). Every pass, for every group a contact
        can stop (a rewind, or a slide held or squeezed)."""
        group, lead = carried
        response = spheres.response
        body = (response == _solver.REWIND) | (response == _solver.SLIDE)
        rows = np.flatnonzero(~lead & body)
        if not len(rows):
            return {}
        leads = np.flatnonzero(lead & body)
        carrier_of = dict(zip(group[leads].tolist(), leads.tolist()))
        movers = spheres.movers
        chains: dict[int, list[NodePath]] = {}
        seen: set[NodePath] = set()
        for k in rows.tolist():
            c = carrier_of.get(int(group[k]))
            if c is None or movers[k] in seen:
                continue
            seen.add(movers[k])
            top, node, chain = movers[c], movers[k], []
            while not node.isEmpty() and node != top:
                chain.append(node)
                node = node.getParent()
            if not node.isEmpty():
                chains[k] = chain[::-1]
        return chains

    def _moved_on_carriers(
        self,
        chains: dict[int, list[NodePath]],
        group: np.ndarray,
        carriers: np.ndarray,
        t_stop: np.ndarray,
    ) -> dict[NodePath, tuple[TransformState, TransformState, float]]:
        """The nodes of ``chains`` in the groups of ``carriers`` (rows a rewind stopped at
        ``t_stop``) that the game moved on their parents since the last pass: (that
        transform, this one, the group's stop time). Not a node with no record on the same
        parent (new, reparented, teleported: its move is a jump). With
        ``respect_prev_transform``, from Panda3D's previous transform, as the carrier
        (a setPos there is a jump, a setFluidPos swept)."""
        if not len(carriers) or not chains:
            return {}
        t_of = dict(zip(group[carriers].tolist(), t_stop.tolist()))
        moved: dict[NodePath, tuple[TransformState, TransformState, float]] = {}
        for k, chain in chains.items():
            t = t_of.get(int(group[k]))
            if t is None:
                continue
            for node in chain:
                record, now = self._on_parent.get(node), node.getTransform()
                if node in moved or record is None or record[0] != node.getParent():
                    continue
                then = node.getPrevTransform() if self.respect_prev_transform else record[1]
                # (Not a node whose transform is not finite, or was not: nothing is between.)
                if then != now and _finite(then) and _finite(now):
                    moved[node] = (then, now, t)
        return moved

    @staticmethod
    def _turned_back(
        spheres: SphereTable, frame: _Frame, result: _solver.PassResult, row: int, offset: Any
    ) -> np.ndarray:
        """(3,) ``offset`` (a vector at the end of the frame, fixed to sphere ``row``'s node)
        as it is when :meth:`_move` turns that node back to where it stopped (a rewind
        slerps it to its stop's time; otherwise it keeps its end turn)."""
        cur, prev, t = frame.transforms[row], spheres.prev_transform[row], result.t_stop[row]
        if cur is None or prev is None or t >= 1.0:
            return offset
        q0, q1 = prev.getQuat(), cur.getQuat()
        if q0.almostEqual(q1):
            return offset
        local = q1.conjugate().xform(LVector3(*offset))
        return np.array(_slerp(q0, q1, t).xform(local))

    def _move(
        self,
        spheres: SphereTable,
        frame: _Frame,
        result: _solver.PassResult,
        moved: np.ndarray,
        on_parent: dict[NodePath, tuple[NodePath, TransformState]],
    ) -> np.ndarray:
        """Write the nodes of spheres ``moved`` where the solver left them; returns the
        rows whose answer each node took, and records in ``on_parent`` where each node below
        another was left on its parent."""
        render = self._render
        movers = spheres.movers
        order = moved
        rows = order.tolist()
        nodes = [movers[k] for k in rows]
        at_top = [nodepath.getParent() == render for nodepath in nodes]
        # Nodes apart (one sphere each, each its own, children of render) are written in
        # any order. Otherwise the largest correction goes first: a node with several
        # spheres takes that one's answer, and a node moved by another's write (its child,
        # or the same target) lands where that one's answer puts it.
        if len(rows) > 1 and not (
            spheres.one_per_owner and all(at_top) and len(set(nodes)) == len(nodes)
        ):
            order = moved[np.argsort(-length(result.end[moved] - frame.end[moved]))]
            if not spheres.one_per_owner:
                _, first = np.unique(spheres.owner[order], return_index=True)
                order = order[np.sort(first)]
            top_of = dict(zip(rows, at_top))
            rows = order.tolist()
            nodes = [movers[k] for k in rows]
            at_top = [top_of[k] for k in rows]
        if spheres.centred:
            off_centre: Iterable[bool] = repeat(False)
            centers: Iterable[Any] = repeat(None)
        else:
            off_centre = row_any(spheres.center[order] != 0.0).tolist()
            centers = spheres.center[order].tolist()
        # A node below another that ends where it started the pass (stopped at its start,
        # or left less than a tenth of a float32 step to move: pressed into a face by the
        # game, held) is put back where it was on its parent, as last written: written
        # through a turned parent (a tilted table), its place on it rounds in float32, up
        # to a step deeper each frame it is pressed (a tester's pinball ball sank 1e-4 into
        # a plunger in 300 frames, 2.5e-3 into a wall on a table tilted 2 degrees in 2,000).
        stayed: Iterable[bool] = repeat(False)
        if not all(at_top):  # (most games: every body a child of render, no numpy call)
            start = frame.start[order]
            stayed = (
                length(result.end[order] - start)
                <= _STAYED_REL * np.maximum(1.0, np.abs(start).max(axis=1, initial=0.0))
            ).tolist()
        for cur, nodepath, top, prev, t, end, off, center, same in zip(
            frame.transforms[order].tolist(),
            nodes,
            at_top,
            spheres.prev_transform[order].tolist(),
            result.t_stop[order].tolist(),
            result.end[order].tolist(),
            off_centre,
            centers,
            stayed,
        ):
            if cur is None:
                continue
            quat = None
            scale = None
            turned = False
            if t < 1.0 and prev is not None:
                quat = cur.getQuat()
                q0 = prev.getQuat()
                if not q0.almostEqual(quat):
                    quat = _slerp(q0, quat, t)
                    nodepath.setQuat(render, quat)
                    turned = True
                s0, scale = prev.getScale(), cur.getScale()
                if s0 != scale:
                    # The solver held the radius where the body stopped: so is the scale.
                    scale = _scale_between(s0, scale, t)
                    nodepath.setScale(render, scale)
                    turned = True
            if same and not top and not off and (not turned or t == 0.0):
                parent = nodepath.getParent()
                was = self._on_parent.get(nodepath)
                if was is not None and was[0] == parent:
                    at = render.getRelativePoint(parent, was[1].getPos())
                    if max(abs(a - e) for a, e in zip(at, end)) <= _PLACED_REL * max(
                        1.0, *map(abs, end)
                    ):
                        # (Stopped at its start, turned or scaled back: all it was there.)
                        if turned:
                            nodepath.setTransform(was[1])
                        else:
                            nodepath.setFluidPos(was[1].getPos())
                        on_parent[nodepath] = (parent, nodepath.getTransform())
                        continue
            target = LPoint3(*end)
            if off:
                if quat is None:
                    quat = cur.getQuat()
                if scale is None:
                    scale = cur.getScale()
                target = target - quat.xform(LVector3(*(c * k_ for c, k_ in zip(center, scale))))
            if not turned and cur.hprGiven() and top:
                # For a transform given as pos/hpr/scale (the usual), the same transform and
                # previous transform, bit for bit, at half the cost of the relative call;
                # that one rebuilds quaternion and matrix transforms from components.
                nodepath.setFluidPos(target)
            else:
                nodepath.setFluidPos(render, target)
                if not top:
                    on_parent[nodepath] = (nodepath.getParent(), nodepath.getTransform())
        return order

    def _bodies_of(
        self, spheres: SphereTable, statics: SphereTable, near: np.ndarray, planes: list[_Plane]
    ) -> _Bodies:
        """The pass's :class:`_Bodies`: the last pass's again where the same bodies take part
        (no static sphere near anything, the same spheres, planes and piece nodes)."""
        pieces = self._pieces.columns()
        key = (spheres, pieces, *planes)
        last = self._bodies
        if (
            not len(near)
            and last is not None
            and last.version == spheres.version
            and len(last.key) == len(key)
            and all(map(operator.is_, last.key, key))
        ):
            return last
        bodies = _Bodies.of(spheres, statics, near, planes, pieces, self._pieces.records())
        self._bodies = None if len(near) else bodies._replace(key=key, version=spheres.version)
        return bodies

    def _nodes_of(
        self, scene: tuple[SphereTable, SphereTable, np.ndarray, list[_Plane]], rows: np.ndarray
    ) -> list[tuple[NodePath, NodePath]]:
        """(the plugin's own NodePath, the game's) of the nodes of body ``rows`` of a pass,
        each once."""
        if not len(rows):
            return []
        records = self._bodies_of(*scene).records
        nodes: dict[NodePath, NodePath] = {}
        for row in rows.tolist():
            _owner, own, handle, _tangible, _solid = records[row]
            nodes.setdefault(own, handle)
        return list(nodes.items())

    @property
    def squeezed_nodes(self) -> list[NodePath]:
        """The nodes of the bodies the last pass squeezed (see :attr:`squeezed`), each
        once, as a contact names them: the game's NodePath, or where the game has removed
        it since (a handler), one to the same node."""
        return [_handed(handle, own) for own, handle in self._squeezed]

    def _touches(
        self,
        scene: tuple[SphereTable, SphereTable, np.ndarray, list[_Plane]],
        radius: np.ndarray,
        hits: _solver.Hits,
        radius0: np.ndarray | None,
        t_stop: np.ndarray,
    ) -> list[tuple[tuple[int, int], Contact, Contact | None]]:
        """One (key, enter contact, exit contact or None) per allowed direction of a hit;
        for each (from node, into node) only the earliest (hits come in time order).

        ``scene`` is the spheres, the static ones, the rows of those ``near`` the pass
        handed to the solver, and the planes (as for :meth:`_Bodies.of`); ``radius`` and
        ``radius0`` (n,) hold the solver's spheres' world radii at the end and the start of
        this pass (``radius0`` None: none changed), ``t_stop`` (n,) when the solver stopped
        each (its growth too).
        """
        k = len(hits.t)
        if k == 0:
            return []
        bodies = self._bodies_of(*scene)
        n = len(radius)
        a = hits.a
        # Body rows: a plane's after the spheres, a piece node's after the planes.
        b = np.where(hits.kind == _solver.PLANE, n + hits.b, hits.b)
        piece = None
        if len(self._pieces):
            piece = hits.kind > _solver.PLANE
            if not piece.any():
                piece = None
        on_pieces = None
        if piece is not None:
            # Pieces: the row of their node, after the planes; and per hit on one, its
            # node's solids, which of them, the feature and the part (see _contacts_at).
            solids = np.full(k, None, object)
            solid_of = np.zeros(k, np.int64)
            part_of = np.zeros(k, np.int64)
            after = len(bodies.records) - len(self._pieces)
            for code in np.unique(hits.kind[piece]).tolist():
                rows = np.flatnonzero(hits.kind == code)
                node, solid, part = self._pieces.locate(code, hits.b[rows])
                b[rows] = after + node
                solids[rows] = self._pieces.columns()["solids"][node]
                solid_of[rows] = solid
                part_of[rows] = part
            named = np.full(k, None, object)
            named[piece] = _FEATURE_NAMES.take(hits.feature[piece])
            on_pieces = (solids, solid_of, named, part_of)
        # Direction 2 * row is a -> b, 2 * row + 1 is b -> a (a plane's or a piece's from
        # mask is 0, so it is never the from side).
        ab = np.array((a, b))
        direction = np.flatnonzero((bodies.from_mask[ab] & bodies.into_mask[ab[::-1]]).T)
        dirs = direction.tolist()
        if not dirs:
            return []
        # Body rows a0 b0 a1 b1 ...: direction d is from row d into row d ^ 1. (Flat: a
        # list per hit would be k objects more for the garbage collector to count.)
        body = ab.T.ravel().tolist()
        frm = [body[d] for d in dirs]
        into = [body[d ^ 1] for d in dirs]
        records = bodies.records
        keys = list(zip([records[f][0] for f in frm], [records[i][0] for i in into]))
        # Each pair's earliest hit (its first direction: hits come in time order). A dict
        # keeps one value per key, the last one set: set in reverse, the first.
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
        if len(first) < len(keys):
            keep = sorted(first.values())
            direction = direction[keep]
            frm, into, keys = ([x[i] for i in keep] for x in (frm, into, keys))
        row = direction >> 1
        # Radii change linearly in t until a body stops (as the solver's paths say).
        if radius0 is None:
            radius_a = radius[a]

            def radius_of_a(t: np.ndarray) -> np.ndarray:
                return radius_a

        else:
            grow = radius - radius0

            def radius_of_a(t: np.ndarray) -> np.ndarray:
                return radius[a] - grow[a] + np.minimum(t, t_stop[a]) * grow[a]

        enter = self._contacts_at(
            row, direction, frm, into, bodies, n, radius_of_a(hits.t), hits.speed, hits.t,
            hits.point, hits.normal, hits.pos_a, hits.pos_b, on_pieces,
        )  # fmt: skip
        leave: list[Contact | None] = [None] * len(keys)
        if bodies.sensors and hits.sensor.any():
            exits = np.flatnonzero(~np.isnan(hits.t_exit[row]))
            if len(exits):
                listed = exits.tolist()
                built = self._contacts_at(
                    row[exits], direction[exits], [frm[i] for i in listed],
                    [into[i] for i in listed], bodies, n,
                    radius_of_a(np.nan_to_num(hits.t_exit)), hits.speed, hits.t_exit,
                    hits.exit_point, hits.exit_normal, hits.exit_pos_a, hits.exit_pos_b,
                    on_pieces,
                )  # fmt: skip
                for i, contact in zip(listed, built):
                    leave[i] = contact
        return list(zip(keys, enter, leave))

    def _contacts_at(
        self,
        row: np.ndarray,
        direction: np.ndarray,
        frm: list[int],
        into: list[int],
        bodies: _Bodies,
        n: int,
        radius_a: np.ndarray,
        speed: np.ndarray,
        t: np.ndarray,
        point: np.ndarray,
        normal: np.ndarray,
        pos_a: np.ndarray,
        pos_b: np.ndarray,
        on_pieces: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> list[Contact]:
        """The Contacts of m directions of solver hits, at one moment of the hits: their
        hit ``row`` (m,), ``direction`` (m,) (2 row for a -> b, 2 row + 1 for b -> a) and
        ``frm``, ``into`` body rows; per hit (k,) times ``t`` and (k, 3) ``point``,
        ``normal``, ``pos_a``, ``pos_b`` (entry or exit), ``radius_a`` (k,) its sphere a's
        radius at that moment (it may grow), ``speed`` (k,) its approach speed per frame.
        Body rows from ``n`` on are planes and pieces. ``on_pieces``: per hit (k,), for
        those on a level piece (always the into side), its node's solids, which of them,
        the feature's name and the part (None, 0, None, 0 for the others; None: no hit is).

        Hits are stated from sphere a's side (normal out of b); for the direction b -> a
        the point lies on a's surface.
        """
        dt = self._clock.getDt()
        start = self._clock.getFrameTime() - dt
        # Per hit the point, normal, from and into centres, each of a -> b then of b -> a;
        # picked by direction, all four in one gather: (4, m, 3).
        vectors = np.array(
            ((point, pos_a - (normal.T * radius_a).T), (normal, -normal), (pos_a, pos_b),
             (pos_b, pos_a)),
        )[:, direction & 1, row]  # fmt: skip
        # Rounded to float32 here, as LPoint3 would (tolist() hands them on as exact
        # doubles); beyond float32's range that is inf, which the check below refuses as
        # Contact() would.
        with np.errstate(over="ignore"):
            vectors = vectors.astype(np.float32)
        # Per contact its t, clock time and approach speed (units a second).
        scalars = np.array((t, start + t * dt, speed * (1.0 / dt if dt > 0 else 0.0)))[:, row]
        # (min and max are nan where any is.)
        (t0, time0, speed0), (t1, time1, speed1) = (scalars.min(1).tolist(),
                                                    scalars.max(1).tolist())  # fmt: skip
        into_plane = [i for i, body in enumerate(into) if body >= n]
        finite = np.isfinite(vectors)
        if into_plane:
            finite[3, into_plane] = True  # no into centre
        records = bodies.records
        if not (
            finite.all()
            and 0.0 <= t0
            and t1 <= 1.0
            and math.isfinite(time0)
            and math.isfinite(time1)
            and 0.0 <= speed0
            and speed1 < math.inf
        ):
            # The solver should never produce this: the checking constructor says what.
            t, time, approach = scalars
            point, normal, from_pos, into_pos = vectors.astype(np.float64)
            return [
                Contact(
                    t=t[i],
                    time=time[i],
                    from_np=records[frm[i]][1],
                    into_np=records[into[i]][1],
                    point=point[i],
                    normal=normal[i],
                    approach_speed=approach[i],
                    from_pos=from_pos[i],
                    into_pos=None if into[i] >= n else into_pos[i],
                    from_tangible=records[frm[i]][3],
                    into_tangible=records[into[i]][3],
                    world=self._render,
                )
                for i in range(len(t))
            ]
        points, normals, froms, intos = vectors.tolist()
        ts, times, speeds = scalars.tolist()
        _, from_np, from_handle, from_tangible, from_solid = zip(*[records[f] for f in frm])
        _, into_np, into_handle, into_tangible, into_solid = zip(*[records[i] for i in into])
        into_pos: list[Any] = list(map(tuple, intos))
        for i in into_plane:
            into_pos[i] = None
        # Per contact (Contacts are Python objects), from columns gathered once: a numpy
        # scalar read per contact and column cost as much as the rest of the pass at 1,000
        # movers on a level.
        solids: Iterable[Any] = repeat(None)
        solid: Iterable[int] = repeat(0)
        feature: Iterable[Any] = repeat(None)
        part: Iterable[int] = repeat(0)
        if on_pieces is not None:
            solids, solid, feature, part = (column[row].tolist() for column in on_pieces)
        return list(
            map(
                Contact._unchecked,
                ts,
                times,
                from_np,
                into_np,
                map(tuple, points),
                map(tuple, normals),
                speeds,
                map(tuple, froms),
                into_pos,
                from_tangible,
                into_tangible,
                repeat(self._render),
                from_handle,
                into_handle,
                into_solid,
                from_solid,
                solids,
                solid,
                feature,
                part,
            )
        )

    # ------------------------------------------------------------------ scene queries
    def ray_test_closest(
        self, from_pos: Any, to_pos: Any, *, mask: int | BitMask32 = ALL_BITS, sensors: bool = True
    ) -> Contact | None:
        """The first collider a ray from ``from_pos`` to ``to_pos`` (world space) hits.

        The world is the one the last pass left (bodies where they ended, kinematic pieces
        at the transform it read, static geometry, planes); a collider registered since is
        seen from the next pass on. A collider is hit if ``mask & into_mask`` is non-zero
        (``mask`` is the from-mask), and, with ``sensors=False``, only if it is tangible. A
        one-sided polygon is hit from its front only. Returns the :class:`Contact` the
        events use (``getT()`` the fraction of the way, ``getSurfacePoint(np)``,
        ``getSurfaceNormal(np)``, ``getIntoNodePath()``, ``getIntoSolid()``; the from node
        empty), or None.
        """
        self._check_alive()
        return self._queries.closest(0.0, from_pos, to_pos, mask, sensors)

    def ray_test_all(
        self, from_pos: Any, to_pos: Any, *, mask: int | BitMask32 = ALL_BITS, sensors: bool = True
    ) -> list[Contact]:
        """Every collider solid the ray hits, its first hit of each, sorted by ``t`` (see
        :meth:`ray_test_closest`)."""
        self._check_alive()
        return self._queries.all(from_pos, to_pos, mask, sensors)

    def sweep_test_closest(
        self,
        radius: float,
        from_pos: Any,
        to_pos: Any,
        *,
        mask: int | BitMask32 = ALL_BITS,
        sensors: bool = True,
    ) -> Contact | None:
        """The first collider a sphere of ``radius`` moved from ``from_pos`` to ``to_pos``
        touches while approaching it (see :meth:`ray_test_closest`); ``getContactPos(np)``
        is the sphere's centre then. A sphere starting inside or touching a solid hits it
        at ``t`` 0 if it moves deeper, and not at all if it moves out."""
        self._check_alive()
        return self._queries.closest(radius, from_pos, to_pos, mask, sensors)

    def ray_test_batch(
        self, from_pos: Any, to_pos: Any, *, mask: int | BitMask32 = ALL_BITS, sensors: bool = True
    ) -> QueryResult:
        """:meth:`ray_test_closest` of k rays in one call: ``from_pos``, ``to_pos`` (k, 3).
        Returns a :class:`QueryResult` of arrays (``t`` inf, ``collider`` -1 where none)."""
        self._check_alive()
        return self._queries.batch(0.0, from_pos, to_pos, mask, sensors)

    def sweep_test_batch(
        self,
        radius: Any,
        from_pos: Any,
        to_pos: Any,
        *,
        mask: int | BitMask32 = ALL_BITS,
        sensors: bool = True,
    ) -> QueryResult:
        """:meth:`sweep_test_closest` of k spheres in one call: ``radius`` a scalar or (k,),
        ``from_pos``, ``to_pos`` (k, 3)."""
        self._check_alive()
        return self._queries.batch(radius, from_pos, to_pos, mask, sensors)

    def _alive(self, owner: int) -> bool:
        """Whether node ``owner`` is still registered."""
        return owner in self._node_of and owner not in self._forgotten

    def _live(self) -> np.ndarray:
        """(k,) int64 every node still registered."""
        return np.fromiter(self._node_of.keys() - self._forgotten, np.int64)

    # ------------------------------------------------------------------ debug, teardown
    def show_debug(self, parent: NodePath | None = None) -> None:
        """Draw wire spheres, this frame's swept paths and contacts (normals), each pass."""
        self._check_alive()
        from ._debug import DebugView

        if parent is not None and (not isinstance(parent, NodePath) or parent.isEmpty()):
            raise ValueError(f"show_debug's parent must be a NodePath, got {parent!r}")
        if self._debug is None:
            self._debug = DebugView(parent if parent is not None else self._render)

    def hide_debug(self) -> None:
        if self._debug is not None:
            self._debug.destroy()
            self._debug = None

    def destroy(self) -> None:
        """Send out events for every open contact, remove the task and drop all state."""
        if self._destroyed:
            return
        self._destroyed = True
        self._taskmgr.remove(self._task)
        self.hide_debug()
        events = self._pairs.close_all()
        if self._unsent_in:  # destroyed by a handler: pairs whose "in" was never sent
            events = [e for e in events if self._key(e[1]) not in self._unsent_in]
        self._state = _State()
        self._by_node.clear()
        self._dynamic.clear()
        self._statics = _StaticCache()
        self._rays = RayNodes()
        self._contacts = []
        self._on_parent = {}
        self._squeezed = []
        self._queries.forget()
        send_events(self._messenger, self._patterns, events)

    def _check_alive(self) -> None:
        if self._destroyed:
            raise RuntimeError("this ContinuousCollision was destroyed; create a new one")


def _finite(ts: TransformState) -> bool:
    """Whether a transform's position, rotation, scale and shear are all finite."""
    return all(
        map(math.isfinite, (*ts.getPos(), *ts.getQuat(), *ts.getScale(), *ts.getShear()))
    )


def _between(a: TransformState, b: TransformState, t: float) -> TransformState:
    """The transform a fraction t of the way from a to b: position and shear linearly,
    scale by :func:`_scale_between`, rotation by quaternion slerp."""
    return TransformState.makePosQuatScaleShear(
        a.getPos() + (b.getPos() - a.getPos()) * t,
        _slerp(a.getQuat(), b.getQuat(), t),
        _scale_between(a.getScale(), b.getScale(), t),
        a.getShear() + (b.getShear() - a.getShear()) * t,
    )


def _scale_between(s0: Any, s1: Any, t: float) -> LVecBase3:
    """The scale a fraction t of the way from s0 to s1: each axis's size between its two,
    mirrored as s1 (a sprite flipped with setSx(-1) this frame is never scaled through 0)."""
    return LVecBase3(*(math.copysign(abs(a) + (abs(b) - abs(a)) * t, b) for a, b in zip(s0, s1)))


def _slerp(q0: LQuaternion, q1: LQuaternion, t: float) -> LQuaternion:
    """Spherical interpolation along the shorter arc."""
    a = np.array([q0.getR(), q0.getI(), q0.getJ(), q0.getK()])
    b = np.array([q1.getR(), q1.getI(), q1.getJ(), q1.getK()])
    dot = float(np.dot(a, b))
    if dot < 0:
        b, dot = -b, -dot
    if dot > 0.9995:
        q = a + t * (b - a)
    else:
        theta = math.acos(dot)
        q = (math.sin((1 - t) * theta) * a + math.sin(t * theta) * b) / math.sin(theta)
    q /= np.linalg.norm(q)
    return LQuaternion(*q)


def _on_target(solid: CollisionSphere, to_target: TransformState) -> tuple[tuple, float]:
    """The centre and radius on its target of a sphere ``solid`` whose collision node lies
    at ``to_target`` relative to the target (its largest scale grows the radius)."""
    center = tuple(to_target.getMat().xformPoint(solid.getCenter()))
    return center, solid.getRadius() * max(abs(c) for c in to_target.getScale())


def _shift_by_positions(nodepath: NodePath, render: NodePath) -> tuple[float, float, float]:
    """How far (world, relative to ``render``) the node's previous positions put it from
    where it is: the node and each ancestor below ``render`` at its previous position
    (Panda3D's previous transform), every rotation and scale as it is now. NaN where a
    transform is not finite.

    A position the game set with setFluidPos since the node was placed (at any level) is
    swept; a turn or a scale is not: Panda3D's previous transform keeps the orientation
    from before setHpr and setScale, which a level turned as it loads (its bodies placed,
    then the whole rotated) must not read as motion. A node not under ``render`` (a
    ``render`` that is not the top of its graph) moves relative to it by its own
    ancestors' moves less render's: those of their common ancestors cancel."""
    try:
        x, y, z, under = _moves_up(nodepath, render)
        if not under:
            rx, ry, rz, _ = _moves_up(render, NodePath())
            x, y, z = x - rx, y - ry, z - rz
    except AssertionError:  # a NaN in the chain: skipped, and warned, by the caller
        return (math.nan,) * 3
    return x, y, z


def _moves_up(node: NodePath, render: NodePath) -> tuple[float, float, float, bool]:
    """The sum, in ``render``'s frame, of the position changes (previous less current) of
    ``node`` and its ancestors up to ``render`` (or the top), and whether ``render`` was
    met. Raises AssertionError as Panda3D does on a transform it cannot compose."""
    x = y = z = 0.0
    while not node.isEmpty():
        if node == render:
            return x, y, z, True
        parent = node.getParent()
        # float64 differences of the float32 positions: exact.
        (px, py, pz), (nx, ny, nz) = node.getPrevTransform().getPos(), node.getPos()
        dx, dy, dz = px - nx, py - ny, pz - nz
        if dx or dy or dz:
            if not (parent.isEmpty() or parent == render):
                # Into render's frame by the parent's matrix (row vectors), in float64:
                # under an unturned, unscaled parent, exactly the same difference.
                m = parent.getMat(render)
                (a, b, c), (d, e, f), (g, h, i) = m.getRow3(0), m.getRow3(1), m.getRow3(2)
                dx, dy, dz = (dx * a + dy * d + dz * g, dx * b + dy * e + dz * h,
                              dx * c + dy * f + dz * i)  # fmt: skip
            x, y, z = x + dx, y + dy, z + dz
        node = parent
    return x, y, z, False


def _objects(values: list[Any]) -> np.ndarray:
    """(m,) object array of ``values`` (np.array would unpack any that look like sequences)."""
    return np.fromiter(values, object, len(values))


def _float32s(array: Any, values: Iterable[Any], shape: tuple[int, ...]) -> np.ndarray:
    """The float32 components of Panda3D ``values`` (vectors, matrices), pushed into a new
    Panda3D ``array`` type (a PTA of their type), as an array of ``shape``.

    Panda3D 1.10's vectors have no buffer protocol, and reading their components one by one
    from Python costs ~0.8 us a vector; pushed into a PTA_LVecBase3f (which has one) they
    are copied in C++ for almost nothing (measured 0.22 us a vector, getPos included).
    """
    pta = array()
    deque(map(pta.pushBack, values), maxlen=0)
    return np.frombuffer(pta, np.float32).reshape(shape)


def _vec3s(vectors: Iterable[Any], m: int) -> np.ndarray:
    """(m, 3) float64 array of m Panda3D float32 vectors (see :func:`_float32s`)."""
    return _float32s(PTA_LVecBase3f, vectors, (m, 3)).astype(np.float64)


def _vec4s(vectors: Iterable[Any], m: int) -> np.ndarray:
    """(m, 4) float64 array of m Panda3D float32 4-vectors (quaternions: r, i, j, k)."""
    return _float32s(PTA_LVecBase4f, vectors, (m, 4)).astype(np.float64)


def _mat4s(matrices: Iterable[Any], m: int) -> np.ndarray:
    """(m, 4, 4) float32 array of m Panda3D matrices (row-vector convention, as stored)."""
    return _float32s(PTA_LMatrix4f, matrices, (m, 4, 4))


def _widened(part: np.ndarray, rows: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """A copy of ``whole`` with its ``rows`` set to ``part``."""
    whole = whole.copy()
    whole[rows] = part
    return whole


def _turns(spheres: SphereTable, frame: _Frame) -> _solver.Turns | None:
    """The pass's bodies that go round arcs: rewound and sliding spheres off their node's
    origin whose node turned since the last pass (its motion, from the transforms read, is
    their frame); None where there are none (most games: spheres centred on their nodes).
    A kinematic sphere keeps its chord: one that a body rode round its arc carried the body
    round with it, glued (a reviewer's paddles squeezed their balls in 9 frames of 10)."""
    if spheres.centred:
        return None
    prev, cur = spheres.prev_transform, frame.transforms
    body = (spheres.response == _solver.REWIND) | (spheres.response == _solver.SLIDE)
    rows = np.flatnonzero(row_any(spheres.center != 0.0) & body).tolist()
    # (Panda3D keeps one TransformState a transform: the same node not moved, the same one.)
    moved = [k for k in rows if prev[k] is not None and cur[k] is not None and prev[k] != cur[k]]
    if not moved:
        return None
    q0 = _vec4s([prev[k].getQuat() for k in moved], len(moved))
    q1 = _vec4s([cur[k].getQuat() for k in moved], len(moved))
    turned = np.flatnonzero(row_any(q0 != q1))
    if not len(turned):
        return None
    rows = np.array(moved)[turned]
    m = len(rows)
    pos0 = _vec3s([prev[k].getPos() for k in rows.tolist()], m)
    pos1 = _vec3s([cur[k].getPos() for k in rows.tolist()], m)
    frames = Frames(q0[turned], pos0, q1[turned], pos1)
    frame = np.full(len(spheres.uid), -1, np.int64)
    frame[rows] = np.arange(m)
    return _solver.Turns(frames, frame)


def _read(
    nodepaths: list[NodePath],
    get: Any,
    render: NodePath,
    radius: np.ndarray,
    center: np.ndarray | None,
    local: bool | np.ndarray = False,
) -> tuple[list[TransformState], np.ndarray, np.ndarray, bool] | None:
    """The transforms of m nodes relative to ``render`` (``get`` is NodePath.getTransform
    or NodePath.getPrevTransform; ``local`` (m,) the nodes read by their own, children of
    render: see ContinuousCollision._local) and :func:`_centers` under them, and whether
    any is scaled; None where Panda3D asserts (a NaN somewhere in a chain)."""
    try:
        if local is True:
            ts = list(map(get, nodepaths))
        elif local is False:
            ts = list(map(get, nodepaths, repeat(render)))
        else:
            own, far = np.flatnonzero(local).tolist(), np.flatnonzero(~local).tolist()
            read = np.empty(len(nodepaths), object)
            read[own] = _objects(list(map(get, [nodepaths[i] for i in own])))
            read[far] = _objects(list(map(get, [nodepaths[i] for i in far], repeat(render))))
            ts = read.tolist()
        world, world_radius = _centers(ts, radius, center)
    except AssertionError:
        return None
    return ts, world, world_radius, world_radius is not radius


def _centers(
    transforms: list[TransformState], radius: np.ndarray, center: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """World centres (m, 3) and radii (m,) of m spheres of local ``radius`` (m,) around
    local ``center`` (m, 3; None where all are zero) under ``transforms``: ``radius``
    itself where none is scaled. Raises AssertionError as Panda3D does on a transform it
    cannot decompose."""
    m = len(transforms)
    world = _vec3s(map(TransformState.getPos, transforms), m)
    unscaled = all(map(TransformState.hasIdentityScale, transforms))
    if unscaled and center is None:
        return world, radius
    # inf and NaN are expected here (a broken node): the caller checks, quietly.
    with np.errstate(invalid="ignore", over="ignore"):
        if not unscaled:
            scale = np.ones(m)
            scaled = np.flatnonzero(
                ~np.fromiter(map(TransformState.hasIdentityScale, transforms), bool, m)
            )
            s = np.abs(
                _vec3s(map(TransformState.getScale, [transforms[i] for i in scaled]), len(scaled))
            )
            # As Python's max(): a NaN component after the first is passed over.
            largest = s[:, 0]
            for j in (1, 2):
                largest = np.where(s[:, j] > largest, s[:, j], largest)
            scale[scaled] = largest
            radius = radius * scale
        off = _NO_ROWS if center is None else np.flatnonzero(row_any(center != 0.0))
        if len(off):
            mat = _mat4s(map(TransformState.getMat, [transforms[i] for i in off]), len(off))
            c = center[off].astype(np.float32)  # type: ignore[index]
            # xformPoint's float32 sums in C order; measured equal to Panda3D's own result
            # for 94% of random transforms, within 1 ulp for the rest (its compiled
            # arithmetic order could not be matched from numpy).
            world[off] = (
                (c[:, 0:1] * mat[:, 0, :3] + c[:, 1:2] * mat[:, 1, :3]) + c[:, 2:3] * mat[:, 2, :3]
            ) + mat[:, 3, :3]
    return world, radius
