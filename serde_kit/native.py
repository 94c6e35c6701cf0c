"""Which read path runs: the optional compiled reader, or the pure-Python one.

``serde_kit._reader`` (built from ``serde_kit/_reader.c`` when a C compiler was
there at install time) decodes a whole row in C and builds the typed values whose
envelope head this module registered, after the allowlist allowed them; every
other value, error and limit stays with the pure path (see the C file's header).
Both paths give identical values, types and errors (tests/native/).

- ``ACTIVE`` is ``"native"`` or ``"python"``: the path new serializers read with,
  the compiled reader whenever it is built.
- ``SERDE_KIT_PURE_PYTHON=1`` selects the pure path even when the reader is built.
- ``SERDE_KIT_NATIVE=1`` (the opt-in switch before the reader was the default) is
  still accepted and changes nothing.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import importlib
import os
import pathlib
import sys
import types
import uuid
import zoneinfo
from typing import Any, Protocol

import msgspec

from . import _prescan, budget
from .errors import SerdeError
from .ext import codes, langchain, numpy as numpy_ext, stdlib

__all__ = ["ACTIVE", "AVAILABLE", "checked_reader", "engine", "loads_typed", "reason"]


class Engine(Protocol):
    """What the decoder calls to read a whole row at its top level."""

    def decode(self, data: bytes, /) -> Any: ...


_reader: types.ModuleType | None
_IMPORT_FAILURE = ""
try:
    # By name: a compiled module has no source for the import contract's linter to read.
    _reader = importlib.import_module("serde_kit._reader")
except ImportError as exc:
    _reader = None
    if not (isinstance(exc, ModuleNotFoundError) and exc.name == "serde_kit._reader"):
        # Built but unloadable (another Python's build, a missing symbol): not the same
        # fix as a missing compiler, so the reason says which.
        _IMPORT_FAILURE = " ".join(str(exc).split())[:200]

#: Whether the compiled reader was built and imports.
AVAILABLE = _reader is not None


def _choose() -> tuple[str, str]:
    if _reader is None:
        if _IMPORT_FAILURE:
            return "python", f"the compiled reader does not import ({_IMPORT_FAILURE}); reinstall serde-kit"
        return "python", "the compiled reader is not built (no C compiler at install time?)"
    pure = os.environ.get("SERDE_KIT_PURE_PYTHON")
    if pure == "1":
        return "python", "SERDE_KIT_PURE_PYTHON=1"
    if pure not in (None, "", "0"):
        # Any other value is a typo of the switch, not a choice: say so rather than guess.
        return "native", "the compiled reader is built; SERDE_KIT_PURE_PYTHON is ignored, only 1 selects the pure path"
    return "native", "the compiled reader is built; SERDE_KIT_PURE_PYTHON=1 selects the pure path"


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
    limits = decoder.limits
    keyed = sys.modules[type(decoder).__module__]._KEYED_HASH_TYPES  # types whose hash data cannot aim

    def prescan(data: bytes) -> bool:
        return _prescan.check(data, limits, in_decode=True)

    def tracked_decode(data: bytes) -> Any:
        return decoder._decode(data, False)

    fallback = _Fallback(levels[0], None, prescan, tracked_decode)
    reader = _make_reader(decoder, levels, safe_recursion_limit, fallback, None, keyed)
    reader.set_row_limits(limits.max_containers, limits.max_hash_collisions)
    # Rows that may hold a big map are read by the decoder's hash-tracking levels: their
    # top level becomes a reader too, which counts the hash of every typed value it builds
    # with the decoder's own counter, as the tracking hooks do for the values they build.
    tracked = decoder._tracked
    fallback = _Fallback(tracked[0], decoder._local)
    tracked[0] = _make_reader(decoder, tracked, safe_recursion_limit, fallback, decoder._track_hash, keyed)
    return reader  # type: ignore[no-any-return]


def checked_reader(engine: Any, limits: Any) -> Any:
    """``engine.decode_checked`` when ``engine`` is the compiled reader and may run the
    prescan itself (only when a row needs it), else None: the decoder prescans first.

    The reader runs the pure path's prescan of a row before it calls Python or hands the
    row back, and when its own counts (containers, hashable typed values) say the
    prescan could refuse the row or track its hashes; a row it reads wholly in C without
    either would pass the prescan (see serde_kit/_reader.c). What skipping it changes
    then is only the walk's charge to the work meter, which the decoder allows only on a
    meter of this row's own (:meth:`Decoder._loads_metered`), where the walk alone never
    spends the allowance (``max_work_per_byte`` at least the walk's units per byte).
    """
    if _reader is None or type(engine) is not _reader.Reader:
        return None
    if limits.max_work_per_byte < budget.WALK_UNITS_PER_BYTE:
        return None
    return engine.decode_checked


def loads_typed(engine: Any, slow: Any, on_error: Any, tiny_row: int, small_row: int, limits: Any = None) -> Any:
    """A serializer's ``loads_typed``: ``slow`` (its Python method), or with the compiled
    reader as ``engine`` a ``LoadsTyped`` that reads the rows ``slow``'s small-row path
    reads (``("msgpack", bytes)`` shorter than ``tiny_row``, or than ``small_row`` at the
    safe recursion limit, without a 0xff byte) itself. Given the decoder's ``limits``, it
    also reads the rows ``slow`` checks in full, up to ``max_row_bytes``, as that path
    does: one plain-layout numpy ext in one copy, and (when the decoder has a
    :func:`checked_reader`) any other row with ``decode_checked`` while no work meter is
    open on the thread. It hands their errors to ``on_error(exc, payload)`` and every
    other row to ``slow``."""
    if _reader is None or type(engine) is not _reader.Reader:
        return slow
    if limits is None:
        return _reader.LoadsTyped(engine, slow, on_error, tiny_row, small_row)
    meter_state = budget.local_state() if checked_reader(engine, limits) is not None else None
    return _reader.LoadsTyped(engine, slow, on_error, tiny_row, small_row, limits.max_row_bytes, meter_state)


def plain_array(engine: Any, data: bytes) -> Any:
    """The array of a row that is one plain-layout numpy ext (any size: one copy), built
    by the compiled reader; None when ``engine`` is not the reader or the row is anything else."""
    if _reader is None or type(engine) is not _reader.Reader:
        return None
    return engine.array(data)


class _Fallback:
    """The pure path's top-level engine, as the reader hands it whole rows.

    The reader may have called Python (hooks, rebuilders) for part of a row before it
    hands the row over, and those calls charge the row's work meter and (for a tracked
    reader) count typed values' hashes. It asks for :meth:`mark` before its first such
    call and re-reads with :meth:`redo`, which puts both back first: the pure path charges
    and counts each step of a row once, so the native path may not refuse a row it reads.
    """

    __slots__ = ("decode", "_local", "check", "tracked")

    def __init__(self, engine: Any, local: Any, check: Any = None, tracked: Any = None) -> None:
        self.decode = engine.decode
        self._local = local  # the decoder's thread-local of a tracked reader, else None
        # For the reader's decode_checked: the whole-row prescan (True: track the row's
        # hashes), and the row read with hash tracking after the prescan said so.
        self.check = check
        self.tracked = tracked

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

    def learn(code: int, head: bytes, view: memoryview | None) -> None:
        _learn(decoder, reader, code, head, view)

    reader = _reader.Reader(fallback, hooks, learn, decoder._construct, SerdeError, safe_recursion_limit, *tracking)
    return reader


def _learn(decoder: Any, reader: Any, code: int, head: bytes, view: memoryview | None) -> None:
    """After a Python hook built an ext the reader had no entry for: register its head
    when the decoder holds an allowed verdict for it (never for a refused type). For a
    numpy array (the hook built one, or a whole-row array is asked for): let the reader
    build plain-layout arrays once numpy is imported."""
    if code == codes.NUMPY_ARRAY:
        np = sys.modules.get("numpy")
        if np is not None:
            limits = decoder.limits
            dtypes = numpy_ext.dtype_cache()
            reader.set_numpy(np.empty, dtypes, limits.max_array_elements, numpy_ext.FAST_PATH_MIN_BYTES)
        return
    if view is None:
        return
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
    kind, cls, param = _kind(decoder, code, module, name, verdict, method)
    reader.register(code, head, len(items), method, module, name, kind, verdict, cls, param)


def _kind(
    decoder: Any, code: int, module: str, name: str, verdict: Any, method: str | None = None
) -> tuple[int, Any, Any]:
    """How the reader builds an allowed ``(code, module, name)``: in C for the standard
    rebuilders it mirrors, else by calling ``verdict``, the pure path's own rebuilder."""
    assert _reader is not None
    if code == codes.METHOD_SINGLE_ARG:
        if decoder._methods.get((module, name, method or "")) is verdict:
            return _method_kind(decoder.limits, module, name, method)
        return _reader.KIND_CALL, None, None
    if decoder._fixed.get((code, module, name)) is verdict:
        found = _C_KINDS.get((code, module, name))
        if found is not None and (found[0] != _reader.KIND_UUID or decoder.limits.max_text_length >= 32):
            return found
        if code == codes.CONSTRUCTOR_POS_ARGS and module in ("pathlib", "pathlib._local"):
            return _path_kind(verdict)
        return _limited_kind(decoder.limits, code, module, name, verdict)
    return _user_kind(verdict)


_ISO_CLASSES: dict[str, type] = {"datetime": datetime.datetime, "date": datetime.date, "time": datetime.time}


def _method_kind(limits: Any, module: str, name: str, method: str | None) -> tuple[int, Any, Any]:
    """ext 3: ``fromisoformat`` of the datetime classes, bounded by the text limit as
    serde_kit.ext.stdlib's ISO rebuilders are."""
    assert _reader is not None
    cls = _ISO_CLASSES.get(name) if module == "datetime" and method == "fromisoformat" else None
    if cls is None:
        return _reader.KIND_CALL, None, None
    return _reader.KIND_ISO, cls, (limits.max_text_length, cls.fromisoformat, cls is datetime.date)  # type: ignore[attr-defined]


def _limited_kind(limits: Any, code: int, module: str, name: str, verdict: Any) -> tuple[int, Any, Any]:
    """The standard rebuilders that check a limit first (serde_kit.ext.stdlib.limited_rebuilders):
    the C kind takes what is within it, the rebuilder everything else."""
    assert _reader is not None
    if code != codes.CONSTRUCTOR_SINGLE_ARG:
        return _reader.KIND_CALL, None, None
    if (module, name) == ("decimal", "Decimal"):
        # A Decimal without an exponent has |adjusted()| below its length: within both.
        max_exponent = _closure(verdict).get("max_exponent")
        if type(max_exponent) is int:
            return _reader.KIND_DECIMAL, decimal.Decimal, min(limits.max_text_length, max_exponent)
    elif (module, name) == ("builtins", "set"):
        return _reader.KIND_SET, set, limits.max_hash_collisions  # no more items: no hash check
    elif (module, name) == ("builtins", "frozenset"):
        return _reader.KIND_SET, frozenset, limits.max_hash_collisions
    elif (module, name) == ("zoneinfo", "ZoneInfo"):
        # zones loaded before, from the rebuilder's dict; a new key goes to it (charged)
        return _reader.KIND_ZONE, zoneinfo.ZoneInfo, (limits.max_text_length, stdlib.KNOWN_ZONES)
    return _reader.KIND_CALL, None, None


def _path_kind(verdict: Any) -> tuple[int, Any, Any]:
    """KIND_PATH for serde_kit.ext.stdlib's path rebuilder of a pathlib class: the C kind
    calls the class itself with the stored parts, as that rebuilder does, or on 3.11 the
    class's own ``_from_parsed_parts`` with parts it parsed (:func:`_parsed_parts_constructor`)."""
    assert _reader is not None
    cls = _closure(verdict).get("cls")
    if getattr(verdict, "__qualname__", "") == "_rebuild_path.<locals>.rebuild" and cls in stdlib.PATH_TYPES:
        parsed = _parsed_parts_constructor(cls)
        if parsed is not None:
            return _reader.KIND_PATH, cls, parsed
        # POSIX classes may be made from their parts joined into one text (the same path)
        return _reader.KIND_PATH, cls, issubclass(cls, pathlib.PurePosixPath)
    return _reader.KIND_CALL, None, None


def _parsed_parts_constructor(cls: type) -> Any:
    """``cls._from_parsed_parts`` when the reader may make ``cls(*parts)`` with it from parts
    it parsed itself (3.11's pathlib, whose paths hold only their parsed parts; see
    ``posix_parsed_path`` in serde_kit/_reader.c), else None: only on CPython 3.11, only
    for PosixPath and PurePosixPath whose constructor, parser and that method are still
    pathlib's own, on a system where the class can be made."""
    if sys.version_info[:2] != (3, 11) or cls not in (pathlib.PosixPath, pathlib.PurePosixPath):
        return None
    new = "Path.__new__" if issubclass(cls, pathlib.Path) else "PurePath.__new__"
    try:
        flavour: Any = cls._flavour  # type: ignore[attr-defined]
        posix: Any = getattr(pathlib, "_posix_flavour", None)
        own = (
            _from_pathlib(cls.__new__, new)
            and _from_pathlib(cls._from_parts.__func__, "PurePath._from_parts")  # type: ignore[attr-defined]
            and _from_pathlib(cls._parse_args.__func__, "PurePath._parse_args")  # type: ignore[attr-defined]
            and _from_pathlib(cls._from_parsed_parts.__func__, "PurePath._from_parsed_parts")  # type: ignore[attr-defined]
            and flavour is posix
            and _from_pathlib(flavour.parse_parts.__func__, "_Flavour.parse_parts")
            and _from_pathlib(flavour.splitroot.__func__, "_PosixFlavour.splitroot")
            and (flavour.sep, flavour.altsep, flavour.is_supported) == ("/", "", True)
        )
    except AttributeError:
        return None
    return cls._from_parsed_parts if own else None  # type: ignore[attr-defined]


def _from_pathlib(fn: Any, qualname: str) -> bool:
    return getattr(fn, "__module__", None) == "pathlib" and getattr(fn, "__qualname__", None) == qualname


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
    elif qualname == "v2_rebuilder.<locals>.rebuild" and found.get("fast") is not None:
        return _message_kind(found.get("cls"))
    elif qualname == "v2_rebuilder.<locals>.rebuild_plain":
        cls, by_name = found.get("cls"), found.get("by_name")
        if isinstance(cls, type) and type(by_name) is bool:
            return _reader.KIND_PYDANTIC, cls, by_name
    return _reader.KIND_CALL, None, None


def _message_kind(cls: Any) -> tuple[int, Any, Any]:
    """KIND_MESSAGE for a curated langchain-core class whose fast builder the verdict
    runs first: the C kind accepts what that builder accepts (or less) and builds the
    same object; every other shape goes to the verdict."""
    assert _reader is not None
    shape = langchain.fast_shape(cls)
    object_new: Any = object.__new__
    if shape is None or not isinstance(cls, type) or cls.__new__ is not object_new:
        return _reader.KIND_CALL, None, None
    try:
        checks = tuple(_reader.CHECKS.index(check) for check in shape.checks)
    except ValueError:  # a check this reader does not know
        return _reader.KIND_CALL, None, None
    ai = None
    if shape.ai is not None:
        counts, details = shape.ai.usage[:3], shape.ai.usage[3:]
        declared = {"input_token_details": shape.ai.input, "output_token_details": shape.ai.output}
        if any(detail not in declared for detail in details):
            return _reader.KIND_CALL, None, None
        ai = (shape.ai.call, shape.ai.invalid, counts, details, tuple(declared[detail] for detail in details))
    return _reader.KIND_MESSAGE, cls, (shape.names, checks, shape.expected_type, shape.allows_extra, ai)


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
        (codes.CONSTRUCTOR_SINGLE_ARG, "collections", "deque"): (_reader.KIND_DEQUE, collections.deque, None),
        (codes.CONSTRUCTOR_POS_ARGS, "collections", "deque"): (_reader.KIND_DEQUE, collections.deque, None),
    }
