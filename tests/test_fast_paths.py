"""The component's shortcuts for children of render give bit for bit what the general path
gives: the same contacts, and the same transforms and previous transforms left on every node.

The shortcuts (reading net transforms when render is the root, writing a child of render
with the plain ``setFluidPos(pos)``) apply only where Panda3D provably computes the same
thing; these tests run scenes made of the cases where it would not (a quaternion or matrix
transform, a CompassEffect, a moving parent, a reparenting mid-game, render itself placed
under a transformed root) once as they are and once with the shortcuts switched off.
"""

from __future__ import annotations

import pytest
from panda3d.core import (
    ClockObject,
    CompassEffect,
    LMatrix4f,
    LPlane,
    LPoint3,
    LQuaternionf,
    LVector3,
    NodePath,
    PandaNode,
    TransformState,
)

from panda3d_ccd import ContinuousCollision, component


class _Log:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, name, sentArgs=None, taskChain=None):  # noqa: N803 (Messenger's name)
        self.sent.append(name)


class _NoTasks:
    def add(self, *args, **kwargs):
        return None

    def remove(self, task):
        pass


def _state(ts: TransformState) -> tuple:
    """Everything that tells two TransformStates apart, as plain floats and flags."""
    mat = ts.getMat()
    out: tuple = (
        ts.isIdentity(),
        ts.componentsGiven(),
        ts.hprGiven(),
        ts.quatGiven(),
        tuple(mat.getRow(i)[j] for i in range(4) for j in range(4)),
    )
    if ts.componentsGiven():
        given = ts.getQuat() if ts.quatGiven() else ts.getHpr()
        out += (tuple(ts.getPos()), tuple(given), tuple(ts.getScale()), tuple(ts.getShear()))
    return out


def _run_scene(respect_prev: bool, render_is_root: bool, shortcuts: bool) -> list:
    """Fly a dozen kinds of node at a wall for a few frames; the record of every frame."""
    clock = ClockObject()
    clock.setMode(ClockObject.MNonRealTime)
    clock.setFrameRate(60.0)
    root = NodePath("root")
    if render_is_root:
        render = root
    else:
        render = root.attachNewNode("render")
        render.setPosHpr(3, -2, 1, 20, 5, 0)
    log = _Log()
    ccd = ContinuousCollision(
        taskmgr=_NoTasks(),
        render=render,
        messenger=log,
        clock=clock,
        respect_prev_transform=respect_prev,
    )
    ccd.add_in_pattern("%fn-into-%in")
    ccd.add_out_pattern("%fn-out-%in")
    wall = render.attachNewNode("wall")
    ccd.add_plane(wall, LPlane(LVector3(-1, 0, 0), LPoint3(10, 0, 0)))
    reference = render.attachNewNode("reference")
    reference.setHpr(40, 10, 0)
    parent = render.attachNewNode("parent")
    parent.setHpr(15, 0, 0)

    balls: list[NodePath] = []

    def ball(name: str, under: NodePath = render, center=(0, 0, 0)) -> NodePath:
        b = under.attachNewNode(PandaNode(name))
        ccd.add_sphere(b, 1.0, center=center)
        balls.append(b)
        return b

    hpr = ball("hpr")
    hpr.setPosHprScale(0, len(balls) * 3, 0, 10, 20, 30, 1, 2, 1)
    quat = ball("quat")
    quat.setPosQuat(LPoint3(0, len(balls) * 3, 0), LQuaternionf(0.8, 0.2, 0.4, 0.4).normalized())
    matrix = ball("matrix")
    matrix.setMat(
        TransformState.makePosHprScale(
            LPoint3(0, len(balls) * 3, 0), LVector3(30, 0, 0), LVector3(1, 1, 1)
        ).getMat()
    )
    sheared = ball("sheared")
    sheared.setMat(LMatrix4f(1, 0.3, 0, 0, 0, 1, 0, 0, 0.2, 0, 1, 0, 0, len(balls) * 3, 0, 1))
    compass = ball("compass")
    compass.setPos(0, len(balls) * 3, 0)
    compass.setEffect(CompassEffect.make(reference, CompassEffect.PRot))
    turning = ball("turning", center=(0.5, 0, 0))
    turning.setPos(0, len(balls) * 3, 0)
    child = ball("child", parent)
    child.setPos(0, len(balls) * 3, 0)
    hopper = ball("hopper")
    hopper.setPos(0, len(balls) * 3, 0)
    plain = ball("plain")
    plain.setPos(0, len(balls) * 3, 0)

    record: list = []
    try:
        for frame in range(6):
            clock.tick()
            PandaNode.resetAllPrevTransform()
            for k, b in enumerate(balls):
                b.setFluidX(b.getX() + 4.0 + 0.25 * k)
            turning.setH(turning.getH() + 35)
            parent.setFluidX(parent.getX() + 1.0)
            reference.setH(reference.getH() + 25)
            if frame == 2:
                hopper.reparentTo(parent)  # a child of render no more: the general path
            if frame == 4:
                hopper.wrtReparentTo(render)
            if frame % 3 == 2:
                for b in balls:  # back where the wall is still ahead
                    b.setFluidX(b.getX() - 14.0)
                    ccd.teleport(b)
            contacts = ccd.step()
            record.append([(c.t, c.from_np.getName(), tuple(c.point)) for c in contacts])
            record.append([(_state(b.getTransform()), _state(b.getPrevTransform())) for b in balls])
            record.append(list(log.sent))
            log.sent.clear()
    finally:
        ccd.destroy()
        root.removeNode()
    return record


@pytest.mark.parametrize("respect_prev", [True, False])
@pytest.mark.parametrize("render_is_root", [True, False])
def test_shortcuts_give_what_the_general_path_gives(monkeypatch, respect_prev, render_is_root):
    fast = _run_scene(respect_prev, render_is_root, shortcuts=True)
    monkeypatch.setattr(component, "_local_is_world", lambda nodepath, render: False)
    monkeypatch.setattr(ContinuousCollision, "_render_is_root", lambda self: False)
    general = _run_scene(respect_prev, render_is_root, shortcuts=False)
    assert sum(len(frame) for frame in fast[0::3]) >= 10  # the wall was hit, nodes written
    assert fast == general
