"""The writer never writes a row its own reader refuses: the encoder takes its bounds from Limits."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from serde_kit import EncodeError, Limits, Serializer
from tests.support import strategies as S, strategy_types as T
from tests.support.compare import assert_same

DEFAULT = Serializer(allow=T.USER_TYPES)
#: The row-layout limits a writer checks; the value budgets (digits, text, regex,
#: hash collisions, array elements, partial JSON) stay at their defaults here.
LAYOUT_LIMITS = st.builds(
    Limits,
    max_ext_depth=st.integers(0, 6),
    max_containers=st.integers(0, 60),
    max_row_bytes=st.integers(0, 4000),
)


@given(S.checkpoint_values(), LAYOUT_LIMITS)
def test_writer_refuses_or_writes_what_its_reader_reads(value: Any, limits: Limits) -> None:
    serde = Serializer(allow=T.USER_TYPES, limits=limits)
    try:
        row = serde.dumps_typed(value)
    except EncodeError as exc:
        if exc.limit is None:  # no faithful encoding at all: the default writer refuses it too
            with pytest.raises(EncodeError):
                DEFAULT.dumps_typed(value)
        else:
            assert exc.limit in {"max_ext_depth", "max_containers", "max_row_bytes"}
            assert f"{exc.limit}={getattr(limits, exc.limit)}" in str(exc)
            DEFAULT.loads_typed(DEFAULT.dumps_typed(value))  # only the limit stood in the way
        return
    assert_same(value, serde.loads_typed(row))


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
