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
from typing import Any, NamedTuple, cast

from .. import budget
from ..limits import Limits

__all__ = ["CHECKS", "AIShapes", "FastShape", "ai_shapes", "check_partial_json", "fast_builder", "fast_shape", "guard"]


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


class AIShapes(NamedTuple):
    """The key orders of the TypedDicts AIMessage's fields hold, in the installed langchain-core."""

    call: tuple[str, ...]  #: a tool call's keys, in the order validation leaves them
    invalid: tuple[str, ...]  #: an invalid tool call's keys (what create_invalid_tool_call leaves)
    usage: tuple[str, ...]  #: UsageMetadata's keys: the three token counts, then the detail dicts
    input: tuple[str, ...]  #: InputTokenDetails' keys
    output: tuple[str, ...]  #: OutputTokenDetails' keys


def ai_shapes() -> AIShapes | None:
    """The shapes AIMessage's fields are checked against, or None for a langchain-core
    release whose TypedDicts this module does not describe."""
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
    return AIShapes(call_keys, invalid_keys, usage_keys, input_keys, output_keys)


def _ai_checks(shapes: AIShapes) -> dict[str, _StateCheck]:
    """Checks of the fields AIMessage adds."""
    call_keys, invalid_keys, usage_keys, input_keys, output_keys = shapes

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


#: The checks a field may have, by name (FastShape.checks); the AI message's own
#: ("tool_calls", "invalid_tool_calls", "usage") depend on its AIShapes. "type" is
#: the discriminator: an exact str equal to the class's default.
_SIMPLE_CHECKS: dict[str, _Check] = {
    "any": (),
    "type": (),
    "dict": (dict,),
    "str": (str,),
    "str_or_none": _STR_OR_NONE,
    "content": _content,
    "tool_status": _tool_status,
}
CHECKS = (*_SIMPLE_CHECKS, "tool_calls", "invalid_tool_calls", "usage")

_BASE: dict[str, str] = {
    "content": "content",
    "additional_kwargs": "dict",
    "response_metadata": "dict",
    "name": "str_or_none",
    "id": "str_or_none",
}
_AI: dict[str, str] = {"tool_calls": "tool_calls", "invalid_tool_calls": "invalid_tool_calls", "usage_metadata": "usage"}
#: (module, class) -> the checks of the fields that class adds or narrows.
_CURATED: dict[tuple[str, str], dict[str, str]] = {
    ("langchain_core.messages.human", "HumanMessage"): {},
    ("langchain_core.messages.system", "SystemMessage"): {},
    ("langchain_core.messages.chat", "ChatMessage"): {"role": "str"},
    ("langchain_core.messages.function", "FunctionMessage"): {"name": "str"},
    ("langchain_core.messages.tool", "ToolMessage"): {"tool_call_id": "str", "artifact": "any", "status": "tool_status"},
}
_DOCUMENT: dict[str, str] = {"id": "str_or_none", "metadata": "dict", "page_content": "str"}


class FastShape(NamedTuple):
    """What the fast builder of a curated class requires of stored fields: exactly
    ``names`` in this order, each passing its check (one of :data:`CHECKS`)."""

    names: tuple[str, ...]  #: the class's fields, in declaration order
    checks: tuple[str, ...]  #: the check of each field (same order)
    expected_type: str  #: what the "type" field must hold
    allows_extra: bool  #: the model's extra="allow" (its __pydantic_extra__ is {} then)
    ai: AIShapes | None  #: for AIMessage: its fields' shapes (and the raw tool-call rule)


def fast_shape(cls: Any) -> FastShape | None:
    """The shape stored fields of ``cls`` must have to be installed as its state, or
    None when ``cls`` is not curated (or not in a release this module describes)."""
    key = (getattr(cls, "__module__", ""), getattr(cls, "__qualname__", ""))
    ai: AIShapes | None = None
    if key == ("langchain_core.messages.ai", "AIMessage"):
        ai = ai_shapes()
        if ai is None:
            return None
        checks: dict[str, str] = {**_BASE, **_AI}
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
    checks["type"] = "type"
    names = tuple(fields)
    if (
        set(checks) != set(names)
        or cls.model_post_init is not pydantic.BaseModel.model_post_init
        or cls.__private_attributes__
    ):
        return None  # a langchain-core release whose shape this table does not describe
    allows_extra = (cls.model_config or {}).get("extra") == "allow"
    return FastShape(names, tuple(checks[name] for name in names), type_field.default, allows_extra, ai)


def fast_builder(cls: Any) -> Callable[[dict[str, Any]], Any] | None:
    """A builder that installs stored fields of ``cls`` as its state when they have the
    validated shape (returning None otherwise), or None when ``cls`` is not curated."""
    shape = fast_shape(cls)
    if shape is None:
        return None
    names, expected_type, allows_extra = shape.names, shape.expected_type, shape.allows_extra
    ai = shape.ai is not None
    known: dict[str, _Check] = {**_SIMPLE_CHECKS, **(_rename_ai(_ai_checks(shape.ai)) if shape.ai else {})}
    checks = [(name, known[check]) for name, check in zip(names, shape.checks, strict=True)]
    typed = tuple((name, check) for name, check in checks if isinstance(check, tuple) and check)
    special = tuple((name, check) for name, check in checks if not isinstance(check, tuple))
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


def _rename_ai(checks: dict[str, _StateCheck]) -> dict[str, _Check]:
    """The AI checks under their check names (usage_metadata's is "usage")."""
    return {_AI[field]: check for field, check in checks.items()}
