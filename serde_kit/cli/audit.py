"""``serde-kit audit``: what is stored in plaintext (counts and names only, never values)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from . import exitcodes
from .database import add_database_options, open_from_args
from .output import emit, escape, plain, progress_for, table

if TYPE_CHECKING:
    from serde_kit.tools.audit import AuditReport

__all__ = ["audit_text", "register"]


def audit_text(report: AuditReport, *, strict: bool = False) -> str:
    """Readable report with aligned tables and a verdict line."""
    lines = [f"audit of {escape(report.store)}", ""]
    rows = [
        [name, t.rows, t.encrypted, t.bound, t.unbound, t.legacy, t.plaintext, t.empty, t.unknown,
         ", ".join(f"{k} x{n}" for k, n in sorted(t.by_key.items()))]
        for name, t in report.tables.items()
    ]  # fmt: skip
    headers = ["TABLE", "ROWS", "ENCRYPTED", "BOUND", "UNBOUND", "LEGACY +aes", "PLAINTEXT", "EMPTY", "UNKNOWN"]
    lines.append(table([*headers, "KEY IDS"], rows))
    if report.plaintext_examples:
        lines += ["", "plaintext rows (first few):"]
        lines += [f"  {e['table']} {escape(e['pk'])} tag={escape(e['tag'])}" for e in report.plaintext_examples]
    if report.metadata_keys:
        lines += ["", f"metadata keys (plaintext, {report.metadata_rows} checkpoint rows):"]
        lines.append(table(["KEY", "ROWS"], sorted(report.metadata_keys.items())))
    if report.inline_primitives:
        lines += ["", "inline channel values in checkpoints JSONB (plaintext):"]
        prim_rows = [
            [ch, ", ".join(f"{t} x{n}" for t, n in sorted(types.items()))]
            for ch, types in sorted(report.inline_primitives.items())
        ]
        lines.append(table(["CHANNEL", "JSON TYPES"], prim_rows))
    lines.append("")
    for f in report.failures():
        lines.append(f"FAIL: {escape(f)}")
    for w in report.warnings():
        lines.append(f"{'FAIL' if strict else 'warning'}: {escape(w)}")
    if report.failures():
        lines.append(
            "-> encrypt them: configure EncryptedSerializer in the application, then "
            "`serde-kit rotate --encrypt-plaintext --apply`"
        )
    verdict = "PASSED" if report.passed(strict=strict) else "FAILED"
    mode = " (strict)" if strict else ""
    lines.append(f"audit {verdict}{mode}")
    return "\n".join(lines)


def _cmd_audit(args: argparse.Namespace) -> int:
    from serde_kit.tools.audit import audit

    with open_from_args(args) as db:
        report = audit(db, batch_size=args.batch_size, progress=progress_for(args.quiet))
    passed = report.passed(strict=args.strict)
    verdict = {"strict": args.strict, "passed": passed}
    emit({**plain(report), **verdict}, lambda: audit_text(report, strict=args.strict), as_json=args.json)
    return exitcodes.OK if passed else exitcodes.FAILED


def register(subparsers: Any) -> None:
    """Add ``audit``."""
    a = subparsers.add_parser(
        "audit",
        help="report plaintext rows, metadata keys and inline values; fail on plaintext rows",
        description="Exit 1 when rows the serializer could have encrypted are stored in "
        "plaintext, or a row is stray. Metadata and inline JSON primitives (always plaintext in the "
        "PostgreSQL and MySQL savers) are warnings; --strict makes them fail too. Values are never shown.",
    )
    add_database_options(a)
    a.add_argument("--strict", action="store_true", help="warnings fail the audit too")
    a.add_argument("--json", action="store_true", help="JSON on stdout instead of the text report")
    a.set_defaults(func=_cmd_audit)
