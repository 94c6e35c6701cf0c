"""pydantic v2 / v1 models and secrets."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import SecretBytes, SecretStr

from serde_kit import BlockedTypeError, EncodeError, RebuildError, Serializer
from tests.support import sample_types as t

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


@pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")
def test_model_that_does_not_validate_reads_back_as_it_was_stored():
    # Built with model_construct, or mutated without validate_assignment: serde_kit
    # writes it, so it must read back (equal), as the stock reader reads it too.
    constructed = t.Inner.model_construct(n="not a number")
    mutated = t.Inner(n=1)
    mutated.n = "changed"
    for value in (constructed, mutated):
        back = rt(value)
        assert type(back) is t.Inner and back == value and back.n == value.n
        assert JsonPlusSerializer(allowed_msgpack_modules=True).loads_typed(SERDE.dumps_typed(value)) == value


@pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")
def test_unvalidated_v1_model_reads_back_as_stored():
    value = t.OldModel.construct(a="not an int")
    back = rt(value)
    assert type(back) is t.OldModel and back.a == "not an int"


def test_fields_that_do_not_validate_and_are_not_the_models_raise_rebuild_error():
    # The unvalidated fallback builds only the model's own fields: stored bytes
    # cannot attach arbitrary attributes to an allowed model.
    payload = ormsgpack.packb(["tests.support.sample_types", "Inner", {"n": "x", "injected": 1}, "model_validate_json"])
    data = ormsgpack.packb(ormsgpack.Ext(5, payload))
    with pytest.raises(RebuildError, match="tests.support.sample_types.Inner"):
        SERDE.loads(data)


def test_stock_reader_builds_our_models_as_well_as_its_own(caplog):
    caplog.set_level(logging.ERROR)
    stock = JsonPlusSerializer(allowed_msgpack_modules=True)
    simple = t.Inner(n=1, when=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert stock.loads_typed(SERDE.dumps_typed(simple)) == simple
    # Our payload leaves computed fields out (the stock model_dump() keeps them).
    computed = t.Summary(parts=[t.Inner(n=1)])
    assert stock.loads_typed(SERDE.dumps_typed(computed)) == computed


# --- issue 9 -------------------------------------------------------------------


def _corpus_row(release: str, name: str) -> tuple[str, bytes]:
    """Bytes a real old langgraph-checkpoint release wrote (tests/compat/data)."""
    import base64

    from tests.compat import corpus

    row = next(r for r in corpus.rows(release) if r["name"] == name)
    return row["tag"], base64.b64decode(row["data"])


def test_pydantic_v1_secrets_are_written_and_read_back():
    import pydantic.v1 as v1

    serde = Serializer()
    for secret in (v1.SecretStr("pw"), v1.SecretBytes(b"pw")):
        row = serde.dumps_typed({"s": secret})
        back = serde.loads_typed(row)["s"]
        assert type(back) is type(secret) and back.get_secret_value() == secret.get_secret_value()
        assert row == JsonPlusSerializer().dumps_typed({"s": secret})  # the stock bytes exactly


def test_stock_pydantic_v1_secret_rows_read_by_default():
    back = Serializer().loads_typed(_corpus_row("2.0.26", "secret_v1"))
    assert back["token"].get_secret_value() == "old-s3cr3t"


def test_generic_model_round_trips_as_its_parametrized_class():
    from tests.compat.corpus_types import Box

    serde = Serializer(allow=[Box])
    value = Box[int](item=5)
    back = serde.loads_typed(serde.dumps_typed(value))
    assert type(back) is Box[int] and back == value
    # The stock writer stores the same name ("Box[int]"); its rows read the same way.
    assert serde.dumps_typed(value) == JsonPlusSerializer().dumps_typed(value)
    stock_row = _corpus_row("4.3.2", "pydantic_generic")
    assert type(serde.loads_typed(stock_row)) is Box[int]


def test_generic_model_allowed_through_its_parametrized_class_or_the_suggested_forms(monkeypatch):
    from tests.compat.corpus_types import Box

    row = Serializer(allow=[Box]).dumps_typed(Box[int](item=1))
    for serde in (
        Serializer(allow=[Box[int]]),
        Serializer(allow=[("tests.compat.corpus_types", "Box[int]")]),
        Serializer(allow=["tests.compat.corpus_types:Box"]),
    ):
        assert serde.loads_typed(row) == Box[int](item=1)
    # The reader suggests the origin, which allows every parametrisation whose arguments are allowed.
    with pytest.raises(BlockedTypeError, match=r"allow=\[Box\]\) after `from tests.compat.corpus_types import Box`"):
        Serializer().loads_typed(row)
    with pytest.raises(EncodeError, match=r"allow=\[Box\[int\]\]"):
        Serializer().dumps_typed(Box[int](item=1))
    # The third suggested form, the environment variable, works too.
    monkeypatch.setenv("SERDE_KIT_ALLOW", "tests.compat.corpus_types:Box[int]")
    assert Serializer().loads_typed(row) == Box[int](item=1)
    assert Serializer().dumps_typed(Box[int](item=1)) == row


def test_generic_model_name_with_an_argument_the_allowlist_lacks_is_refused():
    from tests.compat.corpus_types import Box

    payload = ormsgpack.packb(["tests.compat.corpus_types", "Box[NeverBuilt]", {"item": 3}, "model_validate_json"])
    with pytest.raises(BlockedTypeError, match=r"Box\[NeverBuilt\]"):
        Serializer(allow=[Box]).loads(ormsgpack.packb(ormsgpack.Ext(5, payload)))


def test_generic_model_is_built_parametrised_from_its_allowed_arguments():
    # Box[Inner] was never named by this process: it is built from the stored name's
    # allowed argument, not read back as the bare origin.
    from tests.compat.corpus_types import Box

    payload = ormsgpack.packb(["tests.compat.corpus_types", "Box[Inner]", {"item": {"n": 4, "when": None}}])
    back = Serializer(allow=[Box, t.Inner]).loads(ormsgpack.packb(ormsgpack.Ext(5, payload)))
    assert type(back) is Box[t.Inner] and back.item == t.Inner(n=4)
    for name, error in [
        ("Box[int, str]", RebuildError),  # the class takes one argument
        ("Box[int", BlockedTypeError),
        ("Box[[int]]", BlockedTypeError),
        ("Box[int]x", BlockedTypeError),
        ("Box[os.system]", BlockedTypeError),
    ]:
        payload = ormsgpack.packb(["tests.compat.corpus_types", name, {"item": 3}])
        with pytest.raises(error, match="Box"):
            Serializer(allow=[Box]).loads(ormsgpack.packb(ormsgpack.Ext(5, payload)))


def test_three_element_ext5_payload_of_older_stock_rows_is_read():
    # [module, name, fields] without the method slot; the stock reader uses only
    # the first three elements, so it reads these too (hand-written: no release in
    # the corpus writes this shape).
    payload = ormsgpack.packb(["tests.support.sample_types", "Inner", {"n": 4, "when": None}])
    data = ormsgpack.packb({"m": ormsgpack.Ext(5, payload)})
    assert SERDE.loads(data) == {"m": t.Inner(n=4)}
    assert JsonPlusSerializer(allowed_msgpack_modules=True).loads_typed(("msgpack", data)) == {"m": t.Inner(n=4)}
    assert SERDE.loads(ormsgpack.packb(ormsgpack.Ext(5, payload))) == t.Inner(n=4)


def test_messages_written_with_langchain_core_0_3_equal_todays_messages():
    from langchain_core.messages import AIMessage, HumanMessage

    # Real rows of langgraph-checkpoint 2.0.26 with langchain-core 0.3.86 (example=False).
    messages = Serializer().loads_typed(_corpus_row("2.0.26", "messages"))
    human, ai = messages[1], messages[2]
    assert human == HumanMessage(content="weather in Paris?", id="h1") and not human.__pydantic_extra__
    assert ai.tool_calls[0]["id"] == "call_1" and "example" not in (ai.__pydantic_extra__ or {})


def test_removed_field_with_anything_but_its_old_default_is_kept():
    from langchain_core.messages import HumanMessage

    def row(example):
        fields = {"content": "hi", "additional_kwargs": {}, "response_metadata": {}, "type": "human", "name": None, "id": "h", "example": example}
        return ormsgpack.packb(ormsgpack.Ext(5, ormsgpack.packb(["langchain_core.messages.human", "HumanMessage", fields, "model_validate_json"])))

    assert Serializer().loads(row(False)) == HumanMessage(content="hi", id="h")
    kept = Serializer().loads(row(True))
    assert kept.__pydantic_extra__ == {"example": True}
    assert Serializer().loads(row(0)).__pydantic_extra__ == {"example": 0}  # not the old default's type
