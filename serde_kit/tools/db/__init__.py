"""One database object per dialect behind one interface; every tool reaches storage through it.

``open_database(url)`` or ``open_database(sqlite=PATH | postgres=DSN | mysql=DSN)``.
URLs: ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``postgresql://…``,
``mysql://…`` (``mariadb://`` too).  Read-only unless ``readonly=False``.
"""

from __future__ import annotations

import os
from typing import Any

from serde_kit._secrets import scrubs_frames
from serde_kit.errors import ConfigError

from .address import masked
from .base import Database as Database
from .batch import Batch as Batch
from .model import Layout as Layout, Row as Row, SealedUnder as SealedUnder, Table as Table

__all__ = ["ENV_VAR", "Batch", "Database", "Layout", "Row", "SealedUnder", "Table", "open_database", "split_url"]

#: Environment variable holding a database URL for the command line.
ENV_VAR = "SERDE_KIT_DB"

_SCHEMES = {
    "sqlite": "sqlite",
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
}


@scrubs_frames
def split_url(url: str) -> tuple[str, str]:
    """``(dialect, location)`` of a database URL; ConfigError for anything else."""
    scheme, sep, rest = url.partition("://")
    dialect = _SCHEMES.get(scheme.lower().split("+")[0]) if sep else None
    if dialect is None:
        # Only parts parsed out of the URL, never its text: a typo'd URL still holds its password.
        shown = masked(url)
        raise ConfigError(
            f"{shown or 'the value'} is not a database URL (no scheme serde-kit knows); "
            "use sqlite:///PATH, postgresql://... or mysql://..."
        )
    if dialect == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError("a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db")
        return dialect, rest[1:]
    return dialect, url


# Its arguments hold a DSN and its password: no exception leaves a frame that holds them.
@scrubs_frames
def open_database(
    url: str | None = None,
    *,
    sqlite: str | os.PathLike[str] | None = None,
    postgres: str | None = None,
    mysql: str | None = None,
    readonly: bool = True,
    **options: Any,
) -> Database:
    """Open exactly one database: a URL, or a SQLite path / PostgreSQL DSN / MySQL DSN.

    Read-only by default, and really so (SQLite ``mode=ro``, read-only
    sessions on the servers).  Raises :class:`~serde_kit.errors.ConfigError`
    when the file does not exist (it is never created), the saver's tables are
    missing, or the server cannot be reached (the message never shows a password).
    """
    given = [(k, v) for k, v in (("url", url), ("sqlite", sqlite), ("postgres", postgres), ("mysql", mysql)) if v is not None]
    if len(given) != 1:
        raise ConfigError("give exactly one database: a URL, sqlite=PATH, postgres=DSN or mysql=DSN")
    kind, where = given[0]
    if kind == "url":
        kind, where = split_url(str(where))
    if kind == "sqlite":
        from .sqlite import SqliteDatabase

        return SqliteDatabase(where, readonly=readonly, **options)
    if kind == "postgres":
        from .postgres import PostgresDatabase

        return PostgresDatabase(str(where), readonly=readonly)
    from .mysql import MysqlDatabase

    return MysqlDatabase(str(where), readonly=readonly)
