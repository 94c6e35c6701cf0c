"""Standard-library types: exact round trips and the bytes the stock reader sees."""

from __future__ import annotations

import collections
import decimal
import fractions
import ipaddress
import pathlib
import re
import uuid
import zoneinfo
from datetime import date, datetime, time, timedelta, timezone

import ormsgpack
import pytest

from serde_kit import Serializer
from serde_kit.ext import codes

PARIS = zoneinfo.ZoneInfo("Europe/Paris")
NEW_YORK = zoneinfo.ZoneInfo("America/New_York")

VALUES = [
    (1, "a", (2.5, None)),
    (),
    {(1, 2): "tuple key", 3: "int key"},
    2**64,
    -(2**63) - 1,
    10**5000,  # beyond int()'s 4300-digit limit for decimal text
    1 + 2j,
    fractions.Fraction(-7, 3),
    decimal.Decimal("-1.2300E+5"),
    decimal.Decimal("Infinity"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    {1, "a", (1, 2)},
    frozenset({frozenset({1})}),
    collections.deque([1, (2,)]),
    collections.deque([1, 2, 3], maxlen=3),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.Counter("abracadabra"),
    datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime(2024, 1, 2, tzinfo=timezone.utc),
    datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=-2), "BRST")),
    datetime(2024, 7, 1, 12, tzinfo=PARIS),
    datetime(2024, 11, 3, 1, 30, tzinfo=NEW_YORK, fold=1),
    datetime(2024, 1, 1, fold=1),
    date(1, 1, 1),
    time(23, 59, 59, 999999),
    time(1, 2, tzinfo=PARIS, fold=1),
    timedelta(days=-3, seconds=5, microseconds=7),
    timezone(timedelta(minutes=-90), "odd"),
    timezone.utc,
    PARIS,
    ipaddress.IPv4Address("10.1.2.3"),
    ipaddress.IPv4Interface("10.1.2.3/24"),
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv6Address("fe80::1%eth0"),
    ipaddress.IPv6Interface("::1/128"),
    ipaddress.IPv6Network("2001:db8::/32"),
    pathlib.PosixPath("/tmp/x y/z"),
    pathlib.PurePosixPath("rel/path"),
    pathlib.PureWindowsPath("C:/Users/a"),
    re.compile(r"\d+(?P<x>a)", re.IGNORECASE | re.MULTILINE),
    re.compile(rb"\x00+"),
    b"\x00raw",
    bytearray(b"mutable"),
    [b"nested bytes"],
]


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (datetime, time)):
        assert a == b and a.fold == b.fold and a.tzinfo == b.tzinfo
        assert type(a.tzinfo) is type(b.tzinfo)
        if isinstance(a.tzinfo, zoneinfo.ZoneInfo):
            assert a.tzinfo.key == b.tzinfo.key
        if isinstance(a.tzinfo, timezone):
            assert a.tzinfo.tzname(None) == b.tzinfo.tzname(None)
    elif isinstance(a, collections.deque):
        assert a == b and a.maxlen == b.maxlen
    elif isinstance(a, timezone):
        assert a == b and a.tzname(None) == b.tzname(None)
    else:
        assert a == b


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_exact_round_trip(value):
    serde = Serializer()
    _same(serde.loads_typed(serde.dumps_typed(value)), value)


def test_tuple_is_written_as_the_stock_single_arg_constructor():
    ext = ormsgpack.unpackb(Serializer().dumps((1, 2)), ext_hook=lambda code, data: (code, data))
    code, data = ext
    assert code == codes.CONSTRUCTOR_SINGLE_ARG
    assert ormsgpack.unpackb(data) == ["builtins", "tuple", [1, 2]]


def test_datetime_without_zone_key_uses_the_stock_isoformat_form():
    value = datetime(2024, 5, 6, 7, 8, tzinfo=timezone.utc)
    code, data = ormsgpack.unpackb(Serializer().dumps(value), ext_hook=lambda c, d: (c, d))
    assert code == codes.METHOD_SINGLE_ARG
    assert ormsgpack.unpackb(data) == ["datetime", "datetime", value.isoformat(), "fromisoformat"]


def test_zoneinfo_datetime_keeps_key_in_keyword_form():
    value = datetime(2024, 7, 1, tzinfo=PARIS)
    code, data = ormsgpack.unpackb(Serializer().dumps(value), ext_hook=lambda c, d: (c, d))
    assert code == codes.CONSTRUCTOR_KW_ARGS
    module, name, kwargs = ormsgpack.unpackb(data, ext_hook=lambda c, d: (c, d))
    assert (module, name, kwargs["fold"]) == ("datetime", "datetime", 0)


def test_builtin_exception_round_trips_by_type_and_args():
    serde = Serializer()
    for exc in (ValueError("bad", 3), KeyError("k"), OSError(2, "missing"), StopIteration(7)):
        back = serde.loads(serde.dumps(exc))
        assert type(back) is type(exc) and back.args == exc.args


def test_user_exception_is_stored_as_its_repr_like_the_stock_writer():
    class AppError(Exception):
        pass

    serde = Serializer()
    assert serde.loads(serde.dumps({"error": AppError("boom")})) == {"error": "AppError('boom')"}


def test_pure_path_subclass_names_are_kept():
    serde = Serializer()
    back = serde.loads(serde.dumps(pathlib.PureWindowsPath(r"C:\a\b")))
    assert type(back) is pathlib.PureWindowsPath and str(back) == r"C:\a\b"


def test_nested_bytearray_comes_back_as_bytes_a_documented_limit():
    # ormsgpack writes bytearray natively (no passthrough option), as the stock writer does.
    serde = Serializer()
    assert serde.loads(serde.dumps([bytearray(b"x")])) == [b"x"]
    assert type(serde.loads_typed(serde.dumps_typed(bytearray(b"x")))) is bytearray


def test_tuples_of_typed_values_keep_every_item_type():
    # Plain tuples take a shortcut; anything typed inside must still go through the encoder.
    serde = Serializer()
    value = (datetime(2020, 1, 1), uuid.UUID(int=1), 2**70, (1,), {1: "a"}, decimal.Decimal("1"), "s", 1.5, None)
    _same(serde.loads(serde.dumps(value)), value)
