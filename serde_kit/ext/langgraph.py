"""LangGraph's own control types: ``Send`` and ``_DeltaSnapshot``.

LangGraph checks their exact classes at run time, so when langgraph is
installed they come back as LangGraph's classes. Without langgraph, a delta
snapshot comes back as serde_kit's :class:`DeltaSnapshot` stand-in and a
``Send`` cannot be rebuilt (there is nothing to send it to).
Interrupt, Command and Overwrite are dataclasses and go through the generic
writers; the store's ``Item`` and ``SearchItem`` (slots classes) are written by keyword.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from ormsgpack import Ext

from . import codes
from .codes import EncodeFn, RebuildFn, expect


class DeltaSnapshot(NamedTuple):
    """Stand-in for langgraph's ``_DeltaSnapshot`` when langgraph is not installed."""

    value: Any


def _delta_class() -> type:
    try:
        from langgraph.checkpoint.serde.types import _DeltaSnapshot
    except ImportError:
        return DeltaSnapshot
    return _DeltaSnapshot


def _delta(obj: Any, call: Any) -> Ext:
    return Ext(codes.DELTA_SNAPSHOT, call.pack(obj.value))


def _send(obj: Any, call: Any) -> Ext:
    args = [obj.node, obj.arg]
    timeout = getattr(obj, "timeout", None)
    if timeout is not None:
        args.append(timeout)
    return Ext(codes.CONSTRUCTOR_POS_ARGS, call.pack(["langgraph.types", "Send", args]))


def _item(obj: Any, call: Any) -> Ext:
    fields = {name: getattr(obj, name) for name in type(obj).__slots__}
    return Ext(codes.CONSTRUCTOR_KW_ARGS, call.pack(["langgraph.store.base", "Item", fields]))


def _search_item(obj: Any, call: Any) -> Ext:
    # Every slot along the class chain (Item's fields, then SearchItem's score): the
    # stock reader builds SearchItem(**fields) from it, and a strict one returns the
    # same fields dict it returns for its own (ext 4) SearchItem rows.
    fields = {
        name: getattr(obj, name)
        for klass in reversed(type(obj).__mro__)
        for name in getattr(klass, "__slots__", ())
        if name != "__weakref__"
    }
    return Ext(codes.CONSTRUCTOR_KW_ARGS, call.pack(["langgraph.store.base", "SearchItem", fields]))


def resolve(cls: type) -> EncodeFn | None:
    if cls is DeltaSnapshot:
        return _delta
    types_module = sys.modules.get("langgraph.checkpoint.serde.types")
    if types_module is not None and cls is getattr(types_module, "_DeltaSnapshot", None):
        return _delta
    store = sys.modules.get("langgraph.store.base")
    if store is not None and cls is getattr(store, "Item", None):
        return _item
    if store is not None and cls is getattr(store, "SearchItem", None):
        return _search_item
    lg_types = sys.modules.get("langgraph.types")
    if lg_types is not None and cls is getattr(lg_types, "Send", None):
        return _send
    return None


def rebuild_delta(value: Any) -> Any:
    return _delta_class()(value)


def _rebuild_send(env: list[Any]) -> Any:
    try:
        from langgraph.types import Send
    except ImportError:
        raise TypeError("this value holds a langgraph Send; install langgraph to read it") from None
    args = expect(env[2], list, "Send args")
    if len(args) == 2:
        return Send(args[0], args[1])
    if len(args) == 3:
        return Send(args[0], args[1], timeout=args[2])
    raise ValueError("Send payload must be [node, arg] or [node, arg, timeout]")


REBUILDERS: dict[tuple[int, str, str], RebuildFn] = {
    (codes.CONSTRUCTOR_POS_ARGS, "langgraph.types", "Send"): _rebuild_send,
}
