"""AES-256-GCM backends: pyca/cryptography (default) and pycryptodome.

Both produce the same bytes for the same key, nonce, plaintext and AAD:
``ciphertext || 16-byte tag``.

Nonces are 96 random bits from ``os.urandom`` for every sealed row:
:func:`_nonce` on the general paths (tests pin it through
``EncryptedSerializer._seal_row``), the same ``os.urandom(12)`` call inlined on
``EncryptedSerializer.dumps_typed``'s fast path.  A counter nonce (random
prefix per process + counter, NIST SP 800-38D's deterministic construction)
would save ~0.6 µs per row but repeats nonces whenever the process image is
duplicated without Python seeing a fork: ``os.register_at_fork`` covers
``os.fork``, not a VM or container snapshot restored twice (Lambda SnapStart,
CRIU, cloned VMs), while the kernel's RNG is reseeded there.  One repeated
nonce under a key reveals the GCM authentication key, so urandom stays.

Fast paths call the backends' primitives without a Python frame in between:
:meth:`Backend.encryptor`, :meth:`Backend.encryptor_into` and
:meth:`Backend.decryptor` return the callables (for ``cryptography``, the
``AESGCM`` object's own bound methods), :attr:`Backend.auth_error` is what a
decryptor raises when authentication fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from serde_kit._text import install_hint
from serde_kit.errors import ConfigError, DecryptionError

from .blob import NONCE_SIZE, TAG_SIZE, auth_failed

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# auth_failed comes from blob (the row format's module), re-exported for the backends' callers.
__all__ = ["BACKENDS", "Backend", "CryptographyBackend", "PycryptodomeBackend", "auth_failed", "make_backend"]

Buffer = bytes | bytearray | memoryview
#: ``encrypt(nonce, plaintext, aad) -> ciphertext || tag``
Encryptor = Callable[[bytes, Buffer, bytes], bytes]
#: ``encrypt_into(nonce, plaintext, aad, out)``: ``out`` is exactly ``len(plaintext) + 16`` writable bytes
EncryptorInto = Callable[[bytes, Buffer, bytes, memoryview], object]
#: ``decrypt(nonce, ciphertext || tag, aad) -> plaintext``; raises the backend's ``auth_error``
Decryptor = Callable[[Buffer, Buffer, bytes], bytes]


class _NeverRaised(Exception):
    """The ``auth_error`` of backends whose decryptors raise DecryptionError themselves."""


def _nonce() -> bytes:
    """A fresh random 96-bit nonce (the only source of randomness when sealing)."""
    return os.urandom(NONCE_SIZE)


class Backend:
    """Seal/open with AES-256-GCM under keys fetched by id through ``key_for``.

    ``key_for(key_id) -> bytes`` is called once per key id; the cipher object
    built from it is cached.
    """

    name = ""
    #: Raised by a :meth:`decryptor` when authentication fails (translate it to DecryptionError).
    auth_error: type[Exception] = _NeverRaised

    def __init__(self, key_for: Callable[[str], bytes]) -> None:
        self._key_for = key_for

    def encryptor(self, key_id: str) -> Encryptor:
        """``seal`` for ``key_id`` as one callable: ``(nonce, plaintext, aad) -> ciphertext || tag``."""

        def encrypt(nonce: bytes, plaintext: Buffer, aad: bytes) -> bytes:
            return self.seal(key_id, nonce, plaintext, aad)

        return encrypt

    def encryptor_into(self, key_id: str) -> EncryptorInto | None:
        """An encryptor writing ``ciphertext || tag`` into a caller's buffer, or None."""
        return None

    def decryptor(self, key_id: str) -> Decryptor:
        """``open`` for ``key_id`` as one callable; raises :attr:`auth_error` or DecryptionError."""

        def decrypt(nonce: Buffer, body: Buffer, aad: bytes) -> bytes:
            return self.open(key_id, nonce, body, aad)

        return decrypt

    def seal(self, key_id: str, nonce: Buffer, plaintext: Buffer, aad: bytes) -> bytes:
        """Encrypt; returns ``ciphertext || tag``."""
        raise NotImplementedError

    def open(self, key_id: str, nonce: Buffer, body: Buffer, aad: bytes) -> bytes:
        """Decrypt ``ciphertext || tag``; :class:`DecryptionError` if authentication fails."""
        raise NotImplementedError


class CryptographyBackend(Backend):
    """pyca/cryptography's ``AESGCM``, one cipher object per key id."""

    name = "cryptography"

    def __init__(self, key_for: Callable[[str], bytes]) -> None:
        super().__init__(key_for)
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aesgcm = AESGCM
        self._invalid_tag = InvalidTag
        self.auth_error = InvalidTag
        self._ciphers: dict[str, AESGCM] = {}

    def _cipher(self, key_id: str) -> AESGCM:
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            cipher = self._ciphers[key_id] = self._aesgcm(self._key_for(key_id))
        return cipher

    def seal(self, key_id: str, nonce: Buffer, plaintext: Buffer, aad: bytes) -> bytes:
        return self._cipher(key_id).encrypt(nonce, plaintext, aad)

    def open(self, key_id: str, nonce: Buffer, body: Buffer, aad: bytes) -> bytes:
        cipher = self._cipher(key_id)
        try:
            return cipher.decrypt(nonce, body, aad)
        except self._invalid_tag:
            raise DecryptionError(auth_failed(key_id)) from None

    def encryptor(self, key_id: str) -> Encryptor:
        return self._cipher(key_id).encrypt

    def encryptor_into(self, key_id: str) -> EncryptorInto | None:
        # AESGCM.encrypt_into is in recent cryptography releases only (feature-detected);
        # without it the large-row path encrypts to a new buffer and copies once.
        into: EncryptorInto | None = getattr(self._cipher(key_id), "encrypt_into", None)
        return into

    def decryptor(self, key_id: str) -> Decryptor:
        return self._cipher(key_id).decrypt


class PycryptodomeBackend(Backend):
    """pycryptodome's ``AES.MODE_GCM`` (12-byte nonce, 16-byte tag).

    pycryptodome's GCM objects are single-use, so only the key is cached.
    """

    name = "pycryptodome"

    def __init__(self, key_for: Callable[[str], bytes]) -> None:
        super().__init__(key_for)
        try:
            from Crypto.Cipher import AES
        except ImportError:
            raise ConfigError(
                "backend='pycryptodome' needs pycryptodome: " + install_hint("pycryptodome")
            ) from None
        self._aes = AES
        self._keys: dict[str, bytes] = {}

    def _new(self, key_id: str, nonce: Buffer) -> Any:  # pycryptodome's GcmMode, untyped
        key = self._keys.get(key_id)
        if key is None:
            key = self._keys[key_id] = self._key_for(key_id)
        return self._aes.new(key, self._aes.MODE_GCM, nonce=bytes(nonce), mac_len=TAG_SIZE)

    def seal(self, key_id: str, nonce: Buffer, plaintext: Buffer, aad: bytes) -> bytes:
        cipher = self._new(key_id, nonce)
        cipher.update(aad)
        ciphertext, tag = cipher.encrypt_and_digest(plaintext)
        return cast(bytes, ciphertext + tag)

    def open(self, key_id: str, nonce: Buffer, body: Buffer, aad: bytes) -> bytes:
        cipher = self._new(key_id, nonce)
        cipher.update(aad)
        split = len(body) - TAG_SIZE
        try:
            return cast(bytes, cipher.decrypt_and_verify(body[:split], body[split:]))
        except ValueError:
            raise DecryptionError(auth_failed(key_id)) from None


BACKENDS: dict[str, type[Backend]] = {
    CryptographyBackend.name: CryptographyBackend,
    PycryptodomeBackend.name: PycryptodomeBackend,
}


def make_backend(name: str, key_for: Callable[[str], bytes]) -> Backend:
    """The backend called ``name``; :class:`ConfigError` for an unknown name."""
    cls = BACKENDS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ConfigError(
            f"unknown crypto backend {name!r}; use one of {sorted(BACKENDS)}"
        )
    return cls(key_for)
