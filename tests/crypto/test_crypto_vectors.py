"""Known-answer vectors: fixed key + nonce give the committed blob, on both backends."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring, blob_key_id
from serde_kit.crypto.blob import build_header, make_aad
from serde_kit.crypto.rows import classify_row
from tests.support.crypto_helpers import load_vectors

AESGCM = load_vectors("aesgcm_v1.json")
IDS = [v["name"] for v in AESGCM]


class _RawBytes:
    """Inner serializer that returns a fixed (tag, bytes): lets a vector pin the plaintext."""

    def __init__(self, tag: str, data: bytes) -> None:
        self.row = (tag, data)

    def dumps_typed(self, obj: object) -> tuple[str, bytes]:
        return self.row

    def loads_typed(self, data: tuple[str, bytes]) -> tuple[str, bytes]:
        return data


def _serde(v: dict[str, str], backend: str) -> EncryptedSerializer:
    kr = Keyring({v["key_id"]: bytes.fromhex(v["key"])}, primary=v["key_id"])
    return EncryptedSerializer(
        _RawBytes(v["inner_tag"], bytes.fromhex(v["plaintext"])), kr, backend=backend
    )


def test_vector_file_covers_the_format_edges() -> None:
    ids = {len(v["key_id"]) for v in AESGCM}
    assert {1, 64} <= ids
    assert any(v["plaintext"] == "" for v in AESGCM)
    assert any(len(v["plaintext"]) // 2 > 32 for v in AESGCM)


@pytest.mark.parametrize("v", AESGCM, ids=IDS)
def test_aad_matches_the_documented_construction(v: dict[str, str]) -> None:
    assert make_aad(v["inner_tag"], build_header(v["key_id"])).hex() == v["aad"]


@pytest.mark.parametrize("v", AESGCM, ids=IDS)
def test_seal_with_pinned_nonce_gives_the_vector(v: dict[str, str], backend: str) -> None:
    serde = _serde(v, backend)
    tag, blob = serde._seal_row(
        v["inner_tag"], bytes.fromhex(v["plaintext"]), bytes.fromhex(v["nonce"])
    )
    assert tag == v["stored_tag"]
    assert blob.hex() == v["blob"]


@pytest.mark.parametrize("v", AESGCM, ids=IDS)
def test_vector_decrypts(v: dict[str, str], backend: str) -> None:
    serde = _serde(v, backend)
    row = (v["stored_tag"], bytes.fromhex(v["blob"]))
    assert serde.decrypt_row(row) == (v["inner_tag"], bytes.fromhex(v["plaintext"]))
    assert blob_key_id(row[1]) == v["key_id"]
    info = classify_row(*row)
    assert (info.kind, info.inner_tag, info.key_id) == ("aesgcm", v["inner_tag"], v["key_id"])


def test_msgpack_vector_loads_to_the_value() -> None:
    (v,) = [v for v in AESGCM if v["inner_tag"] == "msgpack" and v["key_id"] == "prod-2026.01"]
    kr = Keyring({v["key_id"]: bytes.fromhex(v["key"])}, primary=v["key_id"])
    serde = EncryptedSerializer(JsonPlusSerializer(), kr)
    assert serde.loads_typed((v["stored_tag"], bytes.fromhex(v["blob"]))) == {
        "answer": 42,
        "items": [1, 2],
    }


def test_public_path_uses_fresh_random_nonces(keyring: Keyring) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), keyring)
    blobs = {serde.dumps_typed("same value")[1] for _ in range(50)}
    assert len(blobs) == 50
    nonces = {b[4:16] for b in blobs}  # header of "k2" is 4 bytes
    assert len(nonces) == 50
