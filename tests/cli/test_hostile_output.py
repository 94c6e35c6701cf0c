"""Stored names and values are hostile: what the commands print is safe to paste and to print.

A database writer controls every stored type name and every metadata value.
Each view runs as a real subprocess with a strict UTF-8 stdout (what a pipe or
a log collector gives), on a SQLite database written by the real SqliteSaver
through an encrypting serializer, then edited the way a writer would:

- checkpoint metadata holds a lone surrogate (JSON ``"\\ud800"``) as a value and a key;
- one write names the module ``myapp$(touch${IFS}pwned)`` (msgpack ext 2);
- one write is a legacy ``json`` row whose constructor names ``myapp\\ud800``.

Every line the tools print for pasting is then run with ``bash -c`` in an empty
directory: no file may appear.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from serde_kit import Serializer
from serde_kit._text import allow_entry, shell_assignment
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.errors import BlockedTypeError

KEYRING = Keyring.generate("k1")
EVIL_MODULE = "myapp$(touch${IFS}pwned)"
EVIL_ROW = ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb([EVIL_MODULE, "Evil", {}])))
SURROGATE_JSON_ROW = json.dumps({"lc": 1, "type": "constructor", "id": ["myapp\ud800", "X"], "kwargs": {}}).encode()
GOOD_ROW = ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb(["myapp.models", "Doc", {}])))
METADATA = b'{"source": "\\ud800", "step": 0, "\\ud800key": 1}'

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to paste lines into")


class _Fixed:
    """An inner serializer that hands the encrypting one fixed bytes (a writer's planted row)."""

    def __init__(self, tag: str, data: bytes) -> None:
        self.row = (tag, data)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.row

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise AssertionError("not used")


def _sealed(tag: str, data: bytes) -> tuple[str, bytes]:
    return EncryptedSerializer(_Fixed(tag, data), KEYRING).dumps_typed(None)


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "app.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn, serde=EncryptedSerializer(Serializer(), KEYRING))
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"x": 1}
    checkpoint["channel_versions"] = {"x": 1}
    config = saver.put({"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}}, checkpoint, {"step": 0}, {"x": 1})
    saver.put_writes(config, [("evil", 1), ("legacy", 2), ("good", 3)], "task-1")
    for channel, (tag, data) in {
        "evil": _sealed("msgpack", EVIL_ROW),
        "legacy": _sealed("json", SURROGATE_JSON_ROW),
        "good": _sealed("msgpack", GOOD_ROW),
    }.items():
        conn.execute("UPDATE writes SET type = ?, value = ? WHERE channel = ?", (tag, data, channel))
    conn.execute("UPDATE checkpoints SET metadata = ?", (METADATA,))
    conn.commit()
    conn.close()
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "LANGGRAPH_AES"))}
    env["SERDE_KIT_KEYRING"] = KEYRING.to_env_value()
    # A strict UTF-8 stdout, whatever the locale of the machine running the tests.
    env["PYTHONIOENCODING"] = "utf-8:strict"
    return env


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "serde_kit", *args, "--sqlite", str(db)],
        env=_env(),
        capture_output=True,
        timeout=120,
    )


VIEWS = [
    ("inspect",),
    ("inspect", "--json"),
    ("inspect", "--thread", "t-1"),
    ("inspect", "--thread", "t-1", "--json"),
    ("inspect", "--thread", "t-1", "--history"),
    ("allowlist", "scan"),
    ("allowlist", "scan", "--json"),
    ("status",),
    ("status", "--json"),
    ("audit",),
    ("audit", "--json"),
]


@pytest.mark.parametrize("view", VIEWS, ids=" ".join)
def test_every_view_prints_lone_surrogates_escaped(hostile_db: Path, view: tuple[str, ...]) -> None:
    done = _run(hostile_db, *view)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    # allowlist scan exits 0 too: the planted types are reported, not failed (only --check fails on them)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    if "--json" in view:
        json.loads(out)  # still valid JSON
    if view[0] == "status":
        return  # status shows counts and key ids only, no stored text
    assert "\\ud800" in out, out  # the value is shown, escaped, not dropped
    if "--json" in view:
        assert "\ud800" in json.dumps(json.loads(out), ensure_ascii=False)  # and decodes back to itself


def test_json_output_on_a_stream_that_is_not_utf8_stays_valid_json(hostile_db: Path) -> None:
    env = _env() | {"PYTHONIOENCODING": "ascii:strict"}
    done = subprocess.run(
        [sys.executable, "-m", "serde_kit", "inspect", "--thread", "t-1", "--json", "--sqlite", str(hostile_db)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    data = json.loads(done.stdout.decode("ascii"))
    assert data["metadata"]["source"] == "\ud800"


def _paste(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"]}
    )


def test_no_line_of_the_scan_runs_a_stored_name_when_pasted(hostile_db: Path, tmp_path: Path) -> None:
    done = _run(hostile_db, "allowlist", "scan")
    assert done.returncode == 0
    text = done.stdout.decode("utf-8")
    assert "not valid Python names" in text  # the planted names are reported as such
    for line in text.splitlines():
        _paste(line.strip(), tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing ran: no `pwned` file


def test_the_scan_env_line_is_quoted_holds_only_valid_names_and_works(hostile_db: Path, tmp_path: Path) -> None:
    done = _run(hostile_db, "allowlist", "scan", "--json")
    report = json.loads(done.stdout)
    env_line = report["snippets"]["env"]
    assert EVIL_MODULE not in env_line and "ud800" not in env_line
    assert sorted(report["invalid_names"]) == sorted([f"{EVIL_MODULE}:Evil", "myapp\ud800:X"])
    pasted = _paste(f'{env_line}; printf %s "$SERDE_KIT_ALLOW"', tmp_path)
    assert pasted.stdout == "myapp.models:Doc"
    assert report["snippets"]["file"] == "myapp.models:Doc\n"
    assert report["snippets"]["code"] == "Serializer(allow=[('myapp.models', 'Doc')])"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "module",
    [EVIL_MODULE, "a;touch pwned", "a`touch pwned`", "a'$(touch pwned)'", "a\ntouch pwned", "ｍｙａｐｐ", "a..b", ""],
)
def test_only_dotted_ascii_identifiers_make_an_allowlist_entry(module: str) -> None:
    assert allow_entry(module, "Doc") is None
    assert allow_entry("myapp", module) is None


def test_a_valid_entry_is_offered_and_a_generic_model_by_its_origin() -> None:
    assert allow_entry("myapp.models", "Outer.Inner") == "myapp.models:Outer.Inner"
    assert allow_entry("myapp.models", "Box[int]") == "myapp.models:Box"


@pytest.mark.parametrize("value", ["a b", "$(touch pwned)", "x'y", "", "k1:AAAA+/=="])
def test_shell_assignment_sets_exactly_the_value(value: str, tmp_path: Path) -> None:
    pasted = _paste(f'{shell_assignment("V", value)}; printf %s "$V"', tmp_path)
    assert pasted.stdout == value
    assert list(tmp_path.iterdir()) == []


def test_the_blocked_type_error_offers_no_pasteable_line_for_an_invalid_name(tmp_path: Path) -> None:
    with pytest.raises(BlockedTypeError) as info:
        Serializer().loads_typed(("msgpack", EVIL_ROW))
    message = str(info.value)
    assert "not a valid Python name" in message
    assert "SERDE_KIT_ALLOW" not in message and "allow=[" not in message and "import" not in message
    with pytest.raises(BlockedTypeError) as good:
        Serializer().loads_typed(("msgpack", GOOD_ROW))
    assert "SERDE_KIT_ALLOW=myapp.models:Doc" in str(good.value)
