"""Write the seed corpora under fuzz/corpus/<harness>/ (rerun on purpose, then commit).

fuzz_decode    golden rows from tests/golden/data (written by the real
               JsonPlusSerializer) plus serde_kit's own dumps of sample values
fuzz_encrypted valid encrypted rows: ours under k1 and k2, LangGraph's own
               ``+aes`` rows, plaintext rows
fuzz_roundtrip pseudo-random inputs (fixed seed); the value builder needs no structure
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from datetime import datetime, timezone
from decimal import Decimal
from uuid import UUID

import _common
import numpy as np

CORPUS = _common.REPO / "fuzz" / "corpus"
GOLDEN = _common.REPO / "tests" / "golden" / "data"


def _samples() -> list:
    import strategy_types as T
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        None, b"raw", bytearray(b"ba"), 1, -(2**70), 1.5, "text", [1, (2, 3)], {(1, "a"): {2: "b"}},
        {1, 2}, frozenset({"a"}), Decimal("-1.50"), UUID(int=7), datetime(2024, 1, 2, 3, tzinfo=timezone.utc),
        T.Color.RED, T.Point(1, 2), T.Plain([1], {"x": 2}), T.Outer(id=1, inner=T.Inner(name="n"), x_extra=3),
        np.arange(6, dtype=">i4").reshape(2, 3), np.asfortranarray(np.ones((2, 2))), complex(1, 2),
        HumanMessage(content="hi", id="1"), AIMessage(content="", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}]),
        ValueError("boom", 3), {"channel_values": {"messages": [HumanMessage(content="x")]}, "v": 4},
    ]  # fmt: skip


def _write(harness: str, items: list[bytes]) -> int:
    d = CORPUS / harness
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for item in items:
        (d / hashlib.sha1(item).hexdigest()).write_bytes(item)
    return len(items)


def decode_seeds() -> list[bytes]:
    from serde_kit import Serializer

    import strategy_types as T

    items = []
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    for case in manifest["cases"].values():
        if case["tag"] in _common.TAGS:
            items.append(_common.join_tagged(case["tag"], (GOLDEN / case["file"]).read_bytes()))
    ser = Serializer(allow=T.USER_TYPES)
    for v in _samples():
        tag, data = ser.dumps_typed(v)
        items.append(_common.join_tagged(tag, data))
    return items


def encrypted_seeds() -> list[bytes]:
    import checks as F
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncrypted
    from serde_kit.crypto import EncryptedSerializer, Keyring

    serializers = F._serializers()
    inner = serializers["strict"]
    rings = [Keyring({"k1": F.K1}, primary="k1"), serializers["ring"]]
    stock = StockEncrypted.from_pycryptodome_aes(key=F.LEGACY_KEY)
    items = []
    for v in _samples()[:12]:
        for ring in rings:
            tag, blob = EncryptedSerializer(inner, ring).dumps_typed(v)
            items.append(_common.join_tagged(tag, blob, F.ENC_TAGS))
        try:
            tag, blob = stock.dumps_typed(v)
        except TypeError:  # e.g. ints beyond 64 bits: the stock writer has no encoding
            continue
        if tag in F.ENC_TAGS:
            items.append(_common.join_tagged(tag, blob, F.ENC_TAGS))
        tag, data = inner.dumps_typed(v)
        if tag in F.ENC_TAGS:
            items.append(bytes([F.ENC_TAGS.index(tag) + 128]) + data)  # plaintext, migration mode
    return items


def roundtrip_seeds() -> list[bytes]:
    rng = random.Random(20240601)
    return [rng.randbytes(rng.randrange(8, 400)) for _ in range(32)]


def main() -> None:
    for harness, make in (
        ("fuzz_decode", decode_seeds),
        ("fuzz_encrypted", encrypted_seeds),
        ("fuzz_roundtrip", roundtrip_seeds),
    ):
        print(harness, _write(harness, make()))


if __name__ == "__main__":
    main()
