"""Debug drawing: wire spheres, this pass's swept paths, and contacts with their normals."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from panda3d.core import LineSegs, NodePath

_CIRCLE_SEGMENTS = 16
_UNIT_CIRCLE = [
    (math.cos(2 * math.pi * k / _CIRCLE_SEGMENTS), math.sin(2 * math.pi * k / _CIRCLE_SEGMENTS))
    for k in range(_CIRCLE_SEGMENTS + 1)
]
_COLOURS = {0: (0.2, 1.0, 0.2, 1.0), 1: (0.3, 0.6, 1.0, 1.0), 2: (1.0, 0.9, 0.2, 1.0)}


class DebugView:
    """Redrawn after every pass under its own node; costs nothing when not shown."""

    def __init__(self, parent: NodePath) -> None:
        self.root = parent.attachNewNode("ccd-debug")
        self.root.setLightOff(1)
        self.root.setTextureOff(1)
        self.root.setBin("fixed", 100)
        self.root.setDepthTest(False)
        self._geom: NodePath | None = None

    def update(
        self,
        response: np.ndarray,
        radius: np.ndarray,
        p0: np.ndarray,
        result: Any,
        still: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Redraw: spheres of (n,) ``response`` and world ``radius`` at ``result.end``, their
        paths from (n, 3) ``p0``, and the pass's contact normals; ``still`` is (m,)
        response, (m,) radius and (m, 3) centre of further spheres the pass left out
        (static ones far from everything)."""
        segs = LineSegs("ccd-debug-lines")
        segs.setThickness(1.5)
        if still is not None:
            for k in range(len(still[0])):
                _sphere(segs, still[0][k], still[1][k], still[2][k])
        end = result.end
        for k in range(len(end)):
            if not np.all(np.isfinite(end[k])):
                continue
            cx, cy, cz = end[k]
            _sphere(segs, response[k], radius[k], end[k])
            if np.all(np.isfinite(p0[k])) and np.any(p0[k] != end[k]):
                segs.setColor(1.0, 0.5, 0.1, 1.0)
                segs.moveTo(*p0[k])
                segs.drawTo(cx, cy, cz)
        hits = result.hits
        segs.setColor(1.0, 0.1, 0.1, 1.0)
        for row in range(len(hits.t)):
            point = hits.point[row]
            tip = point + hits.normal[row] * max(0.5, float(radius[hits.a[row]]))
            segs.moveTo(*point)
            segs.drawTo(*tip)
        if self._geom is not None:
            self._geom.removeNode()
        self._geom = self.root.attachNewNode(segs.create())

    def destroy(self) -> None:
        self.root.removeNode()


def _sphere(segs: LineSegs, response: Any, radius: Any, center: np.ndarray) -> None:
    """Three great circles of a sphere, in the colour of its response."""
    cx, cy, cz = center
    r = float(radius)
    segs.setColor(*_COLOURS.get(int(response), (1, 1, 1, 1)))
    for axes in ((0, 1), (0, 2), (1, 2)):
        for j, (u, v) in enumerate(_UNIT_CIRCLE):
            point = [cx, cy, cz]
            point[axes[0]] += r * u
            point[axes[1]] += r * v
            (segs.drawTo if j else segs.moveTo)(*point)
