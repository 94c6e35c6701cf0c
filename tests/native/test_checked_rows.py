"""Rows the pure path prescans before decoding, read by the compiled reader's decode_checked.

The reader runs that prescan itself, once, only when the row needs it: before it
first calls Python or hands the row back, and when its own counts (containers,
hashable typed values) say the prescan could refuse the row or track its hashes.
Each hostile row below is built so that one of those triggers is the only thing
standing between it and a wrong answer; both paths must end alike (value and
type, or error class and the limit it names), read cold and warm.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from serde_kit import LimitExceededError, Limits, UnknownTagError
from serde_kit.budget import WALK_UNITS_PER_BYTE
from tests.support import budget_attacks as attack
from tests.support.strategy_types import USER_TYPES, Plain

from .conftest import assert_refcounts_settle, assert_same_outcome, make_pair, outcome, python_calls

PAD = "x" * 3000  # read in C first, and makes the row too big for the small-row path


def msgpack(data: bytes) -> tuple[str, bytes]:
    return ("msgpack", data)


def ext8(code: int, payload: bytes) -> bytes:
    assert len(payload) < 256
    return b"\xc7" + bytes([len(payload)]) + code.to_bytes(1, "big", signed=True) + payload


def ext32(code: int, payload: bytes) -> bytes:
    return b"\xc9" + len(payload).to_bytes(4, "big") + code.to_bytes(1, "big", signed=True) + payload


def array16(items: list[bytes]) -> bytes:
    return b"\xdc" + len(items).to_bytes(2, "big") + b"".join(items)


def uuid_ext(value: uuid.UUID) -> bytes:
    return attack.pack(attack.ext(0, ["uuid", "UUID", value.hex]))


def limit_of(read, row) -> str | None:
    try:
        read(row)
    except LimitExceededError as exc:
        return exc.limit
    return None


def assert_same_limit(fast, pure, row, expected: str | None) -> None:
    """Both paths end alike, and a refusal names ``expected`` on both (None: read)."""
    assert_same_outcome(fast, pure, row)
    assert limit_of(pure.loads_typed, row) == expected
    assert limit_of(fast.loads_typed, row) == expected


# --- the prescan runs only when a row needs it ---------------------------------------


def test_a_big_row_read_wholly_in_c_is_not_prescanned():
    fast, pure = make_pair(allow=USER_TYPES)
    value = [PAD, [Plain(a=i, b=(i, str(i))) for i in range(30)], {"k": uuid.UUID(int=5)}]
    row = fast.dumps_typed(value)
    assert len(row[1]) >= fast._decoder.small_row
    assert fast.loads_typed(row) == pure.loads_typed(row) == value  # cold: learns the heads
    assert "check" in python_calls(pure.loads_typed, row)
    warm = python_calls(fast.loads_typed, row)
    assert "check" not in warm and "prescan" not in warm, warm
    assert_same_outcome(fast, pure, row)


def test_a_row_that_calls_python_is_prescanned_once_before_the_call():
    fast, pure = make_pair(allow=USER_TYPES)
    row = fast.dumps_typed([PAD, uuid.UUID(int=1), uuid.UUID(int=2)])
    calls = python_calls(fast.loads_typed, row)  # cold: both exts go to the Python hook
    assert calls.count("prescan") == 1, calls
    assert calls.index("prescan") < calls.index("hook")
    # A hook that charges the meter first asks for one (NeedsMeter): the row is read
    # again with it, prescanned once per read, as the pure path does.
    row = fast.dumps_typed([PAD, Plain(a=1), Plain(a=2, b=[3])])
    assert python_calls(fast.loads_typed, row).count("prescan") == python_calls(pure.loads_typed, row).count("check")
    assert_same_outcome(fast, pure, row)


def test_a_small_row_without_0xff_is_never_prescanned():
    fast, _ = make_pair(allow=USER_TYPES)
    row = fast.dumps_typed([Plain(a=1)])
    assert len(row[1]) < fast._decoder.small_row
    calls = python_calls(fast.loads_typed, row)
    assert "prescan" not in calls and "check" not in calls, calls


# --- max_containers, counted in C for rows read there ----------------------------------

LIMIT = 60


def _containers_rows(layout: str, count: int) -> list[object]:
    """Values of exactly ``count`` containers (maps and arrays as the prescan counts them)."""
    if layout == "arrays":  # the outer list and count - 1 lists
        return [PAD, *[[i] for i in range(count - 1)]]
    if layout == "maps":
        return [PAD, *[{"k": i} for i in range(count - 1)]]
    if layout == "tuples":  # each: the envelope and its list
        assert (count - 1) % 2 == 0
        return [PAD, *[(i,) for i in range((count - 1) // 2)]]
    if layout == "numpy":  # each: its layout array and its shape
        assert (count - 1) % 2 == 0
        return [PAD, *[np.arange(i, i + 2) for i in range((count - 1) // 2)]]
    if layout == "dataclasses":  # each: the envelope and its map
        assert (count - 1) % 2 == 0
        return [PAD, *[Plain(a=i) for i in range((count - 1) // 2)]]
    raise AssertionError(layout)


@pytest.mark.parametrize("layout", ["arrays", "maps", "tuples", "numpy", "dataclasses"])
def test_max_containers_in_rows_read_in_c(layout):
    limits = Limits(max_containers=LIMIT + 1)
    fast, pure = make_pair(allow=USER_TYPES, limits=limits)
    writer = make_pair(allow=USER_TYPES)[1]  # a default writer: the limited one refuses the row
    within = writer.dumps_typed(_containers_rows(layout, LIMIT + 1))
    over = writer.dumps_typed(_containers_rows(layout, LIMIT + 3))
    assert_same_limit(fast, pure, within, None)  # learns every head: the next row is read in C
    assert_same_limit(fast, pure, over, "max_containers")
    # and in a reader that meets the row first (its exts go to the Python hook)
    fresh, _ = make_pair(allow=USER_TYPES, limits=limits)
    assert outcome(fresh.loads_typed, over) == outcome(pure.loads_typed, over)


def test_max_containers_counted_across_many_payloads_of_one_row():
    # Each payload holds few containers; the row holds too many. A check per payload
    # would pass every one.
    limits = Limits(max_containers=100)
    fast, pure = make_pair(allow=USER_TYPES, limits=limits)
    writer = make_pair(allow=USER_TYPES)[1]
    assert_same_limit(fast, pure, writer.dumps_typed([PAD, *[Plain(a=[[i]]) for i in range(24)]]), None)
    assert_same_limit(fast, pure, writer.dumps_typed([PAD, *[Plain(a=[[i]]) for i in range(26)]]), "max_containers")


def test_max_containers_after_a_hook_and_a_c_read_prefix():
    limits = Limits(max_containers=50)
    fast, pure = make_pair(allow=USER_TYPES, limits=limits)
    writer = make_pair(allow=USER_TYPES)[1]
    # A refused type's ext early (the hook raises BlockedTypeError after the prescan) or late:
    # the prescan's error comes first on both paths.
    for value in ([PAD, uuid.UUID(int=1), *[[i] for i in range(60)]], [PAD, *[[i] for i in range(60)], Plain(a=1)]):
        assert_same_limit(fast, pure, writer.dumps_typed(value), "max_containers")


# --- hash tracking: the prescan decides, the reader counts first --------------------------

COLLISIONS = 8
PRIME = (1 << 61) - 1


def _uuids_row(count: int, *, big_int_map: bool) -> bytes:
    """``count`` UUIDs sharing one hash; with a map16 of typed keys (UUIDs of other hashes)
    the prescan tracks the row."""
    uuids = array16([uuid_ext(uuid.UUID(int=k * PRIME + 7)) for k in range(1, count + 1)])
    entries = COLLISIONS + 1
    keys = [uuid_ext(uuid.UUID(int=1000 + k)) for k in range(entries)]
    big_map = b"\xde" + entries.to_bytes(2, "big") + b"".join(key + b"\x00" for key in keys)
    pad = attack.pack("y" * 70_000)
    return b"\x93" + (big_map if big_int_map else attack.pack({"k": 0})) + uuids + pad


@pytest.mark.parametrize("big_int_map", [True, False])
@pytest.mark.parametrize("extra", [0, 1])
def test_colliding_typed_values_built_in_c_are_refused_when_the_row_is_tracked(big_int_map, extra):
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    fast.loads_typed(msgpack(uuid_ext(uuid.UUID(int=1))))  # learn the head: UUIDs are built in C
    row = msgpack(_uuids_row(COLLISIONS + 1 + extra, big_int_map=big_int_map))
    refused = big_int_map and extra == 1  # COLLISIONS + 2 values: COLLISIONS + 1 collisions
    assert_same_limit(fast, pure, row, "max_hash_collisions" if refused else None)


# --- floods and timestamps in what the reader hands back ----------------------------------


def _tuple_envelope(items: bytes) -> bytes:
    return b"\x93" + attack.pack("builtins") + attack.pack("tuple") + items


@pytest.mark.parametrize("where", ["top", "tuple", "first_sight"])
def test_array_key_floods_in_handed_back_bytes_are_refused(where):
    fast, pure = make_pair()
    if where != "first_sight":
        fast.loads_typed(fast.dumps_typed((1,)))  # learn the tuple head
    flood = attack.flood_map(200)
    if where == "top":
        row = b"\x92" + attack.pack(PAD) + flood
    else:
        row = b"\x92" + attack.pack(PAD) + ext32(0, _tuple_envelope(b"\x91" + flood))
    assert_same_limit(fast, pure, msgpack(row), "max_hash_collisions")


@pytest.mark.parametrize("where", ["top", "tuple", "small"])
def test_timestamps_after_a_c_read_prefix_are_refused(where):
    fast, pure = make_pair()
    fast.loads_typed(fast.dumps_typed((1,)))
    stamp = b"\xd6\xff\x00\x00\x00\x00"
    if where == "top":
        row = b"\x93" + attack.pack(PAD) + attack.pack([1, 2]) + stamp
    elif where == "tuple":
        row = b"\x92" + attack.pack(PAD) + ext8(0, _tuple_envelope(b"\x92\x01" + stamp))
    else:  # too small for the prescan but for its timestamp search: 0xff sends it there
        row = b"\x92" + attack.pack("z" * 40) + stamp
    assert_same_outcome(fast, pure, msgpack(row))
    with pytest.raises(UnknownTagError):
        fast.loads_typed(msgpack(row))


# --- float keys: the reader builds them itself, the prescan hashes them -------------------


def _float_rows() -> dict[str, bytes]:
    floats = attack.colliding_floats(202)
    flood = attack.float_flood_map()
    maps = attack.many_float_flood_maps(1000, 64)
    return {
        "top": b"\x92" + attack.pack(PAD) + flood,
        "map32": b"\x92" + attack.pack(PAD) + attack.float_flood_map(202, 0xDF),
        # the float keys after a string key: the first float key runs the prescan
        "after-a-string-key": b"\x92" + attack.pack(PAD) + b"\xde\x00\xcb" + attack.pack("k") + b"\x00"
        + attack.float_key_entries(floats),
        "tuple": b"\x92" + attack.pack(PAD) + ext32(0, _tuple_envelope(b"\x91" + flood)),
        "two-tuples-deep": b"\x92" + attack.pack(PAD)
        + ext32(0, _tuple_envelope(b"\x91" + ext32(0, _tuple_envelope(b"\x91" + flood)))),
        "maps-of-64": maps,
        "maps-of-64-in-a-tuple": b"\x91" + ext32(0, _tuple_envelope(b"\x91" + maps)),
    }


_FLOAT_LIMITS = {"maps-of-64": "max_work_per_byte", "maps-of-64-in-a-tuple": "max_work_per_byte"}


@pytest.mark.parametrize("where", list(_float_rows()))
def test_float_key_floods_built_in_c_are_refused_as_on_the_pure_path(where):
    fast, pure = make_pair()
    fast.loads_typed(fast.dumps_typed((1,)))  # learn the tuple head: tuples are built in C
    row = msgpack(_float_rows()[where])
    assert_same_limit(fast, pure, row, _FLOAT_LIMITS.get(where, "max_hash_collisions"))
    # The reader ran the prescan (once per read, as the pure path: a charge asks for a
    # meter first, and the row is read again with one), which hashed the map's keys.
    calls = python_calls(lambda r: outcome(fast.loads_typed, r), row)
    checks = python_calls(lambda r: outcome(pure.loads_typed, r), row).count("check")
    assert calls.count("prescan") == checks >= 1 and "_collision_units" in calls, calls
    assert "hook" not in calls and "decode" not in calls and "tracked_decode" not in calls, calls


def test_a_checked_map_of_honest_float_keys_is_prescanned_once_then_read_in_c():
    fast, pure = make_pair()
    value = [PAD, {i / 7: i for i in range(CHECKED)}, {"k": 1.5}]
    row = fast.dumps_typed(value)
    assert fast.loads_typed(row) == pure.loads_typed(row) == value
    calls = python_calls(fast.loads_typed, row)
    assert calls.count("prescan") == 1 and "hook" not in calls, calls
    assert_same_outcome(fast, pure, row)


def test_fixmaps_of_float_keys_and_float_values_run_no_prescan():
    fast, pure = make_pair()
    floats = attack.colliding_floats(CHECKED - 1)
    value = [PAD, dict.fromkeys(floats, 0), {"k": floats}, {i: 0.5 for i in range(CHECKED)}]
    row = fast.dumps_typed(value)
    assert fast.loads_typed(row) == pure.loads_typed(row) == value
    calls = python_calls(fast.loads_typed, row)
    assert "prescan" not in calls and "check" not in calls, calls


@pytest.mark.parametrize("count", [COLLISIONS, COLLISIONS + 1])
@pytest.mark.parametrize("header", [0xDE, 0x80])
def test_a_lowered_max_hash_collisions_has_smaller_maps_of_float_keys_prescanned(count, header):
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    row = msgpack(b"\x92" + attack.pack(PAD) + attack.float_key_map(attack.colliding_floats(count), header))
    # The prescan checks map16/map32 headers of COLLISIONS + 1 entries (fixmaps only in its
    # walk); the reader runs it for any map that large: both end alike.
    refused = header == 0xDE and count > COLLISIONS
    assert_same_limit(fast, pure, row, "max_hash_collisions" if refused else None)
    calls = python_calls(lambda r: outcome(fast.loads_typed, r), row)
    assert calls.count("prescan") == (1 if count > COLLISIONS else 0), calls


CHECKED = 16  # serde_kit._prescan.CHECKED_ENTRIES, CHECKED_ENTRIES in _reader.c


def test_the_readers_checked_map_size_is_the_prescans():
    from serde_kit import _prescan

    assert _prescan.CHECKED_ENTRIES == CHECKED
    fast, _ = make_pair()
    for entries, prescanned in ((CHECKED - 1, False), (CHECKED, True)):
        value = [PAD, {i / 7: i for i in range(entries)}]
        row = fast.dumps_typed(value)
        assert ("prescan" in python_calls(fast.loads_typed, row)) == prescanned, entries


# --- the work meter: charged once per row -------------------------------------------------


def test_the_walk_is_charged_once_when_a_row_is_handed_back_after_a_hook():
    # max_work_per_byte equal to the walk's units: the walk spends the whole allowance,
    # so charging it twice (or anything more) would refuse the row.
    limits = Limits(max_containers=50, max_work_per_byte=WALK_UNITS_PER_BYTE, min_work=0)
    fast, pure = make_pair(limits=limits)
    headers = attack.pack(b"\x90" * 80)  # container header bytes the walk must rule out
    tuple_keyed = b"\x81\x92\x01\x02\x03"  # {(1, 2): 3}: an array key, read by msgspec
    for head in (uuid_ext(uuid.UUID(int=3)), attack.pack(1)):
        row = msgpack(b"\x93" + headers + head + tuple_keyed)
        assert_same_limit(fast, pure, row, None)
        assert fast.loads_typed(row)[2] == {(1, 2): 3}


def test_a_charged_hook_then_a_fallback_charges_the_row_once():
    # Resolving a class charges the meter; the row is then handed back (an array key).
    resolve = 200_000
    limits = Limits(max_work_per_byte=WALK_UNITS_PER_BYTE, min_work=resolve)
    tuple_keyed = b"\x81\x92\x01\x02\x03"
    writer = make_pair(allow=USER_TYPES)[1]
    head = writer.dumps(Plain(a=1))
    row = msgpack(b"\x93" + attack.pack("p" * 2500) + head + tuple_keyed)
    assert len(row[1]) * WALK_UNITS_PER_BYTE < resolve  # the allowance is min_work: one resolve
    fast, pure = make_pair(allow=USER_TYPES, limits=limits)
    assert_same_limit(fast, pure, row, None)


def test_rows_whose_walk_alone_could_spend_the_allowance_are_prescanned_first():
    limits = Limits(max_containers=50, max_work_per_byte=WALK_UNITS_PER_BYTE - 1, min_work=0)
    fast, pure = make_pair(limits=limits)
    assert fast._decoder._checked_reader is None
    row = msgpack(attack.pack([b"\x90" * 80, PAD]))
    assert_same_limit(fast, pure, row, "max_work_per_byte")
    good = make_pair()[0]
    assert good._decoder._checked_reader is not None


def test_the_reader_runs_the_prescan_before_handing_back_under_a_high_recursion_limit():
    import sys

    fast, pure = make_pair()
    row = b"\x92" + attack.pack(PAD) + b"\xd6\xff\x00\x00\x00\x00"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(before * 4)
    try:
        with pytest.raises(UnknownTagError):
            fast._decoder.engine.decode_checked(row)  # what the decoder would not ask for here
        assert outcome(fast.loads_typed, msgpack(row)) == outcome(pure.loads_typed, msgpack(row))
    finally:
        sys.setrecursionlimit(before)



def test_no_reference_is_leaked_on_any_checked_path():
    """Singletons, the reader and its loads_typed keep their counts over many reads of
    checked rows that succeed, are prescanned, re-read with tracking, handed back or refused."""

    limits = Limits(max_containers=LIMIT + 1, max_hash_collisions=COLLISIONS)
    fast, _ = make_pair(allow=USER_TYPES, limits=limits)
    writer = make_pair(allow=USER_TYPES)[1]
    stamp = b"\xd6\xff\x00\x00\x00\x00"
    rows = [
        writer.dumps_typed(_containers_rows(layout, LIMIT + extra))
        for layout in ("arrays", "tuples", "numpy", "dataclasses")
        for extra in (1, 3)
    ]
    rows += [msgpack(_uuids_row(COLLISIONS + extra, big_int_map=big)) for extra in (1, 2) for big in (True, False)]
    rows += [
        msgpack(b"\x92" + attack.pack(PAD) + attack.flood_map(200)),
        msgpack(b"\x92" + attack.pack(PAD) + ext32(0, _tuple_envelope(b"\x91" + attack.flood_map(200)))),
        msgpack(b"\x93" + attack.pack(PAD) + attack.pack([1, 2]) + stamp),
        msgpack(b"\x92" + attack.pack(PAD) + ext8(0, _tuple_envelope(b"\x92\x01" + stamp))),
        msgpack(b"\x93" + attack.pack(PAD) + uuid_ext(uuid.UUID(int=3)) + b"\x81\x92\x01\x02\x03"),
        *(msgpack(row) for row in _float_rows().values()),
        msgpack(b"\x92" + attack.pack(PAD) + attack.float_key_map(attack.colliding_floats(COLLISIONS + 1))),
    ]
    whole = writer.dumps_typed([PAD, uuid.UUID(int=9), (1, 2), Plain(a=[1], b={"k": 2.5})])[1]
    rows += [msgpack(whole[:cut]) for cut in range(len(PAD) + 3, len(whole), 7)]
    rows += [msgpack(whole[:at] + b"\xc1" + whole[at + 1 :]) for at in range(len(PAD) + 3, len(whole), 5)]

    def read_all() -> None:
        for row in rows:
            try:
                fast.loads_typed(row)
            except Exception:
                pass

    engine = fast._decoder.engine
    watched = [None, True, False, engine, fast.loads_typed, fast._decoder._tracked[0]]
    assert_refcounts_settle(read_all, watched, 5)


# --- hash groups of C-level typed values: counted by hash, not all together ----------------


def decimal_ext(value: int) -> bytes:
    return attack.pack(attack.ext(0, ["decimal", "Decimal", str(value)]))


def _mixed(x: int) -> int:
    """The reader's spreading of a hash over its table (splitmix64's finaliser)."""
    mask = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def _decimals_row(values: list[int]) -> tuple[str, bytes]:
    return msgpack(b"\x92" + attack.pack(PAD) + array16([decimal_ext(v) for v in values]))


def _prescans(fast, row) -> int:
    fast.loads_typed(row)  # cold: learns the Decimal head
    return python_calls(fast.loads_typed, row).count("prescan")


def test_many_typed_values_of_c_level_types_with_distinct_hashes_are_not_prescanned():
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    row = _decimals_row(list(range(1, 4 * COLLISIONS)))
    assert _prescans(fast, row) == 0
    assert_same_limit(fast, pure, row, None)


@pytest.mark.parametrize("extra", [0, 1])
def test_typed_values_of_c_level_types_sharing_one_hash_call_for_the_prescan(extra):
    # Decimal(k * PRIME + 7) all hash to 7: one group past the limit asks the prescan.
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    row = _decimals_row([k * PRIME + 7 for k in range(COLLISIONS + extra)])
    assert _prescans(fast, row) == extra
    assert_same_limit(fast, pure, row, None)


@pytest.mark.parametrize("extra", [0, 1])
def test_colliding_c_level_typed_values_are_refused_when_the_row_is_tracked(extra):
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    fast.loads_typed(msgpack(decimal_ext(1)))  # learn the head: Decimals are built in C
    entries = COLLISIONS + 1
    keys = [uuid_ext(uuid.UUID(int=1000 + k)) for k in range(entries)]
    big_map = b"\xde" + entries.to_bytes(2, "big") + b"".join(key + b"\x00" for key in keys)
    values = array16([decimal_ext(k * PRIME + 7) for k in range(COLLISIONS + 1 + extra)])
    row = msgpack(b"\x93" + big_map + values + attack.pack("y" * 70_000))
    assert_same_limit(fast, pure, row, "max_hash_collisions" if extra else None)


def test_hashes_aimed_at_one_slot_of_the_readers_table_give_it_up_for_the_prescan():
    # Distinct hashes (so no group is large) that the table would probe in one chain:
    # past its probe allowance it stops counting and runs the prescan, as the count did.
    aimed = [v for v in range(1, 1 << 22) if _mixed(v) & 0xFFF == 0][:40]
    assert len(aimed) == 40
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    row = _decimals_row(aimed)
    assert _prescans(fast, row) == 1
    assert _prescans(fast, _decimals_row([v + 1 for v in aimed])) == 0  # the same count, spread
    assert_same_limit(fast, pure, row, None)


def test_distinct_uuids_and_tuples_of_plain_values_are_not_prescanned():
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    items = [uuid_ext(uuid.UUID(int=k)) for k in range(1, 3 * COLLISIONS)]
    items += [attack.pack(attack.ext(0, ["builtins", "tuple", [k, str(k)]])) for k in range(3 * COLLISIONS)]
    row = msgpack(b"\x92" + attack.pack(PAD) + array16(items))
    assert _prescans(fast, row) == 0
    assert_same_limit(fast, pure, row, None)


def test_tuples_holding_python_level_values_are_counted_together():
    # Hashing a tuple of UUIDs would run UUID.__hash__ (Python) before the prescan: such
    # tuples are counted all together, and past max_hash_collisions the prescan runs.
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    tuples = [
        attack.pack(attack.ext(0, ["builtins", "tuple", [attack.ext(0, ["uuid", "UUID", uuid.UUID(int=k).hex])]]))
        for k in range(1, COLLISIONS + 2)
    ]
    row = msgpack(b"\x92" + attack.pack(PAD) + array16(tuples))
    assert _prescans(fast, row) == 1
    assert_same_limit(fast, pure, row, None)
