"""Time the four systems on the same moving scene, size by size."""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .scene import MovingSpheres
from .systems import (
    BulletSystem,
    FloorSystem,
    PluginOptions,
    PluginSystem,
    System,
    TraverserSystem,
    World,
    begin_frame,
    end_frame,
)

__all__ = [
    "PLUGIN",
    "TRAVERSER",
    "BULLET",
    "FLOOR",
    "SYSTEMS",
    "SizeResult",
    "skip_note",
    "time_size",
]

PLUGIN, TRAVERSER, BULLET, FLOOR = "panda3d-ccd", "CollisionTraverser", "Bullet", "floor"
SYSTEMS = (PLUGIN, TRAVERSER, BULLET, FLOOR)

#: How the cost of the systems that may be skipped grows with n, to extrapolate one size's
#: measurement to the next: the traverser tests every collider against every node.
_GROWTH = {TRAVERSER: 2.0, BULLET: 1.0}

#: A size is tried (one frame first) unless the extrapolation says one frame would take
#: more than this many times the limit: the extrapolation is only a guess, so sizes near
#: the limit are measured, but nobody waits minutes to confirm a hopeless one.
_TRY_FACTOR = 4.0


@dataclass
class SizeResult:
    """Medians for one size. ``ms[name]`` is None for a skipped system (``notes`` says why);
    ``samples[name]`` holds every timed frame in ms."""

    n: int
    side: float
    ms: dict[str, float | None] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)


def _estimate_ms(name: str, n: int, history: Sequence[SizeResult]) -> float | None:
    for past in reversed(history):
        ms = past.ms.get(name)
        if ms is not None:
            return ms * (n / past.n) ** _GROWTH[name]
    return None


def skip_note(name: str, n: int, history: Sequence[SizeResult], limit_s: float) -> str | None:
    """Why system ``name`` is not run at ``n`` spheres, or None if it is (always for a
    system outside ``_GROWTH``): it was skipped or over ``limit_s`` at a smaller size, or
    the sizes before extrapolate to more than ``_TRY_FACTOR`` times the limit."""
    if name not in _GROWTH:
        return None
    if any(past.ms.get(name) is None or name in past.notes for past in history):
        return "skipped (over the limit at a smaller n)"
    estimate = _estimate_ms(name, n, history)
    if estimate is not None and estimate > 1e3 * limit_s * _TRY_FACTOR:
        return f"skipped (est. {estimate / 1e3:.1f} s per frame)"
    return None


def time_size(
    n: int,
    *,
    seed: int,
    frames: int,
    warmup: int,
    walls: bool,
    plugin: PluginOptions,
    limit_s: float,
    history: Sequence[SizeResult] = (),
    systems: Sequence[str] = SYSTEMS,
) -> SizeResult:
    """Build the scene of ``n`` spheres and time ``frames`` frames after ``warmup`` ones.

    A system in ``_GROWTH`` is first timed on one frame; if that frame takes longer than
    ``limit_s``, that one frame is reported and the system is not run again. It is skipped
    without trying when the previous sizes extrapolate to more than ``_TRY_FACTOR`` times
    the limit, or when it was already skipped or over the limit at a smaller size.
    """
    scene = MovingSpheres.generate(n, seed=seed)
    result = SizeResult(n=n, side=scene.side)
    world = World.build(scene, walls=walls)
    active: list[System] = []
    try:
        for name in systems:
            note = skip_note(name, n, history, limit_s)
            if note is not None:
                result.ms[name] = None
                result.notes[name] = note
                continue
            active.append(_make(name, world, plugin))
        _run_frames(scene, world, active, result, frames=frames, warmup=warmup, limit_s=limit_s)
    finally:
        for system in active:
            system.close()
        world.destroy()
    for system in active:
        for key, values in system.stats.items():
            summary = np.mean if key == "capped" else np.median
            result.stats[f"{system.name} {key}"] = float(summary(values[warmup:] or values))
    for name, values in result.samples.items():
        if name not in result.ms:
            result.ms[name] = float(np.median(values))
    return result


def _make(name: str, world: World, plugin: PluginOptions) -> System:
    if name == PLUGIN:
        return PluginSystem(world, plugin)
    if name == TRAVERSER:
        return TraverserSystem(world)
    if name == BULLET:
        return BulletSystem(world)
    if name == FLOOR:
        return FloorSystem(world)
    raise ValueError(f"unknown system {name!r}; expected one of {', '.join(SYSTEMS)}")


def _run_frames(
    scene: MovingSpheres,
    world: World,
    active: list[System],
    result: SizeResult,
    *,
    frames: int,
    warmup: int,
    limit_s: float,
) -> None:
    previous = scene.positions(0)
    gc.collect()
    for frame in range(1, warmup + frames + 1):
        current = scene.positions(frame)
        begin_frame()
        world.move(current)
        # Rotating the order keeps any cache or allocator effect of "who runs first" from
        # favouring one system.
        shift = frame % len(active) if active else 0
        for system in active[shift:] + active[:shift]:
            system.prepare(frame, previous, current)
            t0 = time.perf_counter()
            system.run()
            elapsed = time.perf_counter() - t0
            system.after(current)
            if frame > warmup:
                result.samples.setdefault(system.name, []).append(1e3 * elapsed)
            elif frame == 1 and system.name in _GROWTH and elapsed > limit_s:
                result.ms[system.name] = 1e3 * elapsed
                result.notes[system.name] = "1 frame, over the limit"
        for system in [s for s in active if s.name in result.notes]:
            system.close()
            active.remove(system)
        end_frame()
        previous = current
