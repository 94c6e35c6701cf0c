"""The one interface every tool uses to reach a saver's database, and its generic SQL.

A :class:`Database` knows the saver's table layout (:class:`Layout`), reads
rows in keyset pages, claims batches for compare-and-swap updates, counts, and
answers the few questions ``inspect`` and ``audit`` ask of the saver's own
tables.  The algorithm lives here once; each dialect module overrides only what
differs: bind-parameter mark, identifier quoting, a few SQL fragments, the claim
and lock strategy, and how driver errors translate into :class:`StoreError`.

Pages are walked by a *locator* (``rowid`` on SQLite, the primary key
elsewhere), so a NULL in a primary-key column cannot end a walk early; rows are
reported by their primary key.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from serde_kit.crypto.rows import EMPTY_TAG, RowInfo, RowKind, classify_row
from serde_kit.errors import ConfigError, StoreError

__all__ = ["EMPTY_TAG", "PAGE_BYTES", "Batch", "Database", "Layout", "PageSizer", "Row", "Table"]

_BYTES = (bytes, bytearray, memoryview)


@dataclass(frozen=True)
class Table:
    """One table holding ``serde`` output: its tag and blob columns, key and locator."""

    name: str
    tag_column: str
    blob_column: str
    pk_columns: tuple[str, ...]
    locator: tuple[str, ...] = ()

    @property
    def walk_columns(self) -> tuple[str, ...]:
        """Columns a page walk orders by (the locator, else the primary key)."""
        return self.locator or self.pk_columns


@dataclass(frozen=True)
class Row:
    """One stored row: table, primary-key values, type tag, blob, and where it is."""

    table: str
    pk: tuple[Any, ...]
    tag: Any
    blob: Any
    loc: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @property
    def where(self) -> tuple[Any, ...]:
        """Values of the table's walk columns for this row."""
        return self.loc or self.pk

    @property
    def info(self) -> RowInfo:
        """:func:`~serde_kit.crypto.rows.classify_row` of this row."""
        return classify_row(self.tag, self.blob)

    @property
    def is_empty(self) -> bool:
        """True when the row holds no ``serde`` output (NULL blob or the ``"empty"`` tag)."""
        return self.info.kind is RowKind.EMPTY

    @property
    def label(self) -> str:
        """``table[pk, ...]`` for messages."""
        return f"{self.table}[{', '.join(repr(v) for v in self.pk)}]"


@dataclass(frozen=True)
class Layout:
    """A saver's tables: which hold ``serde`` output, and where checkpoints and writes live.

    ``serde_tables`` maps table -> (tag column, blob column), in visiting order;
    ``optional`` ones (e.g. LangGraph's ``cache``) are covered when present.
    ``checkpoint_serde`` is True when ``checkpoints.checkpoint`` goes through
    ``serde`` (SqliteSaver) and False when it is plain JSON with channel values
    in ``blobs_table`` (PostgreSQL and MySQL savers).
    """

    saver: str
    serde_tables: Mapping[str, tuple[str, str]]
    writes_table: str
    writes_blob: str
    checkpoint_serde: bool
    blobs_table: str | None = None
    optional: frozenset[str] = frozenset()


#: Blob bytes one page or batch may hold in memory, whatever its row limit says.
PAGE_BYTES = 4 << 20

#: Rows of a table's first page, before any row size is known.
FIRST_PAGE = 8


class PageSizer:
    """Rows per page: at most ``batch_size``, and about :data:`PAGE_BYTES` of blobs by the sizes seen so far."""

    def __init__(self, batch_size: int, *, budget: int = PAGE_BYTES) -> None:
        self.batch_size = batch_size
        self.budget = budget
        self._bytes = 0
        self._rows = 0

    @property
    def limit(self) -> int:
        """Rows to ask for next."""
        if self._rows == 0:
            return min(self.batch_size, FIRST_PAGE)
        average = max(1, self._bytes // self._rows)
        return max(1, min(self.batch_size, self.budget // average))

    def saw(self, rows: Sequence[Row]) -> None:
        """Account for a page just read."""
        self._rows += len(rows)
        self._bytes += sum(len(r.blob) for r in rows if isinstance(r.blob, (bytes, str)))


class Batch(ABC):
    """Rows claimed for one write transaction (see :meth:`Database.batch`)."""

    rows: list[Row]

    @abstractmethod
    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        """Set ``row`` to ``(tag, blob)`` only if it still holds ``row.tag``/``row.blob``; whether it applied."""

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        """:meth:`compare_and_swap` for several ``(row, tag, blob)``; one result each."""
        return [self.compare_and_swap(row, tag, blob) for row, tag, blob in items]

    @abstractmethod
    def reread(self, row: Row) -> Row | None:
        """The row's current content inside this transaction (None if it was deleted)."""

    @abstractmethod
    def count_claimable(self) -> int:
        """Rows this batch could have claimed had none been locked by someone else.

        More than ``len(rows)`` means rows were skipped as locked.
        """


def _value(raw: Any) -> Any:
    """A driver's blob value as bytes; text, numbers and None are kept as they are (stray rows)."""
    if isinstance(raw, _BYTES):
        return bytes(raw)
    return raw


class Database(ABC):
    """A LangGraph checkpoint database opened for the tools (use as a context manager)."""

    dialect: ClassVar[str]
    mark: ClassVar[str] = "?"
    layout: Layout
    tables: tuple[Table, ...]
    readonly: bool

    # -- dialect hooks ---------------------------------------------------------
    def quote(self, name: str) -> str:
        """``name`` as an identifier."""
        return f'"{name}"'

    def null_safe_equal(self, column: str) -> str:
        """SQL true when ``column`` equals the bound value, NULL equal to NULL."""
        return f"{column} IS {self.mark}"

    def head(self, column: str, n: int) -> str:
        """SQL for the first ``n`` bytes of ``column``."""
        return f"substr({column}, 1, {int(n)})"

    @abstractmethod
    def under_header(self, table: Table) -> str:
        """SQL true when a row is ``+aesgcm`` and its blob starts with the bound header (two marks: length, header)."""

    #: Whether the database locks rows (claims happen inside the transaction).
    row_locks: ClassVar[bool] = True
    #: The statement that opens a batch transaction.
    begin_sql: ClassVar[str] = "BEGIN"

    def lock_clause(self, mode: str) -> str:
        """Row-lock suffix of a claim SELECT: ``mode`` is "wait", "nowait" or "skip"."""
        if not self.row_locks:
            return ""
        return {"wait": "FOR UPDATE", "nowait": "FOR UPDATE NOWAIT", "skip": "FOR UPDATE SKIP LOCKED"}[mode]

    def is_lock_unavailable(self, error: StoreError) -> bool:
        """True when ``error`` is a NOWAIT claim that met a locked row."""
        return False

    def rollback_quietly(self) -> None:
        """End the open transaction; a connection already lost has nothing to roll back."""
        try:
            self._execute("ROLLBACK")
        except StoreError:
            pass

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
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

    def _row_value(self, columns: Sequence[str], op: str) -> str:
        marks = ", ".join([self.mark] * len(columns))
        return f"({self._cols(columns)}) {op} ({marks})"

    def _where(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        exclude_header: bytes | None = None,
        claim: bool = False,
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        walk = table.walk_columns
        if claim:
            clauses.append(f"{self.quote(table.blob_column)} IS NOT NULL")
        if after is not None:
            clauses.append(self._row_value(walk, ">"))
            params.extend(after)
        if until is not None:
            clauses.append(self._row_value(walk, "<="))
            params.extend(until)
        if exclude_header is not None:
            clauses.append(f"NOT {self.under_header(table)}")
            params.extend([len(exclude_header), exclude_header])
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
            f"SELECT {', '.join(columns)} FROM {self.quote(table.name)}{where} "
            f"ORDER BY {self._cols(table.walk_columns)} LIMIT {self.mark} {lock}"
        ).rstrip()

    def _rows(self, table: Table, records: Any) -> list[Row]:
        n = len(table.pk_columns)
        extra = [c for c in table.locator if c not in table.pk_columns]
        out = []
        for r in records:
            pk = tuple(r[:n])
            loc = tuple(r[n : n + len(extra)]) if extra else ()
            if table.locator and not extra:
                loc = tuple(pk[table.pk_columns.index(c)] for c in table.locator)
            tag, blob = r[n + len(extra)], r[n + len(extra) + 1]
            out.append(Row(table.name, pk, tag, _value(blob), loc))
        return out

    def select_rows(
        self,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        head: int | None = None,
        exclude_header: bytes | None = None,
        claim: bool = False,
        until: tuple[Any, ...] | None = None,
        lock: str = "",
    ) -> list[Row]:
        """One page of ``table`` in walk order (the building block of pages and batches)."""
        where, params = self._where(table, after=after, until=until, exclude_header=exclude_header, claim=claim)
        sql = self._select_sql(table, where, head=head, lock=lock)
        return self._rows(table, self._execute(sql, [*params, limit]).fetchall())

    # -- reading -------------------------------------------------------------------
    def count(
        self,
        table: Table,
        *,
        exclude_header: bytes | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int:
        """Rows of ``table`` matching the conditions (all rows when none are given)."""
        where, params = self._where(table, after=after, until=until, exclude_header=exclude_header, claim=claim)
        return int(self._execute(f"SELECT count(*) FROM {self.quote(table.name)}{where}", params).fetchone()[0])

    def count_rows_by_table(self) -> dict[str, int]:
        """Number of rows per table."""
        return {t.name: self.count(t) for t in self.tables}

    def count_rows(self) -> int:
        """Number of rows in all tables (empty rows included)."""
        return sum(self.count_rows_by_table().values())

    def count_pending(self, table: Table, *, exclude_header: bytes | None) -> int:
        """Rows of ``table`` that :meth:`batch` would claim."""
        return self.count(table, exclude_header=exclude_header, claim=True)

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
    ) -> Any:
        """Claim up to ``limit`` rows of ``table`` after locator ``after`` (to ``until``, inclusive).

        Rows with a NULL blob are never claimed, nor ``+aesgcm`` rows whose blob
        starts with ``exclude_header``.  Everything done through the yielded
        :class:`Batch` is one transaction, committed when the block exits
        normally and rolled back on an exception.  Where the database has row
        locks, rows are locked ``FOR UPDATE`` (``SKIP LOCKED`` unless
        ``skip_locked=False``) so concurrent workers share them.
        """

    def update_sql(self, table: Table) -> str:
        """Compare-and-swap UPDATE of one row: marks for new tag, new blob, walk columns, old tag, old blob."""
        t = table
        match = " AND ".join(f"{self.quote(c)} = {self.mark}" for c in t.walk_columns)
        return (
            f"UPDATE {self.quote(t.name)} SET {self.quote(t.tag_column)} = {self.mark}, "
            f"{self.quote(t.blob_column)} = {self.mark} WHERE {match} "
            f"AND {self.null_safe_equal(self.quote(t.tag_column))} AND {self.quote(t.blob_column)} = {self.mark}"
        )

    def reread_sql(self, table: Table, *, lock: str = "") -> str:
        """SELECT of one row's tag and blob by its walk columns."""
        t = table
        match = " AND ".join(f"{self.quote(c)} = {self.mark}" for c in t.walk_columns)
        return (
            f"SELECT {self.quote(t.tag_column)}, {self.quote(t.blob_column)} FROM {self.quote(t.name)} "
            f"WHERE {match} {lock}"
        ).rstrip()

    # -- the saver's own tables (inspect, audit) ---------------------------------------
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read query written for this dialect (``mark``, ``quote``); for tests and tools here."""
        return [tuple(r) for r in self._execute(sql, list(params)).fetchall()]

    def list_threads(self, *, limit: int | None = None) -> list[tuple[Any, ...]]:
        """``(thread_id, ns, checkpoints, last checkpoint id, its metadata, its pending writes)`` per thread."""
        w = self.quote(self.layout.writes_table)
        query = f"""
            SELECT c.thread_id, c.checkpoint_ns, c.n, c.last_id, k.metadata,
                   (SELECT count(*) FROM {w} w WHERE w.thread_id = c.thread_id
                      AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.last_id)
            FROM (SELECT thread_id, checkpoint_ns, count(*) AS n, max(checkpoint_id) AS last_id
                  FROM checkpoints GROUP BY thread_id, checkpoint_ns) c
            JOIN checkpoints k ON k.thread_id = c.thread_id AND k.checkpoint_ns = c.checkpoint_ns
                 AND k.checkpoint_id = c.last_id
            ORDER BY c.thread_id, c.checkpoint_ns"""
        params: list[Any] = []
        if limit is not None:
            query += f" LIMIT {self.mark}"
            params.append(int(limit))
        return self.query(query, params)

    def checkpoint_rows(
        self, thread_id: str, checkpoint_ns: str, *, checkpoint_id: str | None = None, limit: int | None = None
    ) -> list[tuple[Any, ...]]:
        """``(checkpoint_id, parent id, metadata, tag, checkpoint)`` newest first.

        ``tag`` is None and ``checkpoint`` a decoded JSON value when the layout
        keeps checkpoints as JSON.
        """
        tag = "type" if self.layout.checkpoint_serde else "NULL"
        m = self.mark
        query = (
            f"SELECT checkpoint_id, parent_checkpoint_id, metadata, {tag}, checkpoint FROM checkpoints "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m}"
        )
        params: list[Any] = [thread_id, checkpoint_ns]
        if checkpoint_id is not None:
            query += f" AND checkpoint_id = {m}"
            params.append(checkpoint_id)
        query += " ORDER BY checkpoint_id DESC"
        if limit is not None:
            query += f" LIMIT {m}"
            params.append(int(limit))
        out = []
        for cid, parent, meta, tag_, checkpoint in self.query(query, params):
            if not self.layout.checkpoint_serde:
                checkpoint = self.json_value(checkpoint)
            else:
                checkpoint = _value(checkpoint)
            out.append((cid, parent, meta, tag_, checkpoint))
        return out

    def json_value(self, raw: Any) -> Any:
        """A JSON column's value as Python data (drivers return text, bytes or decoded values)."""
        if isinstance(raw, _BYTES):
            raw = bytes(raw).decode("utf-8", errors="replace")
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except ValueError:
                return {"$error": "stored JSON is not valid"}
        return raw

    def channel_blobs(
        self, thread_id: str, checkpoint_ns: str, versions: Mapping[str, Any]
    ) -> list[tuple[str, Any, Any]]:
        """``(channel, tag, blob)`` of the given channel versions (JSON layouts only)."""
        if not versions or self.layout.blobs_table is None:
            return []
        m = self.mark
        pairs = " OR ".join([f"(channel = {m} AND version = {m})"] * len(versions))
        params: list[Any] = [thread_id, checkpoint_ns]
        for k, v in versions.items():
            params += [str(k), str(v)]
        rows = self.query(
            f"SELECT channel, type, {self.quote('blob')} FROM {self.quote(self.layout.blobs_table)} "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m} AND ({pairs})",
            params,
        )
        return [(c, t, _value(b)) for c, t, b in rows]

    @abstractmethod
    def has_column(self, table: str, column: str) -> bool:
        """Whether ``table`` has ``column`` (read from the catalog)."""

    def pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[Any, ...]]:
        """``(task_id, task_path, idx, channel, tag, blob)`` of one checkpoint."""
        lay, m = self.layout, self.mark
        task_path = "task_path" if self.has_column(lay.writes_table, "task_path") else "''"
        rows = self.query(
            f"SELECT task_id, {task_path}, idx, channel, type, {self.quote(lay.writes_blob)} "
            f"FROM {self.quote(lay.writes_table)} "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m} AND checkpoint_id = {m} "
            # by position: databases from before task_path existed select '' instead
            "ORDER BY 2, 1, 3",
            [thread_id, checkpoint_ns, checkpoint_id],
        )
        return [(*r[:5], _value(r[5])) for r in rows]

    def iter_metadata(self, batch_size: int = 500) -> Iterator[Any]:
        """Every checkpoint's metadata as Python data (``$error`` when unreadable), page by page."""
        pk = ("thread_id", "checkpoint_ns", "checkpoint_id")
        after: tuple[Any, ...] | None = None
        while True:
            where = "" if after is None else f" WHERE {self._row_value(pk, '>')}"
            page = self.query(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, metadata FROM checkpoints{where} "
                f"ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT {self.mark}",
                [*(after or ()), batch_size],
            )
            if not page:
                return
            for *_pk, meta in page:
                yield None if meta is None else self.json_value(meta)
            after = tuple(page[-1][:3])

    def inline_primitives(self, batch_size: int = 500) -> dict[str, dict[str, int]]:
        """Channel -> JSON type -> count of values kept inline in checkpoint JSON (JSON layouts)."""
        out: dict[str, dict[str, int]] = {}
        if self.layout.checkpoint_serde or self.layout.blobs_table is None:
            return out
        m = self.mark
        pk = ("thread_id", "checkpoint_ns", "checkpoint_id")
        after: tuple[Any, ...] | None = None
        blobs = self.quote(self.layout.blobs_table)
        while True:
            where = "" if after is None else f" WHERE {self._row_value(pk, '>')}"
            page = self.query(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint FROM checkpoints{where} "
                f"ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT {m}",
                [*(after or ()), batch_size],
            )
            if not page:
                return out
            for thread_id, ns, _cid, raw in page:
                doc = self.json_value(raw)
                values = doc.get("channel_values") if isinstance(doc, dict) else None
                versions = doc.get("channel_versions") if isinstance(doc, dict) else None
                if not isinstance(values, dict):
                    continue
                versions = versions if isinstance(versions, dict) else {}
                for channel, value in values.items():
                    # An inline value with a blob at the same version is the
                    # delta-snapshot marker, not data: the blob holds the value.
                    version = versions.get(channel)
                    if version is not None and self.query(
                        f"SELECT 1 FROM {blobs} WHERE thread_id = {m} AND checkpoint_ns = {m} "
                        f"AND channel = {m} AND version = {m} LIMIT 1",
                        [thread_id, ns, channel, str(version)],
                    ):
                        continue
                    kind = _json_type(value)
                    out.setdefault(channel, {}).setdefault(kind, 0)
                    out[channel][kind] += 1
            after = tuple(page[-1][:3])


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class SqlBatch(Batch):
    """The generic batch: claim rows, compare-and-swap them, commit or roll back.

    Where the dialect has row locks (``db.row_locks``) the rows are claimed
    inside the transaction ``FOR UPDATE NOWAIT`` and, when some are locked,
    ``FOR UPDATE SKIP LOCKED`` (``count_claimable`` then tells how many were
    skipped).  Without row locks (SQLite) rows are read before the
    transaction, which starts at the first write, so the application is
    blocked as briefly as possible; compare-and-swap catches any row it changed
    in between.
    """

    def __init__(
        self,
        db: Database,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None,
        skip_locked: bool,
        until: tuple[Any, ...] | None,
    ) -> None:
        self.db = db
        self.table = table
        self._claim = {"after": after, "limit": limit, "exclude_header": exclude_header, "until": until}
        self._skip_locked = skip_locked
        self._skipped_some = False
        self._in_tx = False
        self._update_sql = db.update_sql(table)
        self._reread_sql = db.reread_sql(table, lock=db.lock_clause("wait"))
        self.rows: list[Row] = []
        if not db.row_locks:
            self.rows = db.select_rows(table, claim=True, **self._claim)

    def _begin(self) -> None:
        if not self._in_tx:
            self.db._execute(self.db.begin_sql)
            self._in_tx = True

    def __enter__(self) -> SqlBatch:
        db = self.db
        if not db.row_locks:
            return self
        self._begin()
        try:
            if not self._skip_locked:
                self.rows = db.select_rows(self.table, claim=True, lock=db.lock_clause("wait"), **self._claim)
            else:
                # NOWAIT first: when nothing is locked (the usual case) no row was skipped.
                db._execute("SAVEPOINT serde_kit_claim")
                try:
                    self.rows = db.select_rows(self.table, claim=True, lock=db.lock_clause("nowait"), **self._claim)
                except StoreError as e:
                    if not db.is_lock_unavailable(e):
                        raise
                    db._execute("ROLLBACK TO SAVEPOINT serde_kit_claim")
                    self.rows = db.select_rows(self.table, claim=True, lock=db.lock_clause("skip"), **self._claim)
                    self._skipped_some = True
        except BaseException:
            self._rollback()
            raise
        return self

    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        self._begin()
        cur = self.db._execute(self._update_sql, [tag, blob, *row.where, row.tag, row.blob])
        return bool(cur.rowcount == 1)

    def reread(self, row: Row) -> Row | None:
        self._begin()
        r = self.db._execute(self._reread_sql, list(row.where)).fetchone()
        if r is None:
            return None
        return Row(row.table, row.pk, r[0], _value(r[1]), row.loc)

    def count_claimable(self) -> int:
        if not self._skipped_some:
            return len(self.rows)
        c = self._claim
        last = self.rows[-1].where if self.rows else c["until"]
        return self.db.count(self.table, exclude_header=c["exclude_header"], after=c["after"], until=last, claim=True)

    def _rollback(self) -> None:
        if self._in_tx:
            self._in_tx = False
            self.db.rollback_quietly()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._in_tx:
            return
        if exc_type is not None:
            self._rollback()
            return
        try:
            self.db._execute("COMMIT")
        except BaseException:
            # A failed COMMIT can leave the transaction open (SQLite rollback
            # journal, busy): end it, so a retry starts from a clean state.
            self._rollback()
            raise
        self._in_tx = False
