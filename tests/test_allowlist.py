"""Allowlist: defaults, explicit entries, env/file config, schema-derived, refusal before import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from serde_kit import Allowlist, BlockedTypeError, ConfigError, Serializer
from tests.support import sample_types as t


def test_defaults_cover_stdlib_langgraph_and_messages_but_not_user_types():
    allowlist = Allowlist.default()
    assert allowlist.allows("datetime", "datetime")
    assert allowlist.allows("langchain_core.messages.ai", "AIMessage")
    assert allowlist.allows("langgraph.types", "Send")
    assert not allowlist.allows("tests.support.sample_types", "Doc")
    assert not allowlist.allows("os", "system")
    assert not Allowlist(defaults=False).allows("datetime", "datetime")


def test_entries_as_classes_pairs_and_strings():
    allowlist = Allowlist([t.Doc, ("tests.support.sample_types", "Point"), "tests.support.sample_types:Color"])
    assert {("tests.support.sample_types", "Doc"), ("tests.support.sample_types", "Point"), ("tests.support.sample_types", "Color")} <= set(allowlist)
    assert t.Doc in allowlist and "tests.support.sample_types:Point" in allowlist


@pytest.mark.parametrize("bad", ["no-colon", ":x", ("a",), 42, ("a", "")])
def test_malformed_entries_raise_config_error(bad):
    with pytest.raises(ConfigError):
        Allowlist([bad])


def test_from_env_reads_variable_and_file(tmp_path: Path):
    path = tmp_path / "allow.txt"
    path.write_text("# our models\ntests.support.sample_types:Doc\n\ntests.support.sample_types:Point  # trailing comment\n")
    env = {"SERDE_KIT_ALLOW": "tests.support.sample_types:Color, tests.support.sample_types:Level", "SERDE_KIT_ALLOW_FILE": str(path)}
    allowlist = Allowlist.from_env(env)
    for name in ("Doc", "Point", "Color", "Level"):
        assert allowlist.allows("tests.support.sample_types", name)


def test_from_env_errors_name_the_source(tmp_path: Path):
    with pytest.raises(ConfigError, match="SERDE_KIT_ALLOW"):
        Allowlist.from_env({"SERDE_KIT_ALLOW": "bad entry"})
    with pytest.raises(ConfigError, match="cannot read allowlist file"):
        Allowlist.from_env({"SERDE_KIT_ALLOW_FILE": str(tmp_path / "missing.txt")})
    bad = tmp_path / "bad.txt"
    bad.write_text("ok.module:Name\nbroken\n")
    with pytest.raises(ConfigError, match=r"bad.txt:2"):
        Allowlist.from_env({"SERDE_KIT_ALLOW_FILE": str(bad)})


def test_serializer_default_allowlist_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SERDE_KIT_ALLOW", "tests.support.sample_types:Doc")
    serde = Serializer()
    assert serde.loads_typed(serde.dumps_typed(t.Doc("x"))) == t.Doc("x")


def test_from_schema_walks_typeddict_models_dataclasses_and_forms():
    derived = set(Allowlist.from_schema(t.State, defaults=False))
    assert derived == {
        ("tests.support.sample_types", "Doc"),
        ("tests.support.sample_types", "Outer"),
        ("tests.support.sample_types", "Inner"),
        ("tests.support.sample_types", "Color"),
        ("tests.support.sample_types", "Point"),
    }


def test_from_graph_uses_the_builder_schemas():
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(t.State)
    builder.add_node("n", lambda state: {})
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    derived = Allowlist.from_graph(builder.compile())
    assert derived.allows("tests.support.sample_types", "Outer") and derived.allows("tests.support.sample_types", "Doc")


def test_blocked_type_is_refused_before_its_module_is_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A module that leaves a mark when imported; the refused decode must not import it.
    module = tmp_path / "marked_module.py"
    module.write_text(
        textwrap.dedent(
            """
            import dataclasses, pathlib
            pathlib.Path(__file__).with_suffix(".imported").write_text("yes")
            @dataclasses.dataclass
            class Thing:
                a: int
            """
        )
    )
    writer = textwrap.dedent(
        """
        import sys
        from marked_module import Thing  # the writer's own directory (its working directory) holds it
        from serde_kit import Serializer
        sys.stdout.buffer.write(Serializer(allow=[Thing]).dumps(Thing(1)))
        """
    )
    data = subprocess.run([sys.executable, "-c", writer], cwd=tmp_path, check=True, capture_output=True).stdout
    (tmp_path / "marked_module.imported").unlink()
    monkeypatch.syspath_prepend(tmp_path)  # the reader could import it: the refusal must come first
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads(data)
    assert info.value.module == "marked_module"
    assert not (tmp_path / "marked_module.imported").exists()
    assert "marked_module" not in sys.modules


def test_method_slot_is_never_dispatched_beyond_the_fixed_table():
    import ormsgpack

    evil = ormsgpack.packb(ormsgpack.Ext(3, ormsgpack.packb(["os", "system", "echo hi", "__call__"])))
    with pytest.raises(BlockedTypeError):
        Serializer(allow=[("os", "system")]).loads(evil)
    allowed_type_bad_method = ormsgpack.packb(
        ormsgpack.Ext(3, ormsgpack.packb(["datetime", "datetime", "x", "strptime"]))
    )
    with pytest.raises(BlockedTypeError, match="strptime"):
        Serializer().loads(allowed_type_bad_method)


def test_allow_everything_is_a_named_door():
    assert Allowlist.allow_everything_unsafe().allows("anything", "Goes")
    assert "unsafe" in repr(Allowlist.allow_everything_unsafe())


# --- issue 9: a class entry allows its schema; every suggested fix works ------


def test_allowing_a_class_allows_the_types_its_fields_declare():
    # Outer declares list[Inner]; Inner declares datetime (a default).
    serde = Serializer(allow=[t.Outer], allowlist=Allowlist())
    value = t.Outer(name="n", items=[t.Inner(n=1)], aliasField=2)
    assert serde.loads_typed(serde.dumps_typed(value)) == value
    assert Allowlist([t.State], defaults=False).allows("tests.support.sample_types", "Doc")  # TypedDict fields too
    assert set(Allowlist([t.Outer], defaults=False)) == {("tests.support.sample_types", "Outer"), ("tests.support.sample_types", "Inner")}


def test_a_pair_or_string_entry_allows_just_the_class():
    from serde_kit.allowlist import type_key

    # An Inner in the Any field is its own typed entry, named by the row: blocked.
    value = t.Outer(name="n", anything=t.Inner(n=1), aliasField=2)
    row = Serializer(allow=[t.Outer]).dumps_typed(value)
    # Inners in `items: list[Inner]` are stored as their fields and built by Outer's
    # own schema (nothing in the row names a class), as stock rows are read.
    declared = t.Outer(name="n", items=[t.Inner(n=1)], aliasField=2)
    declared_row = Serializer(allow=[t.Outer]).dumps_typed(declared)
    for entry in (type_key(t.Outer), "tests.support.sample_types:Outer"):
        assert set(Allowlist([entry], defaults=False)) == {("tests.support.sample_types", "Outer")}
        with pytest.raises(BlockedTypeError, match="tests.support.sample_types.Inner"):
            Serializer(allow=[entry]).loads_typed(row)
        assert Serializer(allow=[entry]).loads_typed(declared_row) == declared


class Holder:
    """A namespace class: its nested enum's qualname is ``Holder.Level``."""

    import enum as _enum

    class Level(_enum.Enum):
        LOW = 1


def _blocked_message(row) -> str:
    with pytest.raises(BlockedTypeError) as info:
        Serializer(allowlist=Allowlist()).loads_typed(row)
    return str(info.value)


@pytest.mark.parametrize("value", [t.Color.RED, Holder.Level.LOW, t.Doc("d")], ids=repr)
def test_each_fix_the_blocked_type_error_suggests_works(value, monkeypatch):
    row = Serializer(allow=[type(value)]).dumps_typed(value)
    message = _blocked_message(row)
    module, qualname = type(value).__module__, type(value).__qualname__
    short = qualname.split(".")[0]
    assert f"Serializer(allow=[{qualname}]) after `from {module} import {short}`" in message
    assert f"Serializer(allow=[({module!r}, {qualname!r})])" in message
    assert f"SERDE_KIT_ALLOW={module}:{qualname}" in message
    # The first form, written as the message says (`from module import short`).
    namespace: dict = {}
    exec(f"from {module} import {short}", namespace)
    assert Serializer(allow=[eval(qualname, namespace)]).loads_typed(row) == value
    assert Serializer(allow=[(module, qualname)]).loads_typed(row) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", f"{module}:{qualname}")
    assert Serializer().loads_typed(row) == value


@pytest.mark.parametrize("value", [t.Color.RED, Holder.Level.LOW], ids=repr)
def test_each_fix_the_encode_error_suggests_works(value, monkeypatch):
    from serde_kit import EncodeError

    with pytest.raises(EncodeError) as info:
        Serializer(allowlist=Allowlist()).dumps_typed(value)
    module, qualname = type(value).__module__, type(value).__qualname__
    assert f"Serializer(allow=[{qualname}])" in str(info.value)
    assert f"Serializer(allow=[({module!r}, {qualname!r})])" in str(info.value)
    assert f"SERDE_KIT_ALLOW={module}:{qualname}" in str(info.value)
    for serde in (Serializer(allow=[type(value)]), Serializer(allow=[(module, qualname)])):
        assert serde.loads_typed(serde.dumps_typed(value)) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", f"{module}:{qualname}")
    assert Serializer().dumps_typed(value)


def test_a_method_outside_the_fixed_table_is_refused_without_suggesting_an_allow():
    import ormsgpack

    data = ormsgpack.packb(ormsgpack.Ext(3, ormsgpack.packb(["tests.support.sample_types", "Doc", "x", "from_json"])))
    for serde in (Serializer(), Serializer(allow=[t.Doc])):  # allowing the type would not help
        with pytest.raises(BlockedTypeError, match="may be called") as info:
            serde.loads(data)
        assert "allow=" not in str(info.value)


def test_the_fixes_other_refusals_suggest_work():
    from serde_kit import EncodeError, UnknownTagError
    from serde_kit.errors import DecodeError

    # pickle rows: "read it with Serializer(pickle_fallback=True)"
    row = Serializer(pickle_fallback=True).dumps_typed(t.Opaque())
    assert row[0] == "pickle"
    with pytest.raises(UnknownTagError, match=r"Serializer\(pickle_fallback=True\)"):
        Serializer().loads_typed(row)
    assert type(Serializer(pickle_fallback=True).loads_typed(row)) is t.Opaque
    # encrypted rows: "read it through serde_kit.EncryptedSerializer"
    from serde_kit import EncryptedSerializer, Keyring

    keyring = Keyring({"k": b"\x01" * 32}, primary="k")
    encrypted = EncryptedSerializer(Serializer(), keyring).dumps_typed({"a": 1})
    with pytest.raises(UnknownTagError, match="EncryptedSerializer"):
        Serializer().loads_typed(encrypted)
    assert EncryptedSerializer(Serializer(), keyring).loads_typed(encrypted) == {"a": 1}
    # a dict key with lone surrogates: "store the key as bytes instead: key.encode('utf-8', 'surrogatepass')"
    key = "k\ud800"
    with pytest.raises(EncodeError, match=r"key.encode\('utf-8', 'surrogatepass'\)"):
        Serializer().dumps_typed({key: 1})
    back = Serializer().loads_typed(Serializer().dumps_typed({key.encode("utf-8", "surrogatepass"): 1}))
    assert [k.decode("utf-8", "surrogatepass") for k in back] == [key]
    # ... and inside a tuple key: "store that part as bytes: text.encode('utf-8', 'surrogatepass')"
    with pytest.raises(EncodeError, match=r"text.encode\('utf-8', 'surrogatepass'\)"):
        Serializer().dumps_typed({(key, 1): 1})
    fixed = {(key.encode("utf-8", "surrogatepass"), 1): 1}
    assert Serializer().loads_typed(Serializer().dumps_typed(fixed)) == fixed
    # a ZoneInfo built from a file: "use ZoneInfo(key)"
    import zoneinfo

    with open(_tzfile("Europe/Paris"), "rb") as f:
        from_file = zoneinfo.ZoneInfo.from_file(f)
    with pytest.raises(EncodeError, match=r"use ZoneInfo\(key\)"):
        Serializer().dumps_typed(from_file)
    assert Serializer().loads(Serializer().dumps(zoneinfo.ZoneInfo("Europe/Paris"))) == zoneinfo.ZoneInfo("Europe/Paris")
    assert issubclass(UnknownTagError, DecodeError)


def _tzfile(key: str) -> str:
    import zoneinfo

    for root in zoneinfo.TZPATH:
        candidate = Path(root) / key
        if candidate.is_file():
            return str(candidate)
    import tzdata  # the pure-Python time zone database package

    return str(Path(tzdata.__file__).parent / "zoneinfo" / key)
