"""The geometry layer (kernels, broad phase) works where panda3d cannot be imported.

Each check runs a fresh interpreter in which an import hook refuses ``panda3d`` and
``direct`` (Panda3D's Python half) and their submodules. ``import panda3d_ccd.sweep`` runs
the package ``__init__`` first, so this also proves that ``__init__`` loads nothing from
Panda3D until a Panda3D-facing name is asked for.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import panda3d_ccd

PACKAGE_DIR = Path(panda3d_ccd.__file__).resolve().parent
GEOMETRY_MODULES = [
    "panda3d_ccd.sweep",
    "panda3d_ccd.broadphase",
    "panda3d_ccd._index",
    "panda3d_ccd._raygrid",
    "panda3d_ccd._reachgrid",
    "panda3d_ccd._queries",
    "panda3d_ccd._rays",
    "panda3d_ccd._skin",
]
BLOCKED = ("panda3d", "direct")

BLOCKER = textwrap.dedent(
    """
    import importlib.abc
    import sys

    class NoPanda3D(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ImportError("blocked by the test: " + name)
            return None

    sys.meta_path.insert(0, NoPanda3D())
    """
).format(blocked=BLOCKED)


def _run_blocked(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` after the blocker, importing panda3d_ccd from the tree under test."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PACKAGE_DIR.parent), env.get("PYTHONPATH")) if p
    )
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_blocker_blocks():
    """Without this, the tests below could pass with panda3d quietly importable."""
    result = _run_blocked(
        """
        for name in ("panda3d", "panda3d.core", "direct.showbase.ShowBase"):
            try:
                __import__(name)
            except ImportError as exc:
                assert str(exc) == "blocked by the test: " + name.split(".")[0], exc
            else:
                raise SystemExit(name + " imported")
        print("blocked")
        """
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "blocked\n", "")


@pytest.mark.parametrize("module", GEOMETRY_MODULES)
def test_geometry_module_imports_without_panda3d(module):
    result = _run_blocked(
        f"""
        import sys
        import {module}
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r})
        print({module}.__name__, loaded)
        """
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{module} []\n", "")


def test_kernels_run_without_panda3d():
    result = _run_blocked(
        """
        from panda3d_ccd import sphere_plane_toi, sphere_sphere_toi
        t = sphere_sphere_toi([[-5, 0, 0]], [[5, 0, 0]], 0.5, [[0, 0, 0]], [[0, 0, 0]], 0.5)
        u = sphere_plane_toi([[0, 0, 5]], [[0, 0, -3]], 1.0, (0, 0, 1), 0.0)
        print(t.tolist(), u.tolist())
        """
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "[0.4] [0.5]\n", "")


def _sources(module: str) -> list[Path]:
    """The module's file, or every file of a package, and the private helpers it uses."""
    path = PACKAGE_DIR / module.split(".", 1)[1]
    own = sorted(path.glob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return own + [PACKAGE_DIR / f"{name}.py" for name in ("_arrays", "_check", "_tolerance")]


@pytest.mark.parametrize("module", GEOMETRY_MODULES)
def test_geometry_source_has_no_panda3d_import(module):
    """Also no import inside a function, which an import-time test would not see."""
    sources = _sources(module)
    assert all(source.is_file() for source in sources), sources
    imported = []
    for source in sources:
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.append(node.module)
    assert "numpy" in imported  # the walk did read the sources
    assert [name for name in imported if name.split(".")[0] in BLOCKED] == []
