"""The database objects (tools/db/) over real SqliteSaver, PostgresSaver and MySQL saver databases."""

from __future__ import annotations

import socket
import sqlite3
import uuid

import psycopg
import pytest

from serde_kit.crypto import EncryptedSerializer
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.errors import ConfigError, StoreError
from serde_kit.tools.db import open_database
from serde_kit.tools.db.model import Row, SealedUnder
from tests.support.rotate_fixtures import DIALECTS, K_OLD, raw_rows

SQLITE_PKS = {
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id"),
    "writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}
POSTGRES_PKS = {
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version"),
    "checkpoint_writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}


def sql_counts_sqlite(path):
    with sqlite3.connect(path) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in SQLITE_PKS}


def sql_counts_postgres(dsn):
    with psycopg.connect(dsn) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in POSTGRES_PKS}


# -- opening -----------------------------------------------------------------


def test_missing_file_is_a_config_error_and_not_created(tmp_path):
    path = tmp_path / "nope.db"
    with pytest.raises(ConfigError, match="does not exist"):
        open_database(sqlite=str(path))
    with pytest.raises(ConfigError, match="does not exist"):
        open_database(sqlite=str(path), readonly=False)
    assert not path.exists()


def test_not_a_langgraph_database_names_the_missing_tables(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE checkpoints (x)")
    with pytest.raises(ConfigError, match=r"table\(s\) writes missing"):
        open_database(sqlite=str(path))


def test_garbage_file_is_a_store_error(tmp_path):
    # A file that cannot be read as a database is "cannot read" (exit 3), not a usage error.
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="cannot read"):
        open_database(sqlite=str(path))


def test_exactly_one_location():
    with pytest.raises(ConfigError, match="exactly one"):
        open_database()
    with pytest.raises(ConfigError, match="exactly one"):
        open_database(sqlite="a.db", postgres="postgresql://x")


def test_unreachable_postgres_names_host_and_port_not_password():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dsn = f"postgresql://alice:s3cretpw@127.0.0.1:{port}/appdb"
    with pytest.raises(StoreError) as info:
        open_database(postgres=dsn)
    message = str(info.value)
    assert f"127.0.0.1:{port}/appdb" in message
    assert "alice" in message
    assert "s3cretpw" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.postgres
def test_postgres_without_saver_tables(postgres_server):
    dsn = postgres_server.new_database("empty")
    with pytest.raises(ConfigError, match="checkpoint_blobs, checkpoint_writes missing"):
        open_database(postgres=dsn)


# -- reading -----------------------------------------------------------------


@pytest.mark.mysql
def test_mysql_layout_and_counts(graph_mysql_db):
    with open_database(mysql=graph_mysql_db) as store:
        assert store.dialect == "mysql"
        assert {t.name: t.pk_columns for t in store.tables} == {
            "checkpoint_blobs": ("thread_id", "checkpoint_ns_hash", "channel", "version"),
            "checkpoint_writes": ("thread_id", "checkpoint_ns_hash", "checkpoint_id", "task_id", "idx"),
        }
        expected = {t: n for (t, n) in [(t.name, len(store.query(f"SELECT 1 FROM {t.name}"))) for t in store.tables]}
        assert store.count_rows_by_table() == expected and store.count_rows() > 100
        assert sum(len(p) for p in store.iter_rows(7)) == store.count_rows()


@pytest.mark.mysql
def test_mysql_without_saver_tables(mysql_db):
    with pytest.raises(ConfigError, match="table checkpoint_blobs missing"):
        open_database(mysql=mysql_db)


@pytest.mark.mysql
def test_mysql_readonly_cannot_write(graph_mysql_db):
    with open_database(mysql=graph_mysql_db) as store:
        with pytest.raises(StoreError, match="read-only"):
            store.query("DELETE FROM checkpoint_writes")
        with pytest.raises(ConfigError, match="read-only"):
            store.batch(store.tables[0], after=None, limit=5)


def test_sqlite_layout_and_counts(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        assert store.dialect == "sqlite"
        assert {t.name: t.pk_columns for t in store.tables} == SQLITE_PKS
        assert {t.name: (t.tag_column, t.blob_column) for t in store.tables} == {
            "checkpoints": ("type", "checkpoint"),
            "writes": ("type", "value"),
        }
        expected = sql_counts_sqlite(graph_sqlite_db)
        assert store.count_rows_by_table() == expected
        assert store.count_rows() == sum(expected.values()) > 100


@pytest.mark.postgres
def test_postgres_layout_and_counts(graph_postgres_db):
    with open_database(postgres=graph_postgres_db) as store:
        assert store.dialect == "postgres"
        assert {t.name: t.pk_columns for t in store.tables} == POSTGRES_PKS
        expected = sql_counts_postgres(graph_postgres_db)
        assert store.count_rows_by_table() == expected
        assert store.count_rows() == sum(expected.values()) > 100


@pytest.mark.parametrize("batch_size", [1, 7, 500])
def test_iter_rows_yields_every_row_once_in_rowid_order(graph_sqlite_db, batch_size):
    with open_database(sqlite=graph_sqlite_db) as store:
        batches = list(store.iter_rows(batch_size))
        assert all(0 < len(b) <= batch_size for b in batches)
        rows = [r for b in batches for r in b]
        keys = [(r.table, r.pk) for r in rows]
        assert len(keys) == len(set(keys)) == store.count_rows()
        for table in ("checkpoints", "writes"):
            rowids = [r.loc for r in rows if r.table == table]
            assert rowids == sorted(rowids)
    with sqlite3.connect(graph_sqlite_db) as c:
        direct = {
            ("writes", tuple(r[:5])): (r[5], r[6])
            for r in c.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, type, value FROM writes"
            )
        }
    assert {k: (r.tag, r.blob) for r in rows for k in [(r.table, r.pk)] if r.table == "writes"} == direct


def test_head_reads_only_the_start_of_each_blob(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        full = raw_rows(store)
        heads = {(r.table, r.pk): r.blob for b in store.iter_rows(50, head=16) for r in b}
    assert heads.keys() == full.keys()
    for key, (_tag, blob) in full.items():
        assert heads[key] == (None if blob is None else blob[:16])


# -- read-only really is ------------------------------------------------------


def test_sqlite_readonly_cannot_write(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db) as store:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.conn.execute("DELETE FROM writes")
        with pytest.raises(ConfigError, match="read-only"):
            store.batch(store.tables[0], after=None, limit=5)
    assert sql_counts_sqlite(graph_sqlite_db)["writes"] > 0


@pytest.mark.postgres
def test_postgres_readonly_cannot_write(graph_postgres_db):
    with open_database(postgres=graph_postgres_db) as store:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            store.conn.execute("DELETE FROM public.checkpoint_writes")
        with pytest.raises(ConfigError, match="read-only"):
            store.batch(store.tables[0], after=None, limit=5)
    assert sql_counts_postgres(graph_postgres_db)["checkpoint_writes"] > 0


# -- writing -----------------------------------------------------------------


def test_sqlite_compare_and_swap_refuses_a_row_changed_after_reading(graph_sqlite_db):
    serde = EncryptedSerializer(_inner(), K_OLD)
    with open_database(sqlite=graph_sqlite_db, readonly=False) as store:
        table = store.table("writes")
        with store.batch(table, after=None, limit=3) as batch:
            first = batch.rows[0]
            # The application rewrites the row between our read and our write.
            app_tag, app_blob = serde.dumps_typed("written by the app")
            with sqlite3.connect(graph_sqlite_db) as app:
                app.execute(
                    "UPDATE writes SET type = ?, value = ? WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ? AND task_id = ? AND idx = ?",
                    (app_tag, app_blob, *first.pk),
                )
            assert batch.compare_and_swap(first, "bytes", b"stale") is False
            current = batch.reread(first)
            assert (current.tag, current.blob) == (app_tag, app_blob)
            assert batch.compare_and_swap(current, "bytes", b"fresh") is True
        rows = raw_rows(store)
    assert rows[("writes", first.pk)] == ("bytes", b"fresh")


def test_sqlite_batch_rolls_back_on_error(graph_sqlite_db):
    with open_database(sqlite=graph_sqlite_db, readonly=False) as store:
        before = raw_rows(store)
        table = store.table("checkpoints")
        with pytest.raises(RuntimeError):
            with store.batch(table, after=None, limit=3) as batch:
                assert batch.compare_and_swap(batch.rows[0], "bytes", b"x")
                raise RuntimeError("killed mid-batch")
        assert raw_rows(store) == before


def test_exclude_skips_rows_sealed_under_that_suffix_and_header(graph_db):
    from serde_kit.crypto.blob import CIPHER_NAME, build_header

    kind, location = graph_db
    with open_database(**{kind: location}, readonly=False) as store:
        table = next(t for t in store.tables if t.name.endswith("writes"))
        header = build_header("k1")

        def claimed(exclude):
            with store.batch(table, after=None, limit=1000, exclude=exclude) as batch:
                return {r.pk[0].split("-")[0] for r in batch.rows}

        all_groups = {r.pk[0].split("-")[0] for b in store.iter_rows(tables=[table.name]) for r in b}
        # the Python form beside the SQL (rotate's dry run uses it) decides every row the same way
        rows = [r for b in store.iter_rows(tables=[table.name]) for r in b]
        for exclude in (SealedUnder("+" + CIPHER_NAME, header), SealedUnder("+aes", header), None):
            with store.batch(table, after=None, limit=10_000, exclude=exclude) as batch:
                sql = {r.pk for r in batch.rows}
            assert {r.pk for r in rows if store.would_claim(r, exclude)} == sql and sql
        # the suffix is a bound value from crypto.blob, not a literal of the dialect's SQL
        assert claimed(SealedUnder("+" + CIPHER_NAME, header)) == all_groups - {"old"}
        assert claimed(SealedUnder("+" + CIPHER_NAME.upper(), header)) == all_groups  # case-sensitive
        assert claimed(SealedUnder("+aes", header)) == all_groups  # a suffix, not a prefix of one
    assert "old" in all_groups


@pytest.mark.postgres
def test_postgres_skip_locked_batches_are_disjoint(graph_postgres_db):
    with open_database(postgres=graph_postgres_db, readonly=False) as a, open_database(
        postgres=graph_postgres_db, readonly=False
    ) as b:
        table = a.table("checkpoint_writes")
        with a.batch(table, after=None, limit=10) as batch_a:
            with b.batch(table, after=None, limit=10) as batch_b:
                pks_a = {r.pk for r in batch_a.rows}
                pks_b = {r.pk for r in batch_b.rows}
        assert len(pks_a) == len(pks_b) == 10
        assert not pks_a & pks_b


@pytest.mark.postgres
def test_postgres_compare_and_swap_and_empty_rows(graph_postgres_db):
    # PostgresSaver writes ("empty", NULL) blob rows for channels without a value.
    with psycopg.connect(graph_postgres_db, autocommit=True) as c:
        c.execute(
            "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
            "VALUES ('aaa-empty', '', 'ch', '1', 'empty', NULL)"
        )
    with open_database(postgres=graph_postgres_db, readonly=False) as store:
        rows = raw_rows(store)
        key = ("checkpoint_blobs", ("aaa-empty", "", "ch", "1"))
        assert rows[key] == ("empty", None)
        empties = [r for b in store.iter_rows() for r in b if classify_row(r.tag, r.blob).kind is RowKind.EMPTY]
        assert [(r.table, r.pk) for r in empties] == [key]
        table = store.table("checkpoint_blobs")
        with store.batch(table, after=None, limit=5) as batch:
            assert all(r.blob is not None for r in batch.rows)
            first = batch.rows[0]
            stale = type(first)(first.table, first.pk, first.tag, b"not what is stored")
            assert batch.compare_and_swap(stale, "bytes", b"x") is False
            assert batch.compare_and_swap(first, "bytes", b"new") is True
        assert raw_rows(store)[(first.table, first.pk)] == ("bytes", b"new")


def _inner():
    from tests.support.rotate_fixtures import inner_serializer

    return inner_serializer()


@pytest.mark.parametrize("kind", DIALECTS)
def test_compare_and_swap_many_applies_only_unchanged_rows(kind, request):
    location = request.getfixturevalue(f"graph_{kind}_db")
    with open_database(**{kind: location}, readonly=False) as store:
        table = store.tables[1]
        with store.batch(table, after=None, limit=4) as batch:
            rows = batch.rows
            r = rows[1]
            stale = Row(r.table, r.pk, r.tag, b"stale bytes", r.loc)
            results = batch.compare_and_swap_many(
                [(rows[0], "bytes", b"a"), (stale, "bytes", b"b"), (rows[2], "bytes", b"c")]
            )
            assert batch.compare_and_swap_many([]) == []
        assert results == [True, False, True]
        after = raw_rows(store)
    assert after[(table.name, rows[0].pk)] == ("bytes", b"a")
    assert after[(table.name, rows[1].pk)] == (rows[1].tag, rows[1].blob)
    assert after[(table.name, rows[2].pk)] == ("bytes", b"c")
    assert after[(table.name, rows[3].pk)] == (rows[3].tag, rows[3].blob)


@pytest.mark.parametrize("kind", DIALECTS)
def test_compare_and_swap_chunks_gives_one_result_per_item_in_order(kind, request):
    location = request.getfixturevalue(f"graph_{kind}_db")
    produced = []
    with open_database(**{kind: location}, readonly=False) as store:
        table = store.tables[1]
        with store.batch(table, after=None, limit=6) as batch:
            rows = batch.rows
            stale = [Row(r.table, r.pk, r.tag, b"stale bytes", r.loc) for r in rows]

            def chunks():
                # a generator, as rotate passes: each chunk is produced when the batch asks
                for part in ([(rows[0], "bytes", b"a"), (stale[1], "bytes", b"b")], [], [(stale[2], "bytes", b"c")],
                             [(rows[3], "bytes", b"d"), (rows[4], "bytes", b"e")]):
                    produced.append(len(part))
                    yield part

            results = batch.compare_and_swap_chunks(chunks())
            assert batch.compare_and_swap_chunks(iter([])) == []
        assert results == [True, False, False, True, True] and produced == [2, 0, 1, 2]
        after = raw_rows(store)
    assert [after[(table.name, r.pk)] for r in rows] == [
        ("bytes", b"a"), (rows[1].tag, rows[1].blob), (rows[2].tag, rows[2].blob),
        ("bytes", b"d"), ("bytes", b"e"), (rows[5].tag, rows[5].blob),
    ]


# -- the layouts the dialects know ---------------------------------------------------------


@pytest.mark.postgres
def test_shallow_postgres_saver_layout_is_known(postgres_db):
    import warnings

    from langgraph.checkpoint.postgres.shallow import ShallowPostgresSaver

    from tests.support.rotate_fixtures import populate, serde_for

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with ShallowPostgresSaver.from_conn_string(postgres_db) as saver:
            saver.setup()

    def factory(serde):
        from contextlib import contextmanager

        @contextmanager
        def open_shallow():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                with ShallowPostgresSaver.from_conn_string(postgres_db) as s:
                    s.serde = serde
                    yield s

        return open_shallow()

    populate(factory, threads_per_group=1)
    with open_database(postgres=postgres_db) as store:
        assert store.table("checkpoint_blobs").pk_columns == ("thread_id", "checkpoint_ns", "channel")
        rows = raw_rows(store)
    assert any(table == "checkpoint_blobs" for table, _pk in rows)


@pytest.mark.mysql
@pytest.mark.parametrize(
    ("blobs", "writes"),
    [
        (("thread_id", "channel", "version"), ("thread_id", "checkpoint_id", "task_id", "idx")),
        (
            ("thread_id", "checkpoint_ns", "channel", "version"),
            ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
        ),
    ],
    ids=["before-ns-hash", "first-release"],
)
def test_older_mysql_saver_layouts_are_known(graph_mysql_db, mysql_server, blobs, writes):
    database = graph_mysql_db.rsplit("/", 1)[-1]
    with mysql_server.connect(database) as conn, conn.cursor() as cur:
        for table, key in (("checkpoint_blobs", blobs), ("checkpoint_writes", writes)):
            # the first release's checkpoint_ns was VARCHAR(150): a key of 2000 characters does not fit
            cur.execute(
                f"ALTER TABLE {table} MODIFY COLUMN checkpoint_ns VARCHAR(150) NOT NULL DEFAULT '', "
                f"DROP PRIMARY KEY, ADD PRIMARY KEY ({', '.join(key)})"
            )
    with open_database(mysql=graph_mysql_db) as store:
        assert store.table("checkpoint_blobs").pk_columns == blobs
        assert store.table("checkpoint_writes").pk_columns == writes
        assert sum(len(page) for page in store.iter_rows(100)) > 0


@pytest.mark.mysql
def test_mysql_database_name_is_quoted_with_doubled_backticks(mysql_server, graph_mysql_template):
    # The database name comes from the DSN, not the catalog, but is an identifier all the same.
    import urllib.parse

    name = f"we`ird;db {uuid.uuid4().hex[:6]}"
    source = graph_mysql_template.rsplit("/", 1)[-1]
    quoted = "`" + name.replace("`", "``") + "`"
    with mysql_server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {quoted} CHARACTER SET utf8mb4")
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
            cur.execute(f"CREATE TABLE {quoted}.`{table}` LIKE `{source}`.`{table}`")
            cur.execute(f"INSERT INTO {quoted}.`{table}` SELECT * FROM `{source}`.`{table}`")
    try:
        dsn = mysql_server.dsn_for(urllib.parse.quote(name, safe=""))
        with open_database(mysql=dsn) as store:
            assert store.ref("checkpoint_writes") == f"{quoted}.`checkpoint_writes`"
            assert sum(len(page) for page in store.iter_rows(100)) > 0
    finally:
        with mysql_server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {quoted}")


def test_known_key_takes_the_layouts_constant_and_names_what_differs():
    from serde_kit.tools.db.catalog import known_key
    from serde_kit.tools.db.postgres import LAYOUT

    writes = LAYOUT.keys["checkpoint_writes"][0]
    found = known_key("here", LAYOUT, "checkpoint_writes", [(True, tuple(writes))])
    assert found is writes  # the constant itself, not the catalog's strings
    evil = 'x" || (SELECT public.evil()) || "x'
    # a primary key that grew a column: the unique index on the saver's columns is used
    assert known_key("here", LAYOUT, "checkpoint_writes", [(True, (*writes, evil)), (False, writes)]) is writes
    with pytest.raises(StoreError) as info:
        known_key("here", LAYOUT, "checkpoint_writes", [(True, (*writes, evil + "\ud800\n"))])
    message = str(info.value)
    assert "\n" not in message and "\ud800" not in message and message.isascii()
    assert "primary key" in message and "langgraph-checkpoint-postgres" in message
    with pytest.raises(StoreError, match="no primary key"):
        known_key("here", LAYOUT, "checkpoint_writes", [])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgress://app:pw@db.example:5432/app", "postgress://...@db.example:5432/app"),
        ("postgresql://db.example/app", "postgresql://db.example/app"),
        ("postgresql://app:p/w@host/app", "postgresql://..."),  # the netloc ends at the '/': 'p' is no port
        ("mysql://app:pw@h/we`ird", "mysql://...@h/..."),
        ("app:pw@host/db", ""),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_masked_url_shows_only_plain_parsed_parts(url, shown):
    from serde_kit.tools.db.address import masked

    assert masked(url) == shown


@pytest.mark.postgres
def test_postgres_tool_sessions_are_pinned_and_read_only(graph_postgres_db):
    with open_database(postgres=graph_postgres_db) as store:
        assert store.query("SHOW search_path") == [("pg_catalog, pg_temp",)]
        assert store.query("SHOW row_security") == [("off",)]
        assert store.query("SHOW transaction_read_only") == [("on",)]
        assert store.ref("checkpoint_writes") == '"public"."checkpoint_writes"'
    with open_database(postgres=graph_postgres_db, readonly=False) as store:
        assert store.query("SHOW search_path") == [("pg_catalog, pg_temp",)]
        assert store.query("SHOW transaction_read_only") == [("off",)]
