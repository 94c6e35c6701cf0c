"""Curated langchain-core messages built by the compiled reader (KIND_MESSAGE).

The reader installs stored fields as a message's state only when the pure path's
fast builder would (serde_kit.ext.langchain.fast_builder); every other shape goes
to the pure path's rebuilder. Both paths must give the same class, ``__dict__``
(values, order, value types), fields-set, extra and private state, or the same error.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
import pytest
from hypothesis import given
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from serde_kit import native
from serde_kit.ext import langchain
from tests.ext.test_ext_langchain import MESSAGES, ODD_SHAPES, USAGE
from tests.support import strategies as S

from .conftest import assert_same_outcome, make_pair, outcome, python_calls


def state(obj: Any) -> Any:
    """Everything the two paths must agree on: the class, each field with its value's
    type, the fields-set, extra and private state."""
    if not hasattr(obj, "__pydantic_fields_set__"):
        return obj
    return (
        type(obj),
        [(key, type(value), value) for key, value in obj.__dict__.items()],
        obj.__pydantic_fields_set__,
        obj.__pydantic_extra__,
        obj.__pydantic_private__,
    )


def assert_same_message(fast: Any, pure: Any, row: tuple[str, bytes], label: str) -> None:
    assert_same_outcome(fast, pure, row, label)
    expected, got = outcome(pure.loads_typed, row), outcome(fast.loads_typed, row)
    if expected[0] == "value":
        assert state(got[1]) == state(expected[1]), label


def _fields(message: Any) -> dict[str, Any]:
    return dict(message.__dict__)


AI, TOOL = MESSAGES[3], MESSAGES[5]
# Shapes that take the branches of the reader's own checks: each is either installed by
# both paths or validated by both (the pure path decides what the reader declines).
MORE_SHAPES = [
    (AIMessage, {**_fields(AI), "usage_metadata": None}),
    (AIMessage, {**_fields(AI), "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "input_token_details": {}}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {k: v for k, v in USAGE.items() if k != "input_token_details"}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {k: USAGE[k] for k in reversed(list(USAGE))}}),  # details reversed
    (
        AIMessage,  # detail keys out of declared order
        {**_fields(AI), "usage_metadata": {**USAGE, "input_token_details": {"cache_read": 4, "audio": 0}}},
    ),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "input_token_details": {"audio": 0, "zz": 1}}}),  # declared first
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "input_token_details": {"audio": True}}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "output_token_details": [1]}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "total_tokens": 2**64 - 1}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "extra": 1}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {**USAGE, "total_tokens": 3.0}}),
    (AIMessage, {**_fields(AI), "usage_metadata": {"input_tokens": 1, "output_tokens": 2}}),
    (AIMessage, {**_fields(AI), "usage_metadata": "none"}),
    (AIMessage, {**_fields(AI), "tool_calls": []}),
    (AIMessage, {**_fields(AI), "tool_calls": [], "invalid_tool_calls": []}),
    (AIMessage, {**_fields(AI), "tool_calls": [], "invalid_tool_calls": [], "additional_kwargs": {"tool_calls": 5}}),
    (AIMessage, {**_fields(AI), "additional_kwargs": {"tool_calls": 5}}),  # parsed calls stored: kept as they are
    (AIMessage, {**_fields(AI), "additional_kwargs": {1: "int key", None: 2, b"k": 3}}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": "s", "args": {}, "id": None, "type": "tool_call"}]}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": "s", "args": {}, "id": 1, "type": "tool_call"}]}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": 1, "args": {}, "id": "c", "type": "tool_call"}]}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": "s", "args": [], "id": "c", "type": "tool_call"}]}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": "s", "args": {}, "id": "c", "type": "tool_calls"}]}),
    (AIMessage, {**_fields(AI), "tool_calls": [{"name": "s", "args": {}, "id": "c", "type": 1}]}),
    (AIMessage, {**_fields(AI), "tool_calls": ["call"]}),
    (AIMessage, {**_fields(AI), "tool_calls": {"name": "s"}}),
    (
        AIMessage,
        {**_fields(AI), "invalid_tool_calls": [{"type": "invalid_tool_call", "id": None, "name": None, "args": None, "error": None}]},
    ),
    (
        AIMessage,
        {**_fields(AI), "invalid_tool_calls": [{"type": "invalid_tool_call", "id": 1, "name": None, "args": None, "error": None}]},
    ),
    (
        AIMessage,
        {**_fields(AI), "invalid_tool_calls": [{"type": "tool_call", "id": "x", "name": "n", "args": "{", "error": "e"}]},
    ),
    (AIMessage, {**_fields(AI), "invalid_tool_calls": [{"type": "invalid_tool_call"}]}),
    (AIMessage, {**_fields(AI), "content": ["a", {"type": "text", "text": "b"}, ["nested"]]}),
    (AIMessage, {**_fields(AI), "content": [1]}),
    (AIMessage, {**_fields(AI), "content": []}),
    (AIMessage, {**_fields(AI), "type": "human"}),
    (AIMessage, {**_fields(AI), "type": "a"}),
    (AIMessage, {**_fields(AI), "type": "aí"}),
    (AIMessage, {**_fields(AI), "name": b"bytes"}),
    (AIMessage, {**_fields(AI), "response_metadata": None}),
    (AIMessage, {**{k: v for k, v in _fields(AI).items() if k != "id"}, "idx": None}),  # a field renamed
    (AIMessage, {**_fields(AI), 7: "int key"}),
    (ToolMessage, {**_fields(TOOL), "status": "success"}),
    (ToolMessage, {**_fields(TOOL), "status": None}),
    (ToolMessage, {**_fields(TOOL), "artifact": ("any", "value")}),
    (ToolMessage, {**_fields(TOOL), "tool_call_id": None}),
    (HumanMessage, {}),
    (HumanMessage, {**_fields(MESSAGES[0]), "content": "é" * 40}),
]
ALL_SHAPES = [*ODD_SHAPES, *MORE_SHAPES]


@pytest.fixture(scope="module")
def pair() -> tuple[Any, Any]:
    return make_pair()


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_curated_messages_read_alike(pair, message):
    fast, pure = pair
    assert_same_message(fast, pure, ("msgpack", pure.dumps(message)), type(message).__name__)
    assert_same_message(fast, pure, ("msgpack", pure.dumps({"nested": [message, {"in": message}]})), "nested")


def test_messages_written_by_the_stock_serializer_read_alike(pair):
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    fast, pure = pair
    stock = JsonPlusSerializer()
    for message in MESSAGES:
        assert_same_message(fast, pure, stock.dumps_typed(message), f"stock {type(message).__name__}")
    assert_same_message(fast, pure, stock.dumps_typed({"messages": MESSAGES}), "stock list")


@pytest.mark.parametrize("cls, fields", ALL_SHAPES, ids=range(len(ALL_SHAPES)))
def test_other_stored_shapes_read_alike(pair, cls, fields):
    fast, pure = pair
    row = envelope(cls, fields)
    assert_same_message(fast, pure, row, repr(fields)[:200])
    assert_same_message(fast, pure, ("msgpack", ormsgpack.packb([ormsgpack.unpackb(row[1], ext_hook=_keep)] * 2)), "twice")


def envelope(cls: type, fields: dict[Any, Any]) -> tuple[str, bytes]:
    """The row an ext 5 envelope of ``fields`` makes (map keys of any kind)."""
    payload = ormsgpack.packb([cls.__module__, cls.__name__, fields, "model_validate_json"], option=ormsgpack.OPT_NON_STR_KEYS)
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(5, payload))


def _keep(code: int, data: bytes) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, data)


@given(S.messages)
def test_generated_messages_read_alike(message):
    fast, pure = _shared()
    assert_same_message(fast, pure, ("msgpack", pure.dumps(message)), "generated")


_PAIR: list[Any] = []


def _shared() -> tuple[Any, Any]:
    if not _PAIR:
        _PAIR.append(make_pair())
    return _PAIR[0]



def test_messages_of_the_validated_shape_are_built_without_python(pair):
    fast, pure = pair
    row = pure.dumps([*MESSAGES[:4], *MESSAGES[5:]])  # MESSAGES[4] holds an extra usage key: Python decides
    fast.loads(row)  # learn the heads
    calls = python_calls(fast.loads, row)
    assert not {"rebuild", "build", "hook", "tracked_hook"} & set(calls), calls
    assert "build" in python_calls(pure.loads, row)


def test_other_shapes_go_to_the_python_rebuilder(pair):
    fast, pure = pair
    row = envelope(HumanMessage, {**_fields(MESSAGES[0]), "id": 7})[1]
    fast.loads(row)
    calls = python_calls(fast.loads, row)
    assert "rebuild" in calls and "hook" not in calls  # from the table: no hook frame, the rebuilder decides


def test_validate_always_never_installs_state():
    fast, pure = make_pair(validate="always")
    for message in MESSAGES:
        row = pure.dumps(message)
        fast.loads(row)
        assert "rebuild" in python_calls(fast.loads, row)  # no fast builder: the verdict validates
        assert_same_message(fast, pure, ("msgpack", row), type(message).__name__)


def test_the_check_names_are_the_same_on_both_sides():
    module = native._reader
    assert module is not None
    assert set(module.CHECKS) == set(langchain.CHECKS)


def test_reader_refuses_message_entries_that_do_not_fit(pair):
    fast, _ = pair
    reader = fast._decoder.engine
    module = native._reader
    good = native._message_kind(AIMessage)
    assert good[0] == module.KIND_MESSAGE
    names, checks, expected, extra, ai = good[2]
    bad_params = [
        None,
        (names, checks, expected, extra),
        (names, checks[:-1], expected, extra, ai),
        (names, (*checks[:-1], 99), expected, extra, ai),
        (names, (*checks[:-1], -1), expected, extra, ai),
        (names, (*checks[:-1], 2**80), expected, extra, ai),
        (names, (*checks[:-1], "usage"), expected, extra, ai),
        ((*names[:-1], 1), checks, expected, extra, ai),
        (names, checks, None, extra, ai),
        (names, checks, expected, 1, ai),
        (names, checks, expected, extra, ai[:4]),
        (names, checks, expected, extra, (*ai[:4], ai[4][:1])),
        (names, checks, expected, extra, (*ai[:4], ((1,), ai[4][1]))),
        (names, checks, expected, extra, ((1,), *ai[1:])),
    ]
    for param in bad_params:
        with pytest.raises(ValueError):
            reader.register(5, b"\x94\xa1m\xa1n", 4, None, "m", "n", module.KIND_MESSAGE, len, AIMessage, param)
    with pytest.raises(ValueError):  # instances not made by object.__new__
        reader.register(5, b"\x94\xa1m\xa1n", 4, None, "m", "n", module.KIND_MESSAGE, len, int, good[2])
