"""A real StateGraph interrupted and resumed on real savers that use serde_kit.

SQLite runs across two processes: this one stops at ``interrupt``; a child
process resumes with ``Command(resume=...)`` from the file alone. The resumed
state must equal the original exactly, types included, and the node before
the interrupt must not run again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from tests.integration.review_graph import (
    Batch,
    build,
    check_state,
    config_for,
    serializer,
)


def _events(run_log: Path) -> list[str]:
    return run_log.read_text(encoding="utf-8").split()


def _stop_at_interrupt(graph, config) -> None:  # noqa: ANN001
    result = graph.invoke({"log": []}, config)
    (intr,) = result["__interrupt__"]
    assert intr.value["question"] == "approve batch?"
    assert type(intr.value["batch"]) is Batch
    assert intr.value["window"] == (3, "days") and type(intr.value["window"]) is tuple
    snapshot = graph.get_state(config)
    assert snapshot.next == ("review",)
    check_state(snapshot.values, finished=False)


def test_in_memory_saver_interrupt_and_resume(tmp_path: Path) -> None:
    run_log = tmp_path / "runs.log"
    graph = build(InMemorySaver(serde=serializer()))
    config = config_for("mem-1", run_log)
    _stop_at_interrupt(graph, config)
    graph.invoke(Command(resume="approve"), config)
    check_state(graph.get_state(config).values, finished=True)
    assert _events(run_log) == ["prepare", "review:start", "review:start", "review:resumed", "finish"]


def test_sqlite_saver_resumes_in_another_process(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    run_log = tmp_path / "runs.log"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = build(SqliteSaver(conn, serde=serializer()))
        _stop_at_interrupt(graph, config_for("sql-1", run_log))
    finally:
        conn.close()
    assert _events(run_log) == ["prepare", "review:start"]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))}
    child = subprocess.run(
        [sys.executable, "-c",
         "import sys; from tests.integration.review_graph import resume_main; "
         "sys.exit(resume_main(sys.argv[1:]))",
         str(db), "sql-1", str(run_log)],
        cwd=_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert child.returncode == 0, child.stdout + child.stderr
    summary = json.loads(child.stdout.strip().splitlines()[-1])
    assert summary["next_before"] == ["review"]
    assert summary["next_after"] == []

    # "prepare" ran once, in the first process; "review" starts again on resume
    # (LangGraph re-enters the interrupted node) and then finishes.
    assert _events(run_log) == ["prepare", "review:start", "review:start", "review:resumed", "finish"]

    # Read back here what the child wrote: exact state, types included.
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = build(SqliteSaver(conn, serde=serializer()))
        config = config_for("sql-1", run_log)
        check_state(graph.get_state(config).values, finished=True)
        history = list(graph.get_state_history(config))
        assert [s.metadata["step"] for s in history] == sorted((s.metadata["step"] for s in history), reverse=True)
        types = {row[0] for row in conn.execute("SELECT type FROM checkpoints")}
        assert types == {"msgpack"}
    finally:
        conn.close()
