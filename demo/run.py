"""The three ways to run the demo: in a window, headless, and as an offscreen screenshot.

Each sets its PRC configuration before creating ShowBase, runs the same
:class:`~demo.level.Level`, and returns a process exit code.
"""

from __future__ import annotations

import sys
from typing import Any

from panda3d.core import ClockObject, Filename, loadPrcFileData

from .level import Level

__all__ = ["run_windowed", "run_headless", "run_screenshot", "summary_line", "FRAME_RATE"]

#: The fixed frame rate of headless runs and screenshots (frames are simulated, not timed).
FRAME_RATE = 60

# Panda3D's own chatter about missing displays and input devices: the demo says what matters.
_QUIET = "audio-library-name null\nnotify-level-device fatal\nnotify-level-display fatal\n"


def _fixed_clock() -> None:
    """Every frame advances exactly 1 / FRAME_RATE seconds, however long it took."""
    clock = ClockObject.getGlobalClock()
    clock.setMode(ClockObject.MNonRealTime)
    clock.setFrameRate(FRAME_RATE)


def _showbase() -> Any:
    from direct.showbase.ShowBase import ShowBase

    return ShowBase()


def summary_line(level: Level) -> str:
    """One line of ``key=value`` fields: the run's totals for the system under test."""
    s = level.stats[level.system.name]
    return (
        f"summary: system={level.system.name} seed={level.seed} balls={level.initial_balls} "
        f"frames={s.frames} contacts={s.contacts} caught={s.caught} missed={s.missed} "
        f"excused={s.excused} tunnelled={len(s.tunnelled)} score={s.score} "
        f"ms_per_frame={s.mean_ms:.3f}"
    )


def run_headless(frames: int, *, seed: int, system: str, balls: int) -> int:
    """Run ``frames`` scripted frames with no window; 1 if anything tunnelled, else 0."""
    loadPrcFileData("demo-headless", "window-type none\n" + _QUIET)
    base = _showbase()
    _fixed_clock()
    level = Level(base, seed=seed, balls=balls, system=system, autofire=True, autopilot=True)
    try:
        for _ in range(frames):
            base.taskMgr.step()
        print(summary_line(level), flush=True)
        tunnelled = len(level.stats[level.system.name].tunnelled)
    finally:
        level.destroy()
        base.destroy()
    if tunnelled:
        print(f"demo: {tunnelled} objects tunnelled with the {system}", file=sys.stderr)
        return 1
    return 0


def run_screenshot(path: str, *, size: tuple[int, int], frames: int, seed: int, system: str,
                   balls: int) -> int:
    """Render the level after ``frames`` scripted frames with the software renderer."""
    from .app import DemoApp

    width, height = size
    loadPrcFileData(
        "demo-screenshot",
        "load-display p3tinydisplay\nwindow-type offscreen\n"
        f"win-size {width} {height}\n" + _QUIET,
    )
    base = _showbase()
    _fixed_clock()
    level = Level(base, seed=seed, balls=balls, system=system, autofire=True, autopilot=True)
    app = DemoApp(base, level, interactive=False)
    try:
        # Software rendering is the slow part: draw only the frames that are kept.
        base.win.setActive(False)
        for _ in range(max(frames - 1, 0)):
            base.taskMgr.step()
        base.win.setActive(True)
        base.taskMgr.step()
        if not base.win.saveScreenshot(Filename.fromOsSpecific(path)):
            print(f"demo: could not write the screenshot to {path}", file=sys.stderr)
            return 1
        print(f"demo: wrote {width}x{height} screenshot to {path}")
        print(summary_line(level), flush=True)
    finally:
        app.destroy()
        level.destroy()
        base.destroy()
    return 0


def run_windowed(*, seed: int, system: str, balls: int, size: tuple[int, int]) -> int:
    """The interactive game; 2 if no window can be opened."""
    from .app import DemoApp

    width, height = size
    loadPrcFileData(
        "demo-window",
        f"window-title panda3d-ccd demo\nwin-size {width} {height}\nsync-video 1\n" + _QUIET,
    )
    try:
        base = _showbase()
    except Exception:  # ShowBase raises a bare Exception("Could not open window.")
        print(
            "demo: could not open a window (no display available?); run "
            "`python -m demo --headless` or `python -m demo --screenshot demo.png` instead.",
            file=sys.stderr,
        )
        return 2
    level = Level(base, seed=seed, balls=balls, system=system, autofire=True, autopilot=False)
    DemoApp(base, level, interactive=True)
    base.run()
    return 0
