"""status: exact counts per key id / kind on graph-written databases."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

from serde_kit.cli.keys import format_status
from serde_kit.crypto import Keyring
from serde_kit.errors import KeyringError
from serde_kit.tools.db import open_database
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import K_NEW, K_ROTATE, group_counts

KIND_OF_GROUP = {"old": "k1", "new": "k2", "plain": "plaintext", "legacy": "legacy", "empty": "empty"}


def expected_from_thread_ids(store):
    out = {}
    for table, groups in group_counts(store).items():
        c = Counter()
        for group, n in groups.items():
            c[KIND_OF_GROUP[group]] += n
        out[table] = c
    return out


def observed(report):
    out = {}
    for t in report.tables:
        c = Counter(t.by_key)
        c.update(plaintext=t.plaintext, legacy=t.legacy, empty=t.empty, unknown=t.unknown)
        out[t.name] = +c  # drop zeros
    return out


def check_counts(store, report):
    expected = expected_from_thread_ids(store)
    assert observed(report) == {t: +c for t, c in expected.items()}
    for t in report.tables:
        assert t.rows == sum(expected[t.name].values())
    total = report.total
    assert total.rows == store.count_rows()
    assert total.by_key == Counter({k: sum(e[k] for e in expected.values()) for k in ("k1", "k2")})
    assert total.by_key["k1"] > 0 and total.by_key["k2"] > 0
    assert total.plaintext > 0 and total.legacy > 0
    assert total.failed == 0


def test_status_sqlite_counts_exactly(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        report = status(store)  # header only: no keyring needed
        check_counts(store, report)
        assert report.primary_id is None
        assert "k1" in format_status(report) and "plaintext" in format_status(report)


@pytest.mark.postgres
def test_status_postgres_counts_exactly(graph_postgres_db):
    with open_database(postgres=graph_postgres_db) as store:
        report = status(store, keyring=K_ROTATE, verify=True, batch_size=13)
        check_counts(store, report)
        assert report.primary_id == "k2"
        assert report.verified and not report.failures


def test_verify_counts_rows_that_do_not_decrypt(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        good = status(store, keyring=K_ROTATE, verify=True)
        assert good.total.failed == 0
        k1_rows = good.total.by_key["k1"]
        # Without k1 (and without the legacy key), those rows fail; counts stay the same.
        only_k2 = Keyring({"k2": K_NEW.key("k2")}, primary="k2")
        bad = status(store, keyring=only_k2, verify=True)
        assert bad.total.by_key == good.total.by_key
        assert bad.total.failed == k1_rows + good.total.legacy
        kinds = Counter(f.error.split(":")[0] for f in bad.failures)
        assert kinds == Counter({"UnknownKeyError": k1_rows + good.total.legacy})
        assert "warning: rows use key id(s) not in the keyring: k1" in format_status(bad)


def test_verify_finds_a_tampered_row(graph_sqlite_db):
    with sqlite3.connect(graph_sqlite_db) as c:
        thread, cid, blob = c.execute(
            "SELECT thread_id, checkpoint_id, checkpoint FROM checkpoints "
            "WHERE thread_id = 'old-1' ORDER BY checkpoint_id LIMIT 1"
        ).fetchone()
        tampered = blob[:-1] + bytes([blob[-1] ^ 1])
        c.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE thread_id = ? AND checkpoint_id = ?",
            (tampered, thread, cid),
        )
    with open_database(sqlite=graph_sqlite_db) as store:
        header_only = status(store)
        verified = status(store, keyring=K_ROTATE, verify=True)
    assert header_only.total.failed == 0  # headers are intact
    assert verified.total.failed == 1
    [failure] = verified.failures
    assert failure.table == "checkpoints" and failure.pk[0] == "old-1"
    assert failure.error.startswith("DecryptionError")


def test_verify_needs_a_keyring(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        with pytest.raises(KeyringError, match="SERDE_KIT_KEYRING"):
            status(store, verify=True)


def test_unknown_headers_are_counted(graph_sqlite_db):
    with sqlite3.connect(graph_sqlite_db) as c:
        c.execute("UPDATE writes SET type = 'msgpack+rot13' WHERE thread_id = 'plain-0'")
        changed = c.execute("SELECT count(*) FROM writes WHERE thread_id = 'plain-0'").fetchone()[0]
        c.execute(
            "UPDATE writes SET value = X'09' WHERE thread_id = 'new-0' AND type LIKE '%+aesgcm'"
        )
        garbled = c.execute("SELECT changes()").fetchone()[0]
    with open_database(sqlite=graph_sqlite_db) as store:
        report = status(store)
    assert changed > 0 and garbled > 0
    assert report.total.unknown == changed + garbled
