"""Checks of the Panda3D-facing arguments (masks, flags, points), shared by the component
and the scene queries: each returns the plain value or raises a ValueError naming the
argument and what came."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from panda3d.core import BitMask32

__all__ = ["mask", "flag", "vector", "length"]


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


#: The largest float32: Panda3D keeps lengths and points in float32, beyond it inf.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def length(name: str, value: Any) -> float:
    """A finite number >= 0 that float32 holds (an int or a float, numpy's too; not a bool
    or a str)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        r = float(value)
    except OverflowError:
        r = math.inf
    if not math.isfinite(r) or r < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    if r > _FLOAT32_MAX:
        raise ValueError(f"{name} must fit Panda3D's float32 (up to 3.4e38), got {value!r}")
    return r


def vector(name: str, value: Any) -> tuple[float, float, float]:
    """Three finite numbers (an LPoint3, a tuple, an array)."""
    try:
        x, y, z = (float(c) for c in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be three numbers, got {value!r}") from None
    if not all(math.isfinite(c) for c in (x, y, z)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return (x, y, z)
