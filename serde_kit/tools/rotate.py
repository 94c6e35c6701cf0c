"""Key lifecycle over stored rows: ``status``, ``rotate``, ``retire``, ``keygen``.

All four work on the bytes of stored rows through a :mod:`~serde_kit.tools.stores`
adapter and never deserialize a value, so no application class is imported.

``rotate`` re-encrypts every row that is not under the keyring's primary key.
It is a dry run unless ``apply=True``; it works in batches, one transaction per
batch, and is idempotent (rows already under the primary are skipped from the
header).  Every row is at every instant either in its old or its new form, so a
run killed at any point loses nothing and a rerun finishes the job.  Each row
is written with a compare-and-swap update: a row the application changed after
it was read is re-read and re-encrypted, never overwritten with stale bytes.
On PostgreSQL, batches are claimed with ``FOR UPDATE SKIP LOCKED`` so several
workers can run at once; when a batch had to skip locked rows, its range is
walked again waiting for the locks, so no row is missed or done twice.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serde_kit.crypto import EncryptedSerializer, Keyring, load_keyring
from serde_kit.crypto.blob import build_header
from serde_kit.errors import ConfigError, CryptoError, DecodeError, KeyringError, SerdeError
from serde_kit.tools.stores import Row, Store

__all__ = [
    "RetireReport",
    "RotateReport",
    "RowFailure",
    "StatusReport",
    "TableStatus",
    "VerifyReport",
    "keygen",
    "register",
    "retire",
    "rotate",
    "status",
    "verify",
]

#: Bytes read per blob for header-only classification (header <= 66 bytes; the
#: rest only has to be long enough to look like a whole v1 blob).
HEADER_READ = 128

#: Attempts per batch when the database aborts its transaction (deadlock, busy).
MAX_BATCH_ATTEMPTS = 5

#: Compare-and-swap attempts per row before giving up on it (a row that keeps
#: changing under us is reported, not forced).
MAX_CAS_ATTEMPTS = 20

Progress = Callable[..., Any]


class _BytesOnly:
    """Inner serializer stand-in: the tools work on bytes and never (de)serialize."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        raise TypeError("serde_kit tools never serialize values")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise TypeError("serde_kit tools never deserialize values")


def _serializer(keyring: Keyring | None, *, allow_plaintext: bool = False) -> EncryptedSerializer:
    # classify() reads tags and headers only; without the user's keyring a
    # throwaway one is enough for it.
    if keyring is None:
        keyring = Keyring.generate("header-only")
    return EncryptedSerializer(_BytesOnly(), keyring, allow_plaintext=allow_plaintext)


class _NoBar:
    """Stands in for a progress bar when none was asked for."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(progress: Progress | None, total: int, desc: str) -> Any:
    if progress is None:
        return _NoBar()
    return progress(total=total, desc=desc)


def _row_label(row: Row) -> str:
    return f"{row.table}[{', '.join(repr(v) for v in row.pk)}]"


@dataclass(frozen=True)
class RowFailure:
    """A row that could not be processed, and why."""

    table: str
    pk: tuple[Any, ...]
    error: str

    def __str__(self) -> str:
        return f"{self.table}[{', '.join(repr(v) for v in self.pk)}]: {self.error}"


# ---------------------------------------------------------------------------
# status
# ---------------------------------------------------------------------------


@dataclass
class TableStatus:
    """Row counts of one table by what the row holds."""

    name: str
    rows: int = 0
    by_key: Counter = field(default_factory=Counter)
    plaintext: int = 0
    legacy: int = 0
    unknown: int = 0
    empty: int = 0
    failed: int = 0

    def add(self, other: TableStatus) -> None:
        self.rows += other.rows
        self.by_key.update(other.by_key)
        self.plaintext += other.plaintext
        self.legacy += other.legacy
        self.unknown += other.unknown
        self.empty += other.empty
        self.failed += other.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "by_key": dict(sorted(self.by_key.items())),
            "plaintext": self.plaintext,
            "legacy": self.legacy,
            "unknown": self.unknown,
            "empty": self.empty,
            "failed": self.failed,
        }


@dataclass
class StatusReport:
    """What :func:`status` found: per table and in total."""

    store: str
    primary_id: str | None
    keyring_ids: list[str] | None
    verified: bool
    tables: list[TableStatus]
    failures: list[RowFailure] = field(default_factory=list)

    @property
    def total(self) -> TableStatus:
        total = TableStatus("total")
        for t in self.tables:
            total.add(t)
        return total

    def rows_using(self, key_id: str) -> dict[str, int]:
        """Rows per table whose header names ``key_id``."""
        return {t.name: t.by_key.get(key_id, 0) for t in self.tables}

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "primary": self.primary_id,
            "verified": self.verified,
            "tables": {t.name: t.to_dict() for t in self.tables},
            "total": self.total.to_dict(),
            "failures": [str(f) for f in self.failures],
        }

    def format(self) -> str:
        """A readable table for people."""
        keys = sorted({k for t in self.tables for k in t.by_key})
        columns = [f"key {k}" + (" (primary)" if k == self.primary_id else "") for k in keys]
        columns += ["plaintext", "legacy +aes", "unknown", "empty"]
        if self.verified:
            columns.append("failed")
        header = ["table", "rows", *columns]
        lines = []
        for t in [*self.tables, self.total]:
            cells = [t.name, str(t.rows), *(str(t.by_key.get(k, 0)) for k in keys)]
            cells += [str(t.plaintext), str(t.legacy), str(t.unknown), str(t.empty)]
            if self.verified:
                cells.append(str(t.failed))
            lines.append(cells)
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]

        def fmt(cells: list[str]) -> str:
            return "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )

        out = [f"store: {self.store}"]
        if self.primary_id is not None:
            out.append(f"keyring: primary {self.primary_id}, ids {', '.join(self.keyring_ids or [])}")
        else:
            out.append("keyring: none loaded (header-only counts)")
        out += [fmt(header), fmt(["-" * w for w in widths])]
        out += [fmt(c) for c in lines]
        if self.keyring_ids is not None:
            missing = [k for k in keys if k not in self.keyring_ids]
            if missing:
                out.append(f"warning: rows use key id(s) not in the keyring: {', '.join(missing)}")
        for f in self.failures[:20]:
            out.append(f"failed: {f}")
        if len(self.failures) > 20:
            out.append(f"... and {len(self.failures) - 20} more failures")
        return "\n".join(out)


def status(
    store: Store,
    *,
    keyring: Keyring | None = None,
    verify: bool = False,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> StatusReport:
    """Count rows per key id, plaintext, legacy ``+aes``, unknown-header and empty rows.

    Header-only (no key needed) unless ``verify=True``, which decrypts every
    encrypted row with ``keyring`` (required then) and counts failures.
    """
    if verify and keyring is None:
        raise KeyringError("status --verify needs the keyring (SERDE_KIT_KEYRING or SERDE_KIT_KEYRING_FILE)")
    serde = _serializer(keyring, allow_plaintext=True)
    report = StatusReport(
        store=store.describe(),
        primary_id=keyring.primary_id if keyring is not None else None,
        keyring_ids=keyring.ids if keyring is not None else None,
        verified=verify,
        tables=[TableStatus(t.name) for t in store.tables],
    )
    by_name = {t.name: t for t in report.tables}
    bar = _progress(progress, store.count_rows() if progress else 0, "status")
    try:
        for rows in store.iter_rows(batch_size, head=None if verify else HEADER_READ):
            for row in rows:
                t = by_name[row.table]
                t.rows += 1
                if row.is_empty:
                    t.empty += 1
                    continue
                info = serde.classify((row.tag, row.blob))
                if info.kind == "aesgcm":
                    t.by_key[info.key_id] += 1
                elif info.kind == "legacy":
                    t.legacy += 1
                elif info.kind == "plaintext":
                    t.plaintext += 1
                else:
                    t.unknown += 1
                if verify and info.kind in ("aesgcm", "legacy"):
                    try:
                        serde.decrypt_row((row.tag, row.blob))
                    except SerdeError as e:
                        t.failed += 1
                        report.failures.append(RowFailure(row.table, row.pk, f"{type(e).__name__}: {e}"))
            bar.update(len(rows))
    finally:
        bar.close()
    return report


# ---------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------


@dataclass
class VerifyReport:
    """Result of reading every row back: which decrypt and which do not."""

    rows: int = 0
    decrypted: int = 0
    plaintext: int = 0
    empty: int = 0
    not_primary: int = 0
    failures: list[RowFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "decrypted": self.decrypted,
            "plaintext": self.plaintext,
            "empty": self.empty,
            "not_primary": self.not_primary,
            "failures": [str(f) for f in self.failures],
        }


def verify(
    store: Store,
    *,
    keyring: Keyring,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> VerifyReport:
    """Decrypt every encrypted row (bytes level) and report the ones that fail.

    Plaintext rows are counted, not failed (rotate leaves them unless asked);
    rows with an unreadable header fail.
    """
    serde = _serializer(keyring, allow_plaintext=True)
    report = VerifyReport()
    bar = _progress(progress, store.count_rows() if progress else 0, "verify")
    try:
        for rows in store.iter_rows(batch_size):
            for row in rows:
                report.rows += 1
                if row.is_empty:
                    report.empty += 1
                    continue
                info = serde.classify((row.tag, row.blob))
                if info.kind == "plaintext":
                    report.plaintext += 1
                    continue
                if info.kind == "unknown":
                    report.failures.append(
                        RowFailure(row.table, row.pk, f"unreadable type tag or header (tag {row.tag!r})")
                    )
                    continue
                if info.kind != "aesgcm" or info.key_id != keyring.primary_id:
                    report.not_primary += 1
                try:
                    serde.decrypt_row((row.tag, row.blob))
                except SerdeError as e:
                    report.failures.append(RowFailure(row.table, row.pk, f"{type(e).__name__}: {e}"))
                else:
                    report.decrypted += 1
            bar.update(len(rows))
    finally:
        bar.close()
    return report


# ---------------------------------------------------------------------------
# rotate
# ---------------------------------------------------------------------------


@dataclass
class RotateReport:
    """What :func:`rotate` did (or, in a dry run, would do)."""

    dry_run: bool
    primary_id: str
    #: rows read: every row in a dry run; only rows not yet under the primary when applying
    examined: int = 0
    #: rows re-encrypted (would be, in a dry run), by source: key id, "plaintext" or "legacy"
    changed: Counter = field(default_factory=Counter)
    changed_by_table: Counter = field(default_factory=Counter)
    skipped_plaintext: int = 0
    skipped_legacy: int = 0
    unknown: int = 0
    #: compare-and-swap updates that lost to a concurrent write and were retried
    retried: int = 0
    failures: list[RowFailure] = field(default_factory=list)
    #: (table, pk) of every row changed, when rotate(record_changes=True)
    changed_rows: list[tuple[str, tuple[Any, ...]]] | None = None
    verification: VerifyReport | None = None

    @property
    def total_changed(self) -> int:
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
        """No row failed, and the verification pass (if run) found none unreadable."""
        return not self.failures and (self.verification is None or self.verification.ok)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "primary": self.primary_id,
            "examined": self.examined,
            "changed": dict(sorted(self.changed.items())),
            "changed_by_table": dict(sorted(self.changed_by_table.items())),
            "skipped_plaintext": self.skipped_plaintext,
            "skipped_legacy": self.skipped_legacy,
            "unknown": self.unknown,
            "retried": self.retried,
            "failures": [str(f) for f in self.failures],
            "verification": None if self.verification is None else self.verification.to_dict(),
        }

    def format(self) -> str:
        """A readable summary for people."""
        verb = "would re-encrypt" if self.dry_run else "re-encrypted"
        out = [
            f"{'DRY RUN: ' if self.dry_run else ''}{verb} {self.total_changed} row(s) "
            f"under primary key {self.primary_id} ({self.examined} examined)"
        ]
        for source, n in sorted(self.changed.items()):
            label = {"plaintext": "plaintext rows", "legacy": "LangGraph +aes rows"}.get(
                source, f"rows under key {source}"
            )
            out.append(f"  {label}: {n}")
        for table, n in sorted(self.changed_by_table.items()):
            out.append(f"  table {table}: {n}")
        if self.skipped_plaintext:
            out.append(
                f"left as is: {self.skipped_plaintext} plaintext row(s) (add --encrypt-plaintext to encrypt them)"
            )
        if self.skipped_legacy:
            out.append(
                f"left as is: {self.skipped_legacy} LangGraph +aes row(s) (add --upgrade-legacy to upgrade them)"
            )
        if self.unknown:
            out.append(f"left as is: {self.unknown} row(s) with an unknown type tag or header")
        if self.retried:
            out.append(f"{self.retried} row(s) changed by the application meanwhile were re-read and redone")
        for f in self.failures[:20]:
            out.append(f"failed: {f}")
        if len(self.failures) > 20:
            out.append(f"... and {len(self.failures) - 20} more failures")
        v = self.verification
        if v is not None:
            out.append(
                f"verification: {v.decrypted} row(s) decrypt, {v.plaintext} plaintext, "
                f"{v.empty} empty, {len(v.failures)} failed"
            )
            if v.not_primary:
                out.append(
                    f"note: {v.not_primary} encrypted row(s) are still not under {self.primary_id} "
                    "(written meanwhile by an application with another primary key?); run rotate again"
                )
            for f in v.failures[:20]:
                out.append(f"unreadable: {f}")
            if len(v.failures) > 20:
                out.append(f"... and {len(v.failures) - 20} more unreadable rows")
        if self.dry_run:
            out.append("nothing was written; run again with --apply to re-encrypt")
        return "\n".join(out)


class _Rotator:
    def __init__(
        self,
        store: Store,
        serde: EncryptedSerializer,
        report: RotateReport,
        *,
        encrypt_plaintext: bool,
        upgrade_legacy: bool,
    ) -> None:
        self.store = store
        self.serde = serde
        self.report = report
        self.encrypt_plaintext = encrypt_plaintext
        self.upgrade_legacy = upgrade_legacy
        self.primary = serde.keyring.primary_id

    def wanted(self, row: Row) -> str | None:
        """The source label if ``row`` needs re-encrypting, else None (and count why not)."""
        if row.is_empty:
            return None
        info = self.serde.classify((row.tag, row.blob))
        if info.kind == "aesgcm":
            return None if info.key_id == self.primary else info.key_id
        if info.kind == "legacy":
            if self.upgrade_legacy:
                return "legacy"
            self.report.skipped_legacy += 1
            return None
        if info.kind == "plaintext":
            if self.encrypt_plaintext:
                return "plaintext"
            self.report.skipped_plaintext += 1
            return None
        self.report.unknown += 1
        return None

    def new_value(self, row: Row) -> tuple[str, bytes] | None:
        return self.serde.reencrypt(
            (row.tag, row.blob),
            encrypt_plaintext=self.encrypt_plaintext,
            upgrade_legacy=self.upgrade_legacy,
        )

    def fail(self, row: Row, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.report.failures.append(RowFailure(row.table, row.pk, text))

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
            new = self.new_value(row)
        except (CryptoError, DecodeError) as e:
            self.fail(row, e)
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

    def run_table(self, table: Any, *, batch_size: int, bar: Any) -> None:
        """Walk ``table`` in primary-key order, one transaction per batch."""
        header = build_header(self.primary)
        after = None
        while True:
            rows, missed = self._run_batch(
                table, after=after, limit=batch_size, exclude_header=header, skip_locked=True
            )
            bar.update(len(rows))
            if missed:
                # Some rows in this range were locked (by another worker or by the
                # application) and skipped: go over the range again, waiting for
                # the locks this time.  Rows finished by others meanwhile no
                # longer match and are not touched twice.
                self._sweep(
                    table,
                    after=after,
                    until=rows[-1].pk if rows else None,
                    seen={r.pk for r in rows},
                    batch_size=batch_size,
                    header=header,
                )
            if not rows:
                return
            after = rows[-1].pk

    def _sweep(self, table: Any, *, after: Any, until: Any, seen: set, batch_size: int, header: bytes) -> None:
        while True:
            rows, _ = self._run_batch(
                table,
                after=after,
                until=until,
                limit=batch_size,
                exclude_header=header,
                skip_locked=False,
                seen=seen,
            )
            if not rows:
                return
            after = rows[-1].pk

    def _run_batch(self, table: Any, *, seen: set | None = None, **claim: Any) -> tuple[list[Row], bool]:
        """One batch transaction; retried when the database aborts it (deadlock, busy)."""
        for attempt in range(MAX_BATCH_ATTEMPTS):
            tally = RotateReport(
                dry_run=False,
                primary_id=self.primary,
                changed_rows=None if self.report.changed_rows is None else [],
            )
            main, self.report = self.report, tally
            try:
                with self.store.batch(table, **claim) as batch:
                    missed = batch.count_claimable() > len(batch.rows)
                    rows = [r for r in batch.rows if seen is None or r.pk not in seen]
                    tally.examined += len(rows)
                    self.apply_rows(batch, rows)
            except Exception as e:
                if not self.store.is_transient(e) or attempt == MAX_BATCH_ATTEMPTS - 1:
                    raise
                continue  # rolled back: nothing of this batch happened
            finally:
                self.report = main
            main.merge(tally)
            return batch.rows, missed
        raise AssertionError("unreachable")


def rotate(
    store: Store,
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

    Dry run unless ``apply=True`` (then ``store`` must be writable).  Plaintext
    rows are encrypted only with ``encrypt_plaintext=True``, LangGraph ``+aes``
    rows upgraded only with ``upgrade_legacy=True`` (needs the legacy key).
    Rows that cannot be decrypted are reported in ``failures`` and left
    untouched.  After applying, a verification pass (``verify_after``) reads
    every row back.  ``record_changes=True`` lists every changed row's
    primary key in ``changed_rows``.
    """
    if batch_size < 1:
        raise ConfigError("batch size must be at least 1")
    serde = _serializer(keyring)
    report = RotateReport(
        dry_run=not apply,
        primary_id=keyring.primary_id,
        changed_rows=[] if record_changes else None,
    )
    rotator = _Rotator(
        store, serde, report, encrypt_plaintext=encrypt_plaintext, upgrade_legacy=upgrade_legacy
    )
    total = 0
    if progress is not None:
        # a dry run reads every row's header; applying reads only rows not yet done
        header = build_header(keyring.primary_id)
        total = (
            sum(store.count_pending(t, exclude_header=header) for t in store.tables)
            if apply
            else store.count_rows()
        )
    bar = _progress(progress, total, "rotate" if apply else "rotate (dry run)")
    try:
        if not apply:
            for rows in store.iter_rows(batch_size, head=HEADER_READ):
                for row in rows:
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
            return report
        for table in store.tables:
            rotator.run_table(table, batch_size=batch_size, bar=bar)
    finally:
        bar.close()
    if verify_after:
        report.verification = verify(store, keyring=keyring, batch_size=batch_size, progress=progress)
    return report


# ---------------------------------------------------------------------------
# retire
# ---------------------------------------------------------------------------


@dataclass
class RetireReport:
    """Whether a key id can be removed from the keyring, and what still uses it."""

    key_id: str
    rows_by_table: dict[str, int]
    is_primary: bool = False
    in_keyring: bool | None = None

    @property
    def rows(self) -> int:
        return sum(self.rows_by_table.values())

    @property
    def safe(self) -> bool:
        return self.rows == 0 and not self.is_primary

    def format(self) -> str:
        if self.is_primary:
            return (
                f"refusing: {self.key_id} is the keyring's primary key; add a new key, "
                "make it primary everywhere, run `serde-kit rotate --apply`, then retire this one"
            )
        if self.rows:
            per_table = ", ".join(f"{t}: {n}" for t, n in self.rows_by_table.items() if n)
            return (
                f"refusing: {self.rows} row(s) still use key {self.key_id} ({per_table}); "
                "run `serde-kit rotate --apply` (with the new primary key first in the keyring) "
                "and then retire again"
            )
        note = "" if self.in_keyring is not False else " (it is not in the current keyring anyway)"
        return (
            f"safe: no stored row uses key {self.key_id}{note}. Remove it from "
            "SERDE_KIT_KEYRING / the key file in your secret store and restart the applications; "
            "serde-kit does not edit your secret store"
        )


def retire(
    store: Store,
    key_id: str,
    *,
    keyring: Keyring | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> RetireReport:
    """Check whether ``key_id`` can be dropped: no stored row names it, and it is not primary."""
    counts = status(store, keyring=None, batch_size=batch_size, progress=progress)
    return RetireReport(
        key_id=key_id,
        rows_by_table=counts.rows_using(key_id),
        is_primary=keyring is not None and keyring.primary_id == key_id,
        in_keyring=None if keyring is None else key_id in keyring,
    )


# ---------------------------------------------------------------------------
# keygen
# ---------------------------------------------------------------------------


def keygen(key_id: str | None = None, *, extend: Keyring | None = None) -> tuple[str, Keyring]:
    """A new random key; returns ``(key_id, keyring)``.

    With ``extend``, the new key becomes the primary of a copy of that keyring
    (its keys stay, for decrypting old rows), which is what a rotation needs.
    """
    new = Keyring.generate(key_id)
    if extend is None:
        return new.primary_id, new
    if new.primary_id in extend:
        raise KeyringError(f"key id {new.primary_id!r} is already in the keyring; choose another --id")
    combined = extend.with_key(new.primary_id, new.key(new.primary_id), primary=True)
    return new.primary_id, combined


def _file_text(keyring: Keyring) -> str:
    # Written through Keyring.to_file so the printed text is exactly that format.
    with tempfile.TemporaryDirectory(prefix="serde-kit-keygen-") as d:
        path = Path(d) / "keyring"
        keyring.to_file(path)
        return path.read_text()


# ---------------------------------------------------------------------------
# CLI registration (the shell itself is serde_kit.cli)
# ---------------------------------------------------------------------------


def _keyring_from_env(*, required: bool) -> Keyring | None:
    """The keyring from the environment; None when optional and not configured."""
    configured = os.environ.get("SERDE_KIT_KEYRING") or os.environ.get("SERDE_KIT_KEYRING_FILE")
    if not configured and not required:
        return None
    return load_keyring()


def _cmd_status(args: argparse.Namespace) -> int:
    from serde_kit.cli import open_store_from_args, progress_for

    keyring = _keyring_from_env(required=args.verify)
    with open_store_from_args(args, readonly=True) as store:
        report = status(
            store,
            keyring=keyring,
            verify=args.verify,
            batch_size=args.batch_size,
            progress=progress_for(args),
        )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(report.format())
    return 1 if report.failures else 0


def _cmd_rotate(args: argparse.Namespace) -> int:
    from serde_kit.cli import open_store_from_args, progress_for

    keyring = load_keyring()
    with open_store_from_args(args, readonly=not args.apply) as store:
        report = rotate(
            store,
            keyring=keyring,
            apply=args.apply,
            encrypt_plaintext=args.encrypt_plaintext,
            upgrade_legacy=args.upgrade_legacy,
            batch_size=args.batch_size,
            verify_after=not args.skip_verify,
            progress=progress_for(args),
        )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(report.format())
    return 0 if report.ok else 1


def _cmd_retire(args: argparse.Namespace) -> int:
    from serde_kit.cli import open_store_from_args, progress_for

    keyring = _keyring_from_env(required=False)
    with open_store_from_args(args, readonly=True) as store:
        report = retire(
            store, args.key_id, keyring=keyring, batch_size=args.batch_size, progress=progress_for(args)
        )
    print(report.format(), file=sys.stdout if report.safe else sys.stderr)
    return 0 if report.safe else 1


def _cmd_keygen(args: argparse.Namespace) -> int:
    extend = load_keyring() if args.extend else None
    key_id, keyring = keygen(args.id, extend=extend)
    if args.file:
        path = Path(args.file)
        if path.exists():
            raise ConfigError(f"{path} exists; refusing to overwrite a key file (choose a new path)")
        keyring.to_file(path)
        print(f"new key {key_id} written to {path} (mode 0600); point SERDE_KIT_KEYRING_FILE at it")
        return 0
    print(f"# new key id: {key_id}" + (" (primary; existing keys kept after it)" if extend else ""))
    print("# environment variable (keep it in your secret store, not in shell history):")
    print(f"SERDE_KIT_KEYRING={keyring.to_env_value()}")
    print("# or as a key file (chmod 600), named by SERDE_KIT_KEYRING_FILE:")
    print(_file_text(keyring), end="")
    return 0


def register(subparsers: Any) -> None:
    """Add ``status``, ``rotate``, ``retire`` and ``keygen`` to the ``serde-kit`` CLI."""
    from serde_kit.cli import add_store_options

    p = subparsers.add_parser(
        "status",
        help="count stored rows per key id, plaintext and legacy rows",
        description="Count stored rows per key id, plaintext rows, LangGraph +aes rows and "
        "rows with an unknown header, per table. Reads headers only unless --verify.",
    )
    add_store_options(p)
    p.add_argument("--verify", action="store_true", help="also decrypt every row (needs the keyring)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_status)

    p = subparsers.add_parser(
        "rotate",
        help="re-encrypt stored rows under the primary key (dry run unless --apply)",
        description="Re-encrypt every stored row that is not under the keyring's primary key. "
        "DRY RUN BY DEFAULT: it prints what it would change; --apply writes. Safe to run beside "
        "the application, to interrupt and rerun, and (PostgreSQL) in several processes at once.",
        epilog="Keys come from SERDE_KIT_KEYRING or SERDE_KIT_KEYRING_FILE (primary first), plus "
        "LANGGRAPH_AES_KEY for +aes rows. Exit status: 0 when every row was handled and reads back, "
        "1 when a row could not be decrypted or re-encrypted (listed; such rows are left untouched).",
    )
    add_store_options(p)
    p.add_argument("--apply", action="store_true", help="write the changes (default: dry run)")
    p.add_argument("--encrypt-plaintext", action="store_true", help="also encrypt unencrypted rows")
    p.add_argument(
        "--upgrade-legacy",
        action="store_true",
        help="also re-encrypt LangGraph EncryptedSerializer (+aes) rows; needs LANGGRAPH_AES_KEY",
    )
    p.add_argument("--skip-verify", action="store_true", help="skip the final read-back of every row")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_rotate)

    p = subparsers.add_parser(
        "retire",
        help="check that no stored row still uses a key id",
        description="Refuse (exit 1) while any stored row uses KEY_ID or it is the primary; "
        "otherwise say it is safe to remove it from the keyring. Edits nothing.",
    )
    add_store_options(p)
    p.add_argument("key_id", metavar="KEY_ID")
    p.set_defaults(func=_cmd_retire)

    p = subparsers.add_parser(
        "keygen",
        help="print a new key for the secret store",
        description="Generate a new AES-256 key and print it in the SERDE_KIT_KEYRING format "
        "and the key-file format. Keys are never read from the command line.",
    )
    p.add_argument("--id", help="key id (default: k<date>-<time>-<random>)")
    p.add_argument(
        "--extend",
        action="store_true",
        help="make the new key primary in a copy of the current keyring (from the environment)",
    )
    p.add_argument("--file", help="write a new 0600 key file instead of printing")
    p.set_defaults(func=_cmd_keygen)
