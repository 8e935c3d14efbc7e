"""Event patterns, in/again/out bookkeeping and sending, checked against Panda3D itself."""

from __future__ import annotations

import re
import warnings

import pytest
from direct.showbase.DirectObject import DirectObject
from direct.showbase.Messenger import Messenger
from hypothesis import given, settings
from hypothesis import strategies as st
from panda3d.core import (
    CardMaker,
    CollisionHandlerEvent,
    CollisionNode,
    CollisionSphere,
    CollisionTraverser,
    EventQueue,
    NodePath,
    PandaNode,
)

from panda3d_ccd._events import (
    KINDS,
    EventPatterns,
    PairTracker,
    _compile,
    expand_pattern,
    send_events,
)
from panda3d_ccd.contact import Contact


class FakeMessenger:
    def __init__(self):
        self.sent = []

    def send(self, name, args):
        self.sent.append((name, args))


def contact(from_np, into_np, t=0.5, from_tangible=True, into_tangible=True):
    root = from_np.get_top()
    return Contact(
        t=t,
        time=t,
        from_np=from_np,
        into_np=into_np,
        point=(0, 0, 0),
        normal=(0, 0, 1),
        approach_speed=1.0,
        from_pos=(0, 0, 1),
        into_pos=(0, 0, -1),
        from_tangible=from_tangible,
        into_tangible=into_tangible,
        world=root,
    )


def tagged_scene(into_node=None):
    """render(rank=root) / red(team=red) / ball(hp='')  and  render / blue(team=blue) / wall.

    wall has kind=enemy and rank=wall of its own; ``into_node`` replaces wall's node type.
    """
    render = NodePath("render")
    render.set_tag("rank", "root")
    red = render.attach_new_node("red")
    red.set_tag("team", "red")
    ball = red.attach_new_node(CollisionNode("ball"))
    ball.set_tag("hp", "")
    blue = render.attach_new_node("blue")
    blue.set_tag("team", "blue")
    wall = blue.attach_new_node(into_node if into_node is not None else CollisionNode("wall"))
    wall.set_tag("kind", "enemy")
    wall.set_tag("rank", "wall")
    return render, ball, wall


# -- expand_pattern: every code, with exact strings ---------------------------------------

EXPANSIONS = [
    # names, tangibility, node type
    ("%fn-into-%in", "ball-into-wall"),
    ("%in", "wall"),
    ("%fn%in%fn", "ballwallball"),
    ("%fs%is%ig", "tic"),
    ("plain", "plain"),
    # h / x on the node itself, on an ancestor, and missing; literal text kept around them
    ("%(team)fh-%in", "-wall"),
    ("%(team)ih%fn-hits-%in", "ball-hits-wall"),
    ("%(kind)ih%in-is-enemy", "wall-is-enemy"),
    ("%(hp)fh%fn-has-hp", "ball-has-hp"),  # empty-valued tag still counts
    ("%(team)fx-never", None),
    ("%(kind)ix-never", None),
    ("%(nope)fh-never", None),
    ("%(nope)ih-never", None),
    ("%(nope)fx%fn-lacks", "ball-lacks"),
    ("%(nope)ix%in-lacks", "wall-lacks"),
    ("%fn-%(nope)ih-late-condition", None),  # a failing condition anywhere drops it
    ("%(team)fh", None),  # conditions only: empty name, no event
    # tag values: nearest ancestor wins, missing is empty
    ("team-%(team)ft-vs-%(team)it", "team-red-vs-blue"),
    ("%(rank)ft/%(rank)it", "root/wall"),
    ("%(kind)it-%(kind)ft-end", "enemy--end"),
    ("[%(hp)ft]", "[]"),
    ("%(nope)ft%(nope)it", None),  # substitutions that give an empty name: no event
    # a key before a code that takes none is parsed and ignored
    ("%(team)fnx", "ballx"),
]

INVALID = [
    # Panda3D consumes the two characters after '%' (or after the key) whatever they are
    ("x%zz-y", "x-y"),
    ("lit%%fn", "litn"),
    ("50%", "50"),
    ("%", None),
    ("%f", None),
    ("%(", None),
    ("%(ab", "b"),  # no ')': the '(' is part of the bad code, 'b' is literal
    ("%(ab)c", None),
    ("a%(b)", "a"),
    ("%(team)ft%in%", "redwall"),
]


@pytest.mark.parametrize("pattern, expected", EXPANSIONS)
def test_expand_pattern(pattern, expected):
    render, ball, wall = tagged_scene()
    c = contact(ball, wall, into_tangible=False)
    assert expand_pattern(pattern, c) == expected


@pytest.mark.filterwarnings("ignore:invalid symbol")
@pytest.mark.parametrize("pattern, expected", INVALID)
def test_expand_pattern_invalid_codes(pattern, expected):
    render, ball, wall = tagged_scene()
    assert expand_pattern(pattern, contact(ball, wall)) == expected


def test_invalid_code_warns_once_per_pattern():
    _compile.cache_clear()
    render, ball, wall = tagged_scene()
    c = contact(ball, wall)
    with pytest.warns(UserWarning, match=re.escape("invalid symbol in event pattern 'x%zz': %zz")):
        assert expand_pattern("x%zz", c) == "x"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert expand_pattern("x%zz", c) == "x"


@pytest.mark.parametrize(
    "from_tangible, into_tangible, expected",
    [
        (True, True, "tt"),
        (True, False, "ti"),
        (False, True, "it"),
        (False, False, "ii"),
    ],
)
def test_tangibility_codes(from_tangible, into_tangible, expected):
    render, ball, wall = tagged_scene()
    assert expand_pattern("%fs%is", contact(ball, wall, 0.5, from_tangible, into_tangible)) == (
        expected
    )


@pytest.mark.parametrize("into_node", [CollisionNode("wall"), PandaNode("wall"), None])
def test_ig_is_c_for_every_into_node(into_node):
    if into_node is None:
        into_node = CardMaker("wall").generate()  # a GeomNode
    render, ball, wall = tagged_scene(into_node)
    assert expand_pattern("%in-%ig", contact(ball, wall)) == "wall-c"


def test_expand_pattern_rejects_non_str_and_ignores_empty():
    render, ball, wall = tagged_scene()
    c = contact(ball, wall)
    with pytest.raises(ValueError, match=r"^pattern must be a str, got None$"):
        expand_pattern(None, c)
    assert expand_pattern("", c) is None


# -- parity with Panda3D's CollisionHandlerEvent ------------------------------------------

PARITY_PATTERNS = {
    "in": [p for p, _ in EXPANSIONS] + [p for p, _ in INVALID],
    "again": ["%fn-again-%in", "%(team)ih%in-again-%(team)it", "%(nope)fh-never"],
    "out": ["%fn-out-%in", "%(kind)it-out", "%(nope)ih-never", "%fs%is%ig-out"],
}


def panda_event_names(render, ball, patterns, frames):
    """Event names Panda3D's CollisionHandlerEvent throws, one list per frame.

    ``frames`` says per frame whether ``ball`` overlaps the into object (placed at the
    origin) or sits far away.
    """
    handler = CollisionHandlerEvent()
    for p in patterns["in"]:
        handler.add_in_pattern(p)
    for p in patterns["again"]:
        handler.add_again_pattern(p)
    for p in patterns["out"]:
        handler.add_out_pattern(p)
    trav = CollisionTraverser()
    trav.add_collider(ball, handler)
    queue = EventQueue.get_global_event_queue()
    while not queue.is_queue_empty():
        queue.dequeue_event()
    names = []
    for overlap in frames:
        ball.set_pos(render, (0.5, 0, 0) if overlap else (50, 0, 0))
        trav.traverse(render)
        frame = []
        while not queue.is_queue_empty():
            frame.append(queue.dequeue_event().name)
        names.append(frame)
    return names


def our_event_names(ball, wall, patterns, frames, from_tangible, into_tangible):
    ours = EventPatterns()
    for kind in KINDS:
        for p in patterns[kind]:
            getattr(ours, f"add_{kind}_pattern")(p)
    tracker = PairTracker()
    names = []
    for overlap in frames:
        messenger = FakeMessenger()
        touches = [(1, contact(ball, wall, 0.5, from_tangible, into_tangible), None)]
        send_events(messenger, ours, tracker.advance(touches if overlap else []))
        names.append([name for name, _ in messenger.sent])
    return names


FRAMES = [True, True, True, False, False, True, False]


@pytest.mark.filterwarnings("ignore:invalid symbol")
@pytest.mark.parametrize("from_tangible", [True, False])
@pytest.mark.parametrize("into_tangible", [True, False])
def test_parity_with_collision_handler_event(from_tangible, into_tangible):
    render, ball, wall = tagged_scene()
    ball.node().add_solid(CollisionSphere(0, 0, 0, 1))
    wall.node().add_solid(CollisionSphere(0, 0, 0, 1))
    ball.node().modify_solid(0).set_tangible(from_tangible)
    wall.node().modify_solid(0).set_tangible(into_tangible)
    wall.set_pos(render, 0, 0, 0)

    theirs = panda_event_names(render, ball, PARITY_PATTERNS, FRAMES)
    ours = our_event_names(ball, wall, PARITY_PATTERNS, FRAMES, from_tangible, into_tangible)
    assert ours == theirs
    # The comparison is not vacuous: every kind fired, and the h/x/t codes took effect.
    flat = [n for frame in theirs for n in frame]
    assert "ball-into-wall" in flat and "ball-again-wall" in flat and "ball-out-wall" in flat
    assert "team-red-vs-blue" in flat and "-wall" in flat and "wall-again-blue" in flat
    assert not any("never" in n for n in flat)
    assert theirs[3] == [
        "ball-out-wall",
        "enemy-out",
        f"{'ti'[not from_tangible]}{'ti'[not into_tangible]}c-out",
    ]
    assert theirs[4] == []


def test_parity_ig_into_visible_geometry():
    """Panda3D writes 'c' for %ig even when the into object is a GeomNode."""
    render, ball, wall = tagged_scene(CardMaker("wall").generate())
    ball.node().add_solid(CollisionSphere(0, 0, 0, 1))
    ball.node().set_from_collide_mask(0xFFFFFFFF)  # GeomNodes are only in bit 20
    wall.set_pos(render, 0, 0, 0)
    wall.set_p(render, -90)
    patterns = {"in": ["%fn-%in-%ig-%is", "%(kind)ih%ig"], "again": [], "out": []}
    theirs = panda_event_names(render, ball, patterns, [True])
    assert theirs == [["ball-wall-c-t", "c"]]
    assert our_event_names(ball, wall, patterns, [True], True, True) == theirs


# -- EventPatterns ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_event_patterns_api(kind):
    ev = EventPatterns()
    cap = kind.capitalize()
    add, add_c = getattr(ev, f"add_{kind}_pattern"), getattr(ev, f"add{cap}Pattern")
    add("%fn-a")
    add_c("%fn-b")
    assert getattr(ev, f"get_{kind}_patterns")() == ["%fn-a", "%fn-b"]
    assert getattr(ev, f"get{cap}Patterns")() == ["%fn-a", "%fn-b"]
    assert getattr(ev, f"get_num_{kind}_patterns")() == 2
    assert getattr(ev, f"getNum{cap}Patterns")() == 2
    assert getattr(ev, f"get_{kind}_pattern")(1) == "%fn-b"
    assert getattr(ev, f"get{cap}Pattern")(0) == "%fn-a"
    copy = getattr(ev, f"get_{kind}_patterns")()
    copy.append("changed")
    assert getattr(ev, f"get_num_{kind}_patterns")() == 2
    getattr(ev, f"set{cap}Pattern")("%in-only")
    assert getattr(ev, f"get_{kind}_patterns")() == ["%in-only"]
    getattr(ev, f"clear{cap}Patterns")()
    assert getattr(ev, f"get_{kind}_patterns")() == []
    add("%fn-c")
    getattr(ev, f"clear_{kind}_patterns")()
    assert getattr(ev, f"get_num_{kind}_patterns")() == 0
    # the other kinds were never touched
    for other in KINDS:
        if other != kind:
            assert getattr(ev, f"get_{other}_patterns")() == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", ["", None, 3, b"%fn"])
def test_event_patterns_reject_bad_patterns(kind, bad):
    ev = EventPatterns()
    for method in (f"add_{kind}_pattern", f"set_{kind}_pattern"):
        with pytest.raises(ValueError, match=rf"^{kind}_pattern must be a non-empty str, got "):
            getattr(ev, method)(bad)
    assert getattr(ev, f"get_num_{kind}_patterns")() == 0


def test_event_patterns_index_errors():
    ev = EventPatterns()
    ev.add_in_pattern("x")
    for n in (1, -1, "0", True):
        with pytest.raises(IndexError, match=r"^n must be an int in \[0, 1\) for the in patterns"):
            ev.get_in_pattern(n)


def test_event_patterns_warn_about_invalid_codes_when_added():
    _compile.cache_clear()
    ev = EventPatterns()
    with pytest.warns(UserWarning, match=re.escape("'%fn-%q1': %q1")):
        ev.add_in_pattern("%fn-%q1")
    assert ev.get_in_patterns() == ["%fn-%q1"]  # still accepted, as Panda3D does


@pytest.mark.parametrize(
    "camel",
    [
        "addInPattern",
        "setInPattern",
        "clearInPatterns",
        "getInPattern",
        "getNumInPatterns",
        "getInPatterns",
        "addAgainPattern",
        "setAgainPattern",
        "clearAgainPatterns",
        "getAgainPattern",
        "getNumAgainPatterns",
        "getAgainPatterns",
        "addOutPattern",
        "setOutPattern",
        "clearOutPatterns",
        "getOutPattern",
        "getNumOutPatterns",
        "getOutPatterns",
    ],
)
def test_event_patterns_names_match_collision_handler_event(camel):
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    assert getattr(EventPatterns, camel) is getattr(EventPatterns, snake)
    assert hasattr(CollisionHandlerEvent, camel) and hasattr(CollisionHandlerEvent, snake)


# -- send_events --------------------------------------------------------------------------


def test_send_events_order_and_arguments():
    render, ball, wall = tagged_scene()
    ev = EventPatterns()
    ev.add_in_pattern("%fn-into-%in")
    ev.add_in_pattern("%(nope)fh-never")
    ev.add_in_pattern("hit-%in")
    ev.add_again_pattern("again-%in")
    ev.add_out_pattern("%fn-out-%in")
    c1, c2, c3 = contact(ball, wall, 0.1), contact(ball, wall, 0.2), contact(ball, wall, 0.3)
    m = FakeMessenger()
    send_events(m, ev, [("in", c1), ("again", c2), ("out", c3), ("in", c1)])
    assert m.sent == [
        ("ball-into-wall", [c1]),
        ("hit-wall", [c1]),
        ("again-wall", [c2]),
        ("ball-out-wall", [c3]),
        ("ball-into-wall", [c1]),
        ("hit-wall", [c1]),
    ]
    assert all(args[0] is c for (_, args), c in zip(m.sent, [c1, c1, c2, c3, c1, c1]))


def test_send_events_through_a_real_messenger():
    render, ball, wall = tagged_scene()
    ev = EventPatterns()
    ev.addInPattern("%fn-into-%in")
    ev.addOutPattern("%fn-out-%in")
    messenger = Messenger()
    listener = DirectObject()
    got = []
    messenger.accept("ball-into-wall", listener, lambda c: got.append(("in", c)))
    messenger.accept("ball-out-wall", listener, lambda c: got.append(("out", c)))
    try:
        enter, leave = contact(ball, wall, 0.25), contact(ball, wall, 0.75)
        tracker = PairTracker()
        send_events(messenger, ev, tracker.advance([(("ball", "wall"), enter, leave)]))
    finally:
        messenger.ignoreAll(listener)
    assert got == [("in", enter), ("out", leave)]
    assert got[0][1] is enter and got[1][1] is leave


# -- PairTracker --------------------------------------------------------------------------


@pytest.fixture
def nodes():
    render = NodePath("render")
    return render.attach_new_node("ball"), render.attach_new_node("wall")


def test_tracker_in_again_out_over_frames(nodes):
    ball, wall = nodes
    tr = PairTracker()
    a1, a2, a3, b3, a5 = (contact(ball, wall, t) for t in (0.5, 0.1, 0.9, 0.2, 0.0))
    assert tr.advance([("A", a1, None)]) == [("in", a1)]
    assert tr.open_keys() == {"A"} and len(tr) == 1 and "A" in tr
    assert tr.advance([("A", a2, None)]) == [("again", a2)]
    assert tr.advance([("A", a3, None), ("B", b3, None)]) == [("in", b3), ("again", a3)]
    assert tr.open_keys() == {"A", "B"}
    # Pairs end in the order they opened, with their last contact.
    assert tr.advance([]) == [("out", a3), ("out", b3)]
    assert tr.open_keys() == set() and len(tr) == 0
    assert tr.advance([]) == []
    assert tr.advance([("A", a5, None)]) == [("in", a5)]


def test_tracker_outs_of_ended_pairs_come_first(nodes):
    ball, wall = nodes
    tr = PairTracker()
    late, early = contact(ball, wall, 0.9), contact(ball, wall, 0.0)
    tr.advance([("old", late, None)])
    assert tr.advance([("new", early, None)]) == [("out", late), ("in", early)]


def test_tracker_pass_through_sorted_by_time(nodes):
    ball, wall = nodes
    tr = PairTracker()
    a_in, a_out, b_in = contact(ball, wall, 0.2), contact(ball, wall, 0.7), contact(ball, wall, 0.5)
    events = tr.advance([("A", a_in, a_out), ("B", b_in, None)])
    assert events == [("in", a_in), ("in", b_in), ("out", a_out)]
    assert tr.open_keys() == {"B"}
    # A pass-through of an open pair is again + out.
    b_again, b_out = contact(ball, wall, 0.1), contact(ball, wall, 0.3)
    assert tr.advance([("B", b_again, b_out)]) == [("again", b_again), ("out", b_out)]
    assert tr.open_keys() == set()


def test_tracker_ties_keep_the_given_order(nodes):
    ball, wall = nodes
    tr = PairTracker()
    b, a, a_exit, c = (contact(ball, wall, 0.5) for _ in range(4))
    events = tr.advance([("B", b, None), ("A", a, a_exit), ("C", c, None)])
    assert [(k, x is y) for (k, x), y in zip(events, [b, a, a_exit, c])] == [
        ("in", True),
        ("in", True),
        ("out", True),
        ("in", True),
    ]


def test_tracker_close_and_close_all(nodes):
    ball, wall = nodes
    tr = PairTracker()
    cs = {k: contact(ball, wall, 0.1 * i) for i, k in enumerate([(1, 2), (1, 3), (4, 2)])}
    tr.advance([(k, c, None) for k, c in cs.items()])
    # Node 2 removed: both of its pairs end now, in opening order.
    assert tr.close(lambda key: 2 in key) == [("out", cs[(1, 2)]), ("out", cs[(4, 2)])]
    assert tr.open_keys() == {(1, 3)}
    assert tr.close(lambda key: 2 in key) == []
    # A closed pair that touches again starts over with 'in'.
    again = contact(ball, wall, 0.6)
    assert tr.advance([((1, 2), again, None), ((1, 3), cs[(1, 3)], None)]) == [
        ("again", cs[(1, 3)]),
        ("in", again),
    ]
    assert tr.close_all() == [("out", cs[(1, 3)]), ("out", again)]
    assert tr.close_all() == [] and len(tr) == 0


def test_tracker_rejects_bad_touches_without_changing_state(nodes):
    ball, wall = nodes
    tr = PairTracker()
    first = contact(ball, wall, 0.5)
    tr.advance([("A", first, None)])
    c = contact(ball, wall, 0.5)
    with pytest.raises(ValueError, match=r"^touches lists key 'B' more than once in one frame$"):
        tr.advance([("B", c, None), ("B", c, None)])
    with pytest.raises(ValueError, match=r"exit_contact.t must be >= enter_contact.t for key 'B'"):
        tr.advance([("B", c, contact(ball, wall, 0.25))])
    with pytest.raises(ValueError, match=r"^touches\[0\] must be \(key, enter_contact, exit_"):
        tr.advance([("B", c)])
    assert tr.open_keys() == {"A"}
    assert tr.close_all() == [("out", first)]


_frame = st.lists(
    st.tuples(
        st.integers(0, 5),  # key
        st.floats(0, 1),  # enter t
        st.booleans(),  # passes through
        st.floats(0, 1),  # exit as a fraction of the rest of the frame
    ),
    unique_by=lambda touch: touch[0],
    max_size=6,
)
_step = st.tuples(_frame, st.sets(st.integers(0, 5), max_size=2))  # touches, keys removed


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, max_size=12))
def test_tracker_events_are_balanced_and_ordered(steps):
    render = NodePath("render")
    ball, wall = render.attach_new_node("ball"), render.attach_new_node("wall")
    tr = PairTracker()
    keep = []  # every contact stays alive, so id() identifies it
    owner = {}  # id(contact) -> key
    streams = {k: "" for k in range(6)}  # per key: its kinds, space separated
    last = {}  # per key: the contact an out must carry

    def new_contact(key, t):
        c = contact(ball, wall, t)
        keep.append(c)
        owner[id(c)] = key
        return c

    def record(events):
        for kind, c in events:
            key = owner[id(c)]
            streams[key] += kind + " "
            last[key] = c

    for touches, removed in steps:
        before = tr.open_keys()
        given_touches, expected = [], {}
        for key, t, through, f in touches:
            enter = new_contact(key, t)
            leave = new_contact(key, t + (1 - t) * f) if through else None
            given_touches.append((key, enter, leave))
            expected[key] = [("again" if key in before else "in", enter)]
            if leave is not None:
                expected[key].append(("out", leave))
        events = tr.advance(given_touches)

        # Pairs that ended between frames: out first, with their last contact.
        ended = [k for k in before if k not in expected]
        n = len(ended)
        assert sorted(owner[id(c)] for _, c in events[:n]) == sorted(ended)
        assert all(kind == "out" and c is last[owner[id(c)]] for kind, c in events[:n])
        # Then this frame's contacts, by time, each key's events exactly as expected.
        rest = events[n:]
        assert [c.t for _, c in rest] == sorted(c.t for _, c in rest)
        for key, evs in expected.items():
            mine = [(kind, c) for kind, c in rest if owner[id(c)] == key]
            assert [kind for kind, _ in mine] == [kind for kind, _ in evs]
            assert all(c is e for (_, c), (_, e) in zip(mine, evs))
        assert len(rest) == sum(len(v) for v in expected.values())
        assert tr.open_keys() == {k for k, _, through, _ in touches if not through}
        record(events)

        open_now = tr.open_keys()
        closed = tr.close(lambda key, removed=removed: key in removed)
        assert sorted(owner[id(c)] for _, c in closed) == sorted(open_now & removed)
        assert all(kind == "out" and c is last[owner[id(c)]] for kind, c in closed)
        assert not (tr.open_keys() & removed)
        record(closed)

    for key, kinds in streams.items():
        assert re.fullmatch(r"(in (again )*out )*(in (again )*)?", kinds), (key, kinds)
        assert (key in tr.open_keys()) == (not re.fullmatch(r"(in (again )*out )*", kinds))
    final = tr.close_all()
    assert all(kind == "out" and c is last[owner[id(c)]] for kind, c in final)
    record(final)
    for key, kinds in streams.items():
        assert re.fullmatch(r"(in (again )*out )*", kinds), (key, kinds)
    assert len(tr) == 0
