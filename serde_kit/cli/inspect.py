"""``serde-kit inspect``: stored threads, checkpoints and blobs, read-only, no user code imported.

::

    serde-kit inspect --sqlite app.db                        # threads
    serde-kit inspect --sqlite app.db --thread t-1           # newest checkpoint
    serde-kit inspect --sqlite app.db --thread t-1 --history # every checkpoint
    serde-kit inspect --sqlite app.db diff t-1               # what the last step changed
    serde-kit inspect --sqlite app.db diff t-1 --from A --to B
    serde-kit inspect --blob 81a161c3 --tag msgpack          # one blob (hex)
    serde-kit inspect --stdin --tag msgpack+aesgcm < blob.bin

Keys come from SERDE_KIT_KEYRING / SERDE_KIT_KEYRING_FILE / LANGGRAPH_AES_KEY
when set; without them encrypted values show as ``encrypted (key id ...)``.
Exit 1 when a row could not be read (its cell shows the error).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from serde_kit.errors import ConfigError

from . import exitcodes
from .database import add_database_options, has_database, open_from_args
from .output import emit, escape, table

__all__ = ["brief", "register"]


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


_MESSAGES = "langchain_core.messages."


def _fields(values: dict[str, Any], *, message: bool = False) -> str:
    """``k=v, ...`` with ``content`` first and empty fields left out, so what matters fits the cell."""
    items = sorted(values.items(), key=lambda kv: kv[0] != "content")
    shown = [(k, x) for k, x in items if x not in (None, {}, [], "") and not (message and k == "type")]
    return ", ".join(f"{k}={_brief(x)}" for k, x in shown)


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
    if t.startswith(_MESSAGES):
        t = t.rpartition(".")[2]  # HumanMessage: the module and the type field say nothing more
    if "kwargs" in v and isinstance(v["kwargs"], dict):
        inner = _fields(v["kwargs"])
    elif "args" in v and isinstance(v["args"], list):
        inner = ", ".join(_brief(x) for x in v["args"])
    elif isinstance(v.get("value"), dict) and "$type" not in v["value"] and v.get("$code") in (4, 5):
        inner = _fields(v["value"], message=t != v["$type"])
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
    e = escape
    lines = [
        f"thread      {e(view.thread_id)}" + (f"  (ns {e(repr(view.checkpoint_ns))})" if view.checkpoint_ns else ""),
        f"checkpoint  {e(view.checkpoint_id)}",
        f"parent      {e(view.parent_checkpoint_id or '(none: first checkpoint)')}",
        f"step        {'' if view.step is None else e(view.step)}",
        f"metadata    {e(json.dumps(view.metadata, ensure_ascii=False, default=str))}",
    ]
    row = view.checkpoint_row
    if "tag" in row:
        key = f", key id {row['key_id']}" if row.get("key_id") else ""
        lines.append(f"stored as   {e(row['tag'])} ({row['kind']}{key}, {row['bytes']} bytes)")
    else:
        lines.append(f"stored as   {row.get('storage')}")
    lines.append(f"next        {e(_format_next(view))}")
    if isinstance(view.checkpoint, dict) and view.checkpoint.get("ts"):
        lines.append(f"written     {e(view.checkpoint.get('ts'))}")
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
        ts = v.checkpoint.get("ts") if isinstance(v.checkpoint, dict) else None
        rows.append(
            [v.checkpoint_id, v.parent_checkpoint_id or "-", "" if v.step is None else v.step,
             "" if ts is None else ts, meta.get("source", ""), nxt, len(v.pending_writes)]
        )  # fmt: skip
    return table(["CHECKPOINT", "PARENT", "STEP", "WRITTEN", "SOURCE", "NEXT", "WRITES"], rows)


def _list_edit_rows(name: str, edit: Any, width: int | None) -> list[list[str]]:
    """One row per removed and per added item of a list channel, each at its index."""
    kept = edit.kept_head + edit.kept_tail
    rows = [[name, f"changed: -{len(edit.removed)} +{len(edit.added)} item(s), {kept} kept", "", ""]]
    rows += [[name, f"  [{edit.kept_head + i}] removed", brief(v, width), ""] for i, v in enumerate(edit.removed)]
    rows += [[name, f"  [{edit.kept_head + i}] added", "", brief(v, width)] for i, v in enumerate(edit.added)]
    return rows


def _format_diff(diff: Any, *, width: int | None) -> str:
    step = "" if diff.to_step is None else f" (step {diff.from_step} -> {diff.to_step})"
    lines = [
        f"thread      {escape(diff.thread_id)}",
        f"from        {escape(diff.from_checkpoint_id or '(nothing: first checkpoint)')}",
        f"to          {escape(diff.to_checkpoint_id)}{step}",
        "",
    ]
    half = None if width is None else max(width // 2, 20)
    rows = [[name, "added", "", brief(v, half)] for name, v in diff.added.items()]
    rows += [[name, "removed", brief(v, half), ""] for name, v in diff.removed.items()]
    for name, (b, a) in diff.changed.items():
        edit = diff.list_edits.get(name)
        if edit is None:
            rows.append([name, "changed", brief(b, half), brief(a, half)])
        else:
            rows += _list_edit_rows(name, edit, half)
    if rows:
        lines.append(table(["CHANNEL", "CHANGE", "BEFORE", "AFTER"], sorted(rows, key=lambda row: row[0])))
    else:
        lines.append("no channel changed")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# command
# ---------------------------------------------------------------------------


def _cmd_inspect(args: argparse.Namespace) -> int:
    from serde_kit.tools import inspect as lib

    keyring = lib.keyring_from_env()
    if args.blob is not None or args.stdin:
        if any(getattr(args, k) for k in ("db", "sqlite", "postgres", "mysql")):
            raise ConfigError("--blob/--stdin decode one blob; leave out the database options")
        blob = _read_blob(args)
        value = lib.decode_blob(blob, tag=args.tag, keyring=keyring, preview=args.preview)
        emit(value, lambda: json.dumps(value, indent=2, ensure_ascii=False), as_json=args.json)
        return exitcodes.OK
    if args.action:
        if args.action[0] != "diff" or len(args.action) != 2:
            raise ConfigError("the only action is `inspect diff THREAD [--from ID] [--to ID]`")
        args.thread = args.action[1]
    elif args.from_id or args.to_id:
        raise ConfigError("--from and --to go with `inspect diff THREAD`")
    if not has_database(args):
        raise ConfigError("give --db URL, --sqlite PATH, --postgres DSN or --mysql DSN (or --blob HEX / --stdin)")
    if (args.history or args.checkpoint) and not args.thread:
        raise ConfigError("--history and --checkpoint need --thread THREAD_ID")
    decoder = lib.RowDecoder(keyring, preview=args.preview)
    width = None if args.full else 100
    unreadable = 0
    with open_from_args(args) as db:
        if args.action:
            diff = lib.diff_checkpoints(
                db, args.thread, from_id=args.from_id, to_id=args.to_id, checkpoint_ns=args.ns, decoder=decoder
            )
            unreadable = diff.unreadable
            emit(diff, lambda: _format_diff(diff, width=width), as_json=args.json)
        elif not args.thread:
            threads = lib.list_threads(db, limit=args.limit)
            emit(threads, lambda: _format_threads(threads), as_json=args.json)
        elif args.history:
            views = lib.thread_history(db, args.thread, checkpoint_ns=args.ns, limit=args.limit, decoder=decoder)
            unreadable = sum(v.unreadable for v in views)
            emit(views, lambda: _format_history(views), as_json=args.json)
        else:
            view = lib.show_checkpoint(
                db, args.thread, checkpoint_id=args.checkpoint, checkpoint_ns=args.ns, decoder=decoder
            )
            unreadable = view.unreadable
            emit(view, lambda: _format_view(view, width=width), as_json=args.json)
    if unreadable:
        print(f"error: {unreadable} stored value(s) could not be read (shown as <...> cells)", file=sys.stderr)
        return exitcodes.FAILED
    return exitcodes.OK


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


def register(subparsers: Any) -> None:
    """Add ``inspect``."""
    p = subparsers.add_parser(
        "inspect",
        help="show stored threads, checkpoints and blobs as a text table or --json (imports no user code)",
        description="Show what a LangGraph database holds without importing any class "
        "named in the data: a text table by default, JSON with --json. Without --thread: list threads. "
        "Encrypted values are decrypted when SERDE_KIT_KEYRING(_FILE) / LANGGRAPH_AES_KEY is set.",
    )
    add_database_options(p, batch=False)
    p.add_argument("action", nargs="*", metavar="diff THREAD", help="compare two checkpoints of THREAD")
    p.add_argument("--from", dest="from_id", metavar="ID", help="with diff: the older checkpoint (default: the parent)")
    p.add_argument("--to", dest="to_id", metavar="ID", help="with diff: the newer checkpoint (default: the newest)")
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
    p.add_argument("--json", action="store_true", help="JSON on stdout instead of the text view")
    p.set_defaults(func=_cmd_inspect)
