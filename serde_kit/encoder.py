"""Python values → msgpack bytes in the stock ext format (the write half of :class:`Serializer`).

ormsgpack writes the plain JSON-like values itself; every other value reaches
:meth:`_EncodeCall.default`, which dispatches on the exact type through a
table and resolves a type it has not seen once (then caches the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ormsgpack

from . import _stack
from .allowlist import Allowlist
from .errors import EncodeError, SerdeError
from .ext import langgraph, numpy, pydantic, stdlib, user
from .ext.stdlib import EncodeFn

#: How deep ext values may nest (a model holding a tuple holding a model ...).
#: The reader enforces the same bound, so nothing written is unreadable.
MAX_EXT_DEPTH = 64

OPTIONS = (
    ormsgpack.OPT_NON_STR_KEYS
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_UUID
)

_RESOLVERS: tuple[Callable[[type], EncodeFn | None], ...] = (
    langgraph.resolve,
    numpy.resolve,
    stdlib.resolve,
)
#: Families that write an importable (module, qualname): checked against the allowlist.
_CLASS_RESOLVERS: tuple[Callable[[type], EncodeFn | None], ...] = (
    pydantic.resolve,
    user.resolve,
)


def _refuse(message: str) -> EncodeFn:
    def encode(obj: Any, call: Any) -> Any:
        raise EncodeError(message)

    return encode


class Encoder:
    """Writes values; one per :class:`Serializer` (its type cache follows its allowlist)."""

    __slots__ = ("_table", "_allowlist", "_lenient")

    def __init__(self, allowlist: Allowlist, *, lenient: bool = False) -> None:
        self._table: dict[type, EncodeFn] = dict(stdlib.ENCODERS)
        self._allowlist = allowlist
        self._lenient = lenient

    def dumps(self, obj: Any) -> bytes:
        """msgpack bytes for ``obj``; raises :class:`EncodeError` if any part has no faithful encoding."""
        call = _EncodeCall(self._table, self._resolve)
        try:
            return ormsgpack.packb(obj, default=call.default, option=OPTIONS)
        except (TypeError, ValueError, RecursionError) as exc:
            if call.error is not None:
                raise call.error from None
            raise EncodeError(_describe_engine_error(exc)) from None

    def _resolve(self, cls: type) -> EncodeFn:
        encode = None
        for resolver in _RESOLVERS:
            encode = resolver(cls)
            if encode is not None:
                break
        else:
            for resolver in _CLASS_RESOLVERS:
                encode = resolver(cls)
                if encode is not None:
                    encode = self._check_allowed(cls, encode)
                    break
        if encode is None:
            encode = _refuse(
                f"cannot store a {cls.__module__}.{cls.__qualname__}: serde_kit has no faithful "
                "encoding for it (supported: JSON-like values, tuples, sets, stdlib value types, "
                "enums, dataclasses, namedtuples, pydantic models, numpy arrays, LangGraph and "
                "langchain-core types); convert it to one of those"
            )
        self._table[cls] = encode
        return encode

    def _check_allowed(self, cls: type, encode: EncodeFn) -> EncodeFn:
        try:
            module, name = user.importable_key(cls)
        except EncodeError as exc:
            return _refuse(str(exc))
        if self._lenient or self._allowlist.allows(module, name):
            return encode
        return _refuse(
            f"{module}.{name} is not in this serializer's allowlist, so a stored value could "
            f"not be read back. Allow it: Serializer(allow=[{name.split('.')[0]}]) or "
            f"Serializer(allow=[({module!r}, {name!r})]) or SERDE_KIT_ALLOW={module}:{name}"
        )


class _EncodeCall:
    """State of one ``dumps`` call: the first error (ormsgpack hides errors raised in
    ``default``) and the ext nesting depth."""

    __slots__ = ("table", "resolve", "error", "depth")

    def __init__(self, table: dict[type, EncodeFn], resolve: Callable[[type], EncodeFn]) -> None:
        self.table = table
        self.resolve = resolve
        self.error: SerdeError | None = None
        self.depth = 0

    def default(self, obj: Any) -> Any:
        cls = type(obj)
        encode = self.table.get(cls)
        try:
            if encode is None:
                encode = self.resolve(cls)
            return encode(obj, self)
        except SerdeError as exc:
            if self.error is None:
                self.error = exc
            raise
        except RecursionError:
            if self.error is None:
                self.error = EncodeError(
                    "value nests too deeply or contains a reference cycle"
                )
            raise
        except Exception as exc:
            if self.error is None and "Recursion limit" in str(exc):
                self.error = EncodeError("value nests too deeply or contains a reference cycle")
            if self.error is None:
                self.error = EncodeError(
                    f"cannot store a {cls.__module__}.{cls.__qualname__}: {type(exc).__name__}: {exc}"
                )
                self.error.__cause__ = exc
            raise

    def pack(self, payload: Any) -> bytes:
        """Pack an ext payload with this same encoder, one nesting level down."""
        if self.depth >= MAX_EXT_DEPTH:
            raise EncodeError(
                f"value nests more than {MAX_EXT_DEPTH} typed values deep "
                "(or contains a reference cycle); flatten it"
            )
        if self.depth == _stack.LEVELS_ON_CALLER_STACK:
            return _stack.on_big_stack(self._pack_level, payload)
        return self._pack_level(payload)

    def _pack_level(self, payload: Any) -> bytes:
        self.depth += 1
        try:
            return ormsgpack.packb(payload, default=self.default, option=OPTIONS)
        finally:
            self.depth -= 1


def _describe_engine_error(exc: BaseException) -> str:
    text = str(exc)
    if "surrogates" in text or "utf-8" in text.lower():
        return (
            "a string holds lone surrogates (invalid UTF-8), which msgpack cannot store "
            "faithfully; encode it with errors='surrogateescape' into bytes first"
        )
    if "Recursion" in text or isinstance(exc, RecursionError):
        return "value nests too deeply or contains a reference cycle"
    return f"cannot encode value: {text}"
