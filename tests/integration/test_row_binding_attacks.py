"""The attacks of issue 13 on real databases written by a real graph, with and without binding.

An attacker who can write the database but holds no key copies rows between
threads with plain SQL. Each attack runs twice: against the unbound
EncryptedSerializer (the control: the attack works, so the test can fail) and
through bind_rows (the attack is refused). SECURITY.md's threat model cites
these tests by name.
"""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from serde_kit import EncryptedSerializer, Keyring, Serializer
from serde_kit.bound_saver import bind_rows
from serde_kit.errors import RowBindingError

KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")
ALICE_SECRET = "alice-secret-7f3e"
MALLORY_TEXT = "mallory-was-here"


class State(TypedDict):
    secret: dict
    notes: Annotated[list[str], operator.add]


def _node(state: State) -> dict:
    return {"notes": ["seen"]}


def _graph(saver):
    builder = StateGraph(State)
    builder.add_node("n", _node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    return builder.compile(checkpointer=saver)


def _conf(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def _run(graph, thread: str, secret: str) -> None:
    graph.invoke({"secret": {"value": secret}, "notes": []}, _conf(thread))


def _serde() -> EncryptedSerializer:
    return EncryptedSerializer(Serializer(), KEYRING)


# -- SQLite ----------------------------------------------------------------------------


def _sqlite_db(path: Path, bound: bool) -> None:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=_serde())
        graph = _graph(bind_rows(saver) if bound else saver)
        _run(graph, "alice", ALICE_SECRET)
        _run(graph, "mallory", MALLORY_TEXT)
    finally:
        conn.close()


def _sqlite_paste_latest(path: Path, src: str, dst: str) -> None:
    """Copy ``src``'s latest checkpoint blob onto ``dst``'s latest row."""
    with sqlite3.connect(path) as db:
        (tag, blob), = db.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id=? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (src,),
        ).fetchall()
        (dst_id,), = db.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id=? ORDER BY checkpoint_id DESC LIMIT 1",
            (dst,),
        ).fetchall()
        db.execute(
            "UPDATE checkpoints SET type=?, checkpoint=? WHERE thread_id=? AND checkpoint_id=?",
            (tag, blob, dst, dst_id),
        )


def _read_sqlite(path: Path, bound: bool, thread: str) -> dict:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=_serde())
        return _graph(bind_rows(saver) if bound else saver).get_state(_conf(thread)).values
    finally:
        conn.close()


def test_sqlite_cut_and_paste_control_unbound_rows_leak(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=False)
    _sqlite_paste_latest(db, "alice", "mallory")
    # The attack of the issue: mallory's thread now shows alice's secret.
    assert _read_sqlite(db, False, "mallory")["secret"] == {"value": ALICE_SECRET}


def test_sqlite_cut_and_paste_onto_another_thread_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=True)
    assert _read_sqlite(db, True, "mallory")["secret"] == {"value": MALLORY_TEXT}
    _sqlite_paste_latest(db, "alice", "mallory")
    with pytest.raises(RowBindingError, match="different thread"):
        _read_sqlite(db, True, "mallory")
    assert _read_sqlite(db, True, "alice")["secret"] == {"value": ALICE_SECRET}


def test_sqlite_forged_state_pasted_onto_the_victim_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=True)
    _sqlite_paste_latest(db, "mallory", "alice")
    with pytest.raises(RowBindingError):
        _read_sqlite(db, True, "alice")


def test_sqlite_pasted_pending_writes_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = _graph(bind_rows(SqliteSaver(conn, serde=_serde())))
        for who in ("alice", "mallory"):
            graph.update_state(_conf(who), {"secret": {"value": who}, "notes": []})
        # A pending write: alice's node output recorded against her latest checkpoint.
        saver = graph.checkpointer
        latest = saver.get_tuple(_conf("alice")).config
        saver.put_writes(latest, [("notes", ALICE_SECRET)], "task-a")
        m_latest = saver.get_tuple(_conf("mallory")).config
    finally:
        conn.close()
    with sqlite3.connect(db) as raw:
        raw.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
            "SELECT 'mallory', checkpoint_ns, ?, task_id, idx, channel, type, value FROM writes "
            "WHERE thread_id='alice'",
            (m_latest["configurable"]["checkpoint_id"],),
        )
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        bound = bind_rows(SqliteSaver(conn, serde=_serde()))
        with pytest.raises(RowBindingError):
            bound.get_tuple(_conf("mallory"))
        with pytest.raises(RowBindingError):
            list(bound.list(None))
    finally:
        conn.close()


def test_sqlite_list_across_threads_refuses_a_moved_row(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=True)
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        bound = bind_rows(SqliteSaver(conn, serde=_serde()))
        threads = {t.config["configurable"]["thread_id"] for t in bound.list(None)}
        assert threads == {"alice", "mallory"}
    finally:
        conn.close()
    _sqlite_paste_latest(db, "alice", "mallory")
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        bound = bind_rows(SqliteSaver(conn, serde=_serde()))
        with pytest.raises(RowBindingError):
            list(bound.list(None))
        with pytest.raises(RowBindingError):
            list(bound.list(_conf("mallory")))
    finally:
        conn.close()


def _sqlite_rows(path: Path, thread: str) -> list[tuple[str, str, bytes]]:
    with sqlite3.connect(path) as db:
        return db.execute(
            "SELECT checkpoint_id, type, checkpoint FROM checkpoints WHERE thread_id=? "
            "ORDER BY checkpoint_id DESC",
            (thread,),
        ).fetchall()


def test_sqlite_older_body_in_the_latest_row_is_refused(tmp_path: Path) -> None:
    # Rollback by overwriting: the latest row gets an older checkpoint's blob.
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=True)
    rows = _sqlite_rows(db, "alice")
    (latest_id, _, _), (_, old_tag, old_blob) = rows[0], rows[-1]
    with sqlite3.connect(db) as raw:
        raw.execute(
            "UPDATE checkpoints SET type=?, checkpoint=? WHERE thread_id='alice' AND checkpoint_id=?",
            (old_tag, old_blob, latest_id),
        )
    with pytest.raises(RowBindingError, match="another checkpoint"):
        _read_sqlite(db, True, "alice")


def test_sqlite_rollback_by_deleting_newer_rows_is_not_prevented(tmp_path: Path) -> None:
    # Documented as NOT prevented: deleting a thread's newest checkpoints rolls it back.
    db = tmp_path / "app.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = _graph(bind_rows(SqliteSaver(conn, serde=_serde())))
        _run(graph, "alice", "v1")
        cut = graph.get_state(_conf("alice")).config["configurable"]["checkpoint_id"]
        _run(graph, "alice", "v2")
        assert graph.get_state(_conf("alice")).values["secret"] == {"value": "v2"}
    finally:
        conn.close()
    with sqlite3.connect(db) as raw:
        raw.execute("DELETE FROM checkpoints WHERE thread_id='alice' AND checkpoint_id > ?", (cut,))
    assert _read_sqlite(db, True, "alice")["secret"] == {"value": "v1"}  # older state, accepted


def test_unbound_rows_written_before_binding_still_read(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _sqlite_db(db, bound=False)
    assert _read_sqlite(db, True, "alice")["secret"] == {"value": ALICE_SECRET}
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        strict = bind_rows(SqliteSaver(conn, serde=_serde()), require_bound=True)
        with pytest.raises(RowBindingError, match="require_bound"):
            strict.get_tuple(_conf("alice"))
    finally:
        conn.close()


# -- PostgreSQL ------------------------------------------------------------------------


def _pg_saver(pg):
    from langgraph.checkpoint.postgres import PostgresSaver

    saver = PostgresSaver(pg, serde=_serde())
    saver.setup()
    return saver


def _pg_connect(dsn: str):
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def _pg_db(dsn: str, bound: bool) -> None:
    with _pg_connect(dsn) as pg:
        saver = _pg_saver(pg)
        graph = _graph(bind_rows(saver) if bound else saver)
        _run(graph, "alice", ALICE_SECRET)
        _run(graph, "mallory", MALLORY_TEXT)


def _pg_paste_blobs(dsn: str, src: str, dst: str) -> int:
    """Overwrite every ``dst`` channel blob with ``src``'s blob of the same channel."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(
            "UPDATE checkpoint_blobs AS d SET type = s.type, blob = s.blob "
            "FROM checkpoint_blobs AS s WHERE d.thread_id = %s AND s.thread_id = %s "
            "AND d.channel = s.channel AND d.checkpoint_ns = s.checkpoint_ns AND s.type <> 'empty'",
            (dst, src),
        )
        return cur.rowcount


def _read_pg(dsn: str, bound: bool, thread: str) -> dict:
    with _pg_connect(dsn) as pg:
        saver = _pg_saver(pg)
        return _graph(bind_rows(saver) if bound else saver).get_state(_conf(thread)).values


@pytest.mark.postgres
def test_postgres_cut_and_paste_control_unbound_rows_leak(postgres_db: str) -> None:
    _pg_db(postgres_db, bound=False)
    assert _pg_paste_blobs(postgres_db, "alice", "mallory") > 0
    assert _read_pg(postgres_db, False, "mallory")["secret"] == {"value": ALICE_SECRET}


@pytest.mark.postgres
def test_postgres_cut_and_paste_onto_another_thread_is_refused(postgres_db: str) -> None:
    _pg_db(postgres_db, bound=True)
    assert _read_pg(postgres_db, True, "mallory")["secret"] == {"value": MALLORY_TEXT}
    assert _pg_paste_blobs(postgres_db, "alice", "mallory") > 0
    with pytest.raises(RowBindingError, match="different thread"):
        _read_pg(postgres_db, True, "mallory")
    assert _read_pg(postgres_db, True, "alice")["secret"] == {"value": ALICE_SECRET}


@pytest.mark.postgres
def test_postgres_forged_state_pasted_onto_the_victim_is_refused(postgres_db: str) -> None:
    _pg_db(postgres_db, bound=True)
    assert _pg_paste_blobs(postgres_db, "mallory", "alice") > 0
    with pytest.raises(RowBindingError):
        _read_pg(postgres_db, True, "alice")


@pytest.mark.postgres
def test_postgres_pasted_pending_writes_are_refused(postgres_db: str) -> None:
    import psycopg

    with _pg_connect(postgres_db) as pg:
        bound = bind_rows(_pg_saver(pg))
        graph = _graph(bound)
        for who in ("alice", "mallory"):
            graph.update_state(_conf(who), {"secret": {"value": who}, "notes": []})
        bound.put_writes(bound.get_tuple(_conf("alice")).config, [("notes", ALICE_SECRET)], "task-a")
        m_id = bound.get_tuple(_conf("mallory")).config["configurable"]["checkpoint_id"]
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "
            "idx, channel, type, blob) SELECT 'mallory', checkpoint_ns, %s, task_id, task_path, idx, "
            "channel, type, blob FROM checkpoint_writes WHERE thread_id = 'alice'",
            (m_id,),
        )
    with _pg_connect(postgres_db) as pg:
        bound = bind_rows(_pg_saver(pg))
        with pytest.raises(RowBindingError):
            bound.get_tuple(_conf("mallory"))
        with pytest.raises(RowBindingError):
            list(bound.list(None))


@pytest.mark.postgres
def test_postgres_rollback_of_a_channel_within_a_thread_is_not_prevented(postgres_db: str) -> None:
    # Documented as NOT prevented: channel blobs are bound to (thread, namespace) only, so an
    # older version of a channel pasted over the newest one in the same thread is accepted.
    with _pg_connect(postgres_db) as pg:
        graph = _graph(bind_rows(_pg_saver(pg)))
        graph.update_state(_conf("alice"), {"secret": {"value": "v1"}, "notes": []})
        graph.update_state(_conf("alice"), {"secret": {"value": "v2"}})
        assert graph.get_state(_conf("alice")).values["secret"] == {"value": "v2"}
    import psycopg

    with psycopg.connect(postgres_db, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT version, type, blob FROM checkpoint_blobs WHERE thread_id='alice' "
            "AND channel='secret' ORDER BY version"
        ).fetchall()
        (_, old_tag, old_blob), (new_version, _, _) = rows[0], rows[-1]
        conn.execute(
            "UPDATE checkpoint_blobs SET type=%s, blob=%s WHERE thread_id='alice' AND channel='secret' "
            "AND version=%s",
            (old_tag, old_blob, new_version),
        )
    assert _read_pg(postgres_db, True, "alice")["secret"] == {"value": "v1"}


# -- async savers and DeltaChannel (get_delta_channel_history) --------------------------


def _concat(state, writes):
    out = list(state or [])
    for w in writes:
        out.extend(w)
    return out


class DeltaState(TypedDict):
    items: Annotated[list, DeltaChannel(_concat, snapshot_frequency=3)]


def _delta_graph(saver):
    builder = StateGraph(DeltaState)
    builder.add_node("add", lambda s: {"items": [len(s["items"])]})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def test_delta_channels_rebuild_through_the_bound_saver(tmp_path: Path) -> None:
    # DeltaChannel state is rebuilt through get_delta_channel_history, which the wrapper binds.
    conn = sqlite3.connect(tmp_path / "d.db", check_same_thread=False)
    try:
        graph = _delta_graph(bind_rows(SqliteSaver(conn, serde=_serde())))
        for _ in range(7):
            graph.invoke({"items": []}, _conf("alice"))
        assert graph.get_state(_conf("alice")).values["items"] == [0, 1, 2, 3, 4, 5, 6]
    finally:
        conn.close()


def test_async_sqlite_cut_and_paste_is_refused(tmp_path: Path) -> None:
    import asyncio

    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = tmp_path / "async.db"

    async def write() -> dict:
        async with aiosqlite.connect(db) as conn:
            graph = _graph(bind_rows(AsyncSqliteSaver(conn, serde=_serde())))
            await graph.ainvoke({"secret": {"value": ALICE_SECRET}, "notes": []}, _conf("alice"))
            await graph.ainvoke({"secret": {"value": MALLORY_TEXT}, "notes": []}, _conf("mallory"))
            return (await graph.aget_state(_conf("mallory"))).values

    async def read(thread: str) -> dict:
        async with aiosqlite.connect(db) as conn:
            graph = _graph(bind_rows(AsyncSqliteSaver(conn, serde=_serde())))
            return (await graph.aget_state(_conf(thread))).values

    assert asyncio.run(write())["secret"] == {"value": MALLORY_TEXT}
    _sqlite_paste_latest(db, "alice", "mallory")
    with pytest.raises(RowBindingError, match="different thread"):
        asyncio.run(read("mallory"))
    assert asyncio.run(read("alice"))["secret"] == {"value": ALICE_SECRET}


@pytest.mark.postgres
def test_sync_methods_of_an_async_saver_keep_the_binding(postgres_db: str) -> None:
    # AsyncPostgresSaver's sync methods run the async ones on its event loop from another
    # thread; the binding must travel with them (run_coroutine_threadsafe copies the context).
    import asyncio

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async def main() -> tuple:
        async with AsyncPostgresSaver.from_conn_string(postgres_db, serde=_serde()) as saver:
            await saver.setup()
            bound = bind_rows(saver)
            graph = _graph(bound)
            await graph.ainvoke({"secret": {"value": ALICE_SECRET}, "notes": []}, _conf("alice"))
            got = await asyncio.to_thread(bound.get_tuple, _conf("alice"))
            listed = await asyncio.to_thread(lambda: list(bound.list(_conf("alice"))))
            bare = await asyncio.to_thread(lambda: _raises_binding(saver.get_tuple, _conf("alice")))
            return got, listed, bare

    got, listed, bare = asyncio.run(main())
    assert got.checkpoint["channel_values"]["secret"] == {"value": ALICE_SECRET}
    assert listed and bare


def _raises_binding(fn, *args) -> bool:
    try:
        fn(*args)
    except RowBindingError:
        return True
    return False


# -- MySQL (MariaDB): PyMySQLSaver and AIOMySQLSaver -------------------------------------


def _mysql_connect(dsn: str):
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    return pymysql.connect(**PyMySQLSaver.parse_conn_string(dsn), autocommit=True)


def _mysql_saver(conn):
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    saver = PyMySQLSaver(conn, serde=_serde())
    saver.setup()
    return saver


def _mysql_db(dsn: str, bound: bool) -> None:
    with _mysql_connect(dsn) as conn:
        saver = _mysql_saver(conn)
        graph = _graph(bind_rows(saver) if bound else saver)
        _run(graph, "alice", ALICE_SECRET)
        _run(graph, "mallory", MALLORY_TEXT)


def _mysql_paste_blobs(dsn: str, src: str, dst: str) -> int:
    """Overwrite every ``dst`` channel blob with ``src``'s blob of the same channel (plain SQL, no key)."""
    with _mysql_connect(dsn) as conn, conn.cursor() as cur:
        return cur.execute(
            "UPDATE checkpoint_blobs AS d JOIN checkpoint_blobs AS s "
            "ON d.channel = s.channel AND d.checkpoint_ns_hash = s.checkpoint_ns_hash "
            "SET d.type = s.type, d.`blob` = s.`blob` "
            "WHERE d.thread_id = %s AND s.thread_id = %s AND s.type <> 'empty'",
            (dst, src),
        )


def _read_mysql(dsn: str, bound: bool, thread: str) -> dict:
    with _mysql_connect(dsn) as conn:
        saver = _mysql_saver(conn)
        return _graph(bind_rows(saver) if bound else saver).get_state(_conf(thread)).values


@pytest.mark.mysql
def test_mysql_cut_and_paste_control_unbound_rows_leak(mysql_db: str) -> None:
    _mysql_db(mysql_db, bound=False)
    assert _mysql_paste_blobs(mysql_db, "alice", "mallory") > 0
    assert _read_mysql(mysql_db, False, "mallory")["secret"] == {"value": ALICE_SECRET}


@pytest.mark.mysql
def test_mysql_cut_and_paste_onto_another_thread_is_refused(mysql_db: str) -> None:
    _mysql_db(mysql_db, bound=True)
    assert _read_mysql(mysql_db, True, "mallory")["secret"] == {"value": MALLORY_TEXT}
    assert _mysql_paste_blobs(mysql_db, "alice", "mallory") > 0
    with pytest.raises(RowBindingError, match="different thread"):
        _read_mysql(mysql_db, True, "mallory")
    assert _read_mysql(mysql_db, True, "alice")["secret"] == {"value": ALICE_SECRET}


@pytest.mark.mysql
@pytest.mark.filterwarnings("ignore:Table '.*' already exists")
@pytest.mark.filterwarnings("ignore:Duplicate entry .* for key 'PRIMARY'")
def test_mysql_async_cut_and_paste_is_refused(mysql_db: str) -> None:
    import asyncio

    from langgraph.checkpoint.mysql.aio import AIOMySQLSaver

    async def run(thread: str | None = None) -> dict:
        async with AIOMySQLSaver.from_conn_string(mysql_db, serde=_serde()) as saver:
            await saver.setup()
            graph = _graph(bind_rows(saver))
            if thread is None:
                await graph.ainvoke({"secret": {"value": ALICE_SECRET}, "notes": []}, _conf("alice"))
                await graph.ainvoke({"secret": {"value": MALLORY_TEXT}, "notes": []}, _conf("mallory"))
                thread = "mallory"
            return (await graph.aget_state(_conf(thread))).values

    assert asyncio.run(run())["secret"] == {"value": MALLORY_TEXT}
    assert _mysql_paste_blobs(mysql_db, "alice", "mallory") > 0
    with pytest.raises(RowBindingError, match="different thread"):
        asyncio.run(run("mallory"))
    assert asyncio.run(run("alice"))["secret"] == {"value": ALICE_SECRET}
