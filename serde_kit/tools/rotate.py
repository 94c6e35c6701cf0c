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
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.blob import CIPHER_NAME, build_header
from serde_kit.crypto.rows import RowKind
from serde_kit.errors import ConfigError, CryptoError, DecodeError, StoreError

from .common import (
    HEADER_READ,
    Progress,
    ProgressBar,
    RowFailure,
    bytes_serializer,
    describe_failure,
    open_bar,
    stray_failure,
)
from .db import Database, Row, Table
from .db.batch import PageSizer
from .verify import VerifyReport, verify

__all__ = ["RotateReport", "rotate"]

#: Attempts per batch when the database aborts its transaction (deadlock, busy, lost connection).
MAX_BATCH_ATTEMPTS = 5

#: Reconnections per run after the connection was lost, before giving up cleanly.
MAX_RECONNECTS = 5

#: Compare-and-swap attempts per row before giving up on it (a row that keeps
#: changing under us is reported, not forced).
MAX_CAS_ATTEMPTS = 20


@dataclass
class RotateReport:
    """What :func:`rotate` did (or, in a dry run, would do).

    ``examined`` counts the rows not yet under the primary key, the same way
    in a dry run and when applying; ``already_primary`` the rows that were.
    """

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
        self.retried += other.retried
        self.failures.extend(other.failures)
        if self.changed_rows is not None and other.changed_rows is not None:
            self.changed_rows.extend(other.changed_rows)

    @property
    def ok(self) -> bool:
        """No row failed, the run finished, and the verification pass (if run) found none unreadable."""
        return (
            not self.failures
            and not self.interrupted
            and (self.verification is None or self.verification.ok)
        )


def _pending(row: Row, header: bytes) -> bool:
    """What a claim selects: a non-NULL blob not already under the primary (mirrors the SQL)."""
    if row.blob is None:
        return False
    tag, blob = row.tag, row.blob
    under = isinstance(tag, str) and tag.endswith("+" + CIPHER_NAME) and isinstance(blob, bytes) and blob.startswith(header)
    return not under


class _Rotator:
    def __init__(
        self, db: Database, serde: EncryptedSerializer, report: RotateReport, *, encrypt_plaintext: bool, upgrade_legacy: bool
    ) -> None:
        self.db = db
        self.serde = serde
        self.report = report
        self.encrypt_plaintext = encrypt_plaintext
        self.upgrade_legacy = upgrade_legacy
        self.primary = serde.keyring.primary_id
        self.header = build_header(self.primary)
        self.reconnects = 0

    def wanted(self, row: Row) -> str | None:
        """The source label if ``row`` needs re-encrypting, else None (counting why not)."""
        info = row.info
        kind = info.kind
        if kind is RowKind.EMPTY:
            return None
        if kind is RowKind.AESGCM:
            return None if info.key_id == self.primary else info.key_id
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

    def _changed(self, row: Row, source: str) -> None:
        self.report.changed[source] += 1
        self.report.changed_by_table[row.table] += 1
        if self.report.changed_rows is not None:
            self.report.changed_rows.append((row.table, row.pk))

    def _prepare(self, row: Row | None) -> tuple[Row, str, tuple[str, bytes]] | None:
        """``(row, source, new value)`` if ``row`` needs writing; failures are recorded."""
        if row is None:
            return None  # deleted by the application meanwhile: nothing to keep
        source = self.wanted(row)
        if source is None:
            return None
        try:
            new = self.serde.reencrypt(
                (row.tag, row.blob), encrypt_plaintext=self.encrypt_plaintext, upgrade_legacy=self.upgrade_legacy
            )
        except (CryptoError, DecodeError) as e:
            self.fail(row, describe_failure(row.info, e))
            return None
        return None if new is None else (row, source, new)

    def apply_rows(self, batch: Any, rows: list[Row]) -> None:
        """Re-encrypt ``rows`` in one go; rows that changed meanwhile are redone one by one."""
        work = [w for w in map(self._prepare, rows) if w is not None]
        applied = batch.compare_and_swap_many([(row, *new) for row, _, new in work])
        for (row, source, _), ok in zip(work, applied, strict=True):
            if ok:
                self._changed(row, source)
            else:
                self._redo(batch, row)

    def _redo(self, batch: Any, row: Row) -> None:
        # The row changed after we read it: read the current bytes and start over.
        for _attempt in range(MAX_CAS_ATTEMPTS):
            self.report.retried += 1
            work = self._prepare(batch.reread(row))
            if work is None:
                return
            row, source, new = work
            if batch.compare_and_swap(row, *new):
                self._changed(row, source)
                return
        self.fail(row, f"row kept changing; gave up after {MAX_CAS_ATTEMPTS} attempts")

    def run_table(self, table: Table, *, batch_size: int, bar: ProgressBar) -> None:
        """Walk ``table`` in locator order, one transaction per batch."""
        after = None
        sizer = PageSizer(batch_size)  # memory stays bounded whatever batch_size says
        while True:
            limit = sizer.limit
            rows, missed = self._run_batch(table, after=after, limit=limit, exclude_header=self.header, skip_locked=True)
            sizer.saw(rows)
            bar.update(len(rows))
            if missed:
                # Some rows in this range were locked (by another worker or by the
                # application) and skipped: walk the range again, waiting for the
                # locks.  Rows finished by others meanwhile no longer match.
                self._sweep(table, after=after, until=rows[-1].where if rows else None, seen={r.where for r in rows}, limit=limit)
            if not rows:
                return
            after = rows[-1].where
            self.report.stopped_at = (table.name, rows[-1].pk)

    def _sweep(self, table: Table, *, after: Any, until: Any, seen: set[Any], limit: int) -> None:
        while True:
            rows, _ = self._run_batch(
                table, after=after, until=until, limit=limit, exclude_header=self.header, skip_locked=False, seen=seen
            )
            if not rows:
                return
            after = rows[-1].where

    def _run_batch(self, table: Table, *, seen: set[Any] | None = None, **claim: Any) -> tuple[list[Row], bool]:
        """One batch transaction; retried when the database aborts it (deadlock, busy, lost connection)."""
        for attempt in range(MAX_BATCH_ATTEMPTS):
            tally = RotateReport(
                dry_run=False, primary_id=self.primary, changed_rows=None if self.report.changed_rows is None else []
            )
            main, self.report = self.report, tally
            try:
                with self.db.batch(table, **claim) as batch:
                    missed = batch.count_claimable() > len(batch.rows)
                    rows = [r for r in batch.rows if seen is None or r.where not in seen]
                    tally.examined += len(rows)
                    self.apply_rows(batch, rows)
            except StoreError as e:
                if not self.db.is_transient(e) or attempt == MAX_BATCH_ATTEMPTS - 1:
                    raise
                self._recover(e)
                continue  # rolled back: nothing of this batch happened
            finally:
                self.report = main
            main.merge(tally)
            return batch.rows, missed
        raise AssertionError("unreachable")

    def _recover(self, error: StoreError) -> None:
        if not self.db.lost:
            return
        if self.reconnects >= MAX_RECONNECTS:
            raise StoreError(f"{error} (gave up after {MAX_RECONNECTS} reconnections; rerun to resume)") from None
        self.reconnects += 1
        self.db.reconnect()


def rotate(
    db: Database,
    *,
    keyring: Keyring,
    apply: bool = False,
    encrypt_plaintext: bool = False,
    upgrade_legacy: bool = False,
    batch_size: int = 500,
    verify_after: bool = True,
    record_changes: bool = False,
    progress: Progress | None = None,
) -> RotateReport:
    """Re-encrypt every stored row that is not under ``keyring``'s primary key.

    Dry run unless ``apply=True`` (then ``db`` must be writable).  Plaintext
    rows are encrypted only with ``encrypt_plaintext=True``, LangGraph ``+aes``
    rows upgraded only with ``upgrade_legacy=True`` (needs the legacy key).
    Rows that cannot be decrypted, and stray rows, are reported in
    ``failures`` and left untouched.  After applying, a verification pass
    (``verify_after``) reads every row back.  ``record_changes=True`` lists
    every changed row's primary key in ``changed_rows``.  Raises
    :class:`~serde_kit.errors.StoreError` when the database fails past the
    retries (the open batch is rolled back; a rerun resumes).
    """
    if batch_size < 1:
        raise ConfigError("batch size must be at least 1")
    if apply:
        db.check_writable()
    serde = bytes_serializer(keyring)
    report = RotateReport(dry_run=not apply, primary_id=keyring.primary_id, changed_rows=[] if record_changes else None)
    rotator = _Rotator(db, serde, report, encrypt_plaintext=encrypt_plaintext, upgrade_legacy=upgrade_legacy)
    header = rotator.header

    def total() -> int:
        return sum(db.count_pending(t, exclude_header=header) for t in db.tables) if apply else db.count_rows()

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
    for rows in db.iter_rows(batch_size, head=HEADER_READ):
        for row in rows:
            if not _pending(row, rotator.header):
                if row.blob is not None:
                    report.already_primary += 1
                continue
            report.examined += 1
            source = rotator.wanted(row)
            if source is None:
                continue
            if source not in ("plaintext", "legacy") and source not in keyring:
                rotator.fail(row, f"UnknownKeyError: key id {source!r} is not in the keyring")
                continue
            if source == "legacy" and keyring.legacy_key is None:
                rotator.fail(row, "UnknownKeyError: no legacy key (set LANGGRAPH_AES_KEY)")
                continue
            report.changed[source] += 1
            report.changed_by_table[row.table] += 1
        bar.update(len(rows))
        report.stopped_at = (rows[-1].table, rows[-1].pk)
