"""Which read path runs: the optional compiled reader, or the pure-Python one.

``serde_kit._reader`` (built from ``serde_kit/_reader.c`` when a C compiler was
there at install time) decodes a whole row in C and builds the typed values whose
envelope head this module registered, after the allowlist allowed them; every
other value, error and limit stays with the pure path (see the C file's header).
Both paths give identical values, types and errors (tests/native/).

- ``ACTIVE`` is ``"native"`` or ``"python"``: the path new serializers read with.
- ``SERDE_KIT_PURE_PYTHON=1`` selects the pure path even when the reader is built.
- ``SERDE_KIT_NATIVE=1`` selects the compiled reader while it is opt-in.
"""

from __future__ import annotations

import datetime
import importlib
import os
import sys
import types
import uuid
import zoneinfo
from typing import Any, Protocol

import msgspec

from . import budget
from .errors import SerdeError
from .ext import codes

__all__ = ["ACTIVE", "AVAILABLE", "engine", "reason"]


class Engine(Protocol):
    """What the decoder calls to read a whole row at its top level."""

    def decode(self, data: bytes, /) -> Any: ...


_reader: types.ModuleType | None
try:
    # By name: a compiled module has no source for the import contract's linter to read.
    _reader = importlib.import_module("serde_kit._reader")
except ImportError:
    _reader = None

#: Whether the compiled reader was built and imports.
AVAILABLE = _reader is not None
_ON_BY_DEFAULT = False


def _choose() -> tuple[str, str]:
    if _reader is None:
        return "python", "the compiled reader is not built (no C compiler at install time?)"
    if os.environ.get("SERDE_KIT_PURE_PYTHON") == "1":
        return "python", "SERDE_KIT_PURE_PYTHON=1"
    if _ON_BY_DEFAULT or os.environ.get("SERDE_KIT_NATIVE") == "1":
        return "native", "the compiled reader is built" + ("" if _ON_BY_DEFAULT else " and SERDE_KIT_NATIVE=1")
    return "python", "the compiled reader is opt-in: set SERDE_KIT_NATIVE=1"


ACTIVE, _REASON = _choose()


def reason() -> str:
    """One line saying which read path runs and why."""
    return f"{ACTIVE} read path: {_REASON}"


_ENVELOPE = msgspec.msgpack.Decoder(list[msgspec.Raw])
_TEXT = msgspec.msgpack.Decoder(str)


def engine(decoder: Any, levels: list[Any], safe_recursion_limit: int) -> Engine:
    """The top-level engine for ``decoder``: the compiled reader when active, else ``levels[0]``.

    ``levels`` are the decoder's msgspec decoders, one per ext nesting level; the
    reader calls their ext hooks for what it does not build, and falls back to
    ``levels[0]`` for whole rows it does not read.
    """
    fallback = levels[0]
    if ACTIVE != "native" or _reader is None:
        return fallback  # type: ignore[no-any-return]
    reader = _make_reader(decoder, levels, safe_recursion_limit, _Fallback(levels[0], None))
    # Rows that may hold a big map are read by the decoder's hash-tracking levels: their
    # top level becomes a reader too, which counts the hash of every typed value it builds
    # with the decoder's own counter, as the tracking hooks do for the values they build.
    tracked = decoder._tracked
    keyed = sys.modules[type(decoder).__module__]._KEYED_HASH_TYPES  # types whose hash data cannot aim
    fallback = _Fallback(tracked[0], decoder._local)
    tracked[0] = _make_reader(decoder, tracked, safe_recursion_limit, fallback, decoder._track_hash, keyed)
    return reader  # type: ignore[no-any-return]


class _Fallback:
    """The pure path's top-level engine, as the reader hands it whole rows.

    The reader may have called Python (hooks, rebuilders) for part of a row before it
    hands the row over, and those calls charge the row's work meter and (for a tracked
    reader) count typed values' hashes. It asks for :meth:`mark` before its first such
    call and re-reads with :meth:`redo`, which puts both back first: the pure path charges
    and counts each step of a row once, so the native path may not refuse a row it reads.
    """

    __slots__ = ("decode", "_local")

    def __init__(self, engine: Any, local: Any) -> None:
        self.decode = engine.decode
        self._local = local  # the decoder's thread-local of a tracked reader, else None

    @staticmethod
    def mark() -> int | None:
        meter = budget.current()
        return None if meter is None else meter.left

    def redo(self, data: bytes, left: int | None) -> Any:
        meter = budget.current()
        if meter is not None and left is not None:
            meter.left = left
        if self._local is not None:
            self._local.hashes = {}  # what the decoder set up for this row before calling the reader
        return self.decode(data)


def _make_reader(
    decoder: Any, levels: list[Any], safe_recursion_limit: int, fallback: _Fallback, *tracking: Any
) -> Any:
    assert _reader is not None
    hooks = tuple(level.ext_hook for level in levels)
    reader: Any = None

    def learn(code: int, head: bytes, view: memoryview) -> None:
        _learn(decoder, reader, code, head, view)

    reader = _reader.Reader(fallback, hooks, learn, decoder._construct, SerdeError, safe_recursion_limit, *tracking)
    return reader


def _learn(decoder: Any, reader: Any, code: int, head: bytes, view: memoryview) -> None:
    """After a Python hook built an ext the reader had no entry for: register its head
    when the decoder holds an allowed verdict for it (never for a refused type)."""
    try:
        items = _ENVELOPE.decode(view)
        module, name = _TEXT.decode(items[0]), _TEXT.decode(items[1])
        method = _TEXT.decode(items[3]) if code == codes.METHOD_SINGLE_ARG and len(items) > 3 else None
    except (msgspec.DecodeError, ValueError):
        return  # a shape the hot path does not take (it would not find a verdict either)
    # The verdict the pure path's hot path would take for this envelope (set only once
    # the allowlist allowed it).
    verdict = decoder._hot.get((code, len(items), module, name, method))
    if verdict is None:
        return
    kind, cls, param = _kind(decoder, code, module, name, verdict)
    reader.register(code, head, len(items), method, module, name, kind, verdict, cls, param)


def _kind(decoder: Any, code: int, module: str, name: str, verdict: Any) -> tuple[int, Any, Any]:
    """How the reader builds an allowed ``(code, module, name)``: in C for the standard
    rebuilders it mirrors, else by calling ``verdict``, the pure path's own rebuilder."""
    assert _reader is not None
    if decoder._fixed.get((code, module, name)) is verdict:
        found = _C_KINDS.get((code, module, name))
        if found is not None and (found[0] != _reader.KIND_UUID or decoder.limits.max_text_length >= 32):
            return found
        return _reader.KIND_CALL, None, None
    return _user_kind(verdict)


def _closure(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    try:
        return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells, strict=False)}
    except ValueError:  # an empty cell
        return {}


def _user_kind(verdict: Any) -> tuple[int, Any, Any]:
    """The C kind whose fast path is exactly the fast path of ``verdict``, one of the
    rebuilders serde_kit.ext.user / .pydantic make (read from its closure), else KIND_CALL.
    The C kind hands every other shape to ``verdict`` itself."""
    assert _reader is not None
    qualname = getattr(verdict, "__qualname__", "")
    found = _closure(verdict)
    if qualname == "_dataclass_rebuilder.<locals>.rebuild":
        cls, plain = found.get("cls"), found.get("plain")
        if isinstance(cls, type) and type(plain) is tuple and found.get("new") is object.__new__:
            if all(type(field) is str for field in plain):
                return _reader.KIND_DATACLASS, cls, plain
    elif qualname == "_enum_rebuilder.<locals>.rebuild":
        lookup, cls = found.get("lookup"), found.get("cls")
        members = getattr(lookup, "__self__", None)
        if isinstance(cls, type) and type(members) is dict and lookup == members.get:
            return _reader.KIND_ENUM, cls, members
    elif qualname == "v2_rebuilder.<locals>.rebuild_plain":
        cls, by_name = found.get("cls"), found.get("by_name")
        if isinstance(cls, type) and type(by_name) is bool:
            return _reader.KIND_PYDANTIC, cls, by_name
    return _reader.KIND_CALL, None, None


_C_KINDS: dict[tuple[int, str, str], tuple[int, Any, Any]] = {}
if _reader is not None:
    _C_KINDS = {
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "tuple"): (_reader.KIND_TUPLE, None, None),
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "date"): (_reader.KIND_INTS3, datetime.date, None),
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "timedelta"): (_reader.KIND_INTS3, datetime.timedelta, None),
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "datetime"): (
            _reader.KIND_DATETIME,
            datetime.datetime,
            (datetime.timezone, zoneinfo.ZoneInfo),
        ),
        (codes.CONSTRUCTOR_SINGLE_ARG, "uuid", "UUID"): (_reader.KIND_UUID, uuid.UUID, uuid.SafeUUID.unknown),
    }
