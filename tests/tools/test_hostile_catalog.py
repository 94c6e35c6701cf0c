"""Hostile catalogs: names the application role put in the database never become SQL.

The application role owns the saver's tables, so it chooses their column names,
indexes and schema.  An operator (often the database superuser) then runs the
tools on them.  Every command here runs on SQLite, PostgreSQL and MariaDB
databases whose key columns were changed by the table owner -- a key column
whose name holds quotes, backticks, semicolons, ``||`` or non-ASCII text --
and either works on the saver's known key columns or refuses with one
``StoreError`` line; nothing the names spell is ever run.

The issue's exploit is reproduced on PostgreSQL and MariaDB: a non-superuser
application role that owns the tables adds a key column whose name calls a
function of its own; a superuser runs every command; the function never ran
(its side effects are absent) and every role's privileges are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from serde_kit.cli import main
from serde_kit.tools.db import open_database
from tests.support.rotate_fixtures import K_ROTATE, LEGACY_TEXT, plain_rows

#: Key column names an application role could add (each one is SQL in at least one dialect's quoting).
HOSTILE = [
    'x" || (SELECT 1) || "x',
    "x` || 1 || `x",
    'k"; DROP TABLE checkpoints; --',
    "a;b||c",
    "ünï‘cødé’ ☃ \"'`",
]

#: Every command, as the operator runs it (``--db URL`` is appended).
COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["verify"],
    ["rotate", "--encrypt-plaintext", "--upgrade-legacy"],
    ["retire", "k1"],
    ["inspect"],
    ["inspect", "--json"],
    ["inspect", "--thread", "old-0"],
    ["inspect", "--thread", "old-0", "--json"],
    ["allowlist", "scan"],
    ["audit"],
    ["rotate", "--apply", "--encrypt-plaintext", "--upgrade-legacy"],
]

REFUSAL = "serde-kit builds SQL only from the layouts it knows"


@pytest.fixture(autouse=True)
def keyring_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    monkeypatch.setenv("COLUMNS", "200")


def run_all(capsys: pytest.CaptureFixture[str], url: str, *, refused: bool) -> None:
    """Every command on ``url``: each one runs to an exit code; refused ones say why in one line."""
    for argv in COMMANDS:
        code = main([*argv, "--db", url])
        out, err = capsys.readouterr()
        if refused and "--json" in argv:
            # With --json the refusal is a JSON object on stdout (cannot read: exit 3).
            assert code == 3 and err == "", (argv, code, err)
            error = json.loads(out)["error"]
            assert error["type"] == "StoreError" and REFUSAL in error["message"], (argv, out)
        elif refused:
            assert code != 0, (argv, out)
            if "--json" in argv:  # the error is the JSON document on stdout
                assert REFUSAL in out and '"StoreError"' in out, (argv, out)
            else:
                assert REFUSAL in err, (argv, err)
                assert err.count("\n") == 1 and err.startswith("error: StoreError: "), (argv, err)
        else:
            # 0, or 1 where the data calls for it (audit: plaintext rows; retire: k1 still in use)
            assert code in (0, 1), (argv, code, err)
            assert "Traceback" not in err and REFUSAL not in err, (argv, err)


def _values(url: str) -> dict[Any, Any]:
    """Every stored row decrypted (the key without the hostile column's value)."""
    with open_database(url) as store:
        return plain_rows(store)


# -- SQLite ----------------------------------------------------------------------------

_WRITES_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"
_KNOWN = "thread_id, checkpoint_ns, checkpoint_id, task_id, idx"


def _sqlite_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_hostile(path: str, name: str, *, unique: bool, without_rowid: bool = False) -> None:
    """Rebuild ``writes`` with ``name`` added to its primary key (as the file's owner may)."""
    col = _sqlite_name(name)
    with sqlite3.connect(path) as conn:
        conn.executescript(
            f"""
            CREATE TABLE writes_new (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
                checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, task_path TEXT NOT NULL DEFAULT '',
                idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB,
                {col} TEXT NOT NULL DEFAULT 'v',
                PRIMARY KEY ({_KNOWN}, {col})){" WITHOUT ROWID" if without_rowid else ""};
            INSERT INTO writes_new ({_WRITES_COLUMNS}) SELECT {_WRITES_COLUMNS} FROM writes;
            DROP TABLE writes;
            ALTER TABLE writes_new RENAME TO writes;
            """
        )
        if unique:
            conn.execute(f"CREATE UNIQUE INDEX {_sqlite_name(name + ' idx')} ON writes ({_KNOWN})")
    conn.close()


@pytest.mark.parametrize("without_rowid", [False, True], ids=["rowid", "without-rowid"])
@pytest.mark.parametrize("name", HOSTILE)
def test_sqlite_hostile_key_column_with_a_unique_index_works_on_the_known_columns(
    graph_sqlite_db: str, name: str, without_rowid: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    _sqlite_hostile(graph_sqlite_db, name, unique=True, without_rowid=without_rowid)
    url = f"sqlite:///{graph_sqlite_db}"
    before = _values(url)
    run_all(capsys, url, refused=False)
    # rotate --apply changed every row's ciphertext and nothing else: each row decrypts to what it held
    assert _values(url) == before
    with sqlite3.connect(graph_sqlite_db) as conn:
        assert {r[0] for r in conn.execute(f"SELECT {_sqlite_name(name)} FROM writes")} == {"v"}
        assert conn.execute("SELECT count(*) FROM writes").fetchone()[0] == len([k for k in before if k[0] == "writes"])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables >= {"checkpoints", "writes"}
    conn.close()


def test_sqlite_hostile_key_column_without_a_unique_index_is_refused(
    graph_sqlite_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _sqlite_hostile(graph_sqlite_db, HOSTILE[0], unique=False)
    digest = hashlib.sha256(Path(graph_sqlite_db).read_bytes()).hexdigest()
    run_all(capsys, f"sqlite:///{graph_sqlite_db}", refused=True)
    assert hashlib.sha256(Path(graph_sqlite_db).read_bytes()).hexdigest() == digest


def test_sqlite_column_named_rowid_is_not_taken_for_the_rowid(
    graph_sqlite_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A declared column called "rowid" hides the rowid under that name: the walk must not order by it.
    _sqlite_hostile(graph_sqlite_db, "rowid", unique=True)
    with sqlite3.connect(graph_sqlite_db) as conn:
        conn.execute("UPDATE writes SET rowid = 'same'")  # not unique, not an order
    conn.close()
    url = f"sqlite:///{graph_sqlite_db}"
    before = _values(url)
    with open_database(url) as store:
        assert store.table("writes").locator == ("_rowid_",)
    run_all(capsys, url, refused=False)
    assert _values(url) == before


# -- PostgreSQL --------------------------------------------------------------------------


#: One digest of every row of checkpoint_writes (all columns).
_PG_DIGEST = "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM checkpoint_writes t"


def _pg_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _pg_hostile(conn: Any, name: str, *, unique: bool, table: str = "checkpoint_writes") -> None:
    known = {
        "checkpoint_writes": "thread_id, checkpoint_ns, checkpoint_id, task_id, idx",
        "checkpoint_blobs": "thread_id, checkpoint_ns, channel, version",
    }[table]
    col = _pg_ident(name)
    conn.execute(f"ALTER TABLE {table} ADD COLUMN {col} text NOT NULL DEFAULT 'v'")
    if unique:
        conn.execute(f"CREATE UNIQUE INDEX ON {table} ({known})")
    conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD PRIMARY KEY ({known}, {col})")


@pytest.mark.postgres
@pytest.mark.parametrize("name", HOSTILE)
def test_postgres_hostile_key_column_with_a_unique_index_works_on_the_known_columns(
    graph_postgres_db: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs"):
            _pg_hostile(conn, name, unique=True, table=table)
    before = _values(graph_postgres_db)
    run_all(capsys, graph_postgres_db, refused=False)
    assert _values(graph_postgres_db) == before


@pytest.mark.postgres
def test_postgres_hostile_key_column_without_a_unique_index_is_refused(
    graph_postgres_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        _pg_hostile(conn, HOSTILE[0], unique=False)
        before = conn.execute(_PG_DIGEST).fetchone()
    run_all(capsys, graph_postgres_db, refused=True)
    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        after = conn.execute(_PG_DIGEST).fetchone()
    assert after == before


@pytest.mark.postgres
def test_postgres_tables_in_a_schema_with_a_hostile_name(
    graph_postgres_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    schema = 'we"ird; DROP TABLE x; || ☃'
    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        dbname = conn.info.dbname
        conn.execute(f"CREATE SCHEMA {_pg_ident(schema)}")
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
            conn.execute(f"ALTER TABLE public.{table} SET SCHEMA {_pg_ident(schema)}")
        conn.execute(f"ALTER DATABASE {_pg_ident(dbname)} SET search_path = {_pg_ident(schema)}")
    before = _values(graph_postgres_db)
    with open_database(graph_postgres_db) as store:
        assert store.ref("checkpoint_blobs") == f"{_pg_ident(schema)}.\"checkpoint_blobs\""
        # the session's search path is pinned once the tables are found
        assert store.query("SHOW search_path") == [("pg_catalog, pg_temp",)]
    run_all(capsys, graph_postgres_db, refused=False)
    assert _values(graph_postgres_db) == before


def _pg_privileges(conn: Any) -> list[tuple[Any, ...]]:
    roles = conn.execute(
        "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, "
        "rolbypassrls, rolconfig FROM pg_roles ORDER BY rolname"
    ).fetchall()
    members = conn.execute(
        "SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members ORDER BY 1, 2"
    ).fetchall()
    return [*roles, *members]


@pytest.mark.postgres
@pytest.mark.parametrize("unique", [True, False], ids=["kept-unique-index", "no-unique-index"])
def test_postgres_app_role_cannot_escalate_through_a_key_column_name(
    graph_postgres_db: str, unique: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's exploit: the owner adds ``x" || (SELECT public.evil()) || "x``; a superuser runs every command."""
    import psycopg

    app = f"app_{uuid.uuid4().hex[:8]}"
    evil_column = 'x" || (SELECT public.evil()) || "x'
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {app} LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB")
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {app}")
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
            admin.execute(f"ALTER TABLE public.{table} OWNER TO {app}")
        app_dsn = graph_postgres_db.replace("postgresql://postgres@", f"postgresql://{app}@")
    with psycopg.connect(app_dsn, autocommit=True) as owner:
        assert not owner.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        owner.execute("CREATE TABLE public.evil_log (who text, at timestamptz DEFAULT now())")
        # Runs as whoever calls it: leaves read-only mode, then tries to make the app role a superuser.
        owner.execute(
            f"""
            CREATE FUNCTION public.evil() RETURNS text LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM set_config('default_transaction_read_only', 'off', false);
                BEGIN
                    ALTER ROLE {app} SUPERUSER;
                EXCEPTION WHEN OTHERS THEN NULL;
                END;
                BEGIN
                    INSERT INTO public.evil_log (who) VALUES (current_user);
                EXCEPTION WHEN OTHERS THEN NULL;
                END;
                RETURN 'x';
            END $$
            """
        )
        owner.execute("ALTER TABLE checkpoint_writes ADD COLUMN x text NOT NULL DEFAULT 'x'")
        _pg_hostile(owner, evil_column, unique=unique)
        owner.execute("ALTER TABLE checkpoint_blobs ADD COLUMN x text NOT NULL DEFAULT 'x'")
        _pg_hostile(owner, evil_column, unique=unique, table="checkpoint_blobs")
        # The saver keeps working for the application: its upserts still find their unique index.
        assert owner.execute("SELECT public.evil()").fetchone() == ("x",)  # the function works (as app: no escalation)
        owner.execute("DELETE FROM public.evil_log")
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        before = _pg_privileges(admin)
    values = _values(graph_postgres_db) if unique else None

    run_all(capsys, graph_postgres_db, refused=not unique)

    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        assert admin.execute("SELECT count(*) FROM public.evil_log").fetchone() == (0,)
        assert _pg_privileges(admin) == before
        assert admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (app,)).fetchone() == (False,)
    if values is not None:
        assert _values(graph_postgres_db) == values
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations", "evil_log"):
            admin.execute(f"DROP TABLE public.{table}")
        admin.execute("DROP FUNCTION public.evil()")
        admin.execute(f"REVOKE CREATE ON SCHEMA public FROM {app}")
        admin.execute(f"DROP ROLE {app}")


@pytest.mark.postgres
def test_postgres_owner_trigger_runs_with_the_owners_privileges_not_the_superusers(
    graph_postgres_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rotate --apply`` by a superuser updates as the tables' owner: the owner's trigger cannot escalate."""
    import psycopg

    app = f"app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {app} LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB")
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {app}")
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
            admin.execute(f"ALTER TABLE public.{table} OWNER TO {app}")
        app_dsn = graph_postgres_db.replace("postgresql://postgres@", f"postgresql://{app}@")
    with psycopg.connect(app_dsn, autocommit=True) as owner:
        owner.execute("CREATE TABLE public.evil_log (who text)")
        owner.execute(
            f"""
            CREATE FUNCTION public.evil_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                BEGIN
                    ALTER ROLE {app} SUPERUSER;
                EXCEPTION WHEN OTHERS THEN NULL;
                END;
                INSERT INTO public.evil_log (who) VALUES (current_user);
                RETURN NEW;
            END $$
            """
        )
        for table in ("checkpoint_blobs", "checkpoint_writes"):
            owner.execute(
                f"CREATE TRIGGER evil BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION public.evil_trigger()"
            )
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        before = _pg_privileges(admin)
    values = _values(graph_postgres_db)

    assert main(["rotate", "--apply", "--encrypt-plaintext", "--upgrade-legacy", "--db", graph_postgres_db]) == 0
    capsys.readouterr()

    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        who = admin.execute("SELECT who, count(*) FROM public.evil_log GROUP BY who").fetchall()
        assert [w for w, _n in who] == [app]  # the trigger ran, as the owner only
        assert _pg_privileges(admin) == before
    assert _values(graph_postgres_db) == values
    with psycopg.connect(graph_postgres_db, autocommit=True) as admin:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations", "evil_log"):
            admin.execute(f"DROP TABLE public.{table}")
        admin.execute("DROP FUNCTION public.evil_trigger()")
        admin.execute(f"REVOKE CREATE ON SCHEMA public FROM {app}")
        admin.execute(f"DROP ROLE {app}")


# -- MariaDB -------------------------------------------------------------------------------


def _my_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _mysql_hostile(cur: Any, name: str, *, unique: bool, table: str = "checkpoint_writes") -> None:
    known = {
        "checkpoint_writes": "thread_id, checkpoint_ns_hash, checkpoint_id, task_id, idx",
        "checkpoint_blobs": "thread_id, checkpoint_ns_hash, channel, version",
    }[table]
    col = _my_ident(name)
    unique_sql = f"ADD UNIQUE KEY saver_key ({known}), " if unique else ""
    cur.execute(
        f"ALTER TABLE {table} ADD COLUMN {col} VARCHAR(8) NOT NULL DEFAULT 'v', {unique_sql}"
        f"DROP PRIMARY KEY, ADD PRIMARY KEY ({known}, {col})"
    )


def _mysql_db(dsn: str) -> str:
    return dsn.rsplit("/", 1)[-1]


@pytest.mark.mysql
@pytest.mark.parametrize("name", HOSTILE)
def test_mysql_hostile_key_column_with_a_unique_index_works_on_the_known_columns(
    graph_mysql_db: str, mysql_server: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with mysql_server.connect(_mysql_db(graph_mysql_db)) as conn, conn.cursor() as cur:
        for table in ("checkpoint_writes", "checkpoint_blobs"):
            _mysql_hostile(cur, name, unique=True, table=table)
    before = _values(graph_mysql_db)
    run_all(capsys, graph_mysql_db, refused=False)
    assert _values(graph_mysql_db) == before


@pytest.mark.mysql
def test_mysql_hostile_key_column_without_a_unique_index_is_refused(
    graph_mysql_db: str, mysql_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with mysql_server.connect(_mysql_db(graph_mysql_db)) as conn, conn.cursor() as cur:
        _mysql_hostile(cur, HOSTILE[1], unique=False)
        cur.execute("CHECKSUM TABLE checkpoint_writes, checkpoint_blobs")
        before = cur.fetchall()
    run_all(capsys, graph_mysql_db, refused=True)
    with mysql_server.connect(_mysql_db(graph_mysql_db)) as conn, conn.cursor() as cur:
        cur.execute("CHECKSUM TABLE checkpoint_writes, checkpoint_blobs")
        assert cur.fetchall() == before


def _mysql_privileges(cur: Any) -> list[tuple[Any, ...]]:
    cur.execute("SELECT * FROM mysql.global_priv ORDER BY host, user")
    users = list(cur.fetchall())
    cur.execute("SELECT * FROM mysql.db ORDER BY host, db, user")
    return users + list(cur.fetchall())


@pytest.mark.mysql
@pytest.mark.parametrize("unique", [True, False], ids=["kept-unique-index", "no-unique-index"])
def test_mysql_app_user_cannot_run_code_as_root_through_a_key_column_name(
    graph_mysql_db: str, mysql_server: Any, unique: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """MariaDB's form of the exploit: a column named to call the owner's ``evil()`` from root's queries."""
    import pymysql

    db = _mysql_db(graph_mysql_db)
    app = f"app_{uuid.uuid4().hex[:8]}"
    # Unquoted in a backtick-quoted list this name reads `thread_id` + evil() + `thread_id`.
    evil_column = "thread_id` + evil() + `thread_id"
    with mysql_server.connect(db) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE USER '{app}'@'%' IDENTIFIED BY 'app-pw'")
        cur.execute(f"GRANT ALL PRIVILEGES ON `{db}`.* TO '{app}'@'%'")
    owner = pymysql.connect(
        host="127.0.0.1", port=mysql_server.port, user=app, password="app-pw", database=db, autocommit=True
    )
    with owner, owner.cursor() as cur:
        cur.execute("CREATE TABLE evil_log (who VARCHAR(200))")
        # SQL SECURITY INVOKER: runs with the privileges of whoever calls it, and records who that was.
        cur.execute(
            "CREATE FUNCTION evil() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER "
            "BEGIN INSERT INTO evil_log VALUES (CURRENT_USER()); RETURN 0; END"
        )
        _mysql_hostile(cur, evil_column, unique=unique)
        _mysql_hostile(cur, evil_column, unique=unique, table="checkpoint_blobs")
        cur.execute("DELETE FROM evil_log")
    with mysql_server.connect(db) as conn, conn.cursor() as cur:
        before = _mysql_privileges(cur)
    values = _values(graph_mysql_db) if unique else None

    run_all(capsys, graph_mysql_db, refused=not unique)

    with mysql_server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM evil_log")
        assert cur.fetchone() == (0,)
        assert _mysql_privileges(cur) == before
        cur.execute(f"DROP USER '{app}'@'%'")
    if values is not None:
        assert _values(graph_mysql_db) == values


@pytest.mark.mysql
def test_mysql_view_in_place_of_a_saver_table_is_refused_before_it_is_read(
    graph_mysql_db: str, mysql_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A view that calls the owner's function as its invoker is never selected from."""
    db = _mysql_db(graph_mysql_db)
    with mysql_server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE evil_log (who VARCHAR(200))")
        cur.execute(
            "CREATE FUNCTION evil() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER "
            "BEGIN INSERT INTO evil_log VALUES (CURRENT_USER()); RETURN 0; END"
        )
        cur.execute("RENAME TABLE checkpoint_blobs TO real_blobs")
        cur.execute(
            "CREATE SQL SECURITY INVOKER VIEW checkpoint_blobs AS "
            "SELECT thread_id, checkpoint_ns_hash, checkpoint_ns, channel, version, type, `blob` + evil() AS `blob` "
            "FROM real_blobs"
        )
    for argv in (["status"], ["rotate", "--apply", "--encrypt-plaintext"], ["inspect"], ["audit"]):
        code = main([*argv, "--db", graph_mysql_db])
        _out, err = capsys.readouterr()
        assert code != 0 and "not a base table" in err, (argv, err)
    with mysql_server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM evil_log")
        assert cur.fetchone() == (0,)


@pytest.mark.postgres
def test_postgres_view_in_place_of_a_saver_table_is_refused_before_it_is_read(
    graph_postgres_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.evil_log (who text)")
        conn.execute(
            "CREATE FUNCTION public.evil() RETURNS int LANGUAGE plpgsql AS $$ "
            "BEGIN INSERT INTO public.evil_log VALUES (current_user); RETURN 0; END $$"
        )
        conn.execute("ALTER TABLE checkpoint_blobs RENAME TO real_blobs")
        conn.execute("CREATE VIEW checkpoint_blobs AS SELECT *, public.evil() AS e FROM real_blobs")
    for argv in (["status"], ["rotate", "--apply", "--encrypt-plaintext"], ["inspect"], ["audit"]):
        code = main([*argv, "--db", graph_postgres_db])
        _out, err = capsys.readouterr()
        assert code != 0 and "not a base table" in err, (argv, err)
    with psycopg.connect(graph_postgres_db, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM public.evil_log").fetchone() == (0,)
