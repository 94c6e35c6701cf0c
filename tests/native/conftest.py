"""Pairs of serializers, one per read path, for the native-vs-pure tests."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from serde_kit import Serializer, native
from tests.support.compare import assert_same

REQUIRED = os.environ.get("SERDE_KIT_REQUIRE_NATIVE") == "1"


def require_reader() -> None:
    """Fail (when the build is required) or skip, visibly, without the compiled reader."""
    if native.AVAILABLE:
        return
    if REQUIRED:
        pytest.fail("SERDE_KIT_REQUIRE_NATIVE=1 but serde_kit._reader is not built")
    pytest.skip("serde_kit._reader is not built: the native-vs-pure tests need it")


@contextmanager
def read_path(path: str) -> Iterator[None]:
    """Serializers made inside the block read with ``path`` ("native" or "python")."""
    before = native.ACTIVE
    native.ACTIVE = path
    try:
        yield
    finally:
        native.ACTIVE = before


def make_pair(**kwargs: Any) -> tuple[Serializer, Serializer]:
    """(native, pure) serializers with the same options."""
    require_reader()
    with read_path("native"):
        fast = Serializer(**kwargs)
    with read_path("python"):
        pure = Serializer(**kwargs)
    assert type(fast._decoder.engine).__name__ == "Reader"
    assert type(pure._decoder.engine).__name__ != "Reader"
    return fast, pure


def outcome(read: Callable[[Any], Any], row: Any, warned: list[tuple[type, str]] | None = None) -> tuple[str, Any]:
    """("value", v) or ("error", (the exception class, its message)) of one read; the
    warnings it gave (class, message) go to ``warned``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return ("value", read(row))
        except Exception as exc:
            return ("error", (type(exc), str(exc)))
        finally:
            if warned is not None:
                warned.extend((w.category, str(w.message)) for w in caught)


def assert_same_outcome(fast: Serializer, pure: Serializer, row: tuple[str, bytes], label: str = "") -> None:
    """Both paths give identical values and types, or the same error class with the
    same message; the native one twice (before and after its table learned the row's heads).
    The first native read warns as the pure read does (a decoder warns about a stored type
    once, so the second may stay silent)."""
    pure_warned: list[tuple[type, str]] = []
    expected = outcome(pure.loads_typed, row, pure_warned)
    for attempt in ("cold", "warm"):
        warned: list[tuple[type, str]] = []
        got = outcome(fast.loads_typed, row, warned)
        where = f"{label} ({attempt})"
        if attempt == "cold":
            assert warned == pure_warned, f"{where}: native warned {warned!r:.500}, pure {pure_warned!r:.500}"
        assert got[0] == expected[0], f"{where}: native {got!r:.300} vs pure {expected!r:.300}"
        if expected[0] == "error":
            (got_class, got_message), (pure_class, pure_message) = got[1], expected[1]
            assert got_class is pure_class, f"{where}: native raised {got_class}, pure {pure_class}"
            assert got_message == pure_message, f"{where}: native said {got_message!r:.500}, pure {pure_message!r:.500}"
        else:
            try:
                assert_same_deep(expected[1], got[1])
            except AssertionError as exc:
                raise AssertionError(f"{label} ({attempt}): {exc}") from None


def assert_same_deep(expected: Any, actual: Any) -> None:
    """:func:`compare.assert_same`, with lists and dicts walked without recursion
    (fuzz rows nest deeper than the recursive comparison can follow)."""
    pending = [(expected, actual, "$")]
    while pending:
        e, a, path = pending.pop()
        assert type(e) is type(a), f"{path}: type {type(a)} != {type(e)}"
        if type(e) in (list, tuple):
            assert len(e) == len(a), f"{path}: length {len(a)} != {len(e)}"
            pending.extend((x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(e, a)))
        elif type(e) is dict:
            assert list(e) == list(a), f"{path}: keys differ"
            for (ke, ve), (ka, va) in zip(e.items(), a.items()):
                assert type(ke) is type(ka), f"{path}: key type {type(ka)} != {type(ke)}"
                pending.append((ve, va, f"{path}[{ke!r:.40}]"))
        else:
            try:
                assert_same(e, a, path)
            except AssertionError:
                raise
            except Exception:
                # A half-built object (a damaged row the pure path builds unvalidated) may
                # fail the comparison's own attribute reads: compare what it holds.
                assert getattr(e, "__dict__", None) == getattr(a, "__dict__", None), f"{path}: fields differ"


@pytest.fixture
def pair() -> tuple[Serializer, Serializer]:
    from tests.support.strategy_types import USER_TYPES

    return make_pair(allow=USER_TYPES)


def python_calls(read: Any, row: bytes) -> list[str]:
    """The names of the Python functions ``read(row)`` calls (a profile hook's 'call' events)."""
    names: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        read(row)
    finally:
        sys.setprofile(None)
    return names


def assert_refcounts_settle(read_all: Callable[[], None], watched: list[Any], reads_per_round: int = 3) -> None:
    """Read everything three rounds of ``reads_per_round`` times: after the first round
    (which fills the reader's table and caches) no object in ``watched`` gains or loses
    a reference."""
    import gc

    counts = []
    for _ in range(3):
        for _ in range(reads_per_round):
            read_all()
        gc.collect()
        counts.append([sys.getrefcount(o) for o in watched])
    assert counts[1] == counts[2]
