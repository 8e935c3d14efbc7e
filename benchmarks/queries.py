"""The scene-query benchmark (issue 14): rays and sphere sweeps cast into the level.

``python -m benchmarks --queries`` builds the level of ``--level``
(:class:`benchmarks.level_mesh.Level`, 32,882 triangles by default, as CollisionNodes of
CollisionPolygons, and as Bullet's BulletTriangleMesh of the same triangles, built the
same way) and casts the same rays into every system:

* the plugin: ``add_collision_nodes(level, static=True)``, one ``step()`` (queries see the
  world the last pass left), then ``ray_test_batch`` / ``sweep_test_batch`` over all the
  rays in one call, and ``ray_test_closest`` / ``sweep_test_closest`` one ray a call;
* Bullet: ``BulletWorld.rayTestClosest`` / ``sweepTestClosest`` (a BulletSphereShape from
  ``TransformState.makePos`` to ``makePos``), one call per ray in a Python loop that
  builds each call's Point3s from numpy (a game holds its rays in arrays for a batch);
  the loop keeps the result objects and reads them afterwards, untimed: the least Bullet
  can do;
* Panda3D's CollisionTraverser with one CollisionRay from-object and a
  CollisionHandlerQueue, the level's CollisionNodes the into-objects: per ray, set the
  ray, traverse, sort the queue and read the closest entry's surface point. A
  CollisionRay is infinite (it may hit beyond the ray's end) and hits polygons from
  behind too: a timing reference, not an equal task.

The rays (:class:`Rays`, fixed seed): half "ground rays", straight down, GROUND_LENGTH
(10) long, from points 1 to 6 units above the terrain (a character's feet finding the
floor); half "hitscan" rays, HITSCAN_LENGTH (200) long, in directions uniform on the
sphere, from points 1 to 10 units above the terrain (a shot fired across the level). Every
start is outside every solid (clear of the boxes by 0.8), so the first surface a ray meets
is a front face; the order is shuffled, so any prefix (the single-call and sweep sets) is
the same mix.

The cross-check (:func:`cross_check`) compares, ray by ray, the plugin's batch with
Bullet's closest hit. Bullet's mesh is two-sided and its hit normal always faces the ray,
so which side was hit is read from the triangle it reports (``getTriangleIndex``, a row of
``level.triangles``): front when that triangle's own normal ``(b - a) x (c - a)`` opposes
the ray. Where Bullet hits a front face the plugin must report the same point (within
``1e-3`` of the ray's length: float32 rounding in Bullet); where Bullet hits nothing the
plugin must too. Rays whose closest Bullet hit is a back face are counted apart (the
plugin sees through it; it must not report anything before it).
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from panda3d.core import (
    BitMask32,
    CollisionHandlerQueue,
    CollisionNode,
    CollisionRay,
    CollisionTraverser,
    NodePath,
    Point3,
    TransformState,
    Vec3,
)

from panda3d_ccd import ContinuousCollision
from panda3d_ccd._pieces import _triangle_closest
from panda3d_ccd._tolerance import SEAM_REL

from .level import _LEVEL_MASK, _MESH_GROUP, LevelBuild, _bullet_world
from .level_mesh import RADIUS, Level
from .report import _ms, _ratio
from .systems import CountingMessenger, NoTasks

__all__ = [
    "RADIUS",
    "GROUND_LENGTH",
    "HITSCAN_LENGTH",
    "TOLERANCE",
    "Rays",
    "CrossCheck",
    "QueryRun",
    "cross_check",
    "bullet_ray_hits",
    "measure_queries",
    "batch_table",
    "single_table",
    "cross_check_table",
]

Float = NDArray[np.float64]
Bool = NDArray[np.bool_]
Int = NDArray[np.int64]

GROUND_LENGTH = 10.0
HITSCAN_LENGTH = 200.0
#: Hit points agree within this share of the ray's length (Bullet holds float32).
TOLERANCE = 1e-3

PLUGIN, BULLET, TRAVERSER = "panda3d-ccd", "Bullet", "CollisionTraverser"
#: The single-call target (ms), and the batch target: the plugin's batch no slower than
#: Bullet's loop.
SINGLE_TARGET_MS = 0.1


# ---------------------------------------------------------------------- the rays
@dataclass(frozen=True)
class Rays:
    """Rays cast into a level.

    Attributes
    ----------
    start, end : (k, 3) float64
        Each ray goes from ``start[i]`` to ``end[i]``.
    ground : (k,) bool
        Ground rays (straight down, GROUND_LENGTH long); the others are hitscan rays.
    """

    start: Float
    end: Float
    ground: Bool

    def __len__(self) -> int:
        return len(self.start)

    @property
    def length(self) -> Float:
        """(k,) float64 length of each ray."""
        return np.linalg.norm(self.end - self.start, axis=1)

    @classmethod
    def generate(cls, level: Level, k: int, *, seed: int = 1) -> Rays:
        """``k`` rays over ``level``: ``k // 2`` ground rays (their starts 1 to 6 above the
        terrain) and the rest hitscan rays (starts 1 to 10 above it, directions uniform on
        the sphere), shuffled."""
        if k < 2:
            raise ValueError(f"k must be >= 2 (ground and hitscan rays), got k={k}")
        rng = np.random.default_rng(seed)
        n_ground = k // 2
        ground_start = level.free_points(rng, n_ground, 1.0, 6.0)
        ground_end = ground_start - [0.0, 0.0, GROUND_LENGTH]
        shot_start = level.free_points(rng, k - n_ground, 1.0, 10.0)
        direction = rng.standard_normal((k - n_ground, 3))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        shot_end = shot_start + HITSCAN_LENGTH * direction
        order = rng.permutation(k)
        start = np.concatenate([ground_start, shot_start])[order]
        end = np.concatenate([ground_end, shot_end])[order]
        return cls(start, end, (np.arange(k) < n_ground)[order])

    def head(self, k: int) -> Rays:
        """The first ``k`` rays (the same mix: the order is shuffled)."""
        return Rays(self.start[:k], self.end[:k], self.ground[:k])


# ---------------------------------------------------------------------- the cross-check
@dataclass
class CrossCheck:
    """The plugin's rays against Bullet's, one count per case (``kinds``: the same counts
    for ground and hitscan rays apart).

    ``front``: Bullet's closest hit is a front face; ``front_agree``: the plugin hit the
    same point. ``miss``: Bullet hits nothing; ``miss_agree``: neither does the plugin.
    ``back``: Bullet's closest hit is a back face; ``back_agree``: the plugin reports
    nothing before it. ``graze``: Bullet hits nothing, the plugin a point within its seam
    slop of the mesh (``SEAM_REL`` of the coordinates: a ray passing that close outside
    an edge hits). ``disagree`` = rays - agreements: should be 0. ``worst``: the
    largest distance between the two hit points where both hit a front face.
    ``examples``: up to 10 disagreeing rays (index, from, to, plugin t, Bullet t).
    """

    rays: int
    front: int
    front_agree: int
    miss: int
    miss_agree: int
    back: int
    back_agree: int
    worst: float
    examples: list[dict[str, Any]] = field(default_factory=list)
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    graze: int = 0

    @property
    def disagree(self) -> int:
        return self.rays - self.front_agree - self.miss_agree - self.back_agree - self.graze


def cross_check(
    rays: Rays,
    triangles: Float,
    plugin_t: Float,
    plugin_point: Float,
    bullet_t: Float,
    bullet_point: Float,
    bullet_triangle: Int,
) -> CrossCheck:
    """Compare the plugin's hits with Bullet's, ray by ray.

    Parameters
    ----------
    rays : Rays (k rays)
    triangles : (m, 3, 3) float64
        The mesh Bullet was given, in its order (``bullet_triangle`` indexes it).
    plugin_t : (k,) float64
        The plugin's hit fraction, inf where it hit nothing; ``plugin_point`` (k, 3)
        float64 its surface point (nan where none).
    bullet_t : (k,) float64
        Bullet's hit fraction, inf where it hit nothing; ``bullet_point`` (k, 3) float64
        its hit point; ``bullet_triangle`` (k,) int64 the triangle hit (-1 where none).
    """
    d = rays.end - rays.start
    length = np.linalg.norm(d, axis=1)
    hit = np.isfinite(bullet_t)
    tri = triangles[np.where(hit, bullet_triangle, 0)]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    front = hit & (np.einsum("ij,ij->i", normal, d) < 0)
    back = hit & ~front
    plugin_hit = np.isfinite(plugin_t)
    gap = np.linalg.norm(np.where(plugin_hit[:, None], plugin_point, np.inf) - bullet_point, axis=1)
    front_agree = front & plugin_hit & (gap <= TOLERANCE * length)
    miss_agree = ~hit & ~plugin_hit
    graze = np.zeros(len(hit), bool)
    size = np.abs(triangles).max(axis=(1, 2))
    for i in np.flatnonzero(~hit & plugin_hit).tolist():
        # Outside every triangle (Bullet would hit one it is inside, to rounding), and
        # within the slop of the nearest.
        p = np.broadcast_to(plugin_point[i], (len(triangles), 3))
        dist = _triangle_closest(p, *(triangles[:, j] for j in range(3)), None)[1]
        j = int(np.argmin(dist))
        graze[i] = 1e-9 * size[j] < dist[j] <= SEAM_REL * size[j] * (1 + 1e-6)
    # Nothing lies before Bullet's closest hit, whatever side it is on.
    back_agree = back & (~plugin_hit | (plugin_t >= bullet_t - TOLERANCE))
    agree = front_agree | miss_agree | back_agree | graze
    both = front & plugin_hit
    worst = float(gap[both].max()) if both.any() else 0.0
    examples = [
        {
            "ray": int(i),
            "ground": bool(rays.ground[i]),
            "from": rays.start[i].tolist(),
            "to": rays.end[i].tolist(),
            "plugin_t": float(plugin_t[i]),
            "bullet_t": float(bullet_t[i]),
            "bullet_front": bool(front[i]),
        }
        for i in np.flatnonzero(~agree)[:10]
    ]
    kinds = {
        name: {
            "rays": int(rows.sum()),
            "front": int((front & rows).sum()),
            "miss": int((~hit & rows).sum()),
            "back": int((back & rows).sum()),
            "graze": int((graze & rows).sum()),
            "disagree": int((~agree & rows).sum()),
        }
        for name, rows in (("ground", rays.ground), ("hitscan", ~rays.ground))
    }
    return CrossCheck(
        len(rays),
        int(front.sum()),
        int(front_agree.sum()),
        int((~hit).sum()),
        int(miss_agree.sum()),
        int(back.sum()),
        int(back_agree.sum()),
        worst,
        examples,
        kinds,
        int(graze.sum()),
    )


# ---------------------------------------------------------------------- timing helpers
@contextmanager
def _no_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _time(call: Callable[[], Any]) -> tuple[float, Any]:
    """(ms, result) of one call, garbage collection off."""
    with _no_gc():
        t0 = time.perf_counter()
        out = call()
        ms = 1e3 * (time.perf_counter() - t0)
    return ms, out


def _repeat(call: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    """ms of each of ``repeats`` calls (after one untimed), and the last call's result."""
    out = call()
    samples = []
    for _ in range(repeats):
        ms, out = _time(call)
        samples.append(ms)
    return samples, out


def _per_call(calls: Sequence[Callable[[], Any]], warmup: int = 20) -> list[float]:
    """ms of each call, each timed alone, after ``warmup`` untimed ones."""
    for call in calls[:warmup]:
        call()
    out = []
    with _no_gc():
        clock = time.perf_counter
        for call in calls:
            t0 = clock()
            call()
            out.append(1e3 * (clock() - t0))
    return out


@dataclass
class Single:
    """Per-call times of one system's single query (ms): median, 95th and 99th
    percentiles over ``calls`` calls."""

    system: str
    call: str
    calls: int
    median: float
    p95: float
    p99: float

    @classmethod
    def of(cls, system: str, call: str, samples: Sequence[float]) -> Single:
        p50, p95, p99 = np.percentile(samples, [50, 95, 99])
        return cls(system, call, len(samples), float(p50), float(p95), float(p99))


@dataclass
class Batch:
    """One system's cast of every ray (or sweep) of a set: ms of each repeat, and the
    median."""

    system: str
    call: str
    count: int
    samples: list[float]

    @property
    def ms(self) -> float:
        return float(np.median(self.samples))


@dataclass
class QueryRun:
    """Everything one ``--queries`` run measured."""

    triangles: int
    nodes: int
    rays: int
    sweeps: int
    repeats: int
    register_ms: float
    first_pass_ms: float
    ray_batch: list[Batch]
    sweep_batch: list[Batch]
    single: list[Single]
    rays_check: CrossCheck
    sweeps_check: dict[str, Any]
    profile: str | None = None


# ---------------------------------------------------------------------- the systems
def _plugin(build: LevelBuild, render: NodePath) -> tuple[ContinuousCollision, float, float]:
    """The plugin with the level registered static, after one pass; the registration's
    and the pass's ms."""
    ccd = ContinuousCollision(
        taskmgr=NoTasks(), render=render, messenger=CountingMessenger(), task_name="queries"
    )
    register_ms, _ = _time(lambda: ccd.add_collision_nodes(build.root, static=True))
    pass_ms, _ = _time(ccd.step)
    return ccd, register_ms, pass_ms


def _bullet_ray_loop(world: Any, start: Float, end: Float) -> Callable[[], list[Any]]:
    ray, mask = world.rayTestClosest, BitMask32.bit(_MESH_GROUP)
    pairs = list(zip(start.tolist(), end.tolist()))

    def run() -> list[Any]:
        return [ray(Point3(*a), Point3(*b), mask) for a, b in pairs]

    return run


def _bullet_sweep_loop(world: Any, start: Float, end: Float) -> Callable[[], list[Any]]:
    from panda3d.bullet import BulletSphereShape

    sweep, shape = world.sweepTestClosest, BulletSphereShape(RADIUS)
    mask = BitMask32.bit(_MESH_GROUP)
    at = TransformState.makePos
    pairs = list(zip(start.tolist(), end.tolist()))

    def run() -> list[Any]:
        return [sweep(shape, at(Point3(*a)), at(Point3(*b)), mask, 0.0) for a, b in pairs]

    return run


def bullet_ray_hits(triangles: Float, rays: Rays) -> tuple[Float, Float, Int]:
    """Bullet's closest hit of each ray against (m, 3, 3) float64 ``triangles``, in a world
    built as the benchmark builds it: (k,) t (inf: no hit), (k, 3) hit points (nan: none)
    and (k,) rows of ``triangles`` hit (-1: none)."""
    world, root = _bullet_world(triangles)
    try:
        return _read_bullet(_bullet_ray_loop(world, rays.start, rays.end)())
    finally:
        root.removeNode()


def _read_bullet(results: Sequence[Any]) -> tuple[Float, Float, Int]:
    """Bullet's results as (k,) t (inf: no hit), (k, 3) hit points (nan: none) and (k,)
    triangle indices (-1: none; sweeps report none)."""
    k = len(results)
    t, point, tri = np.full(k, np.inf), np.full((k, 3), np.nan), np.full(k, -1, np.int64)
    for i, r in enumerate(results):
        if r.hasHit():
            t[i] = r.getHitFraction()
            point[i] = tuple(r.getHitPos())
            if hasattr(r, "getTriangleIndex"):
                tri[i] = r.getTriangleIndex()
    return t, point, tri


class _Traverser:
    """One CollisionRay from-object with a CollisionHandlerQueue, traversing ``render``
    (which holds the level's CollisionNodes)."""

    def __init__(self, render: NodePath) -> None:
        self.render = render
        self.ray = CollisionRay()
        cnode = CollisionNode("query-ray")
        cnode.addSolid(self.ray)
        cnode.setFromCollideMask(_LEVEL_MASK)
        cnode.setIntoCollideMask(0)
        self.path = render.attachNewNode(cnode)
        self.queue = CollisionHandlerQueue()
        self.traverser = CollisionTraverser("queries")
        self.traverser.addCollider(self.path, self.queue)

    def closest(self, origin: Point3, direction: Vec3) -> Point3 | None:
        self.ray.setOrigin(origin)
        self.ray.setDirection(direction)
        self.traverser.traverse(self.render)
        if self.queue.getNumEntries() == 0:
            return None
        self.queue.sortEntries()
        return self.queue.getEntry(0).getSurfacePoint(self.render)

    def close(self) -> None:
        self.traverser.clearColliders()
        self.path.removeNode()


def _profile(call: Callable[[], Any], top: int = 15) -> str:
    """cProfile listing of one call: the ``top`` entries by own time, then by cumulative."""
    profiler = cProfile.Profile()
    profiler.runcall(call)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    lines = [line for line in text.getvalue().splitlines() if line.strip()]
    return "\n".join(line for line in lines if not line.startswith(("Ordered by", "   List")))


# ---------------------------------------------------------------------- the run
def measure_queries(
    build: LevelBuild,
    rays: Rays,
    *,
    calls: int = 500,
    sweeps: int = 1000,
    repeats: int = 5,
    profile: bool = False,
) -> QueryRun:
    """Cast ``rays`` into the level in every system (see the module docstring): the batch
    ``repeats`` times (medians), the first ``calls`` rays one call each, the first
    ``sweeps`` rays as sweeps of radius RADIUS, and the cross-check of every ray."""
    level = build.level
    render = NodePath("render")
    build.root.reparentTo(render)
    world, bullet_root = _bullet_world(level.triangles)
    ccd, register_ms, first_pass_ms = _plugin(build, render)
    traverser = _Traverser(render)
    try:
        # --- every ray at once
        plugin_rays, batch = _repeat(lambda: ccd.ray_test_batch(rays.start, rays.end), repeats)
        bullet_rays, results = _repeat(_bullet_ray_loop(world, rays.start, rays.end), repeats)
        bullet_t, bullet_point, bullet_tri = _read_bullet(results)
        check = cross_check(
            rays, level.triangles, np.asarray(batch.t), np.asarray(batch.point),
            bullet_t, bullet_point, bullet_tri,
        )  # fmt: skip

        # --- sweeps, every one at once
        swept = rays.head(sweeps)
        plugin_sweeps, sweep_batch = _repeat(
            lambda: ccd.sweep_test_batch(RADIUS, swept.start, swept.end), repeats
        )
        bullet_sweeps, sweep_results = _repeat(
            _bullet_sweep_loop(world, swept.start, swept.end), repeats
        )
        sweeps_check = _sweep_agreement(swept, np.asarray(sweep_batch.t), sweep_results)

        # --- one ray a call
        single = rays.head(calls)
        a = [Point3(*p) for p in single.start.tolist()]
        b = [Point3(*p) for p in single.end.tolist()]
        d = [Vec3(*v) for v in (single.end - single.start).tolist()]
        mask = BitMask32.bit(_MESH_GROUP)
        shape_sweep = _bullet_single_sweep(world)
        at = TransformState.makePos
        pairs = list(zip(a, b))
        rows = [
            Single.of(PLUGIN, "ray_test_closest + getSurfacePoint", _per_call(
                [_plugin_ray(ccd, render, p, q) for p, q in pairs])),
            Single.of(TRAVERSER, "one CollisionRay: set, traverse, sort, closest entry's "
                      "getSurfacePoint", _per_call(
                [_bind(traverser.closest, p, v) for p, v in zip(a, d)])),
            Single.of(BULLET, "rayTestClosest + getHitPos", _per_call(
                [_bullet_ray(world.rayTestClosest, p, q, mask) for p, q in pairs])),
            Single.of(PLUGIN, f"sweep_test_closest (radius {RADIUS}) + getContactPos",
                      _per_call([_plugin_sweep(ccd, render, p, q) for p, q in pairs])),
            Single.of(BULLET, f"sweepTestClosest (BulletSphereShape {RADIUS}) + getHitPos",
                      _per_call([shape_sweep(at(p), at(q), mask) for p, q in pairs])),
        ]  # fmt: skip
        listing = _profile(lambda: ccd.ray_test_batch(rays.start, rays.end)) if profile else None
    finally:
        traverser.close()
        ccd.destroy()
        bullet_root.removeNode()
        build.root.detachNode()
        render.removeNode()
    return QueryRun(
        triangles=len(level.triangles),
        nodes=build.nodes,
        rays=len(rays),
        sweeps=len(swept),
        repeats=repeats,
        register_ms=register_ms,
        first_pass_ms=first_pass_ms,
        ray_batch=[
            Batch(PLUGIN, "ray_test_batch, one call", len(rays), plugin_rays),
            Batch(BULLET, "rayTestClosest per ray, Python loop", len(rays), bullet_rays),
        ],
        sweep_batch=[
            Batch(PLUGIN, f"sweep_test_batch (radius {RADIUS}), one call", len(swept),
                  plugin_sweeps),
            Batch(BULLET, f"sweepTestClosest per sphere ({RADIUS}), Python loop", len(swept),
                  bullet_sweeps),
        ],  # fmt: skip
        single=rows,
        rays_check=check,
        sweeps_check=sweeps_check,
        profile=listing,
    )


def _bind(call: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: call(*args)


def _plugin_ray(ccd: Any, render: NodePath, a: Point3, b: Point3) -> Callable[[], Any]:
    def run() -> Any:
        hit = ccd.ray_test_closest(a, b)
        return None if hit is None else hit.getSurfacePoint(render)

    return run


def _plugin_sweep(ccd: Any, render: NodePath, a: Point3, b: Point3) -> Callable[[], Any]:
    def run() -> Any:
        hit = ccd.sweep_test_closest(RADIUS, a, b)
        return None if hit is None else hit.getContactPos(render)

    return run


def _bullet_ray(ray: Any, a: Point3, b: Point3, mask: BitMask32) -> Callable[[], Any]:
    def run() -> Any:
        hit = ray(a, b, mask)
        return hit.getHitPos() if hit.hasHit() else None

    return run


def _bullet_single_sweep(world: Any) -> Callable[..., Callable[[], Any]]:
    from panda3d.bullet import BulletSphereShape

    shape, sweep = BulletSphereShape(RADIUS), world.sweepTestClosest

    def make(a: TransformState, b: TransformState, mask: BitMask32) -> Callable[[], Any]:
        def run() -> Any:
            hit = sweep(shape, a, b, mask, 0.0)
            return hit.getHitPos() if hit.hasHit() else None

        return run

    return make


def _sweep_agreement(swept: Rays, plugin_t: Float, results: Sequence[Any]) -> dict[str, Any]:
    """For information: the plugin's sweeps against Bullet's, by hit fraction (Bullet's
    sweep reports no triangle, and a sphere's first touch from outside may be an edge
    shared with a back face): both hit within TOLERANCE of the length, both miss, and the
    rest; the largest gap in t times length where both hit."""
    bullet_t, _, _ = _read_bullet(results)
    length = swept.length
    plugin_hit, bullet_hit = np.isfinite(plugin_t), np.isfinite(bullet_t)
    both = plugin_hit & bullet_hit
    gap = np.zeros(len(swept))
    gap[both] = np.abs(plugin_t[both] - bullet_t[both]) * length[both]
    same = both & (gap <= TOLERANCE * length)
    miss = ~plugin_hit & ~bullet_hit
    return {
        "sweeps": len(swept),
        "same": int(same.sum()),
        "both_miss": int(miss.sum()),
        "plugin_only": int((plugin_hit & ~bullet_hit).sum()),
        "bullet_only": int((bullet_hit & ~plugin_hit).sum()),
        "both_differ": int((both & ~same).sum()),
        "worst": float(gap[both].max()) if both.any() else 0.0,
    }


# ---------------------------------------------------------------------- tables
def _fine(ms: float) -> str:
    """ms with more decimals below 1 (single calls sit near the 0.1 ms target, Bullet's
    far under it)."""
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 1 else _ms(ms)


def batch_table(batches: Sequence[Batch]) -> str:
    """ms for the whole set (median of the repeats), us per cast, and each against the
    first row (the plugin)."""
    lines = [
        "| system | call | casts | ms for all (median) | best ms | us per cast "
        "| this/plugin |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    plugin = batches[0].ms
    for b in batches:
        lines.append(
            f"| {b.system} | {b.call} | {b.count:,} | {_ms(b.ms)} | {_ms(min(b.samples))} "
            f"| {1e3 * b.ms / b.count:.2f} | {_ratio(b.ms, plugin)} |"
        )
    return "\n".join(lines)


def single_table(rows: Sequence[Single]) -> str:
    lines = [
        "| system | call | calls | median ms | p95 ms | p99 ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.system} | {r.call} | {r.calls:,} | {_fine(r.median)} | {_fine(r.p95)} "
            f"| {_fine(r.p99)} |"
        )
    return "\n".join(lines)


def cross_check_table(check: CrossCheck) -> str:
    lines = [
        "| rays | Bullet hits a front face | plugin: same point | Bullet hits nothing "
        "| plugin: nothing | plugin: a graze within the seam slop | Bullet hits a back face "
        "| plugin: nothing before it | disagreements | largest gap (front hits) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| all {check.rays:,} | {check.front:,} | {check.front_agree:,} | {check.miss:,} "
        f"| {check.miss_agree:,} | {check.graze:,} | {check.back:,} | {check.back_agree:,} "
        f"| {check.disagree:,} | {check.worst:.2g} |",
    ]
    for name, k in check.kinds.items():
        lines.append(
            f"| {name} {k['rays']:,} | {k['front']:,} | | {k['miss']:,} | | {k['graze']:,} "
            f"| {k['back']:,} | | {k['disagree']:,} | |"
        )
    return "\n".join(lines)


def sweep_check_line(check: dict[str, Any]) -> str:
    return (
        f"Sweeps against Bullet's (for information): of {check['sweeps']:,}, both hit at the "
        f"same t (within {TOLERANCE:g} of the length) {check['same']:,}, both miss "
        f"{check['both_miss']:,}, only the plugin hits {check['plugin_only']:,}, only Bullet "
        f"{check['bullet_only']:,}, both hit elsewhere {check['both_differ']:,}; largest gap "
        f"where both hit {check['worst']:.2g} units."
    )


def targets(run: QueryRun) -> str:
    """The issue's two targets, met or not, and by how much."""
    plugin, bullet = run.ray_batch[0].ms, run.ray_batch[1].ms
    single = run.single[0].median
    batch = "met" if plugin <= bullet else f"NOT met: {plugin / bullet:.2f}x Bullet's time"
    one = (
        "met"
        if single <= SINGLE_TARGET_MS
        else f"NOT met: {single / SINGLE_TARGET_MS:.2f}x the target"
    )
    return (
        f"- {run.rays:,} rays in one ray_test_batch no slower than Bullet's rayTestClosest "
        f"loop: {_ms(plugin)} ms against {_ms(bullet)} ms ({_ratio(plugin, bullet)}), {batch}.\n"
        f"- one ray_test_closest at most {SINGLE_TARGET_MS} ms (median): {_fine(single)} ms, "
        f"{one}."
    )
