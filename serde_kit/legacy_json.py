"""Read path for ``json`` rows, written by LangGraph before it moved to msgpack.

Those rows hold LangChain envelopes: ``{"lc": 2, "type": "constructor", "id":
[*module, name], "args": [...], "kwargs": {...}, "method": ...}`` for general
objects and ``{"lc": 1, ...}`` for langchain-core objects such as messages.
lc:2 envelopes go through serde_kit's allowlist; a ``method`` is honoured only
from the fixed table (``datetime.fromisoformat`` and friends). lc:1 envelopes
are revived by langchain-core's own reviver restricted to message classes and
``Document``.
"""

from __future__ import annotations

import json
from typing import Any

from . import budget
from ._text import shown
from .decoder import _Blocked
from .errors import BlockedTypeError, DecodeError, LimitExceededError, MalformedDataError, RebuildError, SerdeError
from .ext import codes, pydantic
from .ext.langchain import check_partial_json


def loads_json(data: bytes, decoder: Any) -> Any:
    """Decode a legacy ``json`` row with ``decoder``'s allowlist, leniency and limits."""
    limits = decoder.limits
    if len(data) > limits.max_row_bytes:
        raise limits.refuse("max_row_bytes", "size of the stored value", len(data))
    # Every JSON object and array opens with a bracket (brackets inside strings count
    # too, so this bounds the containers from above): an empty one costs ~30 times its
    # stored size once decoded, as in msgpack rows.
    brackets = data.count(b"{") + data.count(b"[") if len(data) > limits.max_containers else 0
    if brackets > limits.max_containers:
        raise limits.refuse("max_containers", "objects and arrays (brackets) in the legacy json row", brackets)
    with budget.metered(len(data), limits):
        try:
            return _loads_json(data, decoder)
        except MemoryError:
            raise LimitExceededError(
                f"decoding a legacy json row of {len(data)} bytes ran out of memory; lower "
                "Limits.max_containers or Limits.max_row_bytes to refuse such rows up front",
                limit="max_containers",
            ) from None


def _loads_json(data: bytes, decoder: Any) -> Any:
    state: dict[str, Any] = {}

    def hook(value: dict[str, Any]) -> Any:
        try:
            lc = value.get("lc")
            if lc == 2 and value.get("type") == "constructor" and isinstance(value.get("id"), list):
                return _revive_lc2(value, decoder)
            if lc == 1 and value.get("type") in ("constructor", "secret", "not_implemented"):
                return _revive_lc1(value, decoder)
            return value
        except SerdeError as exc:
            state.setdefault("error", exc)
            raise

    try:
        return json.loads(data, object_hook=hook)
    except SerdeError:
        raise
    except (ValueError, TypeError, RecursionError) as exc:
        if "error" in state:
            raise state["error"] from None
        raise MalformedDataError(f"legacy json row is not valid JSON: {exc}") from None


def _revive_lc2(value: dict[str, Any], decoder: Any) -> Any:
    ident = value["id"]
    if len(ident) < 2 or not all(isinstance(part, str) for part in ident):
        raise MalformedDataError(f"lc:2 envelope has an invalid id {ident!r}")
    module, name = ".".join(ident[:-1]), ident[-1]
    args = value.get("args") or []
    kwargs = value.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise MalformedDataError(f"lc:2 envelope for {module}.{name} has malformed args/kwargs")
    method = value.get("method")
    # The old writer's [None, "model_construct"] meant "the constructor, else construct
    # without validation" (what the old reader did for a model that no longer validates).
    unvalidated = isinstance(method, list) and method[1:2] in (["model_construct"], ["construct"])
    if isinstance(method, list):
        method = method[0] if method else None
    builtin = _JSON_METHODS.get((module, name, method)) if isinstance(method, str) else None
    if builtin is not None:
        return _fromhex(builtin, args, module, name)
    fixed = None if method is not None else _fixed_envelope(decoder, module, name, args, kwargs)
    if method is not None:
        rebuild = decoder.rebuilder(codes.METHOD_SINGLE_ARG, module, name, method)
        env = [module, name, args[0] if args else None, method]
    elif fixed is not None:
        code, env = fixed
        rebuild = decoder.rebuilder(code, module, name, None)
    else:
        rebuild = decoder.rebuilder(codes.CONSTRUCTOR_KW_ARGS, module, name, None)
        env = [module, name, kwargs or args]
    if isinstance(rebuild, _Blocked):
        if decoder.lenient:
            return decoder.lenient_payload(rebuild, env)
        raise rebuild.error
    try:
        if method is not None or fixed is not None:
            return rebuild(env)
        cls = decoder.resolve_class(module, name)
        check = decoder.guard(cls)
        if check is not None:
            check(kwargs)
        try:
            return cls(*args, **kwargs)
        except Exception as exc:
            if not (unvalidated and not args and pydantic.is_model(cls)):
                raise
            return pydantic.construct_unvalidated(cls, kwargs, exc, decoder.validate, decoder.unvalidated_warned)
    except SerdeError:
        raise
    except Exception as exc:
        raise RebuildError(
            f"legacy json {shown(module)}.{shown(name)} could not be rebuilt: {type(exc).__name__}: {shown(exc, 300)}",
            module=module,
            name=name,
        ) from exc


#: Standard types the old json writer stored with positional args that serde_kit
#: builds by keyword, and the reverse.
_ARG_NAMES = {
    ("datetime", "time"): ("hour", "minute", "second", "microsecond", "tzinfo", "fold"),
    ("datetime", "datetime"): ("year", "month", "day", "hour", "minute", "second", "microsecond", "tzinfo", "fold"),
}
_KWARG_ORDER = {("langgraph.types", "Send"): ("node", "arg", "timeout")}


def _fixed_envelope(
    decoder: Any, module: str, name: str, args: list[Any], kwargs: dict[str, Any]
) -> tuple[int, list[Any]] | None:
    """For a standard type, the ext envelope its fixed rebuilder takes; None for other types.

    Standard types are never called with what the row holds: lc:2 arguments go
    through the same fixed rebuilders (and limits) as the msgpack ext codes.
    """
    if not decoder.is_fixed(module, name):
        return None
    names = _ARG_NAMES.get((module, name))
    if names is not None and args and len(args) <= len(names):
        # e.g. time(h, m, s, us, tzinfo=...): the keyword form serde_kit builds from.
        kwargs, args = {**dict(zip(names, args)), **kwargs}, []
    order = _KWARG_ORDER.get((module, name))
    if order is not None and kwargs and not args and kwargs.keys() <= set(order):
        # e.g. Send(node=..., arg=...): the positional form serde_kit builds from.
        return codes.CONSTRUCTOR_POS_ARGS, [module, name, [kwargs[key] for key in order if key in kwargs]]
    if kwargs and not args:
        return codes.CONSTRUCTOR_KW_ARGS, [module, name, kwargs]
    if not kwargs and len(args) == 1 and decoder.is_fixed(module, name, codes.CONSTRUCTOR_SINGLE_ARG):
        return codes.CONSTRUCTOR_SINGLE_ARG, [module, name, args[0]]
    return codes.CONSTRUCTOR_POS_ARGS, [module, name, args]


#: Methods the old json writer used for builtin values (bytes and bytearray as
#: ``{"id": ["builtins", "bytes"], "method": "fromhex", "args": [hex]}``): plain
#: data, built here from a fixed table rather than through the allowlist.
_JSON_METHODS: dict[tuple[str, str, str], type[bytes | bytearray]] = {
    ("builtins", "bytes", "fromhex"): bytes,
    ("builtins", "bytearray", "fromhex"): bytearray,
}


def _fromhex(cls: type[bytes | bytearray], args: list[Any], module: str, name: str) -> Any:
    if len(args) != 1 or not isinstance(args[0], str):
        raise MalformedDataError(f"legacy json {module}.{name}.fromhex needs one hex string argument")
    try:
        return cls.fromhex(args[0])
    except ValueError as exc:
        raise MalformedDataError(f"legacy json {module}.{name}.fromhex: {exc}") from None


_REVIVERS: list[tuple[Any, frozenset[str]]] = []


def _lc1_reviver(reviver_cls: Any) -> tuple[Any, frozenset[str]]:
    """langchain-core's reviver, and the class names serde_kit lets it build:
    messages and Document (the langchain types of the default allowlist)."""
    if not _REVIVERS:
        from langchain_core import messages

        names = {
            name
            for name in dir(messages)
            if isinstance(obj := getattr(messages, name), type) and issubclass(obj, messages.BaseMessage)
        }
        _REVIVERS.append((reviver_cls(allowed_objects="core"), frozenset(names | {"Document"})))
    return _REVIVERS[0]


def _revive_lc1(value: dict[str, Any], decoder: Any) -> Any:
    try:
        from langchain_core.load.load import Reviver
    except ImportError:
        raise DecodeError(
            "this legacy json row holds langchain-core objects; install langchain-core to read it"
        ) from None
    reviver, allowed = _lc1_reviver(Reviver)
    ident = value.get("id")
    if value.get("type") == "constructor" and not (
        isinstance(ident, list) and ident and ident[-1] in allowed
    ):
        raise BlockedTypeError(
            f"refused to revive legacy langchain object {shown(repr(ident))}: only langchain-core "
            "messages and Document are revived from legacy json rows",
            module=".".join(map(str, ident[:-1])) if isinstance(ident, list) else "?",
            name=str(ident[-1]) if isinstance(ident, list) and ident else "?",
        )
    if isinstance(ident, list) and ident and ident[-1] == "AIMessageChunk":
        check_partial_json(value.get("kwargs"), decoder.limits)
    try:
        return reviver(value)
    except Exception as exc:
        ident = value.get("id")
        raise RebuildError(
            f"legacy langchain object {shown(repr(ident))} could not be revived: {type(exc).__name__}: {shown(exc, 300)}",
            module=".".join(map(str, ident[:-1])) if isinstance(ident, list) else "?",
            name=str(ident[-1]) if isinstance(ident, list) and ident else "?",
        ) from exc
