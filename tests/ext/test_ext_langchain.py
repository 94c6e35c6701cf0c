"""langchain-core messages and Documents rebuilt from their stored fields (``validate="auto"``).

The fast path must give exactly what validation gives: same class, same
``__dict__`` (values and order), same fields-set, extra and private state.
Stored fields of any other shape must be validated, as before.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
import pytest
from hypothesis import given
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from serde_kit import RebuildError, SerdeWarning, Serializer
from serde_kit.ext import langchain
from tests.support import strategies as S

AUTO = Serializer()
ALWAYS = Serializer(validate="always")

USAGE = {
    "input_tokens": 10,
    "output_tokens": 20,
    "total_tokens": 30,
    "input_token_details": {"audio": 0, "cache_read": 4},
    "output_token_details": {"audio": 0, "reasoning": 7},
}
MESSAGES = [
    HumanMessage("hi", id="h1", name="alice"),
    HumanMessage([{"type": "text", "text": "look"}, "plain"], additional_kwargs={"k": [1, 2]}),
    SystemMessage("be brief"),
    AIMessage(
        "calling",
        tool_calls=[{"name": "search", "args": {"q": "x", "n": [1, 2]}, "id": "c1"}],
        invalid_tool_calls=[{"name": "bad", "args": "{", "id": "c2", "error": "not json"}],
        usage_metadata=USAGE,
        response_metadata={"model": "m", "finish_reason": "stop"},
        id="a1",
    ),
    AIMessage("", usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3, "extra_count": 9}),
    ToolMessage("result", tool_call_id="c1", artifact={"rows": [1, 2]}, status="error", name="search"),
    ToolMessage([{"type": "text", "text": "r"}], tool_call_id="c3"),
    ChatMessage("x", role="critic"),
    FunctionMessage("out", name="fn"),
    Document(page_content="text", metadata={"source": "s", "page": 3}, id="d1"),
]


def state(obj: Any) -> tuple:
    return (
        type(obj),
        list(obj.__dict__.items()),
        obj.__pydantic_fields_set__,
        obj.__pydantic_extra__,
        obj.__pydantic_private__,
    )


def envelope(cls: type, fields: dict) -> tuple[str, bytes]:
    payload = ormsgpack.packb([cls.__module__, cls.__name__, fields, "model_validate_json"])
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(5, payload))


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_curated_messages_rebuild_exactly_as_validation_does(message: Any) -> None:
    row = AUTO.dumps_typed(message)
    fast, validated = AUTO.loads_typed(row), ALWAYS.loads_typed(row)
    assert state(fast) == state(validated)
    assert fast == message


@given(S.messages)
def test_generated_messages_rebuild_exactly_as_validation_does(message: Any) -> None:
    row = AUTO.dumps_typed(message)
    assert state(AUTO.loads_typed(row)) == state(ALWAYS.loads_typed(row))


def test_the_fast_path_skips_the_validating_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = AIMessage.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(AIMessage, "__init__", counting)
    message = MESSAGES[3]
    row = AUTO.dumps_typed(message)
    calls.clear()
    assert Serializer().loads_typed(row) == message
    assert calls == []
    assert Serializer(validate="always").loads_typed(row) == message
    assert calls == [1]


def _fields(message: Any) -> dict:
    return dict(message.__dict__)


ODD_SHAPES = [
    # (class, stored fields): shapes validation changes or refuses, so never installed as they are
    (HumanMessage, {**_fields(MESSAGES[0]), "example": False}),  # removed field (langchain-core 0.3 rows)
    (HumanMessage, {k: v for k, v in reversed(_fields(MESSAGES[0]).items())}),  # field order
    (HumanMessage, {k: v for k, v in _fields(MESSAGES[0]).items() if k != "name"}),  # a field missing
    (HumanMessage, {**_fields(MESSAGES[0]), "id": 7}),  # coerced to "7"
    (ToolMessage, {**_fields(MESSAGES[5]), "content": 12}),  # coerced to "12"
    (ToolMessage, {**_fields(MESSAGES[5]), "status": "odd"}),  # refused by validation
    (AIMessage, {**_fields(MESSAGES[4]), "usage_metadata": {"input_tokens": True, "output_tokens": 2.0, "total_tokens": "3"}}),
    (AIMessage, {**_fields(MESSAGES[4]), "usage_metadata": {"output_tokens": 2, "input_tokens": 1, "total_tokens": 3}}),
    (AIMessage, {**_fields(MESSAGES[3]), "tool_calls": [{"name": "s", "args": {}, "id": "c", "type": "tool_call", "extras": 1}]}),
    (AIMessage, {**_fields(MESSAGES[3]), "tool_calls": [{"args": {}, "name": "s", "id": "c", "type": "tool_call"}]}),
    (
        AIMessage,  # raw provider tool calls that validation parses into tool_calls
        {
            **_fields(MESSAGES[4]),
            "additional_kwargs": {"tool_calls": [{"id": "c9", "function": {"name": "f", "arguments": "{}"}, "type": "function"}]},
        },
    ),
    (Document, {**_fields(MESSAGES[-1]), "type": "NotDocument"}),
]


@pytest.mark.parametrize("cls, fields", ODD_SHAPES, ids=range(len(ODD_SHAPES)))
def test_other_stored_shapes_are_validated(cls: type, fields: dict) -> None:
    build = langchain.fast_builder(cls)
    assert build is not None
    assert build(dict(fields)) is None
    row = envelope(cls, fields)
    refused = {("status", "odd"), ("type", "NotDocument")} & {(k, v) for k, v in fields.items() if type(v) is str}
    if refused:  # refused by validation
        ((field, value),) = refused
        with pytest.raises(RebuildError, match=rf"{cls.__name__} does not validate \(field {field}"):
            ALWAYS.loads_typed(row)
        with pytest.warns(SerdeWarning, match=f"{cls.__name__} does not validate"):  # once per class and reader
            assert getattr(Serializer().loads_typed(row), field) == value  # as the stock reader builds it, never silently
        return
    fast, validated = AUTO.loads_typed(row), ALWAYS.loads_typed(row)
    assert state(fast) == state(validated)


def test_parsed_raw_tool_calls_match_validation() -> None:
    cls, fields = ODD_SHAPES[10]
    back = AUTO.loads_typed(envelope(cls, fields))
    assert [call["name"] for call in back.tool_calls] == ["f"]


def test_only_curated_classes_have_a_fast_builder() -> None:
    class Custom(HumanMessage):
        pass

    assert langchain.fast_builder(Custom) is None
    assert langchain.fast_builder(AIMessageChunk) is None  # its validators derive fields: always validated
    assert langchain.fast_builder(dict) is None
    assert all(langchain.fast_builder(type(m)) is not None for m in MESSAGES)


def test_validate_option_is_checked() -> None:
    with pytest.raises(ValueError, match="validate must be one of 'auto', 'always'"):
        Serializer(validate="never")  # type: ignore[arg-type]
    assert Serializer(validate="always").with_allow().validate == "always"
