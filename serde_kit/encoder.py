"""Python values → msgpack bytes in the stock ext format (the write half of :class:`Serializer`).

ormsgpack writes the plain JSON-like values itself; every other value reaches
:meth:`_EncodeCall.default`, which dispatches on the exact type through a
table and resolves a type it has not seen once (then caches the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ormsgpack

from . import _main_types, _prescan, _stack, budget
from .allowlist import Allowlist, origin_name
from .errors import EncodeError, LimitExceededError, SerdeError
from .ext import codes, langgraph, numpy, pydantic, stdlib, user
from .ext.codes import EncodeFn
from .limits import DEFAULT_LIMITS, Limits

#: How deep ext values may nest by default (a model holding a tuple holding a model
#: ...). An encoder takes the bound from its Limits, the same one its reader enforces.
MAX_EXT_DEPTH = DEFAULT_LIMITS.max_ext_depth
#: Bytes that are a map or array header, to bound a row's container count from above.
_NOT_CONTAINER_HEADER = bytes(b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))

OPTIONS = codes.PACK_OPTIONS
_packb = ormsgpack.packb
OPTIONS_NON_STR_KEYS = OPTIONS | ormsgpack.OPT_NON_STR_KEYS
_KEY_ERROR = "Dict key must be str"
_SURROGATES_ERROR = "surrogates"
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1

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
    """Writes values; one per :class:`Serializer` (its type cache follows its allowlist).

    It never writes a row its reader would refuse under ``limits`` (the reader's):
    the row size, container count and ext depth bound what it writes, and each
    typed value passes the same check its rebuilder runs (digits, text, regex,
    array elements, partial JSON). Hash collisions and the work meter depend on
    the stored data as a whole and are the reader's alone.
    """

    __slots__ = ("_table", "_allowlist", "_lenient", "_limits", "check_above")

    def __init__(self, allowlist: Allowlist, *, lenient: bool = False, limits: Limits = DEFAULT_LIMITS) -> None:
        self._table: dict[type, EncodeFn] = dict(stdlib.ENCODERS)
        self._allowlist = allowlist
        self._lenient = lenient
        self._limits = limits
        #: Rows up to this size fit the row size and container limits (a container takes a byte).
        self.check_above = min(limits.max_row_bytes, limits.max_containers)

    def dumps(self, obj: Any) -> bytes:
        """msgpack bytes for ``obj``; raises :class:`EncodeError` if any part has no faithful encoding
        or the row would exceed the reader's :class:`Limits`."""
        try:
            # Plain JSON-like values need no per-call state; the first value
            # that does (or a non-str key) ends this attempt early.
            data = ormsgpack.packb(obj, option=OPTIONS)
        except TypeError as exc:
            return self.dumps_not_plain(obj, exc)
        return data if len(data) <= self.check_above else self.fits(data)

    def dumps_not_plain(self, obj: Any, refusal: TypeError) -> bytes:
        """:meth:`dumps` for ``obj`` after ormsgpack refused it as plain with ``refusal``."""
        call = _EncodeCall(self._table, self._resolve, self._limits.max_ext_depth, self._limits)
        cls = type(obj)
        try:
            if cls is dict or cls is list or cls is str:
                if _KEY_ERROR in str(refusal) or _has_other_keys(obj):  # straight to the key-preserving form
                    data = call.pack_level(_with_faithful_keys(obj, call), non_str_keys=True)
                else:
                    data = call.pack_level(obj)
            else:
                if cls.__name__ == "ndarray" and call.max_depth > 0:
                    fast = numpy.dumps_large(obj, call.pack_level, self._limits)
                    if fast is not None:
                        return fast if self._holds_array_row(len(fast)) else self.fits(fast)
                data = call.pack_typed(obj)
        except LimitExceededError as exc:  # an array's own check (dumps_large)
            raise refused_write(exc) from None
        except SerdeError:
            raise
        except (TypeError, ValueError, RecursionError) as exc:
            if call.error is not None:
                raise call.error from None
            raise EncodeError(_describe_engine_error(exc)) from None
        except Exception:
            if call.error is not None:  # an encoder's own error, raised again by ``default``
                raise call.error from None
            raise
        return data if len(data) <= self.check_above else self.fits(data)

    def _holds_array_row(self, size: int) -> bool:
        """Whether the reader's limits hold a top-level array row of ``size`` bytes as
        :func:`numpy.dumps_large` writes it: its layout is known (one ext holding two
        arrays, the buffer a bin), so no container count over the buffer is needed."""
        limits = self._limits
        return size <= limits.max_row_bytes and limits.max_containers >= numpy.LARGE_ROW_CONTAINERS

    def fits(self, data: bytes) -> bytes:
        """``data`` when its reader's row size and container limits hold it; else :class:`EncodeError`."""
        limits = self._limits
        try:
            if len(data) > limits.max_row_bytes:
                raise limits.refuse("max_row_bytes", "size of the stored value", len(data))
            # Every container header is one of these bytes (strings may hold some too):
            # only a row with more of them than the limit needs the exact count.
            if len(data.translate(None, _NOT_CONTAINER_HEADER)) > limits.max_containers:
                with budget.metered(len(data), limits):  # as the reader runs it: its costly steps charge
                    _prescan.check(data, limits)
        except LimitExceededError as exc:
            raise refused_write(exc) from None
        return data

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
            encode = _builtin_value(cls)
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
            _main_types.warn_main_module_type(module, name)  # once per type: the table caches this verdict
            return encode
        return _refuse(
            f"{module}.{name} is not in this serializer's allowlist, so a stored value could "
            f"not be read back. Allow it: Serializer(allow=[{name}]) or "
            f"Serializer(allow=[({module!r}, {name!r})]) or SERDE_KIT_ALLOW={module}:{origin_name(name)}"
        )


def refused_write(exc: LimitExceededError) -> EncodeError:
    """The writer's refusal of a value its reader would refuse with ``exc`` (same limit named)."""
    return EncodeError(f"refused to write a value its reader would refuse: {exc}", limit=exc.limit)


class _EncodeCall:
    """State of one ``dumps`` call: the first error (ormsgpack hides errors raised in
    ``default``), the ext nesting depth and the reader's limits the writers check."""

    __slots__ = ("table", "resolve", "error", "depth", "default_fn", "max_depth", "deep_from", "limits")

    def __init__(
        self,
        table: dict[type, EncodeFn],
        resolve: Callable[[type], EncodeFn],
        max_depth: int = MAX_EXT_DEPTH,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.table = table
        self.limits = limits
        self.resolve = resolve
        self.error: SerdeError | None = None
        self.depth = 0
        #: The reader's Limits.max_ext_depth: exts nest at most this deep.
        self.max_depth = max_depth
        #: From this depth on, payloads go through :meth:`_pack_deep` (stack and depth checks).
        self.deep_from = min(_stack.LEVELS_ON_CALLER_STACK, max_depth - 1)
        self.default_fn = self.default if max_depth > 0 else self.default_at_limit

    def default(self, obj: Any) -> Any:
        cls = type(obj)
        encode = self.table.get(cls)
        try:
            if encode is None:
                encode = self.resolve(cls)
            return encode(obj, self)
        except LimitExceededError as exc:
            if self.error is None:
                self.error = refused_write(exc)
            raise self.error from None
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

    def default_at_limit(self, obj: Any) -> Any:
        """:meth:`default` at the deepest level the reader reads: anything but an ext."""
        value = self.default(obj)
        if type(value) is ormsgpack.Ext:
            if self.error is None:
                self.error = self.too_deep()
            raise self.error
        return value

    def too_deep(self) -> EncodeError:
        return EncodeError(
            f"value nests more than {self.max_depth} typed values deep (or contains a reference cycle), "
            f"beyond its reader's limit max_ext_depth={self.max_depth}; flatten it, or raise the limit "
            "on both sides: Serializer(limits=Limits(max_ext_depth=...))",
            limit="max_ext_depth",
        )

    def pack_typed(self, obj: Any) -> bytes:
        """Pack a value ormsgpack does not write itself: what ``packb(obj, default=...)``
        does, without the round trip through ormsgpack to reach ``default``."""
        return self.pack_level(self.default_fn(obj))

    def pack(self, payload: Any) -> bytes:
        """Pack an ext payload with this same encoder, one nesting level down."""
        depth = self.depth
        if depth >= self.deep_from:
            return self._pack_deep(payload, depth)
        self.depth = depth + 1
        try:
            # pack_level's first attempt, one frame shorter: one pack per typed value.
            return _packb(payload, default=self.default_fn, option=OPTIONS)
        except TypeError as exc:
            return self.repack_level(payload, exc)
        finally:
            self.depth = depth

    def _pack_deep(self, payload: Any, depth: int) -> bytes:
        if depth >= self.max_depth:
            raise self.too_deep()
        if depth == _stack.LEVELS_ON_CALLER_STACK:
            return _stack.on_big_stack(self._pack_nested, payload, depth)
        return self._pack_nested(payload, depth)

    def _pack_nested(self, payload: Any, depth: int) -> bytes:
        self.depth = depth + 1
        # One level short of the limit, a payload may hold no ext (leaf exts such
        # as a tuple of numbers are written without a nested pack).
        at_limit = depth + 1 >= self.max_depth
        if at_limit:
            self.default_fn = self.default_at_limit
        try:
            return self.pack_level(payload)
        finally:
            self.depth = depth
            if at_limit:
                self.default_fn = self.default

    def pack_level(self, value: Any, *, non_str_keys: bool = False) -> bytes:
        """Pack ``value``; dicts with non-str keys go through :func:`_with_faithful_keys`
        (pass ``non_str_keys=True`` for a value already transformed by it)."""
        try:
            if non_str_keys:
                return ormsgpack.packb(value, default=self.default_fn, option=OPTIONS_NON_STR_KEYS)
            return _packb(value, default=self.default_fn, option=OPTIONS)
        except TypeError as exc:
            return self.repack_level(value, exc, non_str_keys=non_str_keys)

    def repack_level(self, value: Any, refusal: TypeError, *, non_str_keys: bool = False) -> bytes:
        """:meth:`pack_level` after its first attempt failed with ``refusal``: a dict with
        non-str keys or a str with lone surrogates at this level is rewritten and packed
        again; any other refusal (or an error of a typed value) is raised again."""
        if self.error is not None:
            raise refusal
        if not non_str_keys and _KEY_ERROR in str(refusal):
            try:
                return ormsgpack.packb(
                    _with_faithful_keys(value, self), default=self.default_fn, option=OPTIONS_NON_STR_KEYS
                )
            except TypeError as exc:
                if self.error is not None:
                    raise
                refusal = exc
        if _SURROGATES_ERROR not in str(refusal):
            raise refusal
        # A str with lone surrogates at this level (nested typed values pack their
        # own payloads, so each level fixes its own strings): mark them and retry.
        try:
            marked = stdlib.without_lone_surrogates(value)
        except EncodeError as exc:
            self.error = exc
            raise
        if non_str_keys:
            return ormsgpack.packb(marked, default=self.default_fn, option=OPTIONS_NON_STR_KEYS)
        try:
            return ormsgpack.packb(marked, default=self.default_fn, option=OPTIONS)
        except TypeError as exc:
            if self.error is not None or _KEY_ERROR not in str(exc):
                raise
        return ormsgpack.packb(
            _with_faithful_keys(marked, self), default=self.default_fn, option=OPTIONS_NON_STR_KEYS
        )


def _has_other_keys(obj: Any) -> bool:
    """Whether a dict in ``obj`` (typed values aside) has a key that is not a str.

    One pass at C speed that stands every typed value in with its ``id`` (a C
    function: no Python frame per typed value): finding such a key only once the
    typed values before it were encoded would encode them twice.
    """
    try:
        ormsgpack.packb(obj, default=id, option=OPTIONS)
    except TypeError as exc:
        return _KEY_ERROR in str(exc)
    return False


def _builtin_value(cls: type) -> EncodeFn | None:
    """Writer for a subclass of a builtin that no family claims (langchain-core's
    ``TextAccessor`` is a ``str``; ``defaultdict`` is a ``dict``): stored as the
    builtin value, as the stock writer stores it, and read back as that builtin."""
    if issubclass(cls, str):
        return _as_str
    for base in (bytes, int, float, list, tuple, set, frozenset):
        if issubclass(cls, base):
            return _as_builtin(base)
    if issubclass(cls, dict):
        return _as_dict
    return None


def _as_builtin(base: type[Any]) -> EncodeFn:
    def encode(obj: Any, call: Any) -> Any:
        return base(obj)

    return encode


def _as_str(obj: str, call: Any) -> Any:
    text = str.__str__(obj)
    return stdlib.LoneSurrogates(text) if stdlib.has_lone_surrogates(text) else text


def _as_dict(obj: dict[Any, Any], call: Any) -> Any:
    plain = dict(obj)
    if all(type(key) is str for key in plain):
        return plain
    return _with_faithful_keys(plain, call)  # non-str keys: as a plain dict would be


def _describe_engine_error(exc: BaseException) -> str:
    text = str(exc)
    if "surrogates" in text or "utf-8" in text.lower():
        return (
            "a string in a dict key holds lone surrogates (invalid UTF-8), which no msgpack "
            "map key can hold in a form the stock reader reads back; store that part as "
            "bytes: text.encode('utf-8', 'surrogatepass')"
        )
    if "Recursion" in text or isinstance(exc, RecursionError):
        return "value nests too deeply or contains a reference cycle"
    return f"cannot encode value: {text}"


def _native_key(key: Any) -> bool:
    """Keys ormsgpack writes and reads back unchanged (tuples come back as tuples)."""
    cls = type(key)
    if cls is str or cls is float or cls is bool or key is None or cls is bytes:
        return True
    if cls is int:
        in_range: bool = _I64_MIN <= key <= _U64_MAX
        return in_range
    if cls is tuple:
        return all(_native_key(part) for part in key)
    return False


def _with_faithful_keys(value: Any, call: _EncodeCall) -> Any:
    """Copy of the plain containers in ``value`` where every dict whose keys ormsgpack
    would change (datetime, UUID, enum, big int ...) becomes an ext of its items."""
    cls = type(value)
    if cls is list:
        for item in value:
            if type(item) is list or type(item) is dict:
                return [_with_faithful_keys(item, call) for item in value]
        return value  # nothing below to rewrite
    if cls is not dict:
        return value  # other objects reach ``default`` and pack their own payloads
    for key in value:  # _native_key, with its common cases inline (no call per key)
        key_type = type(key)
        if key_type is str:
            continue
        if key_type is int:
            if _I64_MIN <= key <= _U64_MAX:
                continue
            return stdlib.dict_items_ext(value, call)
        if not _native_key(key):
            return stdlib.dict_items_ext(value, call)
    for item in value.values():
        if type(item) is list or type(item) is dict:
            return {key: _with_faithful_keys(item, call) for key, item in value.items()}
    return value
