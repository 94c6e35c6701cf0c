"""Graph-populated databases for the tools tests (see tests/support/rotate_fixtures.py).

Each database is written once per session by running the real graph, then
copied per test: SQLite by copying the file, PostgreSQL with
``CREATE DATABASE ... TEMPLATE``, MariaDB by copying the tables.
``graph_db`` gives ``(dialect, location)`` for each of the three dialects.
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from tests.support.rotate_fixtures import DIALECTS, mysql_saver, populate, postgres_saver, sqlite_saver

THREADS_PER_GROUP = 3


@pytest.fixture(scope="session")
def graph_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "graph.db"
    populate(partial(sqlite_saver, str(path)), threads_per_group=THREADS_PER_GROUP)
    return path


@pytest.fixture
def graph_sqlite_db(graph_sqlite_template: Path, tmp_path: Path) -> str:
    """Path of a fresh copy of the graph-populated SQLite database."""
    path = tmp_path / "app.db"
    shutil.copyfile(graph_sqlite_template, path)
    return str(path)


@pytest.fixture(scope="session")
def graph_postgres_template(postgres_server) -> str:
    dsn = postgres_server.new_database("template")
    populate(partial(postgres_saver, dsn), threads_per_group=THREADS_PER_GROUP)
    return dsn


@pytest.fixture
def graph_postgres_db(postgres_server, graph_postgres_template: str, request: pytest.FixtureRequest) -> str:
    """DSN of a fresh copy of the graph-populated PostgreSQL database."""
    return postgres_server.new_database(request.node.name, template=graph_postgres_template)


@pytest.fixture(scope="session")
def graph_mysql_template(mysql_server) -> str:
    dsn = mysql_server.new_database("template")
    populate(partial(mysql_saver, dsn), threads_per_group=THREADS_PER_GROUP)
    return dsn


@pytest.fixture
def graph_mysql_db(mysql_server, graph_mysql_template: str, request: pytest.FixtureRequest) -> str:
    """DSN of a fresh copy of the graph-populated MariaDB database."""
    return mysql_server.new_database(request.node.name, template=graph_mysql_template)


@pytest.fixture(params=DIALECTS)
def graph_db(request: pytest.FixtureRequest) -> tuple[str, str]:
    """``(dialect, location)`` of a fresh graph-populated database, for each dialect."""
    return request.param, request.getfixturevalue(f"graph_{request.param}_db")
