"""Analytic answers for the level-geometry kernels: a moving sphere against a triangle, an
axis-aligned box, a capsule and an inverse sphere (:mod:`panda3d_ccd.sweep`).

Every expected value is worked out by hand from the geometry (the comment beside a row says
how), never taken from a kernel. Warnings are errors here: degenerate shapes and static
spheres must reach ``inf`` without dividing by zero.
"""

from __future__ import annotations

import doctest
import math
import re

import level_oracle
import numpy as np
import pytest
from kernel_cases import shared_edges as shared_edges_pairs

from panda3d_ccd import sweep
from panda3d_ccd._pieces import shared_edges, welded
from panda3d_ccd.sweep import sphere_box as box_mod
from panda3d_ccd.sweep import (
    sphere_box_toi,
    sphere_capsule_toi,
    sphere_inv_sphere_toi,
    sphere_triangle_toi,
)
from panda3d_ccd.sweep import sphere_capsule as capsule_mod
from panda3d_ccd.sweep import sphere_inv_sphere as inv_mod
from panda3d_ccd.sweep import sphere_triangle as tri_mod
from panda3d_ccd.sweep._result import EDGE, FACE, VERTEX

pytestmark = pytest.mark.filterwarnings("error")

INF = math.inf
S = 1 / math.sqrt(2.0)

# The triangle of the tables: a right triangle in z = 0, counter-clockwise seen from +z, so
# its front faces +z. Edges 0: a-b along the x axis, 1: b-c, 2: c-a along the y axis.
TA, TB, TC = (0.0, 0.0, 0.0), (4.0, 0.0, 0.0), (0.0, 4.0, 0.0)


def _one(value: np.ndarray) -> float:
    assert value.shape == (1,)
    assert value.dtype == np.float64
    return float(value[0])


def _rows(*values) -> list[np.ndarray]:
    """One row each: points as (1, 3), lengths as (1,)."""
    return [np.array([v], dtype=np.float64) for v in values]


# ----------------------------------------------------------------------------------------
# sphere_triangle_toi
# ----------------------------------------------------------------------------------------

# Two-sided contact of the path (2, -2 + 2t, 0.5 - 2t), r = 1.2, with edge a-b (the x axis):
# (2 - 2t)^2 + (0.5 - 2t)^2 = 1.44, i.e. 8t^2 - 10t + 2.81 = 0; its centre is behind then.
BEHIND_EDGE_T = (10 - math.sqrt(10.08)) / 16

# (id, c0, c1, r, two_sided, expected t, feature, index)
TRIANGLE = [
    # Face head-on: z = 5 - 10t reaches r = 1 at t = 0.4.
    ("face head-on", (1, 1, 5), (1, 1, -5), 1.0, False, 0.4, FACE, 0),
    ("face head-on, two-sided", (1, 1, 5), (1, 1, -5), 1.0, True, 0.4, FACE, 0),
    ("face, point (r = 0)", (1, 1, 5), (1, 1, -5), 0.0, False, 0.5, FACE, 0),
    # A point through the edge a-b itself: the face includes its edges.
    ("point through an edge", (2, 0, 5), (2, 0, -5), 0.0, False, 0.5, FACE, 0),
    # Within the tolerance (1e-9 of the scene: here 1e-8) outside an edge is on it, so that
    # a point aimed at an edge two triangles share hits one of them; beyond it, a miss.
    ("point within rounding of an edge", (2, -1e-9, 5), (2, -1e-9, -5), 0.0, False, 0.5, FACE, 0),
    ("point just outside an edge", (2, -1e-6, 5), (2, -1e-6, -5), 0.0, False, INF, -1, -1),
    ("point through a vertex", (4, 0, 5), (4, 0, -5), 0.0, True, 0.5, FACE, 0),
    # From behind: one-sided it passes, two-sided it meets the back at z = -1.
    ("from behind, one-sided", (1, 1, -5), (1, 1, 5), 1.0, False, INF, -1, -1),
    ("from behind, two-sided", (1, 1, -5), (1, 1, 5), 1.0, True, 0.4, FACE, 0),
    ("point from behind, one-sided", (1, 1, -5), (1, 1, 5), 0.0, False, INF, -1, -1),
    ("point from behind, two-sided", (1, 1, -5), (1, 1, 5), 0.0, True, 0.5, FACE, 0),
    # In the plane toward edge a-b: y = -5 + 10t reaches -1 at t = 0.4.
    ("edge a-b, in the plane", (2, -5, 0), (2, 5, 0), 1.0, False, 0.4, EDGE, 0),
    # Down beside edge a-b: distance sqrt(0.36 + z^2) = 1 at z = 0.8, t = 4.2 / 10.
    ("edge a-b, from above", (2, -0.6, 5), (2, -0.6, -5), 1.0, False, 0.42, EDGE, 0),
    # Toward the middle of edge b-c (x + y = 4) along its normal from distance 5: t = 4/5.
    ("edge b-c", (2 + 5 * S, 2 + 5 * S, 0), (2, 2, 0), 1.0, False, 0.8, EDGE, 1),
    ("edge c-a", (-5, 2, 0), (5, 2, 0), 1.0, False, 0.4, EDGE, 2),
    # Toward a vertex along an edge's line (no motion across that edge's cylinder).
    ("vertex a, in the plane", (-3, -4, 0), (3, 4, 0), 1.0, False, 0.4, VERTEX, 0),
    ("vertex b, along edge a-b", (9, 0, 0), (-1, 0, 0), 1.0, False, 0.4, VERTEX, 1),
    ("vertex c, along edge c-a", (0, 9, 0), (0, -1, 0), 1.0, False, 0.4, VERTEX, 2),
    # Crossing the plane from behind at t = 0.5 at (2, -0.5, 0), within r = 1 of edge a-b
    # and moving toward it: one-sided, the contact is the crossing. Two-sided: the edge's
    # cylinder, (1 - t)^2 + (1 - 2t)^2 = 1, i.e. 5t^2 - 6t + 1 = 0, t = 0.2.
    ("crossing near an edge, toward it", (2, -1, -1), (2, 0, 1), 1.0, False, 0.5, EDGE, 0),
    ("crossing near an edge, two-sided", (2, -1, -1), (2, 0, 1), 1.0, True, 0.2, EDGE, 0),
    # The same crossing at (2, -1, 0), within r = 1.2 of the edge but moving away from it.
    ("crossing near an edge, away", (2, -0.5, -1), (2, -1.5, 1), 1.2, False, INF, -1, -1),
    ("crossing inside the face", (1, 1, -1), (1, 1, 1), 1.0, False, INF, -1, -1),
    # Crossing at (2, -2, 0), 2 from the triangle, then meeting edge a-b in front:
    # (4t - 3)^2 + (2t - 0.5)^2 = 1, i.e. 20t^2 - 26t + 8.25 = 0, t = (26 - 4) / 40.
    ("crossing far from it, then an edge", (2, -3, -0.5), (2, 1, 1.5), 1.0, False, 0.55, EDGE, 0),
    ("far from it, then an edge, two-sided", (2, -3, -0.5), (2, 1, 1.5), 1.0, True, 0.55, EDGE, 0),
    # In front at first, the centre goes behind the plane (t = 0.25) beside the triangle
    # and then meets edge a-b from behind: one-sided no contact.
    ("edge met from behind", (2, -2, 0.5), (2, 0, -1.5), 1.2, False, INF, -1, -1),
    (
        "edge met from behind, two-sided",
        (2, -2, 0.5),
        (2, 0, -1.5),
        1.2,
        True,
        BEHIND_EDGE_T,
        EDGE,
        0,
    ),
    # Already overlapping: approaching gives 0, receding or sliding gives inf.
    ("overlapping, approaching", (1, 1, 0.5), (1, 1, -0.5), 1.0, False, 0.0, FACE, 0),
    ("overlapping, receding", (1, 1, 0.5), (1, 1, 2), 1.0, False, INF, -1, -1),
    ("overlapping, sliding", (1, 1, 0.5), (2, 1, 0.5), 1.0, False, INF, -1, -1),
    ("overlapping an edge, toward it", (2, -0.5, 0.5), (2, 0.5, 0.5), 1.0, False, 0.0, EDGE, 0),
    ("overlapping an edge, away", (2, -0.5, 0.5), (2, -1, 0.5), 1.0, False, INF, -1, -1),
    # A centre on the triangle: the distance is 0 and cannot decrease (convexity), so no
    # contact, whichever way it moves.
    ("centre on the face, moving back", (1, 1, 0), (1, 1, -1), 1.0, False, INF, -1, -1),
    ("centre on the face, two-sided", (1, 1, 0), (1, 1, -1), 1.0, True, INF, -1, -1),
    ("centre on a vertex", (4, 0, 0), (3, 1, -2), 1.0, False, INF, -1, -1),
    ("behind, overlapping, one-sided", (1, 1, -0.5), (1, 1, 0), 1.0, False, INF, -1, -1),
    ("behind, overlapping, two-sided", (1, 1, -0.5), (1, 1, 0), 1.0, True, 0.0, FACE, 0),
    # Tangent grazes: at height r across the face, its edges and vertices; along an edge's
    # line at distance r; past a vertex at distance r (two-sided, so from behind too).
    ("graze across the face", (-2, 1, 1), (6, 1, 1), 1.0, False, INF, -1, -1),
    ("graze along edge a-b", (-5, -1, 0), (9, -1, 0), 1.0, True, INF, -1, -1),
    ("graze past vertex c", (-1, 4, -5), (-1, 4, 5), 1.0, True, INF, -1, -1),
    ("graze past vertex b, skew", (5, 0, -5), (5, 0, 5), 1.0, True, INF, -1, -1),
    # The end of the frame.
    ("touch at t = 1", (1, 1, 3), (1, 1, 1), 1.0, False, 1.0, FACE, 0),
    ("stops short", (1, 1, 3), (1, 1, 1.5), 1.0, False, INF, -1, -1),
    ("static, touching", (1, 1, 1), (1, 1, 1), 1.0, False, INF, -1, -1),
    ("static, overlapping", (1, 1, 0.5), (1, 1, 0.5), 1.0, True, INF, -1, -1),
    ("far away", (50, 50, 5), (50, 50, -5), 1.0, True, INF, -1, -1),
]


@pytest.mark.parametrize(
    "c0, c1, r, two, expected", [row[1:6] for row in TRIANGLE], ids=[row[0] for row in TRIANGLE]
)
def test_sphere_triangle_toi(c0, c1, r, two, expected):
    got = _one(sphere_triangle_toi([c0], [c1], r, TA, TB, TC, two_sided=two))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row", TRIANGLE, ids=[row[0] for row in TRIANGLE])
def test_sphere_triangle_sweep(row):
    """The core reports the feature and index hit, a unit normal out of the triangle toward
    the centre, and a contact point on the triangle."""
    _, c0, c1, r, two, expected, feature, index = row
    c0_, c1_, r_, a, b, c = _rows(c0, c1, r, TA, TB, TC)
    got = tri_mod._sweep(c0_, c1_, r_, a, b, c, two)
    assert got.t[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert (int(got.feature[0]), int(got.index[0])) == (feature, index)
    overlapped = row[0].startswith("crossing near")
    _check_contact(got, c0_, c1_, r_, touching=expected > 0 and not overlapped)
    if np.isfinite(expected):
        assert got.point[0, 2] == pytest.approx(0.0, abs=1e-12)  # on the triangle's plane
        x, y = got.point[0, :2]
        # On the triangle (within the tolerance by which a face takes its edges).
        near = 1e-8 if "within rounding" in row[0] else 1e-12
        assert x >= -near and y >= -near and x + y <= 4 + near


def _check_contact(got, c0, c1, r, touching: bool = True) -> None:
    """Where there is a contact: a unit normal, and the centre at that time lies along the
    normal from the contact point, at r when it touches from outside (``touching``) and
    within r when it already overlapped; where none: nan and -1."""
    hit = np.isfinite(got.t)
    assert got.point.shape == got.normal.shape == (len(got.t), 3)
    assert np.all(np.isnan(got.point[~hit])) and np.all(np.isnan(got.normal[~hit]))
    assert np.all(got.feature[~hit] == -1) and np.all(got.index[~hit] == -1)
    assert np.allclose(np.linalg.norm(got.normal[hit], axis=1), 1.0, rtol=0, atol=1e-12)
    centre = c0 + np.where(hit, got.t, 0.0)[:, None] * (c1 - c0)
    gap = (centre - got.point)[hit]
    dist = np.linalg.norm(gap, axis=1)
    assert np.allclose(gap, dist[:, None] * got.normal[hit], rtol=0, atol=1e-9)
    if touching:
        assert np.allclose(dist, r[hit], rtol=0, atol=1e-9)
    else:
        assert np.all(dist <= r[hit] + 1e-12)


def test_sphere_triangle_normals_by_feature():
    """The normal is the face's on the side approached, and on an edge or vertex the
    direction from the contact point to the centre."""
    c0 = [(1, 1, 5), (1, 1, -5), (2, -0.6, 5), (-3, -4, 0)]
    c1 = [(1, 1, -5), (1, 1, 5), (2, -0.6, -5), (3, 4, 0)]
    got = tri_mod._sweep(
        *_rows_many(c0, c1, [1.0] * 4, [TA] * 4, [TB] * 4, [TC] * 4), two_sided=True
    )
    assert np.allclose(got.normal, [(0, 0, 1), (0, 0, -1), (0, -0.6, 0.8), (-0.6, -0.8, 0)])
    assert np.allclose(got.point, [(1, 1, 0), (1, 1, 0), (2, 0, 0), (0, 0, 0)])


def _rows_many(*columns) -> list[np.ndarray]:
    return [np.array(col, dtype=np.float64) for col in columns]


def test_one_sided_passes_from_behind_through_the_face():
    """Spheres from behind whose centres cross a tilted triangle's plane inside the face
    pass, whatever rounding does at the crossing: the distance is 0 there and only grows."""
    rng = np.random.default_rng(7)
    n = 2000
    a = np.array([0.3, -1.7, 2.9])
    b = np.array([4.1, 0.7, 1.3])
    c = np.array([-0.9, 3.3, 0.1])
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal)
    weights = rng.dirichlet([1.0, 1.0, 1.0], n)
    through = weights @ np.stack([a, b, c])
    v = rng.normal(size=(n, 3))
    v += (np.abs(v @ normal) + 0.1)[:, None] * normal - (v @ normal)[:, None] * normal
    when = rng.uniform(0.05, 0.95, n)
    c0 = through - when[:, None] * v
    got = sphere_triangle_toi(c0, c0 + v, rng.uniform(0.0, 0.5, n), a, b, c)
    assert np.all(got == INF)


# Degenerate triangles act as their edges and vertices (from both sides) or miss.
SEGMENT = ((0, 0, 0), (2, 0, 0), (4, 0, 0))  # collinear: the segment [0, 4] on x
POINT = ((1, 1, 1), (1, 1, 1), (1, 1, 1))  # coincident: the point (1, 1, 1)
DOUBLED = ((0, 0, 0), (4, 0, 0), (4, 0, 0))  # two corners equal: the segment again

DEGENERATE = [
    # Onto the segment from above and from below: sqrt(z^2) = 1 at z = +-1, t = 0.4.
    ("segment, from above", SEGMENT, (1, 0, 5), (1, 0, -5), 1.0, 0.4, EDGE),
    ("segment, from below", SEGMENT, (1, 0, -5), (1, 0, 5), 1.0, 0.4, EDGE),
    ("segment, end on", SEGMENT, (9, 0, 0), (-1, 0, 0), 1.0, 0.4, VERTEX),
    ("segment, point", SEGMENT, (1, 0, 5), (1, 0, -5), 0.0, INF, -1),
    ("segment, graze", SEGMENT, (1, 1, -5), (1, 1, 5), 1.0, INF, -1),
    ("doubled corner", DOUBLED, (1, 0, -5), (1, 0, 5), 1.0, 0.4, EDGE),
    # Onto the point: |z - 1| = 1 at z = 2, t = 0.3.
    ("point triangle", POINT, (1, 1, 5), (1, 1, -5), 1.0, 0.3, VERTEX),
    ("point triangle, static", POINT, (1, 1, 5), (1, 1, 5), 1.0, INF, -1),
    ("point triangle, ray", POINT, (1, 1, 5), (1, 1, -5), 0.0, INF, -1),
]


@pytest.mark.parametrize(
    "tri, c0, c1, r, expected, feature",
    [row[1:] for row in DEGENERATE],
    ids=[row[0] for row in DEGENERATE],
)
def test_sphere_triangle_degenerate(tri, c0, c1, r, expected, feature):
    for two in (False, True):
        got = tri_mod._sweep(*_rows(c0, c1, r, *tri), two)
        assert got.t[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert int(got.feature[0]) == feature
        assert not np.isnan(got.t).any()


def test_degenerate_heavy_rows_stay_finite():
    """Rows drawn from a small grid of coordinates (coincident and collinear corners, zero
    motions, centres on corners and edges, r = 0): no nan, no warning, unit normals, and
    the public function agrees with the core."""
    rng = np.random.default_rng(5)
    n = 3000

    def grid(shape):
        return rng.choice([0.0, 1.0, -1.0, 2.0], size=shape)

    def same_or_new(p):
        return np.where(rng.random((n, 1)) < 0.25, p, grid((n, 3)))

    c0 = grid((n, 3))
    c1 = same_or_new(c0)
    r = rng.choice([0.0, 0.5, 1.0, math.sqrt(2.0)], n)
    a = grid((n, 3))
    b = same_or_new(a)
    c = same_or_new(b)
    results = [
        tri_mod._sweep(c0, c1, r, a, b, c, False),
        tri_mod._sweep(c0, c1, r, a, b, c, True),
        box_mod._sweep(c0, c1, r, np.minimum(a, b), np.maximum(a, b)),
        capsule_mod._sweep(c0, c1, r, a, b, rng.choice([0.0, 0.5], n)),
        inv_mod._sweep(c0, c1, r, a, rng.choice([0.0, 0.5, 1.0, 3.0], n)),
    ]
    for got in results:
        hit = np.isfinite(got.t)
        assert not np.isnan(got.t).any()
        assert 0 < hit.sum() < n
        assert np.all((got.t[hit] >= 0) & (got.t[hit] <= 1))
        assert np.allclose(np.linalg.norm(got.normal[hit], axis=1), 1.0, rtol=0, atol=1e-12)
        assert not np.isnan(got.point[hit]).any()
    assert np.array_equal(sphere_triangle_toi(c0, c1, r, a, b, c), results[0].t)
    assert np.array_equal(sphere_triangle_toi(c0, c1, r, a, b, c, two_sided=True), results[1].t)


def test_sphere_triangle_large_coordinates():
    """Coordinates near 1e4 and motions of 1e4 a frame keep the answer to ~1e-12."""
    origin = np.array([1.0e4, -1.0e4, 1.0e4])
    tri = [np.array([p]) + origin for p in (TA, TB, TC)]
    c0 = np.array([[1, 1, 5000], [2, -0.6, 5000], [-3, -4, 0]]) + origin
    c1 = np.array([[1, 1, -5000], [2, -0.6, -5000], [9996, 13328, 0]]) + origin
    got = sphere_triangle_toi(c0, c1, 1.0, *[np.repeat(p, 3, axis=0) for p in tri])
    # z = 5000 - 10000 t reaches 1 and 0.8; the third goes 16665 along (3, 4)/5 from
    # distance 5 to distance 1 of the vertex a.
    expected = [4999 / 10000, 4999.2 / 10000, 4 / 16665]
    assert got == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------------
# The seam rule: a sphere resting on a flat mesh and moved along it touches nothing
# ----------------------------------------------------------------------------------------


def _flat_mesh(cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A cells x cells grid of unit squares in z = 0, each split along its diagonal into
    two counter-clockwise triangles (front up): 2 cells^2 triangles."""
    i, j = np.meshgrid(np.arange(cells, dtype=float), np.arange(cells, dtype=float))
    i, j, z = i.ravel(), j.ravel(), np.zeros(cells * cells)
    p00 = np.stack([i, j, z], axis=1)
    p10 = np.stack([i + 1, j, z], axis=1)
    p11 = np.stack([i + 1, j + 1, z], axis=1)
    p01 = np.stack([i, j + 1, z], axis=1)
    return (
        np.concatenate([p00, p00]),
        np.concatenate([p10, p11]),
        np.concatenate([p11, p01]),
    )


# Start and end of the centre (x, y) over the mesh; all at height r over it.
SEAM_MOTIONS = [
    ("along a grid line", (10, 20), (60, 20)),
    ("along, mid-row", (10.5, 20.5), (60.5, 20.5)),
    ("across the rows", (30.25, 5), (30.25, 65)),
    ("along the diagonal edges", (5, 5), (65, 65)),
    ("across the diagonals, through vertices", (5, 65), (65, 5)),
    ("diagonal, skew", (3.3, 7.1), (66.7, 50.2)),
    ("short, from a vertex", (35, 35), (35.001, 35.0007)),
    ("static on a vertex", (35, 35), (35, 35)),
]


@pytest.mark.parametrize(
    "start, end", [row[1:] for row in SEAM_MOTIONS], ids=[row[0] for row in SEAM_MOTIONS]
)
@pytest.mark.parametrize("offset", [(0.0, 0.0, 0.0), (1000.25, 999.75, 1000.0)])
@pytest.mark.parametrize("r", [0.5, 0.3])
def test_seams_of_a_flat_mesh(start, end, offset, r):
    """Resting exactly on a flat mesh of 10,082 triangles (centre at height r) and moved
    along it, across it or diagonally over seams and shared vertices: inf from every
    triangle, one call for all rows, at the origin and near 1e3 (where the centre's height
    above the mesh is r only up to rounding)."""
    a, b, c = _flat_mesh(71)
    assert len(a) >= 10_000
    shift = np.array(offset)
    c0 = np.array([*start, 0.0]) + shift
    c1 = np.array([*end, 0.0]) + shift
    c0[2] += r
    c1[2] = c0[2]
    n = len(a)
    rows = [np.repeat(c0[None], n, axis=0), np.repeat(c1[None], n, axis=0)]
    got = sphere_triangle_toi(*rows, r, a + shift, b + shift, c + shift)
    assert got.shape == (n,)
    assert np.all(got == INF)
    two = sphere_triangle_toi(*rows, r, a + shift, b + shift, c + shift, two_sided=True)
    assert np.all(two == INF)
    # The same mesh is solid: pressed 1e-3 into it, the sphere is stopped at once.
    pressed = rows[1] - np.array([0.0, 0.0, 1e-3])
    hit = sphere_triangle_toi(rows[0], pressed, r, a + shift, b + shift, c + shift)
    assert np.any(hit == 0.0)


# ----------------------------------------------------------------------------------------
# sphere_box_toi
# ----------------------------------------------------------------------------------------

LO, HI = (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)

# (id, c0, c1, r, lo, hi, expected t, feature, index)
BOX = [
    # Top face: z = 5 - 10t reaches 2 at t = 0.3.
    ("face +z", (0, 0, 5), (0, 0, -5), 1.0, LO, HI, 0.3, FACE, 5),
    # Face -x: x = -5 + 10t reaches -1.5 at t = 0.35.
    ("face -x", (-5, 0.5, 0), (5, 0.5, 0), 0.5, LO, HI, 0.35, FACE, 0),
    ("face -y", (0.2, -5, 0.3), (0.2, 5, 0.3), 1.0, LO, HI, 0.3, FACE, 2),
    # Toward the edge along y at x = z = 1 from distance 3 to 0: distance 1 at t = 2/3.
    ("edge along y at +x +z", (1 + 3 * S, 0, 1 + 3 * S), (1, 0, 1), 1.0, LO, HI, 2 / 3, EDGE, 7),
    (
        "edge along x at -y -z",
        (0.5, -1 - 3 * S, -1 - 3 * S),
        (0.5, -1, -1),
        1.0,
        LO,
        HI,
        2 / 3,
        EDGE,
        0,
    ),
    ("edge along z at +x -y", (1 + 3 * S, -1 - 3 * S, 0), (1, -1, 0), 1.0, LO, HI, 2 / 3, EDGE, 10),
    # Along the diagonal to a corner, from distance 2 sqrt(3) to 0: 1 at 1 - 1 / (2 sqrt 3).
    ("corner hi", (3, 3, 3), (1, 1, 1), 1.0, LO, HI, 1 - 1 / (2 * math.sqrt(3)), VERTEX, 7),
    ("corner lo", (-3, -3, -3), (-1, -1, -1), 1.0, LO, HI, 1 - 1 / (2 * math.sqrt(3)), VERTEX, 0),
    ("point through the box", (0, 0, 5), (0, 0, -5), 0.0, LO, HI, 0.4, FACE, 5),
    # Grazes: sliding on the top face at height r; parallel to an edge at distance r.
    ("graze on a face", (-5, 0, 2), (5, 0, 2), 1.0, LO, HI, INF, -1, -1),
    ("graze along an edge", (-5, 1 + S, 1 + S), (5, 1 + S, 1 + S), 1.0, LO, HI, INF, -1, -1),
    ("graze past corners", (1 + S, 1 + S, 5), (1 + S, 1 + S, -5), 1.0, LO, HI, INF, -1, -1),
    # Overlapping: approaching gives 0; receding or sliding, inf.
    ("overlapping, approaching", (0, 0, 1.5), (0, 0, 0), 1.0, LO, HI, 0.0, FACE, 5),
    ("overlapping, receding", (0, 0, 1.5), (0, 0, 3), 1.0, LO, HI, INF, -1, -1),
    ("overlapping, sliding", (0, 0, 1.5), (0.5, 0, 1.5), 1.0, LO, HI, INF, -1, -1),
    ("overlapping a corner, toward it", (1.5, 1.5, 1.5), (1, 1, 1), 1.0, LO, HI, 0.0, VERTEX, 7),
    # A centre inside the box: moving deeper past its nearest face (+z) touches at once,
    # moving out through it does not.
    ("inside, deeper", (0, 0, 0.9), (0, 0, 0), 0.5, LO, HI, 0.0, FACE, 5),
    ("inside, out", (0, 0, 0.9), (0, 0, 2), 0.5, LO, HI, INF, -1, -1),
    ("touch at t = 1", (0, 0, 5), (0, 0, 2), 1.0, LO, HI, 1.0, FACE, 5),
    ("static", (0, 0, 1.5), (0, 0, 1.5), 1.0, LO, HI, INF, -1, -1),
    # A flat box (lo = hi in z) is a plate, solid from both sides.
    ("flat box, from above", (0, 0, 5), (0, 0, -5), 1.0, (-1, -1, 0), (1, 1, 0), 0.4, FACE, 5),
    ("flat box, from below", (0, 0, -5), (0, 0, 5), 1.0, (-1, -1, 0), (1, 1, 0), 0.4, FACE, 4),
    # A box of no size is a point; its faces are offered first.
    ("point box", (0, 0, 5), (0, 0, -5), 1.0, (0, 0, 0), (0, 0, 0), 0.4, FACE, 5),
    # A box away from the origin: translated answers.
    ("offset box, face", (10, 20, 35), (10, 20, 25), 1.0, (9, 19, 29), (11, 21, 31), 0.3, FACE, 5),
]


@pytest.mark.parametrize("r", [0.0, 1e-12, 0.1])
def test_a_path_through_the_edge_two_triangles_share_hits_one_of_them(r):
    """Watertight: a point or a sphere aimed exactly at an edge two triangles share (random,
    not round, coordinates, so the aim point is on the edge only up to rounding) hits at
    least one of them, from either side, two-sided or one-sided from the front."""
    n = 20000
    # Two triangles on either side of the edge, both facing up (a fold of up to 30
    # degrees), so that a path from above meets their fronts; one-sided, only paths that
    # start in front of both count (from behind, they pass).
    first, second, c0, c1, front, _behind = shared_edges_pairs(np.random.default_rng(4), n, 50.0)
    assert front.sum() > n // 2
    for two_sided, rows in ((False, front), (True, np.ones(n, bool))):
        t1 = sphere_triangle_toi(c0, c1, r, *first, two_sided=two_sided)
        t2 = sphere_triangle_toi(c0, c1, r, *second, two_sided=two_sided)
        lost = rows & ~np.isfinite(t1) & ~np.isfinite(t2)
        assert lost.sum() == 0, (two_sided, np.flatnonzero(lost)[:5])


def _polygon(rng, sides, radius):
    """A regular convex polygon of ``sides`` corners (its circumradius ``radius``) in a
    random plane about a point that is not round, counter-clockwise about the plane's
    normal: ((sides, 3) corners, centre, in-plane axes u, w, normal)."""
    normal = rng.normal(size=3)
    normal /= np.linalg.norm(normal)
    u = np.cross(normal, rng.normal(size=3))
    u /= np.linalg.norm(u)
    w = np.cross(normal, u)
    centre = rng.uniform(-20, 20, 3)
    angle = rng.uniform(0, 2 * np.pi) + 2 * np.pi * np.arange(sides) / sides
    corners = centre + radius * (np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * w)
    return corners, centre, u, w, normal


def _fan(corners):
    """(n - 2, 3, 3) triangles (p0, p_i, p_i+1) of a convex polygon, as Panda3D fans one."""
    return np.stack([np.stack([corners[0], corners[i], corners[i + 1]]) for i in
                     range(1, len(corners) - 1)])  # fmt: skip


def _each_triangle(c0, c1, r, tris, across, two_sided=False):
    """(n, t) the kernel's t of every path against every triangle of a surface, with the
    far corners of their neighbours (``across``, see shared_edges) or without (None)."""
    n = len(c0)
    sides = None if across is None else tri_mod.neighbour_sides(*tris.transpose(1, 0, 2), 0, across)
    out = []
    for k, tri in enumerate(tris):
        near = None if sides is None else np.repeat(sides[k][None], n, axis=0)
        rows = [np.repeat(corner[None], n, axis=0) for corner in tri]
        out.append(tri_mod._sweep(c0, c1, r, *rows, two_sided, near).t)
    return np.stack(out, axis=1)


@pytest.mark.parametrize("sides", [4, 5, 8])
def test_a_sphere_rising_through_a_fanned_polygon_inside_its_border_never_touches_it(sides):
    """Spheres crossing a one-sided polygon's plane from behind, or already over it in
    front and overlapping it, moving away from the plane with any drift along it, every
    point of the path farther than r inside the polygon's border: the surface's distance is
    the height, which grows, so no triangle of its fan touches. Half the paths cross a fan
    diagonal or drift toward one, where the triangle beyond the diagonal is within r (an
    octagon's fan has obtuse corners, where a triangle's corner region reaches over its
    neighbour): its neighbour, which holds the path, decides."""
    rng = np.random.default_rng(sides)
    radius = 4.0
    corners, centre, u, w, normal = _polygon(rng, sides, radius)
    tris = _fan(corners)
    across = shared_edges(tris)
    assert np.isfinite(across[:, :, 0]).sum() == 2 * (sides - 3)  # each diagonal, twice
    n = 4000
    r = rng.uniform(0.05, 0.6, n)
    room = radius * np.cos(np.pi / sides) - r  # the path's in-plane points stay this near
    drift = rng.uniform(0.0, 0.5, n)[:, None] * room[:, None]
    # Starts: anywhere, or on a diagonal, then drifting toward or across it.
    spread = np.sqrt(rng.uniform(0, 1, n)) * (room - drift[:, 0])
    angle = rng.uniform(0, 2 * np.pi, n)
    flat = spread[:, None] * (np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * w)
    diagonal = rng.integers(2, sides - 1, n)
    along = corners[diagonal] - corners[0]
    on = corners[0] + rng.uniform(0.1, 0.9, (n, 1)) * along - centre
    near = (np.linalg.norm(on, axis=1) <= (room - drift[:, 0])) & (np.arange(n) % 2 == 0)
    flat[near] = on[near]
    way = rng.normal(size=(n, 3))
    way -= (way @ normal)[:, None] * normal
    way /= np.linalg.norm(way, axis=1)[:, None]
    h0 = rng.uniform(-1.0, 1.0, n) * np.where(rng.uniform(0, 1, n) < 0.5, 1.0, r)
    h1 = h0 + rng.uniform(1e-3, 1.0, n)
    c0 = centre + flat - 0.5 * drift * way + h0[:, None] * normal
    c1 = centre + flat + 0.5 * drift * way + h1[:, None] * normal
    for end in (c0, c1):  # both ends inside, so the whole path (the polygon is convex)
        offset = end - centre
        assert np.all(np.linalg.norm(offset - (offset @ normal)[:, None] * normal, axis=1)
                      <= room + 1e-9)  # fmt: skip
    got = _each_triangle(c0, c1, r, tris, across)
    assert np.all(got == INF), np.argwhere(got < INF)[:5]
    # The paths do reach the cases: alone, a triangle beside them would touch.
    assert np.isfinite(_each_triangle(c0, c1, r, tris, None)).any(axis=1).sum() > n // 50


def test_a_sphere_rising_through_a_mesh_past_its_shared_corners_never_touches_it():
    """Spheres rising through a flat mesh of separate triangles from behind, or over it
    and overlapping it, drifting past the corners six triangles share, every point of the
    path farther than r inside its border: no triangle touches (a first entry at a shared
    corner from a neighbour's side is the neighbour's, on either edge at the corner)."""
    rng = np.random.default_rng(5)
    a, b, c = _flat_mesh(4)
    tris = np.stack([a, b, c], axis=1)
    across = shared_edges(tris)
    n = 3000
    r = rng.uniform(0.05, 0.5, n)
    corner = rng.integers(1, 4, (n, 2)).astype(float)
    start = corner + rng.uniform(-0.3, 0.3, (n, 2))
    drift = rng.normal(size=(n, 2))
    drift *= (rng.uniform(0.0, 0.4, n) / np.linalg.norm(drift, axis=1))[:, None]
    h0 = rng.uniform(-1.0, 1.0, n) * np.where(rng.uniform(0, 1, n) < 0.5, 1.0, r)
    h1 = h0 + rng.uniform(1e-3, 1.0, n)
    c0 = np.column_stack([start - 0.5 * drift, h0])
    c1 = np.column_stack([start + 0.5 * drift, h1])
    for end in (c0, c1):  # at least r inside the border [0, 4]^2
        assert np.all(np.minimum(end[:, :2], 4.0 - end[:, :2]).min(axis=1) >= r)
    got = _each_triangle(c0, c1, r, tris, across)
    assert np.all(got == INF), np.argwhere(got < INF)[:5]
    assert np.isfinite(_each_triangle(c0, c1, r, tris, None)).any(axis=1).sum() > n // 50


# A floor and a slope of 5 degrees up from it along x = 0, and a floor with a short bevel
# of 30 degrees: concave creases. Found by an adversarial search when a shared edge was
# left to the neighbour whatever the neighbour did. (id, triangles, edges shared (each
# counted from both sides), r, c0, c1)
SLOPE = [[(-15.0, -2.0, 0.0), (0.0, -2.0, 0.0), (0.0, 2.0, 0.0)],
         [(-15.0, -2.0, 0.0), (0.0, 2.0, 0.0), (-15.0, 2.0, 0.0)],
         [(0.0, -2.0, 0.0), (2.988584094275237, -2.0, 0.2614672282429745),
          (2.988584094275237, 2.0, 0.2614672282429745)],
         [(0.0, -2.0, 0.0), (2.988584094275237, 2.0, 0.2614672282429745), (0.0, 2.0, 0.0)]]
BEVEL = [[(-2.0, -2.0, 0.0), (0.0, -2.0, 0.0), (0.0, 2.0, 0.0)],
         [(-2.0, -2.0, 0.0), (0.0, 2.0, 0.0), (-2.0, 2.0, 0.0)],
         [(0.0, -2.0, 0.0), (0.2598076211353316, -2.0, 0.15), (0.2598076211353316, 2.0, 0.15)],
         [(0.0, -2.0, 0.0), (0.2598076211353316, 2.0, 0.15), (0.0, 2.0, 0.0)]]
PIT = [[(0.0, 0.0, 0.0), (1.130622938634737, 0.8879696675983553, 0.44856997321499403),
        (-0.7553270831885308, 0.961733443817696, 0.6483905919119004)],
       [(0.0, 0.0, 0.0), (-0.7553270831885308, 0.961733443817696, 0.6483905919119004),
        (-0.5294667149064655, -0.4158330481138201, 0.7682153889434484)],
       [(0.0, 0.0, 0.0), (-0.5294667149064655, -0.4158330481138201, 0.7682153889434484),
        (0.6545081414364686, -0.8333639596414419, 0.01601256850457411)],
       [(0.0, 0.0, 0.0), (0.6545081414364686, -0.8333639596414419, 0.01601256850457411),
        (1.130622938634737, 0.8879696675983553, 0.44856997321499403)]]
CREASES = [
    # Overlapping the slope by 0.005 r and sliding down it into the crease: the slope,
    # within r and not approached, decides nothing; the floor is approached once the
    # centre is over it, and the sphere would go on through it.
    ("slope, slid down into the crease", SLOPE, 6, 1.0,
     (0.2121384453936038, 0.0, 1.0173604474255842),
     (-12.549307150982266, 0.0, -0.09912137246012875)),
    ("slope, one frame of 2 r", SLOPE, 6, 1.0, (0.2121384453936038, 0.0, 1.0173604474255842),
     (-1.7802509507898874, 0.0, 0.8430489619302679)),
    # Behind the bevel (it counts for nothing there), onto the floor's edge.
    ("bevel, under it onto the floor", BEVEL, 6, 0.5, (1.0, 0.0, 0.1), (-1.5, 0.0, -0.05)),
    ("bevel, past its end onto the floor", BEVEL, 6, 0.5, (1.5, 0.0, 1.2), (-0.3, 0.0, -0.6)),
    # A pit of four triangles round a corner: behind one wall, rising away from the next
    # but sideways into its shared edge, 0.3 r deep: an entry, never left to a wall the
    # centre is behind.
    ("pit, into a wall's edge from behind the next", PIT, 8, 0.4189601145315559,
     (0.2326811105955882, 0.928432623132676, 0.1600873834111955),
     (0.1673231172916611, -0.01912800144915916, 0.5104009643476335)),
]  # fmt: skip


def _first_approach(c0, c1, r, tris, two_sided, samples=200_001):
    """The first sampled t at which the surface's distance (each triangle counted where the
    centre is in front of it, or always if two-sided) is at most r and falling: from the
    distances alone (tests/level_oracle.py), not the kernel."""
    t = np.linspace(0.0, 1.0, samples)
    centres = c0 + t[:, None] * (c1 - c0)
    d = np.full(samples, np.inf)
    for tri in np.asarray(tris, np.float64):
        corners = (np.repeat(x[None], samples, axis=0) for x in tri)
        dist, height, _edge = level_oracle.triangle_distance(centres, *corners)
        d = np.minimum(d, dist if two_sided else np.where(height >= 0.0, dist, np.inf))
    falling = (d[:-1] <= r) & (d[1:] < d[:-1] - 1e-12 * r)  # not the rounding
    return t[np.argmax(falling)] if falling.any() else np.inf


@pytest.mark.parametrize("two_sided", [False, True], ids=["one-sided", "two-sided"])
@pytest.mark.parametrize(
    "tris, shared, r, c0, c1", [row[1:] for row in CREASES], ids=[row[0] for row in CREASES]
)
def test_a_shared_edge_is_left_to_the_neighbour_only_while_it_decides(
    tris, shared, r, c0, c1, two_sided
):
    """At a concave crease a neighbour nearer than the shared edge decides only while the
    centre is on its side and it counts: with the neighbours known, the surface is touched
    no later than its distance (densely sampled) first falls within r, and no earlier than
    its triangles alone touch. (Sliding down the slope, the floor is touched once the
    centre is back over it and nears it, a little before the slope's distance, 0.005 r
    within r, is undercut.)"""
    corners = np.asarray(tris, np.float64)
    across = shared_edges(corners)
    assert np.isfinite(across[:, :, 0]).sum() == shared
    c0, c1, r = np.array([c0]), np.array([c1]), np.array([r])
    got = _each_triangle(c0, c1, r, corners, across, two_sided).min()
    alone = _each_triangle(c0, c1, r, corners, None, two_sided).min()
    want = _first_approach(c0[0], c1[0], r[0], corners, two_sided)
    assert np.isfinite(want)
    assert alone <= got <= want + 1e-5


@pytest.mark.parametrize("fold_only", [False, True])
def test_a_sphere_pressed_into_a_shared_edge_from_outside_is_stopped_at_once(fold_only):
    """Two triangles folded (up to 30 degrees either way, or flat) about a shared edge,
    each knowing the other's far corner: a sphere overlapping the edge from the fronts'
    side (its centre on the bisector of the fronts' normals, r less a hair from the edge)
    and pressed into it touches at once. Outside a ridge the centre is beyond both
    triangles' edge lines: neither may leave it to the other."""
    rng = np.random.default_rng(11)
    n = 4000
    first, second, *_ = shared_edges_pairs(rng, n, 50.0)
    a, b, c = first
    d = second[2]
    if not fold_only:
        d[: n // 4] = (a + b - c)[: n // 4]  # a flat pair (a parallelogram's halves)
    up = [np.cross(t[1] - t[0], t[2] - t[0]) for t in (first, (b, a, d))]
    out = sum(x / np.linalg.norm(x, axis=1)[:, None] for x in up)
    out /= np.linalg.norm(out, axis=1)[:, None]
    r = rng.uniform(0.1, 2.0, n)
    aim = a + rng.uniform(0.05, 0.95, (n, 1)) * (b - a)
    c0 = aim + (r * (1 - 1e-6))[:, None] * out
    # Pressed in: toward the edge, with a random slant where it still moves in.
    push = -out + 0.3 * rng.normal(size=(n, 3))
    push = np.where(((push * out).sum(axis=1) < -0.2)[:, None], push, -out)
    c1 = c0 + rng.uniform(0.01, 1.0, (n, 1)) * push
    first_far = np.full((n, 3, 3), np.nan)
    first_far[:, 0] = d
    second_far = np.full((n, 3, 3), np.nan)
    second_far[:, 0] = c
    first_sides = tri_mod.neighbour_sides(a, b, c, 0, first_far)
    second_sides = tri_mod.neighbour_sides(b, a, d, 0, second_far)
    t1 = tri_mod._sweep(c0, c1, r, a, b, c, False, first_sides).t
    t2 = tri_mod._sweep(c0, c1, r, b, a, d, False, second_sides).t
    assert np.all(np.minimum(t1, t2) == 0.0), np.flatnonzero(np.minimum(t1, t2) != 0.0)[:5]


def _folded_pairs_with_sides(rng, n):
    """n first triangles of :func:`shared_edges_pairs` (a, b, c), the paths aimed at their
    shared edge (c0, c1), and the sides of their neighbours across it."""
    first, second, c0, c1, *_ = shared_edges_pairs(rng, n, 20.0)
    a, b, c = first
    far = np.full((n, 3, 3), np.nan)
    far[:, 0] = second[2]
    return a, b, c, c0, c1, tri_mod.neighbour_sides(a, b, c, 0, far)


@pytest.mark.parametrize("block", [5, 16384], ids=["many-blocks", "one-block"])
def test_the_deep_sweep_is_the_sweep_at_both_radii_bit_for_bit(block, monkeypatch):
    """``_sweep_deep`` culls at the shrunk radius and tests the rows it keeps at both radii
    in one exact stage: it answers as two calls of ``_sweep`` do (the first's answer where
    the second hits too, a miss elsewhere), row for row and bit for bit, on folded pairs
    with their neighbours known (the sides), one- and two-sided, points and spheres, radii
    shrunk by anything from nothing to all of them, in small blocks of the cull (batched
    across blocks) or one."""
    monkeypatch.setattr(tri_mod, "_BLOCK", block)
    rng = np.random.default_rng(5)
    n = 3000
    a, b, c, c0, c1, sides = _folded_pairs_with_sides(rng, n)
    r = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.05, 3.0, n))
    shrunk = r * np.where(rng.random(n) < 0.2, rng.choice([0.0, 1.0], n), rng.random(n))
    # A third rolls over the face at about r and sinks into it, by less and more than a
    # slop of 1e-4 r, never reaching the plane: the cull at the shrunk radius decides.
    roll = slice(0, n // 3)
    up = np.cross(b - a, c - a)[roll]
    up /= np.linalg.norm(up, axis=1)[:, None]
    w = rng.dirichlet(np.ones(3), n // 3)
    on = w[:, :1] * a[roll] + w[:, 1:2] * b[roll] + w[:, 2:] * c[roll]
    r[roll] = rng.uniform(0.2, 2.0, n // 3)
    c0[roll] = on + (r[roll] * (1 + rng.choice([0.0, 1e-9, 1e-3], n // 3)))[:, None] * up
    sink = r[roll] * rng.choice([0.0, 1e-6, 1e-3, 0.3], n // 3)
    along = rng.normal(0, 1, (n // 3, 3))
    along -= (along * up).sum(axis=1)[:, None] * up
    c1[roll] = c0[roll] + along - sink[:, None] * up
    shrunk[roll] = r[roll] * (1 - 1e-4)
    two = rng.random(n) < 0.3
    found = tri_mod._sweep_deep(c0, c1, r, shrunk, a, b, c, two, sides)
    whole = tri_mod._sweep(c0, c1, r, a, b, c, two, sides)
    deep = np.isfinite(tri_mod._sweep(c0, c1, shrunk, a, b, c, two, sides).t)
    # The full radius's answer where the shrunk one touches too, a miss elsewhere.
    for got, want, miss in zip(found, whole, (np.inf, np.nan, np.nan, -1, -1)):
        where = deep if want.ndim == 1 else deep[:, None]
        np.testing.assert_array_equal(got, np.where(where, want, miss).astype(want.dtype))
    # Not a vacuous match: many rows hit at both radii, and some only at the full one.
    hit = np.isfinite(whole.t)
    assert deep.sum() > n // 4 and (hit & ~deep).sum() > n // 100
    assert deep[roll].sum() > n // 30 and (hit & ~deep)[roll].sum() > n // 30


@pytest.mark.parametrize("deep", [False, True], ids=["one-radius", "both-radii"])
def test_a_grouped_sweep_is_exact_for_each_groups_first_contacts(deep):
    """With ``first_of`` (the rows' groups, as a body's rows) and ``within``, the sweep is
    exact, bit for bit and contacts included, for each group's earliest contacts and those
    up to ``within`` later; every other row comes back later than that, as its true time
    is. On folded pairs aimed at their shared edge, whose entries there are often the
    neighbour's (the part of the exact stage a later row skips), rows rolling onto the face
    and rows stopping short of a corner that touch at full radius only (the culls at the
    less radius drop the first, keep the second), in groups of about four, with margins from none
    to half the frame, at one radius or both (the slop rule: a row touches only where it
    does at both, and only those can tell which rows are later)."""
    rng = np.random.default_rng(11)
    n = 3000
    a, b, c, c0, c1, sides = _folded_pairs_with_sides(rng, n)
    r = rng.uniform(0.05, 3.0, n)
    shrunk = r * rng.uniform(0.5, 1.0, n)
    # A third roll over the face just above r, and sink by less than r less ``shrunk``
    # (they touch at r, not at the slop rule's less) or more.
    roll = slice(0, n // 3)
    up = np.cross(b - a, c - a)[roll]
    up /= np.linalg.norm(up, axis=1)[:, None]
    w = rng.dirichlet(np.ones(3), n // 3)
    on = w[:, :1] * a[roll] + w[:, 1:2] * b[roll] + w[:, 2:] * c[roll]
    c0[roll] = on + (r[roll] * 1.001)[:, None] * up
    along = rng.normal(0, 1, (n // 3, 3))
    along -= (along * up).sum(axis=1)[:, None] * up
    c1[roll] = c0[roll] + along - (r[roll] * rng.choice([0.01, 0.3], n // 3))[:, None] * up
    shrunk[roll] = r[roll] * 0.9
    # A sixth, of triangles without neighbours, come at corner a from outside, in the
    # plane along the corner's outer bisector, and stop between the two radii: they touch
    # it at r early in the frame, never at less, and the culls at less keep them.
    skim = slice(n // 3, n // 2)
    sides[skim] = np.nan
    shrunk[skim] = 0.5 * r[skim]
    out = -sum(u / np.linalg.norm(u, axis=1)[:, None] for u in (b - a, c - a))[skim]
    out /= np.linalg.norm(out, axis=1)[:, None]
    c1[skim] = a[skim] + (0.55 * r[skim])[:, None] * out
    c0[skim] = c1[skim] + (0.5 * r[skim])[:, None] * out
    two = rng.random(n) < 0.3
    group = rng.integers(0, n // 4, n) * 7  # (sparse numbers: any ints name groups)
    within = rng.choice([0.0, 1e-9, 0.01, 0.5], n // 4)[group // 7]  # a group's own
    if deep:
        want = tri_mod._sweep_deep(c0, c1, r, shrunk, a, b, c, two, sides)
        got = tri_mod._sweep_deep(
            c0, c1, r, shrunk, a, b, c, two, sides, first_of=group, within=within
        )
    else:
        want = tri_mod._sweep(c0, c1, r, a, b, c, two, sides)
        got = tri_mod._sweep(c0, c1, r, a, b, c, two, sides, first_of=group, within=within)
    earliest = np.full(group.max() + 1, np.inf)
    np.minimum.at(earliest, group, want.t)
    soon = earliest[group] + within
    exact = want.t <= soon
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g[exact], w[exact])
    # The rest: later than their group's earliest by more than the margin, as they are;
    # and no later than they are (asking the neighbours only ever moves a contact later,
    # which is why a row already later than a sure one need not ask).
    assert np.all(got.t[~exact] > soon[~exact])
    assert np.all(got.t[~exact] <= want.t[~exact])
    # Not vacuous: many groups touch, many rows are the earliest or near it, and many
    # later rows were not asked about their neighbours (their times are not their own).
    assert np.isfinite(earliest).sum() > n // 20 and exact.sum() > n // 10
    assert (got.t[~exact] != want.t[~exact]).sum() > n // 50
    if deep:  # (and many touch only at full radius, early, as a sure row would)
        whole = tri_mod._sweep(c0, c1, r, a, b, c, two, sides).t[skim]
        assert (whole < 0.2).sum() > n // 10 and not np.isfinite(want.t[skim]).any()


@pytest.mark.parametrize("size", [1.0, 8.0])
def test_shared_edges_finds_the_seams_of_a_mesh_built_on_powers_of_two(size):
    """A grid mesh whose corners are round (0 to 20 cells of ``size``, so on 1, 2, 4 ... 128),
    each copy of a corner a float32 ulp below, at, or above it (as Panda3D rebuilds them):
    a copy just below a power of two is of another magnitude than one at it, and every
    inner edge still gets its neighbour's far corner, and no border edge one."""
    cells = 20
    a, b, c = _flat_mesh(cells)
    tris = (np.stack([a, b, c], axis=1) * size).astype(np.float32)
    rng = np.random.default_rng(3)
    way = rng.choice(np.array([-np.inf, 0.0, np.inf], np.float32), tris.shape)
    tris = np.where(way == 0, tris, np.nextafter(tris, way)).astype(np.float64)
    whole = np.round(np.abs(tris))
    assert ((whole >= 1) & (np.abs(tris) < np.ldexp(1.0, np.frexp(whole)[1] - 1))).any()
    found = np.isfinite(shared_edges(tris)[:, :, 0])
    mid = 0.5 * (tris + tris[:, [1, 2, 0]]) / size
    border = np.isclose(mid[..., :2, None], [0.0, cells], atol=1e-3).any(axis=(-2, -1))
    assert np.array_equal(found, ~border), (found != ~border).sum()


def test_shared_edges_finds_every_seam_of_a_mesh_and_no_border():
    """A grid mesh of separate triangles whose shared corners are a few float32 ulps apart
    (as Panda3D rebuilds them), far from the origin: every inner edge, and no border edge,
    gets its neighbour's far corner; a neighbour wound the other way shares nothing."""
    a, b, c = _flat_mesh(40)
    tris = np.stack([a, b, c], axis=1) + np.array([700.25, -300.5, 41.0])
    rng = np.random.default_rng(2)
    ulp = np.spacing(np.abs(tris).astype(np.float32)).astype(np.float64)
    tris += rng.integers(-3, 4, tris.shape) * ulp
    across = shared_edges(tris)
    found = np.isfinite(across[:, :, 0])
    start, end = tris, tris[:, [1, 2, 0]]
    mid = 0.5 * (start + end) - np.array([700.25, -300.5, 41.0])
    border = np.isclose(mid[..., :2, None], [0.0, 40.0], atol=1e-3).any(axis=(-2, -1))
    assert np.array_equal(found, ~border)
    # Every far corner is the neighbour's: with the edge's ends, another triangle's corners.
    def key(*points):
        return frozenset(tuple(np.round(q, 3)) for q in points)

    triangle = {key(*tri): i for i, tri in enumerate(tris)}
    for t, e in np.argwhere(found):
        o = triangle.get(key(start[t, e], end[t, e], across[t, e]))
        assert o is not None and o != t, (t, e)
    # Two neighbours, one of them turned over: their shared edge runs the same way in both.
    pair = tris[[t, o]]
    assert np.isfinite(shared_edges(pair)[:, :, 0]).sum() == 2
    pair[1] = pair[1, [0, 2, 1]]
    assert not np.isfinite(shared_edges(pair)).any()


@pytest.mark.parametrize(
    "offset, cell",
    [((700.25, -300.5, 41.0), 1.0), ((3000.5, 2000.25, 10.0), 0.2)],
    ids=["unit-cells-at-700", "fine-cells-at-3000"],
)
def test_welded_makes_every_copy_of_a_shared_corner_one_and_moves_it_no_further(offset, cell):
    """A mesh of the test above, its copies of each corner a few float32 ulps apart, far
    from the origin (at 3,000 its cells, 0.2, are finer than the cells corners are
    matched in): welded, every copy of a corner is the same float64 value (the one of some
    copy, so moved no more than the copies spread; at 3,000, where it is welded), no
    corner is joined to a distinct one, and the seams are the same. A pair sharing an edge wound the
    same way (no seam), and a triangle smaller than the weld, keep their corners."""
    a, b, c = _flat_mesh(12)
    exact = np.stack([a, b, c], axis=1) * cell + np.array(offset)
    rng = np.random.default_rng(6)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    tris = exact + rng.integers(-3, 4, exact.shape) * ulp
    out = welded(tris)
    across = shared_edges(tris)
    flat_exact, flat_in, flat_out = (x.reshape(-1, 3) for x in (exact, tris, out))
    _, corner = np.unique(flat_exact, axis=0, return_inverse=True)
    corner = corner.ravel()
    for k in range(corner.max() + 1):
        copies = np.flatnonzero(corner == k)
        # Each copy is some copy's value; at 3,000 an edge first matched to a distinct one
        # (in the same cell) is not welded, so there a copy may keep its own.
        values = {tuple(q) for q in flat_out[copies]}
        assert values <= {tuple(q) for q in flat_in[copies]}, k
        assert len(values) == 1 or cell < 1.0, k
    # No corner is joined to a distinct one: at 3,000, a fine mesh welded by cells took
    # whole rows of corners a cell over and left holes.
    assert len({tuple(q) for q in flat_out}) >= corner.max() + 1
    _, joined = np.unique(flat_out, axis=0, return_inverse=True)
    pairs = np.unique(np.stack([joined.ravel(), corner]), axis=1)
    assert len(np.unique(pairs[0])) == pairs.shape[1]  # each welded value, one corner's
    if cell == 1.0:  # (at 3,000 the loose cells may match other edges once welded)
        assert np.array_equal(np.isfinite(shared_edges(out)), np.isfinite(across))
    assert len({tuple(q) for q in flat_in}) > corner.max() + 1  # there was a crack to weld
    # The same edge, run the same way in both: no seam, nothing welded.
    pair = tris[:2].copy()
    pair[1] = pair[1, [0, 2, 1]]
    assert np.array_equal(welded(pair), pair)
    # A sliver whose two corners are copies of one corner by the weld's measure, beside a
    # triangle it shares an edge with: it keeps its own corners (welding would flatten it).
    sliver = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1e-7, 0.0]],
                       [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.5, -1.0, 0.0]]])  # fmt: skip
    sliver[1, 0, 0] += 1e-12
    out = welded(sliver)
    assert np.array_equal(out[0], sliver[0]) and len({tuple(q) for q in out[0]}) == 3


@pytest.mark.parametrize(
    "center, half",
    [((1000.0, 1000.0, 0.02), (10.0, 10.0, 0.02)), ((0.0, 0.0, 5e-4), (1.0, 1.0, 5e-4)),
     ((500.0, 0.0, 0.0), (2.0, 2.0, 0.01)), ((0.0, 0.0, 0.0), (0.5, 0.5, 0.5)),
     ((1000.0, 1000.0, 5e-4), (10.0, 10.0, 5e-4))],
    ids=["slab-at-1000", "sheet", "plate-at-500", "cube", "sheet-at-1000"],
)  # fmt: skip
def test_welded_leaves_a_box_as_it_is_however_thin(center, half):
    """A box's 12 triangles (as a CollisionBox is read, or a slab modelled of polygons):
    the edges of its top and bottom faces, closer than the cells corners are matched in
    (at 1,000, a 1 mm sheet's closer than Panda3D's own rebuild error), are folded onto
    each other, no seam. Welded, not one coordinate moves. (Welding them as seams warped a
    4 cm slab at 1,000 by its thickness: points fell through it.)"""
    from panda3d_ccd._level import box_triangles

    lo = (np.array(center) - half).astype(np.float32).astype(np.float64)
    hi = (np.array(center) + half).astype(np.float32).astype(np.float64)
    tris = np.asarray(box_triangles(lo[None], hi[None]), np.float64).reshape(-1, 3, 3)
    assert np.array_equal(welded(tris), tris)


@pytest.mark.parametrize(
    "c0, c1, r, lo, hi, expected", [row[1:7] for row in BOX], ids=[row[0] for row in BOX]
)
def test_sphere_box_toi(c0, c1, r, lo, hi, expected):
    got = _one(sphere_box_toi([c0], [c1], r, lo, hi))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row", BOX, ids=[row[0] for row in BOX])
def test_sphere_box_sweep(row):
    _, c0, c1, r, lo, hi, expected, feature, index = row
    c0_, c1_, r_, lo_, hi_ = _rows(c0, c1, r, lo, hi)
    got = box_mod._sweep(c0_, c1_, r_, lo_, hi_)
    assert got.t[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert (int(got.feature[0]), int(got.index[0])) == (feature, index)
    if not row[0].startswith("inside"):
        _check_contact(got, c0_, c1_, r_, touching=expected > 0)
    if np.isfinite(expected):
        # On the box's surface: inside or on it, and on at least one face plane.
        p = got.point[0]
        assert np.all(p >= lo_[0] - 1e-12) and np.all(p <= hi_[0] + 1e-12)
        assert np.isclose(p, lo_[0], atol=1e-12).any() or np.isclose(p, hi_[0], atol=1e-12).any()


def test_sphere_box_normals():
    """Face normals are the axes; edge and corner normals point from the contact to the
    centre; a centre inside the box touches through its nearest face."""
    c0 = [(0, 0, 5), (-5, 0.5, 0), (1 + 3 * S, 0, 1 + 3 * S), (3, 3, 3), (0, 0, 0.9)]
    c1 = [(0, 0, -5), (5, 0.5, 0), (1, 0, 1), (1, 1, 1), (0, 0, 0)]
    r = [1.0, 0.5, 1.0, 1.0, 0.5]
    got = box_mod._sweep(*_rows_many(c0, c1, r, [LO] * 5, [HI] * 5))
    s3 = 1 / math.sqrt(3)
    assert np.allclose(got.normal, [(0, 0, 1), (-1, 0, 0), (S, 0, S), (s3, s3, s3), (0, 0, 1)])
    assert np.allclose(got.point, [(0, 0, 1), (-1, 0.5, 0), (1, 0, 1), (1, 1, 1), (0, 0, 1)])


def test_sphere_box_large_coordinates():
    origin = np.array([1.0e4, 1.0e4, -1.0e4])
    got = sphere_box_toi(
        origin + [[0, 0, 5000]], origin + [[0, 0, -5000]], 1.0, origin - 1, origin + 1
    )
    assert _one(got) == pytest.approx(4998 / 10000, rel=1e-12)


# ----------------------------------------------------------------------------------------
# sphere_capsule_toi
# ----------------------------------------------------------------------------------------

CA, CB = (0.0, 0.0, 0.0), (2.0, 0.0, 0.0)

# (id, c0, c1, r, a, b, radius, expected t, feature, index)
CAPSULE = [
    # Body: y = 5 - 10t reaches r + radius = 1 at t = 0.4.
    ("body", (1, 5, 0), (1, -5, 0), 0.5, CA, CB, 0.5, 0.4, EDGE, 0),
    # Diagonally onto the body: sqrt(2) |5 - 10t| = 1 at t = (5 - 1/sqrt 2) / 10.
    ("body, diagonally", (1, 5, 5), (1, -5, -5), 0.5, CA, CB, 0.5, (5 - S) / 10, EDGE, 0),
    # Caps along the axis: x = 9 - 8t reaches 3 at t = 0.75; x = -5 + 5t reaches -1 at 0.8.
    ("cap at b", (9, 0, 0), (1, 0, 0), 0.5, CA, CB, 0.5, 0.75, VERTEX, 1),
    ("cap at a", (-5, 0, 0), (0, 0, 0), 0.5, CA, CB, 0.5, 0.8, VERTEX, 0),
    ("point into the body", (1, 5, 0), (1, -5, 0), 0.0, CA, CB, 0.5, 0.45, EDGE, 0),
    ("graze along the body", (-3, 1, 0), (5, 1, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
    ("graze past a cap", (3, -5, 0), (3, 5, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
    ("overlapping, approaching", (1, 0.8, 0), (1, 0, 0), 0.5, CA, CB, 0.5, 0.0, EDGE, 0),
    ("overlapping, receding", (1, 0.8, 0), (1, 2, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
    ("overlapping, along", (1, 0.8, 0), (1.5, 0.8, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
    ("centre on the axis", (1, 0, 0), (1, 1, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
    # A zero-length capsule is a sphere: |x| = 1 at t = 0.4.
    ("zero length", (-5, 0, 0), (5, 0, 0), 0.5, CA, CA, 0.5, 0.4, VERTEX, 0),
    ("zero length and radius, point", (-5, 0, 0), (5, 0, 0), 0.0, CA, CA, 0.0, INF, -1, -1),
    ("touch at t = 1", (1, 3, 0), (1, 1, 0), 0.5, CA, CB, 0.5, 1.0, EDGE, 0),
    ("static", (1, 3, 0), (1, 3, 0), 0.5, CA, CB, 0.5, INF, -1, -1),
]


@pytest.mark.parametrize(
    "c0, c1, r, a, b, radius, expected",
    [row[1:8] for row in CAPSULE],
    ids=[row[0] for row in CAPSULE],
)
def test_sphere_capsule_toi(c0, c1, r, a, b, radius, expected):
    got = _one(sphere_capsule_toi([c0], [c1], r, a, b, radius))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row", CAPSULE, ids=[row[0] for row in CAPSULE])
def test_sphere_capsule_sweep(row):
    _, c0, c1, r, a, b, radius, expected, feature, index = row
    c0_, c1_, r_, a_, b_, radius_ = _rows(c0, c1, r, a, b, radius)
    got = capsule_mod._sweep(c0_, c1_, r_, a_, b_, radius_)
    assert got.t[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert (int(got.feature[0]), int(got.index[0])) == (feature, index)
    # The centre is r from the capsule's surface: r + radius from its segment.
    _check_contact(got, c0_, c1_, r_, touching=expected > 0)
    if np.isfinite(expected):
        # On the capsule's surface: radius from its segment.
        p = got.point[0]
        e = b_[0] - a_[0]
        u = np.clip(np.dot(p - a_[0], e) / max(np.dot(e, e), 1e-300), 0, 1)
        assert np.linalg.norm(p - a_[0] - u * e) == pytest.approx(radius, abs=1e-12)


# ----------------------------------------------------------------------------------------
# sphere_inv_sphere_toi
# ----------------------------------------------------------------------------------------

# (id, c0, c1, r, center, radius, expected t)
INV_SPHERE = [
    # Out to the wall: |x| = radius - r = 4 at t = 0.5.
    ("out to the wall", (0, 0, 0), (8, 0, 0), 1.0, (0, 0, 0), 5.0, 0.5),
    ("point to the wall", (0, 0, 0), (10, 0, 0), 0.0, (0, 0, 0), 5.0, 0.5),
    # Off-centre: |(-3 + 6t, 3, 0)| = 4 at 6t - 3 = sqrt(7).
    ("off-centre chord", (-3, 3, 0), (3, 3, 0), 1.0, (0, 0, 0), 5.0, (3 + math.sqrt(7)) / 6),
    ("staying inside", (0, 0, 0), (1, 1, 0), 1.0, (0, 0, 0), 5.0, INF),
    ("static, touching the wall", (4, 0, 0), (4, 0, 0), 1.0, (0, 0, 0), 5.0, INF),
    # Overlapping the wall: outward gives 0; inward crosses the room to the far wall at
    # x = -4, t = 8.5 / 9.
    ("overlapping, outward", (4.5, 0, 0), (5, 0, 0), 1.0, (0, 0, 0), 5.0, 0.0),
    ("overlapping, inward", (4.5, 0, 0), (-4.5, 0, 0), 1.0, (0, 0, 0), 5.0, 8.5 / 9),
    ("overlapping, inward, short", (4.5, 0, 0), (3, 0, 0), 1.0, (0, 0, 0), 5.0, INF),
    # Touching the wall and moving tangentially: the straight path goes into the wall.
    ("touching, tangential", (4, 0, 0), (4, 1, 0), 1.0, (0, 0, 0), 5.0, 0.0),
    ("touch at t = 1", (0, 0, 0), (4, 0, 0), 1.0, (0, 0, 0), 5.0, 1.0),
    # Larger than the room: always overlapping; touching once it moves off the centre.
    ("larger than the room", (0, 0, 0), (1, 0, 0), 6.0, (0, 0, 0), 5.0, 0.0),
    ("translated room", (10, 10, 10), (18, 10, 10), 1.0, (10, 10, 10), 5.0, 0.5),
]


@pytest.mark.parametrize(
    "c0, c1, r, center, radius, expected",
    [row[1:] for row in INV_SPHERE],
    ids=[row[0] for row in INV_SPHERE],
)
def test_sphere_inv_sphere_toi(c0, c1, r, center, radius, expected):
    got = _one(sphere_inv_sphere_toi([c0], [c1], r, center, radius))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row", INV_SPHERE, ids=[row[0] for row in INV_SPHERE])
def test_sphere_inv_sphere_sweep(row):
    """The wall is FACE 0; the normal points inward (out of the solid, toward the centre)
    and the point is on the wall."""
    _, c0, c1, r, center, radius, expected = row
    c0_, c1_, r_, center_, radius_ = _rows(c0, c1, r, center, radius)
    got = inv_mod._sweep(c0_, c1_, r_, center_, radius_)
    assert got.t[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    hit = bool(np.isfinite(expected))
    assert (int(got.feature[0]), int(got.index[0])) == ((FACE, 0) if hit else (-1, -1))
    if hit:
        p = got.point[0]
        assert np.linalg.norm(p - center_[0]) == pytest.approx(radius, rel=1e-12)
        out = (p - center_[0]) / radius
        assert np.allclose(got.normal[0], -out, atol=1e-12)
    if hit and expected > 0:
        _check_contact(got, c0_, c1_, r_)


# ----------------------------------------------------------------------------------------
# Shapes of the answers, and bad input
# ----------------------------------------------------------------------------------------

Z3 = np.zeros((0, 3))

EMPTY = [
    (sphere_triangle_toi, (Z3, Z3, 1.0, Z3, Z3, Z3)),
    (sphere_box_toi, (Z3, Z3, 1.0, Z3, Z3)),
    (sphere_capsule_toi, (Z3, Z3, 1.0, Z3, Z3, 0.5)),
    (sphere_inv_sphere_toi, (Z3, Z3, 1.0, Z3, 5.0)),
]


@pytest.mark.parametrize("func, args", EMPTY, ids=[f.__name__ for f, _ in EMPTY])
def test_empty_input(func, args):
    got = func(*args)
    assert got.shape == (0,)
    assert got.dtype == np.float64


def test_rows_broadcast():
    """One obstacle against many spheres (a (3,) point is one row), and per-row radii."""
    c0 = [(1, 1, 5), (1, 1, 5), (50, 50, 5)]
    c1 = [(1, 1, -5), (1, 1, -5), (50, 50, -5)]
    got = sphere_triangle_toi(c0, c1, [1.0, 0.0, 1.0], TA, TB, TC, two_sided=[False, True, True])
    assert got.tolist() == pytest.approx([0.4, 0.5, INF])


P1 = [(0.0, 0.0, 1.0)]
P2 = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0)]

ERRORS = [
    (
        "negative r",
        sphere_triangle_toi,
        (P1, P1, -1.0, TA, TB, TC),
        "r must be finite and >= 0, got -1.0",
    ),
    ("nan r", sphere_box_toi, (P1, P1, np.nan, LO, HI), "r must be finite and >= 0, got nan"),
    (
        "inf r",
        sphere_capsule_toi,
        (P1, P1, [np.inf], CA, CB, 0.5),
        "r must be finite and >= 0, got inf",
    ),
    (
        "negative capsule radius",
        sphere_capsule_toi,
        (P1, P1, 1.0, CA, CB, -0.5),
        "radius must be finite and >= 0, got -0.5",
    ),
    (
        "nan room radius",
        sphere_inv_sphere_toi,
        (P1, P1, 1.0, CA, np.nan),
        "radius must be finite and >= 0, got nan",
    ),
    (
        "triangle corner shape",
        sphere_triangle_toi,
        (P1, P1, 1.0, (0, 0), TB, TC),
        "a must have shape (n, 3), got (2,)",
    ),
    (
        "centre shape",
        sphere_box_toi,
        ([[0, 0, 0, 0]], P1, 1.0, LO, HI),
        "c0 must have shape (n, 3), got (1, 4)",
    ),
    (
        "row counts",
        sphere_triangle_toi,
        (P2, P1, 1.0, TA, TB, [TC] * 3),
        "row counts do not match (c0: (2, 3), c1: (1, 3), r: (), a: (1, 3), b: (1, 3), c: (3, 3))",
    ),
    (
        "radius rows",
        sphere_capsule_toi,
        (P2, P2, [1.0, 1.0, 1.0], CA, CB, 0.5),
        "row counts do not match (c0: (2, 3), c1: (2, 3), r: (3,), a: (1, 3), b: (1, 3),"
        " radius: ())",
    ),
    (
        "inf centre",
        sphere_triangle_toi,
        ([(np.inf, 0, 0)], P1, 1.0, TA, TB, TC),
        "c0 must be finite, got [inf, 0.0, 0.0] in row 0",
    ),
    (
        "nan corner",
        sphere_triangle_toi,
        (P1, P1, 1.0, TA, [TB, (np.nan, 0, 0)], TC),
        "b must be finite, got [nan, 0.0, 0.0] in row 1",
    ),
    (
        "nan box corner",
        sphere_box_toi,
        (P1, P1, 1.0, LO, (1, np.nan, 1)),
        "hi must be finite, got [1.0, nan, 1.0] in row 0",
    ),
    (
        "inf room centre",
        sphere_inv_sphere_toi,
        (P1, P1, 1.0, (0, -np.inf, 0), 5.0),
        "center must be finite, got [0.0, -inf, 0.0] in row 0",
    ),
    (
        "lo above hi",
        sphere_box_toi,
        (P1, P1, 1.0, (0, 2, 0), (1, 1, 1)),
        "lo must be <= hi, got lo [0.0, 2.0, 0.0] and hi [1.0, 1.0, 1.0] in row 0",
    ),
    (
        "two_sided dtype",
        sphere_triangle_toi,
        (P1, P1, 1.0, TA, TB, TC),
        "two_sided must be a boolean array, got dtype int64",
    ),
]


@pytest.mark.parametrize(
    "func, args, message", [row[1:] for row in ERRORS], ids=[row[0] for row in ERRORS]
)
def test_bad_input(func, args, message):
    kwargs = {"two_sided": 1} if message.startswith("two_sided") else {}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        func(*args, **kwargs)


def test_coordinates_check_sums_then_looks():
    """The finiteness check sums first: +inf and -inf together (a nan sum) are found, and
    huge finite coordinates whose sum overflows are accepted."""
    from panda3d_ccd import _check

    with pytest.raises(ValueError, match=re.escape("c0 must be finite, got [inf, -inf, 0.0]")):
        _check.coordinates("c0", [(np.inf, -np.inf, 0.0)])
    huge = _check.coordinates("c0", [(1e308, 1e308, 1e308)])
    assert huge.tolist() == [[1e308, 1e308, 1e308]]


def test_capsule_and_room_large_coordinates():
    """Coordinates near 1e4 and motions of 1e4 a frame keep the answers to ~1e-12."""
    o = np.array([1.0e4, -1.0e4, 1.0e4])
    # Onto the body: y = 5000 - 10000 t reaches 1 at t = 4999 / 10000.
    got = sphere_capsule_toi(o + [[1, 5000, 0]], o + [[1, -5000, 0]], 0.5, o, o + [2, 0, 0], 0.5)
    assert _one(got) == pytest.approx(4999 / 10000, rel=1e-12)
    # A room of radius 1e4 crossed from its centre: |x| = 1e4 - 1 at t = 9999 / 20000.
    got = sphere_inv_sphere_toi([o], [o + [20000, 0, 0]], 1.0, o, 1.0e4)
    assert _one(got) == pytest.approx(9999 / 20000, rel=1e-12)


def test_docstring_examples():
    """The Examples sections run here too, so plain ``pytest`` checks them."""
    modules = (sweep, tri_mod, box_mod, capsule_mod, inv_mod)
    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS) for m in modules]
    assert sum(r.failed for r in results) == 0
    assert sum(r.attempted for r in results) >= 16


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sphere_triangle_toi([["x", 0, 0]], [[0, 0, 0]], 1.0, TA, TB, TC), "c0"),
        (lambda: sphere_triangle_toi([[0, 0, 0]], [[0, 0, 0]], "big", TA, TB, TC), "r"),
    ],
    ids=["point", "radius"],
)
def test_non_numeric_input_is_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=f"^{message} must be numbers, got "):
        call()


def test_complex_input_is_refused_naming_the_argument():
    """numpy would drop the imaginary parts, with a ComplexWarning, and answer."""
    with pytest.raises(ValueError, match=r"^c1 must be real numbers, got "):
        sphere_triangle_toi([[0, 0, 0]], [[1j, 0, 0]], 1.0, TA, TB, TC)


@pytest.mark.parametrize("seed", range(6))
def test_a_few_rows_skipped_by_the_plane_cull_are_what_the_kernel_finds(seed, monkeypatch):
    """Pieces._sweep skips the kernel for a call of few rows none of which the kernel's
    first cull lets near its plane slab at the radius less the slop. Calls of balls
    rolling on triangles (at r, within rounding, up and down), pressed into them (by less
    and more than the slop) and passing by: the same times and contacts as the kernel's,
    bit for bit, whichever calls are skipped."""
    from panda3d_ccd import _pieces

    rng = np.random.default_rng(seed)
    a = rng.uniform(-50, 50, (8, 3))
    b = a + rng.normal(0, 3, (8, 3))
    c = a + rng.normal(0, 3, (8, 3))
    table = _pieces.Pieces(_pieces.TRIANGLE, (a, b, c, rng.random(8) < 0.3), np.ones(8, np.int64))
    few = _pieces._CULL_FIRST
    kernel_calls = []
    sweep, deep = table.spec.sweep, table.spec.deep
    table.spec = table.spec._replace(
        sweep=lambda *args: kernel_calls.append(len(args[0])) or sweep(*args),
        deep=lambda *args, **kw: kernel_calls.append(len(args[0])) or deep(*args, **kw),
    )
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    skipped = 0
    for call in range(40):
        p = int(rng.integers(1, 33))
        k = rng.integers(0, 8, p)
        r = rng.uniform(0.05, 1.0, p)
        w = rng.random((p, 2))
        on = a[k] + (w[:, :1] * (b[k] - a[k]) + (1 - w[:, :1]) * w[:, 1:] * (c[k] - a[k]))
        height = r * (1 + rng.choice([0.0, 1e-9, -1e-9, 1e-3, 0.5], p))
        c0 = on + height[:, None] * n[k]
        along = rng.normal(0, 2, (p, 3))
        along -= (along * n[k]).sum(axis=1)[:, None] * n[k]
        press = rng.choice([0.0, 0.0, 0.0, 1e-8, 1e-3, 0.3], p) if call % 2 else np.zeros(p)
        c1 = c0 + along - press[:, None] * n[k]
        results = []
        for first in (few, 0):
            monkeypatch.setattr(_pieces, "_CULL_FIRST", first)
            kernel_calls.clear()
            t, extra = table._sweep(c0, c1, r, np.zeros(p), k, np.full((p, 8), np.nan))
            results.append((t, extra))
            skipped += first > 0 and not kernel_calls
        (t, extra), (t_kernel, extra_kernel) = results
        np.testing.assert_array_equal(t, t_kernel)
        np.testing.assert_array_equal(extra, extra_kernel)
    assert 5 <= skipped < 40  # both kinds of call are met


def test_a_ball_rolling_beside_a_triangle_is_culled_before_the_exact_stage():
    """A ball rolls on a triangle at its radius over the plane, within r of the line of a
    neighbour's edge but beside it (across the line and over the plane, farther than r):
    the cheap culls drop the neighbour's row; the same ball pressed in by a little more
    than its distance beyond r keeps it (it touches the edge), and the kernel agrees."""
    r = 0.5
    a, b, c = np.array([0.0, 0, 0]), np.array([2.0, 0, 0]), np.array([0.0, 2, 0])
    # 0.3 beyond the edge a-b's line (y = 0), at height r and then 0.39 (0.3^2 + 0.39^2
    # < 0.25): rolling along it.
    rows = []
    for height in (r, r - 0.002, 0.39):
        c0, c1 = [1.0, -0.3, height], [1.2, -0.3, height - 0.001]
        rows.append((c0, c1))
    c0, c1 = (np.array([row[i] for row in rows]) for i in (0, 1))
    k = len(rows)
    cols = [np.ascontiguousarray(x.T) for x in (c0, c1, np.tile(a, (k, 1)), np.tile(b, (k, 1)),
                                                np.tile(c, (k, 1)))]
    kept = _culled(cols, np.full(k, r), np.zeros(k, bool))
    assert kept.tolist() == [False, False, True]
    t = sphere_triangle_toi(c0, c1, r, a, b, c)
    assert np.isinf(t[:2]).all() and np.isfinite(t[2])


def _culled(cols, r, two):
    """The kernel's culls of rows given as (3, k) columns, as its exact stage's batches
    make them: the plane slab's, then the three separations on what that one found."""
    return tri_mod._culled(*cols, r, two, tri_mod._cull_plane(*cols, r, two)[1])[0]


@pytest.mark.parametrize("seed", range(4))
def test_the_culls_drop_only_rows_that_never_come_within_r(seed):
    """Rows near a triangle's edges and corners (beside it within r of an edge's line, at
    about r over its plane, pressed in, passing over, slow and fast, slivers among the
    triangles): every row the cheap culls drop stays farther than r from the triangle over
    its whole path, or only moves away from it (an independent oracle: the distance
    minimised along the path, against the distance at the start), where the triangle
    counts (two-sided); and the kernel finds no contact for it."""
    rng = np.random.default_rng(seed)
    k = 4000
    a = rng.uniform(-20, 20, (k, 3))
    b = a + rng.normal(0, 2, (k, 3))
    c = a + rng.normal(0, 2, (k, 3))
    sliver = rng.random(k) < 0.05
    c[sliver] = a[sliver] + (b - a)[sliver] * rng.uniform(0.2, 0.8, (sliver.sum(), 1))
    c[sliver] += rng.normal(0, 1e-9, (sliver.sum(), 3))
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
    r = rng.uniform(0.1, 1.0, k)
    # A point of the triangle's boundary, moved out across the edge in the plane by up to
    # 1.2 r, and up off the plane by about r.
    e = rng.integers(0, 3, k)
    p, q = np.choose(e[:, None], [a, b, c]), np.choose(e[:, None], [b, c, a])
    on = p + rng.random((k, 1)) * (q - p)
    out = np.cross(q - p, n)
    out /= np.maximum(np.linalg.norm(out, axis=1), 1e-300)[:, None]
    across = rng.uniform(-0.2, 1.2, k) * r
    height = r * rng.choice([1.0, 1.0 - 1e-6, 0.9, 0.7, 1.1, -1.0, 0.0], k)
    c0 = on + across[:, None] * out + height[:, None] * n
    motion = rng.normal(0, 1, (k, 3)) * rng.choice([0.01, 0.3, 3.0, 50.0], k)[:, None]
    c1 = c0 + motion
    two = np.ones(k, bool)
    cols = [np.ascontiguousarray(x.T) for x in (c0, c1, a, b, c)]
    dropped = np.flatnonzero(~_culled(cols, r, two))
    assert len(dropped) > k // 10  # (the case is met)
    d = dropped

    def distance(x):
        return level_oracle.triangle_distance(x, a[d], b[d], c[d])[0]

    flat = np.linalg.norm(np.cross(b[d] - a[d], c[d] - a[d]), axis=1) <= 1e-6
    least = level_oracle.min_on_segment(distance, c0[d], c1[d])
    away = distance(c0[d]) <= least + 1e-9 * (1 + np.abs(c0[d]).max(axis=1))
    # (A sliver's oracle normal is noise: its rows are checked by the kernel alone.)
    clear = (least > r[d] * (1 - 1e-9)) | away
    assert clear[~flat].all()
    assert (least <= r[d]).any() and (least > r[d]).any()  # (both kinds are dropped)
    t = sphere_triangle_toi(c0[d], c1[d], r[d], a[d], b[d], c[d], two_sided=True)
    assert np.isinf(t).all()


# Rows a reviewer found (c0, c1, a, b, c, (r, two_sided)): a sphere coming within r of the
# edge a-b of a sliver (|e1 x e2| 1e-12 to 3e-12 of its longest edge squared), whose
# computed normal is off square to its edges by up to 3e-5: the cull's test in space,
# asked of it, dropped each contact.
_SLIVER_ROWS = [
    [[-4.2191543419430405e-02, -1.1938323991779524e-02, 1.4509946347527473e-02],
     [-4.1373875109916601e-02, -1.3787159163141258e-02, 1.3784188161293402e-02],
     [-4.5940876780507671e-02, -3.5692397143023912e-03, 1.7785782269458750e-02],
     [-4.0497372714505958e-02, -1.5868037724909155e-02, 1.2958732698091068e-02],
     [-4.8647782109998670e-02, 2.5466153447934545e-03, 2.0186141679828216e-02],
     [4.3146703243697728e-05, 1.0]],
    [[-1.2189822092056937e-01, 8.2518119376900838e+00, -3.3887259047428082e+00],
     [-1.1538463637076851e-01, 8.2680140504949673e+00, -3.3710743496373161e+00],
     [-1.0804539343101591e-01, 8.2859517230016504e+00, -3.3511758566849359e+00],
     [-1.2065539754314723e-01, 8.2544867545527403e+00, -3.3853455479569412e+00],
     [-1.1662306627958823e-01, 8.2645483829913573e+00, -3.3744190238130956e+00],
     [2.9106104815568616e-04, 1.0]],
    [[2.386229511586258, 14.52469233488325, 26.804225936376447],
     [3.416883909066854, 13.755038374940915, 27.472906967307004],
     [4.907289847087333, 12.641733455861553, 28.440295515867287],
     [2.8730120958241683, 14.160769874709397, 27.12058259688463],
     [2.517006583520484, 14.426606404733606, 26.889628355992254],
     [0.0004949352441084911, 0.0]],
    [[10.617777025309842, 8.728649416191228, 16.27913066456495],
     [10.581159399480406, 8.771819796958738, 16.318197003814806],
     [19.975457210282617, -2.7364165224836583, 5.190760085186455],
     [8.028007755804826, 11.896369264822441, 19.334406900190405],
     [3.793898168626253, 17.08214710171551, 24.34683660781709],
     [0.00424322112436913, 0.0]],
    [[2.5733420195426113, 1.7600937425317564, -1.8432850565250993],
     [-15.143532353154647, -9.30647405637301, 12.708784727750949],
     [0.08976866699428518, 0.20606824748262276, 0.20637590599154637],
     [-17.432555868626444, -10.737646241308198, 14.593851612407313],
     [-12.314587809240914, -7.541176441296353, 10.391518698672986],
     [0.0043671481721208865, 1.0]],
]  # fmt: skip


def test_a_sphere_grazing_into_a_slivers_edge_is_a_contact():
    """The reviewer's rows: each path comes within r of the sliver's edge a-b (an
    independent oracle: the least distance of the path to that segment, an upper bound on
    its distance to the triangle), and the kernel reports each contact."""
    for c0, c1, a, b, c, (r, two) in _SLIVER_ROWS:
        c0, c1, a, b, c = (np.array(x) for x in (c0, c1, a, b, c))

        def to_edge(q, a=a, b=b):
            ends = np.tile(a, (len(q), 1)), np.tile(b, (len(q), 1))
            return level_oracle.segment_distance(q, *ends)

        least = level_oracle.min_on_segment(to_edge, c0[None], c1[None])[0]
        assert least < r
        t = sphere_triangle_toi(c0[None], c1[None], r, a, b, c, two_sided=bool(two))
        assert np.isfinite(t[0])


@pytest.mark.parametrize("seed", range(2))
def test_the_culls_keep_every_contact_of_slivers(seed):
    """Spheres passing near the long edges of slivers of every thinness (|e1 x e2| from
    1e-12 to 1e-3 of the longest edge squared) and every size: the kernel's answers are
    those of the kernel with the cull's test in space never asked, row for row."""
    rng = np.random.default_rng(seed)
    n = 60_000
    size = 10.0 ** rng.uniform(-2, 2, n)
    thin = 10.0 ** rng.uniform(-11.95, -3, n)
    along = rng.normal(size=(n, 3))
    along /= np.linalg.norm(along, axis=1)[:, None]

    def square(v):
        v = v - (v * along).sum(1)[:, None] * along
        return v / np.linalg.norm(v, axis=1)[:, None]

    up, out = square(rng.normal(size=(n, 3))), square(rng.normal(size=(n, 3)))
    a = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-2, 2, n)[:, None]
    b = a + size[:, None] * along
    c = a + (size * rng.uniform(-0.5, 1.5, n))[:, None] * along + (size * thin)[:, None] * up
    r = size * 10.0 ** rng.uniform(-4, 0, n)
    c0 = a + (rng.uniform(-0.3, 1.3, n) * size)[:, None] * along
    c0 += (r * rng.uniform(1.0, 2.0, n))[:, None] * out
    c1 = a + (rng.uniform(-0.3, 1.3, n) * size)[:, None] * along
    c1 += (r * rng.uniform(0.0, 1.0, n))[:, None] * out
    two = rng.random(n) < 0.5
    with_test = tri_mod._sweep(c0, c1, r, a, b, c, two)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tri_mod, "_SHAPED", np.inf)
        without = tri_mod._sweep(c0, c1, r, a, b, c, two)
    np.testing.assert_array_equal(with_test.t, without.t)
    np.testing.assert_array_equal(with_test.index, without.index)
    assert np.isfinite(with_test.t).sum() > n // 10  # (contacts are met)
