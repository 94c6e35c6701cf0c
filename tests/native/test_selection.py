"""Which read path runs, and how a user tells (serde_kit.native, serde-kit --version)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from serde_kit import native

from .conftest import REQUIRED, require_reader


def _active(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SERDE_KIT_")}
    done = subprocess.run(
        [sys.executable, "-c", "import serde_kit, serde_kit.native as n; from serde_kit import Serializer; "
         "print(n.ACTIVE, type(Serializer()._decoder.engine).__name__); print(n.reason())"],
        capture_output=True, text=True, timeout=120, env={**clean, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_compiled_reader_reads_by_default_and_the_environment_selects_the_pure_path():
    require_reader()
    assert _active() == (
        "native Reader\nnative read path: the compiled reader is built; SERDE_KIT_PURE_PYTHON=1 selects the pure path\n"
    )
    assert _active(SERDE_KIT_PURE_PYTHON="1") == "python Decoder\npython read path: SERDE_KIT_PURE_PYTHON=1\n"
    # The opt-in switch of the releases before the flip: accepted, and changes nothing.
    assert _active(SERDE_KIT_NATIVE="1") == _active()
    assert _active(SERDE_KIT_NATIVE="1", SERDE_KIT_PURE_PYTHON="1") == _active(SERDE_KIT_PURE_PYTHON="1")
    assert _active(SERDE_KIT_PURE_PYTHON="0") == _active(SERDE_KIT_PURE_PYTHON="") == _active()


@pytest.mark.parametrize("value", ["true", "yes", " 1", "2"])
def test_a_pure_python_switch_that_is_not_1_is_named_as_ignored(value):
    require_reader()
    chosen, line, _ = _active(SERDE_KIT_PURE_PYTHON=value).split("\n")
    assert chosen == "native Reader"
    assert line == (
        "native read path: the compiled reader is built; SERDE_KIT_PURE_PYTHON is ignored, only 1 selects the pure path"
    )


def test_the_suite_reads_with_the_path_it_was_asked_for():
    """CI runs the whole suite twice: by default (the compiled reader, which must be
    built there) and with SERDE_KIT_PURE_PYTHON=1. A run that quietly read with the
    other path would test it twice and the asked-for one never."""
    if os.environ.get("SERDE_KIT_PURE_PYTHON") == "1":
        assert native.ACTIVE == "python", native.reason()
    elif native.AVAILABLE or REQUIRED:
        assert native.ACTIVE == "native", native.reason()
    else:
        assert native.ACTIVE == "python" and "not built" in native.reason()


def test_without_the_compiled_reader_the_pure_path_runs_and_says_why():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['serde_kit._reader'] = None\n"
         "import serde_kit.native as n; from serde_kit import Serializer\n"
         "assert Serializer().loads(Serializer().dumps((1, 2))) == (1, 2)\nprint(n.ACTIVE, n.AVAILABLE, n.reason())"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "SERDE_KIT_NATIVE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "python False python read path: the compiled reader is not built (no C compiler at install time?)\n"
    )


def test_a_reader_that_is_built_but_does_not_import_is_named_as_such():
    """A build for another Python, or one missing a symbol, is not a missing compiler:
    the reason says it does not import, quotes why on the same line, and the pure path reads."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n"
         "class Broken:\n"
         "    def find_spec(self, name, path=None, target=None):\n"
         "        if name == 'serde_kit._reader':\n"
         "            raise ImportError('_reader.so: undefined symbol: PyFoo\\n(second line)')\n"
         "sys.meta_path.insert(0, Broken())\n"
         "import serde_kit.native as n; from serde_kit import Serializer\n"
         "assert Serializer().loads(Serializer().dumps((1, 2))) == (1, 2)\nprint(n.ACTIVE, n.reason())"],
        capture_output=True, text=True, timeout=120, env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "python python read path: the compiled reader does not import "
        "(_reader.so: undefined symbol: PyFoo (second line)); reinstall serde-kit\n"
    )


def test_version_names_the_read_path():
    done = subprocess.run(
        [sys.executable, "-m", "serde_kit", "--version"], capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("serde-kit ") and "read path:" in done.stdout
    assert native.ACTIVE in done.stdout
