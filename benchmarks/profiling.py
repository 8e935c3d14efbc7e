"""cProfile of the plugin's pass on the benchmark scene."""

from __future__ import annotations

import cProfile
import io
import pstats

from .scene import MovingSpheres
from .systems import PluginOptions, PluginSystem, World, begin_frame, end_frame

__all__ = ["profile_plugin"]


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
    scene = MovingSpheres.generate(n, seed=seed)
    world = World.build(scene, walls=walls)
    system = PluginSystem(world, plugin)
    profiler = cProfile.Profile()
    try:
        for frame in range(1, warmup + frames + 1):
            current = scene.positions(frame)
            begin_frame()
            world.move(current)
            if frame > warmup:
                profiler.enable()
            system.run()
            if frame > warmup:
                profiler.disable()
            system.after(current)
            end_frame()
    finally:
        system.close()
        world.destroy()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    for key in ("cumulative", "tottime"):
        out.write(f"--- sorted by {key} ({frames} passes at n={n}) ---\n")
        stats.sort_stats(key).print_stats(top)
    return out.getvalue()
