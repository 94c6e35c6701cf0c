"""User-defined classes: enums, namedtuples, dataclasses and plain constructors.

These are written with the class's ``(module, qualname)`` and rebuilt by
importing that class, which the decoder does only after the allowlist said yes.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import Any, cast

from ormsgpack import Ext

from ..errors import EncodeError
from . import codes
from .codes import EncodeFn, RebuildFn, expect


def importable_key(cls: type) -> tuple[str, str]:
    """``(module, qualname)`` for ``cls``; EncodeError when it could not be imported back.

    A parametrized generic pydantic model keeps its name (``"Box[int]"``, as the
    stock writer stores it); the decoder parametrises the class again on read.
    """
    module, qualname = cls.__module__, cls.__qualname__
    if "<locals>" in qualname:
        raise EncodeError(
            f"{module}.{qualname} is defined inside a function, so it cannot be imported "
            "when the value is read back; move the class to module level"
        )
    return module, qualname


def _enum(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    return lambda obj, call: Ext(codes.CONSTRUCTOR_SINGLE_ARG, call.pack([module, name, obj.value]))


def _namedtuple(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    fields = cls._fields  # type: ignore[attr-defined]
    return lambda obj, call: Ext(
        codes.CONSTRUCTOR_KW_ARGS, call.pack([module, name, dict(zip(fields, obj))])
    )


def _dataclass(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    names = tuple(field.name for field in dataclasses.fields(cls))
    missing = object()

    def fields_of(obj: Any) -> dict[str, Any]:
        values = {}
        for field_name in names:
            value = getattr(obj, field_name, missing)
            if value is not missing:
                values[field_name] = value
        return values

    if not _fields_read_from_dict(cls, names):
        return lambda obj, call: Ext(codes.CONSTRUCTOR_KW_ARGS, call.pack([module, name, fields_of(obj)]))

    def encode(obj: Any, call: Any) -> Ext:
        values = obj.__dict__
        if tuple(values) != names:  # a field unset or deleted, or another attribute set
            values = fields_of(obj)
        return Ext(codes.CONSTRUCTOR_KW_ARGS, call.pack([module, name, values]))

    return encode


def _fields_read_from_dict(cls: type, names: tuple[str, ...]) -> bool:
    """Whether ``getattr(obj, field)`` of a ``cls`` instance is ``obj.__dict__[field]`` when
    the field is there: plain attribute lookup, no data descriptor (property, slot) on a field.

    Then an instance dict holding exactly the fields, in field order, is the dict the
    writer stores, and it is stored as it is instead of read field by field."""
    if cast(Any, cls).__getattribute__ is not object.__getattribute__ or "__dict__" not in dir(cls):
        return False
    for field_name in names:
        for klass in cls.__mro__:
            attribute = klass.__dict__.get(field_name, missing_attribute)
            if attribute is not missing_attribute:
                if hasattr(type(attribute), "__set__") or hasattr(type(attribute), "__delete__"):
                    return False
                break
    return True


missing_attribute = object()


def resolve(cls: type) -> EncodeFn | None:
    """Writer for an enum, namedtuple or dataclass, or None."""
    if issubclass(cls, enum.Enum):
        return _enum(cls)
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return _namedtuple(cls)
    if dataclasses.is_dataclass(cls):
        return _dataclass(cls)
    return None


def rebuilder(code: int, cls: Any) -> RebuildFn:
    """How to construct an imported, allowed ``cls`` from an ext ``code`` envelope."""
    if code == codes.CONSTRUCTOR_SINGLE_ARG:
        if isinstance(cls, type) and issubclass(cls, enum.Enum):
            return _enum_rebuilder(cls)
        return lambda env: cls(env[2])
    if code == codes.CONSTRUCTOR_POS_ARGS:
        return lambda env: cls(*expect(env[2], list, "args"))
    if code != codes.CONSTRUCTOR_KW_ARGS:
        raise TypeError(f"ext code {code} cannot construct {cls!r}")
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return _dataclass_rebuilder(cls)
    return lambda env: cls(**_str_keys(env[2]))


def _enum_rebuilder(cls: type) -> RebuildFn:
    # The lookup Enum.__call__ starts with, without its Python frames (aliases and
    # values only _missing_ knows take the full call).
    members = getattr(cls, "_value2member_map_", None)
    lookup = members.get if isinstance(members, dict) else None

    def rebuild(env: list[Any]) -> Any:
        value = env[2]
        if lookup is not None and (type(value) is str or type(value) is int):
            member = lookup(value)
            if member is not None:
                return member
        try:
            return cls(value)
        except ValueError:
            if type(value) is not list:
                raise
            # The stock writer stores a tuple value as a plain array.
            return cls(_as_tuple(value))

    return rebuild


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(item) for item in value) if type(value) is list else value


def _str_keys(kwargs: Any) -> dict[str, Any]:
    kwargs = expect(kwargs, dict, "kwargs")
    if not all(isinstance(key, str) for key in kwargs):
        raise TypeError("keyword names must be strings")
    return cast("dict[str, Any]", kwargs)


def _plain_init_fields(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass whose ``__init__`` only stores its arguments as
    attributes: generated by ``dataclasses`` (no ``__post_init__``, no init-only or
    init=False fields), on a class with an instance dict, its own ``__new__`` and
    ``__setattr__`` untouched (or frozen, whose ``__init__`` bypasses it) and no data
    descriptor on a field name. None for any other class."""
    params = getattr(cls, "__dataclass_params__", None)
    init: Any = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if params is None or code is None or code.co_filename != "<string>" or hasattr(cls, "__post_init__"):
        return None
    # cast: typeshed types cls.__new__ / cls.__setattr__ as those of the metaclass, not the class's own.
    if "__slots__" in cls.__dict__ or cast(Any, cls).__new__ is not object.__new__:
        return None
    if cast(Any, cls).__setattr__ is not object.__setattr__ and not params.frozen:
        return None
    fields = dataclasses.fields(cls)
    names = tuple(field.name for field in fields)
    arguments = tuple(inspect.signature(init).parameters)[1:]
    if arguments != names or not all(field.init for field in fields):
        return None
    if any(hasattr(type(cls.__dict__.get(name)), "__set__") for name in names):
        return None
    return names


def _dataclass_rebuilder(cls: type) -> RebuildFn:
    # The constructor runs (so __post_init__ checks still apply); fields with
    # init=False are then restored as stored. A generated __init__ that only
    # stores its arguments is skipped when every field is stored, in order.
    later = frozenset(field.name for field in dataclasses.fields(cls) if not field.init)
    plain = _plain_init_fields(cls)
    new = object.__new__

    def rebuild(env: list[Any]) -> Any:
        kwargs = _str_keys(env[2])
        if plain is not None and tuple(kwargs) == plain:
            obj: Any = new(cls)
            obj.__dict__.update(kwargs)
            return obj
        if not later:
            return cls(**kwargs)
        obj = cls(**{k: v for k, v in kwargs.items() if k not in later})
        for key in later & kwargs.keys():
            object.__setattr__(obj, key, kwargs[key])
        return obj

    return rebuild
