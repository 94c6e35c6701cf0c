"""Demo: a document-review workflow that survives a process restart.

``python examples/demo.py`` (what ``scripts/demo.sh`` runs) tells the whole story on an embedded SQLite file
(``./demo-data/review.db``, recreated each run), using LangGraph's real
``SqliteSaver`` with ``serde_kit.Serializer``:

1. a first child process (``--phase start``) runs ``process_docs`` and stops at
   ``human_review``, which calls ``interrupt(...)``; the process then dies
   without any cleanup, as if it were killed;
2. a second child process (``--phase resume``) resumes the same thread with
   ``Command(resume="yes")``; ``process_docs`` does not run again and the state
   comes back exactly (pydantic model, dataclass, ZoneInfo datetime, numpy
   array), then ``finalize`` runs;
3. this process prints the thread's checkpoint history;
4. the rows were encrypted (AES-256-GCM, key ``k1``) and bound to their thread
   (``bind_rows``) all along: copied onto another thread with plain SQL, they
   are refused (``RowBindingError``), not decrypted there;
5. the demo adds key ``k2`` as primary, re-encrypts every stored row with
   ``serde-kit rotate`` (bound rows stay bound), checks with ``serde-kit status`` and ``serde-kit retire`` that no
   row needs ``k1`` any more, drops ``k1`` and reads the history again.

``--plain`` runs the same story without encryption. No network, no LLM. Needs the ``demo`` extra (langgraph, the SQLite saver,
numpy, pydantic).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict
from zoneinfo import ZoneInfo

import numpy as np
import pydantic
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from serde_kit import EncryptedSerializer, Keyring, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows
from serde_kit.errors import RowBindingError

THREAD_ID = "task-001"
DOC_IDS = ["a.txt", "b.txt", "c.txt"]
DB_NAME = "review.db"
RUN_LOG = "node-runs.log"
KEYRING_FILE = "keyring"
KEYRING_ENV = "SERDE_KIT_KEYRING_FILE"


# --- the state ----------------------------------------------------------------


class Reviewer(pydantic.BaseModel):
    """Who must approve the batch (a pydantic model in the state)."""

    name: str
    email: str


@dataclasses.dataclass
class DocSummary:
    """What process_docs learned about one document (a dataclass in the state)."""

    doc_id: str
    words: int
    flagged: bool = False


class TaskInput(TypedDict):
    """What a run starts from."""

    doc_ids: list[str]


class TaskState(TaskInput):
    """The whole state: each node reads only the keys the nodes before it wrote."""

    reviewer: Reviewer
    processed: list[DocSummary]
    started_at: datetime
    scores: np.ndarray
    approved: bool
    result: str


def make_saver(conn: sqlite3.Connection) -> BaseCheckpointSaver[str]:
    """The one place the demo builds its saver: when a keyring file is set, rows are
    encrypted and bound to their thread (``bind_rows``), so a row copied onto another
    thread is refused instead of decrypted there."""
    serde = Serializer(allow=[Reviewer, DocSummary])
    if not os.environ.get(KEYRING_ENV):
        return SqliteSaver(conn, serde=serde)
    return bind_rows(SqliteSaver(conn, serde=EncryptedSerializer(serde, load_keyring())))


# --- the graph ----------------------------------------------------------------


def _note_run(config: RunnableConfig, node: str) -> None:
    # Appended outside the checkpoint on purpose: it proves which process ran
    # which node, independently of what the saver stored.
    with open(config.get("configurable", {})["run_log"], "a", encoding="utf-8") as f:
        f.write(f"{node} pid={os.getpid()}\n")


def processing_result(doc_ids: list[str]) -> dict[str, Any]:
    """What process_docs adds to the state (deterministic, so a later process can compare)."""
    return {
        "reviewer": Reviewer(name="Lin", email="lin@example.com"),
        "processed": [DocSummary(doc_id, words=100 * (i + 1), flagged=doc_id == "b.txt")
                      for i, doc_id in enumerate(doc_ids)],
        "started_at": datetime(2025, 3, 1, 9, 30, tzinfo=ZoneInfo("Asia/Shanghai")),
        "scores": np.array([0.92, 0.41, 0.77]),
    }


def process_docs(state: TaskState, config: RunnableConfig) -> dict[str, Any]:
    _note_run(config, "process_docs")
    update = processing_result(state["doc_ids"])
    print(f"  [process_docs] processed {len(update['processed'])} docs: "
          f"{', '.join(d.doc_id for d in update['processed'])}")
    return update


def human_review(state: TaskState, config: RunnableConfig) -> dict[str, Any]:
    _note_run(config, "human_review")
    decision = interrupt({
        "question": "Approve the document review?",
        "reviewer": state["reviewer"].name,
        "processed": [d.doc_id for d in state["processed"]],
    })
    print(f"  [human_review] resumed with decision={decision!r}")
    return {"approved": decision == "yes"}


def finalize(state: TaskState, config: RunnableConfig) -> dict[str, Any]:
    _note_run(config, "finalize")
    result = f"done, approved={state['approved']}"
    print(f"  [finalize] {result}")
    return {"result": result}


Graph = CompiledStateGraph[TaskState, None, TaskInput, TaskState]


def build_graph(saver: BaseCheckpointSaver[str]) -> Graph:
    builder = StateGraph(TaskState, input_schema=TaskInput)
    builder.add_node("process_docs", process_docs)
    builder.add_node("human_review", human_review)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "process_docs")
    builder.add_edge("process_docs", "human_review")
    builder.add_edge("human_review", "finalize")
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=saver)


def _open(data_dir: Path) -> tuple[sqlite3.Connection, Graph, RunnableConfig]:
    conn = sqlite3.connect(data_dir / DB_NAME, check_same_thread=False)
    graph = build_graph(make_saver(conn))
    config: RunnableConfig = {"configurable": {"thread_id": THREAD_ID, "run_log": str(data_dir / RUN_LOG)}}
    return conn, graph, config


# --- the phases ---------------------------------------------------------------


def phase_start(data_dir: Path) -> None:
    """Run until human_review interrupts, then die without cleanup."""
    _conn, graph, config = _open(data_dir)
    result = graph.invoke({"doc_ids": DOC_IDS}, config)
    (pending,) = result["__interrupt__"]
    print(f"  [human_review] interrupted: {pending.value['question']} "
          f"(reviewer {pending.value['reviewer']}, docs {pending.value['processed']})")
    print(f"  checkpoint saved; process {os.getpid()} now exits abruptly (like kill -9)")
    sys.stdout.flush()
    os._exit(0)  # no close(), no atexit: the saver committed every checkpoint already


def phase_resume(data_dir: Path) -> None:
    """Resume the thread from the file alone and show the state came back exactly."""
    conn, graph, config = _open(data_dir)
    try:
        state = graph.get_state(config)
        print(f"  found thread {THREAD_ID!r} waiting at {list(state.next)}")
        values = state.values
        print(f"  restored: reviewer is {type(values['reviewer']).__name__}, "
              f"processed is list[{type(values['processed'][0]).__name__}], "
              f"started_at is in {values['started_at'].tzinfo}, "
              f"scores is {type(values['scores']).__name__}[{values['scores'].dtype}]")
        expected = processing_result(values["doc_ids"])
        exact = all(type(values[k]) is type(v) and repr(values[k]) == repr(v) for k, v in expected.items())
        print(f"  restored state equals what process_docs wrote (types included): {'yes' if exact else 'NO'}")
        graph.invoke(Command(resume="yes"), config)
    finally:
        conn.close()


def phase_history(data_dir: Path) -> None:
    """Print the thread's checkpoints, oldest first."""
    conn, graph, config = _open(data_dir)
    try:
        history = list(graph.get_state_history(config))[::-1]
        print(f"  {len(history)} checkpoints for thread {THREAD_ID!r} (oldest first):")
        print(f"  {'step':>4}  {'checkpoint id':<36}  {'next':<14}  values")
        for snap in history:
            cid = snap.config.get("configurable", {})["checkpoint_id"]
            nxt = ",".join(snap.next) or "-"
            print(f"  {(snap.metadata or {}).get('step', '?'):>4}  {cid:<36}  {nxt:<14}  {_short(snap.values)}")
        final = history[-1].values
        print(f"  final result: {final.get('result')!r}")
    finally:
        conn.close()


def _short(values: dict[str, Any]) -> str:
    parts = []
    for key, value in values.items():
        if isinstance(value, np.ndarray):
            text = f"ndarray{list(value.shape)}"
        elif isinstance(value, pydantic.BaseModel):
            text = f"{type(value).__name__}({getattr(value, 'name', '')})"
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            text = f"{len(value)}x{type(value[0]).__name__}"
        elif isinstance(value, datetime):
            text = value.isoformat(timespec="minutes")
        else:
            text = repr(value)
        parts.append(f"{key}={text}")
    return " ".join(parts) or "(empty)"


def _run_child(phase: str, data_dir: Path) -> None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--phase", phase, "--data-dir", str(data_dir)]
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: the {phase} phase failed (exit code {done.returncode})")


def _serde_kit(*args: str, expect: int = 0) -> None:
    """Run the ``serde-kit`` command line as a user would, showing the command."""
    shown = " ".join(args).replace(str(Path.cwd()) + os.sep, "")
    print(f"  $ serde-kit {shown}")
    done = subprocess.run(
        [sys.executable, "-m", "serde_kit", *args], check=False, capture_output=True, text=True
    )
    for line in (done.stdout + done.stderr).rstrip().splitlines():
        print(f"    {line}")
    if done.returncode != expect:
        raise SystemExit(f"error: serde-kit {args[0]} exited with {done.returncode}")


def rotate_story(data_dir: Path) -> None:
    """Add k2 as primary, re-encrypt every row, retire k1, and read everything back."""
    db = str(data_dir / DB_NAME)
    keyring_path = data_dir / KEYRING_FILE
    print("  rows are stored encrypted under key k1:")
    _serde_kit("status", "--sqlite", db, "--quiet")
    old = Keyring.from_file(keyring_path)
    new = old.with_key("k2", Keyring.generate("k2").key("k2"), primary=True)
    keyring_path.unlink()
    new.to_file(keyring_path)
    print(f"\n  new primary key k2 added to {KEYRING_FILE} (k1 kept for reading)")
    _serde_kit("retire", "k1", "--sqlite", db, expect=1)
    _serde_kit("rotate", "--sqlite", db, "--quiet", "--apply")
    _serde_kit("status", "--sqlite", db, "--quiet")
    _serde_kit("retire", "k1", "--sqlite", db)
    retired = new.without("k1")
    keyring_path.unlink()
    retired.to_file(keyring_path)
    print(f"\n  k1 removed from the keyring ({retired!r}); the history still reads:")


def moved_row_story(data_dir: Path) -> None:
    """Copy the thread's checkpoints onto another thread in the file, as a database writer could."""
    conn = sqlite3.connect(data_dir / DB_NAME)
    try:
        conn.execute(
            "INSERT INTO checkpoints SELECT 'mallory', checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, metadata FROM checkpoints WHERE thread_id = ?",
            (THREAD_ID,),
        )
        conn.commit()
    finally:
        conn.close()
    print(f"  copied every checkpoint row of {THREAD_ID!r} onto thread 'mallory' with plain SQL")
    conn, graph, config = _open(data_dir)
    try:
        graph.get_state({"configurable": {**config.get("configurable", {}), "thread_id": "mallory"}})
        print("  WARNING: the copied rows were decrypted on thread 'mallory'!")
    except RowBindingError as e:
        print(f"  reading thread 'mallory' refuses them: RowBindingError: {str(e)[:60]}...")
    finally:
        conn.close()
    sqlite = sqlite3.connect(data_dir / DB_NAME)
    try:
        sqlite.execute("DELETE FROM checkpoints WHERE thread_id = 'mallory'")
        sqlite.commit()
    finally:
        sqlite.close()


def run_story(data_dir: Path, *, encrypted: bool = True) -> None:
    """The whole demo: fresh database, start process, resume process, history, rotation."""
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    print(f"serde_kit demo: document review on SQLite ({data_dir / DB_NAME})")
    print("graph: process_docs -> human_review (interrupt) -> finalize")
    if encrypted:
        Keyring.generate("k1").to_file(data_dir / KEYRING_FILE)
        os.environ[KEYRING_ENV] = str(data_dir / KEYRING_FILE)
        print(f"encryption: AES-256-GCM, key k1 in {data_dir / KEYRING_FILE} (mode 0600, "
              f"named by {KEYRING_ENV})\n")
    else:
        os.environ.pop(KEYRING_ENV, None)
        print("encryption: off (--plain)\n")

    print("1) first process: run until the human review")
    _run_child("start", data_dir)
    print("\n2) second process: resume with Command(resume='yes')")
    _run_child("resume", data_dir)

    runs = (data_dir / RUN_LOG).read_text(encoding="utf-8").splitlines()
    counts = {node: sum(1 for line in runs if line.split()[0] == node)
              for node in ("process_docs", "human_review", "finalize")}
    print("\n3) node executions across both processes:")
    for node, count in counts.items():
        pids = sorted({line.split("pid=")[1] for line in runs if line.split()[0] == node})
        print(f"  {node:<13} ran {count} time(s) (pid {', '.join(pids)})")
    print("  process_docs did not run again after the restart"
          if counts["process_docs"] == 1 else "  WARNING: process_docs ran again!")
    print("  (human_review runs twice: LangGraph re-enters the interrupted node on resume)")

    print("\n4) state history")
    phase_history(data_dir)

    if encrypted:
        print("\n5) a row moved to another thread")
        moved_row_story(data_dir)
        print("\n6) key rotation")
        rotate_story(data_dir)
        phase_history(data_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/demo.py", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--phase", choices=["all", "start", "resume", "history"], default="all",
                        help="run one step only (the default runs the whole story)")
    parser.add_argument("--data-dir", type=Path, default=Path("demo-data"),
                        help="where the SQLite file lives (default: ./demo-data, recreated by --phase all)")
    parser.add_argument("--plain", action="store_true", help="run the story without encryption")
    args = parser.parse_args(argv)
    data_dir: Path = args.data_dir.resolve()
    if args.phase in ("resume", "history") and not (data_dir / DB_NAME).is_file():
        print(f"error: no demo database at {data_dir / DB_NAME}; "
              "run `python examples/demo.py --phase start` first", file=sys.stderr)
        return 1
    if args.phase == "all":
        run_story(data_dir, encrypted=not args.plain)
    elif args.phase == "start":
        data_dir.mkdir(parents=True, exist_ok=True)
        phase_start(data_dir)
    elif args.phase == "resume":
        phase_resume(data_dir)
    else:
        phase_history(data_dir)
    return 0


if __name__ == "__main__":
    # Run main() from the module imported under its own name (examples/ is on
    # sys.path as the script's directory), so the state types are stored as
    # "demo.Reviewer", not "__main__.Reviewer", and read back by every process.
    from demo import main as _main

    sys.exit(_main())
