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


def _builder_values() -> list:
    """Real values of every kind the compiled reader builds in C (datetime C API, ISO texts,
    UUID from hex, deque, pathlib paths, field names matched by pointer, message slots)."""
    import collections
    import pathlib
    from datetime import date, time, timedelta
    from zoneinfo import ZoneInfo

    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from tests.support import strategy_types as T

    offset = timezone(timedelta(hours=-5, minutes=-30))
    return [
        date(1, 1, 1), date(9999, 12, 31), timedelta(0), timedelta(days=-1, microseconds=1),
        timedelta(days=999999999, seconds=86399, microseconds=999999), time(23, 59, 59, 999999),
        datetime(2024, 2, 29, 23, 59, 59, 999999), datetime(2024, 1, 2, 3, 4, 5, tzinfo=offset),
        datetime(2024, 1, 2, tzinfo=ZoneInfo("Europe/Paris")), datetime(1, 1, 1, tzinfo=timezone.utc),
        UUID(int=0), UUID("12345678-1234-5678-1234-567812345678"), UUID(int=(1 << 128) - 1),
        collections.deque([1, "a", None]), collections.deque([], maxlen=0), collections.deque([1.5], maxlen=3),
        pathlib.PurePosixPath("/a/b/c.txt"), pathlib.PosixPath("rel/x"), pathlib.PureWindowsPath("C:\\x\\y"),
        pathlib.PurePosixPath(), T.Plain([1], {"x": 2}), T.FrozenPair(1, "one"), T.Point(3, 4),
        T.Row(1, "r", 0.5, ["t"], datetime(2024, 5, 6, 7, 8, 9)),
        T.Priority.HIGH, T.Mode.READ, T.Color.BLUE, Decimal("1e-7"), frozenset({1, 2}), {"a", "b"}, (1, (2, (3,))),
        HumanMessage(content="hi", id="h1", name="n"), SystemMessage(content=[{"type": "text", "text": "s"}, "x"]),
        AIMessage(content="", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}],
                  invalid_tool_calls=[{"name": "g", "args": "{", "id": "c2", "error": None}],
                  usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}),
        ToolMessage(content="ok", tool_call_id="c1", status="error"),
    ]  # fmt: skip


def builder_seeds() -> list[bytes]:
    """Rows of the compiled reader's C builders, written by serde_kit's writer and by
    LangGraph's (its datetimes are ISO texts: fromisoformat), as they reach each reader
    path: alone (LoadsTyped's small-row read), many of them (more hashable typed values
    than max_hash_collisions), padded past SMALL_ROW or holding a 0xff byte
    (decode_checked), and with the first byte picking checks.SMALL_LIMITS."""
    from datetime import date, timedelta

    import checks
    import ormsgpack
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from serde_kit import Serializer
    from tests.support import strategy_types as T

    ours = Serializer(allow=T.USER_TYPES)
    stock = JsonPlusSerializer()
    values = _builder_values()
    rows: list[bytes] = []
    for v in values:
        rows.append(ours.dumps(v))
        try:
            tag, data = stock.dumps_typed(v)
        except Exception:  # a value the stock writer cannot write
            continue
        if tag == "msgpack":
            rows.append(data)
    mixed = ours.dumps(values)
    rows += [
        mixed,
        ours.dumps([values, b"\xff"]),  # a 0xff byte: the checked path
        ours.dumps({"pad": "x" * 2100, "values": values}),  # past SMALL_ROW
        ours.dumps([UUID(int=i) for i in range(70)]),  # more hashable typed values than 64
        ours.dumps([datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=i) for i in range(8)]),
        ours.dumps([[[i]] for i in range(35)]),  # more than 64 containers
        ormsgpack.packb([{} for _ in range(70)]),
        # maps of more than 4 typed or array keys: at checks.SMALL_LIMITS the prescan
        # tells the reader to read the row again with hash tracking
        ours.dumps({date(2000, 1, i + 1): i for i in range(16)}),
        ours.dumps({(i, i): UUID(int=i) for i in range(16)}),
        ours.dumps({T.Point(i, i): frozenset({i}) for i in range(16)}),
        # int keys (the reader reads the row; tuple keys it hands to msgspec): the tracking
        # reader builds the typed values in C and counts their hashes itself (keyed or not)
        ours.dumps({i: UUID(int=i) for i in range(16)}),
        ours.dumps({i: date(2000, 1, i + 1) for i in range(16)}),
        ours.dumps({-i: T.Priority.HIGH if i % 2 else Decimal(i) for i in range(16)}),
        # big int-keyed maps beside 16-item arrays (the prescan walks the row and asks for
        # tracking) and more typed values than 4 (the reader asks the prescan itself)
        ours.dumps([{j * 100 + i: i for i in range(16)} for j in range(10)] + [list(range(16))] * 5
                   + [UUID(int=i) for i in range(6)]),
    ]
    small = [r for r in rows if len(r) < 4000]
    # Strict, at the default limits and at checks.SMALL_LIMITS (lenient is one mutated bit away).
    items = [_common.join_tagged("msgpack", r) for r in small] + [bytes([30]) + r for r in small]
    assert all(checks.uses_small_limits(i) == (i[0] == 30) for i in items)
    return items


def _add(harness: str, items: list[bytes]) -> int:
    """Add ``items`` to a harness's corpus, keeping what it holds (the merged campaign corpora)."""
    d = CORPUS / harness
    d.mkdir(parents=True, exist_ok=True)
    for item in items:
        (d / hashlib.sha1(item).hexdigest()).write_bytes(item)
    return len(items)


def _write_dict(path, tokens: list[bytes]) -> int:
    lines = ['"' + "".join(f"\\x{b:02x}" for b in tok) + '"' for tok in tokens]
    path.write_text("# generated by fuzz/make_corpus.py\n" + "\n".join(lines) + "\n")
    return len(lines)


def main() -> None:
    import sys

    if sys.argv[1:] == ["--builder-seeds"]:
        # Added to the corpora the native campaigns start from, without rewriting them.
        items = builder_seeds()
        # (fuzz_native starts from fuzz_decode's corpus too; its own holds what its campaigns kept)
        for harness in ("fuzz_decode", "fuzz_resources", "fuzz_cost"):
            print(harness, "+", _add(harness, items))
        return
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
