"""MySQL and MariaDB: the ``langgraph-checkpoint-mysql`` layout (sync and async savers alike).

================= ====== ======
table             tag    blob
================= ====== ======
checkpoint_blobs  type   `blob`
checkpoint_writes type   `blob`
================= ====== ======

As with PostgreSQL, ``checkpoints.checkpoint`` and ``metadata`` are JSON the
saver writes itself.  The key columns (``checkpoint_ns_hash`` in the current
releases) are the saver's own; ``information_schema`` is only compared with
them (:mod:`.catalog`), and tables are named ```database`.`table```.  InnoDB row locks give the same claim strategy as
PostgreSQL (``FOR UPDATE NOWAIT``, then ``SKIP LOCKED``; MariaDB 10.6+, MySQL 8+).

DSN: ``mysql://user:password@host:port/database`` with optional
``?unix_socket=/path`` (the password may also come from ``MYSQL_PWD``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from serde_kit._secrets import scrubs_frames
from serde_kit._text import install_hint
from serde_kit.errors import ConfigError, StoreError

from .address import masked, scrub, url_secrets
from .base import ServerDatabase
from .batch import SqlBatch
from .catalog import CatalogKey, known_key, shown
from .model import Layout, Row, Table

__all__ = ["LAYOUT", "MysqlDatabase", "parse_mysql_dsn"]

LAYOUT = Layout(
    saver="PyMySQLSaver",
    serde_tables={"checkpoint_blobs": ("type", "blob"), "checkpoint_writes": ("type", "blob")},
    writes_table="checkpoint_writes",
    writes_blob="blob",
    checkpoint_serde=False,
    blobs_table="checkpoint_blobs",
    # langgraph-checkpoint-mysql migrations: current (checkpoint_ns_hash), the one before, the first.
    keys={
        "checkpoint_blobs": (
            ("thread_id", "checkpoint_ns_hash", "channel", "version"),
            ("thread_id", "channel", "version"),
            ("thread_id", "checkpoint_ns", "channel", "version"),
        ),
        "checkpoint_writes": (
            ("thread_id", "checkpoint_ns_hash", "checkpoint_id", "task_id", "idx"),
            ("thread_id", "checkpoint_id", "task_id", "idx"),
            ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
        ),
    },
    package="langgraph-checkpoint-mysql",
)

#: checkpoint_ns_hash of the root namespace: the saver stores UNHEX(MD5(checkpoint_ns)).
_ROOT_NS_HASH = hashlib.md5(b"").digest()

# MySQL/MariaDB error numbers (server and client).
_LOCK_WAIT_TIMEOUT = 1205
_DEADLOCK = 1213
_NOWAIT = 3572
_DENIED = (1142, 1143, 1044, 1045, 1227)
_READ_ONLY = (1792, 1290, 1036)
_DISK_FULL = (1021, 1114)
_LOST = (2006, 2013, 2003, 2002, 2055, 1927, 1053)


def parse_mysql_dsn(dsn: str) -> dict[str, Any]:
    """pymysql ``connect`` arguments for ``mysql://user:password@host:port/db[?unix_socket=...]``."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        raise ConfigError("the MySQL DSN cannot be parsed; the form is mysql://user@host:port/database") from None
    if parts.scheme not in ("mysql", "mariadb", "mysql+pymysql"):
        # Never the DSN's text: a typo can put the password anywhere in it.
        shown = masked(dsn)
        raise ConfigError(
            "a MySQL DSN starts with mysql:// or mariadb://" + (f", not {shown}" if shown else "")
        )
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    args: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "user": unquote(parts.username) if parts.username else os.environ.get("MYSQL_USER", "root"),
        "database": unquote(parts.path.lstrip("/")) or None,
    }
    try:
        if parts.port is not None:
            args["port"] = parts.port
    except ValueError:
        raise ConfigError("the MySQL DSN has a port that is not a number") from None
    password = unquote(parts.password) if parts.password else os.environ.get("MYSQL_PWD")
    if password:
        args["password"] = password
    if "unix_socket" in query:
        args["unix_socket"] = query["unix_socket"]
    if args["database"] is None:
        raise ConfigError("the MySQL DSN names no database: mysql://user@host:port/DATABASE")
    return args


#: Rows and bytes per compare-and-swap statement (the server's max_allowed_packet is 16 MiB by default).
_CAS_ROWS = 500
_CAS_BYTES = 4 << 20


def _check_encodable(args: dict[str, Any]) -> None:
    """ConfigError unless PyMySQL can send these connection arguments (its encoder's error quotes them)."""
    try:
        for key in ("user", "database", "unix_socket", "host"):
            if isinstance(args.get(key), str):
                args[key].encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            "the MySQL DSN holds a character that is not text (a lone surrogate, as from undecodable "
            "bytes in the environment); write it again as UTF-8"
        ) from None
    try:
        if isinstance(args.get("password"), str):
            args["password"].encode("latin-1")
    except UnicodeEncodeError:
        raise ConfigError(
            "the MySQL password holds a character PyMySQL cannot send (it sends passwords as Latin-1); "
            "choose a password of Latin-1 characters"
        ) from None


class _MysqlBatch(SqlBatch):
    db: MysqlDatabase

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        # The claim locked these rows FOR UPDATE in this transaction, so they cannot
        # change before the update: one UPDATE ... JOIN per chunk, and when it does
        # not touch every row (a row re-read meanwhile), the chunk goes row by row.
        if not items:
            return []
        out: list[bool] = []
        chunk: list[tuple[Row, str, bytes]] = []
        size = 0
        for item in items:
            chunk.append(item)
            size += len(item[0].blob) + len(item[2])
            if len(chunk) >= _CAS_ROWS or size >= _CAS_BYTES:
                out += self._chunk(chunk)
                chunk, size = [], 0
        if chunk:
            out += self._chunk(chunk)
        return out

    def _chunk(self, items: list[tuple[Row, str, bytes]]) -> list[bool]:
        t, q, db = self.table, self.db.quote, self.db
        if any(not isinstance(row.blob, bytes) for row, _, _ in items):
            return [self.compare_and_swap(r, g, b) for r, g, b in items]  # a stray row: row by row
        keys = [f"k{i}" for i in range(len(t.pk_columns))]
        names = [*keys, "old_tag", "old_len", "old_sha", "new_tag", "new_blob"]
        # The values go in the statement text, not as parameters: blobs and digests
        # as hex literals (only [0-9a-f]: nothing to escape), keys and tags through
        # the driver's escaping.  PyMySQL escapes a parameter character by character
        # in Python, which for 2 KiB of hex per row was most of the client's time.
        lit = db._literal
        records = [
            [*map(lit, row.pk), lit(row.tag), str(len(row.blob)), f"'{hashlib.sha256(row.blob).hexdigest()}'", lit(tag), f"X'{new.hex()}'"]
            for row, tag, new in items
        ]
        first = "SELECT " + ", ".join(f"{v} AS {n}" for v, n in zip(records[0], names, strict=True))
        if len(records) == 1:
            rows = first
        elif db.values_rows:
            # A table value constructor: the server reads one statement's list of
            # rows, much cheaper than a SELECT per row (MariaDB 10.3+).
            rows = first + " UNION ALL VALUES " + ", ".join(f"({', '.join(r)})" for r in records[1:])
        else:
            rows = " UNION ALL ".join([first] + [f"SELECT {', '.join(r)}" for r in records[1:]])
        match = " AND ".join(f"t.{q(c)} = v.{k}" for c, k in zip(t.pk_columns, keys, strict=True))
        # The old blob is compared by length and SHA-256 instead of sent back
        # whole: the server parses a quarter of the bytes (the statement's main
        # cost), and a row the application rewrote still never matches.
        blob = f"t.{q(t.blob_column)}"
        sql = (
            f"UPDATE {db.ref(t.name)} AS t JOIN ({rows}) AS v ON {match} "
            f"AND t.{q(t.tag_column)} <=> v.old_tag AND length({blob}) = v.old_len AND SHA2({blob}, 256) = v.old_sha "
            f"SET t.{q(t.tag_column)} = v.new_tag, {blob} = v.new_blob"
        )
        self._begin()
        db.execute("SAVEPOINT serde_kit_cas")
        if db.execute(sql).rowcount == len(items):
            return [True] * len(items)
        db.execute("ROLLBACK TO SAVEPOINT serde_kit_cas")
        return [self.compare_and_swap(row, tag, blob) for row, tag, blob in items]


class MysqlDatabase(ServerDatabase):
    """A database written by langgraph-checkpoint-mysql's savers (MySQL 8+ or MariaDB 10.6+)."""

    dialect = "mysql"
    mark = "%s"
    begin_sql = "START TRANSACTION"
    layout = LAYOUT
    batch_class = _MysqlBatch

    @scrubs_frames  # the DSN holds a password: no frame of a failed open keeps it
    def __init__(self, dsn: str, *, readonly: bool = True) -> None:
        try:
            import pymysql
        except ImportError:
            raise ConfigError("MySQL support needs PyMySQL: " + install_hint("mysql")) from None
        self._pymysql = pymysql
        self._args = parse_mysql_dsn(dsn)
        _check_encodable(self._args)
        self.readonly = readonly
        a = self._args
        place = a.get("unix_socket") or f"{a['host']}:{a.get('port', 3306)}"
        self._where_text = f"{place}/{a['database']} as user {a['user']}"
        self._secrets = [dsn, *url_secrets(dsn)]
        if a.get("password"):
            self._secrets.append(str(a["password"]))
        self._ns_by_hash: dict[bytes, str | None] = {_ROOT_NS_HASH: ""}
        self._open()

    def _connect(self) -> None:
        pymysql = self._pymysql
        try:
            self.conn = pymysql.connect(
                **self._args, autocommit=True, charset="utf8mb4", connect_timeout=15, binary_prefix=True
            )
            if self.readonly:
                self.conn.cursor().execute("SET SESSION TRANSACTION READ ONLY")
        except pymysql.MySQLError as e:
            raise StoreError(f"cannot connect to MySQL at {self._where_text}: {self._first_line(e)}") from None

    def _first_line(self, e: BaseException) -> str:
        args: tuple[Any, ...] = e.args
        text = scrub(str(args[1]) if len(args) >= 2 else str(e), self._secrets)
        return text.strip().splitlines()[0] if text.strip() else type(e).__name__

    def quote(self, name: str) -> str:
        if "\x00" in name:
            raise StoreError(f"an identifier with a NUL character cannot be quoted: {name!r}")
        return "`" + name.replace("`", "``") + "`"

    def _literal(self, value: Any) -> str:
        """``value`` as an SQL literal of this connection (bytes as a hex literal)."""
        if isinstance(value, (bytes, bytearray)):
            return f"X'{bytes(value).hex()}'"
        return str(self.conn.escape(value))

    @property
    def values_rows(self) -> bool:
        """Whether the server reads ``UNION ALL VALUES (...), (...)`` (MariaDB 10.3+; MySQL spells it otherwise)."""
        info = str(self.conn.get_server_info())
        if "MariaDB" not in info:
            return False
        try:
            major, minor = (int(x) for x in info.split("-")[0].split(".")[:2])
        except ValueError:
            return False
        return (major, minor) >= (10, 3)

    def _row_value(self, columns: Sequence[str], op: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        # MySQL/MariaDB do not range-scan an index for a row-value comparison (a
        # claim FOR UPDATE would scan, and lock, the whole table): spell it out
        # as first >= x AND (first > x OR (first = x AND (second > y OR ...))).
        strict = op.rstrip("=")
        cols = [self.quote(c) for c in columns]
        sql, params = f"{cols[-1]} {op} %s", [values[-1]]
        for col, value in zip(reversed(cols[:-1]), reversed(values[:-1]), strict=True):
            sql = f"({col} {strict} %s OR ({col} = %s AND {sql}))"
            params = [value, value, *params]
        lead = ">=" if strict == ">" else "<="
        return f"({cols[0]} {lead} %s AND {sql})", [values[0], *params]

    def null_safe_equal(self, column: str) -> str:
        return f"{column} <=> %s"

    def head(self, column: str, n: int) -> str:
        return f"substring({column}, 1, {int(n)})"

    def under_header(self, table: Table) -> str:
        tag, blob = self.quote(table.tag_column), self.quote(table.blob_column)
        # BINARY: the column's collation may be case-insensitive.
        return f"(coalesce(BINARY right({tag}, %s) = BINARY %s, 0) AND coalesce(left({blob}, %s) = %s, 0))"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            cur = self.conn.cursor()
            cur.execute(sql, list(params) if params else None)
            return cur
        except self._pymysql.MySQLError as e:
            raise self.translate(e) from None

    def translate(self, e: BaseException) -> StoreError:
        code = e.args[0] if getattr(e, "args", None) and isinstance(e.args[0], int) else None
        first = self._first_line(e)
        where = self._where_text
        if code in (_DEADLOCK, _LOCK_WAIT_TIMEOUT, _NOWAIT):
            return StoreError(f"MySQL at {where}: a row is locked ({first})", transient=True)
        if code in _DENIED:
            return StoreError(
                f"MySQL at {where} refused: {first}. The user needs SELECT (and UPDATE to --apply) "
                "on checkpoint_blobs, checkpoint_writes and checkpoints"
            )
        if code in _READ_ONLY:
            return StoreError(f"MySQL at {where} is read-only ({first}); run without --apply, or on the primary")
        if code in _DISK_FULL:
            return StoreError(f"MySQL at {where} is out of space ({first}); the batch was rolled back")
        if code in _LOST or isinstance(e, (self._pymysql.err.InterfaceError,)) or self.lost:
            return StoreError(
                f"lost the connection to MySQL at {where} ({first}); the open batch was rolled back", transient=True
            )
        return StoreError(f"MySQL at {where}: {type(e).__name__}: {first}")

    @property
    def lost(self) -> bool:
        return bool(self.conn is None or not self.conn.open)

    def _discover(self) -> tuple[Table, ...]:
        tables = []
        schema = self._args["database"]
        self._refs = {name: f"{self.quote(schema)}.{self.quote(name)}" for name in self.layout.all_tables}
        kinds = dict(
            self.execute(
                "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            ).fetchall()
        )
        for name in self.layout.all_tables:
            kind = kinds.get(name)
            if kind is not None and kind != "BASE TABLE":
                # A view's functions may run as whoever selects from it (SQL SECURITY INVOKER).
                raise StoreError(
                    f"MySQL at {self._where_text}: {name} is not a base table ({shown(kind)}); "
                    "serde-kit reads only the saver's own tables: check the database"
                )
        for name, (tag_col, blob_col) in self.layout.serde_tables.items():
            columns = {
                r[0]
                for r in self.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
                    (schema, name),
                ).fetchall()
            }
            if not columns:
                raise ConfigError(
                    f"MySQL database {self._where_text} is not a LangGraph MySQL saver database: table {name} "
                    "missing (run saver.setup() once, or check the database)"
                )
            absent = [c for c in (tag_col, blob_col) if c not in columns]
            if absent:
                raise ConfigError(
                    f"MySQL table {name} lacks column(s) {', '.join(absent)}; this is not a LangGraph MySQL saver layout"
                )
            indexes: dict[str, list[Any]] = {}
            for index, column in self.execute(
                "SELECT index_name, column_name FROM information_schema.statistics "
                "WHERE table_schema = %s AND table_name = %s AND non_unique = 0 ORDER BY index_name, seq_in_index",
                (schema, name),
            ).fetchall():
                indexes.setdefault(str(index), []).append(column)
            keys: list[CatalogKey] = [
                (index == "PRIMARY", tuple(cols)) for index, cols in indexes.items() if None not in cols
            ]
            pk = known_key(f"MySQL at {self._where_text}", self.layout, name, keys)
            tables.append(Table(name, tag_col, blob_col, pk))
        return tuple(tables)

    def row_identity(self, row: Row) -> tuple[str, str] | None:
        # The current savers key rows by checkpoint_ns_hash = UNHEX(MD5(checkpoint_ns)): the
        # namespace is read once per hash, and trusted only where it hashes to the key.
        columns = self._key_columns(row.table)
        if "thread_id" not in columns or "checkpoint_ns_hash" not in columns:
            return super().row_identity(row)
        thread_id = row.pk[columns.index("thread_id")]
        ns = self._namespace(row.table, row.pk[columns.index("checkpoint_ns_hash")])
        if thread_id is None or ns is None:
            return None
        return str(thread_id), ns

    def _namespace(self, table: str, digest: Any) -> str | None:
        if not isinstance(digest, (bytes, bytearray, memoryview)):
            return None
        digest = bytes(digest)
        if digest not in self._ns_by_hash:
            found = self.query(
                f"SELECT checkpoint_ns FROM {self.ref(table)} WHERE checkpoint_ns_hash = %s LIMIT 1", [digest]
            )
            ns = found[0][0] if found else None
            ok = isinstance(ns, str) and hashlib.md5(ns.encode()).digest() == digest
            self._ns_by_hash[digest] = ns if ok else None
        return self._ns_by_hash[digest]

    def has_column(self, table: str, column: str) -> bool:
        return bool(
            self.query(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "AND column_name = %s",
                [self._args["database"], table, column],
            )
        )

    def close(self) -> None:
        if self.conn is not None and self.conn.open:
            self.conn.close()
