"""SQLite read-only faults for real: the CLI in a subprocess as a user that file permissions bind.

Root ignores file modes, so as root these faults cannot happen; the suite often
runs as root.  Then each test runs ``python -m serde_kit`` as ``nobody`` (an
interpreter of the same version that ``nobody`` can execute, with this
checkout and this interpreter's path on its path); run as any other
user, the CLI runs as that user.  When neither is possible the test fails and
says why: these faults are never skipped.

Each case asserts the one ``error: Class: message`` line, the exit code, and
that the database's files are byte for byte what they were (no stored row
changed, no journal left behind).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serde_kit.tools.db import open_database
from tests.support.rotate_fixtures import K_ROTATE, LEGACY_TEXT, raw_rows

ROOT = Path(__file__).resolve().parents[2]
USER = "nobody"


def _env() -> dict[str, str]:
    # This checkout first, then where this interpreter finds the dependencies (a venv's
    # site-packages, or a PYTHONPATH), for an interpreter that does not know them.
    paths = [str(ROOT), *(p for p in sys.path if p and os.path.isdir(p))]
    return {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join(paths),
        "SERDE_KIT_KEYRING": K_ROTATE.to_env_value(),
        "LANGGRAPH_AES_KEY": LEGACY_TEXT,
        "LC_ALL": "C.UTF-8",
    }


def _as_user() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        pytest.fail(f"tests run as root and there is no {USER!r} user to run the CLI without root's file access")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@pytest.fixture(scope="module")
def cli() -> tuple[list[str], dict[str, Any]]:
    """The command that runs the CLI unprivileged, and subprocess.run's user arguments."""
    user = _as_user()
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable, os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    tried = []
    probe = "import sys, sqlite3, serde_kit.cli; print('%d.%d' % sys.version_info[:2])"
    for exe in dict.fromkeys(candidates):
        try:
            done = subprocess.run([exe, "-c", probe], env=_env(), cwd="/", capture_output=True, text=True, timeout=60, **user)
        except OSError as e:
            tried.append(f"{exe}: {e}")
            continue
        if done.returncode == 0 and done.stdout.strip() == version:
            return [exe, "-m", "serde_kit"], user
        tried.append(f"{exe}: exit {done.returncode} {done.stderr.strip()[-200:]}")
    pytest.fail(
        f"cannot run the CLI as an unprivileged user ({USER!r} when root) to test read-only faults; "
        f"no Python {version} it can execute imports serde_kit: " + "; ".join(tried)
    )


@pytest.fixture
def place(graph_sqlite_db: str) -> Iterator[Path]:
    """A directory the unprivileged user owns (outside pytest's root-only tmp), holding a copy of the graph database."""
    top = Path(tempfile.mkdtemp(prefix="serde-kit-ro-"))
    top.chmod(0o755)
    where = top / "db"
    where.mkdir()
    shutil.copyfile(graph_sqlite_db, where / "app.db")
    try:
        yield where
    finally:
        for p in [where, *where.iterdir()]:
            p.chmod(0o700 if p.is_dir() else 0o600)
        shutil.rmtree(top)


def _hand_over(where: Path) -> None:
    if os.geteuid() == 0:
        for p in [where, *where.iterdir()]:
            shutil.chown(p, USER, None)


def _journal_mode(path: Path, mode: str) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute(f"PRAGMA journal_mode = {mode}").fetchone()[0] == mode
    finally:
        conn.close()


def _files(where: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(where.iterdir())}


def _run(cli: tuple[list[str], dict[str, Any]], *argv: str) -> tuple[int, str]:
    cmd, user = cli
    done = subprocess.run([*cmd, *argv], env=_env(), cwd="/", capture_output=True, text=True, timeout=300, **user)
    return done.returncode, done.stderr


def _one_line(err: str, cls: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {cls}: "), err
    return lines[0]


def _rows_after(where: Path) -> dict[Any, Any]:
    for p in [where, *where.iterdir()]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    with open_database(sqlite=str(where / "app.db")) as db:
        return raw_rows(db)


def _rows_before(where: Path) -> dict[Any, Any]:
    with open_database(sqlite=str(where / "app.db")) as db:
        return raw_rows(db)


def test_a_read_only_database_file(cli, place):
    db = place / "app.db"
    before_rows = _rows_before(place)
    _journal_mode(db, "wal")
    _hand_over(place)
    db.chmod(0o444)
    before = _files(place)[db.name]
    code, err = _run(cli, "status", "--sqlite", str(db))
    assert code == 0, err  # reading is fine: the directory is writable (SQLite makes its -shm there)
    code, err = _run(cli, "rotate", "--sqlite", str(db), "--apply", "--encrypt-plaintext", "--upgrade-legacy")
    line = _one_line(err, "StoreError")
    assert code == 3 and "cannot be written" in line and "readonly" in line and "permissions" in line, line
    assert _files(place)[db.name] == before
    assert _rows_after(place) == before_rows


def test_a_read_only_directory_so_the_rollback_journal_cannot_be_created(cli, place):
    db = place / "app.db"
    before_rows = _rows_before(place)
    _journal_mode(db, "delete")
    _hand_over(place)
    place.chmod(0o555)
    before = _files(place)
    code, err = _run(cli, "rotate", "--sqlite", str(db), "--apply", "--encrypt-plaintext", "--upgrade-legacy")
    line = _one_line(err, "StoreError")
    assert code == 3 and "cannot be written" in line and "journal beside the file" in line, line
    assert _files(place) == before  # no journal left, the database unchanged
    assert _rows_after(place) == before_rows


@pytest.mark.parametrize("wal_file", [True, False], ids=["with-its-wal", "no-wal"])
def test_a_wal_database_in_a_read_only_place_without_its_shm(cli, place, wal_file):
    db = place / "app.db"
    before_rows = _rows_before(place)
    _journal_mode(db, "wal")  # the last connection closed: SQLite removes -wal and -shm
    assert sorted(p.name for p in place.iterdir()) == ["app.db"]
    if wal_file:
        (place / "app.db-wal").write_bytes(b"")
    _hand_over(place)
    place.chmod(0o555)
    before = _files(place)
    for argv in (["status"], ["rotate", "--apply", "--encrypt-plaintext"]):
        code, err = _run(cli, *argv, "--sqlite", str(db))
        line = _one_line(err, "StoreError")
        assert code == 3 and "WAL database" in line and "app.db-shm" in line and "read-only" in line, line
        assert _files(place) == before
    assert _rows_after(place) == before_rows
