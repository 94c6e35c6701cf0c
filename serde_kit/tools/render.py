"""Render stored serializer bytes as tagged, JSON-able data without importing anything.

The renderer is the safe way to look at a checkpoint: it decodes msgpack with
ormsgpack and an ext hook that never imports a module or calls a constructor.
Each extension type becomes a tagged dict instead of an object::

    {"$type": "myapp.models.Doc", "$code": 5, "value": {...}}
    {"$type": "numpy.ndarray", "$code": 6, "dtype": "<f8", "shape": [2, 3],
     "order": "C", "preview": [0.0, 1.0, ...]}
    {"$bytes": "00ff...", "len": 1024}

so it is safe on untrusted data. Malformed input raises a
:class:`~serde_kit.errors.DecodeError` subclass, never a bare exception.
"""

from __future__ import annotations

import json
import math
import pickletools
import struct
from typing import Any

import ormsgpack

from serde_kit import budget
from serde_kit._prescan import check as check_row
from serde_kit.errors import MalformedDataError, UnknownTagError
from serde_kit.ext.numpy import MAX_DIMS
from serde_kit.limits import DEFAULT_LIMITS, Limits

__all__ = ["EXT_NAMES", "render_json", "render_msgpack", "render_typed"]

#: ext code -> short description (the wire table in DESIGN.md).
EXT_NAMES: dict[int, str] = {
    0: "constructor, one arg",
    1: "constructor, positional args",
    2: "constructor, keyword args",
    3: "classmethod, one arg",
    4: "pydantic v1 model",
    5: "pydantic v2 model",
    6: "numpy ndarray",
    7: "delta snapshot",
}

_DELTA_TYPE = "langgraph.checkpoint.serde.types._DeltaSnapshot"
_DEFAULT_MAX_DEPTH = 256
_DEFAULT_PREVIEW = 8
_DEFAULT_BYTES_PREVIEW = 32

# numpy kind+itemsize -> struct format for one element; only kinds whose
# meaning is fixed by the dtype string (no numpy needed to read them).
_STRUCT_FORMATS: dict[tuple[str, int], str] = {
    ("b", 1): "?",
    ("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
    ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
    ("f", 2): "e", ("f", 4): "f", ("f", 8): "d",
    ("c", 8): "ff", ("c", 16): "dd",
    ("M", 8): "q", ("m", 8): "q",
}  # fmt: skip


def render_typed(
    data: tuple[str | None, bytes | None],
    /,
    *,
    max_depth: int = _DEFAULT_MAX_DEPTH,
    preview: int = _DEFAULT_PREVIEW,
    bytes_preview: int = _DEFAULT_BYTES_PREVIEW,
) -> Any:
    """Render one stored ``(type_tag, bytes)`` pair as JSON-able data.

    Knows the serializer tags ``null``, ``bytes``, ``bytearray``, ``msgpack``,
    ``json`` (legacy LangGraph rows) and ``pickle`` (shown, never unpickled).
    Encrypted tags (``"msgpack+aesgcm"``) must be decrypted first.

    Raises:
        UnknownTagError: the tag is not one of the above.
        MalformedDataError: the bytes do not decode.
    """
    tag, blob = data
    if tag == "null":
        return None
    if blob is None:
        raise MalformedDataError(f"row with type tag {tag!r} has no bytes (NULL blob)")
    if tag == "bytes":
        return _bytes(blob, bytes_preview)
    if tag == "bytearray":
        return {"$type": "builtins.bytearray", **_bytes(blob, bytes_preview)}
    if tag == "msgpack":
        return render_msgpack(blob, max_depth=max_depth, preview=preview, bytes_preview=bytes_preview)
    if tag == "json":
        return render_json(blob, max_depth=max_depth, preview=preview, bytes_preview=bytes_preview)
    if tag == "pickle":
        return _pickle_summary(blob, bytes_preview)
    if tag is not None and "+" in tag:
        raise UnknownTagError(
            f"type tag {tag!r} is encrypted; decrypt it first "
            "(set SERDE_KIT_KEYRING or SERDE_KIT_KEYRING_FILE for the CLI)"
        )
    raise UnknownTagError(
        f"unknown type tag {tag!r}; expected null, bytes, bytearray, msgpack, json or pickle"
    )


def render_msgpack(
    blob: bytes,
    /,
    *,
    max_depth: int = _DEFAULT_MAX_DEPTH,
    preview: int = _DEFAULT_PREVIEW,
    bytes_preview: int = _DEFAULT_BYTES_PREVIEW,
    limits: Limits = DEFAULT_LIMITS,
) -> Any:
    """Render msgpack bytes (as written by the serializer) as JSON-able data.

    Raises:
        MalformedDataError: garbled or truncated bytes, a bad ext payload, or
            nesting deeper than ``max_depth``.
        UnknownTagError: an ext code outside 0-7.
        LimitExceededError: the row exceeds the decode budget (``limits``), as
            it would when the serializer reads it.
    """
    data = bytes(blob)
    if len(data) > limits.max_row_bytes:
        raise limits.refuse("max_row_bytes", "size of the stored value", len(data))
    try:
        with budget.metered(len(data), limits):  # one work meter per render, as per decode
            check_row(data, limits)
            return _Renderer(max_depth, preview, bytes_preview).msgpack(data, 0)
    except MemoryError:
        raise limits.refuse("max_containers", "rendering ran out of memory; values in the row", "too many") from None
    except RecursionError:
        raise MalformedDataError(
            f"data nests deeper than this interpreter's stack allows (max_depth={max_depth})"
        ) from None


def render_json(
    blob: bytes,
    /,
    *,
    max_depth: int = _DEFAULT_MAX_DEPTH,
    preview: int = _DEFAULT_PREVIEW,
    bytes_preview: int = _DEFAULT_BYTES_PREVIEW,
) -> Any:
    """Render a legacy ``json`` row; LangChain constructor dicts become ``$type`` dicts.

    ``{"lc": 2, "type": "constructor", "id": ["myapp", "Doc"], "kwargs": {...}}``
    renders as ``{"$type": "myapp.Doc", "$code": "json", "kwargs": {...}}``.

    Raises:
        MalformedDataError: the bytes are not JSON or nest deeper than ``max_depth``.
    """
    data = bytes(blob)
    limits = DEFAULT_LIMITS
    # As the serializer reads json rows: brackets bound the containers from above.
    brackets = data.count(b"{") + data.count(b"[") if len(data) > limits.max_containers else 0
    if brackets > limits.max_containers:
        raise limits.refuse("max_containers", "objects and arrays (brackets) in the legacy json row", brackets)
    try:
        raw = json.loads(data)
    except MemoryError:
        raise limits.refuse("max_containers", "parsing ran out of memory; values in the legacy json row", "too many") from None
    except (ValueError, RecursionError) as e:
        raise MalformedDataError(f"legacy json row does not parse: {e}") from None
    try:
        return _Renderer(max_depth, preview, bytes_preview).json_value(raw, 0)
    except RecursionError:
        raise MalformedDataError(
            f"data nests deeper than this interpreter's stack allows (max_depth={max_depth})"
        ) from None


class _Ext:
    """An ext value seen by the hook, rendered later by the tree walk."""

    __slots__ = ("code", "payload")

    def __init__(self, code: int, payload: Any) -> None:
        self.code = code
        self.payload = payload


class _Renderer:
    def __init__(self, max_depth: int, preview: int, bytes_preview: int) -> None:
        self.max_depth = max_depth
        self.preview = preview
        self.bytes_preview = bytes_preview

    # -- decoding ---------------------------------------------------------

    def msgpack(self, blob: bytes, depth: int) -> Any:
        raw = self._unpack(blob)
        return self.value(raw, depth)

    def _unpack(self, blob: bytes) -> Any:
        # ormsgpack replaces any exception raised in an ext hook by a bare
        # ValueError("ext_hook failed"), so the hook only wraps bytes and all
        # checking happens afterwards in the tree walk.
        try:
            return ormsgpack.unpackb(
                blob, ext_hook=_Ext, option=ormsgpack.OPT_NON_STR_KEYS
            )
        except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as e:
            raise MalformedDataError(f"msgpack bytes do not decode: {e}") from None

    def _check_depth(self, depth: int) -> None:
        if depth > self.max_depth:
            raise MalformedDataError(
                f"data nests deeper than {self.max_depth} levels; "
                "raise max_depth if the data is legitimate"
            )

    # -- tree walk --------------------------------------------------------

    def value(self, v: Any, depth: int) -> Any:
        self._check_depth(depth)
        if isinstance(v, _Ext):
            return self.ext(v.code, v.payload, depth + 1)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return _bytes(bytes(v), self.bytes_preview)
        if isinstance(v, float) and not math.isfinite(v):
            return {"$float": repr(v)}
        if isinstance(v, (list, tuple)):
            return [self.value(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return self.mapping(v, depth)
        return v

    def mapping(self, d: dict[Any, Any], depth: int) -> Any:
        if all(isinstance(k, str) and not k.startswith("$") for k in d):
            return {k: self.value(x, depth + 1) for k, x in d.items()}
        # Non-string keys (ints, tuples) and keys that could be confused with
        # our "$" tags keep their identity as an explicit list of pairs.
        return {
            "$map": [
                [self.value(k, depth + 1), self.value(x, depth + 1)]
                for k, x in d.items()
            ]
        }

    def json_value(self, v: Any, depth: int) -> Any:
        self._check_depth(depth)
        if isinstance(v, list):
            return [self.json_value(x, depth + 1) for x in v]
        if not isinstance(v, dict):
            return v
        ident = v.get("id")
        if (
            v.get("type") == "constructor"
            and v.get("lc") in (1, 2)
            and isinstance(ident, list)
            and len(ident) >= 2
            and all(isinstance(p, str) for p in ident)
        ):
            out: dict[str, Any] = {"$type": ".".join(ident), "$code": "json"}
            for key in ("args", "kwargs"):
                if key in v:
                    out[key] = self.json_value(v[key], depth + 1)
            return out
        if all(not k.startswith("$") for k in v):
            return {k: self.json_value(x, depth + 1) for k, x in v.items()}
        return {"$map": [[k, self.json_value(x, depth + 1)] for k, x in v.items()]}

    # -- ext codes --------------------------------------------------------

    def ext(self, code: int, data: bytes, depth: int) -> Any:
        self._check_depth(depth)
        if code == 7:
            return {"$type": _DELTA_TYPE, "$code": 7, "value": self.msgpack(data, depth + 1)}
        if code == 6:
            return self.ndarray(data)
        if not 0 <= code <= 5:
            raise UnknownTagError(f"unknown msgpack ext code {code}; serde_kit knows 0-7")
        payload = self._unpack(data)
        sizes = {0: (3,), 1: (3,), 2: (3,), 3: (4,), 4: (3,), 5: (3, 4)}[code]
        if not isinstance(payload, (list, tuple)) or len(payload) not in sizes:
            raise MalformedDataError(
                f"ext code {code} payload must be an array of {' or '.join(map(str, sizes))} "
                f"items (module, name, ...), got {_describe(payload)}"
            )
        module, name = payload[0], payload[1]
        if not (isinstance(module, str) and isinstance(name, str)):
            raise MalformedDataError(
                f"ext code {code} payload must start with (module: str, name: str), "
                f"got ({_describe(module)}, {_describe(name)})"
            )
        out: dict[str, Any] = {"$type": f"{module}.{name}" if module else name, "$code": code}
        arg = self.value(payload[2], depth + 1)
        if code == 1:
            out["args"] = arg
        elif code == 2:
            out["kwargs"] = arg
        else:
            out["value"] = arg
        if len(payload) == 4:
            method = payload[3]
            if not isinstance(method, str):
                raise MalformedDataError(
                    f"ext code {code} method slot must be a string, got {_describe(method)}"
                )
            out["method"] = method
        return out

    def ndarray(self, data: bytes) -> dict[str, Any]:
        payload = self._unpack(data)
        if not isinstance(payload, (list, tuple)) or len(payload) != 4:
            raise MalformedDataError(
                "ext code 6 (numpy) payload must be (dtype, shape, order, buffer), "
                f"got {_describe(payload)}"
            )
        dtype, shape, order, buf = payload
        if not isinstance(dtype, str) or len(dtype) < 2 or len(dtype) > 64:
            raise MalformedDataError(f"ext code 6 dtype must be a dtype string, got {_describe(dtype)}")
        if not isinstance(shape, (list, tuple)) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
        ):
            raise MalformedDataError(
                f"ext code 6 shape must be a list of non-negative ints, got {shape!r:.80}"
            )
        if order not in ("C", "F"):
            raise MalformedDataError(f"ext code 6 order must be 'C' or 'F', got {order!r:.40}")
        if not isinstance(buf, bytes):
            raise MalformedDataError(f"ext code 6 buffer must be bytes, got {_describe(buf)}")
        if len(shape) > MAX_DIMS:
            raise MalformedDataError(
                f"ext code 6 shape has {len(shape)} dimensions; numpy arrays have at most {MAX_DIMS}"
            )
        size = math.prod(shape)  # at most 64 factors below 2**64: a short number to print
        out: dict[str, Any] = {
            "$type": "numpy.ndarray",
            "$code": 6,
            "dtype": dtype,
            "shape": list(shape),
            "order": order,
            "size": size,
            "nbytes": len(buf),
        }
        itemsize = _itemsize(dtype)
        if itemsize is not None:
            if itemsize * size != len(buf):
                raise MalformedDataError(
                    f"ext code 6 buffer holds {len(buf)} bytes, but dtype {dtype} "
                    f"and shape {list(shape)} need {itemsize * size}"
                )
            shown = _array_preview(dtype, itemsize, buf, self.preview)
            if shown is not None:
                out["preview"] = shown
                out["truncated"] = size > self.preview
        return out


def _bytes(blob: bytes, limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {"$bytes": blob[:limit].hex(), "len": len(blob)}
    if len(blob) > limit:
        out["truncated"] = True
    return out


def _describe(v: Any) -> str:
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(v).__name__} {text}"


def _itemsize(dtype: str) -> int | None:
    """Element size from a dtype string like '<f8' or '<M8[ns]'; None when not simple."""
    digits = ""
    for ch in dtype[2:]:
        if not ch.isdigit():
            break
        digits += ch
    if not digits:
        return None
    # '<U5' counts UCS-4 characters, every other kind counts bytes.
    return int(digits) * 4 if dtype[1] == "U" else int(digits)


def _array_preview(dtype: str, itemsize: int, buf: bytes, limit: int) -> list[Any] | None:
    """First elements in storage order, read with struct; None for kinds we do not read."""
    order_char, kind = dtype[0], dtype[1]
    endian = ">" if order_char == ">" else "<"
    count = min(limit, len(buf) // itemsize) if itemsize else 0
    if kind in ("U", "S"):
        items: list[Any] = []
        for i in range(count):
            chunk = buf[i * itemsize : (i + 1) * itemsize]
            if kind == "S":
                items.append(_bytes(chunk.rstrip(b"\x00"), 32))
            else:
                codec = "utf-32-be" if endian == ">" else "utf-32-le"
                items.append(chunk.decode(codec, errors="replace").rstrip("\x00"))
        return items
    fmt = _STRUCT_FORMATS.get((kind, itemsize))
    if fmt is None:
        return None
    values = list(struct.unpack_from(f"{endian}{fmt * count}", buf))
    if kind == "c":
        values = [{"real": r, "imag": i} for r, i in zip(values[::2], values[1::2])]
    return [{"$float": repr(v)} if isinstance(v, float) and not math.isfinite(v) else v for v in values]


def _pickle_summary(blob: bytes, limit: int) -> dict[str, Any]:
    """Show a pickle row without unpickling it: size, preview, and the globals it names."""
    out: dict[str, Any] = {"$type": "pickle", **_bytes(blob, limit)}
    names: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _pos in pickletools.genops(blob):
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                names.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str) and "UNICODE" in op.name:
                strings.append(arg)
    except (ValueError, TypeError, struct.error, EOFError, UnicodeDecodeError):
        out["malformed"] = True
    out["globals"] = sorted(set(names))
    return out

