"""PostgreSQL: the ``langgraph-checkpoint-postgres`` layout (PostgresSaver, ShallowPostgresSaver).

================= ====== ====
table             tag    blob
================= ====== ====
checkpoint_blobs  type   blob
checkpoint_writes type   blob
================= ====== ====

``checkpoints.checkpoint`` and ``metadata`` are JSONB the saver writes itself.
The key columns are the saver's own (the catalog is only compared with them,
see :mod:`.catalog`), the shallow saver's layout included.  Each table is
named by the schema the session's search path found it in, after which the
session's ``search_path`` is pinned to ``pg_catalog, pg_temp`` (no function or
operator an application role created is ever picked) and row security is off.
A batch's updates go in a few statements (the rows passed as arrays), sent in
pipeline mode as rotate produces them, so a batch costs one round trip whatever
its size and the server works while the client re-encrypts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from serde_kit._secrets import scrubs_frames
from serde_kit._text import install_hint
from serde_kit.errors import ConfigError, StoreError

from .address import masked, plain, scrub, url_passwords, url_secrets
from .base import ServerDatabase
from .batch import SqlBatch
from .catalog import CatalogKey, known_key, shown
from .model import Layout, Row, Table

__all__ = ["LAYOUT", "PostgresDatabase"]

LAYOUT = Layout(
    saver="PostgresSaver",
    serde_tables={"checkpoint_blobs": ("type", "blob"), "checkpoint_writes": ("type", "blob")},
    writes_table="checkpoint_writes",
    writes_blob="blob",
    checkpoint_serde=False,
    blobs_table="checkpoint_blobs",
    # langgraph-checkpoint-postgres migrations (PostgresSaver), then ShallowPostgresSaver.
    keys={
        "checkpoint_blobs": (
            ("thread_id", "checkpoint_ns", "channel", "version"),
            ("thread_id", "checkpoint_ns", "channel"),
        ),
        "checkpoint_writes": (("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),),
    },
    package="langgraph-checkpoint-postgres",
)

#: The SQL type of each key column, as the saver's migrations create it (the arrays a batch sends).
_KEY_TYPES = {
    "thread_id": "text",
    "checkpoint_ns": "text",
    "checkpoint_id": "text",
    "channel": "text",
    "version": "text",
    "task_id": "text",
    "idx": "integer",
}

#: The only search path a tool session has once the tables are found.
_PINNED_PATH = "pg_catalog, pg_temp"


def _conninfo(dsn: str) -> dict[str, Any]:
    try:
        from psycopg.conninfo import conninfo_to_dict

        return dict(conninfo_to_dict(dsn))
    except Exception:
        return {}


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def describe_dsn(dsn: str) -> str:
    """host:port/dbname (user) of a DSN, without the password."""
    info = _conninfo(dsn)
    if not info:
        shown = masked(dsn)
        return f"{shown} (a DSN libpq cannot parse)" if shown else "the given DSN (libpq cannot parse it)"
    # Each part only when it is a plain name: a typo can shift a password into any of them.
    passwords = url_passwords(dsn)
    if info.get("password"):
        passwords.append(str(info["password"]))

    def part(value: object, allow: str) -> str:
        text = plain(value, allow=allow)
        return "..." if len(text) >= 3 and any(text in s for s in passwords) else text

    host = part(info.get("host") or os.environ.get("PGHOST") or "localhost", "/,:")
    port = str(info.get("port") or os.environ.get("PGPORT") or "5432")
    port = port if port.replace(",", "").isdigit() and port.isascii() else "..."
    db = part(info.get("dbname") or os.environ.get("PGDATABASE") or "(default)", "()")
    user = part(info.get("user") or os.environ.get("PGUSER") or "(default)", "()@")
    return scrub(f"{host}:{port}/{db} as user {user}", [*passwords, *url_secrets(dsn)])


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
        t, q = self.table, self.db.quote
        names = [f"k{i}" for i in range(len(t.pk_columns))]
        arrays = [*(_KEY_TYPES[c] for c in t.pk_columns), "text", "bytea", "text", "bytea"]
        pk_match = " AND ".join(f"t.{q(c)} = v.{k}" for c, k in zip(t.pk_columns, names, strict=True))
        tag, blob = q(t.tag_column), q(t.blob_column)
        # One UPDATE per chunk of rows, passed as arrays: a constant query text
        # (parsed and planned once) whatever the chunk's size.  RETURNING the array
        # position of each row that applied (one int, fetched in binary) instead of
        # its primary key: the key's text columns cost more to send back and parse
        # than the whole rest of the result.
        return (
            f"UPDATE {self.db.ref(t.name)} AS t SET {tag} = v.new_tag, {blob} = v.new_blob "
            f"FROM unnest({', '.join(f'%b::{a}[]' for a in arrays)}) WITH ORDINALITY "
            f"AS v({', '.join(names)}, old_tag, old_blob, new_tag, new_blob, i) "
            f"WHERE {pk_match} AND t.{tag} IS NOT DISTINCT FROM v.old_tag "
            f"AND t.{blob} = v.old_blob "
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
            raise db.translate(e) from None


class PostgresDatabase(ServerDatabase):
    """A PostgresSaver (or ShallowPostgresSaver) database."""

    dialect = "postgres"
    mark = "%s"
    layout = LAYOUT
    batch_class = _PostgresBatch

    @scrubs_frames  # the DSN holds a password: no frame of a failed open keeps it
    def __init__(self, dsn: str, *, readonly: bool = True) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError("PostgreSQL support needs psycopg: " + install_hint("postgres")) from None
        self._psycopg = psycopg
        if not _is_text(dsn):
            # libpq needs UTF-8; the encoder's error would quote the character (a piece of the password).
            raise ConfigError(
                "the PostgreSQL DSN holds a character that is not text (a lone surrogate, as from "
                "undecodable bytes in the environment); write it again as UTF-8"
            )
        self._dsn = dsn
        self.readonly = readonly
        self._where_text = describe_dsn(dsn)
        self._secrets = [dsn, *url_secrets(dsn)]
        try:
            from psycopg.conninfo import conninfo_to_dict

            conninfo_to_dict(dsn)
        except psycopg.Error as e:
            # libpq quotes the piece of the DSN it cannot parse: that piece may be the password.
            shown, reason = masked(dsn), self._first_line(e, drop_quoted=True)
            hint = (
                "percent-encode the password's special characters, or put it in PGPASSWORD / ~/.pgpass"
                if "percent" in reason
                else "write it as postgresql://user@host:port/dbname or as key=value pairs"
            )
            raise ConfigError(
                f"the PostgreSQL DSN {shown + ' ' if shown else ''}cannot be parsed ({reason}); {hint}"
            ) from None
        password = _conninfo(dsn).get("password")
        if password:
            self._secrets.append(str(password))
        #: saver table -> (oid, schema, owner), found under the DSN's search path at the first connection
        self._found: dict[str, tuple[int, str, str]] | None = None
        #: saver table name -> relkind, where the name is a view, foreign table or anything not a table
        self._not_tables: dict[str, str] = {}
        #: set when a statement failed as a lost connection before libpq marked the connection bad
        self._failed_as_lost = False
        self._open()

    def _connect(self) -> None:
        psycopg = self._psycopg
        try:
            self.conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=15)
            self._failed_as_lost = False
        except psycopg.Error as e:
            # libpq quotes the piece of a DSN it cannot parse: that piece may be the password.
            first = self._first_line(e, drop_quoted=True)
            raise StoreError(f"cannot connect to PostgreSQL at {self._where_text}: {first}") from None
        try:
            if self.readonly:
                self.conn.execute("SET default_transaction_read_only = on")
            if self._found is None:
                self._found = self._find_tables()
            # Every table is schema-qualified from here on; functions and operators come from pg_catalog only.
            self.conn.execute(f"SET search_path = {_PINNED_PATH}")
            self.conn.execute("SET row_security = off")
            if not self.readonly:
                self._write_as_owner()
        except psycopg.Error as e:
            self.conn.close()
            raise StoreError(f"cannot set up a session on PostgreSQL at {self._where_text}: {self._first_line(e)}") from None

    def _write_as_owner(self) -> None:
        """Write as the role that owns the saver's tables, when this session may become it.

        An UPDATE runs what the table's owner attached to it -- triggers, index
        expressions, CHECK constraints -- with the privileges of whoever updates.
        Run by a superuser on tables an application role owns, that is the
        application's code running as the superuser; as the owner it has the
        owner's privileges only.  The owner's name is a bound parameter, never SQL.
        """
        found = self._found or {}
        owners = {found[n][2] for n in self.layout.serde_tables if n in found}
        if len(owners) != 1:
            return
        owner = owners.pop()
        may = self.conn.execute(
            "SELECT current_user <> %s AND pg_catalog.pg_has_role(current_user, "
            "(SELECT oid FROM pg_catalog.pg_roles WHERE rolname = %s), 'MEMBER')",
            (owner, owner),
        ).fetchone()
        if may is not None and may[0]:
            self.conn.execute("SELECT pg_catalog.set_config('role', %s, false)", (owner,))

    def _find_tables(self) -> dict[str, tuple[int, str, str]]:
        """Each saver table the DSN's search path finds: oid, schema and owner (plain tables only)."""
        found = {}
        for name in self.layout.all_tables:
            row = self.conn.execute(
                "SELECT c.oid, n.nspname, pg_catalog.pg_get_userbyid(c.relowner), c.relkind "
                "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = pg_catalog.to_regclass(%s)",
                (name,),
            ).fetchone()
            if row is not None:
                found[name] = (int(row[0]), str(row[1]), str(row[2]))
                if str(row[3]) not in ("r", "p"):
                    self._not_tables[name] = str(row[3])
        return found

    def _first_line(self, e: BaseException, *, drop_quoted: bool = False) -> str:
        text = str(e).strip()
        first = text.splitlines()[0] if text else type(e).__name__
        return scrub(first, self._secrets, drop_quoted=drop_quoted)

    def under_header(self, table: Table) -> str:
        tag, blob = self.quote(table.tag_column), self.quote(table.blob_column)
        return (
            f"(coalesce(right({tag}, %s::int) = %s, false) "
            f"AND coalesce(substring({blob} from 1 for %s) = %s, false))"
        )

    def head(self, column: str, n: int) -> str:
        return f"substring({column} from 1 for {int(n)})"

    def null_safe_equal(self, column: str) -> str:
        return f"{column} IS NOT DISTINCT FROM %s"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self.conn.execute(sql, list(params) if params else None)
        except self._psycopg.Error as e:
            raise self.translate(e) from None

    def _fetch_rows(self, sql: str, params: Sequence[Any]) -> Any:
        # Binary results: a bytea arrives as its bytes, not as hex the server encodes and
        # psycopg decodes (a page of 1 KiB rows is most of the claim's cost in text form).
        try:
            return self.conn.execute(sql, list(params), binary=True).fetchall()
        except self._psycopg.Error as e:
            raise self.translate(e) from None

    def translate(self, e: BaseException) -> StoreError:
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
            # A backend ended while a query was being sent ("sending query failed: terminating
            # connection ...") can leave libpq's status OK; every later statement on it fails.
            self._failed_as_lost = True
            return StoreError(
                f"lost the connection to PostgreSQL at {where} ({first}); the open batch was rolled back",
                transient=True,
            )
        return StoreError(f"PostgreSQL at {where}: {type(e).__name__}: {first}")

    @property
    def lost(self) -> bool:
        """Whether the connection is gone (the server restarted or ended our backend)."""
        return bool(self._failed_as_lost or self.conn is None or self.conn.closed or self.conn.broken)

    def _discover(self) -> tuple[Table, ...]:
        found = self._found or {}
        missing = [n for n in self.layout.serde_tables if n not in found]
        if missing:
            raise ConfigError(
                f"PostgreSQL database {self._where_text} is not a LangGraph PostgresSaver "
                f"database: table(s) {', '.join(missing)} missing from the search path "
                "(run saver.setup() once, or check the database and schema)"
            )
        if self._not_tables:
            # A view's functions run as whoever selects from it: never read one in place of a table.
            name, kind = next(iter(self._not_tables.items()))
            raise StoreError(
                f"PostgreSQL at {self._where_text}: {name} (schema {shown(found[name][1])}) is not a base table "
                f"(relkind {kind!r}, e.g. a view); serde-kit reads only the saver's own tables: check the "
                "database and the search path"
            )
        from psycopg.sql import Identifier

        self._refs = {
            name: Identifier(schema, name).as_string(self.conn) for name, (_oid, schema, _owner) in found.items()
        }
        tables = []
        for name, (tag_col, blob_col) in self.layout.serde_tables.items():
            oid = found[name][0]
            columns = {
                r[0]
                for r in self.execute(
                    "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                    (oid,),
                )
            }
            absent = [c for c in (tag_col, blob_col) if c not in columns]
            if absent:
                raise ConfigError(
                    f"PostgreSQL table {name} lacks column(s) {', '.join(absent)}; "
                    "this is not a LangGraph PostgresSaver layout"
                )
            keys: list[CatalogKey] = [
                (bool(primary), tuple(cols))
                for primary, cols in self.execute(
                    "SELECT i.indisprimary, ARRAY(SELECT a.attname FROM pg_catalog.unnest(i.indkey) "
                    "WITH ORDINALITY AS k(attnum, ord) JOIN pg_catalog.pg_attribute a "
                    "ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                    "WHERE k.ord <= i.indnkeyatts ORDER BY k.ord) "
                    "FROM pg_catalog.pg_index i WHERE i.indrelid = %s AND i.indisunique AND i.indisvalid "
                    "AND i.indpred IS NULL AND i.indexprs IS NULL",
                    (oid,),
                )
            ]
            pk = known_key(f"PostgreSQL at {self._where_text}", self.layout, name, keys)
            tables.append(Table(name, tag_col, blob_col, pk))
        return tuple(tables)

    def channel_blobs(self, thread_id: str, checkpoint_ns: str, versions: Any) -> list[tuple[str, Any, Any]]:
        if not versions:
            return []
        rows = self.query(
            f"SELECT channel, type, blob FROM {self.ref('checkpoint_blobs')} WHERE thread_id = %s AND checkpoint_ns = %s "
            "AND (channel, version) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            [thread_id, checkpoint_ns, [str(k) for k in versions], [str(v) for v in versions.values()]],
        )
        return [(c, t, None if b is None else bytes(b) if isinstance(b, (bytes, memoryview)) else b) for c, t, b in rows]

    def inline_primitives(self, batch_size: int = 500) -> dict[str, dict[str, int]]:
        rows = self.query(
            f"""
            SELECT kv.key, jsonb_typeof(kv.value), count(*)
            FROM {self.ref("checkpoints")} c,
                 jsonb_each(CASE WHEN jsonb_typeof(c.checkpoint -> 'channel_values') = 'object'
                                 THEN c.checkpoint -> 'channel_values' ELSE '{{}}'::jsonb END) AS kv
            WHERE kv.value <> 'true'::jsonb OR NOT EXISTS (
                SELECT 1 FROM {self.ref("checkpoint_blobs")} b
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
        found = (self._found or {}).get(table)
        if found is None:
            return False
        return bool(
            self.query(
                "SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attname = %s AND NOT attisdropped",
                [found[0], column],
            )
        )

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
