"""Static colliders: what 30,000 ``static=True`` spheres add to a pass of a few movers.

The same movers (radius 0.5, moving about 1 unit a frame with ``setFluidPos``) among
``statics`` pillars scattered in a cube, timed three ways in one run: without the
pillars, with them as static spheres, and with them as dynamic spheres that never move
(what static spheres cost before they had an index of their own).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from panda3d.core import LVector3, NodePath

from panda3d_ccd import ContinuousCollision

from .systems import CountingMessenger, NoTasks

__all__ = ["StaticsRow", "measure_statics", "statics_table"]

_SIDE = 400.0


@dataclass
class StaticsRow:
    case: str
    statics: int
    movers: int
    ms: float  # median time of one pass
    ratio: float  # against the pass without statics


def _pass_ms(statics: int, movers: int, *, as_static: bool, frames: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    render = NodePath("render")
    ccd = ContinuousCollision(
        taskmgr=NoTasks(), render=render, messenger=CountingMessenger(), task_name="statics"
    )
    for _ in range(statics):
        pillar = render.attachNewNode("pillar")
        pillar.setPos(*rng.uniform(-_SIDE, _SIDE, 3))
        ccd.add_sphere(pillar, 0.5, static=as_static)
    moving = []
    for _ in range(movers):
        mover = render.attachNewNode("mover")
        mover.setPos(*rng.uniform(-_SIDE, _SIDE, 3))
        ccd.add_sphere(mover, 0.5)
        moving.append((mover, LVector3(*rng.normal(size=3))))
    ccd.step()
    times = []
    for _ in range(frames):
        for mover, velocity in moving:
            mover.setFluidPos(mover.getPos() + velocity)
        t0 = time.perf_counter()
        ccd.step()
        times.append(time.perf_counter() - t0)
    ccd.destroy()
    return 1e3 * float(np.median(times))


def measure_statics(
    statics: int = 30_000, movers: int = 10, *, frames: int = 50, seed: int = 1
) -> list[StaticsRow]:
    """The three passes, interleaved twice so that a noisy moment hits them alike; each
    row keeps the better of its two medians."""
    cases = [("no statics", 0, True), ("static spheres", statics, True),
             ("the same as dynamic spheres that never move", statics, False)]  # fmt: skip
    best = {name: np.inf for name, _, _ in cases}
    for _ in range(2):
        for name, count, as_static in cases:
            ms = _pass_ms(count, movers, as_static=as_static, frames=frames, seed=seed)
            best[name] = min(best[name], ms)
    base = best["no statics"]
    return [StaticsRow(name, count, movers, best[name], best[name] / base)
            for name, count, _ in cases]  # fmt: skip


def statics_table(rows: list[StaticsRow]) -> str:
    lines = [
        "| pass | statics | movers | ms per pass | against no statics |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.case} | {row.statics:,} | {row.movers} | {row.ms:.3f} | {row.ratio:.2f}x |"
        )
    return "\n".join(lines)
