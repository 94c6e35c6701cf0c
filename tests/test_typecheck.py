"""mypy --strict and pyright, as scripts/typecheck.sh runs them, report no error in the
files that are clean: the public entry points, the serializer, the AES-GCM layer,
tests/typing/ (every README snippet, as a user would write it next to LangGraph), and
examples/demo.py.

Files still being reworked elsewhere are type-checked too (their errors are printed by
scripts/typecheck.sh) but not held at zero here yet; add each to CLEAN once it is.
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
    "serde_kit/__init__.py",
    "serde_kit/errors.py",
    "serde_kit/serializer.py",
    "serde_kit/_pickle.py",
    "serde_kit/crypto/aesgcm.py",
    "serde_kit/crypto/blob.py",
    "serde_kit/crypto/legacy.py",
    # the operations layer
    "serde_kit/cli/__init__.py",
    "serde_kit/cli/allowlist.py",
    "serde_kit/cli/database.py",
    "serde_kit/cli/exitcodes.py",
    "serde_kit/cli/inspect.py",
    "serde_kit/cli/output.py",
    "serde_kit/cli/signals.py",
    "serde_kit/tools/__init__.py",
    "serde_kit/tools/common.py",
    "serde_kit/tools/db/__init__.py",
    "serde_kit/tools/db/base.py",
    "serde_kit/tools/db/batch.py",
    "serde_kit/tools/db/model.py",
    "serde_kit/tools/db/mysql.py",
    "serde_kit/tools/db/postgres.py",
    "serde_kit/tools/db/saver.py",
    "serde_kit/tools/db/sqlite.py",
    "serde_kit/tools/inspect.py",
    "serde_kit/tools/render.py",
    "serde_kit/tools/retire.py",
    "serde_kit/tools/scan.py",
    "serde_kit/tools/status.py",
    "serde_kit/tools/verify.py",
    # row binding, keys, KMS
    "serde_kit/bound_saver.py",
    "serde_kit/crypto/keyring.py",
    "serde_kit/crypto/kms.py",
    "serde_kit/crypto/binding.py",
    "serde_kit/crypto/secret.py",
    "serde_kit/crypto/rows.py",
    "serde_kit/tools/rotate.py",
    "serde_kit/tools/keygen.py",
    "serde_kit/tools/audit.py",
    "serde_kit/cli/keys.py",
    "serde_kit/cli/audit.py",
    "tests/typing/",
    # eco2
    "serde_kit/__main__.py",
    "serde_kit/_stack.py",
    "serde_kit/_text.py",
    "serde_kit/allowlist.py",
    "serde_kit/encoder.py",
    "serde_kit/ext/langgraph.py",
    "serde_kit/legacy_json.py",
    "serde_kit/limits.py",
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
    assert re.search(r"(Success|Found \d+ errors? in \d+ files?).*\(checked \d+ source files\)", done.stdout)


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
