"""LangGraph and langchain-core types come back as their own classes."""

from __future__ import annotations

from datetime import datetime, timezone

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.store.base import Item
from langgraph.types import Command, Interrupt, Send

from serde_kit import Serializer

SERDE = Serializer()


def rt(value):
    return SERDE.loads_typed(SERDE.dumps_typed(value))


def test_control_types():
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    values = [
        Send("node", {"x": (1, 2)}),
        Interrupt(value={"q": "approve?"}, id="i-1"),
        Command(resume={"ok": True}, goto=[Send("a", 1)], update={"k": 1}),
        _DeltaSnapshot(value=[1, (2,)]),
        Item(value={"a": 1}, key="k", namespace=("a", "b"), created_at=now, updated_at=now),
    ]
    for value in values:
        back = rt(value)
        assert type(back) is type(value) and back == value


def test_messages_and_documents():
    values = [
        HumanMessage("hi", id="1"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}]),
        ToolMessage("result", tool_call_id="c1"),
        SystemMessage("be brief"),
        RemoveMessage(id="1"),
        Document(page_content="text", metadata={"source": ("a", 1)}),
    ]
    for value in values:
        back = rt(value)
        assert type(back) is type(value) and back == value
