"""bind_rows(seal_inline=True) on a real PostgreSQL: inline primitives reach the encryption layer."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from serde_kit import EncryptedSerializer, Keyring, Serializer
from serde_kit.bound_saver import bind_rows
from serde_kit.crypto import blob_key_id
from serde_kit.crypto.blob import blob_binding
from serde_kit.crypto.binding import RowIdentity
from serde_kit.errors import ConfigError

pytestmark = pytest.mark.postgres

KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")
TOKEN = "api-token-3b9f"
STEP_SECRET = "step-secret-c41d"


class State(TypedDict):
    api_token: str
    step: str
    count: int
    notes: Annotated[list[str], operator.add]


def _touch(state: State) -> dict:
    # Leaves api_token alone: its channel does not change in this step.
    return {"notes": ["n"], "step": STEP_SECRET}


def _graph(saver):
    builder = StateGraph(State)
    builder.add_node("touch", _touch)
    builder.add_edge(START, "touch")
    builder.add_edge("touch", END)
    return builder.compile(checkpointer=saver)


def _connect(dsn: str):
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def _saver(pg, **options):
    from langgraph.checkpoint.postgres import PostgresSaver

    saver = PostgresSaver(pg, serde=EncryptedSerializer(Serializer(), KEYRING))
    saver.setup()
    return bind_rows(saver, **options)


def _checkpoint_texts(dsn: str, thread: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT checkpoint::text FROM checkpoints WHERE thread_id=%s ORDER BY checkpoint_id",
                (thread,),
            )
        ]


def _blobs(dsn: str, thread: str, channel: str) -> list[tuple[str, bytes]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT type, blob FROM checkpoint_blobs WHERE thread_id=%s AND channel=%s AND type <> 'empty'",
            (thread, channel),
        ).fetchall()


def _conf(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def test_inline_primitives_are_sealed_and_bound(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        values = graph.get_state(_conf("t1")).values
    assert values == {"api_token": TOKEN, "step": STEP_SECRET, "count": 7, "notes": ["n"]}
    assert not any(TOKEN in text or STEP_SECRET in text for text in _checkpoint_texts(postgres_db, "t1"))
    rows = _blobs(postgres_db, "t1", "api_token")
    assert rows
    for tag, blob in rows:
        assert tag == "msgpack+aesgcm" and blob_key_id(blob) == "k1"
        assert blob_binding(blob) == RowIdentity("t1", "")
        assert TOKEN.encode() not in blob


def test_control_without_the_option_primitives_stay_inline(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    assert _blobs(postgres_db, "t1", "api_token") == []


def test_a_database_written_without_the_option_reads_and_moves_on(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        before = graph.get_state(_conf("t1")).values
        n_before = len(list(graph.get_state_history(_conf("t1"))))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        assert graph.get_state(_conf("t1")).values == before
        # Old checkpoints (inline values) still read in the history.
        assert len(list(graph.get_state_history(_conf("t1")))) == n_before
        # A new step that leaves api_token unchanged: the value must not be lost,
        # and the new checkpoint must not carry it inline.
        graph.invoke({"notes": ["more"]}, _conf("t1"))
        after = graph.get_state(_conf("t1")).values
    assert after["api_token"] == TOKEN and after["count"] == 7
    assert after["notes"] == ["n", "more", "n"]
    assert TOKEN not in _checkpoint_texts(postgres_db, "t1")[-1]
    assert _blobs(postgres_db, "t1", "api_token")


def test_seal_inline_is_refused_for_savers_that_need_no_help() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver(serde=EncryptedSerializer(Serializer(), KEYRING))
    with pytest.raises(ConfigError, match="PostgreSQL"):
        bind_rows(saver, seal_inline=True)


# -- audit ------------------------------------------------------------------------------


def _audit(dsn: str):
    from serde_kit.tools.audit import audit_store
    from serde_kit.tools.db import open_database

    with open_database(postgres=dsn) as store:
        return audit_store(store)


def _inline_warnings(report) -> list[str]:
    return [w for w in report.warnings() if "inline" in w]


def test_audit_does_not_warn_for_sealed_inline_values(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        graph.invoke({"notes": ["again"]}, _conf("t1"))
    report = _audit(postgres_db)
    assert _inline_warnings(report) == []
    assert {ch: t for ch, t in report.inline_primitives.items() if set(t) - {"null"}} == {}
    assert report.exit_code() == 0 and report.plaintext_rows == 0
    # the sealed values are counted as encrypted rows instead
    assert report.tables["checkpoint_blobs"].encrypted > 0


def test_audit_still_warns_for_unsealed_inline_values(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    (warning,) = _inline_warnings(_audit(postgres_db))
    assert "api_token" in warning and "count" in warning and "seal_inline=True" in warning
    assert TOKEN not in warning  # counts and names only, never values


def test_audit_still_warns_for_inline_values_of_checkpoints_written_before_sealing(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    # Sealing from now on: the checkpoints written before keep their inline values, and audit must say so.
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"notes": ["more"]}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    (warning,) = _inline_warnings(_audit(postgres_db))
    assert "api_token" in warning
