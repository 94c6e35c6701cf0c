"""One count of stored rows by kind, shared by ``status``, ``audit``, ``verify`` and ``retire``.

Header-only: every row is classified by :func:`~serde_kit.crypto.rows.classify_row`
(no key, nothing decrypted).  Encrypted rows are counted per key id and as
*bound* (a v2 header naming the thread and namespace the row was sealed for,
written through ``bind_rows``) or *unbound* (a v1 header: it opens on any
thread, and ``require_bound=True`` refuses it; ``serde-kit rotate --bind``
binds it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from serde_kit.crypto.blob import BOUND_VERSION, check_key_id
from serde_kit.crypto.rows import RowInfo, RowKind, classify_row

from .db import Row

__all__ = ["RowTally"]


@dataclass
class RowTally:
    """Rows of one table (or of all, ``name="total"``) by what they hold."""

    json_extra: ClassVar[dict[str, str]] = {"encrypted": "encrypted"}

    name: str
    rows: int = 0
    #: encrypted (AES-GCM) rows per key id named in their header
    by_key: Counter[str] = field(default_factory=Counter)
    #: encrypted rows bound to their thread and namespace (v2 header)
    bound: int = 0
    #: encrypted rows not bound (v1 header): ``require_bound`` refuses them
    unbound: int = 0
    plaintext: int = 0
    #: plaintext rows per type tag
    plaintext_tags: Counter[str] = field(default_factory=Counter)
    #: rows under LangGraph's own AES-EAX encryption (``+aes``)
    legacy: int = 0
    unknown: int = 0
    stray: int = 0
    empty: int = 0
    #: rows that failed to decrypt (``status --verify`` only)
    failed: int = 0

    @property
    def encrypted(self) -> int:
        """Rows under serde_kit's AES-GCM, whatever their key."""
        return self.bound + self.unbound

    def count(self, row: Row, *, head: int | None = None) -> RowInfo:
        """Count ``row`` by its kind; its classification, for what the caller does next.

        ``head``: the rows were read as their first ``head`` bytes only.  A bound
        header can be longer than that (a long thread id or subgraph namespace);
        such a row is then counted as bound under the key id its header starts
        with, not as unknown (``status --verify`` reads it whole).
        """
        info = classify_row(row.tag, row.blob)
        if head is not None and info.kind is RowKind.UNKNOWN:
            info = _bound_beyond_head(row, info, head)
        self.rows += 1
        kind = info.kind
        if kind is RowKind.AESGCM:
            self.by_key[str(info.key_id)] += 1
            if info.bound:
                self.bound += 1
            else:
                self.unbound += 1
        elif kind is RowKind.EMPTY:
            self.empty += 1
        elif kind is RowKind.PLAINTEXT:
            self.plaintext += 1
            self.plaintext_tags[str(row.tag)] += 1
        elif kind is RowKind.LEGACY:
            self.legacy += 1
        elif kind is RowKind.STRAY:
            self.stray += 1
        else:
            self.unknown += 1
        return info

    def add(self, other: RowTally) -> None:
        """Add ``other``'s counts to these."""
        self.rows += other.rows
        self.by_key.update(other.by_key)
        self.bound += other.bound
        self.unbound += other.unbound
        self.plaintext += other.plaintext
        self.plaintext_tags.update(other.plaintext_tags)
        self.legacy += other.legacy
        self.unknown += other.unknown
        self.stray += other.stray
        self.empty += other.empty
        self.failed += other.failed

    @classmethod
    def total(cls, tallies: list[RowTally]) -> RowTally:
        """The counts of ``tallies`` added up, named ``total``."""
        out = cls("total")
        for t in tallies:
            out.add(t)
        return out


def _bound_beyond_head(row: Row, info: RowInfo, head: int) -> RowInfo:
    blob = row.blob
    if not isinstance(blob, bytes) or len(blob) < head or blob[:1] != bytes((BOUND_VERSION,)):
        return info
    key_id = blob[2 : 2 + blob[1]].decode("ascii", "replace")
    if not check_key_id(key_id):
        return info
    return RowInfo(RowKind.AESGCM, info.inner_tag, key_id, None, True)
