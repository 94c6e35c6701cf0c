"""Row binding at the serializer level: v2 headers, scopes, and what each refusal means."""

from __future__ import annotations

import asyncio
import threading

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.binding import RowIdentity, current_scope, row_scope
from serde_kit.crypto.blob import AAD_PREFIX, blob_binding, blob_key_id, parse_blob
from serde_kit.crypto.encrypted import SealedValue
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import (
    CryptoError,
    DecryptionError,
    EncodeError,
    MalformedDataError,
    PlaintextRefusedError,
    RowBindingError,
)
from tests.support.crypto_helpers import K1, K2, LEGACY_TEXT

ALICE = RowIdentity("alice", "")
MALLORY = RowIdentity("mallory", "")


def _serde(primary: str = "k2", **kw) -> EncryptedSerializer:
    return EncryptedSerializer(Serializer(), Keyring({"k1": K1, "k2": K2}, primary=primary), **kw)


def _sealed_for(serde: EncryptedSerializer, identity: RowIdentity, value: object) -> tuple[str, bytes]:
    with row_scope(identity.thread_id, identity.checkpoint_ns):
        return serde.dumps_typed(value)


def test_row_binding_error_is_a_crypto_error() -> None:
    assert issubclass(RowBindingError, CryptoError)
    assert not issubclass(RowBindingError, DecryptionError)


def test_outside_a_scope_rows_stay_v1_and_unbound() -> None:
    serde = _serde()
    tag, blob = serde.dumps_typed({"a": 1})
    assert blob[0] == 1 and blob_binding(blob) is None
    assert current_scope() is None


def test_inside_a_scope_rows_are_v2_and_name_their_identity() -> None:
    serde = _serde()
    row = _sealed_for(serde, RowIdentity("t-1", "sub:7"), {"secret": "s3"})
    assert row[0] == "msgpack+aesgcm"
    assert row[1][0] == 2
    assert blob_key_id(row[1]) == "k2"
    assert blob_binding(row[1]) == RowIdentity("t-1", "sub:7")
    with row_scope("t-1", "sub:7"):
        assert serde.loads_typed(row) == {"secret": "s3"}


def test_v2_layout_matches_the_documented_header_and_aad() -> None:
    serde = _serde()
    nonce = bytes(range(12))
    identity = RowIdentity("th\u00e9", "ns")
    tag, blob = serde._seal_row("msgpack", b"payload", nonce, identity)
    header = b"\x02\x02k2" + b"\x00\x04th\xc3\xa9" + b"\x00\x02ns"
    expected = AESGCM(K2).encrypt(nonce, b"payload", AAD_PREFIX + b"msgpack\x00" + header)
    assert blob == header + nonce + expected
    assert parse_blob(blob).binding == identity


@pytest.mark.parametrize(
    "reader",
    [RowIdentity("mallory", ""), RowIdentity("alice", "child:1"), RowIdentity("alicex", "")],
    ids=["other-thread", "other-namespace", "prefix-thread"],
)
def test_bound_row_read_for_another_identity_is_refused(reader: RowIdentity) -> None:
    serde = _serde()
    row = _sealed_for(serde, ALICE, {"secret": "alice's"})
    with row_scope(reader.thread_id, reader.checkpoint_ns), pytest.raises(RowBindingError, match="different thread"):
        serde.loads_typed(row)


def test_bound_row_read_outside_a_bound_call_is_refused() -> None:
    serde = _serde()
    row = _sealed_for(serde, ALICE, [1, 2])
    with pytest.raises(RowBindingError, match="bind_rows"):
        serde.loads_typed(row)


def test_editing_the_identity_in_the_header_fails_authentication() -> None:
    # The forge: rewrite alice's header to name mallory, then read as mallory.
    serde = _serde()
    tag, blob = _sealed_for(serde, RowIdentity("alice", ""), {"secret": 1})
    forged = blob.replace(b"\x00\x05alice", b"\x00\x05malle", 1)
    assert blob_binding(forged) == RowIdentity("malle", "")
    with row_scope("malle", ""), pytest.raises(DecryptionError, match="^authentication failed under key id "):
        serde.loads_typed((tag, forged))


def test_downgrading_a_bound_row_to_v1_fails() -> None:
    serde = _serde()
    tag, blob = _sealed_for(serde, ALICE, "v")
    # Version byte 1 with the identity bytes left in place: no longer a valid v1 blob.
    with row_scope("alice", ""), pytest.raises((DecryptionError, MalformedDataError)):
        serde.loads_typed((tag, b"\x01" + blob[1:]))


def test_unbound_rows_still_read_inside_a_scope() -> None:
    serde = _serde()
    old = serde.dumps_typed({"old": True})
    with row_scope("anyone", ""):
        assert serde.loads_typed(old) == {"old": True}


def test_require_bound_refuses_every_unbound_kind() -> None:
    from Crypto.Cipher import AES

    serde = EncryptedSerializer(
        Serializer(),
        Keyring({"k2": K2}, primary="k2", legacy_key=LEGACY_TEXT.encode()),
        allow_plaintext=True,
    )
    inner_tag, data = Serializer().dumps_typed({"x": 1})
    cipher = AES.new(LEGACY_TEXT.encode(), AES.MODE_EAX)
    ct, mac = cipher.encrypt_and_digest(data)
    legacy = (inner_tag + "+aes", cipher.nonce + mac + ct)
    rows = [serde.dumps_typed({"x": 1}), (inner_tag, data), legacy]
    for row in rows:
        with row_scope("t", ""):
            assert serde.loads_typed(row) == {"x": 1}
        with row_scope("t", "", require_bound=True), pytest.raises(RowBindingError, match="require_bound"):
            serde.loads_typed(row)
    bound = _sealed_for(serde, RowIdentity("t", ""), {"x": 1})
    with row_scope("t", "", require_bound=True):
        assert serde.loads_typed(bound) == {"x": 1}


def test_partial_scope_accepts_any_identity_and_records_it() -> None:
    serde = _serde()
    a = _sealed_for(serde, RowIdentity("a", "x"), 1)
    b = _sealed_for(serde, RowIdentity("b", ""), 2)
    with row_scope(None, None) as scope:
        assert serde.loads_typed(a) == 1
        assert serde.loads_typed(b) == 2
    assert scope.seen == [RowIdentity("a", "x"), RowIdentity("b", "")]
    with row_scope("a", None) as scope, pytest.raises(RowBindingError):
        serde.loads_typed(b)


def test_a_write_in_a_partial_scope_is_refused() -> None:
    serde = _serde()
    with row_scope(None, None), pytest.raises(RowBindingError, match="writes need both"):
        serde.dumps_typed(1)


def test_reencrypt_keeps_the_binding_when_rotating() -> None:
    old = _serde(primary="k1")
    row = _sealed_for(old, ALICE, {"v": 1})
    new = _serde(primary="k2")
    rotated = new.reencrypt(row)
    assert rotated is not None
    assert blob_key_id(rotated[1]) == "k2" and blob_binding(rotated[1]) == ALICE
    assert new.reencrypt(rotated) is None  # already under the primary, still bound
    with row_scope("alice", ""):
        assert new.loads_typed(rotated) == {"v": 1}
    with row_scope("mallory", ""), pytest.raises(RowBindingError):
        new.loads_typed(rotated)


def test_bind_row_binds_an_old_row_to_the_identity_it_is_given() -> None:
    serde = _serde()
    old = serde.dumps_typed({"v": 2})
    bound = serde.bind_row(old, "alice", "")
    assert bound is not None and blob_binding(bound[1]) == ALICE
    assert serde.bind_row(bound, "alice", "") is None
    with pytest.raises(RowBindingError, match="different thread"):
        serde.bind_row(bound, "mallory", "")
    with row_scope("alice", ""):
        assert serde.loads_typed(bound) == {"v": 2}


def test_bind_row_follows_the_migration_flags() -> None:
    serde = _serde(allow_plaintext=True)
    plain = Serializer().dumps_typed("p")
    assert serde.bind_row(plain, "t") is None
    sealed = serde.bind_row(plain, "t", encrypt_plaintext=True)
    assert sealed is not None and blob_binding(sealed[1]) == RowIdentity("t", "")


def test_bind_row_never_opens_a_row_that_fails_authentication() -> None:
    serde = _serde()
    tag, blob = serde.dumps_typed("x")
    with pytest.raises(DecryptionError):
        serde.bind_row((tag, blob[:-1] + bytes([blob[-1] ^ 1])), "t")


def test_decrypt_row_for_tools_checks_an_identity_when_given() -> None:
    serde = _serde()
    row = _sealed_for(serde, ALICE, "v")
    inner = Serializer().dumps_typed("v")
    assert serde.decrypt_row(row) == inner  # offline tools: no scope, no identity
    assert serde.decrypt_row(row, identity=ALICE) == inner
    with pytest.raises(RowBindingError):
        serde.decrypt_row(row, identity=MALLORY)


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        (b"\x02\x02k2", "before its thread id"),
        (b"\x02\x02k2\x00\x05ali", "inside its thread id"),
        (b"\x02\x02k2\x00\x01a\x00", "before its checkpoint namespace"),
        (b"\x02\x02k2\x00\x01a\x00\x09ns", "inside its checkpoint namespace"),
        (b"\x02\x02k2\x00\x01\xff\x00\x00" + bytes(28), "not UTF-8"),
        (b"\x02\x02k2\x00\x01a\x00\x00" + bytes(27), "too short"),
    ],
)
def test_malformed_v2_headers_are_typed_errors(blob: bytes, why: str) -> None:
    serde = _serde()
    with row_scope("a", ""), pytest.raises(MalformedDataError, match=why):
        serde.loads_typed(("msgpack+aesgcm", blob))
    assert classify_row("msgpack+aesgcm", blob).kind == "unknown"


def test_identity_too_long_to_bind_is_an_encode_error() -> None:
    serde = _serde()
    with row_scope("t" * 70_000, ""), pytest.raises(EncodeError, match="longer than"):
        serde.dumps_typed(1)


def test_sealed_value_serializes_its_value() -> None:
    serde = _serde()
    with row_scope("t", ""):
        row = serde.dumps_typed(SealedValue("tok-123"))
        assert serde.loads_typed(row) == "tok-123"
    assert b"tok-123" not in row[1]


def test_plaintext_is_still_refused_inside_a_scope() -> None:
    serde = _serde()
    with row_scope("t", ""), pytest.raises(PlaintextRefusedError):
        serde.loads_typed(Serializer().dumps_typed(1))


def test_scopes_do_not_leak_between_threads() -> None:
    serde = _serde()
    row = _sealed_for(serde, ALICE, "a")
    inside = threading.Event()
    done = threading.Event()
    seen: list[object] = []

    def other() -> None:
        inside.wait()
        seen.append(current_scope())
        try:
            serde.loads_typed(row)
        except RowBindingError as e:
            seen.append(e)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with row_scope("alice", ""):
        inside.set()
        assert done.wait(60)
        assert serde.loads_typed(row) == "a"
    t.join()
    assert seen[0] is None and isinstance(seen[1], RowBindingError)


def test_scopes_do_not_leak_between_asyncio_tasks() -> None:
    serde = _serde()
    rows = {who: _sealed_for(serde, RowIdentity(who, ""), who) for who in ("alice", "bob")}

    async def reader(who: str, other_ready: asyncio.Event, mine_ready: asyncio.Event) -> str:
        with row_scope(who, ""):
            mine_ready.set()
            await other_ready.wait()  # both scopes are set now, interleaved
            assert current_scope().thread_id == who
            with pytest.raises(RowBindingError):
                serde.loads_typed(rows["bob" if who == "alice" else "alice"])
            return serde.loads_typed(rows[who])

    async def main() -> list[str]:
        a, b = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(reader("alice", b, a), reader("bob", a, b))

    assert asyncio.run(main()) == ["alice", "bob"]


def test_refusals_hold_once_a_header_is_cached() -> None:
    # The second read of a header takes the cached fast path; it must check the same things.
    serde = _serde()
    row = _sealed_for(serde, ALICE, "a")
    with row_scope("alice", ""):
        assert serde.loads_typed(row) == "a"
        assert serde.loads_typed(row) == "a"
    with row_scope("mallory", ""), pytest.raises(RowBindingError, match="different thread"):
        serde.loads_typed(row)
    with pytest.raises(RowBindingError, match="bind_rows"):
        serde.loads_typed(row)
    with row_scope("alice", ""), pytest.raises(DecryptionError):
        serde.loads_typed((row[0], row[1][:-1] + bytes([row[1][-1] ^ 1])))
    with row_scope(None, None) as scope:
        serde.loads_typed(row)
    assert scope.seen == [ALICE]


def test_check_inner_refuses_to_seal_rows_the_application_would_not_load() -> None:
    import pickle

    from serde_kit.errors import DecodeError

    serde = _serde(allow_plaintext=True)
    planted = ("pickle", pickle.dumps({"x": 1}))
    # Without the check, a planted pickle row is sealed as a genuine encrypted row.
    assert serde.reencrypt(planted, encrypt_plaintext=True) is not None
    with pytest.raises(DecodeError, match="pickle"):
        serde.reencrypt(planted, encrypt_plaintext=True, check_inner=True)
    with pytest.raises(DecodeError):
        serde.reencrypt(("msgpack", b"\xc1"), encrypt_plaintext=True, check_inner=True)
    good = Serializer().dumps_typed({"x": 1})
    sealed = serde.reencrypt(good, encrypt_plaintext=True, check_inner=True)
    assert sealed is not None and serde.loads_typed(sealed) == {"x": 1}
