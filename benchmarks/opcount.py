"""Count the numpy operations the plugin's own code makes in a pass.

An operation is one call into numpy from a line of ``panda3d_ccd``: a function or ufunc
(``np.concatenate``, ``np.maximum.at``), an array method (``a.astype``, ``a.tolist``), an
operator (``a + b``, ``a < b``, ``-a``, ``a += b``) or a subscript (``a[m]``,
``a[i] = v``). Each pays numpy's fixed cost (parsing its arguments, resolving dtypes,
allocating the result), some 0.3 to 1 us whatever the arrays' length; in a small scene a
pass is made of little else, so their number is the pass's budget.

Neither cProfile nor ``sys.setprofile`` sees most of them: a ``c_call`` event is raised only
for builtin functions and methods, and numpy's ufuncs, its dispatched functions
(``np.concatenate``, ``np.where`` are ``_ArrayFunctionDispatcher`` objects) and every
operator are none of those. Three hooks, installed only around the counted pass, see them:

* **operators and subscripts**: the slots of the ``ndarray`` type (its number methods,
  ``tp_richcompare``, ``mp_subscript`` and ``mp_ass_subscript``) are swapped for ctypes
  callbacks that count and call the original. Each slot is checked first against the
  function its own wrapper descriptor (``ndarray.__add__``...) wraps, so a type layout
  other than the one assumed is refused (:class:`Unsupported`), never written to.
* **functions**: every callable of the ``numpy`` and ``numpy.linalg`` namespaces, types
  excepted, is replaced by a counting wrapper (a ufunc's ``reduce``, ``at``, ``outer``...
  are counted through it).
* **methods**: ``sys.setprofile``'s ``c_call`` events for methods bound to an ndarray.

An operation is counted once, where its caller's frame is a file of the plugin's package
and no other hooked operation is under way (``np.linalg.norm`` is one, not the several it
makes itself). Not counted: the arithmetic of numpy scalars (``np.float64`` times a float,
which numpy's scalar types do themselves, as ``a[i] * 2.0`` after the counted ``a[i]``),
an operator whose left operand is a numpy scalar and which that scalar computes itself,
reads of array attributes (``a.shape``, ``a.T``, ``a.size``), ``len()``, ``bool()`` and
iteration of arrays, numpy's classes (``np.float64(x)``, ``np.dtype``, the
``np.errstate(...)`` context, whose entry and exit cProfile does show), and
numpy callables bound to a name before the count began (``from numpy import ...`` or a
module-level alias: the plugin has none). An operation that raises inside the count is
recorded in :attr:`OpCounter.errors` (the callback cannot hand the exception on: its
caller sees a SystemError instead), so a count taken over one is known to be void.
"""

from __future__ import annotations

import ctypes
import os
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import panda3d_ccd
from panda3d_ccd import ContinuousCollision

__all__ = ["OpCounter", "Unsupported", "PHASES", "PHASE_ORDER", "phase_of"]

_P = ctypes.c_void_p
_UNARY = ctypes.PYFUNCTYPE(_P, _P)
_BINARY = ctypes.PYFUNCTYPE(_P, _P, _P)
_TERNARY = ctypes.PYFUNCTYPE(_P, _P, _P, _P)
_COMPARE = ctypes.PYFUNCTYPE(_P, _P, _P, ctypes.c_int)
_SET_ITEM = ctypes.PYFUNCTYPE(ctypes.c_int, _P, _P, _P)

#: PyNumberMethods in CPython's order (unchanged since 3.5): the dunder whose wrapper
#: descriptor wraps each slot and the slot's signature; None for the conversions
#: (``__bool__``, ``__int__``, ``__float__``, ``__index__``), not counted.
_NUMBER_SLOTS: list[tuple[str, Any] | None] = [
    ("__add__", _BINARY), ("__sub__", _BINARY), ("__mul__", _BINARY), ("__mod__", _BINARY),
    ("__divmod__", _BINARY), ("__pow__", _TERNARY), ("__neg__", _UNARY), ("__pos__", _UNARY),
    ("__abs__", _UNARY), None, ("__invert__", _UNARY), ("__lshift__", _BINARY),
    ("__rshift__", _BINARY), ("__and__", _BINARY), ("__xor__", _BINARY), ("__or__", _BINARY),
    None, None, None,
    ("__iadd__", _BINARY), ("__isub__", _BINARY), ("__imul__", _BINARY), ("__imod__", _BINARY),
    ("__ipow__", _TERNARY), ("__ilshift__", _BINARY), ("__irshift__", _BINARY),
    ("__iand__", _BINARY), ("__ixor__", _BINARY), ("__ior__", _BINARY),
    ("__floordiv__", _BINARY), ("__truediv__", _BINARY), ("__ifloordiv__", _BINARY),
    ("__itruediv__", _BINARY), None, ("__matmul__", _BINARY), ("__imatmul__", _BINARY),
]  # fmt: skip
#: Offsets in PyTypeObject (64-bit, CPython 3.8 to 3.13) and in a wrapper descriptor.
_TP_NAME, _TP_BASICSIZE, _TP_AS_NUMBER, _TP_AS_MAPPING = 24, 32, 96, 112
_TP_FLAGS, _TP_RICHCOMPARE = 168, 200
_D_TYPE, _D_WRAPPED = 16, 48

#: What ``step()`` calls, grouped into the phases of a pass (the names are the component's
#: private methods: one renamed shows under its own name, in no group).
PHASES = {
    "_scan": "read",
    "_read_all": "read",
    "_read_planes": "read",
    "_piece_tables": "read",
    "_near_statics": "solve",
    "solve": "solve",
    "_write_back": "write back",
    "_touches": "events",
    "advance": "events",
    "send_contact": "events",
    "send_events": "events",
    "snapshot": "other",
    "step": "other",
}
PHASE_ORDER = ("read", "solve", "write back", "events", "other")


class Unsupported(RuntimeError):
    """The ndarray type's layout is not the one the operator hooks assume."""


def phase_of(frame: types.FrameType | None) -> str:
    """The method the pass (``step()``'s body, ``_step``) was running (directly) when
    ``frame`` ran: ``"step"`` for its own lines, ``"-"`` outside a pass."""
    step = ContinuousCollision._step.__code__
    while frame is not None:
        if frame.f_code is step:
            return "step"
        back = frame.f_back
        if back is not None and back.f_code is step:
            return frame.f_code.co_name
        frame = back
    return "-"


def _word(address: int) -> int:
    return _P.from_address(address).value or 0


def _wrapped(name: str) -> int:
    """The C function the wrapper descriptor ``ndarray.<name>`` calls."""
    descriptor = np.ndarray.__dict__.get(name)
    if type(descriptor).__name__ != "wrapper_descriptor":
        raise Unsupported(f"ndarray.{name} is {type(descriptor).__name__}, not a slot wrapper")
    if _word(id(descriptor) + _D_TYPE) != id(np.ndarray):
        raise Unsupported(f"ndarray.{name}: wrapper descriptor layout not recognised")
    return _word(id(descriptor) + _D_WRAPPED)


def _slots() -> list[tuple[int, str, Any]]:
    """(address of the slot, dunder, signature) of every ndarray slot to hook, each checked
    against the function its wrapper descriptor wraps."""
    if ctypes.sizeof(_P) != 8:
        raise Unsupported("operator hooks assume a 64-bit build")
    base = id(np.ndarray)
    name = ctypes.c_char_p.from_address(base + _TP_NAME).value
    size = ctypes.c_ssize_t.from_address(base + _TP_BASICSIZE).value
    flags = ctypes.c_ulong.from_address(base + _TP_FLAGS).value
    if (name, size, flags) != (b"numpy.ndarray", np.ndarray.__basicsize__, np.ndarray.__flags__):
        raise Unsupported(f"PyTypeObject layout not recognised (Python {sys.version.split()[0]})")
    number, mapping = _word(base + _TP_AS_NUMBER), _word(base + _TP_AS_MAPPING)
    slots = [
        (number + 8 * k, spec[0], spec[1])
        for k, spec in enumerate(_NUMBER_SLOTS)
        if spec is not None
    ]
    slots += [
        (mapping + 8, "__getitem__", _BINARY),
        (mapping + 16, "__setitem__", _SET_ITEM),
        (base + _TP_RICHCOMPARE, "__lt__", _COMPARE),
    ]
    for address, dunder, _proto in slots:
        if _word(address) != _wrapped(dunder):
            raise Unsupported(f"ndarray's slot for {dunder} is not where it was looked for")
    return slots


_LABELS = {"__lt__": "compare", "__getitem__": "a[...]", "__setitem__": "a[...] = v"}


class _Counted:
    """Stands in for a numpy callable while counting: counts each call, then makes it."""

    __slots__ = ("_fn", "_label", "_counter")

    def __init__(self, fn: Callable[..., Any], label: str, counter: OpCounter) -> None:
        self._fn, self._label, self._counter = fn, label, counter

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        counter = self._counter
        counter._enter(self._label, sys._getframe(1))
        try:
            return self._fn(*args, **kwargs)
        finally:
            counter._depth -= 1

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._fn, name)
        if isinstance(self._fn, np.ufunc) and callable(value):
            return _Counted(value, f"{self._label}.{name}", self._counter)
        return value


class OpCounter:
    """Counts the numpy operations of the plugin's code (the files under ``root``) inside
    :meth:`counting`.

    Attributes
    ----------
    counts : Counter of (phase, function, operation) -> int
        ``phase``: the method ``step()`` was running (:func:`phase_of`); ``function``:
        ``module:qualified name`` of the plugin function that made the call;
        ``operation``: e.g. ``np.concatenate``, ``ndarray.astype``, ``ndarray.__add__``.
    errors : list of str
        Operations that raised while counted (their counts stand, the pass's result is
        void).
    """

    def __init__(self, root: str | Path | None = None) -> None:
        #: Operations are counted where the caller's file is under this folder (by default
        #: the plugin's package).
        self.root = os.path.join(Path(panda3d_ccd.__file__).parent if root is None else root, "")
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.errors: list[str] = []
        self._depth = 0
        self._methods: list[Any] = []
        self._slots = _slots()
        self._mine: dict[Any, bool] = {}
        # (namespace, name, the callable, its stand-in), made once.
        self._names: list[tuple[Any, str, Any, _Counted]] = []
        for module, prefix in ((np, "np."), (np.linalg, "np.linalg.")):
            for name, value in list(vars(module).items()):
                if (
                    not name.startswith("_")
                    and callable(value)
                    and not isinstance(value, (type, types.ModuleType))
                ):
                    self._names.append((module, name, value, _Counted(value, prefix + name, self)))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def take(self) -> Counter[tuple[str, str, str]]:
        """The counts so far, and start again from zero."""
        counts, self.counts = self.counts, Counter()
        return counts

    # ------------------------------------------------------------------ counting
    def _enter(self, label: str, frame: types.FrameType) -> None:
        if self._depth == 0:
            code = frame.f_code
            mine = self._mine.get(code)
            if mine is None:
                mine = self._mine[code] = code.co_filename.startswith(self.root)
            if mine:
                module = Path(code.co_filename).stem
                where = f"{module}:{getattr(code, 'co_qualname', code.co_name)}"
                self.counts[(phase_of(frame), where, label)] += 1
        self._depth += 1

    def _hook(self, proto: Any, address: int, label: str) -> Any:
        original = proto(_word(address))
        failed = -1 if proto is _SET_ITEM else None

        def hook(*args: Any) -> Any:
            self._enter(label, sys._getframe(1))
            try:
                return original(*args)
            except BaseException as exc:  # noqa: BLE001 - recorded; C cannot take it
                self.errors.append(f"{label}: {exc!r}")
                return failed
            finally:
                self._depth -= 1

        return proto(hook)

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            if isinstance(getattr(arg, "__self__", None), np.ndarray):
                self._enter(f"ndarray.{arg.__name__}", frame)
                self._methods.append(arg)
        elif event in ("c_return", "c_exception") and self._methods and self._methods[-1] is arg:
            self._methods.pop()
            self._depth -= 1

    @contextmanager
    def counting(self) -> Iterator[OpCounter]:
        """Hooks installed for the ``with`` block: run one pass inside it."""
        if sys.getprofile() is not None:
            raise RuntimeError("another profiler is active; the counter needs sys.setprofile")
        written: list[tuple[int, int]] = []
        keep = []
        try:
            for module, name, _value, counted in self._names:
                setattr(module, name, counted)
            for address, dunder, proto in self._slots:
                hook = self._hook(proto, address, _LABELS.get(dunder, f"ndarray.{dunder}"))
                keep.append(hook)
                written.append((address, _word(address)))
                _P.from_address(address).value = ctypes.cast(hook, _P).value
            sys.setprofile(self._profile)
            yield self
        finally:
            sys.setprofile(None)
            for address, value in reversed(written):
                _P.from_address(address).value = value
            for module, name, value, _counted in self._names:
                setattr(module, name, value)
            self._depth = 0
            self._methods.clear()
            del keep
