"""The compiled reader on hostile bytes: every length, index and refcount path.

Each case is read by both paths (tests/native/conftest.py): the reader must end
where the pure path ends, with the same value or the same error class, and
leave no reference behind on any path it takes.
"""

from __future__ import annotations

import datetime
import decimal
import gc
import sys
import uuid
import zoneinfo

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from serde_kit import LimitExceededError, MalformedDataError, native

from .conftest import assert_same_outcome, make_pair

# Headers that promise more than the row holds, for every sized kind.
OVERSIZED = {
    "str8": b"\xd9\xff" + b"a" * 3,
    "str16": b"\xda\xff\xff" + b"a" * 3,
    "str32": b"\xdb\xff\xff\xff\xff" + b"a" * 3,
    "bin8": b"\xc4\xff\x00",
    "bin16": b"\xc5\xff\xff\x00",
    "bin32": b"\xc6\xff\xff\xff\xff\x00",
    "array16": b"\xdc\xff\xff\x01",
    "array32": b"\xdd\xff\xff\xff\xff\x01",
    "map16": b"\xde\xff\xff\xa1a\x01",
    "map32": b"\xdf\xff\xff\xff\xff\xa1a\x01",
    "ext8": b"\xc7\xff\x00\x93",
    "ext16": b"\xc8\xff\xff\x00\x93",
    "ext32": b"\xc9\xff\xff\xff\xff\x00\x93",
    "fixext16": b"\xd8\x00\x93",
    "envelope16": b"\xc7\x05\x00\xdc\xff\xff\xa1a",
    "envelope32": b"\xc7\x07\x00\xdd\xff\xff\xff\xff\xa1",
    "module32": b"\xc7\x08\x00\x93\xdb\xff\xff\xff\xff\xa1",
    "name8": b"\xc7\x06\x00\x93\xa1a\xd9\xff\xa1",
    "float32": b"\xca\x00\x00",
    "float64": b"\xcb\x00\x00\x00\x00",
    "uint64": b"\xcf\x00\x00\x00",
    "int64": b"\xd3\x00",
    "never_used": b"\xc1",
    "empty": b"",
    "trailing": b"\x01\x02",
    "bad_utf8": b"\xa2\xc3\x28",
    "surrogate_utf8": b"\xa3\xed\xa0\x80",
    "map_key_map": b"\x81\x80\x01",
    "timestamp": b"\xd6\xff\x00\x00\x00\x00",
}


@pytest.mark.parametrize("name", sorted(OVERSIZED))
def test_headers_promising_more_than_the_row_holds(name):
    fast, pure = make_pair()
    assert_same_outcome(fast, pure, ("msgpack", OVERSIZED[name]), name)


def _sample_rows() -> list[bytes]:
    fast, _ = make_pair()
    values = [
        {"a": [1, 2.5, "x" * 40, b"\x00\xff", None, True, False, -1, 2**64 - 1, -(2**63)]},
        (1, (2, 3), [4]),
        {1: "int key", 2.5: "float key", None: "nil", b"k": "bin", True: "bool"},
        [datetime.date(2024, 2, 29), datetime.timedelta(days=1, seconds=2, microseconds=3)],
        datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
        uuid.UUID(int=12345),
        {frozenset({1, 2}), (3, 4)},
        # the kinds built in C from a checked shape: messages, ISO texts, Decimal, sets, zones, arrays
        [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c"}],
                                                usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})],
        [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), decimal.Decimal("-1.50"), {"a", "b"}, zoneinfo.ZoneInfo("UTC")],
    ]
    rows = [fast.dumps(value) for value in values]
    try:
        import numpy
    except ImportError:  # numpy is optional
        return rows
    else:
        rows.append(fast.dumps([numpy.arange(6, dtype=numpy.int16).reshape(2, 3)]))
    return rows


def test_every_cut_of_typed_rows_ends_alike():
    fast, pure = make_pair()
    for row in _sample_rows():
        for cut in range(len(row) + 1):
            assert_same_outcome(fast, pure, ("msgpack", row[:cut]), f"{row!r:.60}[:{cut}]")


def test_every_byte_of_typed_rows_changed_ends_alike():
    fast, pure = make_pair()
    for row in _sample_rows():
        for at in range(len(row)):
            for byte in (0x00, 0x03, 0x7F, 0x80, 0x93, 0xA0, 0xC0, 0xC1, 0xC7, 0xCA, 0xD4, 0xDB, 0xDD, 0xDF, 0xFF):
                changed = row[:at] + bytes([byte]) + row[at + 1 :]
                assert_same_outcome(fast, pure, ("msgpack", changed), f"{row!r:.60}[{at}]={byte:#x}")


@pytest.mark.parametrize("depth", [10, 400, 900, 1100, 3000, 20000])
def test_deep_nesting_ends_alike(depth):
    fast, pure = make_pair()
    for opener in (b"\x91", b"\x81\xa1k"):
        row = opener * depth + b"\x01"
        assert_same_outcome(fast, pure, ("msgpack", row), f"{opener!r} x {depth}")


@pytest.mark.parametrize("depth", [5, 63, 64, 65, 200])
def test_nested_typed_values_end_alike(depth):
    fast, pure = make_pair()
    value: object = 1
    for _ in range(depth):
        value = (value,)
    try:
        row = pure.dumps(value)
    except Exception:
        row = b""
        for _ in range(depth):  # the writer refuses: the envelopes by hand
            pass
    assert_same_outcome(fast, pure, ("msgpack", row), f"tuple x {depth}")


def test_ext_nesting_beyond_the_limit_is_refused_by_name():
    fast, pure = make_pair()
    inner = ormsgpack.packb(1)
    for _ in range(70):
        payload = ormsgpack.packb(["builtins", "tuple", ormsgpack.Ext(0, inner)])
        inner = payload
    row = ormsgpack.packb(ormsgpack.Ext(0, inner))
    for serializer in (fast, pure):
        with pytest.raises((LimitExceededError, MalformedDataError)) as info:
            serializer.loads(row)
    assert_same_outcome(fast, pure, ("msgpack", row), "70 envelopes")
    assert "max_ext_depth" in str(info.value) or "nest" in str(info.value)


def test_returned_objects_hold_no_extra_reference():
    fast, _ = make_pair()
    row = fast.dumps({"list": [1, 2], "tuple": (3, "x"), "when": datetime.date(2024, 1, 1), "id": uuid.UUID(int=7)})
    for _ in range(3):  # cold, then through the table
        value = fast.loads(row)
        assert sys.getrefcount(value) == 2  # the name and the call's argument
        for item in value.values():
            assert sys.getrefcount(item) == 3  # the dict, the loop variable, the argument


def _refcounts(objects: list[object]) -> list[int]:
    return [sys.getrefcount(o) for o in objects]


def test_no_reference_is_leaked_on_any_path():
    """Singletons (None, True, False) and the objects the table holds keep their counts
    over many reads that succeed, fall back or fail at every point of a row."""
    fast, _ = make_pair()
    rows = _sample_rows() + [fast.dumps([None, True, False, {None: None}])]
    cases = []
    for row in rows:
        cases.append(row)
        cases.extend(row[:cut] for cut in range(len(row)))
        cases.extend(row[:at] + b"\xc1" + row[at + 1 :] for at in range(len(row)))
    cases.extend(OVERSIZED.values())

    def read_all() -> None:
        for case in cases:
            try:
                fast.loads(case)
            except Exception:
                pass

    watched = [None, True, False, fast._decoder.engine]
    counts = []
    for _ in range(3):  # the first round fills the table and the caches
        for _ in range(10):
            read_all()
        gc.collect()
        counts.append(_refcounts([*watched, *fast._decoder._hot.values()]))
    assert counts[1] == counts[2]


def test_the_table_is_bounded_and_never_holds_a_refused_type():
    from serde_kit import Allowlist, BlockedTypeError, Serializer

    fast, pure = make_pair(allowlist=Allowlist(defaults=False), lenient=False)
    row = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(["uuid", "UUID", "0" * 32])))
    for serializer in (fast, pure):
        with pytest.raises(BlockedTypeError):
            serializer.loads(row)
    assert fast._decoder.engine.entries == 0
    with_tuples, _ = make_pair()
    module = native._reader
    assert module is not None
    for i in range(module.MAX_ENTRIES + 50):  # distinct heads of one allowed type: str8 names
        head = b"\x93\xa8builtins\xd9\x05tuple" + bytes([0xA0 + i % 20]) + b"a" * (i % 20)
        try:
            with_tuples.loads(ormsgpack.packb(ormsgpack.Ext(0, head[: 1] + head[1:])))
        except Exception:
            pass
    assert with_tuples._decoder.engine.entries <= module.MAX_ENTRIES


def test_reader_refuses_entries_that_do_not_fit():
    fast, _ = make_pair()
    reader = fast._decoder.engine
    module = native._reader
    with pytest.raises(ValueError):
        reader.register(9, b"x", 3, None, "m", "n", module.KIND_CALL, len, None, None)
    with pytest.raises(ValueError):
        reader.register(0, b"x", 4, None, "m", "n", module.KIND_TUPLE, None, None, None)
    with pytest.raises(TypeError):
        module.Reader(None, "not a tuple", None, print, Exception, 2000)


def test_high_recursion_limits_go_to_the_pure_path():
    fast, pure = make_pair()
    row = b"\x91" * 3000 + b"\x01"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        assert_same_outcome(fast, pure, ("msgpack", row), "deep row under a raised limit")
    finally:
        sys.setrecursionlimit(before)


def _big_map_of(values: list[object]) -> dict[str, object]:
    return {f"key-{i:05d}": value for i, value in enumerate(values)}


def test_rows_that_may_flood_count_typed_hashes_alike():
    """A row whose big map holds typed keys (UUIDs: the prescan cannot hash what the ext
    hook will build) is read by the hash-tracking reader: distinct typed values sharing one
    hash (UUIDs k * (2**61 - 1) + 7 all do) are refused by name on both paths, and honest
    ones read the same."""
    from serde_kit import _prescan
    from tests.support import budget_attacks

    fast, pure = make_pair()
    row = budget_attacks.small_flood_uuid_keys(200)
    assert len(row) > fast._decoder.small_row
    with pytest.raises(LimitExceededError, match="max_hash_collisions"):
        pure.loads(row)
    assert_same_outcome(fast, pure, ("msgpack", row), "colliding UUID keys")
    keys = [budget_attacks.pack(budget_attacks.ext(0, ["uuid", "UUID", uuid.UUID(int=k).hex])) for k in range(200)]
    values = [pure.dumps((k, str(k))) for k in range(200)]  # typed values (tuples) too
    honest = b"\xde" + len(keys).to_bytes(2, "big") + b"".join(map(bytes.__add__, keys, values))
    assert pure.loads(honest) == {uuid.UUID(int=k): (k, str(k)) for k in range(200)}
    assert_same_outcome(fast, pure, ("msgpack", honest), "distinct UUID keys")
    # Both rows are read by the hash-tracking reader: the prescan found typed keys.
    assert _prescan.check(row, pure._decoder.limits) and _prescan.check(honest, pure._decoder.limits)


def test_rows_that_may_flood_with_user_types_read_alike():
    from tests.support.strategy_types import USER_TYPES

    fast, pure = make_pair(allow=USER_TYPES)
    from tests.support import strategy_types as T

    values = [T.Point(i, -i) if hasattr(T, "Point") else (i,) for i in range(400)]
    row = pure.dumps(_big_map_of(values))
    assert_same_outcome(fast, pure, ("msgpack", row), "dataclasses")


def test_text_with_a_non_ascii_byte_at_every_position_reads_alike():
    """The reader tests for ASCII eight bytes at a time: a non-ASCII or invalid byte
    anywhere in a word, or in the tail after the last whole word, is found."""
    fast, pure = make_pair()
    for n in range(0, 42):
        for at in range(n):
            for wide in ("é", "\u20ac", "\U0001f600"):
                text = "a" * at + wide + "b" * (n - at - 1)
                row = ormsgpack.packb({"k" * (n % 30 + 1): text, "v": [text], text: n})
                assert_same_outcome(fast, pure, ("msgpack", row), repr(text))
                assert fast.loads(row)["v"][0] == text
            raw = ormsgpack.packb("a" * n)
            broken = raw[: len(raw) - n + at] + b"\xff" + raw[len(raw) - n + at + 1 :]
            assert_same_outcome(fast, pure, ("msgpack", broken), f"invalid byte at {at} of {n}")
