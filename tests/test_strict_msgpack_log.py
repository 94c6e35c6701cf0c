"""``LANGGRAPH_STRICT_MSGPACK=true``: LangGraph's warning about a serializer without its allowlist
hook is logged once per serializer class, with a note that serde_kit enforces its own allowlist."""

from __future__ import annotations

import os
import subprocess
import sys

APP = """
import logging, sys
logging.basicConfig(stream=sys.stdout, format="%(name)s|%(message)s")
from typing import TypedDict
from langgraph.graph import START, StateGraph
from langgraph.checkpoint.memory import InMemorySaver
from serde_kit import EncryptedSerializer, Keyring, Serializer

class State(TypedDict):
    x: int

builder = StateGraph(State)
builder.add_node("step", lambda s: {"x": s["x"] + 1})
builder.add_edge(START, "step")
keyring = Keyring({"k1": bytes(32)}, primary="k1")
for serde in (Serializer(), Serializer(), EncryptedSerializer(Serializer(), keyring)):
    for _ in range(2):
        graph = builder.compile(checkpointer=InMemorySaver(serde=serde))
        graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}})
logging.getLogger("langgraph.checkpoint.base").warning("another warning %s", "kept")
logging.getLogger("langgraph.checkpoint.base").warning("another warning %s", "kept")
"""


def _run(strict: str) -> list[str]:
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": strict}
    done = subprocess.run([sys.executable, "-c", APP], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_warning_is_logged_once_per_serializer_class_and_explained() -> None:
    lines = _run("true")
    about = [line for line in lines if "does not support msgpack allowlist" in line]
    assert [line.split("|")[1].split(" does not")[0] for line in about] == [
        "Serializer Serializer",
        "Serializer EncryptedSerializer",
    ]
    for line in about:
        assert line.startswith("langgraph.checkpoint.base|")
        assert "serde_kit enforces its own allowlist on every read" in line and "Logged once." in line
    # The filter touches nothing else LangGraph logs there.
    assert lines.count("langgraph.checkpoint.base|another warning kept") == 2


def test_without_the_variable_nothing_is_logged() -> None:
    assert [line for line in _run("false") if "msgpack allowlist" in line] == []
