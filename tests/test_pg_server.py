"""The PostgreSQL test server starts, serves queries and hands out fresh databases."""

from __future__ import annotations

import psycopg
import pytest


@pytest.mark.postgres
def test_server_runs_and_creates_databases(postgres_server):
    with psycopg.connect(postgres_server.dsn) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()[0]
        assert int(version) >= 120000
        assert conn.execute("SHOW fsync").fetchone()[0] == "off"
    a = postgres_server.new_database("alpha")
    b = postgres_server.new_database("alpha")
    assert a != b
    with psycopg.connect(a, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (1)")
    with psycopg.connect(b) as conn:
        exists = conn.execute("SELECT to_regclass('public.t')").fetchone()[0]
        assert exists is None
    assert postgres_server.socket_dir.is_dir()
