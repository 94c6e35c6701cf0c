"""How many rows a page or batch holds: a row limit, and a bound on the blob bytes in memory."""

from __future__ import annotations

from collections.abc import Sequence

from .model import Row

__all__ = ["FIRST_PAGE", "PAGE_BYTES", "PageSizer"]


#: Blob bytes one page or batch may hold in memory, whatever its row limit says.
PAGE_BYTES = 4 << 20

#: Rows of a table's first page, before any row size is known.
FIRST_PAGE = 8


class PageSizer:
    """Rows per page: at most ``batch_size``, and about :data:`PAGE_BYTES` of blobs by the sizes seen so far."""

    def __init__(self, batch_size: int, *, budget: int = PAGE_BYTES) -> None:
        self.batch_size = batch_size
        self.budget = budget
        self._bytes = 0
        self._rows = 0

    @property
    def limit(self) -> int:
        """Rows to ask for next."""
        if self._rows == 0:
            return min(self.batch_size, FIRST_PAGE)
        average = max(1, self._bytes // self._rows)
        return max(1, min(self.batch_size, self.budget // average))

    def saw(self, rows: Sequence[Row]) -> None:
        """Account for a page just read."""
        self._rows += len(rows)
        total = 0
        for r in rows:  # a plain loop: a generator frame per page cost ~1 us a row
            blob = r.blob
            if type(blob) is bytes or isinstance(blob, (bytes, str)):
                total += len(blob)
        self._bytes += total
