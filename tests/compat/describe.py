"""A JSON-able description of a value, comparable across library versions.

The corpus generator runs this inside each old release's venv (on the value it
wrote, and on what that release read back); the tests run it on what today's
serde_kit reads. Standard library only: third-party types are recognised by
duck typing, never imported here.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import ipaddress
import json
import math
import pathlib
import re
import uuid
from typing import Any

_PLAIN = (bool, int, float, str, bytes, bytearray, list, dict, tuple, set, frozenset)


def _key(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _tz(tz: Any) -> Any:
    if tz is None:
        return None
    if type(tz) is datetime.timezone:
        off = tz.utcoffset(None)
        return ["timezone", [off.days, off.seconds, off.microseconds], tz.tzname(None)]
    key = getattr(tz, "key", None)
    if key is not None:
        return ["zoneinfo", key]
    return ["tzinfo", _key(tz), repr(tz)]


def describe(obj: Any) -> Any:
    """A nested list of JSON values saying what ``obj`` is, type included."""
    cls = type(obj)
    if obj is None or cls is bool or cls is str:
        return obj
    if cls is int:
        return ["int", str(obj)]
    if cls is float:
        return ["float", "nan" if math.isnan(obj) else repr(obj)]
    if cls is bytes or cls is bytearray:
        return [cls.__name__, obj.hex()]
    if cls is list:
        return ["list", [describe(item) for item in obj]]
    if cls is dict:
        return ["dict", [[describe(k), describe(v)] for k, v in obj.items()]]
    if isinstance(obj, enum.Enum):
        return ["enum", _key(obj), describe(obj.value)]
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):
        return ["namedtuple", _key(obj), describe(dict(obj._asdict()))]
    if cls is tuple:
        return ["tuple", [describe(item) for item in obj]]
    if cls is set or cls is frozenset:
        items = [describe(item) for item in obj]
        return [cls.__name__, sorted(items, key=lambda d: json.dumps(d, sort_keys=True))]
    if cls is collections.deque:
        return ["deque", [describe(item) for item in obj], obj.maxlen]
    if isinstance(obj, datetime.datetime):
        return ["datetime", _key(obj), obj.replace(tzinfo=None).isoformat(), _tz(obj.tzinfo), obj.fold]
    if isinstance(obj, datetime.date):
        return ["date", _key(obj), obj.isoformat()]
    if isinstance(obj, datetime.time):
        return ["time", obj.replace(tzinfo=None).isoformat(), _tz(obj.tzinfo), obj.fold]
    if isinstance(obj, datetime.timedelta):
        return ["timedelta", obj.days, obj.seconds, obj.microseconds]
    if isinstance(obj, datetime.tzinfo):
        return ["tz", _tz(obj)]
    if isinstance(obj, uuid.UUID):
        return ["uuid", str(obj)]
    if isinstance(obj, decimal.Decimal):
        return ["decimal", str(obj)]
    if isinstance(obj, pathlib.PurePath):
        return ["path", cls.__name__, str(obj)]
    if isinstance(obj, re.Pattern):
        return ["re", obj.pattern, obj.flags]
    if isinstance(obj, (ipaddress._BaseAddress, ipaddress._BaseNetwork, ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return ["ip", cls.__name__, str(obj)]
    if isinstance(obj, BaseException):
        return ["exception", _key(obj), describe(list(obj.args))]
    if cls.__name__ == "ndarray" and hasattr(obj, "dtype"):
        return ["ndarray", obj.dtype.str, list(obj.shape), obj.tobytes(order="C").hex()]
    if hasattr(cls, "__pydantic_fields__") or hasattr(cls, "model_fields") and hasattr(obj, "__pydantic_extra__"):
        extra = getattr(obj, "__pydantic_extra__", None) or {}
        return ["pydantic", _key(obj), describe(dict(obj.__dict__)), describe(dict(extra))]
    if hasattr(cls, "__fields__") and hasattr(obj, "__fields_set__"):
        return ["pydantic.v1", _key(obj), describe(dict(obj.__dict__))]
    if callable(getattr(obj, "get_secret_value", None)):
        return ["secret", _key(obj), describe(obj.get_secret_value())]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if hasattr(obj, f.name)}
        return ["dataclass", _key(obj), describe(fields)]
    for base in _PLAIN:
        if isinstance(obj, base):  # a subclass of a builtin
            return ["subclass", _key(obj), describe(base(obj))]
    slots = [s for klass in cls.__mro__ for s in getattr(klass, "__slots__", ()) if s != "__weakref__"]
    if slots:
        return ["object", _key(obj), describe({s: getattr(obj, s) for s in slots if hasattr(obj, s)})]
    if hasattr(obj, "__dict__"):
        return ["object", _key(obj), describe(dict(vars(obj)))]
    return ["repr", _key(obj), repr(obj)]
