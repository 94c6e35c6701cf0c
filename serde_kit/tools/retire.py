"""``retire``: may a key id be removed from the keyring?  Only when no stored row names it.

"Safe" is said only after every row was seen: the walk's row count is
checked against a count taken first, and tables LangGraph fills through
``serde`` beside the saver's (``SqliteCache``'s ``cache``) are walked too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serde_kit.crypto import Keyring

from .common import Progress
from .db import Database
from .status import status

__all__ = ["RetireReport", "retire"]


@dataclass
class RetireReport:
    """Whether ``key_id`` can be removed, and what still uses it."""

    key_id: str
    rows_by_table: dict[str, int]
    is_primary: bool = False
    in_keyring: bool | None = None
    #: rows counted before the walk, and rows the walk saw
    expected: int = 0
    seen: int = 0
    #: rows whose header could not be read (they might name the key)
    unreadable: int = 0
    tables: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows whose header names the key."""
        return sum(self.rows_by_table.values())

    @property
    def complete(self) -> bool:
        """True when the walk saw every row counted before it."""
        return self.seen >= self.expected

    @property
    def safe(self) -> bool:
        """No row names the key, every row was seen, none is unreadable, and it is not the primary."""
        return self.rows == 0 and not self.is_primary and self.complete and self.unreadable == 0


def retire(
    db: Database,
    key_id: str,
    *,
    keyring: Keyring | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> RetireReport:
    """Check whether ``key_id`` can be dropped (header-only; nothing is decrypted or written)."""
    counts = status(db, keyring=None, batch_size=batch_size, progress=progress)
    total = counts.total
    return RetireReport(
        key_id=key_id,
        rows_by_table=counts.rows_using(key_id),
        is_primary=keyring is not None and keyring.primary_id == key_id,
        in_keyring=None if keyring is None else key_id in keyring,
        expected=counts.expected,
        seen=total.rows,
        unreadable=total.unknown + total.stray,
        tables=[t.name for t in db.tables],
    )
