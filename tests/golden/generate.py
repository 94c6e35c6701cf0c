"""Write the golden vectors with the real langgraph-checkpoint.

Run on purpose only, never from the tests::

    .venv/bin/python -m tests.golden.generate

For every case in ``tests/golden/cases.py`` this writes the stock writer's
bytes to ``tests/golden/data/<case>.bin`` and records the type tag, sha256 and
langgraph-checkpoint version in ``tests/golden/data/manifest.json``. Before
writing anything it reads every blob back with the stock permissive reader and
stops if the result is not exactly the case's ``expected`` value, so the
expectations in cases.py are facts about the stock reader, not guesses.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.golden.cases import CASES, STOCK_VERSION, Case
from tests.golden.compare import assert_same

DATA = Path(__file__).with_name("data")


def stock_bytes(case: Case) -> tuple[str, bytes]:
    """The (tag, bytes) the stock writer stores for ``case``."""
    if case.raw is not None:
        return case.tag, case.raw
    assert case.value is not None
    if case.name == "sqlite_checkpoint":
        return _through_sqlite_saver(case.value())
    tag, data = JsonPlusSerializer().dumps_typed(case.value())
    return tag, bytes(data)


def _through_sqlite_saver(checkpoint: dict[str, Any]) -> tuple[str, bytes]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=JsonPlusSerializer())
        saver.put(
            {"configurable": {"thread_id": "golden", "checkpoint_ns": ""}},
            checkpoint,  # type: ignore[arg-type]
            {"source": "loop", "step": 2, "parents": {}},
            {},
        )
        tag, data = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchone()
        return tag, bytes(data)
    finally:
        conn.close()


def main() -> int:
    version = importlib.metadata.version("langgraph-checkpoint")
    if version != STOCK_VERSION:
        print(f"error: langgraph-checkpoint {version} installed, cases are for {STOCK_VERSION}")
        return 1
    # The stock reader logs a warning per unregistered type; not news here.
    logging.getLogger("langgraph.checkpoint.serde.jsonplus").setLevel(logging.ERROR)
    reader = JsonPlusSerializer(allowed_msgpack_modules=True)
    blobs: dict[str, tuple[str, bytes]] = {}
    failures: list[str] = []
    for case in CASES:
        if not case.golden:
            try:
                stock_bytes(case)
            except Exception as e:  # noqa: BLE001 - we expect the stock writer to fail
                print(f"  (no golden: stock writer fails for {case.name}: {type(e).__name__})")
                continue
            failures.append(f"{case.name}: marked golden=False but the stock writer wrote it")
            continue
        tag, data = stock_bytes(case)
        try:
            assert_same(reader.loads_typed((tag, data)), case.expected_value())
            if not case.lossy and case.value is not None:
                assert_same(case.value(), case.expected_value())
        except AssertionError as e:
            failures.append(f"{case.name}: stock reader disagrees with cases.py: {e}")
            continue
        blobs[case.name] = (tag, data)
    if failures:
        print("error: not writing golden data:\n  " + "\n  ".join(failures))
        return 1

    DATA.mkdir(exist_ok=True)
    for old in DATA.glob("*.bin"):
        if old.stem not in blobs:
            old.unlink()
    manifest: dict[str, Any] = {
        "writer": "langgraph.checkpoint.serde.jsonplus.JsonPlusSerializer().dumps_typed",
        "langgraph_checkpoint_version": version,
        "cases": {},
    }
    for name, (tag, data) in blobs.items():
        (DATA / f"{name}.bin").write_bytes(data)
        manifest["cases"][name] = {
            "tag": tag,
            "file": f"{name}.bin",
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "hand_written": CASES_BY_RAW[name],
        }
    (DATA / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    print(f"wrote {len(blobs)} golden vectors to {DATA}")
    return 0


CASES_BY_RAW = {case.name: case.raw is not None for case in CASES}

if __name__ == "__main__":
    sys.exit(main())
