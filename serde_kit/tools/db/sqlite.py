"""SQLite: the ``langgraph-checkpoint-sqlite`` layout, plus LangGraph's ``SqliteCache``.

=========== ====== ==========  ==================================
table       tag    blob        written by
=========== ====== ==========  ==================================
checkpoints type   checkpoint  SqliteSaver (the whole checkpoint)
writes      type   value       SqliteSaver (pending writes)
cache       encoding val       SqliteCache(serde=...) (when present)
=========== ====== ==========  ==================================

Pages walk ``rowid``: SQLite lets a table rebuilt without ``NOT NULL`` hold
NULLs in primary-key columns, and a row-value comparison with a NULL would end
the walk there.  SQLite has no row locks; a batch reads its rows first and
takes the write lock (``BEGIN IMMEDIATE``) at its first update.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serde_kit._secrets import scrubs_frames
from serde_kit.errors import ConfigError, StoreError

from .base import Database
from .batch import SqlBatch
from .catalog import CatalogKey, known_key
from .model import Layout, Row, Table
from .paging import PAGE_BYTES

__all__ = ["LAYOUT", "SqliteDatabase"]

LAYOUT = Layout(
    saver="SqliteSaver",
    serde_tables={"checkpoints": ("type", "checkpoint"), "writes": ("type", "value"), "cache": ("encoding", "val")},
    writes_table="writes",
    writes_blob="value",
    checkpoint_serde=True,
    optional=frozenset({"cache"}),
    # langgraph-checkpoint-sqlite's setup() (every release) and LangGraph's SqliteCache.
    keys={
        "checkpoints": (("thread_id", "checkpoint_ns", "checkpoint_id"),),
        "writes": (("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),),
        "cache": (("ns", "key"),),
    },
    package="langgraph-checkpoint-sqlite",
)

#: The names SQLite gives a table's rowid, unless a declared column takes the name.
_ROWID_NAMES = ("rowid", "_rowid_", "oid")

#: Seconds a statement waits for another connection's lock (the application's short writes).
DEFAULT_TIMEOUT = 30.0

#: Page cache of a writing connection, in KiB: four batches' worth of blobs (rows are
#: spread over more pages than their bytes, and the indexes' pages come on top).
_WRITE_CACHE_KIB = 4 * PAGE_BYTES // 1024


def _text(raw: bytes) -> Any:
    # A TEXT value that is not UTF-8 (a stray row) stays bytes instead of failing the whole page.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _is_wal(path: Path) -> bool:
    """Whether the database file's header says WAL mode (file format read/write versions 2)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head.startswith(b"SQLite format 3\x00") and head[18] == 2 and head[19] == 2


class _Result:
    """A statement's rows, fetched, and its rowcount (what the generic code reads of a cursor)."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchall(self) -> list[Any]:
        return self._rows

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def __iter__(self) -> Any:
        return iter(self._rows)


class _SqliteBatch(SqlBatch):
    db: SqliteDatabase

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        if not items:
            return []
        # One prepared single-row UPDATE run for every row (executemany: SQLite
        # compiles it once, no Python per row beyond its parameters).  Each
        # statement matches at most one row (rowid or primary key), so when the
        # total change count is the number of rows, every row applied.  If not,
        # some row changed since it was read: undo the chunk and go row by row,
        # which tells exactly which ones lost.
        self._begin()
        db = self.db
        params = [(tag, blob, *row.where, row.tag, row.blob) for row, tag, blob in items]
        db.execute("SAVEPOINT serde_kit_cas")
        if db.executemany(self._update_sql, params) == len(items):
            db.execute("RELEASE SAVEPOINT serde_kit_cas")
            return [True] * len(items)
        db.execute("ROLLBACK TO SAVEPOINT serde_kit_cas")
        db.execute("RELEASE SAVEPOINT serde_kit_cas")
        return [self.compare_and_swap(row, tag, blob) for row, tag, blob in items]


class SqliteDatabase(Database):
    """A SqliteSaver database file."""

    dialect = "sqlite"
    mark = "?"
    row_locks = False
    begin_sql = "BEGIN IMMEDIATE"
    layout = LAYOUT
    batch_class = _SqliteBatch

    @scrubs_frames  # the file may not be a database at all (a key file given by mistake)
    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = True, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.timeout = timeout
        if not self.path.exists():
            raise ConfigError(
                f"SQLite database {str(self.path)!r} does not exist; check the path "
                "(serde-kit never creates a database)"
            )
        if not self.path.is_file():
            raise ConfigError(f"SQLite database {str(self.path)!r} is not a file")
        uri = f"{self.path.resolve().as_uri()}?mode={'ro' if readonly else 'rw'}"
        try:
            # isolation_level=None: BEGIN/COMMIT are ours.
            self.conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout, check_same_thread=False)
        except sqlite3.Error as e:
            raise self.translate(e) from None
        try:
            # Views, triggers and defaults stored in the file may not call functions
            # with side effects from this connection (the file is hostile input).
            self.conn.execute("PRAGMA trusted_schema = OFF")
            if not readonly:
                # Room for a whole batch's dirty pages (a batch holds up to PAGE_BYTES of
                # blobs): with SQLite's default 2 MiB cache a 2,000-row batch of 1 KiB rows
                # spilled pages to the journal in the middle of its UPDATEs (8 vs 12 us a
                # row measured).  Memory of this connection only; durability is unchanged.
                self.conn.execute(f"PRAGMA cache_size = -{_WRITE_CACHE_KIB}")
            self.tables = self._discover()
            # A second connection reads while this one writes only in WAL mode: under a
            # rollback journal its shared lock would hold up our own COMMIT.
            self._wal = self._journal_mode() == "wal"
        except sqlite3.DatabaseError as e:
            self.conn.close()
            if self._cannot_create_shm(str(e)):
                # Opening a WAL database reads its -shm (and, to write, its -wal): the first
                # statement fails when SQLite cannot create them, whatever the command.
                raise self.translate(e) from None
            raise StoreError(f"cannot read {str(self.path)!r} as a SQLite database: {e}") from None
        except BaseException:
            self.conn.close()
            raise

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    def _journal_mode(self) -> str:
        row = self.conn.execute("PRAGMA journal_mode").fetchone()
        return str(row[0]).lower() if row else ""

    @property
    def can_read_ahead(self) -> bool:
        return not self.readonly and self._wal

    def open_reader(self) -> SqliteDatabase:
        # The same class, so a subclass's reading rules apply to the reader too.
        return type(self)(self.path, readonly=True, timeout=self.timeout)

    def quote(self, name: str) -> str:
        # The rowid aliases stay bare: quoted, SQLite would read them as column names.
        return name if name in _ROWID_NAMES else super().quote(name)

    def under_header(self, table: Table) -> str:
        tag, blob = self.quote(table.tag_column), self.quote(table.blob_column)
        # = is case-sensitive (BINARY collation), unlike LIKE; a BLOB tag never equals the text suffix.
        return f"(coalesce(substr({tag}, -?) = ?, 0) AND coalesce(substr({blob}, 1, ?) = ?, 0))"

    def head(self, column: str, n: int) -> str:
        # substr() of a zero-length blob is NULL in SQLite; keep short blobs whole.
        return f"CASE WHEN length({column}) <= {int(n)} THEN {column} ELSE substr({column}, 1, {int(n)}) END"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        # SQLite reads rows lazily, so errors can come while fetching: fetch here.
        try:
            try:
                cur = self.conn.execute(sql, list(params))
                return _Result(cur.fetchall(), cur.rowcount)
            except sqlite3.OperationalError as e:
                if "Could not decode to UTF-8" not in str(e):
                    raise
            # A stray TEXT value that is not UTF-8: read this statement again keeping such values as bytes.
            self.conn.text_factory = _text
            try:
                cur = self.conn.execute(sql, list(params))
                return _Result(cur.fetchall(), cur.rowcount)
            finally:
                self.conn.text_factory = str
        except sqlite3.Error as e:
            raise self.translate(e) from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one DML statement for each parameter row; the total number of rows it changed."""
        try:
            return int(self.conn.executemany(sql, rows).rowcount)
        except sqlite3.Error as e:
            raise self.translate(e) from None

    def translate(self, e: sqlite3.Error) -> StoreError:
        text = str(e)
        where = str(self.path)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"{where} is locked by another connection for longer than {self.timeout:g} s "
                "(a long transaction in the application or another tool?); nothing of the open batch "
                "was written: rerun when it is released",
                transient=True,
            )
        if "disk is full" in text or "database or disk is full" in text:
            return StoreError(
                f"the disk holding {where} is full; the open batch was rolled back. Free some space and rerun"
            )
        if self._cannot_create_shm(text):
            shm = self.path.with_name(self.path.name + "-shm")
            return StoreError(
                f"cannot open {where}: it is a WAL database whose {shm.name} file is missing, and SQLite "
                "cannot create it (read-only directory or filesystem). Open it once where it is writable, "
                "or copy the database (with its -wal file, if any) somewhere writable"
            )
        if "readonly" in text or "read-only" in text:
            return StoreError(
                f"{where} cannot be written ({text}): check the file's and its directory's permissions "
                "(SQLite writes a journal beside the file), or run without --apply"
            )
        if "unable to open" in text:
            return StoreError(f"cannot open {where} ({text}): check the path and the directory's permissions")
        if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError):
            return StoreError(f"{where}: {text}")
        return StoreError(f"{where}: {type(e).__name__}: {text}")

    def _cannot_create_shm(self, text: str) -> bool:
        """Whether an error ``text`` comes from a WAL database whose -shm is missing and cannot be created.

        SQLite says "unable to open database file" when a -wal is there, "attempt to
        write a readonly database" when neither is; either way the cause is a WAL
        database (its -wal beside it, or WAL in its header) in a place it cannot write.
        """
        if "unable to open" not in text and "readonly" not in text:
            return False
        shm = self.path.with_name(self.path.name + "-shm")
        if shm.exists():
            return False
        if self.path.with_name(self.path.name + "-wal").exists():
            return "unable to open" in text or not os.access(self.path.parent, os.W_OK)
        return _is_wal(self.path) and not os.access(self.path.parent, os.W_OK)

    def _discover(self) -> tuple[Table, ...]:
        existing = {r[0] for r in self.conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
        missing = [n for n in self.layout.serde_tables if n not in existing and n not in self.layout.optional]
        if missing:
            raise ConfigError(
                f"{str(self.path)!r} is not a LangGraph SqliteSaver database: "
                f"table(s) {', '.join(missing)} missing (run the application once, "
                "or check that this is the right file)"
            )
        self._refs = {name: f"main.{self.quote(name)}" for name in self.layout.all_tables}
        tables = []
        where = repr(str(self.path))
        for name, (tag_col, blob_col) in self.layout.serde_tables.items():
            if name not in existing:
                continue
            ref = self._refs[name]
            info = self.conn.execute(f"PRAGMA main.table_info({self.quote(name)})").fetchall()
            columns = {r[1] for r in info}
            absent = [c for c in (tag_col, blob_col) if c not in columns]
            if absent:
                raise ConfigError(
                    f"{where}: table {name} lacks column(s) {', '.join(absent)}; "
                    f"this is not a LangGraph {self.layout.saver} layout"
                )
            pk = known_key(where, self.layout, name, self._unique_keys(name, info))
            # The rowid under a name no declared column took (a column called "rowid" is not it).
            taken = {str(c).lower() for c in columns}
            free = [n for n in _ROWID_NAMES if n not in taken]
            locator: tuple[str, ...] = ()
            if free:
                try:
                    self.conn.execute(f"SELECT {free[0]} FROM {ref} LIMIT 0")
                    locator = (free[0],)
                except sqlite3.OperationalError:  # WITHOUT ROWID
                    pass
            tables.append(Table(name, tag_col, blob_col, pk, locator))
        return tuple(tables)

    def _unique_keys(self, name: str, info: Sequence[Any]) -> list[CatalogKey]:
        """The table's primary key and unique indexes (plain columns only), from the catalog."""
        keys: list[CatalogKey] = []
        primary = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
        if primary:
            keys.append((True, primary))
        # The index's name is the catalog's: a bound parameter of the pragma function, never SQL text.
        for _seq, index, unique, origin, partial in self.conn.execute(f"PRAGMA main.index_list({self.quote(name)})"):
            if not unique or partial or origin == "pk":
                continue
            cols = self.conn.execute(
                "SELECT seqno, name FROM pragma_index_info(?, 'main') ORDER BY seqno", (index,)
            ).fetchall()
            if cols and all(c[1] is not None for c in cols):  # an expression has no column name
                keys.append((False, tuple(c[1] for c in cols)))
        return keys

    def has_column(self, table: str, column: str) -> bool:
        # Not a probe SELECT: SQLite reads a double-quoted unknown name as a string.
        return any(r[1] == column for r in self.execute(f"PRAGMA main.table_info({self.quote(table)})"))

    def rollback_quietly(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def close(self) -> None:
        self.conn.close()
