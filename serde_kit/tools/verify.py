"""``verify``: decrypt every stored encrypted row (bytes only) and list the ones that fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from serde_kit.crypto import Keyring
from serde_kit.crypto.cipher import RowCipher
from serde_kit.crypto.rows import RowKind
from serde_kit.errors import SerdeError

from .common import Progress, RowFailure, describe_failure, open_bar, stray_failure
from .db import Database
from .tally import RowTally

__all__ = ["VerifyReport", "verify"]


@dataclass
class VerifyReport:
    """Result of reading every row back: which decrypt and which do not.

    ``counts`` holds the rows by kind (the :class:`RowTally` status and audit
    use; ``failed`` counts the rows that did not decrypt).
    """

    json_extra: ClassVar[dict[str, str]] = {"rows": "rows", "plaintext": "plaintext", "empty": "empty", "ok": "ok"}

    decrypted: int = 0
    not_primary: int = 0
    expected: int = 0
    failures: list[RowFailure] = field(default_factory=list)
    counts: RowTally = field(default_factory=lambda: RowTally("total"))

    @property
    def rows(self) -> int:
        """Rows seen."""
        return self.counts.rows

    @property
    def plaintext(self) -> int:
        """Plaintext rows (counted, not failed)."""
        return self.counts.plaintext

    @property
    def empty(self) -> int:
        """Rows holding no value."""
        return self.counts.empty

    @property
    def ok(self) -> bool:
        """Every row read back, and at least as many rows were seen as were counted first."""
        return not self.failures and self.rows >= self.expected


def verify(db: Database, *, keyring: Keyring, batch_size: int = 500, progress: Progress | None = None) -> VerifyReport:
    """Decrypt every encrypted row and report the ones that fail.

    Plaintext rows are counted, not failed (rotate leaves them unless asked);
    rows with an unreadable tag or header, and stray rows, fail.
    """
    cipher = RowCipher(keyring, allow_plaintext=True)
    report = VerifyReport(expected=db.count_rows())
    bar = open_bar(progress, report.expected, "verify")
    try:
        for rows in db.iter_rows(batch_size):
            for row in rows:
                info = report.counts.count(row)
                if info.kind in (RowKind.EMPTY, RowKind.PLAINTEXT):
                    continue
                if info.kind is RowKind.STRAY:
                    report.failures.append(stray_failure(row, info))
                    continue
                if info.kind is RowKind.UNKNOWN:
                    report.failures.append(RowFailure.of(row, f"unreadable type tag or header: {info.problem}"))
                    continue
                if info.kind is not RowKind.AESGCM or info.key_id != keyring.primary_id:
                    report.not_primary += 1
                try:
                    cipher.open(row.tag, row.blob)
                except SerdeError as e:
                    report.counts.failed += 1
                    report.failures.append(RowFailure.of(row, describe_failure(info, e)))
                else:
                    report.decrypted += 1
            bar.update(len(rows))
    finally:
        bar.close()
    return report
