"""The column-wise helpers stand in for numpy's own reductions: same answers, bit for bit."""

import numpy as np
import pytest

from panda3d_ccd import _arrays


@pytest.fixture
def rows():
    rng = np.random.default_rng(4)
    v = rng.normal(size=(5000, 3)) * rng.choice([1e-200, 1e-3, 1.0, 1e5, 1e200], (5000, 1))
    v[:50, 1] = np.nan
    v[50:100, 2] = np.inf
    v[100:150, 0] = -np.inf
    v[150:200] = 0.0
    return v


def test_length_is_numpys_norm_bit_for_bit(rows):
    with np.errstate(over="ignore", under="ignore"):
        assert np.array_equal(_arrays.length(rows), np.linalg.norm(rows, axis=1), equal_nan=True)


@pytest.mark.parametrize("k", [0, 1, 5000])
def test_lengths_are_each_arrays_norm_bit_for_bit(rows, k):
    parts = rows[:k], rows[::-1][:k], rows[:k] * 3.0
    with np.errstate(over="ignore", under="ignore"):
        got = _arrays.lengths(*parts)
        assert len(got) == 3
        for part, size in zip(parts, got):
            assert np.array_equal(size, np.linalg.norm(part, axis=1), equal_nan=True)


def test_row_max_is_numpys_max_nan_included(rows):
    assert np.array_equal(_arrays.row_max(rows), rows.max(axis=1), equal_nan=True)
    assert np.isnan(_arrays.row_max(rows)[:50]).all()


def test_row_all_and_row_any_match_numpy(rows):
    flags = rows > 0
    assert np.array_equal(_arrays.row_all(flags), flags.all(axis=1))
    assert np.array_equal(_arrays.row_any(flags), flags.any(axis=1))


def test_unique_matches_numpys_unique():
    rng = np.random.default_rng(5)
    for size in (0, 1, 7, 1000):
        values = rng.integers(-20, 20, size)
        assert np.array_equal(_arrays.unique(values), np.unique(values))


def test_largest_abs_is_the_largest_magnitude_across_every_array(rows):
    other = rows[::-1].copy()
    expected = np.max(np.abs(np.concatenate([rows, other], axis=1)), axis=1)
    assert np.array_equal(_arrays.largest_abs(rows, other), expected, equal_nan=True)


def test_isin_sorted_matches_numpys_isin():
    rng = np.random.default_rng(6)
    for size, known in ((0, 5), (5, 0), (1, 1), (1000, 300), (300, 1000)):
        values = rng.integers(-50, 50, size)
        ordered = np.unique(rng.integers(-40, 40, known))
        assert np.array_equal(_arrays.isin_sorted(values, ordered), np.isin(values, ordered))


def test_ranges_concatenates_each_start_and_count_range():
    counts = np.array([2, 0, 3, 1])
    assert _arrays.ranges(np.array([5, 9, -1, 7]), counts).tolist() == [5, 6, -1, 0, 1, 7]
    assert _arrays.ranges(1, counts).tolist() == [1, 2, 1, 2, 3, 1]
    assert _arrays.ranges(0, np.zeros(0, np.int64)).tolist() == []
    assert _arrays.ranges(0, np.zeros(0, np.int64)).dtype.kind == "i"


@pytest.mark.parametrize("rows", [0, 1, 5, 4097])
def test_cross_and_norm_are_numpys_to_the_bit(rows):
    """The per-pass code takes these for ``np.cross`` and ``np.linalg.norm(axis=1)``,
    whose Python wrappers cost more than their arithmetic: the same numbers, bit for bit,
    over magnitudes from 1e-12 to 1e12, with nan and inf rows."""
    rng = np.random.default_rng(rows)
    a, b = (rng.normal(size=(rows, 3)) * 10.0 ** rng.uniform(-12, 12, (rows, 3)) for _ in "ab")
    a[::7] = np.nan
    b[3::11] = np.inf
    with np.errstate(invalid="ignore"):  # (inf - inf in both)
        assert np.array_equal(_arrays.cross(a, b), np.cross(a, b), equal_nan=True)
    for v in (a, b, rng.normal(size=(rows, 4)) * 10.0 ** rng.uniform(-12, 12, (rows, 4))):
        assert np.array_equal(_arrays.norm(v), np.linalg.norm(v, axis=1), equal_nan=True)


def test_rotation_matrices_are_the_quaternion_formula_to_the_bit():
    """``_frames.matrices`` builds all nine entries at once; each must be the textbook
    entry (1 - 2 (y^2 + z^2), 2 (xy - wz), ...) written out, bit for bit, and a rotation
    Panda3D agrees with (its own quaternion's matrix, to float32)."""
    from panda3d.core import LMatrix3d, LQuaterniond

    from panda3d_ccd._frames import matrices

    rng = np.random.default_rng(9)
    q = rng.normal(size=(500, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    q[:3] = [[1, 0, 0, 0], [0, 1, 0, 0], [np.sqrt(0.5), 0, 0, np.sqrt(0.5)]]
    w, x, y, z = q.T
    want = np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], axis=1).reshape(-1, 3, 3)  # fmt: skip
    got = matrices(q)
    assert got.shape == (500, 3, 3) and got.flags.c_contiguous
    assert np.array_equal(got, want)
    for row in range(0, 500, 50):
        m = LMatrix3d()
        LQuaterniond(*q[row]).extractToMatrix(m)  # row vectors: its transpose is ours
        panda = np.array([[m.getCell(i, j) for j in range(3)] for i in range(3)]).T
        assert np.allclose(got[row], panda, atol=1e-12)
    assert matrices(np.zeros((0, 4))).shape == (0, 3, 3)


def _dykstra(m, n, b, on, turns=5000):
    """The point nearest m (k, 3) in front of the planes n . x >= b that are on, by
    Dykstra's alternating projections: an independent oracle for nearest_clear."""
    x = m.copy()
    fix = np.zeros(n.shape)
    for _ in range(turns):
        for i in range(n.shape[1]):
            y = x + fix[:, i]
            over = np.minimum(np.einsum("ij,ij->i", y, n[:, i]) - b[:, i], 0.0)
            x_new = y - np.where(on[:, i], over, 0.0)[:, None] * n[:, i]
            fix[:, i] = y - x_new
            x = x_new
    return x


@pytest.mark.parametrize("cone", [True, False], ids=["through-the-origin", "offset"])
def test_nearest_clear_is_the_nearest_point_in_front_of_every_plane(cone):
    """Up to six planes, random normals, some off: the point nearest the motion m in front
    of every plane that is on. It is in front of each of them; no point y in front of them
    all (20,000 random ones each) is nearer, nor in a direction from it that would bring it
    nearer ((m - x) . (y - x) <= 0, the projection's own condition); and where Dykstra's
    alternating projections converge (most rows: not where the region is a thin wedge or
    a point) they find the same point."""
    rng = np.random.default_rng(7 if cone else 8)
    k, p = 400, 6
    n = rng.normal(size=(k, p, 3))
    n /= np.linalg.norm(n, axis=2, keepdims=True)
    # Through the origin (a slide's motion clipped by what it touched, always possible),
    # or off it: the planes of carried surfaces, and a skin off each one touched.
    b = np.zeros((k, p)) if cone else rng.uniform(-0.2, 0.1, (k, p))
    on = rng.random((k, p)) < 0.7
    m = rng.normal(size=(k, 3))
    x = _arrays.nearest_clear(m, n, b, on)
    found = np.isfinite(x).all(axis=1)
    if cone:
        assert found.all()
    assert found.sum() > k // 2
    front = np.einsum("kpj,kj->kp", n, np.where(found[:, None], x, 0.0)) - b
    assert (front[found[:, None] & on] >= -1e-9).all()
    pts = rng.normal(size=(20000, 3)) * 3.0
    for row in np.flatnonzero(found):
        y = pts[((pts @ n[row].T >= b[row]) | ~on[row]).all(axis=1)]
        assert (np.linalg.norm(y - m[row], axis=1) >= np.linalg.norm(x[row] - m[row])).all()
        assert ((y - x[row]) @ (m[row] - x[row]) <= 1e-9).all()
    d = _dykstra(m[found], n[found], b[found], on[found])
    settled = ((np.einsum("kpj,kj->kp", n[found], d) - b[found] >= -1e-9) | ~on[found]).all(1)
    assert settled.mean() > 0.8
    assert np.allclose(x[found][settled], d[settled], atol=1e-6)


def test_nearest_clear_is_nan_where_no_point_is_in_front_of_them_all():
    """Two opposite planes a gap apart facing away from each other leave no point in front
    of both; a third plane does not change that, and one turned off gives it back."""
    n = np.array([[[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]] * 2)
    b = np.array([[0.5, 0.5, 0.0]] * 2)
    on = np.array([[True, True, True], [True, False, True]])
    x = _arrays.nearest_clear(np.array([[0.3, 0.2, 0.1], [-0.3, 0.2, 0.1]]), n, b, on)
    assert np.isnan(x[0]).all()
    assert np.allclose(x[1], [0.0, 0.2, 0.5])
