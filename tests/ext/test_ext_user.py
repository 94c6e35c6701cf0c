"""Enums, namedtuples and dataclasses: exact round trips, allowlist at write and read."""

from __future__ import annotations

import dataclasses
import sys

import pytest

import sample_types as t
from serde_kit import BlockedTypeError, EncodeError, RebuildError, Serializer

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
    assert "sample_types.Doc" in message and "Serializer(allow=" in message


def test_reading_a_type_not_allowed_raises_with_the_line_that_allows_it():
    data = Serializer(allow=[t.Doc]).dumps_typed(t.Doc("a"))
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads_typed(data)
    assert (info.value.module, info.value.name) == ("sample_types", "Doc")
    assert "Serializer(allow=[('sample_types', 'Doc')])" in str(info.value)
    assert "SERDE_KIT_ALLOW=sample_types:Doc" in str(info.value)


def test_local_classes_are_refused_at_write_time():
    @dataclasses.dataclass
    class Local:
        a: int

    with pytest.raises(EncodeError, match="inside a function"):
        Serializer(allow=[("x", "y")]).dumps(Local(1))


def test_allowed_but_missing_module_is_a_rebuild_error():
    good = Serializer(allow=[t.Doc]).dumps_typed(t.Doc("a"))
    renamed = good[1].replace(b"sample_types", b"missing_mods")
    with pytest.raises(RebuildError, match="could not be imported"):
        Serializer(allow=[("missing_mods", "Doc")]).loads_typed(("msgpack", renamed))


def test_constructor_rejecting_stored_fields_is_a_rebuild_error_not_none():
    serde = Serializer(allow=[t.Doc])
    data = serde.dumps(t.Doc("a")).replace(b"title", b"titlX")
    with pytest.raises(RebuildError, match="sample_types.Doc"):
        serde.loads(data)


def test_stock_rows_of_enums_with_tuple_values_rebuild():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    stock_row = JsonPlusSerializer().dumps_typed(t.Color.PAIR)
    assert Serializer(allow=[t.Color]).loads_typed(stock_row) is t.Color.PAIR
