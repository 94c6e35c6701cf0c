"""inspect: threads, checkpoints, history and single blobs from real graph databases."""

from __future__ import annotations

import hashlib
import importlib.abc
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from serde_kit.cli import main
from serde_kit.crypto import Keyring
from serde_kit.errors import ConfigError, DecryptionError, KeyringError, MalformedDataError
from serde_kit.tools.inspect import (
    RowDecoder,
    decode_blob,
    keyring_from_env,
    list_threads,
    show_checkpoint,
    thread_history,
)
from tests.support.inspect_fixtures import (
    KEY,
    KEY_ID,
    KEYRING,
    LEGACY_KEY,
    USER_MODULE,
    Databases,
    dbs,  # noqa: F401  (fixture)
    keyring_env,
)

FULL_KEYRING = Keyring({KEY_ID: KEY}, primary=KEY_ID, legacy_key=LEGACY_KEY)
THREADS = [f"{kind}-{end}" for kind in ("encrypted", "legacy", "plain") for end in ("done", "paused")]

DOC = {
    "$type": f"{USER_MODULE}.Doc",
    "$code": 5,
    "value": {"title": "Quarterly report", "pages": 12},
    "method": "model_validate_json",
}
NOTE = {"$type": f"{USER_MODULE}.Note", "$code": 2, "kwargs": {"text": "looks fine", "stars": 4}}
MOOD = {"$type": f"{USER_MODULE}.Mood", "$code": 0, "value": "happy"}
VECTOR = {
    "$type": "numpy.ndarray",
    "$code": 6,
    "dtype": "<f8",
    "shape": [2, 3],
    "order": "C",
    "size": 6,
    "nbytes": 48,
    "preview": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    "truncated": False,
}


def writes_by_channel(view):
    return {w.channel: w.value for w in view.pending_writes}


def items(rendered):
    """Elements of a rendered sequence: serde_kit keeps tuples as ext 0, the stock writer as lists."""
    if isinstance(rendered, dict) and rendered.get("$type") == "builtins.tuple":
        return rendered["value"]
    return rendered


@pytest.fixture(autouse=True)
def no_keys_in_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_ALLOW", "SERDE_KIT_ALLOW_FILE"):
        monkeypatch.delenv(var, raising=False)


# -- threads ---------------------------------------------------------------------


def test_list_threads_counts_and_last_step(dbs: Databases):
    with dbs.store("mixed") as store:
        threads = list_threads(store)
    assert [t.thread_id for t in threads] == THREADS
    for t in threads:
        record = dbs.records[t.thread_id]
        assert t.checkpoints == len(record.history)
        assert t.last_checkpoint_id == record.history[0][0]
        assert t.last_step == record.state.metadata["step"]
        assert t.checkpoint_ns == ""
    paused = {t.thread_id: t for t in threads}["plain-paused"]
    assert paused.pending_writes == 4  # left's three writes + ask's interrupt


# -- one checkpoint: plain, encrypted, legacy --------------------------------------


@pytest.mark.parametrize("kind", ["plain", "encrypted", "legacy"])
def test_paused_checkpoint_with_keys(dbs: Databases, kind):
    with dbs.store("mixed") as store:
        view = show_checkpoint(store, f"{kind}-paused", decoder=RowDecoder(FULL_KEYRING))
    record = dbs.records[f"{kind}-paused"]
    assert view.checkpoint_id == record.history[0][0]
    assert view.parent_checkpoint_id == record.history[0][2]
    assert view.metadata == record.state.metadata
    values = view.channel_values
    assert values["doc"] == DOC
    assert values["vector"] == VECTOR
    assert values["counter"] == 1 and values["title"] == "draft"
    assert values["results"] == [{"$type": "datetime.date", "$code": 1, "args": [2024, 5, 17]}]
    assert values["messages"][0]["$type"] == "langchain_core.messages.human.HumanMessage"
    assert values["messages"][0]["value"]["content"] == "hello"
    writes = writes_by_channel(view)
    assert writes["note"] == NOTE
    assert writes["mood"] == MOOD
    interrupt = items(writes["__interrupt__"])[0]
    assert interrupt["$type"] == "langgraph.types.Interrupt"
    assert interrupt["kwargs"]["value"] == {"question": "approve?", "doc_title": "Quarterly report"}
    # next, as LangGraph computes it for this checkpoint id / for the live thread
    assert sorted(view.next) == sorted(record.history[0][1]) == ["ask", "left"]
    assert view.tasks == {"left": "done", "ask": "interrupted"}
    assert tuple(n for n in view.next if view.tasks[n] != "done") == record.live_next == ("ask",)


def test_plain_rows_need_no_keyring(dbs: Databases):
    with dbs.store("plain") as store:
        view = show_checkpoint(store, "plain-paused")
    assert view.channel_values["doc"] == DOC
    assert writes_by_channel(view)["note"] == NOTE


def test_encrypted_rows_without_keyring_show_key_id(dbs: Databases):
    with dbs.store("mixed") as store:
        view = show_checkpoint(store, "encrypted-paused")
    marker = {"$encrypted": {"cipher": "aesgcm", "key_id": KEY_ID, "inner_tag": "msgpack"}}
    assert writes_by_channel(view)["note"] == marker
    assert view.metadata["step"] == 1
    if dbs.backend == "sqlite":
        # the whole checkpoint is one encrypted blob
        assert view.checkpoint == marker
        assert view.checkpoint_row["key_id"] == KEY_ID
        assert view.channel_values == {} and view.next is None
    else:
        # PostgresSaver: blobs are encrypted, inline primitives and versions are not
        assert view.channel_values["doc"] == marker
        assert view.storage["doc"] == f"blob msgpack+aesgcm (key {KEY_ID})"
        assert view.channel_values["counter"] == 1 and view.storage["counter"] == "inline"
        assert sorted(view.next) == ["ask", "left"]


def test_legacy_rows_without_key_and_with_it(dbs: Databases):
    with dbs.store("mixed") as store:
        locked = show_checkpoint(store, "legacy-paused")
        legacy_only = keyring_from_env({"LANGGRAPH_AES_KEY": LEGACY_KEY.decode()})
        opened = show_checkpoint(store, "legacy-paused", decoder=RowDecoder(legacy_only))
    assert writes_by_channel(locked)["note"] == {
        "$encrypted": {"cipher": "aes", "key_id": "legacy:LANGGRAPH_AES_KEY", "inner_tag": "msgpack"}
    }
    assert writes_by_channel(opened)["note"] == NOTE
    assert opened.channel_values["doc"] == DOC


def test_wrong_key_and_missing_key_are_shown_per_value(dbs: Databases):
    wrong = Keyring({KEY_ID: bytes(32)}, primary=KEY_ID)
    other = Keyring({"k9": bytes(32)}, primary="k9")
    with dbs.store("mixed") as store:
        bad = writes_by_channel(show_checkpoint(store, "encrypted-paused", decoder=RowDecoder(wrong)))
        missing = writes_by_channel(show_checkpoint(store, "encrypted-paused", decoder=RowDecoder(other)))
    assert bad["note"] == {
        "$error": f"DecryptionError: the key for {KEY_ID} does not match the one that wrote this row, "
        "or the row was changed"
    }
    assert missing["note"]["$error"].startswith(f"UnknownKeyError: row is encrypted under key id '{KEY_ID}'")


def test_encrypted_and_plain_threads_render_the_same(dbs: Databases):
    with dbs.store("mixed") as store:
        dec = RowDecoder(FULL_KEYRING)
        a = show_checkpoint(store, "plain-done", decoder=dec)
        b = show_checkpoint(store, "encrypted-done", decoder=dec)
    assert a.channel_values == b.channel_values
    assert a.channel_values["answer"] == "yes"
    assert [m["value"]["content"] for m in a.channel_values["messages"]] == ["hello", "done"]
    assert a.next == [] and b.next == []


def test_show_checkpoint_by_id_and_unknown_ids(dbs: Databases):
    record = dbs.records["plain-done"]
    older_id = record.history[2][0]
    with dbs.store("mixed") as store:
        view = show_checkpoint(store, "plain-done", checkpoint_id=older_id)
        assert view.checkpoint_id == older_id
        with pytest.raises(ConfigError, match="no thread 'nope'"):
            show_checkpoint(store, "nope")
        with pytest.raises(ConfigError, match="no checkpoint 'x' of thread"):
            show_checkpoint(store, "plain-done", checkpoint_id="x")


# -- history ---------------------------------------------------------------------


@pytest.mark.parametrize("thread", THREADS)
def test_history_matches_langgraph(dbs: Databases, thread):
    with dbs.store("mixed") as store:
        views = thread_history(store, thread, decoder=RowDecoder(FULL_KEYRING))
    expected = dbs.records[thread].history
    assert [v.checkpoint_id for v in views] == [h[0] for h in expected]
    assert [v.parent_checkpoint_id for v in views] == [h[2] for h in expected]
    assert [sorted(v.next) for v in views] == [sorted(h[1]) for h in expected]
    # parent links form one chain back to the first checkpoint
    assert [v.parent_checkpoint_id for v in views[:-1]] == [v.checkpoint_id for v in views[1:]]


def test_history_limit(dbs: Databases):
    with dbs.store("mixed") as store:
        assert len(thread_history(store, "plain-done", limit=2)) == 2
        with pytest.raises(ConfigError, match="no thread"):
            thread_history(store, "nope")


# -- single blobs ------------------------------------------------------------------


def _one_row(dbs: Databases, channel: str, thread: str):
    with dbs.store("mixed") as store:
        table, col, mark = store.layout.writes_table, store.quote(store.layout.writes_blob), store.mark
        [(tag, blob)] = store.query(
            f"SELECT type, {col} FROM {store.ref(table)} WHERE thread_id = {mark} AND channel = {mark} LIMIT 1",
            (thread, channel),
        )
    return tag, bytes(blob)


def test_decode_blob_plain_encrypted_legacy(dbs: Databases):
    tag, blob = _one_row(dbs, "note", "plain-paused")
    assert tag == "msgpack"
    assert decode_blob(blob) == NOTE
    tag, blob = _one_row(dbs, "note", "encrypted-paused")
    assert decode_blob(blob, tag=tag) == {"$encrypted": {"cipher": "aesgcm", "key_id": KEY_ID, "inner_tag": "msgpack"}}
    assert decode_blob(blob, tag=tag, keyring=FULL_KEYRING) == NOTE
    with pytest.raises(DecryptionError):
        decode_blob(blob, tag=tag, keyring=Keyring({KEY_ID: bytes(32)}, primary=KEY_ID))
    tag, blob = _one_row(dbs, "note", "legacy-paused")
    assert decode_blob(blob, tag=tag, keyring=FULL_KEYRING) == NOTE
    with pytest.raises(MalformedDataError):
        decode_blob(b"\x92\x01")


def test_cli_blob_hex_and_stdin(dbs: Databases, capsys, monkeypatch):
    tag, blob = _one_row(dbs, "mood", "encrypted-paused")
    for k, v in keyring_env().items():
        monkeypatch.setenv(k, v)
    assert main(["inspect", "--blob", blob.hex(), "--tag", tag, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == MOOD

    script = "import sys; from serde_kit.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, **keyring_env()}
    raw = subprocess.run(
        [sys.executable, "-c", script, "inspect", "--stdin", "--tag", tag, "--json"],
        input=blob, capture_output=True, env=env, check=True,
    )  # fmt: skip
    assert json.loads(raw.stdout) == MOOD
    hexed = subprocess.run(
        [sys.executable, "-c", script, "inspect", "--stdin", "--hex", "--tag", tag],
        input=blob.hex().encode() + b"\n", capture_output=True, env=env, check=True,
    )  # fmt: skip
    assert json.loads(hexed.stdout) == MOOD


# -- CLI output --------------------------------------------------------------------


def test_cli_threads_and_checkpoint_text(dbs: Databases, capsys):
    assert main(["inspect", *dbs.args("mixed")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["THREAD", "NS", "CHECKPOINTS", "LAST", "STEP", "SOURCE", "PENDING", "WRITES", "LAST", "CHECKPOINT"]
    assert all(t in out for t in THREADS)

    assert main(["inspect", *dbs.args("mixed"), "--thread", "encrypted-paused"]) == 0
    out = capsys.readouterr().out
    assert f"encrypted (key id {KEY_ID})" in out
    assert "Quarterly report" not in out

    assert main(["inspect", *dbs.args("mixed"), "--thread", "plain-paused"]) == 0
    out = capsys.readouterr().out
    assert f'{USER_MODULE}.Doc(title="Quarterly report", pages=12)' in out
    assert "next        ask (interrupted), left (done)" in out
    assert "ndarray(<f8, shape=[2, 3]) [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]" in out


def test_cli_json_checkpoint_and_history(dbs: Databases, capsys, monkeypatch):
    for k, v in keyring_env().items():
        monkeypatch.setenv(k, v)
    assert main(["inspect", *dbs.args("mixed"), "--thread", "encrypted-paused", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["channel_values"]["doc"] == DOC
    assert data["tasks"] == {"left": "done", "ask": "interrupted"}
    assert main(["inspect", *dbs.args("mixed"), "--thread", "plain-done", "--history", "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [h["checkpoint_id"] for h in history] == [h[0] for h in dbs.records["plain-done"].history]


def test_cli_errors_are_clear(dbs: Databases, tmp_path, capsys, monkeypatch):
    assert main(["inspect", "--sqlite", str(tmp_path / "missing.db")]) == 2
    assert "error: ConfigError:" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()

    empty = tmp_path / "other.db"
    sqlite3.connect(empty).close()
    assert main(["inspect", "--sqlite", str(empty)]) == 2
    assert "not a LangGraph SqliteSaver database" in capsys.readouterr().err

    assert main(["inspect", "--postgres", "postgresql://nobody@127.0.0.1:1/none"]) == 3
    assert "cannot connect to PostgreSQL at 127.0.0.1:1" in capsys.readouterr().err

    assert main(["inspect", *dbs.args("mixed"), "--thread", "nope"]) == 2
    assert "no thread 'nope'" in capsys.readouterr().err

    assert main(["inspect", "--blob", "zz"]) == 2
    assert "not valid hex" in capsys.readouterr().err

    assert main(["inspect", "--history"]) == 2
    assert "give --db URL, --sqlite PATH, --postgres DSN or --mysql DSN" in capsys.readouterr().err

    monkeypatch.setenv("SERDE_KIT_KEYRING", "k1:not-base64!")
    assert main(["inspect", *dbs.args("mixed"), "--thread", "plain-paused"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: KeyringError:")
    with pytest.raises(KeyringError):
        keyring_from_env()


# -- never imports, never writes ---------------------------------------------------


class _ImportTrap(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == USER_MODULE:
            self.attempts.append(name)
            raise ImportError(f"inspect must not import {name}")
        return None


def test_inspect_scan_audit_never_import_the_user_module(dbs: Databases, capsys, monkeypatch):
    for k, v in keyring_env().items():
        monkeypatch.setenv(k, v)
    trap = _ImportTrap()
    sys.meta_path.insert(0, trap)
    try:
        for thread in THREADS:
            assert main(["inspect", *dbs.args("mixed"), "--thread", thread, "--history", "--json"]) == 0
            assert main(["inspect", *dbs.args("mixed"), "--thread", thread]) == 0
        assert main(["allowlist", "scan", *dbs.args("mixed"), "--json"]) == 0
        assert main(["audit", *dbs.args("mixed")]) == 1
    finally:
        sys.meta_path.remove(trap)
    assert trap.attempts == []
    assert USER_MODULE not in sys.modules
    assert f"{USER_MODULE}.Doc" in capsys.readouterr().out


def test_subprocess_with_the_module_importable_leaves_no_mark(dbs: Databases):
    um = dbs.usermod
    env = {
        **os.environ,
        **keyring_env(),
        "PYTHONPATH": os.pathsep.join([str(um.directory), os.environ.get("PYTHONPATH", "")]),
        "SK_INSPECT_IMPORT_MARK": str(um.mark),
    }
    um.clear_mark()
    cmd = [sys.executable, "-m", "serde_kit", "inspect", *dbs.args("mixed"), "--thread", "plain-paused", "--json"]
    out = subprocess.run(cmd, capture_output=True, env=env, check=True)
    assert json.loads(out.stdout)["channel_values"]["doc"] == DOC
    scan = [sys.executable, "-m", "serde_kit", "allowlist", "scan", *dbs.args("mixed")]
    subprocess.run(scan, capture_output=True, env=env, check=True)
    assert not um.imported_since_cleared()
    # control: the mark does appear when the module is imported
    subprocess.run([sys.executable, "-c", f"import {USER_MODULE}"], env=env, check=True)
    assert um.imported_since_cleared()
    um.clear_mark()


def _digest(dbs: Databases) -> str:
    """Digest of everything stored: the SQLite files, or every PostgreSQL table's rows."""
    h = hashlib.sha256()
    if dbs.backend == "sqlite":
        path = Path(dbs.mixed)
        for p in sorted(path.parent.glob(path.name + "*")):
            h.update(p.name.encode() + p.read_bytes())
        return h.hexdigest()
    tables = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
    if dbs.backend == "mysql":
        with dbs.store("mixed") as store:
            for table in tables:
                rows = sorted(repr(r) for r in store.query(f"SELECT * FROM {table}"))
                h.update(table.encode() + repr(rows).encode())
        return h.hexdigest()
    import psycopg

    with psycopg.connect(dbs.mixed) as conn:
        for table in tables:
            rows = conn.execute(f"SELECT t::text FROM {table} t ORDER BY 1").fetchall()
            h.update(table.encode() + repr(rows).encode())
    return h.hexdigest()


def test_tools_never_write(dbs: Databases, capsys, monkeypatch):
    for k, v in keyring_env().items():
        monkeypatch.setenv(k, v)
    before = _digest(dbs)
    assert main(["inspect", *dbs.args("mixed"), "--thread", "plain-paused"]) == 0
    assert main(["inspect", *dbs.args("mixed"), "--thread", "encrypted-done", "--history"]) == 0
    assert main(["allowlist", "scan", *dbs.args("mixed")]) == 0
    assert main(["audit", *dbs.args("mixed")]) == 1
    assert _digest(dbs) == before


# -- other layouts -------------------------------------------------------------------


def test_sqlite_database_from_before_task_path(tmp_path, capsys):
    """Old SqliteSaver databases have no writes.task_path column; inspect still reads them."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    builder = StateGraph(int)
    builder.add_node("add_one", lambda x: x + 1)
    builder.add_edge(START, "add_one")
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    graph.invoke(1, {"configurable": {"thread_id": "t"}})
    conn.execute("ALTER TABLE writes DROP COLUMN task_path")
    conn.commit()
    conn.close()

    assert main(["inspect", "--sqlite", str(path), "--thread", "t", "--history", "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [h["metadata"]["step"] for h in history] == [1, 0, -1]
    assert history[0]["channel_values"]["__root__"] == 2
    assert {w["task_path"] for h in history for w in h["pending_writes"]} == {""}
    assert sum(len(h["pending_writes"]) for h in history) > 0


@pytest.mark.postgres
def test_postgres_database_without_saver_tables(postgres_server, capsys):
    dsn = postgres_server.new_database("not_langgraph")
    assert main(["inspect", "--postgres", dsn]) == 2
    err = capsys.readouterr().err
    assert "error: ConfigError:" in err and "not a LangGraph PostgresSaver database" in err
