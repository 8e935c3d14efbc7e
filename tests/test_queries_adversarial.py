"""Adversarial cases for the scene queries and the ray colliders (issue 14), where
test_queries_oracle, test_query_geometry and test_ray_colliders do not look: batch block
boundaries, duplicate rows, long casts cut in pieces, casts starting exactly on a surface,
zero-length casts, huge and tiny coordinates, pieces moved, turned and uniformly scaled
between passes, queries and removals from inside event handlers, ray nodes under moving,
scaled, reparented and rewound nodes.

Oracles: closed-form ray/sphere-cast answers written here in numpy, and the single forms
against the batch forms row for row (which must be identical, as the README promises).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from panda3d.core import (
    BitMask32,
    CollisionBox,
    CollisionCapsule,
    CollisionInvSphere,
    CollisionPlane,
    CollisionPolygon,
    CollisionRay,
    CollisionSegment,
    CollisionSphere,
    LPlane,
    LPoint3,
    LVector3,
    Plane,
)
from scene_nodes import collision_node as cnode
from scene_nodes import ray_node

#: A Contact's vectors are float32; coordinates up to ~20 here.
F32_TOL = 4e-6


def rnode(parent, name, solid, pos=(0, 0, 0), from_mask=None):
    """A from-only node of one ray solid, colliding with everything unless ``from_mask``."""
    mask = BitMask32.allOn() if from_mask is None else from_mask
    return ray_node(parent, name, solid, pos=pos, from_mask=mask)


def vec(v):
    return tuple(float(x) for x in v)


def hit(contact, render):
    """(into name, t, surface point, normal) of a Contact, or None."""
    if contact is None:
        return None
    return (
        contact.getIntoNodePath().getName(),
        contact.getT(),
        vec(contact.getSurfacePoint(render)),
        vec(contact.getSurfaceNormal(render)),
    )


def assert_hit(contact, render, name, t, point, normal, tol=F32_TOL):
    assert contact is not None, f"expected a hit on {name}"
    assert contact.getIntoNodePath().getName() == name
    assert contact.getT() == pytest.approx(t, abs=1e-9)
    assert vec(contact.getSurfacePoint(render)) == pytest.approx(point, abs=tol)
    assert vec(contact.getSurfaceNormal(render)) == pytest.approx(normal, abs=1e-6)


def first_approach_t(center, radius, p0, p1):
    """(k,) the first t in [0, 1] at which a point moving p0 -> p1 (k, 3) is at distance
    ``radius`` from ``center`` while approaching it; 0 if it starts inside or on the surface
    going deeper; inf otherwise. Closed form, independent of the plugin."""
    d = p1 - p0
    m = p0 - center
    a = np.einsum("ij,ij->i", d, d)
    b = np.einsum("ij,ij->i", m, d)
    c = np.einsum("ij,ij->i", m, m) - radius**2
    out = np.full(len(p0), np.inf)
    inside = c <= 0
    out[inside & (b < 0)] = 0.0
    disc = b * b - a * c
    ok = ~inside & (disc >= 0) & (a > 0) & (b < 0)
    t = (-b[ok] - np.sqrt(disc[ok])) / a[ok]
    out[np.flatnonzero(ok)[t <= 1]] = t[t <= 1]
    return out


def assert_batch_is_single(ccd, radius, a, b, **kw):
    """Row for row, the batch form's answer is the single form's: the same collider, point
    and normal; the same t, exactly, where a batch of 256 rays or more hits a static
    polygon (each ray walks the mesh's grid whole; in ``_mixed_scene`` the odd-numbered
    nodes are static), and to the last bits elsewhere (a batch casts in pieces along their
    length, and a piece's t is scaled back onto the whole cast: README, *Scene queries*)."""
    res = ccd.sweep_test_batch(radius, a, b, **kw) if radius else ccd.ray_test_batch(a, b, **kw)
    for i in range(len(a)):
        if radius:
            c = ccd.sweep_test_closest(radius, a[i], b[i], **kw)
        else:
            c = ccd.ray_test_closest(a[i], b[i], **kw)
        if c is None:
            assert res.t[i] == math.inf and res.collider[i] == -1, i
            assert np.isnan(res.point[i]).all() and np.isnan(res.normal[i]).all()
        else:
            name = c.getIntoNodePath().getName()
            polygon = isinstance(c.getIntoSolid(), CollisionPolygon)
            walked = radius == 0 and len(a) >= 256 and polygon
            if walked and name[1:].isdigit() and int(name[1:]) % 2:
                assert res.t[i] == c.getT(), i
            else:
                assert res.t[i] == pytest.approx(c.getT(), rel=4e-16 * 8, abs=1e-300), i
            assert res.nodes[res.collider[i]] == c.getIntoNodePath(), i
            # The Contact keeps float32 vectors; the batch float64.
            np.testing.assert_allclose(
                res.point[i], vec(c.getSurfacePoint(c.getIntoNodePath().getTop())), atol=1e-4
            )
            np.testing.assert_allclose(
                res.normal[i], vec(c.getSurfaceNormal(c.getIntoNodePath().getTop())), atol=1e-6
            )
    return res


# ======================================================================================
# Batches: block boundaries, duplicates, single vs batch, closest vs all[0]
# ======================================================================================
def _mixed_scene(render, ccd, rng):
    """Spheres, boxes, capsules, polygons (static and kinematic, one- and two-sided) and
    intangible spheres scattered in a 60-unit cube."""
    for i in range(40):
        c = rng.uniform(-30, 30, 3)
        kind = i % 5
        static = bool(i % 2)
        if kind == 0:
            p = render.attachNewNode(f"s{i}")
            p.setPos(*c)
            ccd.add_sphere(p, rng.uniform(0.5, 3), response="kinematic")
        elif kind == 1:
            box = CollisionBox(LPoint3(0, 0, 0), *rng.uniform(0.5, 3, 3))
            ccd.add_collision_node(cnode(render, f"b{i}", box, pos=c), static=static)
        elif kind == 2:
            ends = rng.uniform(-2, 2, (2, 3))
            capsule = CollisionCapsule(LPoint3(*ends[0]), LPoint3(*ends[1]), rng.uniform(0.3, 2))
            ccd.add_collision_node(cnode(render, f"c{i}", capsule, pos=c), static=static)
        elif kind == 3:
            tri = CollisionPolygon(*(LPoint3(*x) for x in rng.uniform(-3, 3, (3, 3))))
            path = cnode(render, f"t{i}", tri, pos=c)
            ccd.add_collision_node(path, static=static, two_sided=(i % 3 == 0))
        else:
            ghost = CollisionSphere(0, 0, 0, rng.uniform(0.5, 3))
            ghost.setTangible(False)
            ccd.add_collision_node(cnode(render, f"g{i}", ghost, pos=c))


@pytest.mark.parametrize("k", [1, 255, 256, 257, 2048, 2049])
def test_batch_rows_are_the_single_answers_across_block_boundaries(base, ccd, k):
    rng = np.random.default_rng(k)
    _mixed_scene(base.render, ccd, rng)
    ccd.step()
    a = rng.uniform(-40, 40, (k, 3))
    b = rng.uniform(-40, 40, (k, 3))
    # Aim a third of them at the origin so that many hit.
    b[::3] = -a[::3]
    res = assert_batch_is_single(ccd, 0.0, a, b)
    if k > 200:
        assert np.isfinite(res.t).sum() > k // 20
    res = assert_batch_is_single(ccd, 0.7, a, b)
    # With sensors=False the rows are the single answers too, and never an intangible one.
    if k in (257, 2049):
        res = assert_batch_is_single(ccd, 0.0, a, b, sensors=False)
        assert not any(
            res.nodes[j].getName().startswith("g") for j in res.collider[res.collider >= 0]
        )


def test_closest_is_the_first_of_all(base, ccd):
    rng = np.random.default_rng(5)
    _mixed_scene(base.render, ccd, rng)
    ccd.step()
    a = rng.uniform(-40, 40, (300, 3))
    hits = 0
    for p in a:
        closest = ccd.ray_test_closest(p, -p)
        every = ccd.ray_test_all(p, -p)
        assert [c.getT() for c in every] == sorted(c.getT() for c in every)
        if closest is None:
            assert every == []
            continue
        hits += 1
        assert every[0].getT() == closest.getT()
        assert every[0].getIntoNodePath() == closest.getIntoNodePath()
        assert every[0].getIntoSolid() == closest.getIntoSolid()
    assert hits > 30


@pytest.mark.parametrize("k", [256, 257, 2049])
def test_duplicate_rows_get_identical_answers(base, ccd, k):
    render = base.render
    ball = render.attachNewNode("ball")
    ccd.add_sphere(ball, 1.0, response="kinematic")
    ccd.add_collision_node(cnode(render, "box", CollisionBox(LPoint3(5, 0, 0), 1, 1, 1)))
    ccd.step()
    rows = np.array([[-5, 0, 0.5], [9, 0, 0.25], [0, 9, 9]], float)
    ends = np.array([[5, 0, 0.5], [-9, 0, 0.25], [0, 9, -9]], float)
    which = np.arange(k) % 3
    for radius in (0.0, 0.3):
        res = ccd.sweep_test_batch(radius, rows[which], ends[which])
        for j in range(3):
            assert len(set(res.t[which == j].tolist())) == 1
            assert len(set(res.collider[which == j].tolist())) == 1
            np.testing.assert_array_equal(
                res.point[which == j], res.point[[j] * (which == j).sum()]
            )
        assert res.t[2] == math.inf
        assert res.nodes[res.collider[0]] == ball and res.nodes[res.collider[1]] == render.find(
            "box"
        )


def test_long_casts_cut_in_pieces_agree_with_the_closed_form(base, ccd):
    """2049 casts (blocks of 2048, each cast in pieces of about 16 typical sizes): a far
    sphere among many tiny ones, from starts spread over 800 units, ends 2000 away."""
    render = base.render
    for i in range(100):
        p = render.attachNewNode(f"dust{i}")
        p.setPos(1000 + 3 * i, 1000, 0)
        ccd.add_sphere(p, 0.1, response="kinematic")
    ball = render.attachNewNode("ball")
    ball.setPos(-500, 0, 0)
    ccd.add_sphere(ball, 2.0, response="kinematic")
    ccd.step()
    rng = np.random.default_rng(3)
    k = 2049
    a = np.column_stack([rng.uniform(-400, 400, k), rng.uniform(-2.4, 2.4, k), np.zeros(k)])
    b = a.copy()
    b[:, 0] = -2000
    for radius in (0.0, 0.5):
        res = ccd.sweep_test_batch(radius, a, b)
        expected = first_approach_t(np.array([-500.0, 0, 0]), 2.0 + radius, a, b)
        np.testing.assert_allclose(res.t, expected, rtol=0, atol=1e-12)
        assert (np.isfinite(res.t) == np.isfinite(expected)).all()
        if radius == 0.0:
            assert 0 < np.isinf(res.t).sum() < k


def test_sweeps_through_a_one_sided_panel_from_behind_never_hit_it(base, ccd):
    """Piece boundaries fall where the sphere overlaps the panel it is leaving."""
    render = base.render
    panel = cnode(
        render,
        "panel",
        CollisionPolygon(
            LPoint3(0, -50, -50), LPoint3(0, -50, 50), LPoint3(0, 50, 50), LPoint3(0, 50, -50)
        ),
    )
    assert vec(panel.node().getSolid(0).getNormal()) == (-1, 0, 0)
    ccd.add_collision_node(panel, static=True)
    for i in range(50):
        p = render.attachNewNode(f"dust{i}")
        p.setPos(1000 + 3 * i, 1000, 0)
        ccd.add_sphere(p, 0.1, response="kinematic")
    ccd.step()
    rng = np.random.default_rng(0)
    k = 2049
    behind = np.column_stack([rng.uniform(1, 20, k), rng.uniform(-10, 10, (k, 2))])
    front = behind.copy()
    front[:, 0] = -rng.uniform(1, 200, k)
    for radius in (0.0, 0.5, 3.0):
        assert np.isinf(ccd.sweep_test_batch(radius, behind, front).t).all()
        res = ccd.sweep_test_batch(radius, front, behind)
        expected = np.maximum((-front[:, 0] - radius) / (behind[:, 0] - front[:, 0]), 0.0)
        np.testing.assert_allclose(res.t, expected, rtol=0, atol=1e-12)


def kinematic_spheres(render, ccd, rng, count=30):
    """``count`` kinematic spheres s0, s1... at random, after one pass: their centres (as
    Panda3D keeps them, in float32) and radii."""
    centers = rng.uniform(-20, 20, (count, 3))
    radii = rng.uniform(0.5, 2.5, count)
    for i, (c, r) in enumerate(zip(centers, radii, strict=True)):
        p = render.attachNewNode(f"s{i}")
        p.setPos(*c)
        centers[i] = p.getPos()
        ccd.add_sphere(p, float(r), response="kinematic")
    ccd.step()
    return centers, radii


def test_spheres_against_the_closed_form_in_a_batch_and_singly(base, ccd):
    rng = np.random.default_rng(11)
    centers, radii = kinematic_spheres(base.render, ccd, rng)
    k = 600
    a = rng.uniform(-25, 25, (k, 3))
    b = centers[rng.integers(0, 30, k)] * 2 - a  # through a centre, often
    for cast_r in (0.0, 0.4):
        ts = np.stack(
            [first_approach_t(c, r + cast_r, a, b) for c, r in zip(centers, radii, strict=True)]
        )
        expected = ts.min(axis=0)
        res = ccd.sweep_test_batch(cast_r, a, b)
        np.testing.assert_allclose(res.t, expected, rtol=0, atol=1e-9)
        near = np.isfinite(expected)
        assert near.sum() > k // 2
        # Unambiguous winners name the sphere.
        order = np.sort(ts, axis=0)
        clear = near & (order[1] - order[0] > 1e-6)
        names = np.array([res.nodes[j].getName() if j >= 0 else "" for j in res.collider])
        assert (names[clear] == np.array([f"s{j}" for j in ts.argmin(axis=0)])[clear]).all()
        for i in range(0, k, 37):
            c = ccd.sweep_test_closest(cast_r, a[i], b[i])
            assert (c is None) == (not near[i])
            if c is not None:
                assert c.getT() == pytest.approx(res.t[i], abs=1e-15)


def test_a_batch_mixing_zero_and_non_zero_radii_casts_each_row_as_its_own_batch(base, ccd):
    """Radius-0 rows of a mixed batch are rays (the point kernel, with its seam slop), the
    others spheres: each row's answer is the one of a batch of its own radius."""
    rng = np.random.default_rng(9)
    _mixed_scene(base.render, ccd, rng)
    ccd.step()
    a = rng.uniform(-40, 40, (300, 3))
    b = -a + rng.normal(0, 3, (300, 3))
    radius = np.where(np.arange(300) % 2 == 0, 0.0, rng.uniform(0.1, 1.0, 300))
    mixed = ccd.sweep_test_batch(radius, a, b)
    point, round_ = radius == 0, radius > 0
    ray = ccd.ray_test_batch(a[point], b[point])
    sphere = ccd.sweep_test_batch(radius[round_], a[round_], b[round_])
    for rows, alone in ((point, ray), (round_, sphere)):
        assert (mixed.t[rows] == alone.t).all()
        np.testing.assert_array_equal(mixed.point[rows], alone.point)
        assert [mixed.nodes[j] if j >= 0 else None for j in mixed.collider[rows]] == [
            alone.nodes[j] if j >= 0 else None for j in alone.collider
        ]
    assert np.isfinite(ray.t).sum() > 5 and np.isfinite(sphere.t).sum() > 5


def test_a_long_batch_gives_the_single_forms_hits_with_t_to_rounding(base, ccd):
    """Past 256 casts a batch casts each along its length in pieces: the same hit as the
    single form, its t to the last bits (0.48475775454443976 against 0.48475775454444
    was seen)."""
    rng = np.random.default_rng(11)
    centers, _radii = kinematic_spheres(base.render, ccd, rng)
    a = rng.uniform(-25, 25, (600, 3))
    b = centers[rng.integers(0, 30, 600)] * 2 - a
    res = ccd.ray_test_batch(a, b)
    single = [ccd.ray_test_closest(a[i], b[i]) for i in range(600)]
    t = np.array([math.inf if c is None else c.getT() for c in single])
    assert np.array_equal(np.isfinite(t), np.isfinite(res.t))
    hit = np.isfinite(t)
    assert hit.sum() > 300
    assert np.allclose(t[hit], res.t[hit], rtol=1e-13, atol=1e-15)
    assert [c.getIntoNodePath() for c in single if c is not None] == [
        res.nodes[j] for j in res.collider[hit]
    ]


def test_a_zero_radius_sweep_is_the_ray(base, ccd):
    rng = np.random.default_rng(8)
    _mixed_scene(base.render, ccd, rng)
    ccd.step()
    a = rng.uniform(-40, 40, (300, 3))
    b = -a + rng.normal(0, 3, (300, 3))
    ray = ccd.ray_test_batch(a, b)
    sweep = ccd.sweep_test_batch(0.0, a, b)
    per_row = ccd.sweep_test_batch(np.zeros(300), a, b)
    for res in (sweep, per_row):
        assert (res.t == ray.t).all()
        assert [ray.nodes[j] for j in ray.collider if j >= 0] == [
            res.nodes[j] for j in res.collider if j >= 0
        ]
        np.testing.assert_array_equal(res.point, ray.point)
    for i in range(0, 300, 10):
        render = base.render
        assert hit(ccd.sweep_test_closest(0.0, a[i], b[i]), render) == hit(
            ccd.ray_test_closest(a[i], b[i]), render
        )


# ======================================================================================
# Starting exactly on a surface, zero-length casts, extreme coordinates
# ======================================================================================
def test_casts_starting_exactly_on_a_plane(base, ccd):
    render = base.render
    floor = render.attachNewNode("floor")
    ccd.add_plane(floor, Plane(LVector3(0, 0, 1), LPoint3(0, 0, 0)))
    ccd.step()
    assert_hit(
        ccd.ray_test_closest((1, 2, 0), (1, 2, -5)), render, "floor", 0.0, (1, 2, 0), (0, 0, 1)
    )
    assert ccd.ray_test_closest((1, 2, 0), (1, 2, 5)) is None
    assert ccd.ray_test_closest((1, 2, 0), (5, 2, 0)) is None  # along it
    assert_hit(
        ccd.sweep_test_closest(1.0, (1, 2, 1), (1, 2, -1)),
        render,
        "floor",
        0.0,
        (1, 2, 0),
        (0, 0, 1),
    )
    assert ccd.sweep_test_closest(1.0, (1, 2, 1), (5, 2, 1)) is None  # touching, sliding
    assert ccd.sweep_test_closest(1.0, (1, 2, 1), (1, 2, 5)) is None  # touching, leaving
    res = ccd.sweep_test_batch(
        [0.0, 1.0, 1.0], [(1, 2, 0), (1, 2, 1), (1, 2, 1)], [(1, 2, -5), (1, 2, -1), (1, 2, 5)]
    )
    assert res.t.tolist() == [0.0, 0.0, math.inf]


def test_zero_length_casts_move_nowhere_deeper_so_hit_nothing(base, ccd):
    render = base.render
    floor = render.attachNewNode("floor")
    ccd.add_plane(floor, Plane(LVector3(0, 0, 1), LPoint3(0, 0, 0)))
    ball = render.attachNewNode("ball")
    ball.setPos(10, 0, 5)
    ccd.add_sphere(ball, 1.0, response="kinematic")
    ccd.step()
    points = [(1, 2, 0), (1, 2, -1), (1, 2, 1), (10, 0, 5), (10, 0, 6), (10, 0, 5.5)]
    for p in points:
        assert ccd.ray_test_closest(p, p) is None
        assert ccd.ray_test_all(p, p) == []
        assert ccd.sweep_test_closest(1.0, p, p) is None
    for k in (len(points), 300):
        rows = np.array(points * (k // len(points) + 1), float)[:k]
        assert np.isinf(ccd.ray_test_batch(rows, rows).t).all()
        assert np.isinf(ccd.sweep_test_batch(1.0, rows, rows).t).all()


def test_casts_touching_a_sphere_at_their_start(base, ccd):
    render = base.render
    ball = render.attachNewNode("ball")
    ccd.add_sphere(ball, 1.0, response="kinematic")
    ccd.step()
    assert_hit(
        ccd.sweep_test_closest(1.0, (2, 0, 0), (0, 0, 0)), render, "ball", 0.0, (1, 0, 0), (1, 0, 0)
    )
    assert ccd.sweep_test_closest(1.0, (2, 0, 0), (2, 5, 0)) is None  # tangent
    assert ccd.sweep_test_closest(1.0, (2, 0, 0), (5, 0, 0)) is None
    assert ccd.ray_test_closest((1, 0, 0), (1, 5, 0)) is None  # tangent
    assert_hit(
        ccd.ray_test_closest((1, 0, 0), (0, 0, 0)), render, "ball", 0.0, (1, 0, 0), (1, 0, 0)
    )


@pytest.mark.parametrize("where", [1e5, -1e5, 3e4])
def test_huge_coordinates(base, ccd, where):
    render = base.render
    ball = render.attachNewNode("ball")
    ball.setPos(where, where, 0)
    ccd.add_sphere(ball, 1.0, response="kinematic")
    ccd.step()
    a = np.array([[where - 10, where, 0.5], [where - 10, where, 0.0]])
    b = a + (20, 0, 0)
    res = ccd.sweep_test_batch([0.0, 0.5], a, b)
    expected = [(10 - math.sqrt(0.75)) / 20, 8.5 / 20]
    # The sphere's centre is float32 as Panda3D keeps it: 1e5 is exact in float32.
    np.testing.assert_allclose(res.t, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.point[0], (where - math.sqrt(0.75), where, 0.5), atol=1e-9)
    c = ccd.ray_test_closest(a[0], b[0])
    assert c.getT() == res.t[0]


def test_tiny_coordinates(base, ccd):
    render = base.render
    tiny = render.attachNewNode("tiny")
    ccd.add_sphere(tiny, 1e-3, response="kinematic")
    panel = cnode(
        render,
        "panel",
        CollisionPolygon(
            LPoint3(0.01, -1e-3, -1e-3),
            LPoint3(0.01, 1e-3, -1e-3),
            LPoint3(0.01, 1e-3, 1e-3),
            LPoint3(0.01, -1e-3, 1e-3),
        ),
    )
    assert vec(panel.node().getSolid(0).getNormal()) == pytest.approx((1, 0, 0))
    ccd.add_collision_node(panel, static=True)
    ccd.step()
    c = ccd.ray_test_closest((-1e-2, 0, 5e-4), (1e-2, 0, 5e-4))
    assert c.getIntoNodePath() == tiny
    assert c.getT() == pytest.approx((1e-2 - math.sqrt(1e-6 - 2.5e-7)) / 2e-2, abs=1e-6)
    c = ccd.sweep_test_closest(1e-3, (-1e-2, 0, 0), (1e-2, 0, 0))
    assert c.getT() == pytest.approx(0.4, abs=1e-6)
    # The panel 1 mm wide faces +x: hit from x = 0.02, missed 1.5 mm beside it.
    c = ccd.ray_test_closest((0.02, 5e-4, 5e-4), (0.0, 5e-4, 5e-4))
    assert c.getIntoNodePath() == panel
    assert c.getT() == pytest.approx(0.5, abs=1e-6)
    assert ccd.ray_test_closest((0.02, 2.5e-3, 0), (0.0, 2.5e-3, 0)) is None


# ======================================================================================
# Pieces moved, turned and scaled between passes; under moving parents
# ======================================================================================
def test_inverse_sphere_moved_turned_and_scaled_between_passes(base, ccd):
    render = base.render
    room = cnode(render, "room", CollisionInvSphere(0, 0, 0, 3))
    ccd.add_collision_node(room)
    ccd.step()
    assert_hit(
        ccd.ray_test_closest((0, 0, 0), (6, 0, 0)), render, "room", 0.5, (3, 0, 0), (-1, 0, 0)
    )
    assert_hit(
        ccd.ray_test_closest((3, 0, 0), (6, 0, 0)), render, "room", 0.0, (3, 0, 0), (-1, 0, 0)
    )  # fmt: skip  (on the wall, going into its solid)
    assert ccd.ray_test_closest((3, 0, 0), (0, 0, 0)) is None  # on the wall, going in
    assert_hit(
        ccd.sweep_test_closest(1.0, (0, 0, 0), (6, 0, 0)),
        render,
        "room",
        1 / 3,
        (3, 0, 0),
        (-1, 0, 0),
    )
    room.setPosHprScale(1, 0, 0, 30, 40, 0, 2, 2, 2)
    assert ccd.ray_test_closest((1, 0, 0), (13, 0, 0)).getT() == pytest.approx(1 / 6)  # old
    ccd.step()
    assert_hit(
        ccd.ray_test_closest((1, 0, 0), (13, 0, 0)),
        render,
        "room",
        0.5,
        (7, 0, 0),
        (-1, 0, 0),
        tol=1e-5,
    )
    c = ccd.sweep_test_closest(1.0, (1, 0, 0), (13, 0, 0))
    assert c.getT() == pytest.approx(5 / 12, abs=1e-9)
    assert vec(c.getContactPos(render)) == pytest.approx((6, 0, 0), abs=1e-5)


def test_capsule_under_a_moving_turning_scaling_parent(base, ccd):
    render = base.render
    rig = render.attachNewNode("rig")
    cap = cnode(rig, "cap", CollisionCapsule(0, 0, -1, 0, 0, 1, 0.5))
    ccd.add_collision_node(cap)
    ccd.step()
    assert_hit(
        ccd.ray_test_closest((-5, 0, 0), (5, 0, 0)), render, "cap", 0.45, (-0.5, 0, 0), (-1, 0, 0)
    )
    for frame in range(1, 4):
        # The parent moves; the capsule's local axis z turns to world -y/+y with pitch.
        rig.setPosHprScale(0, 10 * frame, 0, 0, 90, 0, frame + 1, frame + 1, frame + 1)
        ccd.step()
        s = frame + 1
        y = 10 * frame
        assert_hit(
            ccd.ray_test_closest((-5, y, 0), (5, y, 0)),
            render,
            "cap",
            (5 - 0.5 * s) / 10,
            (-0.5 * s, y, 0),
            (-1, 0, 0),
            tol=1e-5,
        )
        tip = y + 1.5 * s
        c = ccd.ray_test_closest((0, y + 20, 0), (0, y, 0))
        assert c.getT() == pytest.approx((y + 20 - tip) / 20, abs=1e-9)
        assert vec(c.getSurfaceNormal(render)) == pytest.approx((0, 1, 0), abs=1e-6)
        c = ccd.sweep_test_closest(0.25, (-5, y, 0), (5, y, 0))
        assert c.getT() == pytest.approx((5 - 0.5 * s - 0.25) / 10, abs=1e-9)
        # Where the capsule was a pass ago is empty now.
        assert ccd.ray_test_closest((-5, y - 10, 0), (5, y - 10, 0)) is None


def test_box_and_polygon_under_a_parent_scaled_uniformly_then_moved(base, ccd):
    render = base.render
    rig = render.attachNewNode("rig")
    box = cnode(rig, "box", CollisionBox(LPoint3(0, 0, 0), 1, 1, 1))
    panel = cnode(
        rig,
        "panel",
        CollisionPolygon(
            LPoint3(-1, 5, -1), LPoint3(1, 5, -1), LPoint3(1, 5, 1), LPoint3(-1, 5, 1)
        ),
    )
    normal = vec(panel.node().getSolid(0).getNormal())
    assert normal == pytest.approx((0, -1, 0))
    ccd.add_collision_node(box)
    ccd.add_collision_node(panel)
    ccd.step()
    rig.setScale(3)
    rig.setPos(100, 0, 0)
    ccd.step()
    assert_hit(
        ccd.ray_test_closest((100, -20, 0.5), (100, 20, 0.5)),
        render,
        "box",
        17 / 40,
        (100, -3, 0.5),
        (0, -1, 0),
        tol=1e-4,
    )
    # Through the box's edge (x = 103, y = -3): one contact for the box.
    every = ccd.ray_test_all((103, -20, 0), (103, 20, 0))
    assert [c.getIntoNodePath().getName() for c in every] == ["box", "panel"]
    assert every[1].getT() == pytest.approx(35 / 40, abs=1e-9)
    # Behind the panel (y > 15), toward -y: the panel's back, then the box's back face ...
    # and its front face at y = 3.
    every = ccd.ray_test_all((101, 30, 1), (101, -30, 1))
    assert [c.getIntoNodePath().getName() for c in every] == ["box"]
    assert every[0].getT() == pytest.approx(27 / 60, abs=1e-9)
    assert vec(every[0].getSurfaceNormal(render)) == pytest.approx((0, 1, 0), abs=1e-6)


def test_a_level_registered_at_once_is_queried_after_several_passes(base, ccd):
    render = base.render
    level = render.attachNewNode("level")
    for i in range(5):
        cnode(
            level,
            f"tile{i}",
            CollisionPolygon(
                LPoint3(4 * i, 0, 0),
                LPoint3(4 * i + 4, 0, 0),
                LPoint3(4 * i + 4, 4, 0),
                LPoint3(4 * i, 4, 0),
            ),
        )
    cnode(level, "pillar", CollisionCapsule(18, 2, 0, 18, 2, 5, 0.5))
    added = ccd.add_collision_nodes(level, static=True)
    assert len(added) == 6
    body = render.attachNewNode("body")
    body.setPos(2, 2, 3)
    ccd.add_sphere(body, 0.5)
    xs = np.linspace(0.3, 19.7, 50)
    a = np.column_stack([xs, np.full(50, 2.2), np.full(50, 10.0)])
    b = a - (0, 0, 20)
    for frame in range(4):
        body.setPos(2 + 4 * frame, 2, 3)
        ccd.step()
        res = ccd.ray_test_batch(a, b)
        names = [res.nodes[j].getName() for j in res.collider]
        for i, x in enumerate(xs):
            if abs(x - (2 + 4 * frame)) < math.sqrt(0.25 - 0.04):
                expect = "body"
            elif abs(x - 18) < math.sqrt(0.25 - 0.04):
                expect = "pillar"
            else:
                expect = f"tile{int(x // 4)}"
            assert names[i] == expect, (frame, x)
        tiles = np.array([n.startswith("tile") for n in names])
        assert (res.t[tiles] == 0.5).all()


# ======================================================================================
# Masks and sensors
# ======================================================================================
def test_masks_zero_and_all_on(base, ccd):
    render = base.render
    ball = render.attachNewNode("ball")
    ccd.add_sphere(ball, 1.0, response="kinematic", into_mask=0x80000000)
    floor = render.attachNewNode("floor")
    ccd.add_plane(floor, Plane(LVector3(0, 0, 1), LPoint3(0, 0, -5)), into_mask=0b1)
    ccd.step()
    ray = ((0, 0, 5), (0, 0, -10))
    for mask in (0, BitMask32.allOff()):
        assert ccd.ray_test_closest(*ray, mask=mask) is None
        assert ccd.ray_test_all(*ray, mask=mask) == []
        assert ccd.sweep_test_closest(0.5, *ray, mask=mask) is None
        assert np.isinf(ccd.ray_test_batch([ray[0]] * 300, [ray[1]] * 300, mask=mask).t).all()
    for mask in (BitMask32.allOn(), 0xFFFFFFFF):
        every = ccd.ray_test_all(*ray, mask=mask)
        assert [c.getIntoNodePath().getName() for c in every] == ["ball", "floor"]
    assert ccd.ray_test_closest(*ray, mask=BitMask32.bit(31)).getIntoNodePath() == ball
    assert ccd.ray_test_closest(*ray, mask=BitMask32.bit(0)).getIntoNodePath() == floor


def test_sensors_false_skips_intangible_solids_and_sees_what_is_behind(base, ccd):
    render = base.render
    ghost_box = CollisionBox(LPoint3(0, 0, 3), 1, 1, 1)
    ghost_box.setTangible(False)
    slab = CollisionPolygon(
        LPoint3(-1, -1, 0), LPoint3(1, -1, 0), LPoint3(1, 1, 0), LPoint3(-1, 1, 0)
    )
    # A node may not mix them (a ValueError): two nodes, the sensor one not a "sensor".
    with pytest.raises(ValueError, match="mixes tangible and intangible"):
        ccd.add_collision_node(cnode(render, "mixed", ghost_box, slab))
    ccd.add_collision_node(cnode(render, "ghost", ghost_box))
    ccd.add_collision_node(cnode(render, "slab", slab))
    ccd.step()
    ray = ((0.2, 0.1, 10), (0.2, 0.1, -10))
    every = ccd.ray_test_all(*ray)
    assert [c.getIntoSolid() for c in every] == [ghost_box, slab]
    assert every[0].getT() == pytest.approx(6 / 20) and every[1].getT() == pytest.approx(0.5)
    c = ccd.ray_test_closest(*ray, sensors=False)
    assert c.getIntoSolid() == slab and c.getT() == pytest.approx(0.5)
    assert [c.getIntoSolid() for c in ccd.ray_test_all(*ray, sensors=False)] == [slab]
    res = ccd.ray_test_batch([ray[0]] * 257, [ray[1]] * 257, sensors=False)
    assert (res.t == 0.5).all()
    c = ccd.sweep_test_closest(0.5, *ray, sensors=False)
    assert c.getIntoSolid() == slab and c.getT() == pytest.approx(9.5 / 20)


# ======================================================================================
# Queries and removals from event handlers
# ======================================================================================
def test_queries_in_a_handler_see_the_pass_and_not_what_it_removed(base, ccd, listener):
    render = base.render
    wall = cnode(render, "wall", CollisionPlane(LPlane((-1, 0, 0), (10, 0, 0))))
    ccd.add_collision_node(wall)
    ball = cnode(render, "ball", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(ball)
    other = render.attachNewNode("other")
    other.setPos(5, 3, 0)
    ccd.add_sphere(other, 0.5, response="kinematic")
    ccd.step()
    seen = []
    lane = ((-20, 3, 0), (20, 3, 0))

    def on_hit(entry):
        # The ball is where the pass left it (rewound to touch the wall), already.
        seen.append(hit(ccd.ray_test_closest((9, 0, 10), (9, 0, -10)), render))
        seen.append(hit(ccd.ray_test_closest(*lane), render)[:2])
        other.removeNode()
        seen.append(hit(ccd.ray_test_closest(*lane), render)[:2])
        seen.append([c.getIntoNodePath().getName() for c in ccd.ray_test_all(*lane)])
        res = ccd.ray_test_batch([lane[0]] * 257, [lane[1]] * 257)
        seen.append({res.nodes[j].getName() for j in res.collider})
        seen.append(ccd.sweep_test_batch(0.1, [lane[0]], [lane[1]]).t.tolist())

    listener.accept("ball-into-wall", on_hit)
    ball.setX(9.5)
    ccd.step()
    assert seen == [
        ("ball", 0.45, (9, 0, 1), (0, 0, 1)),
        ("other", 24.5 / 40),
        ("wall", 0.75),
        ["wall"],
        {"wall"},
        [29.9 / 40],
    ]


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("query", ["ray_test_closest", "ray_test_all", "ray_test_batch"])
def test_a_piece_removed_with_remove_between_passes_is_not_hit(base, ccd, static, query):
    crate = cnode(base.render, "crate", CollisionBox(LPoint3(0, 0, 0), 1, 1, 1))
    ccd.add_collision_node(crate, static=static)
    ccd.step()
    ccd.remove(crate)
    if query == "ray_test_batch":
        assert np.isinf(ccd.ray_test_batch([(0, 0, 10)], [(0, 0, -10)]).t).all()
    else:
        assert not getattr(ccd, query)((0, 0, 10), (0, 0, -10))


def test_a_piece_registered_between_passes_is_not_seen_until_the_next(base, ccd):
    crate = cnode(base.render, "crate", CollisionBox(LPoint3(0, 0, 0), 1, 1, 1))
    ccd.add_collision_node(crate)
    ccd.step()
    lid = cnode(base.render, "lid", CollisionBox(LPoint3(0, 0, 3), 1, 1, 1))
    ccd.add_collision_node(lid)
    ccd.remove(crate)
    assert ccd.ray_test_closest((0, 0, 10), (0, 0, -10)) is None
    assert ccd.ray_test_all((0, 0, 10), (0, 0, -10)) == []
    ccd.step()
    assert ccd.ray_test_closest((0, 0, 10), (0, 0, -10)).getIntoNodePath() == lid


def test_a_piece_removed_with_remove_node_between_passes_is_not_hit(base, ccd):
    crate = cnode(base.render, "crate", CollisionBox(LPoint3(0, 0, 0), 1, 1, 1))
    ccd.add_collision_node(crate)
    ccd.step()
    crate.removeNode()
    assert ccd.ray_test_closest((0, 0, 10), (0, 0, -10)) is None
    assert np.isinf(ccd.ray_test_batch([(0, 0, 10)] * 300, [(0, 0, -10)] * 300).t).all()


def test_a_node_removed_with_remove_in_a_handler_is_gone_for_that_handler(base, ccd, listener):
    render = base.render
    floor = cnode(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    ccd.add_collision_node(floor)
    crate = cnode(render, "crate", CollisionBox(LPoint3(0, 5, 1), 1, 1, 1))
    ccd.add_collision_node(crate)
    ball = cnode(render, "ball", CollisionSphere(0, 0, 0, 1), pos=(0, 0, 3))
    ccd.add_collision_node(ball)
    ccd.step()
    seen = []

    def on_land(entry):
        ccd.remove(crate)
        seen.append(hit(ccd.ray_test_closest((0, 5, 10), (0, 5, -10)), render)[:2])
        seen.append(ccd.sweep_test_batch([0.5] * 3, [(0, 5, 10)] * 3, [(0, 5, -10)] * 3).t.tolist())

    listener.accept("ball-into-floor", on_land)
    ball.setZ(-5)
    ccd.step()
    assert seen == [("floor", 0.5), [9.5 / 20] * 3]
    assert ccd.ray_test_closest((0, 5, 10), (0, 5, -10)).getIntoNodePath() == floor


# ======================================================================================
# Ray colliders
# ======================================================================================
@pytest.fixture
def events(ccd, recorder):
    def frame(*prefixes):
        recorder.clear()
        ccd.step()
        out = []
        for name, c in recorder.sent:
            if prefixes and name.split("-")[0] not in prefixes:
                continue
            if "-out-" in name:
                out.append((name, None))
            else:
                p = tuple(round(v, 5) for v in c.getSurfacePoint(ccd_render(c)))
                out.append((name, (round(c.getT(), 6), p)))
        return out

    return frame


def ccd_render(contact):
    return contact.getIntoNodePath().getTop()


def test_a_segment_on_a_moving_scaled_turned_cart(base, ccd, events):
    render = base.render
    floor = cnode(
        render,
        "floor",
        CollisionPolygon(
            LPoint3(-50, -50, 0), LPoint3(50, -50, 0), LPoint3(50, 50, 0), LPoint3(-50, 50, 0)
        ),
    )
    ccd.add_collision_node(floor, static=True)
    ledge = cnode(render, "ledge", CollisionBox(LPoint3(20, 0, 1), 5, 50, 1))
    ccd.add_collision_node(ledge)
    cart = render.attachNewNode("cart")
    cart.setPos(0, 0, 5)
    ccd.add_collision_node(rnode(cart, "seg", CollisionSegment(0, 0, 0, 0, 0, -10)))
    assert events() == [("seg-into-floor", (0.5, (0, 0, 0)))]
    cart.setX(20)
    assert events() == [
        ("seg-into-ledge", (0.3, (20, 0, 2))),
        ("seg-again-floor", (0.5, (20, 0, 0))),
    ]
    cart.setScale(2)  # the segment now ends at z = -15: t is a fraction of 20
    assert events() == [
        ("seg-again-ledge", (0.15, (20, 0, 2))),
        ("seg-again-floor", (0.25, (20, 0, 0))),
    ]
    cart.setHpr(0, 0, 180)  # upside down: it points up, at nothing
    assert events() == [("seg-out-floor", None), ("seg-out-ledge", None)]
    cart.setHpr(0, 0, 0)
    cart.setScale(1)
    ledge.setPos(0, 0, 0)
    ledge.setScale(0.5)  # the box now spans x 7.5 .. 12.5, top at z = 1
    assert events() == [("seg-into-floor", (0.5, (20, 0, 0)))]
    cart.setX(10)
    assert events() == [
        ("seg-into-ledge", (0.4, (10, 0, 1))),
        ("seg-again-floor", (0.5, (10, 0, 0))),
    ]


def test_a_ray_reparented_then_detached_by_its_handlers(base, ccd, events, listener):
    render = base.render
    floor = cnode(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    ccd.add_collision_node(floor)
    pad = cnode(render, "pad", CollisionBox(LPoint3(0, 0, 1), 1, 1, 1))
    ccd.add_collision_node(pad)
    here = render.attachNewNode("here")
    there = render.attachNewNode("there")
    there.setPos(-10, 0, 3)
    seg = rnode(here, "seg", CollisionSegment(0, 0, 5, 0, 0, -5))
    ccd.add_collision_node(seg)
    assert events() == [("seg-into-pad", (0.3, (0, 0, 2))), ("seg-into-floor", (0.5, (0, 0, 0)))]
    listener.accept("seg-again-pad", lambda entry: seg.reparentTo(there))
    assert events() == [("seg-again-pad", (0.3, (0, 0, 2))), ("seg-again-floor", (0.5, (0, 0, 0)))]
    listener.ignoreAll()
    # Cast from where it is now: z 8 .. -2 at x = -10.
    assert events() == [("seg-out-pad", None), ("seg-again-floor", (0.8, (-10, 0, 0)))]
    listener.accept("seg-again-floor", lambda entry: seg.detachNode())
    # Its last event of the pass: its pair closes in that pass, as any detached in a handler.
    assert events() == [("seg-again-floor", (0.8, (-10, 0, 0))), ("seg-out-floor", None)]
    assert events() == []
    listener.ignoreAll()
    seg.reparentTo(here)
    assert events() == [("seg-into-pad", (0.3, (0, 0, 2))), ("seg-into-floor", (0.5, (0, 0, 0)))]


def test_a_ray_on_a_rewound_body_casts_from_where_the_body_ends(base, ccd, events):
    render = base.render
    wall = cnode(render, "wall", CollisionPlane(LPlane((-1, 0, 0), (10, 0, 0))))
    ccd.add_collision_node(wall)
    floor = cnode(
        render,
        "floor",
        CollisionPolygon(
            LPoint3(-50, -5, -2), LPoint3(50, -5, -2), LPoint3(50, 5, -2), LPoint3(-50, 5, -2)
        ),
    )
    ccd.add_collision_node(floor, static=True)
    # A step beyond the wall, where the game tries to put the body.
    step = cnode(render, "step", CollisionBox(LPoint3(16, 0, -1.5), 2, 1, 0.5))
    ccd.add_collision_node(step, static=True)
    body = cnode(render, "body", CollisionSphere(0, 0, 0, 1))
    ccd.add_collision_node(body)
    eye = rnode(body, "eye", CollisionRay(0, 0, 0, 0, 0, -1))
    ccd.add_collision_node(eye)
    assert [n for n, _ in events("eye")] == ["eye-into-floor"]
    body.setX(15)
    got = events("eye")
    assert body.getX() == pytest.approx(9.0)
    assert [n for n, _ in got] == ["eye-again-floor"]
    assert got[0][1][1] == pytest.approx((9, 0, -2))
    # And the ray does not hit its own body, though it starts at its centre.
    assert all("body" not in n for n, _ in got)


def test_a_ray_node_with_from_mask_zero_gets_nothing(base, ccd, events):
    render = base.render
    ccd.add_collision_node(cnode(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0)))))
    ccd.add_collision_node(
        rnode(render, "blind", CollisionRay(0, 0, 5, 0, 0, -1), from_mask=BitMask32.allOff())
    )
    ccd.add_collision_node(rnode(render, "seer", CollisionRay(0, 0, 5, 0, 0, -1)))
    # A ray's t is a fraction of a cast the plugin makes long enough: compare the points.
    assert [(name, point) for name, (_t, point) in events()] == [("seer-into-floor", (0, 0, 0))]


@pytest.mark.parametrize("k", [1, 2048, 2049])
def test_queries_made_by_a_handler_of_a_ray_event(base, ccd, events, listener, k):
    """Ray events come after the pass: a query from their handler sees the pass's world."""
    render = base.render
    floor = cnode(render, "floor", CollisionPlane(LPlane((0, 0, 1), (0, 0, 0))))
    ccd.add_collision_node(floor)
    ball = cnode(render, "ball", CollisionSphere(0, 0, 0, 1), pos=(0, 0, 5))
    ccd.add_collision_node(ball)
    ccd.add_collision_node(rnode(render, "probe", CollisionSegment(3, 0, 5, 3, 0, -5)))
    ccd.step()
    answers = []

    def on_probe(entry):
        res = ccd.ray_test_batch([(0, 0, 10)] * k, [(0, 0, -10)] * k)
        answers.append((res.t[0], res.nodes[res.collider[0]].getName(), len(set(res.t))))

    listener.accept("probe-again-floor", on_probe)
    ball.setZ(-10)  # lands on the floor at z = 1
    ccd.step()
    assert answers == [(8 / 20, "ball", 1)]


@pytest.mark.parametrize("which", ["from_pos", "to_pos"])
def test_a_batch_with_a_non_finite_row_is_refused_naming_it(base, ccd, which):
    a = np.zeros((4, 3))
    b = np.ones((4, 3))
    (a if which == "from_pos" else b)[2, 1] = np.nan
    expected = rf"^{which} must be finite, got \[\d\.\d, nan, \d\.\d\] in row 2$"
    with pytest.raises(ValueError, match=expected):
        ccd.ray_test_batch(a, b)
    with pytest.raises(ValueError, match=expected):
        ccd.sweep_test_batch(0.5, a, b)


@pytest.mark.parametrize(
    ("radius", "message"),
    [
        ("1", r"^radius must be a number, got '1'$"),
        (True, r"^radius must be a number, got True$"),
        (-1.0, r"^radius must be finite and >= 0, got -1\.0$"),
        (1e39, r"^radius must fit Panda3D's float32 \(up to 3\.4e38\), got 1e\+39$"),
    ],
)
def test_a_sweep_radius_is_checked_as_a_sphere_radius_is(base, ccd, radius, message):
    # The same door as add_sphere's: a str or a bool is not a radius.
    for call in (
        lambda: ccd.sweep_test_closest(radius, (0, 0, 5), (0, 0, -5)),
        lambda: ccd.add_sphere(base.render.attachNewNode("ball"), radius),
    ):
        with pytest.raises(ValueError, match=message):
            call()
