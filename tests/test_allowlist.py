"""Allowlist: defaults, explicit entries, env/file config, schema-derived, refusal before import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sample_types as t
from serde_kit import Allowlist, BlockedTypeError, ConfigError, Serializer


def test_defaults_cover_stdlib_langgraph_and_messages_but_not_user_types():
    allowlist = Allowlist.default()
    assert allowlist.allows("datetime", "datetime")
    assert allowlist.allows("langchain_core.messages.ai", "AIMessage")
    assert allowlist.allows("langgraph.types", "Send")
    assert not allowlist.allows("sample_types", "Doc")
    assert not allowlist.allows("os", "system")
    assert not Allowlist(defaults=False).allows("datetime", "datetime")


def test_entries_as_classes_pairs_and_strings():
    allowlist = Allowlist([t.Doc, ("sample_types", "Point"), "sample_types:Color"])
    assert {("sample_types", "Doc"), ("sample_types", "Point"), ("sample_types", "Color")} <= set(allowlist)
    assert t.Doc in allowlist and "sample_types:Point" in allowlist


@pytest.mark.parametrize("bad", ["no-colon", ":x", ("a",), 42, ("a", "")])
def test_malformed_entries_raise_config_error(bad):
    with pytest.raises(ConfigError):
        Allowlist([bad])


def test_from_env_reads_variable_and_file(tmp_path: Path):
    path = tmp_path / "allow.txt"
    path.write_text("# our models\nsample_types:Doc\n\nsample_types:Point  # trailing comment\n")
    env = {"SERDE_KIT_ALLOW": "sample_types:Color, sample_types:Level", "SERDE_KIT_ALLOW_FILE": str(path)}
    allowlist = Allowlist.from_env(env)
    for name in ("Doc", "Point", "Color", "Level"):
        assert allowlist.allows("sample_types", name)


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
    monkeypatch.setenv("SERDE_KIT_ALLOW", "sample_types:Doc")
    serde = Serializer()
    assert serde.loads_typed(serde.dumps_typed(t.Doc("x"))) == t.Doc("x")


def test_from_schema_walks_typeddict_models_dataclasses_and_forms():
    derived = set(Allowlist.from_schema(t.State, defaults=False))
    assert derived == {
        ("sample_types", "Doc"),
        ("sample_types", "Outer"),
        ("sample_types", "Inner"),
        ("sample_types", "Color"),
        ("sample_types", "Point"),
    }


def test_from_graph_uses_the_builder_schemas():
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(t.State)
    builder.add_node("n", lambda state: {})
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    derived = Allowlist.from_graph(builder.compile())
    assert derived.allows("sample_types", "Outer") and derived.allows("sample_types", "Doc")


def test_blocked_type_is_refused_before_its_module_is_imported(tmp_path: Path):
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
        f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        from marked_module import Thing
        from serde_kit import Serializer
        sys.stdout.buffer.write(Serializer(allow=[Thing]).dumps(Thing(1)))
        """
    )
    data = subprocess.run([sys.executable, "-c", writer], check=True, capture_output=True).stdout
    (tmp_path / "marked_module.imported").unlink()
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(BlockedTypeError) as info:
            Serializer().loads(data)
        assert info.value.module == "marked_module"
        assert not (tmp_path / "marked_module.imported").exists()
        assert "marked_module" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))


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
