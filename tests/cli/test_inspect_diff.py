"""``serde-kit inspect diff``: a changed message list shows the messages that came and went."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from serde_kit import Serializer
from serde_kit.cli import main
from serde_kit.tools.inspect import ListEdit, list_edit

LONG = "a long opening message that fills the cell " * 4


def _chat_db(path: Path) -> None:
    """A real graph: turn 1 answers, turn 2 answers again, turn 3 drops the first answer."""

    def reply(state: MessagesState) -> dict[str, list[object]]:
        last = state["messages"][-1]
        if last.content == "forget":
            first_answer = next(m for m in state["messages"] if isinstance(m, AIMessage))
            return {"messages": [RemoveMessage(id=first_answer.id or "")]}
        return {"messages": [AIMessage(f"echo: {last.content}", id=f"ai-{len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = builder.compile(checkpointer=SqliteSaver(conn, serde=Serializer()))
        config: RunnableConfig = {"configurable": {"thread_id": "chat"}}
        graph.invoke({"messages": [HumanMessage(LONG, id="h-1")]}, config)
        graph.invoke({"messages": [HumanMessage("second question", id="h-2")]}, config)
        graph.invoke({"messages": [HumanMessage("forget", id="h-3")]}, config)


@pytest.fixture
def chat_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("SERDE_KIT_DB", "SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "chat.db"
    _chat_db(path)
    return path


def test_list_edit_keeps_the_shared_head_and_tail() -> None:
    assert list_edit([1, 2], [1, 2, 3]) == ListEdit(2, 0, [], [3])
    assert list_edit([1, 2, 3], [1, 3]) == ListEdit(1, 1, [2], [])
    assert list_edit([1, 2, 3], [1, 9, 3]) == ListEdit(1, 1, [2], [9])
    assert list_edit([], [1]) == ListEdit(0, 0, [], [1])
    assert list_edit([1, 1], [1, 1, 1]) == ListEdit(2, 0, [], [1])  # head and tail never overlap


def _history(capsys: pytest.CaptureFixture[str], db: Path) -> list[dict[str, object]]:
    assert main(["inspect", "--sqlite", str(db), "--thread", "chat", "--history", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_appended_message_is_shown_though_the_list_is_long(chat_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The last step of turn 2: "reply" appended its answer after four messages.
    history = _history(capsys, chat_db)
    turn2 = next(h for h in reversed(history) if len(h["channel_values"].get("messages", [])) == 4)  # type: ignore[index, arg-type]
    parent = turn2["parent_checkpoint_id"]
    argv = ["inspect", "--sqlite", str(chat_db), "diff", "chat", "--from", parent, "--to", turn2["checkpoint_id"]]
    assert main(argv) == 0  # type: ignore[list-item]
    out = capsys.readouterr().out
    rows = [line.split(None, 1) for line in out.splitlines()[5:] if line.startswith("messages")]
    assert len(rows) == 2
    assert rows[0] == ["messages", "changed: -0 +1 item(s), 3 kept"]
    assert rows[1][0] == "messages" and rows[1][1].startswith("[3] added")
    assert "echo: second question" in rows[1][1]  # the new message itself, not the shared prefix
    assert LONG[:20] not in out  # the three kept messages are not repeated

    assert main([*argv, "--json"]) == 0  # type: ignore[list-item]
    edit = json.loads(capsys.readouterr().out)["list_edits"]["messages"]
    assert edit["kept_head"] == 3 and edit["kept_tail"] == 0 and edit["removed"] == []
    assert [(m["$type"], m["value"]["content"]) for m in edit["added"]] == [
        ("langchain_core.messages.ai.AIMessage", "echo: second question")
    ]


def test_a_removed_message_is_shown_as_removed(chat_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Turn 3's last step: "reply" removed the first answer and the list shrank by one.
    assert main(["inspect", "--sqlite", str(chat_db), "diff", "chat"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("messages")]
    assert lines[0].split(None, 1)[1] == "changed: -1 +0 item(s), 4 kept"
    assert "[1] removed" in lines[1] and "echo: " in lines[1]
    assert len(lines) == 2
