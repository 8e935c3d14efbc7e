"""The game-like scene, the default of ``python -m benchmarks``: spheres bouncing in an
arena closed by six walls, each bounce made by a game's handler from the collision system's
own events.

Every system under test runs its own copy of the game (its own nodes under its own root,
its own velocities) from the same start, by the same rules:

* each frame the game moves every sphere by its velocity (``setFluidPos``, so the
  previous transform holds the start of the frame), then the system's pass runs (timed).
  The plugin sweeps from where it left each sphere, its default: in this game that is the
  previous transform too, read once instead of twice a node;
* after the pass (untimed) the game's handler, listening to ``%fn-into-%in`` and
  ``%fn-again-%in``, reflects the velocity of each event's from-sphere about
  ``getSurfaceNormal(render)`` when it is moving into the surface. The plugin sends its
  events through the messenger during ``step()`` (a recording messenger keeps them for the
  handler); Panda3D's ``CollisionTraverser`` (respect-prev-transform) throws its
  ``CollisionHandlerEvent`` events into Panda3D's event queue, drained for the handler.

The plugin rewinds a sphere to where it touched; the traverser moves nothing, so its
spheres go on from wherever they ended, overlapping or past a wall. The copies are the same
until the two systems answer a contact differently, so the counts of contacts a frame, shown
per system, say how alike their work stayed. A third copy of the plugin's game (untimed)
runs each pass under :class:`~benchmarks.opcount.OpCounter`, and must end every frame with
its spheres exactly where the timed copy's are.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from panda3d.core import CollisionHandlerEvent, EventQueue

from panda3d_ccd.broadphase import sphere_pairs
from panda3d_ccd.sweep import sphere_sphere_toi

from .opcount import PHASES, OpCounter
from .scene import MovingSpheres
from .systems import (
    CountingMessenger,
    FloorSystem,
    PluginOptions,
    PluginSystem,
    TraverserSystem,
    World,
    begin_frame,
    end_frame,
    read_positions,
)
from .timing import FLOOR, PLUGIN, TRAVERSER, SizeResult, skip_note

__all__ = [
    "RADIUS",
    "SLOW_SPEED",
    "FAST_SPEED",
    "IN_PATTERN",
    "AGAIN_PATTERN",
    "game_scene",
    "Game",
    "GameResult",
    "time_game",
    "GamePasses",
    "SWEEP_FLOOR",
    "SweepFloor",
    "first_contacts",
    "demo_times",
]

Float = NDArray[np.float64]

RADIUS = 0.45
#: Units a frame: 18 units a second at 60 Hz for most, 120 for one in ten (a thrown or
#: fired object), each +-25%.
SLOW_SPEED, FAST_SPEED = 0.3, 2.0
IN_PATTERN, AGAIN_PATTERN = "%fn-into-%in", "%fn-again-%in"
#: How deep (a share of the radius) a sphere must be in another or in a wall to count as
#: overlapping at the end of a frame: what float32 positions and the plugin's contact
#: tolerance leave is far below it.
OVERLAP = 0.01


def game_scene(n: int, *, seed: int) -> MovingSpheres:
    """``n`` spheres of radius :data:`RADIUS` in a box at the pile-up scene's density
    (``4 n^(1/3)`` a side), apart at the start, 10% at :data:`FAST_SPEED`."""
    return MovingSpheres.generate(
        n, seed=seed, radius=RADIUS, fast_speed=FAST_SPEED, slow_speed=SLOW_SPEED
    )


class RecordingMessenger(CountingMessenger):
    """Stands in for ``messenger``: counts and keeps what the plugin sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, Any]] = []

    def send(self, event: str, sentArgs: Any = None, taskChain: Any = None) -> None:  # noqa: N803
        super().send(event, sentArgs, taskChain)
        self.sent.append((event, sentArgs))


class Game:
    """One system's copy of the game: its nodes (a :class:`World`), every sphere's
    velocity ((n, 3) float64, units a frame) and the handler that bounces them.

    ``kind`` is ``PLUGIN`` or ``TRAVERSER``.
    """

    def __init__(self, scene: MovingSpheres, kind: str) -> None:
        self.scene = scene
        self.kind = kind
        self.world = World.build(scene, walls=True)
        self.velocity = scene.velocity.copy()
        self.index = {node.getName(): i for i, node in enumerate(self.world.nodes)}
        self.messenger = RecordingMessenger()
        self.system: PluginSystem | TraverserSystem
        if kind == PLUGIN:
            self.system = PluginSystem(
                self.world, PluginOptions(respect_prev_transform=False), self.messenger
            )
            self.system.ccd.add_again_pattern(AGAIN_PATTERN)
        elif kind == TRAVERSER:
            # Its events go through Panda3D's global queue: start it empty.
            EventQueue.getGlobalEventQueue().clear()
            handler = CollisionHandlerEvent()
            handler.addInPattern(IN_PATTERN)
            handler.addAgainPattern(AGAIN_PATTERN)
            self.system = TraverserSystem(self.world, handler)
        else:
            raise ValueError(f"kind must be {PLUGIN!r} or {TRAVERSER!r}, got {kind!r}")
        self.p0 = self.p1 = scene.positions(0)
        self.reported: set[tuple[int, int]] = set()

    def move(self) -> None:
        """Every sphere on by its velocity, from where the last pass left it."""
        self.p0 = read_positions(self.world.nodes, self.world.render)
        # The positions Panda3D will hold (float32), for the straight paths' truth.
        self.p1 = (self.p0 + self.velocity).astype(np.float32).astype(np.float64)
        self.world.move(self.p1)

    def entries(self) -> list[Any]:
        """The pass's contacts, as its events carried them (Contact or CollisionEntry)."""
        if self.kind == PLUGIN:
            sent = [args[0] for _name, args in self.messenger.sent]
            self.messenger.sent.clear()
            return sent
        queue = EventQueue.getGlobalEventQueue()
        found = []
        while not queue.isQueueEmpty():
            found.append(queue.dequeueEvent().getParameter(0).getPtr())
        return found

    def on_contact(self, entry: Any) -> None:
        """The game's handler: reflect the from-sphere's velocity about the surface normal
        if it moves into the surface (the into-sphere gets its own event)."""
        render = self.world.render
        i = self.index[entry.getFromNodePath().getName()]
        into = self.index.get(entry.getIntoNodePath().getName())
        if into is not None:
            self.reported.add((min(i, into), max(i, into)))
        normal = np.array(entry.getSurfaceNormal(render), np.float64)
        normal /= np.linalg.norm(normal)
        closing = float(self.velocity[i] @ normal)
        if closing < 0.0:
            self.velocity[i] -= 2.0 * closing * normal

    def bounce(self) -> int:
        """Run the handler on every event of the pass; returns how many there were."""
        self.reported = set()
        entries = self.entries()
        for entry in entries:
            self.on_contact(entry)
        return len(entries)

    def positions(self) -> Float:
        return read_positions(self.world.nodes, self.world.render)

    def close(self) -> None:
        self.system.close()
        self.world.destroy()
        EventQueue.getGlobalEventQueue().clear()


#: The sweep floor's name in the results (:class:`SweepFloor`); it tests every pair, so it
#: is timed up to SWEEP_FLOOR_MAX spheres.
SWEEP_FLOOR, SWEEP_FLOOR_MAX = "sweep floor", 300


def first_contacts(
    p0: Float, p1: Float, radius: float, normal: Float, offset: Float, i: NDArray, j: NDArray
) -> tuple[Float, NDArray, NDArray]:
    """Each sphere's first contact on its straight path from ``p0`` to ``p1`` ((n, 3)): with
    a wall (inward unit ``normal`` (w, 3), ``offset`` (w,): solid where ``normal . p +
    offset < 0``) or another sphere of the pairs (``i``, ``j``), all of ``radius``.
    Returns (n,) its time (1 for none), (n,) whether a wall and (n,) which wall or sphere.
    Pairs apart at the start only; a pass of fewest numpy calls (see :class:`SweepFloor`)."""
    d0 = p0 @ normal.T + offset
    d1 = p1 @ normal.T + offset
    into = (d0 >= radius) & (d1 < radius)
    t_wall = np.where(into, (d0 - radius) / np.where(into, d0 - d1, 1.0), np.inf)
    wall = t_wall.argmin(axis=1)
    t_wall = np.take_along_axis(t_wall, wall[:, None], axis=1)[:, 0]
    v = p1 - p0
    dp, dv = p0[j] - p0[i], v[j] - v[i]
    a = np.einsum("ij,ij->i", dv, dv)
    b = np.einsum("ij,ij->i", dp, dv)
    c = np.einsum("ij,ij->i", dp, dp) - 4.0 * radius * radius
    disc = b * b - a * c
    meet = (c >= 0.0) & (b < 0.0) & (disc >= 0.0)
    t = np.full(len(a), np.inf)
    t[meet] = c[meet] / (-b[meet] + np.sqrt(disc[meet]))  # (-b - sqrt(disc)) / a, stable
    meet &= t <= 1.0
    n = len(p0)
    first = np.full((n, n), np.inf)
    first[i[meet], j[meet]] = first[j[meet], i[meet]] = t[meet]
    other = first.argmin(axis=1)
    t_pair = np.take_along_axis(first, other[:, None], axis=1)[:, 0]
    by_wall = t_wall <= t_pair
    t_first = np.minimum(np.minimum(t_wall, t_pair), 1.0)
    return t_first, by_wall, np.where(by_wall, wall, other)


class SweepFloor:
    """A floor for a pass of exact sweeps, on its own copy of the game: what any such
    pass on these nodes does, in the fewest numpy calls. It reads every node (as the
    floor does), finds each sphere's first contact with a wall or another sphere on its
    straight path (:func:`first_contacts`: every pair, exact), stops it there and writes
    the stopped nodes back. It is not a collision system: no events, masks, sensors, slop,
    and nothing done about what a stop changes (a sphere stopped early can still be run
    into later in the frame). Its game bounces each stopped sphere off what stopped it
    (untimed), so its frames hold contacts as the others' do."""

    def __init__(self, scene: MovingSpheres) -> None:
        self.scene = scene
        self.world = World.build(scene, walls=False)
        self.velocity = scene.velocity.copy()
        walls = scene.wall_planes()
        self.normal = np.array([normal for normal, _point in walls], np.float64)
        points = np.array([point for _normal, point in walls], np.float64)
        self.offset = -np.einsum("ij,ij->i", self.normal, points)
        self.i, self.j = np.triu_indices(scene.n, 1)
        self.last = scene.positions(0)
        self.stopped: tuple[NDArray, NDArray, NDArray] | None = None
        self.contacts = 0

    def move(self) -> None:
        """Every sphere on by its velocity from where the last pass left it."""
        self.world.move(self.last + self.velocity)

    def run(self) -> None:
        """The timed pass."""
        nodes, render = self.world.nodes, self.world.render
        p0, p1 = self.last, read_positions(nodes, render)
        t, by_wall, what = first_contacts(
            p0, p1, self.scene.radius, self.normal, self.offset, self.i, self.j
        )
        end = p0 + t[:, None] * (p1 - p0)
        moved = np.flatnonzero(t < 1.0)
        for k, (x, y, z) in zip(moved.tolist(), end[moved].tolist()):
            nodes[k].setPos(render, x, y, z)
        self.last = end
        self.stopped = (moved, by_wall[moved], what[moved])

    def bounce(self) -> None:
        """The game's handler, on the pass's contacts: reflect each stopped sphere's
        velocity about what stopped it, if it moves into it."""
        if self.stopped is None:
            return
        moved, by_wall, what = self.stopped
        self.contacts += len(moved)
        end = self.last
        for k, wall, other in zip(moved.tolist(), by_wall.tolist(), what.tolist()):
            normal = self.normal[other] if wall else end[k] - end[other]
            normal = normal / max(float(np.linalg.norm(normal)), 1e-12)
            closing = float(self.velocity[k] @ normal)
            if closing < 0.0:
                self.velocity[k] -= 2.0 * closing * normal

    def close(self) -> None:
        self.world.destroy()


@dataclass(frozen=True)
class EndState:
    """Where a frame left the spheres: ``outside``, centres past a wall; ``overlapping``,
    spheres deeper than :data:`OVERLAP` radii in a wall or pairs in each other."""

    outside: int
    overlapping: int


def end_state(p: Float, scene: MovingSpheres) -> EndState:
    """The :class:`EndState` of centres ``p`` ((n, 3) float64) in ``scene``'s arena."""
    r, side = scene.radius, scene.side
    outside = int(np.sum(np.any((p < 0.0) | (p > side), axis=1)))
    deep = OVERLAP * r
    walls = int(np.sum(np.any((p < r - deep) | (p > side - r + deep), axis=1)))
    i, j = sphere_pairs(p, p, r)
    gap = np.linalg.norm(p[i] - p[j], axis=1)
    return EndState(outside=outside, overlapping=walls + int(np.sum(gap < 2.0 * r - deep)))


def missed_pairs(game: Game) -> int:
    """Pairs whose straight paths of the frame touch (the exact kernel) and that ``game``'s
    system reported in neither direction: right for a system that moves nothing."""
    r = game.scene.radius
    i, j = sphere_pairs(game.p0, game.p1, r)
    t = sphere_sphere_toi(game.p0[i], game.p1[i], r, game.p0[j], game.p1[j], r)
    touched = zip(i[np.isfinite(t)].tolist(), j[np.isfinite(t)].tolist())
    return sum(1 for pair in touched if pair not in game.reported)


@dataclass
class GameResult(SizeResult):
    """A :class:`SizeResult` of the game scene, with the plugin's numpy operations per pass
    (``ops``: one total per counted pass; ``ops_by``: the mean per pass by phase, by what
    ``step()`` called, by operation and by plugin function) and per-system totals over the
    timed frames in ``stats`` (``"<system> contacts"``, ``"... frames with contacts"``,
    ``"... outside"``, ``"... overlapping"``, the plugin's ``"... rounds"`` and
    ``"... rounds max"``, the traverser's ``"... missed"``)."""

    ops: list[int] = field(default_factory=list)
    ops_by: dict[str, dict[str, float]] = field(default_factory=dict)


def _breakdown(counts: Counter[tuple[str, str, str]], passes: int) -> dict[str, dict[str, float]]:
    by: dict[str, Counter[str]] = {
        key: Counter() for key in ("phase", "called by step", "operation", "function")
    }
    for (phase, where, what), k in counts.items():
        by["phase"][PHASES.get(phase, "other")] += k
        by["called by step"][phase] += k
        by["operation"][what] += k
        by["function"][where] += k
    return {
        key: {name: k / passes for name, k in table.most_common()} for key, table in by.items()
    }


def time_game(
    n: int,
    *,
    seed: int,
    frames: int,
    warmup: int,
    limit_s: float,
    budget_s: float = 20.0,
    history: Sequence[SizeResult] = (),
    count_ops: bool = True,
) -> GameResult:
    """Play ``warmup + frames`` frames of the game at ``n`` spheres on the plugin, the
    traverser, the floor (the read of every position of the plugin's copy) and, up to
    :data:`SWEEP_FLOOR_MAX` spheres, the sweep floor (:class:`SweepFloor`, its own copy),
    timing each pass after the warm-up; the order of the systems turns each frame.

    The traverser is skipped as :func:`~benchmarks.timing.skip_note` says, reported from its
    first frame alone when that frame takes more than ``limit_s``, and stops being timed once
    its timed frames add up to ``budget_s`` (at least three).
    """
    scene = game_scene(n, seed=seed)
    result = GameResult(n=n, side=scene.side)
    games = {PLUGIN: Game(scene, PLUGIN)}
    note = skip_note(TRAVERSER, n, history, limit_s)
    if note is None:
        games[TRAVERSER] = Game(scene, TRAVERSER)
    else:
        result.ms[TRAVERSER] = None
        result.notes[TRAVERSER] = note
    counted = Game(scene, PLUGIN) if count_ops else None
    counter = OpCounter() if count_ops else None
    floor = FloorSystem(games[PLUGIN].world)
    timed: dict[str, Callable[[], None]] = {name: game.system.run for name, game in games.items()}
    timed[FLOOR] = floor.run
    sweep = SweepFloor(scene) if n <= SWEEP_FLOOR_MAX else None
    if sweep is None:
        result.ms[SWEEP_FLOOR] = None
        result.notes[SWEEP_FLOOR] = f"not timed above {SWEEP_FLOOR_MAX}"
    else:
        timed[SWEEP_FLOOR] = sweep.run
    totals: Counter[str] = Counter()
    counts: Counter[tuple[str, str, str]] = Counter()
    gc.collect()
    try:
        for frame in range(1, warmup + frames + 1):
            begin_frame()
            for game in [*games.values(), counted, sweep]:
                if game is not None:
                    game.move()
            names = list(timed)
            shift = frame % len(names)
            for name in names[shift:] + names[:shift]:
                t0 = time.perf_counter()
                timed[name]()
                elapsed = 1e3 * (time.perf_counter() - t0)
                if frame > warmup:
                    result.samples.setdefault(name, []).append(elapsed)
                elif frame == 1 and name == TRAVERSER and elapsed > 1e3 * limit_s:
                    result.ms[name] = elapsed
                    result.notes[name] = "1 frame, over the limit"
            if counted is not None and counter is not None:
                if frame > warmup:
                    with counter.counting():
                        counted.system.run()
                    taken = counter.take()
                    result.ops.append(sum(taken.values()))
                    counts += taken
                    if counter.errors:
                        raise RuntimeError(f"a counted operation raised: {counter.errors[0]}")
                else:
                    counted.system.run()
                counted.bounce()
            if frame > warmup:
                _tally(games, totals, scene)
            else:
                for game in games.values():
                    game.bounce()
            if sweep is not None:
                sweep.bounce()
            if counted is not None and not np.array_equal(
                counted.positions(), games[PLUGIN].positions()
            ):
                raise RuntimeError(f"frame {frame}: the counted pass moved the spheres otherwise")
            trav = result.samples.get(TRAVERSER, [])
            over = TRAVERSER in result.notes or (len(trav) >= 3 and sum(trav) > 1e3 * budget_s)
            if TRAVERSER in games and over:
                games.pop(TRAVERSER).close()
                del timed[TRAVERSER]
            end_frame()
    finally:
        for game in [*games.values(), counted, sweep]:
            if game is not None:
                game.close()
    for name, values in result.samples.items():
        if name not in result.ms:
            result.ms[name] = float(np.median(values))
        result.stats[f"{name} frames timed"] = len(values)
    for key, value in totals.items():
        result.stats[key] = float(value)
    if result.ops:
        result.ops_by = _breakdown(counts, len(result.ops))
    return result


def _tally(games: dict[str, Game], totals: Counter[str], scene: MovingSpheres) -> None:
    """Run each game's handler on its pass's events and add up what the frame held."""
    for name, game in games.items():
        contacts = game.bounce()
        totals[f"{name} frames"] += 1
        totals[f"{name} contacts"] += contacts
        totals[f"{name} frames with contacts"] += contacts > 0
        state = end_state(game.positions(), scene)
        totals[f"{name} outside"] += state.outside
        totals[f"{name} overlapping"] += state.overlapping
        if name == PLUGIN:
            rounds = game.system.ccd.rounds  # type: ignore[union-attr]
            totals[f"{name} rounds"] += rounds
            totals[f"{name} rounds max"] = max(totals[f"{name} rounds max"], rounds)
        else:
            totals[f"{name} missed"] += missed_pairs(game)


class GamePasses:
    """The game's frames for the plugin's pass alone (:class:`~benchmarks.profiling.Passes`):
    each frame moves the spheres before the pass and bounces them after it."""

    def __init__(self, n: int, *, seed: int) -> None:
        self.game = Game(game_scene(n, seed=seed), PLUGIN)
        self.system: PluginSystem = self.game.system  # type: ignore[assignment]

    def frames(self, count: int) -> Iterator[int]:
        for frame in range(1, count + 1):
            begin_frame()
            self.game.move()
            yield frame
            self.game.bounce()
            end_frame()

    def close(self) -> None:
        self.game.close()


#: The demo's one-line summary field with its time per frame.
_MS_FIELD = "ms_per_frame="


def demo_times(frames: int, *, root: Path, seed: int = 7) -> dict[str, float]:
    """ms a frame of the bundled demo's collision pass (its HUD's timer: the mean over
    ``frames`` scripted frames, first frame included), per system: ``python -m demo
    --headless --frames FRAMES --system S`` run from ``root``, its summary line read."""
    times = {}
    for system in ("plugin", "traverser"):
        command = [sys.executable, "-m", "demo", "--headless", "--frames", str(frames),
                   "--system", system, "--seed", str(seed)]  # fmt: skip
        # Exit code 1 only says something tunnelled (the traverser's usual): still timed.
        proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
        fields = [word for line in proc.stdout.splitlines() if line.startswith("summary:")
                  for word in line.split() if word.startswith(_MS_FIELD)]  # fmt: skip
        if proc.returncode not in (0, 1) or len(fields) != 1:
            raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr.strip()[-500:]}")
        times[system] = float(fields[0][len(_MS_FIELD):])
    return times
