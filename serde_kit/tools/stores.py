"""Row access to the tables LangGraph's savers write through ``serde``.

Only the columns that hold ``serde`` output are touched: a type tag column and
a blob column per table.

=============  ====================  ======  ==========
saver          table                 tag     blob
=============  ====================  ======  ==========
SqliteSaver    ``checkpoints``       type    checkpoint
SqliteSaver    ``writes``            type    value
PostgresSaver  ``checkpoint_blobs``  type    blob
PostgresSaver  ``checkpoint_writes`` type    blob
=============  ====================  ======  ==========

(Metadata, and the PostgreSQL ``checkpoints`` JSONB, are plain JSON written by
the saver itself, never through ``serde``.)  Primary-key columns are read from
the database catalog, so the shallow PostgreSQL saver's layout works as well.

PostgresSaver writes ``checkpoint_blobs`` rows with type ``"empty"`` and a NULL
blob for channels that have a version but no value; such rows (and any row with
a NULL blob) carry no ``serde`` output and are reported as ``Row.is_empty``.

Writes go through :meth:`Store.batch`: one transaction per batch, and a
compare-and-swap update per row, so a row the application changed after it was
read is never overwritten with stale data.
"""

from __future__ import annotations

import os
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from serde_kit.errors import ConfigError

__all__ = [
    "EMPTY_TAG",
    "Batch",
    "PostgresStore",
    "Row",
    "SqliteStore",
    "Store",
    "Table",
    "open_store",
]

#: Type tag PostgresSaver stores (with a NULL blob) for a channel without a value.
EMPTY_TAG = "empty"


@dataclass(frozen=True)
class Table:
    """One table holding ``serde`` output."""

    name: str
    tag_column: str
    blob_column: str
    pk_columns: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """One stored row: its table, primary-key values, type tag and blob."""

    table: str
    pk: tuple[Any, ...]
    tag: str | None
    blob: bytes | None

    @property
    def is_empty(self) -> bool:
        """True when the row holds no ``serde`` output (NULL blob or the ``"empty"`` tag)."""
        return self.blob is None or self.tag is None or self.tag == EMPTY_TAG


# name -> (tag column, blob column); the order is the order rows are visited.
_SQLITE_LAYOUT = {"checkpoints": ("type", "checkpoint"), "writes": ("type", "value")}
_POSTGRES_LAYOUT = {
    "checkpoint_blobs": ("type", "blob"),
    "checkpoint_writes": ("type", "blob"),
}


class Batch(ABC):
    """Rows claimed for one write transaction (see :meth:`Store.batch`)."""

    rows: list[Row]

    @abstractmethod
    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        """Set ``row`` to ``(tag, blob)`` only if it still holds ``row.tag``/``row.blob``.

        Returns whether the update applied.
        """

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        """:meth:`compare_and_swap` for several ``(row, tag, blob)``; one result each."""
        return [self.compare_and_swap(row, tag, blob) for row, tag, blob in items]

    @abstractmethod
    def reread(self, row: Row) -> Row | None:
        """The row's current content inside this transaction (None if it was deleted)."""

    @abstractmethod
    def count_claimable(self) -> int:
        """Rows this batch could have claimed had none been locked by someone else.

        Counts, without locking, the rows matching the batch's conditions up to
        its last row (or to ``until``/the end when it claimed none); more than
        ``len(rows)`` means rows were skipped as locked.
        """


class Store(ABC):
    """A LangGraph checkpoint database opened for the tools."""

    kind: str
    tables: tuple[Table, ...]
    readonly: bool

    # -- reading ------------------------------------------------------------
    def count_rows(self) -> int:
        """Number of rows in all tables (empty rows included)."""
        return sum(self.count_rows_by_table().values())

    def count_rows_by_table(self) -> dict[str, int]:
        """Number of rows per table."""
        return {t.name: self._count(t) for t in self.tables}

    def iter_rows(
        self,
        batch_size: int = 500,
        *,
        tables: Sequence[str] | None = None,
        head: int | None = None,
    ) -> Iterator[list[Row]]:
        """Every row, table by table, in primary-key order, ``batch_size`` at a time.

        Each batch is its own short query (keyset pagination), so no long
        transaction is held open beside a running application.  With ``head``,
        only the first ``head`` bytes of each blob are read (enough for the
        header-only classification of large databases).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        for table in self._pick(tables):
            after: tuple[Any, ...] | None = None
            while True:
                rows = self._page(table, after, batch_size, head=head)
                if not rows:
                    break
                yield rows
                after = rows[-1].pk

    def table(self, name: str) -> Table:
        """The :class:`Table` called ``name``; ConfigError if this store has none."""
        for t in self.tables:
            if t.name == name:
                return t
        raise ConfigError(f"no table {name!r} in this {self.kind} store")

    def _pick(self, names: Sequence[str] | None) -> list[Table]:
        if names is None:
            return list(self.tables)
        return [self.table(n) for n in names]

    # -- writing ------------------------------------------------------------
    def count_pending(self, table: Table, *, exclude_header: bytes | None) -> int:
        """Rows of ``table`` that :meth:`batch` would claim: a non-NULL blob not under ``exclude_header``."""
        return self._count(table, exclude_header=exclude_header, claim=True)

    @abstractmethod
    def batch(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None = None,
        skip_locked: bool = True,
        until: tuple[Any, ...] | None = None,
    ) -> AbstractContextManager[Batch]:
        """Claim up to ``limit`` rows of ``table`` after primary key ``after`` (and up to
        ``until``, inclusive, when given), for writing.

        Rows with a NULL blob are never claimed, nor (when ``exclude_header``
        is given) ``+aesgcm`` rows whose blob starts with it.  Everything done
        through the yielded :class:`Batch` is one transaction, committed when
        the block exits normally and rolled back on an exception.  On
        PostgreSQL the rows are locked ``FOR UPDATE``, ``SKIP LOCKED`` unless
        ``skip_locked=False``, so concurrent workers share the rows.
        """

    # -- plumbing -----------------------------------------------------------
    @abstractmethod
    def _count(
        self,
        table: Table,
        *,
        exclude_header: bytes | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int: ...

    @abstractmethod
    def _page(
        self, table: Table, after: tuple[Any, ...] | None, limit: int, *, head: int | None
    ) -> list[Row]: ...

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def is_transient(self, error: BaseException) -> bool:
        """True when ``error`` aborted a batch transaction that can simply be retried."""
        return False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """Where this store is, for messages (never a password)."""
        return self.kind


def _row_value_predicate(columns: Sequence[str], placeholder: str, *, op: str = ">") -> str:
    cols = ", ".join(columns)
    marks = ", ".join([placeholder] * len(columns))
    return f"({cols}) {op} ({marks})"


def _check_write(store: Store) -> None:
    if store.readonly:
        raise ConfigError("this store was opened read-only; open it with readonly=False to write")


# ---------------------------------------------------------------------------
# SQLite
# ---------------------------------------------------------------------------


class SqliteStore(Store):
    """A SqliteSaver database file."""

    kind = "sqlite"
    _mark = "?"

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if not self.path.exists():
            raise ConfigError(
                f"SQLite database {str(self.path)!r} does not exist; check the path "
                "(serde-kit never creates a database)"
            )
        if not self.path.is_file():
            raise ConfigError(f"SQLite database {str(self.path)!r} is not a file")
        mode = "ro" if readonly else "rw"
        uri = f"{self.path.resolve().as_uri()}?mode={mode}"
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves. The timeout
            # waits out the application's own short write transactions.
            self.conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=30, check_same_thread=False
            )
            self.tables = self._discover()
        except sqlite3.DatabaseError as e:
            if getattr(self, "conn", None) is not None:
                self.conn.close()
            raise ConfigError(
                f"cannot read {str(self.path)!r} as a SQLite database: {e}"
            ) from None

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    def is_transient(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)

    def _discover(self) -> tuple[Table, ...]:
        existing = {
            r[0]
            for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        missing = [n for n in _SQLITE_LAYOUT if n not in existing]
        if missing:
            raise ConfigError(
                f"{str(self.path)!r} is not a LangGraph SqliteSaver database: "
                f"table(s) {', '.join(missing)} missing (run the application once, "
                "or check that this is the right file)"
            )
        tables = []
        for name, (tag_col, blob_col) in _SQLITE_LAYOUT.items():
            info = self.conn.execute(f'PRAGMA table_info("{name}")').fetchall()
            columns = {r[1] for r in info}
            absent = [c for c in (tag_col, blob_col) if c not in columns]
            pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            if absent or not pk:
                what = f"column(s) {', '.join(absent)}" if absent else "a primary key"
                raise ConfigError(
                    f"{str(self.path)!r}: table {name} lacks {what}; "
                    "this is not a LangGraph SqliteSaver layout"
                )
            tables.append(Table(name, tag_col, blob_col, pk))
        return tuple(tables)

    def _where(
        self,
        table: Table,
        after: tuple[Any, ...] | None,
        exclude_header: bytes | None,
        *,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
    ) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if claim:
            clauses.append(f"{table.blob_column} IS NOT NULL")
        if until is not None:
            clauses.append(_row_value_predicate(table.pk_columns, self._mark, op="<="))
            params.extend(until)
        if after is not None:
            clauses.append(_row_value_predicate(table.pk_columns, "?"))
            params.extend(after)
        if exclude_header is not None:
            # GLOB is case-sensitive, unlike LIKE.
            clauses.append(
                f"{table.blob_column} IS NOT NULL AND NOT ("
                f"coalesce({table.tag_column}, '') GLOB '*+aesgcm' "
                f"AND coalesce(substr({table.blob_column}, 1, ?) = ?, 0))"
            )
            params.extend([len(exclude_header), exclude_header])
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _count(
        self,
        table: Table,
        *,
        exclude_header: bytes | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int:
        where, params = self._where(table, after, exclude_header, claim=claim, until=until)
        return self.conn.execute(f"SELECT count(*) FROM {table.name}{where}", params).fetchone()[0]

    def _select(
        self,
        table: Table,
        after: tuple[Any, ...] | None,
        limit: int,
        *,
        head: int | None = None,
        exclude_header: bytes | None = None,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
    ) -> list[Row]:
        where, params = self._where(table, after, exclude_header, claim=claim, until=until)
        pk = ", ".join(table.pk_columns)
        blob = table.blob_column
        if head is not None:
            # substr() of a zero-length blob is NULL in SQLite; keep short blobs whole.
            blob = f"CASE WHEN length({blob}) <= {int(head)} THEN {blob} ELSE substr({blob}, 1, {int(head)}) END"
        sql = (
            f"SELECT {pk}, {table.tag_column}, {blob} FROM {table.name}{where} "
            f"ORDER BY {pk} LIMIT ?"
        )
        n = len(table.pk_columns)
        return [
            Row(table.name, tuple(r[:n]), r[n], None if r[n + 1] is None else bytes(r[n + 1]))
            for r in self.conn.execute(sql, [*params, limit])
        ]

    def _page(
        self, table: Table, after: tuple[Any, ...] | None, limit: int, *, head: int | None
    ) -> list[Row]:
        return self._select(table, after, limit, head=head)

    def batch(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None = None,
        skip_locked: bool = True,
        until: tuple[Any, ...] | None = None,
    ) -> AbstractContextManager[Batch]:
        _check_write(self)
        rows = self._select(table, after, limit, exclude_header=exclude_header, claim=True, until=until)
        return _SqliteBatch(self, table, rows)

    def close(self) -> None:
        self.conn.close()


class _SqliteBatch(Batch, AbstractContextManager):
    # Rows are read outside the transaction and the write lock is taken only
    # for the updates (BEGIN IMMEDIATE on the first one), so the application
    # is blocked for as short a time as possible; compare-and-swap catches any
    # row it changed in between.
    def __init__(self, store: SqliteStore, table: Table, rows: list[Row]) -> None:
        self.store = store
        self.table = table
        self.rows = rows
        self._in_tx = False
        t = table
        pk_match = " AND ".join(f"{c} = ?" for c in t.pk_columns)
        self._update_sql = (
            f"UPDATE {t.name} SET {t.tag_column} = ?, {t.blob_column} = ? "
            f"WHERE {pk_match} AND {t.tag_column} IS ? AND {t.blob_column} = ?"
        )
        self._reread_sql = (
            f"SELECT {t.tag_column}, {t.blob_column} FROM {t.name} WHERE {pk_match}"
        )

    def __enter__(self) -> _SqliteBatch:
        return self

    def count_claimable(self) -> int:
        return len(self.rows)  # SQLite has no row locks to skip

    def _begin(self) -> None:
        if not self._in_tx:
            self.store.conn.execute("BEGIN IMMEDIATE")
            self._in_tx = True

    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        self._begin()
        cur = self.store.conn.execute(
            self._update_sql, [tag, blob, *row.pk, row.tag, row.blob]
        )
        return cur.rowcount == 1

    def reread(self, row: Row) -> Row | None:
        self._begin()
        r = self.store.conn.execute(self._reread_sql, list(row.pk)).fetchone()
        if r is None:
            return None
        return Row(row.table, row.pk, r[0], None if r[1] is None else bytes(r[1]))

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if not self._in_tx:
            return
        self._in_tx = False
        if exc_type is None:
            self.store.conn.execute("COMMIT")
        else:
            self.store.conn.execute("ROLLBACK")


# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------


def _describe_dsn(dsn: str) -> str:
    """host:port/dbname (user) of a DSN, without the password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(dsn)
    except Exception:
        return "the given DSN (could not be parsed)"
    host = info.get("host") or os.environ.get("PGHOST") or "localhost"
    port = info.get("port") or os.environ.get("PGPORT") or "5432"
    db = info.get("dbname") or os.environ.get("PGDATABASE") or "(default)"
    user = info.get("user") or os.environ.get("PGUSER") or "(default)"
    return f"{host}:{port}/{db} as user {user}"


def _scrub(message: str, dsn: str) -> str:
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
    except Exception:
        password = None
    if password:
        message = message.replace(str(password), "***")
    return message.replace(dsn, "<dsn>")


class PostgresStore(Store):
    """A PostgresSaver (or ShallowPostgresSaver) database."""

    kind = "postgres"
    _mark = "%s"

    def __init__(self, dsn: str, *, readonly: bool = True) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "PostgreSQL support needs psycopg: pip install 'serde-kit[postgres]'"
            ) from None
        self.readonly = readonly
        self._where_text = _describe_dsn(dsn)
        self._column_types: dict[str, dict[str, str]] = {}
        try:
            self.conn = psycopg.connect(dsn, autocommit=True, connect_timeout=15)
        except psycopg.Error as e:
            first = _scrub(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__, dsn)
            raise ConfigError(
                f"cannot connect to PostgreSQL at {self._where_text}: {first}"
            ) from None
        try:
            if readonly:
                self.conn.execute("SET default_transaction_read_only = on")
            self.tables = self._discover()
        except BaseException:
            self.conn.close()
            raise

    def describe(self) -> str:
        return f"postgres:{self._where_text}"

    def is_transient(self, error: BaseException) -> bool:
        from psycopg import errors

        return isinstance(
            error, (errors.DeadlockDetected, errors.SerializationFailure, errors.LockNotAvailable)
        )

    def _discover(self) -> tuple[Table, ...]:
        found = {}
        for name in _POSTGRES_LAYOUT:
            oid = self.conn.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]
            found[name] = oid
        missing = [n for n, oid in found.items() if oid is None]
        if missing:
            raise ConfigError(
                f"PostgreSQL database {self._where_text} is not a LangGraph PostgresSaver "
                f"database: table(s) {', '.join(missing)} missing from the search path "
                "(run saver.setup() once, or check the database and schema)"
            )
        tables = []
        for name, (tag_col, blob_col) in _POSTGRES_LAYOUT.items():
            oid = found[name]
            columns = {
                r[0]: r[1]
                for r in self.conn.execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                    (oid,),
                )
            }
            pk = tuple(
                r[0]
                for r in self.conn.execute(
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
                raise ConfigError(
                    f"PostgreSQL table {name} lacks {what}; "
                    "this is not a LangGraph PostgresSaver layout"
                )
            self._column_types[name] = columns
            tables.append(Table(name, tag_col, blob_col, pk))
        return tuple(tables)

    def _where(
        self,
        table: Table,
        after: tuple[Any, ...] | None,
        exclude_header: bytes | None,
        *,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
    ) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if claim:
            clauses.append(f"{table.blob_column} IS NOT NULL")
        if until is not None:
            clauses.append(_row_value_predicate(table.pk_columns, self._mark, op="<="))
            params.extend(until)
        if after is not None:
            clauses.append(_row_value_predicate(table.pk_columns, "%s"))
            params.extend(after)
        if exclude_header is not None:
            clauses.append(
                f"{table.blob_column} IS NOT NULL AND NOT ("
                f"coalesce(right({table.tag_column}, 7), '') = '+aesgcm' "
                f"AND coalesce(substring({table.blob_column} from 1 for %s) = %s, false))"
            )
            params.extend([len(exclude_header), exclude_header])
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _count(
        self,
        table: Table,
        *,
        exclude_header: bytes | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int:
        where, params = self._where(table, after, exclude_header, claim=claim, until=until)
        return self.conn.execute(f"SELECT count(*) FROM {table.name}{where}", params).fetchone()[0]

    def _select(
        self,
        cur: Any,
        table: Table,
        after: tuple[Any, ...] | None,
        limit: int,
        *,
        head: int | None = None,
        exclude_header: bytes | None = None,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
        lock: str = "",
    ) -> list[Row]:
        where, params = self._where(table, after, exclude_header, claim=claim, until=until)
        pk = ", ".join(table.pk_columns)
        blob = (
            table.blob_column
            if head is None
            else f"substring({table.blob_column} from 1 for {int(head)})"
        )
        sql = (
            f"SELECT {pk}, {table.tag_column}, {blob} FROM {table.name}{where} "
            f"ORDER BY {pk} LIMIT %s {lock}"
        )
        n = len(table.pk_columns)
        return [
            Row(table.name, tuple(r[:n]), r[n], None if r[n + 1] is None else bytes(r[n + 1]))
            for r in cur.execute(sql, [*params, limit])
        ]

    def _page(
        self, table: Table, after: tuple[Any, ...] | None, limit: int, *, head: int | None
    ) -> list[Row]:
        with self.conn.cursor() as cur:
            return self._select(cur, table, after, limit, head=head)

    def batch(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None = None,
        skip_locked: bool = True,
        until: tuple[Any, ...] | None = None,
    ) -> AbstractContextManager[Batch]:
        _check_write(self)
        return _PostgresBatch(self, table, after, limit, exclude_header, skip_locked, until)

    def close(self) -> None:
        self.conn.close()


class _PostgresBatch(Batch, AbstractContextManager):
    def __init__(
        self,
        store: PostgresStore,
        table: Table,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None,
        skip_locked: bool,
        until: tuple[Any, ...] | None,
    ) -> None:
        self.store = store
        self.table = table
        self._args = (after, limit, exclude_header, skip_locked, until)
        t = table
        pk_match = " AND ".join(f"{c} = %s" for c in t.pk_columns)
        self._update_sql = (
            f"UPDATE {t.name} SET {t.tag_column} = %s, {t.blob_column} = %s "
            f"WHERE {pk_match} AND {t.tag_column} IS NOT DISTINCT FROM %s "
            f"AND {t.blob_column} = %s"
        )
        self._reread_sql = (
            f"SELECT {t.tag_column}, {t.blob_column} FROM {t.name} WHERE {pk_match} FOR UPDATE"
        )

    def __enter__(self) -> _PostgresBatch:
        after, limit, exclude_header, skip_locked, until = self._args
        self._tx = self.store.conn.transaction()
        self._tx.__enter__()
        try:
            self._cur = self.store.conn.cursor()
            # Locking the rows inside the batch transaction is what lets several
            # workers run at once: each row is claimed by exactly one of them.
            select = partial(
                self.store._select,
                self._cur,
                self.table,
                after,
                limit,
                exclude_header=exclude_header,
                claim=True,
                until=until,
            )
            from psycopg import errors as psycopg_errors

            self._skipped_some = False
            if not skip_locked:
                self.rows = select(lock="FOR UPDATE")
            else:
                # NOWAIT first: when nothing is locked (the usual case) we know
                # no row was skipped without counting.
                try:
                    with self.store.conn.transaction():  # a savepoint
                        self.rows = select(lock="FOR UPDATE NOWAIT")
                except psycopg_errors.LockNotAvailable:
                    self.rows = select(lock="FOR UPDATE SKIP LOCKED")
                    self._skipped_some = True
        except BaseException as e:
            self._tx.__exit__(type(e), e, e.__traceback__)
            raise
        return self

    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        cur = self._cur.execute(self._update_sql, [tag, blob, *row.pk, row.tag, row.blob])
        return cur.rowcount == 1

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        if not items:
            return []
        # One UPDATE per batch, its rows passed as arrays: one round trip and a
        # constant query text (parsed and planned once) whatever the batch size.
        t = self.table
        types = self.store._column_types[t.name]
        names = [f"k{i}" for i in range(len(t.pk_columns))]
        arrays = [*(types[c] for c in t.pk_columns), "text", "bytea", "text", "bytea"]
        pk_match = " AND ".join(f"t.{c} = v.{k}" for c, k in zip(t.pk_columns, names, strict=True))
        sql = (
            f"UPDATE {t.name} AS t SET {t.tag_column} = v.new_tag, {t.blob_column} = v.new_blob "
            f"FROM unnest({', '.join(f'%b::{a}[]' for a in arrays)}) "
            f"AS v({', '.join(names)}, old_tag, old_blob, new_tag, new_blob) "
            f"WHERE {pk_match} AND t.{t.tag_column} IS NOT DISTINCT FROM v.old_tag "
            f"AND t.{t.blob_column} = v.old_blob "
            f"RETURNING {', '.join(f't.{c}' for c in t.pk_columns)}"
        )
        columns: list[list[Any]] = [[] for _ in arrays]
        for row, tag, blob in items:
            for column, value in zip(columns, (*row.pk, row.tag, row.blob, tag, blob), strict=True):
                column.append(value)
        done = {tuple(r) for r in self._cur.execute(sql, columns).fetchall()}
        return [row.pk in done for row, _, _ in items]

    def count_claimable(self) -> int:
        if not self._skipped_some:
            return len(self.rows)
        after, _limit, exclude_header, _skip, until = self._args
        last = self.rows[-1].pk if self.rows else until
        return self.store._count(
            self.table, exclude_header=exclude_header, after=after, until=last, claim=True
        )

    def reread(self, row: Row) -> Row | None:
        r = self._cur.execute(self._reread_sql, list(row.pk)).fetchone()
        if r is None:
            return None
        return Row(row.table, row.pk, r[0], None if r[1] is None else bytes(r[1]))

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self._cur.close()
        finally:
            self._tx.__exit__(exc_type, exc, tb)


# ---------------------------------------------------------------------------


def open_store(
    *, sqlite: str | os.PathLike[str] | None = None, postgres: str | None = None, readonly: bool = True
) -> Store:
    """Open a SqliteSaver file or a PostgresSaver database (exactly one of the two).

    Read-only by default, and really so: SQLite is opened with ``mode=ro``,
    PostgreSQL sessions get ``default_transaction_read_only = on``.  Use as a
    context manager.  Raises :class:`~serde_kit.errors.ConfigError` when the
    file does not exist (it is never created), the tables are missing, or the
    server cannot be reached (the message names host and port, never the
    password).
    """
    if (sqlite is None) == (postgres is None):
        raise ConfigError("give exactly one of sqlite=PATH or postgres=DSN")
    if sqlite is not None:
        return SqliteStore(sqlite, readonly=readonly)
    return PostgresStore(str(postgres), readonly=readonly)
