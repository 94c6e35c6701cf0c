"""crypto/rows: the keyless classification every tool shares, as a table."""

from __future__ import annotations

import pytest

from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.serializer import Serializer

KEYRING = Keyring({"k1": bytes(32)}, primary="k1")
TAG, BLOB = EncryptedSerializer(Serializer(), KEYRING).dumps_typed({"a": 1})


@pytest.mark.parametrize(
    ("tag", "blob", "kind", "inner", "key_id", "problem"),
    [
        (TAG, BLOB, RowKind.AESGCM, "msgpack", "k1", None),
        ("msgpack", b"\x80", RowKind.PLAINTEXT, "msgpack", None, None),
        ("msgpack+aes", b"\x00" * 40, RowKind.LEGACY, "msgpack", None, None),
        ("empty", None, RowKind.EMPTY, None, None, None),
        ("msgpack", None, RowKind.EMPTY, None, None, None),
        (None, b"x", RowKind.EMPTY, None, None, None),
        ("msgpack+rot13", b"x", RowKind.UNKNOWN, "msgpack", None, "unknown cipher"),
        ("a+b+aesgcm", b"x", RowKind.UNKNOWN, "a", None, "more than one '+'"),
        ("msgpack+aesgcm", b"\x03\x02k1" + bytes(40), RowKind.UNKNOWN, "msgpack", None, "format version 3"),
        # a v2 header: bound to thread "t", namespace ""
        ("msgpack+aesgcm", b"\x02\x02k1\x00\x01t\x00\x00" + bytes(40), RowKind.AESGCM, "msgpack", "k1", None),
        ("msgpack+aesgcm", BLOB[:10], RowKind.UNKNOWN, "msgpack", None, "too short"),
        ("msgpack", "text, not bytes", RowKind.STRAY, "msgpack", None, "value is str"),
        ("msgpack", 10**12, RowKind.STRAY, "msgpack", None, "value is int"),
        (b"msgpack+aesgcm", BLOB, RowKind.STRAY, None, None, "type tag is bytes"),
        (7, b"x", RowKind.STRAY, None, None, "type tag is int"),
    ],
)
def test_classification_table(tag, blob, kind, inner, key_id, problem):
    info = classify_row(tag, blob)
    assert (info.kind, info.inner_tag, info.key_id) == (kind, inner, key_id)
    assert (info.problem is None) if problem is None else (problem in info.problem)


def test_kinds_compare_and_serialise_as_their_names():
    assert RowKind.AESGCM == "aesgcm" and str(RowKind.LEGACY) == "legacy"
    assert [k.value for k in RowKind] == ["empty", "stray", "plaintext", "aesgcm", "legacy", "unknown"]


def test_an_integer_blob_is_never_turned_into_bytes():
    # bytes(n) of a stray INTEGER would allocate n bytes; the problem text shows the number instead
    info = classify_row("msgpack", 1 << 62)
    assert info.kind is RowKind.STRAY and str(1 << 62) in info.problem


def test_agrees_with_the_serializer_on_rows_it_wrote():
    serde = EncryptedSerializer(Serializer(), KEYRING)
    assert classify_row(*serde.dumps_typed(b"x")).kind is RowKind.AESGCM
