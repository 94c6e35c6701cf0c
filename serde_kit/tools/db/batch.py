"""Batches: how many rows a page or claim holds, and the generic claim / compare-and-swap transaction."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from serde_kit.errors import StoreError

from .model import Row, Table, driver_value

if TYPE_CHECKING:
    from .base import Database

__all__ = ["FIRST_PAGE", "PAGE_BYTES", "Batch", "PageSizer", "SqlBatch"]


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
        total = 0
        for r in rows:  # a plain loop: a generator frame per page cost ~1 us a row
            blob = r.blob
            if type(blob) is bytes or isinstance(blob, (bytes, str)):
                total += len(blob)
        self._bytes += total


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
        db: Database,
        table: Table,
        *,
        after: tuple[Any, ...] | None,
        limit: int,
        exclude_header: bytes | None,
        skip_locked: bool,
        until: tuple[Any, ...] | None,
        rows: list[Row] | None = None,
    ) -> None:
        self.db = db
        self.table = table
        self._after = after
        self._limit = limit
        self._exclude_header = exclude_header
        self._until = until
        self._skip_locked = skip_locked
        self._skipped_some = False
        self._in_tx = False
        self._update_sql = db.update_sql(table)
        self._reread_sql = db.reread_sql(table, lock=db.lock_clause("wait"))
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
            exclude_header=self._exclude_header,
            until=self._until,
            claim=True,
            lock=lock,
        )

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
                self.rows = self._select(db.lock_clause("wait"))
            else:
                # NOWAIT first: when nothing is locked (the usual case) no row was skipped.
                db._execute("SAVEPOINT serde_kit_claim")
                try:
                    self.rows = self._select(db.lock_clause("nowait"))
                except StoreError as e:
                    if not db.is_lock_unavailable(e):
                        raise
                    db._execute("ROLLBACK TO SAVEPOINT serde_kit_claim")
                    self.rows = self._select(db.lock_clause("skip"))
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
        return Row(row.table, row.pk, r[0], driver_value(r[1]), row.loc)

    def count_claimable(self) -> int:
        if not self._skipped_some:
            return len(self.rows)
        last = self.rows[-1].where if self.rows else self._until
        return self.db.count(self.table, exclude_header=self._exclude_header, after=self._after, until=last, claim=True)

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
