"""The catalog is compared with the known layouts, never turned into SQL.

The application role usually owns the saver's tables, so every name the
catalog returns is hostile: a key column called ``x" || (SELECT evil()) || "x``
pasted into a query runs ``evil()`` with the privileges of whoever runs the
tools.  The dialects read the key columns a table really has and hand them to
:func:`known_key`, which returns the matching *constant* from the layout (the
strings SQL is built from) or raises :class:`StoreError` saying what differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from serde_kit.errors import StoreError

from .model import Layout

__all__ = ["CatalogKey", "known_key", "shown"]

#: ``(is the primary key, its columns in order)`` of one unique index the catalog lists.
CatalogKey = tuple[bool, tuple[str, ...]]

_SHOWN_CHARS = 60


def shown(name: object) -> str:
    """A catalog name for a message: ASCII only, quoted, cut short (it may hold anything)."""
    text = ascii(str(name))
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 4] + "...'"


def _columns(columns: Iterable[object]) -> str:
    return "(" + ", ".join(shown(c) for c in columns) + ")"


def known_key(where: str, layout: Layout, table: str, found: Sequence[CatalogKey]) -> tuple[str, ...]:
    """The layout's key of ``table`` that the catalog's unique indexes have, as the layout's constant.

    The primary key is tried first, then every other unique index: a saver only
    needs the known columns to be unique (its upserts name them), so a table
    whose primary key grew a column but kept a unique index on the saver's
    columns is still worked on those columns only.  Raises StoreError when no
    unique index matches a known key.
    """
    known = layout.keys.get(table, ())
    ordered = sorted(found, key=lambda k: not k[0])
    for _primary, columns in ordered:
        for key in known:
            if columns == key:
                return key
    primary = next((c for p, c in found if p), None)
    have = f"primary key {_columns(primary)}" if primary is not None else "no primary key"
    others = [c for p, c in found if not p]
    if others:
        have += " and unique index(es) " + ", ".join(_columns(c) for c in others[:4])
    want = " or ".join(_columns(k) for k in known)
    raise StoreError(
        f"{where}: table {table} has {have}, but the {layout.package or layout.saver} layouts serde-kit knows "
        f"key it by {want}. serde-kit builds SQL only from the layouts it knows, never from names read from "
        "the database: restore the saver's primary key (or a unique index on those columns), then rerun"
    )
