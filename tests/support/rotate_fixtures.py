"""Databases written by a real LangGraph graph, for the rotate/status/retire tests.

One StateGraph (parallel branches, an ``interrupt()``, a join) is run through
the real SqliteSaver / PostgresSaver on several threads, each thread group with
a different serializer, so one database holds every kind of row:

=========  ======================================================  ==========
group      serializer                                              rows are
=========  ======================================================  ==========
old-*      serde_kit EncryptedSerializer, keyring K_OLD (k1)        k1 rows
new-*      serde_kit EncryptedSerializer, keyring K_NEW (k2, k1)    k2 rows
plain-*    the inner serializer alone                              plaintext
legacy-*   LangGraph's EncryptedSerializer.from_pycryptodome_aes    ``+aes``
=========  ======================================================  ==========

The group is the thread id's prefix, and the thread id is the first primary-key
column of every table, so expected counts come from the thread ids alone.
"""

from __future__ import annotations

import datetime as dt
import operator
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.tools.db import Database, open_database

K1 = bytes(range(32))
K2 = bytes(range(100, 132))
K3 = bytes(range(200, 232))
K_OLD = Keyring({"k1": K1}, primary="k1")
K_NEW = Keyring({"k2": K2, "k1": K1}, primary="k2")
#: LangGraph uses the text of LANGGRAPH_AES_KEY itself as the key.
LEGACY_TEXT = "legacy-key-0123456789abcdef-0123"
LEGACY_KEY = LEGACY_TEXT.encode()
#: What the rotation runs with: k2 primary, k1 kept, legacy key for +aes rows.
K_ROTATE = K_NEW.with_legacy_key(LEGACY_KEY)

GROUPS = ("old", "new", "plain", "legacy")


def inner_serializer() -> Any:
    """serde_kit's Serializer once it exists, else the stock JsonPlusSerializer."""
    try:
        from serde_kit import Serializer
    except ImportError:
        return JsonPlusSerializer()
    return Serializer()


def serde_for(group: str) -> Any:
    """The serializer that writes ``group``'s rows."""
    inner = inner_serializer()
    if group == "old":
        return EncryptedSerializer(inner, K_OLD)
    if group == "new":
        return EncryptedSerializer(inner, K_NEW)
    if group == "plain":
        return inner
    if group == "legacy":
        return StockEncryptedSerializer.from_pycryptodome_aes(JsonPlusSerializer(), key=LEGACY_KEY)
    raise ValueError(group)


def reader_serde(keyring: Keyring = K_ROTATE) -> EncryptedSerializer:
    """Reads every kind of row (migration mode)."""
    return EncryptedSerializer(inner_serializer(), keyring, allow_plaintext=True)


# -- the graph ---------------------------------------------------------------


class State(TypedDict, total=False):
    log: Annotated[list, operator.add]
    count: int
    doc: dict
    answer: str


def plan(state: State) -> dict:
    n = state["count"]
    return {
        "log": [f"plan:{n}"],
        "count": n + 1,
        "doc": {
            "when": dt.datetime(2024, 5, 17, 12, 30, n % 60, tzinfo=dt.timezone.utc),
            "raw": bytes([n % 256]) * 40,
            "nums": list(range(n % 7 + 3)),
            "title": f"doc {n}",
        },
    }


def fast(state: State) -> dict:
    return {"log": [f"fast:{state['count']}"]}


def ask(state: State) -> dict:
    answer = interrupt({"question": "approve?", "count": state["count"]})
    return {"answer": answer, "log": [f"ask:{answer}"]}


def finish(state: State) -> dict:
    return {"log": ["finish"], "count": state["count"] * 10}


def build_graph():
    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("fast", fast)
    g.add_node("ask", ask)
    g.add_node("finish", finish)
    g.add_edge(START, "plan")
    g.add_edge("plan", "fast")
    g.add_edge("plan", "ask")
    g.add_edge(["fast", "ask"], "finish")
    g.add_edge("finish", END)
    return g


def cfg(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def run_thread(app: Any, thread_id: str, n: int, *, resume: bool) -> None:
    """Run to the interrupt (``fast``'s writes stay pending), optionally resume to the end."""
    app.invoke({"log": [], "count": n, "doc": {}}, cfg(thread_id))
    if resume:
        app.invoke(Command(resume=f"yes-{n}"), cfg(thread_id))


def thread_ids(threads_per_group: int) -> list[str]:
    return [f"{g}-{i}" for g in GROUPS for i in range(threads_per_group)]


# -- savers ------------------------------------------------------------------


@contextmanager
def sqlite_saver(path: str, serde: Any) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield SqliteSaver(conn, serde=serde)
    finally:
        conn.close()


@contextmanager
def postgres_saver(dsn: str, serde: Any) -> Iterator[Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn, serde=serde)
        saver.setup()
        yield saver


@contextmanager
def mysql_saver(dsn: str, serde: Any) -> Iterator[Any]:
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    with pymysql.connect(**PyMySQLSaver.parse_conn_string(dsn), autocommit=True) as conn:
        saver = PyMySQLSaver(conn, serde=serde)
        saver.setup()
        yield saver


#: Saver context managers by dialect: ``SAVERS[dialect](location, serde)``.
SAVERS = {"sqlite": sqlite_saver, "postgres": postgres_saver, "mysql": mysql_saver}

#: The dialects every tool test runs over, each with the marker of the server it needs.
DIALECTS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]

SaverFactory = Callable[[Any], Any]


def populate(saver_factory: SaverFactory, *, threads_per_group: int = 3) -> None:
    """Run the graph on every group's threads (the last thread of a group stays interrupted)."""
    graph = build_graph()
    for gi, group in enumerate(GROUPS):
        with saver_factory(serde_for(group)) as saver:
            app = graph.compile(checkpointer=saver)
            for i in range(threads_per_group):
                run_thread(app, f"{group}-{i}", gi * 100 + i, resume=i != threads_per_group - 1)


# -- reading back ------------------------------------------------------------


def graph_snapshot(
    saver_factory: SaverFactory,
    threads: list[str],
    *,
    keyring: Keyring = K_ROTATE,
    wrap: Callable[[Any], Any] = lambda saver: saver,
) -> dict[str, Any]:
    """Everything the saver gives back per thread: all checkpoint tuples and graph state.

    ``wrap`` wraps the saver first (e.g. ``bind_rows``).
    """
    out: dict[str, Any] = {}
    with saver_factory(reader_serde(keyring)) as raw:
        saver = wrap(raw)
        app = build_graph().compile(checkpointer=saver)
        for t in threads:
            tuples = [
                (c.config, c.checkpoint, c.metadata, c.parent_config, c.pending_writes)
                for c in saver.list(cfg(t))
            ]
            state = app.get_state(cfg(t))
            out[t] = (tuples, state.values, state.next, [i.value for i in state.interrupts])
    return out


def raw_rows(store: Database) -> dict[tuple[str, tuple], tuple[str | None, bytes | None]]:
    """Every row as stored: (table, pk) -> (tag, blob)."""
    return {(r.table, r.pk): (r.tag, r.blob) for rows in store.iter_rows(200) for r in rows}


def plain_rows(store: Database, keyring: Keyring = K_ROTATE) -> dict[tuple[str, tuple], Any]:
    """Every row decrypted to (inner tag, inner bytes); raises if any row does not decrypt."""
    serde = EncryptedSerializer(JsonPlusSerializer(), keyring, allow_plaintext=True)
    out = {}
    for rows in store.iter_rows(200):
        for r in rows:
            out[(r.table, r.pk)] = None if classify_row(r.tag, r.blob).kind is RowKind.EMPTY else serde.decrypt_row((r.tag, r.blob))
    return out


def group_counts(store: Database) -> dict[str, Counter]:
    """Expected status counts from the thread ids: table -> Counter(group)."""
    out: dict[str, Counter] = {t.name: Counter() for t in store.tables}
    for rows in store.iter_rows(200):
        for r in rows:
            out[r.table]["empty" if classify_row(r.tag, r.blob).kind is RowKind.EMPTY else r.pk[0].split("-")[0]] += 1
    return out


def open_sqlite(path: str, *, readonly: bool = True) -> Database:
    return open_database(sqlite=path, readonly=readonly)
