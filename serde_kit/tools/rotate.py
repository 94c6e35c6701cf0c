"""``rotate``: re-encrypt every stored row that is not under the keyring's primary key.

A dry run unless ``apply=True``.  It works in batches, one transaction per
batch, and is idempotent (rows already under the primary are skipped from the
header).  Every row is at every instant either in its old or its new form, so
a run killed at any point loses nothing and a rerun finishes the job.  Each
row is written with a compare-and-swap update: a row the application changed
after it was read is re-read and re-encrypted, never overwritten with stale
bytes.  Where the database has row locks, batches are claimed ``SKIP LOCKED``
so several workers can run at once; a range in which locked rows were skipped
is walked again, waiting for the locks, so no row is missed or done twice.

Per-row problems (a stray row, a row no key opens) are listed in the report,
left untouched, and the run goes on.  Interrupted (SIGINT, or SIGTERM turned
into KeyboardInterrupt by the caller), the open batch is rolled back and the
partial report returned with ``interrupted`` set.

Row binding (:func:`serde_kit.bound_saver.bind_rows`): a bound row keeps its
binding, and is checked against the thread id and namespace of the row it is
stored in (a row moved to another thread is refused, never re-sealed there).
``bind=True`` also binds unbound rows to exactly the identity ``bind_rows``
gives them (``thread_id`` and ``checkpoint_ns`` from the row's own columns), so
they read back through the wrapper; tables without a thread (LangGraph's
``cache``) stay unbound.

Migrations that cannot launder: a plaintext row (``encrypt_plaintext``) or a
LangGraph ``+aes`` row (``upgrade_legacy``) is checked before it is sealed for
the first time: against the application's allowlist without importing anything
(:class:`~serde_kit.tools.scan.AllowlistCheck`, the default), or decoded by the
application's own serializer (``inner``); a row refused is listed in ``refused``
and left as it is.  Each row goes one way: classify (header only) -> open (the
:class:`~serde_kit.crypto.cipher.RowCipher`) -> check (first seals only) -> seal,
or rekey in one step -> compare-and-swap.  ``pickle`` rows are refused unless ``allow_pickle=True`` (they are then
sealed without being unpickled: unpickling runs code named by the data).
"""

from __future__ import annotations

import copy
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from serde_kit.allowlist import Allowlist
from serde_kit.crypto import Keyring
from serde_kit.crypto.binding import RowIdentity
from serde_kit.crypto.blob import BOUND_VERSION, CIPHER_NAME, build_header
from serde_kit.crypto.cipher import RowCipher
from serde_kit.crypto.rows import RowInfo, RowKind, classify_parsed, classify_row
from serde_kit.errors import ConfigError, CryptoError, DecodeError, SerdeError, StoreError

from .common import (
    HEADER_READ,
    Progress,
    ProgressBar,
    RowFailure,
    describe_failure,
    open_bar,
    stray_failure,
)
from .db import Database, Row, SealedUnder, Table
from .db.paging import PageSizer
from .scan import AllowlistCheck, RowCheck
from .verify import VerifyReport, verify

__all__ = ["AllowlistCheck", "RotateReport", "RowCheck", "rotate"]

#: Attempts per batch when the database aborts its transaction (deadlock, busy, lost connection).
MAX_BATCH_ATTEMPTS = 5

#: Reconnections per run after the connection was lost, before giving up cleanly.
MAX_RECONNECTS = 5

#: Chunks a batch is re-encrypted and sent in (each at least _MIN_CHUNK rows), so a
#: server database updates one chunk while the next is re-encrypted.
_CHUNKS = 4
_MIN_CHUNK = 250

#: Compare-and-swap attempts per row before giving up on it (a row that keeps
#: changing under us is reported, not forced).
MAX_CAS_ATTEMPTS = 20


@dataclass
class RotateReport:
    """What :func:`rotate` did (or, in a dry run, would do).

    ``examined`` counts the rows not yet under the primary key, the same way
    in a dry run and when applying; ``already_primary`` the rows that were.
    """

    json_extra: ClassVar[dict[str, str]] = {"ok": "ok"}

    dry_run: bool
    primary_id: str
    examined: int = 0
    already_primary: int = 0
    #: rows re-encrypted (would be, in a dry run), by source: key id, "plaintext" or "legacy"
    changed: Counter[str] = field(default_factory=Counter)
    changed_by_table: Counter[str] = field(default_factory=Counter)
    skipped_plaintext: int = 0
    skipped_legacy: int = 0
    unknown: int = 0
    #: inner type tags of the plaintext / ``+aes`` rows sealed (would be, in a dry run)
    plaintext_tags: Counter[str] = field(default_factory=Counter)
    legacy_tags: Counter[str] = field(default_factory=Counter)
    #: rows given a binding to their thread and namespace (``bind=True``)
    bound: int = 0
    #: with ``bind=True``, rows left unbound by table: the table has no thread (LangGraph's
    #: ``cache``), or the row's namespace could not be told from its key
    not_bindable: Counter[str] = field(default_factory=Counter)
    #: plaintext / ``+aes`` rows the application's serializer refused, or pickle rows
    #: without ``allow_pickle``: left as they are, never sealed
    refused: list[RowFailure] = field(default_factory=list)
    #: compare-and-swap updates that lost to a concurrent write and were retried
    retried: int = 0
    #: connections lost and opened again
    reconnects: int = 0
    failures: list[RowFailure] = field(default_factory=list)
    #: (table, pk) of every row changed, when rotate(record_changes=True)
    changed_rows: list[tuple[str, tuple[Any, ...]]] | None = None
    verification: VerifyReport | None = None
    #: the run was interrupted; ``stopped_at`` is the last committed row
    interrupted: bool = False
    stopped_at: tuple[str, tuple[Any, ...]] | None = None

    @property
    def total_changed(self) -> int:
        """Rows re-encrypted (or that would be)."""
        return sum(self.changed.values())

    def merge(self, other: RotateReport) -> None:
        """Add ``other``'s counts (a committed batch) to this report."""
        self.examined += other.examined
        self.changed.update(other.changed)
        self.changed_by_table.update(other.changed_by_table)
        self.skipped_plaintext += other.skipped_plaintext
        self.skipped_legacy += other.skipped_legacy
        self.unknown += other.unknown
        self.plaintext_tags.update(other.plaintext_tags)
        self.legacy_tags.update(other.legacy_tags)
        self.bound += other.bound
        self.not_bindable.update(other.not_bindable)
        self.refused.extend(other.refused)
        self.retried += other.retried
        self.failures.extend(other.failures)
        if self.changed_rows is not None and other.changed_rows is not None:
            self.changed_rows.extend(other.changed_rows)

    @property
    def ok(self) -> bool:
        """No row failed, the run finished, and the verification pass (if run) found none unreadable."""
        return (
            not self.failures
            and not self.refused
            and not self.interrupted
            and (self.verification is None or self.verification.ok)
        )


_BOUND_BYTE = bytes((BOUND_VERSION,))
_T = TypeVar("_T")
_PICKLE_TAG = "pickle"
_PICKLE_REFUSED = (
    "PickleRowRefused: a 'pickle' row; unpickling runs code named by the data, and sealing it would "
    "make a planted row look genuine. Check where it came from, then rerun with --allow-pickle "
    "(allow_pickle=True) to seal it unread, or delete it"
)
#: The sources of a first seal (rows not encrypted by serde_kit before).
_FIRST_SEALS = ("plaintext", "legacy")

#: One row to write: the row as read, its source label, and its new ``(tag, blob)``.
_Work = tuple[Row, str, tuple[str, bytes]]


def _count_first_seal(report: RotateReport, row: Row, source: str) -> None:
    """Count the inner type tag of a plaintext or ``+aes`` row sealed for the first time."""
    if source not in _FIRST_SEALS:
        return  # a key rotation (the bulk): nothing to classify
    info = classify_row(row.tag, row.blob)
    if info.kind is RowKind.PLAINTEXT:
        report.plaintext_tags[str(info.inner_tag)] += 1
    elif info.kind is RowKind.LEGACY:
        report.legacy_tags[str(info.inner_tag)] += 1


class _InnerLike(Protocol):
    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


class _Rotator:
    def __init__(
        self,
        db: Database,
        cipher: RowCipher,
        report: RotateReport,
        *,
        check: RowCheck | None = None,
        encrypt_plaintext: bool,
        upgrade_legacy: bool,
        bind: bool = False,
        allow_pickle: bool = False,
    ) -> None:
        self.db = db
        self.cipher = cipher
        #: What a row must pass before its first seal (None: first seals are off).
        self.check = check
        self.report = report
        self.encrypt_plaintext = encrypt_plaintext
        self.upgrade_legacy = upgrade_legacy
        self.bind = bind
        self.allow_pickle = allow_pickle
        self.primary = cipher.keyring.primary_id
        self.header = build_header(self.primary)
        #: what the claim SQL may skip: rows under the primary, unless unbound ones must be bound
        self.exclude: SealedUnder | None = None if bind else SealedUnder("+" + CIPHER_NAME, self.header)
        self.reconnects = 0

    def identity(self, row: Row) -> RowIdentity | None:
        """The row's identity from its own key columns: exactly what ``bind_rows`` binds.

        The database's dialect reads it (:meth:`Database.row_identity`); None for
        tables that have no thread (LangGraph's ``cache``): such rows stay unbound.
        """
        found = self.db.row_identity(row)
        return None if found is None else RowIdentity(*found)

    def wanted(self, row: Row, info: RowInfo) -> str | None:
        """The source label if ``row`` (classified as ``info``) needs re-encrypting, else None (counting why not)."""
        kind = info.kind
        if kind is RowKind.EMPTY:
            return None
        if kind is RowKind.AESGCM:
            if info.key_id != self.primary:
                return info.key_id
            if self.bind and not info.bound:
                if self.identity(row) is not None:
                    return info.key_id
                self.report.not_bindable[row.table] += 1
            return None
        if kind is RowKind.LEGACY:
            if self.upgrade_legacy:
                return "legacy"
            self.report.skipped_legacy += 1
            return None
        if kind is RowKind.PLAINTEXT:
            if self.encrypt_plaintext:
                return "plaintext"
            self.report.skipped_plaintext += 1
            return None
        if kind is RowKind.STRAY:
            self.report.failures.append(stray_failure(row, info))
            return None
        self.report.unknown += 1
        return None

    def fail(self, row: Row, error: BaseException | str) -> None:
        self.report.failures.append(RowFailure.of(row, error))

    def _changed(self, row: Row, source: str, new: tuple[str, bytes]) -> None:
        report = self.report
        report.changed[source] += 1
        report.changed_by_table[row.table] += 1
        _count_first_seal(report, row, source)
        if new[1][:1] != _BOUND_BYTE:
            if self.bind:
                report.not_bindable[row.table] += 1
        elif not classify_row(row.tag, row.blob).bound:
            report.bound += 1  # bound now, and not before
        if report.changed_rows is not None:
            report.changed_rows.append((row.table, row.pk))

    def _prepare(self, row: Row | None) -> _Work | None:
        """``(row, source, new value)`` if ``row`` needs writing; failures and refusals are recorded.

        One row, one way: classify (the header alone) -> open -> check (first
        seals only) -> seal; a row already encrypted is rekeyed, opened and
        sealed in one step.  The compare-and-swap is the batch's.
        """
        if row is None:
            return None  # deleted by the application meanwhile: nothing to keep
        info, parsed = classify_parsed(row.tag, row.blob)
        source = self.wanted(row, info)
        if source is None:
            return None
        # A bound row is checked against the row it is stored in; an unbound one is bound there on request.
        identity = self.identity(row) if self.bind or info.bound else None
        if info.kind is RowKind.AESGCM:
            try:
                new = self.cipher.rekey(row.tag, row.blob, identity=identity, parsed=parsed)
            except (CryptoError, DecodeError) as e:
                self.fail(row, describe_failure(info, e))
                return None
            return None if new is None else (row, source, new)
        # A first seal: plaintext, or LangGraph's +aes.
        pickled = info.inner_tag == _PICKLE_TAG
        if pickled and not self.allow_pickle:
            self.report.refused.append(RowFailure.of(row, _PICKLE_REFUSED))
            return None
        try:
            opened = self.cipher.open_for_seal(
                row.tag, row.blob, encrypt_plaintext=self.encrypt_plaintext, upgrade_legacy=self.upgrade_legacy
            )
        except (CryptoError, DecodeError) as e:
            self.fail(row, describe_failure(info, e))
            return None
        if opened is None:
            return None
        if not pickled and self.check is not None:
            try:
                self.check(opened)
            except SerdeError as e:
                self.report.refused.append(
                    RowFailure.of(row, f"{type(e).__name__}: the application's serializer refuses it ({e})")
                )
                return None
        try:
            return row, source, self.cipher.seal(*opened, identity=identity)
        except SerdeError as e:
            self.fail(row, describe_failure(info, e))
            return None

    def _work(self, rows: list[Row]) -> list[_Work]:
        """``(row, source, new value)`` of each row of ``rows`` that needs writing (see :meth:`_prepare`)."""
        if self.bind:
            return [w for w in map(self._prepare, rows) if w is not None]
        # Key rotation of unbound rows, the bulk of any run, from the plans the
        # serializer kept; each row it leaves (None) takes the general path.
        work: list[_Work] = []
        prepare, add = self._prepare, work.append
        for row, quick in zip(rows, self.cipher.rekey_many([(r.tag, r.blob) for r in rows]), strict=True):
            if quick is not None:
                add((row, quick[0], (quick[1], quick[2])))
            else:
                w = prepare(row)
                if w is not None:
                    add(w)
        return work

    def apply_rows(self, batch: Any, rows: list[Row]) -> None:
        """Re-encrypt ``rows`` in one go; rows that changed meanwhile are redone one by one."""
        work: list[_Work] = []

        def chunks() -> Iterator[list[tuple[Row, str, bytes]]]:
            # Re-encrypted chunk by chunk as the batch asks for them: a server
            # database updates one chunk while the next one is re-encrypted.
            for part in map(self._work, _chunked(rows)):
                work.extend(part)
                yield [(row, new[0], new[1]) for row, _, new in part]

        self._settle(batch, work, batch.compare_and_swap_chunks(chunks()))

    def _settle(self, batch: Any, work: list[_Work], applied: list[bool]) -> None:
        """Count the rows of ``work`` that applied; redo the ones that lost to a concurrent write."""
        if all(applied) and not self.bind and self.report.changed_rows is None:
            self._changed_many(work)
            return
        changed = self._changed
        for (row, source, new), ok in zip(work, applied, strict=True):
            if ok:
                changed(row, source, new)
            else:
                self._redo(batch, row)

    def _changed_many(self, work: list[_Work]) -> None:
        """:meth:`_changed` for rows that all applied, counted at once (no binding, no list of changes)."""
        report = self.report
        report.changed.update(source for _, source, _ in work)
        report.changed_by_table.update(row.table for row, _, _ in work)
        for row, source, _ in work:
            _count_first_seal(report, row, source)

    def _redo(self, batch: Any, row: Row) -> None:
        # The row changed after we read it: read the current bytes and start over.
        for _attempt in range(MAX_CAS_ATTEMPTS):
            self.report.retried += 1
            work = self._prepare(batch.reread(row))
            if work is None:
                return
            row, source, new = work
            if batch.compare_and_swap(row, *new):
                self._changed(row, source, new)
                return
        self.fail(row, f"row kept changing; gave up after {MAX_CAS_ATTEMPTS} attempts")

    def _tally(self) -> RotateReport:
        """An empty report for one batch's counts, merged into the run's once the batch commits."""
        return RotateReport(
            dry_run=False, primary_id=self.primary, changed_rows=None if self.report.changed_rows is None else []
        )

    def run_table(self, table: Table, *, batch_size: int, bar: ProgressBar) -> None:
        """Walk ``table`` in locator order, one transaction per batch."""
        if self.db.reads_ahead and self.db.can_read_ahead:
            self._run_table_pipelined(table, batch_size=batch_size, bar=bar)
            return
        after = None
        sizer = PageSizer(batch_size)  # memory stays bounded whatever batch_size says
        while True:
            limit = sizer.limit
            rows, missed = self._run_batch(
                table, after=after, limit=limit, exclude=self.exclude, skip_locked=True
            )
            sizer.saw(rows)
            bar.update(len(rows))
            if missed:
                # Some rows in this range were locked (by another worker or by the
                # application) and skipped: walk the range again, waiting for the
                # locks.  Rows finished by others meanwhile no longer match.
                until = rows[-1].where if rows else None
                self._sweep(table, after=after, until=until, seen={r.where for r in rows}, limit=limit)
            if not rows:
                return
            after = rows[-1].where
            self.report.stopped_at = (table.name, rows[-1].pk)

    def _sweep(self, table: Table, *, after: Any, until: Any, seen: set[Any], limit: int) -> None:
        while True:
            rows, _ = self._run_batch(
                table, after=after, until=until, limit=limit, exclude=self.exclude, skip_locked=False, seen=seen
            )
            if not rows:
                return
            after = rows[-1].where

    def _run_batch(self, table: Table, *, seen: set[Any] | None = None, **claim: Any) -> tuple[list[Row], bool]:
        """Claim one batch and rotate it in one transaction: ``(rows claimed, whether locked rows were skipped)``."""

        def attempt(tally: RotateReport) -> tuple[list[Row], bool]:
            with self.db.batch(table, **claim) as batch:
                missed = batch.count_claimable() > len(batch.rows)
                rows = [r for r in batch.rows if seen is None or r.where not in seen]
                tally.examined += len(rows)
                self.apply_rows(batch, rows)
            return batch.rows, missed

        return self._transaction(attempt)

    def _transaction(self, attempt: Callable[[RotateReport], _T], *, read: RotateReport | None = None) -> _T:
        """``attempt`` (one batch transaction), retried when the database aborts it (deadlock, busy, lost connection).

        While it runs, the rotator's counts go to a fresh tally (``attempt``'s
        argument), added to the run's report (after ``read``, the counts of the
        batch's preparation, if any) only once the transaction committed: an
        attempt rolled back counts nothing.
        """
        attempts = 0
        while True:
            tally = self._tally()
            main, self.report = self.report, tally
            try:
                result = attempt(tally)
            except StoreError as e:
                attempts += 1
                if not self.db.is_transient(e) or attempts == MAX_BATCH_ATTEMPTS:
                    raise
                self._recover(e)
                continue  # rolled back: nothing of this attempt happened
            finally:
                self.report = main
            if read is not None:
                main.merge(read)
            main.merge(tally)
            return result

    # -- the pipeline: read and re-encrypt batch N+1 while batch N is written ----------
    def _run_table_pipelined(self, table: Table, *, batch_size: int, bar: ProgressBar) -> None:
        """:meth:`run_table` in two stages: a reader thread claims and re-encrypts, this thread writes.

        The reader works on its own connection (:meth:`Database.open_reader`),
        one batch ahead; each batch it hands over is
        written here in one transaction with compare-and-swap, exactly as a
        serial batch (whose claim is read outside its transaction too), so a
        row the application changed in between is re-read and redone.  An
        error or interrupt in either stage stops both: the open transaction is
        rolled back and the batches read ahead are dropped unwritten.
        """
        with _ReadAhead(self, table, batch_size) as ahead:
            for rows, work, tally in ahead:
                self._write_batch(table, rows, work, tally, before_commit=ahead.release)
                bar.update(len(rows))
                if not rows:
                    return
                self.report.stopped_at = (table.name, rows[-1].pk)

    def _write_batch(
        self,
        table: Table,
        rows: list[Row],
        work: list[_Work],
        read: RotateReport,
        *,
        before_commit: Callable[[], None],
    ) -> None:
        """Write one batch prepared by the reader (its counts in ``read``), in one transaction."""

        def attempt(tally: RotateReport) -> None:
            # Rolled back and retried, compare-and-swap redoes whatever changed meanwhile.
            with self.db.batch(table, after=None, limit=len(rows), exclude=self.exclude, rows=rows) as batch:
                if work:
                    self._settle(batch, work, batch.compare_and_swap_many([(r, *new) for r, _, new in work]))
                before_commit()

        self._transaction(attempt, read=read)

    def _recover(self, error: StoreError) -> None:
        if not self.db.lost:
            return
        if self.reconnects >= MAX_RECONNECTS:
            raise StoreError(f"{error} (gave up after {MAX_RECONNECTS} reconnections; rerun to resume)") from None
        self.reconnects += 1
        self.db.reconnect()


def _chunked(rows: list[Row]) -> Iterator[list[Row]]:
    step = max(_MIN_CHUNK, -(-len(rows) // _CHUNKS))
    for start in range(0, len(rows), step):
        yield rows[start : start + step]


_Prepared = tuple[list[Row], list[_Work], RotateReport]


class _ReadAhead:
    """The reader stage of a pipelined table walk: an iterator of prepared batches.

    A thread claims each batch on a reader connection (without locks, as a
    SQLite batch does), re-encrypts it with its own cipher and a copy of the
    rotator whose counts go to the batch's own tally, and hands it over.  It
    starts the next batch only when the writer calls :meth:`release`, just
    before its COMMIT: the commit (the WAL's writes and fsync, one call that
    lets go of the GIL) then overlaps the next claim and re-encryption, while
    the UPDATEs, which take the GIL back for every row, run alone (overlapped
    with Python work they only waited for it).  At most two batches are in
    memory (the one written, the one prepared), bounded by bytes as a serial
    run's one is.  The last batch handed over
    is empty.  Whatever the reader raises (``KeyboardInterrupt`` included) is
    raised again, as it is, by the writer's ``next()``.  Leaving the ``with``
    block stops the thread and closes its connection, however it is left.
    """

    def __init__(self, rotator: _Rotator, table: Table, batch_size: int) -> None:
        self._main = rotator
        self._table = table
        self._batch_size = batch_size
        self._queue: queue.Queue[_Prepared | BaseException] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._db = rotator.db.open_reader()
        self._thread = threading.Thread(target=self._run, name="serde_kit-rotate-reader", daemon=True)

    def __enter__(self) -> _ReadAhead:
        self._thread.start()
        return self

    def __iter__(self) -> Iterator[_Prepared]:
        while True:
            item = self._queue.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if not item[0]:
                return

    def release(self) -> None:
        """Let the reader start the next batch (the writer is about to commit the one it took)."""
        self._go.set()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._go.set()
        while self._thread.is_alive():
            try:  # unblock a reader waiting to hand over a batch
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        try:
            self._read()
        except BaseException as e:  # handed to the writer, which raises it
            self._hand_over(e)

    def _hand_over(self, item: _Prepared | BaseException) -> bool:
        """Queue ``item`` for the writer; False once the writer has stopped the pipeline."""
        if self._stop.is_set():
            return False
        self._queue.put(item)
        return not self._stop.is_set()

    def _read(self) -> None:
        main, db = self._main, self._db
        rotator = copy.copy(main)
        rotator.db = db
        rotator.cipher = RowCipher(main.cipher.keyring)  # its plans and caches stay this thread's own
        sizer = PageSizer(self._batch_size)
        after: tuple[Any, ...] | None = None
        while True:
            self._go.wait()
            self._go.clear()
            if self._stop.is_set():
                return
            rows = self._claim(after, sizer.limit)
            rotator.report = tally = main._tally()
            tally.examined += len(rows)
            work = [w for part in map(rotator._work, _chunked(rows)) for w in part]
            sizer.saw(rows)
            if not self._hand_over((rows, work, tally)) or not rows:
                return
            after = rows[-1].where

    def _claim(self, after: tuple[Any, ...] | None, limit: int) -> list[Row]:
        attempts = 0
        while True:
            try:
                return self._db.select_rows(
                    self._table, after=after, limit=limit, exclude=self._main.exclude, claim=True
                )
            except StoreError as e:
                attempts += 1
                if not self._db.is_transient(e) or attempts == MAX_BATCH_ATTEMPTS:
                    raise


def rotate(
    db: Database,
    *,
    keyring: Keyring,
    apply: bool = False,
    encrypt_plaintext: bool = False,
    upgrade_legacy: bool = False,
    bind: bool = False,
    allow_pickle: bool = False,
    inner: _InnerLike | None = None,
    check: RowCheck | None = None,
    batch_size: int = 500,
    verify_after: bool = True,
    record_changes: bool = False,
    progress: Progress | None = None,
) -> RotateReport:
    """Re-encrypt every stored row that is not under ``keyring``'s primary key.

    Dry run unless ``apply=True`` (then ``db`` must be writable).  Plaintext
    rows are encrypted only with ``encrypt_plaintext=True``, LangGraph ``+aes``
    rows upgraded only with ``upgrade_legacy=True`` (needs the legacy key);
    each is first checked with ``check`` (a callable given the row's inner
    ``(tag, bytes)``, raising a :class:`~serde_kit.errors.SerdeError` to refuse
    it), or decoded with ``inner``, the application's serializer (e.g.
    ``Serializer(allow=[MyState])``, which imports and builds the types), by
    default :class:`~serde_kit.tools.scan.AllowlistCheck` of
    ``Allowlist.from_env()`` (renders without importing anything), and a row it refuses is listed in ``refused``
    and left as it is, as are ``pickle`` rows unless ``allow_pickle=True``.
    Bound rows keep their binding; ``bind=True`` binds unbound rows to their
    thread id and namespace (what :func:`~serde_kit.bound_saver.bind_rows`
    reads).  A bound row stored under another thread than its own is listed
    in ``failures`` and left as it is.  Rows that cannot be decrypted, and
    stray rows, are reported in ``failures`` and left untouched.  After
    applying, a verification pass (``verify_after``) reads every row back.
    ``record_changes=True`` lists every changed row's primary key in
    ``changed_rows``.  Raises :class:`~serde_kit.errors.StoreError` when the
    database fails past the retries (the open batch is rolled back; a rerun
    resumes).  With ``db.reads_ahead = True`` (SQLite in WAL mode, see
    :attr:`~serde_kit.tools.db.base.Database.can_read_ahead`) batches are
    pipelined: the next is claimed and re-encrypted on a second connection
    while the current one commits; off by default (bench/README.md).
    """
    if batch_size < 1:
        raise ConfigError("batch size must be at least 1")
    if apply:
        db.check_writable()
    if check is None and inner is not None:
        check = inner.loads_typed
    if check is None and (encrypt_plaintext or upgrade_legacy):
        check = AllowlistCheck(Allowlist.from_env())
    # Key rotation and binding only move bytes; first seals are checked by ``check`` first.
    cipher = RowCipher(keyring)
    report = RotateReport(dry_run=not apply, primary_id=keyring.primary_id, changed_rows=[] if record_changes else None)
    rotator = _Rotator(
        db,
        cipher,
        report,
        check=check,
        encrypt_plaintext=encrypt_plaintext,
        upgrade_legacy=upgrade_legacy,
        bind=bind,
        allow_pickle=allow_pickle,
    )
    exclude = rotator.exclude

    def total() -> int:
        return sum(db.count_pending(t, exclude=exclude) for t in db.tables) if apply else db.count_rows()

    bar = open_bar(progress, total, "rotate" if apply else "rotate (dry run)")
    try:
        if not apply:
            _dry_run(db, rotator, keyring, batch_size=batch_size, bar=bar)
            return report
        for table in db.tables:
            rotator.run_table(table, batch_size=batch_size, bar=bar)
    except KeyboardInterrupt:
        report.interrupted = True
        return report
    finally:
        report.reconnects = rotator.reconnects
        bar.close()
    if verify_after:
        report.verification = verify(db, keyring=keyring, batch_size=batch_size, progress=progress)
    return report


def _dry_run(db: Database, rotator: _Rotator, keyring: Keyring, *, batch_size: int, bar: ProgressBar) -> None:
    report = rotator.report
    # Key rotation alone is decided from headers; binding and first seals need whole rows
    # (the binding is checked, and the application's serializer decodes what would be sealed).
    whole = rotator.bind or rotator.encrypt_plaintext or rotator.upgrade_legacy
    for rows in db.iter_rows(batch_size, head=None if whole else HEADER_READ):
        for row in rows:
            if not db.would_claim(row, rotator.exclude):
                if row.blob is not None:
                    report.already_primary += 1
                continue
            if whole:
                info = classify_row(row.tag, row.blob)
                if info.kind is RowKind.AESGCM and rotator.wanted(row, info) is None:
                    report.already_primary += 1
                    continue
                report.examined += 1
                work = rotator._prepare(row)
                if work is not None:
                    rotator._changed(*work)
                continue
            report.examined += 1
            source = rotator.wanted(row, classify_row(row.tag, row.blob))
            if source is None:
                continue
            if source not in _FIRST_SEALS and source not in keyring:
                rotator.fail(row, f"UnknownKeyError: key id {source!r} is not in the keyring")
                continue
            if source == "legacy" and keyring.legacy_key is None:
                rotator.fail(row, "UnknownKeyError: no legacy key (set LANGGRAPH_AES_KEY)")
                continue
            report.changed[source] += 1
            report.changed_by_table[row.table] += 1
        bar.update(len(rows))
        report.stopped_at = (rows[-1].table, rows[-1].pk)
