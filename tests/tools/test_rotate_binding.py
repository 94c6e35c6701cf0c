"""rotate and row binding, and migrations that cannot launder, on real SQLite, PostgreSQL and MariaDB.

The databases are written by the real graph through the real savers (see
tests/support/rotate_fixtures.py), unbound.  ``rotate(bind=True)`` must bind each row to
exactly the identity ``bind_rows`` reads it with, so the graph reads back the
same through the wrapper, and a rotated row pasted onto another thread is then
refused.  First seals (``--encrypt-plaintext``, ``--upgrade-legacy``) decode
each row with the application's serializer and refuse what it refuses.
"""

from __future__ import annotations

import operator
import pickle
import sqlite3
from contextlib import contextmanager
from functools import partial
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from serde_kit.bound_saver import bind_rows
from serde_kit.cli import main
from serde_kit.cli.keys import format_rotate
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.binding import RowIdentity
from serde_kit.crypto.blob import blob_binding
from serde_kit.errors import RowBindingError
from serde_kit.tools.db import Database, open_database
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import (
    K_OLD,
    K_ROTATE,
    LEGACY_KEY,
    SAVERS,
    build_graph,
    cfg,
    graph_snapshot,
    inner_serializer,
    raw_rows,
    thread_ids,
)

THREADS = thread_ids(3)
ENCRYPTED_THREADS = [t for t in THREADS if t.startswith(("old", "new"))]
ALL = {"encrypt_plaintext": True, "upgrade_legacy": True}


def _store(kind: str, location: str, *, readonly: bool = False) -> Database:
    return open_database(**{kind: location}, readonly=readonly)


def _bound_snapshot(kind: str, location: str, threads: list[str], keyring: Keyring = K_ROTATE, **options: Any):
    """What the graph reads back through bind_rows (same shape as graph_snapshot)."""
    return graph_snapshot(
        partial(SAVERS[kind], location), threads, keyring=keyring, wrap=lambda saver: bind_rows(saver, **options)
    )


def _identity_of(table: str, pk: tuple[Any, ...], store: Database) -> RowIdentity | None:
    columns = store.table(table).pk_columns
    if "thread_id" not in columns:
        return None
    if "checkpoint_ns" in columns:
        return RowIdentity(pk[columns.index("thread_id")], pk[columns.index("checkpoint_ns")])
    return RowIdentity(pk[columns.index("thread_id")], "")  # MySQL: every row here is in the root graph


@contextmanager
def _connection(kind: str, location: str):
    """A raw driver connection, for the attacker's plain SQL (``mark``: its parameter style)."""
    if kind == "sqlite":
        conn = sqlite3.connect(location)
        try:
            yield conn, "?"
            conn.commit()
        finally:
            conn.close()
    elif kind == "postgres":
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            yield conn, "%s"
    else:
        import pymysql
        from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

        with pymysql.connect(**PyMySQLSaver.parse_conn_string(location), autocommit=True) as conn:
            yield conn, "%s"


def _execute(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []
    finally:
        cur.close()


def _paste(kind: str, location: str, src: str, dst: str) -> None:
    """The attacker copies ``src``'s latest state row onto ``dst``'s (plain SQL, no key)."""
    with _connection(kind, location) as (conn, m):
        if kind == "sqlite":
            (tag, blob), = _execute(
                conn, f"SELECT type, checkpoint FROM checkpoints WHERE thread_id={m} ORDER BY checkpoint_id DESC LIMIT 1", (src,)
            )
            (dst_id,), = _execute(
                conn, f"SELECT checkpoint_id FROM checkpoints WHERE thread_id={m} ORDER BY checkpoint_id DESC LIMIT 1", (dst,)
            )
            _execute(
                conn,
                f"UPDATE checkpoints SET type={m}, checkpoint={m} WHERE thread_id={m} AND checkpoint_id={m}",
                (tag, blob, dst, dst_id),
            )
            return
        # PostgreSQL / MySQL: channel values live in checkpoint_blobs; "doc" is written once per run.
        blob_col = '"blob"' if kind == "postgres" else "`blob`"
        (tag, blob), = _execute(
            conn,
            f"SELECT type, {blob_col} FROM checkpoint_blobs WHERE thread_id={m} AND channel='doc' "
            "ORDER BY version DESC LIMIT 1",
            (src,),
        )
        (version,), = _execute(
            conn,
            f"SELECT version FROM checkpoint_blobs WHERE thread_id={m} AND channel='doc' ORDER BY version DESC LIMIT 1",
            (dst,),
        )
        _execute(
            conn,
            f"UPDATE checkpoint_blobs SET type={m}, {blob_col}={m} WHERE thread_id={m} AND channel='doc' AND version={m}",
            (tag, blob, dst, version),
        )


def test_rotate_bind_binds_every_row_as_bind_rows_reads_it(graph_db):
    kind, location = graph_db
    before = graph_snapshot(partial(SAVERS[kind], location), THREADS)
    with _store(kind, location) as store:
        dry = rotate(store, keyring=K_ROTATE, bind=True, **ALL)
        report = rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL)
        rows = raw_rows(store)
        counts = status(store).total
    assert dry.ok and report.ok, (dry.failures, dry.refused, report.failures, report.refused)
    unbound = [k for k, (_t, b) in rows.items() if b is not None and blob_binding(b) is None]
    assert not unbound
    assert dry.bound == report.bound == counts.rows - counts.empty > 0
    assert dry.changed == report.changed
    for (table, pk), (_tag, blob) in rows.items():
        if blob is None:
            continue
        # exactly the identity the row's own columns give: what bind_rows reads it with
        assert blob_binding(blob) == _identity_of(table, pk, store), (table, pk)
    # every row reads back through the wrapper, requiring bound rows, exactly as before
    assert _bound_snapshot(kind, location, THREADS, require_bound=True) == before
    # rotation is idempotent with binding too
    with _store(kind, location) as store:
        again = rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL)
    assert again.ok and again.total_changed == 0 and again.bound == 0


def test_a_row_rotated_with_binding_then_pasted_onto_another_thread_is_refused(graph_db):
    kind, location = graph_db
    with _store(kind, location) as store:
        assert rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL).ok
    # control: before the paste new-0 reads its own state through the wrapper
    own = _bound_snapshot(kind, location, ["new-0"])["new-0"][1]
    _paste(kind, location, "old-0", "new-0")
    with pytest.raises(RowBindingError, match="different thread"):
        _bound_snapshot(kind, location, ["new-0"])
    # the victim's source thread still reads
    assert _bound_snapshot(kind, location, ["old-0"])["old-0"][1]["doc"] != own["doc"]


def test_the_pasted_row_is_not_laundered_by_the_next_rotation(graph_sqlite_db):
    kind, location = "sqlite", graph_sqlite_db
    with _store(kind, location) as store:
        assert rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL).ok
    _paste(kind, location, "old-0", "new-0")
    k3_first = K_ROTATE.with_key("k3", bytes(range(50, 82)), primary=True)
    with _store(kind, location) as store:
        before = raw_rows(store)
        report = rotate(store, keyring=k3_first, apply=True, bind=True)
        after = raw_rows(store)
    moved = [f for f in report.failures if "RowBindingError" in f.error]
    assert len(moved) == 1 and moved[0].pk[0] == "new-0" and not report.ok
    # the moved row is left exactly as it was (still bound to old-0); every other row was rotated
    assert after[(moved[0].table, moved[0].pk)] == before[(moved[0].table, moved[0].pk)]
    with pytest.raises(RowBindingError):
        _bound_snapshot(kind, location, ["new-0"], keyring=k3_first)


def test_rotation_keeps_bindings_without_the_flag(graph_db):
    kind, location = graph_db
    # An application that writes through bind_rows under k1 ...
    serde = EncryptedSerializer(inner_serializer(), K_OLD)
    with SAVERS[kind](location, serde) as saver:
        app = build_graph().compile(checkpointer=bind_rows(saver))
        app.invoke({"log": [], "count": 5, "doc": {}}, cfg("bound-1"))
    before = _bound_snapshot(kind, location, ["bound-1"])
    # ... then k2 becomes primary and rotate runs without --bind.
    with _store(kind, location) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True)
        rows = raw_rows(store)
    assert report.ok and report.bound == 0
    bound_rows = {k: v for k, v in rows.items() if k[1][0] == "bound-1" and v[1] is not None}
    assert bound_rows
    for (table, pk), (_tag, blob) in bound_rows.items():
        assert blob_binding(blob) == RowIdentity("bound-1", "")
    # other threads' rows were not bound (no --bind)
    assert all(blob_binding(b) is None for k, (_t, b) in rows.items() if k[1][0] == "old-0" and b is not None)
    assert _bound_snapshot(kind, location, ["bound-1"]) == before


# -- first seals: --upgrade-legacy and --encrypt-plaintext --------------------------------


def _plant(location: str, tag: str, value: bytes) -> tuple[str, tuple[Any, ...]]:
    """Write a pending-write row of the interrupted plaintext thread with ``(tag, value)``; its key."""
    with sqlite3.connect(location) as conn:
        pk = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx FROM writes "
            "WHERE thread_id='plain-2' ORDER BY checkpoint_id DESC, idx LIMIT 1"
        ).fetchone()
        conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
            "VALUES (?, ?, ?, ?, ?, 'log', ?, ?)",
            (pk[0], pk[1], pk[2], f"planted-{tag}", 0, tag, value),
        )
    return "writes", (pk[0], pk[1], pk[2], f"planted-{tag}", 0)


#: msgpack ext 0 naming os.system: what an attacker plants as "typed data".
EVIL = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", "echo pwned"))))


@pytest.mark.parametrize("inner", ["allowlist check", "serializer"])
def test_upgrade_legacy_refuses_a_relabelled_row_the_application_would_not_load(graph_sqlite_db, inner):
    # Default: the allowlist, checked without importing; or the application's own Serializer.
    check = {"inner": inner_serializer()} if inner == "serializer" else {}
    stock = StockEncryptedSerializer.from_pycryptodome_aes(JsonPlusSerializer(), key=LEGACY_KEY)
    tag, blob = stock.dumps_typed(EVIL)  # a user-chosen bytes value, stored as bytes+aes
    assert tag == "bytes+aes"
    planted = _plant(graph_sqlite_db, "msgpack+aes", blob)  # ... relabelled: no AAD stops it
    with _store("sqlite", graph_sqlite_db) as store:
        legacy = status(store).total.legacy
        dry = rotate(store, keyring=K_ROTATE, upgrade_legacy=True, **check)
        report = rotate(store, keyring=K_ROTATE, apply=True, upgrade_legacy=True, **check)
        rows = raw_rows(store)
    for r in (dry, report):
        assert [(f.table, f.pk) for f in r.refused] == [planted]
        assert "BlockedTypeError" in r.refused[0].error and "os" in r.refused[0].error
        assert r.changed["legacy"] == legacy - 1 and not r.ok
        assert sum(r.legacy_tags.values()) == legacy - 1 and r.legacy_tags["msgpack"] > 0
    assert rows[planted] == ("msgpack+aes", blob)  # left exactly as it was
    assert "refused" in format_rotate(report)


def test_encrypt_plaintext_lists_tags_and_refuses_pickle_unless_allowed(graph_sqlite_db):
    pickled = _plant(graph_sqlite_db, "pickle", pickle.dumps({"x": 1}))
    garbage = _plant(graph_sqlite_db, "msgpack", b"\xc1")
    with _store("sqlite", graph_sqlite_db) as store:
        plaintext = status(store).total.plaintext
        dry = rotate(store, keyring=K_ROTATE, encrypt_plaintext=True)
        text = format_rotate(dry)
        report = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True)
        rows = raw_rows(store)
        allowed = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, allow_pickle=True)
        after = raw_rows(store)
    for r in (dry, report):
        assert {(f.table, f.pk) for f in r.refused} == {pickled, garbage}
        assert sum(r.plaintext_tags.values()) == plaintext - 2 == r.changed["plaintext"]
        assert "pickle" not in r.plaintext_tags
    assert "plaintext rows to seal by type tag: msgpack x" in text and "--allow-pickle" in text
    assert rows[pickled][0] == "pickle" and rows[garbage] == ("msgpack", b"\xc1")
    # told explicitly, the pickle row is sealed (never unpickled here); garbage stays refused
    assert allowed.plaintext_tags == {"pickle": 1}
    assert [(f.table, f.pk) for f in allowed.refused] == [garbage]
    assert after[pickled][0] == "pickle+aesgcm"


def test_cli_rotate_bind_and_refusals(capsys, graph_sqlite_db, monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_ALLOW"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_KEY.decode())
    _plant(graph_sqlite_db, "pickle", pickle.dumps(1))
    code = main(["rotate", "--sqlite", graph_sqlite_db, "--encrypt-plaintext", "--bind", "-q"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "DRY RUN" in out and "would bind" in out and "by type tag: msgpack x" in out
    assert "refused: writes[" in out and "--allow-pickle" in out
    code = main(["rotate", "--sqlite", graph_sqlite_db, "--encrypt-plaintext", "--upgrade-legacy", "--bind",
                 "--allow-pickle", "--apply", "-q"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "bound " in out and "pickle x1" in out


def test_a_first_seal_without_bind_stays_unbound_whatever_its_first_byte(graph_sqlite_db):
    # 0x02 is the bound header's version byte, and also the msgpack for 2 (and a random
    # +aes nonce's first byte one time in 256): only +aesgcm rows are read as bound.
    planted = _plant(graph_sqlite_db, "msgpack", b"\x02")
    with _store("sqlite", graph_sqlite_db) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True)
        tag, blob = raw_rows(store)[planted]
    assert report.ok and report.bound == 0
    assert tag == "msgpack+aesgcm" and blob_binding(blob) is None


# -- subgraphs: rows in a namespace ---------------------------------------------------------


class _SubState(TypedDict, total=False):
    log: Annotated[list, operator.add]


def _subgraph_app(saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def inner(state: _SubState) -> dict:
        return {"log": [f"inner:{interrupt('ok?')}"]}

    sub = StateGraph(_SubState)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    outer = StateGraph(_SubState)
    outer.add_node("child", sub.compile())
    outer.add_edge(START, "child")
    outer.add_edge("child", END)
    return outer.compile(checkpointer=saver)


def test_rows_in_a_subgraph_namespace_are_bound_to_it(graph_db):
    kind, location = graph_db
    with SAVERS[kind](location, EncryptedSerializer(inner_serializer(), K_OLD)) as saver:
        _subgraph_app(saver).invoke({"log": ["start"]}, cfg("sub-1"))  # stops at the interrupt
    with _store(kind, location) as store:
        ns_rows = store.query(f"SELECT DISTINCT checkpoint_ns FROM {store.ref(store.tables[0].name)} WHERE thread_id = {store.mark}", ["sub-1"])
        assert any(ns for (ns,) in ns_rows), ns_rows  # the subgraph wrote rows in its namespace
        assert rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL).ok
    serde = EncryptedSerializer(inner_serializer(), K_ROTATE)
    with SAVERS[kind](location, serde) as saver:
        app = _subgraph_app(bind_rows(saver, require_bound=True))
        state = app.get_state(cfg("sub-1"), subgraphs=True)
        assert state.tasks[0].state.values == {"log": ["start"]}
        out = app.invoke(Command(resume="yes"), cfg("sub-1"))
    assert out["log"][-1] == "inner:yes"  # the subgraph resumed from its bound rows


def test_rows_of_a_table_without_a_thread_stay_unbound_and_are_counted(graph_sqlite_db):
    # LangGraph's SqliteCache table: (ns, key) rows that no saver call reads, so no thread to bind.
    serde = EncryptedSerializer(inner_serializer(), K_OLD)
    tag, blob = serde.dumps_typed({"cached": 1})
    with sqlite3.connect(graph_sqlite_db) as conn:
        conn.execute("CREATE TABLE cache (ns TEXT, key TEXT, expiry REAL, encoding TEXT, val BLOB, PRIMARY KEY (ns, key))")
        conn.execute("INSERT INTO cache VALUES ('n', 'k', NULL, ?, ?)", (tag, blob))
    with _store("sqlite", graph_sqlite_db) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True, bind=True, **ALL)
        (cache_tag, cache_blob), = [v for (t, _pk), v in raw_rows(store).items() if t == "cache"]
    assert report.ok and report.not_bindable == {"cache": 1}
    assert cache_tag == "msgpack+aesgcm" and blob_binding(cache_blob) is None  # rotated to k2, unbound
    assert "left unbound: 1 row(s) in cache" in format_rotate(report)
