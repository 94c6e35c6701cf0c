"""A small review workflow used by the saver integration tests.

``prepare`` fills the state with values the stock format cannot round-trip
exactly (a pydantic model, a dataclass, a ZoneInfo datetime, a tuple, a numpy
array); ``review`` stops at ``interrupt``; ``finish`` ends the run. Every node
appends its name to a run-log file (``config["configurable"]["run_log"]``) so
a test can prove which nodes ran in which process.

Its import path (``tests.integration.review_graph``) is stored in checkpoints,
so a resuming process must import it under the same name: run
:func:`resume_main` through ``python -c``, not ``python -m``.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import sqlite3
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict
from zoneinfo import ZoneInfo

import numpy as np
import pydantic
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from serde_kit import Serializer


class Reviewer(pydantic.BaseModel):
    name: str
    email: str
    languages: list[str] = []


@dataclasses.dataclass
class Batch:
    doc_ids: list[str]
    priority: int = 0


class ReviewState(TypedDict, total=False):
    reviewer: Reviewer
    batch: Batch
    due: datetime
    window: tuple[int, str]
    scores: np.ndarray
    decision: str
    log: Annotated[list[str], operator.add]


def original_values() -> dict[str, Any]:
    """What ``prepare`` writes; the resumed state must hold exactly this."""
    return {
        "reviewer": Reviewer(name="Lin", email="lin@example.com", languages=["zh", "en"]),
        "batch": Batch(doc_ids=["a.txt", "b.txt", "c.txt"], priority=2),
        "due": datetime(2025, 3, 30, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
        "window": (3, "days"),
        "scores": np.array([[0.5, 0.25], [1.0, -2.0]], dtype=np.float64),
    }


def serializer() -> Serializer:
    """The serde every saver in these tests uses."""
    return Serializer(allow=[Reviewer, Batch])


def _record(config: RunnableConfig, event: str) -> None:
    with open(config["configurable"]["run_log"], "a", encoding="utf-8") as f:
        f.write(event + "\n")


def prepare(state: ReviewState, config: RunnableConfig) -> dict[str, Any]:
    _record(config, "prepare")
    return {**original_values(), "log": ["prepare"]}


def review(state: ReviewState, config: RunnableConfig) -> dict[str, Any]:
    _record(config, "review:start")
    decision = interrupt({"question": "approve batch?", "batch": state["batch"], "window": state["window"]})
    _record(config, "review:resumed")
    return {"decision": decision, "log": ["review"]}


def finish(state: ReviewState, config: RunnableConfig) -> dict[str, Any]:
    _record(config, "finish")
    return {"log": ["finish"]}


def build(checkpointer: BaseCheckpointSaver) -> CompiledStateGraph:
    builder = StateGraph(ReviewState)
    builder.add_node("prepare", prepare)
    builder.add_node("review", review)
    builder.add_node("finish", finish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "review")
    builder.add_edge("review", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer)


def config_for(thread_id: str, run_log: Path) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "run_log": str(run_log)}}


def check_state(values: dict[str, Any], *, finished: bool) -> None:
    """Raise AssertionError unless ``values`` holds the original values exactly."""
    from tests.golden.compare import assert_same

    expected = original_values()
    if finished:
        expected |= {"decision": "approve", "log": ["prepare", "review", "finish"]}
    else:
        expected |= {"log": ["prepare"]}
    assert sorted(values) == sorted(expected), (sorted(values), sorted(expected))
    for key, value in expected.items():
        assert_same(values[key], value, f"state[{key!r}]")


def resume_main(argv: list[str]) -> int:
    """Child process: resume ``thread`` in the SQLite file ``db``; print a JSON summary."""
    db, thread_id, run_log = argv
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = build(SqliteSaver(conn, serde=serializer()))
        config = config_for(thread_id, Path(run_log))
        before = graph.get_state(config)
        check_state(before.values, finished=False)
        result = graph.invoke(Command(resume="approve"), config)
        after = graph.get_state(config)
        check_state(after.values, finished=True)
        print(json.dumps({"next_before": list(before.next), "next_after": list(after.next),
                          "result_keys": sorted(result)}))
        return 0
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit("run resume_main through `python -c` so the state types keep their import path")
