"""``EncryptedSerializer.rekey_many``: rotate's bulk key rotation gives what ``reencrypt`` gives, or None.

A row only takes the bulk path under a (stored tag, v1 header) that
``reencrypt`` already opened and resealed; every other row, and any row that
does not open, is None so the caller's ``reencrypt`` decides (and raises) as
before.
"""

from __future__ import annotations

import copy
import importlib

import pytest

from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.binding import row_scope
from serde_kit.crypto.blob import build_header
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import DecryptionError, UnknownTagError
from serde_kit.serializer import Serializer

K1, K2, K3 = bytes(range(32)), bytes(range(100, 132)), bytes(range(50, 82))
OLD = Keyring({"k1": K1}, primary="k1")
NEW = Keyring({"k2": K2, "k1": K1}, primary="k2")


def _warm(new: EncryptedSerializer, old: EncryptedSerializer) -> None:
    assert new.rekey_many([old.dumps_typed(0)]) == [None]  # no plan before reencrypt made one
    assert new.reencrypt(old.dumps_typed(0)) is not None


def test_rekey_many_matches_reencrypt_after_one_row_opened():
    old, new = EncryptedSerializer(Serializer(), OLD), EncryptedSerializer(Serializer(), NEW)
    _warm(new, old)
    rows = [old.dumps_typed({"i": i, "pad": "x" * i}) for i in range(50)]
    out = new.rekey_many(rows)
    assert all(o is not None for o in out)
    for (tag, blob), o, i in zip(rows, out, range(50), strict=True):
        assert o is not None
        key_id, new_tag, new_blob = o
        assert key_id == "k1" and new_tag == tag == "msgpack+aesgcm"
        assert new_blob.startswith(build_header("k2")) and classify_row(new_tag, new_blob).key_id == "k2"
        assert new.loads_typed((new_tag, new_blob)) == {"i": i, "pad": "x" * i}
        slow = new.reencrypt((tag, blob))
        assert slow is not None and slow[0] == new_tag and len(slow[1]) == len(new_blob)
    # A fresh random nonce per row.
    nonces = {o[2][len(build_header("k2")) : len(build_header("k2")) + 12] for o in out if o is not None}
    assert len(nonces) == len(rows)
    # A shallow copy keeps the plans.
    assert all(o is not None for o in copy.copy(new).rekey_many(rows[:3]))


def test_rows_rekey_many_leaves_to_reencrypt():
    old, new = EncryptedSerializer(Serializer(), OLD), EncryptedSerializer(Serializer(), NEW)
    _warm(new, old)
    tag, blob = old.dumps_typed({"a": 1})
    tampered = blob[:-1] + bytes([blob[-1] ^ 1])
    with row_scope("t1", ""):
        bound = old.dumps_typed({"a": 1})
    under_primary = new.dumps_typed({"a": 1})
    other_key = EncryptedSerializer(Serializer(), Keyring({"k3": K3}, primary="k3")).dumps_typed(1)
    large = old.dumps_typed(b"x" * (1 << 15))
    class Tag(str):
        pass

    leave = [
        (tag, tampered),  # does not authenticate: reencrypt raises DecryptionError
        (tag, blob[:30]),  # truncated
        (tag, bytearray(blob)),  # not bytes
        ("json+aesgcm", blob),  # another stored tag: no plan (and another AAD)
        (["msgpack+aesgcm"], blob),  # unhashable tag: reencrypt says UnknownTagError
        bound,  # v2: binding checks belong to reencrypt
        under_primary,  # nothing to do: reencrypt says None
        other_key,  # a header never opened (key not in the keyring)
        large,  # large rows take reencrypt's in-place path
        ("msgpack", b"\x80"),
        (None, None),
        ("msgpack+aes", bytes(40)),
    ]
    assert new.rekey_many(leave) == [None] * len(leave)
    with pytest.raises(DecryptionError):
        new.reencrypt((tag, tampered))
    with pytest.raises(UnknownTagError):
        new.reencrypt((["msgpack+aesgcm"], blob))  # type: ignore[arg-type]
    assert new.reencrypt(under_primary) is None
    # A str subclass equal to a known tag opens only a row sealed under that tag's AAD.
    out = new.rekey_many([(Tag(tag), blob)])
    assert out[0] is not None and new.loads_typed(out[0][1:]) == {"a": 1}
    assert new.loads_typed(new.reencrypt(large)) == b"x" * (1 << 15)


def test_no_plan_for_a_bound_reencryption():
    old, new = EncryptedSerializer(Serializer(), OLD), EncryptedSerializer(Serializer(), NEW)
    from serde_kit.crypto.binding import RowIdentity

    row = old.dumps_typed(1)
    assert new.reencrypt(row, bind_to=RowIdentity("t1", "")) is not None
    assert new.rekey_many([old.dumps_typed(1)]) == [None]


def _tamper(store, count):
    """Flip the last byte of up to ``count`` k1 rows in place, after each table's first k1 row.

    The first one stays good, so the bulk path has a plan when the tampered rows
    come; dialect-independent (a batch's compare-and-swap writes them).
    """
    done = []
    for table in store.tables:
        with store.batch(table, after=None, limit=10_000) as batch:
            k1_rows = [r for r in batch.rows if classify_row(r.tag, r.blob).key_id == "k1"]
            for row in k1_rows[1 : 1 + count - len(done)]:
                assert batch.compare_and_swap(row, row.tag, row.blob[:-1] + bytes([row.blob[-1] ^ 1]))
                done.append((row.table, row.pk))
    return done


def test_rotate_reports_a_row_that_does_not_open_amid_bulk_rows(graph_db):
    from serde_kit.tools.db import open_database
    from serde_kit.tools.rotate import rotate
    from tests.support.rotate_fixtures import K_ROTATE, raw_rows

    kind, location = graph_db
    with open_database(**{kind: location}, readonly=False) as store:
        tampered = _tamper(store, 3)
        assert len(tampered) == 3
        before = raw_rows(store)
        report = rotate(store, keyring=K_ROTATE, apply=True, batch_size=1000, verify_after=False)
        after = raw_rows(store)
    assert sorted((f.table, tuple(f.pk)) for f in report.failures) == sorted(tampered)
    assert all("does not match" in f.error for f in report.failures), report.failures
    for key in tampered:
        assert after[key] == before[key]  # left untouched
    changed = [k for k in before if after[k] != before[k]]
    assert len(changed) == report.total_changed == report.changed["k1"] > 3
    assert all(classify_row(*after[k]).key_id == "k2" for k in changed)


def test_an_interrupt_between_chunks_rolls_back_the_chunks_already_sent(graph_db, monkeypatch):
    """KeyboardInterrupt (SIGINT/SIGTERM) while a later chunk is re-encrypted: nothing of the batch is kept.

    On PostgreSQL the first chunks' UPDATEs are already in the pipeline then.
    """
    rotate_module = importlib.import_module("serde_kit.tools.rotate")  # the module: serde_kit.tools.rotate is the function
    from serde_kit.tools.db import open_database
    from tests.support.rotate_fixtures import K_ROTATE, raw_rows

    monkeypatch.setattr(rotate_module, "_MIN_CHUNK", 1)
    calls = []
    work = rotate_module._Rotator._work

    def interrupted(self, rows):
        calls.append(len(rows))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return work(self, rows)

    monkeypatch.setattr(rotate_module._Rotator, "_work", interrupted)
    kind, location = graph_db
    with open_database(**{kind: location}, readonly=False) as store:
        before = raw_rows(store)
        report = rotate_module.rotate(store, keyring=K_ROTATE, apply=True, batch_size=10_000, verify_after=False)
        assert report.interrupted and report.total_changed == 0 and len(calls) == 3
        assert raw_rows(store) == before
        monkeypatch.setattr(rotate_module._Rotator, "_work", work)
        again = rotate_module.rotate(store, keyring=K_ROTATE, apply=True, batch_size=10_000)
    assert again.ok and again.total_changed > 0
