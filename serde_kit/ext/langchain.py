"""Checks before langchain-core classes are rebuilt from stored fields.

``AIMessageChunk``'s validator re-parses every ``tool_call_chunks[].args``
with langchain-core's ``parse_partial_json``, which retries ``json.loads`` once
per trailing character it strips: quadratic in an argument that is not
complete JSON. Complete JSON parses on the first try, so only incomplete
arguments are bounded (:attr:`Limits.max_partial_json`).

langchain-core is never imported here: classes are recognised through the
module the decoder already imported.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, cast

from .. import budget
from ..limits import Limits

__all__ = ["check_partial_json", "fast_builder", "guard"]


def guard(cls: Any, limits: Limits) -> Callable[[Any], None] | None:
    """A check to run on stored fields before building ``cls``, or None when it needs none."""
    ai = sys.modules.get("langchain_core.messages.ai")
    chunk = getattr(ai, "AIMessageChunk", None)
    if chunk is None or not (isinstance(cls, type) and issubclass(cls, chunk)):
        return None
    return lambda fields: check_partial_json(fields, limits)


def check_partial_json(fields: Any, limits: Limits) -> None:
    """Refuse stored ``tool_call_chunks`` arguments that would take quadratic time to parse."""
    if type(fields) is not dict:
        return
    chunks = fields.get("tool_call_chunks")
    if type(chunks) is not list:
        return
    for chunk in chunks:
        args = chunk.get("args") if type(chunk) is dict else None
        if type(args) is not str:
            continue
        # Only incomplete JSON is re-parsed, in time quadratic in its length: a free
        # step for short arguments, charged to the row's meter beyond that.
        work = budget.partial_json_units(len(args))
        if len(args) <= limits.max_partial_json and work <= budget.FREE_UNITS:
            continue
        try:
            json.loads(args)
        except (ValueError, RecursionError):
            if len(args) > limits.max_partial_json:
                raise limits.refuse(
                    "max_partial_json", "length of a streamed tool-call argument that is not complete JSON", len(args)
                ) from None
            budget.charge(work, "re-parsing streamed tool-call arguments that are not complete JSON")


# --- rebuilding curated messages from their stored fields ---------------------
#
# langchain-core messages and Documents are pure data: a message's validated
# ``__dict__`` is exactly what serde_kit (its ``__dict__``) and the stock writer
# (``model_dump()``) store. Re-validating such fields through pydantic and the
# classes' validators gives back the same values, so a stored field dict that
# already has the validated shape -- the class's fields in declaration order,
# each of the exact type validation leaves there -- is installed as the
# object's state directly. Anything else (older field sets, extra fields,
# values validation would coerce or normalise) is validated as before.

_StateCheck = Callable[[Any], bool]
#: A field's check: the exact types its value may have, or a function of the value.
_Check = tuple[type, ...] | _StateCheck
_STR_OR_NONE: tuple[type, ...] = (str, type(None))
_TOKEN_COUNTS = ("input_tokens", "output_tokens", "total_tokens")
_TOKEN_DETAILS = ("input_token_details", "output_token_details")


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _content(value: Any) -> bool:
    if type(value) is str:
        return True
    return type(value) is list and all(type(part) is str or type(part) is dict for part in value)


def _exact_keys(item: Any, keys: tuple[str, ...]) -> bool:
    return type(item) is dict and tuple(item) == keys


def _declared_first(value: dict[str, Any], declared: tuple[str, ...]) -> bool:
    """Declared keys come first, in declaration order (as TypedDict validation leaves them)."""
    keys = tuple(value)
    known = tuple(key for key in keys if key in declared)
    return keys[: len(known)] == known and known == tuple(key for key in declared if key in value)


def _subsets(keys: tuple[str, ...]) -> list[set[str]]:
    found: list[set[str]] = [set()]
    for key in keys:
        found += [chosen | {key} for chosen in found]
    return found


def _typed_dict_keys(module: str, name: str) -> tuple[str, ...]:
    found = getattr(sys.modules.get(module), name, None)
    return tuple(getattr(found, "__annotations__", ()))


def _ai_checks() -> dict[str, _StateCheck] | None:
    """Checks of the fields AIMessage adds, from the TypedDicts of the installed langchain-core."""
    tool = "langchain_core.messages.tool"
    call_keys = _typed_dict_keys(tool, "ToolCall")
    # What create_tool_call / create_invalid_tool_call leave, in the order validation puts them.
    invalid_keys = tuple(
        key for key in _typed_dict_keys(tool, "InvalidToolCall") if key in {"type", "id", "name", "args", "error"}
    )
    usage_keys = _typed_dict_keys("langchain_core.messages.ai", "UsageMetadata")
    input_keys = _typed_dict_keys("langchain_core.messages.ai", "InputTokenDetails")
    output_keys = _typed_dict_keys("langchain_core.messages.ai", "OutputTokenDetails")
    if (
        set(call_keys) != {"name", "args", "id", "type"}
        or len(invalid_keys) != 5
        or usage_keys[:3] != _TOKEN_COUNTS
        or set(usage_keys[3:]) != set(_TOKEN_DETAILS)
        or not input_keys
        or not output_keys
    ):
        return None

    def tool_calls(value: Any) -> bool:
        return type(value) is list and all(
            _exact_keys(call, call_keys)
            and type(call["name"]) is str
            and type(call["args"]) is dict
            and _str_or_none(call["id"])
            and call["type"] == "tool_call"
            for call in value
        )

    def invalid_tool_calls(value: Any) -> bool:
        return type(value) is list and all(
            _exact_keys(call, invalid_keys)
            and all(_str_or_none(call[key]) for key in ("name", "args", "id", "error"))
            and call["type"] == "invalid_tool_call"
            for call in value
        )

    # The key orders validation leaves when no extra key is stored.
    usage_orders = frozenset(
        _TOKEN_COUNTS + tuple(key for key in usage_keys[3:] if key in chosen) for chosen in _subsets(usage_keys[3:])
    )

    detail_orders = {
        declared: frozenset(tuple(key for key in declared if key in chosen) for chosen in _subsets(declared))
        for declared in (input_keys, output_keys)
    }

    def int_details(value: Any, declared: tuple[str, ...]) -> bool:
        return (
            type(value) is dict
            and (tuple(value) in detail_orders[declared] or _declared_first(value, declared))
            and all(type(value[key]) is int for key in declared if key in value)
        )

    def usage(value: Any) -> bool:
        if value is None:
            return True
        return (
            type(value) is dict
            and type(value.get("input_tokens")) is int
            and type(value.get("output_tokens")) is int
            and type(value.get("total_tokens")) is int
            and (tuple(value) in usage_orders or _declared_first(value, usage_keys))
            and ("input_token_details" not in value or int_details(value["input_token_details"], input_keys))
            and ("output_token_details" not in value or int_details(value["output_token_details"], output_keys))
        )

    return {"tool_calls": tool_calls, "invalid_tool_calls": invalid_tool_calls, "usage_metadata": usage}


def _tool_status(value: Any) -> bool:
    return type(value) is str and value in ("success", "error")


_BASE: dict[str, _Check] = {
    "content": _content,
    "additional_kwargs": (dict,),
    "response_metadata": (dict,),
    "name": _STR_OR_NONE,
    "id": _STR_OR_NONE,
}
_ANY: tuple[type, ...] = ()  # no check
#: (module, class) -> the checks of the fields that class adds or narrows.
_CURATED: dict[tuple[str, str], dict[str, _Check]] = {
    ("langchain_core.messages.human", "HumanMessage"): {},
    ("langchain_core.messages.system", "SystemMessage"): {},
    ("langchain_core.messages.chat", "ChatMessage"): {"role": (str,)},
    ("langchain_core.messages.function", "FunctionMessage"): {"name": (str,)},
    ("langchain_core.messages.tool", "ToolMessage"): {"tool_call_id": (str,), "artifact": _ANY, "status": _tool_status},
}
_DOCUMENT: dict[str, _Check] = {"id": _STR_OR_NONE, "metadata": (dict,), "page_content": (str,)}


def fast_builder(cls: Any) -> Callable[[dict[str, Any]], Any] | None:
    """A builder that installs stored fields of ``cls`` as its state when they have the
    validated shape (returning None otherwise), or None when ``cls`` is not curated."""
    key = (getattr(cls, "__module__", ""), getattr(cls, "__qualname__", ""))
    ai = key == ("langchain_core.messages.ai", "AIMessage")
    if ai:
        added = _ai_checks()
        if added is None:
            return None
        checks: dict[str, _Check] = {**_BASE, **added}
    elif key in _CURATED:
        checks = {**_BASE, **_CURATED[key]}
    elif key == ("langchain_core.documents.base", "Document"):
        checks = dict(_DOCUMENT)
    else:
        return None
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not (isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)):
        return None
    cls = cast(Any, cls)  # a pydantic model class: typeshed's `type` knows none of its attributes
    fields = getattr(cls, "model_fields", {})
    type_field = fields.get("type")
    if type_field is None or type(type_field.default) is not str:
        return None
    expected_type = type_field.default
    checks["type"] = _ANY  # checked in build()
    names = tuple(fields)
    if (
        set(checks) != set(names)
        or cls.model_post_init is not pydantic.BaseModel.model_post_init
        or cls.__private_attributes__
    ):
        return None  # a langchain-core release whose shape this table does not describe
    typed = tuple((name, check) for name, check in checks.items() if isinstance(check, tuple) and check)
    special = tuple((name, check) for name, check in checks.items() if not isinstance(check, tuple))
    allows_extra = (cls.model_config or {}).get("extra") == "allow"
    new = cls.__new__
    set_state = object.__setattr__

    def build(stored: dict[str, Any]) -> Any:
        if tuple(stored) != names or stored["type"] != expected_type or type(stored["type"]) is not str:
            return None
        for name, types in typed:
            if type(stored[name]) not in types:
                return None
        for name, check in special:
            if not check(stored[name]):
                return None
        if ai and not (stored["tool_calls"] or stored["invalid_tool_calls"]) and "tool_calls" in stored["additional_kwargs"]:
            return None  # validation would parse the raw tool calls
        obj = new(cls)
        set_state(obj, "__dict__", stored)
        set_state(obj, "__pydantic_fields_set__", set(names))
        set_state(obj, "__pydantic_extra__", {} if allows_extra else None)
        set_state(obj, "__pydantic_private__", None)
        return obj

    return build
