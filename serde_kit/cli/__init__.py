"""``serde-kit``: the command-line shell over serde_kit's tools (the ``[cli]`` extra).

The shell parses arguments, shows progress and prints; the work is done by
library functions in :mod:`serde_kit.tools`, which never import this package.
Each module in :data:`COMMAND_MODULES` has ``register(subparsers)``, adding its
commands with ``set_defaults(func=handler)``, ``handler(args) -> exit status``.
Errors serde_kit raises on purpose print as ``error: Class: message`` and exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from serde_kit.errors import SerdeError

from . import exitcodes

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: Command groups, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "serde_kit.cli.keys",
    "serde_kit.cli.inspect",
    "serde_kit.cli.allowlist",
    "serde_kit.cli.audit",
)

#: The extra that holds the command line's own dependencies.
CLI_EXTRA = "serde-kit[cli]"


def _missing_extra() -> str | None:
    try:
        import tqdm  # noqa: F401
    except ImportError as e:
        return f"error: the serde-kit command line needs {e.name}: pip install '{CLI_EXTRA}'"
    return None


def build_parser() -> argparse.ArgumentParser:
    """The ``serde-kit`` argument parser with every command."""
    parser = argparse.ArgumentParser(
        prog="serde-kit",
        description="Tools for LangGraph checkpoint data written through serde_kit: "
        "keys, re-encryption, status and inspection of stored rows (SQLite, PostgreSQL, MySQL/MariaDB).",
    )
    from serde_kit import __version__, native

    parser.add_argument("--version", action="version", version=f"serde-kit {__version__} ({native.reason()})")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    missing = _missing_extra()
    if missing:
        print(missing, file=sys.stderr)
        return exitcodes.FAILED
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SerdeError as e:
        from .output import escape

        message = escape(" ".join(str(e).split()))  # one line, whatever the driver put in it
        print(f"error: {type(e).__name__}: {message}", file=sys.stderr)
        return exitcodes.FAILED
    except KeyboardInterrupt:
        from .signals import terminated

        print("interrupted; nothing of the open batch was written", file=sys.stderr)
        return exitcodes.TERMINATED if terminated() else exitcodes.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
