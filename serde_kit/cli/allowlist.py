"""``serde-kit allowlist scan``: which stored types the decoder must allow."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from serde_kit.allowlist import ENV_FILE_VAR, ENV_VAR

from . import exitcodes
from .allowopts import add_allowlist_options, allowlist_from_args
from .database import add_database_options, open_from_args
from .output import emit, escape, progress_for, table

if TYPE_CHECKING:
    from serde_kit.tools.scan import ScanReport, TypeUse

__all__ = ["register", "scan_text"]


def _name(t: TypeUse) -> str:
    """A stored type's name; one that is no dotted identifier is escaped and shell-quoted,
    so even a line of the table pasted into a shell runs nothing."""
    return t.key if t.entry is not None else shlex.quote(escape(t.key))


def scan_text(report: ScanReport) -> str:
    """Readable report with an aligned table."""
    lines = [f"scanned {report.rows_read} of {report.rows_total} rows in {report.store}"]
    if report.rows_empty:
        lines.append(f"  {report.rows_empty} rows hold no value (empty)")
    for key_id, n in sorted(report.rows_locked.items()):
        lines.append(f"  {n} rows encrypted under {key_id} were skipped: no key (set the keyring env)")
    if report.rows_failed:
        lines.append(f"  {report.rows_failed} rows could not be decoded:")
        lines += [f"    {escape(f)}" for f in report.failures]
    lines.append("")
    if report.types:
        rows = [
            [_name(t), ",".join(str(c) for c in sorted(t.codes, key=str)), t.count, t.rows,
             "yes" if t.covered else "NO", "yes" if t.default else ""]
            for t in report.sorted_types()
        ]  # fmt: skip
        lines.append(table(["TYPE", "EXT", "COUNT", "ROWS", "ALLOWED", "BUILT-IN"], rows))
    else:
        lines.append("no ext types found")
    if report.numpy_arrays:
        lines.append(f"\n{report.numpy_arrays} numpy arrays (ext 6: decoded without an allowlist entry)")
    missing = report.missing()
    lines.append("")
    if missing:
        lines.append(
            f"{len(missing)} type(s) are NOT covered by the allowlist given ({ENV_VAR} / {ENV_FILE_VAR}, "
            "--allow, --allow-file, --allowlist-from); loading them would raise BlockedTypeError."
        )
    else:
        lines.append("every type found is covered by the current allowlist.")
    invalid = report.invalid_names()
    if len(invalid) < len(report.needed()):
        snip = report.snippets()
        lines += [
            "",
            "allowlist for the types above that are not built in:",
            "  # in code",
            f"  {snip['code']}",
            "  # environment",
            f"  {snip['env']}",
            f"  # file named by {ENV_FILE_VAR}",
            *(f"  {line}" for line in snip["file"].splitlines()),
        ]
    if invalid:
        lines += [
            "",
            f"{len(invalid)} stored type name(s) are not valid Python names (dotted ASCII identifiers), "
            "so no application wrote them and no allowlist entry is offered; check where these rows came from:",
            *(f"  {_name(t)}" for t in invalid),
        ]
    return "\n".join(lines)


def _cmd_scan(args: argparse.Namespace) -> int:
    from serde_kit.tools.inspect import RowDecoder, keyring_from_env
    from serde_kit.tools.scan import scan

    decoder = RowDecoder(keyring_from_env())
    allowlist = allowlist_from_args(args)
    with open_from_args(args) as db:
        report = scan(
            db, decoder=decoder, allowlist=allowlist, batch_size=args.batch_size, progress=progress_for(args.quiet)
        )
    emit(report, lambda: scan_text(report), as_json=args.json)
    if report.rows_failed or (args.check and report.missing()):
        return exitcodes.FAILED
    return exitcodes.OK


def register(subparsers: Any) -> None:
    """Add ``allowlist scan``."""
    parser = subparsers.add_parser("allowlist", help="work out which stored types the decoder must allow")
    allow = parser.add_subparsers(dest="allowlist_command", metavar="ACTION", required=True)
    s = allow.add_parser(
        "scan",
        help="list the types stored data needs and print an allowlist for them",
        description="Walk every stored row (decrypting where a key is set) and list each "
        f"(module, name) found in ext payloads, whether the application's allowlist covers it "
        f"({ENV_VAR} / {ENV_FILE_VAR}, plus --allow / --allow-file / --allowlist-from, as for rotate), "
        "and allowlist snippets to paste. Exit 1 when a row could not be decoded; with --check, "
        "also when a stored type is not covered (for CI).",
    )
    add_database_options(s)
    add_allowlist_options(s, what="the types the application allows in code (nothing is imported)")
    s.add_argument("--check", action="store_true", help="exit 1 when a stored type is not covered (for CI)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of the text table")
    s.set_defaults(func=_cmd_scan)
