"""Run each atheris harness for a few seconds; any crash, hang or escape fails.

The cost harness runs here with FUZZ_COST_REPORT_ONLY=1: its ratio is measured CPU time,
which a shared machine moves, so the smoke reports it and the campaign enforces it.

The long campaigns are ``fuzz/run.sh SECONDS`` (see fuzz/README.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.strategies import AVOID

REPO = Path(__file__).resolve().parent.parent
HARNESSES = ["fuzz_decode", "fuzz_resources", "fuzz_cost", "fuzz_roundtrip", "fuzz_encrypted"]
SECONDS = 5


@pytest.mark.parametrize("harness", HARNESSES)
def test_harness_runs_without_findings(harness: str, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    scratch = tmp_path / "corpus"
    scratch.mkdir()
    dictionary = REPO / "fuzz" / f"{harness.replace('resources', 'decode')}.dict"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "fuzz" / f"{harness}.py"),
            *([f"-dict={dictionary}"] if dictionary.exists() else []),
            f"-max_total_time={SECONDS}",
            "-timeout=10",
            "-rss_limit_mb=2048",
            f"-artifact_prefix={artifacts}/",
            str(scratch),
            str(REPO / "fuzz" / "corpus" / harness),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        # Steer around findings that are pinned by xfail tests (see tests/support/strategies.py).
        env={**os.environ, "FUZZ_AVOID": ",".join(sorted(AVOID)), "FUZZ_COST_REPORT_ONLY": "1"},
    )
    log = proc.stderr + proc.stdout
    findings = sorted(p.name for p in artifacts.iterdir())
    assert proc.returncode == 0 and not findings, f"{harness} found {findings}:\n{log[-4000:]}"
    done = re.search(r"Done (\d+) runs", log)
    assert done and int(done.group(1)) > 0, f"{harness} executed nothing:\n{log[-2000:]}"
