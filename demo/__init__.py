"""The panda3d-ccd demo level: ``python -m demo`` (or ``--headless``, ``--screenshot PATH``).

A user of the plugin's public API and nothing more. :mod:`demo.level` holds the game (arena,
spawning, script, event handlers, the independent ground truth of :mod:`demo.truth`);
:mod:`demo.systems` wraps the two collision systems it can run on; :mod:`demo.app` is the
screen (HUD, keys, mouse); :mod:`demo.run` the three ways to run it.
"""
