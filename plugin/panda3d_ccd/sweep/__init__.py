"""Exact swept tests: when does a moving sphere first touch another shape?

One module per pair of kinds, each with a checked public ``..._toi`` and an unchecked core
that the solver calls. The moving sphere's centre goes from ``c0`` to ``c1`` linearly in
the normalised frame time ``t`` in [0, 1]. A *contact* is a moment when the surfaces touch
while approaching; touching and moving apart, or sliding along at constant distance, is
not a contact (otherwise a resting ball would stick).

The level-geometry kernels (a sphere against a fixed triangle, axis-aligned box, capsule or
inverse sphere) share their pieces (offset faces, edge cylinders, vertex spheres) in
``_features``; each module's docstring numbers its features (the ``index`` of a
:class:`~._result.Sweep`).

This package never imports panda3d: it is the geometry layer, usable on its own.

Examples
--------
>>> from panda3d_ccd.sweep import sphere_sphere_toi, sphere_plane_toi
>>> sphere_sphere_toi([[-5, 0, 0]], [[5, 0, 0]], 0.5, [[0, 0, 0]], [[0, 0, 0]], 0.5)
array([0.4])
>>> sphere_plane_toi([[0, 0, 3]], [[0, 0, -3]], 1.0, (0, 0, 1), 0.0)
array([0.33333333])
>>> from panda3d_ccd.sweep import sphere_box_toi
>>> sphere_box_toi([[0, 0, 5]], [[0, 0, -5]], 1.0, [-1, -1, -1], [1, 1, 1])
array([0.3])
"""

from __future__ import annotations

from .sphere_box import sphere_box_toi
from .sphere_capsule import sphere_capsule_toi
from .sphere_inv_sphere import sphere_inv_sphere_toi
from .sphere_plane import sphere_plane_overlap, sphere_plane_toi
from .sphere_sphere import sphere_sphere_overlap, sphere_sphere_toi
from .sphere_triangle import sphere_triangle_toi

__all__ = [
    "sphere_sphere_toi",
    "sphere_plane_toi",
    "sphere_sphere_overlap",
    "sphere_plane_overlap",
    "sphere_triangle_toi",
    "sphere_box_toi",
    "sphere_capsule_toi",
    "sphere_inv_sphere_toi",
]
