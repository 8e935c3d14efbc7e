"""The argument of every collision event: one contact between a from object and an into object.

A :class:`Contact` is what a game's handler receives where Panda3D's CollisionHandlerEvent
would have passed a ``CollisionEntry``, and it answers to the same getters (camelCase and
snake_case), so existing handlers keep working. Everything is stored in world space (the
coordinates of :attr:`Contact.world`, usually ``render``) and converted on request, as
``CollisionEntry.getSurfacePoint(np)`` does.

Unlike a discrete traverser the contact is found at the moment of first touch, so nothing
has penetrated: the interior point is the surface point.

Examples
--------
>>> from panda3d.core import NodePath, LPoint3, LVector3
>>> render = NodePath("render")
>>> ball, wall = render.attach_new_node("ball"), render.attach_new_node("wall")
>>> c = Contact(t=0.25, time=10.0625, from_np=ball, into_np=wall, point=(0, 0, 0),
...             normal=(0, 0, 1), approach_speed=4.0, from_pos=(0, 0, 1), into_pos=None,
...             from_tangible=True, into_tangible=True, world=render)
>>> c.getIntoNodePath().get_name(), c.getT(), c.getContactPos(wall)
('wall', 0.25, LPoint3f(0, 0, 1))
>>> Contact(t=1.5, time=0.0, from_np=ball, into_np=wall, point=(0, 0, 0), normal=(0, 0, 1),
...         approach_speed=0.0, from_pos=(0, 0, 1), into_pos=None, from_tangible=True,
...         into_tangible=True, world=render)
Traceback (most recent call last):
    ...
ValueError: t must be a finite number in [0, 1], got 1.5
"""

from __future__ import annotations

import math
from typing import Any

from panda3d.core import LPoint3, LVecBase3, LVector3, NodePath, PandaNode

__all__ = ["Contact"]

# A world-space vector: three floats already rounded to float32.
_Vec3 = tuple[float, float, float]


def _check_np(name: str, value: Any) -> NodePath:
    if not isinstance(value, NodePath) or value.is_empty():
        raise ValueError(f"{name} must be a non-empty NodePath, got {value!r}")
    return value


def _handed(handle: NodePath, own: NodePath) -> NodePath:
    """The game's own NodePath of a node, or once the game has emptied it (removeNode()), a
    new NodePath to the node, as CollisionEntry's getters return: never ``own`` itself, so a
    handler's removeNode() cannot empty the copy the plugin keeps."""
    return NodePath(own) if handle.is_empty() else handle


def _real(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None


def _vec3(name: str, value: Any) -> _Vec3:
    """Three finite numbers, rounded to float32 as Panda3D's LPoint3 / LVector3 store them."""
    try:
        x, y, z = value
        out = tuple(LVecBase3(float(x), float(y), float(z)))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of 3 finite numbers, got {value!r}") from None
    if not (math.isfinite(out[0]) and math.isfinite(out[1]) and math.isfinite(out[2])):
        raise ValueError(f"{name} must be a sequence of 3 finite numbers, got {value!r}")
    return out


class Contact:
    """One contact between a from object and an into object, at its time of impact.

    Parameters (keyword-only)
    -------------------------
    t : float
        Time of impact as a fraction of the frame, in [0, 1].
    time : float
        Clock time of the impact within the frame (seconds).
    from_np, into_np : NodePath
        The moving (from) object and the object it hit (into).
    point : (3,) float
        World-space contact point, on the into surface.
    normal : (3,) float
        World-space unit normal of the into surface at ``point``, pointing out of it toward
        the from object.
    approach_speed : float
        Relative speed along the normal at impact, units per second, >= 0.
    from_pos : (3,) float
        World-space centre of the from sphere at impact.
    into_pos : (3,) float or None
        World-space centre of the into sphere at impact; None when the into shape is a plane.
    from_tangible, into_tangible : bool
        False for sensors (intangible: reported, never pushed).
    world : NodePath
        The root the world coordinates are relative to, usually ``render``.

    Vector attributes are rounded to float32 on the way in, like ``CollisionEntry``'s, and
    handed out as new Panda3D ``LPoint3`` / ``LVector3``, so a Contact never changes after
    construction. (They are kept as tuples: the component builds thousands of Contacts a
    frame, and most of their vectors are never asked for.)
    """

    __slots__ = (
        "_t",
        "_time",
        "_from_np",
        "_into_np",
        "_from_handle",
        "_into_handle",
        "_point",
        "_normal",
        "_approach_speed",
        "_from_pos",
        "_into_pos",
        "_from_tangible",
        "_into_tangible",
        "_world",
        "_into_solid",
        "_solids",
        "_solid_index",
        "_from_solid",
        "_feature",
        "_part",
    )

    def __init__(
        self,
        *,
        t: float,
        time: float,
        from_np: NodePath,
        into_np: NodePath,
        point: Any,
        normal: Any,
        approach_speed: float,
        from_pos: Any,
        into_pos: Any | None,
        from_tangible: bool,
        into_tangible: bool,
        world: NodePath,
    ) -> None:
        t = _real("t", t)
        if not 0.0 <= t <= 1.0:  # also rejects nan
            raise ValueError(f"t must be a finite number in [0, 1], got {t}")
        time = _real("time", time)
        if not math.isfinite(time):
            raise ValueError(f"time must be a finite number, got {time}")
        approach_speed = _real("approach_speed", approach_speed)
        if not (math.isfinite(approach_speed) and approach_speed >= 0.0):
            raise ValueError(f"approach_speed must be finite and >= 0, got {approach_speed}")
        self._t = t
        self._time = time
        self._from_np = NodePath(_check_np("from_np", from_np))
        self._into_np = NodePath(_check_np("into_np", into_np))
        self._from_handle = from_np
        self._into_handle = into_np
        self._point = _vec3("point", point)
        self._normal = _vec3("normal", normal)
        self._approach_speed = approach_speed
        self._from_pos = _vec3("from_pos", from_pos)
        self._into_pos = None if into_pos is None else _vec3("into_pos", into_pos)
        self._from_tangible = bool(from_tangible)
        self._into_tangible = bool(into_tangible)
        self._world = _check_np("world", world)
        self._into_solid = None
        self._solids = None
        self._solid_index = 0
        self._from_solid = None
        self._feature = None
        self._part = 0

    @classmethod
    def _unchecked(
        cls,
        t: float,
        time: float,
        from_np: NodePath,
        into_np: NodePath,
        point: _Vec3,
        normal: _Vec3,
        approach_speed: float,
        from_pos: _Vec3,
        into_pos: _Vec3 | None,
        from_tangible: bool,
        into_tangible: bool,
        world: NodePath,
        from_handle: NodePath,
        into_handle: NodePath,
        into_solid: Any = None,
        from_solid: Any = None,
        solids: list[Any] | None = None,
        solid_index: int = 0,
        feature: str | None = None,
        part: int = 0,
    ) -> Contact:
        """A Contact from values that already pass every check of ``__init__``, vectors as
        tuples of floats already rounded to float32 (internal: the component checks a whole
        frame's contacts with numpy at once, and the checks here would cost more than the
        rest of building one). ``from_np`` and ``into_np`` are the component's own copies,
        never handed out; ``from_handle`` and ``into_handle`` the game's NodePaths.

        ``solids``, for a contact with a level piece: its node's solids, of which the one
        touched (``solid_index``) is its into solid, looked up when asked for (a pass's
        contacts with a level would otherwise each reach into one of its thousands of
        solids, far apart in memory, and most are never asked for)."""
        self = cls.__new__(cls)
        self._t = t
        self._time = time
        self._from_np = from_np
        self._into_np = into_np
        self._from_handle = from_handle
        self._into_handle = into_handle
        self._point = point
        self._normal = normal
        self._approach_speed = approach_speed
        self._from_pos = from_pos
        self._into_pos = into_pos
        self._from_tangible = from_tangible
        self._into_tangible = into_tangible
        self._world = world
        self._into_solid = into_solid
        self._solids = solids
        self._solid_index = solid_index
        self._from_solid = from_solid
        self._feature = feature
        self._part = part
        return self

    # -- plain attributes (read-only) ---------------------------------------------------

    @property
    def t(self) -> float:
        """Time of impact as a fraction of the frame, in [0, 1]."""
        return self._t

    @property
    def time(self) -> float:
        """Clock time of the impact (seconds)."""
        return self._time

    @property
    def from_np(self) -> NodePath:
        """The moving (from) object: the NodePath the game registered, or a new NodePath to
        the node once the game has emptied that one with removeNode()."""
        return _handed(self._from_handle, self._from_np)

    @property
    def into_np(self) -> NodePath:
        """The object that was hit (into), handed out as :attr:`from_np` is."""
        return _handed(self._into_handle, self._into_np)

    @property
    def point(self) -> LPoint3:
        """World-space contact point (a copy)."""
        return LPoint3(*self._point)

    @property
    def normal(self) -> LVector3:
        """World-space unit normal out of the into surface, toward the from object (a copy)."""
        return LVector3(*self._normal)

    @property
    def approach_speed(self) -> float:
        """Relative normal speed at impact, units per second, >= 0."""
        return self._approach_speed

    @property
    def from_pos(self) -> LPoint3:
        """World-space centre of the from sphere at impact (a copy)."""
        return LPoint3(*self._from_pos)

    @property
    def into_pos(self) -> LPoint3 | None:
        """World-space centre of the into sphere at impact (a copy); None for a plane."""
        return None if self._into_pos is None else LPoint3(*self._into_pos)

    @property
    def from_tangible(self) -> bool:
        """False if the from object is a sensor."""
        return self._from_tangible

    @property
    def into_tangible(self) -> bool:
        """False if the into object is a sensor."""
        return self._into_tangible

    @property
    def world(self) -> NodePath:
        """The root the world-space values are relative to."""
        return self._world

    # -- CollisionEntry's properties ----------------------------------------------------

    @property
    def from_node_path(self) -> NodePath:
        """Same as :attr:`from_np` (CollisionEntry's name)."""
        return _handed(self._from_handle, self._from_np)

    @property
    def into_node_path(self) -> NodePath:
        """Same as :attr:`into_np` (CollisionEntry's name)."""
        return _handed(self._into_handle, self._into_np)

    @property
    def from_node(self) -> PandaNode:
        """The from object's node."""
        return self._from_np.node()

    @property
    def into_node(self) -> PandaNode:
        """The into object's node."""
        return self._into_np.node()

    @property
    def respect_prev_transform(self) -> bool:
        """Always True: the motion over the frame was taken into account."""
        return True

    # -- CollisionEntry's getters ---------------------------------------------------------

    def _to_space_point(self, space: NodePath, xyz: _Vec3) -> LPoint3:
        p = LPoint3(*xyz)
        # An empty NodePath means the root of the graph, as in CollisionEntry::output().
        if space.is_empty():
            return LPoint3(self._world.get_net_transform().get_mat().xform_point(p))
        return space.get_relative_point(self._world, p)

    def _to_space_vector(self, space: NodePath, xyz: _Vec3) -> LVector3:
        v = LVector3(*xyz)
        # Like CollisionEntry, the plain matrix (not its inverse transpose) is applied and
        # the result is not renormalised: under a scaled space the normal is scaled too.
        if space.is_empty():
            return LVector3(self._world.get_net_transform().get_mat().xform_vec(v))
        return space.get_relative_vector(self._world, v)

    def get_from_node_path(self) -> NodePath:
        """The from object's NodePath (see :attr:`from_np`)."""
        return _handed(self._from_handle, self._from_np)

    def get_into_node_path(self) -> NodePath:
        """The into object's NodePath (see :attr:`from_np`)."""
        return _handed(self._into_handle, self._into_np)

    def get_from_node(self) -> PandaNode | None:
        """The from object's node; None for a scene query's contact (a query has no from
        node: its from NodePath is empty)."""
        return None if self._from_np.is_empty() else self._from_np.node()

    def get_into_node(self) -> PandaNode:
        """The into object's node."""
        return self._into_np.node()

    @property
    def into_solid(self) -> Any:
        """The into CollisionSolid hit: the polygon, box, capsule or inverse sphere of a
        level piece, or the CollisionSphere or CollisionPlane of a node registered with
        ``add_collision_node``; None for a sphere or plane registered with ``add_sphere``
        or ``add_plane``."""
        if self._solids is not None:
            return self._solids[self._solid_index]
        return self._into_solid

    @property
    def from_solid(self) -> Any:
        """The from CollisionSolid: the CollisionSphere of a body registered with
        ``add_collision_node``, or the CollisionRay, CollisionSegment or CollisionLine of a
        ray collider; None for a sphere registered with ``add_sphere`` and for a scene
        query."""
        return self._from_solid

    @property
    def feature(self) -> str | None:
        """What of a level piece was touched: ``"face"``, ``"edge"`` or ``"vertex"`` (None
        for spheres and planes). On a face the normal is the face's; on an edge or a vertex
        it points from the contact point to the sphere's centre."""
        return self._feature

    @property
    def part(self) -> int:
        """Which part of the into solid: the triangle of a polygon (fanned from its first
        vertex: triangle i is vertices 0, i + 1, i + 2), or of a turned static box's 12
        faces; 0 otherwise."""
        return self._part

    def get_into_solid(self) -> Any:
        """As ``CollisionEntry.getIntoSolid``: see :attr:`into_solid`."""
        return self.into_solid

    def has_into(self) -> bool:
        """As ``CollisionEntry.hasInto``: whether the into solid is known."""
        return self.into_solid is not None

    def get_from(self) -> Any:
        """As ``CollisionEntry.getFrom``: the from solid (see :attr:`from_solid`)."""
        return self._from_solid

    def get_surface_point(self, space: NodePath) -> LPoint3:
        """The contact point, in the coordinate system of ``space``."""
        return self._to_space_point(space, self._point)

    def get_surface_normal(self, space: NodePath) -> LVector3:
        """The into surface's normal at the contact, in the coordinate system of ``space``."""
        return self._to_space_vector(space, self._normal)

    def get_interior_point(self, space: NodePath) -> LPoint3:
        """Same as :meth:`get_surface_point`: at the time of impact nothing has penetrated."""
        return self._to_space_point(space, self._point)

    def get_contact_pos(self, space: NodePath) -> LPoint3:
        """Centre of the from sphere at impact, in the coordinate system of ``space``."""
        return self._to_space_point(space, self._from_pos)

    def get_contact_normal(self, space: NodePath) -> LVector3:
        """Same as :meth:`get_surface_normal`."""
        return self._to_space_vector(space, self._normal)

    def get_all(
        self,
        space: NodePath,
        surface_point: LPoint3,
        surface_normal: LVector3,
        interior_point: LPoint3,
    ) -> bool:
        """Fill the three given vectors in place, like ``CollisionEntry.getAll``; True."""
        p = self.get_surface_point(space)
        surface_point.set(p[0], p[1], p[2])
        n = self.get_surface_normal(space)
        surface_normal.set(n[0], n[1], n[2])
        interior_point.set(p[0], p[1], p[2])
        return True

    def get_all_contact_info(
        self, space: NodePath, contact_pos: LPoint3, contact_normal: LVector3
    ) -> bool:
        """Fill the two given vectors in place, like ``CollisionEntry.getAllContactInfo``."""
        p = self.get_contact_pos(space)
        contact_pos.set(p[0], p[1], p[2])
        n = self.get_contact_normal(space)
        contact_normal.set(n[0], n[1], n[2])
        return True

    def get_t(self) -> float:
        """Time of impact as a fraction of the frame."""
        return self._t

    def collided(self) -> bool:
        """True: a Contact always is an actual collision (0 <= t <= 1)."""
        return True

    def get_respect_prev_transform(self) -> bool:
        """True: the motion over the frame was taken into account."""
        return True

    def has_surface_point(self) -> bool:
        """True: always known."""
        return True

    def has_surface_normal(self) -> bool:
        """True: always known."""
        return True

    def has_interior_point(self) -> bool:
        """True: always known (equal to the surface point)."""
        return True

    def has_contact_pos(self) -> bool:
        """True: always known."""
        return True

    def has_contact_normal(self) -> bool:
        """True: always known."""
        return True

    getFromNodePath = get_from_node_path
    getIntoNodePath = get_into_node_path
    getFromNode = get_from_node
    getIntoSolid = get_into_solid
    get_into = get_into_solid  # CollisionEntry has both names for the into solid
    getInto = get_into_solid
    hasInto = has_into
    getFrom = get_from
    getIntoNode = get_into_node
    getSurfacePoint = get_surface_point
    getSurfaceNormal = get_surface_normal
    getInteriorPoint = get_interior_point
    getContactPos = get_contact_pos
    getContactNormal = get_contact_normal
    getAll = get_all
    getAllContactInfo = get_all_contact_info
    getT = get_t
    getRespectPrevTransform = get_respect_prev_transform
    hasSurfacePoint = has_surface_point
    hasSurfaceNormal = has_surface_normal
    hasInteriorPoint = has_interior_point
    hasContactPos = has_contact_pos
    hasContactNormal = has_contact_normal

    def __repr__(self) -> str:
        p, n = self._point, self._normal
        return (
            f"Contact(from={self._from_np} into={self._into_np} t={self._t:.6g} "
            f"point=({p[0]:.6g}, {p[1]:.6g}, {p[2]:.6g}) "
            f"normal=({n[0]:.6g}, {n[1]:.6g}, {n[2]:.6g}))"
        )
