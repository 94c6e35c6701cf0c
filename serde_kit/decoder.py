"""msgpack bytes in the stock ext format → Python values (the read half of :class:`Serializer`).

Every ext names what to build as ``(module, name)``. That pair is checked
against the allowlist before anything is imported; standard types are built
from fixed tables and never imported by name; code 3 dispatches only the
methods in :data:`serde_kit.ext.stdlib.METHODS`. Nested ext payloads are
decoded recursively with a depth bound shared with the writer.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

import ormsgpack

from . import _stack
from .allowlist import Allowlist
from .encoder import MAX_EXT_DEPTH
from .errors import (
    BlockedTypeError,
    LenientDecodeWarning,
    MalformedDataError,
    RebuildError,
    SerdeError,
    UnknownTagError,
)
from .ext import codes, langgraph, numpy, pydantic, stdlib, user
from .ext.stdlib import RebuildFn

_FIXED: dict[tuple[int, str, str], RebuildFn] = {
    **stdlib.REBUILDERS,
    **numpy.scalar_rebuilders(),
    **langgraph.REBUILDERS,
}
_ENVELOPE_LENGTH = {
    codes.CONSTRUCTOR_SINGLE_ARG: 3,
    codes.CONSTRUCTOR_POS_ARGS: 3,
    codes.CONSTRUCTOR_KW_ARGS: 3,
    codes.METHOD_SINGLE_ARG: 4,
    codes.PYDANTIC_V1: 3,
    codes.PYDANTIC_V2: 4,
}
# ext type, then its fixed header size and how the payload length is stored.
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_EXT_SIZED = {0xC7: 1, 0xC8: 2, 0xC9: 4}
_EXT_FIRST_BYTES = frozenset(bytes([first]) for first in (*_FIXEXT, *_EXT_SIZED))

# A private marker closing the top-level value, to notice trailing bytes
# (ormsgpack ignores them): a bin value with a per-process random payload.
_MARKER_TOKEN = os.urandom(16)
_MARKER_BYTES = b"\xc4\x10" + _MARKER_TOKEN
_OPTION = ormsgpack.OPT_NON_STR_KEYS
_MAX_WARNED_TYPES = 1000


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError("has ext values")


class _Blocked:
    """Cached verdict for a pair the allowlist refuses."""

    __slots__ = ("error",)

    def __init__(self, error: BlockedTypeError) -> None:
        self.error = error


class Decoder:
    """Reads values; one per :class:`Serializer` (its class cache follows its allowlist)."""

    __slots__ = ("_allowlist", "_lenient", "_cache", "_warned")

    def __init__(self, allowlist: Allowlist, *, lenient: bool = False) -> None:
        self._allowlist = allowlist
        self._lenient = lenient
        self._cache: dict[tuple, RebuildFn | _Blocked] = {}
        self._warned: set[tuple[str, str]] = set()

    def loads(self, data: bytes) -> Any:
        """The value in ``data``; raises a :class:`DecodeError` subclass for anything else."""
        if data[:1] in _EXT_FIRST_BYTES:
            return self._loads_top_level_ext(data)
        # The stored value, then a private marker: ormsgpack ignores trailing
        # bytes, so the marker must be what follows the value.
        wrapped = b"\x92" + data + _MARKER_BYTES
        try:
            # Plain JSON-like values need no per-call state; the first ext ends
            # this attempt early and the full decoder starts over.
            value, marker = ormsgpack.unpackb(wrapped, ext_hook=_no_ext, option=_OPTION)
        except (ValueError, TypeError, RecursionError, MemoryError):
            call = _DecodeCall(self)
            try:
                value, marker = ormsgpack.unpackb(wrapped, ext_hook=call.hook, option=_OPTION)
            except (ValueError, TypeError, RecursionError, MemoryError) as exc:
                if call.error is not None:
                    raise call.error from None
                raise MalformedDataError(f"not valid msgpack data: {exc}") from None
        if type(marker) is not bytes or marker != _MARKER_TOKEN:
            raise MalformedDataError("stored value is truncated or followed by trailing bytes")
        return value

    def _loads_top_level_ext(self, data: bytes) -> Any:
        # An ext's header states its length: no marker (and no copy) needed.
        start = _check_ext_length(data)
        if data[start - 1] == codes.NUMPY_ARRAY:
            try:
                fast = numpy.loads_large(data, start)
            except (ValueError, TypeError) as exc:
                raise RebuildError(
                    f"stored numpy.ndarray could not be rebuilt: {exc}", module="numpy", name="ndarray"
                ) from None
            if fast is not None:
                return fast
        call = _DecodeCall(self)
        try:
            return ormsgpack.unpackb(data, ext_hook=call.hook, option=_OPTION)
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            if call.error is not None:
                raise call.error from None
            raise MalformedDataError(f"not valid msgpack data: {exc}") from None

    def rebuilder(self, code: int, module: str, name: str, method: str | None) -> RebuildFn | _Blocked:
        """How to build ``(module, name)`` from an ext ``code`` envelope, or the refusal.

        Only allowed, importable types are cached: data naming endless distinct
        types must not grow the process.
        """
        key = (code, module, name, method)
        found = self._cache.get(key)
        if found is not None:
            return found
        if code == codes.METHOD_SINGLE_ARG and (module, name, method or "") not in stdlib.METHODS:
            return _Blocked(_blocked_error(code, module, name, method))  # allowing would not help
        if not self._allowlist.allows(module, name):
            return _Blocked(_blocked_error(code, module, name))
        if code == codes.METHOD_SINGLE_ARG:
            found = stdlib.METHODS.get((module, name, method or ""))
            if found is None:
                return _Blocked(_blocked_error(code, module, name, method))
        elif (code, module, name) in _FIXED:
            found = _FIXED[(code, module, name)]
        else:
            cls = user.parametrized(_import(module, user.origin_name(name)), name)  # "Box[int]"
            try:
                if code == codes.PYDANTIC_V2:
                    found = pydantic.v2_rebuilder(cls)
                elif code == codes.PYDANTIC_V1:
                    found = pydantic.v1_rebuilder(cls)
                else:
                    found = user.rebuilder(code, cls)
            except TypeError as exc:
                raise RebuildError(
                    f"{module}.{name} cannot be built from ext code {code} "
                    f"({codes.NAMES[code]}): {exc}",
                    module=module,
                    name=name,
                ) from None
        self._cache[key] = found
        return found

    def lenient_payload(self, blocked: _Blocked | RebuildError, env: list) -> Any:
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
            f"lenient decoding returned the raw stored fields of {error.module}.{error.name} "
            f"(a {type(env[2]).__name__}) instead of the object: its type and methods are "
            f"lost. Reason: {error}",
            LenientDecodeWarning,
            stacklevel=2,
        )
        return env[2]

    @property
    def lenient(self) -> bool:
        return self._lenient


class _DecodeCall:
    """State of one ``loads`` call: the first error (ormsgpack hides errors raised in
    the ext hook) and the ext nesting depth."""

    __slots__ = ("decoder", "cache", "error", "depth", "hook")

    def __init__(self, decoder: Decoder) -> None:
        self.decoder = decoder
        self.cache = decoder._cache
        self.error: SerdeError | None = None
        self.depth = 0
        self.hook = self.ext_hook

    def ext_hook(self, code: int, data: bytes) -> Any:
        depth = self.depth
        if depth < _stack.LEVELS_ON_CALLER_STACK and 0 <= code <= codes.PYDANTIC_V2:
            # Hot path: an envelope whose (code, shape, module, name) was checked before.
            self.depth = depth + 1
            try:
                env = ormsgpack.unpackb(data, ext_hook=self.hook, option=_OPTION)
                if type(env) is list and len(env) >= (4 if code == 3 else 3):
                    module, name = env[0], env[1]
                    if type(module) is str and type(name) is str:
                        rebuild = self.cache.get(
                            (code, len(env), module, name, env[3] if code == 3 else None)
                        )
                        if rebuild is not None:
                            try:
                                return rebuild(env)
                            except SerdeError:
                                raise
                            except Exception:
                                pass  # take the slow path below for the full error
                return self._checked(lambda: self._construct(code, env))
            except (ValueError, TypeError) as exc:
                if self.error is None:
                    self.error = (
                        exc
                        if isinstance(exc, SerdeError)
                        else MalformedDataError(
                            f"ext code {code} ({codes.NAMES[code]}) holds invalid msgpack: {exc}"
                        )
                    )
                raise
            finally:
                self.depth = depth
        return self._checked(lambda: self._ext(code, data))

    def _checked(self, work: Any) -> Any:
        try:
            return work()
        except SerdeError as exc:
            if self.error is None:
                self.error = exc
            raise
        except RecursionError:
            if self.error is None:
                self.error = MalformedDataError("stored value nests too deeply")
            raise

    def _unpack(self, data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=self.hook, option=_OPTION)

    def _ext(self, code: int, data: bytes) -> Any:
        if self.depth >= MAX_EXT_DEPTH:
            raise MalformedDataError(f"typed values nest more than {MAX_EXT_DEPTH} deep")
        if not 0 <= code <= codes.DELTA_SNAPSHOT:
            raise UnknownTagError(
                f"unknown msgpack ext code {code}: not written by serde_kit or LangGraph"
            )
        if self.depth == _stack.LEVELS_ON_CALLER_STACK:
            return _stack.on_big_stack(self._ext_levels, code, data)
        return self._ext_levels(code, data)

    def _ext_levels(self, code: int, data: bytes) -> Any:
        if code == codes.NUMPY_ARRAY:
            fast = _rebuild(lambda payload: numpy.loads_large(payload, 0), data, "numpy", "ndarray")
            if fast is not None:
                return fast
        self.depth += 1
        try:
            try:
                payload = self._unpack(data)
            except (ValueError, TypeError) as exc:
                if self.error is not None:
                    raise self.error from None
                raise MalformedDataError(
                    f"ext code {code} ({codes.NAMES[code]}) holds invalid msgpack: {exc}"
                ) from None
            if code == codes.NUMPY_ARRAY:
                return _rebuild(numpy.rebuild_array, payload, "numpy", "ndarray")
            if code == codes.DELTA_SNAPSHOT:
                return langgraph.rebuild_delta(payload)
            return self._construct(code, payload)
        finally:
            self.depth -= 1

    def _construct(self, code: int, env: Any) -> Any:
        length = _ENVELOPE_LENGTH[code]
        if code == codes.METHOD_SINGLE_ARG and type(env) is list and len(env) == 5:
            length = 5  # [module, name, text, "from_args", args]: old exception rows, surrogates
        elif code == codes.PYDANTIC_V2 and type(env) is list and len(env) == 3:
            length = 3  # older stock rows: [module, name, fields] without the method
        if (
            type(env) is not list
            or len(env) != length
            or type(env[0]) is not str
            or type(env[1]) is not str
            or (length >= 4 and type(env[3]) is not str)
            or (length == 5 and env[3] != stdlib.EXCEPTION_METHOD)
        ):
            raise MalformedDataError(
                f"ext code {code} ({codes.NAMES[code]}) payload must be "
                f"[module, name, {'arg, method' if length == 4 else 'arg'}]"
            )
        module, name = env[0], env[1]
        method = env[3] if code == codes.METHOD_SINGLE_ARG else None
        decoder = self.decoder
        try:
            rebuild = decoder.rebuilder(code, module, name, method)
        except RebuildError as exc:
            if decoder.lenient:
                return decoder.lenient_payload(exc, env)
            raise
        if isinstance(rebuild, _Blocked):
            if decoder.lenient:
                return decoder.lenient_payload(rebuild, env)
            raise rebuild.error
        self.cache[(code, len(env), module, name, method)] = rebuild  # for the hot path
        try:
            return _rebuild(rebuild, env, module, name)
        except RebuildError as exc:
            if decoder.lenient:
                return decoder.lenient_payload(exc, env)
            raise


def _rebuild(rebuild: RebuildFn, payload: Any, module: str, name: str) -> Any:
    try:
        return rebuild(payload)
    except SerdeError:
        raise
    except RecursionError:
        raise MalformedDataError("stored value nests too deeply") from None
    except Exception as exc:
        raise RebuildError(
            f"stored {module}.{name} could not be rebuilt: {type(exc).__name__}: {exc}",
            module=module,
            name=name,
        ) from exc


def _blocked_error(code: int, module: str, name: str, method: str | None = None) -> BlockedTypeError:
    if method is not None:
        return BlockedTypeError(
            f"refused to call {module}.{name}.{method}() (ext code 3): only "
            "datetime/date/time.fromisoformat may be called while decoding",
            module=module,
            name=name,
        )
    short = user.origin_name(name).split(".")[0]
    return BlockedTypeError(
        f"refused to build {module}.{name} (ext code {code}, {codes.NAMES[code]}): "
        "it is not in the allowlist. If you trust this type, allow it with "
        f"Serializer(allow=[{name}]) after `from {module} import {short}`, "
        f"or Serializer(allow=[({module!r}, {name!r})]), or SERDE_KIT_ALLOW={module}:{name}",
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
            f"allowed type {module}.{name} could not be imported: {type(exc).__name__}: {exc}; "
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
