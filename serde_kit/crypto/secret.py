"""Keeping key material out of reach: a redacted holder, and errors that carry no secret frames.

:class:`SecretBytes` keeps key bytes out of ``repr``/``str``/``vars`` of the
objects that hold them.  :func:`detached` and :func:`scrubbed` (from
:mod:`serde_kit._secrets`) keep them out of tracebacks: a keyring that fails to
parse would otherwise leave the whole keyring text in the parser's frames, and
a failed legacy decrypt the legacy key.
"""

from __future__ import annotations

import hmac
from typing import NoReturn

# The generic half lives in a neutral module (the database tools use it too); re-exported for crypto.
from serde_kit._secrets import detached as detached, scrubbed as scrubbed

__all__ = ["SecretBytes", "detached", "scrubbed"]


class SecretBytes:
    """Key bytes whose ``repr``/``str`` are redacted and which refuse to pickle or copy.

    :meth:`reveal` returns the bytes; call it where the key is used, not earlier.
    """

    __slots__ = ("_value",)

    def __init__(self, value: bytes | bytearray) -> None:
        self._value = bytes(value)

    def reveal(self) -> bytes:
        """The key bytes."""
        return self._value

    def __len__(self) -> int:
        return len(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretBytes):
            return NotImplemented
        return hmac.compare_digest(self._value, other._value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SecretBytes(<{len(self._value)} bytes redacted>)"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("SecretBytes holds key material and cannot be pickled")

    def __copy__(self) -> SecretBytes:
        return self  # immutable

    def __deepcopy__(self, memo: object) -> SecretBytes:
        return self
