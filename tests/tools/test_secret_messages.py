"""No error shows a database URL's password: typo'd schemes, unparseable DSNs, driver texts, refused logins.

Each case opens a database the way an operator would -- the library's
``open_database``, the CLI's ``--db``/``--postgres``/``--mysql`` and
``SERDE_KIT_DB`` -- with a URL that holds a known password, and checks that the
password (raw, percent-decoded, or a fragment of it a typo moved into the host
or port) appears nowhere: not in the exception's message, not in ``str(exc)``
or ``repr(exc)``, not in anything the CLI printed.  The messages still say what
is wrong and which database was meant (scheme, host, port and database name).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from serde_kit.cli import main
from serde_kit.errors import ConfigError, StoreError
from serde_kit.tools.db import open_database

PASSWORD = "S3cretPW9x"


def _fragments(password: str) -> list[str]:
    """The password and every piece of it a message could carry (6+ characters)."""
    n = len(password)
    return sorted({password[i:j] for i in range(n) for j in range(i + 6, n + 1)})


#: (label, url, what the message must still say)
BAD_URLS = [
    ("typo scheme", f"postgress://app:{PASSWORD}@db.example:5432/app", "postgress://...@db.example:5432/app"),
    ("no scheme", f"app:{PASSWORD}@db.example:5432/app", "the value is not a database URL"),
    ("scheme typo, no //", f"postgresql:app:{PASSWORD}@db.example/app", "the value is not a database URL"),
    ("raw percent", f"postgresql://app:{PASSWORD}%zz@127.0.0.1:1/app", "invalid percent-encoded token"),
    ("percent at the end", f"postgresql://app:{PASSWORD}%@127.0.0.1:1/app", "invalid percent-encoded token"),
    ("slash in password", f"postgresql://app:{PASSWORD[:5]}/{PASSWORD[5:]}@127.0.0.1:1/app", "PostgreSQL"),
    ("hash in password", f"postgresql://app:{PASSWORD[:5]}#{PASSWORD[5:]}@127.0.0.1:1/app", "PostgreSQL"),
    ("mysql bad port", f"mysql://app:{PASSWORD}@127.0.0.1:nope/app", "port that is not a number"),
    ("mysql slash in password", f"mysql://app:{PASSWORD[:5]}/{PASSWORD[5:]}@127.0.0.1:1/app", "MySQL"),
]

#: As --postgres / --mysql DSNs (the dialect is given, the text is still wrong).
BAD_DSNS = [
    ("postgres", f"postgress://app:{PASSWORD}@127.0.0.1:1/app", "postgress://...@127.0.0.1:1/app cannot be parsed"),
    ("postgres", f"postgresql://app:{PASSWORD}%zz@127.0.0.1:1/app", "invalid percent-encoded token"),
    ("postgres", f"host=127.0.0.1 port=1 dbname=app password='{PASSWORD}", "unterminated quoted string"),
    ("postgres", f"host=127.0.0.1 port=1 dbname=app user=app password={PASSWORD}", "Connection refused"),
    ("mysql", f"postgres://app:{PASSWORD}@127.0.0.1:1/app", "starts with mysql://"),
    ("mysql", f"mysql://app:{PASSWORD}@127.0.0.1:1/app", "cannot connect to MySQL"),
]


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for piece in _fragments(PASSWORD):
            assert piece not in text, (piece, text)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SERDE_KIT_DB", "PGPASSWORD", "MYSQL_PWD", "PGHOST", "PGPORT"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(("label", "url", "says"), BAD_URLS, ids=[c[0] for c in BAD_URLS])
def test_a_bad_url_never_shows_its_password(label: str, url: str, says: str) -> None:
    with pytest.raises((ConfigError, StoreError)) as caught:
        open_database(url)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message
    _assert_clean(message, repr(caught.value), *map(str, caught.value.args))


@pytest.mark.parametrize(("kind", "dsn", "says"), BAD_DSNS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_DSNS)])
def test_a_bad_dsn_never_shows_its_password(kind: str, dsn: str, says: str) -> None:
    with pytest.raises((ConfigError, StoreError)) as caught:
        open_database(**{kind: dsn})
    message = str(caught.value)
    assert says in message
    _assert_clean(message, repr(caught.value))


@pytest.mark.parametrize(("label", "url", "says"), BAD_URLS, ids=[c[0] for c in BAD_URLS])
@pytest.mark.parametrize("via", ["--db", "SERDE_KIT_DB"])
def test_the_cli_never_prints_the_password_of_a_bad_url(
    label: str, url: str, says: str, via: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if via == "--db":
        code = main(["status", "--db", url])
    else:
        monkeypatch.setenv("SERDE_KIT_DB", url)
        code = main(["status"])
    out, err = capsys.readouterr()
    assert code != 0
    assert err.startswith(("error: ConfigError: ", "error: StoreError: ")) and err.count("\n") == 1, err
    assert says in err
    if via == "SERDE_KIT_DB" and "ConfigError" in err:
        assert "SERDE_KIT_DB: " in err
    _assert_clean(out, err)


@pytest.mark.parametrize(("kind", "dsn", "says"), BAD_DSNS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_DSNS)])
def test_the_cli_never_prints_the_password_of_a_bad_dsn(
    kind: str, dsn: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["inspect", f"--{kind}", dsn])
    out, err = capsys.readouterr()
    assert code != 0 and says in err
    _assert_clean(out, err)


@pytest.mark.mysql
def test_a_refused_mysql_login_never_shows_the_password(mysql_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    user = f"app_{uuid.uuid4().hex[:8]}"
    with mysql_server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'the-right-one'")
    try:
        url = f"mysql://{user}:{PASSWORD}@127.0.0.1:{mysql_server.port}/mysql"
        with pytest.raises(StoreError) as caught:
            open_database(url)
        assert "Access denied" in str(caught.value)
        _assert_clean(str(caught.value), repr(caught.value))
        assert main(["status", "--db", url]) != 0
        out, err = capsys.readouterr()
        assert "Access denied" in err
        _assert_clean(out, err)
    finally:
        with mysql_server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"DROP USER '{user}'@'%'")


@pytest.mark.postgres
def test_a_refused_postgres_login_never_shows_the_password(
    postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # The test server trusts every local login; a role that may not log in is refused whatever the password.
    import psycopg

    role = f"nologin_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} NOLOGIN")
    try:
        url = f"postgresql://{role}:{PASSWORD}@127.0.0.1:{postgres_server.port}/postgres"
        with pytest.raises(StoreError) as caught:
            open_database(url)
        assert "not permitted to log in" in str(caught.value)
        _assert_clean(str(caught.value), repr(caught.value))
        assert main(["status", "--db", url]) != 0
        out, err = capsys.readouterr()
        _assert_clean(out, err)
    finally:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")
