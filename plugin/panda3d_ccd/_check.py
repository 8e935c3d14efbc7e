"""Checks of array arguments at the public boundary, shared by the geometry modules.

Each converts to float64 (or int64, bool) once, checks the shape, and raises ValueError
with a sentence naming the argument and what came. Unchecked cores behind them take the
converted arrays as they are.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

MASK_MAX = 0xFFFFFFFF


def floats(name: str, value: ArrayLike) -> Float:
    """float64 array of value, or a ValueError naming the argument (numpy's own does not;
    nor does it refuse complex numbers: it drops their imaginary parts, with a warning)."""
    if np.iscomplexobj(value):
        raise ValueError(f"{name} must be real numbers, got {value!r}")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, got {value!r}") from None


def points(name: str, value: ArrayLike, *, single: bool = True) -> Float:
    """(n, 3) float64; with ``single`` a lone (3,) point is taken as one row."""
    arr = floats(name, value)
    if single and arr.ndim == 1 and arr.shape[0] == 3:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3), got {np.shape(value)}")
    return arr


def coordinates(name: str, value: ArrayLike, *, single: bool = True) -> Float:
    """:func:`points` that must also be finite."""
    arr = points(name, value, single=single)
    # One summing pass finds a nan or inf (or an overflow, checked properly below) at a
    # fraction of the cost of isfinite over millions of rows.
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(arr)
    if not np.isfinite(total):
        bad = ~np.isfinite(arr)
        if np.any(bad):
            row = int(np.nonzero(bad)[0][0])
            raise ValueError(f"{name} must be finite, got {arr[row].tolist()} in row {row}")
    return arr


def sweeps(p0: ArrayLike, p1: ArrayLike) -> tuple[Float, Float]:
    """(n, 3) float64 start and end points of n sweeps, of the same shape."""
    p0_ = points("p0", p0, single=False)
    p1_ = points("p1", p1, single=False)
    if p1_.shape != p0_.shape:
        raise ValueError(f"p1 must have the same shape as p0 {p0_.shape}, got {p1_.shape}")
    return p0_, p1_


def row_shape(name: str, arr: np.ndarray, n: int) -> None:
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")


def lengths(name: str, value: ArrayLike, n: int | None = None) -> Float:
    """Finite, non-negative lengths (radii, margins): scalar or (n,) float64; with ``n``
    given, broadcast to (n,)."""
    arr = floats(name, value)
    if n is None:
        if arr.ndim > 1:
            raise ValueError(f"{name} must be a scalar or have shape (n,), got {arr.shape}")
    else:
        row_shape(name, arr, n)
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        shown = arr if arr.ndim == 0 else arr[bad][0]
        raise ValueError(f"{name} must be finite and >= 0, got {shown}")
    return arr if n is None else np.broadcast_to(arr, (n,))


def masks(name: str, value: ArrayLike | None, n: int) -> Int:
    """32-bit collide masks as (n,) int64; None means every bit on."""
    if value is None:
        return np.full(n, MASK_MAX, dtype=np.int64)
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of 32-bit masks, got dtype {arr.dtype}")
    row_shape(name, arr, n)
    bad = (arr < 0) | (arr > MASK_MAX)
    if np.any(bad):
        shown = arr if arr.ndim == 0 else arr[bad][0]
        raise ValueError(f"{name} must hold 32-bit unsigned masks (0 to {MASK_MAX}), got {shown}")
    return np.broadcast_to(arr.astype(np.int64), (n,))


def flags(name: str, value: ArrayLike | None, n: int, default: bool) -> Bool:
    """(n,) bool; None means ``default`` everywhere."""
    if value is None:
        return np.full(n, default)
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.bool_)
    if arr.dtype != np.bool_:
        raise ValueError(f"{name} must be a boolean array, got dtype {arr.dtype}")
    row_shape(name, arr, n)
    return np.broadcast_to(arr, (n,))


def broadcast(names: tuple[str, ...], *arrays: np.ndarray) -> list[np.ndarray]:
    """Broadcast (n, 3) and (n,) arrays (and rows of one, and scalars) to a common row
    count, naming the arguments if that is impossible."""
    rows = {a.shape[0] for a in arrays if a.ndim >= 1 and a.shape[0] != 1}
    if len(rows) > 1:
        shapes = ", ".join(f"{n}: {a.shape}" for n, a in zip(names, arrays))
        raise ValueError(f"row counts do not match ({shapes})")
    n = rows.pop() if rows else (1 if any(a.ndim >= 1 for a in arrays) else 0)
    return [np.broadcast_to(a, (n, *a.shape[1:]) if a.ndim >= 1 else (n,)) for a in arrays]
