"""numpy arrays (ext 6) and numpy scalars.

Arrays are written as the stock format does: ``[dtype, shape, order, buffer]``.
``dtype`` is ``dtype.str`` except for structured dtypes, which ``dtype.str``
would flatten to ``|V<n>``: those are written as numpy's dict form
(names/formats/offsets/itemsize), which both ``numpy.dtype`` and the stock
reader accept, so field names survive. Arrays come back writable, in the
memory order they had (C or F; non-contiguous arrays come back C-ordered).

numpy is optional: nothing here imports it until an array is read, and
arrays are recognised through the numpy module the application imported.
"""

from __future__ import annotations

import sys
from math import prod
from typing import Any, cast

import msgspec
import ormsgpack
from ormsgpack import Ext

from ..allowlist import NUMPY_SCALARS
from ..errors import EncodeError
from serde_kit._text import install_hint
from ..limits import DEFAULT_LIMITS, Limits
from . import codes
from .codes import EncodeFn, RebuildFn

_PACK = ormsgpack.packb


def dtype_spec(dtype: Any) -> str | dict[str, Any]:
    """A msgpack-friendly description of ``dtype`` that ``numpy.dtype()`` turns back into it."""
    if dtype.hasobject:
        raise EncodeError(
            "numpy arrays holding Python objects (dtype=object) cannot be stored faithfully: "
            "they are memory addresses; convert to a typed dtype or to a list"
        )
    if dtype.fields is not None:
        names = list(dtype.names)
        if any(len(dtype.fields[name]) > 2 for name in names):
            raise EncodeError("numpy structured dtypes with field titles are not supported")
        return {
            "names": names,
            "formats": [dtype_spec(dtype.fields[name][0]) for name in names],
            "offsets": [dtype.fields[name][1] for name in names],
            "itemsize": dtype.itemsize,
        }
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        if base.fields is not None or base.subdtype is not None:
            raise EncodeError("numpy sub-array fields of structured dtypes are not supported")
        return f"{tuple(shape)}{base.str}"
    return cast(str, dtype.str)


#: ``dtype_spec`` by dtype object (numpy shares one object per builtin dtype; bounded).
_SPECS: dict[int, tuple[Any, str | dict[str, Any]]] = {}
_MAX_CACHED_SPECS = 256
#: Up to this size a contiguous buffer is copied out (one call) rather than exposed
#: through views of the array (several objects, cheaper only for larger buffers).
_COPY_BELOW_BYTES = 8 * 1024


def encode_array(obj: Any, call: Any) -> Ext:
    if type(obj) is not sys.modules["numpy"].ndarray:
        raise EncodeError(
            f"numpy array subclass {type(obj).__qualname__} cannot be stored faithfully; "
            "store numpy.asarray(value)"
        )
    if not 0 < obj.size <= call.limits.max_array_elements:  # the reader's bound, before any copy
        element_count(list(obj.shape), call.limits)  # (it counts dimension by dimension: (1, 0) is 1 first)
    dtype = obj.dtype
    cached = _SPECS.get(id(dtype))
    if cached is not None and cached[0] is dtype:
        spec = cached[1]
    else:
        spec = dtype_spec(dtype)
        if len(_SPECS) < _MAX_CACHED_SPECS:
            _SPECS[id(dtype)] = (dtype, spec)  # holds the dtype: its id stays its own
    buf: bytes | memoryview
    nbytes = obj.nbytes
    if nbytes == 0:  # no elements, or elements of no bytes
        order, buf = "C", b""
    elif obj.flags.c_contiguous:
        order, buf = "C", obj.tobytes() if nbytes < _COPY_BELOW_BYTES else memoryview(obj.reshape(-1).view("u1"))
    elif obj.flags.f_contiguous:
        order, buf = "F", obj.tobytes("A") if nbytes < _COPY_BELOW_BYTES else memoryview(obj.T.reshape(-1).view("u1"))
    else:
        order, buf = "C", obj.tobytes()
    payload = [spec, list(obj.shape), order, buf]
    try:
        # Text, numbers and the buffer: no typed value below, so no nested encoder.
        return Ext(codes.NUMPY_ARRAY, _PACK(payload, option=codes.PACK_OPTIONS))
    except TypeError:
        return Ext(codes.NUMPY_ARRAY, call.pack(payload))


def _scalar(obj: Any, call: Any) -> Ext:
    name = type(obj).__name__
    if name not in NUMPY_SCALARS:
        raise EncodeError(f"numpy scalar type {name} is not supported")
    # .item() is exact for these; longdouble and the time/text kinds go as 0-d arrays.
    exact_item = obj.dtype.kind in "biufc" and name not in ("longdouble", "clongdouble")
    arg = obj.item() if exact_item else sys.modules["numpy"].asarray(obj)
    return Ext(codes.CONSTRUCTOR_SINGLE_ARG, call.pack(["numpy", name, arg]))


def resolve(cls: type) -> EncodeFn | None:
    np = sys.modules.get("numpy")
    if np is None:
        return None
    if issubclass(cls, np.ndarray):
        return encode_array
    if issubclass(cls, np.generic):
        return _scalar
    return None


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise TypeError("this value holds a numpy array; install numpy: " + install_hint("numpy")) from None
    return numpy


#: numpy's own limit on array dimensions.
MAX_DIMS = 64


def element_count(shape: list[int], limits: Limits) -> int:
    """Elements of an array of ``shape``, checked against numpy's dimension limit and
    ``limits.max_array_elements`` before anything large is multiplied out."""
    if len(shape) > MAX_DIMS:
        raise ValueError(f"numpy arrays have at most {MAX_DIMS} dimensions, the stored shape has {len(shape)}")
    count = 1
    for n in shape:
        count *= n
        if count > limits.max_array_elements:
            raise limits.refuse("max_array_elements", "elements of a stored numpy array", f"more than {limits.max_array_elements}")
    return count


def rebuild_array(env: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Build a writable ndarray from a decoded ext 6 payload; its memory is its stored buffer."""
    if not isinstance(env, list) or len(env) != 4:
        raise ValueError("numpy payload must be [dtype, shape, order, buffer]")
    spec, shape, order, buf = env
    np = _numpy()
    if not isinstance(spec, (str, dict)):
        raise ValueError("numpy dtype must be a string or a dict")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError("numpy shape must be a list of non-negative integers")
    count = element_count(shape, limits)
    dtype = _dtype(np, spec) if type(spec) is str else np.dtype(spec)
    if dtype.hasobject:
        raise ValueError("refusing a numpy object dtype: it would read raw memory addresses")
    if order not in ("C", "F"):
        raise ValueError(f"numpy order must be 'C' or 'F', not {order!r}")
    if not isinstance(buf, bytes):
        raise ValueError("numpy buffer must be bytes")
    if len(buf) != count * dtype.itemsize:
        raise ValueError(
            f"numpy buffer holds {len(buf)} bytes, shape {shape} of {dtype} needs {count * dtype.itemsize}"
        )
    if count == 0 or dtype.itemsize == 0:
        # numpy gives a flexible dtype of size 0 (|S0, <U0) size 1 when it makes an
        # array: ask with an empty one before allocating any elements.
        if count and np.zeros(0, dtype=dtype).itemsize:
            raise ValueError(f"numpy dtype {dtype.str} has no size: its elements are not in the stored bytes")
        return np.zeros(shape, dtype=dtype, order=order)
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order=order).copy(order="K")


def rebuild_scalar(env: list[Any]) -> Any:
    np = _numpy()
    scalar_type = getattr(np, env[1])  # env[1] was checked against NUMPY_SCALARS
    arg = env[2]
    if isinstance(arg, np.ndarray):
        if arg.shape != () or arg.dtype.type is not scalar_type:
            raise ValueError(f"expected a 0-d {env[1]} array")
        return arg[()]
    if type(arg) not in (bool, int, float, complex):
        raise TypeError(f"numpy.{env[1]} needs a number, got {type(arg).__name__}")
    if env[1] in _SIZED_BY_NUMBER:
        # numpy.void(n) allocates n bytes: a stored number must not choose an allocation.
        raise TypeError(f"numpy.{env[1]} is stored as a 0-d array, not a number")
    return scalar_type(arg)


_SIZED_BY_NUMBER = frozenset({"void", "bytes_", "str_"})


def scalar_rebuilders() -> dict[tuple[int, str, str], RebuildFn]:
    return {(codes.CONSTRUCTOR_SINGLE_ARG, "numpy", name): rebuild_scalar for name in NUMPY_SCALARS}


# --- large arrays without intermediate copies --------------------------------
#
# Through ormsgpack an array's buffer is copied into the ext payload, then the
# payload into the outer message (and on read, into a bytes object, then into
# the array). For a large array stored on its own (a PostgresSaver channel
# blob, a pending write) the two functions below write and read the same bytes
# with one copy, like pickle. They handle only the plain layout and hand
# anything else back to the general path.

#: Arrays at least this large are written with a single copy (:func:`dumps_large`).
FAST_PATH_MIN_BYTES = 64 * 1024
#: Maps and arrays in a row :func:`dumps_large` writes: the envelope and the shape.
LARGE_ROW_CONTAINERS = 2


def _bin_header(length: int) -> bytes:
    if length < 1 << 8:
        return b"\xc4" + length.to_bytes(1, "big")
    if length < 1 << 16:
        return b"\xc5" + length.to_bytes(2, "big")
    return b"\xc6" + length.to_bytes(4, "big")


def dumps_large(obj: Any, pack: Any, limits: Limits = DEFAULT_LIMITS) -> bytes | None:
    """Bytes of ext 6 for a large top-level ndarray, with a single copy; None for the general path.
    Raises :class:`LimitExceededError` for an array its reader (``limits``) refuses."""
    np = sys.modules.get("numpy")
    if np is None or type(obj) is not np.ndarray or obj.nbytes < FAST_PATH_MIN_BYTES:
        return None
    if not 0 < obj.size <= limits.max_array_elements:  # the reader's bound, as in encode_array
        element_count(list(obj.shape), limits)
    if obj.dtype.fields is not None or obj.dtype.hasobject or obj.dtype.subdtype is not None:
        return None
    if obj.flags.c_contiguous:
        order, buf = "C", memoryview(obj.reshape(-1).view("u1"))
    elif obj.flags.f_contiguous:
        order, buf = "F", memoryview(obj.T.reshape(-1).view("u1"))
    else:  # one gathering copy, then the join
        order, buf = "C", memoryview(np.ascontiguousarray(obj).reshape(-1).view("u1"))
    head = pack([obj.dtype.str, list(obj.shape), order])  # a 3-array; the buffer makes it 4
    payload_head = b"\x94" + head[1:] + _bin_header(len(buf))
    size = len(payload_head) + len(buf)
    if size >= 1 << 32:
        return None
    ext_head = b"\xc9" + size.to_bytes(4, "big") + bytes([codes.NUMPY_ARRAY])
    return b"".join((ext_head, payload_head, buf))


def _read_uint(data: bytes, pos: int) -> tuple[int, int] | None:
    first = data[pos]
    if first <= 0x7F:
        return first, pos + 1
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}.get(first)
    if width is None:
        return None
    return int.from_bytes(data[pos + 1 : pos + 1 + width], "big"), pos + 1 + width


def _read_str(data: bytes, pos: int) -> tuple[str, int] | None:
    first = data[pos]
    if 0xA0 <= first <= 0xBF:
        length, pos = first & 0x1F, pos + 1
    elif first == 0xD9:
        length, pos = data[pos + 1], pos + 2
    else:
        return None
    return bytes(data[pos : pos + length]).decode("ascii"), pos + length


#: dtypes by their stored ``dtype.str`` (bounded: stored bytes choose the keys).
_DTYPES: dict[str, Any] = {}
_MAX_CACHED_DTYPES = 256


def dtype_cache() -> dict[str, Any]:
    """The dtypes made so far, by their stored spec (only :func:`_dtype` fills it; the
    compiled reader looks plain-layout arrays' specs up in it)."""
    return _DTYPES


def _dtype(np: Any, spec: str) -> Any:
    dtype = _DTYPES.get(spec)
    if dtype is None:
        dtype = np.dtype(spec)
        if len(_DTYPES) < _MAX_CACHED_DTYPES:
            _DTYPES[spec] = dtype
    return dtype


#: The plain layout, typed: a row that fits it holds nothing the prescan looks for
#: (no map, no ext, no timestamp), so msgspec may read it unchecked.
_PLAIN_LAYOUT = msgspec.msgpack.Decoder(tuple[str, list[int], str, bytes])


def loads_plain(payload: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The array of an ext 6 payload in the plain layout (a dtype string, a shape of
    ints, "C" or "F", a bin buffer), or None for anything else (the general path
    then reads it and reports what is wrong)."""
    try:
        spec, shape, order, buf = _PLAIN_LAYOUT.decode(payload)
    except msgspec.DecodeError:  # ValidationError included: not the plain layout
        return None
    if order not in ("C", "F") or len(shape) > MAX_DIMS or (shape and min(shape) < 0):
        return None
    count = prod(shape)
    if count > limits.max_array_elements:
        element_count(shape, limits)  # raises, naming the limit
    np = sys.modules.get("numpy") or _numpy()
    dtype = _DTYPES.get(spec) or _dtype(np, spec)
    itemsize = dtype.itemsize
    if dtype.hasobject or not itemsize or not count or len(buf) != count * itemsize:
        return None
    # The array over the stored bytes, then its own writable copy in the same order.
    return np.ndarray(shape, dtype, buf, 0, None, order).copy(order="K")


_BIN_WIDTHS = {0xC4: 1, 0xC5: 2, 0xC6: 4}


def loads_large(data: Any, start: int, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The array of an ext 6 payload that starts at ``data[start]`` and runs to the end,
    copied once; None when the payload is not the plain layout (general path)."""
    try:
        if len(data) - start < FAST_PATH_MIN_BYTES or data[start] != 0x94:
            return None
        found = _read_str(data, start + 1)
        if found is None:
            return None
        spec, pos = found
        first = data[pos]
        if not 0x90 <= first <= 0x9F:
            return None
        shape, pos = [], pos + 1
        for _ in range(first & 0x0F):
            item = _read_uint(data, pos)
            if item is None:
                return None
            value, pos = item
            shape.append(value)
        found = _read_str(data, pos)
        if found is None:
            return None
        order, pos = found
        kind = data[pos]
        width = _BIN_WIDTHS.get(kind)
        if width is None:
            return None
        length = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
        pos += 1 + width
    except (IndexError, UnicodeDecodeError):
        return None
    if pos + length != len(data):
        return None
    np = _numpy()
    dtype = _dtype(np, spec)
    count = element_count(shape, limits)
    if dtype.hasobject or order not in ("C", "F") or not count or not dtype.itemsize or length != count * dtype.itemsize:
        return None
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=pos)
    return flat.reshape(shape, order=order).copy(order="K")
