"""The package without a C compiler: it installs, says in one line that the reader was
not built, imports, reports the pure path with its reason and reads every stored row
exactly as the compiled reader does.

The package is installed for real (``pip install`` of a copy of the source tree, with
``CC=false`` standing in for a missing compiler) into a directory of its own, and run
by a Python that sees that copy first and never this worktree's editable install (``-S``:
the site-packages ``.pth`` hooks are not run; the dependencies come from the test venv).
"""

from __future__ import annotations

import os
import pickle
import shutil
import site
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from serde_kit import Allowlist, Serializer

from .conftest import assert_same_deep, read_path, require_reader

REPO = Path(__file__).resolve().parents[2]
NOT_BUILT = "serde_kit: the compiled reader was not built ("
FALLING_BACK = "installing the pure-Python read path (set SERDE_KIT_REQUIRE_NATIVE=1 to make this fatal)"
SOURCES = ("serde_kit", "setup.py", "pyproject.toml", "README.md", "LICENSE")


def _source_copy(into: Path) -> Path:
    """The files an sdist holds, without any compiled reader this worktree built."""
    src = into / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            ignore = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
            shutil.copytree(REPO / name, src / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, src / name)
    return src


def _pip_install(src: Path, target: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # An absolute path: a bare name would be looked up on the package index instead.
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "-v", "--no-deps", "--target", str(target), str(src.resolve())],
        capture_output=True, text=True, timeout=600, env={**os.environ, "CC": "false", **env},
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the install directory, pip's output) of an install with no working C compiler."""
    root = tmp_path_factory.mktemp("no-compiler")
    target = root / "site"
    env = {k: v for k, v in os.environ.items() if k.startswith("SERDE_KIT_")}
    done = _pip_install(_source_copy(root), target, **{k: "" for k in env})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return target, done.stdout + done.stderr


def _run(target: Path, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a Python that imports serde_kit from ``target``, the dependencies from
    the test venv and ``tests`` from this worktree, with the read-path switches unset."""
    path = os.pathsep.join([str(target), *site.getsitepackages(), str(REPO)])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "PYTHON"))}
    return subprocess.run(
        [sys.executable, "-S", "-c", code, *args],
        capture_output=True, text=True, timeout=600, cwd=cwd, env={**env, "PYTHONPATH": path},
    )


def test_the_install_says_in_one_line_that_the_reader_was_not_built(installed):
    target, log = installed
    lines = [line.strip() for line in log.splitlines() if "compiled reader" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(NOT_BUILT) and "CompileError" in lines[0], lines[0]
    assert lines[0].endswith(FALLING_BACK), lines[0]
    assert (target / "serde_kit" / "native.py").is_file()
    assert not [p.name for p in (target / "serde_kit").iterdir() if p.name.startswith("_reader.") and p.suffix != ".c"]


def test_without_a_compiler_the_package_reports_the_pure_path_and_why(installed, tmp_path):
    target, _ = installed
    done = _run(
        target,
        "import serde_kit, serde_kit.native as n; from serde_kit import Serializer\n"
        "print(serde_kit.__file__); print(n.ACTIVE, n.AVAILABLE, type(Serializer()._decoder.engine).__name__)\n"
        "print(n.reason())",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    where, active, reason = done.stdout.splitlines()
    assert Path(where).is_relative_to(target), where  # the installed copy, not this worktree
    assert active == "python False Decoder"
    assert reason == "python read path: the compiled reader is not built (no C compiler at install time?)"
    version = _run(target, "import sys, runpy; sys.argv = ['serde-kit', '--version']; runpy.run_module("
                   "'serde_kit', run_name='__main__')", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.endswith(f"({reason})\n") and version.stdout.startswith("serde-kit "), version.stdout


# The pure install reads every row of row_sets(); its outcomes come back pickled
# (values) or as (class, message) (errors) and must equal the compiled reader's here.
_READ_ALL = """
import pickle, sys
from serde_kit import Serializer
from tests.native.test_fallback_build import read, row_sets, serializer_options

out = []
for which, rows in row_sets():
    serde = Serializer(**serializer_options(which))
    for name, row in rows:
        out.append((name, *read(serde, row)))
with open(sys.argv[1], "wb") as f:
    pickle.dump(out, f, protocol=5)  # numpy 2.4's protocol-4 pickles lose a big-endian dtype's byte order
"""


def read(serde: Serializer, row: tuple[str, bytes]) -> tuple[str, Any, list[tuple[str, str]]]:
    """("value", the value, warnings) or ("error", (module, class, message), warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome: tuple[str, Any] = ("value", serde.loads_typed(row))
        except Exception as exc:
            outcome = ("error", (type(exc).__module__, type(exc).__qualname__, str(exc)))
    return (*outcome, [(w.category.__qualname__, str(w.message)) for w in caught])


def row_sets() -> list[tuple[str, list[tuple[str, tuple[str, bytes]]]]]:
    """(which, rows): the golden and release rows as test_differential reads them, the
    golden rows with nothing allowed and cut in half (errors: refused and damaged rows)."""
    from tests.native.test_differential import GOLDEN_ROWS, RELEASE_ROWS

    cut = [(f"{name}[:half]", (tag, data[: len(data) // 2])) for name, (tag, data) in GOLDEN_ROWS]
    return [("golden", GOLDEN_ROWS), ("release", RELEASE_ROWS), ("refused", GOLDEN_ROWS), ("golden", cut)]


def serializer_options(which: str) -> dict[str, Any]:
    """The options test_differential reads ``which`` ("golden", "release" or "refused") rows with."""
    if which == "refused":
        return {"allowlist": Allowlist(defaults=False)}
    if which == "golden":
        from tests.golden.golden_types import ALL_TYPES as GOLDEN_TYPES
        from tests.support.strategy_types import USER_TYPES

        return {"allow": [*USER_TYPES, *GOLDEN_TYPES]}
    from tests.compat import cases as compat_cases

    return {"allow": list(compat_cases.USER_TYPES), "pickle_fallback": True}


def test_without_a_compiler_every_stored_row_reads_as_the_compiled_reader_reads_it(installed, tmp_path):
    require_reader()
    target, _ = installed
    results = tmp_path / "pure.pickle"
    done = _run(target, _READ_ALL, str(results), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    pure = pickle.loads(results.read_bytes())

    rows: list[tuple[Serializer, str, tuple[str, bytes]]] = []
    for which, group in row_sets():
        with read_path("native"):
            serde = Serializer(**serializer_options(which))  # fresh, as in the pure process
        assert type(serde._decoder.engine).__name__ == "Reader"
        rows += [(serde, name, row) for name, row in group]
    assert [name for _, name, _ in rows] == [entry[0] for entry in pure]
    errors = warned = 0
    for (serde, name, row), (_, kind, expected, expected_warnings) in zip(rows, pure, strict=True):
        got = read(serde, row)
        assert got[0] == kind, f"{name}: compiled {got!r:.300} vs pure install {expected!r:.300}"
        if kind == "error":
            errors += 1
            assert got[1] == expected, name
        else:
            assert_same_deep(expected, got[1])
        assert got[2] == expected_warnings, name
        warned += bool(expected_warnings)
    # Every kind of outcome was compared, not only one.
    assert errors and warned and len(rows) - errors > 100, (errors, warned, len(rows))


def test_a_required_build_without_a_compiler_fails_the_install(tmp_path):
    done = _pip_install(_source_copy(tmp_path), tmp_path / "site", SERDE_KIT_REQUIRE_NATIVE="1")
    assert done.returncode != 0
    log = done.stdout + done.stderr
    assert NOT_BUILT not in log
    assert "CompileError" in log or "exit status 1" in log, log[-3000:]
    assert not (tmp_path / "site" / "serde_kit").exists()
