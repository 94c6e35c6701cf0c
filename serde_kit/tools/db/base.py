"""The one interface every tool uses to reach a saver's database, and its generic SQL.

A :class:`Database` knows the saver's table layout (:class:`~.model.Layout`),
reads rows in keyset pages, claims batches for compare-and-swap updates
(:mod:`.batch`), counts, and answers the few questions ``inspect`` and
``audit`` ask of the saver's own tables (:mod:`.saver`).  The algorithm lives here once; each dialect module overrides only what
differs: bind-parameter mark, identifier quoting, a few SQL fragments, the claim
and lock strategy, and how driver errors translate into :class:`StoreError`.

Pages are walked by a *locator* (``rowid`` on SQLite, the primary key
elsewhere), so a NULL in a primary-key column cannot end a walk early; rows are
reported by their primary key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from serde_kit._secrets import scrubs_frames
from serde_kit.errors import ConfigError, StoreError

from .batch import SqlBatch
from .model import Layout, Row, SealedUnder, Table, driver_value
from .paging import PageSizer
from .saver import SaverQueries

__all__ = ["Database", "ServerDatabase"]


class Database(SaverQueries, ABC):
    """A LangGraph checkpoint database opened for the tools (use as a context manager)."""

    dialect: ClassVar[str]
    mark: ClassVar[str] = "?"
    layout: Layout
    tables: tuple[Table, ...]
    readonly: bool

    #: table name -> its schema-qualified, quoted SQL name (set when the tables are found)
    _refs: dict[str, str]

    # -- dialect hooks ---------------------------------------------------------
    def quote(self, name: str) -> str:
        """``name`` as a quoted identifier (an embedded quote doubled).

        Only the layout's constant names reach here (and, on PostgreSQL, the
        schema the catalog put a saver table in); the quoting is the second wall.
        """
        if "\x00" in name:
            raise StoreError(f"an identifier with a NUL character cannot be quoted: {name!r}")
        return '"' + name.replace('"', '""') + '"'

    def ref(self, table: str) -> str:
        """The SQL name of saver table ``table``: schema-qualified and quoted."""
        refs: dict[str, str] = getattr(self, "_refs", {})
        found = refs.get(table)
        return self.quote(table) if found is None else found

    def row_identity(self, row: Row) -> tuple[str, str] | None:
        """``(thread_id, checkpoint_ns)`` from a row's own key, or None (no thread, e.g. ``cache``)."""
        columns = self._key_columns(row.table)
        if "thread_id" not in columns or "checkpoint_ns" not in columns:
            return None
        thread_id = row.pk[columns.index("thread_id")]
        ns = row.pk[columns.index("checkpoint_ns")]
        if thread_id is None or not isinstance(ns, str):
            return None
        return str(thread_id), ns

    def _key_columns(self, table: str) -> tuple[str, ...]:
        for t in self.tables:
            if t.name == table:
                return t.pk_columns
        return ()

    def null_safe_equal(self, column: str) -> str:
        """SQL true when ``column`` equals the bound value, NULL equal to NULL."""
        return f"{column} IS {self.mark}"

    def head(self, column: str, n: int) -> str:
        """SQL for the first ``n`` bytes of ``column``."""
        return f"substr({column}, 1, {int(n)})"

    @abstractmethod
    def under_header(self, table: Table) -> str:
        """SQL true when a row's tag ends with the bound suffix and its blob starts with the bound header.

        Four marks, in the order of :meth:`SealedUnder.params`: suffix length, suffix, header length, header.
        """

    def would_claim(self, row: Row, exclude: SealedUnder | None) -> bool:
        """What a claim's WHERE (below and :meth:`under_header`) decides for ``row``, in Python.

        A non-NULL blob not already sealed under ``exclude`` (every non-NULL blob when None).
        """
        return row.blob is not None and (exclude is None or not exclude.holds(row.tag, row.blob))

    #: Whether the database locks rows (claims happen inside the transaction).
    row_locks: ClassVar[bool] = True
    #: Whether rotate reads and re-encrypts the next batch on a second connection
    #: (:meth:`open_reader`) while this one commits the current batch, where
    #: :attr:`can_read_ahead`.  Off by default: on the shared 2-CPU machine it
    #: measured slower (bench/README.md, "Pipelined rotation"); set it on an
    #: instance to use it.
    reads_ahead: bool = False

    @property
    def can_read_ahead(self) -> bool:
        """Whether a second connection may claim batches: only where a batch's rows are
        claimed outside its transaction anyway (no row locks), so the claim means the
        same on either connection."""
        return False

    def open_reader(self) -> Database:
        """A second, read-only connection to the same database, for reading ahead (see :attr:`can_read_ahead`)."""
        raise NotImplementedError(f"{self.dialect} does not read ahead on a second connection")
    #: The statement that opens a batch transaction.
    begin_sql: ClassVar[str] = "BEGIN"

    def is_lock_unavailable(self, error: StoreError) -> bool:
        """True when ``error`` is a NOWAIT claim that met a locked row."""
        return False

    def rollback_quietly(self) -> None:
        """End the open transaction; a connection already lost has nothing to roll back."""
        try:
            self.execute("ROLLBACK")
        except StoreError:
            pass

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement and return a cursor; driver errors become StoreError."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def is_transient(self, error: BaseException) -> bool:
        """True when ``error`` aborted a batch transaction that can simply be retried."""
        return isinstance(error, StoreError) and error.transient

    @property
    def lost(self) -> bool:
        """Whether the connection is gone (a server restarted or ended our session)."""
        return False

    def reconnect(self) -> None:
        """Open a new connection after the old one was lost (a no-op where none can be lost)."""

    def describe(self) -> str:
        """Where this database is, for messages (never a password)."""
        return self.dialect

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- SQL building ------------------------------------------------------------
    def _cols(self, columns: Sequence[str], prefix: str = "") -> str:
        return ", ".join(prefix + self.quote(c) for c in columns)

    def _row_value(self, columns: Sequence[str], op: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``(columns) op (values)`` for keyset paging, as SQL and its parameters."""
        marks = ", ".join([self.mark] * len(columns))
        return f"({self._cols(columns)}) {op} ({marks})", list(values)

    def _where(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        exclude: SealedUnder | None = None,
        claim: bool = False,
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        walk = table.walk_columns
        if claim:
            clauses.append(f"{self.quote(table.blob_column)} IS NOT NULL")
        for op, values in ((">", after), ("<=", until)):
            if values is not None:
                sql, more = self._row_value(walk, op, values)
                clauses.append(sql)
                params.extend(more)
        if exclude is not None:
            clauses.append(f"NOT {self.under_header(table)}")
            params.extend(exclude.params())
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _select_sql(self, table: Table, where: str, *, head: int | None = None, lock: str = "") -> str:
        blob = self.quote(table.blob_column)
        if head is not None:
            blob = self.head(blob, head)
        extra = [c for c in table.locator if c not in table.pk_columns]
        columns = [self._cols(table.pk_columns)]
        if extra:
            columns.append(self._cols(extra))
        columns += [self.quote(table.tag_column), blob]
        return (
            f"SELECT {', '.join(columns)} FROM {self.ref(table.name)}{where} "
            f"ORDER BY {self._cols(table.walk_columns)} LIMIT {self.mark} {lock}"
        ).rstrip()

    def _rows(self, table: Table, records: Any) -> list[Row]:
        n = len(table.pk_columns)
        extra = [c for c in table.locator if c not in table.pk_columns]
        name = table.name
        t, b = n + len(extra), n + len(extra) + 1
        if not table.locator:
            # The common server layout: the primary key is the walk order (one Row per record, no more).
            return [
                Row(name, tuple(r[:n]), r[t], r[b] if type(r[b]) is bytes else driver_value(r[b])) for r in records
            ]
        out = []
        for r in records:
            pk = tuple(r[:n])
            loc = tuple(r[n:t]) if extra else tuple(pk[table.pk_columns.index(c)] for c in table.locator)
            blob = r[b]
            out.append(Row(name, pk, r[t], blob if type(blob) is bytes else driver_value(blob), loc))
        return out

    def select_rows(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        head: int | None = None,
        exclude: SealedUnder | None = None,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
        lock: str = "",
    ) -> list[Row]:
        """One page of ``table`` in walk order (the building block of pages and batches)."""
        where, params = self._where(table, after=after, until=until, exclude=exclude, claim=claim)
        sql = self._select_sql(table, where, head=head, lock=lock)
        return self._rows(table, self._fetch_rows(sql, [*params, limit]))

    def _fetch_rows(self, sql: str, params: Sequence[Any]) -> Any:
        """The records of a page or claim SELECT (a dialect may fetch them in a cheaper format)."""
        return self.execute(sql, params).fetchall()

    # -- reading -------------------------------------------------------------------
    def count(
        self,
        table: Table,
        *,
        exclude: SealedUnder | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int:
        """Rows of ``table`` matching the conditions (all rows when none are given)."""
        where, params = self._where(table, after=after, until=until, exclude=exclude, claim=claim)
        return int(self.execute(f"SELECT count(*) FROM {self.ref(table.name)}{where}", params).fetchone()[0])

    def count_rows_by_table(self) -> dict[str, int]:
        """Number of rows per table."""
        return {t.name: self.count(t) for t in self.tables}

    def count_rows(self) -> int:
        """Number of rows in all tables (empty rows included)."""
        return sum(self.count_rows_by_table().values())

    def count_pending(self, table: Table, *, exclude: SealedUnder | None) -> int:
        """Rows of ``table`` that :meth:`batch` would claim."""
        return self.count(table, exclude=exclude, claim=True)

    def table(self, name: str) -> Table:
        """The :class:`Table` called ``name``; ConfigError if there is none."""
        for t in self.tables:
            if t.name == name:
                return t
        raise ConfigError(f"no table {name!r} in this {self.dialect} database")

    def iter_rows(
        self,
        batch_size: int = 500,
        *,
        tables: Sequence[str] | None = None,
        head: int | None = None,
    ) -> Iterator[list[Row]]:
        """Every row, table by table, in walk order, ``batch_size`` at a time.

        Each page is its own short query, so no long transaction is held open
        beside a running application.  With ``head``, only the first ``head``
        bytes of each blob are read.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        picked = list(self.tables) if tables is None else [self.table(n) for n in tables]
        for table in picked:
            after: tuple[Any, ...] | None = None
            sizer = PageSizer(batch_size)
            while True:
                rows = self.select_rows(table, after=after, limit=sizer.limit, head=head)
                if not rows:
                    break
                sizer.saw(rows)
                yield rows
                after = rows[-1].where

    # -- writing ---------------------------------------------------------------------
    def check_writable(self) -> None:
        """ConfigError unless opened with ``readonly=False``."""
        if self.readonly:
            raise ConfigError("this database was opened read-only; open it with readonly=False to write")

    #: The batch transaction of this dialect (a :class:`SqlBatch` that overrides what differs).
    batch_class: ClassVar[type[SqlBatch]] = SqlBatch

    def batch(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude: SealedUnder | None = None,
        skip_locked: bool = True,
        until: tuple[Any, ...] | None = None,
        rows: list[Row] | None = None,
    ) -> SqlBatch:
        """Claim up to ``limit`` rows of ``table`` after locator ``after`` (to ``until``, inclusive).

        Rows with a NULL blob are never claimed, nor rows already
        :class:`~.model.SealedUnder` ``exclude``.  Everything done through the yielded
        :class:`Batch` is one transaction, committed when the block exits
        normally and rolled back on an exception.  Where the database has row
        locks, rows are locked ``FOR UPDATE`` (``SKIP LOCKED`` unless
        ``skip_locked=False``) so concurrent workers share them.  Without row
        locks, ``rows`` may give the claim already read (on a reader
        connection, :meth:`open_reader`); compare-and-swap catches any of them
        changed since.
        """
        self.check_writable()
        if rows is not None and self.row_locks:
            raise ValueError("rows claimed elsewhere cannot be locked by this batch; claim them here")
        return self.batch_class(
            self,
            table,
            after=after,
            limit=limit,
            exclude=exclude,
            skip_locked=skip_locked,
            until=until,
            rows=rows,
        )


class ServerDatabase(Database):
    """A database behind a network connection (PostgreSQL, MySQL): connect, reconnect, describe.

    A dialect sets ``_where_text`` (host, port, database and user, never a
    password) and implements :meth:`_connect`, which opens ``self.conn`` and
    raises :class:`ConfigError` with a one-line reason when it cannot.
    """

    conn: Any = None
    _where_text: str

    @abstractmethod
    def _connect(self) -> None:
        """Open ``self.conn`` (autocommit; read-only when ``self.readonly``)."""

    @abstractmethod
    def _discover(self) -> tuple[Table, ...]:
        """The saver's tables, from the catalog; ConfigError when the layout is not a saver's."""

    def _open(self) -> None:
        """Connect and discover the tables (the connection is closed again if that fails)."""
        self._connect()
        try:
            self.tables = self._discover()
        except BaseException:
            self.conn.close()
            raise

    @scrubs_frames  # the connection arguments hold a password: no frame of a failed reconnect keeps them
    def reconnect(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass  # already gone: that is why we reconnect
        try:
            self._connect()
        except StoreError as e:
            raise StoreError(str(e), transient=True) from None

    def describe(self) -> str:
        return f"{self.dialect}:{self._where_text}"

    def is_lock_unavailable(self, error: StoreError) -> bool:
        return "is locked" in str(error)
