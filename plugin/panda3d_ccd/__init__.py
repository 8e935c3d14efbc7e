"""panda3d-ccd: continuous collision detection for Panda3D."""

from .sweep import sphere_plane_toi, sphere_sphere_toi

__all__ = ["sphere_sphere_toi", "sphere_plane_toi"]
__version__ = "0.1.0"
