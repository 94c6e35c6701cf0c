"""Bad bytes of every kind end in a typed serde_kit error: never a crash, a hang or None."""

from __future__ import annotations

import threading

import ormsgpack
import pytest

from serde_kit import (
    BlockedTypeError,
    DecodeError,
    LimitExceededError,
    MalformedDataError,
    RebuildError,
    Serializer,
    UnknownTagError,
)
from serde_kit.encoder import MAX_EXT_DEPTH

SERDE = Serializer()


def ext(code, payload):
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(payload)))


def nested_ext_chain(levels: int, arrays_per_level: int = 0) -> bytes:
    data = ormsgpack.packb(1)
    for _ in range(levels):
        inner = b"\x91" * arrays_per_level + data
        envelope = b"\x93" + ormsgpack.packb("builtins") + ormsgpack.packb("tuple") + b"\x91" + inner
        data = ormsgpack.packb(ormsgpack.Ext(0, envelope))
    return data


@pytest.mark.parametrize(
    "data",
    [b"", b"\x92\x01", b"\xc1", b"\xdd\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff\x00", b"\xa5ab"],
    ids=["empty", "short-array", "reserved", "huge-array-len", "huge-bin-len", "short-str"],
)
def test_truncated_and_garbled_bytes(data):
    with pytest.raises(MalformedDataError):
        SERDE.loads_typed(("msgpack", data))


def test_trailing_bytes_are_refused():
    good = SERDE.dumps({"a": 1})
    with pytest.raises(MalformedDataError, match="trailing"):
        SERDE.loads(good + b"\xc0")
    top_ext = SERDE.dumps((1, 2))
    with pytest.raises(MalformedDataError, match="trailing"):
        SERDE.loads(top_ext + b"\x01")


def test_unknown_tag_and_ext_code():
    with pytest.raises(UnknownTagError, match="unknown type tag"):
        SERDE.loads_typed(("yaml", b""))
    with pytest.raises(UnknownTagError, match="ext code 42"):
        SERDE.loads(ormsgpack.packb(ormsgpack.Ext(42, b"\x01")))
    with pytest.raises(UnknownTagError, match="EncryptedSerializer"):
        SERDE.loads_typed(("msgpack+aesgcm", b""))


@pytest.mark.parametrize(
    "payload",
    [[], ["builtins"], [1, "tuple", []], ["builtins", "tuple", [], "extra"], "string", ["datetime", "datetime", "x"]],
)
def test_malformed_envelopes(payload):
    code = 3 if payload == ["datetime", "datetime", "x"] else 0
    with pytest.raises(MalformedDataError):
        SERDE.loads(ext(code, payload))


def test_invalid_ext_payload_bytes():
    with pytest.raises(MalformedDataError, match="invalid msgpack"):
        SERDE.loads(ormsgpack.packb(ormsgpack.Ext(0, b"\xc1")))


@pytest.mark.parametrize(
    "payload",
    [
        ["builtins", "tuple", 5],
        ["decimal", "Decimal", "not a number"],
        ["zoneinfo", "ZoneInfo", "No/Such_Zone"],
        ["uuid", "UUID", "xyz"],
        ["builtins", "frozenset", [{"a": 1}]],
    ],
)
def test_allowed_type_with_bad_payload_is_rebuild_error(payload):
    with pytest.raises(RebuildError):
        SERDE.loads(ext(0, payload))


def test_rebuild_error_for_out_of_range_dates():
    with pytest.raises(RebuildError, match="datetime.date"):
        SERDE.loads(ext(1, ["datetime", "date", [2024, 13, 40]]))


def test_blocked_callable_names():
    for payload in (["os", "system", "id"], ["builtins", "eval", "1"], ["subprocess", "Popen", ["id"]]):
        with pytest.raises(BlockedTypeError):
            SERDE.loads(ext(0, payload))


def test_nesting_bombs_end_in_typed_errors_even_in_small_thread_stacks():
    outcome = {}

    def run():
        for name, data in (
            ("deep", nested_ext_chain(MAX_EXT_DEPTH + 5)),
            # Containers in every ext level count together: 63 levels of 1000 arrays.
            ("wide", nested_ext_chain(MAX_EXT_DEPTH - 1, 1000)),
            ("arrays", b"\x91" * 5000 + b"\x01"),
        ):
            try:
                SERDE.loads(data)
            except DecodeError as exc:
                outcome[name] = exc
        outcome["honest"] = SERDE.loads(nested_ext_chain(MAX_EXT_DEPTH - 1, 5))

    previous = threading.stack_size(1 << 20)
    try:
        thread = threading.Thread(target=run)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    assert isinstance(outcome["deep"], LimitExceededError)
    assert outcome["deep"].limit == "max_ext_depth"
    assert isinstance(outcome["wide"], MalformedDataError)
    assert isinstance(outcome["arrays"], MalformedDataError)
    assert isinstance(outcome["honest"], tuple)


def test_errors_are_also_builtin_value_errors():
    with pytest.raises(ValueError):
        SERDE.loads(b"\xc1")
    with pytest.raises(TypeError):
        SERDE.dumps(object())


def test_non_bytes_payload_and_non_pair():
    with pytest.raises(MalformedDataError):
        SERDE.loads_typed(("msgpack", 12))
    with pytest.raises(MalformedDataError):
        SERDE.loads_typed("msgpack")
