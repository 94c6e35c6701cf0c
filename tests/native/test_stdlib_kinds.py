"""Standard types the compiled reader builds in C from a limit-checked shape: ISO datetimes
(ext 3), Decimal, set/frozenset and ZoneInfo.

Each C kind takes only what is within the limit its Python rebuilder checks first, in
the common shape; everything else (longer text, an exponent, a sub-second offset, list
items, an unknown zone, a wrong type) goes to that rebuilder, so values, types, errors
and limit refusals stay the pure path's own.
"""

from __future__ import annotations

import datetime
import decimal
import zoneinfo
from typing import Any

import ormsgpack
import pytest

from serde_kit import Limits, native

from .conftest import assert_same_outcome, make_pair, python_calls

TIGHT = Limits(max_text_length=20, max_hash_collisions=3)


def _row(code: int, module: str, name: str, arg: Any, method: str | None = None) -> tuple[str, bytes]:
    items = [module, name, arg] if method is None else [module, name, arg, method]
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(items)))


ISO_TEXTS = {
    "datetime": [
        "2024-01-02T03:04:05",
        "2024-01-02T03:04:05.123456",
        "2024-01-02T03:04:05.5",
        "2024-01-02T03:04:05+00:00",
        "2024-01-02T03:04:05.123456+05:30",
        "2024-01-02T03:04:05.123456-00:00",
        "2024-01-02T03:04:05+00:00:00.000007",  # a sub-second offset: read from the text
        "2024-01-02T03:04:05.1+01:00:00.500000",
        "2024-01-02 03:04:05",
        "2024-01-02",
        "20240102T030405",
        "2024-13-02T03:04:05",
        "not a date",
        "",
        ".",
        "2024-01-02T03:04:05.123456+05:30" + "0" * 30,
        "２０２４-01-02",
        12,
        None,
        ["2024-01-02"],
    ],
    "date": ["2024-01-02", "2024-W01-1", "20240102", "2024-02-30", "2024-01-02T00:00", "x.y", "", 5],
    "time": ["03:04:05", "03:04:05.123456", "03:04:05.123+01:00", "03:04:05+00:00:00.000007", "25:00", "", 1.5],
}


@pytest.mark.parametrize("limits", [None, TIGHT], ids=["default", "tight"])
@pytest.mark.parametrize("name", sorted(ISO_TEXTS))
def test_iso_forms_read_alike(name, limits):
    fast, pure = make_pair() if limits is None else make_pair(limits=limits)
    for text in ISO_TEXTS[name]:
        row = _row(3, "datetime", name, text, "fromisoformat")
        assert_same_outcome(fast, pure, row, repr(text))
        assert_same_outcome(fast, pure, ("msgpack", fast.dumps([row_value(pure, row)] * 2)), "list")


def row_value(serializer: Any, row: tuple[str, bytes]) -> Any:
    try:
        return serializer.loads_typed(row)
    except Exception:
        return None


DECIMALS = [
    "1.5", "-0.001", "+3", "0", "-0", "0.000", ".5", "5.", "1.2.3", "--1", "-", "+", ".", "", "1e5", "1E-7",
    "NaN", "-Infinity", "sNaN", "1_000", " 1", "1 ", "٣", "9" * 64, "9" * 65, "0." + "0" * 62 + "1", 5, None,
]  # fmt: skip


@pytest.mark.parametrize("limits", [None, TIGHT, Limits(max_number_digits=3)], ids=["default", "tight", "digits"])
def test_decimals_read_alike(limits):
    fast, pure = make_pair() if limits is None else make_pair(limits=limits)
    for text in DECIMALS:
        row = _row(0, "decimal", "Decimal", text)
        assert_same_outcome(fast, pure, row, repr(text))
    # signed zero and trailing zeros are kept exactly
    for text in ("-0", "1.500", "-0.000"):
        value = fast.loads_typed(_row(0, "decimal", "Decimal", text))
        assert str(value) == str(decimal.Decimal(text)) and type(value) is decimal.Decimal


def test_decimals_follow_the_default_context_exponent_bound(monkeypatch):
    # The pure rebuilder refuses |adjusted()| above max(max_number_digits, Emax, -Emin),
    # read when the decoder is made: the C kind takes no text longer than that bound.
    monkeypatch.setattr(decimal.DefaultContext, "Emax", 2)
    monkeypatch.setattr(decimal.DefaultContext, "Emin", -2)
    fast, pure = make_pair(limits=Limits(max_number_digits=1))
    for text in ("1", "12", "123", "1234", "0.001", "0.0001", "-99.9"):
        assert_same_outcome(fast, pure, _row(0, "decimal", "Decimal", text), text)


SET_ITEMS = [
    [], [1, 2, 3], ["a", "b", "a"], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [[1, 2], [3]], [1, [2, [3]]], [{}], [{"a": 1}],
    [1.0, 1, True], [None], "not a list", 7, {"a": 1},
]  # fmt: skip


@pytest.mark.parametrize("limits", [None, TIGHT], ids=["default", "tight"])
@pytest.mark.parametrize("name", ["set", "frozenset"])
def test_sets_read_alike(name, limits):
    fast, pure = make_pair() if limits is None else make_pair(limits=limits)
    for items in SET_ITEMS:
        assert_same_outcome(fast, pure, _row(0, "builtins", name, items), repr(items))
    colliding = [-1, -2] * 3 + [-1 - ((1 << 61) - 1) * k for k in range(1, 4)]  # many ints hashing alike
    assert_same_outcome(fast, pure, _row(0, "builtins", name, colliding), "colliding")


ZONES = ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Nope/Zone", "", "../etc/passwd", "/abs", "a" * 30, 3, None]


@pytest.mark.parametrize("limits", [None, TIGHT], ids=["default", "tight"])
def test_zones_read_alike(limits):
    fast, pure = make_pair() if limits is None else make_pair(limits=limits)
    for key in ZONES:
        assert_same_outcome(fast, pure, _row(0, "zoneinfo", "ZoneInfo", key), repr(key))
    value = fast.loads(fast.dumps(zoneinfo.ZoneInfo("Europe/Paris")))
    assert value is zoneinfo.ZoneInfo("Europe/Paris")  # zoneinfo's own cache, as the pure path


def test_the_reader_builds_only_zones_the_rebuilder_loaded():
    from serde_kit.ext import stdlib

    # A key the rebuilder has not loaded goes to it (ZoneInfo may search the disk, which
    # it charges); once loaded, the reader takes the zone from the same dict, in C.
    fast, pure = make_pair()
    row = _row(0, "zoneinfo", "ZoneInfo", "Pacific/Chatham")
    saved = dict(stdlib.KNOWN_ZONES)
    stdlib.KNOWN_ZONES.clear()
    try:
        assert "zone" in python_calls(fast.loads, row[1])
        assert list(stdlib.KNOWN_ZONES) == ["Pacific/Chatham"]
        assert "zone" not in python_calls(fast.loads, row[1])
        assert fast.loads(row[1]) is stdlib.KNOWN_ZONES["Pacific/Chatham"] is pure.loads(row[1])
    finally:
        stdlib.KNOWN_ZONES.clear()
        stdlib.KNOWN_ZONES.update(saved)



def test_the_common_shapes_are_built_without_python():
    fast, pure = make_pair()
    value = {
        "naive": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
        "utc": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "offset": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=5))),
        "amount": decimal.Decimal("-12.50"),
        "tags": {"a", "b"},
        "frozen": frozenset({1, 2}),
        "zone": zoneinfo.ZoneInfo("UTC"),
    }
    row = pure.dumps(value)
    assert fast.loads(row) == value
    calls = python_calls(fast.loads, row)
    assert not {"rebuild", "hook", "decimal_", "zone", "<lambda>", "items"} & set(calls), calls
    assert {"rebuild", "hook"} <= set(python_calls(pure.loads, row))


def test_kinds_are_chosen_from_the_decoders_own_rebuilders():
    module = native._reader
    assert module is not None
    fast, _ = make_pair()
    decoder = fast._decoder
    expected = {
        (3, "datetime", "datetime", "fromisoformat"): module.KIND_ISO,
        (3, "datetime", "date", "fromisoformat"): module.KIND_ISO,
        (3, "datetime", "time", "fromisoformat"): module.KIND_ISO,
        (0, "decimal", "Decimal", None): module.KIND_DECIMAL,
        (0, "builtins", "set", None): module.KIND_SET,
        (0, "builtins", "frozenset", None): module.KIND_SET,
        (0, "zoneinfo", "ZoneInfo", None): module.KIND_ZONE,
    }
    for (code, mod, name, method), kind in expected.items():
        verdict = decoder.rebuilder(code, mod, name, method)
        assert native._kind(decoder, code, mod, name, verdict, method)[0] == kind
        assert native._kind(decoder, code, mod, name, lambda env: None, method)[0] == module.KIND_CALL
    # exceptions are stored with ext 3 too, by another method: never an ISO kind
    verdict = decoder.rebuilder(3, "builtins", "ValueError", "from_args")
    assert native._kind(decoder, 3, "builtins", "ValueError", verdict, "from_args")[0] == module.KIND_CALL


@pytest.mark.parametrize(
    "kind, cls, param",
    [
        ("KIND_ISO", datetime.datetime, None),
        ("KIND_ISO", datetime.datetime, (1, datetime.datetime.fromisoformat)),
        ("KIND_ISO", datetime.datetime, (1, "not callable", False)),
        ("KIND_ISO", datetime.datetime, (1, datetime.datetime.fromisoformat, 0)),
        ("KIND_ISO", datetime.datetime, (-1, datetime.datetime.fromisoformat, False)),
        ("KIND_DECIMAL", decimal.Decimal, -1),
        ("KIND_DECIMAL", decimal.Decimal, -(2**80)),
        ("KIND_DECIMAL", decimal.Decimal, 1.5),
        ("KIND_DECIMAL", decimal.Decimal, "5"),
        ("KIND_SET", list, 3),
        ("KIND_SET", set, None),
        ("KIND_ZONE", zoneinfo.ZoneInfo, True.__class__),
        ("KIND_ZONE", zoneinfo.ZoneInfo, 5),  # (limit, the dict of loaded zones)
        ("KIND_ZONE", zoneinfo.ZoneInfo, (5, [])),
        ("KIND_ZONE", zoneinfo.ZoneInfo, (5,)),
        ("KIND_ZONE", zoneinfo.ZoneInfo, (-1, {})),
    ],
)
def test_reader_refuses_limited_entries_that_do_not_fit(kind, cls, param):
    fast, _ = make_pair()
    module = native._reader
    with pytest.raises((ValueError, TypeError)):
        fast._decoder.engine.register(0, b"\x93\xa1m\xa1n", 3, None, "m", "n", getattr(module, kind), len, cls, param)


def test_a_limit_beyond_any_length_is_taken():
    fast, _ = make_pair()
    module = native._reader
    assert fast._decoder.engine.register(0, b"\x93\xa1m\xa1z", 3, None, "m", "z", module.KIND_ZONE, len, zoneinfo.ZoneInfo, (2**80, {}))
