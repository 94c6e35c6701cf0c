"""The layering contract: the library never imports the command line or its dependencies.

Every module of serde_kit outside ``serde_kit.cli`` is imported in a fresh
interpreter, which then runs the tools over a real SQLite database; afterwards
none of ``serde_kit.cli``, ``argparse`` or ``tqdm`` may have been imported
(the standard library itself imports no argparse on these paths, which the
baseline case checks).
"""

from __future__ import annotations

import json
import os
import pkgutil
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import serde_kit

FORBIDDEN = ("serde_kit.cli", "argparse", "tqdm")

#: Programs, not library: they are allowed to parse a command line.
PROGRAMS = {
    "serde_kit.__main__",  # `python -m serde_kit` is the CLI
}


def library_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(serde_kit.__path__, "serde_kit.")]
    return sorted(n for n in names if not n.startswith("serde_kit.cli") and n not in PROGRAMS)


def imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(k for k in {FORBIDDEN!r} if k in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_probe_sees_an_import():
    assert imported_after("import argparse") == ["argparse"]
    assert imported_after("import serde_kit.cli") == ["argparse", "serde_kit.cli"]


def test_every_library_module_is_listed():
    mods = library_modules()
    assert {"serde_kit.tools.rotate", "serde_kit.tools.db.mysql", "serde_kit.crypto.rows"} <= set(mods)
    assert not any(m.startswith("serde_kit.cli") for m in mods)


def test_no_library_module_imports_the_cli_argparse_or_tqdm():
    code = "\n".join(f"import {m}" for m in library_modules())
    assert imported_after(code) == []


@pytest.fixture
def saver_db(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "app.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
    return path


def test_running_the_tools_imports_none_of_them(saver_db):
    code = f"""
from serde_kit.crypto import Keyring
from serde_kit.tools.db import open_database
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from serde_kit.tools.retire import retire
from serde_kit.tools import audit, scan
from serde_kit.tools.inspect import list_threads
keyring = Keyring.generate("k1")
with open_database(sqlite={str(saver_db)!r}, readonly=False) as db:
    rotate(db, keyring=keyring, apply=True)
    status(db, keyring=keyring, verify=True)
    retire(db, "k0")
    audit(db)
    scan(db)
    list_threads(db)
"""
    assert imported_after(code) == []


# -- the same contract, statically, with import-linter (config: [tool.importlinter] in pyproject.toml)

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=env,
    )


def _contracts() -> list[dict[str, object]]:
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])


def _contract_sources() -> list[str]:
    (contract,) = [c for c in _contracts() if c.get("forbidden_modules") == list(FORBIDDEN)]
    sources = contract["source_modules"]
    assert isinstance(sources, list)
    return [str(m) for m in sources]


def test_the_layers_contract_places_every_top_level_module():
    """Every top-level module (but the door and `python -m`) is in one layer of the package's contract."""
    (layers,) = [c for c in _contracts() if c["type"] == "layers" and c["containers"] == ["serde_kit"]]
    placed = {f"serde_kit.{name.strip()}" for layer in layers["layers"] for name in str(layer).split("|")}  # type: ignore[attr-defined]
    top = {".".join(m.split(".")[:2]) for m in library_modules()} | {"serde_kit.cli"}
    top.discard("serde_kit._reader")  # the optional compiled reader (when built): no Python imports to lint
    assert top == placed


def test_the_contract_names_every_library_module():
    top = {".".join(m.split(".")[:2]) for m in library_modules()}
    top.discard("serde_kit._reader")  # the optional compiled reader (when built): no Python imports to lint
    assert top == set(_contract_sources())


def test_lint_imports_keeps_the_contract():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(_contracts())} kept, 0 broken" in done.stdout


def test_lint_imports_catches_a_library_module_importing_argparse(tmp_path):
    shutil.copytree(ROOT / "serde_kit", tmp_path / "serde_kit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    verify = tmp_path / "serde_kit" / "tools" / "verify.py"
    verify.write_text(verify.read_text() + "\nimport argparse  # a violation\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "serde_kit.tools.verify -> argparse" in done.stdout


def _broken_copy(tmp_path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    shutil.copytree(ROOT / "serde_kit", tmp_path / "serde_kit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "serde_kit" / module
    path.write_text(path.read_text() + f"\n{line}  # a violation\n")
    return _lint_imports(tmp_path)


@pytest.mark.parametrize(
    ("module", "line", "shown"),
    [
        ("crypto/rows.py", "import serde_kit.tools.scan", "serde_kit.crypto.rows -> serde_kit.tools.scan"),
        ("serializer.py", "import serde_kit.crypto.keyring", "serde_kit.serializer -> serde_kit.crypto.keyring"),
        ("ext/codes.py", "import serde_kit.decoder", "serde_kit.ext.codes -> serde_kit.decoder"),
        ("crypto/kms.py", "import serde_kit.crypto.keyring", "serde_kit.crypto.kms -> serde_kit.crypto.keyring"),
        ("crypto/cipher.py", "import serde_kit.serializer", "serde_kit.crypto.cipher -> serde_kit.serializer"),
        ("tools/db/model.py", "import serde_kit.crypto.rows", "serde_kit.tools.db.model -> serde_kit.crypto.rows"),
        # allowed by the layers (ext and tools sit above the prescan), refused by the forbidden contract
        ("ext/stdlib.py", "import serde_kit._prescan", "serde_kit.ext.stdlib -> serde_kit._prescan"),
        ("tools/render.py", "from serde_kit import _prescan", "serde_kit.tools.render -> serde_kit._prescan"),
    ],
)
def test_lint_imports_catches_an_import_against_the_layers(tmp_path, module, line, shown):
    done = _broken_copy(tmp_path, module, line)
    assert done.returncode == 1, done.stdout + done.stderr
    assert shown in done.stdout
