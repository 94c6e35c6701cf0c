"""The entry point: what it needs installed, --version, the exit statuses, and errors as JSON."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

import serde_kit
from serde_kit import Serializer, native
from serde_kit.cli import exitcodes, main
from serde_kit.cli.output import progress_for
from tests.support.sample_types import Doc

NO_TQDM = "import sys; sys.modules['tqdm'] = None; from serde_kit.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SqliteSaver database holding one checkpoint whose state has a ``tests.support.sample_types.Doc``."""
    for var in ("SERDE_KIT_DB", "SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "SERDE_KIT_ALLOW", "SERDE_KIT_ALLOW_FILE"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "app.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn, serde=Serializer(allow=[Doc]))
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"doc": Doc("a.txt", 3)}
        saver.put({"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}}, checkpoint, {}, {})
    return path


def run(*argv: str, code: str = NO_TQDM) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def test_the_commands_run_without_the_cli_extra(app_db: Path) -> None:
    # tqdm (the [cli] extra) only draws progress bars: without it every command still runs.
    keygen = run("keygen", "--id", "k7")
    assert keygen.returncode == 0 and "# new key id: k7" in keygen.stdout, keygen.stderr
    status = run("status", "--sqlite", str(app_db), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["tables"][0]["plaintext"] == 1
    scan = run("allowlist", "scan", "--sqlite", str(app_db))
    assert scan.returncode == 0 and "tests.support.sample_types:Doc" in scan.stdout, scan.stderr


def test_without_tqdm_a_terminal_gets_no_bar_instead_of_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress_for(False) is not None  # tqdm is installed here: a bar
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert progress_for(False) is None


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    line = f"serde-kit {serde_kit.__version__} ({native.reason()})\n"  # the version and the read path
    assert capsys.readouterr().out == line
    done = subprocess.run(
        [sys.executable, "-m", "serde_kit", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == line


def test_help_documents_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    statuses = out.split("exit status:", 1)[1]
    for status, says in [
        (exitcodes.OK, "done"),
        (exitcodes.FAILED, "a check failed"),
        (exitcodes.USAGE, "usage or configuration error"),
        (exitcodes.UNAVAILABLE, "could not be reached or read"),
    ]:
        assert f"\n  {status}" + " " * 4 + says in statuses
    assert "--json" in statuses


def test_each_kind_of_outcome_has_its_own_status(
    app_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1: a check failed -- the stored type is not covered by any allowlist
    assert main(["allowlist", "scan", "--sqlite", str(app_db), "--check", "-q"]) == exitcodes.FAILED == 1
    assert "NOT covered" in capsys.readouterr().out
    # ... and passes once the environment allows it
    monkeypatch.setenv("SERDE_KIT_ALLOW", "tests.support.sample_types:Doc")
    assert main(["allowlist", "scan", "--sqlite", str(app_db), "--check", "-q"]) == exitcodes.OK
    capsys.readouterr()
    # 2: usage -- argparse's complaint and a configuration error
    assert main(["status", "--no-such-option"]) == exitcodes.USAGE == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert main(["status"]) == exitcodes.USAGE
    assert "error: ConfigError: no database given" in capsys.readouterr().err
    # 3: cannot read the database
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database file" * 100)
    assert main(["status", "--sqlite", str(garbage)]) == exitcodes.UNAVAILABLE == 3
    assert "error: StoreError: cannot read" in capsys.readouterr().err
    # 0: everything fine
    assert main(["status", "--sqlite", str(app_db), "-q"]) == exitcodes.OK == 0


def test_with_json_errors_are_json_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00not sqlite\x9b[31m" * 100)
    assert main(["status", "--sqlite", str(garbage), "--json"]) == 3
    out, err = capsys.readouterr()
    assert err == ""
    error = json.loads(out)["error"]
    assert error["type"] == "StoreError" and error["exit_status"] == 3
    assert error["message"].startswith("cannot read ")

    assert main(["inspect", "--json", "--bogus"]) == 2
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "error": {"type": "UsageError", "message": "unrecognized arguments: --bogus", "exit_status": 2}
    }


def test_a_missing_driver_says_how_to_install_it_from_a_clone_too() -> None:
    import importlib.metadata
    import re

    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from serde_kit.cli import main\n"
        "sys.exit(main(['status', '--postgres', 'postgresql://u@127.0.0.1:1/db']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    hint = re.search(r"pip install 'serde-kit\[(\w+)\]' \(in a clone of serde_kit: pip install -e '\.\[(\w+)\]'\)", done.stderr)
    assert hint and hint[1] == hint[2] == "postgres", done.stderr
    assert hint[1] in (importlib.metadata.metadata("serde-kit").get_all("Provides-Extra") or [])
