"""Benchmarks of panda3d-ccd: ``python -m benchmarks`` from the repository root.

Modules: ``scene`` (numpy scene generators, no panda3d), ``systems`` (the scene graph and
the four timed systems), ``game`` (the default game-like scene: each system's own events
bounce the spheres), ``opcount`` (the plugin's numpy operations per pass), ``timing``
(the ``--pileup`` scene), ``correctness``, ``memory``, ``profiling``, ``report`` and
``cli``. Outputs go to ``benchmarks/out/`` (git-ignored) unless ``--out`` is given.
"""
