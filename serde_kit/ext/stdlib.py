"""Standard-library value types: how each is written, and how each is rebuilt.

Writers return ``ormsgpack.Ext``; the payload is packed by ``call.pack`` so
nested values go through the same encoder. Envelopes are lists, never tuples:
a tuple would itself be written as an ext (tuples round-trip exactly).

Rebuilders take the decoded envelope list and return the value. They are
looked up in :data:`REBUILDERS` by ``(ext code, module, name)``: a fixed table,
so no module is imported and no attribute is fetched by a name from the data.
"""

from __future__ import annotations

import builtins
import collections
import decimal
import fractions
import ipaddress
import pathlib
import re
import uuid
import zoneinfo
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any, cast

import msgspec
import ormsgpack
from ormsgpack import Ext

from .. import budget
from ..budget import check_hash_collisions
from ..errors import EncodeError
from ..limits import Limits
from . import codes
from .codes import EncodeFn, RebuildFn, expect

ENCODERS: dict[type, EncodeFn] = {}
REBUILDERS: dict[tuple[int, str, str], RebuildFn] = {}


def _ext(call: Any, code: int, *envelope: Any) -> Ext:
    payload = list(envelope)
    try:
        # Plain payloads (text, numbers: most standard types) need no nested encoder.
        return Ext(code, ormsgpack.packb(payload, option=codes.PACK_OPTIONS))
    except TypeError:
        return Ext(code, call.pack(payload))


# --- value limits, one rule for the writer and the reader -------------------
#
# Each function below is the check a limited rebuilder runs before it builds a
# value; the writer runs the same one on the value it is about to store, so it
# never writes a row its reader refuses (both raise LimitExceededError).

_DIGITS_PER_HEX_DIGIT = 1.2042  # log10(16)
_DIGITS_PER_BIT = 0.30103  # log10(2)


def check_text(value: str, what: str, limits: Limits) -> str:
    """``value`` when its length fits ``limits.max_text_length`` (text a constructor parses)."""
    if len(value) > limits.max_text_length:
        raise limits.refuse("max_text_length", f"length of the stored {what}", len(value))
    return value


def check_int_digits(hex_digits: str, limits: Limits) -> None:
    """The stored hex digits of a big int fit ``limits.max_number_digits`` (in decimal digits)."""
    limits.check("max_number_digits", "decimal digits of a stored int", int(len(hex_digits) * _DIGITS_PER_HEX_DIGIT))


def check_fraction_part(part: int, limits: Limits) -> None:
    """A Fraction's numerator or denominator fits ``limits.max_number_digits``."""
    limits.check("max_number_digits", "decimal digits of a stored Fraction", int(part.bit_length() * _DIGITS_PER_BIT))


def decimal_max_exponent(limits: Limits) -> int:
    """The largest Decimal exponent ``limits`` allows: the default context's (as the
    stock reader allows, since an exponent costs nothing until used), or more if
    ``max_number_digits`` says."""
    return max(limits.max_number_digits, decimal.DefaultContext.Emax, -decimal.DefaultContext.Emin)


def check_decimal_exponent(value: decimal.Decimal, max_exponent: int, limits: Limits) -> None:
    """A Decimal's exponent fits ``max_exponent`` (:func:`decimal_max_exponent`); its
    digits are bounded by its text (:func:`check_text`)."""
    if value.is_finite() and abs(value.adjusted()) > max_exponent:
        raise limits.refuse("max_number_digits", "exponent of a stored Decimal", abs(value.adjusted()))


def check_pattern(source: str | bytes, flags: int, limits: Limits) -> None:
    """A regex pattern fits ``max_regex_length``, ``max_regex_classes`` and ``regex_flags``."""
    limits.check("max_regex_length", "length of a stored regex pattern", len(source))
    classes = cast(Any, source).count("[" if isinstance(source, str) else b"[")  # str or bytes, as the pattern
    limits.check("max_regex_classes", "character classes in a stored regex pattern", classes)
    if flags & ~limits.regex_flags:
        raise limits.refuse("regex_flags", "flags of a stored regex pattern", hex(flags))


# --- containers and numbers -------------------------------------------------


def _head(module: str, name: str, method: str | None = None) -> tuple[bytes, bytes]:
    """The packed envelope ``[module, name, arg(, method)]`` before and after its argument:
    a plain argument is packed on its own between them, in one call."""
    packed = ormsgpack.packb([module, name, None] if method is None else [module, name, None, method])
    at = len(ormsgpack.packb([module, name]))  # the same one-byte array header, then the None
    return packed[:at], packed[at + 1 :]


_TUPLE_HEAD = _head("builtins", "tuple")[0]
_PACK = ormsgpack.packb
_OPTIONS = codes.PACK_OPTIONS
#: msgspec's encoder, for payloads made only of str, int, float, bool, None, bytes and
#: lists or tuples of them: the bytes ormsgpack writes for those (tests pin it), at a
#: fraction of its fixed cost per call. Never for a value that may hold anything else:
#: msgspec writes tuples, sets, datetimes, UUIDs, enums ... natively, not as exts.
#: It raises OverflowError beyond 64 bits and UnicodeEncodeError on lone surrogates,
#: where the callers take the general path (which writes or refuses those).
_PACK_PLAIN = msgspec.msgpack.Encoder().encode
_PLAIN_FAILURES = (OverflowError, UnicodeEncodeError)
_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
#: Tuples and sets up to this size have their items' types checked for the plain
#: encoder; a check per item costs more than ormsgpack's fixed cost beyond it.
_CHECKED_ITEMS = 8


def _tuple(obj: tuple[Any, ...], call: Any) -> Ext:
    if len(obj) <= _CHECKED_ITEMS:
        for item in obj:  # inline: a call per tuple would cost what the plain encoder saves
            if type(item) not in _SCALARS:
                break
        else:
            try:
                return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _TUPLE_HEAD + _PACK_PLAIN(obj))
            except _PLAIN_FAILURES:
                pass
    try:
        return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _TUPLE_HEAD + ormsgpack.packb(list(obj), option=codes.PACK_OPTIONS))
    except TypeError:
        return Ext(codes.CONSTRUCTOR_SINGLE_ARG, call.pack(["builtins", "tuple", list(obj)]))


_SET_HEADS = {cls: _head("builtins", cls.__name__)[0] for cls in (set, frozenset)}


def _set(obj: set[Any] | frozenset[Any], call: Any) -> Ext:
    if len(obj) <= _CHECKED_ITEMS:
        for item in obj:
            if type(item) not in _SCALARS:
                break
        else:
            try:  # in iteration order, as list(obj)
                return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _SET_HEADS[type(obj)] + _PACK_PLAIN(obj))
            except _PLAIN_FAILURES:
                pass
    try:
        return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _SET_HEADS[type(obj)] + _PACK(list(obj), option=_OPTIONS))
    except TypeError:
        return Ext(codes.CONSTRUCTOR_SINGLE_ARG, call.pack(["builtins", type(obj).__name__, list(obj)]))


def _deque(obj: collections.deque[Any], call: Any) -> Ext:
    if obj.maxlen is None:
        return _ext(call, codes.CONSTRUCTOR_SINGLE_ARG, "collections", "deque", list(obj))
    return _ext(call, codes.CONSTRUCTOR_POS_ARGS, "collections", "deque", [list(obj), obj.maxlen])


def _mapping(obj: dict[Any, Any], call: Any) -> Ext:
    return _ext(call, codes.CONSTRUCTOR_SINGLE_ARG, "collections", type(obj).__name__, dict(obj))


def dict_items_ext(obj: dict[Any, Any], call: Any) -> Ext:
    """A dict whose keys msgpack cannot hold faithfully, as ``dict([[key, value], ...])``."""
    return _ext(call, codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "dict", [[k, v] for k, v in obj.items()])


def _int(obj: int, call: Any) -> Ext:
    # Beyond 64 bits. Hex, because int(str) refuses more than 4300 decimal digits.
    digits = format(obj, "x")
    check_int_digits(digits, call.limits)
    return _ext(call, codes.CONSTRUCTOR_POS_ARGS, "builtins", "int", [digits, 16])


def _complex(obj: complex, call: Any) -> Ext:
    return _ext(call, codes.CONSTRUCTOR_POS_ARGS, "builtins", "complex", [obj.real, obj.imag])


def _fraction(obj: fractions.Fraction, call: Any) -> Ext:
    check_fraction_part(obj.numerator, call.limits)
    check_fraction_part(obj.denominator, call.limits)
    return _ext(
        call, codes.CONSTRUCTOR_POS_ARGS, "fractions", "Fraction", [obj.numerator, obj.denominator]
    )


_DECIMAL_HEAD = _head("decimal", "Decimal")[0]
_UUID_HEAD = _head("uuid", "UUID")[0]


def _decimal(obj: decimal.Decimal, call: Any) -> Ext:
    limits = call.limits
    text = str(obj)
    # The reader's checks only when they may refuse: in plain notation (no "E")
    # the exponent is at most the text's length, and an exponent within
    # max_number_digits is within decimal_max_exponent.
    size = len(text)
    if size > limits.max_text_length or size > limits.max_number_digits or "E" in text:
        check_text(text, "Decimal text", limits)
        check_decimal_exponent(obj, decimal_max_exponent(limits), limits)
    return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _DECIMAL_HEAD + _PACK_PLAIN(text))


def _uuid(obj: uuid.UUID, call: Any) -> Ext:
    if call.limits.max_text_length < 32:  # the reader's check only when it may refuse (hex is 32 long)
        check_text(obj.hex, "UUID hex", call.limits)
    # UUID.hex ("%032x" % int) in two C calls: the same 32 lowercase digits.
    return Ext(codes.CONSTRUCTOR_SINGLE_ARG, _UUID_HEAD + _PACK_PLAIN(obj.int.to_bytes(16, "big").hex()))


ENCODERS.update(
    {
        tuple: _tuple,
        set: _set,
        frozenset: _set,
        collections.deque: _deque,
        collections.OrderedDict: _mapping,
        collections.Counter: _mapping,
        int: _int,
        complex: _complex,
        fractions.Fraction: _fraction,
        decimal.Decimal: _decimal,
        uuid.UUID: _uuid,
    }
)


def _rebuild_int(env: list[Any]) -> int:
    digits, base = expect(env[2], list, "args")
    if base != 16 or not isinstance(digits, str):
        raise ValueError("big int payload must be [hex digits, 16]")
    return int(digits, 16)


def _rebuild_tuple(env: list[Any]) -> tuple[Any, ...]:
    items = env[2]
    if type(items) is list:
        return tuple(items)
    return tuple(expect(items, list, "items"))


def _rebuild_deque_args(env: list[Any]) -> collections.deque[Any]:
    items, maxlen = expect(env[2], list, "args")
    return collections.deque(expect(items, list, "items"), maxlen)


REBUILDERS.update(
    {
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "tuple"): _rebuild_tuple,
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "set"): lambda env: set(_set_items(env[2])),
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "frozenset"): lambda env: frozenset(_set_items(env[2])),
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "dict"): lambda env: dict(_pairs(env[2])),
        (codes.CONSTRUCTOR_SINGLE_ARG, "collections", "deque"): lambda env: collections.deque(expect(env[2], list, "items")),
        (codes.CONSTRUCTOR_POS_ARGS, "collections", "deque"): _rebuild_deque_args,
        (codes.CONSTRUCTOR_SINGLE_ARG, "collections", "OrderedDict"): lambda env: collections.OrderedDict(expect(env[2], dict, "items")),
        (codes.CONSTRUCTOR_SINGLE_ARG, "collections", "Counter"): lambda env: collections.Counter(expect(env[2], dict, "counts")),
        (codes.CONSTRUCTOR_POS_ARGS, "builtins", "int"): _rebuild_int,
        (codes.CONSTRUCTOR_POS_ARGS, "builtins", "complex"): lambda env: complex(*_numbers(env[2], 2)),
        (codes.CONSTRUCTOR_POS_ARGS, "fractions", "Fraction"): lambda env: fractions.Fraction(*_ints(env[2], 2)),
        (codes.CONSTRUCTOR_SINGLE_ARG, "decimal", "Decimal"): lambda env: decimal.Decimal(expect(env[2], str, "Decimal text")),
        (codes.CONSTRUCTOR_SINGLE_ARG, "uuid", "UUID"): lambda env: uuid.UUID(hex=expect(env[2], str, "UUID hex")),
    }
)  # fmt: skip


def _set_items(items: Any) -> list[Any]:
    # Set elements are hashable, so a list element can only be a tuple that the
    # stock writer turned into an array; serde_kit itself writes tuples as ext.
    if type(items) is list and list not in map(type, items):
        return items
    return [_list_to_tuple(item) for item in expect(items, list, "items")]


def _list_to_tuple(item: Any) -> Any:
    if type(item) is list:
        return tuple(_list_to_tuple(part) for part in item)
    return item


def _pairs(items: Any) -> list[Any]:
    items = expect(items, list, "dict items")
    if not all(type(pair) is list and len(pair) == 2 for pair in items):
        raise TypeError("dict items must be [key, value] pairs")
    return cast("list[Any]", items)


def _numbers(args: Any, count: int) -> list[Any]:
    if not isinstance(args, list) or len(args) != count:
        raise TypeError(f"expected {count} numbers")
    for value in args:
        if type(value) not in (int, float):
            raise TypeError(f"expected a number, got {type(value).__name__}")
    return args


def _ints(args: Any, count: int) -> list[Any]:
    if not isinstance(args, list) or len(args) != count or any(type(v) is not int for v in args):
        raise TypeError(f"expected {count} integers")
    return args


# --- date and time ----------------------------------------------------------


def _iso_is_exact(tz: Any, fold: int) -> bool:
    # isoformat() keeps the offset but not a ZoneInfo key, a timezone name or fold,
    # and fromisoformat() (Python 3.11) reads a sub-second offset such as
    # "+00:00:00.000007" back as UTC: those go in the keyword form.
    if fold:
        return False
    return tz is None or tz is timezone.utc or (
        type(tz) is timezone
        and len(tz.__getinitargs__()) == 1  # type: ignore[attr-defined]
        and not tz.utcoffset(None).microseconds
    )


_DATETIME_ISO_HEAD, _ISO_TAIL = _head("datetime", "datetime", "fromisoformat")
_DATE_HEAD = _head("datetime", "date")[0]
_DATETIME_POS_HEAD = _head("datetime", "datetime")[0]
_PlainExt = msgspec.msgpack.Ext
_TIMEDELTA_HEAD = _head("datetime", "timedelta")[0]


#: Longest isoformat() of a naive or UTC datetime ("2024-01-02T03:04:05.000006+00:00").
_MAX_UTC_ISO = 32


def _datetime(obj: datetime, call: Any) -> Ext:
    tz = obj.tzinfo
    if (tz is None or tz is timezone.utc) and not obj.fold:
        if call.limits.max_text_length < _MAX_UTC_ISO:  # the reader's check only when it may refuse
            check_text(obj.isoformat(), "ISO text", call.limits)
        # ormsgpack's own RFC 3339 text is isoformat()'s for naive and UTC datetimes
        # (tests pin it), written in one call, at several times isoformat()'s speed.
        return Ext(codes.METHOD_SINGLE_ARG, _DATETIME_ISO_HEAD + _PACK(obj) + _ISO_TAIL)
    if _iso_is_exact(tz, obj.fold):
        text = obj.isoformat()
        if len(text) > call.limits.max_text_length:
            check_text(text, "ISO text", call.limits)
        return Ext(codes.METHOD_SINGLE_ARG, _DATETIME_ISO_HEAD + _PACK(text) + _ISO_TAIL)
    if not obj.fold:
        # Positional form (tzinfo is datetime's eighth positional argument): the stock
        # reader builds it too, and reading it takes no keyword names.
        if type(tz) is zoneinfo.ZoneInfo and call.depth + 1 < call.max_depth:
            # The zone's ext written in place, one level down, as call.pack would write it.
            zone = _zone_payload(tz, call.limits)
            if zone is not None:
                fields = (obj.year, obj.month, obj.day, obj.hour, obj.minute, obj.second, obj.microsecond)
                return Ext(
                    codes.CONSTRUCTOR_POS_ARGS,
                    _DATETIME_POS_HEAD + _PACK_PLAIN((*fields, _PlainExt(codes.CONSTRUCTOR_SINGLE_ARG, zone))),
                )
        return _ext(
            call,
            codes.CONSTRUCTOR_POS_ARGS,
            "datetime",
            "datetime",
            [obj.year, obj.month, obj.day, obj.hour, obj.minute, obj.second, obj.microsecond, tz],
        )
    # Keyword form: the stock reader builds it too (datetime is in its safe set) and
    # the tzinfo (ZoneInfo key, timezone name) and fold survive.
    return _ext(
        call,
        codes.CONSTRUCTOR_KW_ARGS,
        "datetime",
        "datetime",
        {
            "year": obj.year,
            "month": obj.month,
            "day": obj.day,
            "hour": obj.hour,
            "minute": obj.minute,
            "second": obj.second,
            "microsecond": obj.microsecond,
            "tzinfo": obj.tzinfo,
            "fold": obj.fold,
        },
    )


def _date(obj: date, call: Any) -> Ext:
    return Ext(codes.CONSTRUCTOR_POS_ARGS, _DATE_HEAD + _PACK_PLAIN((obj.year, obj.month, obj.day)))


def _time(obj: time, call: Any) -> Ext:
    return _ext(
        call,
        codes.CONSTRUCTOR_KW_ARGS,
        "datetime",
        "time",
        {
            "hour": obj.hour,
            "minute": obj.minute,
            "second": obj.second,
            "microsecond": obj.microsecond,
            "tzinfo": obj.tzinfo,
            "fold": obj.fold,
        },
    )


def _timedelta(obj: timedelta, call: Any) -> Ext:
    return Ext(codes.CONSTRUCTOR_POS_ARGS, _TIMEDELTA_HEAD + _PACK_PLAIN((obj.days, obj.seconds, obj.microseconds)))


def _timezone(obj: timezone, call: Any) -> Ext:
    return _ext(call, codes.CONSTRUCTOR_POS_ARGS, "datetime", "timezone", list(obj.__getinitargs__()))  # type: ignore[attr-defined]


def _zoneinfo(obj: zoneinfo.ZoneInfo, call: Any) -> Ext:
    payload = _zone_payload(obj, call.limits)
    if payload is not None:
        return Ext(codes.CONSTRUCTOR_SINGLE_ARG, payload)
    if obj.key is None:
        raise EncodeError("a ZoneInfo built from a file has no key to store; use ZoneInfo(key)")
    return _ext(call, codes.CONSTRUCTOR_SINGLE_ARG, "zoneinfo", "ZoneInfo", obj.key)


_ZONE_HEAD = _head("zoneinfo", "ZoneInfo")[0]
#: The ext 0 payload of a ZoneInfo, per instance (bounded: zoneinfo caches one per key).
_ZONE_PAYLOADS: dict[zoneinfo.ZoneInfo, bytes] = {}
_MAX_CACHED_ZONES = 256


def _zone_payload(zone: zoneinfo.ZoneInfo, limits: Limits) -> bytes | None:
    """``["zoneinfo", "ZoneInfo", key]`` packed, or None when the general path must say why not.
    Raises :class:`LimitExceededError` for a key its reader (``limits``) refuses."""
    key = zone.key
    if type(key) is str and len(key) > limits.max_text_length:
        check_text(key, "zone key", limits)  # the reader's check, cached payload or not
    payload = _ZONE_PAYLOADS.get(zone)
    if payload is None:
        if type(key) is not str:
            return None
        try:
            payload = _ZONE_HEAD + _PACK_PLAIN(key)
        except _PLAIN_FAILURES:
            return None
        if len(_ZONE_PAYLOADS) < _MAX_CACHED_ZONES:
            _ZONE_PAYLOADS[zone] = payload
    return payload


ENCODERS.update(
    {
        datetime: _datetime,
        date: _date,
        time: _time,
        timedelta: _timedelta,
        timezone: _timezone,
        zoneinfo.ZoneInfo: _zoneinfo,
    }
)

_TIME_KEYS = frozenset({"hour", "minute", "second", "microsecond", "tzinfo", "fold"})
_DATETIME_KEYS = _TIME_KEYS | {"year", "month", "day"}


def _kwargs(env: list[Any], allowed: frozenset[str]) -> dict[str, Any]:
    kwargs = expect(env[2], dict, "kwargs")
    unknown = set(kwargs) - allowed
    if unknown:
        raise TypeError(f"unexpected fields {sorted(map(str, unknown))}")
    return cast("dict[str, Any]", kwargs)


def _tzinfo_ok(kwargs: dict[str, Any]) -> dict[str, Any]:
    tz = kwargs.get("tzinfo")
    if tz is not None and type(tz) not in (timezone, zoneinfo.ZoneInfo):
        raise TypeError(f"tzinfo must be a timezone or ZoneInfo, not {type(tz).__name__}")
    return kwargs


#: The zones this process has loaded by key. ZoneInfo caches a zone only while some value
#: holds it and searches the disk for any other key, on every read: held here, a key read
#: before costs a dict lookup (the compiled reader reads this dict too), and only a new
#: one is charged to the row's work meter. At most the zones on the disk, and this many.
KNOWN_ZONES: dict[str, zoneinfo.ZoneInfo] = {}
_MOST_KNOWN_ZONES = 1024


def load_zone(key: str) -> zoneinfo.ZoneInfo:
    """``ZoneInfo(key)``: from :data:`KNOWN_ZONES`, or looked up (and charged) once."""
    found = KNOWN_ZONES.get(key)
    if found is not None:
        return found
    budget.charge(budget.ZONE_LOOKUP_UNITS, "time zones looked up by key")
    try:
        zone = zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        budget.charge(budget.ZONE_MISSING_UNITS, "time zones looked up by key")
        raise ValueError(f"unknown time zone {key!r}: install tzdata or fix the data") from exc
    if len(KNOWN_ZONES) < _MOST_KNOWN_ZONES:
        KNOWN_ZONES[key] = zone
    return zone


def _zone(env: list[Any]) -> zoneinfo.ZoneInfo:
    return load_zone(expect(env[2], str, "zone key"))


_TZINFO_TYPES = (timezone, zoneinfo.ZoneInfo)


def _rebuild_datetime_pos(env: list[Any]) -> datetime:
    args = env[2]
    if type(args) is list and len(args) == 8:
        tz = args[7]
        if tz is None or type(tz) in _TZINFO_TYPES:
            return datetime(*args)  # datetime checks the seven numbers itself
    raise TypeError("expected [year, month, day, hour, minute, second, microsecond, tzinfo]")


def _rebuild_datetime_kw(env: list[Any]) -> datetime:
    kwargs = env[2]
    if type(kwargs) is dict and kwargs.keys() <= _DATETIME_KEYS:
        tz = kwargs.get("tzinfo")
        if tz is None or type(tz) in _TZINFO_TYPES:
            return datetime(**kwargs)
    return datetime(**_tzinfo_ok(_kwargs(env, _DATETIME_KEYS)))  # raises the precise error


def _three_ints(cls: Callable[[int, int, int], Any]) -> RebuildFn:
    """``cls(a, b, c)`` from a stored ``[a, b, c]`` of ints (date, timedelta)."""

    def rebuild(env: list[Any]) -> Any:
        args = env[2]
        if type(args) is list and len(args) == 3:
            a, b, c = args
            if type(a) is int and type(b) is int and type(c) is int:
                return cls(a, b, c)
        return cls(*_ints(args, 3))  # raises the precise error

    return rebuild


_SUBSECOND_OFFSET = re.compile(r"([+-])(\d{2}):(\d{2}):(\d{2})\.(\d{6})$")


def _fromisoformat(cls: type, limits: Limits | None = None) -> RebuildFn:
    """``cls.fromisoformat`` of the stored text (bounded by ``limits.max_text_length`` when given)."""
    max_length = limits.max_text_length if limits is not None else None

    def rebuild(env: list[Any]) -> Any:
        text = env[2]
        if type(text) is not str:
            expect(text, str, "ISO text")
        if max_length is not None and len(text) > max_length:
            check_text(text, "ISO text", cast(Limits, limits))
        value = cls.fromisoformat(text)  # type: ignore[attr-defined]
        if cls is date or value.tzinfo is None or "." not in text[-7:]:
            return value
        # The stock writer stores a sub-second offset ("+00:00:00.000007") exactly,
        # but fromisoformat() may read it as UTC: take the offset from the text.
        match = _SUBSECOND_OFFSET.search(text)
        if match is None:
            return value
        sign, hours, minutes, seconds, micros = match.groups()
        offset = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds), microseconds=int(micros))
        return value.replace(tzinfo=timezone(-offset if sign == "-" else offset))

    return rebuild


REBUILDERS.update(
    {
        (codes.METHOD_SINGLE_ARG, "datetime", "datetime"): _fromisoformat(datetime),
        (codes.CONSTRUCTOR_KW_ARGS, "datetime", "datetime"): _rebuild_datetime_kw,
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "datetime"): _rebuild_datetime_pos,
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "date"): _three_ints(date),
        (codes.CONSTRUCTOR_KW_ARGS, "datetime", "time"): lambda env: time(**_tzinfo_ok(_kwargs(env, _TIME_KEYS))),
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "timedelta"): _three_ints(timedelta),
        (codes.CONSTRUCTOR_POS_ARGS, "datetime", "timezone"): lambda env: timezone(*expect(env[2], list, "args")),
        (codes.CONSTRUCTOR_SINGLE_ARG, "zoneinfo", "ZoneInfo"): _zone,
    }
)  # fmt: skip

#: ext code 3 methods: the only ``(module, name, method)`` triples ever dispatched.
METHODS: dict[tuple[str, str, str], RebuildFn] = {
    ("datetime", "datetime", "fromisoformat"): _fromisoformat(datetime),
    ("datetime", "date", "fromisoformat"): _fromisoformat(date),
    ("datetime", "time", "fromisoformat"): _fromisoformat(time),
}


# --- addresses, paths, patterns ---------------------------------------------


def _ip(obj: Any, call: Any) -> Ext:
    cls = type(obj)
    return _ext(call, codes.CONSTRUCTOR_SINGLE_ARG, cls.__module__, cls.__name__, check_text(str(obj), "address", call.limits))


def _path(obj: pathlib.PurePath, call: Any) -> Ext:
    cls = type(obj)
    try:
        # Parts are str (lone surrogates from undecodable file names go the general way).
        return Ext(codes.CONSTRUCTOR_POS_ARGS, _PACK_PLAIN((cls.__module__, cls.__name__, obj.parts)))
    except _PLAIN_FAILURES:
        return _ext(call, codes.CONSTRUCTOR_POS_ARGS, cls.__module__, cls.__name__, list(obj.parts))


def _pattern(obj: re.Pattern[Any], call: Any) -> Ext:
    check_pattern(obj.pattern, obj.flags, call.limits)
    return _ext(call, codes.CONSTRUCTOR_POS_ARGS, "re", "compile", [obj.pattern, obj.flags])


_IP_TYPES = (
    ipaddress.IPv4Address,
    ipaddress.IPv4Interface,
    ipaddress.IPv4Network,
    ipaddress.IPv6Address,
    ipaddress.IPv6Interface,
    ipaddress.IPv6Network,
)
_PATH_TYPES = (
    pathlib.Path,
    pathlib.PosixPath,
    pathlib.WindowsPath,
    pathlib.PurePath,
    pathlib.PurePosixPath,
    pathlib.PureWindowsPath,
)
PATH_TYPES = _PATH_TYPES
ENCODERS.update({cls: _ip for cls in _IP_TYPES})
ENCODERS.update({cls: _path for cls in _PATH_TYPES})
ENCODERS[re.Pattern] = _pattern


def _rebuild_path(cls: type) -> RebuildFn:
    def rebuild(env: list[Any]) -> Any:
        parts = expect(env[2], list, "path parts")
        if not all(isinstance(part, str) for part in parts):
            raise TypeError("path parts must be strings")
        return cls(*parts)

    return rebuild


def _rebuild_pattern(env: list[Any]) -> re.Pattern[Any]:
    pattern, flags = expect(env[2], list, "args")
    if not isinstance(pattern, (str, bytes)) or type(flags) is not int:
        raise TypeError("re.compile payload must be [pattern, flags]")
    return re.compile(pattern, flags)


_IPType = (
    ipaddress.IPv4Address
    | ipaddress.IPv4Interface
    | ipaddress.IPv4Network
    | ipaddress.IPv6Address
    | ipaddress.IPv6Interface
    | ipaddress.IPv6Network
)


def _rebuild_ip(cls: type[_IPType]) -> RebuildFn:
    def rebuild(env: list[Any]) -> _IPType:
        return cls(expect(env[2], str, "address"))

    return rebuild


REBUILDERS.update({(codes.CONSTRUCTOR_SINGLE_ARG, "ipaddress", cls.__name__): _rebuild_ip(cls) for cls in _IP_TYPES})
for _module in ("pathlib", "pathlib._local"):
    for _cls in _PATH_TYPES:
        REBUILDERS[(codes.CONSTRUCTOR_POS_ARGS, _module, _cls.__name__)] = _rebuild_path(_cls)
REBUILDERS[(codes.CONSTRUCTOR_POS_ARGS, "re", "compile")] = _rebuild_pattern


# --- exceptions -------------------------------------------------------------

BUILTIN_EXCEPTIONS: dict[str, type[BaseException]] = {
    name: obj
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}


def _exception_repr(obj: BaseException, call: Any) -> Any:
    # LangGraph stores a failing node's exception as a pending write and, after a
    # reload, hands out the stored value as ``StateSnapshot.tasks[i].error``, which
    # its runtime and users treat as a string ("boom" in task.error). The stock
    # writer stores repr(exc); so does serde_kit, so both readers give that string
    # back and no stored bytes can make a reader build an exception object.
    return repr(obj)


def _exception_from_repr(env: list[Any]) -> str:
    # Rows written by earlier serde_kit versions: ext 3 ``[.., repr, "from_args", args]``.
    # Read as every stock reader reads them: the repr string.
    return cast(str, expect(env[2], str, "exception repr"))


#: ext 3 "method" of earlier serde_kit exception rows ``[module, name, repr, method, args]``.
EXCEPTION_METHOD = codes.LEGACY_EXCEPTION_METHOD

for _name in BUILTIN_EXCEPTIONS:
    METHODS[("builtins", _name, EXCEPTION_METHOD)] = _exception_from_repr


# --- strings with lone surrogates -------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` cannot be encoded as UTF-8 (``"\\ud800"``, surrogateescape output)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class LoneSurrogates:
    """Marks a str with lone surrogates for the encoder (msgpack strings are UTF-8)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _lone_surrogates(obj: LoneSurrogates, call: Any) -> Ext:
    # ext 3 ["builtins", "str", text with "?" for each surrogate, "from_args",
    # [UTF-8 bytes with surrogatepass]]: every stock reader refuses the method and
    # returns the third element, which is exactly what the stock writer stores
    # (OPT_REPLACE_SURROGATES writes "?"); serde_kit rebuilds the exact text.
    text = obj.text
    return Ext(
        codes.METHOD_SINGLE_ARG,
        call.pack(
            ["builtins", "str", _SURROGATE.sub("?", text), EXCEPTION_METHOD, [text.encode("utf-8", "surrogatepass")]]
        ),
    )


def _str_from_surrogatepass(env: list[Any]) -> str:
    args = expect(env[4], list, "str args")
    if len(args) != 1 or type(args[0]) is not bytes:
        raise TypeError("str payload must be [UTF-8 bytes]")
    return args[0].decode("utf-8", "surrogatepass")


ENCODERS[LoneSurrogates] = _lone_surrogates
METHODS[("builtins", "str", EXCEPTION_METHOD)] = _str_from_surrogatepass


def without_lone_surrogates(value: Any) -> Any:
    """Copy of the plain containers in ``value`` with every str (value or key) that
    holds lone surrogates replaced by a :class:`LoneSurrogates` marker."""
    cls = type(value)
    if cls is str:
        return LoneSurrogates(value) if has_lone_surrogates(value) else value
    if cls is list:
        return [without_lone_surrogates(item) for item in value]
    if cls is dict:
        for key in value:
            if type(key) is str and has_lone_surrogates(key):
                # A marked key would need the key-preserving ext form, which a strict
                # stock reader returns as a list of pairs instead of a dict.
                raise EncodeError(
                    f"dict key {key!r} holds lone surrogates (invalid UTF-8), which no msgpack "
                    "map key can hold in a form the stock reader reads back as a dict; "
                    "store the key as bytes instead: key.encode('utf-8', 'surrogatepass')"
                )
        return {k: without_lone_surrogates(v) for k, v in value.items()}
    return value  # other objects reach ``default`` and pack their own payloads


def resolve(cls: type) -> EncodeFn | None:
    """Writer for stdlib types matched by subclass rather than exact type."""
    if issubclass(cls, BaseException):
        return _exception_repr
    return None


# --- the decode budget ------------------------------------------------------
#
# Rebuilders whose cost or result size depends on what the row holds: they
# check the decoder's Limits first and replace the plain entries above.

_new_uuid = object.__new__
_set_attribute = object.__setattr__
_UUID_UNKNOWN = uuid.SafeUUID.unknown


def _uuid_from_hex(text: str) -> uuid.UUID:
    """``uuid.UUID(hex=text)``, without its Python-level parsing for the 32 plain hex
    digits every writer stores (``UUID.hex``); any other form goes through UUID()."""
    if len(text) == 32 and text.isascii() and text.isalnum():
        value = _new_uuid(uuid.UUID)
        _set_attribute(value, "int", int(text, 16))  # ValueError for a letter beyond f, as UUID() raises
        _set_attribute(value, "is_safe", _UUID_UNKNOWN)
        return value
    return uuid.UUID(hex=text)


def limited_rebuilders(limits: Limits) -> dict[tuple[int, str, str], RebuildFn]:
    """The rebuilders that need ``limits``, keyed like :data:`REBUILDERS`."""
    max_text = limits.max_text_length
    # A Decimal's exponent costs nothing until the value is used; the default context
    # (and so the stock reader) allows up to Emax: so do we, or more if the limit says.
    max_exponent = decimal_max_exponent(limits)

    def text(value: Any, what: str) -> str:
        if type(value) is not str:
            expect(value, str, what)
        return check_text(value, what, limits)

    def big_int(env: list[Any]) -> int:
        digits, base = expect(env[2], list, "args")
        if base != 16 or not isinstance(digits, str):
            raise ValueError("big int payload must be [hex digits, 16]")
        check_int_digits(digits, limits)
        return int(digits, 16)

    def fraction(env: list[Any]) -> fractions.Fraction:
        numerator, denominator = _ints(env[2], 2)
        check_fraction_part(numerator, limits)
        check_fraction_part(denominator, limits)
        # Reducing by gcd is quadratic in the parts' bits: a row may hold many.
        gcd_work = numerator.bit_length() * denominator.bit_length() // budget.GCD_BITS_SQUARED_PER_UNIT
        if gcd_work > budget.FREE_UNITS:
            budget.charge(gcd_work, "reducing stored Fractions")
        return fractions.Fraction(numerator, denominator)

    def decimal_(env: list[Any]) -> decimal.Decimal:
        # Its digits are bounded by the text; its exponent is not ("1e999999999").
        source = env[2]
        value = decimal.Decimal(source if type(source) is str and len(source) <= max_text else text(source, "Decimal text"))
        check_decimal_exponent(value, max_exponent, limits)
        return value

    def pattern(env: list[Any]) -> re.Pattern[Any]:
        source, flags = expect(env[2], list, "args")
        if not isinstance(source, (str, bytes)) or type(flags) is not int:
            raise TypeError("re.compile payload must be [pattern, flags]")
        check_pattern(source, flags, limits)
        budget.charge(budget.regex_units(source, flags), "compiling stored regex patterns")
        return re.compile(source, flags)

    def items(value: Any, what: str) -> list[Any]:
        found = _set_items(value)
        check_hash_collisions(found, limits, what)
        return found

    def pairs(value: Any) -> list[Any]:
        found = _pairs(value)
        check_hash_collisions([pair[0] for pair in found], limits, "dict keys")
        return found

    hex_fits = max_text >= 32

    def uuid_(env: list[Any]) -> uuid.UUID:
        source = env[2]
        if hex_fits and type(source) is str and len(source) == 32 and source.isascii() and source.isalnum():
            value = _new_uuid(uuid.UUID)  # as _uuid_from_hex, in one frame
            _set_attribute(value, "int", int(source, 16))
            _set_attribute(value, "is_safe", _UUID_UNKNOWN)
            return value
        return _uuid_from_hex(text(source, "UUID hex"))

    def zone(env: list[Any]) -> zoneinfo.ZoneInfo:
        key = env[2]
        if type(key) is str and len(key) <= max_text:
            found = KNOWN_ZONES.get(key)
            if found is not None:
                return found
        return load_zone(text(key, "zone key"))

    table: dict[tuple[int, str, str], RebuildFn] = {
        (codes.CONSTRUCTOR_POS_ARGS, "builtins", "int"): big_int,
        (codes.CONSTRUCTOR_POS_ARGS, "fractions", "Fraction"): fraction,
        (codes.CONSTRUCTOR_SINGLE_ARG, "decimal", "Decimal"): decimal_,
        (codes.CONSTRUCTOR_POS_ARGS, "re", "compile"): pattern,
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "set"): lambda env: set(items(env[2], "set items")),
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "frozenset"): lambda env: frozenset(items(env[2], "frozenset items")),
        (codes.CONSTRUCTOR_SINGLE_ARG, "builtins", "dict"): lambda env: dict(pairs(env[2])),
        (codes.CONSTRUCTOR_SINGLE_ARG, "uuid", "UUID"): uuid_,
        (codes.CONSTRUCTOR_SINGLE_ARG, "zoneinfo", "ZoneInfo"): zone,
    }  # fmt: skip

    def ip(cls: type[_IPType]) -> RebuildFn:
        def rebuild(env: list[Any]) -> _IPType:
            return cls(text(env[2], "address"))

        return rebuild

    for cls in _IP_TYPES:
        table[(codes.CONSTRUCTOR_SINGLE_ARG, "ipaddress", cls.__name__)] = ip(cls)
    return table


def limited_methods(limits: Limits) -> dict[tuple[str, str, str], RebuildFn]:
    """:data:`METHODS`, with the text the ISO parsers take bounded by ``limits``."""

    found = dict(METHODS)
    for cls in (datetime, date, time):
        found[("datetime", cls.__name__, "fromisoformat")] = _fromisoformat(cls, limits)
    return found
