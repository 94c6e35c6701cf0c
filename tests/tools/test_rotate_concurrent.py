"""rotate beside a running application, and several rotate workers at once (PostgreSQL)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from rotate_fixtures import (
    K_ROTATE,
    build_graph,
    cfg,
    plain_rows,
    postgres_saver,
    reader_serde,
    run_thread,
    sqlite_saver,
)

from serde_kit.crypto.blob import build_header
from serde_kit.tools.rotate import rotate, status
from serde_kit.tools.stores import open_store

ERROR_CHANNEL = "__error__"  # WRITES_IDX_MAP: always the same row, upserted in place


def where(kind, location):
    return {"sqlite": location} if kind == "sqlite" else {"postgres": location}


def saver_factory(kind, location):
    return partial(sqlite_saver if kind == "sqlite" else postgres_saver, location)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request):
    if request.param == "sqlite":
        return "sqlite", request.getfixturevalue("graph_sqlite_db")
    return "postgres", request.getfixturevalue("graph_postgres_db")


def expected_live_state(n):
    """What the application's live-N thread must read back (same graph, in memory)."""
    from app_writer import live_input
    from langgraph.checkpoint.memory import InMemorySaver

    thread, count, resume = live_input(n)
    app = build_graph().compile(checkpointer=InMemorySaver())
    run_thread(app, thread, count, resume=resume)
    return thread, app.get_state(cfg(thread)).values


def test_rotate_beside_a_writing_application(db, tmp_path):
    # The application runs in its own process, as it would in production.
    kind, location = db
    factory = saver_factory(kind, location)
    with factory(reader_serde()) as saver:
        target = saver.get_tuple(cfg("plain-0")).config["configurable"]
    with open_store(**where(kind, location)) as store:
        before = plain_rows(store)

    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("app_writer.py")),
            f"--{kind}",
            location,
            "--thread",
            target["thread_id"],
            "--checkpoint-id",
            target["checkpoint_id"],
            "--stop-file",
            str(stop),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        reports = []
        with open_store(**where(kind, location), readonly=False) as store:
            for _ in range(3):
                reports.append(
                    rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True, batch_size=3)
                )
            stop.touch()
            out, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err
            final = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True)
            after = plain_rows(store)  # every row decrypts
            counts = status(store, keyring=K_ROTATE, verify=True).total
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    result = json.loads(out.strip().splitlines()[-1])

    assert all(r.ok for r in [*reports, final]), [r.format() for r in reports]
    assert counts.failed == 0 and dict(counts.by_key) == {"k2": counts.rows - counts.empty}
    print(f"{kind}: {result['upserts']} app upserts, CAS retries {sum(r.retried for r in reports)}")

    # Nothing the application wrote was replaced by older bytes.
    with factory(reader_serde()) as saver:
        config = {"configurable": {**target, "checkpoint_ns": ""}}
        pending = saver.get_tuple(config).pending_writes
        app = build_graph().compile(checkpointer=saver)
        live = dict(expected_live_state(n) for n in result["threads"])
        assert {t: app.get_state(cfg(t)).values for t in live} == live
    assert ("app-task", ERROR_CHANNEL, result["last_value"]) in pending
    assert len(live) >= 1
    # Rows that existed before and that the application did not touch hold the same bytes.
    untouched = {k: v for k, v in before.items() if k[1][-2:] != ("app-task", -1)}
    assert {k: after[k] for k in untouched} == untouched


@pytest.mark.postgres
@pytest.mark.parametrize("workers", [2, 3])
def test_concurrent_workers_rotate_every_row_exactly_once(graph_postgres_db, workers):
    header = build_header(K_ROTATE.primary_id)
    with open_store(postgres=graph_postgres_db) as store:
        before = plain_rows(store)
        needing = {
            (r.table, r.pk)
            for rows in store.iter_rows()
            for r in rows
            if not r.is_empty and not (r.tag.endswith("+aesgcm") and r.blob.startswith(header))
        }
    assert len(needing) > 100

    barrier = threading.Barrier(workers)
    reports = [None] * workers
    errors = []

    def work(i):
        try:
            with open_store(postgres=graph_postgres_db, readonly=False) as store:
                barrier.wait()
                reports[i] = rotate(
                    store,
                    keyring=K_ROTATE,
                    apply=True,
                    encrypt_plaintext=True,
                    upgrade_legacy=True,
                    batch_size=3,
                    record_changes=True,
                    verify_after=False,
                )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors

    done = Counter(row for r in reports for row in r.changed_rows)
    assert set(done) == needing  # none missed
    assert set(done.values()) == {1}  # none done twice
    assert sum(r.total_changed for r in reports) == len(needing)
    print("rows per worker:", [r.total_changed for r in reports])
    with open_store(postgres=graph_postgres_db) as store:
        assert plain_rows(store) == before
        total = status(store, keyring=K_ROTATE, verify=True).total
    assert total.failed == 0 and dict(total.by_key) == {"k2": total.rows - total.empty}


@pytest.mark.postgres
def test_a_row_locked_by_the_application_is_waited_for_not_missed(graph_postgres_db):
    import psycopg
    from rotate_fixtures import K_OLD, inner_serializer

    from serde_kit.crypto import EncryptedSerializer

    dsn = graph_postgres_db
    with psycopg.connect(dsn) as conn:
        pk = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx FROM checkpoint_writes "
            "WHERE thread_id = 'old-1' ORDER BY checkpoint_id, task_id, idx LIMIT 1"
        ).fetchone()
    match = "thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s AND task_id = %s AND idx = %s"
    app_tag, app_blob = EncryptedSerializer(inner_serializer(), K_OLD).dumps_typed(["app", "update"])
    locked = threading.Event()
    saw_rotate_waiting = []

    def application():
        with psycopg.connect(dsn) as conn:  # one transaction holding the row lock
            conn.execute(f"SELECT 1 FROM checkpoint_writes WHERE {match} FOR UPDATE", pk)
            locked.set()
            with psycopg.connect(dsn, autocommit=True) as monitor:
                for _ in range(6000):
                    waiting = monitor.execute(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    ).fetchone()[0]
                    if waiting:
                        saw_rotate_waiting.append(True)
                        break
                    time.sleep(0.01)
            conn.execute(f"UPDATE checkpoint_writes SET type = %s, blob = %s WHERE {match}", (app_tag, app_blob, *pk))
            conn.commit()

    app = threading.Thread(target=application)
    app.start()
    locked.wait(30)
    with open_store(postgres=dsn, readonly=False) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True, batch_size=5, record_changes=True)
        rows = {(r.table, r.pk): r for b in store.iter_rows() for r in b}
    app.join(60)
    assert saw_rotate_waiting, "rotate never waited for the locked row: it was skipped"
    key = ("checkpoint_writes", tuple(pk))
    assert report.ok and Counter(report.changed_rows)[key] == 1
    assert rows[key].tag.endswith("+aesgcm") and rows[key].blob.startswith(build_header("k2"))
    assert reader_serde().loads_typed((rows[key].tag, rows[key].blob)) == ["app", "update"]
