"""Lenient mode: raw payload instead of an error, one warning per type saying what was lost."""

from __future__ import annotations

import warnings

import pytest

from serde_kit import LenientDecodeWarning, Serializer
from tests.support import sample_types as t

WRITER = Serializer(allow=[t.Doc, t.Inner, t.NotAllowed])


def test_blocked_types_come_back_raw_with_one_warning_per_type():
    data = WRITER.dumps_typed([t.Doc("a", ("x",)), t.Doc("b"), t.NotAllowed(secret="s")])
    reader = Serializer(lenient=True)
    with pytest.warns(LenientDecodeWarning) as record:
        value = reader.loads_typed(data)
    assert value == [
        {"title": "a", "tags": ("x",), "meta": {}},
        {"title": "b", "tags": (), "meta": {}},
        {"secret": "s"},
    ]
    assert len(record) == 2
    messages = " ".join(str(w.message) for w in record)
    assert "tests.support.sample_types.Doc" in messages and "tests.support.sample_types.NotAllowed" in messages
    assert "lost" in messages
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader.loads_typed(data)  # already warned for both types: silent now


def test_lenient_also_covers_types_that_fail_to_rebuild():
    # Fields that neither validate nor belong to the model (a model that merely does
    # not validate reads back as stored, issue 9).
    import ormsgpack

    envelope = ["tests.support.sample_types", "Inner", {"n": "x", "when": None, "bogus": 1}, "model_validate_json"]
    data = ("msgpack", ormsgpack.packb(ormsgpack.Ext(5, ormsgpack.packb(envelope))))
    with pytest.warns(LenientDecodeWarning, match="could not be rebuilt"):
        assert Serializer(allow=[t.Inner], lenient=True).loads_typed(data) == {"n": "x", "when": None, "bogus": 1}
