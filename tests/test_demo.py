"""The README's first command, end to end: ``python -m serde_kit.demo`` in a fresh directory."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
from langgraph.checkpoint.sqlite import SqliteSaver

from serde_kit import demo


def test_demo_story(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo-data"
    data_dir.mkdir()
    (data_dir / "stale.txt").write_text("left over from an earlier run")

    done = subprocess.run(
        [sys.executable, "-m", "serde_kit.demo"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "Traceback" not in done.stderr, done.stderr

    # The data directory is recreated under the working directory.
    assert not (data_dir / "stale.txt").exists()
    assert (data_dir / "review.db").is_file()

    # First process stops at the interrupt, second resumes; both are real processes.
    assert "[human_review] interrupted: Approve the document review?" in out
    assert "found thread 'task-001' waiting at ['human_review']" in out
    assert "restored state equals what process_docs wrote (types included): yes" in out
    assert "[human_review] resumed with decision='yes'" in out
    assert "final result: 'done, approved=True'" in out

    runs = [line.split() for line in (data_dir / "node-runs.log").read_text().splitlines()]
    by_node: dict[str, list[str]] = {}
    for node, pid in runs:
        by_node.setdefault(node, []).append(pid)
    assert len(by_node["process_docs"]) == 1, runs
    assert len(by_node["finalize"]) == 1, runs
    assert by_node["process_docs"] != by_node["finalize"], "start and resume ran in one process"
    assert re.search(r"process_docs\s+ran 1 time\(s\)", out)
    assert "process_docs did not run again after the restart" in out

    # History: five checkpoints, oldest first, ending with nothing left to run.
    assert "5 checkpoints for thread 'task-001' (oldest first):" in out
    rows = re.findall(r"^\s+(-?\d+)\s+([0-9a-f-]{36})\s+(\S+)\s", out, flags=re.M)
    assert [int(step) for step, _, _ in rows] == [-1, 0, 1, 2, 3]
    assert [nxt for _, _, nxt in rows] == ["__start__", "process_docs", "human_review", "finalize", "-"]
    assert len({cid for _, cid, _ in rows}) == 5

    # Read the file the demo left behind: the final state is exact, types included.
    conn = sqlite3.connect(data_dir / "review.db", check_same_thread=False)
    try:
        graph = demo.build_graph(SqliteSaver(conn, serde=demo.make_serializer()))
        config = {"configurable": {"thread_id": demo.THREAD_ID, "run_log": str(tmp_path / "unused.log")}}
        values = graph.get_state(config).values
    finally:
        conn.close()
    expected = demo.processing_result(demo.DOC_IDS)
    assert type(values["reviewer"]) is demo.Reviewer and values["reviewer"] == expected["reviewer"]
    assert [type(d) for d in values["processed"]] == [demo.DocSummary] * 3
    assert values["processed"] == expected["processed"]
    assert values["started_at"] == expected["started_at"]
    assert values["started_at"].tzinfo == ZoneInfo("Asia/Shanghai")
    assert type(values["scores"]) is np.ndarray and values["scores"].dtype == np.float64
    assert np.array_equal(values["scores"], expected["scores"])
    assert values["approved"] is True
