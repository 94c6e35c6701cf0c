"""PostgresSaver with EncryptedSerializer, and the plaintext SECURITY.md warns about."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring, blob_key_id
from tests.support.crypto_helpers import K1, K2

pytestmark = pytest.mark.postgres

INLINE_SECRET = "inline-str-secret-51c2"
LIST_SECRET = "list-secret-9d0e"


class State(TypedDict):
    title: str
    notes: Annotated[list[str], operator.add]


def _node(state: State) -> dict:
    return {"title": INLINE_SECRET, "notes": [LIST_SECRET]}


def test_postgres_saver_encrypts_blobs_and_writes_but_not_inline_primitives(postgres_db: str) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    serde = EncryptedSerializer(Serializer(), Keyring({"k1": K1, "k2": K2}, primary="k2"))
    # The connection settings PostgresSaver.from_conn_string uses (it takes no serde=).
    with psycopg.connect(postgres_db, autocommit=True, prepare_threshold=0, row_factory=dict_row) as pg:
        saver = PostgresSaver(pg, serde=serde)
        saver.setup()
        builder = StateGraph(State)
        builder.add_node("n", _node)
        builder.add_edge(START, "n")
        builder.add_edge("n", END)
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "pg-1"}}
        graph.invoke({"title": "t", "notes": []}, config)
        assert graph.get_state(config).values == {"title": INLINE_SECRET, "notes": [LIST_SECRET]}

    with psycopg.connect(postgres_db) as conn:
        blobs = conn.execute("SELECT type, blob FROM checkpoint_blobs WHERE type <> 'empty'").fetchall()
        writes = conn.execute("SELECT type, blob FROM checkpoint_writes").fetchall()
        checkpoints = [r[0] for r in conn.execute("SELECT checkpoint::text FROM checkpoints")]
    assert blobs and writes
    for tag, blob in blobs + writes:
        assert tag.endswith("+aesgcm") and blob_key_id(blob) == "k2"
        assert LIST_SECRET.encode() not in blob and INLINE_SECRET.encode() not in blob
    # As SECURITY.md says: str/int/float/bool/None channel values stay inline, in plaintext.
    assert any(INLINE_SECRET in c for c in checkpoints)
    assert not any(LIST_SECRET in c for c in checkpoints)
