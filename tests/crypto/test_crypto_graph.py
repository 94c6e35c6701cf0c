"""A real StateGraph checkpointing through EncryptedSerializer in LangGraph's savers."""

from __future__ import annotations

import operator
import sqlite3
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from serde_kit.crypto import EncryptedSerializer, Keyring, blob_key_id
from serde_kit.errors import UnknownKeyError
from tests.support.crypto_helpers import K1, K2

SECRET = "very-secret-payload-7f3a"


class State(TypedDict):
    notes: Annotated[list[str], operator.add]
    approved: bool


def _write(state: State) -> dict:
    return {"notes": [SECRET, "draft"]}


def _review(state: State) -> dict:
    answer = interrupt({"question": "approve?", "notes": state["notes"]})
    return {"approved": answer == "yes", "notes": [f"review:{answer}"]}


def _graph(saver):
    builder = StateGraph(State)
    builder.add_node("write", _write)
    builder.add_node("review", _review)
    builder.add_edge(START, "write")
    builder.add_edge("write", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)


def _run(graph, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"notes": ["start"], "approved": False}, config)
    assert graph.get_state(config).next == ("review",)  # paused at the interrupt
    return graph.invoke(Command(resume="yes"), config)


KR = Keyring({"k1": K1, "k2": K2}, primary="k2")
EXPECTED = {"notes": ["start", SECRET, "draft", "review:yes"], "approved": True}


def test_in_memory_saver_round_trip(inner, backend: str) -> None:
    saver = InMemorySaver(serde=EncryptedSerializer(inner, KR, backend=backend))
    graph = _graph(saver)
    assert _run(graph, "t-1") == EXPECTED
    config = {"configurable": {"thread_id": "t-1"}}
    assert graph.get_state(config).values == EXPECTED
    history = list(graph.get_state_history(config))
    assert len(history) >= 4
    # Everything the saver stored through serde is sealed under k2.
    # storage: thread -> ns -> checkpoint id -> (checkpoint row, metadata row, parent id)
    checkpoints = [
        row
        for per_ns in saver.storage.values()
        for per_ckpt in per_ns.values()
        for ckpt, meta, _parent in per_ckpt.values()
        for row in (ckpt, meta)
    ]
    blobs = [v for v in saver.blobs.values() if v[0] != "empty"]
    writes = [w[2] for per_ckpt in saver.writes.values() for w in per_ckpt.values()]
    assert checkpoints and blobs and writes
    stored = checkpoints + blobs + writes
    assert stored, "the saver stored nothing through serde?"
    for tag, blob in stored:
        assert tag.endswith("+aesgcm"), tag
        assert blob_key_id(blob) == "k2"
        assert SECRET.encode() not in blob


def test_sqlite_saver_round_trip_and_key_needed(inner) -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=EncryptedSerializer(inner, KR))
        graph = _graph(saver)
        assert _run(graph, "t-2") == EXPECTED
        rows = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()
        rows += conn.execute("SELECT type, value FROM writes").fetchall()
        assert len(rows) >= 4
        for tag, blob in rows:
            assert tag.endswith("+aesgcm") and blob_key_id(blob) == "k2"
            assert SECRET.encode() not in blob
        # A reader without k2 gets a typed error naming the key, not garbage.
        blind = SqliteSaver(conn, serde=EncryptedSerializer(inner, KR.promote("k1").without("k2")))
        with pytest.raises(UnknownKeyError) as exc:
            blind.get_tuple({"configurable": {"thread_id": "t-2"}})
        assert exc.value.key_id == "k2"
        # After rotating to k1 a graph over the same DB reads the same state.
        rotated = EncryptedSerializer(inner, KR.promote("k1"))
        for table, col in (("checkpoints", "checkpoint"), ("writes", "value")):
            for rowid, tag, blob in conn.execute(f"SELECT rowid, type, {col} FROM {table}").fetchall():
                new = rotated.reencrypt((tag, blob))
                assert new is not None
                conn.execute(f"UPDATE {table} SET type=?, {col}=? WHERE rowid=?", (*new, rowid))
        conn.commit()
        reader = _graph(SqliteSaver(conn, serde=EncryptedSerializer(inner, KR.promote("k1").without("k2"))))
        assert reader.get_state({"configurable": {"thread_id": "t-2"}}).values == EXPECTED
    finally:
        conn.close()
