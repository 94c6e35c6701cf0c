"""Regenerate tests/crypto/vectors/*.json.  Run by hand, never by the test suite.

The AES-GCM vectors are computed WITHOUT serde_kit: the header and AAD are built
here from the format description and sealed with pycryptodome directly, so the
tests compare serde_kit against an independent construction.  The legacy
vectors are rows written by LangGraph's own EncryptedSerializer (random nonce),
kept as they were written.

    .venv/bin/python tests/crypto/make_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path

from Crypto.Cipher import AES

HERE = Path(__file__).parent / "vectors"


def _header(key_id: str) -> bytes:
    raw = key_id.encode("ascii")
    return bytes([1, len(raw)]) + raw


def _aad(inner_tag: str, header: bytes) -> bytes:
    return b"serde_kit/aesgcm/v1\x00" + inner_tag.encode() + b"\x00" + header


def aesgcm_vectors() -> list[dict[str, str]]:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    msgpack_tag, msgpack_bytes = JsonPlusSerializer().dumps_typed({"answer": 42, "items": [1, 2]})
    cases = [
        ("empty plaintext, null tag", "k1", bytes(range(32)), bytes(12), "null", b""),
        ("short bytes", "k1", bytes(range(32)), bytes(range(12)), "bytes", b"hello"),
        (
            "msgpack from JsonPlusSerializer",
            "prod-2026.01",
            bytes.fromhex("a5" * 32),
            bytes.fromhex("000102030405060708090a0b"),
            msgpack_tag,
            msgpack_bytes,
        ),
        (
            "multi-block plaintext, 1-char key id",
            "a",
            bytes(range(100, 132)),
            bytes.fromhex("ffffffffffffffffffffffff"),
            "bytearray",
            bytes(range(200)),
        ),
        (
            "64-char key id",
            "K" * 32 + "_" * 16 + "-.09azAZ" * 2,
            bytes(31) + b"\x01",
            bytes.fromhex("cafebabefacedbaddecaf888"),
            "msgpack",
            b"\x91\x01",
        ),
    ]
    out = []
    for name, key_id, key, nonce, tag, plaintext in cases:
        header = _header(key_id)
        aad = _aad(tag, header)
        cipher = AES.new(key, AES.MODE_GCM, nonce=nonce, mac_len=16)
        cipher.update(aad)
        ct, mac = cipher.encrypt_and_digest(plaintext)
        out.append(
            {
                "name": name,
                "key_id": key_id,
                "key": key.hex(),
                "nonce": nonce.hex(),
                "inner_tag": tag,
                "plaintext": plaintext.hex(),
                "aad": aad.hex(),
                "stored_tag": f"{tag}+aesgcm",
                "blob": (header + nonce + ct + mac).hex(),
            }
        )
    return out


def legacy_vectors() -> list[dict[str, str]]:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    out = []
    for key_text in ("0123456789abcdef", "0123456789abcdef01234567", "A" * 32):
        stock = EncryptedSerializer.from_pycryptodome_aes(JsonPlusSerializer(), key=key_text.encode())
        value = {"legacy": key_text[:4], "n": len(key_text)}
        tag, blob = stock.dumps_typed(value)
        plain_tag, plain = JsonPlusSerializer().dumps_typed(value)
        out.append(
            {
                "name": f"stock EAX, {len(key_text)}-byte key",
                "langgraph_aes_key": key_text,
                "stored_tag": tag,
                "blob": blob.hex(),
                "inner_tag": plain_tag,
                "plaintext": plain.hex(),
            }
        )
    return out


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, data in (("aesgcm_v1.json", aesgcm_vectors()), ("legacy_eax.json", legacy_vectors())):
        (HERE / name).write_text(json.dumps(data, indent=2) + "\n")
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
