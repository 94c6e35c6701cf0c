"""What the tools share: the progress collaborator, row failures, and the report convention.

Every tool takes ``progress: Progress | None`` (tqdm fits) and draws through
:func:`open_bar`.  Every report is a dataclass that ``--json`` prints through
one function, :func:`serde_kit.cli.output.plain`: a field's ``metadata["json"]``
renames it (``None`` leaves it out) and the class's ``json_extra`` maps JSON
keys to the derived values (properties or argument-less methods) shown too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from serde_kit.crypto.rows import RowInfo, RowKind
from serde_kit.errors import DecryptionError, SerdeError

from .db import Row

__all__ = [
    "HEADER_READ",
    "Progress",
    "ProgressBar",
    "RowFailure",
    "describe_failure",
    "open_bar",
    "stray_failure",
]

#: Bytes read per blob for header-only classification (header <= 66 bytes; the
#: rest only has to be long enough to look like a whole v1 blob).
HEADER_READ = 128


class ProgressBar(Protocol):
    """What a progress factory returns (tqdm fits)."""

    def update(self, n: int) -> Any: ...
    def close(self) -> Any: ...


#: ``progress(total=N, desc="rotate")`` -> a :class:`ProgressBar`; the CLI passes tqdm.
Progress = Callable[..., ProgressBar]


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def open_bar(progress: Progress | None, total: int | Callable[[], int], desc: str) -> ProgressBar:
    """A bar from ``progress``, or one that does nothing; ``total`` is only computed when needed."""
    if progress is None:
        return _NoBar()
    return progress(total=total() if callable(total) else total, desc=desc)


@dataclass(frozen=True)
class RowFailure:
    """A row that could not be processed, and why (the row was left as it is)."""

    table: str
    pk: tuple[Any, ...]
    error: str

    @classmethod
    def of(cls, row: Row, error: BaseException | str) -> RowFailure:
        """The failure of ``row``; an exception becomes ``Class: message``."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return cls(row.table, row.pk, text)

    def __str__(self) -> str:
        return f"{self.table}[{', '.join(repr(v) for v in self.pk)}]: {self.error}"


def describe_failure(info: RowInfo, error: SerdeError) -> str:
    """``Class: message`` for a row that failed to decrypt, naming the key the header names."""
    if isinstance(error, DecryptionError) and info.kind is RowKind.AESGCM and info.key_id:
        return (
            f"DecryptionError: the key for {info.key_id} does not match the one that wrote this row, "
            "or the row was changed"
        )
    return f"{type(error).__name__}: {error}"


def stray_failure(row: Row, info: RowInfo) -> RowFailure:
    """The failure recorded for a row no saver wrote (left untouched)."""
    return RowFailure.of(row, f"stray row: {info.problem} (not written by a LangGraph saver; left as it is)")
