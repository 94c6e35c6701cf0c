"""The writer never writes a row its own reader refuses: the encoder takes its bounds from Limits."""

from __future__ import annotations

import datetime
import decimal
import fractions
import ipaddress
import re
import uuid
import zoneinfo
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st

from serde_kit import EncodeError, LimitExceededError, Limits, Serializer
from serde_kit.limits import SAFE_REGEX_FLAGS
from tests.support import strategies as S, strategy_types as T
from tests.support.compare import assert_same

DEFAULT = Serializer(allow=T.USER_TYPES)
#: The row-layout limits a writer checks; the value limits stay at their defaults here.
LAYOUT_LIMITS = st.builds(
    Limits,
    max_ext_depth=st.integers(0, 6),
    max_containers=st.integers(0, 60),
    max_row_bytes=st.integers(0, 4000),
)


LAYOUT_NAMES = {"max_ext_depth", "max_containers", "max_row_bytes"}
#: The value limits a writer checks (each typed value as its rebuilder does), set
#: small enough that the values the strategies draw cross them. Hash collisions
#: and the work meter depend on the row as a whole: the reader's alone, left at
#: their defaults.
VALUE_LIMITS = st.builds(
    Limits,
    max_number_digits=st.integers(0, 60),
    max_text_length=st.integers(0, 64),
    max_regex_length=st.integers(0, 12),
    max_regex_classes=st.integers(0, 3),
    regex_flags=st.sampled_from([SAFE_REGEX_FLAGS, SAFE_REGEX_FLAGS & ~int(re.IGNORECASE)]),
    max_array_elements=st.integers(0, 8),
    max_partial_json=st.integers(0, 60),
)
VALUE_NAMES = {
    "max_number_digits",
    "max_text_length",
    "max_regex_length",
    "max_regex_classes",
    "regex_flags",
    "max_array_elements",
    "max_partial_json",
}


def _chunk(args: list[str]) -> Any:
    from langchain_core.messages import AIMessageChunk

    calls = [{"name": "f", "args": a, "id": str(i), "index": i, "type": "tool_call_chunk"} for i, a in enumerate(args)]
    return AIMessageChunk(content="", tool_call_chunks=calls)


#: Streamed tool-call arguments: complete JSON or cut short (what the reader bounds).
_ARGS = st.one_of(
    st.text(max_size=80),
    st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=3).map(
        lambda d: __import__("json").dumps(d)
    ),
)
CHUNKS = st.lists(_ARGS, max_size=3).map(_chunk)


def _writes_what_it_reads(value: Any, limits: Limits, names: set[str]) -> None:
    serde = Serializer(allow=T.USER_TYPES, limits=limits)
    try:
        row = serde.dumps_typed(value)
    except EncodeError as exc:
        if exc.limit is None:  # no faithful encoding at all: the default writer refuses it too
            with pytest.raises(EncodeError):
                DEFAULT.dumps_typed(value)
        else:
            assert exc.limit in names
            assert f"{exc.limit}={getattr(limits, exc.limit)}" in str(exc)
            assert "Serializer(limits=Limits(" in str(exc)  # what to do
            DEFAULT.loads_typed(DEFAULT.dumps_typed(value))  # only the limit stood in the way
        return
    assert_same(value, serde.loads_typed(row))


@given(S.checkpoint_values(), LAYOUT_LIMITS)
def test_writer_refuses_or_writes_what_its_reader_reads(value: Any, limits: Limits) -> None:
    _writes_what_it_reads(value, limits, LAYOUT_NAMES)


@given(st.one_of(S.checkpoint_values(), CHUNKS), VALUE_LIMITS)
def test_writer_refuses_or_writes_what_its_reader_reads_under_value_limits(value: Any, limits: Limits) -> None:
    _writes_what_it_reads(value, limits, VALUE_NAMES)


_PARIS = zoneinfo.ZoneInfo("Europe/Paris")
_BIG = 2**100  # 26 hex digits: 31 decimal digits by the reader's count
_INCOMPLETE = '{"a": "' + "x" * 53  # 60 characters of JSON cut short

#: Per family: the limit, its smallest value that holds ``value``, and ``value``.
FAMILIES = [
    pytest.param("max_number_digits", 31, _BIG, id="int"),
    pytest.param("max_number_digits", 32, [-_BIG, {_BIG: 1}], id="int-nested-and-key"),  # the sign counts as a digit
    pytest.param("max_number_digits", 18, fractions.Fraction(2**60, 3), id="fraction"),
    pytest.param("max_number_digits", 31, fractions.Fraction(1, _BIG), id="fraction-big-part"),
    pytest.param("max_text_length", 6, decimal.Decimal("1.2345"), id="decimal-text"),
    pytest.param("max_text_length", 19, datetime.datetime(2020, 1, 2, 3, 4, 5), id="iso-datetime"),
    pytest.param("max_text_length", 12, zoneinfo.ZoneInfo("Europe/Paris"), id="zone"),
    pytest.param("max_text_length", 12, datetime.datetime(2020, 1, 2, tzinfo=_PARIS), id="zone-in-datetime"),
    pytest.param("max_text_length", 32, uuid.UUID(int=7), id="uuid"),
    pytest.param("max_text_length", 8, ipaddress.ip_address("10.0.0.1"), id="ip"),
    pytest.param("max_regex_length", 4, re.compile("abcd"), id="regex-length"),
    pytest.param("max_regex_classes", 2, re.compile("[a][b]"), id="regex-classes"),
    pytest.param("max_array_elements", 11, np.zeros(11), id="array"),
    pytest.param("max_array_elements", 10_000, np.zeros(10_000), id="array-single-copy-path"),
    pytest.param("max_array_elements", 6, {"a": (np.ones((2, 3)),)}, id="array-nested"),
    pytest.param("max_array_elements", 2, np.zeros((2, 0)), id="empty-array-counted-as-its-reader-does"),
    pytest.param("max_partial_json", 60, _chunk(['{"k": 1}', _INCOMPLETE]), id="partial-json"),
]


@pytest.mark.parametrize(("name", "bound", "value"), FAMILIES)
def test_value_bound_is_the_readers(name: str, bound: int, value: Any) -> None:
    at_bound = Serializer(limits=Limits(**{name: bound}))
    assert_same(value, at_bound.loads_typed(at_bound.dumps_typed(value)))
    below = Limits(**{name: bound - 1})
    with pytest.raises(EncodeError, match=f"{name}={bound - 1}") as refused:
        Serializer(limits=below).dumps_typed(value)
    assert refused.value.limit == name
    # The same bound as its reader's: the row a default writer stores is refused there.
    with pytest.raises(LimitExceededError) as read:
        Serializer(limits=below).loads_typed(DEFAULT.dumps_typed(value))
    assert read.value.limit == name


def test_decimal_exponent_and_huge_int_are_refused_at_default_limits() -> None:
    assert DEFAULT.loads_typed(DEFAULT.dumps_typed(decimal.Decimal("1e999999"))) == decimal.Decimal("1e999999")
    for value in (decimal.Decimal("1e1000000"), decimal.Decimal("-1e-1000000"), 10**200_000):
        with pytest.raises(EncodeError, match="max_number_digits=100000") as refused:
            DEFAULT.dumps_typed(value)
        assert refused.value.limit == "max_number_digits"
    # Plain notation (no "E") past the default context's exponent: the text limit alone does not hold it.
    wide = Serializer(limits=Limits(max_text_length=2_000_000, max_number_digits=3))
    with pytest.raises(EncodeError, match="max_number_digits=3"):
        wide.dumps_typed(decimal.Decimal("1" + "0" * 1_000_000))
    widest = decimal.Decimal("1" + "0" * 999_999)
    assert wide.loads_typed(wide.dumps_typed(widest)) == widest


def test_regex_flags_bound_is_the_readers() -> None:
    serde = Serializer(limits=Limits(regex_flags=SAFE_REGEX_FLAGS & ~int(re.IGNORECASE)))
    assert serde.loads_typed(serde.dumps_typed(re.compile("a"))) == re.compile("a")
    with pytest.raises(EncodeError, match="regex_flags=") as refused:
        serde.dumps_typed(re.compile("a", re.IGNORECASE))
    assert refused.value.limit == "regex_flags"


def test_complete_json_arguments_are_not_bounded() -> None:
    serde = Serializer(limits=Limits(max_partial_json=5))
    chunk = _chunk(['{"text": "' + "y" * 200 + '"}'])
    assert_same(chunk, serde.loads_typed(serde.dumps_typed(chunk)))


def _nested_tuples(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = (value,)
    return value


@pytest.mark.parametrize("limit", [0, 1, 2, 5, 6, 7, 64])
def test_ext_depth_bound_is_the_readers(limit: int) -> None:
    serde = Serializer(limits=Limits(max_ext_depth=limit))
    deepest = _nested_tuples(limit)  # the innermost tuple is written without a nested pack
    assert serde.loads_typed(serde.dumps_typed(deepest)) == deepest
    assert serde.loads_typed(serde.dumps_typed({"k": [deepest]})) == {"k": [deepest]}
    with pytest.raises(EncodeError, match=f"max_ext_depth={limit}") as refused:
        serde.dumps_typed(_nested_tuples(limit + 1))
    assert refused.value.limit == "max_ext_depth"


def test_row_size_and_container_bounds_are_the_readers() -> None:
    small = Serializer(limits=Limits(max_row_bytes=100))
    assert small.loads_typed(small.dumps_typed("x" * 90)) == "x" * 90
    with pytest.raises(EncodeError, match="max_row_bytes=100"):
        small.dumps_typed("x" * 100)
    with pytest.raises(EncodeError, match="max_row_bytes=100"):
        small.dumps_typed({"x": (1, "y" * 100)})
    few = Serializer(limits=Limits(max_containers=3))
    text = "\x91" * 50  # UTF-8 c2 91: bytes that look like array headers, counted exactly
    assert few.loads_typed(few.dumps_typed([[1], {"a": text}])) == [[1], {"a": text}]
    with pytest.raises(EncodeError, match="max_containers=3"):
        few.dumps_typed([[1], [2], [3]])


def test_a_row_beyond_a_limit_never_falls_back_to_pickle() -> None:
    serde = Serializer(limits=Limits(max_ext_depth=1), pickle_fallback=True)
    with pytest.raises(EncodeError, match="max_ext_depth=1"):
        serde.dumps_typed(_nested_tuples(3))
