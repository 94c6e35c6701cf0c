"""Serializer: type tags, SerializerProtocol, write-side errors, pickle door."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.base import SerializerProtocol

from serde_kit import EncodeError, Serializer, UnknownTagError


def test_type_tags_match_the_stock_serializer():
    serde = Serializer()
    assert serde.dumps_typed(None) == ("null", b"")
    assert serde.dumps_typed(b"ab") == ("bytes", b"ab")
    assert serde.dumps_typed(bytearray(b"ab")) == ("bytearray", b"ab")
    assert serde.dumps_typed({"a": 1})[0] == "msgpack"
    assert serde.loads_typed(("null", b"")) is None
    assert type(serde.loads_typed(("bytearray", b"ab"))) is bytearray
    assert serde.loads_typed(("bytes", memoryview(b"ab"))) == b"ab"


def test_is_a_langgraph_serializer_protocol():
    assert isinstance(Serializer(), SerializerProtocol)


def test_unsupported_values_raise_encode_error_with_advice():
    class Opaque:
        pass

    with pytest.raises(EncodeError, match="no faithful encoding"):
        Serializer().dumps_typed({"x": Opaque()})
    with pytest.raises(EncodeError, match="surrogates"):
        Serializer().dumps_typed({"key\ud800": 1})  # lone surrogates in a *value* are stored
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(EncodeError, match="cycle"):
        Serializer().dumps_typed(cycle)


def test_pickle_is_a_named_opt_in_door():
    from tests.support.sample_types import Opaque

    with pytest.raises(UnknownTagError, match="pickle_fallback=True"):
        Serializer().loads_typed(("pickle", b"\x80\x05N."))
    unsafe = Serializer(pickle_fallback=True)
    tag, data = unsafe.dumps_typed(Opaque())
    assert tag == "pickle" and unsafe.loads_typed((tag, data)) == Opaque()


def test_only_one_module_imports_pickle():
    import pathlib

    import serde_kit

    package = pathlib.Path(serde_kit.__file__).resolve().parent  # the source tree, or an installed wheel
    importers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if any(line.strip() in ("import pickle", "from pickle import") or line.startswith("from pickle ")
               for line in path.read_text().splitlines())
    )
    assert importers == ["_pickle.py"]


def test_with_allow_returns_a_widened_copy():
    from tests.support import sample_types as t

    base = Serializer()
    wider = base.with_allow(t.Doc)
    assert wider.loads_typed(wider.dumps_typed(t.Doc("a"))) == t.Doc("a")
    with pytest.raises(EncodeError):
        base.dumps_typed(t.Doc("a"))


@pytest.mark.parametrize("slotted", [False, True], ids=["plain", "slotted"])
def test_a_subclass_overriding_loads_typed_is_called_and_reaches_the_base(slotted: bool) -> None:
    # loads_typed is an instance slot (the compiled LoadsTyped on the native path): a
    # subclass's own method must still be what savers call, and super() must reach the base.
    calls: list[tuple[str, bytes]] = []

    def loads_typed(self: Serializer, data: tuple[str, bytes]) -> object:
        calls.append(data)
        return ("seen", super(type(self), self).loads_typed(data))

    namespace: dict[str, object] = {"loads_typed": loads_typed}
    if slotted:
        namespace["__slots__"] = ()
    Mine = type("Mine", (Serializer,), namespace)
    serde = Mine()
    row = serde.dumps_typed({"a": 1})
    assert serde.loads_typed(row) == ("seen", {"a": 1})
    assert calls == [row]
    assert Serializer().loads_typed(row) == {"a": 1}
