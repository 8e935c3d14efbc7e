"""panda3d-ccd: continuous collision detection for Panda3D.

``panda3d_ccd.sweep`` and ``panda3d_ccd.broadphase`` are plain numpy and import without
panda3d; the Panda3D-facing names below are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .sweep import sphere_plane_toi, sphere_sphere_toi

if TYPE_CHECKING:
    from ._scene import QueryResult
    from .component import ContinuousCollision
    from .contact import Contact

__all__ = [
    "ContinuousCollision",
    "Contact",
    "QueryResult",
    "sphere_sphere_toi",
    "sphere_plane_toi",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "ContinuousCollision":
        from .component import ContinuousCollision

        return ContinuousCollision
    if name == "Contact":
        from .contact import Contact

        return Contact
    if name == "QueryResult":
        from ._scene import QueryResult

        return QueryResult
    raise AttributeError(f"module 'panda3d_ccd' has no attribute {name!r}")
