"""Memory under a long run: the plugin's pass alone, traced with tracemalloc."""

from __future__ import annotations

import gc
import os
import tracemalloc
from dataclasses import dataclass

import numpy as np

from .scene import MovingSpheres
from .systems import PluginOptions, PluginSystem, World, begin_frame, end_frame

__all__ = ["MemoryResult", "measure_memory"]


@dataclass(frozen=True)
class MemoryResult:
    """Python heap (tracemalloc) and resident set size over a run of the plugin's pass.

    ``traced_kib`` is sampled at the end of warm-up and at ten evenly spaced frames after
    it, with that frame's contact count (the plugin keeps each touching pair's last contact
    until the pair separates, so the heap follows it). ``slope_b_per_frame`` is the
    least-squares slope over the second half of those samples (steady growth, not a one-off
    cache fill). ``top`` lists the source lines that grew most between the end of warm-up
    and the end.
    """

    n: int
    warmup: int
    frames: int
    frames_at: list[int]
    traced_kib: list[float]
    peak_kib: float
    rss_mib: list[float | None]
    contacts: list[int]
    slope_b_per_frame: float
    top: list[str]

    @property
    def growth_kib(self) -> float:
        return self.traced_kib[-1] - self.traced_kib[0]

    @property
    def rss_growth_mib(self) -> float | None:
        first, last = self.rss_mib[0], self.rss_mib[-1]
        return None if first is None or last is None else last - first


def _rss_mib() -> float | None:
    """Resident set size from /proc (Linux); None elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure_memory(
    n: int, *, frames: int, warmup: int, seed: int, plugin: PluginOptions
) -> MemoryResult:
    """Run ``warmup + frames`` frames of the plugin's pass at ``n`` spheres under
    tracemalloc (each frame: reset previous transforms, setFluidPos every node, step)."""
    if warmup < 1 or frames < 1:
        raise ValueError(f"warmup and frames must be >= 1, got {warmup} and {frames}")
    scene = MovingSpheres.generate(n, seed=seed)
    world = World.build(scene, walls=False)
    system = PluginSystem(world, plugin)
    checkpoints = {warmup + round(k * frames / 10) for k in range(11)}
    frames_at: list[int] = []
    traced: list[float] = []
    rss: list[float | None] = []
    open_contacts: list[int] = []
    gc.collect()
    tracemalloc.start()
    try:
        first = None
        for frame in range(1, warmup + frames + 1):
            current = scene.positions(frame)
            begin_frame()
            world.move(current)
            system.run()
            system.after(current)
            end_frame()
            contacts = system.stats["contacts"][-1]
            system.stats.clear()  # the harness's own counters must not grow either
            if frame in checkpoints:
                gc.collect()
                frames_at.append(frame - warmup)
                traced.append(tracemalloc.get_traced_memory()[0] / 1024)
                rss.append(_rss_mib())
                open_contacts.append(int(contacts))
                if first is None:
                    first = tracemalloc.take_snapshot()
        last = tracemalloc.take_snapshot()
        peak = tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()
        system.close()
        world.destroy()
    diff = last.compare_to(first, "lineno") if first is not None else []
    top = [str(stat) for stat in diff[:5] if stat.size_diff > 0]
    half = len(frames_at) // 2
    x = np.asarray(frames_at[half:], float)
    y = np.asarray(traced[half:], float) * 1024
    slope = float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 and np.ptp(x) > 0 else 0.0
    return MemoryResult(
        n=n,
        warmup=warmup,
        frames=frames,
        frames_at=frames_at,
        traced_kib=traced,
        peak_kib=peak,
        rss_mib=rss,
        contacts=open_contacts,
        slope_b_per_frame=slope,
        top=top,
    )
