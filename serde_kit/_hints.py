"""Advice serde_kit gives when it refuses: command lines its messages suggest (built to work
when pasted), and one error for every type a row or a value needs allowed (the error path only)."""

from __future__ import annotations

import shlex
from typing import Any

from ._text import allow_entry, shell_assignment, shown
from .allowlist import Allowlist
from .errors import BlockedTypeError, EncodeError

__all__ = ["allow_flags", "every_refusal", "every_write_refusal", "refused_types"]

#: More entries than this and the suggestion points at --allowlist-from instead of listing them.
MAX_FLAGS = 12


def allow_flags(serde: Any) -> str:
    """``" --allow m:N ..."`` for what ``serde``'s allowlist holds beyond the defaults (``""`` if nothing).

    The tools check stored types against the application's allowlist; the
    environment's part they read themselves, the part passed in code they need
    on the command line.
    """
    allowlist = getattr(serde, "allowlist", None)
    if not isinstance(allowlist, Allowlist):
        return ""
    extra = sorted(set(allowlist) - set(Allowlist.default()))
    if len(extra) > MAX_FLAGS:
        return " --allowlist-from YOURAPP.MODULE:SERIALIZER"
    return "".join(f" --allow {shlex.quote(f'{module}:{name}')}" for module, name in extra)


#: Distinct refused types one error lists, and values walked to find them (a planted row may name thousands).
MAX_LISTED = 20
_MAX_WALKED = 200_000
_ENVELOPE_CODES = range(0, 6)  # ext codes whose payload is [module, name, ...]
_DELTA_CODE = 7  # a packed value: walked as msgpack


def refused_types(allowlist: Allowlist, data: bytes) -> dict[tuple[str, str], int]:
    """Every ``(module, name)`` in a stored msgpack row that ``allowlist`` refuses, with its ext code.

    Reads the envelopes only (nothing is imported or built), in the order met; stops after
    MAX_LISTED + 1 types or a bounded number of values, and returns what it has when the
    bytes cannot be walked.
    """
    import msgspec

    decode = msgspec.msgpack.decode
    found: dict[tuple[str, str], int] = {}
    pending: list[Any] = [msgspec.msgpack.Ext(_DELTA_CODE, data)]
    walked = 0
    while pending and walked < _MAX_WALKED and len(found) <= MAX_LISTED:
        value = pending.pop()
        walked += 1
        if isinstance(value, msgspec.msgpack.Ext):
            try:
                inner = decode(value.data)
            except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
                continue
            if value.code in _ENVELOPE_CODES and type(inner) is list and len(inner) >= 3:
                module, name = inner[0], inner[1]
                if type(module) is str and type(name) is str and not allowlist.allows(module, name):
                    found.setdefault((module, name), value.code)
                pending.extend(inner[2:3])
            elif value.code == _DELTA_CODE:
                pending.append(inner)
        elif isinstance(value, (list, tuple)):
            pending.extend(reversed(value))  # popped from the end: the first item is met first
        elif isinstance(value, dict):
            pending.extend(reversed([part for item in value.items() for part in item]))
    return found


def every_refusal(allowlist: Allowlist, data: Any, first: BlockedTypeError) -> BlockedTypeError:
    """``first``, or when the row holds several refused types one error naming them all with one fix."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return first
    found = refused_types(allowlist, bytes(data))
    if len(found) < 2:
        return first
    listed = [f"{shown(m)}.{shown(n)} (ext code {c})" for (m, n), c in found.items()]
    more = len(listed) > MAX_LISTED
    what = ", ".join(listed[:MAX_LISTED]) + (" and more" if more else "")
    entries = [allow_entry(m, n) for m, n in found]
    module, name = next(iter(found))
    if more or any(entry is None for entry in entries):
        fix = (
            "some stored names are not valid Python names, so no application wrote this row; check where it came from"
            if any(entry is None for entry in entries)
            else "run `serde-kit allowlist scan` for the allowlist the stored data needs"
        )
    else:
        unique = list(dict.fromkeys(e for e in entries if e is not None))
        pairs = ", ".join(repr(tuple(e.split(":", 1))) for e in unique)
        fix = (
            f"if you trust them, allow them all at once: Serializer(allow=[{pairs}]), "
            f"or {shell_assignment('SERDE_KIT_ALLOW', ','.join(unique))}"
        )
    return BlockedTypeError(
        f"refused to build {len(found)} types this row holds, none of them in the allowlist: {what}; {fix}",
        module=module,
        name=name,
    )


def every_write_refusal(allowlist: Allowlist, obj: Any, first: EncodeError) -> EncodeError:
    """``first``, or when ``obj`` holds several classes ``allowlist`` refuses, one error naming them all.

    Runs a second, collecting pass of the encoder (the error path only): the classes it would
    refuse are noted instead of refused.
    """
    if "is not in this serializer's allowlist" not in str(first):
        return first  # another kind of refusal: it stands alone
    from .encoder import Encoder
    from .ext import user

    refused: dict[tuple[str, str], None] = {}

    class _Collecting(Encoder):
        __slots__ = ()

        def _check_allowed(self, cls: type, encode: Any) -> Any:
            try:
                key = user.importable_key(cls)
            except EncodeError:
                return super()._check_allowed(cls, encode)
            if not self._allowlist.allows(*key) and len(refused) <= MAX_LISTED:
                refused[key] = None
            return encode

    try:
        _Collecting(allowlist).dumps(obj)
    except EncodeError:
        pass  # something else refuses too: what was noted before it still stands
    if len(refused) < 2:
        return first
    entries = [allow_entry(m, n) for m, n in refused]
    unique = list(dict.fromkeys(e for e in entries if e is not None))
    pairs = ", ".join(repr(tuple(e.split(":", 1))) for e in unique)
    more = " and more" if len(refused) > MAX_LISTED else ""
    listed = ", ".join(f"{m}.{n}" for m, n in list(refused)[:MAX_LISTED])
    return EncodeError(
        f"{len(refused)} classes in this value are not in this serializer's allowlist, so a stored value "
        f"could not be read back: {listed}{more}. Allow them all: Serializer(allow=[{pairs}]) or "
        f"{shell_assignment('SERDE_KIT_ALLOW', ','.join(unique))}"
    )
