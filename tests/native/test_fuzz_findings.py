"""What the native fuzz campaigns on the compiled reader (fuzz/README.md, "Native campaigns")
found, one readable test each; the saved inputs are replayed by tests/test_fuzz_corpora.py."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from serde_kit.errors import RebuildError

from .conftest import make_pair, outcome

np = pytest.importorskip("numpy")
REGRESSIONS = Path(__file__).resolve().parents[2] / "fuzz" / "regressions" / "fuzz_native"


def test_a_deprecated_dtype_alias_warns_on_whichever_path_parses_it_first() -> None:
    """fuzz_native/deprecated-dtype-alias-warns-once-per-process: a numpy ext whose dtype is
    '<a4' (an alias numpy 2 deprecates) makes numpy warn when it parses it. serde_kit's dtype
    cache is shared by both read paths, so the first read of the process warns, on either
    path, and the next read warns on neither: the same outcome, not a difference between the
    paths (the harness now meets that cache warm on both sides)."""
    from serde_kit.ext import numpy as numpy_ext
    from tests.support import strategy_types as T

    data = (REGRESSIONS / "deprecated-dtype-alias-warns-once-per-process").read_bytes()
    row = ("msgpack", data[1:])
    with warnings.catch_warnings(record=True) as direct:
        warnings.simplefilter("always")
        np.dtype("<a4")
    numpy_says = [(w.category, str(w.message)) for w in direct]
    fast, pure = make_pair(allow=T.USER_TYPES)
    cache = numpy_ext.dtype_cache()
    saved = dict(cache)
    try:
        for first, second in ((fast, pure), (pure, fast)):
            cache.pop("<a4", None)
            first_warned: list[tuple[type, str]] = []
            second_warned: list[tuple[type, str]] = []
            got_first = outcome(first.loads_typed, row, first_warned)
            got_second = outcome(second.loads_typed, row, second_warned)
            assert got_first == got_second
            assert got_first[0] == "error" and got_first[1][0] is RebuildError
            assert first_warned == numpy_says
            assert second_warned == []
    finally:
        cache.clear()
        cache.update(saved)


def _array_row(spec: str, shape: list[int], buf: bytes) -> tuple[str, bytes]:
    import ormsgpack

    return ("msgpack", ormsgpack.packb(ormsgpack.Ext(6, ormsgpack.packb([spec, shape, "C", buf]))))


@pytest.mark.parametrize(
    ("spec", "shape", "buf"),
    [
        (">m8", [3], b"\x00\x00\x00\x00\x00\x00\xf0\x3f" * 3),  # the fuzz input's dtype and buffer
        (">M8", [2], (1).to_bytes(8, "big") + (2**40).to_bytes(8, "big")),
        (">m8", [2, 1], (5).to_bytes(8, "big") * 2),
        ("(2,)<i4", [2], bytes(range(16))),  # numpy.empty makes a (2, 2) int32 array of it
        ("(2,)>m8", [1], (7).to_bytes(8, "big") * 2),
        (">m8[s]", [1], (9).to_bytes(8, "big")),  # with a unit numpy keeps the byte order: built in C
    ],
    ids=["timedelta64-big-endian", "datetime64-big-endian", "2d", "subarray", "subarray-timedelta64", "with-unit"],
)
def test_an_array_whose_dtype_numpy_empty_changes_reads_as_on_the_pure_path(
    spec: str, shape: list[int], buf: bytes
) -> None:
    """fuzz_native/non-native-timedelta64-read-as-native: numpy.empty(shape, dtype('>m8'))
    makes a native '<m8' array (unitless datetime64/timedelta64 lose a non-native byte
    order), and a subarray dtype becomes more dimensions; the reader copied the stored
    buffer into it, so a '>m8' array came back with its bytes read little-endian
    (1.0's bytes as 4607182418800017408 instead of 61503). The reader now keeps only an
    array whose dtype is the one asked for, and leaves the others to Python."""
    from tests.support import strategy_types as T

    from .conftest import assert_same_outcome

    fast, pure = make_pair(allow=T.USER_TYPES)
    enable = _array_row("<f8", [2], bytes(16))
    fast.loads_typed(enable)  # the first array the hook builds lets the reader build arrays
    fast.loads_typed(enable)
    row = _array_row(spec, shape, buf)
    assert_same_outcome(fast, pure, row, spec)
    expected = pure.loads_typed(row)
    got = fast.loads_typed(row)
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()
    if spec.endswith("m8") and "(" not in spec:
        assert got.dtype == np.dtype(spec)
        assert got.astype("<i8").tolist() == np.frombuffer(buf, ">i8").reshape(shape).tolist()


@pytest.mark.parametrize("spec", [">m8", ">M8", "<m8", ">m8[ms]"])
def test_big_endian_datetime64_arrays_written_by_serde_kit_read_back_exactly(spec: str) -> None:
    """The same finding from a real value: serde_kit writes a big-endian unitless
    timedelta64/datetime64 array as '>m8'/'>M8', which the native path read back with
    swapped bytes once it built arrays itself."""
    from tests.support.compare import assert_same

    fast, pure = make_pair()
    value = np.arange(-2, 4, dtype=">i8").view(spec).reshape(2, 3)
    stored = fast.dumps_typed(value)
    fast.loads_typed(fast.dumps_typed(np.zeros(2)))  # the reader builds arrays from here on
    for serializer in (pure, fast, fast):
        got = serializer.loads_typed(stored)
        assert_same(value, got)
        assert got.dtype.str == value.dtype.str and got.view(">i8").tolist() == value.view(">i8").tolist()
