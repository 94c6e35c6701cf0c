"""``status``: stored rows per key id, plaintext, LangGraph ``+aes``, unknown, stray and empty rows.

Header-only (no key needed, nothing decrypted) unless ``verify=True``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from serde_kit.crypto import Keyring
from serde_kit.crypto.cipher import RowCipher
from serde_kit.crypto.rows import RowKind
from serde_kit.errors import KeyringError, SerdeError

from .common import HEADER_READ, Progress, RowFailure, describe_failure, open_bar, stray_failure
from .db import Database

__all__ = ["StatusReport", "TableStatus", "status"]


@dataclass
class TableStatus:
    """Row counts of one table by what the row holds."""

    name: str
    rows: int = 0
    by_key: Counter[str] = field(default_factory=Counter)
    plaintext: int = 0
    legacy: int = 0
    unknown: int = 0
    stray: int = 0
    empty: int = 0
    failed: int = 0

    def add(self, other: TableStatus) -> None:
        """Add ``other``'s counts to these."""
        self.rows += other.rows
        self.by_key.update(other.by_key)
        self.plaintext += other.plaintext
        self.legacy += other.legacy
        self.unknown += other.unknown
        self.stray += other.stray
        self.empty += other.empty
        self.failed += other.failed


@dataclass
class StatusReport:
    """What :func:`status` found, per table and in total.

    ``expected`` is the number of rows the tables held when the walk started;
    ``complete`` says the walk saw at least that many.
    """

    store: str
    primary_id: str | None
    keyring_ids: list[str] | None
    verified: bool
    tables: list[TableStatus]
    expected: int = 0
    failures: list[RowFailure] = field(default_factory=list)

    @property
    def total(self) -> TableStatus:
        """The counts of all tables added up."""
        total = TableStatus("total")
        for t in self.tables:
            total.add(t)
        return total

    @property
    def complete(self) -> bool:
        """True when every row counted at the start was seen."""
        return self.total.rows >= self.expected

    @property
    def ok(self) -> bool:
        """No failed or stray row, and the walk was complete."""
        return not self.failures and self.complete

    def rows_using(self, key_id: str) -> dict[str, int]:
        """Rows per table whose header names ``key_id``."""
        return {t.name: t.by_key.get(key_id, 0) for t in self.tables}


def status(
    db: Database,
    *,
    keyring: Keyring | None = None,
    verify: bool = False,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> StatusReport:
    """Count rows by kind (see :mod:`serde_kit.crypto.rows`); with ``verify``, decrypt each encrypted row.

    Stray rows (a tag that is not text, a blob that is not bytes) are counted
    and listed in ``failures``; the walk goes on.  Raises
    :class:`~serde_kit.errors.KeyringError` when ``verify`` is asked without a keyring.
    """
    if verify and keyring is None:
        raise KeyringError("status --verify needs the keyring (SERDE_KIT_KEYRING or SERDE_KIT_KEYRING_FILE)")
    cipher = RowCipher(keyring, allow_plaintext=True) if keyring is not None else None
    report = StatusReport(
        store=db.describe(),
        primary_id=keyring.primary_id if keyring is not None else None,
        keyring_ids=keyring.ids if keyring is not None else None,
        verified=verify,
        tables=[TableStatus(t.name) for t in db.tables],
    )
    report.expected = db.count_rows()
    by_name = {t.name: t for t in report.tables}
    bar = open_bar(progress, report.expected, "status")
    try:
        for rows in db.iter_rows(batch_size, head=None if verify else HEADER_READ):
            for row in rows:
                t = by_name[row.table]
                t.rows += 1
                info = row.info
                if info.kind is RowKind.EMPTY:
                    t.empty += 1
                elif info.kind is RowKind.AESGCM:
                    t.by_key[str(info.key_id)] += 1
                elif info.kind is RowKind.LEGACY:
                    t.legacy += 1
                elif info.kind is RowKind.PLAINTEXT:
                    t.plaintext += 1
                elif info.kind is RowKind.STRAY:
                    t.stray += 1
                    report.failures.append(stray_failure(row, info))
                else:
                    t.unknown += 1
                if verify and cipher is not None and info.kind in (RowKind.AESGCM, RowKind.LEGACY):
                    try:
                        cipher.open(row.tag, row.blob)
                    except SerdeError as e:
                        t.failed += 1
                        report.failures.append(RowFailure.of(row, describe_failure(info, e)))
            bar.update(len(rows))
    finally:
        bar.close()
    return report
