"""Shared fixtures: a headless ShowBase per test, with a fixed 60 Hz clock, and an event
recorder that stands between the plugin and Panda3D's messenger."""

from __future__ import annotations

import builtins
import os

import pytest
from hypothesis import settings
from panda3d.core import ClockObject, loadPrcFileData

loadPrcFileData("", "window-type none\naudio-library-name null")

# CI runs on a fresh machine with no example database: the same examples every run, so
# a red build is reproducible. Locally hypothesis keeps searching new ones.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

FRAME_RATE = 60.0


@pytest.fixture
def base():
    """A fresh ShowBase without a window or audio; destroyed after the test.

    The global clock runs in non-real-time mode at 60 Hz, so every ``taskMgr.step()`` is
    exactly one frame of 1/60 s and the tests do not depend on the machine's speed.
    """
    from direct.showbase.ShowBase import ShowBase

    showbase = ShowBase()
    clock = ClockObject.getGlobalClock()
    clock.setMode(ClockObject.MNonRealTime)
    clock.setFrameRate(FRAME_RATE)
    try:
        yield showbase
    finally:
        clock.setMode(ClockObject.MNormal)
        showbase.destroy()
        assert getattr(builtins, "base", None) is None


class Recorder:
    """A messenger stand-in: records every ``send(name, args)`` and passes it on to the real
    messenger, so DirectObject handlers still run."""

    def __init__(self, messenger=None):
        self.sent: list[tuple[str, object]] = []
        self._messenger = messenger

    def send(self, name, sentArgs=None, taskChain=None):  # noqa: N803 (Messenger's name)
        args = list(sentArgs or [])
        self.sent.append((name, args[0] if args else None))
        if self._messenger is not None:
            self._messenger.send(name, args)

    def names(self) -> list[str]:
        return [name for name, _ in self.sent]

    def clear(self) -> None:
        self.sent.clear()


@pytest.fixture
def listener(base):
    """A DirectObject for ``accept``; it ignores everything after the test."""
    from direct.showbase.DirectObject import DirectObject

    obj = DirectObject()
    yield obj
    obj.ignoreAll()


@pytest.fixture
def recorder(base):
    return Recorder(base.messenger)


@pytest.fixture
def make_ccd(base, recorder):
    """Factory for ContinuousCollision components on ``base`` that send through
    ``recorder`` and have the usual in/again/out patterns; destroyed after the test."""
    from panda3d_ccd import ContinuousCollision

    made = []

    def make(**kwargs):
        kwargs.setdefault("messenger", recorder)
        ccd = ContinuousCollision(base, **kwargs)
        ccd.add_in_pattern("%fn-into-%in")
        ccd.add_again_pattern("%fn-again-%in")
        ccd.add_out_pattern("%fn-out-%in")
        made.append(ccd)
        return ccd

    yield make
    for ccd in made:
        ccd.destroy()


@pytest.fixture
def ccd(make_ccd):
    return make_ccd()
