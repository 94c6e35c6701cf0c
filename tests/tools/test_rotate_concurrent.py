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

from serde_kit.cli.keys import format_rotate
from serde_kit.crypto.blob import build_header
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.tools.db import open_database
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import (
    K_ROTATE,
    SAVERS,
    build_graph,
    cfg,
    plain_rows,
    reader_serde,
    run_thread,
)

ERROR_CHANNEL = "__error__"  # WRITES_IDX_MAP: always the same row, upserted in place


def where(kind, location):
    return {kind: location}


def saver_factory(kind, location):
    return partial(SAVERS[kind], location)


@pytest.fixture
def db(graph_db):
    """(dialect, location) of a fresh graph-populated database, for each dialect."""
    return graph_db


def expected_live_state(n):
    """What the application's live-N thread must read back (same graph, in memory)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.support.app_writer import live_input

    thread, count, resume = live_input(n)
    app = build_graph().compile(checkpointer=InMemorySaver())
    run_thread(app, thread, count, resume=resume)
    return thread, app.get_state(cfg(thread)).values


#: Application rounds, one started per rotate batch: the work is bounded by counts.
APP_ROUNDS = 12


class _Pacer:
    """A progress collaborator that starts one application round per rotate batch."""

    def __init__(self, writer, rounds):
        self.writer = writer
        self.left = rounds

    def __call__(self, **_):
        return self

    def update(self, n):
        if self.left and n:
            self.left -= 1
            self.writer.stdin.write("go\n")
            self.writer.stdin.flush()

    def close(self):
        pass


def test_rotate_beside_a_writing_application(db, tmp_path):
    # The application runs in its own process, as it would in production; it
    # does one round of writes per rotate batch, concurrently with the next.
    kind, location = db
    _rotate_beside_a_writing_application(kind, location, ahead=False)


def test_pipelined_rotate_beside_a_writing_application(graph_sqlite_db):
    # The same with the read-ahead pipeline: batches claimed and re-encrypted on a second
    # connection while the previous one commits, and the application writing meanwhile.
    _rotate_beside_a_writing_application("sqlite", graph_sqlite_db, ahead=True)


def _rotate_beside_a_writing_application(kind, location, *, ahead):
    factory = saver_factory(kind, location)
    with factory(reader_serde()) as saver:
        target = saver.get_tuple(cfg("plain-0")).config["configurable"]
    with open_database(**where(kind, location)) as store:
        before = plain_rows(store)

    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.app_writer",
            f"--{kind}",
            location,
            "--thread",
            target["thread_id"],
            "--checkpoint-id",
            target["checkpoint_id"],
        ],
        cwd=Path(__file__).resolve().parents[2],  # -m tests.support.app_writer from the repository root
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        pacer = _Pacer(writer, APP_ROUNDS)
        reports = []
        with open_database(**where(kind, location), readonly=False) as store:
            store.reads_ahead = ahead
            assert not ahead or store.can_read_ahead
            while pacer.left or not reports:
                # more passes only while rounds are left to start (each pass is finite)
                reports.append(
                    rotate(
                        store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True,
                        batch_size=3, progress=pacer,
                    )
                )  # fmt: skip
            out, err = writer.communicate(timeout=300)  # closes stdin: the writer ends after its rounds
            assert writer.returncode == 0, err
            final = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True)
            after = plain_rows(store)  # every row decrypts
            counts = status(store, keyring=K_ROTATE, verify=True).total
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    result = json.loads(out.strip().splitlines()[-1])

    assert all(r.ok for r in [*reports, final]), [format_rotate(r) for r in reports]
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
    assert result["upserts"] == APP_ROUNDS and len(live) == 3
    # Rows that existed before and that the application did not touch hold the same bytes.
    untouched = {k: v for k, v in before.items() if k[1][-2:] != ("app-task", -1)}
    assert {k: after[k] for k in untouched} == untouched


@pytest.mark.parametrize("kind", [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mysql", marks=pytest.mark.mysql)])
@pytest.mark.parametrize("workers", [2, 3])
def test_concurrent_workers_rotate_every_row_exactly_once(kind, workers, request):
    location = request.getfixturevalue(f"graph_{kind}_db")
    header = build_header(K_ROTATE.primary_id)
    with open_database(**{kind: location}) as store:
        before = plain_rows(store)
        needing = {
            (r.table, r.pk)
            for rows in store.iter_rows()
            for r in rows
            if classify_row(r.tag, r.blob).kind is not RowKind.EMPTY and not (r.tag.endswith("+aesgcm") and r.blob.startswith(header))
        }
    assert len(needing) > 100

    barrier = threading.Barrier(workers)
    reports = [None] * workers
    errors = []

    def work(i):
        try:
            with open_database(**{kind: location}, readonly=False) as store:
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
    with open_database(**{kind: location}) as store:
        assert plain_rows(store) == before
        total = status(store, keyring=K_ROTATE, verify=True).total
    assert total.failed == 0 and dict(total.by_key) == {"k2": total.rows - total.empty}


@pytest.mark.postgres
def test_a_row_locked_by_the_application_is_waited_for_not_missed(graph_postgres_db):
    import psycopg

    from serde_kit.crypto import EncryptedSerializer
    from tests.support.rotate_fixtures import K_OLD, inner_serializer

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
    with open_database(postgres=dsn, readonly=False) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True, batch_size=5, record_changes=True)
        rows = {(r.table, r.pk): r for b in store.iter_rows() for r in b}
    app.join(60)
    assert saw_rotate_waiting, "rotate never waited for the locked row: it was skipped"
    key = ("checkpoint_writes", tuple(pk))
    assert report.ok and Counter(report.changed_rows)[key] == 1
    assert rows[key].tag.endswith("+aesgcm") and rows[key].blob.startswith(build_header("k2"))
    assert reader_serde().loads_typed((rows[key].tag, rows[key].blob)) == ["app", "update"]
