"""EncryptedSerializer behaviour: round trips, backends, plaintext, reencrypt, misuse."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from hypothesis import given, settings, strategies as st
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import (
    CIPHER_NAME,
    LEGACY_CIPHER_NAME,
    EncryptedSerializer,
    Keyring,
    blob_key_id,
)
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import (
    ConfigError,
    DecryptionError,
    EncodeError,
    MalformedDataError,
    PlaintextRefusedError,
    UnknownKeyError,
)
from tests.support.crypto_helpers import K1, K2, K3

KR = Keyring({"k1": K1, "k2": K2}, primary="k2")
VALUES = [
    None,
    0,
    -7,
    3.25,
    "text",
    "",
    b"",
    b"\x00\xff" * 40,
    bytearray(b"ba"),
    [1, [2, [3]]],
    {"messages": ["hi", "there"], "count": 2},
    dt.datetime(2026, 11, 30, 14, 0, tzinfo=dt.timezone.utc),
    uuid.UUID(int=7),
    {1, 2, 3},
]


def test_constants() -> None:
    assert (CIPHER_NAME, LEGACY_CIPHER_NAME) == ("aesgcm", "aes")


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_round_trip_around_each_inner(inner, value: object, backend: str) -> None:
    serde = EncryptedSerializer(inner, KR, backend=backend)
    tag, blob = serde.dumps_typed(value)
    inner_tag, inner_bytes = inner.dumps_typed(value)
    assert tag == f"{inner_tag}+aesgcm"
    assert blob_key_id(blob) == "k2"
    assert len(blob) == 4 + 12 + len(inner_bytes) + 16
    assert serde.loads_typed((tag, blob)) == value
    assert serde.decrypt_row((tag, blob)) == (inner_tag, inner_bytes)


def test_cross_read_between_inner_serializers() -> None:
    # Our Serializer and JsonPlusSerializer are wire compatible, so either inner reads
    # the other's encrypted rows.
    from tests.support.crypto_helpers import INNER_FACTORIES

    a, b = (INNER_FACTORIES[n]() for n in sorted(INNER_FACTORIES))
    row = EncryptedSerializer(a, KR).dumps_typed({"k": [1, 2]})
    assert EncryptedSerializer(b, KR).loads_typed(row) == {"k": [1, 2]}
    row = EncryptedSerializer(b, KR).dumps_typed({"k": [1, 2]})
    assert EncryptedSerializer(a, KR).loads_typed(row) == {"k": [1, 2]}


@pytest.mark.parametrize(
    ("writer", "reader"), [("cryptography", "pycryptodome"), ("pycryptodome", "cryptography")]
)
def test_backends_cross_read(writer: str, reader: str) -> None:
    w = EncryptedSerializer(JsonPlusSerializer(), KR, backend=writer)
    r = EncryptedSerializer(JsonPlusSerializer(), KR, backend=reader)
    for value in VALUES:
        assert r.loads_typed(w.dumps_typed(value)) == value
    assert (w.backend, r.backend) == (writer, reader)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=2048),
    nonce=st.binary(min_size=12, max_size=12),
    tag=st.sampled_from(["bytes", "msgpack", "x.y_z-1"]),
)
def test_backends_byte_identical_for_any_input(data: bytes, nonce: bytes, tag: str) -> None:
    a = EncryptedSerializer(JsonPlusSerializer(), KR, backend="cryptography")
    b = EncryptedSerializer(JsonPlusSerializer(), KR, backend="pycryptodome")
    row_a, row_b = a._seal_row(tag, data, nonce), b._seal_row(tag, data, nonce)
    assert row_a == row_b
    assert a.decrypt_row(row_b) == b.decrypt_row(row_a) == (tag, data)


def test_large_value_round_trip_and_memoryview_blob() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    value = b"\x5a" * (1 << 20)
    tag, blob = serde.dumps_typed(value)
    assert serde.loads_typed((tag, memoryview(blob))) == value
    assert serde.loads_typed((tag, bytearray(blob))) == value


def test_unknown_key_id_names_the_key() -> None:
    row = EncryptedSerializer(JsonPlusSerializer(), Keyring({"k0": K3}, primary="k0")).dumps_typed(1)
    with pytest.raises(UnknownKeyError) as exc:
        EncryptedSerializer(JsonPlusSerializer(), KR).loads_typed(row)
    assert exc.value.key_id == "k0"
    assert "'k0'" in str(exc.value) and "['k1', 'k2']" in str(exc.value)


def test_same_id_wrong_key_is_authentication_failure() -> None:
    row = EncryptedSerializer(JsonPlusSerializer(), Keyring({"k2": K3}, primary="k2")).dumps_typed(1)
    with pytest.raises(DecryptionError):
        EncryptedSerializer(JsonPlusSerializer(), KR).loads_typed(row)


# -- classify / reencrypt -------------------------------------------------------------


def test_classify_each_kind() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    tag, blob = serde.dumps_typed({"a": 1})
    assert classify_row(tag, blob) [:3] == ("aesgcm", "msgpack", "k2")
    assert classify_row("msgpack", b"\x80") [:3] == ("plaintext", "msgpack", None)
    assert classify_row("null", b"") [:3] == ("plaintext", "null", None)
    assert classify_row("msgpack+aes", bytes(40)) [:3] == ("legacy", "msgpack", None)
    assert classify_row("msgpack+rot13", blob)[:3] == ("unknown", "msgpack", None)
    assert classify_row("msgpack+aesgcm", b"\x09junk")[:3] == ("unknown", "msgpack", None)
    # Header only: a row under a key we do not hold still classifies.
    other = EncryptedSerializer(JsonPlusSerializer(), Keyring({"z9": K3}, primary="z9"))
    assert classify_row(*other.dumps_typed(1)).key_id == "z9"


def test_reencrypt_plaintext_only_when_asked() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    plain = JsonPlusSerializer().dumps_typed({"old": True})
    assert serde.reencrypt(plain) is None
    new = serde.reencrypt(plain, encrypt_plaintext=True)
    assert new is not None and new[0] == "msgpack+aesgcm"
    assert serde.loads_typed(new) == {"old": True}
    assert serde.decrypt_row(new) == plain  # inner bytes untouched
    # Works without allow_plaintext: the flag is the explicit opt-in.
    assert not serde.allow_plaintext


def test_reencrypt_never_touches_the_empty_sentinel() -> None:
    # PostgresSaver/InMemorySaver store ("empty", None) for "no value" and compare the raw tag.
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    assert serde.reencrypt(("empty", None), encrypt_plaintext=True) is None  # type: ignore[arg-type]


def test_reencrypt_plaintext_without_bytes_is_malformed() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    with pytest.raises(MalformedDataError):
        serde.reencrypt(("msgpack", None), encrypt_plaintext=True)  # type: ignore[arg-type]


def test_reencrypt_does_not_decode_inner_bytes() -> None:
    # Inner bytes that no serializer could decode still move to the new key intact.
    old = EncryptedSerializer(JsonPlusSerializer(), Keyring({"k1": K1}, primary="k1"))
    row = old._seal_row("msgpack", b"\xc1 not msgpack", bytes(12))
    new = EncryptedSerializer(JsonPlusSerializer(), KR).reencrypt(row)
    assert new is not None and blob_key_id(new[1]) == "k2"
    assert EncryptedSerializer(JsonPlusSerializer(), KR).decrypt_row(new) == ("msgpack", b"\xc1 not msgpack")


def test_reencrypt_under_primary_is_decided_from_header() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    tag, blob = serde.dumps_typed(1)
    garbage_body = blob[:4] + bytes(40)  # header names k2, body would not authenticate
    assert serde.reencrypt((tag, garbage_body)) is None


def test_reencrypt_uses_fresh_nonce() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    row = EncryptedSerializer(JsonPlusSerializer(), KR.promote("k1")).dumps_typed("v")
    a, b = serde.reencrypt(row), serde.reencrypt(row)
    assert a is not None and b is not None and a[1] != b[1]


# -- misuse ---------------------------------------------------------------------------


class _BadInner:
    def __init__(self, tag: object, data: object) -> None:
        self.row = (tag, data)

    def dumps_typed(self, obj: object):
        return self.row

    def loads_typed(self, data):
        return data


@pytest.mark.parametrize(
    ("tag", "data"), [("a+b", b"x"), (None, b"x"), ("msgpack", "str"), ("msgpack", None)]
)
def test_inner_returning_bad_row_is_encode_error(tag: object, data: object) -> None:
    serde = EncryptedSerializer(_BadInner(tag, data), KR)
    with pytest.raises(EncodeError):
        serde.dumps_typed(1)


def test_constructor_misuse() -> None:
    with pytest.raises(TypeError, match="keyring="):
        EncryptedSerializer(KR)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dumps_typed"):
        EncryptedSerializer(object(), KR)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Keyring"):
        EncryptedSerializer(JsonPlusSerializer(), {"k1": K1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown crypto backend"):
        EncryptedSerializer(JsonPlusSerializer(), KR, backend="openssl")


def test_default_inner_is_serde_kit_serializer() -> None:
    from serde_kit import Serializer

    assert type(EncryptedSerializer(keyring=KR).inner) is Serializer


def test_cipher_object_built_once_per_key_id() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    other = EncryptedSerializer(JsonPlusSerializer(), KR.promote("k1"))
    rows = [serde.dumps_typed(i) for i in range(5)] + [other.dumps_typed(i) for i in range(5)]
    for row in rows:
        serde.loads_typed(row)
    ciphers = serde.cipher._backend._ciphers
    assert sorted(ciphers) == ["k1", "k2"]
    first = dict(ciphers)
    serde.loads_typed(rows[0])
    assert all(ciphers[k] is first[k] for k in first)


def test_plaintext_error_says_how_to_migrate() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KR)
    with pytest.raises(PlaintextRefusedError) as exc:
        serde.loads_typed(("msgpack", b"\x80"))
    assert "allow_plaintext=True" in str(exc.value)
    assert "--encrypt-plaintext" in str(exc.value)
