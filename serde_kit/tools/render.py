"""Render stored serializer bytes as tagged, JSON-able data without importing anything.

The renderer is the safe way to look at a checkpoint: it decodes msgpack with
msgspec, as the serializer's reader does, and an ext hook that checks each ext
against the wire table (:mod:`serde_kit.ext.codes`) but never imports a module
or calls a constructor. It accepts exactly the rows the reader reads
(tests/tools/test_render_matches_decoder.py).
Each extension type becomes a tagged dict instead of an object::

    {"$type": "myapp.models.Doc", "$code": 5, "value": {...}}
    {"$type": "numpy.ndarray", "$code": 6, "dtype": "<f8", "shape": [2, 3],
     "order": "C", "preview": [0.0, 1.0, ...]}
    {"$bytes": "00ff...", "len": 1024}

so it is safe on untrusted data. Malformed input raises a
:class:`~serde_kit.errors.DecodeError` subclass, never a bare exception.
"""

from __future__ import annotations

import functools
import json
import math
import pickletools
import struct
from collections.abc import Callable
from typing import Any

import msgspec

from serde_kit import _stack, budget
from serde_kit._text import shown
from serde_kit.decoder import check_row
from serde_kit.errors import MalformedDataError, UnknownTagError
from serde_kit.ext import codes
from serde_kit.ext.numpy import MAX_DIMS
from serde_kit.limits import DEFAULT_LIMITS, Limits

__all__ = ["EXT_NAMES", "render_json", "render_msgpack", "render_typed"]

#: ext code -> short description: the wire table's names.
EXT_NAMES: dict[int, str] = codes.NAMES

_DELTA_TYPE = "langgraph.checkpoint.serde.types._DeltaSnapshot"
#: No bound of the renderer's own: a row nests as deep as the serializer reads it.
_DEFAULT_MAX_DEPTH: int | None = None
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
    max_depth: int | None = _DEFAULT_MAX_DEPTH,
    preview: int = _DEFAULT_PREVIEW,
    bytes_preview: int = _DEFAULT_BYTES_PREVIEW,
    limits: Limits = DEFAULT_LIMITS,
) -> Any:
    """Render one stored ``(type_tag, bytes)`` pair as JSON-able data.

    Knows the serializer tags ``null``, ``bytes``, ``bytearray``, ``msgpack``,
    ``json`` (legacy LangGraph rows) and ``pickle`` (shown, never unpickled).
    Encrypted tags (``"msgpack+aesgcm"``) must be decrypted first.

    ``limits`` is the decode budget of the serializer whose rows these are: a
    msgpack row renders exactly when that serializer's wire checks accept it.

    Raises:
        UnknownTagError: the tag is not one of the above.
        MalformedDataError: the bytes do not decode.
        LimitExceededError: the row exceeds ``limits``.
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
        return render_msgpack(blob, max_depth=max_depth, preview=preview, bytes_preview=bytes_preview, limits=limits)
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
    max_depth: int | None = _DEFAULT_MAX_DEPTH,
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
            engine = _engine(limits)
            if _stack.recursion_limit() > _stack.SAFE_RECURSION_LIMIT:
                raw = _stack.on_big_stack(engine.decode, data)  # as the serializer's reader does
            else:
                raw = engine.decode(data)
            return _Renderer(max_depth, preview, bytes_preview).walk(raw, 0)
    except msgspec.DecodeError as e:
        raise MalformedDataError(f"msgpack bytes do not decode: {shown(e)}") from None
    except MemoryError:
        raise limits.refuse("max_containers", "rendering ran out of memory; values in the row", "too many") from None
    except RecursionError:
        raise MalformedDataError(
            "stored value nests too deeply (containers and typed values together exceed "
            "the interpreter's recursion limit)"
        ) from None


@functools.lru_cache(maxsize=16)
def _engine(limits: Limits) -> msgspec.msgpack.Decoder[Any]:
    """The msgspec decoder that reads a row's structure as the serializer's reader does.

    One decoder per ext nesting level, as :class:`serde_kit.decoder.Decoder` has, so
    ext payloads are decoded inside the row's own decode (nesting is counted the
    same way) and exts nest at most ``limits.max_ext_depth`` deep. The hook checks
    each ext against the wire table (:mod:`serde_kit.ext.codes`) and keeps it as an
    :class:`_Ext`; nothing is imported or built.
    """
    below: msgspec.msgpack.Decoder[Any] | None = None
    for depth in range(limits.max_ext_depth, -1, -1):
        below = msgspec.msgpack.Decoder(ext_hook=_ext_hook(below, depth + 1, limits))
    assert below is not None
    return below


def _ext_hook(
    below: msgspec.msgpack.Decoder[Any] | None, depth: int, limits: Limits
) -> Callable[[int, memoryview], Any]:
    if below is None or depth > limits.max_ext_depth:

        def too_deep(code: int, data: memoryview) -> Any:
            raise limits.refuse("max_ext_depth", "typed values nested in one another", depth)

        return too_deep
    decode = below.decode

    def hook(code: int, data: memoryview) -> Any:
        if code not in codes.KNOWN_CODES:
            raise UnknownTagError(f"unknown msgpack ext code {code}: not written by serde_kit or LangGraph")
        try:
            payload = decode(data)
        except msgspec.DecodeError as exc:
            raise MalformedDataError(
                f"ext code {code} ({codes.NAMES[code]}) holds invalid msgpack: {shown(exc)}"
            ) from None
        if code in codes.ENVELOPE_CODES:
            problem = codes.envelope_problem(code, payload)
            if problem is not None:
                raise MalformedDataError(problem)
        return _Ext(code, payload)

    return hook


def render_json(
    blob: bytes,
    /,
    *,
    max_depth: int | None = _DEFAULT_MAX_DEPTH,
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
        what = "parsing ran out of memory; values in the legacy json row"
        raise limits.refuse("max_containers", what, "too many") from None
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
    def __init__(self, max_depth: int | None, preview: int, bytes_preview: int) -> None:
        self.max_depth = max_depth
        self.preview = preview
        self.bytes_preview = bytes_preview

    def _check_depth(self, depth: int) -> None:
        if self.max_depth is not None and depth > self.max_depth:
            raise MalformedDataError(
                f"data nests deeper than {self.max_depth} levels; "
                "raise max_depth if the data is legitimate"
            )

    # -- tree walk --------------------------------------------------------

    def walk(self, root: Any, depth: int) -> Any:
        """The rendered form of a decoded row.

        Iterative: a row may nest as deeply as the serializer reads it, which
        is deeper than a recursive walk could go on Python's stack.
        """
        result: list[Any] = [None]
        todo: list[tuple[Any, int, Any, Any]] = [(root, depth, result, 0)]
        while todo:
            v, d, target, slot = todo.pop()
            self._check_depth(d)
            if isinstance(v, _Ext):
                target[slot] = self.ext(v.code, v.payload, d + 1, todo)
            elif isinstance(v, (bytes, bytearray, memoryview)):
                target[slot] = _bytes(bytes(v), self.bytes_preview)
            elif isinstance(v, float) and not math.isfinite(v):
                target[slot] = {"$float": repr(v)}
            elif isinstance(v, (list, tuple)):
                items: list[Any] = [None] * len(v)
                target[slot] = items
                todo.extend((x, d + 1, items, i) for i, x in enumerate(v))
            elif isinstance(v, dict):
                if all(isinstance(k, str) and not k.startswith("$") for k in v):
                    out = dict.fromkeys(v)
                    target[slot] = out
                    todo.extend((x, d + 1, out, k) for k, x in v.items())
                else:
                    # Non-string keys (ints, tuples) and keys that could be confused with
                    # our "$" tags keep their identity as an explicit list of pairs.
                    pairs = [[None, None] for _ in v]
                    target[slot] = {"$map": pairs}
                    for pair, (k, x) in zip(pairs, v.items(), strict=True):
                        todo.append((k, d + 1, pair, 0))
                        todo.append((x, d + 1, pair, 1))
            else:
                target[slot] = v
        return result[0]

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

    def ext(self, code: int, payload: Any, depth: int, todo: list[tuple[Any, int, Any, Any]]) -> Any:
        """The rendered ext; its argument goes on ``todo`` to be rendered in place.

        The engine's hook has already checked ``payload`` against the wire table.
        """
        self._check_depth(depth)
        if code == codes.DELTA_SNAPSHOT:
            delta: dict[str, Any] = {"$type": _DELTA_TYPE, "$code": code, "value": None}
            todo.append((payload, depth + 1, delta, "value"))
            return delta
        if code == codes.NUMPY_ARRAY:
            return self.ndarray(payload)
        module, name = payload[0], payload[1]
        out: dict[str, Any] = {"$type": f"{module}.{name}" if module else name, "$code": code}
        slot = {codes.CONSTRUCTOR_POS_ARGS: "args", codes.CONSTRUCTOR_KW_ARGS: "kwargs"}.get(code, "value")
        out[slot] = None
        todo.append((payload[2], depth + 1, out, slot))
        if len(payload) >= 4:
            out["method"] = payload[3]
        if len(payload) == 5:  # the legacy [module, name, text, "from_args", args]
            out["args"] = None
            todo.append((payload[4], depth + 1, out, "args"))
        return out

    def ndarray(self, payload: Any) -> dict[str, Any]:
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
        values = [{"real": r, "imag": i} for r, i in zip(values[::2], values[1::2], strict=True)]
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

