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
run only in strict mode.  Encrypted rows that are not bound to their thread
(written without ``bind_rows``) are warnings too: the counts show bound and
unbound rows per table, what an operator checks before ``require_bound=True``.
Rows still under LangGraph's own ``+aes`` encryption and rows whose encryption
header is not recognised are warnings as well.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from serde_kit.crypto.rows import RowKind
from serde_kit.tools.db import Database

from .common import HEADER_READ, Progress, open_bar
from .tally import RowTally

__all__ = ["AuditReport", "audit"]

_EXAMPLES = 5


#: The per-table counts of an audit (one tally for every tool: :class:`RowTally`).
TableCounts = RowTally


@dataclass
class AuditReport:
    """Result of :func:`audit`; :meth:`passed` is its verdict."""

    json_extra: ClassVar[dict[str, str]] = {
        "tables": "table_counts",
        "bound_rows": "bound_rows",
        "unbound_rows": "unbound_rows",
        "plaintext_rows": "plaintext_rows",
        "failures": "failures",
        "warnings": "warnings",
    }

    store: str
    kind: str = field(metadata={"json": None})
    tables: dict[str, RowTally] = field(default_factory=dict, metadata={"json": None})
    plaintext_examples: list[dict[str, Any]] = field(default_factory=list)
    stray_examples: list[dict[str, Any]] = field(default_factory=list)
    metadata_keys: dict[str, int] = field(default_factory=dict)
    metadata_rows: int = 0
    metadata_unreadable: int = field(default=0, metadata={"json": None})
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
            if t.unbound:
                out.append(
                    f"{t.unbound} of {t.encrypted} encrypted rows in {name} are not bound to their thread "
                    "(a database writer can copy them onto another thread): write through "
                    "bind_rows(saver), then bind the stored ones with `serde-kit rotate --bind --apply`"
                )
        return out

    @property
    def unbound_rows(self) -> int:
        """Encrypted rows not bound to their thread (``require_bound`` would refuse them)."""
        return sum(t.unbound for t in self.tables.values())

    def passed(self, *, strict: bool = False) -> bool:
        """Whether the audit passes: no failure (and with ``strict``, no warning either)."""
        return not (self.failures() or (strict and self.warnings()))

    def exit_code(self, *, strict: bool = False) -> int:
        """Deprecated (the exit status is the command line's business): ``0 if passed(strict) else 1``."""
        warnings.warn(
            "AuditReport.exit_code is deprecated: use AuditReport.passed(strict=...)", DeprecationWarning, stacklevel=2
        )
        return 0 if self.passed(strict=strict) else 1

    @property
    def bound_rows(self) -> int:
        """Encrypted rows bound to their thread and namespace."""
        return sum(t.bound for t in self.tables.values())

    @property
    def table_counts(self) -> dict[str, dict[str, Any]]:
        """Each table's counts for ``--json``: the field names ``status --json`` shows, without the
        table's name (the key) and ``failed`` (an audit decrypts nothing)."""
        return {n: {**_plain_tally(t), "encrypted": t.encrypted} for n, t in self.tables.items()}


def audit(
    db: Database,
    *,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> AuditReport:
    """Audit ``db`` (read-only; header-only classification, nothing is decrypted).

    ``progress`` is the tools' progress factory (:data:`~serde_kit.tools.common.Progress`).
    """
    report = AuditReport(db.describe(), db.dialect)
    for t in db.tables:
        report.tables[t.name] = RowTally(t.name)
    bar = open_bar(progress, db.count_rows, "audit")
    try:
        for batch in db.iter_rows(batch_size, head=HEADER_READ):
            for row in batch:
                info = report.tables[row.table].count(row, head=HEADER_READ)
                if info.kind is RowKind.STRAY:
                    if len(report.stray_examples) < _EXAMPLES:
                        report.stray_examples.append({"table": row.table, "pk": list(row.pk), "problem": info.problem})
                elif info.kind is RowKind.PLAINTEXT:
                    if len(report.plaintext_examples) < _EXAMPLES:
                        report.plaintext_examples.append({"table": row.table, "pk": list(row.pk), "tag": row.tag})
            bar.update(len(batch))
    finally:
        bar.close()
    _audit_metadata(db, report, batch_size)
    report.inline_primitives = db.inline_primitives(batch_size)
    return report


def audit_store(store: Database, *, batch_size: int = 500, progress: Progress | None = None) -> AuditReport:
    """Deprecated: the old name of :func:`audit`, kept for one release."""
    warnings.warn(
        "serde_kit.tools.audit.audit_store is deprecated: call serde_kit.tools.audit(db, ...)",
        DeprecationWarning,
        stacklevel=2,
    )
    return audit(store, batch_size=batch_size, progress=progress)


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


def _plain_tally(t: RowTally) -> dict[str, Any]:
    """A tally's counts for ``--json`` (the same field names ``status --json`` shows)."""
    counts = {f.name: getattr(t, f.name) for f in fields(t) if f.name not in ("name", "failed")}
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in counts.items()}
