"""rotate / retire / keygen on graph-written SQLite and PostgreSQL databases."""

from __future__ import annotations

import sqlite3
from functools import partial

import pytest

from serde_kit.cli.keys import format_retire, format_rotate
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.tools.db import open_database
from serde_kit.tools.db.sqlite import SqliteDatabase
from serde_kit.tools.keygen import keygen
from serde_kit.tools.retire import retire
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import (
    K1,
    K3,
    K_NEW,
    K_OLD,
    K_ROTATE,
    SAVERS,
    graph_snapshot,
    inner_serializer,
    plain_rows,
    raw_rows,
    thread_ids,
)

THREADS = thread_ids(3)


def where(kind, location):
    return {kind: location}


def saver_factory(kind, location):
    return partial(SAVERS[kind], location)


@pytest.fixture
def db(graph_db):
    """(dialect, location) of a fresh graph-populated database, for each dialect."""
    return graph_db


def test_dry_run_changes_nothing(db):
    kind, location = db
    with open_database(**where(kind, location)) as store:  # read-only is enough for a dry run
        before = raw_rows(store)
        counts = status(store).total
        report = rotate(store, keyring=K_ROTATE, encrypt_plaintext=True, upgrade_legacy=True)
        assert raw_rows(store) == before
    assert report.dry_run and report.verification is None and report.ok
    assert report.changed == {"k1": counts.by_key["k1"], "plaintext": counts.plaintext, "legacy": counts.legacy}
    assert "DRY RUN" in format_rotate(report) and "--apply" in format_rotate(report)


def test_apply_rotates_everything_and_the_graph_reads_back_the_same(db):
    kind, location = db
    before_graph = graph_snapshot(saver_factory(kind, location), THREADS)
    with open_database(**where(kind, location), readonly=False) as store:
        before_rows = plain_rows(store)
        before = status(store).total
        report = rotate(
            store,
            keyring=K_ROTATE,
            apply=True,
            encrypt_plaintext=True,
            upgrade_legacy=True,
            batch_size=7,
            record_changes=True,
        )
        after = status(store, keyring=K_ROTATE, verify=True).total
        after_rows = plain_rows(store)
    assert report.ok, format_rotate(report)
    expected_changed = before.by_key["k1"] + before.plaintext + before.legacy
    assert report.total_changed == expected_changed == len(set(report.changed_rows))
    assert report.verification.decrypted == after.rows - after.empty
    assert report.verification.not_primary == 0
    # every row under the primary, every row decrypts
    assert dict(after.by_key) == {"k2": after.rows - after.empty}
    assert after.plaintext == after.legacy == after.unknown == after.failed == 0
    assert after.rows == before.rows
    # the stored bytes under the encryption are untouched, and the graph reads back equal
    assert after_rows == before_rows
    assert graph_snapshot(saver_factory(kind, location), THREADS) == before_graph

    # idempotent: a second run has nothing to do
    with open_database(**where(kind, location), readonly=False) as store:
        again = rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True)
    assert again.total_changed == 0 and again.ok and again.examined == 0


def test_plaintext_and_legacy_left_alone_without_flags(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db, readonly=False) as store:
        before = status(store).total
        report = rotate(store, keyring=K_ROTATE, apply=True)
        after = status(store).total
    assert report.ok
    assert report.changed == {"k1": before.by_key["k1"]}
    assert report.skipped_plaintext == before.plaintext and report.skipped_legacy == before.legacy
    assert after.plaintext == before.plaintext and after.legacy == before.legacy
    assert dict(after.by_key) == {"k2": before.by_key["k1"] + before.by_key["k2"]}
    assert report.verification.plaintext == before.plaintext
    assert "--encrypt-plaintext" in format_rotate(report) and "--upgrade-legacy" in format_rotate(report)


def test_rows_under_a_missing_key_fail_and_stay_untouched(db):
    kind, location = db
    only_k2 = Keyring({"k2": K_NEW.key("k2")}, primary="k2")
    with open_database(**where(kind, location), readonly=False) as store:
        before = raw_rows(store)
        dry = rotate(store, keyring=only_k2)
        report = rotate(store, keyring=only_k2, apply=True)
        assert raw_rows(store) == before
        counts = status(store).total
        k1_rows = counts.by_key["k1"]
    assert not dry.ok and not report.ok
    assert len(dry.failures) == len(report.failures) == k1_rows
    assert all("UnknownKeyError" in f.error for f in report.failures)
    assert report.total_changed == 0
    # verification also reports the +aes rows this keyring (no legacy key) cannot read
    assert len(report.verification.failures) == k1_rows + counts.legacy


def test_a_new_primary_rotates_again(graph_sqlite_db):
    k3_first = K_ROTATE.with_key("k3", K3, primary=True)
    with open_database(sqlite=graph_sqlite_db, readonly=False) as store:
        rotate(store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True)
        report = rotate(store, keyring=k3_first, apply=True)
        after = status(store).total
    assert report.ok and report.changed == {"k2": after.rows - after.empty}
    assert dict(after.by_key) == {"k3": after.rows - after.empty}


class InterferingStore(SqliteDatabase):
    """A real SQLite store; after the first batch is read, the application rewrites a row."""

    app_value = None

    def batch(self, table, **kwargs):
        b = super().batch(table, **kwargs)
        victims = [r for r in b.rows if r.pk[0].startswith("old-")]
        if self.app_value is None and victims:
            victim = victims[0]
            tag, blob = EncryptedSerializer(inner_serializer(), K_OLD).dumps_typed({"app": "newer"})
            pk = " AND ".join(f"{c} = ?" for c in table.pk_columns)
            with sqlite3.connect(self.path) as app:
                app.execute(
                    f"UPDATE {table.name} SET {table.tag_column} = ?, {table.blob_column} = ? WHERE {pk}",
                    (tag, blob, *victim.pk),
                )
            self.app_value = (victim, tag, blob)
        return b


def test_a_row_changed_after_reading_is_reread_not_overwritten(graph_sqlite_db):
    with InterferingStore(graph_sqlite_db, readonly=False) as store:
        report = rotate(store, keyring=K_ROTATE, apply=True, batch_size=5)
        victim, app_tag, app_blob = store.app_value
        rows = raw_rows(store)
    assert report.ok and report.retried == 1
    tag, blob = rows[(victim.table, victim.pk)]
    assert (tag, blob) != (app_tag, app_blob)  # rotated ...
    reader = EncryptedSerializer(inner_serializer(), K_ROTATE)
    assert reader.loads_typed((tag, blob)) == {"app": "newer"}  # ... from the application's bytes


# -- retire ------------------------------------------------------------------


def test_retire_refuses_while_rows_use_the_key_then_allows(db):
    kind, location = db
    with open_database(**where(kind, location)) as store:
        before = retire(store, "k1", keyring=K_ROTATE)
        k1_rows = status(store).rows_using("k1")
    assert not before.safe and before.rows_by_table == k1_rows and before.rows > 0
    assert "rotate" in format_retire(before) and "refusing" in format_retire(before)
    with open_database(**where(kind, location), readonly=False) as store:
        rotate(store, keyring=K_ROTATE, apply=True)
    with open_database(**where(kind, location)) as store:
        after = retire(store, "k1", keyring=K_ROTATE)
        primary = retire(store, "k2", keyring=K_ROTATE)
    assert after.safe and after.rows == 0 and "safe" in format_retire(after)
    assert not primary.safe and primary.is_primary and "primary" in format_retire(primary)


# -- keygen ------------------------------------------------------------------


def test_keygen_new_and_extend():
    key_id, kr = keygen("k9")
    assert key_id == "k9" and kr.ids == ["k9"] and len(kr.key("k9")) == 32
    parsed = Keyring.from_env(environ={"SERDE_KIT_KEYRING": kr.to_env_value()})
    assert parsed.key("k9") == kr.key("k9")
    key_id, extended = keygen("k10", extend=Keyring({"k1": K1}, primary="k1"))
    assert extended.primary_id == "k10" and sorted(extended.ids) == ["k1", "k10"]
    assert extended.key("k1") == K1
    other_id, other = keygen()
    assert other.key(other_id) != kr.key("k9")


def test_a_key_named_like_a_source_counts_no_inner_tags(tmp_path):
    """Rows under a key whose id is "plaintext" are a key rotation: no plaintext type tags are counted."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from serde_kit.serializer import Serializer

    odd = Keyring({"plaintext": K1}, primary="plaintext")
    tag, blob = EncryptedSerializer(Serializer(), odd).dumps_typed({"x": 1})
    path = str(tmp_path / "odd.db")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
        conn.executemany(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
            "VALUES (?, '', 'c', 't', 0, 'x', ?, ?)",
            [(f"t{i}", tag, blob) for i in range(3)],
        )
    new = Keyring({"k2": bytes(range(1, 33)), "plaintext": K1}, primary="k2")
    with open_database(sqlite=path, readonly=False) as store:
        report = rotate(store, keyring=new, apply=True, record_changes=True)
        assert report.ok and report.changed == {"plaintext": 3}
        assert not report.plaintext_tags
        assert status(store).total.by_key == {"k2": 3}
