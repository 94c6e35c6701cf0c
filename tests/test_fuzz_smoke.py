"""Run each atheris harness for a few seconds; any crash, hang or escape fails.

The cost harness runs here with FUZZ_COST_REPORT_ONLY=1: its ratio is measured CPU time,
which a shared machine moves, so the smoke reports it and the campaign enforces it.

The native differential harness (``fuzz_native``) runs when the compiled reader is built
(and must, under SERDE_KIT_REQUIRE_NATIVE=1); the others read with the path the suite
runs on (the compiled reader by default, the pure path under SERDE_KIT_PURE_PYTHON=1). The long campaigns are ``fuzz/run.sh SECONDS`` (see fuzz/README.md).
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
HARNESSES = ["fuzz_decode", "fuzz_resources", "fuzz_cost", "fuzz_roundtrip", "fuzz_encrypted", "fuzz_native"]
SECONDS = 5
#: Harnesses that read fuzz_decode's input format take its seeds and dictionary when they have none.
DECODE_LIKE = {"fuzz_resources", "fuzz_cost", "fuzz_native"}


@pytest.mark.parametrize("harness", HARNESSES)
def test_harness_runs_without_findings(harness: str, tmp_path: Path) -> None:
    if harness == "fuzz_native":
        from tests.native.conftest import require_reader

        require_reader()
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    scratch = tmp_path / "corpus"
    scratch.mkdir()
    dictionary = REPO / "fuzz" / f"{'fuzz_decode' if harness in DECODE_LIKE else harness}.dict"
    seeds = [REPO / "fuzz" / "corpus" / harness]
    if harness == "fuzz_native":
        seeds.append(REPO / "fuzz" / "corpus" / "fuzz_decode")
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
            *map(str, seeds),
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


def test_a_native_campaign_refuses_to_run_on_the_pure_path(tmp_path: Path) -> None:
    """SERDE_KIT_NATIVE=1 asks for the compiled reader; when the pure path would read instead
    (here SERDE_KIT_PURE_PYTHON=1 wins), the harness stops before fuzzing anything."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "fuzz" / "fuzz_decode.py"), "-runs=1", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "SERDE_KIT_NATIVE": "1", "SERDE_KIT_PURE_PYTHON": "1"},
    )
    log = proc.stderr + proc.stdout
    assert proc.returncode != 0, log[-2000:]
    assert "SERDE_KIT_NATIVE=1 but the strict serializer reads with Decoder, not the Reader" in log, log[-2000:]
    assert "Done" not in log, log[-2000:]


@pytest.mark.parametrize("native_campaign", [False, True], ids=["pure", "FUZZ_NATIVE=1"])
def test_run_sh_campaigns_fuzz_the_path_they_name(native_campaign: bool, tmp_path: Path) -> None:
    """The compiled reader is serde_kit's default, so fuzz/run.sh picks the path itself: the
    pure campaigns with SERDE_KIT_PURE_PYTHON=1, FUZZ_NATIVE=1 ones with the reader. The
    harness writes which one read into the campaign's log."""
    if native_campaign:
        from tests.native.conftest import require_reader

        require_reader()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "FUZZ_"))}
    env.update(FUZZ_WORK=str(tmp_path), FUZZ_HARNESSES="fuzz_decode", FUZZ_RUNS="1", PYTHON=sys.executable)
    if native_campaign:
        env["FUZZ_NATIVE"] = "1"
    proc = subprocess.run(
        ["bash", str(REPO / "fuzz" / "run.sh")], capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )
    log = (tmp_path / "fuzz_decode.log").read_text()
    assert proc.returncode == 0, proc.stdout[-2000:] + log[-2000:]
    said = [line for line in log.splitlines() if line.startswith("fuzz: ")]
    if native_campaign:
        assert said == ["fuzz: native read path: the compiled reader is built; SERDE_KIT_PURE_PYTHON=1 selects the pure path"]
    else:
        assert said == ["fuzz: python read path: SERDE_KIT_PURE_PYTHON=1"]
    assert re.search(r"Done \d+ runs", log), log[-2000:]
