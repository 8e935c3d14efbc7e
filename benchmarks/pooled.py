"""A pool of detached nodes in the game-like scene: what it costs the plugin's pass.

Games keep bullets and effects in a pool: registered once, ``detachNode()``ed while
unused, attached again when fired. Nodes out of the scene are inactive; they should cost
the pass nothing. Two copies of the same game (:class:`~benchmarks.game.GamePasses`) run
side by side, frame by frame: one as it is, one with ``pooled`` more spheres registered
and then detached. Each frame each copy's pass is timed; reported: the medians and their
ratio, which is 1 where a pool costs nothing. The two games must end with every sphere at
the same position, to the bit.

``python -m benchmarks.pooled [N] [POOLED] [FRAMES]`` (default 30 5 2000).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .game import GamePasses


def pooled_times(n: int, pooled: int, frames: int, *, seed: int = 1) -> dict[str, float]:
    """Median ms a pass of the game of ``n`` spheres, without and with ``pooled`` detached
    ones (same game, same motion; the two passes of a frame alternate which runs first)."""
    plain, with_pool = GamePasses(n, seed=seed), GamePasses(n, seed=seed)
    render = with_pool.game.world.render
    ccd = with_pool.system.ccd
    pool = []
    for k in range(pooled):
        node = render.attachNewNode(f"pooled{k}")
        node.setPos(0, 0, 1000 + 10 * k)  # far above the arena
        ccd.add_sphere(node, 0.5)
        pool.append(node)
    with_pool.system.run()  # the pool's first pass, in the scene
    for node in pool:
        node.detachNode()
    times: dict[str, list[float]] = {"plain": [], "pooled": []}
    games = {"plain": plain, "pooled": with_pool}
    frames_of = {name: game.frames(frames) for name, game in games.items()}
    for frame in range(frames):
        order = ("plain", "pooled") if frame % 2 else ("pooled", "plain")
        for name in order:
            next(frames_of[name])
            start = time.perf_counter()
            games[name].system.run()
            times[name].append(time.perf_counter() - start)
    for name in games:
        for _ in frames_of[name]:  # the last frame's bounce
            pass
    # The pool changes nothing but the time: the same game, to the bit.
    same = np.array_equal(plain.game.positions(), with_pool.game.positions())
    for game in games.values():
        game.close()
    if not same:
        raise RuntimeError("the game with a pool of detached nodes played differently")
    plain_ms, pooled_ms = (1e3 * float(np.median(times[k])) for k in ("plain", "pooled"))
    return {"plain_ms": plain_ms, "pooled_ms": pooled_ms, "ratio": pooled_ms / plain_ms}


def main(argv: list[str]) -> int:
    n, pooled, frames = (int(a) for a in (argv + ["30", "5", "2000"][len(argv) :])[:3])
    result = pooled_times(n, pooled, frames)
    print(
        f"{n} colliders, {pooled} pooled: {result['plain_ms']:.3f} ms a pass without the "
        f"pool, {result['pooled_ms']:.3f} with it ({result['ratio']:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
