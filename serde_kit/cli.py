"""``serde-kit``: the command-line shell over serde_kit's tools.

The shell only parses arguments, shows progress and prints results; the work
is done by library functions.  Commands come from the modules listed in
:data:`COMMAND_MODULES`; each has ``register(subparsers)`` that adds its
subcommands with ``set_defaults(func=handler)``, ``handler(args) -> int``.
Errors serde_kit raises on purpose are printed as ``error: Class: message``
and exit with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from serde_kit.errors import SerdeError

__all__ = ["COMMAND_MODULES", "add_store_options", "main", "open_store_from_args", "progress_for"]

COMMAND_MODULES = ("serde_kit.tools.rotate", "serde_kit.tools.inspect_cli")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--sqlite PATH | --postgres DSN`` (one required), ``--batch-size`` and ``--quiet``."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--sqlite", metavar="PATH", help="SqliteSaver database file")
    where.add_argument(
        "--postgres",
        metavar="DSN",
        help="PostgresSaver database, e.g. postgresql://user@host:5432/db "
        "(put the password in PGPASSWORD or ~/.pgpass, not on the command line)",
    )
    parser.add_argument(
        "--batch-size", type=_positive_int, default=500, metavar="N", help="rows per batch (default 500)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def open_store_from_args(args: argparse.Namespace, *, readonly: bool = True) -> Any:
    """The store named by ``--sqlite``/``--postgres``."""
    from serde_kit.tools.stores import open_store

    return open_store(sqlite=args.sqlite, postgres=args.postgres, readonly=readonly)


def progress_for(args: argparse.Namespace) -> Any:
    """A tqdm factory on stderr, or None when quiet or stderr is not a terminal."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return None
    from functools import partial

    from tqdm import tqdm

    return partial(tqdm, file=sys.stderr, unit="row", mininterval=0.5, leave=False)


def build_parser() -> argparse.ArgumentParser:
    """The ``serde-kit`` argument parser with every registered command."""
    parser = argparse.ArgumentParser(
        prog="serde-kit",
        description="Tools for LangGraph checkpoint data written through serde_kit: "
        "keys, re-encryption, status and inspection of stored rows.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except SerdeError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
