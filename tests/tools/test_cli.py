"""The serde-kit command line: main([...]) in process, plus real subprocesses."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import stat
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from serde_kit.cli import COMMAND_MODULES, main
from serde_kit.crypto import Keyring
from serde_kit.tools.db import open_database
from tests.support.rotate_fixtures import K1, K_ROTATE, LEGACY_TEXT, raw_rows

ALL_FLAGS = ["--encrypt-plaintext", "--upgrade-legacy"]


@pytest.fixture
def keyring_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)


@pytest.fixture
def no_keyring_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY"):
        monkeypatch.delenv(var, raising=False)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def wide_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps help to the terminal width


def test_help_lists_every_command_with_a_description(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command, words in [
        ("status", "count stored rows"),
        ("rotate", "dry run unless --apply"),
        ("retire", "no stored row"),
        ("keygen", "new key"),
        ("verify", "decrypt every stored row"),
        ("inspect", "text table or --json"),
        ("audit", "plaintext rows"),
        ("allowlist", "which stored types"),
    ]:
        line = next(line for line in out.splitlines() if line.strip().startswith(command))
        assert words in line or words in out
    assert all(m.startswith("serde_kit.cli.") for m in COMMAND_MODULES)


def test_rotate_help_says_dry_run_by_default(capsys):
    with pytest.raises(SystemExit):
        main(["rotate", "--help"])
    out = capsys.readouterr().out
    assert "DRY RUN BY DEFAULT" in out and "--apply" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--sqlite", "a.db", "--postgres", "postgresql://x"],  # both
        ["rotate", "--sqlite", "a.db", "--key", "k1:AAAA"],  # keys never from argv
        ["nonsense"],
        ["status", "--sqlite", "a.db", "--batch-size", "0"],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: serde-kit") and err.splitlines()[-1].startswith("error: ")


def test_no_database_anywhere_says_how_to_name_one(capsys, monkeypatch, no_keyring_env):
    monkeypatch.delenv("SERDE_KIT_DB", raising=False)
    code, out, err = run(capsys, "status")
    assert code == 2 and out == ""
    assert err.startswith("error: ConfigError: no database given") and "--db URL" in err and "SERDE_KIT_DB" in err


def test_missing_database_is_a_clear_error(capsys, tmp_path, no_keyring_env):
    code, out, err = run(capsys, "status", "--sqlite", str(tmp_path / "missing.db"))
    assert code == 2 and out == ""
    assert err.startswith("error: ConfigError: ") and "does not exist" in err
    assert not (tmp_path / "missing.db").exists()


def test_rotate_without_keyring_says_what_to_set(capsys, graph_sqlite_db, no_keyring_env):
    code, _, err = run(capsys, "rotate", "--sqlite", graph_sqlite_db)
    assert code == 2
    assert err.startswith("error: KeyringError: ") and "SERDE_KIT_KEYRING" in err and "keygen" in err


def test_status_rotate_retire_flow(capsys, graph_sqlite_db, keyring_env):
    with open_database(sqlite=graph_sqlite_db) as store:
        before = raw_rows(store)

    code, out, _ = run(capsys, "status", "--sqlite", graph_sqlite_db, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["primary_id"] == "k2" and report["total"]["by_key"]["k1"] > 0
    k1_rows = report["total"]["by_key"]["k1"]

    code, out, err = run(capsys, "retire", "--sqlite", graph_sqlite_db, "k1")
    assert code == 1 and "refusing" in err and f"{k1_rows} row(s) still use key k1" in err and "rotate" in err

    code, out, _ = run(capsys, "rotate", "--sqlite", graph_sqlite_db, *ALL_FLAGS)
    assert code == 0 and "DRY RUN" in out and "--apply" in out
    with open_database(sqlite=graph_sqlite_db) as store:
        assert raw_rows(store) == before

    code, out, _ = run(capsys, "rotate", "--sqlite", graph_sqlite_db, "--apply", "--batch-size", "9", *ALL_FLAGS)
    assert code == 0, out
    assert "re-encrypted" in out and "0 failed" in out

    code, out, _ = run(capsys, "status", "--sqlite", graph_sqlite_db, "--verify", "--json")
    assert code == 0
    total = json.loads(out)["total"]
    assert total["by_key"] == {"k2": total["rows"] - total["empty"]} and total["failed"] == 0

    code, out, _ = run(capsys, "rotate", "--sqlite", graph_sqlite_db, "--apply", "--json", *ALL_FLAGS)
    assert code == 0 and json.loads(out)["changed"] == {}

    code, out, _ = run(capsys, "retire", "--sqlite", graph_sqlite_db, "k1")
    assert code == 0 and "safe" in out and "does not edit your secret store" in out


def test_rotate_reports_unreadable_rows_and_exits_1(capsys, graph_sqlite_db, monkeypatch):
    monkeypatch.delenv("SERDE_KIT_KEYRING_FILE", raising=False)
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    only_k2 = Keyring({"k2": K_ROTATE.key("k2")}, primary="k2")
    monkeypatch.setenv("SERDE_KIT_KEYRING", only_k2.to_env_value())
    code, out, _ = run(capsys, "rotate", "--sqlite", graph_sqlite_db, "--apply")
    assert code == 1
    assert "failed: checkpoints[" in out and "UnknownKeyError" in out


def test_keyring_file_from_env(capsys, graph_sqlite_db, tmp_path, no_keyring_env, monkeypatch):
    path = tmp_path / "keys"
    K_ROTATE.to_file(path)
    monkeypatch.setenv("SERDE_KIT_KEYRING_FILE", str(path))
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)  # the +aes rows must stay readable
    code, out, _ = run(capsys, "rotate", "--sqlite", graph_sqlite_db, "--apply")
    assert code == 0 and "rows under key k1" in out
    os.chmod(path, 0o644)
    code, _, err = run(capsys, "rotate", "--sqlite", graph_sqlite_db)
    assert code == 2 and "KeyringError" in err and "chmod 600" in err


def test_keygen_prints_env_and_file_formats(capsys, tmp_path, no_keyring_env):
    code, out, _ = run(capsys, "keygen", "--id", "k7")
    assert code == 0
    env_line = next(line for line in out.splitlines() if line.startswith("SERDE_KIT_KEYRING="))
    kr = Keyring.from_env(environ={"SERDE_KIT_KEYRING": env_line.split("=", 1)[1]})
    assert kr.ids == ["k7"]
    file_lines = [line for line in out.splitlines() if line.startswith("k7:") or line.startswith("# serde_kit")]
    key_file = tmp_path / "printed"
    key_file.write_text("\n".join(file_lines) + "\n")
    os.chmod(key_file, 0o600)
    assert Keyring.from_file(key_file).key("k7") == kr.key("k7")


def test_keygen_file_and_extend(capsys, tmp_path, no_keyring_env, monkeypatch):
    path = tmp_path / "new.keys"
    code, out, _ = run(capsys, "keygen", "--id", "k8", "--file", str(path))
    assert code == 0 and str(path) in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Keyring.from_file(path).ids == ["k8"]
    code, _, err = run(capsys, "keygen", "--file", str(path))
    assert code == 2 and "refusing to overwrite" in err

    monkeypatch.setenv("SERDE_KIT_KEYRING", Keyring({"k1": K1}, primary="k1").to_env_value())
    code, out, _ = run(capsys, "keygen", "--id", "k9", "--extend")
    assert code == 0
    env_line = next(line for line in out.splitlines() if line.startswith("SERDE_KIT_KEYRING="))
    kr = Keyring.from_env(environ={"SERDE_KIT_KEYRING": env_line.split("=", 1)[1]})
    assert kr.primary_id == "k9" and kr.key("k1") == K1


@pytest.mark.postgres
def test_postgres_flow(capsys, graph_postgres_db, keyring_env):
    code, out, _ = run(capsys, "rotate", "--postgres", graph_postgres_db, "--apply", *ALL_FLAGS)
    assert code == 0, out
    code, out, _ = run(capsys, "status", "--postgres", graph_postgres_db, "--verify", "--json")
    total = json.loads(out)["total"]
    assert code == 0 and total["by_key"] == {"k2": total["rows"] - total["empty"]}
    code, out, _ = run(capsys, "retire", "--postgres", graph_postgres_db, "k1")
    assert code == 0


def test_unreachable_postgres_message(capsys, no_keyring_env):
    code, _, err = run(capsys, "status", "--postgres", "postgresql://bob:hunter22@127.0.0.1:1/db")
    assert code == 3 and "127.0.0.1:1/db" in err and "hunter22" not in err


# -- real processes ----------------------------------------------------------


def subprocess_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "LANGGRAPH_AES"))}
    env["SERDE_KIT_KEYRING"] = K_ROTATE.to_env_value()
    env["LANGGRAPH_AES_KEY"] = LEGACY_TEXT
    return env


def test_serde_kit_console_script(graph_sqlite_db):
    exe = Path(sys.executable).with_name("serde-kit")
    assert exe.exists(), "the serde-kit entry point is not installed in this environment"
    done = subprocess.run(
        [str(exe), "rotate", "--sqlite", graph_sqlite_db, "--apply", *ALL_FLAGS],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "re-encrypted" in done.stdout and done.stderr == ""  # no progress bar without a TTY
    status_run = subprocess.run(
        [sys.executable, "-m", "serde_kit", "status", "--sqlite", graph_sqlite_db, "--json"],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    total = json.loads(status_run.stdout)["total"]
    assert total["by_key"] == {"k2": total["rows"] - total["empty"]}
    bad = subprocess.run(
        [str(exe), "status", "--sqlite", graph_sqlite_db + ".missing"],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ConfigError:")
    assert "Traceback" not in bad.stderr


def test_progress_bar_on_a_terminal(graph_sqlite_db):
    # stderr is a pseudo-terminal: tqdm draws; --quiet turns it off.
    def run_on_tty(*extra):
        leader, follower = pty.openpty()
        # a fresh pty is 0x0; tqdm draws nothing on a zero-width terminal
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "serde_kit", "status", "--sqlite", graph_sqlite_db, "--batch-size", "5", *extra],
                env=subprocess_env(),
                stdout=subprocess.DEVNULL,
                stderr=follower,
            )
            os.close(follower)
            chunks = []
            while True:
                try:
                    data = os.read(leader, 4096)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            assert proc.wait(timeout=120) == 0
        finally:
            os.close(leader)
        return b"".join(chunks).decode(errors="replace")

    drawn = run_on_tty()
    assert "status" in drawn and "row" in drawn
    assert run_on_tty("--quiet") == ""
