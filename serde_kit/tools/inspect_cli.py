"""CLI commands ``inspect``, ``allowlist scan`` and ``audit`` (thin shell, read-only).

::

    serde-kit inspect --sqlite app.db                        # threads
    serde-kit inspect --sqlite app.db --thread t-1           # newest checkpoint
    serde-kit inspect --sqlite app.db --thread t-1 --history # every checkpoint
    serde-kit inspect --blob 81a161c3 --tag msgpack          # one blob (hex)
    serde-kit inspect --stdin --tag msgpack+aesgcm < blob.bin
    serde-kit allowlist scan --postgres "$DSN"
    serde-kit audit --postgres "$DSN" --strict

Add ``--json`` for machine-readable output. Keys come from SERDE_KIT_KEYRING /
SERDE_KIT_KEYRING_FILE / LANGGRAPH_AES_KEY when set; without them encrypted
values show as ``encrypted (key id …)``. Nothing is ever written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from serde_kit.errors import ConfigError

__all__ = ["brief", "register", "table"]


# ---------------------------------------------------------------------------
# text formatting
# ---------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned plain-text columns; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    numeric = [
        all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows) and bool(rows)
        for i in range(len(headers))
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    out = []
    for row in cells:
        parts = [
            row[i].rjust(widths[i]) if numeric[i] else row[i].ljust(widths[i])
            for i in range(len(headers))
        ]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def brief(value: Any, width: int | None = 100) -> str:
    """A one-line, human-readable form of rendered data, cut to ``width`` characters."""
    text = _brief(value)
    if width is not None and len(text) > width:
        text = text[: max(width - 1, 1)] + "…"
    return text


def _brief(v: Any) -> str:
    if isinstance(v, dict):
        if "$encrypted" in v:
            enc = v["$encrypted"]
            if enc.get("cipher") == "aes":
                return "encrypted (LangGraph +aes; set LANGGRAPH_AES_KEY)"
            if enc.get("key_id"):
                return f"encrypted (key id {enc['key_id']})"
            return "encrypted (unrecognised header)"
        if "$error" in v:
            return f"<{v['$error']}>"
        if "$empty" in v:
            return "<empty>"
        if "$bytes" in v and "$type" not in v:
            more = "…" if v.get("truncated") else ""
            return f"bytes[{v['len']}] {v['$bytes'][:32]}{more}"
        if "$float" in v:
            return str(v["$float"])
        if "$map" in v:
            return "{" + ", ".join(f"{_brief(k)}: {_brief(x)}" for k, x in v["$map"]) + "}"
        if "$type" in v:
            return _brief_ext(v)
        return "{" + ", ".join(f"{json.dumps(k)}: {_brief(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_brief(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def _brief_ext(v: dict[str, Any]) -> str:
    t = v["$type"]
    if v.get("$code") == 0 and isinstance(v.get("value"), list):
        items = ", ".join(_brief(x) for x in v["value"])
        if t == "builtins.tuple":
            return f"({items}{',' if len(v['value']) == 1 else ''})"
        if t == "builtins.set" and v["value"]:
            return "{" + items + "}"
    if v.get("$code") == 6:
        preview = v.get("preview")
        shown = "" if preview is None else " " + _brief(preview)[:-1] + (", …]" if v.get("truncated") else "]")
        return f"ndarray({v.get('dtype')}, shape={v.get('shape')}){shown}"
    if "kwargs" in v and isinstance(v["kwargs"], dict):
        inner = ", ".join(f"{k}={_brief(x)}" for k, x in v["kwargs"].items())
    elif "args" in v and isinstance(v["args"], list):
        inner = ", ".join(_brief(x) for x in v["args"])
    elif isinstance(v.get("value"), dict) and "$type" not in v["value"] and v.get("$code") in (4, 5):
        inner = ", ".join(f"{k}={_brief(x)}" for k, x in v["value"].items())
    elif "value" in v:
        inner = _brief(v["value"])
    elif "$bytes" in v:
        inner = f"bytes[{v['len']}]"
    else:
        inner = ""
    return f"{t}({inner})"


def _format_threads(threads: list[Any]) -> str:
    if not threads:
        return "no checkpoints stored"
    rows = [
        [t.thread_id, t.checkpoint_ns, t.checkpoints, "" if t.last_step is None else t.last_step,
         t.last_source or "", t.pending_writes, t.last_checkpoint_id]
        for t in threads
    ]  # fmt: skip
    return table(["THREAD", "NS", "CHECKPOINTS", "LAST STEP", "SOURCE", "PENDING WRITES", "LAST CHECKPOINT"], rows)


def _format_next(view: Any) -> str:
    if view.next is None:
        return "unknown (checkpoint is encrypted; set the keyring to see it)"
    if not view.next:
        return "nothing (the run is finished)"
    return ", ".join(f"{n} ({view.tasks.get(n, 'pending')})" for n in view.next)


def _format_view(view: Any, *, width: int | None) -> str:
    lines = [
        f"thread      {view.thread_id}" + (f"  (ns {view.checkpoint_ns!r})" if view.checkpoint_ns else ""),
        f"checkpoint  {view.checkpoint_id}",
        f"parent      {view.parent_checkpoint_id or '(none: first checkpoint)'}",
        f"step        {'' if view.step is None else view.step}",
        f"metadata    {json.dumps(view.metadata, ensure_ascii=False, default=str)}",
    ]
    row = view.checkpoint_row
    if "tag" in row:
        key = f", key id {row['key_id']}" if row.get("key_id") else ""
        lines.append(f"stored as   {row['tag']} ({row['kind']}{key}, {row['bytes']} bytes)")
    else:
        lines.append(f"stored as   {row.get('storage')}")
    lines.append(f"next        {_format_next(view)}")
    if isinstance(view.checkpoint, dict) and view.checkpoint.get("ts"):
        lines.append(f"written     {view.checkpoint.get('ts')}")
    lines.append("")
    if view.channel_values:
        rows = [
            [name, view.storage.get(name, ""), brief(value, width)]
            for name, value in view.channel_values.items()
        ]
        lines.append(table(["CHANNEL", "STORED", "VALUE"], rows))
    elif isinstance(view.checkpoint, dict) and ("$encrypted" in view.checkpoint or "$error" in view.checkpoint):
        lines.append(f"channel values: {brief(view.checkpoint)}")
    else:
        lines.append("channel values: none")
    lines.append("")
    if view.pending_writes:
        lines.append(f"pending writes ({len(view.pending_writes)}):")
        rows = [
            [w.task_path or w.task_id, w.channel, w.idx, w.tag or "", brief(w.value, width)]
            for w in view.pending_writes
        ]
        lines.append(table(["TASK", "CHANNEL", "IDX", "TAG", "VALUE"], rows))
    else:
        lines.append("pending writes: none")
    return "\n".join(lines)


def _format_history(views: list[Any]) -> str:
    rows = []
    for v in views:
        nxt = "?" if v.next is None else ", ".join(v.next) or "-"
        meta = v.metadata if isinstance(v.metadata, dict) else {}
        rows.append(
            [v.checkpoint_id, v.parent_checkpoint_id or "-", "" if v.step is None else v.step,
             meta.get("source", ""), nxt, len(v.pending_writes)]
        )  # fmt: skip
    return table(["CHECKPOINT", "PARENT", "STEP", "SOURCE", "NEXT", "WRITES"], rows)


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def _emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    try:
        if args.json:
            json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
            sys.stdout.write("\n")
        else:
            print(text())
        sys.stdout.flush()
    except BrokenPipeError:
        # `serde-kit inspect ... | head`: the reader left; stop quietly, and keep
        # the interpreter's final flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _progress(args: argparse.Namespace, total: int) -> tuple[Callable[[int], None] | None, Any]:
    from serde_kit.cli import progress_for

    factory = progress_for(args)
    if factory is None:
        return None, None
    bar = factory(total=total)
    return bar.update, bar


def _cmd_inspect(args: argparse.Namespace) -> int:
    from serde_kit.tools import inspect as lib

    keyring = lib.keyring_from_env()
    if args.blob is not None or args.stdin:
        if args.sqlite or args.postgres:
            raise ConfigError("--blob/--stdin decode one blob; leave out --sqlite/--postgres")
        blob = _read_blob(args)
        value = lib.decode_blob(blob, tag=args.tag, keyring=keyring, preview=args.preview)
        _emit(args, value, lambda: json.dumps(value, indent=2, ensure_ascii=False))
        return 0
    if not (args.sqlite or args.postgres):
        raise ConfigError("give --sqlite PATH or --postgres DSN (or --blob HEX / --stdin)")
    if (args.history or args.checkpoint) and not args.thread:
        raise ConfigError("--history and --checkpoint need --thread THREAD_ID")
    from serde_kit.cli import open_store_from_args

    decoder = lib.RowDecoder(keyring, preview=args.preview)
    width = None if args.full else 100
    with open_store_from_args(args) as store:
        if not args.thread:
            threads = lib.list_threads(store, limit=args.limit)
            _emit(args, [t.to_json() for t in threads], lambda: _format_threads(threads))
        elif args.history:
            views = lib.thread_history(
                store, args.thread, checkpoint_ns=args.ns, limit=args.limit, decoder=decoder
            )
            _emit(args, [v.to_json() for v in views], lambda: _format_history(views))
        else:
            view = lib.show_checkpoint(
                store, args.thread, checkpoint_id=args.checkpoint, checkpoint_ns=args.ns, decoder=decoder
            )
            _emit(args, view.to_json(), lambda: _format_view(view, width=width))
    return 0


def _read_blob(args: argparse.Namespace) -> bytes:
    if args.blob is not None:
        text = args.blob
    else:
        raw = sys.stdin.buffer.read()
        if not args.hex:
            return raw
        text = raw.decode("ascii", errors="replace")
    cleaned = "".join(text.split())
    if cleaned.startswith(("0x", "\\x")):
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise ConfigError(
            "the blob is not valid hex (give an even number of 0-9a-f digits; "
            "use --stdin without --hex for raw bytes)"
        ) from None


def _cmd_scan(args: argparse.Namespace) -> int:
    from serde_kit.cli import open_store_from_args
    from serde_kit.tools.inspect import RowDecoder, keyring_from_env
    from serde_kit.tools.scan import scan_store

    decoder = RowDecoder(keyring_from_env())
    with open_store_from_args(args) as store:
        update, bar = _progress(args, store.count_rows())
        try:
            report = scan_store(store, decoder=decoder, batch_size=args.batch_size, progress=update)
        finally:
            if bar is not None:
                bar.close()
    _emit(args, report.to_json(), report.to_text)
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from serde_kit.cli import open_store_from_args
    from serde_kit.tools.audit import audit_store

    with open_store_from_args(args) as store:
        update, bar = _progress(args, store.count_rows())
        try:
            report = audit_store(store, batch_size=args.batch_size, progress=update)
        finally:
            if bar is not None:
                bar.close()
    _emit(args, report.to_json(strict=args.strict), lambda: report.to_text(strict=args.strict))
    return report.exit_code(strict=args.strict)


# ---------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")


def register(subparsers: Any) -> None:
    """Add ``inspect``, ``allowlist scan`` and ``audit`` to the ``serde-kit`` parser."""
    from serde_kit.cli import add_store_options

    p = subparsers.add_parser(
        "inspect",
        help="show stored threads, checkpoints and blobs as JSON (imports no user code)",
        description="Show what a LangGraph database holds without importing any class "
        "named in the data. Without --thread: list threads. Encrypted values are "
        "decrypted when SERDE_KIT_KEYRING(_FILE) / LANGGRAPH_AES_KEY is set.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--sqlite", metavar="PATH", help="SqliteSaver database file")
    where.add_argument("--postgres", metavar="DSN", help="PostgresSaver database DSN")
    p.add_argument("--thread", metavar="ID", help="show this thread's newest checkpoint")
    p.add_argument("--checkpoint", metavar="ID", help="show this checkpoint instead of the newest")
    p.add_argument("--ns", default="", metavar="NS", help="checkpoint namespace (subgraphs; default '')")
    p.add_argument("--history", action="store_true", help="list every checkpoint of --thread, newest first")
    p.add_argument("--limit", type=int, metavar="N", help="at most N threads / checkpoints")
    p.add_argument("--blob", metavar="HEX", help="decode one blob given as hex")
    p.add_argument("--stdin", action="store_true", help="decode one blob read from stdin (raw bytes)")
    p.add_argument("--hex", action="store_true", help="with --stdin: the input is hex text")
    p.add_argument("--tag", default="msgpack", help="type tag of --blob/--stdin (default msgpack)")
    p.add_argument("--preview", type=int, default=8, metavar="N", help="array elements shown (default 8)")
    p.add_argument("--full", action="store_true", help="do not cut long values in the text view")
    _add_json(p)
    p.set_defaults(func=_cmd_inspect)

    allow = _allowlist_subparsers(subparsers)
    s = allow.add_parser(
        "scan",
        help="list the types stored data needs and print an allowlist for them",
        description="Walk every stored row (decrypting where a key is set) and list each "
        "(module, name) found in ext payloads, whether SERDE_KIT_ALLOW / "
        "SERDE_KIT_ALLOW_FILE covers it, and allowlist snippets to paste.",
    )
    add_store_options(s)
    _add_json(s)
    s.set_defaults(func=_cmd_scan)

    a = subparsers.add_parser(
        "audit",
        help="report plaintext rows, metadata keys and inline values; fail on plaintext rows",
        description="Exit 1 when rows the serializer could have encrypted are stored in "
        "plaintext. Metadata and PostgreSQL inline primitives (always plaintext in the "
        "saver) are warnings; --strict makes them fail too. Values are never shown.",
    )
    add_store_options(a)
    a.add_argument("--strict", action="store_true", help="warnings fail the audit too")
    _add_json(a)
    a.set_defaults(func=_cmd_audit)


def _allowlist_subparsers(subparsers: Any) -> Any:
    """The ``allowlist`` command's own subparsers (shared if another module added it)."""
    existing = subparsers.choices.get("allowlist")
    if existing is not None:
        for action in existing._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action
        return existing.add_subparsers(dest="allowlist_command", metavar="ACTION", required=True)
    parser = subparsers.add_parser(
        "allowlist", help="work out which stored types the decoder must allow"
    )
    return parser.add_subparsers(dest="allowlist_command", metavar="ACTION", required=True)
