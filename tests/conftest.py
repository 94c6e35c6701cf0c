"""Suite-wide fixtures: the private PostgreSQL and MariaDB servers (tests/support/pg_server.py, mysql_server.py).

Tests that use them are marked ``@pytest.mark.postgres`` / ``@pytest.mark.mysql``.
Each server starts once per session, on first use; if it cannot start the
fixture fails with the server's log (it never skips).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.mysql_server import MysqlServer, MysqlStartError
from tests.support.pg_server import PostgresServer, PostgresStartError


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL server: ``.dsn`` and ``.new_database(prefix) -> dsn``."""
    server = PostgresServer()
    try:
        server.start()
    except PostgresStartError as e:
        pytest.fail(f"could not start the PostgreSQL test server:\n{e}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_db(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> str:
    """DSN of a fresh, empty database named after the test."""
    return postgres_server.new_database(request.node.name)


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[MysqlServer]:
    """A running MariaDB server: ``.new_database(prefix, template=None) -> dsn``, ``.connect()``."""
    server = MysqlServer()
    try:
        server.start()
    except MysqlStartError as e:
        pytest.fail(f"could not start the MariaDB test server:\n{e}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mysql_db(mysql_server: MysqlServer, request: pytest.FixtureRequest) -> str:
    """DSN of a fresh, empty MariaDB database named after the test."""
    return mysql_server.new_database(request.node.name)
