"""What a stored row is, from its type tag and blob alone (no key, no decryption).

One classification shared by every tool (status, verify, rotate, retire,
inspect, audit)::

    blob NULL, tag NULL or "empty"        EMPTY      no serde output (PostgresSaver's "empty" channel)
    tag not text, or blob not bytes       STRAY      not written by a saver (a TEXT/INTEGER blob, a BLOB tag)
    "msgpack"                             PLAINTEXT  not encrypted
    "msgpack+aesgcm" + valid v1 header    AESGCM     serde_kit; ``key_id`` from the header
    "msgpack+aes"                         LEGACY     LangGraph's EncryptedSerializer (AES-EAX)
    anything else with a "+"              UNKNOWN    other cipher, several '+', or a bad header

``problem`` says, for STRAY and UNKNOWN rows, what is wrong in one phrase.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple

from serde_kit.errors import MalformedDataError

from .blob import CIPHER_NAME, LEGACY_CIPHER_NAME, parse_blob

__all__ = ["EMPTY_TAG", "RowInfo", "RowKind", "classify_row"]

#: The tag PostgresSaver/MySQL savers store (with a NULL blob) for a channel without a value.
EMPTY_TAG = "empty"

_BYTES = (bytes, bytearray, memoryview)


class RowKind(str, Enum):
    """The kinds of stored row; a ``str`` so ``kind == "aesgcm"`` and JSON keep working."""

    EMPTY = "empty"
    STRAY = "stray"
    PLAINTEXT = "plaintext"
    AESGCM = CIPHER_NAME
    LEGACY = "legacy"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


class RowInfo(NamedTuple):
    """A row's kind, its inner type tag, the key id its header names, and what is wrong."""

    kind: RowKind
    inner_tag: str | None
    key_id: str | None
    problem: str | None = None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def classify_row(tag: Any, blob: Any) -> RowInfo:
    """Classify one stored ``(tag, blob)``; never raises, never reads past the header."""
    if blob is None or tag is None or tag == EMPTY_TAG:
        return RowInfo(RowKind.EMPTY, None, None)
    if not isinstance(tag, str):
        return RowInfo(
            RowKind.STRAY, None, None, f"type tag is {type(tag).__name__} {_show(tag)}, not text"
        )
    inner, plus, cipher = tag.partition("+")
    if not isinstance(blob, _BYTES):
        return RowInfo(
            RowKind.STRAY, inner, None, f"value is {type(blob).__name__} {_show(blob)}, not bytes"
        )
    if not plus:
        return RowInfo(RowKind.PLAINTEXT, tag, None)
    if "+" in cipher:
        return RowInfo(RowKind.UNKNOWN, inner, None, f"type tag {_show(tag)} has more than one '+'")
    if cipher == LEGACY_CIPHER_NAME:
        return RowInfo(RowKind.LEGACY, inner, None)
    if cipher != CIPHER_NAME:
        return RowInfo(RowKind.UNKNOWN, inner, None, f"type tag {_show(tag)} names an unknown cipher")
    try:
        return RowInfo(RowKind.AESGCM, inner, parse_blob(blob).key_id)
    except MalformedDataError as e:
        return RowInfo(RowKind.UNKNOWN, inner, None, str(e))
