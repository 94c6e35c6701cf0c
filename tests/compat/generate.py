"""Write one release's part of the compatibility corpus. Run by scripts/make_compat_corpus.sh.

Runs *inside the venv of an old langgraph-checkpoint release* (never under
today's packages, never from the tests)::

    .compat-venvs/lgc-1.0.9/bin/python -m tests.compat.generate tests/compat/data/1.0.9

It writes, into that directory:

* ``rows.json`` — for every case in ``tests/compat/cases.py``: the stored type
  tag and bytes the release's own ``JsonPlusSerializer().dumps_typed`` wrote,
  a description of the value it was given (``written``) and of what the same
  release's ``loads_typed`` gave back (``read``), or the writer's error. Also
  the rows of its ``EncryptedSerializer`` (``+aes``, key ``cases.FIXED_KEY``)
  and of ``JsonPlusSerializer(pickle_fallback=True)`` where the release has them.
* ``graph.sqlite`` and ``graph.json`` — a SqliteSaver database from a small
  real graph run (tool call, interrupt, resume, a failing node) and the
  history the release itself reads back from it.
"""



import base64
import importlib.metadata
import inspect
import json
import logging
import operator
import os
import sqlite3
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, Optional

from tests.compat import cases
from tests.compat import corpus_types as ct
from tests.compat.describe import describe


def _version(dist: str) -> Optional[str]:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _row(name: str, kind: str, writer: Any, reader: Any, build: Any) -> dict:
    row: dict[str, Any] = {"name": name, "kind": kind}
    try:
        value = build()
    except cases.Unavailable as exc:
        row["unavailable"] = str(exc)
        return row
    row["written"] = describe(value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tag, data = writer.dumps_typed(value)
    except Exception as exc:  # the release cannot store this value: a fact to record
        row["writer_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return row
    row["tag"] = tag
    row["data"] = base64.b64encode(bytes(data)).decode()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row["read"] = describe(reader.loads_typed((tag, data)))
    except Exception as exc:
        row["read_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def write_rows(out: Path) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    plain = JsonPlusSerializer()
    rows = [_row(name, "plain", plain, plain, build) for name, build in cases.CASES.items()]
    try:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    except ImportError:
        rows.append({"name": "encrypted", "kind": "aes", "unavailable": "no EncryptedSerializer"})
    else:
        aes = EncryptedSerializer.from_pycryptodome_aes(key=cases.FIXED_KEY)
        rows += [_row(f"aes_{name}", "aes", aes, aes, cases.CASES[name]) for name in cases.ENCRYPTED_CASES]
    if "pickle_fallback" in inspect.signature(JsonPlusSerializer).parameters:
        fallback = JsonPlusSerializer(pickle_fallback=True)
        rows += [_row(name, "pickle", fallback, fallback, build) for name, build in cases.PICKLE_CASES.items()]
    else:
        rows.append({"name": "pickle", "kind": "pickle", "unavailable": "no pickle_fallback"})
    doc = {
        "release": _version("langgraph-checkpoint"),
        "writer": "JsonPlusSerializer().dumps_typed",
        "rows": rows,
    }
    (out / "rows.json").write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n")


# --- a real graph run into a SqliteSaver --------------------------------------


def _graph_run(out: Path) -> None:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        (out / "graph.json").write_text(json.dumps({"unavailable": "no SqliteSaver"}) + "\n")
        return
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from typing_extensions import TypedDict

    try:
        from langgraph.types import Command, interrupt
    except ImportError:
        Command = interrupt = None

    class State(TypedDict, total=False):
        messages: Annotated[list, add_messages]
        notes: Annotated[list, operator.add]
        approved: Any

    def agent(state: State) -> dict:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {"messages": [AIMessage(content="It is sunny in Paris.", id="a2")]}
        return {
            "messages": [
                AIMessage(content="", id="a1", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "call_1"}])
            ],
            "notes": [{"at": cases.CASES["datetime_zoneinfo"](), "task": ct.Task("look up"), "color": ct.Color.GREEN}],
        }

    def tools(state: State) -> dict:
        return {"messages": [ToolMessage(content="sunny, 21C", tool_call_id="call_1", id="t1")], "notes": [(1, "tuple")]}

    def review(state: State) -> dict:
        answer = interrupt({"question": "send it?"}) if interrupt is not None else "no interrupt() here"
        return {"approved": answer}

    def route(state: State) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "review"

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_node("review", review)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", "review"])
    builder.add_edge("tools", "agent")
    builder.add_edge("review", END)

    def boom(state: State) -> dict:
        raise ValueError("boom")

    failing = StateGraph(State)
    failing.add_node("boom", boom)
    failing.add_edge(START, "boom")
    failing.add_edge("boom", END)

    db = out / "graph.sqlite"
    if db.exists():
        db.unlink()
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = builder.compile(checkpointer=saver, interrupt_before=["tools"])
    cfg = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [HumanMessage(content="weather in Paris?", id="h1")]}, cfg)
    graph.invoke(None, cfg)  # past the static interrupt before "tools"
    if Command is not None and interrupt is not None:
        graph.invoke(Command(resume="yes"), cfg)  # past interrupt() in "review"
    cfg2 = {"configurable": {"thread_id": "t2"}}
    try:
        failing.compile(checkpointer=saver).invoke({"messages": [HumanMessage(content="x", id="h9")]}, cfg2)
    except ValueError:
        pass
    history = {tid: _history(saver, tid) for tid in ("t1", "t2")}
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to commit
    conn.execute("VACUUM")
    conn.close()
    (out / "graph.json").write_text(json.dumps({"release": _version("langgraph-checkpoint"), "threads": history}, indent=1) + "\n")


def _history(saver: Any, thread_id: str) -> list:
    entries = []
    for tup in saver.list({"configurable": {"thread_id": thread_id}}):
        entries.append(
            {
                "checkpoint_id": tup.config["configurable"]["checkpoint_id"],
                "channel_values": describe(tup.checkpoint.get("channel_values")),
                "pending_writes": describe([list(w) for w in (tup.pending_writes or [])]),
            }
        )
    return entries


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.WARNING)  # the stock reader logs each unregistered type
    os.environ.pop("LANGGRAPH_STRICT_MSGPACK", None)
    write_rows(out)
    _graph_run(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
