"""PostgreSQL: the ``langgraph-checkpoint-postgres`` layout (PostgresSaver, ShallowPostgresSaver).

================= ====== ====
table             tag    blob
================= ====== ====
checkpoint_blobs  type   blob
checkpoint_writes type   blob
================= ====== ====

``checkpoints.checkpoint`` and ``metadata`` are JSONB the saver writes itself.
Primary keys come from the catalog, so the shallow saver's layout works too.
A batch's updates go in a few statements (the rows passed as arrays), sent in
pipeline mode as rotate produces them, so a batch costs one round trip whatever
its size and the server works while the client re-encrypts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from serde_kit.errors import ConfigError, StoreError

from .base import ServerDatabase
from .batch import SqlBatch
from .model import Layout, Row, Table

__all__ = ["LAYOUT", "PostgresDatabase"]

LAYOUT = Layout(
    saver="PostgresSaver",
    serde_tables={"checkpoint_blobs": ("type", "blob"), "checkpoint_writes": ("type", "blob")},
    writes_table="checkpoint_writes",
    writes_blob="blob",
    checkpoint_serde=False,
    blobs_table="checkpoint_blobs",
)


def _conninfo(dsn: str) -> dict[str, Any]:
    try:
        from psycopg.conninfo import conninfo_to_dict

        return dict(conninfo_to_dict(dsn))
    except Exception:
        return {}


def describe_dsn(dsn: str) -> str:
    """host:port/dbname (user) of a DSN, without the password."""
    info = _conninfo(dsn)
    if not info:
        return "the given DSN (could not be parsed)"
    host = info.get("host") or os.environ.get("PGHOST") or "localhost"
    port = info.get("port") or os.environ.get("PGPORT") or "5432"
    db = info.get("dbname") or os.environ.get("PGDATABASE") or "(default)"
    user = info.get("user") or os.environ.get("PGUSER") or "(default)"
    return f"{host}:{port}/{db} as user {user}"


def _send_generator() -> Any:
    """psycopg's generator that sends a connection's whole output buffer, or None if this psycopg has none."""
    try:
        import psycopg
        from psycopg.generators import send
    except ImportError:
        return None
    # Connection.wait runs such a generator on the connection (psycopg 3.0 on).
    return send if callable(getattr(psycopg.Connection, "wait", None)) else None


class _PostgresBatch(SqlBatch):
    db: PostgresDatabase

    def _cas_sql(self) -> str:
        t = self.table
        types = self.db._column_types[t.name]
        names = [f"k{i}" for i in range(len(t.pk_columns))]
        arrays = [*(types[c] for c in t.pk_columns), "text", "bytea", "text", "bytea"]
        pk_match = " AND ".join(f"t.{c} = v.{k}" for c, k in zip(t.pk_columns, names, strict=True))
        # One UPDATE per chunk of rows, passed as arrays: a constant query text
        # (parsed and planned once) whatever the chunk's size.  RETURNING the array
        # position of each row that applied (one int, fetched in binary) instead of
        # its primary key: the key's text columns cost more to send back and parse
        # than the whole rest of the result.
        return (
            f"UPDATE {t.name} AS t SET {t.tag_column} = v.new_tag, {t.blob_column} = v.new_blob "
            f"FROM unnest({', '.join(f'%b::{a}[]' for a in arrays)}) WITH ORDINALITY "
            f"AS v({', '.join(names)}, old_tag, old_blob, new_tag, new_blob, i) "
            f"WHERE {pk_match} AND t.{t.tag_column} IS NOT DISTINCT FROM v.old_tag "
            f"AND t.{t.blob_column} = v.old_blob "
            f"RETURNING v.i"
        )

    @staticmethod
    def _columns(items: Sequence[tuple[Row, str, bytes]]) -> list[list[Any]]:
        # The arrays, one per column: transposed by zip in C, not appended value by value.
        return [list(c) for c in zip(*[(*row.pk, row.tag, row.blob, tag, blob) for row, tag, blob in items], strict=True)]

    @staticmethod
    def _applied(n: int, done: Sequence[Any]) -> list[bool]:
        if len(done) == n:
            return [True] * n  # each position comes back at most once (the key is unique)
        applied = [False] * n
        for (i,) in done:
            applied[i - 1] = True
        return applied

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        if not items:
            return []
        self._begin()
        return self._applied(len(items), self.db._fetch_rows(self._cas_sql(), self._columns(items)))

    def compare_and_swap_chunks(self, chunks: Iterable[Sequence[tuple[Row, str, bytes]]]) -> list[bool]:
        # Pipeline mode: each chunk's UPDATE is sent as soon as it is produced and the
        # server runs it while the next chunk is produced (re-encrypted); the results
        # are read at the end.  Same statements, same transaction, same results.
        db = self.db
        if not db._psycopg.Pipeline.is_supported():  # libpq before 14
            return super().compare_and_swap_chunks(chunks)
        self._begin()
        sql = self._cas_sql()
        flush = _send_generator()
        sent: list[tuple[int, Any]] = []
        try:
            with db.conn.pipeline():
                for chunk in chunks:
                    if chunk:
                        sent.append((len(chunk), db.conn.execute(sql, self._columns(chunk), binary=True)))
                        # libpq sends what the socket takes and keeps the rest of a large
                        # statement until the next call; send it all now, so the server
                        # starts on this chunk while the next one is produced.
                        if flush is not None:
                            db.conn.wait(flush(db.conn.pgconn))
            out: list[bool] = []
            for n, cursor in sent:
                out += self._applied(n, cursor.fetchall())
            return out
        except db._psycopg.Error as e:
            raise db._translate(e) from None


class PostgresDatabase(ServerDatabase):
    """A PostgresSaver (or ShallowPostgresSaver) database."""

    dialect = "postgres"
    mark = "%s"
    layout = LAYOUT
    batch_class = _PostgresBatch

    def __init__(self, dsn: str, *, readonly: bool = True) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError("PostgreSQL support needs psycopg: pip install 'serde-kit[postgres]'") from None
        self._psycopg = psycopg
        self._dsn = dsn
        self.readonly = readonly
        self._where_text = describe_dsn(dsn)
        self._column_types: dict[str, dict[str, str]] = {}
        self._open()

    def _connect(self) -> None:
        psycopg = self._psycopg
        try:
            self.conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=15)
            if self.readonly:
                self.conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to PostgreSQL at {self._where_text}: {self._first_line(e)}") from None

    def _first_line(self, e: BaseException) -> str:
        text = str(e).strip()
        first = text.splitlines()[0] if text else type(e).__name__
        password = _conninfo(self._dsn).get("password")
        if password:
            first = first.replace(str(password), "***")
        return first.replace(self._dsn, "<dsn>")

    def under_header(self, table: Table) -> str:
        tag, blob = self.quote(table.tag_column), self.quote(table.blob_column)
        return (
            f"(coalesce(right({tag}, 7), '') = '+aesgcm' "
            f"AND coalesce(substring({blob} from 1 for %s) = %s, false))"
        )

    def head(self, column: str, n: int) -> str:
        return f"substring({column} from 1 for {int(n)})"

    def null_safe_equal(self, column: str) -> str:
        return f"{column} IS NOT DISTINCT FROM %s"

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self.conn.execute(sql, list(params) if params else None)
        except self._psycopg.Error as e:
            raise self._translate(e) from None

    def _fetch_rows(self, sql: str, params: Sequence[Any]) -> Any:
        # Binary results: a bytea arrives as its bytes, not as hex the server encodes and
        # psycopg decodes (a page of 1 KiB rows is most of the claim's cost in text form).
        try:
            return self.conn.execute(sql, list(params), binary=True).fetchall()
        except self._psycopg.Error as e:
            raise self._translate(e) from None

    def _translate(self, e: BaseException) -> StoreError:
        errors = self._psycopg.errors
        first = self._first_line(e)
        where = self._where_text
        if isinstance(e, (errors.DeadlockDetected, errors.SerializationFailure)):
            return StoreError(f"PostgreSQL at {where} aborted the batch ({first}); retried", transient=True)
        if isinstance(e, errors.LockNotAvailable):
            return StoreError(f"PostgreSQL at {where}: a row is locked ({first})", transient=True)
        if isinstance(e, errors.InsufficientPrivilege):
            return StoreError(
                f"PostgreSQL at {where} refused: {first}. The role needs SELECT (and UPDATE to --apply) "
                "on checkpoint_blobs, checkpoint_writes and checkpoints"
            )
        if isinstance(e, errors.ReadOnlySqlTransaction):
            return StoreError(f"PostgreSQL at {where} is read-only ({first}); run without --apply, or on the primary")
        if isinstance(e, errors.DiskFull):
            return StoreError(f"PostgreSQL at {where} is out of disk space ({first}); the batch was rolled back")
        if isinstance(e, self._psycopg.OperationalError) or self.conn is None or self.conn.closed:
            return StoreError(
                f"lost the connection to PostgreSQL at {where} ({first}); the open batch was rolled back",
                transient=True,
            )
        return StoreError(f"PostgreSQL at {where}: {type(e).__name__}: {first}")

    @property
    def lost(self) -> bool:
        """Whether the connection is gone (the server restarted or ended our backend)."""
        return bool(self.conn is None or self.conn.closed or self.conn.broken)

    def is_transient(self, error: BaseException) -> bool:
        return isinstance(error, StoreError) and error.transient

    def _discover(self) -> tuple[Table, ...]:
        found = {name: self._execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0] for name in self.layout.serde_tables}
        missing = [n for n, oid in found.items() if oid is None]
        if missing:
            raise ConfigError(
                f"PostgreSQL database {self._where_text} is not a LangGraph PostgresSaver "
                f"database: table(s) {', '.join(missing)} missing from the search path "
                "(run saver.setup() once, or check the database and schema)"
            )
        tables = []
        for name, (tag_col, blob_col) in self.layout.serde_tables.items():
            oid = found[name]
            columns = {
                r[0]: r[1]
                for r in self._execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                    (oid,),
                )
            }
            pk = tuple(
                r[0]
                for r in self._execute(
                    "SELECT a.attname FROM pg_index i "
                    "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true "
                    "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                    "WHERE i.indrelid = %s AND i.indisprimary ORDER BY k.ord",
                    (oid,),
                )
            )
            absent = [c for c in (tag_col, blob_col) if c not in columns]
            if absent or not pk:
                what = f"column(s) {', '.join(absent)}" if absent else "a primary key"
                raise ConfigError(f"PostgreSQL table {name} lacks {what}; this is not a LangGraph PostgresSaver layout")
            self._column_types[name] = columns
            tables.append(Table(name, tag_col, blob_col, pk))
        return tuple(tables)

    def channel_blobs(self, thread_id: str, checkpoint_ns: str, versions: Any) -> list[tuple[str, Any, Any]]:
        if not versions:
            return []
        rows = self.query(
            "SELECT channel, type, blob FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s "
            "AND (channel, version) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            [thread_id, checkpoint_ns, [str(k) for k in versions], [str(v) for v in versions.values()]],
        )
        return [(c, t, None if b is None else bytes(b) if isinstance(b, (bytes, memoryview)) else b) for c, t, b in rows]

    def inline_primitives(self, batch_size: int = 500) -> dict[str, dict[str, int]]:
        rows = self.query(
            """
            SELECT kv.key, jsonb_typeof(kv.value), count(*)
            FROM checkpoints c,
                 jsonb_each(CASE WHEN jsonb_typeof(c.checkpoint -> 'channel_values') = 'object'
                                 THEN c.checkpoint -> 'channel_values' ELSE '{}'::jsonb END) AS kv
            WHERE kv.value <> 'true'::jsonb OR NOT EXISTS (
                SELECT 1 FROM checkpoint_blobs b
                WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
                  AND b.channel = kv.key
                  AND b.version = c.checkpoint -> 'channel_versions' ->> kv.key)
            GROUP BY 1, 2
            """
        )
        out: dict[str, dict[str, int]] = {}
        for channel, json_type, n in rows:
            out.setdefault(channel, {})[json_type] = int(n)
        return out

    def has_column(self, table: str, column: str) -> bool:
        return bool(
            self.query(
                "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = %s AND NOT attisdropped",
                [table, column],
            )
        )

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
