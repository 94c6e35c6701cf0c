"""msgspec (serde_kit's reader) and ormsgpack (the stock reader's engine) agree on stored bytes.

Every golden row written by the real JsonPlusSerializer and every msgpack
input of the fuzz corpora is decoded by both engines into plain structure
(exts as ``(code, structure)`` pairs, nothing rebuilt). They must give the
same structure, or both refuse. The known differences are deliberate and
each is checked here: ormsgpack ignores trailing bytes (serde_kit refuses
them), refuses typed map keys (msgspec builds them, and serde_kit bounds
their hashes), and hands msgpack timestamps to its hook (msgspec makes
datetimes of them, so serde_kit refuses them before decoding).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import ormsgpack
import pytest

from serde_kit import SerdeError, Serializer, UnknownTagError

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "data"
CORPUS = REPO / "fuzz" / "corpus"


class _Refused(Exception):
    pass


def _orm(data: bytes) -> object:
    def hook(code: int, payload: bytes) -> object:
        return ("ext", code, _orm(payload))

    try:
        return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError) as exc:
        raise _Refused(str(exc)) from None


def _msp(data: bytes) -> object:
    def hook(code: int, payload: memoryview) -> object:
        return ("ext", code, _msp(bytes(payload)))

    try:
        return msgspec.msgpack.Decoder(ext_hook=hook).decode(data)
    except (msgspec.DecodeError, TypeError, RecursionError, _Refused) as exc:
        raise _Refused(str(exc)) from None


def _outcome(decode, data: bytes) -> object:
    try:
        value = decode(data)
    except _Refused:
        return ("refused",)
    # Compared as re-encoded bytes: NaN equals itself there, and -0.0 differs from
    # 0.0. Structure too deep to re-encode is compared by its repr.
    try:
        return ("value", ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS))
    except TypeError:
        return ("value", repr(value))


def _rows() -> list[tuple[str, bytes]]:
    rows = []
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    for name, case in manifest["cases"].items():
        if case["tag"] == "msgpack":
            rows.append((f"golden/{name}", (GOLDEN / case["file"]).read_bytes()))
    for harness in ("fuzz_decode", "fuzz_resources"):
        for path in sorted((CORPUS / harness).iterdir()):
            raw = path.read_bytes()
            if raw and raw[0] % 10 == 0:  # the tag selector for "msgpack" (fuzz/_common.py)
                rows.append((f"{harness}/{path.name[:12]}", raw[1:]))
    return rows


ROWS = _rows()


def test_the_corpus_is_not_empty():
    assert len(ROWS) > 80


@pytest.mark.parametrize("name, data", ROWS, ids=[name for name, _ in ROWS])
def test_engines_agree(name, data):
    mine, theirs = _outcome(_msp, data), _outcome(_orm, data)
    if mine == theirs:
        return
    # The deliberate differences, each recognised precisely:
    if theirs[0] == "value" and mine == ("refused",):
        assert len(theirs[1]) < len(data) or _outcome(_msp, theirs[1])[0] == "value", (
            f"{name}: msgspec refused what ormsgpack read, and not for trailing bytes"
        )
        return
    assert mine[0] == "value" and theirs == ("refused",), f"{name}: engines disagree: {mine!r:.200} vs {theirs!r:.200}"
    # ormsgpack refused a typed map key or a timestamp: serde_kit reads the key
    # (hash-bounded) or refuses the timestamp, with its own error either way.
    try:
        Serializer().loads(data)
    except SerdeError:
        pass


def test_trailing_bytes_ext_keys_and_timestamps_are_the_known_differences():
    assert _outcome(_orm, b"\x01\x02") == ("value", b"\x01")
    assert _outcome(_msp, b"\x01\x02") == ("refused",)
    ext_key = b"\x81\xd4\x07\x01\x01"
    assert _outcome(_orm, ext_key) == ("refused",)
    assert _msp(ext_key) == {("ext", 7, 1): 1}
    timestamp = b"\xd6\xff\x00\x00\x00\x00"
    assert _orm(timestamp) == ("ext", -1, 0)  # its hook decides (the stock one returns None)
    with pytest.raises(UnknownTagError):
        Serializer().loads(timestamp)
