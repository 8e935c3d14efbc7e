"""Where the plugin's pass spends its time: cProfile listings, and a phase breakdown taken
without the profiler (whose per-call overhead inflates the per-node Python loops)."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from .opcount import PHASE_ORDER, PHASES
from .report import _ms
from .scene import MovingSpheres
from .systems import PluginOptions, PluginSystem, World, begin_frame, end_frame

__all__ = ["Passes", "PileUpPasses", "Profile", "profile_plugin", "phase_table"]

#: Component methods timed by the phase breakdown, with what each does. They are private
#: names: one that a later version renames is an AttributeError here, not a silent gap.
_METHODS = {
    "_scan": "scan for removed nodes and nodes out of the scene",
    "_read_all": "read every sphere's transforms",
    "_read_planes": "read the planes",
    "_piece_tables": "read the moving level pieces",
    "_near_statics": "static colliders near the movers",
    "_write_back": "write moved nodes back",
    "_touches": "build Contact objects",
}
#: Solver module functions timed the same way (the broad phase is called from solve).
_SOLVER = {
    "solve": "solve: broad phase, times of impact, resolution",
    "_sphere_pairs": "(inside solve) broad phase, sphere pairs",
}
#: The one-round path's broad phase (its own import of the same function).
_ONE_ROUND = {"_sphere_pairs": _SOLVER["_sphere_pairs"]}
#: The obstacle tables' broad phases (in ``_obstacles``, called by solve).
_OBSTACLES = {
    "_sphere_plane_pairs": "(inside solve) broad phase, sphere-plane pairs",
}


class Passes(Protocol):
    """Frames of a scene for the plugin's pass alone: ``frames`` yields before each pass
    (the frame's number) and does the frame's moves and clean-up around it."""

    system: PluginSystem

    def frames(self, count: int) -> Iterator[int]: ...

    def close(self) -> None: ...


class PileUpPasses:
    """The pile-up scene's frames (:class:`MovingSpheres`), nodes put back on course after
    each pass as the timed benchmark does."""

    def __init__(self, n: int, *, seed: int, plugin: PluginOptions, walls: bool) -> None:
        self.scene = MovingSpheres.generate(n, seed=seed)
        self.world = World.build(self.scene, walls=walls)
        self.system = PluginSystem(self.world, plugin)

    def frames(self, count: int) -> Iterator[int]:
        for frame in range(1, count + 1):
            current = self.scene.positions(frame)
            begin_frame()
            self.world.move(current)
            yield frame
            self.system.after(current)
            end_frame()

    def close(self) -> None:
        self.system.close()
        self.world.destroy()


@dataclass(frozen=True)
class Profile:
    """cProfile of the plugin's passes: ``listing``, pstats' own text (sorted by
    cumulative and by internal time); ``by_phase``, a markdown table of what ``step()``
    called, grouped by phase; ``top``, a markdown table of the functions with the most
    time of their own."""

    listing: str
    by_phase: str
    top: str


def profile_plugin(passes: Passes, *, frames: int, warmup: int, top: int = 15) -> Profile:
    """Profile ``frames`` plugin passes (after ``warmup`` unprofiled ones); only ``step()``
    is profiled, not the moves. ``passes`` is closed."""
    n = len(passes.system.world.nodes)
    profiler = cProfile.Profile()
    try:
        for frame in passes.frames(warmup + frames):
            if frame > warmup:
                profiler.enable()
            passes.system.run()
            if frame > warmup:
                profiler.disable()
    finally:
        passes.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    for key in ("cumulative", "tottime"):
        out.write(f"--- sorted by {key} ({frames} passes at n={n}) ---\n")
        stats.sort_stats(key).print_stats(top)
    return Profile(
        listing=out.getvalue(),
        by_phase=_by_phase(stats, frames, n),
        top=_top_own(stats, frames, n, top),
    )


def _name(key: tuple[str, int, str]) -> str:
    file, line, name = key
    return name if file == "~" else f"{file}:{line}({name})"


def _callees(table: dict[Any, Any], caller: Any) -> list[tuple[Any, int, float]]:
    """(function, calls, cumulative seconds from that call site) of what ``caller`` called,
    the most time first."""
    rows = [
        (key, callers[caller][1], callers[caller][3])
        for key, (_cc, _nc, _tt, _ct, callers) in table.items()
        if caller in callers
    ]
    return sorted(rows, key=lambda row: -row[2])


def _by_phase(stats: pstats.Stats, frames: int, n: int) -> str:
    """What ``step()`` called, each with its time under the profiler (cumulative, from that
    call site), grouped by :data:`~benchmarks.opcount.PHASES` (step's own lines as
    ``other``), and what ``solve`` called."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    step = next(k for k in table if k[2] == "step" and k[0].endswith("component.py"))
    whole = table[step][3]
    # step() runs the pass in _step() (the task's error guard around it): its callees are
    # the phases.
    body = [k for k in table if k[2] == "_step" and k[0].endswith("component.py")]
    rows = [("other", "(step's own lines)", table[step][1], table[step][2])]
    if body:
        rows.append(("other", "(_step's own lines)", table[body[0]][1], table[body[0]][2]))
    rows += [(PHASES.get(key[2], "other"), _name(key), calls, ct)
             for key, calls, ct in _callees(table, body[0] if body else step)]  # fmt: skip
    lines = [
        f"| phase ({frames} passes at n={n:,}, under cProfile) | what step() called "
        "| calls a pass | ms a pass | share |",
        "|---|---|---:|---:|---:|",
    ]

    def line(name: str, calls: float, ct: float) -> str:
        return f"| | `{name}` | {calls / frames:g} | {_ms(1e3 * ct / frames)} " \
               f"| {100 * ct / whole:.0f}% |"  # fmt: skip

    for phase in PHASE_ORDER:
        mine = [row for row in rows if row[0] == phase]
        spent = sum(row[3] for row in mine)
        lines.append(f"| **{phase}** | | | **{_ms(1e3 * spent / frames)}** "
                     f"| **{100 * spent / whole:.0f}%** |")  # fmt: skip
        lines += [line(name, calls, ct) for _p, name, calls, ct in mine if ct >= 0.005 * whole]
    lines.append(f"| **whole step()** | | | **{_ms(1e3 * whole / frames)}** | 100% |")
    solve = [k for k in table if k[2] == "solve" and k[0].endswith("_solver.py")]
    if solve:
        lines.append("| **inside solve** | | | | |")
        lines.append(line("(solve's own lines)", table[solve[0]][1], table[solve[0]][2]))
        lines += [line(_name(key), calls, ct) for key, calls, ct in _callees(table, solve[0])
                  if ct >= 0.005 * whole]  # fmt: skip
    return "\n".join(lines)


def _top_own(stats: pstats.Stats, frames: int, n: int, top: int) -> str:
    """The ``top`` functions by time of their own (tottime) under the profiler."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = sorted(table.items(), key=lambda item: -item[1][2])[:top]
    lines = [
        f"| function ({frames} passes at n={n:,}, under cProfile) | calls a pass "
        "| own us a pass | cumulative us a pass |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| `{_name(key)}` | {nc / frames:g} | {1e6 * tt / frames:,.0f} "
        f"| {1e6 * ct / frames:,.0f} |"
        for key, (_cc, nc, tt, ct, _callers) in rows
    ]
    return "\n".join(lines)


@contextmanager
def _timing(target: Any, names: dict[str, str], spent: dict[str, float]) -> Iterator[None]:
    """Wrap ``target``'s attributes ``names`` so each call adds its duration to ``spent``;
    restore them afterwards."""
    originals: dict[str, Callable[..., Any]] = {}
    for name in names:
        # A renamed function must not drop out of the table unnoticed: AttributeError.
        fn = getattr(target, name)
        originals[name] = fn

        def timed(
            *args: Any, _fn: Callable[..., Any] = fn, _name: str = name, **kwargs: Any
        ) -> Any:
            t0 = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t0

        setattr(target, name, timed)
    try:
        yield
    finally:
        for name, fn in originals.items():
            if isinstance(target, types.ModuleType):
                setattr(target, name, fn)
            else:
                delattr(target, name)  # uncovers the class's method again


def phase_table(passes: Passes, *, frames: int, warmup: int) -> str:
    """A markdown table of milliseconds per pass in each phase of ``step()``, timed without
    the profiler; ``passes`` is closed."""
    from panda3d_ccd import _obstacles, _one_round, _solver

    n = len(passes.system.world.nodes)
    spent: dict[str, float] = {}
    total = 0.0
    try:
        with (
            _timing(passes.system.ccd, _METHODS, spent),
            _timing(_solver, _SOLVER, spent),
            _timing(_one_round, _ONE_ROUND, spent),
            _timing(_obstacles, _OBSTACLES, spent),
        ):
            for frame in passes.frames(warmup + frames):
                if frame == warmup + 1:
                    spent.clear()
                t0 = time.perf_counter()
                passes.system.run()
                if frame > warmup:
                    total += time.perf_counter() - t0
    finally:
        passes.close()
    labels = {**_METHODS, **_SOLVER, **_OBSTACLES}
    order = ["_scan", "_read_all", "_read_planes", "_piece_tables", "_near_statics", "solve"]
    order += ["_sphere_pairs", "_sphere_plane_pairs", "_write_back", "_touches"]
    rows = [(labels[k], spent[k]) for k in order if k in spent]
    nested = ("_sphere_pairs", "_sphere_plane_pairs")
    top_level = sum(v for k, v in spent.items() if k not in nested)
    rows.append(("the rest: events, masks, bookkeeping", total - top_level))
    lines = [
        f"| phase ({frames} passes at n={n:,}, no profiler) | ms per pass | share |",
        "|---|---:|---:|",
    ]
    for label, seconds in rows:
        share = 100 * seconds / total
        lines.append(f"| {label} | {_ms(1e3 * seconds / frames)} | {share:.0f}% |")
    lines.append(f"| **whole step()** | **{_ms(1e3 * total / frames)}** | 100% |")
    return "\n".join(lines)
