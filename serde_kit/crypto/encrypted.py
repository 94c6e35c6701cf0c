"""EncryptedSerializer: a :class:`RowCipher` around any serializer (LangGraph's ``SerializerProtocol``).

``dumps_typed`` serializes with the inner serializer, then seals the bytes under
the keyring's primary key: ``("<inner tag>+aesgcm", blob)`` (layout in
:mod:`serde_kit.crypto.blob`).  ``loads_typed`` opens the row (the key its
header names; LangGraph's stock ``+aes`` rows with the legacy key; plaintext
only with ``allow_plaintext=True``), then deserializes.  The crypto is the
:class:`~serde_kit.crypto.cipher.RowCipher`'s (tag routing, headers, plans and
caches); this class adds the inner serializer and the binding scope, as
LangGraph's ``EncryptedSerializer(cipher, serde)`` does.

Row binding (:mod:`serde_kit.crypto.binding`): inside a bound saver call,
``dumps_typed`` writes a v2 blob naming the call's thread id and namespace, and
``loads_typed`` opens a v2 blob only when it names the identity of the call;
outside one, a v2 blob is refused (:class:`~serde_kit.errors.RowBindingError`).
v1 (unbound) rows keep reading unless the scope says ``require_bound``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from os import urandom
from typing import Any, Protocol

from serde_kit._hints import allow_flags
from serde_kit.errors import DecryptionError, RowBindingError

from . import aesgcm
from .binding import SCOPE, BindingScope, RowIdentity
from .blob import CIPHER_NAME, NONCE_SIZE, ParsedBlob, blob_key_id
from .cipher import _LARGE, RowCipher
from .keyring import Keyring, load_keyring

__all__ = ["EncryptedSerializer", "SealedValue"]

#: ``SCOPE.get`` bound once: CPython 3.11 does not specialize a method load on a
#: ContextVar, so ``SCOPE.get()`` would build a bound method on every call.
_current_scope = SCOPE.get

class SealedValue:
    """A channel value routed through the serializer that a saver would otherwise keep inline.

    :class:`~serde_kit.bound_saver.BoundSaver` wraps PostgreSQL's inline
    primitives in it (``seal_inline=True``); ``dumps_typed`` serializes
    ``value`` itself, so the stored row reads back as the plain value.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"SealedValue({type(self.value).__name__})"


class _SerializerLike(Protocol):
    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...
    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


def _write_identity(scope: BindingScope) -> RowIdentity:
    identity = scope.identity
    if identity is None:
        raise RowBindingError(
            "a bound saver call without a thread id and checkpoint namespace tried to write a "
            "row; writes need both in config['configurable']"
        )
    return identity


def _default_inner() -> _SerializerLike:
    from serde_kit.serializer import Serializer

    return Serializer()


class EncryptedSerializer:
    """Encrypt another serializer's output with AES-256-GCM under a :class:`Keyring`.

    ``inner`` defaults to ``serde_kit.Serializer()``; ``keyring`` defaults to
    :func:`load_keyring` (environment).  ``allow_plaintext=True`` lets unencrypted
    rows load (for migrating an existing database); by default they raise
    :class:`~serde_kit.errors.PlaintextRefusedError`.  ``backend`` is
    ``"cryptography"`` or ``"pycryptodome"``; both write identical bytes.
    """

    def __init__(
        self,
        inner: _SerializerLike | None = None,
        keyring: Keyring | None = None,
        *,
        allow_plaintext: bool = False,
        backend: str = "cryptography",
    ) -> None:
        if isinstance(inner, Keyring):
            raise TypeError(
                "EncryptedSerializer(inner, keyring): the first argument is the inner "
                "serializer; pass the keyring as keyring=..."
            )
        if inner is None:
            inner = _default_inner()
        elif not all(callable(getattr(inner, m, None)) for m in ("dumps_typed", "loads_typed")):
            raise TypeError(
                f"inner must have dumps_typed/loads_typed, got {type(inner).__name__}"
            )
        if keyring is None:
            keyring = load_keyring()
        self._inner = inner
        self._use(RowCipher(keyring, allow_plaintext=allow_plaintext, backend=backend, rotate_flags=allow_flags(inner)))

    def _use(self, cipher: RowCipher) -> None:
        """Take ``cipher``, and the parts of it the one-frame paths read as attributes of their own."""
        self._cipher = cipher
        self._seal_plans = cipher.seal_plans
        self._open_plans = cipher.open_plans
        self._bound_headers = cipher._bound_headers
        self._encrypt = cipher.encrypt
        self._seal_large = cipher.seal_large
        self._auth_error = cipher.auth_error

    @property
    def inner(self) -> _SerializerLike:
        """The wrapped serializer."""
        return self._inner

    @property
    def cipher(self) -> RowCipher:
        """The row cipher (seals and opens the inner serializer's bytes)."""
        return self._cipher

    @property
    def keyring(self) -> Keyring:
        """The keyring (its primary encrypts)."""
        return self._cipher.keyring

    @property
    def allow_plaintext(self) -> bool:
        """Whether unencrypted rows are accepted on read."""
        return self._cipher.allow_plaintext

    @property
    def backend(self) -> str:
        """Name of the AES-GCM backend in use."""
        return self._cipher.backend

    def __repr__(self) -> str:
        return (
            f"EncryptedSerializer(inner={type(self._inner).__name__}, keyring={self.keyring!r}, "
            f"allow_plaintext={self.allow_plaintext}, backend={self.backend!r})"
        )

    # -- SerializerProtocol -----------------------------------------------------------

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Serialize with the inner serializer, then encrypt under the primary key.

        Inside a bound saver call the blob is bound to the call's row identity.
        """
        if type(obj) is SealedValue:
            obj = obj.value
        inner_tag, data = self._inner.dumps_typed(obj)
        scope = _current_scope()
        if scope is None:
            # Fast path, one frame: header, AAD and stored tag of this inner tag were
            # built (and the tag checked) by an earlier seal of the cipher.
            plan = self._seal_plans.get(inner_tag) if type(inner_tag) is str else None
            if plan is not None and type(data) is bytes:
                nonce = urandom(NONCE_SIZE)  # a fresh random nonce per row: see aesgcm
                if len(data) < _LARGE:
                    return plan[0], b"".join((plan[1], nonce, plan[3](nonce, data, plan[2])))
                return plan[0], self._seal_large(plan[1], nonce, data, plan[2])
            return self._cipher.seal(inner_tag, data)
        # Fast path: the (tag, thread, namespace) header and AAD were built before.
        known = self._bound_headers.get((inner_tag, scope.thread_id, scope.checkpoint_ns))
        if known is not None and type(data) is bytes:
            header, aad = known
            nonce = urandom(NONCE_SIZE)
            if len(data) < _LARGE:
                encrypt = self._encrypt  # a local: an instance attribute's call is not specialized
                body = encrypt(nonce, data, aad)
                return f"{inner_tag}+{CIPHER_NAME}", b"".join((header, nonce, body))
            return f"{inner_tag}+{CIPHER_NAME}", self._seal_large(header, nonce, data, aad)
        return self._cipher.seal(inner_tag, data, identity=_write_identity(scope))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decrypt (or, in migration mode, pass through) and deserialize one stored row.

        Raises :class:`~serde_kit.errors.DecryptionError`,
        :class:`~serde_kit.errors.UnknownKeyError`,
        :class:`~serde_kit.errors.PlaintextRefusedError`,
        :class:`~serde_kit.errors.RowBindingError` (bound row read for another
        thread or outside a bound call), or a
        :class:`~serde_kit.errors.DecodeError` for a malformed header or unknown tag.
        """
        tag, blob = data
        # Fast path, one frame: an unbound row whose stored tag and v1 header opened
        # before (the header is the blob's prefix: it spells its own length).
        # The AEAD decides whatever the tag's type: a str subclass that hashes and compares
        # like a known tag only opens a row sealed under that tag's AAD.
        try:
            plan = self._open_plans.get(tag)
        except TypeError:  # an unhashable tag; the cipher says UnknownTagError
            plan = None
        if plan is not None and type(blob) is bytes:
            header, nonce_at, start, min_size, inner_tag, decrypt, aad = plan
            size = len(blob)
            if blob[:nonce_at] == header and size >= min_size and _current_scope() is None:
                try:
                    if size < _LARGE:
                        plaintext = decrypt(blob[nonce_at:start], blob[start:], aad)
                    else:
                        plaintext = decrypt(blob[nonce_at:start], memoryview(blob)[start:], aad)
                except self._auth_error:
                    raise DecryptionError(aesgcm.auth_failed(blob_key_id(header))) from None
                return self._inner.loads_typed((inner_tag, plaintext))
        scope = _current_scope()
        value = self._inner.loads_typed(self._cipher.open_in_scope(tag, blob, scope, outside_ok=False))
        if scope is not None and scope.decoded is not None:
            scope.decoded[id(value)] = value  # BoundSaver tells sealed values from JSONB ones by identity
        return value

    # -- row level (used by the rotate/status tools) ----------------------------------

    # -- row level: the cipher's, kept here for callers holding the serializer ---------

    def decrypt_row(self, row: tuple[str, bytes], *, identity: RowIdentity | None = None) -> tuple[str, bytes]:
        """:meth:`RowCipher.open <serde_kit.crypto.cipher.RowCipher.open>` of ``row``."""
        tag, blob = row
        return self._cipher.open(tag, blob, identity=identity)

    def reencrypt(
        self,
        row: tuple[str, bytes],
        *,
        encrypt_plaintext: bool = False,
        upgrade_legacy: bool = False,
        bind_to: RowIdentity | None = None,
        check_inner: bool = False,
        parsed: ParsedBlob | None = None,
    ) -> tuple[str, bytes] | None:
        """:meth:`RowCipher.rekey <serde_kit.crypto.cipher.RowCipher.rekey>` of ``row``.

        ``check_inner=True`` first decodes a plaintext or legacy row with the inner
        (allowlisted) serializer, so a row it would refuse (a blocked type, a pickle
        row, garbage) raises that error instead of being laundered into a genuine
        ``+aesgcm`` row.
        """
        tag, blob = row
        if check_inner:
            opened = self._cipher.open_for_seal(
                tag, blob, encrypt_plaintext=encrypt_plaintext, upgrade_legacy=upgrade_legacy
            )
            if opened is not None:
                self._inner.loads_typed(opened)
                return self._cipher.seal(*opened, identity=bind_to)
        return self._cipher.rekey(
            tag,
            blob,
            encrypt_plaintext=encrypt_plaintext,
            upgrade_legacy=upgrade_legacy,
            identity=bind_to,
            parsed=parsed,
        )

    def rekey_many(self, rows: Iterable[tuple[Any, Any]]) -> list[tuple[str, str, bytes] | None]:
        """:meth:`RowCipher.rekey_many <serde_kit.crypto.cipher.RowCipher.rekey_many>`."""
        return self._cipher.rekey_many(rows)

    def bind_row(
        self,
        row: tuple[str, bytes],
        thread_id: str,
        checkpoint_ns: str = "",
        *,
        encrypt_plaintext: bool = False,
        upgrade_legacy: bool = False,
    ) -> tuple[str, bytes] | None:
        """Bind a stored row to its identity (and re-encrypt it under the primary).

        ``thread_id``/``checkpoint_ns`` are the row's own columns.  Returns the new
        ``(tag, blob)``, or None when the row is already bound there under the
        primary key (or is plaintext/legacy and the matching flag is off).  A row
        bound to another identity raises :class:`~serde_kit.errors.RowBindingError`.
        """
        return self.reencrypt(
            row,
            encrypt_plaintext=encrypt_plaintext,
            upgrade_legacy=upgrade_legacy,
            bind_to=RowIdentity(str(thread_id), checkpoint_ns),
        )

    def _seal_row(
        self, inner_tag: str, data: bytes, nonce: bytes, identity: RowIdentity | None = None
    ) -> tuple[str, bytes]:
        """The cipher's seal with a pinned ``nonce`` (the seam tests use)."""
        return self._cipher.seal_with_nonce(inner_tag, data, nonce, identity)

    # Pickling or deep-copying would carry key material; a shallow copy shares the keyring.
    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("EncryptedSerializer holds secret keys and cannot be pickled")

    def __copy__(self) -> EncryptedSerializer:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._use(copy.copy(self._cipher))
        return clone

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError("EncryptedSerializer holds secret keys and cannot be deep-copied")
