"""A point keeps its side of a polygon (:func:`off_polygons`).

This module never imports panda3d.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import _solver
from ._arrays import isin_sorted, largest_abs, length, unique
from ._paths import Float, Hits, Int, unit
from ._pieces import TRIANGLE, Pieces
from ._queries import Found, PieceRows, World
from ._tolerance import SKIN_REL


def off_polygons(
    start: Float,
    goal: Float,
    end: Float,
    radius: Float,
    response: NDArray[np.int8],
    from_mask: Int,
    hits: Hits,
    tables: list[Pieces],
) -> tuple[Int, Float] | None:
    """Of the bodies of a pass (``start``, ``goal`` (where the game moved them) and ``end``
    (n, 3); ``radius``, ``response`` and ``from_mask`` (n,); its ``hits`` and piece
    ``tables``), those smaller than the float32 rounding of their coordinates (a point, r
    = 0) that it stopped on a polygon: their rows (k,), and their ends moved ``SKIN_REL``
    of their coordinates off it (k, 3), toward the side they came from (a rewind body
    back along its path; a slide, along the sum of the normals of those it touched); None
    where there are none (the usual).

    Written back touching, such a body lands on the plane or a rounding beyond it. On a
    two-sided polygon which side it is on is then lost: pushed in again next frame, it
    would pass through. On a one-sided one it is taken as in front while within the slop
    behind (see :func:`~._pieces._onto_front`), but slid along it frame after frame it
    sinks a rounding deeper each time, and is through in a few dozen frames. Two float32
    spacings are more than the rounding of the write, and far less than the slop.

    Where the body's start sees its moved end across another polygon (at the bottom of a
    crease sharper than a right angle, the move off one wall crosses the other), the body
    is on that one's side too: its normal joins the sum and the move is made again, up to
    ``_TRIES`` times. A body whose normals cancel (two polygons closer than the skin,
    facing each other), or still seen across one, is left where it is."""
    tables = [table for table in tables if table.shape == TRIANGLE]
    a = hits.a
    if not len(a) or not tables:
        return None
    # (Every body touching anything bigger than the skin of the largest coordinate: none
    # can need it.)
    largest = float(np.abs(end.take(a, axis=0)).max())
    if radius.take(a).min() >= SKIN_REL * max(1.0, largest):
        return None
    rows = np.flatnonzero(~hits.sensor & (radius[a] < skin_of(end[a])))
    rows = rows[np.isin(hits.kind[rows], [table.kind for table in tables])]
    if not len(rows):
        return None
    # Per body, the sum of the normals of its side (out of each polygon toward it) and how
    # many: moved along their mean far enough to be a skin off each of two.
    away = np.zeros_like(end)
    count = np.zeros(len(end))
    np.add.at(away, a[rows], hits.normal[rows])
    np.add.at(count, a[rows], 1.0)
    bodies = unique(a[rows])
    away, count = away[bodies], count[bodies]
    skin = skin_of(end[bodies])

    # Each normal and its body (of ``bodies``), with those met across later.
    owner, normals = np.searchsorted(bodies, a[rows]), hits.normal[rows]

    def off_normals(q: Int) -> Float:
        """The ends of bodies q moved a skin off each of their polygons: along the mean
        of their normals (a skin off two), then by what each still lacks, along it. (Three
        or more need not agree with their mean: in a pit, two like faces pull the mean
        off the third.)"""
        d = away[q] * (skin[q] * count[q] / (away[q] ** 2).sum(axis=1))[:, None]
        at = np.full(len(bodies), -1)
        at[q] = np.arange(len(q))
        mine = at[owner] >= 0
        o, n = at[owner[mine]], normals[mine]
        for _ in range(_FITS):
            short = skin[q][o] - np.einsum("ij,ij->i", d[o], n)
            if not (short > 0).any():
                break
            np.add.at(d, o, np.maximum(short, 0.0)[:, None] * n)
        return end[bodies[q]] + d

    # A rewind body goes back along its path, which it has just swept clear, a skin off
    # every polygon it met: moved along their normals and dropped straight back next
    # frame, a point pressed down on a slope would creep down it, or from wall to wall in
    # a corner. Where its path grazes one (or did not move), along the normals.
    way = unit(start[bodies] - goal[bodies], np.zeros((len(bodies), 3)))
    facing = np.full(len(bodies), np.inf)
    index = np.searchsorted(bodies, a[rows])
    np.minimum.at(facing, index, np.einsum("ij,ij->i", way[index], hits.normal[rows]))
    back = (response[bodies] == _solver.REWIND) & (facing >= _LEAST_MEAN)
    live = back | (length(away) > _LEAST_MEAN * count)  # else the normals cancel
    moved = end[bodies].copy()
    q = np.flatnonzero(live & ~back)
    moved[q] = off_normals(q)
    room = length(start[bodies] - end[bodies])
    moved[back] = end[bodies[back]] + way[back] * np.minimum(
        skin[back] / facing[back], room[back]
    )[:, None]
    # The polygons each body touched are not looked at again: one that moved toward it this
    # frame (a lift rising under it) stands between its start and its end.
    kinds = 1 + max(table.kind for table in tables)
    size = 1 + max(len(table) for table in tables)

    def key(body: Int, kind: Int | int, row: Int) -> Int:
        return (body * kinds + kind) * size + row

    touched = unique(key(a[rows], hits.kind[rows], hits.b[rows]))
    placed = np.zeros(len(bodies), bool)
    q = np.flatnonzero(live)
    for _ in range(_TRIES):
        # Seen from the start across a polygon: it is on that one's side too (the cast's
        # normal faces the start), at the bottom of a crease sharper than a right angle.
        placed[q] = True
        for table in tables:
            who = bodies[q]
            found = _casts(table, start[who], moved[q], from_mask[who])
            across = q[found.query]
            new = ~isin_sorted(key(bodies[across], table.kind, found.part), touched)
            across = across[new]
            placed[across] = False
            np.add.at(away, across, found.normal[new])
            np.add.at(count, across, 1.0)
            owner = np.concatenate([owner, across])
            normals = np.concatenate([normals, found.normal[new]])
            back[across] = False
        live &= back | (length(away) > _LEAST_MEAN * count)
        q = np.flatnonzero(live & ~placed)
        if not len(q):
            break
        moved[q] = off_normals(q)
    clear = live & placed
    return bodies[clear], moved[clear]


def _casts(table: Pieces, start: Float, end: Float, from_mask: Int) -> Found:
    """The polygons of ``table`` that casts from ``start`` (where the bodies began the
    pass) to ``end`` (k, 3) cross (``query``: which body). A kinematic piece moved during
    the pass: the body's start is seen where the piece has carried it (its place in the
    piece's own frame at the start of the pass), one cast for each body and frame (all in
    one call), keeping that frame's polygons."""
    frames = table.frames if table.frame is not None else None
    if frames is None or not frames.moving.any():
        zero = np.zeros(len(start))
        return _world_of(table).cast(start, end, zero, from_mask, False, exact=True)
    each = unique(table.frame)
    body = np.repeat(np.arange(len(start)), len(each))
    frame = np.tile(each, len(start))
    zero = np.zeros(len(body))
    seen = frames.carried(frame, zero, start[body])
    found = _world_of(table).cast(seen, end[body], zero, from_mask[body], False, exact=True)
    found = Found(*(col[table.frame[found.part] == frame[found.query]] for col in found))
    return found._replace(query=body[found.query])


def _world_of(table: Pieces) -> World:
    """The queries' world of one triangle table, naming each row by its number (``part``),
    made once a table: a cast asks only whether, and which rows, it crosses."""
    if table.skin_world is None:
        rows = np.arange(len(table))
        none = np.zeros_like(rows)
        table.skin_world = World([], None, [PieceRows(table, none, none, rows)])
    return table.skin_world


#: How many times a skin is moved to hold the polygons its start sees it across.
_TRIES = 3
#: How many times a skin is corrected by the polygons it is not yet a skin off (each
#: time by what each one lacks, along its normal).
_FITS = 8
#: Normals that cancel (their sum shorter than this times their number) leave no way off.
_LEAST_MEAN = 0.1


def skin_of(points: Float) -> Float:
    """(k,) the skin ``SKIN_REL`` of points (k, 3) (see :func:`off_polygons`)."""
    return SKIN_REL * np.maximum(1.0, largest_abs(points))
