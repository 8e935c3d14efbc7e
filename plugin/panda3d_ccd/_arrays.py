"""Small array helpers shared by the per-frame code."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def unique(values: NDArray) -> NDArray:
    """Sorted unique values, by a sort.

    ``np.unique`` without ``return_index`` (and ``np.union1d``, which calls it) takes a
    hash path in numpy 2.x that costs about 180 us for 100 integers and 2 ms for 10,000;
    a sort costs 3 us and 0.2 ms.
    """
    ordered = np.sort(values)
    keep = np.ones(len(ordered), bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]
