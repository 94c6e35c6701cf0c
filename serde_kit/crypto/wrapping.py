"""Key wrapping (envelope encryption): how a KMS plugs into a keyring, and the wrapped entry format.

A keyring entry ``id:kms:<base64 wrapped key>`` holds a 32-byte data key
encrypted by a key that never leaves the KMS.  Any KMS plugs in through
:class:`KeyWrapper` (two methods); :class:`~serde_kit.crypto.kms.AwsKms` is the
AWS one.  This module depends on nothing else in serde_kit, so the keyring and
the KMS integrations both build on it without importing each other.
"""

from __future__ import annotations

import base64
from typing import Protocol, runtime_checkable

__all__ = ["KeyWrapper", "wrapped_entry"]


@runtime_checkable
class KeyWrapper(Protocol):
    """Wraps and unwraps data keys with a key held by a KMS.

    ``unwrap`` raises :class:`~serde_kit.errors.KeyringError` (one line, saying
    what to check) when the KMS refuses; ``key_id`` is the serde_kit key id the
    data key belongs to, to bind into the KMS call where the KMS allows.
    """

    def wrap(self, key: bytes, *, key_id: str) -> bytes: ...

    def unwrap(self, wrapped: bytes, *, key_id: str) -> bytes: ...


def wrapped_entry(key_id: str, key: bytes, kms: KeyWrapper) -> str:
    """The keyring entry ``id:kms:<base64 wrapped key>`` for ``key``, wrapped by ``kms``."""
    return f"{key_id}:kms:{base64.b64encode(kms.wrap(key, key_id=key_id)).decode('ascii')}"
