"""Every fuzzing finding, replayed forever.

Saved inputs live in fuzz/regressions/<harness>/<finding-name> and go through
the same check the harness runs (fuzz/checks.py). Each finding also has a
minimal, readable test below.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.fuzz_scripts import fuzz_module

REPO = Path(__file__).resolve().parent.parent
checks = fuzz_module("checks")
_common = fuzz_module("_common")
from serde_kit import Serializer
from tests.support import strategy_types as T
from tests.support.compare import assert_same
from tests.support.strategies import OPEN_FINDINGS

SAVED = sorted((REPO / "fuzz" / "regressions").glob("*/*"))
_OPEN: dict[str, tuple[str, str]] = {}  # saved input name -> (open finding, reason)
_DOCUMENTED_LIMITS = {"nested-bytearray"}  # asserted by their own tests below


def _saved_param(path: Path) -> Any:
    finding, reason = _OPEN.get(path.name, (None, ""))
    marks = [pytest.mark.xfail(finding in OPEN_FINDINGS, reason=reason, strict=True)] if finding else []
    return pytest.param(path, marks=marks, id=f"{path.parent.name}/{path.name}")
SER = Serializer(allow=T.USER_TYPES)


@pytest.mark.parametrize("path", [_saved_param(p) for p in SAVED if p.name not in _DOCUMENTED_LIMITS])
def test_saved_fuzz_input(path: Path) -> None:
    checks.warm_up()  # as the harness does: imports are not charged to the input's RSS
    checks.CHECKS[path.parent.name](path.read_bytes())


# fuzz_roundtrip/bigint-dict-key: ints beyond 64 bits round-trip as values but
# raise EncodeError as dict keys (alone or inside a tuple key).
@pytest.mark.parametrize(
    "value",
    [{2**70: "a"}, {-(2**63) - 1: None}, {("k", 2**64): 1}, [{"x": {2**100: [1]}}]],
    ids=["key", "negative-key", "tuple-key", "nested"],
)
def test_big_int_dict_keys_round_trip(value: Any) -> None:
    assert_same(value, SER.loads_typed(SER.dumps_typed(value)))


# fuzz_roundtrip/nested-bytearray: a bytearray inside a container comes back as
# bytes with the same content. A documented limit (README): ormsgpack writes it
# natively as bin and has no option to hand it to serde_kit. Top level keeps it.
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([bytearray(b"x")], [b"x"]),
        ({"a": bytearray()}, {"a": b""}),
        ((bytearray(b"\x00"),), (b"\x00",)),
        (T.Plain(bytearray(b"ab")), T.Plain(b"ab")),
        (T.Box(value=bytearray(b"a")), T.Box(value=b"a")),
    ],
    ids=["list", "dict", "tuple", "dataclass", "pydantic-any"],
)
def test_nested_bytearray_comes_back_as_bytes(value: Any, expected: Any) -> None:
    assert_same(expected, SER.loads_typed(SER.dumps_typed(value)))
    top = bytearray(b"top")
    assert_same(top, SER.loads_typed(SER.dumps_typed(top)))


# fuzz_decode peak RSS grew to 714 MB in 1.8M runs: the decoder caches its
# verdict for every (ext code, module, name, method) it meets, including the
# refused ones, so stored data naming many distinct types grows the process
# without bound (200k distinct names: ~850 MB). Memory, not time, is asserted.
def test_decoding_many_distinct_blocked_names_does_not_grow_memory() -> None:
    import tracemalloc

    import ormsgpack

    from serde_kit import BlockedTypeError

    ser = Serializer()

    def blocked_row(i: int) -> tuple[str, bytes]:
        return "msgpack", ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb((f"mod{i}", "Name" + "x" * 64, 1))))

    for i in range(200):  # warm up whatever is legitimately cached once
        with pytest.raises(BlockedTypeError):
            ser.loads_typed(blocked_row(i))
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for i in range(200, 5_200):
            with pytest.raises(BlockedTypeError):
                ser.loads_typed(blocked_row(i))
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 1_000_000, f"{(after - before) / 1e6:.1f} MB retained after 5000 distinct blocked names"


# fuzz_roundtrip/np-complex64-nan-payload: numpy float32/complex64 scalars pass
# through a Python float, so a signalling NaN comes back quiet (one bit differs).
# NaN equals NaN for us (as for Python floats); dtype and NaN-ness must survive.
@pytest.mark.parametrize(
    "raw, dtype",
    [("0100a0ff", "<f4"), ("0100c0ffffffc0ff", "<c8"), ("007e", "<f2"), ("0100000000f0ff7f", "<f8")],
    ids=["float32-snan", "complex64-nan", "float16-nan", "float64-nan-payload"],
)
def test_numpy_nan_scalars_keep_dtype_and_nan(raw: str, dtype: str) -> None:
    import numpy as np

    value = np.frombuffer(bytes.fromhex(raw), dtype=dtype)[0]
    assert_same(value, SER.loads_typed(SER.dumps_typed(value)))


# fuzz_resources/array-key-holding-a-map (fuzz_resources, 2,074 bytes): a map
# with enough array keys for the prescan to check their hashes, one of which
# holds a map; hashing that tuple raised a bare TypeError before msgspec could
# refuse the row.
def test_array_key_holding_a_map_is_malformed() -> None:
    import struct

    from serde_kit import MalformedDataError

    count = 2000
    keys = b"".join(b"\x91\xcd" + struct.pack(">H", i) + b"\xc0" for i in range(count - 1))
    row = b"\xde" + struct.pack(">H", count) + keys + b"\x91\x80\xc0"  # last key: [{}]
    with pytest.raises(MalformedDataError, match="map keys must be hashable"):
        SER.loads_typed(("msgpack", row))


# fuzz_decode/trailing-check-compares-array (found by the damaged-rows property,
# a one-bit flip of [np.array([], bool)]): the row's outer array header becomes
# empty, so the numpy array lands where the trailing-bytes check expects its
# marker and `marker != token` raises numpy's bare ValueError.
def test_damaged_row_with_array_in_marker_slot_is_malformed() -> None:
    from serde_kit import MalformedDataError

    with pytest.raises(MalformedDataError):
        SER.loads_typed(("msgpack", bytes.fromhex("90c70b0694a37c62319100a143c400")))


# Same growth in lenient mode: the warn-once set remembers every distinct
# (module, name) it warned about (about 340 bytes each). The stock reader caps
# its equivalent sets at 1000 entries.
def test_lenient_decoding_of_many_distinct_blocked_names_does_not_grow_memory() -> None:
    import tracemalloc
    import warnings

    import ormsgpack

    from serde_kit import LenientDecodeWarning

    ser = Serializer(lenient=True)

    def blocked_row(i: int) -> tuple[str, bytes]:
        return "msgpack", ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb((f"mod{i}", "Name" + "x" * 64, 1))))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientDecodeWarning)
        for i in range(2_000):  # warm up; a bounded set may legitimately fill up here
            assert ser.loads_typed(blocked_row(i)) == 1
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            for i in range(2_000, 7_000):
                assert ser.loads_typed(blocked_row(i)) == 1
            after, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert after - before < 500_000, f"{(after - before) / 1e6:.1f} MB retained after 5000 distinct blocked names"


# fuzz_native/fallback-charges-the-row-twice (fuzz_native, 161 bytes, 444,491 executions
# into the first 10^6 campaign on the compiled reader): a lenient row whose Python hooks
# compiled a costly regex before the reader met bytes it hands back (here: truncation).
# The whole row then went to the pure path's engine on the same work meter, which charged
# the regex again: LimitExceededError where the pure path says MalformedDataError. Worse,
# a valid row is refused: two broad character classes (about 1.1M work units each of a
# small row's 3M) followed by a map with an array key (which the reader hands back) read
# on the pure path and were refused on the native one. The reader now marks the meter
# before its first call into Python and its fallback rewinds to the mark (and, for a row
# that may hold a big map, clears the typed values' hash counts) before re-reading.
_BROAD = "[\x00-\U00086fff]"  # two fit a small row's meter, four do not


def _broad_regex_rows() -> dict[str, bytes]:
    import re

    import ormsgpack

    broad = Serializer().dumps(re.compile(_BROAD))
    array_key_map = b"\x81\x91\x01\x01"  # {(1,): 1}
    keys = [ormsgpack.packb(f"k{i}") + b"\x00" for i in range(297)]
    pad = ormsgpack.packb("pad") + ormsgpack.packb("x" * 5000)
    entries = [*keys, pad, b"\xa1a" + broad, b"\xa1b" + broad, b"\x91\x01\x01"]
    return {
        "list": b"\x93" + broad + broad + array_key_map,
        # >= 6,000 bytes with a map of >= 256 entries: the hash-tracking reader reads it
        "big-map": b"\xde" + len(entries).to_bytes(2, "big") + b"".join(entries),
    }


@pytest.mark.parametrize("shape", ["list", "big-map"])
def test_the_native_fallback_charges_a_row_once(shape: str) -> None:
    from tests.native.conftest import assert_same_deep, make_pair

    from serde_kit import Limits, budget

    units = budget.regex_units(_BROAD, 32)  # re.UNICODE: the flags compile() gives a str pattern
    assert 2 * units < Limits().min_work < 4 * units
    fast, pure = make_pair()
    row = _broad_regex_rows()[shape]
    expected = pure.loads(row)
    for _ in ("cold", "warm"):  # before and after the reader learned the regex's head
        assert_same_deep(expected, fast.loads(row))


# The decode-like and native harnesses read a quarter of their inputs with
# checks.SMALL_LIMITS, so the compiled reader's decode_checked thresholds (its own
# counts of containers and typed values, the prescan's request to track hashes) are
# reachable in the campaigns' 4 KiB inputs; the seed writers' selector bytes keep the
# default limits.
def test_a_quarter_of_selector_bytes_read_with_small_limits() -> None:
    small = [b for b in range(256) if checks.uses_small_limits(bytes([b]))]
    assert len(small) == 60 and small[0] == 30
    assert not any(checks.uses_small_limits(bytes([b])) for b in (*range(10), *range(128, 138)))
    for selector in small:
        assert _common.split_tagged(bytes([selector]) + b"x")[0] == _common.TAGS[selector % 10]
        limits = checks.decoding_serializer(bytes([selector])).limits
        assert limits.max_containers == checks.SMALL_LIMITS["max_containers"]
        assert checks.decoding_serializer(bytes([selector])).lenient == (selector >= 128)


def test_small_limits_make_the_compiled_reader_retrack_a_row() -> None:
    from uuid import UUID

    from serde_kit import Limits, budget
    from serde_kit.decoder import SAFE_RECURSION_LIMIT
    from tests.native.conftest import python_calls, read_path, require_reader

    require_reader()
    # Ten maps of 16 int keys beside five 16-item arrays: the prescan cannot rule out a
    # flood of array keys and walks the row (it asks for tracking); six UUIDs are more
    # hashable typed values than SMALL_LIMITS' 4, so the reader asks the prescan itself
    # even when it builds them all in C.
    value = [{j * 100 + i: i for i in range(16)} for j in range(10)] + [list(range(16))] * 5
    value += [UUID(int=i) for i in range(6)]
    row = SER.dumps(value)
    assert checks.decoding_serializer(bytes([30]) + row).limits == Limits(**checks.SMALL_LIMITS)
    # Serializers of its own, on the compiled reader (the harness's are shared with every test).
    with read_path("native"):
        small = Serializer(allow=T.USER_TYPES, limits=Limits(**checks.SMALL_LIMITS))
        default = Serializer(allow=T.USER_TYPES)
    for serializer in (small, default):
        assert serializer.loads_typed(("msgpack", row)) == value  # the reader learns the UUID head
    # What sends a row to decode_checked: the reader, no meter open, a recursion limit it reads under.
    assert small._decoder._checked_reader is not None
    assert budget.current() is None and sys.getrecursionlimit() <= SAFE_RECURSION_LIMIT, sys.getrecursionlimit()
    calls = python_calls(small.loads_typed, ("msgpack", row))
    assert "prescan" in calls and "tracked_decode" in calls, calls  # decode_checked's Retrack


# fuzz_cost/truncated-float-key-in-the-walk (a 201-byte row, found 49,232 executions into a
# fuzz_cost run on main's float-key prescan, cf6645f): a row of stray map16 headers the
# prescan walks, ending in a float64 key cut after one byte; the walk unpacked the float
# without checking the bytes left and a bare struct.error escaped both read paths.
@pytest.mark.parametrize("path", ["native", "python"])
def test_a_float_key_cut_short_in_the_prescan_walk_is_malformed(path: str) -> None:
    from serde_kit import native
    from serde_kit.errors import MalformedDataError

    data = (REPO / "fuzz" / "regressions" / "fuzz_cost" / "truncated-float-key-in-the-walk").read_bytes()
    if path == "native" and not native.AVAILABLE:
        pytest.skip("serde_kit._reader is not built")
    before = native.ACTIVE
    native.ACTIVE = path
    try:
        serializer = Serializer()
    finally:
        native.ACTIVE = before
    with pytest.raises(MalformedDataError, match="truncated"):
        serializer.loads_typed(_common.split_tagged(data))


# fuzz_cost/partial-json-at-the-floor (a 712-byte legacy json row, found 249,036 executions
# into a fuzz_cost run on the compiled reader, 7abd9bf): one AIMessageChunk whose tool-call
# argument is 540 characters of incomplete JSON, charged 4.7 M units under the old 5 M
# min_work, took 5.7 ms on a machine at load 4: over the harness's 5 ms floor. The floor is
# 3 M now, so the argument is refused before langchain-core parses it.
def test_one_incomplete_argument_near_the_meters_floor_is_refused_before_it_is_parsed(monkeypatch: Any) -> None:
    from langchain_core.messages import ai

    from serde_kit import Limits, budget
    from serde_kit.errors import LimitExceededError

    parses: list[Any] = []
    real_parse = ai.parse_partial_json
    monkeypatch.setattr(ai, "parse_partial_json", lambda *a, **k: parses.append(a) or real_parse(*a, **k))
    data = (REPO / "fuzz" / "regressions" / "fuzz_cost" / "partial-json-at-the-floor").read_bytes()
    tag, payload = _common.split_tagged(data)
    assert tag == "json" and len(payload) == 711
    work = budget.partial_json_units(540)
    assert Limits().min_work < work < 5_000_000 and Limits().max_work_per_byte * len(payload) < work
    with pytest.raises(LimitExceededError, match="tool-call arguments") as info:
        Serializer().loads_typed((tag, payload))
    assert info.value.limit == "max_work_per_byte" and parses == []
    # The same message with an argument of 300 characters fits the floor and reads back.
    back = Serializer().loads_typed((tag, payload.replace(b" " * 240, b"", 1)))
    assert len(back.tool_call_chunks[0]["args"]) == 300 and len(parses) == 1


# fuzz_native/equal-int-keys-counted-as-colliding (a 977-byte row read with the small
# limits, max_hash_collisions=4; found 911,749 executions into a fuzz_native run at
# 75f70f2): maps of int keys, the first holding key 0 five times, beside six UUIDs. The
# prescan's walk counted the five equal keys as five keys sharing a hash and refused the
# row; the compiled reader, once it builds UUIDs in C, needs no prescan for it and read it.
# Equal keys are one key of the map now, and int keys alone are cheap on every prescan path.
def test_equal_int_keys_are_one_key_on_both_read_paths() -> None:
    from serde_kit import Limits
    from tests.native.conftest import assert_same_outcome, make_pair

    fast, pure = make_pair(allow=T.USER_TYPES, limits=Limits(**checks.SMALL_LIMITS))
    data = (REPO / "fuzz" / "regressions" / "fuzz_native" / "equal-int-keys-counted-as-colliding").read_bytes()
    assert checks.uses_small_limits(data)
    row = _common.split_tagged(data)
    for _ in ("cold", "warm"):  # warm: the reader has learned the UUIDs' head and builds them in C
        assert_same_outcome(fast, pure, row)
    value = pure.loads_typed(row)
    assert value[0] == {**{i: i for i in range(10)}, 0: 2, 14: 14, 15: 15} and len(value) == 21


# fuzz_cost/zone-keys-searched-on-every-read (a 2,558-byte lenient row, found 701,925
# executions into a pure-path fuzz_cost run at 5f2aa6c): three ZoneInfo exts, two of keys
# no zone has, looked up four times a read (lenient mode reads parts again). ZoneInfo
# searched its paths and the tzdata package each time (nothing is cached for a key not
# found), ~1.1 ms a read; at load 3.6 the harness measured 21.4x its floor. A bigger row of
# such keys cost 2,300-7,000x an honest row (bench/attacks.py i19_r5_*). Each lookup of a
# key not loaded before is charged now: this row's four spend 1.6 M of its 3 M units.
def test_zone_keys_not_found_are_charged_to_the_rows_meter() -> None:
    import warnings

    from serde_kit import Limits, budget
    from serde_kit.errors import LimitExceededError, MalformedDataError
    from serde_kit.ext import stdlib

    data = (REPO / "fuzz" / "regressions" / "fuzz_cost" / "zone-keys-searched-on-every-read").read_bytes()
    tag, payload = _common.split_tagged(data)
    assert payload.count(b"\xa8zoneinfo\xa8ZoneInfo") == 3 and data[0] >= 128  # lenient
    charged = 4 * (budget.ZONE_LOOKUP_UNITS + budget.ZONE_MISSING_UNITS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(MalformedDataError, match="invalid msgpack"):  # as before: a bad string later on
            checks.decoding_serializer(data).loads_typed((tag, payload))
        tight = Serializer(allow=T.USER_TYPES, lenient=True, limits=Limits(min_work=charged - 1))
        with pytest.raises(LimitExceededError, match="time zones looked up by key"):
            tight.loads_typed((tag, payload))
    assert not any(key.startswith("Europl") for key in stdlib.KNOWN_ZONES)
