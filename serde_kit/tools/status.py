"""``status``: stored rows per key id, bound and unbound, plaintext, LangGraph ``+aes``, unknown, stray and empty rows.

Header-only (no key needed, nothing decrypted) unless ``verify=True``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from serde_kit.crypto import Keyring
from serde_kit.crypto.cipher import RowCipher
from serde_kit.crypto.rows import RowKind
from serde_kit.errors import KeyringError, SerdeError

from .common import HEADER_READ, Progress, RowFailure, describe_failure, open_bar, stray_failure
from .db import Database
from .tally import RowTally

__all__ = ["StatusReport", "TableStatus", "status"]


#: The per-table counts of a status report (one tally for every tool: :class:`RowTally`).
TableStatus = RowTally


@dataclass
class StatusReport:
    """What :func:`status` found, per table and in total.

    ``expected`` is the number of rows the tables held when the walk started;
    ``complete`` says the walk saw at least that many.
    """

    json_extra: ClassVar[dict[str, str]] = {"total": "total", "complete": "complete", "ok": "ok"}

    store: str
    primary_id: str | None
    keyring_ids: list[str] | None
    verified: bool
    tables: list[RowTally]
    expected: int = 0
    failures: list[RowFailure] = field(default_factory=list)

    @property
    def total(self) -> RowTally:
        """The counts of all tables added up."""
        return RowTally.total(self.tables)

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
        tables=[RowTally(t.name) for t in db.tables],
    )
    report.expected = db.count_rows()
    by_name = {t.name: t for t in report.tables}
    bar = open_bar(progress, report.expected, "status")
    try:
        head = None if verify else HEADER_READ
        for rows in db.iter_rows(batch_size, head=head):
            for row in rows:
                t = by_name[row.table]
                info = t.count(row, head=head)
                if info.kind is RowKind.STRAY:
                    report.failures.append(stray_failure(row, info))
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
