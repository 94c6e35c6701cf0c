"""What is stored in plaintext? (``serde-kit audit``)

Three findings, none of which ever shows a stored value:

* **plaintext rows** — rows written through ``serde`` without encryption
  (checkpoints and writes in SQLite; ``checkpoint_blobs`` and
  ``checkpoint_writes`` in PostgreSQL). An encrypting serializer would have
  encrypted them, so they **fail** the audit.
* **metadata keys** — checkpoint metadata is always plain JSON in both savers;
  listed as key -> number of rows (a warning).
* **inline primitives** (PostgreSQL) — PostgresSaver keeps ``str``/``int``/
  ``float``/``bool`` channel values inside the ``checkpoints.checkpoint`` JSONB
  instead of passing them through ``serde``; listed as channel -> count per JSON
  type (a warning).  Values sealed by ``bind_rows(saver, seal_inline=True)``
  are stored as encrypted blobs instead, so they are counted there and not
  warned about.

Warnings are what the saver itself always keeps in plaintext; they fail the
run only in strict mode. Rows still under LangGraph's own ``+aes`` encryption
and rows whose encryption header is not recognised are warnings as well.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serde_kit.crypto.rows import RowKind
from serde_kit.tools.db import Database

__all__ = ["AuditReport", "audit_store"]

_EXAMPLES = 5


@dataclass
class TableCounts:
    """Rows of one table by kind."""

    rows: int = 0
    encrypted: int = 0
    legacy: int = 0
    plaintext: int = 0
    empty: int = 0
    unknown: int = 0
    stray: int = 0
    plaintext_tags: Counter[str] = field(default_factory=Counter)
    key_ids: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {
            "rows": self.rows,
            "encrypted": self.encrypted,
            "legacy_aes": self.legacy,
            "plaintext": self.plaintext,
            "empty": self.empty,
            "unknown": self.unknown,
            "stray": self.stray,
            "plaintext_tags": dict(self.plaintext_tags),
            "key_ids": dict(self.key_ids),
        }


@dataclass
class AuditReport:
    """Result of :func:`audit_store`; :meth:`exit_code` turns it into a verdict."""

    store: str
    kind: str
    tables: dict[str, TableCounts] = field(default_factory=dict)
    plaintext_examples: list[dict[str, Any]] = field(default_factory=list)
    stray_examples: list[dict[str, Any]] = field(default_factory=list)
    metadata_keys: dict[str, int] = field(default_factory=dict)
    metadata_rows: int = 0
    metadata_unreadable: int = 0
    inline_primitives: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def plaintext_rows(self) -> int:
        """Rows the serializer could have encrypted but that are stored in plaintext."""
        return sum(t.plaintext for t in self.tables.values())

    def failures(self) -> list[str]:
        """Findings that fail the audit in every mode."""
        out = []
        for name, t in self.tables.items():
            if t.plaintext:
                tags = ", ".join(f"{tag} x{n}" for tag, n in sorted(t.plaintext_tags.items()))
                out.append(f"{t.plaintext} of {t.rows} rows in {name} are not encrypted ({tags})")
            if t.stray:
                out.append(f"{t.stray} rows in {name} hold a value no saver wrote (stray; see `serde-kit status`)")
        return out

    def warnings(self) -> list[str]:
        """Findings that fail the audit only with ``strict``."""
        out = []
        if self.metadata_keys:
            keys = ", ".join(sorted(self.metadata_keys))
            out.append(
                f"checkpoint metadata is stored in plaintext by the saver "
                f"({self.metadata_rows} rows; keys: {keys})"
            )
        if self.metadata_unreadable:
            out.append(f"{self.metadata_unreadable} checkpoint rows hold metadata that is not JSON")
        non_null = {
            ch: {t: n for t, n in types.items() if t != "null"}
            for ch, types in self.inline_primitives.items()
        }
        non_null = {ch: types for ch, types in non_null.items() if types}
        if non_null:
            chans = ", ".join(sorted(non_null))
            out.append(
                "the saver keeps str/int/float/bool channel values inline in the "
                f"checkpoints JSON, unencrypted (channels: {chans}); encrypt them in new checkpoints "
                "with bind_rows(saver, seal_inline=True) (checkpoints already written keep theirs)"
            )
        for name, t in self.tables.items():
            if t.legacy:
                out.append(
                    f"{t.legacy} rows in {name} use LangGraph's own AES-EAX encryption (+aes); "
                    "move them to serde_kit's format with `serde-kit rotate --upgrade-legacy --apply`"
                )
            if t.unknown:
                out.append(f"{t.unknown} rows in {name} have an unrecognised tag or encryption header")
        return out

    def exit_code(self, *, strict: bool = False) -> int:
        """0 when the audit passes, 1 when it fails (``strict`` also fails on warnings)."""
        if self.failures() or (strict and self.warnings()):
            return 1
        return 0

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Plain dict for ``--json`` (counts and names only, never values)."""
        return {
            "store": self.store,
            "tables": {n: t.to_json() for n, t in self.tables.items()},
            "plaintext_rows": self.plaintext_rows,
            "plaintext_examples": self.plaintext_examples,
            "stray_examples": self.stray_examples,
            "metadata_rows": self.metadata_rows,
            "metadata_keys": dict(sorted(self.metadata_keys.items())),
            "inline_primitives": self.inline_primitives,
            "failures": self.failures(),
            "warnings": self.warnings(),
            "strict": strict,
            "passed": self.exit_code(strict=strict) == 0,
        }

def audit_store(
    store: Database,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> AuditReport:
    """Audit ``store`` (read-only; header-only classification, nothing is decrypted)."""
    report = AuditReport(store.describe(), store.dialect)
    for t in store.tables:
        report.tables[t.name] = TableCounts()
    # The header (version, id length, id of up to 64 bytes) plus nonce and GCM
    # tag fit in 128 bytes; the rest of a blob is never read.
    for batch in store.iter_rows(batch_size, head=128):
        for row in batch:
            counts = report.tables[row.table]
            counts.rows += 1
            info = row.info
            if info.kind is RowKind.EMPTY:
                counts.empty += 1
            elif info.kind is RowKind.AESGCM:
                counts.encrypted += 1
                counts.key_ids[str(info.key_id)] += 1
            elif info.kind is RowKind.LEGACY:
                counts.legacy += 1
            elif info.kind is RowKind.STRAY:
                counts.stray += 1
                if len(report.stray_examples) < _EXAMPLES:
                    report.stray_examples.append({"table": row.table, "pk": list(row.pk), "problem": info.problem})
            elif info.kind is RowKind.PLAINTEXT:
                counts.plaintext += 1
                counts.plaintext_tags[str(row.tag)] += 1
                if len(report.plaintext_examples) < _EXAMPLES:
                    report.plaintext_examples.append(
                        {"table": row.table, "pk": list(row.pk), "tag": row.tag}
                    )
            else:
                counts.unknown += 1
        if progress is not None:
            progress(len(batch))
    _audit_metadata(store, report, batch_size)
    report.inline_primitives = store.inline_primitives(batch_size)
    return report


def _audit_metadata(db: Database, report: AuditReport, batch_size: int) -> None:
    # Metadata is parsed one row at a time, so one malformed row cannot abort the count.
    keys: Counter[str] = Counter()
    for data in db.iter_metadata(batch_size):
        report.metadata_rows += 1
        if data is None:
            continue
        if isinstance(data, dict) and "$error" in data and len(data) == 1:
            report.metadata_unreadable += 1
            continue
        if isinstance(data, dict):
            keys.update(str(k) for k in data)
    report.metadata_keys = dict(keys)
