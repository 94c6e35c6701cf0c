"""A strict equality check: same types and same values, all the way down.

Plain ``==`` is too forgiving for a serializer's tests: ``(1, 2) == [1, 2]`` is
False but ``1 == 1.0 == True`` is True, two aware datetimes in different zones
compare equal when they name the same instant, ``timezone`` ignores its name,
and numpy arrays do not compare to a bool at all. :func:`assert_same` checks
the exact type at every level, treats NaN as equal to NaN, tells ``-0.0`` from
``0.0``, and compares numpy arrays by dtype, shape, ``flags.writeable`` and
contents.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import deque
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum
from typing import Any
from zoneinfo import ZoneInfo

try:
    import numpy as np
except ImportError:  # numpy is optional for serde_kit
    np = None  # type: ignore[assignment]


def assert_same(actual: Any, expected: Any, path: str = "$") -> None:
    """Raise AssertionError (naming the path) unless both values match exactly."""
    problem = _diff(actual, expected, path)
    if problem is not None:
        raise AssertionError(problem)


def same(actual: Any, expected: Any) -> bool:
    """True when :func:`assert_same` would pass."""
    return _diff(actual, expected, "$") is None


def _diff(a: Any, b: Any, path: str) -> str | None:
    if type(a) is not type(b):
        return f"{path}: type {_tname(a)} != {_tname(b)} ({_short(a)} vs {_short(b)})"
    if a is b and not isinstance(a, float):
        return None
    if isinstance(a, float):
        return _diff_float(a, b, path)
    if isinstance(a, Enum):
        return None if a is b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, (str, bytes, bytearray, int, Decimal, type(None))):
        if isinstance(a, Decimal) and a.is_nan() and b.is_nan():
            return None if str(a) == str(b) else f"{path}: {a!r} != {b!r}"
        if isinstance(a, Decimal):
            # Decimal("1.10") == Decimal("1.1"); the stored digits matter.
            return None if str(a) == str(b) else f"{path}: {a!r} != {b!r}"
        return None if a == b else f"{path}: {_short(a)} != {_short(b)}"
    if np is not None and isinstance(a, np.ndarray):
        return _diff_array(a, b, path)
    if isinstance(a, dict):
        return _diff_dict(a, b, path)
    if isinstance(a, deque):
        if a.maxlen != b.maxlen:
            return f"{path}: deque maxlen {a.maxlen} != {b.maxlen}"
        return _diff_seq(list(a), list(b), path)
    if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
        return _diff_seq(a, b, path)
    if isinstance(a, (set, frozenset)):
        return _diff_set(a, b, path)
    if isinstance(a, datetime):
        if a.replace(tzinfo=None) != b.replace(tzinfo=None) or a.fold != b.fold:
            return f"{path}: {a!r} != {b!r}"
        return _diff(a.tzinfo, b.tzinfo, path + ".tzinfo")
    if isinstance(a, time):
        if a.replace(tzinfo=None) != b.replace(tzinfo=None) or a.fold != b.fold:
            return f"{path}: {a!r} != {b!r}"
        return _diff(a.tzinfo, b.tzinfo, path + ".tzinfo")
    if isinstance(a, (date, timedelta)):
        return None if a == b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, timezone):
        if a.utcoffset(None) != b.utcoffset(None) or a.tzname(None) != b.tzname(None):
            return f"{path}: {a!r} != {b!r}"
        return None
    if isinstance(a, ZoneInfo):
        return None if a.key == b.key else f"{path}: {a!r} != {b!r}"
    if isinstance(a, tzinfo):
        return None if a == b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, re.Pattern):
        if a.pattern != b.pattern or a.flags != b.flags:
            return f"{path}: {a!r} != {b!r}"
        return None
    if hasattr(a, "_fields") and isinstance(a, tuple):  # namedtuple
        return _diff_seq(list(a), list(b), path, names=list(a._fields))
    if hasattr(a, "get_secret_value"):
        return _diff(a.get_secret_value(), b.get_secret_value(), path + ".secret")
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            d = _diff(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if d:
                return d
        return None
    if hasattr(type(a), "model_fields"):  # pydantic v2
        return _diff_model(a, b, path, list(type(a).model_fields), getattr(a, "__pydantic_extra__", None), getattr(b, "__pydantic_extra__", None))
    if hasattr(type(a), "__fields__") and hasattr(a, "dict"):  # pydantic v1
        return _diff_model(a, b, path, list(type(a).__fields__), None, None)
    slots = _slots(type(a))
    if slots:
        for name in slots:
            d = _diff(getattr(a, name, _MISSING), getattr(b, name, _MISSING), f"{path}.{name}")
            if d:
                return d
        return None
    if hasattr(a, "__dict__") and vars(a):
        d = _diff_dict(dict(vars(a)), dict(vars(b)), path + ".__dict__")
        if d:
            return d
    try:
        equal = a == b
    except Exception as e:  # noqa: BLE001 - report it as a difference
        return f"{path}: comparing {_tname(a)} raised {e!r}"
    return None if equal is True else f"{path}: {_short(a)} != {_short(b)}"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in names and not name.startswith("__"):
                names.append(name)
    return names


def _diff_float(a: float, b: float, path: str) -> str | None:
    if math.isnan(a) and math.isnan(b):
        return None
    if a == b and math.copysign(1.0, a) == math.copysign(1.0, b):
        return None
    return f"{path}: {a!r} != {b!r}"


def _diff_dict(a: dict, b: dict, path: str) -> str | None:
    ka, kb = list(a), list(b)
    if len(ka) != len(kb):
        return f"{path}: keys {ka!r} != {kb!r}"
    for x, y in zip(ka, kb):
        d = _diff(x, y, f"{path}<key {x!r}>")
        if d:
            return f"{path}: keys differ or are in another order: {ka!r} != {kb!r} ({d})"
    for key in ka:
        d = _diff(a[key], b[key], f"{path}[{key!r}]")
        if d:
            return d
    return None


def _diff_seq(a: Any, b: Any, path: str, names: list[str] | None = None) -> str | None:
    if len(a) != len(b):
        return f"{path}: length {len(a)} != {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        d = _diff(x, y, f"{path}.{names[i]}" if names else f"{path}[{i}]")
        if d:
            return d
    return None


def _diff_set(a: Any, b: Any, path: str) -> str | None:
    if len(a) != len(b):
        return f"{path}: {a!r} != {b!r}"
    unmatched = list(b)
    for x in a:
        for i, y in enumerate(unmatched):
            if _diff(x, y, path) is None:
                del unmatched[i]
                break
        else:
            return f"{path}: element {x!r} has no exact match in {b!r}"
    return None


def _diff_model(a: Any, b: Any, path: str, fields: list[str], extra_a: Any, extra_b: Any) -> str | None:
    for name in fields:
        d = _diff(getattr(a, name), getattr(b, name), f"{path}.{name}")
        if d:
            return d
    return _diff(extra_a or {}, extra_b or {}, path + ".<extra>")


def _diff_array(a: Any, b: Any, path: str) -> str | None:
    if a.dtype != b.dtype or a.dtype.str != b.dtype.str:
        return f"{path}: dtype {a.dtype!r} != {b.dtype!r}"
    if a.shape != b.shape:
        return f"{path}: shape {a.shape} != {b.shape}"
    if a.flags.writeable != b.flags.writeable:
        return f"{path}: flags.writeable {a.flags.writeable} != {b.flags.writeable}"
    if a.dtype.kind == "V" or a.dtype.fields:
        equal = a.tobytes() == b.tobytes()
    elif a.dtype.kind in "fc":
        equal = bool(np.array_equal(a, b, equal_nan=True))
    elif a.dtype.kind in "mM":
        equal = bool(np.array_equal(a.view("i8"), b.view("i8")))
    else:
        equal = bool(np.array_equal(a, b))
    return None if equal else f"{path}: array contents differ: {a!r} != {b!r}"


def _tname(x: Any) -> str:
    t = type(x)
    return f"{t.__module__}.{t.__qualname__}"


def _short(x: Any, limit: int = 120) -> str:
    r = repr(x)
    return r if len(r) <= limit else r[:limit] + "..."


def assert_no_worse(actual: Any, candidates: dict[str, Any], path: str = "$") -> None:
    """Pass when each part of ``actual`` exactly matches the same part of some candidate.

    Used for "at least as good as the stock reader": a value may be exact in
    one field (a ZoneInfo kept) and stock-shaped in another (a blocked model
    returned as its payload dict). Containers are walked only where ``actual``
    and a candidate have the same container type and the same keys or length.
    """
    problem = _diff_no_worse(actual, list(candidates.items()), path)
    if problem is not None:
        raise AssertionError(problem)


def _diff_no_worse(a: Any, cands: list[tuple[str, Any]], path: str) -> str | None:
    diffs = []
    for label, c in cands:
        d = _diff(a, c, path)
        if d is None:
            return None
        diffs.append(f"vs {label}: {d}")
    if type(a) is dict:
        shaped = [(lbl, c) for lbl, c in cands if type(c) is dict and same(list(c), list(a))]
        if shaped:
            for key in a:
                d = _diff_no_worse(a[key], [(lbl, c[key]) for lbl, c in shaped], f"{path}[{key!r}]")
                if d:
                    return d
            return None
    if type(a) in (list, tuple):
        shaped = [(lbl, c) for lbl, c in cands if type(c) is type(a) and len(c) == len(a)]
        if shaped:
            for i, x in enumerate(a):
                d = _diff_no_worse(x, [(lbl, c[i]) for lbl, c in shaped], f"{path}[{i}]")
                if d:
                    return d
            return None
    return f"{path}: matches none of the accepted results:\n  " + "\n  ".join(diffs)


def with_arrays(value: Any, *, writeable: bool) -> Any:
    """A copy of ``value`` whose numpy arrays (in dicts, lists, tuples) have ``writeable`` set."""
    if np is not None and isinstance(value, np.ndarray):
        arr = value.copy(order="K")
        arr.setflags(write=writeable)
        return arr
    if type(value) is dict:
        return {k: with_arrays(v, writeable=writeable) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(with_arrays(v, writeable=writeable) for v in value)
    return value
