"""What the database objects hand the tools: tables, rows, and the saver's layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Layout", "Row", "SealedUnder", "Table", "driver_value"]


@dataclass(frozen=True, slots=True)
class SealedUnder:
    """The rows a claim skips: a tag ending in ``tag_suffix`` and a blob starting with ``header``.

    Both come from the caller (rotate: ``"+" + crypto.blob.CIPHER_NAME`` and the
    primary key's header), so the SQL layer names no cipher; each dialect's
    :meth:`~serde_kit.tools.db.base.Database.under_header` binds them as parameters.
    """

    tag_suffix: str
    header: bytes

    def params(self) -> list[Any]:
        """The four bound values of ``under_header``: suffix length, suffix, header length, header."""
        return [len(self.tag_suffix), self.tag_suffix, len(self.header), self.header]

    def holds(self, tag: object, blob: object) -> bool:
        """What the SQL of ``under_header`` decides, in Python (a row already under the header)."""
        return (
            isinstance(tag, str)
            and tag.endswith(self.tag_suffix)
            and isinstance(blob, bytes)
            and blob.startswith(self.header)
        )


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


class Row:
    """One stored row: table, primary-key values, type tag, blob, and where it is.

    Storage only: what the row holds is for the tools to tell
    (:func:`serde_kit.crypto.rows.classify_row` of ``tag`` and ``blob``).
    Immutable and compared like a frozen dataclass of ``(table, pk, tag, blob)``
    (``loc`` is left out); a plain slotted class because the tools build one per
    stored row.  The fields are read-only properties over private slots: the
    constructor stores them directly (an overridden ``__setattr__`` made every
    row cost seven ``object.__setattr__`` calls, ~2 us), and assigning or
    deleting a field still raises AttributeError.
    """

    __slots__ = ("_table", "_pk", "_tag", "_blob", "_loc")

    def __init__(self, table: str, pk: tuple[Any, ...], tag: Any, blob: Any, loc: tuple[Any, ...] = ()) -> None:
        self._table = table
        self._pk = pk
        self._tag = tag
        self._blob = blob
        self._loc = loc

    @property
    def table(self) -> str:
        """Name of the table the row is in."""
        return self._table

    @property
    def pk(self) -> tuple[Any, ...]:
        """Primary-key values (how rows are reported)."""
        return self._pk

    @property
    def tag(self) -> Any:
        """The stored type tag (text for a saver's rows; anything for a stray one)."""
        return self._tag

    @property
    def blob(self) -> Any:
        """The stored blob (bytes for a saver's rows; anything for a stray one)."""
        return self._blob

    @property
    def loc(self) -> tuple[Any, ...]:
        """Locator values (``rowid`` on SQLite), or () where the primary key is the locator."""
        return self._loc

    def __reduce__(self) -> tuple[Any, ...]:
        return (Row, (self.table, self.pk, self.tag, self.blob, self.loc))

    def _key(self) -> tuple[Any, ...]:
        return (self.table, self.pk, self.tag, self.blob)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Row)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Row(table={self.table!r}, pk={self.pk!r}, tag={self.tag!r}, blob={self.blob!r})"

    @property
    def where(self) -> tuple[Any, ...]:
        """Values of the table's walk columns for this row."""
        return self._loc or self._pk

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
    ``keys`` are constants read from the saver packages' migrations: the
    catalog is only compared with them, and SQL is built from these strings,
    never from a name the database returned.
    """

    saver: str
    serde_tables: Mapping[str, tuple[str, str]]
    writes_table: str
    writes_blob: str
    checkpoint_serde: bool
    blobs_table: str | None = None
    optional: frozenset[str] = frozenset()
    #: table -> the key column lists the saver's releases create, newest first
    keys: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    #: the package whose migrations these layouts come from (for messages)
    package: str = ""

    @property
    def all_tables(self) -> tuple[str, ...]:
        """Every table the tools read: the ``serde`` tables and ``checkpoints``."""
        return tuple(dict.fromkeys([*self.serde_tables, "checkpoints"]))


def driver_value(raw: Any) -> Any:
    """A driver's blob value as bytes; text, numbers and None are kept as they are (stray rows)."""
    if isinstance(raw, _BYTES):
        return bytes(raw)
    return raw
