"""numpy arrays and scalars: dtype, shape, order and writability survive."""

from __future__ import annotations

import numpy as np
import ormsgpack
import pytest

from serde_kit import EncodeError, LimitExceededError, MalformedDataError, RebuildError, Serializer

SERDE = Serializer()

ARRAYS = [
    np.arange(12, dtype="<i8").reshape(3, 4),
    np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    np.arange(30)[::3],
    np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2),
    np.array(3.5),
    np.zeros((0, 5), dtype="f4"),
    np.array([1, 2, 3], dtype=">u2"),
    np.array([True, False]),
    np.array(["2020-01-01", "NaT"], dtype="M8[s]"),
    np.array([1, -2], dtype="m8[ms]"),
    np.array(["ab", "c"], dtype="<U3"),
    np.array([b"ab"], dtype="S4"),
    np.array([1 + 2j], dtype="c16"),
    np.array([(1, (2.0, "x"))], dtype=[("a", ">i4"), ("b", [("c", "<f8"), ("d", "U2")])]),
    np.array([(1, [[1, 2, 3], [4, 5, 6]])], dtype=[("a", "u1"), ("m", "<f4", (2, 3))]),
]


@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "nested"])
@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}-{a.shape}")
def test_array_round_trip(array, nested):
    if nested:
        back = SERDE.loads(SERDE.dumps({"a": [array]}))["a"][0]
    else:
        back = SERDE.loads(SERDE.dumps(array))
    assert type(back) is np.ndarray and back.dtype == array.dtype and back.shape == array.shape
    assert back.dtype.names == array.dtype.names
    assert back.flags.writeable and back.flags.owndata  # its own memory, not the row's
    if array.flags.f_contiguous and not array.flags.c_contiguous:
        assert back.flags.f_contiguous
    assert np.array_equal(back, array, equal_nan=False) or np.array_equal(back.view("u1"), np.ascontiguousarray(array).view("u1"))
    back[...] = back  # writable for real


@pytest.mark.parametrize(
    "scalar",
    [np.float64(1.5), np.float32(0.1), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True),
     np.complex64(1 + 1j), np.longdouble("1.1"), np.datetime64("2020-01-01T00:00:00.123", "ms"),
     np.timedelta64(5, "h"), np.str_("x")],
    ids=repr,
)  # fmt: skip
def test_scalar_round_trip(scalar):
    back = SERDE.loads(SERDE.dumps({"v": scalar}))["v"]
    assert type(back) is type(scalar) and back == scalar


def test_object_arrays_are_refused_at_write_time():
    with pytest.raises(EncodeError, match="dtype=object"):
        SERDE.dumps(np.array([object()], dtype=object))


def _numpy_ext(dtype, shape, order, buf):
    return ormsgpack.packb(ormsgpack.Ext(6, ormsgpack.packb([dtype, shape, order, buf])))


@pytest.mark.parametrize(
    "payload",
    [
        ("|O", [1], "C", b"\x00" * 8),
        ("<f8", [2], "C", b"\x00" * 8),
        ("<f8", [-1], "C", b""),
        ("<f8", [1], "Z", b"\x00" * 8),
        ("not a dtype", [1], "C", b"\x00"),
        ("<f8", [-1, -2], "C", b"\x00" * 16),  # negative dimensions whose product fits
        ("<f8", [], "C", b"\x00" * 16),  # a 0-d array of two elements
        ("|S0", [3], "C", b""),  # no element size
        ("<f8", [1, 2**40], "C", b"\x00" * 8),  # more elements than the budget
    ],
)
@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "nested"])
def test_malformed_array_payloads_are_typed_errors(payload, nested):
    data = _numpy_ext(*payload)
    if nested:
        data = b"\x91" + data
    with pytest.raises((MalformedDataError, RebuildError, LimitExceededError)):
        SERDE.loads(data)


def test_a_row_with_bytes_after_its_array_is_refused():
    with pytest.raises(MalformedDataError, match="trailing"):
        SERDE.loads(SERDE.dumps(np.arange(4.0)) + b"\x00")


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize(
    "array",
    [np.arange(40000, dtype="<f8"), np.asfortranarray(np.ones((300, 200), dtype=">i4")), np.arange(90000)[::2]],
    ids=["c", "fortran", "strided"],
)
def test_large_arrays_take_the_single_copy_path_and_stay_compatible(array, nested):
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    value = {"a": array} if nested else array
    stored = SERDE.dumps_typed(value)
    back = SERDE.loads_typed(stored)
    back_array = back["a"] if nested else back
    assert back_array.dtype == array.dtype and np.array_equal(back_array, array) and back_array.flags.writeable
    assert back_array.flags.f_contiguous == (array.flags.f_contiguous and not array.flags.c_contiguous) or array.ndim == 1
    stock = JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed(stored)
    assert np.array_equal(stock["a"] if nested else stock, array)
    stock_bytes = JsonPlusSerializer().dumps_typed(value)
    again = SERDE.loads_typed(stock_bytes)
    assert np.array_equal(again["a"] if nested else again, array)


def test_large_array_with_wrong_buffer_length_is_refused():
    stored = bytearray(SERDE.dumps(np.arange(20000, dtype="<f8")))
    stored[-8:] = b""  # drop the last element; fix nothing else
    with pytest.raises(MalformedDataError):
        SERDE.loads(bytes(stored))
