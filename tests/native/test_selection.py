"""Which read path runs, and how a user tells (serde_kit.native, serde-kit --version)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from serde_kit import native


def _active(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SERDE_KIT_")}
    done = subprocess.run(
        [sys.executable, "-c", "import serde_kit, serde_kit.native as n; from serde_kit import Serializer; "
         "print(n.ACTIVE, type(Serializer()._decoder.engine).__name__); print(n.reason())"],
        capture_output=True, text=True, timeout=120, env={**clean, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not native.AVAILABLE, reason="serde_kit._reader is not built")
def test_the_environment_selects_the_path():
    assert _active(SERDE_KIT_NATIVE="1").startswith("native Reader\n")
    assert _active(SERDE_KIT_NATIVE="1", SERDE_KIT_PURE_PYTHON="1").startswith("python Decoder\n")
    assert "SERDE_KIT_PURE_PYTHON=1" in _active(SERDE_KIT_NATIVE="1", SERDE_KIT_PURE_PYTHON="1")
    default = _active()
    assert default.split()[0] == ("native" if native._ON_BY_DEFAULT else "python")


def test_without_the_compiled_reader_the_pure_path_runs_and_says_why():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['serde_kit._reader'] = None\n"
         "import serde_kit.native as n; from serde_kit import Serializer\n"
         "assert Serializer().loads(Serializer().dumps((1, 2))) == (1, 2)\nprint(n.ACTIVE, n.AVAILABLE, n.reason())"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "SERDE_KIT_NATIVE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("python False python read path: the compiled reader is not built")


def test_version_names_the_read_path():
    done = subprocess.run(
        [sys.executable, "-m", "serde_kit", "--version"], capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("serde-kit ") and "read path:" in done.stdout
    assert native.ACTIVE in done.stdout
