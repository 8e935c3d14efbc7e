"""Adversarial review of the static-sphere and growth paths of the component: each test
is the smallest reproduction of a bug found (fixed, or strict xfail with the fix named)."""

from __future__ import annotations


def node(parent, name, pos=(0, 0, 0)):
    np_ = parent.attachNewNode(name)
    np_.setPos(*pos)
    return np_


def test_an_out_handler_of_a_removed_static_may_remove_the_mover(base, ccd, recorder, listener):
    """The static pillar a sensor ball rests in is removed by the game; the ball's out is
    handled by removing the ball (a legal remove() from a handler): the pass must not
    raise, and the out must be sent once."""
    render = base.render
    pillar = node(render, "pillar", (5, 0, 0))
    ccd.add_sphere(pillar, 1.0, static=True, response="sensor")
    ball = node(render, "ball")
    ccd.add_sphere(ball, 0.5, response="sensor")
    other = node(render, "other", (0, 9, 0))
    ccd.add_sphere(other, 0.5)
    ccd.step()
    ball.setFluidPos(5, 0, 0)
    ccd.step()
    assert sorted(recorder.names()) == ["ball-into-pillar", "pillar-into-ball"]
    recorder.clear()
    listener.accept("ball-out-pillar", lambda c: ccd.remove(ball))
    pillar.removeNode()
    ccd.step()
    assert sorted(recorder.names()) == ["ball-out-pillar", "pillar-out-ball"]
    assert ccd.colliders == 1


def test_an_out_handler_of_a_detached_static_may_remove_the_mover(base, ccd, recorder, listener):
    render = base.render
    pillar = node(render, "pillar", (5, 0, 0))
    ccd.add_sphere(pillar, 1.0, static=True, response="sensor")
    ball = node(render, "ball")
    ccd.add_sphere(ball, 0.5, response="sensor")
    other = node(render, "other", (0, 9, 0))
    ccd.add_sphere(other, 0.5)
    ccd.step()
    ball.setFluidPos(5, 0, 0)
    ccd.step()
    recorder.clear()
    listener.accept("ball-out-pillar", lambda c: ccd.remove(ball))
    pillar.detachNode()
    ccd.step()
    assert sorted(recorder.names()) == ["ball-out-pillar", "pillar-out-ball"]
    assert ccd.colliders == 2
