"""The database options every command shares: ``--db URL``, ``--sqlite``, ``--postgres``, ``--mysql``."""

from __future__ import annotations

import argparse
import os
from typing import Any

from serde_kit.errors import ConfigError
from serde_kit.tools.db import ENV_VAR, Database, open_database

__all__ = ["add_database_options", "has_database", "open_from_args", "positive_int"]


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_database_options(parser: argparse.ArgumentParser, *, batch: bool = True) -> None:
    """Add the database choice (at most one; else SERDE_KIT_DB), and ``--batch-size``/``--quiet``."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        metavar="URL",
        help=f"database URL: sqlite:///PATH, postgresql://..., mysql://... (default: ${ENV_VAR})",
    )
    where.add_argument("--sqlite", metavar="PATH", help="SqliteSaver database file")
    where.add_argument(
        "--postgres",
        metavar="DSN",
        help="PostgresSaver database, e.g. postgresql://user@host:5432/db "
        "(put the password in PGPASSWORD or ~/.pgpass, not on the command line)",
    )
    where.add_argument(
        "--mysql",
        metavar="DSN",
        help="MySQL/MariaDB saver database, e.g. mysql://user@host:3306/db (password in MYSQL_PWD)",
    )
    if batch:
        parser.add_argument(
            "--batch-size", type=positive_int, default=500, metavar="N", help="rows per batch (default 500)"
        )
        parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def has_database(args: argparse.Namespace) -> bool:
    """Whether a database was named on the command line or in the environment."""
    return any(getattr(args, k, None) for k in ("db", "sqlite", "postgres", "mysql")) or bool(os.environ.get(ENV_VAR))


def open_from_args(args: argparse.Namespace, *, readonly: bool = True) -> Database:
    """The database the options (or SERDE_KIT_DB) name; ConfigError when none is."""
    options: dict[str, Any] = {k: getattr(args, k, None) for k in ("sqlite", "postgres", "mysql")}
    options = {k: v for k, v in options.items() if v}
    url = getattr(args, "db", None)
    if url is None and not options:
        url = os.environ.get(ENV_VAR) or None
        if url is None:
            raise ConfigError(
                f"no database given: pass --db URL (or --sqlite PATH, --postgres DSN, --mysql DSN), or set {ENV_VAR}"
            )
        try:
            return open_database(url, readonly=readonly)
        except ConfigError as e:
            raise ConfigError(f"{ENV_VAR}: {e}") from None
    return open_database(url, readonly=readonly, **options)
