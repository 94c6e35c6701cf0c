"""Faults end in one line and a resumable state (issue 11, section 3), in the issue's order.

Every test runs a real database; where a fault needs a live event (a reader
holding a lock, a backend being terminated, a signal) the test synchronises on
that event, and work is bounded by counts, never by the clock.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tracemalloc

import pytest

from serde_kit.cli import main
from serde_kit.crypto import EncryptedSerializer
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.errors import StoreError
from serde_kit.tools.db import open_database
from serde_kit.tools.db.sqlite import SqliteDatabase
from serde_kit.tools.retire import retire
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import K_OLD, K_ROTATE, LEGACY_TEXT, inner_serializer, plain_rows, raw_rows

ALL = {"encrypt_plaintext": True, "upgrade_legacy": True}


@pytest.fixture
def keyring_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, cls: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {cls}: "), err
    return lines[0]


# -- 1. stray rows -------------------------------------------------------------------

STRAY = [
    # (task_id, tag, value): a TEXT blob, an INTEGER blob (bytes(n) would allocate n bytes),
    # a BLOB tag, and a tag that is not UTF-8.
    ("stray-text", "msgpack", "a text value"),
    ("stray-int", "msgpack", 10**12),
    ("stray-blobtag", b"msgpack+aesgcm", b"\x01\x02k1" + bytes(40)),
    ("stray-badutf8", "bad-\udcff", b"\x90"),
]


def add_stray_rows(path: str) -> list[tuple]:
    with sqlite3.connect(path) as c:
        thread, ns, cid = c.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints LIMIT 1").fetchone()
        for task, tag, value in STRAY:
            if isinstance(tag, str) and "\udcff" in tag:
                tag_sql, params = "CAST(? AS TEXT)", [tag.encode("utf-8", "surrogateescape")]
            else:
                tag_sql, params = "?", [tag]
            c.execute(
                f"INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) "
                f"VALUES (?, ?, ?, ?, '', 0, 'x', {tag_sql}, ?)",
                [thread, ns, cid, task, *params, value],
            )
    return [task for task, _, _ in STRAY]


def test_stray_rows_are_reported_counted_left_untouched_and_the_run_goes_on(graph_sqlite_db, capsys, keyring_env):
    tasks = add_stray_rows(graph_sqlite_db)
    with sqlite3.connect(graph_sqlite_db) as c:
        c.text_factory = bytes
        stray_before = c.execute("SELECT task_id, type, value FROM writes WHERE task_id LIKE 'stray-%' ORDER BY 1").fetchall()

    code, out, err = run(capsys, "status", "--sqlite", graph_sqlite_db)
    assert code == 1 and "Traceback" not in out + err
    assert all(t in out for t in tasks) and "stray row" in out

    code, out, err = run(capsys, "rotate", "--sqlite", graph_sqlite_db, "--apply", "--encrypt-plaintext", "--upgrade-legacy")
    assert code == 1 and "Traceback" not in out + err
    assert all(t in out for t in tasks)
    with open_database(sqlite=graph_sqlite_db) as db:
        report = status(db, keyring=K_ROTATE, verify=True)
    total = report.total
    assert total.stray == len(STRAY) and total.failed == 0
    # every other row was rotated despite the stray ones
    assert dict(total.by_key) == {"k2": total.rows - total.empty - total.stray}
    with sqlite3.connect(graph_sqlite_db) as c:
        c.text_factory = bytes
        assert c.execute("SELECT task_id, type, value FROM writes WHERE task_id LIKE 'stray-%' ORDER BY 1").fetchall() == stray_before

    for argv in (["verify"], ["audit"], ["allowlist", "scan"], ["retire", "k1"]):
        code, out, err = run(capsys, *argv, "--sqlite", graph_sqlite_db)
        assert code == 1 and "Traceback" not in out + err, argv


# -- 2. NULL primary-key values --------------------------------------------------------


def rebuild_without_not_null(path: str) -> int:
    """Rebuild ``writes`` without NOT NULL and null the namespace of every k1 row of thread old-0."""
    with sqlite3.connect(path) as c:
        c.executescript(
            """
            CREATE TABLE writes_new (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT, task_id TEXT,
                idx INTEGER, channel TEXT, type TEXT, value BLOB, task_path TEXT DEFAULT '',
                PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
            INSERT INTO writes_new SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type,
                value, task_path FROM writes;
            DROP TABLE writes;
            ALTER TABLE writes_new RENAME TO writes;
            UPDATE writes SET checkpoint_ns = NULL WHERE thread_id = 'old-0';
            """
        )
        return c.execute("SELECT count(*) FROM writes WHERE checkpoint_ns IS NULL").fetchone()[0]


def test_null_primary_key_values_do_not_end_the_walk(graph_sqlite_db):
    nulls = rebuild_without_not_null(graph_sqlite_db)
    assert nulls > 0
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        counted = db.count_rows()
        assert sum(len(p) for p in db.iter_rows(3)) == counted
        assert retire(db, "k1").safe is False
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=3, **ALL)
        assert report.ok and report.verification.rows == counted
        after = status(db, keyring=K_ROTATE, verify=True)
        assert after.ok and after.total.rows == counted and "k1" not in after.total.by_key
        assert retire(db, "k1").safe
    with sqlite3.connect(graph_sqlite_db) as c:
        types = {t for (t,) in c.execute("SELECT value FROM writes WHERE checkpoint_ns IS NULL")}
    assert types  # the NULL-namespace rows were rewritten, not skipped
    with open_database(sqlite=graph_sqlite_db) as db:
        kinds = [classify_row(r.tag, r.blob) for p in db.iter_rows() for r in p if r.pk[1] is None]
        assert all(info.key_id == "k2" for info in kinds if info.kind is not RowKind.EMPTY)


class _SkipsNullKeys(SqliteDatabase):
    """A walk that loses rows (what keyset paging on a NULL key did): retire must notice."""

    def select_rows(self, table, **kw):
        return [r for r in super().select_rows(table, **kw) if None not in r.pk]


def test_retire_says_safe_only_after_seeing_every_row(graph_sqlite_db):
    rebuild_without_not_null(graph_sqlite_db)
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        rotate(db, keyring=K_ROTATE, apply=True, **ALL)
    with _SkipsNullKeys(graph_sqlite_db) as db:
        report = retire(db, "k1")
    assert report.rows == 0 and report.seen < report.expected and not report.safe


# -- 3. SQLite rollback journal, a reader past the busy timeout -----------------------


def test_sqlite_commit_busy_rolls_back_and_the_retry_starts_clean(graph_sqlite_db):
    with sqlite3.connect(graph_sqlite_db) as c:
        assert c.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    reader = sqlite3.connect(graph_sqlite_db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM writes").fetchone()  # holds a SHARED lock until COMMIT
    try:
        with SqliteDatabase(graph_sqlite_db, readonly=False, timeout=0.01) as db:
            with pytest.raises(StoreError, match="locked by another connection") as info:
                rotate(db, keyring=K_ROTATE, apply=True, **ALL)
            assert "within a transaction" not in str(info.value)
            assert not db.conn.in_transaction
            assert raw_rows(db) == before  # nothing of the failed batch stayed
    finally:
        reader.execute("COMMIT")
        reader.close()
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        assert rotate(db, keyring=K_ROTATE, apply=True, **ALL).ok  # the rerun finishes the job


# -- 4. clean errors: connections, locks, disk, permissions, read-only --------------------


@pytest.mark.postgres
def test_terminated_postgres_backend_reconnects_and_resumes(graph_postgres_db):
    import psycopg

    with open_database(postgres=graph_postgres_db) as db:
        before = plain_rows(db)
    killed = []

    class Killer:
        """Progress collaborator: terminates rotate's own backend after the first batches."""

        def __init__(self, db, times):
            self.db, self.times = db, times

        def __call__(self, **_):
            return self

        def update(self, n):
            if n and len(killed) < self.times:
                pid = self.db.conn.info.backend_pid
                with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                killed.append(pid)

        def close(self):
            pass

    with open_database(postgres=graph_postgres_db, readonly=False) as db:
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, verify_after=False, progress=Killer(db, 2), **ALL)
        assert report.ok and report.reconnects == 2 and len(killed) == 2
        assert plain_rows(db) == before
        total = status(db, keyring=K_ROTATE, verify=True).total
    assert dict(total.by_key) == {"k2": total.rows - total.empty}


@pytest.mark.postgres
def test_a_query_that_failed_to_send_counts_as_a_lost_connection(graph_postgres_db):
    """libpq can report "sending query failed" for an ended backend while its status still reads OK."""
    import psycopg

    with open_database(postgres=graph_postgres_db, readonly=False) as db:
        assert not db.lost
        with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 60000)", (db.conn.info.backend_pid,))
        assert not db.conn.broken  # nothing sent yet: libpq has not seen the end of the backend
        error = db.translate(psycopg.OperationalError("sending query failed: terminating connection"))
        assert db.is_transient(error) and "lost the connection" in str(error)
        assert db.lost
        db.reconnect()
        assert not db.lost
        assert db.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.postgres
def test_a_backend_killed_every_batch_stops_cleanly_after_bounded_reconnects(graph_postgres_db, capsys):
    import psycopg

    class KillAlways:
        def __init__(self, db):
            self.db = db

        def __call__(self, **_):
            return self

        def update(self, n):
            with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (self.db.conn.info.backend_pid,))

        def close(self):
            pass

    with open_database(postgres=graph_postgres_db, readonly=False) as db:
        with pytest.raises(StoreError, match="gave up after 5 reconnections; rerun to resume"):
            rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, progress=KillAlways(db), **ALL)
    with open_database(postgres=graph_postgres_db, readonly=False) as db:
        assert rotate(db, keyring=K_ROTATE, apply=True, **ALL).ok


@pytest.mark.postgres
def test_lost_connection_while_reading_is_one_line(graph_postgres_db):
    import psycopg

    with open_database(postgres=graph_postgres_db) as db:
        with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (db.conn.info.backend_pid,))
        with pytest.raises(StoreError, match="lost the connection to PostgreSQL"):
            status(db)


def test_sqlite_locked_past_the_timeout_is_one_line(graph_sqlite_db, capsys, keyring_env):
    holder = sqlite3.connect(graph_sqlite_db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with SqliteDatabase(graph_sqlite_db, readonly=False, timeout=0.01) as db:
            with pytest.raises(StoreError, match="locked by another connection"):
                rotate(db, keyring=K_ROTATE, apply=True, **ALL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_disk_full_at_commit_rolls_back_with_one_line(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    with SqliteDatabase(graph_sqlite_db, readonly=False) as db:
        pages = db.conn.execute("PRAGMA page_count").fetchone()[0]
        db.conn.execute(f"PRAGMA max_page_count = {pages}")  # no room to grow: encrypting plaintext must grow
        with pytest.raises(StoreError, match="is full; the open batch was rolled back"):
            rotate(db, keyring=K_ROTATE, apply=True, batch_size=50, **ALL)
        assert not db.conn.in_transaction
    with open_database(sqlite=graph_sqlite_db) as db:
        after = raw_rows(db)
    assert set(after) == set(before)


@pytest.mark.postgres
def test_a_role_without_update_or_select_gets_one_line(graph_postgres_db, capsys, keyring_env):
    import psycopg

    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS serde_reader")
        admin.execute("CREATE ROLE serde_reader LOGIN")
        admin.execute("GRANT SELECT ON checkpoint_blobs, checkpoint_writes, checkpoints TO serde_reader")
        admin.execute("DROP ROLE IF EXISTS serde_nobody")
        admin.execute("CREATE ROLE serde_nobody LOGIN")
    reader = graph_postgres_db.replace("postgres@", "serde_reader@")
    nobody = graph_postgres_db.replace("postgres@", "serde_nobody@")
    try:
        code, out, err = run(capsys, "rotate", "--postgres", reader, "--apply", "--encrypt-plaintext")
        line = one_line_error(err, "StoreError")
        assert code == 3 and "permission denied" in line and "UPDATE" in line
        code, out, err = run(capsys, "status", "--postgres", nobody)
        line = one_line_error(err, "StoreError")
        assert code == 3 and "permission denied" in line and "SELECT" in line
    finally:
        with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
            admin.execute("REVOKE ALL ON checkpoint_blobs, checkpoint_writes, checkpoints FROM serde_reader")
            admin.execute("DROP ROLE serde_reader")
            admin.execute("DROP ROLE serde_nobody")


@pytest.mark.postgres
def test_a_read_only_postgres_database_gets_one_line(graph_postgres_db, capsys, keyring_env):
    import psycopg

    name = graph_postgres_db.rsplit("/", 1)[-1]
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    code, out, err = run(capsys, "rotate", "--postgres", graph_postgres_db, "--apply", "--encrypt-plaintext")
    assert code == 3 and "read-only" in one_line_error(err, "StoreError")


def test_a_wal_database_without_its_shm_on_a_read_only_place_says_why(graph_sqlite_db, tmp_path):
    db = SqliteDatabase.__new__(SqliteDatabase)
    db.path = tmp_path / "app.db"
    db.timeout = 1.0
    (tmp_path / "app.db-wal").write_bytes(b"")
    error = db.translate(sqlite3.OperationalError("unable to open database file"))
    assert "WAL database" in str(error) and "app.db-shm" in str(error) and "read-only" in str(error)


# -- 5. SIGTERM ------------------------------------------------------------------------


@pytest.mark.postgres
def test_sigterm_rolls_back_the_open_batch_says_where_and_exits_143(graph_postgres_db):
    import psycopg

    with open_database(postgres=graph_postgres_db) as db:
        before = plain_rows(db)
        pk = next(r.pk for p in db.iter_rows(tables=["checkpoint_writes"]) for r in p if r.pk[0] == "plain-2")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "LANGGRAPH_AES"))}
    env.update(SERDE_KIT_KEYRING=K_ROTATE.to_env_value(), LANGGRAPH_AES_KEY=LEGACY_TEXT)
    match = "thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s AND task_id = %s AND idx = %s"
    with psycopg.connect(graph_postgres_db) as app:  # the application holds one row locked
        app.execute(f"SELECT 1 FROM checkpoint_writes WHERE {match} FOR UPDATE", pk)
        proc = subprocess.Popen(
            [sys.executable, "-m", "serde_kit", "rotate", "--postgres", graph_postgres_db, "--apply", "-q",
             "--batch-size", "4", "--encrypt-plaintext", "--upgrade-legacy"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        with psycopg.connect(graph_postgres_db, autocommit=True) as monitor:
            # rotate reaches the locked row and waits for it: that is the event we wait for
            for _ in range(100_000):
                if monitor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                ).fetchone()[0]:
                    break
                assert proc.poll() is None, proc.communicate()
            else:
                pytest.fail("rotate never waited for the locked row")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
        app.rollback()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "interrupted after" in out and "Run the same command again" in out
    with open_database(postgres=graph_postgres_db, readonly=False) as db:
        assert plain_rows(db) == before
        assert rotate(db, keyring=K_ROTATE, apply=True, **ALL).ok


# -- 6. LangGraph's SqliteCache in the same file ----------------------------------------


def test_sqlite_cache_rows_are_counted_rotated_and_block_retire(graph_sqlite_db):
    from langgraph.cache.sqlite import SqliteCache

    old = EncryptedSerializer(inner_serializer(), K_OLD)
    cache = SqliteCache(path=graph_sqlite_db, serde=old)
    cache.set({(("node",), "key-1"): ({"cached": 1}, None), (("node",), "key-2"): ([1, 2, 3], None)})
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        assert "cache" in [t.name for t in db.tables]
        before = retire(db, "k1")
        assert before.rows_by_table["cache"] == 2 and not before.safe
        rotate(db, keyring=K_ROTATE, apply=True, **ALL)
        assert retire(db, "k1").safe
    reader = SqliteCache(path=graph_sqlite_db, serde=EncryptedSerializer(inner_serializer(), K_ROTATE.without("k1")))
    assert reader.get([(("node",), "key-1"), (("node",), "key-2")]) == {
        (("node",), "key-1"): {"cached": 1},
        (("node",), "key-2"): [1, 2, 3],
    }


# -- 7. memory whatever the batch size ---------------------------------------------------


def test_memory_is_bounded_whatever_the_batch_size(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "big.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
        row = os.urandom(1 << 19)  # 512 KiB plaintext rows, 48 of them: 24 MiB
        conn.executemany(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
            "VALUES (?, '', 'c', 't', 0, 'x', 'bytes', ?)",
            [(f"t{i:03d}", row) for i in range(48)],
        )
    with open_database(sqlite=str(path), readonly=False) as db:
        tracemalloc.start()
        try:
            report = rotate(db, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, batch_size=100_000)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert report.ok and report.total_changed == 48
    # one batch of the whole table would hold 24 MiB read plus 24 MiB written
    assert peak < 20 << 20, f"peak {peak / 2**20:.1f} MiB"


# -- 8. control characters from the data never reach the terminal -------------------------


def test_text_views_escape_control_characters(tmp_path, capsys, keyring_env):
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph

    path = tmp_path / "evil.db"
    evil = "t\x1b[2J\x1b[1A\raudit PASSED\n\x9b31m"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        builder = StateGraph(dict)
        builder.add_node("n\x1b]0;pwned\x07", lambda s: {"k": 1})
        builder.add_edge(START, "n\x1b]0;pwned\x07")
        builder.compile(checkpointer=SqliteSaver(conn)).invoke({"a": 1}, {"configurable": {"thread_id": evil}})
    for argv in (["inspect"], ["inspect", "--thread", evil], ["inspect", "--thread", evil, "--history"], ["audit"], ["status"]):
        code, out, err = run(capsys, *argv, "--sqlite", str(path))
        text = out + err
        assert not any(c in text for c in "\x1b\x07\r\x9b"), (argv, text)
        assert "audit PASSED" not in [line.strip() for line in text.splitlines()], argv
        if argv[:1] == ["inspect"]:
            assert "\\x1b" in out, argv


# -- 9. inspect on unexpected checkpoint JSON --------------------------------------------------


@pytest.mark.postgres
def test_inspect_shows_unexpected_checkpoint_json_as_error_cells(graph_postgres_db, capsys, keyring_env):
    import psycopg

    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        admin.execute(
            "UPDATE checkpoints SET checkpoint = '[1, 2]'::jsonb WHERE thread_id = 'plain-0' AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'plain-0')"
        )
        admin.execute(
            "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{channel_values}', '\"x\"') "
            "WHERE thread_id = 'plain-1'"
        )
    code, out, err = run(capsys, "inspect", "--postgres", graph_postgres_db, "--thread", "plain-0")
    assert code == 1 and "Traceback" not in err and "not an object" in out
    code, out, err = run(capsys, "inspect", "--postgres", graph_postgres_db, "--thread", "plain-1", "--history")
    assert code == 1 and "Traceback" not in err and "CHECKPOINT" in out
    code, out, err = run(capsys, "inspect", "--postgres", graph_postgres_db)
    assert code == 0 and "plain-0" in out


# -- 4 (MySQL). a killed connection ------------------------------------------------------


@pytest.mark.mysql
def test_killed_mysql_connection_reconnects_and_resumes(graph_mysql_db, mysql_server):
    with open_database(mysql=graph_mysql_db) as db:
        before = plain_rows(db)
    killed = []

    class Killer:
        """Progress collaborator: kills rotate's own connection after the first batches."""

        def __init__(self, db, times):
            self.db, self.times = db, times

        def __call__(self, **_):
            return self

        def update(self, n):
            if n and len(killed) < self.times:
                with mysql_server.connect() as admin, admin.cursor() as cur:
                    cur.execute("KILL %s", (self.db.conn.thread_id(),))
                killed.append(n)

        def close(self):
            pass

    with open_database(mysql=graph_mysql_db, readonly=False) as db:
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, verify_after=False, progress=Killer(db, 2), **ALL)
        assert report.ok and report.reconnects == 2 and len(killed) == 2
        assert plain_rows(db) == before
        total = status(db, keyring=K_ROTATE, verify=True).total
    assert dict(total.by_key) == {"k2": total.rows - total.empty}


@pytest.mark.mysql
def test_a_mysql_user_without_update_gets_one_line(graph_mysql_db, mysql_server, capsys, keyring_env):
    database = graph_mysql_db.rsplit("/", 1)[-1]
    with mysql_server.connect() as admin, admin.cursor() as cur:
        cur.execute("CREATE USER IF NOT EXISTS 'serde_reader'@'127.0.0.1'")
        cur.execute(f"GRANT SELECT ON `{database}`.* TO 'serde_reader'@'127.0.0.1'")
    try:
        reader = graph_mysql_db.replace("root@", "serde_reader@")
        assert run(capsys, "status", "--mysql", reader)[0] == 0
        code, out, err = run(capsys, "rotate", "--mysql", reader, "--apply", "--encrypt-plaintext")
        line = one_line_error(err, "StoreError")
        assert code == 3 and "UPDATE command denied" in line and "needs SELECT (and UPDATE" in line
    finally:
        with mysql_server.connect() as admin, admin.cursor() as cur:
            cur.execute("DROP USER 'serde_reader'@'127.0.0.1'")
