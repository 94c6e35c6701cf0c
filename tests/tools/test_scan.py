"""allowlist scan: the types a graph stored, found in real databases, and snippets that work."""

from __future__ import annotations

import json
import shlex

import pytest

from serde_kit import Allowlist, Serializer
from serde_kit.cli import main
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.errors import BlockedTypeError
from serde_kit.tools.inspect import RowDecoder, keyring_from_env
from serde_kit.tools.scan import scan
from tests.support.inspect_fixtures import (
    KEY_ID,
    STORED_TYPES,
    USER_MODULE,
    Databases,
    dbs,  # noqa: F401  (fixture)
    keyring_env,
    user_module,
)

USER_TYPES = [(USER_MODULE, "Doc"), (USER_MODULE, "Mood"), (USER_MODULE, "Note")]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_ALLOW", "SERDE_KIT_ALLOW_FILE"):
        monkeypatch.delenv(var, raising=False)


def found(report):
    return {(t.module, t.name, code) for t in report.types.values() for code in t.codes}


def test_scan_finds_exactly_the_stored_types(dbs: Databases):
    with dbs.store("plain") as store:
        report = scan(store)
    assert found(report) == STORED_TYPES
    assert report.rows_failed == 0 and report.rows_locked == {}
    assert report.rows_read + report.rows_empty == report.rows_total
    # the graph stores one 2x3 array per checkpoint from step 0 on and one write of it
    assert report.numpy_arrays > 0
    assert [(t.module, t.name) for t in report.needed()] == USER_TYPES
    assert [(t.module, t.name) for t in report.missing()] == USER_TYPES
    doc = report.types[(USER_MODULE, "Doc")]
    assert doc.codes == {5} and not doc.covered and not doc.default
    assert report.types[("langchain_core.messages.human", "HumanMessage")].covered


def test_scan_counts_rows_per_type(dbs: Databases):
    with dbs.store("plain") as store:
        report = scan(store)
    # Note is written once per thread by `left` and then kept in every later checkpoint
    note = report.types[(USER_MODULE, "Note")]
    assert note.rows == note.count
    assert note.rows >= 2


def test_encrypted_rows_need_the_keyring(dbs: Databases):
    with dbs.store("encrypted") as store:
        locked = scan(store)
        opened = scan(store, decoder=RowDecoder(keyring_from_env(keyring_env())))
    assert locked.types == {}
    assert locked.rows_locked == {f"key id {KEY_ID}": locked.rows_total - locked.rows_empty}
    assert found(opened) == STORED_TYPES


def test_mixed_database_with_all_keys(dbs: Databases):
    with dbs.store("mixed") as store:
        report = scan(store, decoder=RowDecoder(keyring_from_env(keyring_env())))
    assert found(report) == STORED_TYPES
    assert report.rows_locked == {} and report.rows_failed == 0


def test_allowlist_from_env_marks_covered_types(dbs: Databases, monkeypatch):
    monkeypatch.setenv("SERDE_KIT_ALLOW", f"{USER_MODULE}:Doc,{USER_MODULE}:Note")
    with dbs.store("plain") as store:
        report = scan(store)
    assert [(t.module, t.name) for t in report.missing()] == [(USER_MODULE, "Mood")]
    assert [(t.module, t.name) for t in report.needed()] == USER_TYPES


def test_snippets_are_exact(dbs: Databases):
    with dbs.store("plain") as store:
        snip = scan(store).snippets()
    m = USER_MODULE
    assert snip["code"] == f"Serializer(allow=[({m!r}, 'Doc'), ({m!r}, 'Mood'), ({m!r}, 'Note')])"
    assert snip["env"] == f"SERDE_KIT_ALLOW={m}:Doc,{m}:Mood,{m}:Note"  # shlex.quote: nothing to quote
    assert snip["file"] == f"{m}:Doc\n{m}:Mood\n{m}:Note\n"


def _rows(dbs: Databases, which: str):
    with dbs.store(which) as store:
        return [r for batch in store.iter_rows() for r in batch if classify_row(r.tag, r.blob).kind is not RowKind.EMPTY]


def test_snippets_let_the_real_serializer_load_every_row(dbs: Databases, tmp_path):
    """Paste each snippet into a strict serializer: every stored row loads; without it, it does not."""
    with dbs.store("plain") as store:
        snip = scan(store).snippets()
    rows = _rows(dbs, "plain")
    with pytest.MonkeyPatch.context() as mp, user_module(tmp_path, mp):
        strict = Serializer(allowlist=Allowlist.default())
        with pytest.raises(BlockedTypeError):
            for r in rows:
                strict.loads_typed((r.tag, r.blob))

        from_code = eval(snip["code"], {"Serializer": Serializer})  # the code snippet, verbatim
        name, _, value = snip["env"].partition("=")
        from_env = Serializer(allowlist=Allowlist.from_env({name: shlex.split(value)[0]}))  # as a shell reads it
        allow_file = tmp_path / "allow.txt"
        allow_file.write_text(snip["file"])
        from_file = Serializer(allowlist=Allowlist.from_env({"SERDE_KIT_ALLOW_FILE": str(allow_file)}))
        for serde in (from_code, from_env, from_file):
            for r in rows:
                serde.loads_typed((r.tag, r.blob))


def test_snippet_serializer_reads_encrypted_rows(dbs: Databases, tmp_path):
    with dbs.store("encrypted") as store:
        snip = scan(store, decoder=RowDecoder(keyring_from_env(keyring_env()))).snippets()
    rows = _rows(dbs, "encrypted")
    with pytest.MonkeyPatch.context() as mp, user_module(tmp_path, mp):
        inner = eval(snip["code"], {"Serializer": Serializer})
        keyring = keyring_from_env(keyring_env())
        assert isinstance(keyring, Keyring)
        serde = EncryptedSerializer(inner, keyring)
        for r in rows:
            serde.loads_typed((r.tag, r.blob))


def test_cli_scan_text_and_json(dbs: Databases, capsys):
    assert main(["allowlist", "scan", *dbs.args("plain")]) == 0
    out = capsys.readouterr().out
    assert "3 type(s) are NOT covered by the allowlist given" in out
    assert f"SERDE_KIT_ALLOW={USER_MODULE}:Doc,{USER_MODULE}:Mood,{USER_MODULE}:Note" in out
    header = next(line for line in out.splitlines() if line.startswith("TYPE"))
    assert header.split() == ["TYPE", "EXT", "COUNT", "ROWS", "ALLOWED", "BUILT-IN"]

    assert main(["allowlist", "scan", *dbs.args("plain"), "--json", "--batch-size", "7"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {(t["module"], t["name"]) for t in data["types"]} == {(m, n) for m, n, _ in STORED_TYPES}
    assert data["missing"] == [f"{USER_MODULE}:Doc", f"{USER_MODULE}:Mood", f"{USER_MODULE}:Note"]


def test_cli_scan_without_keys_says_what_was_skipped(dbs: Databases, capsys):
    assert main(["allowlist", "scan", *dbs.args("encrypted")]) == 0
    out = capsys.readouterr().out
    assert f"encrypted under key id {KEY_ID} were skipped: no key" in out
    assert "no ext types found" in out


class _LegacyWriter:
    """Writes rows the way older LangGraph versions did: ``json`` rows with LangChain
    constructors, and ``pickle`` rows from the pickle fallback."""

    def dumps_typed(self, obj):
        import pickle

        if isinstance(obj, dict) and obj.get("kind") == "pickled":
            return "pickle", pickle.dumps(obj["payload"])
        doc = {"lc": 2, "type": "constructor", "id": ["myapp", "models", "Doc"], "kwargs": {"title": "t"}}
        return "json", json.dumps({"value": obj if isinstance(obj, (int, str)) else None, "doc": doc}).encode()

    def loads_typed(self, data):
        raise NotImplementedError


def test_legacy_json_and_pickle_rows_are_listed(tmp_path):
    import datetime
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "legacy.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn, serde=_LegacyWriter())
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
    saver.put_writes(config, [("a", 1), ("b", {"kind": "pickled", "payload": datetime.date(2020, 1, 1)})], "task-1")
    conn.close()

    from serde_kit.tools.db import open_database

    with open_database(sqlite=str(path)) as store:
        report = scan(store)
    assert found(report) == {("myapp.models", "Doc", "json"), ("datetime", "date", "pickle")}
    assert report.rows_failed == 0
