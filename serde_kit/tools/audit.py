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
  type (a warning).

Warnings are what the saver itself always keeps in plaintext; they fail the
run only in strict mode. Rows still under LangGraph's own ``+aes`` encryption
and rows whose encryption header is not recognised are warnings as well.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serde_kit.tools.inspect import RowDecoder
from serde_kit.tools.stores import Store

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
                "PostgresSaver keeps str/int/float/bool channel values inline in the "
                f"checkpoints JSONB, unencrypted (channels: {chans})"
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
            "metadata_rows": self.metadata_rows,
            "metadata_keys": dict(sorted(self.metadata_keys.items())),
            "inline_primitives": self.inline_primitives,
            "failures": self.failures(),
            "warnings": self.warnings(),
            "strict": strict,
            "passed": self.exit_code(strict=strict) == 0,
        }

    def to_text(self, *, strict: bool = False) -> str:
        """Readable report with aligned tables and a verdict line."""
        from serde_kit.tools.inspect_cli import table

        lines = [f"audit of {self.store}", ""]
        rows = [
            [name, t.rows, t.encrypted, t.legacy, t.plaintext, t.empty, t.unknown,
             ", ".join(f"{k} x{n}" for k, n in sorted(t.key_ids.items()))]
            for name, t in self.tables.items()
        ]  # fmt: skip
        lines.append(
            table(["TABLE", "ROWS", "ENCRYPTED", "LEGACY +aes", "PLAINTEXT", "EMPTY", "UNKNOWN", "KEY IDS"], rows)
        )
        if self.plaintext_examples:
            lines += ["", "plaintext rows (first few):"]
            lines += [f"  {e['table']} {e['pk']} tag={e['tag']}" for e in self.plaintext_examples]
        if self.metadata_keys:
            lines += ["", f"metadata keys (plaintext, {self.metadata_rows} checkpoint rows):"]
            lines.append(table(["KEY", "ROWS"], sorted(self.metadata_keys.items())))
        if self.inline_primitives:
            lines += ["", "inline channel values in checkpoints JSONB (plaintext):"]
            prim_rows = [
                [ch, ", ".join(f"{t} x{n}" for t, n in sorted(types.items()))]
                for ch, types in sorted(self.inline_primitives.items())
            ]
            lines.append(table(["CHANNEL", "JSON TYPES"], prim_rows))
        lines.append("")
        for f in self.failures():
            lines.append(f"FAIL: {f}")
        for w in self.warnings():
            lines.append(f"{'FAIL' if strict else 'warning'}: {w}")
        if self.failures():
            lines.append(
                "-> encrypt them: configure EncryptedSerializer in the application, then "
                "`serde-kit rotate --encrypt-plaintext --apply`"
            )
        verdict = "PASSED" if self.exit_code(strict=strict) == 0 else "FAILED"
        mode = " (strict)" if strict else ""
        lines.append(f"audit {verdict}{mode}")
        return "\n".join(lines)


def audit_store(
    store: Store,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> AuditReport:
    """Audit ``store`` (read-only; header-only classification, nothing is decrypted)."""
    decoder = RowDecoder()
    report = AuditReport(store.describe(), store.kind)
    for t in store.tables:
        report.tables[t.name] = TableCounts()
    # The header (version, id length, id of up to 64 bytes) plus nonce and GCM
    # tag fit in 128 bytes; the rest of a blob is never read.
    for batch in store.iter_rows(batch_size, head=128):
        for row in batch:
            counts = report.tables[row.table]
            counts.rows += 1
            if row.is_empty:
                counts.empty += 1
                continue
            info = decoder.classify(row.tag, row.blob)
            if info.kind == "aesgcm":
                counts.encrypted += 1
                counts.key_ids[str(info.key_id)] += 1
            elif info.kind == "legacy":
                counts.legacy += 1
            elif info.kind == "plaintext":
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
    if store.kind == "postgres":
        _audit_inline(store, report)
    return report


def _audit_metadata(store: Store, report: AuditReport, batch_size: int) -> None:
    conn: Any = store.conn  # type: ignore[attr-defined]
    if store.kind == "postgres":
        report.metadata_rows = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        rows = conn.execute(
            "SELECT k, count(*) FROM checkpoints, "
            "jsonb_object_keys(CASE WHEN jsonb_typeof(metadata) = 'object' "
            "THEN metadata ELSE '{}'::jsonb END) AS k GROUP BY k"
        ).fetchall()
        report.metadata_keys = {k: int(n) for k, n in rows}
        return
    # SQLite stores metadata as JSON bytes; parse it here rather than with
    # json_each so one malformed row cannot abort the whole count.
    keys: Counter[str] = Counter()
    after: tuple[Any, ...] | None = None
    while True:
        if after is None:
            page = conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, metadata FROM checkpoints "
                "ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT ?",
                (batch_size,),
            ).fetchall()
        else:
            page = conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, metadata FROM checkpoints "
                "WHERE (thread_id, checkpoint_ns, checkpoint_id) > (?, ?, ?) "
                "ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT ?",
                (*after, batch_size),
            ).fetchall()
        if not page:
            break
        for *_pk, meta in page:
            report.metadata_rows += 1
            if meta is None:
                continue
            try:
                data = json.loads(bytes(meta) if not isinstance(meta, str) else meta)
            except (ValueError, TypeError):
                report.metadata_unreadable += 1
                continue
            if isinstance(data, dict):
                keys.update(str(k) for k in data)
        after = tuple(page[-1][:3])
    report.metadata_keys = dict(keys)


def _audit_inline(store: Store, report: AuditReport) -> None:
    conn: Any = store.conn  # type: ignore[attr-defined]
    # An inline value with a blob at the same version is the delta-snapshot
    # marker (`true`), not data: the blob holds the value, encrypted or not.
    rows = conn.execute(
        """
        SELECT kv.key, jsonb_typeof(kv.value), count(*)
        FROM checkpoints c,
             jsonb_each(CASE WHEN jsonb_typeof(c.checkpoint -> 'channel_values') = 'object'
                             THEN c.checkpoint -> 'channel_values' ELSE '{}'::jsonb END) AS kv
        WHERE NOT EXISTS (
            SELECT 1 FROM checkpoint_blobs b
            WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
              AND b.channel = kv.key
              AND b.version = c.checkpoint -> 'channel_versions' ->> kv.key)
        GROUP BY 1, 2
        """
    ).fetchall()
    out: dict[str, dict[str, int]] = {}
    for channel, json_type, n in rows:
        out.setdefault(channel, {})[json_type] = int(n)
    report.inline_primitives = out
