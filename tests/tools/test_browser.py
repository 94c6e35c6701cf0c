"""What users of checkpoint browsers expect (issue 11, section 4), over the three dialects."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest

from serde_kit.cli import main
from serde_kit.crypto import Keyring
from serde_kit.tools.db import open_database
from serde_kit.tools.inspect import RowDecoder, diff_checkpoints
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import K_NEW, K_ROTATE, LEGACY_TEXT, SAVERS, cfg, reader_serde


@pytest.fixture
def env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def langgraph_history(kind, location, thread):
    """(checkpoint id, channel values) newest first, as the saver itself gives them back."""
    with SAVERS[kind](location, reader_serde()) as saver:
        return [(c.config["configurable"]["checkpoint_id"], c.checkpoint["channel_values"]) for c in saver.list(cfg(thread))]


def expected_diff(old, new):
    return (
        sorted(set(new) - set(old)),
        sorted(set(old) - set(new)),
        sorted(k for k in set(old) & set(new) if old[k] != new[k]),
    )


def test_inspect_diff_of_the_last_step_and_of_two_given_checkpoints(graph_db, capsys, env):
    kind, location = graph_db
    history = langgraph_history(kind, location, "plain-0")
    with open_database(**{kind: location}) as db:
        last = diff_checkpoints(db, "plain-0", decoder=RowDecoder(K_ROTATE))
        wide = diff_checkpoints(db, "plain-0", from_id=history[-1][0], to_id=history[1][0], decoder=RowDecoder(K_ROTATE))
    assert (last.to_checkpoint_id, last.from_checkpoint_id) == (history[0][0], history[1][0])
    assert (sorted(last.added), sorted(last.removed), sorted(last.changed)) == expected_diff(history[1][1], history[0][1])
    assert (sorted(wide.added), sorted(wide.removed), sorted(wide.changed)) == expected_diff(history[-1][1], history[1][1])
    assert last.added or last.changed or last.removed

    code, out, err = run(capsys, "inspect", f"--{kind}", location, "diff", "plain-0")
    assert code == 0, err
    assert out.splitlines()[4].split() == ["CHANNEL", "CHANGE", "BEFORE", "AFTER"]
    assert all(name in out for name in [*last.added, *last.changed, *last.removed])
    code, out, _ = run(capsys, "inspect", f"--{kind}", location, "diff", "plain-0", "--from", history[-1][0], "--to", history[1][0], "--json")
    assert code == 0 and sorted(json.loads(out)["changed"]) == sorted(wide.changed)
    code, _, err = run(capsys, "inspect", f"--{kind}", location, "diff", "plain-0", "--from", "nope")
    assert code == 2 and err.startswith("error: ConfigError: no checkpoint 'nope'")


def test_history_shows_each_checkpoints_timestamp(graph_db, capsys, env):
    kind, location = graph_db
    with SAVERS[kind](location, reader_serde()) as saver:
        stamps = [c.checkpoint["ts"] for c in saver.list(cfg("new-0"))]
    code, out, _ = run(capsys, "inspect", f"--{kind}", location, "--thread", "new-0", "--history")
    assert code == 0 and "WRITTEN" in out.splitlines()[0]
    assert all(ts in out for ts in stamps)


def test_message_content_is_visible_in_the_table_view(tmp_path, capsys, env):
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    path = tmp_path / "chat.db"
    question = "what is the weather like in Paris today, and should I take an umbrella?"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        builder = StateGraph(MessagesState)
        builder.add_node("bot", lambda s: {"messages": [AIMessage(content="Sunny; no umbrella.")]})
        builder.add_edge(START, "bot")
        builder.compile(checkpointer=SqliteSaver(conn)).invoke({"messages": [HumanMessage(content=question)]}, cfg("chat"))
    code, out, _ = run(capsys, "inspect", "--sqlite", str(path), "--thread", "chat")
    line = next(line for line in out.splitlines() if line.startswith("messages"))
    assert code == 0 and 'HumanMessage(content="what is the weather like in Paris' in line


def test_dry_run_and_apply_examine_the_same_rows(graph_db):
    kind, location = graph_db
    with open_database(**{kind: location}, readonly=False) as db:
        dry = rotate(db, keyring=K_ROTATE, encrypt_plaintext=True, upgrade_legacy=True)
        done = rotate(db, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True)
    assert dry.examined == done.examined > 0
    assert dry.changed == done.changed


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_allowlist_scan_check_fails_when_stored_types_are_not_covered(tmp_path, capsys, env, monkeypatch):
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "points.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)  # the stock serializer writes the dataclass as ext 2
        config = saver.put(cfg("p") | {"configurable": {"thread_id": "p", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        saver.put_writes(config, [("points", Point(1, 2))], task_id="t")
    monkeypatch.delenv("SERDE_KIT_ALLOW", raising=False)
    monkeypatch.delenv("SERDE_KIT_ALLOW_FILE", raising=False)
    code, out, _ = run(capsys, "allowlist", "scan", "--sqlite", str(path), "--json")
    assert code == 0 and json.loads(out)["missing"] == [f"{__name__}:Point"]  # without --check: a report only
    code, out, _ = run(capsys, "allowlist", "scan", "--sqlite", str(path), "--check")
    assert code == 1 and "NOT covered" in out
    monkeypatch.setenv("SERDE_KIT_ALLOW", f"{__name__}:Point")
    assert run(capsys, "allowlist", "scan", "--sqlite", str(path), "--check")[0] == 0


def test_help_says_table_or_json(capsys):
    for command in (["inspect"], ["status"], ["audit"], ["allowlist", "scan"], ["rotate"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "--json JSON on stdout instead of the text" in out, command


def test_a_wrong_key_under_a_known_id_says_so_and_nothing_more(graph_sqlite_db, capsys, monkeypatch):
    wrong = Keyring({"k2": bytes(32), "k1": K_NEW.key("k1")}, primary="k2")
    with open_database(sqlite=graph_sqlite_db) as db:
        report = status(db, keyring=wrong, verify=True)
    expected = "DecryptionError: the key for k2 does not match the one that wrote this row, or the row was changed"
    assert report.failures and {f.error for f in report.failures if "k2" in f.error} == {expected}
    monkeypatch.setenv("SERDE_KIT_KEYRING", wrong.to_env_value())
    code, out, _ = run(capsys, "inspect", "--sqlite", graph_sqlite_db, "--thread", "new-0", "--json")
    data = json.loads(out)
    assert code == 1  # rows could not be read
    assert expected in json.dumps(data)
