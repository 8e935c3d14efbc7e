"""The kernels' shared pieces (``sweep/_features.py``) where they take shortcuts: the
pieces of one kind offered in one call must pick what offering them one by one picks (the
earliest, the first of equal ones, never a nan), and the whole-column cross and dot
products must be the row-by-row ones, bit for bit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.kernels import measure_call_cost  # noqa: E402

from panda3d_ccd import _pieces  # noqa: E402
from panda3d_ccd.sweep import _features as F  # noqa: E402


def _draws(rng: np.random.Generator, p: int, k: int) -> np.ndarray:
    # Few distinct values, so ties are common; some inf and nan.
    t = rng.integers(0, 4, size=(p, k)).astype(float) / 4
    t[rng.random((p, k)) < 0.3] = np.inf
    t[rng.random((p, k)) < 0.1] = np.nan
    return t


@pytest.mark.parametrize("p", [1, 2, 3, 8, 12])
def test_pieces_offered_at_once_pick_what_offering_them_in_order_picks(p):
    rng = np.random.default_rng(p)
    for _ in range(20):
        k = int(rng.integers(1, 40))
        t = _draws(rng, p, k)
        before = _draws(rng, 1, k)[0]
        one_by_one, at_once = F.Best(k), F.Best(k)
        for best in (one_by_one, at_once):
            best.offer(before, 0, 7)
        for piece in range(p):
            one_by_one.offer(t[piece], 2, piece)
        at_once.offer_pieces(F.stack(list(t)), p, 2)
        np.testing.assert_array_equal(at_once.t, one_by_one.t)
        np.testing.assert_array_equal(at_once.feature, one_by_one.feature)
        np.testing.assert_array_equal(at_once.index, one_by_one.index)


def test_earliest_names_no_piece_where_none_is_finite():
    t = np.array([[np.inf, np.nan, 0.5], [np.nan, np.inf, 0.5]])
    least, which = F.earliest(F.stack(list(t)), 2)
    np.testing.assert_array_equal(least, [np.inf, np.inf, 0.5])
    np.testing.assert_array_equal(which, [-1, -1, 0])


@pytest.mark.parametrize("k", [1, 5, F._SMALL, F._SMALL + 1, 5000])
def test_cross_and_dot_are_the_row_by_row_sums_bit_for_bit(k):
    rng = np.random.default_rng(k)
    a = rng.normal(size=(3, k)) * 10.0 ** rng.integers(-5, 6, size=(3, k))
    b = rng.normal(size=(3, k)) * 10.0 ** rng.integers(-5, 6, size=(3, k))
    a[:, ::7] = -0.0
    expected = np.array([a[1] * b[2] - a[2] * b[1],
                         a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]])  # fmt: skip
    assert F.cross(a, b).tobytes() == expected.tobytes()
    assert F.dot(a, b).tobytes() == (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]).tobytes()


def test_a_small_call_of_each_level_kernel_stays_within_its_numpy_budget():
    """A pass calls each kernel a few times on tens of rows, where a call costs its numpy
    operations (some 0.5 us each) more than its arithmetic: the budget is a count, which
    the machine's load does not change. Stacking each kind of piece took the triangle
    kernel from 2,291 operations to 923 and the box kernel from 3,983 to 667."""
    cost = measure_call_cost(rows=30, repeats=1)
    budget = {"triangle": 1000, "box": 750, "capsule": 480}
    assert cost.keys() == budget.keys()
    for name, limit in budget.items():
        assert cost[name]["numpy_ops"] <= limit, cost


def test_a_piece_table_sweeps_many_rows_as_it_sweeps_few(monkeypatch):
    """A kind without a ``deep`` kernel: past _BOTH_AT_ONCE rows a piece table sweeps the
    slop-shrunk radius only for the rows that hit at full radius; below it, every row at
    both radii in one call. Triangles have one (both radii in one exact stage). The three
    must agree on every row: balls sinking into a floor by less than the slop (no
    contact), by more (a contact), and passing by."""
    rng = np.random.default_rng(3)
    m, n = 200, 3000
    corner = np.column_stack([rng.uniform(0, 50, (m, 2)), np.zeros(m)])
    a, b, c = corner, corner + [2.0, 0, 0], corner + [0, 2.0, 0]
    table = _pieces.Pieces(_pieces.TRIANGLE, (a, b, c, np.zeros(m, bool)),
                           np.full(m, 0xFFFFFFFF, np.int64))  # fmt: skip
    k = rng.integers(0, m, n)
    start = corner[k] + [0.5, 0.5, 0.5]
    sink = rng.choice([0.0, 1e-9, 1e-7, 0.2, -0.3], n)  # 1e-7: within the slop (5e-5)
    start[:, 2] -= rng.choice([0.0, 1e-8], n)
    end = start + np.column_stack([rng.normal(0, 0.3, (n, 2)), -sink])
    r = np.full(n, 0.5)

    spec = table.spec
    assert spec.deep is not None

    def sweep(at_once, deep):
        monkeypatch.setattr(_pieces, "_BOTH_AT_ONCE", at_once)
        table.spec = spec._replace(deep=deep)
        return table._sweep(start, end, r, np.zeros(n), k, np.full((n, 8), np.nan))

    t_one, extra_one = sweep(10**9, None)
    for t_other, extra_other in (sweep(0, None), sweep(0, spec.deep)):
        assert t_one.tobytes() == t_other.tobytes()
        np.testing.assert_array_equal(extra_one, extra_other)
    hit_full = np.isfinite(table.spec.sweep(start, end, r, a[k], b[k], c[k]).t)
    assert (hit_full & ~np.isfinite(t_one)).sum() > 100  # shallow: the shrunk sweep decided
    assert np.isfinite(t_one).sum() > 100
