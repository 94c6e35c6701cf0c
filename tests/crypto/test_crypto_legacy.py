"""Rows written by LangGraph's own EncryptedSerializer (AES-EAX, tag '+aes')."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncrypted
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import LEGACY_KEY_ID, EncryptedSerializer, Keyring, blob_key_id
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import DecryptionError, MalformedDataError, UnknownKeyError
from tests.support.crypto_helpers import K1, K2, LEGACY_TEXT, load_vectors

LEGACY = load_vectors("legacy_eax.json")
VALUES = [{"a": 1, "nested": [1.5, "x", None]}, "text", b"raw bytes", None, 12345]


def _ours(legacy_text: str | None, **kw) -> EncryptedSerializer:
    kr = Keyring({"k1": K1, "k2": K2}, primary="k2")
    if legacy_text is not None:
        kr = kr.with_legacy_key(legacy_text.encode())
    return EncryptedSerializer(JsonPlusSerializer(), kr, **kw)


@pytest.mark.parametrize("key_text", [LEGACY_TEXT, "0123456789abcdef01234567", "Z" * 32])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_stock_rows_decrypt_with_the_legacy_key(key_text: str, value: object) -> None:
    stock = StockEncrypted.from_pycryptodome_aes(JsonPlusSerializer(), key=key_text.encode())
    row = stock.dumps_typed(value)
    assert row[0].endswith("+aes")
    ours = _ours(key_text)
    assert ours.loads_typed(row) == value
    assert classify_row(*row)[:3] == ("legacy", row[0].split("+")[0], None)


def test_stock_rows_from_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The stock class reads LANGGRAPH_AES_KEY itself; load_keyring must agree on its bytes.
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    monkeypatch.setenv("SERDE_KIT_KEYRING", Keyring({"k1": K1}, primary="k1").to_env_value())
    monkeypatch.delenv("SERDE_KIT_KEYRING_FILE", raising=False)
    row = StockEncrypted.from_pycryptodome_aes(JsonPlusSerializer()).dumps_typed({"env": True})
    assert EncryptedSerializer(JsonPlusSerializer()).loads_typed(row) == {"env": True}


@pytest.mark.parametrize("v", LEGACY, ids=[v["name"] for v in LEGACY])
def test_committed_stock_rows_still_decrypt(v: dict[str, str]) -> None:
    ours = _ours(v["langgraph_aes_key"])
    row = (v["stored_tag"], bytes.fromhex(v["blob"]))
    assert ours.decrypt_row(row) == (v["inner_tag"], bytes.fromhex(v["plaintext"]))


def test_reencrypt_upgrades_stock_rows() -> None:
    stock = StockEncrypted.from_pycryptodome_aes(JsonPlusSerializer(), key=LEGACY_TEXT.encode())
    ours = _ours(LEGACY_TEXT)
    for value in VALUES:
        row = stock.dumps_typed(value)
        assert ours.reencrypt(row) is None  # upgrade_legacy off: nothing to do
        new = ours.reencrypt(row, upgrade_legacy=True)
        assert new is not None
        assert new[0] == row[0].replace("+aes", "+aesgcm")
        assert blob_key_id(new[1]) == "k2"
        assert ours.decrypt_row(new) == ours.decrypt_row(row)
        # After the upgrade the legacy key is no longer needed.
        assert _ours(None).loads_typed(new) == value


def test_missing_legacy_key_names_the_fix() -> None:
    row = StockEncrypted.from_pycryptodome_aes(key=LEGACY_TEXT.encode()).dumps_typed("x")
    ours = _ours(None)
    with pytest.raises(UnknownKeyError, match="LANGGRAPH_AES_KEY") as exc:
        ours.loads_typed(row)
    assert exc.value.key_id == LEGACY_KEY_ID == "legacy:LANGGRAPH_AES_KEY"
    with pytest.raises(UnknownKeyError):
        ours.reencrypt(row, upgrade_legacy=True)


def test_wrong_legacy_key_or_tampered_row_fails_authentication() -> None:
    row = StockEncrypted.from_pycryptodome_aes(key=LEGACY_TEXT.encode()).dumps_typed({"a": 1})
    with pytest.raises(DecryptionError, match="^authentication failed under key id "):
        _ours("fedcba9876543210").loads_typed(row)
    ours = _ours(LEGACY_TEXT)
    for i in range(len(row[1]) * 8):
        bad = bytearray(row[1])
        bad[i // 8] ^= 1 << (i % 8)
        with pytest.raises(DecryptionError):
            ours.decrypt_row((row[0], bytes(bad)))


def test_truncated_stock_row_is_malformed() -> None:
    ours = _ours(LEGACY_TEXT)
    with pytest.raises(MalformedDataError, match="shorter"):
        ours.loads_typed(("msgpack+aes", bytes(31)))
    assert classify_row("msgpack+aes", None).kind == "empty"  # a NULL blob: no serde output


def test_stock_reader_cannot_be_fooled_into_reading_ours_as_plaintext() -> None:
    # Our rows keep exactly one '+', so the stock reader routes them to its cipher
    # (which refuses the unknown cipher name) instead of treating them as plaintext.
    row = _ours(None).dumps_typed({"a": 1})
    assert row[0].count("+") == 1
    stock = StockEncrypted.from_pycryptodome_aes(key=LEGACY_TEXT.encode())
    with pytest.raises(AssertionError, match="Unsupported cipher"):
        stock.loads_typed(row)
