"""Checks of event streams shared by the tests (a plain module, imported by them)."""

from __future__ import annotations


def balanced(event_names: list[str]) -> list[str]:
    """Per (from, into) pair, the stream of ``from-kind-into`` names is in (again)* out,
    ..., and ends closed (kinds ``into``, ``again``, ``out``). Returns the violations
    (empty when balanced)."""
    state: dict[tuple[str, str], bool] = {}
    bad = []
    for name in event_names:
        f, kind, i = name.split("-")
        key = (f, i)
        if kind == "into":
            if state.get(key):
                bad.append(f"{name}: second in")
            state[key] = True
        else:
            if not state.get(key):
                bad.append(f"{name}: without an in")
            if kind == "out":
                state[key] = False
    return bad + [f"{f}/{i} left open" for (f, i), is_open in state.items() if is_open]
