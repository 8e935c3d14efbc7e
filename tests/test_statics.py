"""Static colliders cost nothing per frame (issue 13, item 6): ``static=True`` spheres are
read when registered (or teleported), indexed once, handed to the solver only where a
dynamic sphere can reach them, and never paired with each other. Their nodes are not
scanned each pass: only those near something, and a few more in turn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from panda3d.core import LPoint3, LVector3

from panda3d_ccd import _index, component


def node(parent, name, pos=(0, 0, 0)):
    np_ = parent.attachNewNode(name)
    np_.setPos(*pos)
    return np_


@pytest.fixture
def builds(monkeypatch):
    """How many static indexes were built."""
    count = [0]
    original = _index.StaticIndex._build

    def counting(self, lo, hi):
        count[0] += 1
        return original(self, lo, hi)

    monkeypatch.setattr(_index.StaticIndex, "_build", counting)
    return count


def test_overlapping_statics_are_never_paired_not_even_a_sensor(base, ccd, recorder):
    render = base.render
    zone = node(render, "zone")
    ccd.add_sphere(zone, 2.0, static=True, response="sensor")
    pillar = node(render, "pillar", (1, 0, 0))
    ccd.add_sphere(pillar, 1.0, static=True)
    for _ in range(3):
        base.taskMgr.step()
    assert recorder.names() == []
    # A dynamic ball still meets both.
    ball = node(render, "ball", (-10, 0, 0))
    ccd.add_sphere(ball, 0.5, response="sensor")
    base.taskMgr.step()
    ball.setFluidPos(0, 0, 0)
    base.taskMgr.step()
    assert sorted(recorder.names()) == sorted(
        ["ball-into-zone", "zone-into-ball", "ball-into-pillar", "pillar-into-ball"]
    )


def test_the_static_index_is_built_once_and_again_only_when_statics_change(
    base, ccd, recorder, builds
):
    render = base.render
    # More than a few: fewer are handed to the solver whole, with no index at all.
    count = component._FEW_STATICS + 50
    pillars = [node(render, f"p{k}", (3 * k, 5, 0)) for k in range(count)]
    for p in pillars:
        ccd.add_sphere(p, 1.0, static=True)
    ball = node(render, "ball", (0, 0, 0))
    ccd.add_sphere(ball, 0.5)
    for k in range(20):
        ball.setFluidPos(k, 0, 0)
        base.taskMgr.step()
    assert builds[0] == 1
    pillars[3].setPos(100, 100, 100)
    ccd.teleport(pillars[3])
    base.taskMgr.step()
    assert builds[0] == 2
    ccd.remove(pillars[4])
    base.taskMgr.step()
    base.taskMgr.step()
    assert builds[0] == 3
    # The moved pillar is hit where it is now; the removed one is not.
    ball.setFluidPos(100, 96, 100)
    base.taskMgr.step()
    ball.setFluidPos(100, 104, 100)
    base.taskMgr.step()
    assert sorted(recorder.names()) == ["ball-into-p3", "p3-into-ball"]
    assert ball.getPos() == LPoint3(100, 98.5, 100)


@pytest.mark.parametrize("pillars", [100, 600])  # handed over whole, or from the index
@pytest.mark.parametrize("static", [True, False])
def test_statics_give_the_same_contacts_as_still_dynamic_spheres(
    base, make_ccd, static, pillars, builds
):
    """Random pillars (registered static, or dynamic and never moved) and fast movers:
    the very same contacts, bit for bit."""
    rng = np.random.default_rng(11)
    render = base.render
    side = 30 * (pillars / 300) ** (1 / 3)

    def run(as_static):
        ccd = make_ccd(task_name=f"ccd-{as_static}")
        root = render.attachNewNode("root")
        for k in range(pillars):
            p = node(root, f"pillar{k}", rng.uniform(-side, side, 3))
            ccd.add_sphere(p, float(rng.uniform(0.3, 1.5)), static=as_static,
                           response="sensor" if k % 7 == 0 else "rewind")  # fmt: skip
        movers = [node(root, f"m{k}", rng.uniform(-side, side, 3)) for k in range(40)]
        for k, m in enumerate(movers):
            ccd.add_sphere(m, 0.3, response=("rewind", "slide", "sensor")[k % 3])
        ccd.step()
        seen = []
        for _ in range(5):
            for m in movers:
                m.setFluidPos(m.getPos() + LVector3(*rng.normal(scale=8.0, size=3)))
            seen += [
                (c.from_np.getName(), c.into_np.getName(), c.t, tuple(c.point))
                for c in ccd.step()
                if not (c.from_np.getName()[0] == c.into_np.getName()[0] == "p")
            ]
        ends = [tuple(m.getPos()) for m in movers]
        ccd.destroy()
        root.removeNode()
        return seen, ends

    state = rng.bit_generator.state
    a = run(static)
    rng.bit_generator.state = state
    b = run(False)
    assert len(a[0]) >= 10
    assert builds[0] == (static and pillars > component._FEW_STATICS)
    # (Contacts at the very same t may come in another order: rows are in another order.)
    assert sorted(a[0]) == sorted(b[0])
    assert [c[2] for c in a[0]] == [c[2] for c in b[0]]
    assert a[1] == b[1]


def test_a_static_node_removed_far_from_everything_is_dropped_in_time(base, ccd):
    render = base.render
    count = 100
    pillars = [node(render, f"p{k}", (3 * k, 50, 0)) for k in range(count)]
    for p in pillars:
        ccd.add_sphere(p, 1.0, static=True)
    base.taskMgr.step()
    pillars[77].removeNode()
    for _ in range(math.ceil(count / component._STATIC_CHECKS)):
        base.taskMgr.step()
    assert ccd.colliders == count - 1


def test_a_removed_static_near_a_mover_is_dropped_before_it_stops_anything(base, ccd, recorder):
    render = base.render
    wall = [node(render, f"w{k}", (5, 3 * k, 0)) for k in range(200)]
    for w in wall:
        ccd.add_sphere(w, 1.0, static=True)
    ball = node(render, "ball")
    ccd.add_sphere(ball, 0.5)
    base.taskMgr.step()
    wall[0].removeNode()
    ball.setFluidPos(10, 0, 0)
    base.taskMgr.step()
    assert recorder.names() == [] and ball.getPos() == LPoint3(10, 0, 0)
    assert ccd.colliders == 200


def test_a_detached_static_is_inactive_until_it_is_back(base, ccd, recorder):
    render = base.render
    pillar = node(render, "pillar", (5, 0, 0))
    ccd.add_sphere(pillar, 1.0, static=True, response="sensor")
    ball = node(render, "ball")
    ccd.add_sphere(ball, 0.5, response="sensor")
    base.taskMgr.step()
    ball.setFluidPos(5, 0, 0)
    base.taskMgr.step()  # inside: in
    pillar.detachNode()
    base.taskMgr.step()  # out of the scene: its pairs close
    assert sorted(recorder.names()) == sorted(
        ["ball-into-pillar", "pillar-into-ball", "ball-out-pillar", "pillar-out-ball"]
    )
    recorder.clear()
    base.taskMgr.step()
    assert recorder.names() == []
    pillar.reparentTo(render)  # back, where it was
    base.taskMgr.step()
    assert sorted(recorder.names()) == ["ball-into-pillar", "pillar-into-ball"]
