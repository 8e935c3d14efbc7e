"""Checks of the Panda3D-facing arguments (masks, flags, points), shared by the component
and the scene queries: each returns the plain value or raises a ValueError naming the
argument and what came."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from panda3d.core import BitMask32

__all__ = ["mask", "flag", "vector"]


def mask(name: str, value: Any) -> int:
    """A 32-bit collide mask from a BitMask32 or an int."""
    if isinstance(value, BitMask32):
        return int(value.getWord())
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a BitMask32 or an int, got {value!r}")
    if not 0 <= int(value) < 2**32:
        raise ValueError(f"{name} must fit in 32 bits (0 to 2**32 - 1), got {value!r}")
    return int(value)


def flag(name: str, value: Any) -> bool:
    """True or False (a numpy bool too), nothing else."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def vector(name: str, value: Any) -> tuple[float, float, float]:
    """Three finite numbers (an LPoint3, a tuple, an array)."""
    try:
        x, y, z = (float(c) for c in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be three numbers, got {value!r}") from None
    if not all(math.isfinite(c) for c in (x, y, z)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return (x, y, z)
