"""Procedural meshes for the demo level: lit spheres, cylinders, boxes and a tiled floor.

Everything is built with normals so Panda3D's fixed-function lighting (also in the
p3tinydisplay software renderer used for screenshots) shades it; colours come from
``setColor`` on the instances, or per vertex for the floor.
"""

from __future__ import annotations

import math

from panda3d.core import (
    Geom,
    GeomNode,
    GeomTriangles,
    GeomVertexData,
    GeomVertexFormat,
    GeomVertexWriter,
    NodePath,
)

__all__ = ["sphere", "cylinder", "box", "disc", "tiled_floor"]

Colour = tuple[float, float, float, float]


class _Mesh:
    """Accumulates vertices (position, normal, optional colour) and triangles."""

    def __init__(self, name: str, coloured: bool = False) -> None:
        fmt = GeomVertexFormat.getV3n3c4() if coloured else GeomVertexFormat.getV3n3()
        self.name = name
        self.data = GeomVertexData(name, fmt, Geom.UHStatic)
        self.vertex = GeomVertexWriter(self.data, "vertex")
        self.normal = GeomVertexWriter(self.data, "normal")
        self.colour = GeomVertexWriter(self.data, "color") if coloured else None
        self.tris = GeomTriangles(Geom.UHStatic)
        self.count = 0

    def add(
        self,
        pos: tuple[float, float, float],
        normal: tuple[float, float, float],
        colour: Colour | None = None,
    ) -> int:
        self.vertex.addData3(*pos)
        self.normal.addData3(*normal)
        if self.colour is not None:
            self.colour.addData4(*(colour or (1.0, 1.0, 1.0, 1.0)))
        self.count += 1
        return self.count - 1

    def quad(self, a: int, b: int, c: int, d: int) -> None:
        """Two triangles of the counter-clockwise quad a, b, c, d."""
        self.tris.addVertices(a, b, c)
        self.tris.addVertices(a, c, d)

    def nodepath(self) -> NodePath:
        geom = Geom(self.data)
        geom.addPrimitive(self.tris)
        node = GeomNode(self.name)
        node.addGeom(geom)
        return NodePath(node)


def sphere(radius: float = 1.0, rings: int = 10, segments: int = 16) -> NodePath:
    """A UV sphere of ``radius`` centred on the origin."""
    mesh = _Mesh("sphere")
    rows = []
    for i in range(rings + 1):
        phi = math.pi * i / rings
        z, ring = math.cos(phi), math.sin(phi)
        row = []
        for j in range(segments + 1):
            theta = 2 * math.pi * j / segments
            n = (ring * math.cos(theta), ring * math.sin(theta), z)
            row.append(mesh.add((n[0] * radius, n[1] * radius, n[2] * radius), n))
        rows.append(row)
    for i in range(rings):
        for j in range(segments):
            mesh.quad(rows[i + 1][j], rows[i + 1][j + 1], rows[i][j + 1], rows[i][j])
    return mesh.nodepath()


def cylinder(radius: float, height: float, segments: int = 20) -> NodePath:
    """An upright capped cylinder standing on z = 0."""
    mesh = _Mesh("cylinder")
    ring = [
        (math.cos(2 * math.pi * j / segments), math.sin(2 * math.pi * j / segments))
        for j in range(segments + 1)
    ]
    low = [mesh.add((c * radius, s * radius, 0.0), (c, s, 0.0)) for c, s in ring]
    high = [mesh.add((c * radius, s * radius, height), (c, s, 0.0)) for c, s in ring]
    for j in range(segments):
        mesh.quad(low[j], low[j + 1], high[j + 1], high[j])
    centre = mesh.add((0.0, 0.0, height), (0.0, 0.0, 1.0))
    cap = [mesh.add((c * radius, s * radius, height), (0.0, 0.0, 1.0)) for c, s in ring]
    for j in range(segments):
        mesh.tris.addVertices(centre, cap[j], cap[j + 1])
    return mesh.nodepath()


def disc(radius: float, segments: int = 20) -> NodePath:
    """A flat disc of ``radius`` on z = 0, facing up (blob shadows, markers)."""
    mesh = _Mesh("disc")
    up = (0.0, 0.0, 1.0)
    centre = mesh.add((0.0, 0.0, 0.0), up)
    rim = [
        mesh.add((radius * math.cos(2 * math.pi * j / segments),
                  radius * math.sin(2 * math.pi * j / segments), 0.0), up)
        for j in range(segments + 1)
    ]
    for j in range(segments):
        mesh.tris.addVertices(centre, rim[j], rim[j + 1])
    return mesh.nodepath()


def box(sx: float, sy: float, sz: float) -> NodePath:
    """An axis-aligned box of size (sx, sy, sz) centred on the origin."""
    mesh = _Mesh("box")
    hx, hy, hz = sx / 2, sy / 2, sz / 2
    faces = [
        ((1, 0, 0), [(hx, -hy, -hz), (hx, hy, -hz), (hx, hy, hz), (hx, -hy, hz)]),
        ((-1, 0, 0), [(-hx, hy, -hz), (-hx, -hy, -hz), (-hx, -hy, hz), (-hx, hy, hz)]),
        ((0, 1, 0), [(hx, hy, -hz), (-hx, hy, -hz), (-hx, hy, hz), (hx, hy, hz)]),
        ((0, -1, 0), [(-hx, -hy, -hz), (hx, -hy, -hz), (hx, -hy, hz), (-hx, -hy, hz)]),
        ((0, 0, 1), [(-hx, -hy, hz), (hx, -hy, hz), (hx, hy, hz), (-hx, hy, hz)]),
        ((0, 0, -1), [(-hx, hy, -hz), (hx, hy, -hz), (hx, -hy, -hz), (-hx, -hy, -hz)]),
    ]
    for normal, corners in faces:
        a, b, c, d = (mesh.add(p, normal) for p in corners)
        mesh.quad(a, b, c, d)
    return mesh.nodepath()


def tiled_floor(half: float, tile: float, light: Colour, dark: Colour) -> NodePath:
    """A checkerboard square from -half to +half in x and y at z = 0, facing up."""
    mesh = _Mesh("floor", coloured=True)
    count = max(1, round(2 * half / tile))
    step = 2 * half / count
    up = (0.0, 0.0, 1.0)
    for i in range(count):
        for j in range(count):
            colour = light if (i + j) % 2 == 0 else dark
            x0, y0 = -half + i * step, -half + j * step
            corners = [(x0, y0), (x0 + step, y0), (x0 + step, y0 + step), (x0, y0 + step)]
            a, b, c, d = (mesh.add((x, y, 0.0), up, colour) for x, y in corners)
            mesh.quad(a, b, c, d)
    return mesh.nodepath()
