"""The benchmark scripts still run (one short round each): the full runs are separate commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_compare(tmp_path: Path, only: str) -> dict:
    out = tmp_path / f"{only}.json"
    done = subprocess.run(
        [sys.executable, "bench/compare.py", "--only", only, "--rounds", "1", "--min-time", "0.001",
         "--clock", "cpu", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "target" in done.stdout and "clock: cpu" in done.stdout
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_compare_serializer_section_reports_every_contestant_and_the_aa_control(tmp_path: Path) -> None:
    data = run_compare(tmp_path, "writes")
    writes = data["serializer"]["pending_writes_1000"]
    assert set(writes) >= {"serde_kit", "stock", "stock_aa", "pickle5"}
    assert all(writes[name]["loads"] > 0 and writes[name]["dumps"] > 0 for name in ("serde_kit", "stock"))
    assert any(row[0].startswith("A/A control") for row in data["targets"])


@pytest.mark.slow
def test_compare_encryption_section_measures_raw_aes_gcm_in_the_same_run(tmp_path: Path) -> None:
    data = run_compare(tmp_path, "encryption")
    assert data["encryption"]["enc_1MiB"]["raw_aesgcm"]["loads"] > 0
    assert any("raw AES-GCM" in row[0] for row in data["targets"])
