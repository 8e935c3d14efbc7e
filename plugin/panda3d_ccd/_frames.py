"""Rigid motions of the nodes that hold level pieces, over one pass. Pure numpy.

A kinematic collider's shapes are fixed in its node's frame; the game moves the node. Its
motion over a frame is a rotation and a translation at the start and at the end: rotation by
the shorter arc between the two (a quaternion slerp), translation linearly. A body is tested
on its motion relative to the collider, in the collider's frame (see ``_pieces``).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ._arrays import cross, length, lengths, norm

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]

#: Below this angle between the start and end orientations (radians), a frame's
#: rotation is interpolated linearly and renormalised (slerp's sin(angle) is noise there).
_NLERP_ANGLE = 1e-6


def matrices(quat: Float) -> Float:
    """(f, 3, 3) rotation matrices (column vectors: world = R @ local) of unit quaternions
    ``quat`` (f, 4) as (w, x, y, z)."""
    # Each entry is 2 (p + s q) for two products p, q of components and a sign s (the
    # diagonal's 1 less that): all 18 products in one call, on the quaternions' columns.
    # The same sums as written entry by entry (s q is exact), in 5 numpy calls, not 40.
    q = quat.T
    p = q[_LEFT] * q[_RIGHT]
    out = 2 * (p[:9] + p[9:] * _SIGN)
    out[_DIAGONAL] = 1 - out[_DIAGONAL]
    return np.ascontiguousarray(out.T).reshape(-1, 3, 3)


# The entries of :func:`matrices` in row order: yy + zz, xy - wz, xz + wy; xy + wz,
# xx + zz, yz - wx; xz - wy, yz + wx, xx + yy (w, x, y, z are columns 0 to 3).
_TERMS = [
    ((2, 2), (3, 3), 1), ((1, 2), (0, 3), -1), ((1, 3), (0, 2), 1),
    ((1, 2), (0, 3), 1), ((1, 1), (3, 3), 1), ((2, 3), (0, 1), -1),
    ((1, 3), (0, 2), -1), ((2, 3), (0, 1), 1), ((1, 1), (2, 2), 1),
]  # fmt: skip
_LEFT = np.array([p[0] for p, _q, _s in _TERMS] + [q[0] for _p, q, _s in _TERMS])
_RIGHT = np.array([p[1] for p, _q, _s in _TERMS] + [q[1] for _p, q, _s in _TERMS])
_SIGN = np.array([float(s) for _p, _q, s in _TERMS])[:, None]
_DIAGONAL = np.array([0, 4, 8])


def apply(rot: Float, v: Float) -> Float:
    """(k, 3) rows of v rotated by the (k, 3, 3) matrices rot."""
    return np.einsum("kij,kj->ki", rot, v)


def unapply(rot: Float, v: Float) -> Float:
    """(k, 3) rows of v rotated by the inverses (transposes) of rot."""
    return np.einsum("kji,kj->ki", rot, v)


class Frames:
    """The frames of f nodes at the start (``quat0``, ``pos0``) and the end (``quat1``,
    ``pos1``) of a pass: (f, 4) unit quaternions (w, x, y, z) and (f, 3) origins."""

    def __init__(self, quat0: Float, pos0: Float, quat1: Float, pos1: Float) -> None:
        q0 = quat0 / norm(quat0)[:, None]
        q1 = quat1 / norm(quat1)[:, None]
        dot = np.einsum("ij,ij->i", q0, q1)
        q1 = np.where(dot[:, None] < 0, -q1, q1)  # the shorter arc
        self.q0, self.q1 = q0, q1
        # The same orientation at both ends does not turn: its dot rounds to 1 - 1e-16,
        # whose arccos is some 1e-8 (which made a still, turned piece a moving one).
        same = np.all(quat0 == quat1, axis=1)
        self.half_angle = np.where(same, 0.0, np.arccos(np.clip(np.abs(dot), 0.0, 1.0)))
        #: (f,) angle each frame turns through over the pass, radians.
        self.angle = 2.0 * self.half_angle
        self.pos0, self.pos1 = pos0, pos1
        self.rot0, self.rot1 = matrices(q0), matrices(q1)
        #: (f,) frames that move at all (rotate or translate).
        self.moving = (self.angle > 0) | np.any(pos0 != pos1, axis=1)

    @classmethod
    def joined(cls, first: Frames | None, second: Frames) -> Frames:
        """The rows of ``first`` (if any), then those of ``second``: the same numbers, none
        made again (a row keeps its index in ``first``, whose users index it there)."""
        if first is None:
            return second
        out = cls.__new__(cls)
        for name in ("q0", "q1", "half_angle", "angle", "pos0", "pos1", "rot0", "rot1", "moving"):
            setattr(out, name, np.concatenate([getattr(first, name), getattr(second, name)]))
        return out

    @cached_property
    def axis(self) -> Float:
        """(f, 3) unit axis each frame turns about, in its own coordinates (z if none):
        the vector part of q0* q1. The slerp turns about it at a constant rate, and a turn
        fixes its axis, so it is the same local axis all pass long."""
        w0, v0 = self.q0[:, :1], self.q0[:, 1:]
        w1, v1 = self.q1[:, :1], self.q1[:, 1:]
        rel = w0 * v1 - w1 * v0 - cross(v0, v1)
        size = length(rel)
        unit = rel / np.where(size > 0, size, 1.0)[:, None]
        return np.where((size > 0)[:, None], unit, [0.0, 0.0, 1.0])

    @cached_property
    def world_axis(self) -> Float:
        """(f, 3) :attr:`axis` in world coordinates: fixed all pass long too (the slerp
        turns about it), so a point fixed in the frame, or moving straight in it, strays
        from its world chord only across it."""
        return apply(self.rot0, self.axis)

    def carried(self, f: Int, t: Float, x: Float) -> Float:
        """(k, 3) where frames f, from times t (k,) on, take world points x (k, 3) fixed in
        them: their images under the frames' end transforms."""
        rot, pos = self.at(f, t)
        return apply(self.rot1[f], unapply(rot, x - pos)) + self.pos1[f]

    def at(self, f: Int, t: Float) -> tuple[Float, Float]:
        """(k, 3, 3) rotations and (k, 3) origins of frames f at times t (both (k,))."""
        half = self.half_angle[f]
        q0, q1 = self.q0[f], self.q1[f]
        slerp = half > _NLERP_ANGLE
        sin = np.where(slerp, np.sin(half), 1.0)
        w0 = np.where(slerp, np.sin((1.0 - t) * half) / sin, 1.0 - t)
        w1 = np.where(slerp, np.sin(t * half) / sin, t)
        q = w0[:, None] * q0 + w1[:, None] * q1
        q /= norm(q)[:, None]
        pos = self.pos0[f] + t[:, None] * (self.pos1[f] - self.pos0[f])
        return matrices(q), pos

    def chord_deviation(self, f: Int, t0: Float, t1: Float, y0: Float, y1: Float) -> Float:
        """(k,) how far a point's path in frame f can stray from the straight chord between
        its local positions at t0 and t1, where ``y0``, ``y1`` (k, 3) are its world
        position minus the frame's origin at those times (its offset moving linearly).

        Its local path is L(t) = R(t)^T y(t), with R turning at the constant rate w (the
        angle over the pass) about a fixed axis and y linear: |L''| <= w^2 |y| + 2 w |y'|,
        and a curve through its chord's ends strays at most max|L''| / 8 from it. Along the
        turn's axis (``axis``) the path is linear: it strays only across the axis.
        """
        w = self.angle[f] * (t1 - t0)
        size0, size1, drift = lengths(y0, y1, y1 - y0)
        return (w * w * np.maximum(size0, size1) + 2.0 * w * drift) / 8.0
