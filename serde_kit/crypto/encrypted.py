"""EncryptedSerializer: AES-256-GCM around any serializer, with key ids and rotation.

``dumps_typed`` encrypts the inner serializer's bytes under the keyring's
primary key and returns ``("<inner tag>+aesgcm", blob)`` (layout in
:mod:`serde_kit.crypto.blob`).  ``loads_typed`` decrypts with the key the blob's
header names, reads LangGraph's stock ``+aes`` rows with the legacy key, and
refuses plaintext rows unless ``allow_plaintext=True`` (migration mode).

Tag routing on read::

    "msgpack"           plaintext  -> PlaintextRefusedError unless allow_plaintext
    "msgpack+aesgcm"    serde_kit  -> decrypt with the key named in the header
    "msgpack+aes"       LangGraph  -> decrypt with keyring.legacy_key (AES-EAX)
    "msgpack+other", "a+b+c", non-str tag -> UnknownTagError (a DecodeError):
                        the tag itself is not one we know; no key could help.

Row binding (:mod:`serde_kit.crypto.binding`): inside a bound saver call,
``dumps_typed`` writes a v2 blob naming the call's thread id and namespace, and
``loads_typed`` opens a v2 blob only when it names the identity of the call;
outside one, a v2 blob is refused (:class:`~serde_kit.errors.RowBindingError`).
v1 (unbound) rows keep reading unless the scope says ``require_bound``.
"""

from __future__ import annotations

from io import BytesIO
from os import urandom
from collections.abc import Iterable
from typing import Any, Protocol

from serde_kit.errors import (
    DecryptionError,
    EncodeError,
    MalformedDataError,
    PlaintextRefusedError,
    RowBindingError,
    SerdeError,
    UnknownKeyError,
    UnknownTagError,
)

from . import aesgcm
from .blob import (
    CIPHER_NAME,
    LEGACY_CIPHER_NAME,
    NONCE_SIZE,
    TAG_SIZE,
    VERSION,
    BOUND_VERSION,
    build_bound_header,
    blob_key_id,
    build_header,
    make_aad,
    parse_blob,
)
from serde_kit._hints import allow_flags

from .binding import SCOPE, BindingScope, RowIdentity
from .keyring import ENV_VAR, FILE_ENV_VAR, LEGACY_ENV_VAR, LEGACY_KEY_ID, Keyring, load_keyring
from .legacy import decrypt_legacy
from .secret import detached
from .blob import ParsedBlob

__all__ = ["EncryptedSerializer", "SealedValue"]

#: ``SCOPE.get`` bound once: CPython 3.11 does not specialize a method load on a
#: ContextVar, so ``SCOPE.get()`` would build a bound method on every call.
_current_scope = SCOPE.get

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
_NONCE_AND_TAG = NONCE_SIZE + TAG_SIZE
#: (v1 header, offset of the nonce, of the body, smallest well-formed size, inner tag,
#: decryptor, AAD)
_OpenPlan = tuple[bytes, int, int, int, str, aesgcm.Decryptor, bytes]
#: (old key id, decryptor, old AAD, new stored tag, primary header, new AAD, encryptor)
_RekeyPlan = tuple[str, aesgcm.Decryptor, bytes, str, bytes, bytes, aesgcm.Encryptor]


class _SerializerLike(Protocol):
    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...
    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


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
        elif not isinstance(keyring, Keyring):
            raise TypeError(f"keyring must be a Keyring, got {type(keyring).__name__}")
        self._inner = inner
        self._keyring = keyring
        self._allow_plaintext = bool(allow_plaintext)
        self._backend = aesgcm.make_backend(backend, keyring.key)
        self._primary = keyring.primary_id
        self._primary_header = build_header(self._primary)
        self._aad_cache: dict[tuple[str, bytes], bytes] = {}
        self._opened: dict[tuple[str, bytes], tuple[str, bytes]] = {}
        self._bound_headers: dict[tuple[str, str | None, str | None], tuple[bytes, bytes]] = {}
        self._opened_bound: dict[tuple[str, bytes], tuple[str, bytes, RowIdentity]] = {}
        # The fast paths' plans, each built once from validated parts:
        # inner tag -> (stored tag, v1 header, AAD, encryptor) for unbound rows under the primary;
        self._seal_plans: dict[str, tuple[str, bytes, bytes, aesgcm.Encryptor]] = {}
        # stored tag -> (v1 header, offsets of the nonce and the body, inner tag, decryptor,
        # AAD) for a header that authenticated (or that we wrote) under a key of the keyring.
        self._open_plans: dict[str, _OpenPlan] = {}
        # (stored tag, v1 header) -> (old key id, decryptor, old AAD, new stored tag, primary
        # header, new AAD, encryptor): key rotation of unbound rows (rekey_many), built by
        # reencrypt from a row under that header that authenticated and was resealed.
        self._rekey_plans: dict[tuple[str, bytes], _RekeyPlan] = {}
        self._encrypt = self._backend.encryptor(self._primary)
        self._encrypt_into = self._backend.encryptor_into(self._primary)
        self._auth_error = self._backend.auth_error

    @property
    def inner(self) -> _SerializerLike:
        """The wrapped serializer."""
        return self._inner

    @property
    def keyring(self) -> Keyring:
        """The keyring (its primary encrypts)."""
        return self._keyring

    @property
    def allow_plaintext(self) -> bool:
        """Whether unencrypted rows are accepted on read."""
        return self._allow_plaintext

    @property
    def backend(self) -> str:
        """Name of the AES-GCM backend in use."""
        return self._backend.name

    def __repr__(self) -> str:
        return (
            f"EncryptedSerializer(inner={type(self._inner).__name__}, keyring={self._keyring!r}, "
            f"allow_plaintext={self._allow_plaintext}, backend={self._backend.name!r})"
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
            # built (and the tag checked) by an earlier _seal_row.
            plan = self._seal_plans.get(inner_tag) if type(inner_tag) is str else None
            if plan is not None and type(data) is bytes:
                nonce = urandom(NONCE_SIZE)  # a fresh random nonce per row: see aesgcm
                if len(data) < _LARGE:
                    return plan[0], b"".join((plan[1], nonce, plan[3](nonce, data, plan[2])))
                return plan[0], self._seal_large(plan[1], nonce, data, plan[2])
            return self._seal_row(inner_tag, data, aesgcm._nonce())
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
        return self._seal_row(inner_tag, data, aesgcm._nonce(), _write_identity(scope))

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
        except TypeError:  # an unhashable tag; _decrypt says UnknownTagError
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
        return self._inner.loads_typed(self._decrypt(data, _current_scope(), outside_ok=False))

    # -- row level (used by the rotate/status tools) ----------------------------------

    def decrypt_row(
        self, row: tuple[str, bytes], *, identity: RowIdentity | None = None
    ) -> tuple[str, bytes]:
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
        return self._decrypt(row, scope, outside_ok=True)

    def _decrypt(
        self, row: tuple[str, bytes], scope: BindingScope | None, *, outside_ok: bool
    ) -> tuple[str, bytes]:
        tag, blob = row
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
                f"`serde-kit rotate --db URL --encrypt-plaintext --apply{allow_flags(self._inner)}`"
            )
        return tag, blob

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
        """Re-encrypt one row under the primary key; None when there is nothing to do.

        Nothing to do: the header already names the primary key (decided without
        decrypting) and the binding is as asked, or the row is plaintext /
        LangGraph ``+aes`` and the matching flag is off.  Otherwise the row is
        decrypted to bytes (the inner bytes are never deserialized) and sealed
        under the primary with a fresh nonce.  A bound row keeps its binding.
        ``bind_to`` (the row's thread id and namespace, from its table) binds an
        unbound row; a row already bound elsewhere raises
        :class:`~serde_kit.errors.RowBindingError` and is left as it is.
        ``check_inner=True`` decodes a plaintext or legacy row with the inner
        (allowlisted) serializer before sealing it for the first time, so a row
        it would refuse (a blocked type, a pickle row, garbage) raises that
        error instead of being laundered into a genuine ``+aesgcm`` row.
        ``parsed`` is ``parse_blob(blob)`` when the caller already has it
        (:func:`~serde_kit.crypto.rows.classify_parsed`), so the header is
        parsed once; one whose header does not start ``blob`` is ignored.
        """
        tag, blob = row
        kind, inner_tag = _route(tag)
        identity = bind_to
        if kind == _AESGCM:
            parsed = self._same_parse(parsed, blob)
            if parsed.binding is not None:
                if bind_to is not None and tuple(bind_to) != tuple(parsed.binding):
                    raise RowBindingError(_MOVED)
                identity = parsed.binding
            if parsed.key_id == self._primary and parsed.binding == identity:
                return None
            if parsed.binding is not None:
                data = self._open_checked(
                    inner_tag, blob, BindingScope(*parsed.binding), outside_ok=False
                )
            else:
                data = self._open(inner_tag, blob)
                if identity is None:
                    sealed = self._seal_row(inner_tag, data, aesgcm._nonce())
                    self._remember_rekey(tag, inner_tag, parsed)
                    return sealed
        elif kind == _LEGACY:
            if not upgrade_legacy:
                return None
            data = self._open_legacy(tag, blob)
        else:
            if not encrypt_plaintext or tag == _EMPTY_TAG:
                return None
            if not isinstance(blob, (bytes, bytearray, memoryview)):
                raise MalformedDataError(
                    f"plaintext row with tag {_show(tag)} holds {type(blob).__name__}, not bytes"
                )
            data = blob
        if check_inner and kind != _AESGCM:
            self._inner.loads_typed((inner_tag, data))
        return self._seal_row(inner_tag, data, aesgcm._nonce(), identity)

    @staticmethod
    def _same_parse(parsed: ParsedBlob | None, blob: Any) -> ParsedBlob:
        """``parsed`` if it is the parse of ``blob`` (its header starts it, same length), else ``parse_blob(blob)``.

        For :meth:`reencrypt`: the header decides whether a row is skipped and
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

        What :meth:`reencrypt` returns for an unbound v1 row under a key that is
        not the primary (decrypted, sealed under the primary with a fresh
        ``os.urandom`` nonce, still unbound), for rows whose stored tag and
        header :meth:`reencrypt` already re-encrypted once: the plan it kept
        (keys, AADs, headers) is reused, one Python frame for the whole list.
        Every other row, and any row that does not open, gives None: pass it
        to :meth:`reencrypt`, which decides (and raises) as always.  For the
        rotate tool, which walks rows by the thousand.
        """
        plans = self._rekey_plans
        if not plans:
            return [None for _ in rows]
        get = plans.get
        auth_error = self._auth_error
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
                    except TypeError:  # an unhashable tag: reencrypt says UnknownTagError
                        plan = None
            if plan is None:
                append(None)
                continue
            key_id, decrypt, old_aad, new_tag, header, new_aad, encrypt = plan
            try:
                data = decrypt(blob[end:start], blob[start:], old_aad)
            except (auth_error, SerdeError):
                append(None)  # reencrypt raises the error the row deserves
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
            self._encrypt,
        )

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

    def _seal_row(
        self, inner_tag: str, data: bytes, nonce: bytes, identity: RowIdentity | None = None
    ) -> tuple[str, bytes]:
        """Encrypt inner bytes under the primary with ``nonce`` (the seam tests pin).

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
            if type(inner_tag) is str and len(self._seal_plans) < _AAD_CACHE_MAX:
                self._seal_plans[inner_tag] = (stored_tag, header, aad, self._encrypt)
                # The primary's header takes the read plan: the rows we write are read back.
                known = self._open_plans.get(stored_tag)
                if known is None or known[0] is not header:
                    self._open_plans[stored_tag] = self._open_plan(
                        inner_tag, header, self._primary, aad
                    )
        else:
            header, aad = self._bound_header(inner_tag, identity)
        if not isinstance(data, memoryview) and len(data) >= _LARGE:  # len counts bytes here
            return stored_tag, self._seal_large(header, bytes(nonce), data, aad)
        body = self._backend.seal(self._primary, nonce, data, aad)
        return stored_tag, b"".join((header, nonce, body))

    def _open_plan(
        self, inner_tag: str, header: bytes, key_id: str, aad: bytes
    ) -> _OpenPlan:
        """loads_typed's plan for rows of ``inner_tag`` under this (authenticated) v1 header."""
        n = len(header)
        decrypt = self._backend.decryptor(key_id)
        return (header, n, n + NONCE_SIZE, n + _NONCE_AND_TAG, inner_tag, decrypt, aad)

    def _seal_large(self, header: bytes, nonce: bytes, data: aesgcm.Buffer, aad: bytes) -> bytes:
        """``header || nonce || ciphertext || tag`` under the primary, the ciphertext written in place.

        The output's bytes object is the BytesIO's own buffer (``getvalue`` of an
        exactly filled BytesIO returns it without a copy), so a large row is one
        fresh buffer, as raw ``AESGCM.encrypt`` is, instead of encrypt + join.
        """
        into = self._encrypt_into
        if into is None:
            return b"".join((header, nonce, self._encrypt(nonce, data, aad)))
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
                    self._open_plans[f"{inner_tag}+{CIPHER_NAME}"] = plan
                else:
                    self._open_plans.setdefault(f"{inner_tag}+{CIPHER_NAME}", plan)
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
        raise TypeError("EncryptedSerializer holds secret keys and cannot be pickled")

    def __copy__(self) -> EncryptedSerializer:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._aad_cache = dict(self._aad_cache)
        clone._opened = dict(self._opened)
        clone._bound_headers = dict(self._bound_headers)
        clone._opened_bound = dict(self._opened_bound)
        clone._seal_plans = dict(self._seal_plans)
        clone._open_plans = dict(self._open_plans)
        clone._rekey_plans = dict(self._rekey_plans)
        return clone

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError("EncryptedSerializer holds secret keys and cannot be deep-copied")
