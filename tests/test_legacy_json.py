"""Legacy ``json`` rows (LangGraph before msgpack) through the allowlist."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

from serde_kit import BlockedTypeError, MalformedDataError, RebuildError, Serializer
from tests.support import sample_types as t


def row(obj) -> tuple[str, bytes]:
    return "json", json.dumps(obj).encode()


def test_lc2_constructor_for_allowed_types():
    data = row({"lc": 2, "type": "constructor", "id": ["tests.support.sample_types", "Doc"], "kwargs": {"title": "a"}})
    assert Serializer(allow=[t.Doc]).loads_typed(data) == t.Doc("a")


def test_lc2_method_only_from_the_fixed_table():
    data = row({"lc": 2, "type": "constructor", "id": ["datetime", "datetime"], "method": "fromisoformat", "args": ["2024-01-02T03:04:05"]})
    assert Serializer().loads_typed(data).year == 2024
    bad = row({"lc": 2, "type": "constructor", "id": ["datetime", "datetime"], "method": "now", "args": []})
    with pytest.raises(BlockedTypeError):
        Serializer().loads_typed(bad)


def test_lc2_blocked_and_failing():
    data = row({"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["id"]})
    with pytest.raises(BlockedTypeError, match="os.system"):
        Serializer().loads_typed(data)
    failing = row({"lc": 2, "type": "constructor", "id": ["tests.support.sample_types", "Doc"], "kwargs": {"nope": 1}})
    with pytest.raises(RebuildError):
        Serializer(allow=[t.Doc]).loads_typed(failing)


def test_lc1_messages_revive():
    message = HumanMessage("hello", id="m1")
    lc1 = json.loads(json.dumps(message.to_json()))
    assert Serializer().loads_typed(row({"messages": [lc1]})) == {"messages": [message]}


def test_invalid_json():
    with pytest.raises(MalformedDataError):
        Serializer().loads_typed(("json", b"{not json"))


def test_lc1_non_message_classes_are_refused():
    data = row({"lc": 1, "type": "constructor", "id": ["langchain", "chat_models", "openai", "ChatOpenAI"], "kwargs": {}})
    with pytest.raises(BlockedTypeError, match="ChatOpenAI"):
        Serializer().loads_typed(data)


# --- issue 9: rows written by JsonPlusSerializer.dumps of langgraph-checkpoint 1.0.x


def _corpus_row(release: str, name: str) -> tuple[str, bytes]:
    import base64

    from tests.compat import corpus

    found = next(r for r in corpus.rows(release) if r["name"] == name)
    return found["tag"], base64.b64decode(found["data"])


def test_bytes_and_bytearray_written_as_fromhex_are_read():
    # The real 1.0.9 writer: {"lc": 2, "id": ["builtins", "bytes"], "method": "fromhex", "args": [hex]}
    tag, data = _corpus_row("1.0.9", "bytes_nested")
    assert tag == "json" and b'"fromhex"' in data
    back = Serializer().loads_typed((tag, data))
    assert back == {"blob": b"\x00\xffbin", "ba": bytearray(b"\x01\x02")}
    assert type(back["blob"]) is bytes and type(back["ba"]) is bytearray


def test_fromhex_with_a_malformed_argument_is_malformed_data():
    for args in ([], ["zz"], [1], ["00", "11"]):
        data = row({"lc": 2, "type": "constructor", "id": ["builtins", "bytes"], "method": "fromhex", "args": args})
        with pytest.raises(MalformedDataError, match="fromhex"):
            Serializer().loads_typed(data)


def test_other_builtin_methods_stay_refused_with_advice_that_does_not_claim_allowing_helps():
    data = row({"lc": 2, "type": "constructor", "id": ["builtins", "bytes"], "method": "maketrans", "args": ["a", "b"]})
    with pytest.raises(BlockedTypeError, match="only .* may be called") as info:
        Serializer(allow=[bytes]).loads_typed(data)
    assert "allow=" not in str(info.value)


@pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")
def test_model_that_no_longer_validates_reads_like_the_old_reader():
    # 1.0.x wrote pydantic models with method [None, "model_construct"]: the old
    # reader built them with the constructor, else model_construct.
    from tests.compat.corpus_types import Person

    back = Serializer(allow=[Person]).loads_typed(_corpus_row("1.0.9", "pydantic_unvalidated"))
    assert type(back) is Person and back.age == "not a number"
    plain = row({"lc": 2, "type": "constructor", "id": ["tests", "compat", "corpus_types", "Person"], "kwargs": {"name": "a", "age": "x"}})
    with pytest.raises(RebuildError):  # without the old writer's method marker: validated
        Serializer(allow=[Person]).loads_typed(plain)


def test_generic_model_json_rows_are_read():
    from tests.compat.corpus_types import Box

    back = Serializer(allow=[Box]).loads_typed(_corpus_row("1.0.9", "pydantic_generic"))
    assert type(back) is Box[int] and back.item == 5
