"""The sphere-triangle kernel against an earlier version of itself: identical answers, and
their speeds back to back.

``python -m benchmarks.triangle_regression [--rows N] [--ref REF] [--time]`` from the
repository root. The earlier kernel is the package as committed at ``REF`` (default: the
last commit, so that a change in progress is checked against it), read with ``git archive``
and imported under another
name. Both kernels run on the rows of both benchmarks (random broad-phase candidates and
candidates from the static index of a terrain) and on awkward rows: a small integer lattice
(exact touches, centres on planes, edges and vertices), tangent grazes across faces and along
edges, a sphere resting on a flat mesh and moved along it (seams), degenerate triangles, and
all of these moved near 1e4. Every row must give the same t (``inf`` included), and the
core the same feature, index, point and normal, bit for bit; the script exits 1 otherwise.
``--time`` then times both on the two benchmarks, alternating, best of 5. No panda3d.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np

from panda3d_ccd.sweep import sphere_triangle as current

from .geometry import _RADIUS, _spheres, level_mesh
from .kernels import triangle_candidates

__all__ = ["reference_kernel", "awkward_rows", "compare"]

#: The committed kernel (387bb76 was the last commit before the speed work, which changed
#: no answer; the edge tolerance of the faces came after it, and adds hits on lattice rows
#: aimed exactly at an edge).
_REFERENCE = "HEAD"
_ROOT = Path(__file__).resolve().parent.parent
Rows = tuple[np.ndarray, ...]


def reference_kernel(ref: str = _REFERENCE) -> ModuleType:
    """The module ``panda3d_ccd.sweep.sphere_triangle`` as committed at ``ref``, imported
    as ``panda3d_ccd_ref.sweep.sphere_triangle`` (its package copied to a temporary
    directory, removed when the process exits)."""
    archive = subprocess.run(
        ["git", "archive", ref, "plugin/panda3d_ccd"],
        cwd=_ROOT,
        check=True,
        capture_output=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="ccd_ref_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    package = folder / "plugin" / "panda3d_ccd"
    spec = importlib.util.spec_from_file_location(
        "panda3d_ccd_ref", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["panda3d_ccd_ref"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("panda3d_ccd_ref.sweep.sphere_triangle")


def geometry_candidates(n: int, seed: int = 1) -> Rows:
    """The rows of the geometry benchmark's kernel line: candidates from the static index of
    a 100,000-triangle level, repeated up to ``n``."""
    from panda3d_ccd.broadphase import StaticIndex

    a, b, c = level_mesh(100_000, seed)
    index = StaticIndex.of_triangles(a, b, c)
    p0, p1, fast = _spheres(10_000, float(a[:, 0].max()), seed)
    i, k = index.sphere_pairs(p0, p1, _RADIUS, split=fast)
    take = np.resize(np.arange(len(i)), n)
    i, k = i[take], k[take]
    return p0[i], p1[i], np.full(n, _RADIUS), a[k], b[k], c[k]


def _lattice(n: int, rng: np.random.Generator) -> Rows:
    """Small integer coordinates and simple radii: exact touches and ties everywhere."""
    c0, c1, a, b, c = (rng.integers(-2, 3, (n, 3)).astype(float) for _ in range(5))
    c1 = np.where(rng.random((n, 1)) < 0.1, c0, c1)
    r = rng.choice([0.0, 0.5, 1.0, np.sqrt(0.5), 2.0], n)
    return c0, c1, r, a, b, c


def _grazes(n: int, rng: np.random.Generator) -> Rows:
    """Paths at exactly r from a face (parallel to it) or from an edge's line."""
    a, b, c = (rng.normal(0, 1, (n, 3)) for _ in range(3))
    r = rng.uniform(0.0, 1.0, n)
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    edge = b - a
    along = np.cross(normal, edge)
    along /= np.linalg.norm(along, axis=1, keepdims=True)
    side = np.where(rng.random((n, 1)) < 0.5, 1.0, -1.0)
    by_face = rng.random((n, 1)) < 0.5
    # Over the face: a point of the triangle lifted by r, moved in the plane; beside an
    # edge: a point of the edge's line moved out by r in the plane, moved along the edge.
    u, w = rng.random((2, n, 1)) / 2
    over = a + u * edge + w * (c - a) + side * r[:, None] * normal
    beside = a + u * 3 * edge - r[:, None] * along
    c0 = np.where(by_face, over, beside)
    step = np.where(by_face, rng.normal(0, 1, (n, 1)) * along, rng.normal(0, 2, (n, 1)) * edge)
    c0 = c0 - step / 2
    return c0, c0 + step, r, a, b, c


def _seams(n: int, rng: np.random.Generator) -> Rows:
    """Spheres resting on a flat grid of unit squares (two triangles each), moved on it."""
    i, j = rng.integers(0, 20, (2, n)).astype(float)
    diagonal = rng.random(n) < 0.5
    z = np.zeros(n)
    a = np.stack([i, j, z], axis=1)
    b = np.stack([i + 1, j + np.where(diagonal, 1.0, 0.0), z], axis=1)
    c = np.stack([i + np.where(diagonal, 0.0, 1.0), j + 1, z], axis=1)
    b, c = np.where(diagonal[:, None], c, b), np.where(diagonal[:, None], b, c)
    r = rng.choice([0.5, 0.3], n)
    start = rng.integers(-1, 22, (n, 2)) + rng.choice([0.0, 0.5, 0.25], (n, 2))
    end = np.where(rng.random((n, 1)) < 0.5, start + rng.integers(-3, 4, (n, 2)), start)
    lift = np.where(rng.random(n) < 0.1, r - rng.uniform(0, 0.1, n), r)
    c0 = np.column_stack([start, lift])
    c1 = np.column_stack([end, np.where(rng.random(n) < 0.1, lift - 0.05, lift)])
    return c0, c1, r, a, b, c


def _degenerate(n: int, rng: np.random.Generator) -> Rows:
    """Segments, points and nearly flat triangles."""
    a = rng.normal(0, 1, (n, 3))
    d = rng.normal(0, 1, (n, 3))
    kind = rng.integers(0, 3, (n, 1))
    b = np.where(kind == 2, a, a + d)
    c = np.where(kind == 0, a + 2 * d, a + 0.5 * d + (kind == 1) * rng.normal(0, 1e-13, (n, 3)))
    c0 = a + rng.normal(0, 1.5, (n, 3))
    c1 = np.where(rng.random((n, 1)) < 0.5, a - (c0 - a), c0 + rng.normal(0, 1, (n, 3)))
    return c0, c1, rng.uniform(0.0, 1.0, n), a, b, c


def awkward_rows(n: int, seed: int = 0) -> Iterator[tuple[str, Rows]]:
    """(name, rows) of about ``n`` rows of each awkward kind, and again near 1e4."""
    rng = np.random.default_rng(seed)
    for name, make in (
        ("lattice", _lattice),
        ("grazes", _grazes),
        ("seams", _seams),
        ("degenerate", _degenerate),
    ):
        rows = make(n, rng)
        yield name, rows
        shift = np.array([1e4, -1e4 + 0.25, 1e4 + 0.5])
        c0, c1, r, a, b, c = rows
        yield f"{name} near 1e4", (c0 + shift, c1 + shift, r, a + shift, b + shift, c + shift)


def compare(old: ModuleType, rows: Rows, two: np.ndarray) -> list[str]:
    """What differs between the old and the current kernel on the rows: nothing after the first
    entry when ``sphere_triangle_toi`` and ``_sweep`` give the same bits (that entry is the share
    of rows that hit)."""
    t_old = old.sphere_triangle_toi(*rows, two_sided=two)
    t_new = current.sphere_triangle_toi(*rows, two_sided=two)
    problems = [f"{np.isfinite(t_old).mean():.1%} hit"]
    if not np.array_equal(t_old, t_new):
        bad = np.flatnonzero(t_old != t_new)
        problems.append(
            f"t differs in {len(bad)} rows, first {bad[0]}: {float(t_old[bad[0]])!r} "
            f"then, {float(t_new[bad[0]])!r} now"
        )
    checked = old._checked(*rows)
    s_old = old._sweep(*checked, two)
    s_new = current._sweep(*checked, two)
    for field in ("t", "feature", "index", "point", "normal"):
        x, y = getattr(s_old, field), getattr(s_new, field)
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            problems.append(f"_sweep {field} differs")
    return problems


def _timed(run, rows: Rows) -> float:
    start = time.perf_counter()
    run(*rows)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows per benchmark set")
    parser.add_argument("--ref", default=_REFERENCE, help="git commit of the old kernel")
    parser.add_argument("--time", action="store_true", help="time both, best of 5")
    args = parser.parse_args(argv)
    old = reference_kernel(args.ref)
    sets = [
        ("kernel benchmark", triangle_candidates(args.rows)),
        ("geometry benchmark", geometry_candidates(args.rows)),
        *awkward_rows(max(args.rows // 10, 1000)),
    ]
    rng = np.random.default_rng(7)
    failed = False
    for name, rows in sets:
        for label, two in (
            ("one-sided", np.zeros(len(rows[0]), dtype=bool)),
            ("mixed", rng.random(len(rows[0])) < 0.5),
        ):
            problems = compare(old, rows, two)
            failed |= len(problems) > 1
            verdict = "; ".join(problems[1:]) or "same"
            print(f"{name}, {label}, {len(rows[0]):,} rows, {problems[0]}: {verdict}")
    if args.time:
        for name, rows in sets[:2]:
            best = {"old": np.inf, "new": np.inf}
            for _ in range(5):
                for key, module in (("old", old), ("new", current)):
                    best[key] = min(best[key], _timed(module.sphere_triangle_toi, rows))
            rates = ", ".join(f"{key} {len(rows[0]) / s / 1e6:.2f}M" for key, s in best.items())
            print(f"{name}: tests per second, best of 5: {rates}")
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
