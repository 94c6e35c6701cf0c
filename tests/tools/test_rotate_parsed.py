"""One header parse per row: ``classify_parsed`` and ``reencrypt(parsed=)`` decide exactly as before.

rotate classifies each row (for its report) and hands the parsed header on to
``EncryptedSerializer.reencrypt``; these tests pin that a parse is only trusted
for the blob it came from, so every check of ``reencrypt`` stays.
"""

from __future__ import annotations

import pytest

from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.binding import RowIdentity, row_scope
from serde_kit.crypto.blob import parse_blob
from serde_kit.crypto.rows import RowKind, classify_parsed, classify_row
from serde_kit.errors import RowBindingError
from serde_kit.serializer import Serializer

K1, K2 = bytes(range(32)), bytes(range(100, 132))
OLD = Keyring({"k1": K1}, primary="k1")
NEW = Keyring({"k2": K2, "k1": K1}, primary="k2")


def _parts(parsed):
    return (parsed.key_id, parsed.header, bytes(parsed.nonce), bytes(parsed.body), parsed.binding)


def test_classify_parsed_is_classify_row_plus_the_parse_on_every_call():
    old = EncryptedSerializer(Serializer(), OLD)
    for _ in range(3):  # the first call parses; later ones take the seen-header path
        tag, blob = old.dumps_typed({"a": 1})
        info, parsed = classify_parsed(tag, blob)
        assert info == classify_row(tag, blob) == (RowKind.AESGCM, "msgpack", "k1", None, False)
        assert _parts(parsed) == _parts(parse_blob(blob))
    with row_scope("t1", "ns"):
        tag, blob = old.dumps_typed({"a": 1})
    info, parsed = classify_parsed(tag, blob)
    assert parsed is not None and parsed.binding == RowIdentity("t1", "ns")
    assert info.bound and classify_row(tag, blob) == info  # a v2 header: bound
    for tag, blob in [("msgpack", b"\x80"), ("msgpack+aesgcm", b"\x01\x02k"), ("msgpack+aes", bytes(40)), (None, None)]:
        info, parsed = classify_parsed(tag, blob)
        assert info == classify_row(tag, blob) and parsed is None
    # A truncated blob behind a header seen before is still unknown (the fast path checks the length).
    assert classify_parsed(tag := "msgpack+aesgcm", blob := old.dumps_typed(1)[1][:20])[0].kind is RowKind.UNKNOWN
    assert classify_row(tag, blob).kind is RowKind.UNKNOWN


def test_reencrypt_ignores_a_parse_of_another_blob():
    old, new = EncryptedSerializer(Serializer(), OLD), EncryptedSerializer(Serializer(), NEW)
    k1_row = old.dumps_typed({"a": 1})
    k2_row = new.dumps_typed({"a": 1})
    k2_parse = classify_parsed(*k2_row)[1]
    # A k2 parse would say "already primary": it is not this row's, so the row is still re-encrypted.
    out = new.reencrypt(k1_row, parsed=k2_parse)
    assert out is not None and classify_row(*out).key_id == "k2"
    assert new.loads_typed(out) == {"a": 1}
    # Its own parse gives the same result as none.
    assert classify_row(*new.reencrypt(k1_row, parsed=classify_parsed(*k1_row)[1])).key_id == "k2"
    assert new.reencrypt(k2_row, parsed=k2_parse) is None


def test_reencrypt_with_a_parse_keeps_the_binding_checks():
    old, new = EncryptedSerializer(Serializer(), OLD), EncryptedSerializer(Serializer(), NEW)
    with row_scope("t1", ""):
        bound = old.dumps_typed({"a": 1})
    unbound_parse = classify_parsed(*old.dumps_typed({"a": 1}))[1]
    own = classify_parsed(*bound)[1]
    for parsed in (own, unbound_parse):
        with pytest.raises(RowBindingError):
            new.reencrypt(bound, bind_to=RowIdentity("t2", ""), parsed=parsed)  # moved to another thread
        out = new.reencrypt(bound, parsed=parsed)
        assert out is not None and parse_blob(out[1]).binding == RowIdentity("t1", "")
