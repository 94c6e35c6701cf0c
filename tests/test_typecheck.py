"""mypy --strict and pyright, as scripts/typecheck.sh runs them, report no error anywhere
they look: the whole serde_kit package (the decoder's hot path included), tests/typing/
(every README snippet, as a user would write it next to LangGraph), and examples/demo.py.

A module added to the package or a snippet added to tests/typing/ is held at zero too;
a failure lists each error with its file and line.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLEAN = (
    "serde_kit/",
    "tests/typing/",
    "examples/demo.py",
)
TARGETS = ["serde_kit", "tests/typing", "examples"]

pytestmark = pytest.mark.slow


def _clean(path: str) -> bool:
    rel = Path(path).resolve().relative_to(ROOT).as_posix() if Path(path).is_absolute() else path
    return any(rel == c or (c.endswith("/") and rel.startswith(c)) for c in CLEAN)


def test_clean_files_exist() -> None:
    for path in CLEAN:
        assert (ROOT / path).exists(), path
    assert len(list((ROOT / "tests/typing/readme").glob("*.py"))) >= 10


def test_mypy_strict_reports_no_error_in_clean_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), *TARGETS],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2 would be a crash or bad config
    errors = re.findall(r"^(\S+?\.py):\d+: error: .*$", done.stdout, flags=re.M)
    lines = [line for line in done.stdout.splitlines() if re.match(r"^\S+?\.py:\d+: error:", line)]
    assert len(lines) == len(errors)
    assert "strict" in (ROOT / "pyproject.toml").read_text()  # the settings above are strict ones
    bad = [line for line, path in zip(lines, errors) if _clean(path)]
    assert bad == [], "\n".join(bad)
    # mypy's summary line: only a run with errors says "(checked N source files)".
    assert re.search(
        r"^(Success: no issues found in \d+ source files|Found \d+ errors? in \d+ files? \(checked \d+ source files\))$",
        done.stdout,
        flags=re.M,
    ), done.stdout


def test_pyright_reports_no_error_in_clean_files() -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    assert pyright, "pyright is part of the dev extra (scripts/bootstrap.sh dev installs it)"
    done = subprocess.run(
        [pyright, "--outputjson", *TARGETS], cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    report = json.loads(done.stdout)
    assert report["summary"]["filesAnalyzed"] >= 20
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    bad = [f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}" for d in errors if _clean(d["file"])]
    assert bad == [], "\n".join(bad)


def test_pyright_rejects_a_serializer_that_breaks_the_protocol(tmp_path: Path) -> None:
    # The check above would pass vacuously if pyright could not see LangGraph's types:
    # the position-only signature this project once had must be reported.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import Any\n"
        "from langgraph.checkpoint.memory import InMemorySaver\n\n"
        "class PositionOnly:\n"
        "    def dumps_typed(self, obj: Any, /) -> tuple[str, bytes]: return ('null', b'')\n"
        "    def loads_typed(self, data: tuple[str, bytes], /) -> Any: return None\n\n"
        "InMemorySaver(serde=PositionOnly())\n"
    )
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    assert pyright
    done = subprocess.run(
        [pyright, "--outputjson", str(probe)], cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    errors = [d["message"] for d in json.loads(done.stdout)["generalDiagnostics"] if d["severity"] == "error"]
    assert any('cannot be assigned to parameter "serde"' in m for m in errors), errors


RUFF = Path(sys.executable).with_name("ruff")


def test_ruff_check_reports_nothing_in_the_package() -> None:
    """The lint rules of [tool.ruff] in pyproject.toml (a check, not a formatter) hold over serde_kit/."""
    done = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format", "concise", "serde_kit"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All checks passed" in done.stdout


def test_ruff_catches_a_finding(tmp_path: Path) -> None:
    """The check runs with the project's rules: an unused import fails it."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "serde_kit").mkdir()
    (tmp_path / "serde_kit" / "bad.py").write_text("import os\n")
    done = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format", "concise", "serde_kit"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1 and "F401" in done.stdout, done.stdout + done.stderr
