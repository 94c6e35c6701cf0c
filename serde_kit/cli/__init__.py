"""``serde-kit``: the command-line shell over serde_kit's tools.

The shell parses arguments, shows progress and prints; the work is done by
library functions in :mod:`serde_kit.tools`, which never import this package.
Each module in :data:`COMMAND_MODULES` has ``register(subparsers)``, adding its
commands with ``set_defaults(func=handler)``, ``handler(args) -> exit status``.
Errors serde_kit raises on purpose print as ``error: Class: message`` (or, with
``--json``, as a JSON object on stdout) and exit with the status
:mod:`~serde_kit.cli.exitcodes` gives their kind.  The commands need nothing
beyond serde_kit's own dependencies; the ``[cli]`` extra adds progress bars.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from serde_kit import __version__
from serde_kit.errors import ConfigError, SerdeError, StoreError

from . import exitcodes

__all__ = ["COMMAND_MODULES", "build_parser", "exit_status", "main"]

#: Command groups, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "serde_kit.cli.keys",
    "serde_kit.cli.inspect",
    "serde_kit.cli.allowlist",
    "serde_kit.cli.audit",
)


class UsageError(Exception):
    """The command line was wrong (argparse's complaint), with the usage line of the parser that complained."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse, raising instead of printing and exiting, so ``main`` can answer in JSON when asked."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    """The ``serde-kit`` argument parser with every command."""
    parser = _Parser(
        prog="serde-kit",
        description="Tools for LangGraph checkpoint data written through serde_kit: "
        "keys, re-encryption, status and inspection of stored rows (SQLite, PostgreSQL, MySQL/MariaDB).",
        epilog=exitcodes.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from serde_kit import native

    parser.add_argument("--version", action="version", version=f"serde-kit {__version__} ({native.reason()})")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def exit_status(error: BaseException) -> int:
    """The exit status for an error a command raised (see :mod:`~serde_kit.cli.exitcodes`)."""
    if isinstance(error, (ConfigError, UsageError)):
        return exitcodes.USAGE
    if isinstance(error, (StoreError, OSError)):
        return exitcodes.UNAVAILABLE
    return exitcodes.FAILED


def _report(error: BaseException, *, as_json: bool) -> int:
    from .output import escape, json_text

    status = exit_status(error)
    kind = type(error).__name__
    message = " ".join(str(error).split())  # one line, whatever the driver put in it
    if as_json:
        print(json_text({"error": {"type": kind, "message": message, "exit_status": status}}))
    elif isinstance(error, UsageError):
        print(f"{error.usage.rstrip()}\nerror: {escape(message)}", file=sys.stderr)
    else:
        print(f"error: {kind}: {escape(message)}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except (SerdeError, UsageError, OSError) as e:
        if isinstance(e, BrokenPipeError):
            return exitcodes.OK
        return _report(e, as_json=as_json)
    except KeyboardInterrupt:
        from .signals import terminated

        print("interrupted; nothing of the open batch was written", file=sys.stderr)
        return exitcodes.TERMINATED if terminated() else exitcodes.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
