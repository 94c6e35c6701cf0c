"""The rows the Python ``loads_typed`` checks in full, read by the compiled one.

A msgpack row that holds a 0xff byte (a timestamp's ext type, so the small-row path
does not take it) or is at least ``small_row`` long goes to ``Decoder.loads_checked``,
which, with no work meter open on the thread and a checked reader, runs the reader's
``decode_checked``. ``LoadsTyped`` now does that itself (no Python frame), and hands
rows in any other situation (an open meter, a raised recursion limit, no checked
reader, over ``max_row_bytes``) to the method. Every row must end as the method ends it
on the same serializer, and as the pure path ends it.
"""

from __future__ import annotations

import gc
import sys
from fractions import Fraction
from typing import Any

import pytest

from serde_kit import Limits, budget
from tests.support import budget_attacks as attack
from tests.support.strategy_types import USER_TYPES, Plain

from .conftest import assert_same_outcome, make_pair, python_calls


def _outcome(read: Any, data: Any) -> Any:
    try:
        return ("value", read(data))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def assert_ends_alike(fast: Any, pure: Any, row: tuple[str, bytes], label: str = "") -> None:
    """The compiled loads_typed, the Python method (same serializer) and the pure path agree."""
    got, method = _outcome(fast.loads_typed, row), _outcome(fast._loads_typed, row)
    assert got[0] == method[0], (label, got, method)
    if got[0] == "error":
        assert got[1:] == method[1:], label
    assert_same_outcome(fast, pure, row, label)


FF_ROWS = {
    "int with 0xff": {"counter": 511},
    "minus one": -1,
    "floats": [1.5e300, float("nan"), -0.0, 2.0**-1074, float.fromhex("0x1.fffffffffffffp+1")],
    "text and bytes": {"a": "x" * 40, "b": b"\xff\x00" * 4},
    "a typed value": [Plain(a=511, b=[-1])],
    "a tuple key": {(511, 1): "v"},
}


@pytest.mark.parametrize("name", sorted(FF_ROWS))
def test_rows_holding_0xff_end_as_the_method_ends_them_without_a_python_frame(name):
    fast, pure = make_pair(allow=USER_TYPES)
    row = fast.dumps_typed(FF_ROWS[name])
    assert 255 in row[1] and len(row[1]) < fast._small_row
    assert_ends_alike(fast, pure, row, name)
    if name != "a tuple key":  # (a tuple key is the pure path's to read: a map key the reader hands back)
        assert python_calls(fast.loads_typed, row) == []


def test_large_rows_are_read_without_a_python_frame():
    fast, pure = make_pair(allow=USER_TYPES)
    value = {"rows": [{"id": i, "name": f"n{i}", "tags": ["a", "b"]} for i in range(250)], "p": Plain(a=1)}
    row = fast.dumps_typed(value)
    assert len(row[1]) >= fast._small_row and 255 not in row[1]
    assert_ends_alike(fast, pure, row, "large")
    assert python_calls(fast.loads_typed, row) == []


HOSTILE = {
    "timestamp": b"\xd6\xff\x00\x00\x00\x00",
    "timestamp in a map": attack.pack({"a": 1}).replace(b"\x81", b"\x82", 1) + b"\xa1t\xd6\xff\x00\x00\x00\x00",
    "blocked with 0xff": attack.pack([511, attack.ext(0, ["os", "system", "id"])]),
    "malformed with 0xff": b"\x92\xcd\x01\xff\xc1",
    "truncated with 0xff": b"\x93\xcd\x01\xff",
    "trailing with 0xff": b"\xcd\x01\xff\x01",
    "unknown ext with 0xff": attack.pack([-1, attack.ext(42, b"x")]),
    "bad utf-8 with 0xff": b"\x92\xff\xa2\xc3\x28",
    "flood map": attack.flood_map(300),
    "big int charged": attack.pack([-1, attack.big_int(3000)]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_checked_rows_end_alike(name):
    fast, pure = make_pair(limits=Limits(max_hash_collisions=50))
    data = HOSTILE[name]
    assert_ends_alike(fast, pure, ("msgpack", data), name)


def test_a_costly_row_holding_0xff_is_read_again_with_a_meter():
    fast, pure = make_pair()
    row = fast.dumps_typed([-1, Fraction(3**400, 7**300)])
    assert 255 in row[1]
    assert_ends_alike(fast, pure, row, "fraction")
    tight, tight_pure = make_pair(limits=Limits(min_work=1, max_work_per_byte=16))
    assert_ends_alike(tight, tight_pure, row, "fraction, tight")


def test_the_container_limit_is_named_alike():
    fast, pure = make_pair(limits=Limits(max_containers=50))
    row = ("msgpack", b"\xdc\x00\x3c" + b"\x90" * 60)
    assert len(row[1]) >= fast._small_row
    assert_ends_alike(fast, pure, row, "61 containers")
    assert "max_containers" in _outcome(fast.loads_typed, row)[2]
    ok = ("msgpack", b"\xdc\x00\x31" + b"\x90" * 49)
    assert_ends_alike(fast, pure, ok, "50 containers")


def test_max_row_bytes_at_the_bound_and_one_past_it():
    value = [511] * 40
    size = len(make_pair()[0].dumps_typed(value)[1])
    for limit, ends in ((size, "value"), (size - 1, "error")):
        fast, pure = make_pair(limits=Limits(max_row_bytes=limit))
        row = fast.dumps_typed(value) if ends == "value" else ("msgpack", make_pair()[0].dumps(value))
        assert_ends_alike(fast, pure, row, str(limit))
        assert _outcome(fast.loads_typed, row)[0] == ends


def test_every_cut_and_every_byte_of_a_checked_row_end_alike():
    fast, pure = make_pair(allow=USER_TYPES)
    row = fast.dumps_typed({"n": 511, "f": 1.5e300, "p": Plain(a=-1, b=["x"]), "t": (1, 2)})[1]
    assert 255 in row
    for cut in range(len(row)):
        assert _outcome(fast.loads_typed, ("msgpack", row[:cut])) == _outcome(fast._loads_typed, ("msgpack", row[:cut]))
    for at in range(len(row)):
        for byte in range(256):
            changed = ("msgpack", row[:at] + bytes([byte]) + row[at + 1 :])
            got, want = _outcome(fast.loads_typed, changed), _outcome(fast._loads_typed, changed)
            assert got[0] == want[0] and (got[0] == "value" or got[1:] == want[1:]), (at, byte, got, want)
    for sample in (0, len(row) // 2, len(row) - 1):
        for byte in (0x00, 0xC1, 0xFF, 0xDF):
            changed = ("msgpack", row[:sample] + bytes([byte]) + row[sample + 1 :])
            assert_same_outcome(fast, pure, changed, f"{sample}={byte:#x}")


def test_an_open_meter_sends_the_row_to_the_method():
    fast, pure = make_pair()
    row = fast.dumps_typed({"counter": 511})
    with budget.metered(1000, fast.limits):
        assert "_loads_typed" in python_calls(fast.loads_typed, row)
        assert_ends_alike(fast, pure, row, "inside a meter")
    assert python_calls(fast.loads_typed, row) == []


def test_without_a_checked_reader_rows_go_to_the_method():
    limits = Limits(max_work_per_byte=budget.WALK_UNITS_PER_BYTE - 1)
    fast, pure = make_pair(limits=limits)
    assert fast._decoder._checked_reader is None
    row = fast.dumps_typed({"counter": 511})
    assert "_loads_typed" in python_calls(fast.loads_typed, row)
    assert_ends_alike(fast, pure, row, "no checked reader")


def test_a_high_recursion_limit_sends_checked_rows_to_the_method():
    fast, pure = make_pair()
    row = ("msgpack", b"\x91" * 3000 + b"\xcd\x01\xff")
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(before * 8)
    try:
        assert "_loads_typed" in python_calls(fast.loads_typed, row)
        assert_ends_alike(fast, pure, row, "raised limit")
    finally:
        sys.setrecursionlimit(before)
    assert_ends_alike(fast, pure, row, "safe limit")


def test_errors_leak_no_reference_to_the_row():
    fast, _ = make_pair()
    rows = [data for data in HOSTILE.values() if data]
    for data in rows:
        _outcome(fast.loads_typed, ("msgpack", data))
    gc.collect()  # errors' tracebacks are cycles that hold the row for a while
    before = [sys.getrefcount(data) for data in rows]
    for _ in range(20):
        for data in rows:
            _outcome(fast.loads_typed, ("msgpack", data))
    gc.collect()
    assert [sys.getrefcount(data) for data in rows] == before


def test_a_thread_that_never_opened_a_meter_reads_none():
    import threading

    seen: list[Any] = []
    thread = threading.Thread(target=lambda: seen.append((budget.current(), budget.local_state().meter)))
    thread.start()
    thread.join()
    assert seen == [(None, None)]
