"""The write path's shortcuts write exactly the bytes of the general path they stand in for.

Each shortcut (ormsgpack's own datetime text, an instance dict stored as it is, a
small array copied out, a top-level typed value packed without a plain attempt,
a large array row's known layout) is checked against the envelope built by hand
the general way, as a reader decodes it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Any

import numpy as np
import ormsgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from serde_kit import EncodeError, Limits, Serializer
from tests.support import strategy_types as T

SERDE = Serializer(allow=T.USER_TYPES)


def _ext(data: bytes) -> tuple[int, bytes]:
    found = ormsgpack.unpackb(data, ext_hook=lambda code, payload: (code, payload))
    assert type(found) is tuple
    return found


def _envelope(code: int, *items: Any) -> bytes:
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(list(items))))


@given(st.datetimes(timezones=st.sampled_from([None, timezone.utc])).map(lambda d: d.replace(fold=0)))
def test_naive_and_utc_datetimes_store_their_isoformat_text(value: datetime) -> None:
    # (fold=1 is kept by the keyword form, tested with the other stdlib types)
    expected = _envelope(3, "datetime", "datetime", value.isoformat(), "fromisoformat")
    assert SERDE.dumps(value) == expected
    assert SERDE.dumps([value]) == b"\x91" + expected


@dataclasses.dataclass
class _Record:
    id: int
    name: str
    tags: list[Any] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Computed:
    base: int

    @property
    def doubled(self) -> int:  # not a field: never stored
        return self.base * 2


@dataclasses.dataclass
class _WithProperty:
    """Its field ``name`` is then made a property over ``raw``."""

    raw: str
    name: str = ""


def _name_get(self: Any) -> str:
    return self.raw.upper()


def _name_set(self: Any, value: str) -> None:
    self.__dict__["_name"] = value


_WithProperty.name = property(_name_get, _name_set)  # type: ignore[assignment]


def _fields_envelope(obj: Any, fields: dict[str, Any]) -> bytes:
    cls = type(obj)
    return _envelope(2, cls.__module__, cls.__qualname__, fields)


def _record_cases() -> list[tuple[Any, dict[str, Any]]]:
    plain = _Record(1, "a", ["x"])
    extra = _Record(2, "b")
    extra.note = "not a field"  # type: ignore[attr-defined]
    missing = _Record(3, "c")
    del missing.tags
    reordered = _Record(4, "d", [1])
    name = reordered.__dict__.pop("name")
    reordered.__dict__["name"] = name
    return [
        (plain, {"id": 1, "name": "a", "tags": ["x"]}),
        (extra, {"id": 2, "name": "b", "tags": []}),
        (missing, {"id": 3, "name": "c"}),
        (reordered, {"id": 4, "name": "d", "tags": [1]}),
        (_Computed(5), {"base": 5}),
        (_WithProperty("q", "ignored"), {"raw": "q", "name": "Q"}),
    ]


@pytest.mark.parametrize("obj, fields", _record_cases(), ids=lambda v: type(v).__name__ if not isinstance(v, dict) else "")
def test_a_dataclass_stores_its_fields_in_field_order_whatever_its_instance_dict_holds(obj: Any, fields: dict[str, Any]) -> None:
    serde = Serializer(allow=[type(obj)])
    expected = _fields_envelope(obj, fields)
    assert serde.dumps(obj) == expected  # top level: the typed-value path
    assert serde.dumps({"k": obj}) == b"\x81\xa1k" + expected  # nested: through ormsgpack's default
    assert serde.dumps_typed(obj) == ("msgpack", expected)  # and again, its type now known


def _arrays() -> list[np.ndarray]:
    grid = np.arange(24, dtype="<f8").reshape(4, 6)
    big = np.arange(4096, dtype="<i4").reshape(64, 64)  # 16 KiB: views, not a copy
    return [
        grid, np.asfortranarray(grid), grid[:, ::2], np.array(3.5), np.zeros((0, 3)),
        big, np.asfortranarray(big), big[::2],
        np.zeros(3, dtype=[("a", "<i2"), ("b", "<f4")]), np.array(["ab", "c"]),
        np.arange(6, dtype=">u2").reshape(2, 3).T, np.array([1, 2], dtype="datetime64[ms]"),
    ]  # fmt: skip


def _array_envelope(a: np.ndarray) -> bytes:
    if a.flags.c_contiguous:
        order, buf = "C", bytes(memoryview(a.reshape(-1).view("u1"))) if a.size else b""
    elif a.flags.f_contiguous:
        order, buf = "F", bytes(memoryview(a.T.reshape(-1).view("u1")))
    else:
        order, buf = "C", a.tobytes()
    spec: Any = a.dtype.str
    if a.dtype.fields is not None:
        names = list(a.dtype.names or ())
        spec = {
            "names": names,
            "formats": [a.dtype.fields[n][0].str for n in names],
            "offsets": [a.dtype.fields[n][1] for n in names],
            "itemsize": a.dtype.itemsize,
        }
    return ormsgpack.packb(ormsgpack.Ext(6, ormsgpack.packb([spec, list(a.shape), order, buf])))


@pytest.mark.parametrize("array", _arrays(), ids=lambda a: f"{a.dtype.str}{a.shape}{'C' if a.flags.c_contiguous else 'F' if a.flags.f_contiguous else 'strided'}")
def test_arrays_store_their_buffer_as_the_general_path_does(array: np.ndarray) -> None:
    expected = _array_envelope(array)
    for _ in range(2):  # the dtype's spec is cached after the first
        assert SERDE.dumps(array) == expected
        assert SERDE.dumps([array]) == b"\x91" + expected
    assert np.array_equal(SERDE.loads(expected), array)


def test_a_large_array_row_is_checked_against_its_readers_row_limits() -> None:
    array = np.arange(1 << 14, dtype="<f8")  # 128 KiB: the single-copy path
    row = Serializer(limits=Limits(max_containers=2)).dumps(array)
    assert row == _array_envelope(array)
    assert np.array_equal(Serializer(limits=Limits(max_containers=2)).loads(row), array)
    with pytest.raises(EncodeError) as refused:
        Serializer(limits=Limits(max_containers=1)).dumps(array)
    assert refused.value.limit == "max_containers"
    with pytest.raises(EncodeError) as refused:
        Serializer(limits=Limits(max_row_bytes=len(row) - 1)).dumps(array)
    assert refused.value.limit == "max_row_bytes"
    assert Serializer(limits=Limits(max_row_bytes=len(row))).dumps(array) == row


def _raise_key_error(self: Any) -> int:
    raise KeyError("lookup failed")


@dataclasses.dataclass
class _FailingField:
    value: int = 0


_FailingField.value = property(_raise_key_error)  # type: ignore[assignment]


def test_an_encoder_failure_is_one_encode_error_at_the_top_level_and_nested() -> None:
    serde = Serializer(allow=[_FailingField])
    obj = object.__new__(_FailingField)
    messages = []
    for value in (obj, obj, [obj], {"k": (obj,)}):
        with pytest.raises(EncodeError) as refused:
            serde.dumps_typed(value)
        messages.append(str(refused.value))
    assert all("KeyError" in m and "_FailingField" in m for m in messages), messages
    assert len(set(messages)) == 1


def test_a_top_level_value_and_the_same_value_nested_share_its_ext_bytes() -> None:
    values = [
        T.Plain(1, (2, 3)), T.Color.BLUE, (1, "a"), {1, 2}, frozenset({"x"}), 2**70,
        datetime(2024, 1, 2, 3, 4, 5, 6), T.Point(1, 2),
    ]  # fmt: skip
    for value in values:
        fresh = Serializer(allow=T.USER_TYPES)
        first = fresh.dumps_typed(value)  # type not yet in the encoder's table
        again = fresh.dumps_typed(value)  # now the typed-value path
        assert first == again
        assert fresh.dumps([value]) == b"\x91" + first[1]


_SCALAR = st.one_of(
    st.integers(-(2**63), 2**64 - 1), st.integers(), st.floats(allow_nan=False), st.text(), st.binary(),
    st.booleans(), st.none(), st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
)  # fmt: skip


def _general(value: Any) -> bytes:
    """The envelope as the general path writes it: ormsgpack packs the items, typed ones as exts."""
    if isinstance(value, tuple):
        name, items = "tuple", list(value)
    else:
        name, items = type(value).__name__, list(value)
    return Serializer().dumps(ormsgpack.Ext(0, ormsgpack.packb(["builtins", name, None])[:-1] + Serializer().dumps(items)))


@given(st.lists(_SCALAR, max_size=10).map(tuple))
def test_small_tuples_of_scalars_are_written_as_the_general_path_writes_them(value: tuple[Any, ...]) -> None:
    expected = _general(value)
    assert SERDE.dumps(value) == expected
    assert SERDE.loads(expected) == value


@given(st.sets(st.one_of(st.integers(-(2**63), 2**70), st.text(), st.binary(), st.none()), max_size=10))
def test_small_sets_of_scalars_are_written_as_the_general_path_writes_them(value: set[Any]) -> None:
    for same in (value, frozenset(value)):
        expected = _general(same)
        assert SERDE.dumps(same) == expected
        assert SERDE.loads(expected) == same


def test_a_zoneinfo_datetime_nests_its_zone_as_call_pack_would() -> None:
    from zoneinfo import ZoneInfo

    value = datetime(2024, 3, 31, 1, 59, 59, 999, tzinfo=ZoneInfo("Europe/Berlin"))
    zone = ormsgpack.Ext(0, ormsgpack.packb(["zoneinfo", "ZoneInfo", "Europe/Berlin"]))
    args = [2024, 3, 31, 1, 59, 59, 999, zone]
    expected = ormsgpack.packb(ormsgpack.Ext(1, ormsgpack.packb(["datetime", "datetime", args])))
    assert SERDE.dumps(value) == expected
    nested = ormsgpack.Ext(0, ormsgpack.packb(["builtins", "tuple", [ormsgpack.Ext(1, ormsgpack.packb(["datetime", "datetime", args]))]]))
    assert SERDE.dumps((value,)) == ormsgpack.packb(nested)  # one level deeper: the zone at depth 3
    assert Serializer(limits=Limits(max_ext_depth=2)).dumps(value) == expected
    with pytest.raises(EncodeError) as refused:
        Serializer(limits=Limits(max_ext_depth=1)).dumps(value)  # the zone would be a second level
    assert refused.value.limit == "max_ext_depth"
    with pytest.raises(EncodeError) as refused:
        Serializer(limits=Limits(max_ext_depth=2)).dumps((value,))
    assert refused.value.limit == "max_ext_depth"
    assert Serializer(limits=Limits(max_ext_depth=3)).loads(Serializer(limits=Limits(max_ext_depth=3)).dumps((value,))) == (value,)


@given(st.uuids())
def test_uuids_store_their_hex(value: Any) -> None:
    assert SERDE.dumps(value) == _envelope(0, "uuid", "UUID", value.hex)
