"""numpy arrays in the plain layout built by the compiled reader (a whole row or nested).

The reader builds ``numpy.empty(shape, dtype, order)`` and copies the stored buffer in,
for a dtype Python already made for that spec; every other payload (unknown spec,
object fields, empty or oversized shapes, a buffer of the wrong length, large payloads)
is read by the pure path's own code, so values, flags and errors are the pure path's.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
import pytest

from serde_kit import Limits, native

from .conftest import assert_same_outcome, make_pair, python_calls

np = pytest.importorskip("numpy")


def _arrays() -> list[Any]:
    a = np.arange(128, dtype=np.float64).reshape(8, 16)
    return [
        a,
        np.asfortranarray(a),
        a[:, ::2],
        np.array(5),
        np.zeros((0, 3)),
        np.array(["a", "bc"]),
        a.astype(">i4"),
        np.zeros(3, dtype=[("x", "<f4"), ("y", "<i2")]),
        np.array([True, False]),
        np.arange(6, dtype=np.complex128).reshape(1, 2, 3, 1),
        np.ones((1,) * 15, dtype=np.uint8),
        np.frombuffer(b"\xff" * 64, dtype=np.uint8),
        np.zeros(300, dtype=np.int16),
    ]


def _flags(value: Any) -> Any:
    if not isinstance(value, np.ndarray):
        return None
    return (value.dtype, value.shape, value.strides, value.flags.writeable, value.flags.owndata, value.tobytes(order="A"))


@pytest.mark.parametrize("index", range(len(_arrays())))
def test_arrays_read_alike(index):
    fast, pure = make_pair()
    arr = _arrays()[index]
    for row in (pure.dumps(arr), pure.dumps({"a": arr, "b": [arr, {"c": arr}]})):
        assert_same_outcome(fast, pure, ("msgpack", row), repr(arr)[:60])
    row = pure.dumps(arr)
    for _ in range(2):  # before and after the reader was enabled for arrays
        assert _flags(fast.loads(row)) == _flags(pure.loads(row))
        nested = pure.dumps([arr])
        assert _flags(fast.loads(nested)[0]) == _flags(pure.loads(nested)[0])


def _payload(spec: Any, shape: Any, order: Any, buf: Any, *extra: Any) -> bytes:
    return ormsgpack.packb([spec, shape, order, buf, *extra])


def _row(payload: bytes) -> bytes:
    return ormsgpack.packb(ormsgpack.Ext(6, payload))


HOSTILE = {
    "buffer short": _payload("<f8", [2], "C", b"\x00" * 15),
    "buffer long": _payload("<f8", [2], "C", b"\x00" * 17),
    "negative dim": _payload("<f8", [-2], "C", b"\x00" * 16),
    "zero dim": _payload("<f8", [0, 5], "C", b""),
    "huge dims": _payload("<u1", [2**32 - 1, 2**32 - 1, 2**32 - 1], "C", b"\x00"),
    "64-bit dim": _payload("<u1", [2**40], "C", b"\x00"),
    "dims beyond the limit": _payload("<u1", [2**16, 2**16], "C", b"\x00"),
    "float dim": _payload("<f8", [2.0], "C", b"\x00" * 16),
    "dim as str": _payload("<f8", ["2"], "C", b"\x00" * 16),
    "shape not a list": _payload("<f8", 2, "C", b"\x00" * 16),
    "16 dims": _payload("<u1", [1] * 16, "C", b"\x00"),
    "65 dims": _payload("<u1", [1] * 65, "C", b"\x00"),
    "order X": _payload("<f8", [2], "X", b"\x00" * 16),
    "order CC": _payload("<f8", [2], "CC", b"\x00" * 16),
    "order empty": _payload("<f8", [2], "", b"\x00" * 16),
    "unknown spec": _payload("<zz", [2], "C", b"\x00" * 16),
    "object spec": _payload("|O", [2], "C", b"\x00" * 16),
    "invalid utf-8 spec": b"\x94\xa2\xff\xfe\x91\x02\xa1C\xc4\x10" + b"\x00" * 16,
    "spec not a str": _payload(8, [2], "C", b"\x00" * 16),
    "buffer as str": _payload("<f8", [2], "C", "x" * 16),
    "five items": _payload("<f8", [2], "C", b"\x00" * 16, 1),
    "three items": ormsgpack.packb(["<f8", [2], "C"]),
    "empty payload": b"",
    "zero itemsize": _payload("|V0", [2], "C", b""),
    "str16 spec": b"\x94\xda\x00\x03<f8\x91\x02\xa1C\xc4\x10" + b"\x00" * 16,
    "bin16 buffer": b"\x94\xa3<f8\x91\x02\xa1C\xc5\x00\x10" + b"\x00" * 16,
    "trailing byte": _payload("<f8", [2], "C", b"\x00" * 16) + b"\x00",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_array_payloads_end_alike(name):
    fast, pure = make_pair(limits=Limits(max_array_elements=2**20))
    warm = pure.dumps(np.zeros(2))
    fast.loads(warm), pure.loads(warm)  # the reader builds arrays now; "<f8" is a known spec
    payload = HOSTILE[name]
    for row in (_row(payload), ormsgpack.packb([ormsgpack.Ext(6, payload)])):
        assert_same_outcome(fast, pure, ("msgpack", row), name)
        for cut in range(len(row)):
            assert_same_outcome(fast, pure, ("msgpack", row[:cut]), f"{name}[:{cut}]")


def test_the_element_limit_is_named_alike():
    fast, pure = make_pair(limits=Limits(max_array_elements=10))
    writer, _ = make_pair()  # the limited writer refuses these rows (tests/test_writer_limits.py)
    arr = np.zeros(11)
    for value in (arr, [arr]):
        row = ("msgpack", writer.dumps(value))
        assert_same_outcome(fast, pure, row, "11 elements")
        with pytest.raises(Exception, match="max_array_elements"):
            fast.loads_typed(row)
    assert_same_outcome(fast, pure, ("msgpack", pure.dumps(np.zeros(10))), "10 elements")


def test_large_payloads_stay_on_the_python_fast_path():
    fast, pure = make_pair()
    arr = np.arange(20_000, dtype=np.float64)
    for value in (arr, {"a": arr}):
        row = pure.dumps(value)
        assert_same_outcome(fast, pure, ("msgpack", row), "large")



def test_plain_arrays_are_built_without_the_python_reader():
    fast, pure = make_pair()
    arr = np.arange(64, dtype=np.float32).reshape(4, 16)
    for row in (pure.dumps(arr), pure.dumps({"x": [arr, arr]})):
        fast.loads(row)
        calls = python_calls(fast.loads, row)
        assert not {"loads_plain", "_other_ext", "hook"} & set(calls), calls
        assert "loads_plain" in python_calls(pure.loads, row)


def test_set_numpy_refuses_what_does_not_fit():
    fast, _ = make_pair()
    reader = fast._decoder.engine
    for args in [("not callable", {}, 1, 1), (np.empty, [], 1, 1), (np.empty, {}, -1, 1), (np.empty, {}, 1, -1)]:
        with pytest.raises((TypeError, ValueError)):
            reader.set_numpy(*args)
    assert native.plain_array(object(), b"\xd4\x06\x00") is None  # not the reader: the pure path's
