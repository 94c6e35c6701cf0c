"""What a stored row is, from its type tag and blob alone (no key, no decryption).

One classification shared by every tool (status, verify, rotate, retire,
inspect, audit)::

    blob NULL, tag NULL or "empty"        EMPTY      no serde output (PostgresSaver's "empty" channel)
    tag not text, or blob not bytes       STRAY      not written by a saver (a TEXT/INTEGER blob, a BLOB tag)
    "msgpack"                             PLAINTEXT  not encrypted
    "msgpack+aesgcm" + valid v1/v2 header AESGCM     serde_kit; ``key_id`` from the header, ``bound`` for v2
    "msgpack+aes"                         LEGACY     LangGraph's EncryptedSerializer (AES-EAX)
    anything else with a "+"              UNKNOWN    other cipher, several '+', or a bad header

``problem`` says, for STRAY and UNKNOWN rows, what is wrong in one phrase.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple

from serde_kit.errors import MalformedDataError

from .blob import CIPHER_NAME, LEGACY_CIPHER_NAME, NONCE_SIZE, TAG_SIZE, VERSION, ParsedBlob, parse_blob

__all__ = ["EMPTY_TAG", "RowInfo", "RowKind", "classify_parsed", "classify_row"]

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
    """A row's kind, its inner type tag, the key id its header names, and what is wrong.

    ``bound`` is True for an AESGCM row whose (v2) header names the row identity
    it was sealed for (:mod:`~serde_kit.crypto.binding`); read from the header
    alone, so a forged one is only found by decrypting.
    """

    kind: RowKind
    inner_tag: str | None
    key_id: str | None
    problem: str | None = None
    bound: bool = False


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def classify_row(tag: Any, blob: Any) -> RowInfo:
    """Classify one stored ``(tag, blob)``; never raises, never reads past the header."""
    return _classify(tag, blob, False)[0]


def classify_parsed(tag: Any, blob: Any) -> tuple[RowInfo, ParsedBlob | None]:
    """:func:`classify_row`, and for an AESGCM row its :func:`~.blob.parse_blob` (else None).

    For tools that go on to re-encrypt the row: the parsed header is passed to
    :meth:`~serde_kit.crypto.EncryptedSerializer.reencrypt` (``parsed=``), so
    each row's header is parsed once.
    """
    return _classify(tag, blob, True)


def _classify(tag: Any, blob: Any, parse: bool) -> tuple[RowInfo, ParsedBlob | None]:
    """The classification, and (``parse`` True) the parse of an AESGCM row's blob."""
    if blob is None or tag is None or tag == EMPTY_TAG:
        return RowInfo(RowKind.EMPTY, None, None), None
    if not isinstance(tag, str):
        return RowInfo(
            RowKind.STRAY, None, None, f"type tag is {type(tag).__name__} {_show(tag)}, not text"
        ), None
    inner, plus, cipher = tag.partition("+")
    if not isinstance(blob, _BYTES):
        return RowInfo(
            RowKind.STRAY, inner, None, f"value is {type(blob).__name__} {_show(blob)}, not bytes"
        ), None
    if not plus:
        return RowInfo(RowKind.PLAINTEXT, tag, None), None
    if "+" in cipher:
        return RowInfo(RowKind.UNKNOWN, inner, None, f"type tag {_show(tag)} has more than one '+'"), None
    if cipher == LEGACY_CIPHER_NAME:
        return RowInfo(RowKind.LEGACY, inner, None), None
    if cipher != CIPHER_NAME:
        return RowInfo(RowKind.UNKNOWN, inner, None, f"type tag {_show(tag)} names an unknown cipher"), None
    if type(blob) is bytes and len(blob) > 2 and blob[0] == VERSION:
        # Fast path: a v1 header seen before (the usual case: a table holds few distinct
        # headers) is split without parsing it again; it parsed the same way then.
        end = 2 + blob[1]
        known = _SEEN_V1.get((inner, blob[:end]))
        if known is not None and len(blob) >= end + _NONCE_AND_TAG:
            info, header = known
            if not parse:
                return info, None
            view = memoryview(blob)
            return info, ParsedBlob(info.key_id or "", header, view[end : end + NONCE_SIZE], view[end + NONCE_SIZE :])
    try:
        parsed = parse_blob(blob)
    except MalformedDataError as e:
        return RowInfo(RowKind.UNKNOWN, inner, None, str(e)), None
    info = RowInfo(RowKind.AESGCM, inner, parsed.key_id, None, parsed.binding is not None)
    if parsed.binding is None and len(_SEEN_V1) < _SEEN_MAX:
        _SEEN_V1[(inner, parsed.header)] = (info, parsed.header)
    return info, parsed


#: (inner tag, v1 header) -> (RowInfo, header) of headers that parsed; bounded (tags and
#: key ids come from stored data), so a table of many distinct ones just takes the slow path.
_SEEN_V1: dict[tuple[str, bytes], tuple[RowInfo, bytes]] = {}
_SEEN_MAX = 256
_NONCE_AND_TAG = NONCE_SIZE + TAG_SIZE
