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
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit import SerdeError, Serializer
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


def test_zoneinfo_datetime_keeps_key_in_positional_form():
    value = datetime(2024, 7, 1, 12, 30, 15, 250, tzinfo=PARIS)
    code, data = ormsgpack.unpackb(Serializer().dumps(value), ext_hook=lambda c, d: (c, d))
    assert code == codes.CONSTRUCTOR_POS_ARGS
    module, name, args = ormsgpack.unpackb(data, ext_hook=lambda c, d: (c, d))
    assert (module, name, args[:7]) == ("datetime", "datetime", [2024, 7, 1, 12, 30, 15, 250])
    assert args[7][0] == codes.CONSTRUCTOR_SINGLE_ARG  # the ZoneInfo, by its key


def test_folded_datetime_keeps_fold_in_keyword_form():
    value = datetime(2024, 11, 3, 1, 30, tzinfo=NEW_YORK, fold=1)
    code, data = ormsgpack.unpackb(Serializer().dumps(value), ext_hook=lambda c, d: (c, d))
    assert code == codes.CONSTRUCTOR_KW_ARGS
    module, name, kwargs = ormsgpack.unpackb(data, ext_hook=lambda c, d: (c, d))
    assert (module, name, kwargs["fold"]) == ("datetime", "datetime", 1)


@pytest.mark.parametrize("mode", [True, None], ids=["permissive", "strict"])
def test_stock_reader_builds_zoneinfo_datetimes_exactly(mode):
    stock = JsonPlusSerializer(allowed_msgpack_modules=mode)
    for value in (datetime(2024, 7, 1, 12, 30, 15, 250, tzinfo=PARIS), datetime(2024, 11, 3, 1, 30, tzinfo=NEW_YORK, fold=1)):
        back = stock.loads_typed(Serializer().dumps_typed(value))
        assert back == value and back.tzinfo is value.tzinfo and back.fold == value.fold


@pytest.mark.parametrize(
    "args",
    [
        [2024, 7, 1, 12, 30, 15, 250],  # no tzinfo slot
        [2024, 7, 1, 12, 30, 15, 250, None, 0],  # one too many
        [2024, 7, 1, 12, 30, 15, "250", None],  # not a number
        [2024, 13, 1, 12, 30, 15, 250, None],  # out of range
        [2024, 7, 1, 12, 30, 15, 250, "Europe/Paris"],  # a zone by name, not a tzinfo
    ],
    ids=["short", "long", "text", "range", "zone-name"],
)
def test_malformed_positional_datetime_is_a_typed_error(args):
    data = ormsgpack.packb(
        ormsgpack.Ext(codes.CONSTRUCTOR_POS_ARGS, ormsgpack.packb(["datetime", "datetime", args]))
    )
    with pytest.raises(SerdeError):
        Serializer().loads(data)


def test_builtin_exception_is_stored_and_read_as_its_repr_like_stock():
    # LangGraph hands a stored error back as StateSnapshot.tasks[i].error and its
    # runtime and users treat it as a string; no stored row yields an exception object.
    serde = Serializer()
    stock = JsonPlusSerializer(allowed_msgpack_modules=True)
    for exc in (ValueError("bad", 3), KeyError("k"), OSError(2, "missing"), SystemExit(1), KeyboardInterrupt()):
        row = serde.dumps_typed({"error": exc})
        assert serde.loads_typed(row) == {"error": repr(exc)}
        assert row == stock.dumps_typed({"error": exc})


def test_exception_rows_of_earlier_serde_kit_read_as_the_repr():
    # serde_kit 0.1.0 wrote ext 3 [module, name, repr, "from_args", args]; stock read
    # the repr, and so does serde_kit now (even for SystemExit).
    for name, text, args in (("ValueError", "ValueError('bad', 3)", ["bad", 3]), ("SystemExit", "SystemExit(1)", [1])):
        data = ormsgpack.packb(ormsgpack.Ext(3, ormsgpack.packb(["builtins", name, text, "from_args", args])))
        assert Serializer().loads(data) == text
        assert JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed(("msgpack", data)) == text


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


# --- issue 9: subclasses of builtins, sub-second offsets, lone surrogates ----


class _Label(str):
    pass


class _Count(int):
    pass


class _Ratio(float):
    pass


class _Blob(bytes):
    pass


class _Items(list):
    pass


class _Pair(tuple):
    pass


class _Tags(set):
    pass


def test_langchain_text_accessor_is_stored_as_a_str_like_stock():
    from langchain_core.messages import AIMessage

    text = AIMessage(content="a summary").text
    assert type(text) is not str and isinstance(text, str)  # the case from the issue
    row = Serializer().dumps_typed({"summary": text})
    assert row == JsonPlusSerializer().dumps_typed({"summary": "a summary"})
    back = Serializer().loads_typed(row)
    assert back == {"summary": "a summary"} and type(back["summary"]) is str


@pytest.mark.parametrize(
    "value, plain",
    [
        (_Label("x"), "x"),
        (_Count(5), 5),
        (_Count(2**70), 2**70),
        (_Ratio(1.5), 1.5),
        (_Blob(b"\x00b"), b"\x00b"),
        (_Items([1, (2,)]), [1, (2,)]),
        (_Pair((1, 2)), (1, 2)),
        (_Tags({3}), {3}),
        (collections.defaultdict(list, {"a": [1]}), {"a": [1]}),
        (collections.defaultdict(list, {1: [2], (3, 4): [5]}), {1: [2], (3, 4): [5]}),
    ],
    ids=lambda v: type(v).__name__,
)
def test_subclasses_of_builtins_are_stored_as_the_builtin_value(value, plain):
    serde = Serializer()
    back = serde.loads(serde.dumps({"v": value}))["v"]
    assert back == plain and type(back) is type(plain)
    assert serde.dumps({"v": value}) == serde.dumps({"v": plain})


def test_builtin_subclass_bytes_match_the_stock_writer():
    # (The stock writer refuses float subclasses; serde_kit stores them as floats.)
    for value in (_Label("x"), _Count(5), _Items([1, 2]), collections.defaultdict(int, {1: 2})):
        assert Serializer().dumps_typed({"v": value}) == JsonPlusSerializer().dumps_typed({"v": value})


_SUBSECOND_OFFSETS = [
    timedelta(microseconds=7),
    -timedelta(microseconds=7),
    timedelta(seconds=1, microseconds=1),
    timedelta(hours=-1, seconds=-3, microseconds=-500000),
    timedelta(hours=23, minutes=59, seconds=59, microseconds=999999),
    -timedelta(hours=23, minutes=59, seconds=59, microseconds=999999),
]


@pytest.mark.parametrize("offset", _SUBSECOND_OFFSETS, ids=str)
def test_sub_second_offsets_are_kept_for_datetime_and_time(offset):
    tz = timezone(offset)
    named = timezone(offset, "Custom")
    serde = Serializer()
    for value in (
        datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=tz),
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=named),
        time(1, 2, 3, 4, tzinfo=tz),
    ):
        back = serde.loads(serde.dumps(value))
        assert back == value and back.utcoffset() == value.utcoffset()
        assert back.tzinfo.tzname(None) == value.tzinfo.tzname(None)
        # What serde_kit writes, the stock reader builds exactly too (it does not for its own bytes).
        for mode in (True, None):  # permissive, strict
            stock = JsonPlusSerializer(allowed_msgpack_modules=mode).loads_typed(serde.dumps_typed(value))
            assert stock == value and stock.utcoffset() == value.utcoffset()


@pytest.mark.parametrize("offset", _SUBSECOND_OFFSETS, ids=str)
def test_stock_rows_with_sub_second_offsets_read_exactly(offset):
    # The stock writer stores datetime.isoformat(), offset to the microsecond;
    # fromisoformat() alone reads "+00:00:00.000007" as UTC (a silent change).
    value = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(offset))
    back = Serializer().loads_typed(JsonPlusSerializer().dumps_typed(value))
    assert back == value and back.utcoffset() == offset


@pytest.mark.parametrize(
    "text", ["\ud800", "a\udce9b", "\udfff\ud800", "ok \ud83d\ude00 pair-as-two", "caf\udce9 ✓"], ids=repr
)
def test_lone_surrogates_are_stored_exactly(text):
    serde = Serializer()
    for value in (text, {"k": [text, (text,)]}, {"deep": {"x": text}}):
        assert serde.loads(serde.dumps(value)) == value


@pytest.mark.parametrize("strict", [False, True])
def test_stock_reader_reads_our_surrogate_strings_as_it_reads_its_own(strict, caplog):
    stock = JsonPlusSerializer(allowed_msgpack_modules=None if strict else True)
    value = {"k": ["a\udce9b", "plain"], "t": "\ud800"}
    theirs = stock.loads_typed(JsonPlusSerializer().dumps_typed(value))
    assert theirs == {"k": ["a?b", "plain"], "t": "?"}
    assert stock.loads_typed(Serializer().dumps_typed(value)) == theirs


def test_surrogates_in_typed_values_and_str_subclasses():
    serde = Serializer()
    value = [_Label("x\ud800"), collections.deque(["\udce9"]), frozenset({"\ud801"})]
    back = serde.loads(serde.dumps(value))
    assert back == [str("x\ud800"), collections.deque(["\udce9"]), frozenset({"\ud801"})]


def test_surrogates_in_a_dict_key_are_refused_at_write_with_the_reason():
    from serde_kit import EncodeError

    with pytest.raises(EncodeError, match="dict key .* lone surrogates"):
        Serializer().dumps_typed({"a": {"k\ud800": 1}})
