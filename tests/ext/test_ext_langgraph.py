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


def test_search_item_round_trips_and_stock_reads_it_as_well_as_its_own():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.store.base import SearchItem

    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    value = SearchItem(("a", "b"), "k", {"x": 1}, now, now, score=0.25)
    row = SERDE.dumps_typed(value)
    back = SERDE.loads_typed(row)
    assert type(back) is SearchItem and back == value and back.score == 0.25 and back.namespace == ("a", "b")
    stock = JsonPlusSerializer(allowed_msgpack_modules=True)
    theirs = stock.loads_typed(stock.dumps_typed(value))
    ours = stock.loads_typed(row)
    assert type(ours) is type(theirs) is SearchItem and ours == theirs and ours.score == 0.25
    # A strict stock reader returns the fields for both (ours keep the datetimes it turns into text).
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    theirs, ours = strict.loads_typed(strict.dumps_typed(value)), strict.loads_typed(row)
    assert ours.keys() == theirs.keys() and ours["score"] == theirs["score"] == 0.25
    assert ours["created_at"] == now and theirs["created_at"] == now.isoformat()


def test_stock_search_item_rows_are_read_by_default():
    import base64

    from langgraph.store.base import SearchItem

    from tests.compat import corpus

    row = next(r for r in corpus.rows("4.3.2") if r["name"] == "search_item")
    back = Serializer().loads_typed((row["tag"], base64.b64decode(row["data"])))
    assert type(back) is SearchItem and back.score == 0.5


def test_failed_node_error_reads_back_as_a_string_like_stock():
    # LangGraph stores a failing node's exception as a pending write; after a
    # reload StateSnapshot.tasks[i].error is what the serializer returns, and
    # LangGraph and its users treat it as the repr string.
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    class S(TypedDict):
        x: int

    def boom(state: S) -> dict:
        raise ValueError("boom")

    builder = StateGraph(S)
    builder.add_node("boom", boom)
    builder.add_edge(START, "boom")
    builder.add_edge("boom", END)
    graph = builder.compile(checkpointer=InMemorySaver(serde=Serializer()))
    config = {"configurable": {"thread_id": "t"}}
    try:
        graph.invoke({"x": 1}, config)
    except ValueError:
        pass
    task = graph.get_state(config).tasks[0]
    assert isinstance(task.error, str) and "boom" in task.error
