"""RowCipher: AES-256-GCM on stored rows as bytes, under a :class:`Keyring`.

The crypto half of :class:`~serde_kit.crypto.EncryptedSerializer`, usable on its
own: the tools (status, verify, inspect, rotate) drive it directly, the way
LangGraph's ``EncryptedSerializer(cipher, serde)`` wraps a ``CipherProtocol``
and Tink's AEAD wrapper wraps its primitive. It never deserializes: every
method takes and returns ``(tag, bytes)``.

- :meth:`RowCipher.open` ``(tag, blob) -> (inner_tag, data)``
- :meth:`RowCipher.seal` ``(inner_tag, data) -> (tag, blob)`` under the primary
- :meth:`RowCipher.rekey` ``(tag, blob) -> (tag, blob) | None``: re-encrypt under the primary
- :meth:`RowCipher.rekey_many`: key rotation of unbound rows, many at a time
- :meth:`RowCipher.open_for_seal`: the inner bytes of a plaintext or LangGraph ``+aes`` row
  that a first seal would seal (rotation checks them, then calls :meth:`seal`)

Tag routing on read::

    "msgpack"           plaintext  -> PlaintextRefusedError unless allow_plaintext
    "msgpack+aesgcm"    serde_kit  -> decrypt with the key named in the header
    "msgpack+aes"       LangGraph  -> decrypt with keyring.legacy_key (AES-EAX)
    "msgpack+other", "a+b+c", non-str tag -> UnknownTagError (a DecodeError):
                        the tag itself is not one we know; no key could help.

The plans and caches (headers, AADs, per-tag open/seal plans, rekey plans) are
bounded: tags and headers on the read path come from storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from io import BytesIO
from os import urandom
from typing import Any

from serde_kit.errors import (
    EncodeError,
    MalformedDataError,
    PlaintextRefusedError,
    RowBindingError,
    SerdeError,
    UnknownKeyError,
    UnknownTagError,
)

from . import aesgcm
from .binding import SCOPE, BindingScope, RowIdentity
from .blob import (
    BOUND_VERSION,
    CIPHER_NAME,
    LEGACY_CIPHER_NAME,
    NONCE_SIZE,
    TAG_SIZE,
    VERSION,
    ParsedBlob,
    build_bound_header,
    build_header,
    make_aad,
    parse_blob,
)
from .keyring import ENV_VAR, FILE_ENV_VAR, LEGACY_ENV_VAR, LEGACY_KEY_ID, Keyring
from .legacy import decrypt_legacy
from .secret import detached

__all__ = ["RowCipher"]

_PLAINTEXT, _AESGCM, _LEGACY, _UNKNOWN = "plaintext", CIPHER_NAME, "legacy", "unknown"
#: The tag PostgresSaver/InMemorySaver store for "no value"; never encrypted.
_EMPTY_TAG = "empty"
_AAD_CACHE_MAX = 256
_BOUND_HEADER_CACHE_MAX = 1024
#: Routes of stored tags seen before (tags come from storage: bounded).
_ROUTE_CACHE_MAX = 256
#: Rows from this size on are sealed straight into their output buffer and opened
#: from a memoryview of the blob: no copy of the body (copies cost more than the
#: extra objects from here on).
_LARGE = 1 << 14

_MOVED = (
    "row is bound to a different thread or checkpoint namespace than the one being read "
    "(it was copied or moved there); refusing it"
)
_OUTSIDE = (
    "row is bound to its thread and can only be read through a bound saver: wrap the saver "
    "with serde_kit.bound_saver.bind_rows(saver) (or read inside "
    "serde_kit.crypto.binding.row_scope(thread_id, ns))"
)
_UNBOUND = (
    "row is not bound to its thread and this saver requires bound rows (require_bound=True); "
    "bind stored rows with `serde-kit rotate` or turn require_bound off while migrating"
)

_NONCE_AND_TAG = NONCE_SIZE + TAG_SIZE
#: (v1 header, offset of the nonce, of the body, smallest well-formed size, inner tag,
#: decryptor, AAD)
_OpenPlan = tuple[bytes, int, int, int, str, aesgcm.Decryptor, bytes]
#: (old key id, decryptor, old AAD, new stored tag, primary header, new AAD, encryptor)
_RekeyPlan = tuple[str, aesgcm.Decryptor, bytes, str, bytes, bytes, aesgcm.Encryptor]


def _show(tag: str) -> str:
    """A tag for an error message: tags come from storage, so keep them short."""
    return repr(tag) if len(tag) <= 60 else repr(tag[:60]) + "..."


_ROUTES: dict[str, tuple[str, str]] = {}


def _route(tag: object) -> tuple[str, str]:
    """``(kind, inner_tag)`` for a stored tag; :class:`UnknownTagError` if it is not ours."""
    if type(tag) is str:
        known = _ROUTES.get(tag)
        if known is not None:
            return known
        route = _parse_route(tag)
        if len(_ROUTES) < _ROUTE_CACHE_MAX:
            _ROUTES[tag] = route
        return route
    return _parse_route(tag)


def _parse_route(tag: object) -> tuple[str, str]:
    if not isinstance(tag, str):
        raise UnknownTagError(f"type tag must be a str, got {type(tag).__name__}")
    inner, plus, cipher = tag.partition("+")
    if not plus:
        return _PLAINTEXT, tag
    if "+" in cipher:
        raise UnknownTagError(
            f"type tag {_show(tag)} has more than one '+'; "
            f"encrypted tags are '<inner tag>+{CIPHER_NAME}'"
        )
    if cipher == CIPHER_NAME:
        return _AESGCM, inner
    if cipher == LEGACY_CIPHER_NAME:
        return _LEGACY, inner
    raise UnknownTagError(
        f"type tag {_show(tag)} names cipher {_show(cipher)}; serde_kit reads {CIPHER_NAME!r} "
        f"and LangGraph's {LEGACY_CIPHER_NAME!r}"
    )


class RowCipher:
    """Open, seal and re-encrypt stored ``(tag, bytes)`` rows under a :class:`Keyring`.

    The keyring's primary seals; every key of the keyring (and its legacy key, for
    LangGraph's ``+aes`` rows) opens.  ``allow_plaintext=True`` lets :meth:`open`
    pass unencrypted rows through; by default they raise
    :class:`~serde_kit.errors.PlaintextRefusedError`.  ``backend`` is
    ``"cryptography"`` or ``"pycryptodome"``; both write identical bytes.
    """

    def __init__(
        self,
        keyring: Keyring,
        *,
        allow_plaintext: bool = False,
        backend: str = "cryptography",
        rotate_flags: str = "",
    ) -> None:
        if not isinstance(keyring, Keyring):
            raise TypeError(f"keyring must be a Keyring, got {type(keyring).__name__}")
        self._keyring = keyring
        self._allow_plaintext = bool(allow_plaintext)
        #: appended to the rotate command a plaintext refusal suggests (the app's --allow flags)
        self._rotate_flags = rotate_flags
        self._backend = aesgcm.make_backend(backend, keyring.key)
        self._primary = keyring.primary_id
        self._primary_header = build_header(self._primary)
        self._aad_cache: dict[tuple[str, bytes], bytes] = {}
        self._opened: dict[tuple[str, bytes], tuple[str, bytes]] = {}
        self._bound_headers: dict[tuple[str, str | None, str | None], tuple[bytes, bytes]] = {}
        self._opened_bound: dict[tuple[str, bytes], tuple[str, bytes, RowIdentity]] = {}
        # The fast paths' plans, each built once from validated parts (EncryptedSerializer's
        # one-frame dumps_typed/loads_typed read the first two):
        #: inner tag -> (stored tag, v1 header, AAD, encryptor) for unbound rows under the primary;
        self.seal_plans: dict[str, tuple[str, bytes, bytes, aesgcm.Encryptor]] = {}
        #: stored tag -> (v1 header, offsets of the nonce and the body, inner tag, decryptor,
        #: AAD) for a header that authenticated (or that we wrote) under a key of the keyring.
        self.open_plans: dict[str, _OpenPlan] = {}
        # (stored tag, v1 header) -> (old key id, decryptor, old AAD, new stored tag, primary
        # header, new AAD, encryptor): key rotation of unbound rows (rekey_many), built by
        # rekey from a row under that header that authenticated and was resealed.
        self._rekey_plans: dict[tuple[str, bytes], _RekeyPlan] = {}
        #: The primary's AES-GCM seal ``(nonce, data, aad) -> ciphertext || tag``.
        self.encrypt = self._backend.encryptor(self._primary)
        self._encrypt_into = self._backend.encryptor_into(self._primary)
        #: What the backend raises when a row does not authenticate.
        self.auth_error = self._backend.auth_error

    @property
    def keyring(self) -> Keyring:
        """The keyring (its primary seals)."""
        return self._keyring

    @property
    def allow_plaintext(self) -> bool:
        """Whether :meth:`open` passes unencrypted rows through."""
        return self._allow_plaintext

    @property
    def backend(self) -> str:
        """Name of the AES-GCM backend in use."""
        return self._backend.name

    def __repr__(self) -> str:
        return (
            f"RowCipher(keyring={self._keyring!r}, allow_plaintext={self._allow_plaintext}, "
            f"backend={self._backend.name!r})"
        )

    # -- rows ---------------------------------------------------------------------------

    def seal(self, inner_tag: str, data: aesgcm.Buffer, *, identity: RowIdentity | None = None) -> tuple[str, bytes]:
        """``("<inner_tag>+aesgcm", blob)``: ``data`` sealed under the primary with a fresh nonce.

        With ``identity`` the blob is bound to that thread id and namespace (v2 header).
        Raises :class:`~serde_kit.errors.EncodeError` for a tag with '+' or data that is not bytes.
        """
        return self.seal_with_nonce(inner_tag, data, aesgcm._nonce(), identity)

    def open(self, tag: Any, blob: Any, *, identity: RowIdentity | None = None) -> tuple[str, bytes]:
        """Decrypt one row to ``(inner_tag, inner_bytes)`` without deserializing.

        For offline tools: a bound row is checked against ``identity`` when one
        is given (the row's thread id and namespace, read from its table) and
        against the binding scope when called inside one; otherwise it is
        decrypted whatever thread it names.  Plaintext rows pass through only
        when ``allow_plaintext`` is on.
        """
        scope = SCOPE.get()
        if scope is None and identity is not None:
            scope = BindingScope(identity.thread_id, identity.checkpoint_ns)
        return self.open_in_scope(tag, blob, scope, outside_ok=True)

    def open_in_scope(
        self, tag: Any, blob: Any, scope: BindingScope | None, *, outside_ok: bool
    ) -> tuple[str, bytes]:
        """:meth:`open` with the binding ``scope`` given: a bound row must match it, and
        outside one (``scope`` None) is refused unless ``outside_ok``."""
        kind, inner_tag = _route(tag)
        if kind == _AESGCM:
            if type(blob) is bytes and len(blob) > 2 and blob[0] == VERSION:
                if scope is not None and scope.require_bound:
                    raise RowBindingError(_UNBOUND)
                return inner_tag, self._open(inner_tag, blob)
            return inner_tag, self._open_checked(inner_tag, blob, scope, outside_ok)
        if scope is not None and scope.require_bound:
            raise RowBindingError(_UNBOUND)
        if kind == _LEGACY:
            return inner_tag, self._open_legacy(tag, blob)
        if not self._allow_plaintext:
            raise PlaintextRefusedError(
                f"row with type tag {_show(tag)} is not encrypted; encryption is required. If this "
                "database predates encryption, read it with "
                "EncryptedSerializer(..., allow_plaintext=True) and encrypt the old rows with "
                f"`serde-kit rotate --db URL --encrypt-plaintext --apply{self._rotate_flags}`"
            )
        return tag, blob

    def open_for_seal(
        self, tag: Any, blob: Any, *, encrypt_plaintext: bool = False, upgrade_legacy: bool = False
    ) -> tuple[str, bytes] | None:
        """``(inner_tag, data)`` of a row a first seal would seal, else None.

        A plaintext row (with ``encrypt_plaintext``; never the savers' ``"empty"``
        marker) gives its own bytes; a LangGraph ``+aes`` row (with
        ``upgrade_legacy``) its decrypted bytes; anything else, None. What
        :meth:`rekey` seals for such a row: a caller that must check the bytes
        first (rotation decodes them with the application's allowlist) calls
        this, checks, then :meth:`seal`.
        """
        kind, inner_tag = _route(tag)
        if kind == _AESGCM:
            return None
        return self._first_seal_bytes(kind, tag, blob, inner_tag, encrypt_plaintext, upgrade_legacy)

    def _first_seal_bytes(
        self, kind: str, tag: Any, blob: Any, inner_tag: str, encrypt_plaintext: bool, upgrade_legacy: bool
    ) -> tuple[str, bytes] | None:
        if kind == _LEGACY:
            return (inner_tag, self._open_legacy(tag, blob)) if upgrade_legacy else None
        if not encrypt_plaintext or tag == _EMPTY_TAG:
            return None
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise MalformedDataError(f"plaintext row with tag {_show(tag)} holds {type(blob).__name__}, not bytes")
        return inner_tag, blob if type(blob) is bytes else bytes(blob)

    def rekey(
        self,
        tag: Any,
        blob: Any,
        *,
        encrypt_plaintext: bool = False,
        upgrade_legacy: bool = False,
        identity: RowIdentity | None = None,
        parsed: ParsedBlob | None = None,
    ) -> tuple[str, bytes] | None:
        """Re-encrypt one row under the primary key; None when there is nothing to do.

        Nothing to do: the header already names the primary key (decided without
        decrypting) and the binding is as asked, or the row is plaintext /
        LangGraph ``+aes`` and the matching flag is off.  Otherwise the row is
        decrypted to bytes (the inner bytes are never deserialized) and sealed
        under the primary with a fresh nonce.  A bound row keeps its binding.
        ``identity`` (the row's thread id and namespace, from its table) binds an
        unbound row; a row already bound elsewhere raises
        :class:`~serde_kit.errors.RowBindingError` and is left as it is.
        ``parsed`` is ``parse_blob(blob)`` when the caller already has it
        (:func:`~serde_kit.crypto.rows.classify_parsed`), so the header is
        parsed once; one whose header does not start ``blob`` is ignored.
        """
        kind, inner_tag = _route(tag)
        bind_to = identity
        if kind == _AESGCM:
            parsed = self._same_parse(parsed, blob)
            if parsed.binding is not None:
                if bind_to is not None and tuple(bind_to) != tuple(parsed.binding):
                    raise RowBindingError(_MOVED)
                identity = parsed.binding
            if parsed.key_id == self._primary and parsed.binding == identity:
                return None
            if parsed.binding is not None:
                data = self._open_checked(inner_tag, blob, BindingScope(*parsed.binding), outside_ok=False)
            else:
                data = self._open(inner_tag, blob)
                if identity is None:
                    sealed = self.seal_with_nonce(inner_tag, data, aesgcm._nonce())
                    self._remember_rekey(tag, inner_tag, parsed)
                    return sealed
            return self.seal_with_nonce(inner_tag, data, aesgcm._nonce(), identity)
        opened = self._first_seal_bytes(kind, tag, blob, inner_tag, encrypt_plaintext, upgrade_legacy)
        if opened is None:
            return None
        return self.seal_with_nonce(inner_tag, opened[1], aesgcm._nonce(), identity)

    @staticmethod
    def _same_parse(parsed: ParsedBlob | None, blob: Any) -> ParsedBlob:
        """``parsed`` if it is the parse of ``blob`` (its header starts it, same length), else ``parse_blob(blob)``.

        For :meth:`rekey`: the header decides whether a row is skipped and
        which binding it keeps, so a stale or foreign parse is never trusted; the
        bytes opened are always ``blob``'s own.
        """
        if (
            parsed is not None
            and type(blob) is bytes
            and blob.startswith(parsed.header)
            and len(blob) == len(parsed.header) + len(parsed.nonce) + len(parsed.body)
        ):
            return parsed
        return parse_blob(blob)

    def rekey_many(self, rows: Iterable[tuple[Any, Any]]) -> list[tuple[str, str, bytes] | None]:
        """Key rotation of unbound rows, many at a time: for each ``(tag, blob)``, ``(old key id, new tag, new blob)``.

        What :meth:`rekey` returns for an unbound v1 row under a key that is
        not the primary (decrypted, sealed under the primary with a fresh
        ``os.urandom`` nonce, still unbound), for rows whose stored tag and
        header :meth:`rekey` already re-encrypted once: the plan it kept
        (keys, AADs, headers) is reused, one Python frame for the whole list.
        Every other row, and any row that does not open, gives None: pass it
        to :meth:`rekey`, which decides (and raises) as always.  For the
        rotate tool, which walks rows by the thousand.
        """
        plans = self._rekey_plans
        if not plans:
            return [None for _ in rows]
        get = plans.get
        auth_error = self.auth_error
        out: list[tuple[str, str, bytes] | None] = []
        append = out.append
        for tag, blob in rows:
            plan = None
            end = start = 0
            if type(blob) is bytes and len(blob) > 2 and blob[0] == VERSION:
                end = 2 + blob[1]
                start = end + NONCE_SIZE
                size = len(blob)
                if start + TAG_SIZE <= size < _LARGE:
                    try:
                        plan = get((tag, blob[:end]))
                    except TypeError:  # an unhashable tag: rekey says UnknownTagError
                        plan = None
            if plan is None:
                append(None)
                continue
            key_id, decrypt, old_aad, new_tag, header, new_aad, encrypt = plan
            try:
                data = decrypt(blob[end:start], blob[start:], old_aad)
            except (auth_error, SerdeError):
                append(None)  # rekey raises the error the row deserves
                continue
            nonce = urandom(NONCE_SIZE)  # a fresh random nonce per row: see aesgcm
            append((key_id, new_tag, b"".join((header, nonce, encrypt(nonce, data, new_aad)))))
        return out

    def _remember_rekey(self, tag: Any, inner_tag: str, parsed: ParsedBlob) -> None:
        """Keep :meth:`rekey_many`'s plan for rows stored as ``tag`` under ``parsed``'s v1 header.

        Called after such a row authenticated and was resealed; the primary's own
        header gets none (its rows need nothing), nor does a tag that is not a plain str.
        """
        if (
            type(tag) is not str
            or parsed.binding is not None
            or parsed.key_id == self._primary
            or len(self._rekey_plans) >= _AAD_CACHE_MAX
        ):
            return
        header = self._primary_header
        self._rekey_plans[(tag, parsed.header)] = (
            parsed.key_id,
            self._backend.decryptor(parsed.key_id),
            self._aad(inner_tag, parsed.header),
            f"{inner_tag}+{CIPHER_NAME}",
            header,
            self._aad(inner_tag, header),
            self.encrypt,
        )

    # -- internals --------------------------------------------------------------------

    def _aad(self, inner_tag: str, header: bytes) -> bytes:
        key = (inner_tag, header)
        aad = self._aad_cache.get(key)
        if aad is None:
            aad = make_aad(inner_tag, header)
            # Tags on the read path come from stored data: bound the cache.
            if len(self._aad_cache) < _AAD_CACHE_MAX:
                self._aad_cache[key] = aad
        return aad

    def seal_with_nonce(
        self, inner_tag: str, data: Any, nonce: bytes, identity: RowIdentity | None = None
    ) -> tuple[str, bytes]:
        """:meth:`seal` with ``nonce`` (the seam tests pin to compare with known bytes).

        With ``identity`` the blob is bound (v2 header).
        """
        if not isinstance(inner_tag, str) or "+" in inner_tag:
            raise EncodeError(
                f"inner serializer returned type tag {inner_tag!r}; tags must be str without '+' "
                "to be encrypted"
            )
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise EncodeError(
                f"inner serializer returned {type(data).__name__} for tag {inner_tag!r}, not bytes"
            )
        stored_tag = f"{inner_tag}+{CIPHER_NAME}"
        if identity is None:
            header = self._primary_header
            aad = self._aad(inner_tag, header)
            if type(inner_tag) is str and len(self.seal_plans) < _AAD_CACHE_MAX:
                self.seal_plans[inner_tag] = (stored_tag, header, aad, self.encrypt)
                # The primary's header takes the read plan: the rows we write are read back.
                known = self.open_plans.get(stored_tag)
                if known is None or known[0] is not header:
                    self.open_plans[stored_tag] = self._open_plan(
                        inner_tag, header, self._primary, aad
                    )
        else:
            header, aad = self._bound_header(inner_tag, identity)
        if not isinstance(data, memoryview) and len(data) >= _LARGE:  # len counts bytes here
            return stored_tag, self.seal_large(header, bytes(nonce), data, aad)
        body = self._backend.seal(self._primary, nonce, data, aad)
        return stored_tag, b"".join((header, nonce, body))

    def _open_plan(
        self, inner_tag: str, header: bytes, key_id: str, aad: bytes
    ) -> _OpenPlan:
        """loads_typed's plan for rows of ``inner_tag`` under this (authenticated) v1 header."""
        n = len(header)
        decrypt = self._backend.decryptor(key_id)
        return (header, n, n + NONCE_SIZE, n + _NONCE_AND_TAG, inner_tag, decrypt, aad)

    def seal_large(self, header: bytes, nonce: bytes, data: aesgcm.Buffer, aad: bytes) -> bytes:
        """``header || nonce || ciphertext || tag`` under the primary, the ciphertext written in place.

        The output's bytes object is the BytesIO's own buffer (``getvalue`` of an
        exactly filled BytesIO returns it without a copy), so a large row is one
        fresh buffer, as raw ``AESGCM.encrypt`` is, instead of encrypt + join.
        """
        into = self._encrypt_into
        if into is None:
            return b"".join((header, nonce, self.encrypt(nonce, data, aad)))
        start = len(header) + NONCE_SIZE
        out = BytesIO(bytes(start + len(data) + TAG_SIZE))
        with out.getbuffer() as view:
            view[: len(header)] = header
            view[len(header) : start] = nonce
            with view[start:] as body:
                into(nonce, data, aad, body)
        return out.getvalue()

    def _bound_header(self, inner_tag: str, identity: RowIdentity) -> tuple[bytes, bytes]:
        """The v2 header and AAD for ``identity`` under the primary (cached, bounded)."""
        key = (inner_tag, identity[0], identity[1])
        known = self._bound_headers.get(key)
        if known is None:
            try:
                header = build_bound_header(self._primary, identity)
            except ValueError as e:
                raise EncodeError(str(e)) from None
            known = (header, make_aad(inner_tag, header))
            if len(self._bound_headers) >= _BOUND_HEADER_CACHE_MAX:
                self._bound_headers.clear()
            self._bound_headers[key] = known
        return known

    @staticmethod
    def _check_scope(
        binding: RowIdentity | None, scope: BindingScope | None, outside_ok: bool
    ) -> None:
        if binding is None:
            if scope is not None and scope.require_bound:
                raise RowBindingError(_UNBOUND)
        elif scope is None:
            if not outside_ok:
                raise RowBindingError(_OUTSIDE)
        elif not scope.admits(binding):
            raise RowBindingError(_MOVED)

    def _open_checked(
        self, inner_tag: str, blob: bytes, scope: BindingScope | None, outside_ok: bool
    ) -> bytes:
        """Open a blob that may be bound, checking its identity against ``scope``."""
        binding: RowIdentity | None  # the cached fast path's is known; a parsed blob's may be unbound
        if type(blob) is bytes and len(blob) > 2 and blob[0] == BOUND_VERSION:
            # Fast path: a v2 header (tag, key id, identity) that authenticated before.
            size = len(blob)
            end = 2 + blob[1]
            if size >= end + 2:
                end += 2 + ((blob[end] << 8) | blob[end + 1])
                if size >= end + 2:
                    end += 2 + ((blob[end] << 8) | blob[end + 1])
                    known = self._opened_bound.get((inner_tag, blob[:end]))
                    if known is not None and size >= end + _NONCE_AND_TAG:
                        key_id, aad, binding = known
                        self._check_scope(binding, scope, outside_ok)
                        nonce_end = end + NONCE_SIZE
                        body = blob[nonce_end:] if size < _LARGE else memoryview(blob)[nonce_end:]
                        plaintext = self._backend.open(key_id, blob[end:nonce_end], body, aad)
                        if scope is not None and scope.seen is not None:
                            scope.seen.append(binding)
                        return plaintext
        parsed = parse_blob(blob)
        binding = parsed.binding
        self._check_scope(binding, scope, outside_ok)
        if parsed.key_id not in self._keyring:
            raise UnknownKeyError(
                f"row is encrypted under key id {parsed.key_id!r}, which is not in the keyring "
                f"(it has {self._keyring.ids}); add that key to {ENV_VAR} or {FILE_ENV_VAR}",
                key_id=parsed.key_id,
            )
        aad = make_aad(inner_tag, parsed.header)
        plaintext = self._backend.open(parsed.key_id, parsed.nonce, parsed.body, aad)
        if binding is not None:
            # Remember only headers that authenticated, under keys we hold: bounded.
            if len(self._opened_bound) >= _BOUND_HEADER_CACHE_MAX:
                self._opened_bound.clear()
            self._opened_bound[(inner_tag, parsed.header)] = (parsed.key_id, aad, binding)
            if scope is not None and scope.seen is not None:
                scope.seen.append(binding)
        return plaintext

    def _open(self, inner_tag: str, blob: bytes) -> bytes:
        """Open a v1 (unbound) blob."""
        # Fast path: a well-formed row whose (inner tag, header) was opened before.
        if type(blob) is bytes and len(blob) > 2:
            end = 2 + blob[1]
            known = self._opened.get((inner_tag, blob[:end]))
            if known is not None and len(blob) >= end + _NONCE_AND_TAG:
                key_id, aad = known
                nonce_end = end + NONCE_SIZE
                body = blob[nonce_end:] if len(blob) < _LARGE else memoryview(blob)[nonce_end:]
                return self._backend.open(key_id, blob[end:nonce_end], body, aad)
        parsed = parse_blob(blob)
        if parsed.binding is not None:  # a v2 blob is never opened without its scope check
            raise RowBindingError(_OUTSIDE)
        if parsed.key_id not in self._keyring:
            raise UnknownKeyError(
                f"row is encrypted under key id {parsed.key_id!r}, which is not in the keyring "
                f"(it has {self._keyring.ids}); add that key to {ENV_VAR} or {FILE_ENV_VAR}",
                key_id=parsed.key_id,
            )
        aad = self._aad(inner_tag, parsed.header)
        plaintext = self._backend.open(parsed.key_id, parsed.nonce, parsed.body, aad)
        # Remember only headers that authenticated, under keys we hold: bounded.
        if len(self._opened) < _AAD_CACHE_MAX:
            self._opened[(inner_tag, parsed.header)] = (parsed.key_id, aad)
            # loads_typed's one-frame plan for this stored tag: the primary's header
            # if it is one, else the first header to open under the tag.
            if type(inner_tag) is str:
                plan = self._open_plan(inner_tag, parsed.header, parsed.key_id, aad)
                if parsed.key_id == self._primary:
                    self.open_plans[f"{inner_tag}+{CIPHER_NAME}"] = plan
                else:
                    self.open_plans.setdefault(f"{inner_tag}+{CIPHER_NAME}", plan)
        return plaintext

    def _open_legacy(self, tag: str, blob: bytes) -> bytes:
        key = self._keyring.legacy_key
        if key is None:
            raise UnknownKeyError(
                f"row with tag {_show(tag)} was written by LangGraph's EncryptedSerializer "
                f"(AES-EAX) and needs its key: set {LEGACY_ENV_VAR} to the value the application used "
                "(load_keyring() picks it up) or pass Keyring(..., legacy_key=...)",
                key_id=LEGACY_KEY_ID,
            )
        try:
            return decrypt_legacy(blob, key)
        except SerdeError as e:
            # The frames below hold the key; raise from here, without them.
            err = detached(e)
        del key
        raise err

    # Pickling or deep-copying would carry key material; a shallow copy shares the keyring.
    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("RowCipher holds secret keys and cannot be pickled")

    def __copy__(self) -> RowCipher:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._aad_cache = dict(self._aad_cache)
        clone._opened = dict(self._opened)
        clone._bound_headers = dict(self._bound_headers)
        clone._opened_bound = dict(self._opened_bound)
        clone.seal_plans = dict(self.seal_plans)
        clone.open_plans = dict(self.open_plans)
        clone._rekey_plans = dict(self._rekey_plans)
        return clone

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError("RowCipher holds secret keys and cannot be deep-copied")
