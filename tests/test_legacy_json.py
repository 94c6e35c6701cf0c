"""Legacy ``json`` rows (LangGraph before msgpack) through the allowlist."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

import sample_types as t
from serde_kit import BlockedTypeError, MalformedDataError, RebuildError, Serializer


def row(obj) -> tuple[str, bytes]:
    return "json", json.dumps(obj).encode()


def test_lc2_constructor_for_allowed_types():
    data = row({"lc": 2, "type": "constructor", "id": ["sample_types", "Doc"], "kwargs": {"title": "a"}})
    assert Serializer(allow=[t.Doc]).loads_typed(data) == t.Doc("a")


def test_lc2_method_only_from_the_fixed_table():
    data = row({"lc": 2, "type": "constructor", "id": ["datetime", "datetime"], "method": "fromisoformat", "args": ["2024-01-02T03:04:05"]})
    assert Serializer().loads_typed(data).year == 2024
    bad = row({"lc": 2, "type": "constructor", "id": ["datetime", "datetime"], "method": "now", "args": []})
    with pytest.raises(BlockedTypeError):
        Serializer().loads_typed(bad)


def test_lc2_blocked_and_failing():
    data = row({"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["id"]})
    with pytest.raises(BlockedTypeError, match="os.system"):
        Serializer().loads_typed(data)
    failing = row({"lc": 2, "type": "constructor", "id": ["sample_types", "Doc"], "kwargs": {"nope": 1}})
    with pytest.raises(RebuildError):
        Serializer(allow=[t.Doc]).loads_typed(failing)


def test_lc1_messages_revive():
    message = HumanMessage("hello", id="m1")
    lc1 = json.loads(json.dumps(message.to_json()))
    assert Serializer().loads_typed(row({"messages": [lc1]})) == {"messages": [message]}


def test_invalid_json():
    with pytest.raises(MalformedDataError):
        Serializer().loads_typed(("json", b"{not json"))


def test_lc1_non_message_classes_are_refused():
    data = row({"lc": 1, "type": "constructor", "id": ["langchain", "chat_models", "openai", "ChatOpenAI"], "kwargs": {}})
    with pytest.raises(BlockedTypeError, match="ChatOpenAI"):
        Serializer().loads_typed(data)
