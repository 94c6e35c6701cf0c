"""No traceback frame of a failed database open holds the DSN or its password.

Error reporters (sentry-sdk, loggers that capture locals) record the local
variables of every frame in an exception's traceback, and of the exceptions
chained to it.  Each case here opens a database with a DSN that holds a known
password and fails -- a refused password, a port nothing listens on, a DSN
that does not parse, a reconnect after the password changed -- through
``open_database`` (URL and keyword forms), the dialect's constructor and
``reconnect``, on the real servers the fixtures start.  Then it walks every
frame below the test's own (the test holds the DSN it passed), recursively into
containers, strings, exception arguments and object attributes, and asserts
that no piece of the password (6+ characters) is there.  The walker's own
sanity: the same failure through the unwrapped function does show the password.
"""

from __future__ import annotations

import types
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest

from serde_kit import Serializer
from serde_kit._secrets import scrubs_frames
from serde_kit.errors import ConfigError, SerdeError, StoreError
from serde_kit.tools.db import open_database
from serde_kit.tools.db.mysql import MysqlDatabase
from serde_kit.tools.db.postgres import PostgresDatabase
from serde_kit.tools.db.sqlite import SqliteDatabase
from tests.support.rotate_fixtures import mysql_saver, postgres_saver

PASSWORD = "Qv7XkZp2Lw9RtMb4"
OTHER_PASSWORD = "Hn3JcYs8Fd6GuEa1"
_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def _pieces(secret: str) -> list[str]:
    n = len(secret)
    return sorted({secret[i:j] for i in range(n) for j in range(i + 6, n + 1)})


def _texts(value: Any, seen: set[int], depth: int = 0) -> Iterator[str]:
    """Every string reachable from ``value``: containers, bytes, exception args, reprs and attributes."""
    if id(value) in seen or depth > 8 or isinstance(value, _SKIP) or value is None:
        return
    seen.add(id(value))
    if isinstance(value, str):
        yield value
    elif isinstance(value, (bytes, bytearray, memoryview)):
        yield bytes(value).decode("latin-1")
    elif isinstance(value, dict):
        for k, v in list(value.items()):
            yield from _texts(k, seen, depth + 1)
            yield from _texts(v, seen, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value):
            yield from _texts(item, seen, depth + 1)
    else:
        try:
            yield repr(value)
        except Exception:
            pass
        if isinstance(value, BaseException):
            yield str(value)
            yield from _texts(value.args, seen, depth + 1)
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            yield from _texts(attrs, seen, depth + 1)
        for slot in getattr(type(value), "__slots__", ()):
            yield from _texts(getattr(value, slot, None), seen, depth + 1)


def _frames(err: BaseException, skip: Callable[[types.FrameType], bool] | None = None) -> Iterator[types.FrameType]:
    """The frames of ``err``'s traceback and of every exception chained to it, but ``skip``'s (this module's)."""
    if skip is None:
        skip = _in_this_module
    pending: list[BaseException | None] = [err]
    done: set[int] = set()
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in done:
            continue
        done.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            if not skip(tb.tb_frame):
                yield tb.tb_frame
            tb = tb.tb_next
        pending += [exc.__context__, exc.__cause__, *getattr(exc, "exceptions", ())]


def _in_this_module(frame: types.FrameType) -> bool:
    return frame.f_code.co_filename == __file__


def leaked(err: BaseException, skip: Callable[[types.FrameType], bool] | None = None) -> list[str]:
    """Where a piece of PASSWORD is reachable from ``err``'s frames (and the error itself)."""
    secret = PASSWORD
    found = []
    seen: set[int] = set()
    frames = list(_frames(err, skip))
    for frame in frames:
        for text in _texts(dict(frame.f_locals), seen):
            if any(p in text for p in _pieces(secret)):
                found.append(f"{frame.f_code.co_qualname}: {text[:80]!r}")
    for text in _texts(err, set()):
        if any(p in text for p in _pieces(secret)):
            found.append(f"the error itself: {text[:80]!r}")
    return found


def assert_no_secret_frames(call: Callable[[], Any], expected: type[BaseException], says: str) -> BaseException:
    with pytest.raises(expected) as caught:
        call()
    err = caught.value
    assert says in str(err), str(err)
    assert list(_frames(err)), "the error has no frame below the test: nothing was checked"
    assert leaked(err) == []
    return err


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port bound but never listening: a connection to it is refused, and no other test can take it."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SERDE_KIT_DB", "PGPASSWORD", "MYSQL_PWD", "PGHOST", "PGPORT", "PGPASSFILE"):
        monkeypatch.delenv(var, raising=False)


# -- PostgreSQL ----------------------------------------------------------------------------------------


@pytest.fixture
def pg_password_role(postgres_server: Any, postgres_db: str) -> Iterator[tuple[str, str]]:
    """``(role, database DSN without user)``: a role that logs in with PASSWORD (scram) over TCP.

    The test server trusts every login; one pg_hba line ahead of the others asks
    this role for its password.  Reloading is asynchronous: the fixture waits
    until a new session sees the reload (pg_conf_load_time), by attempts, not time.
    """
    role = f"pw_{uuid.uuid4().hex[:8]}"
    with postgres_saver(postgres_db, Serializer()):
        pass  # the saver's tables, so a good login opens
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
        before = conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
    original = hba.read_text()
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{original}")
    try:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            assert conn.execute("SELECT pg_reload_conf()").fetchone()[0]
        for _attempt in range(10_000):
            with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
                if conn.execute("SELECT pg_conf_load_time()").fetchone()[0] > before:
                    break
        else:
            pytest.fail("the server did not reload pg_hba.conf")
        yield role, postgres_db.rsplit("/", 1)[1]
    finally:
        hba.write_text(original)
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")


@pytest.mark.postgres
@pytest.mark.parametrize("via", ["url", "postgres=", "PostgresDatabase"])
def test_a_refused_postgres_password_leaves_no_frame_with_it(
    postgres_server: Any, pg_password_role: tuple[str, str], via: str
) -> None:
    role, db = pg_password_role
    right = f"postgresql://{role}:{PASSWORD}@127.0.0.1:{postgres_server.port}/{db}"
    open_database(right).close()  # the password is asked for, and this one is right
    wrong = f"postgresql://{role}:{PASSWORD}X@127.0.0.1:{postgres_server.port}/{db}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {role} PASSWORD '{OTHER_PASSWORD}'")
    opens = {
        "url": lambda: open_database(wrong),
        "postgres=": lambda: open_database(postgres=wrong),
        "PostgresDatabase": lambda: PostgresDatabase(wrong),
    }
    assert_no_secret_frames(opens[via], StoreError, "password authentication failed")
    assert_no_secret_frames(lambda: open_database(right), StoreError, "password authentication failed")


@pytest.mark.postgres
def test_a_failed_postgres_reconnect_leaves_no_frame_with_the_password(
    postgres_server: Any, pg_password_role: tuple[str, str]
) -> None:
    role, db = pg_password_role
    db_ = open_database(f"postgresql://{role}:{PASSWORD}@127.0.0.1:{postgres_server.port}/{db}")
    try:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {role} PASSWORD '{OTHER_PASSWORD}'")
        err = assert_no_secret_frames(db_.reconnect, StoreError, "password authentication failed")
        assert isinstance(err, StoreError) and err.transient
    finally:
        db_.close()


POSTGRES_UNPARSABLE = [
    ("raw percent", f"postgresql://app:{PASSWORD}%zz@127.0.0.1:1/app", "invalid percent-encoded token"),
    ("unterminated quote", f"host=127.0.0.1 port=1 dbname=app password='{PASSWORD}", "unterminated quoted string"),
    ("lone surrogate", f"postgresql://app:{PASSWORD}\ud800@127.0.0.1:1/app", "not text"),
    ("typo scheme", f"postgress://app:{PASSWORD}@127.0.0.1:1/app", "cannot be parsed"),
]


@pytest.mark.parametrize(("label", "dsn", "says"), POSTGRES_UNPARSABLE, ids=[c[0] for c in POSTGRES_UNPARSABLE])
def test_an_unparsable_postgres_dsn_leaves_no_frame_with_its_password(label: str, dsn: str, says: str) -> None:
    assert_no_secret_frames(lambda: open_database(postgres=dsn), ConfigError, says)
    assert_no_secret_frames(lambda: PostgresDatabase(dsn), ConfigError, says)


@pytest.mark.postgres
def test_an_unreachable_postgres_port_leaves_no_frame_with_the_password(refused_port: int) -> None:
    port = refused_port
    for dsn in (
        f"postgresql://app:{PASSWORD}@127.0.0.1:{port}/app",
        f"host=127.0.0.1 port={port} dbname=app user=app password={PASSWORD}",
    ):
        assert_no_secret_frames(partial(open_database, postgres=dsn), StoreError, "Connection refused")
    url = f"postgresql://app:{PASSWORD}@127.0.0.1:{port}/app"
    assert_no_secret_frames(lambda: open_database(url), StoreError, "Connection refused")


# -- MariaDB -------------------------------------------------------------------------------------------


@pytest.fixture
def mysql_password_user(mysql_server: Any, mysql_db: str) -> Iterator[tuple[str, str]]:
    """``(user, database)``: a MariaDB user whose password is PASSWORD, with the saver's tables."""
    with mysql_saver(mysql_db, Serializer()):
        pass
    user = f"pw_{uuid.uuid4().hex[:8]}"
    database = mysql_db.rsplit("/", 1)[1]
    with mysql_server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}'")
        cur.execute(f"GRANT SELECT ON `{database}`.* TO '{user}'@'%'")
    try:
        yield user, database
    finally:
        with mysql_server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"DROP USER '{user}'@'%'")


@pytest.mark.mysql
@pytest.mark.parametrize("via", ["url", "mysql=", "MysqlDatabase"])
def test_a_refused_mysql_password_leaves_no_frame_with_it(
    mysql_server: Any, mysql_password_user: tuple[str, str], via: str
) -> None:
    user, database = mysql_password_user
    right = f"mysql://{user}:{PASSWORD}@127.0.0.1:{mysql_server.port}/{database}"
    open_database(right).close()
    wrong = f"mysql://{user}:{PASSWORD}X@127.0.0.1:{mysql_server.port}/{database}"
    opens = {
        "url": lambda: open_database(wrong),
        "mysql=": lambda: open_database(mysql=wrong),
        "MysqlDatabase": lambda: MysqlDatabase(wrong),
    }
    assert_no_secret_frames(opens[via], StoreError, "Access denied")


@pytest.mark.mysql
def test_a_failed_mysql_reconnect_leaves_no_frame_with_the_password(
    mysql_server: Any, mysql_password_user: tuple[str, str]
) -> None:
    user, database = mysql_password_user
    db = open_database(f"mysql://{user}:{PASSWORD}@127.0.0.1:{mysql_server.port}/{database}")
    try:
        with mysql_server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"ALTER USER '{user}'@'%' IDENTIFIED BY '{OTHER_PASSWORD}'")
        err = assert_no_secret_frames(db.reconnect, StoreError, "Access denied")
        assert isinstance(err, StoreError) and err.transient
    finally:
        db.close()


MYSQL_UNPARSABLE = [
    ("port not a number", f"mysql://app:{PASSWORD}@127.0.0.1:nope/app", "port that is not a number"),
    ("no database", f"mysql://app:{PASSWORD}@127.0.0.1:1/", "names no database"),
    ("lone surrogate", f"mysql://app\udc80:{PASSWORD}@127.0.0.1:1/app", "not text"),
    ("not Latin-1", f"mysql://app:{PASSWORD}\u20ac@127.0.0.1:1/app", "Latin-1"),
    ("wrong scheme", f"postgres://app:{PASSWORD}@127.0.0.1:1/app", "starts with mysql://"),
]


@pytest.mark.parametrize(("label", "dsn", "says"), MYSQL_UNPARSABLE, ids=[c[0] for c in MYSQL_UNPARSABLE])
def test_an_unparsable_mysql_dsn_leaves_no_frame_with_its_password(label: str, dsn: str, says: str) -> None:
    assert_no_secret_frames(lambda: open_database(mysql=dsn), ConfigError, says)
    assert_no_secret_frames(lambda: MysqlDatabase(dsn), ConfigError, says)


@pytest.mark.mysql
def test_an_unreachable_mysql_port_leaves_no_frame_with_the_password(refused_port: int) -> None:
    dsn = f"mysql://app:{PASSWORD}@127.0.0.1:{refused_port}/app"
    assert_no_secret_frames(lambda: open_database(dsn), StoreError, "Can't connect to MySQL")
    assert_no_secret_frames(lambda: MysqlDatabase(dsn), StoreError, "Can't connect to MySQL")


# -- SQLite --------------------------------------------------------------------------------------------


def test_a_garbage_sqlite_file_leaves_no_frame_with_its_content(tmp_path: Path) -> None:
    # The file given by mistake is a key file: its text must not end up in a frame either.
    path = tmp_path / "keys.txt"
    path.write_text(f"k1:{PASSWORD}{PASSWORD}\n" * 200)
    for call in (lambda: open_database(f"sqlite:///{path}"), lambda: SqliteDatabase(path)):
        assert_no_secret_frames(call, StoreError, "as a SQLite database")


# -- the walker and the wrapper themselves ---------------------------------------------------------------


@pytest.mark.postgres
def test_the_walker_finds_the_password_where_nothing_scrubs_the_frames(refused_port: int) -> None:
    dsn = f"postgresql://app:{PASSWORD}@127.0.0.1:{refused_port}/app"
    unwrapped = PostgresDatabase.__init__.__wrapped__  # type: ignore[attr-defined]
    with pytest.raises(StoreError) as caught:
        unwrapped(object.__new__(PostgresDatabase), dsn)
    assert any(place.startswith("PostgresDatabase.__init__") for place in leaked(caught.value))


def test_an_exception_of_any_type_keeps_its_type_and_loses_its_locals() -> None:
    def fetch_key(secret: str) -> None:
        held = {"key": secret}
        raise ConnectionError(f"KMS unreachable ({len(held)} request)")

    @scrubs_frames
    def load(secret: str) -> None:
        fetch_key(secret)

    def this_test(frame: types.FrameType) -> bool:
        return frame.f_code.co_name == "test_an_exception_of_any_type_keeps_its_type_and_loses_its_locals"

    with pytest.raises(ConnectionError) as caught:
        load(PASSWORD)
    # The traceback still says where it came from; only the variables are gone.
    assert {"load", "fetch_key"} <= {f.f_code.co_name for f in _frames(caught.value, this_test)}
    assert leaked(caught.value, this_test) == []
    # Unwrapped, the same frames hold it (the check above can fail).
    with pytest.raises(ConnectionError) as caught:
        load.__wrapped__(PASSWORD)  # type: ignore[attr-defined]
    assert leaked(caught.value, this_test)
    assert not isinstance(caught.value, SerdeError)
