"""Batches: the generic claim / compare-and-swap transaction, and the SQL only it sends.

A batch reaches its database through :class:`BatchDatabase`, the database's
batch-facing surface; this module does not import :mod:`.base` (which builds
batches), so the two are layered, not a circle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Protocol

from serde_kit.errors import StoreError

from .model import Row, SealedUnder, Table, driver_value

__all__ = ["Batch", "BatchDatabase", "SqlBatch", "lock_clause", "reread_sql", "update_sql"]


class BatchDatabase(Protocol):
    """What a batch needs of its database (every :class:`~.base.Database` has it)."""

    mark: ClassVar[str]
    row_locks: ClassVar[bool]
    begin_sql: ClassVar[str]

    def quote(self, name: str) -> str: ...
    def ref(self, table: str) -> str: ...
    def null_safe_equal(self, column: str) -> str: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
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
    ) -> list[Row]: ...
    def count(
        self,
        table: Table,
        *,
        exclude: SealedUnder | None = None,
        after: tuple[Any, ...] | None = None,
        until: tuple[Any, ...] | None = None,
        claim: bool = False,
    ) -> int: ...
    def is_lock_unavailable(self, error: StoreError) -> bool: ...
    def rollback_quietly(self) -> None: ...


def lock_clause(db: BatchDatabase, mode: str) -> str:
    """Row-lock suffix of a claim SELECT: ``mode`` is "wait", "nowait" or "skip" (nothing without row locks)."""
    if not db.row_locks:
        return ""
    return {"wait": "FOR UPDATE", "nowait": "FOR UPDATE NOWAIT", "skip": "FOR UPDATE SKIP LOCKED"}[mode]


def update_sql(db: BatchDatabase, table: Table) -> str:
    """Compare-and-swap UPDATE of one row: marks for new tag, new blob, walk columns, old tag, old blob."""
    t, q, mark = table, db.quote, db.mark
    match = " AND ".join(f"{q(c)} = {mark}" for c in t.walk_columns)
    return (
        f"UPDATE {db.ref(t.name)} SET {q(t.tag_column)} = {mark}, {q(t.blob_column)} = {mark} WHERE {match} "
        f"AND {db.null_safe_equal(q(t.tag_column))} AND {q(t.blob_column)} = {mark}"
    )


def reread_sql(db: BatchDatabase, table: Table, *, lock: str = "") -> str:
    """SELECT of one row's tag and blob by its walk columns."""
    t, q = table, db.quote
    match = " AND ".join(f"{q(c)} = {db.mark}" for c in t.walk_columns)
    return f"SELECT {q(t.tag_column)}, {q(t.blob_column)} FROM {db.ref(t.name)} WHERE {match} {lock}".rstrip()


class Batch(ABC):
    """Rows claimed for one write transaction (see :meth:`Database.batch`)."""

    rows: list[Row]

    @abstractmethod
    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        """Set ``row`` to ``(tag, blob)`` only if it still holds ``row.tag``/``row.blob``; whether it applied."""

    def compare_and_swap_many(self, items: Sequence[tuple[Row, str, bytes]]) -> list[bool]:
        """:meth:`compare_and_swap` for several ``(row, tag, blob)``; one result each."""
        return [self.compare_and_swap(row, tag, blob) for row, tag, blob in items]

    def compare_and_swap_chunks(self, chunks: Iterable[Sequence[tuple[Row, str, bytes]]]) -> list[bool]:
        """:meth:`compare_and_swap_many` for items produced chunk by chunk; one result per item, in order.

        ``chunks`` may be a generator doing the work that produces each chunk
        (rotate re-encrypts a chunk's rows there).  By default every chunk is
        produced first and the items applied at once (SQLite: its write lock
        is taken as late as possible); a dialect may send each chunk as it
        comes, so the database works on one while the next is produced.
        """
        return self.compare_and_swap_many([item for chunk in chunks for item in chunk])

    @abstractmethod
    def reread(self, row: Row) -> Row | None:
        """The row's current content inside this transaction (None if it was deleted)."""

    @abstractmethod
    def count_claimable(self) -> int:
        """Rows this batch could have claimed had none been locked by someone else.

        More than ``len(rows)`` means rows were skipped as locked.
        """


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
        db: BatchDatabase,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude: SealedUnder | None,
        skip_locked: bool,
        until: tuple[Any, ...] | None,
        rows: list[Row] | None = None,
    ) -> None:
        self.db = db
        self.table = table
        self._after = after
        self._limit = limit
        self._exclude = exclude
        self._until = until
        self._skip_locked = skip_locked
        self._skipped_some = False
        self._in_tx = False
        self._update_sql = update_sql(db, table)
        self._reread_sql = reread_sql(db, table, lock=lock_clause(db, "wait"))
        self.rows: list[Row] = []
        if rows is not None:
            self.rows = rows  # claimed already (without row locks: see Database.batch)
        elif not db.row_locks:
            self.rows = self._select()

    def _select(self, lock: str = "") -> list[Row]:
        return self.db.select_rows(
            self.table,
            after=self._after,
            limit=self._limit,
            exclude=self._exclude,
            until=self._until,
            claim=True,
            lock=lock,
        )

    def _begin(self) -> None:
        if not self._in_tx:
            self.db.execute(self.db.begin_sql)
            self._in_tx = True

    def __enter__(self) -> SqlBatch:
        db = self.db
        if not db.row_locks:
            return self
        self._begin()
        try:
            if not self._skip_locked:
                self.rows = self._select(lock_clause(db, "wait"))
            else:
                # NOWAIT first: when nothing is locked (the usual case) no row was skipped.
                db.execute("SAVEPOINT serde_kit_claim")
                try:
                    self.rows = self._select(lock_clause(db, "nowait"))
                except StoreError as e:
                    if not db.is_lock_unavailable(e):
                        raise
                    db.execute("ROLLBACK TO SAVEPOINT serde_kit_claim")
                    self.rows = self._select(lock_clause(db, "skip"))
                    self._skipped_some = True
        except BaseException:
            self._rollback()
            raise
        return self

    def compare_and_swap(self, row: Row, tag: str, blob: bytes) -> bool:
        self._begin()
        cur = self.db.execute(self._update_sql, [tag, blob, *row.where, row.tag, row.blob])
        return bool(cur.rowcount == 1)

    def reread(self, row: Row) -> Row | None:
        self._begin()
        r = self.db.execute(self._reread_sql, list(row.where)).fetchone()
        if r is None:
            return None
        return Row(row.table, row.pk, r[0], driver_value(r[1]), row.loc)

    def count_claimable(self) -> int:
        if not self._skipped_some:
            return len(self.rows)
        last = self.rows[-1].where if self.rows else self._until
        return self.db.count(self.table, exclude=self._exclude, after=self._after, until=last, claim=True)

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
            self.db.execute("COMMIT")
        except BaseException:
            # A failed COMMIT can leave the transaction open (SQLite rollback
            # journal, busy): end it, so a retry starts from a clean state.
            self._rollback()
            raise
        self._in_tx = False
