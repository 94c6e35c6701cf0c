"""Tampering: every bit flip, relabelled tags, plaintext downgrade, malformed headers."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring, blob_key_id
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import (
    DecodeError,
    DecryptionError,
    MalformedDataError,
    PlaintextRefusedError,
    UnknownKeyError,
    UnknownTagError,
)
from tests.support.crypto_helpers import K1, K2, K3

# k1 and k3 differ in one bit ('1' = 0x31, '3' = 0x33): a flip in the key id can
# name another key that IS in the keyring, and must still fail authentication.
KEYRING = Keyring({"k1": K1, "k3": K3, "k2": K2}, primary="k1")


@pytest.fixture(params=["cryptography", "pycryptodome"])
def serde(request) -> EncryptedSerializer:
    return EncryptedSerializer(JsonPlusSerializer(), KEYRING, backend=request.param)


def test_every_single_bit_flip_is_rejected(serde: EncryptedSerializer) -> None:
    tag, blob = serde.dumps_typed({"a": 1, "b": "xy"})
    assert len(blob) < 64  # small enough to flip every bit quickly
    seen: dict[type, int] = {}
    for i in range(len(blob) * 8):
        bad = bytearray(blob)
        bad[i // 8] ^= 1 << (i % 8)
        with pytest.raises((DecryptionError, UnknownKeyError, MalformedDataError)) as exc:
            serde.loads_typed((tag, bytes(bad)))
        seen[exc.type] = seen.get(exc.type, 0) + 1
    # Nonce, ciphertext and tag flips are authentication failures; header flips
    # are caught either by the parser or by the AAD.
    assert seen[DecryptionError] >= (len(blob) - 4) * 8
    assert MalformedDataError in seen and UnknownKeyError in seen


def test_flip_to_another_present_key_id_fails_authentication(serde: EncryptedSerializer) -> None:
    tag, blob = serde.dumps_typed("secret")
    bad = bytearray(blob)
    bad[3] ^= 0x02  # "k1" -> "k3"
    assert blob_key_id(bytes(bad)) == "k3"
    with pytest.raises(DecryptionError, match="^authentication failed under key id 'k3'"):
        serde.loads_typed((tag, bytes(bad)))


@pytest.mark.parametrize("new_inner", ["bytes", "null", "bytearray", "json", "pickle"])
def test_relabelled_tag_is_rejected(serde: EncryptedSerializer, new_inner: str) -> None:
    tag, blob = serde.dumps_typed({"value": 1})
    assert tag == "msgpack+aesgcm"
    with pytest.raises(DecryptionError):
        serde.loads_typed((f"{new_inner}+aesgcm", blob))


def test_relabelled_bytes_row_is_rejected(serde: EncryptedSerializer) -> None:
    tag, blob = serde.dumps_typed(b"raw")
    assert tag == "bytes+aesgcm"
    with pytest.raises(DecryptionError):
        serde.loads_typed(("msgpack+aesgcm", blob))


def test_blob_moved_between_keys_header_edit_rejected() -> None:
    # Rewrite the header to name k2 (a different length id is impossible here, same length):
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    tag, blob = serde.dumps_typed("x")
    bad = blob[:2] + b"k2" + blob[4:]
    with pytest.raises(DecryptionError):
        serde.loads_typed((tag, bad))


def test_plaintext_downgrade_rejected_unless_allowed() -> None:
    plain = JsonPlusSerializer().dumps_typed({"a": 1})
    strict = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    with pytest.raises(PlaintextRefusedError, match="allow_plaintext=True"):
        strict.loads_typed(plain)
    with pytest.raises(PlaintextRefusedError):
        strict.decrypt_row(plain)
    # Stripping the "+aesgcm" suffix off an encrypted row is a downgrade too.
    tag, blob = strict.dumps_typed({"a": 1})
    with pytest.raises(PlaintextRefusedError):
        strict.loads_typed((tag.split("+")[0], blob))
    migrating = EncryptedSerializer(JsonPlusSerializer(), KEYRING, allow_plaintext=True)
    assert migrating.loads_typed(plain) == {"a": 1}
    assert migrating.decrypt_row(plain) == plain
    # Migration mode still authenticates encrypted rows.
    with pytest.raises(DecryptionError):
        migrating.loads_typed(("bytes+aesgcm", blob))


@pytest.mark.parametrize(
    "tag",
    ["msgpack+chacha", "msgpack+aesgcm+aes", "a+b+c", "msgpack+", "msgpack+AESGCM"],
)
def test_unknown_cipher_or_extra_plus_is_an_unknown_tag(tag: str) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    _, blob = serde.dumps_typed(1)
    with pytest.raises(UnknownTagError):
        serde.loads_typed((tag, blob))
    with pytest.raises(UnknownTagError):
        serde.reencrypt((tag, blob), encrypt_plaintext=True, upgrade_legacy=True)
    assert classify_row(tag, blob).kind == "unknown"
    assert issubclass(UnknownTagError, DecodeError)


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        (b"", "too short"),
        (b"\x01", "too short"),
        (b"\x03\x02k1" + bytes(28), "version 3"),
        (b"\x01\x00" + bytes(28), "length of 0"),
        (b"\x01\x41" + b"k" * 65 + bytes(28), "length of 65"),
        (b"\x01\x05k1", "truncated"),
        (b"\x01\x02k!" + bytes(28), "characters"),
        (b"\x01\x02k2" + bytes(27), "too short"),  # k2: not primary, so reencrypt must open it
    ],
)
def test_malformed_headers_are_typed_errors(blob: bytes, why: str) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    with pytest.raises(MalformedDataError, match=why):
        serde.loads_typed(("msgpack+aesgcm", blob))
    with pytest.raises(MalformedDataError):
        serde.reencrypt(("msgpack+aesgcm", blob))
    assert classify_row("msgpack+aesgcm", blob)[:3] == ("unknown", "msgpack", None)


def test_blob_key_id_reads_header_only() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    _, blob = serde.dumps_typed("x")
    assert blob_key_id(blob) == "k1"
    assert blob_key_id(memoryview(blob)) == "k1"
    assert blob_key_id(b"\x01\x02k9") == "k9"  # header alone suffices
    for bad in (b"", b"\x00\x02k1", b"\x01\x03k1", None, "text"):
        with pytest.raises(MalformedDataError):
            blob_key_id(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("blob", [None, "str", 12, [1, 2]])
def test_non_bytes_blob_is_malformed(blob: object) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    with pytest.raises(MalformedDataError):
        serde.loads_typed(("msgpack+aesgcm", blob))  # type: ignore[arg-type]
    assert classify_row("msgpack+aesgcm", blob).kind == ("empty" if blob is None else "stray")


def test_non_str_tag_is_unknown_tag() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    with pytest.raises(UnknownTagError):
        serde.loads_typed((None, b"x"))  # type: ignore[arg-type]
    assert classify_row(None, b"x").kind == "empty"  # a NULL tag: no serde output


def test_authentication_failure_says_nothing_more() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    tag, blob = serde.dumps_typed("x")
    other = EncryptedSerializer(
        JsonPlusSerializer(), Keyring({"k1": K2}, primary="k1")
    )  # same id, wrong key
    with pytest.raises(DecryptionError) as exc:
        other.loads_typed((tag, blob))
    # The key id (public: it is in the header) says which key to check; nothing says why it failed.
    assert str(exc.value) == (
        "authentication failed under key id 'k1': the keyring's key for that id is not the one "
        "the row was sealed with, or the row was altered or relabelled"
    )
    assert exc.value.__cause__ is None and exc.value.__suppress_context__
