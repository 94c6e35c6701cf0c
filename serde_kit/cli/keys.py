"""Commands of the key lifecycle: ``keygen``, ``status``, ``rotate``, ``verify``, ``retire``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from serde_kit._text import shell_assignment
from serde_kit.crypto import Keyring, KeyWrapper, load_keyring
from serde_kit.crypto.keyring import keyring_configured
from serde_kit.errors import ConfigError

from . import exitcodes
from .allowopts import add_allowlist_options
from .database import add_database_options, open_from_args
from .output import emit, escape, progress_for

if TYPE_CHECKING:
    from serde_kit.tools.retire import RetireReport
    from serde_kit.tools.rotate import RotateReport
    from serde_kit.tools.status import StatusReport
    from serde_kit.tools.verify import VerifyReport

__all__ = ["format_retire", "format_rotate", "format_status", "register"]

_SHOWN = 20


def _keyring_from_env(*, required: bool) -> Keyring | None:
    """The keyring from the environment; None when optional and not configured."""
    return load_keyring() if required or keyring_configured() else None


def _failures(lines: list[str], failures: list[Any], prefix: str) -> None:
    for f in failures[:_SHOWN]:
        lines.append(f"{prefix}: {escape(f)}")
    if len(failures) > _SHOWN:
        lines.append(f"... and {len(failures) - _SHOWN} more")


# ---------------------------------------------------------------------------
# text views
# ---------------------------------------------------------------------------


def format_status(report: StatusReport) -> str:
    """``status`` as a table for people."""
    from .output import table

    keys = sorted({k for t in report.tables for k in t.by_key})
    columns = [f"key {k}" + (" (primary)" if k == report.primary_id else "") for k in keys]
    columns += ["bound", "unbound", "plaintext", "legacy +aes", "unknown", "stray", "empty"]
    if report.verified:
        columns.append("failed")
    rows = []
    for t in [*report.tables, report.total]:
        cells: list[Any] = [t.name, t.rows, *(t.by_key.get(k, 0) for k in keys)]
        cells += [t.bound, t.unbound, t.plaintext, t.legacy, t.unknown, t.stray, t.empty]
        if report.verified:
            cells.append(t.failed)
        rows.append(cells)
    out = [f"store: {escape(report.store)}"]
    if report.primary_id is not None:
        out.append(f"keyring: primary {report.primary_id}, ids {', '.join(report.keyring_ids or [])}")
    else:
        out.append("keyring: none loaded (header-only counts)")
    out.append(table(["table", "rows", *columns], rows))
    if report.keyring_ids is not None:
        missing = [k for k in keys if k not in report.keyring_ids]
        if missing:
            out.append(f"warning: rows use key id(s) not in the keyring: {', '.join(missing)}")
    if report.total.unbound:
        out.append(
            f"note: {report.total.unbound} encrypted row(s) are not bound to their thread; before turning on "
            "bind_rows(..., require_bound=True), bind them with `serde-kit rotate --bind --apply`"
        )
    if not report.complete:
        out.append(
            f"warning: saw {report.total.rows} of the {report.expected} rows counted first "
            "(rows deleted meanwhile?); run again"
        )
    _failures(out, report.failures, "failed")
    return "\n".join(out)


def format_rotate(report: RotateReport) -> str:
    """``rotate`` as a summary for people."""
    verb = "would re-encrypt" if report.dry_run else "re-encrypted"
    out = [
        f"{'DRY RUN: ' if report.dry_run else ''}{verb} {report.total_changed} row(s) "
        f"under primary key {report.primary_id} ({report.examined} examined)"
    ]
    for source, n in sorted(report.changed.items()):
        label = {"plaintext": "plaintext rows", "legacy": "LangGraph +aes rows"}.get(source, f"rows under key {source}")
        out.append(f"  {label}: {n}")
    for table_name, n in sorted(report.changed_by_table.items()):
        out.append(f"  table {table_name}: {n}")
    for what, tags in (("plaintext", report.plaintext_tags), ("LangGraph +aes", report.legacy_tags)):
        if tags:
            listed = ", ".join(f"{escape(t)} x{n}" for t, n in sorted(tags.items()))
            out.append(f"  {what} rows {'to seal' if report.dry_run else 'sealed'} by type tag: {listed}")
    if report.bound:
        out.append(f"  {'would bind' if report.dry_run else 'bound'} {report.bound} row(s) to their thread and namespace")
    for table_name, n in sorted(report.not_bindable.items()):
        out.append(f"  left unbound: {n} row(s) in {table_name} (no thread id and namespace to bind them to)")
    if report.skipped_plaintext:
        out.append(f"left as is: {report.skipped_plaintext} plaintext row(s) (add --encrypt-plaintext to encrypt them)")
    if report.skipped_legacy:
        out.append(f"left as is: {report.skipped_legacy} LangGraph +aes row(s) (add --upgrade-legacy to upgrade them)")
    if report.unknown:
        out.append(f"left as is: {report.unknown} row(s) with an unknown type tag or header")
    if report.retried:
        out.append(f"{report.retried} row(s) changed by the application meanwhile were re-read and redone")
    if report.reconnects:
        out.append(f"the connection was lost and opened again {report.reconnects} time(s)")
    _failures(out, report.failures, "failed")
    if report.refused:
        out.append(
            f"refused to seal {len(report.refused)} row(s) (left as they are; the application would not load "
            "them, or they are pickle rows): audit them before migrating"
        )
        _failures(out, report.refused, "refused")
    v = report.verification
    if v is not None:
        out.append(
            f"verification: {v.decrypted} row(s) decrypt, {v.plaintext} plaintext, "
            f"{v.empty} empty, {len(v.failures)} failed"
        )
        if v.not_primary:
            out.append(
                f"note: {v.not_primary} encrypted row(s) are still not under {report.primary_id} "
                "(written meanwhile by an application with another primary key?); run rotate again"
            )
        _failures(out, v.failures, "unreadable")
    if report.interrupted:
        where = (
            "before the first batch committed"
            if report.stopped_at is None
            else f"after {report.stopped_at[0]}[{', '.join(repr(v) for v in report.stopped_at[1])}]"
        )
        out.append(f"interrupted {where}; the open batch was rolled back. Run the same command again to resume")
    if report.dry_run:
        out.append("nothing was written; run again with --apply to re-encrypt")
    return "\n".join(out)


def format_verify(report: VerifyReport) -> str:
    """``verify`` as a summary for people."""
    out = [
        f"{report.rows} row(s): {report.decrypted} decrypt, {report.plaintext} plaintext, "
        f"{report.empty} empty, {len(report.failures)} failed"
    ]
    if report.not_primary:
        out.append(f"{report.not_primary} encrypted row(s) are not under the primary key; run rotate")
    _failures(out, report.failures, "unreadable")
    return "\n".join(out)


def format_retire(report: RetireReport) -> str:
    """``retire``'s verdict, with what to do next."""
    if report.is_primary:
        return (
            f"refusing: {report.key_id} is the keyring's primary key; add a new key, "
            "make it primary everywhere, run `serde-kit rotate --apply`, then retire this one"
        )
    if report.rows:
        per_table = ", ".join(f"{t}: {n}" for t, n in report.rows_by_table.items() if n)
        return (
            f"refusing: {report.rows} row(s) still use key {report.key_id} ({per_table}); "
            "run `serde-kit rotate --apply` (with the new primary key first in the keyring) and then retire again"
        )
    if not report.complete:
        return (
            f"refusing: the walk saw {report.seen} of the {report.expected} rows counted first, so rows that "
            f"use {report.key_id} may have been missed; run retire again (no writes meanwhile)"
        )
    if report.unreadable:
        return (
            f"refusing: {report.unreadable} row(s) have a header that cannot be read (see `serde-kit status`); "
            f"they may need {report.key_id}. Repair or delete them, then retire again"
        )
    note = "" if report.in_keyring is not False else " (it is not in the current keyring anyway)"
    return (
        f"safe: no stored row uses key {report.key_id}{note} (every row of {', '.join(report.tables)} checked). "
        "Remove it from SERDE_KIT_KEYRING / the key file in your secret store and restart the applications; "
        "serde-kit does not edit your secret store"
    )


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def _cmd_status(args: argparse.Namespace) -> int:
    from serde_kit.tools.status import status

    keyring = _keyring_from_env(required=args.verify)
    with open_from_args(args) as db:
        report = status(db, keyring=keyring, verify=args.verify, batch_size=args.batch_size, progress=progress_for(args.quiet))
    emit(report, lambda: format_status(report), as_json=args.json)
    return exitcodes.OK if report.ok else exitcodes.FAILED


def _cmd_verify(args: argparse.Namespace) -> int:
    from serde_kit.tools.verify import verify

    keyring = load_keyring()
    with open_from_args(args) as db:
        report = verify(db, keyring=keyring, batch_size=args.batch_size, progress=progress_for(args.quiet))
    emit(report, lambda: format_verify(report), as_json=args.json)
    return exitcodes.OK if report.ok else exitcodes.FAILED


def _cmd_rotate(args: argparse.Namespace) -> int:
    from serde_kit.tools.rotate import rotate

    from . import signals

    keyring = load_keyring()
    check = None
    if args.allow or args.allow_file or args.allowlist_from:
        from serde_kit.tools.scan import AllowlistCheck

        from .allowopts import allowlist_from_args

        check = AllowlistCheck(allowlist_from_args(args))
    with open_from_args(args, readonly=not args.apply) as db, signals.sigterm_interrupts():
        report = rotate(
            db,
            keyring=keyring,
            apply=args.apply,
            encrypt_plaintext=args.encrypt_plaintext,
            upgrade_legacy=args.upgrade_legacy,
            bind=args.bind,
            allow_pickle=args.allow_pickle,
            check=check,
            batch_size=args.batch_size,
            verify_after=not args.skip_verify,
            progress=progress_for(args.quiet),
        )
    emit(report, lambda: format_rotate(report), as_json=args.json)
    if report.interrupted:
        return exitcodes.TERMINATED if signals.terminated() else exitcodes.INTERRUPTED
    return exitcodes.OK if report.ok else exitcodes.FAILED


def _cmd_retire(args: argparse.Namespace) -> int:
    from serde_kit.tools.retire import retire

    keyring = _keyring_from_env(required=False)
    with open_from_args(args) as db:
        report = retire(db, args.key_id, keyring=keyring, batch_size=args.batch_size, progress=progress_for(args.quiet))
    emit(report, lambda: format_retire(report), as_json=False, file=sys.stdout if report.safe else sys.stderr)
    return exitcodes.OK if report.safe else exitcodes.FAILED


def _cmd_keygen(args: argparse.Namespace) -> int:
    from serde_kit.tools.keygen import keygen

    kms: KeyWrapper | None = None
    if args.kms_key:
        from serde_kit.crypto import AwsKms

        kms = AwsKms(args.kms_key)  # region, credentials, endpoint: the usual AWS variables
    extend = None
    if args.extend:
        # Wrapped entries of the current keyring unwrap with SERDE_KIT_KMS_KEY, else with --kms-key.
        extend = load_keyring(kms=None if os.environ.get("SERDE_KIT_KMS_KEY") else kms)
    path = Path(args.file) if args.file else None
    if path is not None and path.exists():
        raise ConfigError(f"{path} exists; refusing to overwrite a key file (choose a new path)")
    if kms is not None:
        return _keygen_wrapped(args, kms, extend, path)
    key_id, keyring = keygen(args.id, extend=extend)
    if path is not None:
        keyring.to_file(path)
        print(f"new key {key_id} written to {path} (mode 0600); point SERDE_KIT_KEYRING_FILE at it")
        return exitcodes.OK
    print(f"# new key id: {key_id}" + (" (primary; existing keys kept after it)" if extend else ""))
    print("# environment variable (keep it in your secret store, not in shell history):")
    print(shell_assignment("SERDE_KIT_KEYRING", keyring.to_env_value()))
    print("# or as a key file (chmod 600), named by SERDE_KIT_KEYRING_FILE:")
    print(keyring.to_file_text(), end="")
    return exitcodes.OK


def _keygen_wrapped(args: argparse.Namespace, kms: KeyWrapper, extend: Keyring | None, path: Path | None) -> int:
    """``keygen --kms-key``: entries wrapped by the KMS key; no data key is ever shown or written in the clear."""
    from serde_kit.tools.keygen import keygen, keygen_wrapped

    load = f"load it with {shell_assignment('SERDE_KIT_KMS_KEY', args.kms_key)} (or load_keyring(kms=AwsKms(...)))"
    if path is not None:
        key_id, keyring = keygen(args.id, extend=extend)
        keyring.to_file(path, kms=kms)
        print(f"new key {key_id} written wrapped by KMS key {args.kms_key} to {path} (mode 0600); "
              f"point SERDE_KIT_KEYRING_FILE at it and {load}")  # fmt: skip
        return exitcodes.OK
    key_id, entries = keygen_wrapped(kms, args.id, extend=extend)
    print(f"# new key id: {key_id}, wrapped by KMS key {args.kms_key}"
          + (" (primary; existing keys kept after it, wrapped too)" if extend else ""))  # fmt: skip
    print(f"# no key is shown in the clear; {load}")
    print("# environment variable (keep it in your secret store):")
    print(shell_assignment("SERDE_KIT_KEYRING", ",".join(entries)))
    print("# or as a key file (chmod 600), named by SERDE_KIT_KEYRING_FILE:")
    for entry in entries:
        print(entry)
    return exitcodes.OK


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of the text table")


def register(subparsers: Any) -> None:
    """Add ``status``, ``verify``, ``rotate``, ``retire`` and ``keygen``."""
    p = subparsers.add_parser(
        "status",
        help="count stored rows per key id, plaintext and legacy rows",
        description="Count stored rows per key id, plaintext rows, LangGraph +aes rows and "
        "rows with an unknown header or a stray value, per table. Reads headers only unless --verify. "
        "Exit 1 when a row is stray or fails to decrypt.",
    )
    add_database_options(p)
    p.add_argument("--verify", action="store_true", help="also decrypt every row (needs the keyring)")
    _add_json(p)
    p.set_defaults(func=_cmd_status)

    p = subparsers.add_parser(
        "verify",
        help="decrypt every stored row and list the ones that fail",
        description="Decrypt every encrypted row (bytes only, nothing is deserialized) with the keyring "
        "from SERDE_KIT_KEYRING / SERDE_KIT_KEYRING_FILE. Exit 1 when a row fails.",
    )
    add_database_options(p)
    _add_json(p)
    p.set_defaults(func=_cmd_verify)

    p = subparsers.add_parser(
        "rotate",
        help="re-encrypt stored rows under the primary key (dry run unless --apply)",
        description="Re-encrypt every stored row that is not under the keyring's primary key. "
        "DRY RUN BY DEFAULT: it prints what it would change; --apply writes. Safe to run beside "
        "the application, to interrupt (Ctrl-C, SIGTERM) and rerun, and (PostgreSQL, MySQL) in several "
        "processes at once.",
        epilog="Keys come from SERDE_KIT_KEYRING or SERDE_KIT_KEYRING_FILE (primary first), plus "
        "LANGGRAPH_AES_KEY for +aes rows. Exit status: 0 when every row was handled and reads back, "
        "1 when a row could not be decrypted or re-encrypted, or was refused (listed; such rows are "
        "left untouched), "
        "130 on Ctrl-C and 143 on SIGTERM (the open batch rolled back).",
    )
    add_database_options(p)
    p.add_argument("--apply", action="store_true", help="write the changes (default: dry run)")
    p.add_argument(
        "--encrypt-plaintext",
        action="store_true",
        help="also encrypt unencrypted rows (each is decoded with the application's allowlist first; "
        "the report lists them by type tag)",
    )
    p.add_argument(
        "--upgrade-legacy",
        action="store_true",
        help="also re-encrypt LangGraph EncryptedSerializer (+aes) rows, each decoded with the "
        "application's allowlist first; needs LANGGRAPH_AES_KEY",
    )
    p.add_argument(
        "--bind",
        action="store_true",
        help="also bind unbound rows to their thread and namespace (read them through "
        "bind_rows(saver) afterwards); rows already bound always keep their binding",
    )
    p.add_argument(
        "--allow-pickle",
        action="store_true",
        help="with --encrypt-plaintext/--upgrade-legacy: seal 'pickle' rows too (never unpickled here; "
        "refused by default, since sealing a planted pickle row makes it look genuine)",
    )
    add_allowlist_options(p, what="rows are checked against the allowlist before their first seal (nothing is imported)")
    p.add_argument("--skip-verify", action="store_true", help="skip the final read-back of every row")
    _add_json(p)
    p.set_defaults(func=_cmd_rotate)

    p = subparsers.add_parser(
        "retire",
        help="check that no stored row still uses a key id",
        description="Refuse (exit 1) while any stored row uses KEY_ID, it is the primary, or not every "
        "row could be checked; otherwise say it is safe to remove it from the keyring. Edits nothing.",
    )
    add_database_options(p)
    p.add_argument("key_id", metavar="KEY_ID")
    p.set_defaults(func=_cmd_retire)

    p = subparsers.add_parser(
        "keygen",
        help="print a new key for the secret store",
        description="Generate a new AES-256 key and print it in the SERDE_KIT_KEYRING format "
        "and the key-file format. Keys are never read from the command line.",
    )
    p.add_argument("--id", help="key id (default: k<date>-<time>-<random>)")
    p.add_argument(
        "--extend",
        action="store_true",
        help="make the new key primary in a copy of the current keyring (from the environment)",
    )
    p.add_argument("--file", help="write a new 0600 key file instead of printing")
    p.add_argument(
        "--kms-key",
        metavar="ID",
        help="wrap the key(s) with this AWS KMS key (id, ARN or alias; region, credentials and endpoint "
        "from the usual AWS variables): entries are written as id:kms:<wrapped>, never in the clear",
    )
    p.set_defaults(func=_cmd_keygen)
