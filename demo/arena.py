"""The demo's arena as data: every piece of the level, its faces and its collision solid.

One source for three readers: :mod:`demo.make_arena` writes it to ``arena.egg`` (the model
the game loads), :mod:`demo.truth` builds the ground truth from these numbers (not from what
Panda3D loaded; a test checks that the two agree), and the level spawns bodies clear of it.
No panda3d here.

The room is the square ``|x|, |y| <= HALF`` on the floor ``z = 0``. A wall with two
doorways (with lintels) crosses it at ``y = 8``; the gap in its middle is swept by the
rotating gate. In the south-east a raised platform is reached by two ramps and holds the lift,
a piston that rises out of it. Crates (boxes) and pillars (capsules) stand around.

Coordinates: x east, y north, z up. Polygons are listed counter-clockwise seen from their
front, which faces the playing space (Panda3D's and panda3d-ccd's polygons are one-sided).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "HALF", "WALL_HEIGHT", "LEVEL", "PILLAR", "Face", "Piece", "PIECES", "TILES", "LIFT",
    "GATE", "LIFT_LOW", "LIFT_RISE", "LIFT_PERIOD", "LIFT_DOWN", "GATE_PIVOT", "GATE_SPIN",
    "lift_height", "lift_speed", "gate_heading", "triangles", "footprint_clearance",
]

Point = tuple[float, float, float]
Colour = tuple[float, float, float, float]

#: Half the side of the square room (the walls' inner faces are at x, y = +-HALF).
HALF = 30.0
WALL_HEIGHT = 3.0
#: Into-mask bits of the level's pieces (the movers' from-masks pick them).
LEVEL, PILLAR = 1, 2

COLOURS: dict[str, Colour] = {
    "floor_light": (0.36, 0.40, 0.48, 1.0),
    "floor_dark": (0.28, 0.31, 0.38, 1.0),
    "wall": (0.62, 0.70, 0.78, 1.0),
    "platform": (0.47, 0.55, 0.68, 1.0),
    "ramp": (0.55, 0.64, 0.58, 1.0),
    "crate": (0.76, 0.55, 0.30, 1.0),
    "pillar": (0.93, 0.86, 0.70, 1.0),
    "lift": (0.25, 0.78, 0.70, 1.0),
    "gate": (0.98, 0.55, 0.16, 1.0),
}


@dataclass(frozen=True)
class Face:
    """A convex planar polygon, counter-clockwise seen from its front.

    ``normals`` are per-vertex normals for smooth shading (pillars); without them the face
    is flat-shaded with its own normal.
    """

    points: tuple[Point, ...]
    normals: tuple[Point, ...] | None = None

    @property
    def normal(self) -> Point:
        p = np.array(self.points, float)
        n = np.cross(p[1] - p[0], p[2] - p[0])
        return tuple(float(v) for v in n / np.linalg.norm(n))  # type: ignore[return-value]


@dataclass(frozen=True)
class Piece:
    """One CollisionNode of the arena.

    ``name`` is the node's name (the ``%in`` of events). ``solid`` says what Panda3D makes of
    it: ``"polyset"`` (a CollisionPolygon per face), ``"box"`` (one CollisionBox, the faces'
    bounds in the piece's frame) or ``"tube"`` (one CollisionCapsule ``a``-``b`` of
    ``radius``). ``faces`` are in the piece's own frame: rotated by ``heading`` degrees about
    z, then moved to ``origin``. ``moving`` pieces (the lift, the gate) are kinematic: the
    game moves their frame; the rest never move. ``visible`` False: collision only.
    """

    name: str
    solid: str
    faces: tuple[Face, ...]
    colour: Colour = (1.0, 1.0, 1.0, 1.0)
    origin: Point = (0.0, 0.0, 0.0)
    heading: float = 0.0
    mask: int = LEVEL
    moving: bool = False
    visible: bool = True
    a: Point = (0.0, 0.0, 0.0)
    b: Point = (0.0, 0.0, 0.0)
    radius: float = 0.0

    @property
    def lo(self) -> np.ndarray:
        """(3,) float64: a box's lowest corner, in its own frame."""
        return np.array([p for f in self.faces for p in f.points], float).min(axis=0)

    @property
    def hi(self) -> np.ndarray:
        """(3,) float64: a box's highest corner, in its own frame."""
        return np.array([p for f in self.faces for p in f.points], float).max(axis=0)

    def to_world(self, points: np.ndarray) -> np.ndarray:
        """(k, 3) float64 points of the piece's frame in the world (at rest)."""
        return _frame(np.asarray(points, float), self.heading, np.array(self.origin, float))


def _frame(points: np.ndarray, heading: float, origin: np.ndarray) -> np.ndarray:
    h = math.radians(heading)
    rot = np.array([[math.cos(h), -math.sin(h), 0.0], [math.sin(h), math.cos(h), 0.0],
                    [0.0, 0.0, 1.0]])
    return points @ rot.T + origin


def _face(*points: Point) -> Face:
    return Face(tuple(points))


def _box_faces(lo: Point, hi: Point, skip: tuple[str, ...] = ()) -> tuple[Face, ...]:
    """The faces of the box lo..hi, outward; ``skip`` names faces left out ("-x", "+z", ...)
    where they rest against another piece or the floor."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    faces = {
        "+x": _face((x1, y0, z0), (x1, y1, z0), (x1, y1, z1), (x1, y0, z1)),
        "-x": _face((x0, y1, z0), (x0, y0, z0), (x0, y0, z1), (x0, y1, z1)),
        "+y": _face((x1, y1, z0), (x0, y1, z0), (x0, y1, z1), (x1, y1, z1)),
        "-y": _face((x0, y0, z0), (x1, y0, z0), (x1, y0, z1), (x0, y0, z1)),
        "+z": _face((x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)),
        "-z": _face((x0, y1, z0), (x1, y1, z0), (x1, y0, z0), (x0, y0, z0)),
    }
    return tuple(face for side, face in faces.items() if side not in skip)


def _wall(lo: Point, hi: Point, skip: tuple[str, ...] = ("-z",)) -> Piece:
    return Piece("wall", "polyset", _box_faces(lo, hi, skip), COLOURS["wall"])


# ---------------------------------------------------------------- the static level
T = 1.2  # outer walls' thickness
H = WALL_HEIGHT
OUTER = [
    _wall((-HALF - T, -HALF - T, 0), (HALF + T, -HALF, H)),  # south
    _wall((-HALF - T, HALF, 0), (HALF + T, HALF + T, H)),  # north
    _wall((-HALF - T, -HALF, 0), (-HALF, HALF, H), ("-z", "+y", "-y")),  # west
    _wall((HALF, -HALF, 0), (HALF + T, HALF, H), ("-z", "+y", "-y")),  # east
]

#: The dividing wall: y from 8 to 9, open in the middle (|x| < 8) for the gate, with a
#: doorway 5 wide and 2.4 high in each half.
DIVIDE_Y = (8.0, 9.0)
DOOR_HEIGHT = 2.4
DOORS = ((-22.0, -17.0), (17.0, 22.0))
_y0, _y1 = DIVIDE_Y


def _jamb(x: float, facing: float) -> Face:
    """A doorway's side, at x, up to the lintel, facing +x (facing 1) or -x (-1)."""
    y0, y1 = (_y0, _y1) if facing > 0 else (_y1, _y0)
    return _face((x, y0, 0), (x, y1, 0), (x, y1, DOOR_HEIGHT), (x, y0, DOOR_HEIGHT))


def _beside_doors(lo: Point, hi: Point, skip: tuple[str, ...]) -> Piece:
    """A stretch of the dividing wall; an end at a doorway is a jamb up to the lintel
    (above it the lintel joins on: no face hidden inside the wall)."""
    jambs = tuple(_jamb(x, facing) for x, facing, side in ((lo[0], -1.0, "-x"),
                                                         (hi[0], 1.0, "+x"))
                  if side in skip and any(x in d for d in DOORS))
    return Piece("wall", "polyset", _box_faces(lo, hi, skip) + jambs, COLOURS["wall"])


INNER = [
    _beside_doors((-HALF, _y0, 0), (-22, _y1, H), ("-z", "-x", "+x")),
    _beside_doors((-17, _y0, 0), (-8, _y1, H), ("-z", "-x")),
    _beside_doors((8, _y0, 0), (17, _y1, H), ("-z", "+x")),
    _beside_doors((22, _y0, 0), (HALF, _y1, H), ("-z", "-x", "+x")),
    # The lintels over the doorways, their undersides facing down into them.
    *(_wall((x0, _y0, DOOR_HEIGHT), (x1, _y1, H), ("-x", "+x")) for x0, x1 in DOORS),
]

#: The raised platform (top at PLATFORM_TOP) with a square hole where the lift comes up.
PLATFORM = ((14.0, -26.0), (27.0, -14.0))
PLATFORM_TOP = 1.5
LIFT_XY = ((21.0, -23.0), (25.0, -19.0))
(_px0, _py0), (_px1, _py1) = PLATFORM
(_lx0, _ly0), (_lx1, _ly1) = LIFT_XY
_top = PLATFORM_TOP
#: Ramps up to the platform: one from the west, one from the north.
RAMP_W = ((7.0, -22.0), (14.0, -18.0))  # rises toward +x
RAMP_N = ((19.0, -14.0), (23.0, -7.0))  # rises toward -y
(_wx0, _wy0), (_wx1, _wy1) = RAMP_W
(_nx0, _ny0), (_nx1, _ny1) = RAMP_N
RAMPS = [
    Piece("ramp", "polyset", (
        _face((_wx0, _wy0, 0), (_wx1, _wy0, _top), (_wx1, _wy1, _top), (_wx0, _wy1, 0)),
        _face((_wx0, _wy0, 0), (_wx1, _wy0, 0), (_wx1, _wy0, _top)),
        _face((_wx0, _wy1, 0), (_wx1, _wy1, _top), (_wx1, _wy1, 0)),
    ), COLOURS["ramp"]),
    Piece("ramp", "polyset", (
        _face((_nx0, _ny0, _top), (_nx1, _ny0, _top), (_nx1, _ny1, 0), (_nx0, _ny1, 0)),
        _face((_nx0, _ny1, 0), (_nx0, _ny0, 0), (_nx0, _ny0, _top)),
        _face((_nx1, _ny1, 0), (_nx1, _ny0, _top), (_nx1, _ny0, 0)),
    ), COLOURS["ramp"]),
]

PLATFORM_PIECE = Piece(
    "platform", "polyset",
    (
        # The top, in four convex strips around the lift's hole.
        _face((_px0, _py0, _top), (_px1, _py0, _top), (_px1, _ly0, _top), (_px0, _ly0, _top)),
        _face((_px0, _ly1, _top), (_px1, _ly1, _top), (_px1, _py1, _top), (_px0, _py1, _top)),
        _face((_px0, _ly0, _top), (_lx0, _ly0, _top), (_lx0, _ly1, _top), (_px0, _ly1, _top)),
        _face((_lx1, _ly0, _top), (_px1, _ly0, _top), (_px1, _ly1, _top), (_lx1, _ly1, _top)),
        # The sides; where a ramp joins one, the ramp is the side.
        *_box_faces((_px0, _py0, 0), (_px1, _py1, _top), ("+z", "-z", "-x", "+y")),
        _face((_px0, _wy0, 0), (_px0, _py0, 0), (_px0, _py0, _top), (_px0, _wy0, _top)),
        _face((_px0, _py1, 0), (_px0, _wy1, 0), (_px0, _wy1, _top), (_px0, _py1, _top)),
        _face((_px1, _py1, 0), (_nx1, _py1, 0), (_nx1, _py1, _top), (_px1, _py1, _top)),
        _face((_nx0, _py1, 0), (_px0, _py1, 0), (_px0, _py1, _top), (_nx0, _py1, _top)),
    ),
    COLOURS["platform"],
)

FLOOR = Piece("floor", "polyset",
              (_face((-HALF, -HALF, 0), (HALF, -HALF, 0), (HALF, HALF, 0), (-HALF, HALF, 0)),),
              visible=False)

#: Crates: (x, y, heading in degrees); each a cube of side CRATE standing on the floor.
CRATE = 2.4
CRATES_AT = [(-20.0, -20.0, 0.0), (-17.6, -20.0, 0.0), (-20.0, -17.6, 0.0),
             (-10.0, -10.0, 25.0), (25.5, -4.0, 0.0), (-25.0, 2.0, 40.0), (-16.0, 26.0, 15.0),
             (16.0, 26.0, -20.0)]
_c = CRATE / 2
CRATES = [
    Piece("crate", "box", _box_faces((-_c, -_c, 0), (_c, _c, CRATE), ("-z",)), COLOURS["crate"],
          origin=(x, y, 0.0), heading=h)
    for x, y, h in CRATES_AT
]

#: Pillars: upright capsules of PILLAR_RADIUS from the floor to PILLAR_HEIGHT (the lower
#: cap is under the floor); drawn as a cylinder with a round top.
PILLAR_RADIUS = 1.6
PILLAR_HEIGHT = 4.5
PILLARS_AT = [(-24.0, -10.0), (-6.0, -22.0), (2.0, -6.0), (-11.0, 14.0), (11.0, 14.0),
              (-24.0, 25.0), (24.0, 25.0)]


def _pillar_faces(x: float, y: float, segments: int = 16, rings: int = 3) -> tuple[Face, ...]:
    """A capsule: a cylinder from the floor to PILLAR_HEIGHT with a hemisphere on each end
    (the lower one under the floor, out of sight). Panda3D's egg loader fits a capsule to
    these vertices: the radius from the farthest vertex off the axis, the length so the caps
    enclose every vertex, centred on the vertices' centroid, so they must be symmetric about
    the capsule's middle to give exactly this one."""
    r, top = PILLAR_RADIUS, PILLAR_HEIGHT
    faces = []
    angles = [2 * math.pi * j / segments for j in range(segments + 1)]
    rims = [(math.cos(a), math.sin(a)) for a in angles]
    for (c0, s0), (c1, s1) in zip(rims, rims[1:]):
        faces.append(Face(
            ((x + r * c0, y + r * s0, 0.0), (x + r * c1, y + r * s1, 0.0),
             (x + r * c1, y + r * s1, top), (x + r * c0, y + r * s0, top)),
            ((c0, s0, 0.0), (c1, s1, 0.0), (c1, s1, 0.0), (c0, s0, 0.0)),
        ))
    lat = [math.pi / 2 * i / rings for i in range(rings + 1)]  # 0 at the rim, pi/2 the pole
    for end, base in ((1.0, top), (-1.0, 0.0)):
        for la0, la1 in zip(lat, lat[1:]):
            for (c0, s0), (c1, s1) in zip(rims, rims[1:]):
                ring = [(c0, s0, la0), (c1, s1, la0), (c1, s1, la1), (c0, s0, la1)]
                if la1 == lat[-1]:  # the pole: a triangle
                    ring = ring[:3]
                if end < 0:  # the lower cap, seen from below: the other way round
                    ring = ring[::-1]
                normals = tuple((c * math.cos(la), s * math.cos(la), end * math.sin(la))
                                for c, s, la in ring)
                faces.append(Face(
                    tuple((x + r * n[0], y + r * n[1], base + r * n[2]) for n in normals),
                    normals,
                ))
    return tuple(faces)


PILLARS = [
    Piece("pillar", "tube", _pillar_faces(x, y), COLOURS["pillar"], mask=PILLAR,
          a=(x, y, 0.0), b=(x, y, PILLAR_HEIGHT), radius=PILLAR_RADIUS)
    for x, y in PILLARS_AT
]

# ---------------------------------------------------------------- the kinematic pieces
#: The lift: a piston filling the platform's hole, its top from LIFT_LOW (flush with the
#: platform) up by LIFT_RISE and back, every LIFT_PERIOD seconds, first down at LIFT_DOWN
#: seconds. Tall enough that its bottom never comes above the floor, so no pit ever opens.
LIFT_LOW = PLATFORM_TOP
LIFT_RISE = 3.5
LIFT_PERIOD = 8.0
LIFT_DOWN = 2.0
_lift_h = LIFT_RISE + PLATFORM_TOP + 0.5
LIFT = Piece(
    "lift", "box",
    _box_faces((-(_lx1 - _lx0) / 2, -(_ly1 - _ly0) / 2, -_lift_h), ((_lx1 - _lx0) / 2,
               (_ly1 - _ly0) / 2, 0.0)),
    COLOURS["lift"], origin=((_lx0 + _lx1) / 2, (_ly0 + _ly1) / 2, LIFT_LOW), moving=True,
)

#: The gate: a bar turning about a vertical axis in the dividing wall's middle gap, its
#: tips passing the wall's ends 2.5 units clear (more than any ball is wide).
GATE_PIVOT = (0.0, sum(DIVIDE_Y) / 2, 0.0)
GATE_HALF_LENGTH = 5.5
GATE_SPIN = 1.2  # radians per second
GATE = Piece(
    "gate", "box", _box_faces((-GATE_HALF_LENGTH, -0.4, 0.0), (GATE_HALF_LENGTH, 0.4, 2.6)),
    COLOURS["gate"], origin=GATE_PIVOT, moving=True,
)


def lift_height(time: float) -> float:
    """The lift's top (its frame's z) at ``time`` seconds: a smooth rise and fall."""
    phase = 2 * math.pi * (time - LIFT_DOWN) / LIFT_PERIOD
    return LIFT_LOW + LIFT_RISE * 0.5 * (1.0 - math.cos(phase))


def lift_speed(time: float) -> float:
    """d/dt of :func:`lift_height`, units per second."""
    phase = 2 * math.pi * (time - LIFT_DOWN) / LIFT_PERIOD
    return LIFT_RISE * math.pi / LIFT_PERIOD * math.sin(phase)


def gate_heading(time: float) -> float:
    """The gate's heading in degrees at ``time`` seconds."""
    return math.degrees(GATE_SPIN * time) % 360.0


#: Every collision piece, in the order of the egg (its ``piece`` tag is the index here).
PIECES: tuple[Piece, ...] = (FLOOR, *OUTER, *INNER, PLATFORM_PIECE, *RAMPS, *CRATES, *PILLARS,
                             LIFT, GATE)

#: The visible floor: a checkerboard of TILE-wide squares (the FLOOR piece collides).
TILE = 4.0


def _tiles() -> tuple[tuple[Face, Colour], ...]:
    count = round(2 * HALF / TILE)
    tiles = []
    for i in range(count):
        for j in range(count):
            x0, y0 = -HALF + i * TILE, -HALF + j * TILE
            colour = COLOURS["floor_light" if (i + j) % 2 == 0 else "floor_dark"]
            tiles.append((_face((x0, y0, 0), (x0 + TILE, y0, 0), (x0 + TILE, y0 + TILE, 0),
                                (x0, y0 + TILE, 0)), colour))
    return tuple(tiles)


TILES = _tiles()


# ---------------------------------------------------------------- derived arrays
def triangles(pieces: tuple[Piece, ...] = PIECES) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                           np.ndarray]:
    """The polyset pieces' polygons fanned into triangles, in the world.

    Returns
    -------
    a, b, c : (k, 3) float64
        Corners, counter-clockwise seen from the front.
    piece : (k,) int64
        Index into ``pieces`` of each triangle's piece.
    """
    a, b, c, owner = [], [], [], []
    for index, piece in enumerate(pieces):
        if piece.solid != "polyset":
            continue
        for face in piece.faces:
            p = piece.to_world(np.array(face.points, float))
            for i in range(1, len(p) - 1):
                a.append(p[0])
                b.append(p[i])
                c.append(p[i + 1])
                owner.append(index)
    return (np.array(a).reshape(-1, 3), np.array(b).reshape(-1, 3),
            np.array(c).reshape(-1, 3), np.array(owner, np.int64))


def _footprints() -> tuple[np.ndarray, np.ndarray]:
    """(k, 2) lower and upper corners of every piece's outline on the floor (rotated crates
    and the gate's whole turning disc by their bounding squares)."""
    lo, hi = [], []
    for piece in PIECES:
        if piece is FLOOR:
            continue
        if piece is GATE:
            reach = math.hypot(GATE_HALF_LENGTH, 0.4)
            lo.append(np.array(GATE_PIVOT[:2]) - reach)
            hi.append(np.array(GATE_PIVOT[:2]) + reach)
            continue
        points = piece.to_world(np.array([p for f in piece.faces for p in f.points], float))
        lo.append(points[:, :2].min(axis=0))
        hi.append(points[:, :2].max(axis=0))
    return np.array(lo), np.array(hi)


_FOOT_LO, _FOOT_HI = _footprints()


def footprint_clearance(points: np.ndarray) -> np.ndarray:
    """(n,) float64: how far each point's (x, y) is from the nearest piece's outline (0
    inside one), for placing things clear of the level. points : (n, 2 or 3) float64."""
    xy = np.asarray(points, float)[:, None, :2]
    gap = np.maximum(np.maximum(_FOOT_LO[None] - xy, xy - _FOOT_HI[None]), 0.0)
    return np.linalg.norm(gap, axis=2).min(axis=1)
