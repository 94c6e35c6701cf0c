"""The database options every command shares: --db URL, SERDE_KIT_DB, --sqlite, --postgres, --mysql."""

from __future__ import annotations

import json
import socket
import sqlite3

import pytest

from serde_kit.cli import main


@pytest.fixture
def saver_db(tmp_path, monkeypatch):
    from langgraph.checkpoint.sqlite import SqliteSaver

    monkeypatch.chdir(tmp_path)
    for var in ("SERDE_KIT_DB", "SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY"):
        monkeypatch.delenv(var, raising=False)
    with sqlite3.connect(tmp_path / "app.db", check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
    return tmp_path / "app.db"


def status_json(capsys, *argv):
    code = main(["status", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_db_url_relative_and_absolute(saver_db, capsys):
    code, report, _ = status_json(capsys, "--db", "sqlite:///app.db")
    assert code == 0 and report["store"] == "sqlite:app.db"
    code, report, _ = status_json(capsys, "--db", f"sqlite:///{saver_db}")
    assert code == 0 and report["store"] == f"sqlite:{saver_db}"


def test_the_environment_names_the_database_when_no_option_does(saver_db, capsys, monkeypatch):
    monkeypatch.setenv("SERDE_KIT_DB", "sqlite:///app.db")
    code, report, _ = status_json(capsys)
    assert code == 0 and report["store"] == "sqlite:app.db"
    # an option wins over the environment
    monkeypatch.setenv("SERDE_KIT_DB", "sqlite:///elsewhere.db")
    assert status_json(capsys, "--sqlite", str(saver_db))[0] == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("app.db", "is not a database URL"),
        ("sqlite://app.db", "sqlite:///relative/path.db"),
        ("oracle://scott@db/x", "is not a database URL"),
        ("mysql://root@127.0.0.1:1", "names no database"),
    ],
)
def test_a_bad_environment_value_is_one_clear_line(saver_db, capsys, monkeypatch, value, says):
    monkeypatch.setenv("SERDE_KIT_DB", value)
    code, report, err = status_json(capsys)
    assert code == 2 and err == ""  # a configuration error; with --json it is JSON on stdout
    assert report["error"]["type"] == "ConfigError" and report["error"]["exit_status"] == 2
    message = report["error"]["message"]
    assert message.startswith("SERDE_KIT_DB: ") and says in message and "\n" not in message
    # Without --json: one line on stderr.
    assert main(["status"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: ConfigError: SERDE_KIT_DB: ") and says in err


def test_only_one_database_option(saver_db, capsys):
    assert main(["status", "--db", "sqlite:///app.db", "--mysql", "mysql://x@h/db"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: serde-kit status")
    assert err.splitlines()[-1] == "error: argument --mysql: not allowed with argument --db"


def test_unreachable_servers_name_host_and_port_never_the_password(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for url in (f"postgresql://alice:s3cretpw@127.0.0.1:{port}/appdb", f"mysql://alice:s3cretpw@127.0.0.1:{port}/appdb"):
        code, report, _ = status_json(capsys, "--db", url)
        message = report["error"]["message"]
        assert code == 3 and f"127.0.0.1:{port}/appdb" in message and "s3cretpw" not in message, url
        assert report["error"]["type"] == "StoreError" and message.startswith("cannot connect to ")
        assert main(["status", "--db", url]) == 3
        err = capsys.readouterr().err
        assert err.startswith("error: StoreError: cannot connect to ") and "s3cretpw" not in err


@pytest.mark.mysql
def test_mysql_option_and_url(mysql_db, capsys):
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    with pymysql.connect(**PyMySQLSaver.parse_conn_string(mysql_db), autocommit=True) as conn:
        PyMySQLSaver(conn).setup()
    for argv in (["--mysql", mysql_db], ["--db", mysql_db]):
        code, report, err = status_json(capsys, *argv)
        assert code == 0, err
        assert [t["name"] for t in report["tables"]] == ["checkpoint_blobs", "checkpoint_writes"]
