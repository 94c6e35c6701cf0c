"""Allowlist entries are parsed strictly everywhere, ``allowlist scan`` sees what the application
allows, and every fix a message suggests works when pasted as it is.

The application's types (tests/support/user_app_types.py) include a nested class and a generic
pydantic model with two parameters, whose stored name (``Pair[int, str]``) holds a comma.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from serde_kit import (
    Allowlist,
    BlockedTypeError,
    ConfigError,
    EncodeError,
    EncryptedSerializer,
    Keyring,
    MainModuleTypeWarning,
    PlaintextRefusedError,
    Serializer,
)
from serde_kit.cli import main
from tests.support import user_app_types
from tests.support.user_app_types import IntStrPair, Outer, Ticket

VALUES: list[Any] = [Ticket("a"), Outer.Inner(2), IntStrPair(first=1, second="x")]
APP_TYPES = [Ticket, Outer.Inner, IntStrPair]
CONFIG = {"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}}
KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SERDE_KIT_ALLOW", "SERDE_KIT_ALLOW_FILE", "SERDE_KIT_DB", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", KEYRING.to_env_value())


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plaintext SqliteSaver database whose one checkpoint holds the application's three types."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "app.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn, serde=Serializer(allow=APP_TYPES))
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"values": VALUES}
        saver.put(CONFIG, checkpoint, {}, {})  # type: ignore[arg-type]
    return path


def read_back(path: Path, serde: Any) -> Any:
    with sqlite3.connect(path, check_same_thread=False) as conn:
        found = SqliteSaver(conn, serde=serde).get_tuple(CONFIG)  # type: ignore[arg-type]
    assert found is not None
    return found.checkpoint["channel_values"]["values"]


# --- strict parsing, everywhere ------------------------------------------------------


@pytest.mark.parametrize("entry", ["a:B,c:D", ("a", "B,c:D"), "a:B c:D", "a b:C", "a:", ":B", "a.b", 3, ("a",)])
def test_a_malformed_python_entry_is_a_config_error_naming_it(entry: Any) -> None:
    with pytest.raises(ConfigError) as info:
        Serializer(allow=[entry])
    message = str(info.value)
    assert repr(entry) in message and "accepted: a class, a (module, qualname) pair" in message


def test_several_types_in_one_entry_get_the_split_as_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"allow=\['a:B', 'c:D'\] or --allow a:B --allow c:D"):
        Serializer(allow=["a:B,c:D"])
    assert Serializer(allow=["a:B", "c:D"]).allowlist.allows("c", "D")  # the fix, as given


def test_the_environment_and_files_are_as_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERDE_KIT_ALLOW", "a:B,c:D")  # the environment's own comma form is fine
    assert Serializer().allowlist.allows("a", "B") and Serializer().allowlist.allows("c", "D")
    monkeypatch.setenv("SERDE_KIT_ALLOW", "a:B c:D")
    with pytest.raises(ConfigError, match="'a:B c:D'.*SERDE_KIT_ALLOW"):
        Serializer()
    monkeypatch.delenv("SERDE_KIT_ALLOW")
    allow_file = tmp_path / "allow.txt"
    allow_file.write_text("# app types\ntests.support.user_app_types:Ticket\na:B,c:D\n")
    monkeypatch.setenv("SERDE_KIT_ALLOW_FILE", str(allow_file))
    with pytest.raises(ConfigError, match=rf"{re.escape(str(allow_file))}:3: allowlist entry 'a:B,c:D' holds several"):
        Serializer()
    with pytest.raises(ConfigError, match=":3: allowlist entry 'a:B,c:D'"):
        Allowlist.from_file(allow_file)


@pytest.mark.parametrize("command", [["allowlist", "scan"], ["rotate"]])
def test_the_command_line_is_as_strict(app_db: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    assert main([*command, "--sqlite", str(app_db), "--allow", "a:B,c:D"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ConfigError: --allow: allowlist entry 'a:B,c:D' holds several types")
    assert err.count("\n") == 1


def test_valid_forms_still_pass() -> None:
    allowlist = Serializer(allow=["pkg.mod:Outer.Inner", ("pkg.mod", "Pair[int, str]"), " spaced.mod : Name "]).allowlist
    assert allowlist.allows("pkg.mod", "Outer.Inner") and allowlist.allows("pkg.mod", "Pair[int, str]")
    assert allowlist.allows("spaced.mod", "Name")


# --- the fixes messages suggest, pasted --------------------------------------------


def _snippets_of(message: str) -> tuple[str, str, str, str]:
    """(class form, its import, pair form, environment form) from a BlockedTypeError/EncodeError message."""
    classes = re.search(r"Serializer\(allow=\[([^(\]'][^\]]*\]?)\]\)", message)
    imported = re.search(r"after `(from [\w.]+ import \w+)`", message)
    pair = re.search(r"(Serializer\(allow=\[\('[^)]*'\)\]\))", message)
    env = re.search(r"SERDE_KIT_ALLOW=(\S+)$", message)
    assert classes and pair and env, message
    return classes[1], imported[1] if imported else f"from tests.support.user_app_types import {classes[1].split('.')[0].split('[')[0]}", pair[1], env[1]


@pytest.mark.parametrize("value", VALUES, ids=["dataclass", "nested", "generic"])
def test_a_blocked_read_is_fixed_by_each_line_its_message_gives(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    row = Serializer(allow=APP_TYPES).dumps_typed(value)
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads_typed(row)
    cls, imported, pair, env = _snippets_of(str(info.value))
    namespace: dict[str, Any] = {"Serializer": Serializer}
    exec(f"{imported}\nserde = Serializer(allow=[{cls}])", namespace)
    assert namespace["serde"].loads_typed(row) == value
    assert eval(pair, {"Serializer": Serializer}).loads_typed(row) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", env)
    assert Serializer().loads_typed(row) == value


@pytest.mark.parametrize("value", VALUES, ids=["dataclass", "nested", "generic"])
def test_a_refused_write_is_fixed_by_each_line_its_message_gives(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EncodeError) as info:
        Serializer().dumps_typed(value)
    message = str(info.value)
    cls = re.search(r"Allow it: Serializer\(allow=\[(.*?)\]\) or", message)
    pair = re.search(r"or (Serializer\(allow=\[\(.*?\)\]\)) or", message)
    env = re.search(r"SERDE_KIT_ALLOW=(\S+)$", message)
    assert cls and pair and env, message
    namespace = {"Serializer": Serializer, **vars(user_app_types)}
    for serde in (eval(f"Serializer(allow=[{cls[1]}])", namespace), eval(pair[1], namespace)):
        assert Serializer(allow=APP_TYPES).loads_typed(serde.dumps_typed(value)) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", env[1])
    assert Serializer(allow=APP_TYPES).loads_typed(Serializer().dumps_typed(value)) == value


def test_scan_snippets_each_make_the_check_pass(
    app_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["allowlist", "scan", "--sqlite", str(app_db), "--check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["missing"]) == ["tests.support.user_app_types:Outer.Inner", "tests.support.user_app_types:Pair[int, str]", "tests.support.user_app_types:Ticket"]
    snippets = report["snippets"]
    # In code: the application reads its rows with exactly that serializer.
    assert read_back(app_db, eval(snippets["code"], {"Serializer": Serializer})) == VALUES
    # The environment line, as a shell would set it.
    name, _, value = snippets["env"].partition("=")
    monkeypatch.setenv(name, value.strip('"'))
    assert main(["allowlist", "scan", "--sqlite", str(app_db), "--check", "-q"]) == 0
    assert read_back(app_db, Serializer()) == VALUES
    monkeypatch.delenv(name)
    # The file.
    allow_file = tmp_path / "allow.txt"
    allow_file.write_text(snippets["file"])
    monkeypatch.setenv("SERDE_KIT_ALLOW_FILE", str(allow_file))
    assert main(["allowlist", "scan", "--sqlite", str(app_db), "--check", "-q"]) == 0
    assert read_back(app_db, Serializer()) == VALUES


def test_scan_takes_the_allowlist_the_application_has_in_code(
    app_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # --allowlist-from puts the working directory first
    monkeypatch.setitem(sys.modules, "my_checkpointer", None)
    del sys.modules["my_checkpointer"]  # (restored to absent afterwards)
    args = ["allowlist", "scan", "--sqlite", str(app_db), "--check", "-q"]
    flags = ["--allow", "tests.support.user_app_types:Ticket", "--allow", "tests.support.user_app_types:Outer.Inner", "--allow", "tests.support.user_app_types:Pair"]
    assert main([*args, *flags]) == 0
    assert main([*args, *flags[:4]]) == 1
    assert "tests.support.user_app_types:Pair[int, str]" in capsys.readouterr().out
    (tmp_path / "allow.txt").write_text("\n".join(flags[1::2]) + "\n")
    assert main([*args, "--allow-file", str(tmp_path / "allow.txt")]) == 0
    # The application's own object, imported: a serializer, an encrypted one, a saver.
    (tmp_path / "my_checkpointer.py").write_text(
        "import sqlite3\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "from serde_kit import EncryptedSerializer, Keyring, Serializer\n"
        "from tests.support.user_app_types import IntStrPair, Outer, Ticket\n"
        "serde = Serializer(allow=[Ticket, Outer.Inner, IntStrPair])\n"
        "encrypted = EncryptedSerializer(serde, Keyring({'k1': bytes(32)}, primary='k1'))\n"
        "saver = SqliteSaver(sqlite3.connect(':memory:', check_same_thread=False), serde=encrypted)\n"
        "partial = Serializer(allow=[Ticket])\n"
    )
    capsys.readouterr()
    for name in ("serde", "encrypted", "saver"):
        assert main([*args, "--allowlist-from", f"my_checkpointer:{name}"]) == 0, capsys.readouterr()
    assert main([*args, "--allowlist-from", "my_checkpointer:partial"]) == 1
    assert main([*args, "--allowlist-from", "my_checkpointer:sqlite3"]) == 2
    assert "holds no serde_kit allowlist" in capsys.readouterr().err


def test_rotate_names_every_refused_type_of_a_row_with_one_fix(app_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["rotate", "--sqlite", str(app_db), "--encrypt-plaintext", "--apply", "-q"]
    assert main(args) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("refused:"))
    for shown in ("tests.support.user_app_types.Ticket", "tests.support.user_app_types.Outer.Inner", "tests.support.user_app_types.Pair[int, str]"):
        assert shown in line
    fix = re.search(r"add (--allow \S+(?: --allow \S+)*) \(or SERDE_KIT_ALLOW\)", line)
    assert fix, line
    assert main([*args, *fix[1].split()]) == 0  # pasted: one run fixes all three
    assert read_back(app_db, EncryptedSerializer(Serializer(allow=APP_TYPES), KEYRING)) == VALUES


def test_the_plaintext_refusal_gives_a_rotate_command_that_works(app_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = EncryptedSerializer(Serializer(allow=APP_TYPES), KEYRING)
    with pytest.raises(PlaintextRefusedError) as info:
        read_back(app_db, app)
    command = re.search(r"`serde-kit (rotate [^`]+)`", str(info.value))
    assert command, str(info.value)
    argv = command[1].replace("--db URL", f"--db sqlite:///{app_db}").split()
    assert main(argv) == 0, capsys.readouterr()
    assert read_back(app_db, app) == VALUES


# --- a class of the script run directly -------------------------------------------


def test_writing_a_main_module_type_warns_once_and_says_why(tmp_path: Path) -> None:
    script = tmp_path / "my_script.py"
    script.write_text(
        "import warnings\n"
        "from dataclasses import dataclass\n"
        "from serde_kit import Serializer\n"
        "@dataclass\n"
        "class Note:\n"
        "    text: str\n"
        "for serde in (Serializer(allow=[Note]), Serializer(allow=[Note])):\n"
        "    for _ in range(3):\n"
        "        assert serde.loads_typed(serde.dumps_typed([Note('x')])) == [Note('x')]\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("MainModuleTypeWarning") == 1
    assert "writing __main__.Note: the class is defined in the script run directly" in done.stderr
    assert "Move the class into a module of its own" in done.stderr


def test_a_type_from_a_module_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MainModuleTypeWarning)
        Serializer(allow=APP_TYPES).dumps_typed(VALUES)


# --- one error for every refused type of a row ---------------------------------------


def test_a_read_meeting_several_refused_types_names_them_all_with_one_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [Ticket("t"), {"n": Outer.Inner(1)}], "p": IntStrPair(first=1, second="x")}
    row = Serializer(allow=APP_TYPES).dumps_typed(value)
    for reader in (Serializer(), EncryptedSerializer(Serializer(), KEYRING)):
        stored = row if isinstance(reader, Serializer) else EncryptedSerializer(Serializer(allow=APP_TYPES), KEYRING).dumps_typed(value)
        with pytest.raises(BlockedTypeError) as info:
            reader.loads_typed(stored)
        message = str(info.value)
        assert message.startswith("refused to build 3 types this row holds")
        for shown in ("tests.support.user_app_types.Ticket", "tests.support.user_app_types.Outer.Inner", "tests.support.user_app_types.Pair[int, str]"):
            assert shown in message
    # Either fix, pasted, reads the row in one go.
    fix = re.search(r"(Serializer\(allow=\[.*\]\)), or SERDE_KIT_ALLOW=(\S+)$", message)
    assert fix, message
    assert eval(fix[1], {"Serializer": Serializer}).loads_typed(row) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", fix[2])
    assert Serializer().loads_typed(row) == value


def test_a_row_naming_endless_types_gets_a_bounded_error() -> None:
    import ormsgpack

    exts = [ormsgpack.Ext(2, ormsgpack.packb([f"planted{i}", "Thing", {}])) for i in range(1000)]
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads_typed(("msgpack", ormsgpack.packb(exts)))
    message = str(info.value)
    assert "and more" in message and "serde-kit allowlist scan" in message and len(message) < 2000


def test_a_write_meeting_several_refused_classes_names_them_all_with_one_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [Ticket("t"), {"n": Outer.Inner(1)}], "p": IntStrPair(first=1, second="x")}
    with pytest.raises(EncodeError) as info:
        Serializer().dumps_typed(value)
    message = str(info.value)
    assert message.startswith("3 classes in this value are not in this serializer's allowlist")
    fix = re.search(r"Allow them all: (Serializer\(allow=\[.*\]\)) or SERDE_KIT_ALLOW=(\S+)$", message)
    assert fix, message
    written = eval(fix[1], {"Serializer": Serializer}).dumps_typed(value)
    assert Serializer(allow=APP_TYPES).loads_typed(written) == value
    monkeypatch.setenv("SERDE_KIT_ALLOW", fix[2])
    assert Serializer().loads_typed(Serializer().dumps_typed(value)) == value


def test_a_single_refused_class_keeps_its_own_message() -> None:
    with pytest.raises(EncodeError, match=r"^tests.support.user_app_types.Ticket is not in this serializer's allowlist"):
        Serializer().dumps_typed([Ticket("a"), Ticket("b")])
    with pytest.raises(EncodeError, match="no faithful encoding"):
        Serializer().dumps_typed([object(), Ticket("a"), Outer.Inner(1)])  # another refusal comes first
