"""The :class:`Serializer`: LangGraph's ``SerializerProtocol``, safe by default and exact."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

import ormsgpack

from . import _hints, _langgraph_log, _pickle, _stack, native
from .allowlist import Allowlist, AllowEntry
from .budget import NeedsMeter
from .decoder import ENGINE_ERRORS, SAFE_RECURSION_LIMIT, Decoder, engine_error
from .encoder import OPTIONS, Encoder
from .errors import BlockedTypeError, ConfigError, EncodeError, MalformedDataError, UnknownTagError
from .legacy_json import loads_json
from .limits import DEFAULT_LIMITS, Limits
from .renames import parse_renames

__all__ = ["Serializer"]

_EMPTY = b""


class _LoadsTyped(Protocol):
    def __call__(self, data: tuple[str, bytes]) -> Any: ...


class Serializer:
    """Turns checkpoint values into ``(type tag, bytes)`` and back, in the stock LangGraph format.

    Pass it to any saver: ``SqliteSaver(conn, serde=Serializer(allow=[MyState]))``.

    - ``allow``: extra classes, ``(module, qualname)`` pairs or ``"module:QualName"``
      strings that may be decoded, on top of ``allowlist``.
    - ``allowlist``: the base :class:`Allowlist`; default ``Allowlist.from_env()``
      (the curated safe set plus ``SERDE_KIT_ALLOW`` / ``SERDE_KIT_ALLOW_FILE``).
    - ``lenient``: return the raw stored fields, with a :class:`LenientDecodeWarning`
      once per type, instead of raising for a blocked or unbuildable type.
    - ``pickle_fallback``: write values msgpack cannot hold with pickle and read
      ``pickle`` rows. Unpickling runs code named by the data: trusted data only.
    - ``limits``: the decode budget (:class:`Limits`) every stored row is held to.
    - ``renames``: ``{"old.module:OldName": NewClass}`` reads rows stored under a class's
      old name as the class it is now (:mod:`serde_kit.renames`); the classes are allowed.
    - ``validate``: ``"auto"`` (default) rebuilds langchain-core messages and
      Documents whose stored fields already have their validated shape without
      re-running pydantic, and validates every other model; ``"always"``
      validates every model.

    Raises :class:`EncodeError` on dumps and :class:`DecodeError` subclasses on loads.
    """

    __slots__ = (
        "allowlist", "lenient", "limits", "pickle_fallback", "validate", "renames", "_renames_given", "_encoder", "_decoder", "_small_row", "_tiny_row", "_decode_small", "_check_above", "loads_typed",
    )  # fmt: skip

    #: ``loads_typed(data)``: the value for a stored ``(tag, bytes)`` row. An instance
    #: attribute: :meth:`_loads_typed`, or with the compiled reader its ``LoadsTyped``, which
    #: reads small msgpack rows as that method does without entering a Python frame.
    loads_typed: _LoadsTyped

    def __init__(
        self,
        *,
        allow: Iterable[AllowEntry] = (),
        allowlist: Allowlist | None = None,
        lenient: bool = False,
        pickle_fallback: bool = False,
        limits: Limits = DEFAULT_LIMITS,
        validate: Literal["auto", "always"] = "auto",
        renames: Mapping[str | tuple[str, str], type] | None = None,
    ) -> None:
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a serde_kit.Limits, not {type(limits).__name__}")
        base = Allowlist.from_env() if allowlist is None else allowlist
        if renames is not None and not isinstance(renames, Mapping):
            raise ConfigError(f"renames must be a mapping of 'old.module:OldName' to a class, not {type(renames).__name__}")
        self._renames_given = dict(renames or {})
        #: Stored ``(module, qualname)`` -> the ``(module, qualname)`` rows under it are read as (see serde_kit.renames).
        self.renames, targets = parse_renames(self._renames_given)
        extra = (*allow, *targets)
        self.allowlist = base | extra if extra else base
        self.lenient = lenient
        self.pickle_fallback = pickle_fallback
        self.limits = limits
        self.validate: Literal["auto", "always"] = validate
        self._encoder = Encoder(self.allowlist, lenient=lenient, limits=limits)
        self._check_above = self._encoder.check_above
        self._decoder = Decoder(self.allowlist, lenient=lenient, limits=limits, validate=validate, renames=self.renames)
        # Small rows skip a frame: loads_typed runs the decoder's small-row check itself.
        self._small_row = self._decoder.small_row
        self._tiny_row = self._decoder.tiny_row
        self._decode_small = self._decoder.engine.decode
        # Set through the slot itself, so a subclass's own loads_typed method still wins
        # the lookup (and can reach this one through super()).
        _LOADS_TYPED_SLOT.__set__(
            self,
            native.loads_typed(
                self._decoder.engine,
                self._loads_typed,
                self._small_row_error,
                self._tiny_row,
                self._small_row,
                limits,
            ),
        )
        _langgraph_log.install()  # LangGraph's strict-msgpack warning: once, explained

    def with_allow(self, *entries: AllowEntry) -> Serializer:
        """A copy of this serializer that also allows ``entries``."""
        return Serializer(
            allowlist=self.allowlist | entries,
            lenient=self.lenient,
            pickle_fallback=self.pickle_fallback,
            limits=self.limits,
            validate=self.validate,
            renames=self._renames_given,
        )

    def dumps(self, obj: Any) -> bytes:
        """msgpack bytes for ``obj`` (any value, including None and bytes)."""
        return self._encoder.dumps(obj)

    def loads(self, data: bytes) -> Any:
        """The value held by msgpack ``data``."""
        return self._decoder.loads(_as_bytes(data))

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """``(tag, bytes)`` for ``obj``: ``null``, ``bytes``, ``bytearray`` or ``msgpack``."""
        if obj is None:
            return "null", _EMPTY
        cls = type(obj)
        if cls is bytes:
            return "bytes", obj
        if cls is bytearray:
            return "bytearray", bytes(obj)
        try:
            # Plain JSON-like values (most pending writes) in one call; anything
            # else ends this attempt at once and goes through the encoder.
            data = ormsgpack.packb(obj, option=OPTIONS)
        except TypeError as exc:
            plain_refusal = exc
        else:
            return "msgpack", data if len(data) <= self._check_above else self._encoder.fits(data)
        try:
            return "msgpack", self._encoder.dumps_not_plain(obj, plain_refusal)
        except EncodeError as exc:
            if self.pickle_fallback and exc.limit is None:
                return "pickle", _pickle.dumps(obj)
            # Name every class the value needs allowed at once, not one per run (the error path only).
            raise _hints.every_write_refusal(self.allowlist, obj, exc) from None

    def _loads_typed(self, data: tuple[str, bytes]) -> Any:
        """The value for a stored ``(tag, bytes)`` row (``loads_typed``)."""
        try:
            tag, payload = data
        except (TypeError, ValueError):
            raise MalformedDataError("expected a (type tag, bytes) pair") from None
        if tag == "msgpack":
            try:
                # Decoder.loads's small-row path, without its frame (see there).
                if type(payload) is bytes:
                    size = len(payload)
                    if (
                        size < self._tiny_row
                        or size < self._small_row
                        and _stack.recursion_limit() <= SAFE_RECURSION_LIMIT
                    ) and 255 not in payload:
                        try:
                            return self._decode_small(payload)
                        except ENGINE_ERRORS as exc:
                            raise engine_error(exc, payload) from None
                        except NeedsMeter:
                            return self._decoder.loads_with_meter(payload)  # a costly step: read again with a meter
                    return self._decoder.loads_checked(payload)
                return self._decoder.loads(_as_bytes(payload))
            except BlockedTypeError as exc:
                # Name every refused type of the row at once, not one per run (the error path only).
                raise _hints.every_refusal(self.allowlist, payload, exc) from None
        if tag == "null":
            return None
        if tag == "bytes":
            return _as_bytes(payload)
        if tag == "bytearray":
            return bytearray(_as_bytes(payload))
        if tag == "json":
            return loads_json(_as_bytes(payload), self._decoder)
        if tag == "pickle":
            if not self.pickle_fallback:
                raise UnknownTagError(
                    "refused a 'pickle' row: unpickling runs code named by the data. If you "
                    "trust this database, read it with Serializer(pickle_fallback=True)"
                )
            return _pickle.loads(_as_bytes(payload))
        if isinstance(tag, str) and "+" in tag:
            raise UnknownTagError(
                f"row tag {tag!r} is encrypted; read it through serde_kit.EncryptedSerializer"
            )
        raise UnknownTagError(f"unknown type tag {tag!r} (expected msgpack, null, bytes, bytearray, json)")

    def _small_row_error(self, exc: BaseException, payload: bytes) -> Any:
        """What :meth:`_loads_typed` does when its small-row read raised ``exc`` (the compiled
        ``LoadsTyped`` hands its errors here)."""
        try:
            if isinstance(exc, NeedsMeter):
                return self._decoder.loads_with_meter(payload)  # a costly step: read again with a meter
            if isinstance(exc, ENGINE_ERRORS):
                raise engine_error(exc, payload) from None
            raise exc
        except BlockedTypeError as blocked:
            raise _hints.every_refusal(self.allowlist, payload, blocked) from None

    def __repr__(self) -> str:
        flags = "".join(
            f", {name}=True" for name in ("lenient", "pickle_fallback") if getattr(self, name)
        )
        return f"Serializer(allowlist={self.allowlist!r}{flags})"


#: The ``loads_typed`` slot's descriptor (a data descriptor on Serializer only).
_LOADS_TYPED_SLOT: Any = Serializer.__dict__["loads_typed"]


def _as_bytes(payload: Any) -> bytes:
    if type(payload) is bytes:
        return payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise MalformedDataError(f"stored payload must be bytes, not {type(payload).__name__}")
