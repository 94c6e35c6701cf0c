"""Rows holding one numpy array, at any size, read by the compiled reader in one copy.

``LoadsTyped`` (and ``Decoder.loads_checked``) give such a row of at most
``max_row_bytes`` to the reader's plain-layout builder (``numpy.empty`` and one
``memcpy``), which before read only rows below the small-row bound; large ones went
through ``numpy.loads_large`` in Python. The array must be the pure path's exactly:
dtype (byte order included), shape, strides, every flag, and the bytes, NaN payloads
included. Whatever the builder does not take (hostile headers, cuts, limits) ends as
on the pure path.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import ormsgpack
import pytest

from serde_kit import Limits, native
from serde_kit.ext import numpy as numpy_ext

from .conftest import assert_same_outcome, make_pair, python_calls

np = pytest.importorskip("numpy")

LARGE = numpy_ext.FAST_PATH_MIN_BYTES


def exact(value: Any) -> Any:
    """Everything the two paths' arrays must share (or the value itself, for errors)."""
    if not isinstance(value, np.ndarray):
        return value
    f = value.flags
    return (
        type(value), value.dtype, value.dtype.str, value.dtype.descr, value.shape, value.strides,
        f.c_contiguous, f.f_contiguous, f.writeable, f.owndata, f.aligned, value.base is None,
        value.tobytes(order="A"),
    )  # fmt: skip


def read_both(row: tuple[str, bytes], **limits: Any) -> tuple[Any, Any]:
    fast, pure = make_pair(limits=Limits(**limits)) if limits else make_pair()
    return _outcome(fast.loads_typed, row), _outcome(pure.loads_typed, row)


def _outcome(read: Any, row: Any) -> Any:
    try:
        return ("value", exact(read(row)))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def _payload(spec: Any, shape: Any, order: Any, buf: Any) -> bytes:
    return ormsgpack.packb([spec, shape, order, buf])


def _row(payload: bytes) -> tuple[str, bytes]:
    return ("msgpack", ormsgpack.packb(ormsgpack.Ext(6, payload)))


def _bits(n: int) -> bytes:
    """``n`` bytes that are not all alike (NaN payloads among the float64 words)."""
    word = b"\x01\x00\x00\x00\x00\x00\xf8\x7f" + b"\xff\xff\xff\xff\xff\xff\xff\x7f" + bytes(range(240))
    return (word * (n // len(word) + 1))[:n]


SHAPES = [(3,), (1,), (2, 3), (3, 1), (1, 3), (1, 1), (2, 1, 3), (1, 2, 1), (3, 1, 1, 2), ()]
DTYPES = ["<f8", ">f8", ">i4", "|u1", "<c16", "|b1", "<m8[s]", ">M8[ns]", "<U3", "|S2", "|V4", ">m8"]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("spec", DTYPES)
def test_every_layout_reads_as_the_pure_path_reads_it(spec, order):
    # "F" with a dimension of 1 is C- and F-contiguous at once: the pure path's copy lays it
    # out by numpy's own axis sort (strides unlike numpy.empty's), so it stays the pure path's.
    itemsize = np.dtype(spec).itemsize
    for shape in SHAPES:
        for scale in (1, LARGE // max(itemsize, 1) + 7):  # small rows, and rows past the old bound
            big = (*shape[:-1], shape[-1] * scale) if shape else shape
            count = int(np.prod(big))
            row = _row(_payload(spec, list(big), order, _bits(count * itemsize)))
            fast, pure = read_both(row)
            assert fast == pure, (spec, order, big)
            assert fast[0] == "value", (spec, order, big, fast)


def test_bench_arrays_keep_nan_payloads_and_flags():
    fast, pure = make_pair()
    base = np.frombuffer(_bits(2**20), dtype="<f8").reshape(512, 256).copy()
    for value in (base, np.asfortranarray(base), base[:, ::2], base.astype(">f8"), base[:1]):
        row = fast.dumps_typed(value)
        for attempt in range(2):  # cold (numpy not yet enabled in the reader) and warm
            got, want = exact(fast.loads_typed(row)), exact(pure.loads_typed(row))
            assert got == want, attempt
        assert exact(fast.loads(row[1])) == exact(pure.loads(row[1]))
        assert np.array_equal(fast.loads_typed(row), value, equal_nan=True)


def test_a_large_row_runs_no_python_frame():
    fast, pure = make_pair()
    row = fast.dumps_typed(np.arange(LARGE, dtype=np.float64).reshape(64, -1))
    fast.loads_typed(row)  # cold: enables arrays in the reader
    assert python_calls(fast.loads_typed, row) == []
    assert "loads_large" in python_calls(pure.loads_typed, row)
    assert "loads_large" not in python_calls(fast.loads, row[1])


def test_max_row_bytes_at_the_bound_and_one_past_it():
    value = np.arange(LARGE // 8 + 3, dtype="<f8")
    row = make_pair()[0].dumps_typed(value)
    size = len(row[1])
    fast, pure = read_both(row, max_row_bytes=size)
    assert fast == pure and fast[0] == "value"
    fast, pure = read_both(row, max_row_bytes=size - 1)
    assert fast == pure and fast[0] == "error" and "max_row_bytes" in fast[2], fast


def test_max_array_elements_at_the_bound_and_one_past_it():
    count = LARGE // 8 + 3
    row = make_pair()[0].dumps_typed(np.arange(count, dtype="<f8"))
    fast, pure = read_both(row, max_array_elements=count)
    assert fast == pure and fast[0] == "value"
    fast, pure = read_both(row, max_array_elements=count - 1)
    assert fast == pure and fast[0] == "error" and "max_array_elements" in fast[2], fast


def _large_row() -> bytes:
    return _row(_payload("<f8", [2, LARGE // 16 + 1], "C", _bits((LARGE // 16 + 1) * 16)))[1]


def test_every_cut_and_every_header_byte_of_a_large_row_ends_alike():
    fast, pure = make_pair(limits=Limits(max_array_elements=2**20))
    row = _large_row()
    fast.loads(row), pure.loads(row)  # "<f8" is a known spec; the reader builds arrays
    header = row.index(b"\xc5") + 3  # ext head, dtype, shape, order, bin16 head
    cuts = [*range(header + 2), len(row) - 1, len(row) + 1]
    for cut in cuts:
        assert_same_outcome(fast, pure, ("msgpack", row[:cut]), f"[:{cut}]")
    assert_same_outcome(fast, pure, ("msgpack", row + b"\x00"), "trailing byte")
    for at in range(header):
        for byte in range(256):
            if byte == row[at]:
                continue
            changed = row[:at] + bytes([byte]) + row[at + 1 :]
            want, got = _outcome(pure.loads_typed, ("msgpack", changed)), _outcome(fast.loads_typed, ("msgpack", changed))
            assert got == want, (at, byte)


HOSTILE_HEADERS = {
    "64-bit dim": _payload("<u1", [2**40], "C", b"\x00" * LARGE),
    "negative dim": _payload("<u1", [-LARGE], "C", b"\x00" * LARGE),
    "dims past the element limit": _payload("<u1", [2**16, 2**16], "C", b"\x00" * LARGE),
    "dim product wraps": _payload("<u1", [2**32 - 1, 2**32 - 1, 2**32 - 1], "C", b"\x00" * LARGE),
    "buffer one short": _payload("<f8", [LARGE // 8], "C", b"\x00" * (LARGE - 1)),
    "buffer one long": _payload("<f8", [LARGE // 8], "C", b"\x00" * (LARGE + 1)),
    "object dtype": _payload("|O", [LARGE // 8], "C", b"\x00" * LARGE),
    "unknown dtype": _payload("<q9", [LARGE // 8], "C", b"\x00" * LARGE),
    "subarray dtype": _payload("(2,)<i4", [LARGE // 8], "C", b"\x00" * LARGE),
    "structured dtype": _payload({"names": ["a"], "formats": ["<f8"]}, [LARGE // 8], "C", b"\x00" * LARGE),
    "zero-size dtype": _payload("|V0", [LARGE], "C", b""),
    "order K": _payload("<f8", [LARGE // 8], "K", b"\x00" * LARGE),
    "F with a unit dim": _payload("<f8", [1, LARGE // 8], "F", _bits(LARGE)),
    "F without one": _payload("<f8", [2, LARGE // 16], "F", _bits(LARGE)),
    "str32 spec": b"\x94\xdb\x00\x00\x00\x03<f8\x91\xcd" + (LARGE // 8).to_bytes(2, "big") + b"\xa1C\xc6"
    + LARGE.to_bytes(4, "big") + _bits(LARGE),
    "bin32 buffer": b"\x94\xa3<f8\x91\xcd" + (LARGE // 8).to_bytes(2, "big") + b"\xa1C\xc6" + LARGE.to_bytes(4, "big")
    + _bits(LARGE),
    "buffer as str": _payload("<u1", [LARGE], "C", "x" * LARGE),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_HEADERS))
def test_hostile_headers_of_large_rows_end_alike(name):
    fast, pure = make_pair(limits=Limits(max_array_elements=2**20))
    warm = pure.dumps(np.zeros(2))
    fast.loads(warm), pure.loads(warm)
    for spec in ("<u1", "<f8", "(2,)<i4"):  # known specs, so the reader looks them up
        numpy_ext._dtype(np, spec)
    row = _row(HOSTILE_HEADERS[name])
    assert_same_outcome(fast, pure, row, name)
    assert _outcome(fast.loads_typed, row) == _outcome(pure.loads_typed, row)


def test_refused_and_handed_back_rows_leak_no_reference():
    fast, _ = make_pair(limits=Limits(max_array_elements=2**20))
    rows = [_row(payload)[1] for payload in HOSTILE_HEADERS.values()] + [_large_row()]
    for row in rows:
        _outcome(fast.loads_typed, ("msgpack", row))
    dtype = numpy_ext.dtype_cache()["<f8"]
    gc.collect()  # errors' tracebacks are cycles that hold the row for a while
    before = [sys.getrefcount(row) for row in rows], sys.getrefcount(dtype)
    for _ in range(20):
        for row in rows:
            _outcome(fast.loads_typed, ("msgpack", row))
            _outcome(fast.loads, row)
    gc.collect()
    assert ([sys.getrefcount(row) for row in rows], sys.getrefcount(dtype)) == before


def test_loads_typed_checks_its_row_bound():
    fast, _ = make_pair()
    reader = fast._decoder.engine
    with pytest.raises(ValueError, match="max_row_bytes"):
        native._reader.LoadsTyped(reader, fast._loads_typed, fast._small_row_error, 10, 100, 98)
    assert type(native._reader.LoadsTyped(reader, fast._loads_typed, fast._small_row_error, 10, 100, 99)).__name__ == "LoadsTyped"


SPECS = ["<f8", ">f8", "<f4", ">i4", "<i2", "|u1", "|i1", "<c8", ">c16", "|b1", "<u8", ">u2", "<m8[s]", "|S3", "<U2"]


def test_known_dtypes_are_the_dict_s_and_survive_slot_collisions():
    # 15 specs over the reader's 8 remembered dtypes: slots are taken over back and forth.
    fast, pure = make_pair()
    rows = [_row(_payload(spec, [2, 3], "C", _bits(6 * np.dtype(spec).itemsize))) for spec in SPECS]
    for _ in range(3):
        for spec, row in zip(SPECS, rows):
            assert _outcome(fast.loads_typed, row) == _outcome(pure.loads_typed, row), spec
    dtype = numpy_ext.dtype_cache()["<f8"]
    before = sys.getrefcount(dtype)
    for _ in range(50):
        for row in rows:
            fast.loads_typed(row)
    assert sys.getrefcount(dtype) == before
    assert all(fast.loads_typed(row).dtype is numpy_ext.dtype_cache()[spec] for spec, row in zip(SPECS, rows))


def test_an_object_dtype_in_the_dict_is_never_built_in_c():
    fast, pure = make_pair()
    numpy_ext._dtype(np, "|O")  # the spec is in the dict; the reader must still refuse it
    row = _row(_payload("|O", [2], "C", b"\x00" * 16))
    for _ in range(2):
        assert_same_outcome(fast, pure, row, "object dtype")


def test_a_new_dtype_dict_forgets_the_known_dtypes():
    fast, _ = make_pair()
    row = _row(_payload("<f8", [4], "C", _bits(32)))
    fast.loads_typed(row)
    assert "loads_plain" not in python_calls(fast.loads_typed, row)  # known: read in C
    reader = fast._decoder.engine
    reader.set_numpy(np.empty, {}, 2**20, LARGE)  # no spec known now
    assert "loads_plain" in python_calls(fast.loads_typed, row)
    reader.set_numpy(np.empty, numpy_ext.dtype_cache(), 2**20, LARGE)
    assert "loads_plain" not in python_calls(fast.loads_typed, row)
