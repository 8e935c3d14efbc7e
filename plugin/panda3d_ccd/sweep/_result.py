"""What an unchecked kernel core returns: the time of impact and where and how it touched.

Every pair kernel's core (``_sweep`` in its module) returns a :class:`Sweep`, whatever the
shapes: the solver, the sensors and the queries read these columns and never name a shape
(as Jolt's ``ShapeCastResult`` or Box2D's manifold).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

#: Which kind of feature of the obstacle was touched.
FACE, EDGE, VERTEX = 0, 1, 2


class Sweep(NamedTuple):
    """Rows of swept contacts, one per tested pair (nan/inf/-1 where there is none)."""

    t: NDArray[np.float64]  # (k,) time of first contact in [0, 1]; inf where none
    point: NDArray[np.float64]  # (k, 3) contact point on the obstacle's surface at t
    normal: NDArray[np.float64]  # (k, 3) unit, out of the obstacle toward the sphere's centre
    feature: NDArray[np.int8]  # (k,) FACE, EDGE or VERTEX; -1 where none
    index: NDArray[np.int64]  # (k,) which face, edge or vertex of the obstacle; -1 where none
