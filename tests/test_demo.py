"""The README's first command, end to end: ``examples/demo.py`` (run by scripts/demo.sh) in a fresh directory."""

from __future__ import annotations

import importlib.util
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from zoneinfo import ZoneInfo

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO = str(EXAMPLES / "demo.py")


def _import_demo() -> ModuleType:
    """examples/demo.py imported as ``demo``: the module name its own processes store types under."""
    if "demo" not in sys.modules:
        spec = importlib.util.spec_from_file_location("demo", DEMO)
        assert spec is not None and spec.loader is not None
        sys.modules["demo"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["demo"])
    return sys.modules["demo"]


demo = _import_demo()


def test_demo_story(tmp_path: Path, monkeypatch) -> None:
    data_dir = tmp_path / "demo-data"
    data_dir.mkdir()
    (data_dir / "stale.txt").write_text("left over from an earlier run")

    done = subprocess.run(
        [sys.executable, DEMO],
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

    # History: five checkpoints, oldest first, ending with nothing left to run;
    # printed before the rotation and again after it, with the old key gone.
    assert out.count("5 checkpoints for thread 'task-001' (oldest first):") == 2
    rows = re.findall(r"^\s+(-?\d+)\s+([0-9a-f-]{36})\s+(\S+)\s", out, flags=re.M)
    assert rows[:5] == rows[5:]
    rows = rows[:5]
    assert [int(step) for step, _, _ in rows] == [-1, 0, 1, 2, 3]
    assert [nxt for _, _, nxt in rows] == ["__start__", "process_docs", "human_review", "finalize", "-"]
    assert len({cid for _, cid, _ in rows}) == 5

    # Rotation: refused while rows use k1, 18 rows re-encrypted, then k1 is retired.
    assert "refusing: 18 row(s) still use key k1" in out
    assert "re-encrypted 18 row(s) under primary key k2" in out
    assert "verification: 18 row(s) decrypt, 0 plaintext, 0 empty, 0 failed" in out
    assert "safe: no stored row uses key k1" in out
    assert "Keyring(primary='k2', ids=['k2'])" in out

    # Every stored row is encrypted under k2 now, and the key material never printed.
    conn = sqlite3.connect(data_dir / "review.db")
    try:
        tags = [tag for (tag,) in conn.execute("SELECT type FROM checkpoints UNION ALL SELECT type FROM writes")]
    finally:
        conn.close()
    assert tags and all(tag.endswith("+aesgcm") for tag in tags)
    # ... and bound to their thread (v2 header), from the first write on and through the rotation;
    # the copy onto another thread was refused, not decrypted.
    conn = sqlite3.connect(data_dir / "review.db")
    try:
        blobs = [b for (b,) in conn.execute("SELECT checkpoint FROM checkpoints UNION ALL SELECT value FROM writes")]
    finally:
        conn.close()
    assert blobs and all(blob[0] == 2 for blob in blobs)
    assert "reading thread 'mallory' refuses them: RowBindingError" in out and "WARNING" not in out
    key_text = (data_dir / "keyring").read_text()
    secret = [line for line in key_text.splitlines() if line.strip() and not line.startswith("#")][0]
    assert secret.split(":", 1)[1].strip() not in out

    # Read the file the demo left behind with its keyring: the final state is exact, types included.
    monkeypatch.setenv(demo.KEYRING_ENV, str(data_dir / "keyring"))
    conn = sqlite3.connect(data_dir / "review.db", check_same_thread=False)
    try:
        graph = demo.build_graph(demo.make_saver(conn))
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


def test_demo_runs_without_encryption(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, DEMO, "--plain"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "encryption: off (--plain)" in done.stdout and "key rotation" not in done.stdout
    conn = sqlite3.connect(tmp_path / "demo-data" / "review.db")
    try:
        tags = {tag for (tag,) in conn.execute("SELECT type FROM checkpoints")}
    finally:
        conn.close()
    assert tags == {"msgpack"}
