"""Read path for rows written by LangGraph's own ``EncryptedSerializer``.

``EncryptedSerializer.from_pycryptodome_aes()`` stores ``("<inner tag>+aes", blob)``
with AES in EAX mode, ``blob = nonce (16) | tag (16) | ciphertext``, under the
raw bytes of the ``LANGGRAPH_AES_KEY`` text (16, 24 or 32 bytes) and no AAD.
serde_kit only reads this format, so applications can migrate to AES-256-GCM
(``serde-kit rotate --upgrade-legacy``); it never writes it.
"""

from __future__ import annotations

from typing import Any, cast

from serde_kit._text import install_hint
from serde_kit.errors import ConfigError, DecryptionError, MalformedDataError

from .blob import LEGACY_KEY_ID, auth_failed

__all__ = ["LEGACY_NONCE_SIZE", "LEGACY_TAG_SIZE", "decrypt_legacy"]

LEGACY_NONCE_SIZE = 16
LEGACY_TAG_SIZE = 16


def _aes() -> Any:  # the Crypto.Cipher.AES module (pycryptodome ships no types)
    try:
        from Crypto.Cipher import AES
    except ImportError:
        raise ConfigError(
            "reading LangGraph '+aes' rows needs pycryptodome: " + install_hint("pycryptodome")
        ) from None
    return AES


def decrypt_legacy(blob: bytes | bytearray | memoryview, key: bytes) -> bytes:
    """Decrypt one stock ``+aes`` (AES-EAX) blob with ``key``.

    Raises :class:`~serde_kit.errors.MalformedDataError` if the blob is shorter
    than nonce + tag, :class:`~serde_kit.errors.DecryptionError` if authentication
    fails, :class:`~serde_kit.errors.ConfigError` if pycryptodome is missing.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise MalformedDataError(
            f"'+aes' blob must be bytes, got {type(blob).__name__}"
        )
    head = LEGACY_NONCE_SIZE + LEGACY_TAG_SIZE
    if len(blob) < head:
        raise MalformedDataError(
            f"'+aes' blob is {len(blob)} bytes, shorter than its {LEGACY_NONCE_SIZE}-byte "
            f"nonce and {LEGACY_TAG_SIZE}-byte tag"
        )
    AES = _aes()
    view = memoryview(blob)
    cipher = AES.new(key, AES.MODE_EAX, nonce=bytes(view[:LEGACY_NONCE_SIZE]))
    try:
        return cast(bytes, cipher.decrypt_and_verify(view[head:], view[LEGACY_NONCE_SIZE:head]))
    except ValueError:
        raise DecryptionError(auth_failed(LEGACY_KEY_ID)) from None
