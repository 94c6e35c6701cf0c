"""Nested pydantic models stored as their fields, validated once with the outer model."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

import msgspec
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit import Serializer
from serde_kit.ext import pydantic as ext_pydantic
from tests.support import sample_types as t

MODELS = [t.Cell, t.SpecialCell, t.Grid, t.Sheet, t.CheckedGrid, t.FieldCheckedGrid, t.AliasedCell, t.HoldsAliased]
SERDE = Serializer(allow=MODELS)
WHEN = datetime(2024, 5, 1, 8, 30, tzinfo=timezone.utc)


def envelope(value: Any) -> list[Any]:
    """The outer ext 5 envelope of ``value``, nested exts left as (code, envelope)."""

    def hook(code: int, data: memoryview) -> Any:
        return (code, msgspec.msgpack.decode(data, ext_hook=hook))

    tag, data = SERDE.dumps_typed(value)
    code, env = msgspec.msgpack.decode(data, ext_hook=hook)
    assert tag == "msgpack" and code == 5
    return env  # type: ignore[no-any-return]


def rt(value: Any) -> Any:
    return SERDE.loads_typed(SERDE.dumps_typed(value))


def grid() -> t.Grid:
    return t.Grid(name="g", head=t.Cell(v=0, when=WHEN), cells=[t.Cell(v=i, when=WHEN) for i in range(3)])


def test_nested_models_in_exactly_declared_fields_are_stored_as_their_fields():
    env = envelope(grid())
    assert env[3] == ext_pydantic.INLINED_METHOD == "model_validate"  # stock rows say "model_validate_json"
    assert env[2]["head"] == {"v": 0, "when": env[2]["head"]["when"]}
    assert [type(cell) for cell in env[2]["cells"]] == [dict, dict, dict]
    back = rt(grid())
    assert back == grid()
    assert type(back.head) is t.Cell and [type(c) for c in back.cells] == [t.Cell] * 3
    assert back.cells[1].when == WHEN and type(back.cells[1].when) is datetime


def test_two_levels_of_nesting_inline_and_round_trip():
    sheet = t.Sheet(grids=[grid(), grid()])
    env = envelope(sheet)
    assert env[3] == ext_pydantic.INLINED_METHOD
    assert type(env[2]["grids"][0]["cells"][0]) is dict
    back = rt(sheet)
    assert back == sheet and type(back.grids[1].cells[2]) is t.Cell


def test_a_subclass_instance_keeps_its_own_ext_and_class():
    value = t.Grid(name="g", head=t.SpecialCell(v=1, note="x"), cells=[t.Cell(v=2), t.SpecialCell(v=3, note="y")])
    env = envelope(value)
    assert env[2]["head"][0] == 5 and env[2]["head"][1][1] == "SpecialCell"
    assert type(env[2]["cells"][0]) is dict and env[2]["cells"][1][0] == 5
    back = rt(value)
    assert type(back.head) is t.SpecialCell and [type(c) for c in back.cells] == [t.Cell, t.SpecialCell]
    assert back == value


@pytest.mark.parametrize(
    "value",
    [
        t.CheckedGrid(cells=[t.Cell(v=1)]),
        t.FieldCheckedGrid(cells=[t.Cell(v=1)]),
        t.HoldsAliased(cells=[t.AliasedCell(V=1)]),
        t.Grid(name="any", head=t.Cell(v=1), anything=t.Cell(v=2)),
    ],
    ids=["before-model-validator", "before-field-validator", "aliased-nested", "any-field"],
)
def test_nested_models_stay_exts_where_validation_could_differ(value):
    env = envelope(value)
    fields = env[2]
    for key in ("cells", "anything"):
        if isinstance(fields.get(key), list):
            assert all(type(item) is tuple and item[0] == 5 for item in fields[key])
    if type(value) is t.Grid:
        assert fields["anything"][0] == 5  # Any: not inlined (head is)
    else:
        assert env[3] == ext_pydantic.STOCK_METHOD
    back = rt(value)
    assert back == value and type(back) is type(value)


def test_a_plain_dict_in_a_planned_field_turns_inlining_off():
    # model_construct can leave a dict where a Cell belongs: a reader could not tell
    # it from an inlined Cell, so nothing of this model is inlined.
    value = t.Grid.model_construct(name="g", head={"v": 1}, cells=[t.Cell(v=2)])
    env = envelope(value)
    assert env[3] == ext_pydantic.STOCK_METHOD
    assert env[2]["cells"][0][0] == 5


@pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")
def test_a_model_that_does_not_validate_gets_its_inlined_models_back_as_models():
    value = t.Grid.model_construct(name=None, head=t.Cell(v=1, when=WHEN), cells=[t.Cell(v=2)])  # name must be str
    assert envelope(value)[3] == ext_pydantic.INLINED_METHOD
    back = rt(value)
    assert back.name is None
    assert type(back.head) is t.Cell and back.head == t.Cell(v=1, when=WHEN)
    assert [type(c) for c in back.cells] == [t.Cell] and back.cells[0].v == 2


@pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")
def test_an_inlined_model_that_does_not_validate_is_rebuilt_as_stored():
    bad_cell = t.Cell.model_construct(v="not an int")
    value = t.Sheet(grids=[t.Grid(name="g", head=t.Cell(v=1), cells=[bad_cell])])
    back = rt(value)
    assert type(back.grids[0]) is t.Grid and type(back.grids[0].cells[0]) is t.Cell
    assert back.grids[0].cells[0].v == "not an int" and back.grids[0].head == t.Cell(v=1)


def test_stock_readers_build_inlined_models(caplog):
    caplog.set_level(logging.ERROR)
    stored = SERDE.dumps_typed(t.Sheet(grids=[grid()]))
    back = JsonPlusSerializer(allowed_msgpack_modules=True).loads_typed(stored)
    assert back == t.Sheet(grids=[grid()]) and type(back.grids[0].cells[0]) is t.Cell


def test_inline_plan_names_only_exactly_declared_model_fields():
    assert ext_pydantic.inline_plan(t.Grid) == {"head": (t.Cell, False), "cells": (t.Cell, True)}
    assert ext_pydantic.inline_plan(t.CheckedGrid) == {}
    assert ext_pydantic.inline_plan(t.FieldCheckedGrid) == {}
    assert ext_pydantic.inline_plan(t.HoldsAliased) == {}
    assert ext_pydantic.inline_plan(t.Cell) == {}
