"""Benchmarks of panda3d-ccd: ``python -m benchmarks`` from the repository root.

Modules: ``scene`` (numpy scene generators, no panda3d), ``systems`` (the scene graph and
the four timed systems), ``timing``, ``correctness``, ``memory``, ``profiling``, ``report``
and ``cli``. Outputs go to ``benchmarks/out/`` (git-ignored) unless ``--out`` is given.
"""
