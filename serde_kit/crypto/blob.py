"""The v1 blob layout and the stored type tag.

A row written by :class:`~serde_kit.crypto.EncryptedSerializer` is stored as
``("<inner tag>+aesgcm", blob)`` where ``blob`` is::

    0x01 | key-id length (1 byte, 1..64) | key id (ASCII) | nonce (12) | ciphertext | GCM tag (16)

The header (version, length, key id) is public: tools read it to tell which key
a row needs without decrypting.  It is authenticated through the AAD::

    b"serde_kit/aesgcm/v1\\x00" + inner_tag + b"\\x00" + header

so relabelling a row's tag or editing its key id makes decryption fail.

A *bound* row (sealed inside a :mod:`row binding <serde_kit.crypto.binding>`
scope) has a v2 header that also names the row's identity::

    0x02 | key-id length | key id | thread-id length (2 bytes, big-endian) | thread id (UTF-8)
         | namespace length (2 bytes, big-endian) | checkpoint namespace (UTF-8)

followed by the same nonce, ciphertext and tag.  The identity is public (the
saver stores thread id and namespace in the row's own columns); putting it in the
header makes the AAD cover it, so a bound blob copied to another thread no
longer matches, and lets offline tools keep the binding when they re-encrypt.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from serde_kit.errors import MalformedDataError

from .binding import RowIdentity

__all__ = [
    "LEGACY_KEY_ID",
    "auth_failed",
    "AAD_PREFIX",
    "BOUND_VERSION",
    "CIPHER_NAME",
    "LEGACY_CIPHER_NAME",
    "MAX_KEY_ID_LEN",
    "NONCE_SIZE",
    "TAG_SIZE",
    "VERSION",
    "ParsedBlob",
    "blob_binding",
    "blob_key_id",
    "build_bound_header",
    "build_header",
    "check_key_id",
    "make_aad",
    "parse_blob",
]

CIPHER_NAME = "aesgcm"
LEGACY_CIPHER_NAME = "aes"
VERSION = 1
BOUND_VERSION = 2
MAX_IDENTITY_PART = 0xFFFF
NONCE_SIZE = 12
TAG_SIZE = 16
MAX_KEY_ID_LEN = 64
AAD_PREFIX = b"serde_kit/aesgcm/v1\x00"

_KEY_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_KEY_ID_BYTES_RE = re.compile(rb"[A-Za-z0-9._-]{1,64}")
_VERSION_BYTE = bytes((VERSION,))


class ParsedBlob(NamedTuple):
    """A blob split into its parts; ``body`` is ciphertext followed by the GCM tag.

    ``binding`` is the row identity of a bound (v2) blob, None for a v1 blob.
    """

    key_id: str
    header: bytes
    nonce: memoryview
    body: memoryview
    binding: RowIdentity | None = None


def check_key_id(key_id: object) -> bool:
    """True when ``key_id`` is a valid key id: 1..64 characters from ``[A-Za-z0-9._-]``."""
    return isinstance(key_id, str) and _KEY_ID_RE.fullmatch(key_id) is not None


def build_header(key_id: str) -> bytes:
    """The v1 header naming ``key_id``; ``ValueError`` if the id is not valid."""
    if not check_key_id(key_id):
        raise ValueError("key id must be 1..64 characters from [A-Za-z0-9._-]")
    raw = key_id.encode("ascii")
    return _VERSION_BYTE + bytes((len(raw),)) + raw


def _identity_part(value: str, what: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str to bind a row, got {type(value).__name__}")
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_IDENTITY_PART:
        raise ValueError(f"{what} is longer than {MAX_IDENTITY_PART} bytes; cannot bind the row")
    return len(raw).to_bytes(2, "big") + raw


def build_bound_header(key_id: str, identity: RowIdentity) -> bytes:
    """The v2 header naming ``key_id`` and the row ``identity``; ``ValueError`` if invalid."""
    thread_id, checkpoint_ns = identity
    return (
        bytes((BOUND_VERSION,))
        + build_header(key_id)[1:]
        + _identity_part(thread_id, "thread id")
        + _identity_part(checkpoint_ns, "checkpoint namespace")
    )


def make_aad(inner_tag: str, header: bytes) -> bytes:
    """The associated data binding the inner type tag and the header to the ciphertext."""
    # surrogatepass: any str gets a deterministic encoding, so a garbled tag read
    # from storage fails authentication instead of raising UnicodeEncodeError.
    return AAD_PREFIX + inner_tag.encode("utf-8", "surrogatepass") + b"\x00" + header


def _split_header(
    blob: bytes | bytearray | memoryview,
) -> tuple[str, int, RowIdentity | None]:
    """Return ``(key_id, header_length, binding)``; :class:`MalformedDataError` if not a header."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise MalformedDataError(
            f"encrypted blob must be bytes, got {type(blob).__name__}; "
            "the row is not one serde_kit wrote"
        )
    size = len(blob)
    if size < 2:
        raise MalformedDataError(
            f"encrypted blob is {size} bytes, too short for a serde_kit v1 header"
        )
    version = blob[0]
    if version != VERSION and version != BOUND_VERSION:
        raise MalformedDataError(
            f"encrypted blob has format version {version}, this serde_kit reads versions "
            f"{VERSION} and {BOUND_VERSION}; upgrade serde_kit or check that the row was "
            "written by serde_kit"
        )
    id_len = blob[1]
    if not 1 <= id_len <= MAX_KEY_ID_LEN:
        raise MalformedDataError(
            f"encrypted blob header gives a key id length of {id_len} (must be 1..{MAX_KEY_ID_LEN})"
        )
    end = 2 + id_len
    if size < end:
        raise MalformedDataError("encrypted blob is truncated inside its key id")
    raw_id = bytes(blob[2:end])
    if _KEY_ID_BYTES_RE.fullmatch(raw_id) is None:
        raise MalformedDataError(
            "encrypted blob header holds a key id with characters outside [A-Za-z0-9._-]"
        )
    if version == VERSION:
        return raw_id.decode("ascii"), end, None
    thread_id, end = _read_part(blob, end, "thread id")
    checkpoint_ns, end = _read_part(blob, end, "checkpoint namespace")
    return raw_id.decode("ascii"), end, RowIdentity(thread_id, checkpoint_ns)


def _read_part(blob: bytes | bytearray | memoryview, start: int, what: str) -> tuple[str, int]:
    if len(blob) < start + 2:
        raise MalformedDataError(f"bound blob is truncated before its {what}")
    end = start + 2 + int.from_bytes(blob[start : start + 2], "big")
    if len(blob) < end:
        raise MalformedDataError(f"bound blob is truncated inside its {what}")
    try:
        return bytes(blob[start + 2 : end]).decode("utf-8", "surrogatepass"), end
    except UnicodeDecodeError:
        raise MalformedDataError(f"bound blob header holds a {what} that is not UTF-8") from None


def blob_key_id(blob: bytes | bytearray | memoryview) -> str:
    """The key id named in a blob's header, read without decrypting.

    Raises :class:`~serde_kit.errors.MalformedDataError` if ``blob`` does not
    start with a valid v1 or v2 header.
    """
    return _split_header(blob)[0]


def blob_binding(blob: bytes | bytearray | memoryview) -> RowIdentity | None:
    """The row identity a bound (v2) blob names, or None for an unbound (v1) blob.

    Read without decrypting, so not yet authenticated; raises
    :class:`~serde_kit.errors.MalformedDataError` for an invalid header.
    """
    return _split_header(blob)[2]


def parse_blob(blob: bytes | bytearray | memoryview) -> ParsedBlob:
    """Split a blob into key id, header, nonce, body and binding, without decrypting.

    Raises :class:`~serde_kit.errors.MalformedDataError` when the header is
    invalid or the blob is too short to hold a nonce and a GCM tag.
    """
    key_id, end, binding = _split_header(blob)
    if len(blob) < end + NONCE_SIZE + TAG_SIZE:
        raise MalformedDataError(
            f"encrypted blob is {len(blob)} bytes, too short for its header, "
            f"a {NONCE_SIZE}-byte nonce and a {TAG_SIZE}-byte tag"
        )
    view = memoryview(blob)
    header = bytes(view[:end])
    return ParsedBlob(
        key_id, header, view[end : end + NONCE_SIZE], view[end + NONCE_SIZE :], binding
    )


#: The key id reported for rows of LangGraph's own EncryptedSerializer (AES-EAX, key from LANGGRAPH_AES_KEY).
LEGACY_KEY_ID = "legacy:LANGGRAPH_AES_KEY"


def auth_failed(key_id: str) -> str:
    """DecryptionError's message: which key id failed (ids are public), and nothing about why."""
    return (
        f"authentication failed under key id {key_id!r}: the keyring's key for that id is not the one "
        "the row was sealed with, or the row was altered or relabelled"
    )
