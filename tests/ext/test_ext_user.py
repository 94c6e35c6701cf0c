"""Enums, namedtuples and dataclasses: exact round trips, allowlist at write and read."""

from __future__ import annotations

import dataclasses
import enum
import sys

import ormsgpack
import pytest

from serde_kit import BlockedTypeError, EncodeError, RebuildError, Serializer
from tests.support import sample_types as t

ALL = [t.Color, t.Level, t.Perm, t.Point, t.Doc, t.Frozen]


def rt(value, serde=None):
    serde = serde or Serializer(allow=ALL)
    return serde.loads_typed(serde.dumps_typed(value))


@pytest.mark.parametrize(
    "value",
    [
        t.Color.RED,
        t.Color.PAIR,
        t.Level.HIGH,
        t.Perm.READ | t.Perm.WRITE,
        t.Point(1, (2, 3)),
        t.Doc("a", ("x", "y"), {"k": (1,)}),
        t.Frozen((1, 2, 3)),
    ],
    ids=repr,
)
def test_exact_round_trip(value):
    back = rt(value)
    assert type(back) is type(value) and back == value
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            assert type(getattr(back, field.name)) is type(getattr(value, field.name))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="StrEnum is new in 3.11")
def test_str_enum_round_trips_as_enum_not_str():
    back = rt(t.Mode.FAST, Serializer(allow=[t.Mode]))
    assert back is t.Mode.FAST


def test_init_false_field_is_restored_as_stored():
    value = t.Frozen((1,))
    object.__setattr__(value, "derived", 99)
    assert rt(value).derived == 99


def test_writing_a_type_the_reader_would_refuse_fails_at_write_time():
    with pytest.raises(EncodeError) as info:
        Serializer().dumps_typed({"doc": t.Doc("a")})
    message = str(info.value)
    assert "tests.support.sample_types.Doc" in message and "Serializer(allow=" in message


def test_reading_a_type_not_allowed_raises_with_the_line_that_allows_it():
    data = Serializer(allow=[t.Doc]).dumps_typed(t.Doc("a"))
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads_typed(data)
    assert (info.value.module, info.value.name) == ("tests.support.sample_types", "Doc")
    assert "Serializer(allow=[('tests.support.sample_types', 'Doc')])" in str(info.value)
    assert "SERDE_KIT_ALLOW=tests.support.sample_types:Doc" in str(info.value)


def test_local_classes_are_refused_at_write_time():
    @dataclasses.dataclass
    class Local:
        a: int

    with pytest.raises(EncodeError, match="inside a function"):
        Serializer(allow=[("x", "y")]).dumps(Local(1))


def test_allowed_but_missing_module_is_a_rebuild_error():
    good = Serializer(allow=[t.Doc]).dumps_typed(t.Doc("a"))
    renamed = good[1].replace(b"tests.support.sample_types", b"tests.support.missing_mods")
    with pytest.raises(RebuildError, match="could not be imported"):
        Serializer(allow=[("tests.support.missing_mods", "Doc")]).loads_typed(("msgpack", renamed))


def test_constructor_rejecting_stored_fields_is_a_rebuild_error_not_none():
    serde = Serializer(allow=[t.Doc])
    data = serde.dumps(t.Doc("a")).replace(b"title", b"titlX")
    with pytest.raises(RebuildError, match="tests.support.sample_types.Doc"):
        serde.loads(data)


def test_stock_rows_of_enums_with_tuple_values_rebuild():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    stock_row = JsonPlusSerializer().dumps_typed(t.Color.PAIR)
    assert Serializer(allow=[t.Color]).loads_typed(stock_row) is t.Color.PAIR


# --- builders that skip the generated __init__ --------------------------------


@dataclasses.dataclass
class _PlainRow:
    name: str
    tags: tuple = ()
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class _FrozenRow:
    x: int
    y: int = 0


@dataclasses.dataclass
class _Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")
        self.x = self.x * 10


@dataclasses.dataclass(slots=True)
class _Slotted:
    x: int


class _Positive:
    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "_" + name

    def __get__(self, obj: object, owner: type) -> object:
        return self if obj is None else getattr(obj, self.name)

    def __set__(self, obj: object, value: int) -> None:
        if value < 0:
            raise ValueError("negative")
        object.__setattr__(obj, self.name, value)


@dataclasses.dataclass
class _Described:
    x: _Positive = _Positive()


@dataclasses.dataclass
class _Watched:
    x: int

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, ("set", value))


@dataclasses.dataclass
class _WithInitVar:
    x: int
    scale: dataclasses.InitVar[int] = 1

    def __post_init__(self, scale: int) -> None:
        self.x *= scale


_DATACLASSES = [_PlainRow, _FrozenRow, _Checked, _Slotted, _Described, _Watched, _WithInitVar]


def test_only_dataclasses_whose_init_just_stores_fields_skip_it():
    from serde_kit.ext import user

    assert user._plain_init_fields(_PlainRow) == ("name", "tags", "extra")
    assert user._plain_init_fields(_FrozenRow) == ("x", "y")
    assert user._plain_init_fields(t.Frozen) is None  # an init=False field
    for cls in (_Checked, _Slotted, _Described, _Watched, _WithInitVar):
        assert user._plain_init_fields(cls) is None, cls


@pytest.mark.parametrize(
    "value",
    [_PlainRow("a", (1, 2), {"k": {3}}), _FrozenRow(1, 2), _Checked(2), _Slotted(3), _Described(4), _Watched(5), _WithInitVar(6, 2)],
    ids=lambda v: type(v).__name__,
)
def test_dataclasses_rebuild_as_their_constructor_builds_them(value):
    serde = Serializer(allow=_DATACLASSES)
    back = serde.loads_typed(serde.dumps_typed(value))
    # What the constructor builds from the stored fields (__post_init__ and
    # __setattr__ run again on read, as they always have).
    cls = type(value)
    expected = cls(**{field.name: getattr(value, field.name) for field in dataclasses.fields(cls)})
    assert type(back) is cls
    assert repr(back) == repr(expected)
    if hasattr(expected, "__dict__"):
        assert list(vars(back).items()) == list(vars(expected).items())


def test_post_init_checks_still_run_on_read():
    serde = Serializer(allow=_DATACLASSES)
    stored = ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb([_Checked.__module__, "_Checked", {"x": -1}])))
    with pytest.raises(RebuildError, match="x must not be negative"):
        serde.loads_typed(("msgpack", stored))


def test_enum_members_by_value_aliases_and_missing():
    class Shade(enum.Enum):
        DARK = "d"
        BLACK = "d"  # an alias
        LIGHT = 1

        @classmethod
        def _missing_(cls, value: object) -> Shade | None:
            return cls.LIGHT if value == "l" else None

    from serde_kit.ext import user

    rebuild = user.rebuilder(0, Shade)
    assert rebuild(["m", "Shade", "d"]) is Shade.DARK
    assert rebuild(["m", "Shade", 1]) is Shade.LIGHT
    assert rebuild(["m", "Shade", "l"]) is Shade.LIGHT  # through _missing_
    assert rebuild(["m", "Shade", True]) is Shade.LIGHT  # True == 1: Enum's own lookup, not the shortcut
    with pytest.raises(ValueError):
        rebuild(["m", "Shade", "x"])
