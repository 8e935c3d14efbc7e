"""The registered spheres as numpy columns, one row per sphere, in registration order.

Each pass reads and writes every sphere; per-sphere Python objects would cost a loop of
attribute lookups per column per pass, so the component keeps its spheres here. Rows are
added in bulk when a pass starts (a scene registers thousands of spheres one call at a
time) and removed with one boolean mask.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
from panda3d.core import NodePath, TransformState

__all__ = ["SphereRecord", "SphereTable"]


@dataclass(eq=False)
class SphereRecord:
    """One validated sphere, as registered, with its state read at registration."""

    uid: int
    owner: int  # one id per registered node: events are keyed by node, as in Panda3D
    nodepath: NodePath
    radius: float
    center: tuple[float, float, float]
    response: int
    from_mask: int
    into_mask: int
    static: bool
    solid: Any = None  # the CollisionSphere it came from, if any
    handle: NodePath | None = None  # the game's own NodePath, as registered
    mover: NodePath | None = None  # the node read and moved (a target), if not nodepath
    prev_center: tuple[float, float, float] = (np.nan, np.nan, np.nan)
    prev_transform: TransformState | None = None
    world_radius: float = 0.0


class SphereTable:
    """Columns of the registered spheres (n rows).

    Set at registration: ``uid``, ``owner`` (n,) int64; ``nodepath`` (n,) object;
    ``radius`` (n,) local radius; ``center`` (n, 3) local centre; ``response`` (n,) int8;
    ``from_mask``, ``into_mask`` (n,) int64; ``static`` (n,) bool; ``handle`` (n,) object,
    the NodePath the game registered (handed back in contacts; empty once the game calls
    its removeNode()); ``solid`` (n,) object, the CollisionSphere it came from (or None).

    Carried from pass to pass: ``prev_center`` (n, 3) world centre where the last pass left
    it; ``prev_transform`` (n,) object, the TransformState (relative to render) it had
    then, or None; ``world_radius`` (n,); ``bad`` (n,) bool, its transform was not finite
    at the last pass (skipped, warned once), read-only (set it whole: ``some_bad`` says
    whether any is, without a look at every row).

    Made again whenever rows come or go: ``movers``, the ``mover`` column as a list (a
    pass reads every node through it, and a list costs no numpy call to walk);
    ``grouped`` (g,) int64, the rows read and moved through a target (their ``center``
    and ``radius`` are on the target, and follow the collision node on it: see
    :meth:`reshape`); ``centred``, whether every ``center`` is zero; ``one_per_owner``,
    whether no node has two spheres; ``version``, a count of those changes (what is made
    from the columns is made again when it moves on); ``all_plain``, whether every row is
    ``plain``. :meth:`records` are made on demand.

    ``plain`` (n,) bool, set at registration: the row's node is read and moved for itself
    (no target) and has no render effect (a compass effect places a node other than its
    own transform says): while it is a child of render, its own transform is its transform
    relative to render.

    ``radius`` and ``center`` are read-only: a pass hands ``radius`` on as the world radii
    of unscaled spheres, so nothing may write into it (:meth:`reshape` sets new ones).
    """

    _COLUMNS = (
        "uid",
        "owner",
        "nodepath",
        "radius",
        "center",
        "response",
        "from_mask",
        "into_mask",
        "static",
        "handle",
        "mover",
        "solid",
        "prev_center",
        "prev_transform",
        "world_radius",
        "bad",
        "plain",
    )

    def __init__(self) -> None:
        self.uid = np.zeros(0, np.int64)
        self.owner = np.zeros(0, np.int64)
        self.nodepath = np.zeros(0, object)
        self.radius = np.zeros(0)
        self.center = np.zeros((0, 3))
        self.response = np.zeros(0, np.int8)
        self.from_mask = np.zeros(0, np.int64)
        self.into_mask = np.zeros(0, np.int64)
        self.static = np.zeros(0, bool)
        self.handle = np.zeros(0, object)
        self.mover = np.zeros(0, object)
        self.solid = np.zeros(0, object)
        self.prev_center = np.zeros((0, 3))
        self.prev_transform = np.zeros(0, object)
        self.world_radius = np.zeros(0)
        self.some_bad = False
        self.bad = np.zeros(0, bool)
        self.plain = np.zeros(0, bool)
        self.all_plain = True
        self._pending: list[SphereRecord] = []
        self.movers: list[NodePath] = []
        self.grouped = np.zeros(0, np.int64)
        self.centred = True
        self.one_per_owner = True
        self.version = 0
        self._records: list[tuple[int, NodePath, NodePath, bool, Any]] | None = None

    def __len__(self) -> int:
        return len(self.uid) + len(self._pending)

    @property
    def bad(self) -> np.ndarray:
        return self._bad

    @bad.setter
    def bad(self, value: np.ndarray) -> None:
        value.flags.writeable = False
        self._bad = value
        self.some_bad = bool(value.any())

    def add(self, record: SphereRecord) -> None:
        """Queue a sphere; it becomes a row at the next :meth:`flush`."""
        self._pending.append(record)

    def flush(self) -> None:
        """Append the queued spheres as rows (one concatenation for any number of them)."""
        if not self._pending:
            return
        new = self._pending
        self._pending = []
        m = len(new)
        rows: dict[str, np.ndarray] = {
            "uid": np.fromiter((r.uid for r in new), np.int64, m),
            "owner": np.fromiter((r.owner for r in new), np.int64, m),
            # fromiter, not np.array: numpy would try to unpack each NodePath.
            "nodepath": np.fromiter((r.nodepath for r in new), object, m),
            "radius": np.fromiter((r.radius for r in new), np.float64, m),
            "center": np.array([r.center for r in new], np.float64).reshape(m, 3),
            "response": np.fromiter((r.response for r in new), np.int8, m),
            "from_mask": np.fromiter((r.from_mask for r in new), np.int64, m),
            "into_mask": np.fromiter((r.into_mask for r in new), np.int64, m),
            "static": np.fromiter((r.static for r in new), bool, m),
            "handle": np.fromiter((r.handle for r in new), object, m),
            "mover": np.fromiter(
                (r.nodepath if r.mover is None else r.mover for r in new), object, m
            ),
            "solid": np.fromiter((r.solid for r in new), object, m),
            "prev_center": np.array([r.prev_center for r in new], np.float64).reshape(m, 3),
            "prev_transform": np.fromiter((r.prev_transform for r in new), object, m),
            "world_radius": np.fromiter((r.world_radius for r in new), np.float64, m),
            "bad": np.zeros(m, bool),
            "plain": np.fromiter(
                (r.mover is None and r.nodepath.node().getEffects().isEmpty() for r in new),
                bool,
                m,
            ),
        }
        for name in self._COLUMNS:
            setattr(self, name, np.concatenate([getattr(self, name), rows[name]]))
        self._derive()

    def drop_owners(self, owners: set[int]) -> bool:
        """Remove every sphere of these nodes (queued or not); whether any was there."""
        queued = len(self._pending)
        self._pending = [r for r in self._pending if r.owner not in owners]
        gone = np.isin(self.owner, np.fromiter(owners, np.int64, len(owners)))
        if gone.any():
            for name in self._COLUMNS:
                setattr(self, name, getattr(self, name)[~gone])
            self._derive()
        return bool(gone.any()) or len(self._pending) < queued

    def _derive(self) -> None:
        self.radius.flags.writeable = False
        self.center.flags.writeable = False
        self.movers = self.mover.tolist()
        apart = map(operator.is_not, self.movers, self.nodepath.tolist())
        self.grouped = np.flatnonzero(np.fromiter(apart, bool, len(self.movers)))
        self.centred = not self.center.any()
        self.one_per_owner = len(np.unique(self.owner)) == len(self.owner)
        self.all_plain = bool(self.plain.all())
        self.version += 1
        self._records = None

    def reshape(self, center: np.ndarray, radius: np.ndarray) -> None:
        """Set ``center`` (n, 3) and ``radius`` (n,) anew (new arrays, never written into
        after: a pass may hand ``radius`` on)."""
        center.flags.writeable = False
        radius.flags.writeable = False
        self.center, self.radius = center, radius
        self.centred = not center.any()

    def records(self, sensor: int) -> list[tuple[int, NodePath, NodePath, bool, Any]]:
        """Per row (owner, nodepath, handle, tangible, solid) as Python objects, tangible
        where ``response`` is not ``sensor`` (the solver's code)."""
        if self._records is None:
            self._records = list(
                zip(
                    self.owner.tolist(),
                    self.nodepath.tolist(),
                    self.handle.tolist(),
                    (self.response != sensor).tolist(),
                    self.solid.tolist(),
                )
            )
        return self._records

    def uids(self) -> set[int]:
        """Every sphere's uid, queued or not."""
        return set(self.uid.tolist()) | {r.uid for r in self._pending}
