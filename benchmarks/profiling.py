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
from typing import Any

from .scene import MovingSpheres
from .systems import PluginOptions, PluginSystem, World, begin_frame, end_frame

__all__ = ["profile_plugin", "phase_table"]

#: Component methods timed by the phase breakdown, with what each does. They are private
#: names: any that a later version renames is left out of the table, not an error.
_METHODS = {
    "_drop_removed": "scan for nodes removed behind the plugin's back",
    "_read_all": "read every sphere's transforms",
    "_read_planes": "read the planes",
    "_write_back": "write moved nodes back",
    "_touches": "build Contact objects",
}
#: Solver module functions timed the same way (the broad phase is called from solve).
_SOLVER = {
    "solve": "solve: broad phase, times of impact, resolution",
    "_sphere_pairs": "(inside solve) broad phase, sphere pairs",
}
#: The obstacle tables' broad phases (in ``_obstacles``, called by solve).
_OBSTACLES = {
    "_sphere_plane_pairs": "(inside solve) broad phase, sphere-plane pairs",
}


def _scene(n: int, seed: int, plugin: PluginOptions, walls: bool) -> tuple[Any, World, Any]:
    scene = MovingSpheres.generate(n, seed=seed)
    world = World.build(scene, walls=walls)
    return scene, world, PluginSystem(world, plugin)


def _frames(
    scene: MovingSpheres, world: World, system: PluginSystem, count: int
) -> Iterator[int]:
    """Yield before each pass (frame number); moves and clean-up happen around it."""
    for frame in range(1, count + 1):
        current = scene.positions(frame)
        begin_frame()
        world.move(current)
        yield frame
        system.after(current)
        end_frame()


def profile_plugin(
    n: int,
    *,
    frames: int,
    warmup: int,
    seed: int,
    plugin: PluginOptions,
    walls: bool,
    top: int = 15,
) -> str:
    """Profile ``frames`` plugin passes at ``n`` spheres (after ``warmup`` unprofiled ones);
    only ``step()`` is profiled, not the moves. Returns the pstats listings, sorted by
    cumulative and by internal time."""
    scene, world, system = _scene(n, seed, plugin, walls)
    profiler = cProfile.Profile()
    try:
        for frame in _frames(scene, world, system, warmup + frames):
            if frame > warmup:
                profiler.enable()
            system.run()
            if frame > warmup:
                profiler.disable()
    finally:
        system.close()
        world.destroy()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    for key in ("cumulative", "tottime"):
        out.write(f"--- sorted by {key} ({frames} passes at n={n}) ---\n")
        stats.sort_stats(key).print_stats(top)
    return out.getvalue()


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


def phase_table(
    n: int, *, frames: int, warmup: int, seed: int, plugin: PluginOptions, walls: bool
) -> str:
    """A markdown table of milliseconds per pass in each phase of ``step()`` at ``n``."""
    from panda3d_ccd import _obstacles, _solver

    scene, world, system = _scene(n, seed, plugin, walls)
    spent: dict[str, float] = {}
    total = 0.0
    try:
        with (
            _timing(system.ccd, _METHODS, spent),
            _timing(_solver, _SOLVER, spent),
            _timing(_obstacles, _OBSTACLES, spent),
        ):
            for frame in _frames(scene, world, system, warmup + frames):
                if frame == warmup + 1:
                    spent.clear()
                t0 = time.perf_counter()
                system.run()
                if frame > warmup:
                    total += time.perf_counter() - t0
    finally:
        system.close()
        world.destroy()
    labels = {**_METHODS, **_SOLVER, **_OBSTACLES}
    order = ["_drop_removed", "_read_all", "_read_planes", "solve", "_sphere_pairs"]
    order += ["_sphere_plane_pairs", "_write_back", "_touches"]
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
        lines.append(f"| {label} | {1e3 * seconds / frames:,.1f} | {share:.0f}% |")
    lines.append(f"| **whole step()** | **{1e3 * total / frames:,.1f}** | 100% |")
    return "\n".join(lines)
