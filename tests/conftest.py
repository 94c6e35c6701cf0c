"""Suite-wide fixtures: the private PostgreSQL server (see tests/pg_server.py).

Tests that use it are marked ``@pytest.mark.postgres``. The server starts once
per session, on first use; if it cannot start the fixture fails with the
initdb/pg_ctl log (it never skips).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Import by directory so this works whether or not tests/ is a package.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_server import PostgresServer, PostgresStartError  # noqa: E402


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
