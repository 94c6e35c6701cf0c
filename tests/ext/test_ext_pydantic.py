"""pydantic v2 / v1 models and secrets."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import SecretBytes, SecretStr

import sample_types as t
from serde_kit import RebuildError, Serializer

SERDE = Serializer(allow=[t.Inner, t.Outer, t.Numbers, t.OldModel, t.Summary])


def rt(value):
    return SERDE.loads_typed(SERDE.dumps_typed(value))


def test_nested_model_with_extras_aliases_and_exact_values():
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    value = t.Outer(name="n", items=[t.Inner(n=1, when=when)], anything=(1, {2}), aliasField=7, extra_thing=(3,))
    back = rt(value)
    assert back == value
    assert type(back.items[0]) is t.Inner and back.anything == (1, {2})
    assert back.alias_field == 7 and back.extra_thing == (3,)


def test_stock_rows_with_model_dump_and_computed_fields_load():
    value = t.Outer(name="n", items=[t.Inner(n=2)], aliasField=3)
    stock = JsonPlusSerializer(allowed_msgpack_modules=True)
    back = SERDE.loads_typed(stock.dumps_typed(value))
    assert back == value and type(back.items[0]) is t.Inner


def test_root_model_and_v1_and_secrets():
    assert rt(t.Numbers([1, 2])) == t.Numbers([1, 2])
    assert rt(t.OldModel(a=1)) == t.OldModel(a=1)
    assert rt(SecretStr("pw")).get_secret_value() == "pw"
    assert rt(SecretBytes(b"pw")).get_secret_value() == b"pw"


def test_invalid_stored_fields_raise_rebuild_error_instead_of_a_partial_model():
    data = SERDE.dumps(t.Inner.model_construct(n="not a number"))
    with pytest.raises(RebuildError, match="sample_types.Inner"):
        SERDE.loads(data)


def test_stock_reader_builds_our_models_as_well_as_its_own(caplog):
    caplog.set_level(logging.ERROR)
    stock = JsonPlusSerializer(allowed_msgpack_modules=True)
    simple = t.Inner(n=1, when=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert stock.loads_typed(SERDE.dumps_typed(simple)) == simple
    # Our payload leaves computed fields out (the stock model_dump() keeps them).
    computed = t.Summary(parts=[t.Inner(n=1)])
    assert stock.loads_typed(SERDE.dumps_typed(computed)) == computed
