"""Encoder: dict keys that msgpack would silently change, and write-side errors."""

from __future__ import annotations

import datetime
import decimal
import uuid

import ormsgpack
import pytest

from serde_kit import Serializer
from tests.support import sample_types as t

SERDE = Serializer(allow=[t.Color, t.Level])


@pytest.mark.parametrize(
    "key",
    [
        1,
        -(2**63),
        2**64 - 1,
        2**80,
        1.5,
        True,
        None,
        b"raw",
        (1, ("a", None)),
        (2**80,),
        datetime.date(2024, 1, 1),
        uuid.UUID(int=7),
        t.Color.RED,
        t.Level.LOW,
        decimal.Decimal("1.5"),
        frozenset({1}),
    ],
    ids=repr,
)
def test_non_str_keys_keep_their_type(key):
    value = {key: {key: [key]}, "plain": 1}
    back = SERDE.loads(SERDE.dumps(value))
    assert back == value
    outer_key = next(iter(back))
    inner_key = next(iter(back[outer_key]))
    assert type(outer_key) is type(key) and type(inner_key) is type(key)


def test_native_keys_are_written_exactly_as_the_stock_writer_does():
    value = {1: "a", (2, 3): "b"}
    assert SERDE.dumps(value) == ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)


def test_keys_that_msgpack_would_stringify_become_an_items_ext():
    data = SERDE.dumps({datetime.date(2024, 1, 1): 1})
    code, payload = ormsgpack.unpackb(data, ext_hook=lambda c, d: (c, d))
    assert code == 0
    assert ormsgpack.unpackb(payload, ext_hook=lambda c, d: "ext")[:2] == ["builtins", "dict"]
