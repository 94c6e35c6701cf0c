"""Pipelined rotation (SQLite in WAL mode, ``db.reads_ahead = True``): a reader thread claims and
re-encrypts batch N+1 while batch N commits.

Its own failure modes: an error or interrupt in either stage stops both, keeps
every committed batch and nothing of the open one, surfaces typed, and leaves
no thread behind.  Every wait is on an event or a count, never on time.
"""

from __future__ import annotations

import importlib
import threading

import pytest

from serde_kit.crypto.rows import classify_row
from serde_kit.errors import StoreError
from serde_kit.tools.db import open_database
from serde_kit.tools.db.sqlite import SqliteDatabase, _SqliteBatch
from serde_kit.tools.rotate import rotate
from tests.support.rotate_fixtures import K_ROTATE, plain_rows, raw_rows

ALL = {"encrypt_plaintext": True, "upgrade_legacy": True}
READER = "serde_kit-rotate-reader"
#: Generous bound on waiting for the other stage: only reached if the pipeline is broken.
STUCK = 60

rotate_module = importlib.import_module("serde_kit.tools.rotate")  # the module: serde_kit.tools.rotate is the function


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == READER]


def _changed(before: dict, after: dict) -> set:
    return {k for k in before if after[k] != before[k]}


class _Claims(SqliteDatabase):
    """A real SQLite store that records every claim (the reader connection is of the same class)."""

    reads_ahead = True
    claims: list[list] = []
    claimed: threading.Condition

    def select_rows(self, table, **kw):
        rows = super().select_rows(table, **kw)
        if kw.get("claim"):
            with type(self).claimed:
                type(self).claims.append(rows)
                type(self).claimed.notify_all()
        return rows

    @classmethod
    def reset(cls) -> None:
        cls.claims = []
        cls.claimed = threading.Condition()

    @classmethod
    def wait_for_claims(cls, n: int) -> None:
        with cls.claimed:
            assert cls.claimed.wait_for(lambda: len(cls.claims) >= n, timeout=STUCK), "the reader never ran ahead"


def test_wal_sqlite_reads_ahead_and_gives_what_a_serial_run_gives(graph_sqlite_template, tmp_path):
    import shutil

    paths = [tmp_path / "serial.db", tmp_path / "pipelined.db"]
    reports, contents = [], []
    for path, ahead in zip(paths, (False, True), strict=True):
        shutil.copyfile(graph_sqlite_template, path)
        with open_database(sqlite=str(path), readonly=False) as db:
            assert db.can_read_ahead and not db.reads_ahead  # the saver's databases are in WAL mode; off by default
            db.reads_ahead = ahead
            reports.append(rotate(db, keyring=K_ROTATE, apply=True, batch_size=7, record_changes=True, **ALL))
            contents.append((plain_rows(db), {k: classify_row(*v).key_id for k, v in raw_rows(db).items()}))
    serial, pipelined = reports
    assert serial.ok and pipelined.ok and serial.total_changed > 20
    for name in ("examined", "changed", "changed_by_table", "plaintext_tags", "legacy_tags", "bound", "retried"):
        assert getattr(pipelined, name) == getattr(serial, name), name
    assert sorted(pipelined.changed_rows) == sorted(serial.changed_rows)
    assert pipelined.stopped_at == serial.stopped_at
    assert contents[0] == contents[1]
    assert not _readers()


def test_a_rollback_journal_database_is_not_read_ahead(graph_sqlite_db):
    import sqlite3

    with sqlite3.connect(graph_sqlite_db) as c:
        assert c.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        # a reader's shared lock would hold up our own COMMIT under a rollback journal
        assert not db.can_read_ahead
        db.reads_ahead = True
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, **ALL)
        assert report.ok and report.total_changed > 0 and not _readers()
    with open_database(sqlite=graph_sqlite_db) as db:
        assert not db.can_read_ahead  # nor is a read-only one


class _CommitFails(_SqliteBatch):
    """The second batch's COMMIT fails (disk I/O), once the reader has claimed the third batch."""

    commits = 0

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self.rows:
            type(self).commits += 1
            if type(self).commits == 2:
                type(self.db).wait_for_claims(3)  # the reader is a batch ahead of this commit
                super().__exit__(StoreError, None, None)  # rolled back, as a failed COMMIT is
                raise StoreError("disk I/O error writing the test database")
        return super().__exit__(exc_type, exc, tb)


class _FailingCommits(_Claims):
    batch_class = _CommitFails


def test_an_error_in_the_writer_while_the_reader_runs_ahead_keeps_the_committed_batches(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    _FailingCommits.reset()
    _CommitFails.commits = 0
    with _FailingCommits(graph_sqlite_db, readonly=False) as db:
        assert db.reads_ahead and db.can_read_ahead
        with pytest.raises(StoreError, match="disk I/O error"):
            rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
        assert not db.conn.in_transaction
        after = raw_rows(db)
        # exactly the first batch, every row of it; nothing of the second or the third (read ahead)
        first = _FailingCommits.claims[0]
        assert _changed(before, after) == {(r.table, r.pk) for r in first if classify_row(r.tag, r.blob).key_id == "k1"}
        assert len(_FailingCommits.claims) >= 3
        assert not _readers()
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        again = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
    assert again.ok and again.total_changed > 0


class _ClaimFails(_Claims):
    """The reader's third claim fails (not transient)."""

    def select_rows(self, table, **kw):
        if kw.get("claim") and len(type(self).claims) == 2:
            raise StoreError("database disk image is malformed")
        return super().select_rows(table, **kw)


def test_an_error_in_the_reader_surfaces_typed_after_the_batch_being_written_commits(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    _ClaimFails.reset()
    with _ClaimFails(graph_sqlite_db, readonly=False) as db:
        with pytest.raises(StoreError, match="malformed"):
            rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
        after = raw_rows(db)
    # the two batches claimed were written whole (the second committed while the third claim failed)
    claimed = {(r.table, r.pk) for rows in _ClaimFails.claims for r in rows if classify_row(r.tag, r.blob).key_id == "k1"}
    assert len(_ClaimFails.claims) == 2 and claimed
    assert _changed(before, after) == claimed
    assert not _readers()


def test_an_interrupt_in_the_reader_stops_both_stages_and_keeps_whole_batches(graph_sqlite_db, monkeypatch):
    # KeyboardInterrupt while batch 2 is re-encrypted, during batch 1's commit.
    calls = []
    work = rotate_module._Rotator._work

    def interrupted(self, rows):
        calls.append(threading.current_thread().name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return work(self, rows)

    monkeypatch.setattr(rotate_module, "_MIN_CHUNK", 100)  # one chunk a batch: call 2 is batch 2
    monkeypatch.setattr(rotate_module._Rotator, "_work", interrupted)
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        db.reads_ahead = True
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
        after = raw_rows(db)
    assert calls == [READER, READER]  # the re-encryption ran in the reader
    assert report.interrupted and not report.ok
    assert report.total_changed == len(_changed(before, after)) > 0
    assert report.stopped_at is not None
    assert not _readers()
    monkeypatch.setattr(rotate_module._Rotator, "_work", work)
    with open_database(sqlite=graph_sqlite_db, readonly=False) as db:
        again = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
    total = len(_changed(before, raw_rows_of(graph_sqlite_db)))
    assert again.ok and again.total_changed + report.total_changed == total


def raw_rows_of(path: str) -> dict:
    with open_database(sqlite=path) as db:
        return raw_rows(db)


class _InterruptedWrite(_SqliteBatch):
    """SIGINT in the writer: batch 2's UPDATEs all sent, at its COMMIT, once the reader has claimed batch 3."""

    commits = 0

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self.rows:
            type(self).commits += 1
            if type(self).commits == 2:
                assert self.db.conn.in_transaction  # the half-done batch: written, not committed
                type(self.db).wait_for_claims(3)
                super().__exit__(KeyboardInterrupt, None, None)
                raise KeyboardInterrupt
        return super().__exit__(exc_type, exc, tb)


class _InterruptedWrites(_Claims):
    batch_class = _InterruptedWrite


def test_an_interrupt_in_the_writer_keeps_nothing_of_its_half_batch(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as db:
        before = raw_rows(db)
    _InterruptedWrites.reset()
    _InterruptedWrite.commits = 0
    with _InterruptedWrites(graph_sqlite_db, readonly=False) as db:
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5)
        assert not db.conn.in_transaction
        after = raw_rows(db)
    first = {(r.table, r.pk) for r in _InterruptedWrites.claims[0] if classify_row(r.tag, r.blob).key_id == "k1"}
    assert report.interrupted and first
    assert _changed(before, after) == first  # batch 1 whole, nothing of batch 2 or of batch 3 read ahead
    assert report.total_changed == len(first)
    assert report.stopped_at == (_InterruptedWrites.claims[0][-1].table, _InterruptedWrites.claims[0][-1].pk)
    assert not _readers()
