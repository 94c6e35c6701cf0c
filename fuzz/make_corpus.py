"""Write the seed corpora under fuzz/corpus/<harness>/ (rerun on purpose, then commit).

fuzz_decode    golden rows from tests/golden/data (written by the real
               JsonPlusSerializer) plus serde_kit's own dumps of sample values
fuzz_encrypted valid encrypted rows: ours under k1 and k2, LangGraph's own
               ``+aes`` rows, plaintext rows
fuzz_resources the attack rows of the decode budget's regression tests
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
    from langchain_core.messages import AIMessage, HumanMessage

    from tests.support import strategy_types as T

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
    from tests.support import strategy_types as T

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


def resource_seeds() -> list[bytes]:
    """The attack rows of tests/support/budget_attacks.py, sized to fit libFuzzer's inputs."""
    from tests.support import budget_attacks as A

    rows = [
        ("msgpack", A.fraction_exponent()), ("msgpack", A.fraction_kwargs()), ("json", A.fraction_json()),
        ("msgpack", A.fraction_gcd(hex_digits=1000)), ("msgpack", A.chunk_ext5(2000)),
        ("msgpack", A.chunk_ext2(2000)), ("json", A.chunk_lc1(2000)), ("msgpack", A.numpy_long_shape(300)),
        ("msgpack", A.numpy_huge_shape(3)), ("msgpack", A.numpy_void()), ("msgpack", A.numpy_zero_itemsize()),
        ("msgpack", A.regex_classes(1000)), ("msgpack", A.regex_debug()), ("msgpack", A.flood_map(100)),
        ("msgpack", A.flood_frozenset(100)), ("msgpack", A.flood_big_ints(60)), ("msgpack", A.exts_at_depth(6, 500)),
        ("msgpack", A.deep_in_every_level(3, 300)), ("msgpack", A.empty_maps(3000)), ("msgpack", A.forged_names(200)),
    ]  # fmt: skip
    return [_common.join_tagged(tag, data) for tag, data in rows]


def roundtrip_seeds() -> list[bytes]:
    rng = random.Random(20240601)
    return [rng.randbytes(rng.randrange(8, 400)) for _ in range(32)]


def decode_dictionary() -> list[bytes]:
    """libFuzzer dictionary for the decoders: msgpack-encoded type names and ext headers."""
    import ormsgpack

    from tests.support import strategy_types as T

    names = {
        "builtins", "tuple", "set", "frozenset", "bytearray", "complex", "ValueError", "collections", "deque",
        "datetime", "date", "time", "timedelta", "timezone", "fromisoformat", "zoneinfo", "ZoneInfo", "UUID", "uuid",
        "decimal", "Decimal", "fractions", "Fraction", "ipaddress", "IPv4Address", "IPv6Network", "pathlib",
        "PosixPath", "PureWindowsPath", "re", "compile", "numpy", "float64", "<f8", ">i4", "|b1", "C", "F",
        "langgraph.types", "Send", "Interrupt", "Command", "langchain_core.messages.ai", "AIMessage",
        "langchain_core.messages.human", "HumanMessage", "model_validate_json", "from_args", "lc", "constructor",
        "kwargs", "id", "type", "os", "system", "subprocess", "Popen", "pickle", "loads",
    }  # fmt: skip
    names |= {t.__module__ for t in T.USER_TYPES} | {t.__qualname__ for t in T.USER_TYPES}
    tokens = [ormsgpack.packb(n) for n in sorted(names)]
    for code in range(9):  # 0-7 are ours and the stock's; 8 is unknown
        tokens += [bytes([0xD4, code]), bytes([0xD8, code]), bytes([0xC7, 0x10, code]), bytes([0xC8, 0x01, 0x00, code])]
    tokens += [b"\x92", b"\x93", b"\x94", b"\xdc\xff\xff", b"\xdd\x7f\xff\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xcf" + b"\xff" * 8]
    return tokens


def _write_dict(path, tokens: list[bytes]) -> int:
    lines = ['"' + "".join(f"\\x{b:02x}" for b in tok) + '"' for tok in tokens]
    path.write_text("# generated by fuzz/make_corpus.py\n" + "\n".join(lines) + "\n")
    return len(lines)


def main() -> None:
    print("fuzz_decode.dict", _write_dict(_common.REPO / "fuzz" / "fuzz_decode.dict", decode_dictionary()))
    for harness, make in (
        ("fuzz_decode", decode_seeds),
        ("fuzz_resources", resource_seeds),
        ("fuzz_encrypted", encrypted_seeds),
        ("fuzz_roundtrip", roundtrip_seeds),
    ):
        print(harness, _write(harness, make()))


if __name__ == "__main__":
    main()
