"""The compiled ``loads_typed`` (serde_kit._reader.LoadsTyped) against the Python method.

It reads the rows the method's small-row path reads without a Python frame, and must
end every row exactly as the method does on the same serializer: same value and type,
or the same error class and message (its errors go through the method's own except
clauses), and every other input goes to the method itself.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import pytest

from serde_kit import Limits, Serializer
from tests.support import budget_attacks as attack
from tests.support.strategy_types import USER_TYPES, Plain

from .conftest import assert_same_deep, assert_same_outcome, make_pair, python_calls


def _outcome(read, data):
    try:
        return ("value", read(data))
    except BaseException as exc:  # noqa: BLE001 - the class and words are what is compared
        return ("error", type(exc), str(exc))


def assert_same_as_method(ser: Serializer, data) -> None:
    """``ser.loads_typed`` (compiled) and ``ser._loads_typed`` (the method) end alike, and
    the pure path's serializer too."""
    expected = _outcome(ser._loads_typed, data)
    got = _outcome(ser.loads_typed, data)
    assert got[0] == expected[0], (got, expected)
    if got[0] == "value":
        assert_same_deep(expected[1], got[1])
    else:
        assert got[1:] == expected[1:]


def test_loads_typed_is_the_compiled_one_on_the_native_path_only():
    fast, pure = make_pair()
    assert type(fast.loads_typed).__name__ == "LoadsTyped"
    assert pure.loads_typed == pure._loads_typed


def test_a_small_row_read_in_c_runs_no_python_frame():
    fast, _ = make_pair(allow=USER_TYPES)
    for value in ({"counter": 1}, "text", ["node_a", {"route": "tools", "n": 3}], 7, [Plain(a=1)]):
        row = fast.dumps_typed(value)
        assert fast.loads_typed(row) == value  # cold: learns the heads
        assert python_calls(fast.loads_typed, row) == []


ROWS = {
    "plain": ("msgpack", attack.pack({"a": [1, 2.5, None, True, "x"]})),
    "malformed": ("msgpack", b"\xc1"),
    "truncated": ("msgpack", b"\x92\x01"),
    "trailing": ("msgpack", b"\x01\x02"),
    "bad_utf8": ("msgpack", b"\xa2\xc3\x28"),
    "empty": ("msgpack", b""),
    "timestamp": ("msgpack", b"\xd6\xff\x00\x00\x00\x00"),  # 0xff: the checked path
    "blocked": ("msgpack", attack.pack(attack.ext(0, ["os", "system", "id"]))),
    "blocked_nested": ("msgpack", attack.pack([1, attack.ext(0, ["subprocess", "Popen", ["id"]])])),
    "unknown_ext": ("msgpack", attack.pack(attack.ext(42, b"x"))),
    "deep": ("msgpack", b"\x91" * 1990 + b"\x01"),  # under tiny_row: read at once, too deep
    "null": ("null", b""),
    "bytes": ("bytes", b"abc"),
    "bytearray": ("bytearray", b"abc"),
    "json": ("json", b'{"a": 1}'),
    "pickle": ("pickle", b"\x80\x05K\x01."),
    "unknown_tag": ("nope", b"\x01"),
    "tag_not_str": (1, b"\x01"),
    "payload_str": ("msgpack", "\x01"),
    "payload_bytearray": ("msgpack", bytearray(b"\x01")),
    "payload_memoryview": ("msgpack", memoryview(b"\x92\x01\x02")),
    "list_pair": ["msgpack", b"\x01"],
    "triple": ("msgpack", b"\x01", b""),
    "single": ("msgpack",),
    "not_a_pair": None,
    "str_pair": "ab",
}


class Tag(str):
    pass


class Payload(bytes):
    pass


ROWS["tag_subclass"] = (Tag("msgpack"), b"\x01")
ROWS["payload_subclass"] = ("msgpack", Payload(b"\x01"))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_input_ends_as_the_python_method_ends_it(name):
    fast, _ = make_pair()
    assert_same_as_method(fast, ROWS[name])


def test_a_costly_small_row_is_read_again_with_a_meter():
    # A Fraction with big parts charges the meter: the small-row read raises NeedsMeter,
    # which the compiled loads_typed hands to the method's handler (loads_with_meter).
    fast, _ = make_pair()
    big = Fraction(3**400, 7**300)
    row = fast.dumps_typed(big)
    assert len(row[1]) < fast._small_row
    assert fast.loads_typed(row) == big
    assert_same_as_method(fast, row)
    tight, _ = make_pair(limits=Limits(min_work=1, max_work_per_byte=1))
    assert_same_as_method(tight, row)


def test_a_first_sight_class_charged_on_a_small_row_reads_once_allowed():
    fast, _ = make_pair(allow=USER_TYPES)
    row = fast.dumps_typed(Plain(a=1, b=[2]))
    assert fast.loads_typed(row) == Plain(a=1, b=[2])
    assert_same_as_method(fast, row)


def test_blocked_types_are_named_with_the_same_hint():
    fast, pure = make_pair()
    row = ROWS["blocked_nested"]
    got, expected = _outcome(fast.loads_typed, row), _outcome(pure.loads_typed, row)
    assert got[1].__name__ == "BlockedTypeError" and got == expected


def test_a_high_recursion_limit_sends_rows_past_tiny_row_to_the_method():
    fast, _ = make_pair()
    row = ("msgpack", b"\x91" * (fast._tiny_row + 10) + b"\x01")
    assert fast._tiny_row <= len(row[1]) < fast._small_row or fast._tiny_row == fast._small_row
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(before * 8)
    try:
        assert_same_as_method(fast, row)
    finally:
        sys.setrecursionlimit(before)


def test_keyword_and_wrong_arity_calls_go_to_the_method():
    fast, _ = make_pair()
    row = fast.dumps_typed([1, 2])
    assert fast.loads_typed(data=row) == [1, 2]
    with pytest.raises(TypeError):
        fast.loads_typed()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        fast.loads_typed(row, row)  # type: ignore[call-arg]


def test_serializers_are_collected_despite_their_cycle():
    import gc

    def alive() -> int:
        return sum(1 for obj in gc.get_objects() if type(obj).__name__ == "LoadsTyped")

    gc.collect()
    before = alive()
    for _ in range(5):
        fast, _ = make_pair()
        fast.loads_typed(fast.dumps_typed([1]))
    del fast
    gc.collect()
    assert alive() == before


def _numpy_rows() -> dict[str, tuple[str, bytes]]:
    """Rows of one numpy ext: plain layouts (one holding 0xff bytes: not the small-row
    path), other layouts, and broken ones."""
    import numpy as np

    writer = make_pair()[1]
    rows = {
        "plain_0xff": writer.dumps_typed(np.full(300, 255, dtype=np.uint8)),
        "plain_float": writer.dumps_typed(np.linspace(0.0, 1.0, 128)),
        "fortran": writer.dumps_typed(np.asfortranarray(np.arange(12.0).reshape(3, 4))),
        "empty": writer.dumps_typed(np.zeros((0, 3))),
        "fixext": ("msgpack", b"\xd4\x06\xff"),
        "ext8_short": ("msgpack", b"\xc7\x05\x06\x94\xa3<f8\x91"),
        "ext16_wrong_length": ("msgpack", b"\xc8\x00\x09\x06\x94\xa3<f8\x91\x01\xa1C\xc4\x08" + b"\xff" * 8),
        "ext32_bad_order": ("msgpack", attack.pack(attack.ext(6, ["<f8", [1], "Z", b"\xff" * 8]))),
        "too_many_elements": ("msgpack", attack.pack(attack.ext(6, ["<u1", [1 << 40], "C", b"\xff"]))),
    }
    return rows


@pytest.mark.parametrize("name", sorted(_numpy_rows()))
def test_numpy_rows_end_as_the_python_method_ends_them(name):
    row = _numpy_rows()[name]
    fast, pure = make_pair()
    for _ in range(2):  # before and after the reader enabled arrays
        assert_same_as_method(fast, row)
    assert_same_outcome(fast, pure, row)


def test_a_plain_numpy_row_holding_0xff_runs_no_python_frame():
    fast, _ = make_pair()
    row = _numpy_rows()["plain_0xff"]
    assert 255 in row[1] and len(row[1]) < fast._small_row
    fast.loads_typed(row)  # enables arrays
    assert python_calls(fast.loads_typed, row) == []
