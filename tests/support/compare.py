"""Strict, same-type, recursive equality for round-trip tests.

``==`` is too forgiving for a serializer: ``(1, 2) == [1, 2]`` is False but
``1 == 1.0 == True`` is True, ``Decimal("1.0") == Decimal("1")``,
``timezone(h) == timezone(h, "name")``, two datetimes in different zones
compare equal when they name the same instant, NaN never equals itself and
exceptions and numpy arrays have no useful ``==`` at all.

:func:`assert_same` walks both values together and fails with the path of the
first difference (``$.items[3].when``), so a failing property names exactly
what was lost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
from collections import deque
from collections.abc import Iterator
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any

__all__ = ["Mismatch", "assert_same", "is_same", "safe_repr", "writeable_not_checked"]

_check_writeable = True


@contextlib.contextmanager
def writeable_not_checked() -> Iterator[None]:
    """Within the block, arrays may come back read-only (the stock reader's arrays do)."""
    global _check_writeable
    before, _check_writeable = _check_writeable, False
    try:
        yield
    finally:
        _check_writeable = before


class Mismatch(AssertionError):
    """Two values differ; the message starts with the path of the difference."""


def is_same(expected: Any, actual: Any) -> bool:
    """Return True when :func:`assert_same` would pass."""
    try:
        assert_same(expected, actual)
    except Mismatch:
        return False
    return True


def assert_same(expected: Any, actual: Any, path: str = "$") -> None:
    """Raise :class:`Mismatch` unless ``actual`` is an exact, same-type copy of ``expected``."""
    te, ta = type(expected), type(actual)
    if te is not ta:
        _fail(path, f"type {_qual(ta)} != {_qual(te)} (expected {safe_repr(expected, 200)}, got {safe_repr(actual, 200)})")
    if expected is actual and not _is_mutable_container(expected):
        return
    checker = _dispatch(expected)
    checker(expected, actual, path)


def _fail(path: str, why: str) -> None:
    raise Mismatch(f"{path}: {why}")


def safe_repr(v: Any, limit: int = 200) -> str:
    """``repr`` cut to ``limit``; some reprs raise (langgraph Command holding a numpy array)."""
    try:
        return repr(v)[:limit]
    except Exception as exc:
        return f"<{type(v).__name__}: repr raised {type(exc).__name__}>"


def _qual(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _is_mutable_container(v: Any) -> bool:
    return isinstance(v, (list, dict, set, bytearray, deque))


def _dispatch(v: Any):
    np = _numpy()
    if isinstance(v, float):
        return _float if np is None or not isinstance(v, np.generic) else _np_scalar
    if np is not None:
        if isinstance(v, np.ndarray):
            return _ndarray
        if isinstance(v, np.generic):
            return _np_scalar
    if isinstance(v, complex):
        return _complex
    if isinstance(v, Decimal):
        return _decimal
    if isinstance(v, BaseException):
        return _exception
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        return _sequence  # namedtuple: type already checked, compare items
    if isinstance(v, (list, tuple)):
        return _sequence
    if isinstance(v, deque):
        return _deque
    if isinstance(v, dict):
        return _dict
    if isinstance(v, (set, frozenset)):
        return _set
    if isinstance(v, datetime):
        return _datetime
    if isinstance(v, time):
        return _time
    if isinstance(v, date):
        return _plain
    if isinstance(v, timezone):
        return _timezone
    if isinstance(v, re.Pattern):
        return _pattern
    if _is_pydantic_v2(v):
        return _pydantic_v2
    if _is_pydantic_v1(v):
        return _pydantic_v1
    if _is_secret(v):
        return _secret
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _dataclass
    if hasattr(type(v), "__slots__") and type(v).__module__.startswith("langgraph"):
        return _slots  # langgraph Send
    return _plain


def _numpy():
    import sys

    return sys.modules.get("numpy")


def _plain(e: Any, a: Any, path: str) -> None:
    if e != a:
        _fail(path, f"{safe_repr(a, 200)} != {safe_repr(e, 200)}")


def _float(e: float, a: float, path: str) -> None:
    if math.isnan(e):
        if not math.isnan(a):
            _fail(path, f"{safe_repr(a)} is not nan")
        return
    if e != a or math.copysign(1.0, e) != math.copysign(1.0, a):
        _fail(path, f"{safe_repr(a)} != {safe_repr(e)}")


def _complex(e: complex, a: complex, path: str) -> None:
    _float(e.real, a.real, path + ".real")
    _float(e.imag, a.imag, path + ".imag")


def _decimal(e: Decimal, a: Decimal, path: str) -> None:
    # as_tuple keeps sign, digits and exponent: 1.0 vs 1, -0 vs 0, sNaN vs NaN.
    if e.as_tuple() != a.as_tuple():
        _fail(path, f"{safe_repr(a)} != {safe_repr(e)}")


def _exception(e: BaseException, a: BaseException, path: str) -> None:
    assert_same(e.args, a.args, path + ".args")


def _sequence(e: Any, a: Any, path: str) -> None:
    if len(e) != len(a):
        _fail(path, f"length {len(a)} != {len(e)}")
    for i, (x, y) in enumerate(zip(e, a)):
        assert_same(x, y, f"{path}[{i}]")


def _deque(e: deque, a: deque, path: str) -> None:
    if e.maxlen != a.maxlen:
        _fail(path, f"maxlen {a.maxlen} != {e.maxlen}")
    _sequence(e, a, path)


def _dict(e: dict, a: dict, path: str) -> None:
    if len(e) != len(a):
        _fail(path, f"{len(a)} keys != {len(e)} keys")
    # Insertion order is part of the value a user sees; msgpack keeps it.
    for i, ((ke, ve), (ka, va)) in enumerate(zip(e.items(), a.items())):
        assert_same(ke, ka, f"{path}.<key {i}>")
        assert_same(ve, va, f"{path}[{safe_repr(ke, 60)}]")


def _set(e: Any, a: Any, path: str) -> None:
    # A NaN is not equal to itself, so two sets holding one each differ under ==: those
    # items are matched by type and repr instead, everything else by value.
    e_odd, a_odd = _not_self_equal(e), _not_self_equal(a)
    if len(e) != len(a) or e_odd != a_odd or {x for x in e if x == x} != {x for x in a if x == x}:
        _fail(path, f"{safe_repr(a, 200)} != {safe_repr(e, 200)}")
    by_value = {x: x for x in a if x == x}
    for x in e:
        if x == x:
            assert_same(x, by_value[x], f"{path}{{{safe_repr(x, 60)}}}")


def _not_self_equal(items: Any) -> list[tuple[str, str]]:
    return sorted((type(x).__qualname__, repr(x)) for x in items if x != x)


def _tz_equal(e: Any, a: Any, path: str) -> None:
    if e is None and a is None:
        return
    assert_same(e, a, path)


def _datetime(e: datetime, a: datetime, path: str) -> None:
    # Compare wall-clock fields, fold and zone: == on aware datetimes compares instants.
    fields = ("year", "month", "day", "hour", "minute", "second", "microsecond", "fold")
    for f in fields:
        if getattr(e, f) != getattr(a, f):
            _fail(path, f"{f} {getattr(a, f)} != {getattr(e, f)} ({safe_repr(a)} vs {safe_repr(e)})")
    _tz_equal(e.tzinfo, a.tzinfo, path + ".tzinfo")


def _time(e: time, a: time, path: str) -> None:
    for f in ("hour", "minute", "second", "microsecond", "fold"):
        if getattr(e, f) != getattr(a, f):
            _fail(path, f"{f} {getattr(a, f)} != {getattr(e, f)}")
    _tz_equal(e.tzinfo, a.tzinfo, path + ".tzinfo")


def _timezone(e: timezone, a: timezone, path: str) -> None:
    # timezone.__eq__ ignores the name.
    if e.utcoffset(None) != a.utcoffset(None) or e.tzname(None) != a.tzname(None):
        _fail(path, f"{safe_repr(a)} != {safe_repr(e)}")


def _pattern(e: re.Pattern, a: re.Pattern, path: str) -> None:
    if e.pattern != a.pattern or type(e.pattern) is not type(a.pattern) or e.flags != a.flags:
        _fail(path, f"{safe_repr(a)} != {safe_repr(e)}")


def _is_pydantic_v2(v: Any) -> bool:
    return hasattr(type(v), "model_fields") and hasattr(v, "model_dump")


def _is_pydantic_v1(v: Any) -> bool:
    return hasattr(type(v), "__fields__") and hasattr(v, "dict") and not _is_pydantic_v2(v)


def _is_secret(v: Any) -> bool:
    return callable(getattr(v, "get_secret_value", None))


def _pydantic_v2(e: Any, a: Any, path: str) -> None:
    for name in type(e).model_fields:
        assert_same(getattr(e, name), getattr(a, name), f"{path}.{name}")
    assert_same(e.model_extra or {}, a.model_extra or {}, f"{path}.<extra>")


def _pydantic_v1(e: Any, a: Any, path: str) -> None:
    for name in type(e).__fields__:
        assert_same(getattr(e, name), getattr(a, name), f"{path}.{name}")


def _secret(e: Any, a: Any, path: str) -> None:
    assert_same(e.get_secret_value(), a.get_secret_value(), path + ".<secret>")


def _dataclass(e: Any, a: Any, path: str) -> None:
    for f in dataclasses.fields(e):
        assert_same(getattr(e, f.name), getattr(a, f.name), f"{path}.{f.name}")


def _slots(e: Any, a: Any, path: str) -> None:
    for cls in type(e).__mro__:
        for name in getattr(cls, "__slots__", ()):
            assert_same(getattr(e, name, None), getattr(a, name, None), f"{path}.{name}")


def _ndarray(e: Any, a: Any, path: str) -> None:
    if e.dtype != a.dtype or e.dtype.str != a.dtype.str or e.dtype.names != a.dtype.names:
        _fail(path, f"dtype {safe_repr(a.dtype)} != {safe_repr(e.dtype)}")
    if e.shape != a.shape:
        _fail(path, f"shape {a.shape} != {e.shape}")
    ef, af = e.flags, a.flags
    if ef.c_contiguous and not af.c_contiguous:
        _fail(path, "C order lost")
    if ef.f_contiguous and not ef.c_contiguous and not af.f_contiguous:
        _fail(path, "Fortran order lost")
    if _check_writeable and not af.writeable:
        _fail(path, "array came back read-only")
    # Bytes, not ==: keeps NaN payloads, -0.0 and structured fields honest.
    if e.tobytes(order="C") != a.tobytes(order="C"):
        _fail(path, "contents differ")


def _np_scalar(e: Any, a: Any, path: str) -> None:
    if e.dtype != a.dtype or e.dtype.str != a.dtype.str:
        _fail(path, f"dtype {safe_repr(a.dtype)} != {safe_repr(e.dtype)}")
    if e.tobytes() == a.tobytes():
        return
    kind = e.dtype.kind
    if kind == "f":
        # Any NaN equals any NaN, as for Python floats (a float32 signalling NaN
        # may come back quiet); -0.0 must stay -0.0; long double padding is noise.
        if (bool(np_isnan(e)) and bool(np_isnan(a))) or (e == a and np_signbit(e) == np_signbit(a)):
            return
    elif kind == "c":
        _np_scalar(e.real, a.real, path + ".real")
        _np_scalar(e.imag, a.imag, path + ".imag")
        return
    _fail(path, f"{safe_repr(a)} != {safe_repr(e)}")


def np_isnan(v: Any) -> Any:
    return _numpy().isnan(v)


def np_signbit(v: Any) -> Any:
    return _numpy().signbit(v)
