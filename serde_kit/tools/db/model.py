"""What the database objects hand the tools: tables, rows, and the saver's layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from serde_kit.crypto.rows import EMPTY_TAG, RowInfo, RowKind, classify_row

__all__ = ["EMPTY_TAG", "Layout", "Row", "Table", "driver_value"]

_BYTES = (bytes, bytearray, memoryview)



@dataclass(frozen=True)
class Table:
    """One table holding ``serde`` output: its tag and blob columns, key and locator."""

    name: str
    tag_column: str
    blob_column: str
    pk_columns: tuple[str, ...]
    locator: tuple[str, ...] = ()

    @property
    def walk_columns(self) -> tuple[str, ...]:
        """Columns a page walk orders by (the locator, else the primary key)."""
        return self.locator or self.pk_columns


@dataclass(frozen=True)
class Row:
    """One stored row: table, primary-key values, type tag, blob, and where it is."""

    table: str
    pk: tuple[Any, ...]
    tag: Any
    blob: Any
    loc: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @property
    def where(self) -> tuple[Any, ...]:
        """Values of the table's walk columns for this row."""
        return self.loc or self.pk

    @cached_property
    def info(self) -> RowInfo:
        """:func:`~serde_kit.crypto.rows.classify_row` of this row."""
        return classify_row(self.tag, self.blob)

    @property
    def is_empty(self) -> bool:
        """True when the row holds no ``serde`` output (NULL blob or the ``"empty"`` tag)."""
        return self.info.kind is RowKind.EMPTY

    @property
    def label(self) -> str:
        """``table[pk, ...]`` for messages."""
        return f"{self.table}[{', '.join(repr(v) for v in self.pk)}]"


@dataclass(frozen=True)
class Layout:
    """A saver's tables: which hold ``serde`` output, and where checkpoints and writes live.

    ``serde_tables`` maps table -> (tag column, blob column), in visiting order;
    ``optional`` ones (e.g. LangGraph's ``cache``) are covered when present.
    ``checkpoint_serde`` is True when ``checkpoints.checkpoint`` goes through
    ``serde`` (SqliteSaver) and False when it is plain JSON with channel values
    in ``blobs_table`` (PostgreSQL and MySQL savers).
    """

    saver: str
    serde_tables: Mapping[str, tuple[str, str]]
    writes_table: str
    writes_blob: str
    checkpoint_serde: bool
    blobs_table: str | None = None
    optional: frozenset[str] = frozenset()


def driver_value(raw: Any) -> Any:
    """A driver's blob value as bytes; text, numbers and None are kept as they are (stray rows)."""
    if isinstance(raw, _BYTES):
        return bytes(raw)
    return raw
