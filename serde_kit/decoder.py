"""msgpack bytes in the stock ext format → Python values (the read half of :class:`Serializer`).

Every ext names what to build as ``(module, name)``. That pair is checked
against the allowlist before anything is imported; standard types are built
only from fixed tables (whatever ext code the row uses) and never imported by
name; code 3 dispatches only the methods in :data:`serde_kit.ext.stdlib.METHODS`.

msgspec decodes. It refuses trailing bytes, hands ext payloads over as
memoryviews, and counts nesting against the interpreter's recursion limit, so
hostile nesting ends in an error rather than a crashed thread. One msgspec
decoder per ext nesting level bounds the typed depth without per-call state.
Every row is held to the :class:`~serde_kit.limits.Limits` of its decoder;
:mod:`serde_kit._prescan` checks what msgspec cannot bound itself.
"""

from __future__ import annotations

import datetime
import importlib
import threading
import warnings
from collections.abc import Callable
from typing import Any

import msgspec

from . import _prescan, _stack, budget, events, native
from ._text import allow_entry, shell_assignment, shown
from .allowlist import BUILTIN_ARGUMENTS as _BUILTIN_ARGUMENTS, Allowlist, TypeName, origin_name, parse_name
from .errors import (
    BlockedTypeError,
    LenientDecodeWarning,
    LimitExceededError,
    MalformedDataError,
    RebuildError,
    SerdeError,
    UnknownTagError,
)
from .ext import codes, langchain, langgraph, numpy, pydantic, stdlib, user
from .ext.codes import RebuildFn
from .limits import DEFAULT_LIMITS, Limits
from .renames import Renames, renamed

# ext type, then its fixed header size and how the payload length is stored.
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_EXT_SIZED = {0xC7: 1, 0xC8: 2, 0xC9: 4}
#: A row that is one ext and nothing else, read as (code, payload bytes).
_TOP_LEVEL_EXT = msgspec.msgpack.Decoder(msgspec.msgpack.Ext)
#: Where a top-level ext's type code is, by its first byte.
_EXT_CODE_AT = {**{first: 1 for first in _FIXEXT}, **{first: 1 + size for first, size in _EXT_SIZED.items()}}
_MAX_WARNED_TYPES = 1000
#: Entries of each name-keyed cache: only allowed names reach them, but a generic
#: model's names multiply with its arguments.
_MAX_CACHED = 4096
#: Work charged for resolving a class by its stored name (an import, and for a
#: generic model building the parametrised class: milliseconds).
_RESOLVE_WORK = 200_000
SAFE_RECURSION_LIMIT = _stack.SAFE_RECURSION_LIMIT
#: What the msgspec engine raises on a whole row; :func:`engine_error` types it.
ENGINE_ERRORS = (msgspec.DecodeError, RecursionError, MemoryError)
# Types whose hash is keyed per process: stored data cannot aim at it. (Paths hash
# their text, and hashing one caches it on the object: leave them alone.)
_KEYED_HASH_TYPES = frozenset(
    {str, bytes, datetime.datetime, datetime.date, datetime.time, datetime.timedelta, *stdlib.PATH_TYPES}
)


class _Blocked:
    """Cached verdict for a pair the allowlist refuses."""

    __slots__ = ("error",)

    def __init__(self, error: BlockedTypeError) -> None:
        self.error = error


class Decoder:
    """Reads values; one per :class:`Serializer` (its class cache follows its allowlist)."""

    __slots__ = (
        "_allowlist", "_lenient", "_limits", "_cache", "_warned", "_fixed", "_fixed_names", "_methods", "_levels",
        "_tracked", "_local", "_validate", "_hot", "small_row", "tiny_row", "engine", "_unvalidated_warned",
        "_renames", "_checked_reader",
    )  # fmt: skip

    def __init__(
        self, allowlist: Allowlist, *, lenient: bool = False, limits: Limits = DEFAULT_LIMITS, validate: str = "auto",
        renames: Renames | None = None,
    ) -> None:
        if validate not in pydantic.VALIDATE_MODES:
            raise ValueError(f"validate must be one of {', '.join(map(repr, pydantic.VALIDATE_MODES))}, not {validate!r}")
        self._validate = validate
        self._renames: Renames = renames or {}  # stored name -> the class's name now (serde_kit.renames)
        self._unvalidated_warned: set[Any] = set()
        self._allowlist = allowlist
        self._lenient = lenient
        self._limits = limits
        self._cache: dict[tuple[int, str, str, str | None], RebuildFn | _Blocked] = {}
        # Allowed verdicts by envelope shape (code, length, module, name, method), for the hook.
        self._hot: dict[tuple[int, int, str, str, str | None], RebuildFn] = {}
        self._warned: set[tuple[str, str]] = set()
        self._fixed: dict[tuple[int, str, str], RebuildFn] = {
            **stdlib.REBUILDERS,
            **stdlib.limited_rebuilders(limits),
            **numpy.scalar_rebuilders(),
            **langgraph.REBUILDERS,
        }
        self._methods = stdlib.limited_methods(limits)
        self._fixed_names = frozenset((module, name) for _, module, name in self._fixed) | frozenset(
            (module, name) for module, name, _ in self._methods
        )
        self._local = threading.local()  # the current call's hash counts, per thread
        #: Rows shorter than this cannot exceed the row size or container limits or hold a flood.
        self.small_row = min(_prescan.SMALL_ROW, limits.max_row_bytes + 1, limits.max_containers + 1)
        #: Small rows shorter than this cannot nest deeper than the caller's own stack holds
        #: (one level takes at least a byte), whatever the recursion limit says.
        self.tiny_row = min(self.small_row, SAFE_RECURSION_LIMIT)
        # One msgspec decoder per ext nesting level; the tracked set also counts
        # the hashes of the typed values it builds (rows large enough to flood).
        self._levels = self._level_decoders(track=False)
        self._tracked = self._level_decoders(track=True)
        #: The top-level engine: what a small row (see :meth:`loads`) goes straight to. The
        #: msgspec decoder, or the compiled reader when serde_kit.native says it is active.
        self.engine = native.engine(self, self._levels, SAFE_RECURSION_LIMIT)  # native: the one hook
        #: native: the compiled reader's decode_checked, which runs the prescan only when a row needs it.
        self._checked_reader = native.checked_reader(self.engine, limits)

    @property
    def limits(self) -> Limits:
        return self._limits

    def loads(self, data: bytes) -> Any:
        """The value in ``data``; raises a :class:`DecodeError` subclass for anything else."""
        # Most rows (pending writes, small states) are too small to exceed a limit,
        # hold a flood or need the prescan: only a timestamp search, then msgspec.
        # (``255 in data`` is one memchr; ``b"\xff" in data`` costs ten times more.)
        size = len(data)
        if (
            size < self.tiny_row or size < self.small_row and _stack.recursion_limit() <= SAFE_RECURSION_LIMIT
        ) and 255 not in data:
            try:
                return self.engine.decode(data)
            except ENGINE_ERRORS as exc:
                raise engine_error(exc, data) from None
            except budget.NeedsMeter:
                return self.loads_with_meter(data)  # a costly step: read again with a work meter
        return self.loads_checked(data)

    def loads_checked(self, data: bytes) -> Any:
        """:meth:`loads` for a row the small-row path did not take (checked in full,
        with one work meter for the call)."""
        limits = self._limits
        size = len(data)
        if size > limits.max_row_bytes:
            raise limits.refuse("max_row_bytes", "size of the stored value", size)
        code_at = _EXT_CODE_AT.get(data[0]) if size else None
        if code_at is not None and size > code_at and data[code_at] == codes.NUMPY_ARRAY:
            # An array on its own. Its plain layout (dtype, a short shape, order,
            # buffer) holds nothing the prescan looks for and nothing that charges
            # the meter; a large one is read in one copy. The compiled reader's first,
            # when it is the engine (the pure path's engine is levels[0]).
            fast = None if self.engine is self._levels[0] else native.plain_array(self.engine, data)
            if fast is not None:
                return fast
            if size >= numpy.FAST_PATH_MIN_BYTES:
                fast = self._large_array(data)
            else:
                try:
                    ext = _TOP_LEVEL_EXT.decode(data)
                    fast = numpy.loads_plain(ext.data, limits)
                except SerdeError:
                    raise
                except Exception:
                    fast = None  # the general path reads it and reports what is wrong
            if fast is not None:
                return fast
        # Most rows hold nothing costly: read without a meter; the first costly step
        # asks for one (NeedsMeter) and the row is read again with it.
        try:
            return self._loads_metered(data, self._checked_reader is not None and budget.current() is None)
        except budget.NeedsMeter:
            pass
        except MemoryError:
            raise engine_error(MemoryError(), data) from None
        return self.loads_with_meter(data)

    def loads_with_meter(self, data: bytes) -> Any:
        """:meth:`loads_checked` with the call's work meter open from the start (for a row
        in which a costly step asked for one)."""
        opened = budget.open_meter(len(data), self._limits)
        try:
            return self._loads_metered(data, opened)
        except MemoryError:
            raise engine_error(MemoryError(), data) from None
        finally:
            if opened:
                budget.close_meter()

    def _loads_metered(self, data: bytes, own_meter: bool = False) -> Any:
        """Prescan (when the row needs it), then decode. ``own_meter``: the work meter open
        (or to be opened, on NeedsMeter) is this row's alone, not an outer call's."""
        limits = self._limits
        size = len(data)
        # Rows too small to hold a flood skip the prescan (but for a timestamp
        # search) and the hash tracking of typed values: the per-call cost of
        # small pending writes stays where it was.
        small = size < self.small_row
        checked_reader = self._checked_reader
        if (
            checked_reader is not None
            and own_meter
            and (not small or 255 in data)
            and _stack.recursion_limit() <= SAFE_RECURSION_LIMIT
        ):
            # native: the reader runs the same prescan itself, when (and only if) this row
            # needs it; skipped, it would have passed (see serde_kit.native.checked_reader).
            try:
                return checked_reader(data)
            except ENGINE_ERRORS as exc:
                raise engine_error(exc, data) from None
        # Typed values are hash-tracked only where a map could hold enough of them as keys.
        untracked = not (not small or 255 in data) or not _prescan.check(data, limits, in_decode=True)
        if _stack.recursion_limit() > SAFE_RECURSION_LIMIT and not _stack.shallow(data):
            return _stack.on_big_stack(self._decode_adopting, budget.current(), data, untracked)
        return self._decode(data, untracked)

    def _decode_adopting(self, meter: budget.Meter | None, data: bytes, untracked: bool) -> Any:
        with budget.adopted(meter):  # on the helper thread: the caller's meter
            return self._decode(data, untracked)

    def _large_array(self, data: bytes) -> Any:
        """The array a large row holding only an ext 6 in the plain layout stores, else None."""
        start = _check_ext_length(data)
        limits = self._limits
        return _rebuild(lambda payload: numpy.loads_large(payload, start, limits), data, "numpy", "ndarray")

    def _decode(self, data: bytes, untracked: bool) -> Any:
        if untracked:
            levels, local, outer = self._levels, None, None
        else:
            levels, local = self._tracked, self._local
            outer = getattr(local, "hashes", None)
            local.hashes = {}
        try:
            return (self.engine if local is None else levels[0]).decode(data)  # native: the compiled reader
        except ENGINE_ERRORS as exc:
            raise engine_error(exc, data) from None
        finally:
            if local is not None:
                local.hashes = outer

    def _track_hash(self, value: Any) -> None:
        """Count typed values of this row that share a hash value but differ.

        A plain map may use typed values as keys (msgspec builds them with the
        ext hook), and the hash of a UUID, a big int or a tuple of numbers can
        be aimed at by stored data: many such keys sharing one hash would make
        building the map quadratic.
        """
        try:
            found = hash(value)
        except Exception:
            return  # unhashable (or a hash that fails): cannot be a key
        hashes = self._local.hashes
        entry = hashes.get(found)
        if entry is None:
            hashes[found] = [value, 0]
            return
        try:
            same = entry[0] is value or bool(entry[0] == value)
        except Exception:
            same = False
        if not same:
            entry[1] += 1
            if entry[1] > self._limits.max_hash_collisions:
                raise self._limits.refuse("max_hash_collisions", "typed values of the row sharing one hash value", entry[1])

    def _level_decoders(self, *, track: bool) -> list[msgspec.msgpack.Decoder[Any]]:
        """One msgspec decoder per ext nesting level, the top level first.

        Built from the deepest level up, so each level's ext hook holds the
        decoder of the level below it.
        """
        levels: list[msgspec.msgpack.Decoder[Any]] = []
        below: msgspec.msgpack.Decoder[Any] | None = None
        for depth in range(self._limits.max_ext_depth, -1, -1):
            below = msgspec.msgpack.Decoder(ext_hook=self._hook(below, depth + 1, track))
            levels.append(below)
        levels.reverse()
        return levels

    def _hook(
        self, below: msgspec.msgpack.Decoder[Any] | None, depth: int, track: bool
    ) -> Callable[[int, memoryview], Any]:
        """The ext hook for exts ``depth`` levels deep; ``below`` decodes their payloads."""
        if below is None or depth > self._limits.max_ext_depth:
            limits = self._limits

            def too_deep(code: int, data: memoryview) -> Any:
                raise limits.refuse("max_ext_depth", "typed values nested in one another", depth)

            return too_deep
        hot = self._hot
        construct = self._construct
        decode = below.decode
        decode_error = msgspec.DecodeError
        method_code, last_envelope_code = codes.METHOD_SINGLE_ARG, codes.ENVELOPE_CODES[-1]

        def hook(code: int, data: memoryview) -> Any:
            if not 0 <= code <= last_envelope_code:
                return self._other_ext(below, code, data)
            try:
                env = decode(data)
            except decode_error as exc:
                raise MalformedDataError(f"ext code {code} ({codes.NAMES[code]}) holds invalid msgpack: {shown(exc)}") from None
            # Hot path: an envelope whose (code, shape, module, name, method) was checked before.
            if type(env) is list:
                size = len(env)
                if size >= 3:
                    module, name = env[0], env[1]
                    if type(module) is str and type(name) is str:
                        try:
                            rebuild = hot[(code, size, module, name, env[3] if code == method_code and size > 3 else None)]
                        except (KeyError, TypeError):
                            pass  # not seen yet (or an unhashable method): the checked path below
                        else:
                            try:
                                return rebuild(env)
                            except SerdeError:
                                raise
                            except Exception:
                                pass  # the checked path below gives the full error
            return construct(code, env)

        if not track:
            return hook
        track_hash = self._track_hash

        def tracked_hook(code: int, data: memoryview) -> Any:
            value = hook(code, data)
            if type(value).__hash__ is not None and type(value) not in _KEYED_HASH_TYPES:
                track_hash(value)
            return value

        return tracked_hook

    def _other_ext(self, below: msgspec.msgpack.Decoder[Any], code: int, data: memoryview) -> Any:
        """An ext that is not an envelope: a numpy array, a delta snapshot, or refused."""
        if code == codes.NUMPY_ARRAY:
            limits = self._limits
            if len(data) >= numpy.FAST_PATH_MIN_BYTES:
                value = _rebuild(lambda payload: numpy.loads_large(payload, 0, limits), data, "numpy", "ndarray")
            else:
                value = _rebuild(lambda payload: numpy.loads_plain(payload, limits), data, "numpy", "ndarray")
            if value is None:
                value = self._decode_ext(below, code, data)
                value = _rebuild(lambda p: numpy.rebuild_array(p, self._limits), value, "numpy", "ndarray")
            return value
        if code == codes.DELTA_SNAPSHOT:
            return langgraph.rebuild_delta(self._decode_ext(below, code, data))
        raise UnknownTagError(f"unknown msgpack ext code {code}: not written by serde_kit or LangGraph")

    @staticmethod
    def _decode_ext(decoder: msgspec.msgpack.Decoder[Any], code: int, data: memoryview) -> Any:
        try:
            return decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise MalformedDataError(f"ext code {code} ({codes.NAMES[code]}) holds invalid msgpack: {shown(exc)}") from None

    def rebuilder(self, code: int, module: str, name: str, method: str | None) -> RebuildFn | _Blocked:
        """How to build ``(module, name)`` from an ext ``code`` envelope, or the refusal.

        The name is made canonical first (:func:`~serde_kit.allowlist.parse_name`):
        only a generic pydantic model's name may carry a subscript, and standard
        types are built by their fixed rebuilders whatever form their name takes.
        Only allowed, importable types are cached, in a bounded cache.
        """
        key = (code, module, name, method)
        found = self._cache.get(key)
        if found is not None:
            return found
        if self._renames:
            module, name = renamed(self._renames, module, name)
        if name[-1:] == "]" and self.is_fixed(module, origin_name(name)):
            events.blocked(module, name)
            return _Blocked(_subscripted_error(code, module, name))
        if code == codes.METHOD_SINGLE_ARG and (module, name, method or "") not in stdlib.METHODS:
            events.method_blocked(module, name, method)  # LangGraph's serde event, as the stock reader
            return _Blocked(_blocked_error(code, module, name, method))  # allowing would not help
        if not self._allowlist.allows(module, name):
            events.blocked(module, name)
            return _Blocked(_blocked_error(code, module, name))
        if code == codes.METHOD_SINGLE_ARG:
            found = self._methods.get((module, name, method or ""))
            if found is None:
                events.method_blocked(module, name, method)
                return _Blocked(_blocked_error(code, module, name, method))
        elif (code, module, name) in self._fixed:
            found = self._fixed[(code, module, name)]
        elif (module, name) in self._fixed_names:
            # Standard types are built only by their fixed rebuilders, which bound
            # their cost; never by calling the type with whatever the row holds.
            raise RebuildError(
                f"{module}.{name} is not stored with ext code {code} ({codes.NAMES[code]}) by "
                "serde_kit or LangGraph, so it is not built from one",
                module=module,
                name=name,
            )
        else:
            cls = self.resolve_class(module, name)
            try:
                if code == codes.PYDANTIC_V2:
                    found = pydantic.v2_rebuilder(cls, self._validate)
                elif code == codes.PYDANTIC_V1:
                    found = pydantic.v1_rebuilder(cls, self._validate)
                else:
                    found = user.rebuilder(code, cls)
            except TypeError as exc:
                raise RebuildError(
                    f"{shown(module)}.{shown(name)} cannot be built from ext code {code} "
                    f"({codes.NAMES[code]}): {shown(exc, 300)}",
                    module=module,
                    name=name,
                ) from None
            check = self.guard(cls)
            if check is not None:
                found = _checked_first(check, found)
        if len(self._cache) >= _MAX_CACHED:
            self._cache.clear()  # only allowed names get here, but generic ones multiply
        self._cache[key] = found
        events.unregistered_allowed(self._allowlist, module, name)  # once: after the verdict is cached
        return found

    def resolve_class(self, module: str, name: str) -> Any:
        """The allowed class ``(module, name)`` names: imported by its qualname, or for a
        generic pydantic model's name (``"Box[int]"``) the origin parametrised with
        its allowed arguments. Raises :class:`BlockedTypeError` for a subscripted name
        that is not such a model, :class:`RebuildError` when the import fails."""
        parsed = parse_name(name)
        if parsed is None:
            events.blocked(module, name)
            raise BlockedTypeError(
                f"refused to build {shown(module)}.{shown(name)}: not a class name (a dotted "
                "qualname, or a generic pydantic model's name such as 'Box[int]')",
                module=module,
                name=name,
            )
        origin, args = parsed
        budget.charge(_RESOLVE_WORK, "classes resolved by name")
        cls = _import(module, origin)
        if args is None:
            return cls
        if not pydantic.is_generic_model(cls):
            raise _subscripted_error(None, module, name)
        try:
            built = cls[tuple(self._argument(module, name, arg) for arg in args)]
        except SerdeError:
            raise
        except Exception as exc:
            raise RebuildError(
                f"generic model {shown(module)}.{shown(name)} could not be parametrised: {type(exc).__name__}: {shown(exc, 300)}",
                module=module,
                name=name,
            ) from None
        if getattr(built, "__qualname__", None) != name:
            # Arguments resolved to other classes than the writer's: not the stored type.
            raise _subscripted_error(None, module, name)
        return built

    def _argument(self, module: str, name: str, arg: TypeName) -> Any:
        """The type a generic model name's argument names: a builtin, or an allowed class."""
        qualname, args = arg
        if qualname in _BUILTIN_ARGUMENTS:
            found: Any = _BUILTIN_ARGUMENTS[qualname]
        else:
            modules = self._allowlist.modules_of(qualname)
            if len(modules) != 1:
                raise BlockedTypeError(
                    f"refused to build {shown(module)}.{shown(name)}: its argument {shown(qualname)} is "
                    + ("not an allowed class" if not modules else "ambiguous (allowed in several modules)"),
                    module=module,
                    name=name,
                )
            found = _import(modules[0], qualname)
        if args is None:
            return found
        inner: tuple[Any, ...] = tuple(self._argument(module, name, item) for item in args)
        return found[inner[0]] if len(inner) == 1 else found[inner]

    def lenient_payload(self, blocked: _Blocked | RebuildError, env: list[Any]) -> Any:
        """Lenient mode: the raw payload in place of the value, with one warning per type."""
        error = blocked.error if isinstance(blocked, _Blocked) else blocked
        key = (error.module, error.name)
        if key in self._warned:
            return env[2]
        if len(self._warned) >= _MAX_WARNED_TYPES:
            # Data naming endless distinct types must not grow the process: one
            # last warning, then silence.
            if len(self._warned) == _MAX_WARNED_TYPES:
                self._warned.add(("", ""))
                warnings.warn(
                    f"lenient decoding has warned about {_MAX_WARNED_TYPES} different types; "
                    "further types returned as raw payloads are not reported",
                    LenientDecodeWarning,
                    stacklevel=2,
                )
            return env[2]
        self._warned.add(key)
        warnings.warn(
            f"lenient decoding returned the raw stored fields of {shown(error.module)}.{shown(error.name)} "
            f"(a {type(env[2]).__name__}) instead of the object: its type and methods are "
            f"lost. Reason: {shown(error, 400)}",
            LenientDecodeWarning,
            stacklevel=2,
        )
        return env[2]

    def is_fixed(self, module: str, name: str, code: int | None = None) -> bool:
        """Whether ``(module, name)`` is a standard type built only by a fixed rebuilder
        (from ext ``code``, when given)."""
        if code is None:
            return (module, name) in self._fixed_names
        return (code, module, name) in self._fixed

    def guard(self, cls: Any) -> Callable[[Any], None] | None:
        """A check of the stored fields to run before ``cls`` is built from them, if it needs one."""
        return langchain.guard(cls, self._limits)

    def _construct(self, code: int, env: Any) -> Any:
        problem = codes.envelope_problem(code, env)
        if problem is not None:
            raise MalformedDataError(problem)
        module, name = env[0], env[1]
        method = env[3] if code == codes.METHOD_SINGLE_ARG else None
        try:
            rebuild = self.rebuilder(code, module, name, method)
        except RebuildError as exc:
            if self._lenient:
                return self.lenient_payload(exc, env)
            raise
        if isinstance(rebuild, _Blocked):
            if self._lenient:
                return self.lenient_payload(rebuild, env)
            raise rebuild.error
        if len(self._hot) >= _MAX_CACHED:
            self._hot.clear()
        self._hot[(code, len(env), module, name, method)] = rebuild  # for the hook's hot path
        try:
            return _rebuild(rebuild, env, module, name)
        except RebuildError as exc:
            if self._lenient:
                return self.lenient_payload(exc, env)
            raise

    @property
    def lenient(self) -> bool:
        return self._lenient

    @property
    def validate(self) -> str:
        """How stored pydantic models are built: ``"auto"`` or ``"always"``."""
        return self._validate

    @property
    def unvalidated_warned(self) -> set[Any]:
        """Model classes this reader warned about building unvalidated (legacy json rows)."""
        return self._unvalidated_warned


def check_row(data: bytes, limits: Limits) -> None:
    """Refuse a msgpack row whose layout breaks ``limits`` where the engine cannot bound it
    (containers, hash floods of array keys, timestamps): the checks :meth:`Decoder.loads_checked`
    runs before msgspec reads a row, for readers that do not build values (the tools' renderer)."""
    _prescan.check(data, limits)


def engine_error(exc: BaseException, data: bytes) -> SerdeError:
    """The typed error for what msgspec raised on a whole row."""
    if isinstance(exc, RecursionError):
        return MalformedDataError(
            "stored value nests too deeply (containers and typed values together exceed "
            "the interpreter's recursion limit)"
        )
    if isinstance(exc, MemoryError):
        return LimitExceededError(
            f"decoding a stored value of {len(data)} bytes ran out of memory; lower "
            "Limits.max_containers or Limits.max_row_bytes to refuse such rows up front",
            limit="max_containers",
        )
    return MalformedDataError(f"not valid msgpack data: {shown(exc)}")


def _rebuild(rebuild: RebuildFn, payload: Any, module: str, name: str) -> Any:
    try:
        return rebuild(payload)
    except SerdeError:
        raise
    except RecursionError:
        raise MalformedDataError("stored value nests too deeply") from None
    except MemoryError:
        raise LimitExceededError(
            f"rebuilding a stored {shown(module)}.{shown(name)} ran out of memory", limit="max_row_bytes"
        ) from None
    except Exception as exc:
        raise RebuildError(
            f"stored {shown(module)}.{shown(name)} could not be rebuilt: {type(exc).__name__}: {shown(exc, 300)}",
            module=module,
            name=name,
        ) from exc


def _blocked_error(code: int, module: str, name: str, method: str | None = None) -> BlockedTypeError:
    module_shown, name_shown = shown(module), shown(name)
    if method is not None:
        return BlockedTypeError(
            f"refused to call {module_shown}.{name_shown}.{shown(method)}() (ext code 3): only "
            "datetime/date/time.fromisoformat may be called while decoding",
            module=module,
            name=name,
        )
    entry = allow_entry(module, name)
    if entry is None:
        # Not a dotted identifier: no application wrote it, and no line naming it is safe to paste.
        return BlockedTypeError(
            f"refused to build {module_shown}.{name_shown} (ext code {code}, {codes.NAMES[code]}): "
            "the stored name is not a valid Python name, so no application wrote this row and no "
            "allowlist entry can allow it; check where the row came from",
            module=module,
            name=name,
        )
    entry_module, entry_name = entry.split(":", 1)
    short = entry_name.split(".")[0]
    return BlockedTypeError(
        f"refused to build {module_shown}.{name_shown} (ext code {code}, {codes.NAMES[code]}): "
        "it is not in the allowlist. If you trust this type, allow it with "
        f"Serializer(allow=[{entry_name}]) after `from {entry_module} import {short}`, "
        f"or Serializer(allow=[({entry_module!r}, {entry_name!r})]), or {shell_assignment('SERDE_KIT_ALLOW', entry)}",
        module=module,
        name=name,
    )


def _subscripted_error(code: int | None, module: str, name: str) -> BlockedTypeError:
    where = f" (ext code {code}, {codes.NAMES[code]})" if code is not None else ""
    return BlockedTypeError(
        f"refused to build {shown(module)}.{shown(name)}{where}: only a generic pydantic model's "
        "stored name holds a subscript (with allowed arguments); this row was not written by "
        "serde_kit or LangGraph",
        module=module,
        name=name,
    )


def _import(module: str, name: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise RebuildError(
            f"allowed type {shown(module)}.{shown(name)} could not be imported: {type(exc).__name__}: {shown(exc, 300)}; "
            "is the application's package installed and importable here?",
            module=module,
            name=name,
        ) from None
    return obj


def _check_ext_length(data: bytes) -> int:
    """Check a top-level ext's declared length; return where its payload starts."""
    first = data[0]
    if first in _FIXEXT:
        expected = 2 + _FIXEXT[first]
    else:
        size = _EXT_SIZED[first]
        if len(data) < 2 + size:
            raise MalformedDataError("truncated ext header")
        expected = 2 + size + int.from_bytes(data[1 : 1 + size], "big")
    if len(data) > expected:
        raise MalformedDataError("trailing bytes after the stored value")
    if len(data) < expected:
        raise MalformedDataError("stored value is truncated")
    return len(data) - (_FIXEXT.get(first) or int.from_bytes(data[1 : 1 + _EXT_SIZED[first]], "big"))


def _checked_first(check: Callable[[Any], None], rebuild: RebuildFn) -> RebuildFn:
    def rebuild_checked(env: list[Any]) -> Any:
        check(env[2])
        return rebuild(env)

    return rebuild_checked
