"""The demo level, shared by the windowed app, the screenshot and the headless run.

The arena is a model, ``arena.egg`` (written by :mod:`demo.make_arena` from
:mod:`demo.arena`): polygon walls with doorways, a floor, ramps up to a raised platform,
crates (boxes) and pillars (capsules), all ``<Collide>`` geometry, plus two kinematic pieces
the level moves itself: a lift rising out of the platform and a gate turning in the
dividing wall. Targets move on fixed circles and lines (kinematic too), pickups are sensors.
Balls and projectiles keep their centres at height :data:`HEIGHT`, so the game is planar
while the collision is 3D; the player walks: it sinks at :data:`PLAYER_SINK` and its
``slide`` response keeps it on the floor, up the ramps, onto the platform and the lift.

Both systems see the same level: Panda3D's traverser through the egg's own CollisionNodes,
the plugin through ``add_collision_nodes(static_level, static=True)`` and
``add_collision_node(..., response="kinematic")`` for the lift and the gate.

Each frame, in task order:

==========  =====  =========================================================================
task        sort   what it does
==========  =====  =========================================================================
update      10     spawn, run the script, move the lift, the gate and the targets, move
                   every mover by its velocity (setFluidPos), compute the frame's expected
                   hits (:mod:`demo.truth`)
timer       24     start the collision system's stopwatch
collision   25     the system under test: its events reach the level's handlers, which
                   bounce balls (reflect the velocity about ``entry.getSurfaceNormal``),
                   score target hits and collect pickups
timer       26     stop the stopwatch
audit       27     compare expected hits with the events received; check where the
                   movers ended; retire spent projectiles
==========  =====  =========================================================================

How the audit counts, per system (``Level.stats[name]``):

- *caught*: a hit the ground truth expects (each mover's earliest hit along its straight
  path, and every pickup it passes) for which the system sent an event;
- *excused*: no event, but the straight path no longer applied by then: the mover or what
  it hits had already been stopped, deflected or pushed earlier in the frame (by a contact
  the truth does not model, such as a chain of ball collisions, or by the system holding
  it);
- *missed*: no event and no excuse;
- *tunnelled*: objects that had a missed solid hit, ended a frame outside the room or
  under the floor, or whose real move went at least half their radius behind a wall's
  front face or into a crate or pillar, or that end it at least half inside the lift, the
  gate or a target, with or without an event.
"""

from __future__ import annotations

import colorsys
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from direct.showbase.DirectObject import DirectObject
from panda3d.core import (
    AmbientLight,
    ClockObject,
    DirectionalLight,
    Filename,
    NodePath,
    TransparencyAttrib,
)

from . import arena, geometry
from .arena import HALF, LEVEL, PILLAR
from .make_arena import EGG_PATH
from .systems import SYSTEMS, TASK_SORT, CollisionSystem
from .truth import (
    Boxes,
    Capsules,
    Movers,
    Scene,
    Spheres,
    Triangles,
    expected_hits,
    went_into,
)

__all__ = ["Body", "Level", "Stats", "HALF", "HEIGHT", "PATTERN"]

#: Height of the balls' and projectiles' centres above the floor.
HEIGHT = 1.0
#: Event name pattern of both systems: e.g. ``ball-into-wall``.
PATTERN = "%fn-into-%in"

# Collide-mask bits, by what a body is (into) and what it hits (from). Every piece of the
# level but the pillars is LEVEL (the egg says so too).
TARGET, BALL, PICKUP = 4, 8, 16
PIECE_KINDS = ("wall", "floor", "ramp", "platform", "crate", "pillar", "lift", "gate")
INTO = {**{kind: LEVEL for kind in PIECE_KINDS}, "pillar": PILLAR, "target": TARGET,
        "ball": BALL, "player": BALL, "pickup": PICKUP, "projectile": 0}
FROM = {"projectile": LEVEL | PILLAR | TARGET | PICKUP,
        "ball": LEVEL | PILLAR | TARGET | BALL,
        "player": LEVEL | PILLAR | TARGET | BALL | PICKUP}
MOVERS = ("player", "ball", "projectile")
SOLID_INTO = (*PIECE_KINDS, "target", "ball", "player")

PROJECTILE_SPEED = 420.0  # units per second: 7 units a frame at 60 Hz
PROJECTILE_RADIUS = 0.3
PROJECTILE_LIFE = 1.6  # seconds
MAX_PROJECTILES = 120
PLAYER_SPEED = 16.0
#: The player's steady fall (units per second): not gravity, a walker's pull to the
#: ground; the slide response turns it into walking along whatever it stands on.
PLAYER_SINK = 5.0
PLAYER_START = (0.0, -20.0, 1.0)
BALL_MAX_SPEED = 60.0
PLAYER_RADIUS = 0.95
TARGET_RADIUS = 1.3
PICKUP_RADIUS = 0.8
PICKUPS = 8
CANNON = (0.0, -HALF + 2.5)
MUZZLE = 2.2  # distance of the muzzle from the cannon's pivot
FIRE_EVERY = 4  # frames between shots while firing

# The scripted player's route: waypoints (x, y, not before this time in seconds). The lift
# is down at arena.LIFT_DOWN and at its top LIFT_PERIOD / 2 later.
ROUTE = [(5.0, -20.0, 0.0), (15.5, -20.0, 0.0), (23.0, -21.0, 5.0), (23.0, -15.5, 0.0),
         (21.0, -4.0, 0.0)]
LEG_LIMIT = 3.0  # seconds on one leg of the route before the player moves on
# Targets: (centre x, centre y, radius x, radius y, angular speed, phase); an ellipse, or a
# line when one radius is 0. Each path keeps 2 units clear of the level (a ball is at most
# 1.6 wide), so a target never squeezes a ball against a wall.
TARGETS = [(0.0, 21.5, 3.0, 3.0, 2.4, 0.0), (-20.0, 17.0, 4.0, 3.0, -2.4, 1.0),
           (20.0, 17.0, 4.0, 3.0, 2.4, 2.0), (0.0, -14.0, 5.0, 0.0, 2.0, 0.5),
           (-16.0, -1.0, 3.0, 4.0, 3.0, 1.5), (12.0, -1.0, 0.0, 4.0, 2.6, 0.0)]
PALETTE = {
    "target": (0.95, 0.28, 0.25, 1.0),
    "target_ring": (0.98, 0.96, 0.92, 1.0),
    "player": (0.15, 0.55, 1.0, 1.0),
    "halo": (0.55, 0.85, 1.0, 1.0),
    "pickup": (1.0, 0.84, 0.10, 1.0),
    "projectile": (1.0, 0.95, 0.45, 1.0),
    "cannon": (0.50, 0.54, 0.60, 1.0),
    "barrel": (0.95, 0.45, 0.10, 1.0),
}


@dataclass(eq=False)
class Body:
    """One object of the level: its node, its collider, and the game's state for it.

    A piece of the arena (``piece`` is its index in :data:`demo.arena.PIECES`) has the
    CollisionNode the egg made as ``np``; every other body is a node the level made.
    """

    uid: int
    kind: str
    np: NodePath
    radius: float = 0.0
    piece: int | None = None
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    # The gate's turning: radians per second about the vertical axis through pivot.
    spin: float = 0.0
    pivot: np.ndarray = field(default_factory=lambda: np.zeros(3))
    # This frame's straight path (centre at its start and, by velocity, at its end).
    p0: np.ndarray = field(default_factory=lambda: np.zeros(3))
    p1: np.ndarray = field(default_factory=lambda: np.zeros(3))
    t_hit: float = 2.0  # earliest contact time the game put it back to (traverser mode)
    born: float = 0.0
    dead: bool = False
    collected: bool = False
    flash: float = 0.0
    path: tuple[float, ...] = ()
    visual: NodePath | None = None

    @property
    def is_mover(self) -> bool:
        return self.kind in MOVERS

    @property
    def sensor(self) -> bool:
        return self.kind == "pickup"

    @property
    def static(self) -> bool:
        return self.kind == "pickup" or (self.piece is not None
                                         and not arena.PIECES[self.piece].moving)

    @property
    def response(self) -> str:
        if self.kind in ("target", "lift", "gate"):
            return "kinematic"
        return {"player": "slide", "pickup": "sensor"}.get(self.kind, "rewind")

    @property
    def from_mask(self) -> int:
        return FROM.get(self.kind, 0)

    @property
    def into_mask(self) -> int:
        return INTO[self.kind]

    def velocity_at(self, point: np.ndarray) -> np.ndarray:
        """(3,) the body's velocity at ``point`` (world): its own plus its turning."""
        arm = point - self.pivot
        return self.velocity + self.spin * np.array([-arm[1], arm[0], 0.0])


@dataclass
class Stats:
    """Running counts for one collision system."""

    frames: int = 0
    contacts: int = 0
    caught: int = 0
    missed: int = 0
    excused: int = 0  # the truth's straight path no longer applied (a body was stopped earlier)
    tunnelled: set[int] = field(default_factory=set)
    seconds: float = 0.0
    last_ms: float = 0.0
    recent_ms: float = 0.0  # smoothed over roughly the last 20 frames
    score: int = 0

    @property
    def mean_ms(self) -> float:
        return 1000.0 * self.seconds / self.frames if self.frames else 0.0


class Level:
    """The arena, its objects and the game logic, driven by tasks on ``base.taskMgr``.

    Parameters
    ----------
    base : ShowBase
    seed : int
        Seed of every random choice (ball placement, colours, pickups).
    balls : int
        Bouncing balls at the start.
    system : str
        ``"plugin"`` or ``"traverser"``.
    autofire, autopilot : bool
        The scripted cannon and the scripted player (headless runs use both).
    """

    def __init__(
        self,
        base: Any,
        *,
        seed: int = 7,
        balls: int = 60,
        system: str = "plugin",
        autofire: bool = True,
        autopilot: bool = True,
    ) -> None:
        if system not in SYSTEMS:
            raise ValueError(f"system must be one of {sorted(SYSTEMS)}, got {system!r}")
        self.base = base
        self.render: NodePath = base.render
        self.clock = ClockObject.getGlobalClock()
        self.seed = seed
        self.initial_balls = balls
        self.autofire = autofire
        self.autopilot = autopilot
        self.firing = False  # trigger held (space or mouse)
        self.steer = np.zeros(3)  # player input, unit-free direction in the xy plane
        self.aim: float | None = None  # cannon heading (degrees) chosen by the user
        self.stats = {name: Stats() for name in SYSTEMS}
        self.on_frame: list[Callable[[], None]] = []  # called after each audit (the HUD)
        self._uid = 0
        self.time = 0.0
        self._templates = {
            "sphere": geometry.sphere(1.0),
            "small": geometry.sphere(1.0, rings=6, segments=10),
            "pickup": geometry.box(1.0, 1.0, 1.0),
            "shadow": geometry.disc(1.0),
        }
        shadow = self._templates["shadow"]
        shadow.setColor(0, 0, 0, 0.38)
        shadow.setTransparency(TransparencyAttrib.MAlpha)
        shadow.setLightOff(1)
        shadow.setDepthWrite(False)
        shadow.setBin("transparent", 0)
        self.root = self.render.attachNewNode("demo-level")
        self._build_scenery()
        self.system: CollisionSystem = SYSTEMS[system](base, PATTERN)
        self.debug = False
        self._register_arena()
        self._populate()
        self._events = DirectObject()
        self._accept_events()
        self._tasks = [
            base.taskMgr.add(self._update, "demo-update", sort=10),
            base.taskMgr.add(self._timer_start, "demo-timer-start", sort=TASK_SORT - 1),
            base.taskMgr.add(self._timer_stop, "demo-timer-stop", sort=TASK_SORT + 1),
            base.taskMgr.add(self._audit, "demo-audit", sort=TASK_SORT + 2),
        ]

    # ------------------------------------------------------------------ building
    def _build_scenery(self) -> None:
        """Lights, the arena model and the cannon: what the level never rebuilds."""
        ambient = AmbientLight("ambient")
        ambient.setColor((0.42, 0.42, 0.48, 1))
        sun = DirectionalLight("sun")
        sun.setColor((0.85, 0.82, 0.75, 1))
        self._lights = [self.root.attachNewNode(ambient), self.root.attachNewNode(sun)]
        self._lights[1].setHpr(35, -62, 0)
        for light in self._lights:
            self.root.setLight(light)
        self.arena = self.base.loader.loadModel(Filename.fromOsSpecific(str(EGG_PATH)))
        self.arena.reparentTo(self.root)
        self.static_level = self.arena.find("**/static")
        self.lift_rig = self.arena.find("**/lift-rig")
        self.gate_rig = self.arena.find("**/gate-rig")
        self.cannon = self.root.attachNewNode("cannon")
        self.cannon.setPos(CANNON[0], CANNON[1], 0)
        base_block = geometry.cylinder(1.5, 1.2)
        base_block.reparentTo(self.cannon)
        base_block.setColor(PALETTE["cannon"])
        self.barrel = geometry.cylinder(0.45, MUZZLE)
        self.barrel.reparentTo(self.cannon)
        self.barrel.setPos(0, 0, HEIGHT)
        self.barrel.setP(-90)  # the cylinder's axis from +z to +y
        self.barrel.setColor(PALETTE["barrel"])

    def _register_arena(self) -> None:
        """A body for each of the egg's CollisionNodes (its ``piece`` tag says which piece
        of :mod:`demo.arena` it is), and the truth's arrays of the fixed ones."""
        self.pieces: dict[int, Body] = {}  # by piece index
        for path in self.arena.findAllMatches("**/+CollisionNode"):
            index = int(path.getNetTag("piece"))
            self.pieces[index] = self._body(path.getName(), path, piece=index)
        self.lift = self.pieces[arena.PIECES.index(arena.LIFT)]
        self.gate = self.pieces[arena.PIECES.index(arena.GATE)]
        self.gate.pivot = np.array(arena.GATE_PIVOT)
        self.gate.spin = arena.GATE_SPIN
        self._poses = self._place_movers(0.0, teleport=True)
        self._moving_boxes = (*self._poses, *self._poses)
        self.system.add_level(self.static_level, [b for b in self.pieces.values() if b.static])
        for body in (self.lift, self.gate):
            self.system.add(body)
        a, b, c, owner = arena.triangles()
        uid = np.array([self.pieces[i].uid for i in owner], np.int64)
        self._triangles = Triangles(
            a, b, c, np.array([arena.PIECES[i].mask for i in owner], np.int64), uid)
        capsules = [i for i, p in enumerate(arena.PIECES) if p.solid == "tube"]
        self._capsules = Capsules(
            _rows([arena.PIECES[i].a for i in capsules]),
            _rows([arena.PIECES[i].b for i in capsules]),
            np.array([arena.PIECES[i].radius for i in capsules]),
            np.array([arena.PIECES[i].mask for i in capsules], np.int64),
            np.array([self.pieces[i].uid for i in capsules], np.int64),
        )
        boxes = [i for i, p in enumerate(arena.PIECES) if p.solid == "box"]
        self._box_lo = _rows([arena.PIECES[i].lo for i in boxes])
        self._box_hi = _rows([arena.PIECES[i].hi for i in boxes])
        self._box_origin = _rows([arena.PIECES[i].origin for i in boxes])
        self._box_heading = np.radians([arena.PIECES[i].heading for i in boxes])
        self._box_mask = np.array([arena.PIECES[i].mask for i in boxes], np.int64)
        self._box_uid = np.array([self.pieces[i].uid for i in boxes], np.int64)
        # The rows of the lift and the gate, in the order _place_movers gives their poses.
        self._box_moving = [boxes.index(self.lift.piece), boxes.index(self.gate.piece)]

    def _place_movers(self, time: float, *, teleport: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Put the lift and the gate where they are at ``time``; (2, 3) origins and (2,)
        headings (radians) of their frames, lift first. Moved fluidly (setFluidZ; setH
        keeps the previous transform too), so the traverser and the plugin both sweep the
        move, unless ``teleport``."""
        self.lift_rig.setFluidZ(arena.lift_height(time))
        self.gate_rig.setH(arena.gate_heading(time))
        if teleport:
            for rig in (self.lift_rig, self.gate_rig):
                rig.node().resetPrevTransform()
        self.lift.velocity = np.array([0.0, 0.0, arena.lift_speed(time)])
        return (_rows([tuple(self.lift_rig.getPos(self.render)),
                       tuple(self.gate_rig.getPos(self.render))]),
                np.radians([self.lift_rig.getH(self.render), self.gate_rig.getH(self.render)]))

    def _populate(self) -> None:
        """Every body of a fresh level, registered with the current system."""
        self.rng = np.random.default_rng(self.seed)
        self.time = 0.0
        self.frame = 0
        self.bodies: dict[int, Body] = {}
        self._by_kind: dict[str, list[Body]] = {k: [] for k in INTO}
        self._contacts: list[tuple[int, int, float, bool]] = []
        self._expected: list[tuple[Body, int, float, bool]] = []
        self._next_shot = 0
        self._cannon_heading = 0.0
        self._leg = 0  # the player's place along ROUTE
        self._leg_start = 0.0
        for spec in TARGETS:
            node = self.root.attachNewNode("target")
            node.setPos(*self._target_pos(spec, 0.0))
            visual = self._templates["sphere"].copyTo(node)
            visual.setScale(TARGET_RADIUS)
            visual.setColor(PALETTE["target"])
            ring = geometry.cylinder(TARGET_RADIUS * 1.04, 0.5, segments=24)
            ring.reparentTo(node)
            ring.setZ(-0.25)
            ring.setColor(PALETTE["target_ring"])
            self._shadow(node, TARGET_RADIUS)
            body = self._body("target", node, radius=TARGET_RADIUS, visual=visual)
            body.path = spec
            self._add(body)
        player = self.root.attachNewNode("player")
        player.setPos(*PLAYER_START)
        visual = self._templates["sphere"].copyTo(player)
        visual.setScale(PLAYER_RADIUS)
        visual.setColor(PALETTE["player"])
        halo = geometry.disc(PLAYER_RADIUS * 1.6, segments=28)
        halo.reparentTo(player)
        halo.setPos(0, 0, 0.03 - PLAYER_RADIUS)  # at its feet, wherever it stands
        halo.setColor(PALETTE["halo"])
        halo.setLightOff(1)
        self.player = self._add(self._body("player", player, radius=PLAYER_RADIUS, visual=visual))
        for _ in range(PICKUPS):
            node = self.root.attachNewNode("pickup")
            node.setPos(*self._free_spot(PICKUP_RADIUS))
            visual = self._templates["pickup"].copyTo(node)
            visual.setScale(PICKUP_RADIUS * 1.1)
            visual.setHpr(0, 45, 45)
            visual.setColor(PALETTE["pickup"])
            self._add(self._body("pickup", node, radius=PICKUP_RADIUS, visual=visual))
        self.spawn_balls(self.initial_balls)

    def _shadow(self, node: NodePath, radius: float) -> None:
        """A soft dark disc on the floor under a sphere: it reads as standing on it."""
        shadow = self._templates["shadow"].copyTo(node)
        shadow.setPos(0.25 * radius, 0.15 * radius, 0.02 - HEIGHT)
        shadow.setScale(radius * 1.05)

    def _body(self, kind: str, node: NodePath, **kwargs: Any) -> Body:
        self._uid += 1
        body = Body(uid=self._uid, kind=kind, np=node, born=self.time, **kwargs)
        node.setPythonTag("body", body)
        return body

    def _add(self, body: Body) -> Body:
        self.bodies[body.uid] = body
        self._by_kind[body.kind].append(body)
        self.system.add(body)
        return body

    def _retire(self, body: Body) -> None:
        self.system.remove(body)
        del self.bodies[body.uid]
        self._by_kind[body.kind].remove(body)
        body.np.clearPythonTag("body")
        body.np.removeNode()

    @staticmethod
    def _target_pos(spec: tuple[float, ...], t: float) -> tuple[float, float, float]:
        cx, cy, rx, ry, omega, phase = spec
        a = omega * t + phase
        if rx == 0 or ry == 0:  # a line: back and forth
            return (cx + rx * math.sin(a), cy + ry * math.sin(a), HEIGHT)
        return (cx + rx * math.cos(a), cy + ry * math.sin(a), HEIGHT)

    @staticmethod
    def _target_velocity(spec: tuple[float, ...], t: float) -> np.ndarray:
        """d/dt of :meth:`_target_pos`, units per second."""
        cx, cy, rx, ry, omega, phase = spec
        a = omega * t + phase
        if rx == 0 or ry == 0:
            return np.array([rx * omega * math.cos(a), ry * omega * math.cos(a), 0.0])
        return np.array([-rx * omega * math.sin(a), ry * omega * math.cos(a), 0.0])

    def _occupied(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, 3) centres and (k,) clearance radii of everything a new body must avoid."""
        centres, radii = [], []
        for body in self.bodies.values():
            centres.append(tuple(body.np.getPos(self.render)))
            radii.append(body.radius)
        for spec in TARGETS:  # keep clear of the targets' whole paths, sampled
            for t in np.linspace(0, 2 * math.pi / abs(spec[4]), 24, endpoint=False):
                centres.append(self._target_pos(spec, float(t)))
                radii.append(TARGET_RADIUS + 0.5)
        centres.append((CANNON[0], CANNON[1], HEIGHT))
        radii.append(MUZZLE + 1.0)
        return np.array(centres, float).reshape(-1, 3), np.array(radii, float)

    def _free_spot(self, radius: float) -> tuple[float, float, float]:
        """A random centre at HEIGHT where a sphere of radius overlaps nothing."""
        centres, radii = self._occupied()
        for _ in range(1000):
            x, y = self.rng.uniform(-HALF + radius + 0.5, HALF - radius - 0.5, 2)
            p = np.array([x, y, HEIGHT])
            if (np.all(np.linalg.norm(centres - p, axis=1) > radii + radius + 0.05)
                    and arena.footprint_clearance(p[None])[0] > radius + 0.3):
                return (float(x), float(y), HEIGHT)
        raise RuntimeError("the arena is full: no free spot for another ball")

    # ------------------------------------------------------------------ spawning
    def spawn_balls(self, count: int) -> None:
        """Add ``count`` bouncing balls at free random spots with random velocities."""
        centres, radii = self._occupied()
        placed = 0
        tries = 0
        while placed < count:
            tries += 1
            if tries > 200 * (count + 10):
                raise RuntimeError("the arena is full: no free spot for another ball")
            radius = float(self.rng.uniform(0.45, 0.8))
            x, y = self.rng.uniform(-HALF + radius + 0.2, HALF - radius - 0.2, 2)
            p = np.array([x, y, HEIGHT])
            if not (np.all(np.linalg.norm(centres - p, axis=1) > radii + radius + 0.05)
                    and arena.footprint_clearance(p[None])[0] > radius + 0.3):
                continue
            centres = np.vstack([centres, p])
            radii = np.append(radii, radius)
            speed = float(self.rng.uniform(20.0, 50.0))
            heading = float(self.rng.uniform(0, 2 * math.pi))
            hue = float(self.rng.uniform(0, 1))
            node = self.root.attachNewNode("ball")
            node.setPos(float(x), float(y), HEIGHT)
            visual = self._templates["small" if count > 100 else "sphere"].copyTo(node)
            visual.setScale(radius)
            visual.setColor(*colorsys.hsv_to_rgb(hue, 0.55, 0.95), 1.0)
            self._shadow(node, radius)
            body = self._body("ball", node, radius=radius, visual=visual)
            body.velocity = np.array([speed * math.cos(heading), speed * math.sin(heading), 0.0])
            self._add(body)
            placed += 1

    def _fire(self) -> None:
        if len(self._by_kind["projectile"]) >= MAX_PROJECTILES:
            return
        heading = math.radians(self._cannon_heading)
        direction = np.array([-math.sin(heading), math.cos(heading), 0.0])
        start = np.array([CANNON[0], CANNON[1], HEIGHT]) + direction * MUZZLE
        node = self.root.attachNewNode("projectile")
        node.setPos(*start)
        visual = self._templates["small"].copyTo(node)
        visual.setScale(PROJECTILE_RADIUS)
        visual.setColor(PALETTE["projectile"])
        visual.setLightOff(1)
        body = self._body("projectile", node, radius=PROJECTILE_RADIUS, visual=visual)
        body.velocity = direction * PROJECTILE_SPEED
        self._add(body)

    # ------------------------------------------------------------------ per frame
    def _script(self) -> None:
        """The fixed script: the cannon sweeps and fires; the player walks up the ramp onto
        the lift, rides it up, steps off onto the platform and down the other ramp, then
        drives figure eights."""
        if self.autofire and self.aim is None:
            self._cannon_heading = 62.0 * math.sin(0.9 * self.time)
        if not self.autopilot:
            return
        while self._leg < len(ROUTE):
            x, y, leave = ROUTE[self._leg]
            offset = np.array([x, y, 0.0]) - self.player.np.getPos(self.render)
            offset[2] = 0.0
            # A blocked player (a system that cannot climb the lift's edge, say) gives up.
            stuck = self.time > max(leave, self._leg_start) + LEG_LIMIT
            if float(np.linalg.norm(offset)) > 0.4 and not stuck:
                self.steer = offset
                return
            if self.time < leave:
                self.steer = np.zeros(3)
                return
            self._leg += 1
            self._leg_start = self.time
        t = self.time
        self.steer = np.array([math.cos(0.45 * t), math.sin(0.9 * t), 0.0])

    def _update(self, task: Any) -> int:
        dt = self.clock.getDt()
        self.time += dt
        self.frame += 1
        self._contacts.clear()
        self._script()
        if self.aim is not None:
            self._cannon_heading = self.aim
        self.cannon.setH(self._cannon_heading)

        for pickup in self._by_kind["pickup"]:
            if pickup.collected:
                pickup.collected = False
                pickup.np.setPos(*self._free_spot(PICKUP_RADIUS))
                self.system.teleport(pickup)
            if pickup.visual is not None:
                pickup.visual.setH(pickup.visual.getH() + 120 * dt)
        if (self.autofire or self.firing) and self.frame >= self._next_shot:
            self._fire()
            self._next_shot = self.frame + FIRE_EVERY

        origin0, heading0 = self._poses
        origin1, heading1 = self._place_movers(self.time)
        # Headings read back come in (-pi, pi]: unwrap, the gate turns a little a frame.
        heading1 = heading0 + (heading1 - heading0 + math.pi) % (2 * math.pi) - math.pi
        self._poses = (origin1, heading1)
        self._moving_boxes = (origin0, heading0, origin1, heading1)
        for target in self._by_kind["target"]:
            target.p0 = np.array(target.np.getPos(self.render), float)
            target.p1 = _f32(np.array(self._target_pos(target.path, self.time)))
            target.velocity = self._target_velocity(target.path, self.time)
            target.np.setFluidPos(*target.p1)
            if target.flash > 0 and target.visual is not None:
                target.flash -= dt
                glow = 1.0 + 2.0 * max(target.flash, 0.0) / 0.2
                target.visual.setColorScale(glow, glow, glow * 0.6, 1)

        steer = self.steer.copy()
        length = float(np.linalg.norm(steer))
        walk = steer / length * PLAYER_SPEED if length > 0 else np.zeros(3)
        self.player.velocity = walk + np.array([0.0, 0.0, -PLAYER_SINK])
        movers = self._movers()
        for body in movers:
            body.t_hit = 2.0
            body.p0 = np.array(body.np.getPos(self.render), float)
            # The node stores float32: the truth uses exactly what the system will read.
            body.p1 = _f32(body.p0 + body.velocity * dt)
            body.np.setFluidPos(*body.p1)
        self._compute_expected(movers)
        return task.cont

    def _movers(self) -> list[Body]:
        return [*self._by_kind["player"], *self._by_kind["ball"], *self._by_kind["projectile"]]

    def _scene(self, *, end: bool = False) -> Scene:
        """The truth's view of everything but the movers: the arena's fixed triangles and
        capsules, its boxes (crates fixed; the lift and the gate over this frame's move),
        and the targets and pickups (targets over their move; ``end``: where they are)."""
        spheres = [*self._by_kind["target"], *self._by_kind["pickup"]]
        for body in spheres:
            if body.kind != "target" or end:
                body.p1 = np.array(body.np.getPos(self.render), float)
                if body.kind != "target":
                    body.p0 = body.p1
        origin0, heading0 = self._box_origin.copy(), self._box_heading.copy()
        origin1, heading1 = origin0.copy(), heading0.copy()
        rows = self._box_moving
        origin0[rows], heading0[rows], origin1[rows], heading1[rows] = self._moving_boxes
        return Scene(
            Spheres(_rows([b.p0 for b in spheres]), _rows([b.p1 for b in spheres]),
                    np.array([b.radius for b in spheres]),
                    np.array([b.into_mask for b in spheres], np.int64),
                    np.array([b.sensor for b in spheres], bool),
                    np.array([b.uid for b in spheres], np.int64)),
            self._triangles,
            Boxes(self._box_lo, self._box_hi, origin0, heading0, origin1, heading1,
                  self._box_mask, self._box_uid),
            self._capsules,
        )

    def _compute_expected(self, movers: list[Body]) -> None:
        exp = expected_hits(
            Movers(_rows([b.p0 for b in movers]), _rows([b.p1 for b in movers]),
                   np.array([b.radius for b in movers]),
                   np.array([b.from_mask for b in movers], np.int64),
                   np.array([b.into_mask for b in movers], np.int64),
                   np.array([b.uid for b in movers], np.int64)),
            self._scene(),
        )
        self._expected = [
            (movers[m], int(o), float(t), bool(sensor))
            for m, o, t, sensor in zip(exp.mover, exp.other, exp.t, exp.sensor)
        ]

    def _timer_start(self, task: Any) -> int:
        self._t0 = time.perf_counter()
        return task.cont

    def _timer_stop(self, task: Any) -> int:
        stats = self.stats[self.system.name]
        elapsed = time.perf_counter() - self._t0
        stats.seconds += elapsed
        stats.last_ms = 1000.0 * elapsed
        weight = 0.05 if stats.frames else 1.0
        stats.recent_ms += weight * (stats.last_ms - stats.recent_ms)
        stats.frames += 1
        return task.cont

    def _audit(self, task: Any) -> int:
        """Score the frame: every expected hit is caught, excused or missed; then check
        where the movers really are."""
        stats = self.stats[self.system.name]
        reported = set()
        # uid -> when its straight path stopped applying: at its first contact, or where
        # the system stopped it (without a contact, too: a capped pass holds everything).
        changed: dict[int, float] = {}
        for a, b, t, sensor in self._contacts:
            reported.add((a, b))
            reported.add((b, a))
            if not sensor:
                changed[a] = min(changed.get(a, 2.0), min(t, 1.0))
        movers = self._movers()
        covered = _covered(
            _rows([b.p0 for b in movers]),
            _rows([b.p1 for b in movers]),
            _rows([tuple(b.np.getPos(self.render)) for b in movers]),
        )
        for body, part in zip(movers, covered):
            if part < 1.0:
                changed[body.uid] = min(changed.get(body.uid, 2.0), float(part))
        for mover, other, t, sensor in self._expected:
            if (mover.uid, other) in reported:
                stats.caught += 1
            elif min(changed.get(mover.uid, 2.0), changed.get(other, 2.0)) < t - 1e-9:
                stats.excused += 1
            else:
                stats.missed += 1
                if not sensor:
                    stats.tunnelled.add(mover.uid)
        ends = _rows([tuple(b.np.getPos(self.render)) for b in movers])
        through = went_into(_rows([b.p0 for b in movers]), ends,
                            np.array([b.radius for b in movers]), self._scene(end=True))
        for body, flag, pos in zip(movers, through, ends):
            outside = abs(pos[0]) > HALF or abs(pos[1]) > HALF or pos[2] < 0
            if outside or flag:
                stats.tunnelled.add(body.uid)
            expired = body.kind == "projectile" and self.time - body.born > PROJECTILE_LIFE
            if body.kind != "player" and (outside or body.dead or expired):
                self._retire(body)
            elif outside:  # the player is put back at the start
                body.np.setPos(*PLAYER_START)
                self.system.teleport(body)
        for callback in self.on_frame:
            callback()
        return task.cont

    # ------------------------------------------------------------------ event handlers
    def _accept_events(self) -> None:
        accept = self._events.accept
        for mover in MOVERS:
            for into in SOLID_INTO:
                if mover != "projectile" or into != "target":
                    accept(f"{mover}-into-{into}", self._on_bounce)
        accept("projectile-into-target", self._on_target_hit)
        accept("projectile-into-pickup", self._on_pickup)
        accept("player-into-pickup", self._on_pickup)

    def _bodies(self, entry: Any) -> tuple[Body | None, Body | None]:
        a = entry.getFromNodePath().getNetPythonTag("body")
        b = entry.getIntoNodePath().getNetPythonTag("body")
        return a, b

    def _record(self, entry: Any, a: Body, b: Body) -> None:
        self._contacts.append((a.uid, b.uid, float(entry.getT()), b.sensor))
        self.stats[self.system.name].contacts += 1

    def _on_bounce(self, entry: Any) -> None:
        """A mover hit something solid: bounce it (reflect its velocity about the normal)."""
        a, b = self._bodies(entry)
        if a is None or b is None:
            return
        self._record(entry, a, b)
        self.system.place_at_contact(a, entry)
        if a.kind == "player":
            return  # the player's velocity is the steering; the plugin slides it
        normal = np.array(entry.getSurfaceNormal(self.render), float)
        normal[2] = 0.0  # a planar game: bounce within the plane
        length = float(np.linalg.norm(normal))
        if length == 0:
            return
        normal /= length
        other = b.velocity_at(np.array(entry.getSurfacePoint(self.render), float))
        if b.kind == "ball":
            # Equal masses: swap the velocity components along the normal, once per pair
            # (the b-into-a event that follows finds them already separating).
            closing = float(np.dot(a.velocity - b.velocity, normal))
            if closing < 0:
                a.velocity = a.velocity - closing * normal
                b.velocity = b.velocity + closing * normal
            return
        # The level, the targets and the player do not give way: reflect the velocity
        # relative to theirs (the gate's where it was hit).
        closing = float(np.dot(a.velocity - other, normal))
        if closing < 0:
            a.velocity = a.velocity - 2.0 * closing * normal
            # Keep balls lively but bounded, unless slowing it down would let the (moving)
            # obstacle catch up with it again.
            speed = float(np.linalg.norm(a.velocity))
            if a.kind == "ball" and speed > BALL_MAX_SPEED:
                slower = a.velocity * (BALL_MAX_SPEED / speed)
                if float(np.dot(slower - other, normal)) > 0:
                    a.velocity = slower

    def _on_target_hit(self, entry: Any) -> None:
        """A projectile hit a target: score, flash the target, spend the projectile."""
        a, b = self._bodies(entry)
        if a is None or b is None:
            return
        self._record(entry, a, b)
        self.system.place_at_contact(a, entry)
        if not a.dead:
            a.dead = True
            b.flash = 0.2
            self.stats[self.system.name].score += 1

    def _on_pickup(self, entry: Any) -> None:
        """A projectile or the player went through a pickup: collect it (it respawns)."""
        a, b = self._bodies(entry)
        if a is None or b is None:
            return
        self._record(entry, a, b)
        b.collected = True

    # ------------------------------------------------------------------ controls
    def switch_system(self) -> str:
        """Swap the plugin for the traverser or back, on the same scene; the new name."""
        name = "traverser" if self.system.name == "plugin" else "plugin"
        self.system.destroy()
        self.system = SYSTEMS[name](self.base, PATTERN)
        self.system.add_level(self.static_level, [b for b in self.pieces.values() if b.static])
        for body in (self.lift, self.gate, *self.bodies.values()):
            self.system.add(body)
        self.system.set_debug(self.debug)
        return name

    def set_debug(self, on: bool) -> None:
        self.debug = on
        self.system.set_debug(on)

    def reset(self) -> None:
        """Start over: same seed, same system, fresh counters."""
        for body in list(self.bodies.values()):
            self._retire(body)
        self.stats = {name: Stats() for name in SYSTEMS}
        self._poses = self._place_movers(0.0, teleport=True)
        self._moving_boxes = (*self._poses, *self._poses)
        for body in (self.lift, self.gate):
            self.system.teleport(body)
        self._populate()

    @property
    def cannon_heading(self) -> float:
        return self._cannon_heading

    def count(self, kind: str) -> int:
        """How many bodies of a kind ("ball", "projectile", ...) the level holds."""
        return len(self._by_kind[kind])

    def of_kind(self, kind: str) -> list[Body]:
        """The bodies of a kind (a copy of the list)."""
        return list(self._by_kind[kind])

    def destroy(self) -> None:
        for task in self._tasks:
            self.base.taskMgr.remove(task)
        self._events.ignoreAll()
        self.system.destroy()
        for body in self.pieces.values():
            body.np.clearPythonTag("body")
        self.root.removeNode()
        self.bodies.clear()
        self.pieces.clear()


def _covered(p0: np.ndarray, p1: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(n,) how much of each straight move p0 -> p1 a body that ended at q made, in [0, 1].

    p0, p1, q : (n, 3) float64. Exactly 1 where q is p1 (the positions went through the same
    float32 node, so equality is exact).
    """
    step = p1 - p0
    length2 = np.einsum("ij,ij->i", step, step)
    part = np.divide(np.einsum("ij,ij->i", q - p0, step), length2,
                     out=np.zeros(len(p0)), where=length2 > 0)
    part = np.clip(part, 0.0, 1.0)
    part[np.all(q == p1, axis=1)] = 1.0
    return part


def _rows(items: list[Any]) -> np.ndarray:
    """(n, 3) float64 from n 3-sequences (also for n = 0)."""
    return np.array(items, float).reshape(-1, 3)


def _f32(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float32).astype(np.float64)
