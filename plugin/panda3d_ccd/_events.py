"""CollisionHandlerEvent's event conventions: patterns, in/again/out bookkeeping, sending.

The contract, for a game moving over from Panda3D's CollisionHandlerEvent:

* **in**: a (from, into) pair collides this frame and was not touching at the end of the
  last frame. **again**: it was, and collides again. **out**: it was, and did not collide
  this frame; or it touched and separated within this frame (a sensor passed right
  through); or one of its nodes was removed or taken out of the scene.
* Events of one frame are sent in time order: first the outs of pairs that ended between
  frames, then the contacts of this frame by increasing time of impact (ties in the order
  the component found them), each pass-through's out at its exit time.
* Balance: every in is followed by exactly one out, with only agains between them, also
  when a node is removed (:meth:`PairTracker.close`) or the component is destroyed
  (:meth:`PairTracker.close_all`).

Pattern expansion matches ``CollisionHandlerEvent::throw_event_pattern`` in Panda3D 1.10
character for character, quirks included (see :func:`expand_pattern`).

Examples
--------
>>> from panda3d.core import NodePath
>>> from panda3d_ccd.contact import Contact
>>> render = NodePath("render")
>>> ball, wall = render.attach_new_node("ball"), render.attach_new_node("wall")
>>> wall.set_tag("team", "red")
>>> c = Contact(t=0.5, time=0.0, from_np=ball, into_np=wall, point=(0, 0, 0),
...             normal=(0, 0, 1), approach_speed=1.0, from_pos=(0, 0, 1), into_pos=None,
...             from_tangible=True, into_tangible=False, world=render)
>>> expand_pattern("%fn-into-%in", c), expand_pattern("%(team)ihhit-%(team)it-%is", c)
('ball-into-wall', 'hit-red-i')
>>> print(expand_pattern("%(team)fh-%fn", c))
None
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .contact import Contact

__all__ = ["EventPatterns", "expand_pattern", "PairTracker", "send_events", "KINDS"]

#: The event kinds, in CollisionHandlerEvent's terms.
KINDS = ("in", "again", "out")

# A compiled pattern: (conditions, parts, constant).
#   conditions: tuple of (side, must_have, tag) with side "f"/"i"; all must hold.
#   parts: tuple of (code, arg): code "" is literal text arg, otherwise a two-letter
#          substitution ("fn", "in", "fs", "is", "ig", "ft", "it") with arg the tag key.
#   constant: the whole event name when parts are all literal, else None.
_Program = tuple[tuple[tuple[str, bool, str], ...], tuple[tuple[str, str], ...], Optional[str]]

_CONDITIONS = {"fh": ("f", True), "fx": ("f", False), "ih": ("i", True), "ix": ("i", False)}
_SUBSTITUTIONS = frozenset(("fn", "in", "fs", "is", "ig", "ft", "it"))


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> _Program:
    """Parse ``pattern`` exactly as ``CollisionHandlerEvent::throw_event_pattern`` scans it.

    The engine re-scans the string for every event; parsing once is equivalent because no
    code has side effects and a failed condition drops the event whichever part of the
    pattern it sits in, so conditions can be checked before anything is built.
    """
    conditions: list[tuple[str, bool, str]] = []
    parts: list[tuple[str, str]] = []
    literal: list[str] = []
    n = len(pattern)
    p = 0
    while p < n:
        ch = pattern[p]
        if ch != "%":
            literal.append(ch)
            p += 1
            continue
        key = ""
        if p + 1 < n and pattern[p + 1] == "(":
            close = pattern.find(")", p + 2)
            # Without a closing paren the engine keeps p at the '%', so the '(' becomes the
            # first character of the (invalid) two-letter code.
            if close != -1:
                key = pattern[p + 2 : close]
                p = close
        # The code is the (up to) two characters after the '%' or the ')'; they are consumed
        # even when they do not form a valid code.
        cmd = pattern[p + 1 : p + 3]
        p += 3
        if cmd in _CONDITIONS:
            side, must_have = _CONDITIONS[cmd]
            conditions.append((side, must_have, key))
        elif cmd in _SUBSTITUTIONS:
            if literal:
                parts.append(("", "".join(literal)))
                literal = []
            parts.append((cmd, key))
        else:
            # The engine logs "Invalid symbol in event_pattern: %<cmd>" on every throw and
            # inserts nothing; warn once, when the pattern is first used.
            warnings.warn(
                f"invalid symbol in event pattern {pattern!r}: %{cmd} (ignored, as Panda3D does)",
                stacklevel=3,
            )
    if literal:
        parts.append(("", "".join(literal)))
    constant = "".join(arg for _, arg in parts) if all(code == "" for code, _ in parts) else None
    return tuple(conditions), tuple(parts), constant


def _run(program: _Program, contact: Contact) -> str | None:
    conditions, parts, constant = program
    # The contact's own copies of the NodePaths: the game's may have been emptied by a
    # handler's removeNode() (an out event still names the node).
    for side, must_have, tag in conditions:
        np = contact._from_np if side == "f" else contact._into_np
        if np.has_net_tag(tag) is not must_have:
            return None
    if constant is not None:
        return constant or None
    out = []
    for code, arg in parts:
        if code == "":
            out.append(arg)
        elif code == "fn":
            out.append(contact._from_np.get_name())
        elif code == "in":
            out.append(contact._into_np.get_name())
        elif code == "fs":
            out.append("t" if contact.from_tangible else "i")
        elif code == "is":
            out.append("t" if contact.into_tangible else "i")
        elif code == "ig":
            # The engine writes 'c' whenever the entry has an into *solid*, and 'g' only when
            # it has none. Since 1.10 a hit on visible geometry gets a temporary
            # CollisionGeom solid, so Panda3D itself always writes 'c'; every contact here
            # has an into shape too.
            out.append("c")
        elif code == "ft":
            out.append(contact._from_np.get_net_tag(arg))
        else:  # "it"
            out.append(contact._into_np.get_net_tag(arg))
    name = "".join(out)
    return name or None


def expand_pattern(pattern: str, contact: Contact) -> str | None:
    """The event name ``pattern`` gives for ``contact``, or None if no event is thrown.

    Codes, as in Panda3D's CollisionHandlerEvent: ``%fn`` / ``%in`` from / into node name;
    ``%fs`` / ``%is`` ``t`` if tangible, ``i`` if a sensor; ``%ig`` always ``c`` (Panda3D
    writes ``g`` only for an entry without an into solid, which 1.10 never produces);
    ``%(tag)fh`` / ``%(tag)ih`` throw only if the from / into node or an ancestor has the tag,
    ``%(tag)fx`` / ``%(tag)ix`` only if not; ``%(tag)ft`` / ``%(tag)it`` the tag's value
    (``getNetTag``, empty if absent). Anything else after ``%`` is an invalid symbol: its
    two characters are dropped (with a warning), e.g. ``"a%%fn"`` gives ``"an"``. An
    empty result throws nothing (None).

    Examples
    --------
    >>> from panda3d.core import NodePath
    >>> from panda3d_ccd.contact import Contact
    >>> r = NodePath("render")
    >>> c = Contact(t=0, time=0, from_np=r.attach_new_node("a"),
    ...             into_np=r.attach_new_node("b"), point=(0, 0, 0), normal=(0, 0, 1),
    ...             approach_speed=0, from_pos=(0, 0, 1), into_pos=None, from_tangible=True,
    ...             into_tangible=True, world=r)
    >>> expand_pattern("%fn-%fs-%in-%is-%ig", c)
    'a-t-b-t-c'
    >>> expand_pattern(3, c)
    Traceback (most recent call last):
        ...
    ValueError: pattern must be a str, got 3
    """
    if not isinstance(pattern, str):
        raise ValueError(f"pattern must be a str, got {pattern!r}")
    if not pattern:
        return None
    return _run(_compile(pattern), contact)


class EventPatterns:
    """The in / again / out pattern lists, with CollisionHandlerEvent's method names.

    Each method exists in snake_case and camelCase: ``add_in_pattern`` / ``addInPattern``,
    ``set_in_pattern`` (replaces all; deprecated in Panda3D but common in old code),
    ``clear_in_patterns``, ``get_in_pattern(n)``, ``get_num_in_patterns()``,
    ``get_in_patterns()`` (a list copy); the same for again and out.

    Examples
    --------
    >>> ev = EventPatterns()
    >>> ev.addInPattern("%fn-into-%in")
    >>> ev.add_out_pattern("%fn-out-%in")
    >>> ev.get_in_patterns(), ev.getNumOutPatterns(), ev.get_num_again_patterns()
    (['%fn-into-%in'], 1, 0)
    >>> ev.add_again_pattern("")
    Traceback (most recent call last):
        ...
    ValueError: again_pattern must be a non-empty str, got ''
    """

    __slots__ = ("_patterns", "_programs")

    def __init__(self) -> None:
        self._patterns: dict[str, list[str]] = {kind: [] for kind in KINDS}
        self._programs: dict[str, list[_Program]] = {kind: [] for kind in KINDS}

    def _add(self, kind: str, pattern: Any) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"{kind}_pattern must be a non-empty str, got {pattern!r}")
        program = _compile(pattern)  # warns now about invalid symbols, not mid-game
        self._patterns[kind].append(pattern)
        self._programs[kind].append(program)

    def _clear(self, kind: str) -> None:
        self._patterns[kind].clear()
        self._programs[kind].clear()

    def _set(self, kind: str, pattern: Any) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"{kind}_pattern must be a non-empty str, got {pattern!r}")
        self._clear(kind)
        self._add(kind, pattern)

    def _get(self, kind: str, n: Any) -> str:
        patterns = self._patterns[kind]
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < len(patterns):
            raise IndexError(
                f"n must be an int in [0, {len(patterns)}) for the {kind} patterns, got {n!r}"
            )
        return patterns[n]

    def programs(self, kind: str) -> list[_Program]:
        """The compiled patterns of ``kind`` ("in", "again" or "out"), in order (internal)."""
        return self._programs[kind]

    # in
    def add_in_pattern(self, in_pattern: str) -> None:
        """Add a pattern for the event thrown when a pair starts touching."""
        self._add("in", in_pattern)

    def set_in_pattern(self, in_pattern: str) -> None:
        """Replace all in patterns with this one."""
        self._set("in", in_pattern)

    def clear_in_patterns(self) -> None:
        """Remove all in patterns."""
        self._clear("in")

    def get_in_pattern(self, n: int) -> str:
        """The n-th in pattern."""
        return self._get("in", n)

    def get_num_in_patterns(self) -> int:
        """How many in patterns there are."""
        return len(self._patterns["in"])

    def get_in_patterns(self) -> list[str]:
        """A copy of the in patterns."""
        return list(self._patterns["in"])

    # again
    def add_again_pattern(self, again_pattern: str) -> None:
        """Add a pattern for the event thrown when a touching pair collides again."""
        self._add("again", again_pattern)

    def set_again_pattern(self, again_pattern: str) -> None:
        """Replace all again patterns with this one."""
        self._set("again", again_pattern)

    def clear_again_patterns(self) -> None:
        """Remove all again patterns."""
        self._clear("again")

    def get_again_pattern(self, n: int) -> str:
        """The n-th again pattern."""
        return self._get("again", n)

    def get_num_again_patterns(self) -> int:
        """How many again patterns there are."""
        return len(self._patterns["again"])

    def get_again_patterns(self) -> list[str]:
        """A copy of the again patterns."""
        return list(self._patterns["again"])

    # out
    def add_out_pattern(self, out_pattern: str) -> None:
        """Add a pattern for the event thrown when a pair stops touching."""
        self._add("out", out_pattern)

    def set_out_pattern(self, out_pattern: str) -> None:
        """Replace all out patterns with this one."""
        self._set("out", out_pattern)

    def clear_out_patterns(self) -> None:
        """Remove all out patterns."""
        self._clear("out")

    def get_out_pattern(self, n: int) -> str:
        """The n-th out pattern."""
        return self._get("out", n)

    def get_num_out_patterns(self) -> int:
        """How many out patterns there are."""
        return len(self._patterns["out"])

    def get_out_patterns(self) -> list[str]:
        """A copy of the out patterns."""
        return list(self._patterns["out"])

    addInPattern = add_in_pattern
    setInPattern = set_in_pattern
    clearInPatterns = clear_in_patterns
    getInPattern = get_in_pattern
    getNumInPatterns = get_num_in_patterns
    getInPatterns = get_in_patterns
    addAgainPattern = add_again_pattern
    setAgainPattern = set_again_pattern
    clearAgainPatterns = clear_again_patterns
    getAgainPattern = get_again_pattern
    getNumAgainPatterns = get_num_again_patterns
    getAgainPatterns = get_again_patterns
    addOutPattern = add_out_pattern
    setOutPattern = set_out_pattern
    clearOutPatterns = clear_out_patterns
    getOutPattern = get_out_pattern
    getNumOutPatterns = get_num_out_patterns
    getOutPatterns = get_out_patterns

    def __repr__(self) -> str:
        return (
            f"EventPatterns(in={self._patterns['in']}, again={self._patterns['again']}, "
            f"out={self._patterns['out']})"
        )


Event = tuple[str, "Contact"]


class PairTracker:
    """In / again / out bookkeeping for (from, into) pairs, keyed by hashable ids.

    A pair is *open* from its in event to its out event. Open pairs are kept in the order
    they opened, which is the order of the outs that :meth:`advance`, :meth:`close` and
    :meth:`close_all` return for several pairs at once.

    Examples
    --------
    >>> from panda3d.core import NodePath
    >>> from panda3d_ccd.contact import Contact
    >>> r = NodePath("render")
    >>> def hit(t, into="wall"):
    ...     return Contact(t=t, time=t, from_np=r.attach_new_node("ball"),
    ...                    into_np=r.attach_new_node(into), point=(0, 0, 0),
    ...                    normal=(0, 0, 1), approach_speed=1, from_pos=(0, 0, 1),
    ...                    into_pos=None, from_tangible=True, into_tangible=False, world=r)
    >>> tracker = PairTracker()
    >>> [(kind, c.t) for kind, c in tracker.advance([(1, hit(0.5), None)])]
    [('in', 0.5)]
    >>> [(kind, c.t) for kind, c in tracker.advance([(1, hit(0.0), None),
    ...                                               (2, hit(0.25), hit(0.75))])]
    [('again', 0.0), ('in', 0.25), ('out', 0.75)]
    >>> [(kind, c.t) for kind, c in tracker.advance([])], len(tracker)
    ([('out', 0.0)], 0)
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[Hashable, Contact] = {}

    def advance(self, touches: Iterable[tuple[Hashable, Contact, Contact | None]]) -> list[Event]:
        """Record one frame of contacts and return its events, in the order to send them.

        Parameters
        ----------
        touches : iterable of (key, enter_contact, exit_contact or None)
            Every pair that collided during this frame, each key at most once.
            ``exit_contact`` is given when the pair touched and separated again within the
            frame (a sensor passed through); its ``t`` must be >= the enter contact's.

        Returns
        -------
        list of (kind, Contact)
            First ``"out"`` for each pair open last frame that did not collide in this one
            (with that pair's last contact), then ``"in"`` (pair not open) or ``"again"``
            (pair open) for each touch and ``"out"`` for each exit, by increasing ``t``;
            ties keep the given order, an exit after its own enter. Afterwards the open
            pairs are those touched without an exit.
        """
        timeline: list[tuple[float, int, Hashable, Contact]] = []
        seen: set[Hashable] = set()
        for i, touch in enumerate(touches):
            try:
                key, enter, leave = touch
            except (TypeError, ValueError):
                raise ValueError(
                    f"touches[{i}] must be (key, enter_contact, exit_contact or None), "
                    f"got {touch!r}"
                ) from None
            if key in seen:
                raise ValueError(f"touches lists key {key!r} more than once in one frame")
            seen.add(key)
            timeline.append((enter.t, 2 * i, key, enter))
            if leave is not None:
                if leave.t < enter.t:
                    raise ValueError(
                        f"exit_contact.t must be >= enter_contact.t for key {key!r}, "
                        f"got {leave.t} < {enter.t}"
                    )
                timeline.append((leave.t, 2 * i + 1, key, leave))

        opened = self._open
        events: list[Event] = [("out", opened.pop(k)) for k in list(opened) if k not in seen]
        # Each item's second field is unique, so comparing whole items never reaches the
        # keys and contacts, and sorts as the (time, order) key would, without a key call.
        timeline.sort()
        for _, order, key, contact in timeline:
            if order & 1:
                del opened[key]
                events.append(("out", contact))
            else:
                events.append(("again" if key in opened else "in", contact))
                opened[key] = contact
        return events

    def close(self, predicate: Callable[[Hashable], bool]) -> list[Event]:
        """End the open pairs whose key satisfies ``predicate`` (e.g. a removed node).

        Returns their ``"out"`` events, each with the pair's last contact.
        """
        keys = [k for k in self._open if predicate(k)]
        return [("out", self._open.pop(k)) for k in keys]

    def close_all(self) -> list[Event]:
        """End every open pair; returns their ``"out"`` events."""
        events = [("out", c) for c in self._open.values()]
        self._open.clear()
        return events

    def open_keys(self) -> set[Hashable]:
        """The keys of the pairs currently open (a copy)."""
        return set(self._open)

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._open

    def __repr__(self) -> str:
        return f"PairTracker({len(self._open)} open)"


def send_events(messenger: Any, patterns: EventPatterns, events: Iterable[Event]) -> None:
    """Send each event through ``messenger`` once per matching pattern, in order.

    For each ``(kind, contact)`` and each pattern of that kind in order, the expanded name
    (if any) is sent as ``messenger.send(name, [contact])``, as CollisionHandlerEvent does
    with its CollisionEntry. A handler that raises loses no other event: every event is
    sent, then the first exception is raised again.
    """
    failure: BaseException | None = None
    for kind, contact in events:
        try:
            send_contact(messenger, patterns.programs(kind), contact)
        except Exception as exc:  # noqa: BLE001 - raised again below
            failure = failure or exc
    if failure is not None:
        raise failure


def send_contact(messenger: Any, programs: list[_Program], contact: Contact) -> None:
    """Send one event: ``contact`` under each name ``programs`` (one kind's compiled
    patterns, e.g. ``EventPatterns.programs("in")``) give it, in order (internal). A
    handler that raises loses none of the others: every name is sent, then the first
    exception is raised again."""
    failure: BaseException | None = None
    for program in programs:
        name = _run(program, contact)
        if name:
            try:
                messenger.send(name, [contact])
            except Exception as exc:  # noqa: BLE001 - raised again below
                failure = failure or exc
    if failure is not None:
        raise failure
