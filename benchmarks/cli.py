"""Command line: ``python -m benchmarks [--quick] [--sizes ...] [--profile] ...`` runs the
game-like scene (spheres bouncing in a walled arena, see :mod:`benchmarks.game`);
``--pileup`` the pile-up stress scene (fast spheres put back on course whatever they hit,
with the correctness and memory runs); ``--geometry`` runs only the geometry benchmark
(static index and sphere-triangle kernel), ``--statics`` only the static-collider one,
``--level`` only the level one (spheres over a 32,000-polygon level, and fast spheres fired
at it), ``--queries`` only the scene-query one (rays and sweeps cast into that level,
against Bullet and the traverser)."""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import panda3d

from . import report
from .correctness import measure_correctness
from .game import GamePasses, GameResult, demo_times, time_game
from .geometry import geometry_table, measure_geometry
from .level import (
    build_level,
    level_detail_table,
    level_table,
    measure_volley,
    registration_table,
    time_level,
    volley_table,
)
from .level_mesh import Level
from .memory import measure_memory
from .opcount import OpCounter, Unsupported
from .profiling import PileUpPasses, phase_table, profile_plugin
from .queries import (
    RADIUS,
    Rays,
    batch_table,
    cross_check_table,
    measure_queries,
    single_table,
    sweep_check_line,
    targets,
)
from .scene import fast_pairs
from .statics import measure_statics, statics_table
from .systems import PluginOptions
from .timing import PLUGIN, SizeResult, time_size

__all__ = ["main", "parse_args"]

DEFAULT_OUT = Path(__file__).resolve().parent / "out"

ROOT = Path(__file__).resolve().parents[1]

#: (option, full value, --quick value) for the options --quick shrinks (--pileup's; the
#: other modes' own tables come first).
_QUICK = {
    "sizes": ([100, 1000, 3000, 10000, 30000], [100, 1000]),
    "frames": (10, 3),
    "warmup": (3, 1),
    "pairs": (2000, 500),
    "mem_n": (1000, 100),
    "mem_frames": (2000, 100),
    "profile_n": ([10000], [1000]),
    "profile_frames": (5, 3),
}
#: The same for the game-like scene, the default.
_GAME_QUICK = {
    "sizes": ([10, 30, 100, 300, 1000, 3000, 10000], [10, 100]),
    "frames": (100, 10),
    "warmup": (10, 2),
    "profile_n": ([10, 100], [10]),
    "profile_frames": (100, 10),
    "demo_frames": (300, 30),
}
#: The same for --geometry, whose --sizes are sphere counts over the mesh.
_GEOMETRY_QUICK = {
    "sizes": ([10, 100, 1000, 10000], [10, 100, 1000]),
    "triangles": (100_000, 10_000),
    "kernel_pairs": (1_000_000, 100_000),
    "frames": (5, 2),
}
#: The same for --level, whose --sizes are mover counts over the level.
_LEVEL_QUICK = {
    "sizes": ([10, 100, 1000], [10, 100]),
    "frames": (10, 3),
    "warmup": (3, 1),
    "cells": (120, 40),
    "fired": (1000, 200),
}
#: The same for --queries (--frames: repeats of each batch).
_QUERIES_QUICK = {
    "cells": (120, 40),
    "frames": (5, 2),
    "rays": (10_000, 1000),
    "calls": (500, 100),
    "sweeps": (1000, 200),
}


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be comma-separated integers, got {text!r}"
        ) from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be integers >= 1, got {text!r}")
    return sorted(set(sizes))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time panda3d-ccd against Panda3D's CollisionTraverser and the bare "
        "scene-graph read on a game-like scene (spheres bouncing in a walled arena, each "
        "system's own events bouncing them), with the plugin's numpy operations per pass "
        "and the bundled demo's times; --pileup: the pile-up stress scene, with Bullet, "
        "correctness under speed and memory over a long run. Other modes: --geometry, "
        "--statics, --level, --queries.",
    )
    p.add_argument("--quick", action="store_true", help="small, fast run for CI smoke use")
    p.add_argument(
        "--pileup",
        action="store_true",
        help="the pile-up stress scene (the default before the game-like scene): spheres "
        "put back on course each frame whatever they hit, 10%% at 50 units a frame; with "
        "Bullet, the correctness table and the memory run",
    )
    p.add_argument(
        "--sizes",
        type=_sizes,
        help="comma-separated n (default 10,30,...,10000; --pileup 100,...,30000)",
    )
    p.add_argument(
        "--frames", type=_positive, help="timed frames per size (default 100; --pileup 10)"
    )
    p.add_argument(
        "--warmup", type=_count, help="untimed frames first (default 10; --pileup 3)"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--walls", action="store_true", help="add the box's six walls as planes")
    p.add_argument(
        "--response",
        choices=("rewind", "slide", "sensor"),
        help="the plugin's response for every sphere (default rewind; slide with --level)",
    )
    p.add_argument(
        "--plugin-own-prev",
        action="store_true",
        help="--pileup: let the plugin sweep from where it left each collider (its default, "
        "and the game-like scene's) instead "
        "of from Panda3D's previous transform; contacts then pile up, as the generator "
        "puts rewound nodes back on course",
    )
    p.add_argument(
        "--limit",
        type=float,
        default=3.0,
        help="skip the traverser or Bullet where one frame would take longer (s; default 3)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="game scene: stop timing the traverser at a size once its timed frames add up "
        "to this (s; default 20; at least 3 frames)",
    )
    p.add_argument(
        "--no-ops",
        action="store_true",
        help="game scene: do not count the plugin's numpy operations (saves a third copy "
        "of the game run under the counter)",
    )
    p.add_argument(
        "--demo-frames",
        type=_count,
        help="game scene: frames of the bundled demo run headless with each system for "
        "its ms a frame (default 300; 0: skip)",
    )
    p.add_argument("--pairs", type=_count, help="fast pairs for the correctness table (0: skip)")
    p.add_argument("--mem-n", type=_positive, help="spheres in the memory run (default 1000)")
    p.add_argument(
        "--mem-frames", type=_count, help="frames of the memory run (default 2000; 0: skip)"
    )
    p.add_argument("--profile", action="store_true", help="cProfile the plugin's pass")
    p.add_argument(
        "--profile-n",
        type=_sizes,
        help="comma-separated sizes to profile (default 10,100; --pileup 10000)",
    )
    p.add_argument(
        "--profile-frames", type=_positive, help="passes profiled (default 100; --pileup 5)"
    )
    p.add_argument(
        "--geometry",
        action="store_true",
        help="run only the geometry benchmark: build and query the static index of a level "
        "mesh, and time the sphere-triangle kernel (--sizes: sphere counts, default "
        "10,100,1000,10000; --frames: timed repeats, default 5)",
    )
    p.add_argument(
        "--triangles", type=_positive, help="triangles in the geometry mesh (default 100000)"
    )
    p.add_argument(
        "--kernel-pairs",
        type=_positive,
        help="sphere-triangle pairs in the kernel's one timed call (default 1000000)",
    )
    p.add_argument(
        "--statics",
        type=_positive,
        nargs="?",
        const=30_000,
        help="run only the static-collider benchmark: a pass of --movers movers among this "
        "many static spheres (default 30000) against the same pass without them",
    )
    p.add_argument("--movers", type=_positive, default=10, help="movers for --statics")
    p.add_argument(
        "--level",
        action="store_true",
        help="run only the level benchmark: movers over a level of terrain, walls and props "
        "(--sizes: movers, default 10,100,1000), then fast spheres fired at it",
    )
    p.add_argument(
        "--cells",
        type=_positive,
        help="terrain cells per side of the level (default 120: 31,920 triangles)",
    )
    p.add_argument(
        "--fired", type=_count, help="spheres fired at the level (default 1000; 0: skip)"
    )
    p.add_argument(
        "--volley-frames", type=_positive, default=3, help="frames each fired sphere is pushed"
    )
    p.add_argument(
        "--queries",
        action="store_true",
        help="run only the scene-query benchmark: rays and sphere sweeps cast into the "
        "level (--cells), the plugin's batch and single calls against Bullet's and the "
        "traverser's, with a ray-by-ray cross-check against Bullet (--frames: repeats of "
        "each batch, default 5; --profile: cProfile the ray batch)",
    )
    p.add_argument("--rays", type=_positive, help="rays for --queries (default 10000)")
    p.add_argument(
        "--calls", type=_positive, help="single-ray calls timed for --queries (default 500)"
    )
    p.add_argument("--sweeps", type=_positive, help="sweeps for --queries (default 1000)")
    p.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = p.parse_args(argv)
    if args.response is None:
        args.response = "slide" if args.level else "rewind"
    own = (
        _GEOMETRY_QUICK if args.geometry
        else _LEVEL_QUICK if args.level
        else _QUERIES_QUICK if args.queries
        else {} if args.pileup or args.statics
        else _GAME_QUICK
    )  # fmt: skip
    for name, (full, quick) in own.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    for name, (full, quick) in _QUICK.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def _say(text: str = "") -> None:
    print(text, flush=True)


def _write(args: argparse.Namespace, text: str, record: dict, started: float) -> int:
    """Print the report, write it to results.md and ``record`` to results.json."""
    _say()
    _say(text)
    (args.out / "results.md").write_text(text)
    report.write_json(args.out / "results.json", record)
    _say(f"Wrote {args.out / 'results.md'} and results.json "
         f"({time.perf_counter() - started:.1f} s in all)")  # fmt: skip
    return 0


def _geometry(args: argparse.Namespace) -> int:
    """The geometry benchmark alone: its table on stdout, results.md and results.json."""
    started = time.perf_counter()
    setup = (
        f"numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}; seed {args.seed}; {args.triangles:,} triangles; medians of "
        f"{args.frames} runs after one untimed run"
    )
    rows = measure_geometry(
        args.triangles,
        args.sizes,
        kernel_pairs=args.kernel_pairs,
        repeats=args.frames,
        seed=args.seed,
    )
    text = (
        f"# panda3d-ccd geometry benchmark\n\n{setup}\n\n"
        "## Static index of a level mesh\n\n"
        "A terrain (two triangles per unit cell, heights within about 5) with walls, "
        "axis-aligned and slanted, indexed once; spheres of radius 0.5 over it, 10% moving "
        "about 50 units a frame (cut into pieces) and the rest 0.5. Pairs: candidate "
        "(sphere, triangle) pairs found.\n\n" + geometry_table(rows) + "\n"
    )
    record = {
        "setup": setup,
        "args": {k: str(v) for k, v in vars(args).items()},
        "geometry": rows,
    }
    return _write(args, text, record, started)


def _statics(args: argparse.Namespace) -> int:
    """The static-collider benchmark alone: its table on stdout and in results.md."""
    statics = 1000 if args.quick else args.statics
    rows = measure_statics(statics, args.movers, frames=10 if args.quick else 50, seed=args.seed)
    text = (
        "# panda3d-ccd static colliders\n\n"
        f"panda3d {panda3d.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}; seed {args.seed}; best of two medians of the passes\n\n"
        + statics_table(rows)
        + "\n"
    )
    _say(text)
    (args.out / "results.md").write_text(text)
    report.write_json(args.out / "results.json", {"statics": rows})
    return 0


def _level(args: argparse.Namespace) -> int:
    """The level benchmark alone: its tables on stdout, results.md and results.json."""
    started = time.perf_counter()
    build = build_level(Level.generate(args.cells, seed=args.seed))
    level = build.level
    setup = (
        f"panda3d {panda3d.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}; seed {args.seed}; "
        f"{len(level.triangles):,} triangles ({level.terrain_triangles:,} terrain, "
        f"{level.first_box - level.terrain_triangles:,} closing the ground below, "
        f"{level.walls} walls, {len(level.box_half) - level.walls} props) in {build.nodes} "
        f"CollisionNodes; plugin response={args.response}; medians of {args.frames} frames "
        f"after {args.warmup} warm-up"
    )
    _say(setup)
    results = []
    for n in args.sizes:
        t0 = time.perf_counter()
        results.append(
            time_level(
                build, n, frames=args.frames, warmup=args.warmup, seed=args.seed,
                limit_s=args.limit, response=args.response,
            )
        )  # fmt: skip
        _say(f"movers={n:,}: {time.perf_counter() - t0:.1f} s incl. set-up")
    sections = [
        f"# panda3d-ccd level benchmark\n\n{setup}",
        "## Time per frame (ms)\n\n"
        f"Spheres of radius 0.5 over a terrain of {level.side:.0f} x {level.side:.0f} units "
        "with walls and props; 90% roll along the ground about 0.3 units a frame, 10% are "
        "fired about 50 units a frame partly down, and respawned where they hit. Same level, "
        "same motion for every system, each response undone before the next system runs. "
        "Spheres meet the level only. Bullet sweeps: one sweepTestClosest per sphere from "
        "positions already in numpy; Bullet slides: the plugin's slide done with those sweeps "
        "a sphere at a time (collide-and-slide: sweep, move to the hit, keep the motion "
        "left along the surface, sweep again, at most 8 sweeps); Bullet doPhysics: a full "
        "dynamics step with CCD, a reference. The floor reads every sphere's position.\n\n"
        + level_table(results)
        + "\n\nPer frame (medians):\n\n"
        + level_detail_table(results)
        + "\n\nSet-up:\n\n"
        + registration_table(build, results),
    ]
    record: dict[str, Any] = {
        "setup": setup,
        "args": {k: str(v) for k, v in vars(args).items()},
        "timing": results,
        "scene_ms": build.scene_ms,
        "bullet_mesh_ms": build.bullet_ms,
    }
    if args.fired:
        t0 = time.perf_counter()
        rows = measure_volley(build, args.fired, frames=args.volley_frames, seed=args.seed)
        sections.append(
            "## Fast spheres fired at the level\n\n"
            f"{args.fired:,} spheres of radius 0.5 fired straight at front faces (half terrain, "
            "half walls and props; 5 to 35 units before the face, within 60 degrees of its "
            f"normal, about 50 units a frame), pushed on by their velocity for "
            f"{args.volley_frames} frames from wherever the system left them. Counted with "
            "numpy on the level's triangles: spheres whose centre ended a frame inside a solid "
            "(a ray cast), and spheres whose path crossed a triangle from front to back inside "
            "it. A path is taken through the points where the system says it touched (the "
            "plugin's contacts' centres, Bullet's collide-and-slide's hits); the traverser "
            "and doPhysics do not say, so theirs bend only where a sphere moving straight "
            "first touches the level (Bullet's sweep), and a slide that bends again in the "
            "frame may be counted although it went round: an upper bound for them.\n\n"
            + volley_table(rows)
        )
        record["volley"] = [dict(vars(row), share=row.share) for row in rows]
        _say(f"volley: {args.fired:,} spheres ({time.perf_counter() - t0:.1f} s)")
    return _write(args, "\n\n".join(sections) + "\n", record, started)


def _queries(args: argparse.Namespace) -> int:
    """The scene-query benchmark alone: its tables on stdout, results.md and results.json."""
    started = time.perf_counter()
    build = build_level(Level.generate(args.cells, seed=args.seed))
    level = build.level
    rays = Rays.generate(level, args.rays, seed=args.seed)
    run = measure_queries(
        build,
        rays,
        calls=min(args.calls, args.rays),
        sweeps=min(args.sweeps, args.rays),
        repeats=args.frames,
        profile=args.profile,
    )
    setup = (
        f"panda3d {panda3d.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}; seed {args.seed}; "
        f"{run.triangles:,} triangles in {run.nodes} CollisionNodes (the --level level, "
        f"{args.cells} cells a side); {run.rays:,} rays ({int(rays.ground.sum()):,} ground, "
        f"{run.rays - int(rays.ground.sum()):,} hitscan); batches: medians of "
        f"{run.repeats} repeats after one untimed; garbage collection off while timed"
    )
    check = run.rays_check
    sections = [
        f"# panda3d-ccd scene queries\n\n{setup}",
        "## Targets\n\n" + targets(run),
        f"## {run.rays:,} rays at once (ms for all)\n\n"
        "The plugin: one ray_test_batch over (k, 3) arrays, after add_collision_nodes(level, "
        "static=True) and one step(). Bullet: rayTestClosest once per ray in a Python loop "
        "building its Point3s from the same arrays, on a BulletTriangleMesh of the same "
        "triangles; its result objects are read afterwards, untimed.\n\n"
        + batch_table(run.ray_batch),
        "## One ray a call (ms per call)\n\n"
        f"The first {run.single[0].calls:,} rays, each call timed alone, arguments built "
        "beforehand (Point3, Vec3), the hit point read. The traverser's CollisionRay is "
        "infinite and hits polygons from behind: a timing reference, not the same "
        "question.\n\n" + single_table(run.single),
        f"## {run.sweeps:,} sphere sweeps at once (ms for all, for information)\n\n"
        f"Spheres of radius {RADIUS} along the first {run.sweeps:,} rays.\n\n"
        + batch_table(run.sweep_batch)
        + "\n\n"
        + sweep_check_line(run.sweeps_check),
        "## Cross-check: the plugin's rays against Bullet's\n\n"
        "Per ray, the plugin's batch against Bullet's closest hit. Bullet's mesh is "
        "two-sided; the side it hit is read from the triangle it reports (its hit normal "
        "always faces the ray). Front face: the plugin must report the same point, within "
        "1e-3 of the ray's length; nothing hit: the plugin neither; back face: the plugin "
        "must report nothing before it. Largest gap: the farthest apart the two points "
        "are where both hit a front face (units).\n\n" + cross_check_table(check),
    ]
    if check.examples:
        sections.append(
            "Disagreements (first 10):\n\n"
            + "\n".join(f"    {example}" for example in check.examples)
        )
    sections.append(
        f"Set-up: scene {report._ms(build.scene_ms)} ms, Bullet mesh {report._ms(build.bullet_ms)} "
        f"ms, add_collision_nodes {report._ms(run.register_ms)} ms, first step() "
        f"{report._ms(run.first_pass_ms)} ms."
    )
    if run.profile:
        sections.append(
            f"## cProfile of one ray_test_batch ({run.rays:,} rays)\n\n```\n"
            + run.profile
            + "\n```"
        )
    text = "\n\n".join(sections) + "\n"
    record = {
        "setup": setup,
        "args": {k: str(v) for k, v in vars(args).items()},
        "run": run,
        "disagree": check.disagree,
    }
    return _write(args, text, record, started)


def _profile_section(
    passes: Callable[[], Any], frames: int, record: dict[str, Any], ops: str = ""
) -> str:
    """The phase table (no profiler), the cProfile tables and listing of the plugin's pass
    over the frames of ``passes()`` (called once for each), with ``ops`` before the
    listing."""
    phases = phase_table(passes(), frames=frames, warmup=2)
    made = passes()
    n = len(made.system.world.nodes)
    profile = profile_plugin(made, frames=frames, warmup=2)
    record[str(n)] = {"phases": phases, "profile": profile}
    parts = [f"## Profile of the plugin's pass at n={n:,}", phases, profile.by_phase]
    parts += [profile.top, ops] if ops else [profile.top]
    return "\n\n".join(parts) + "\n\n```\n" + profile.listing.rstrip() + "\n```"


def _top_functions(result: GameResult, top: int = 15) -> str:
    """The plugin functions making the most numpy operations per pass, as a table."""
    rows = list(result.ops_by.get("function", {}).items())[:top]
    lines = [
        f"numpy operations per pass by the plugin function making them (n={result.n:,}, "
        "mean over the counted passes):",
        "",
        "| function | ops per pass |",
        "|---|---:|",
    ]
    lines += [f"| `{name}` | {count:,.1f} |" for name, count in rows]
    return "\n".join(lines)


def _game(args: argparse.Namespace) -> int:
    """The game-like scene: time per frame, numpy operations, the demo, the profile."""
    started = time.perf_counter()
    if not args.no_ops:
        try:
            OpCounter()
        except Unsupported as exc:
            _say(f"numpy operations are not counted here: {exc}")
            args.no_ops = True
    setup = (
        f"panda3d {panda3d.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}; seed {args.seed}; medians of "
        f"{args.frames} frames after {args.warmup} warm-up; the traverser is skipped where "
        f"one frame would take more than {args.limit:g} s and timed for at most "
        f"{args.budget:g} s a size (at least 3 frames)"
    )
    _say(setup)
    results: list[GameResult] = []
    for n in args.sizes:
        t0 = time.perf_counter()
        results.append(
            time_game(
                n, seed=args.seed, frames=args.frames, warmup=args.warmup,
                limit_s=args.limit, budget_s=args.budget, history=results,
                count_ops=not args.no_ops,
            )
        )  # fmt: skip
        _say(f"n={n:,}: plugin {results[-1].ms[PLUGIN]:.2f} ms "
             f"({time.perf_counter() - t0:.1f} s incl. set-up)")  # fmt: skip
    sections = [
        f"# panda3d-ccd benchmark: the game-like scene\n\n{setup}",
        "## Time per frame (ms)\n\n"
        "n spheres of radius 0.45 in an arena closed by 6 walls (planes), at the pile-up "
        "scene's density (4 n^(1/3) units a side), apart at the start; 90% move about 0.3 "
        "units a frame, 10% about 2 (+-25%). Each system plays its own copy of the game from "
        "the same start: each frame every sphere moves on by its velocity (setFluidPos), the "
        "system's pass runs (timed), then the game's handler on `%fn-into-%in` and "
        "`%fn-again-%in` reflects each event's from-sphere's velocity about "
        "`getSurfaceNormal(render)`. The plugin: one `step()` (planes by `add_plane`, events "
        "through a messenger that keeps them), sweeping from where it left each sphere (its "
        "default; here also Panda3D's previous transform, as the game moves each sphere on "
        "from there by setFluidPos); the traverser: `traverse()` with "
        "respect-prev-transform, every sphere a from- and into-object, the walls as "
        "CollisionPlanes, a CollisionHandlerEvent. The floor reads every sphere's position. "
        "The sweep floor (up to 300 spheres, its own copy of the game; `SweepFloor` in "
        "`benchmarks/game.py`) is the least a numpy pass of exact sweeps does: it reads every "
        "node, finds each sphere's first contact with a wall or another sphere on its "
        "straight path over every pair, stops it there and writes it back, in 73 numpy "
        "operations (counted as the plugin's are); no events, masks, sensors or slop, and "
        "nothing done about what a stop changes. numpy ops: the plugin's numpy calls, "
        "operators and subscripts a pass "
        "(`benchmarks/opcount.py`), counted on a third copy of the plugin's game that must "
        "end every frame exactly where the timed one does; us per op: the median pass over "
        "the median count.\n\n" + report.game_table(results),
        "What the frames held (totals over the timed frames; rounds: the plugin's rounds of "
        "resolution a pass, 0 where nothing was near; past a wall: a centre beyond a wall's "
        "plane; overlapping: a sphere more than 1% of its radius into a wall or another "
        "sphere; pairs missed: pairs whose straight paths of the frame touch by the exact "
        "kernel and that the system reported in neither direction, counted for the "
        "traverser, which moves nothing):\n\n" + report.game_detail_table(results),
    ]
    record: dict[str, Any] = {
        "setup": setup,
        "args": {k: str(v) for k, v in vars(args).items()},
        "timing": results,
    }
    if not args.no_ops:
        sections.append(
            "## numpy operations per pass, by phase\n\n"
            "Mean per counted pass: read (`_scan`, `_read_all`, `_read_planes`, "
            "`_piece_tables`), solve (`_near_statics`, `_solver.solve`: broad phase, times "
            "of impact, rounds), write back (`_write_back`), events (`_touches`, the pair "
            "tracker, sending), other (`step()`'s own lines and the rest it calls).\n\n"
            + report.ops_table(results)
        )
    if args.demo_frames:
        t0 = time.perf_counter()
        times = demo_times(args.demo_frames, root=ROOT)
        line = (
            f"The bundled demo (`python -m demo --headless --frames {args.demo_frames} "
            "--system plugin` and `--system traverser`; seed 7, 60 balls; its HUD's timer: "
            "the collision pass with the game's handlers, the mean over the frames, the "
            f"first included): plugin {report._ms(times['plugin'])} ms a frame, traverser "
            f"{report._ms(times['traverser'])} ms a frame, plugin/traverser "
            f"{report._ratio(times['plugin'], times['traverser'])}."
        )
        sections.append("## The demo\n\n" + line)
        record["demo"] = times
        _say(f"demo: {time.perf_counter() - t0:.1f} s")
    if args.profile:
        record["profile"] = {}
        by_n = {r.n: r for r in results}
        for n in args.profile_n:
            ops = _top_functions(by_n[n]) if n in by_n and by_n[n].ops_by else ""
            sections.append(
                _profile_section(
                    lambda n=n: GamePasses(n, seed=args.seed),
                    args.profile_frames,
                    record["profile"],
                    ops,
                )
            )
    if not args.no_plot:
        png = args.out / "time_per_frame.png"
        note = report.write_plot(png, results, "Game-like scene: time per frame vs n (median)")
        sections.append(f"Plot: {png}" if note is None else f"Note: {note}")
    return _write(args, "\n\n".join(sections) + "\n", record, started)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.geometry:
        return _geometry(args)
    if args.statics:
        return _statics(args)
    if args.level:
        return _level(args)
    if args.queries:
        return _queries(args)
    if args.pileup:
        return _pileup(args)
    return _game(args)


def _pileup(args: argparse.Namespace) -> int:
    """The pile-up stress scene: timing, correctness, memory and the profile."""
    started = time.perf_counter()
    plugin = PluginOptions(
        response=args.response, respect_prev_transform=not args.plugin_own_prev
    )
    setup = (
        f"panda3d {panda3d.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}; seed {args.seed}; walls "
        f"{'on' if args.walls else 'off'}; plugin response={args.response}, "
        f"respect_prev_transform={plugin.respect_prev_transform}; "
        f"medians of {args.frames} frames after {args.warmup} warm-up"
    )
    record: dict[str, Any] = {"setup": setup, "args": {k: str(v) for k, v in vars(args).items()}}
    sections: list[str] = [f"# panda3d-ccd benchmark\n\n{setup}"]

    results: list[SizeResult] = []
    for n in args.sizes:
        t0 = time.perf_counter()
        results.append(
            time_size(
                n,
                seed=args.seed,
                frames=args.frames,
                warmup=args.warmup,
                walls=args.walls,
                plugin=plugin,
                limit_s=args.limit,
                history=results,
            )
        )
        _say(f"n={n:,}: plugin {results[-1].ms[PLUGIN]:.2f} ms "
             f"({time.perf_counter() - t0:.1f} s incl. set-up)")
    sections.append(
        "## Time per frame (ms)\n\n"
        "Same nodes, same motion: each frame every node is moved with setFluidPos, then "
        "each system's pass is timed alone. Bullet is a full dynamics step (integrate, "
        "CCD, contacts, solver) on its own bodies placed at the same positions: a reference, "
        "not the same task. The floor reads every node's world position into numpy.\n\n"
        + report.timing_table(results)
        + "\n\nPer frame (medians):\n\n"
        + report.detail_table(results)
    )
    record["timing"] = results

    if args.pairs:
        t0 = time.perf_counter()
        scene = fast_pairs(args.pairs, seed=args.seed)
        rows = measure_correctness(scene)
        sections.append(
            "## Correctness under speed\n\n"
            f"{scene.m:,} isolated pairs, both spheres moving 20-60 units in the frame "
            "(radii 0.25-1); truth: exact time of impact (panda3d_ccd.sweep); grazing "
            "pairs within 2% of touching excluded.\n\n" + report.correctness_table(rows)
        )
        record["correctness"] = [dict(vars(row), share=row.share) for row in rows]
        _say(f"correctness: {scene.m:,} pairs ({time.perf_counter() - t0:.1f} s)")

    if args.mem_frames:
        t0 = time.perf_counter()
        mem = measure_memory(
            args.mem_n,
            frames=args.mem_frames,
            warmup=max(1, min(100, args.mem_frames // 10)),
            seed=args.seed,
            plugin=plugin,
        )
        text = "## Memory\n\n" + report.memory_line(mem)
        if mem.top:
            text += "\n\nLargest growth by line:\n\n" + "\n".join(f"    {t}" for t in mem.top)
        sections.append(text)
        _say(f"memory: {args.mem_frames:,} frames at n={args.mem_n:,} "
             f"({time.perf_counter() - t0:.1f} s)")
        record["memory"] = dict(
            vars(mem), growth_kib=mem.growth_kib, rss_growth_mib=mem.rss_growth_mib
        )

    if args.profile:
        record["profile"] = {}
        for n in args.profile_n:
            def passes(n: int = n) -> PileUpPasses:
                return PileUpPasses(n, seed=args.seed, plugin=plugin, walls=args.walls)

            sections.append(_profile_section(passes, args.profile_frames, record["profile"]))

    if not args.no_plot:
        png = args.out / "time_per_frame.png"
        note = report.write_plot(png, results, "Time per frame vs n (median)")
        sections.append(f"Plot: {png}" if note is None else f"Note: {note}")

    return _write(args, "\n\n".join(sections) + "\n", record, started)
