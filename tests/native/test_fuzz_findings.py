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
