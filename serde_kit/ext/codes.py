"""The wire table: msgpack ext codes, their names and payload shapes, as langgraph-checkpoint writes them.

This module is the one place that says what an ext looks like on the wire. The
encoder, the decoder, the safe renderer (``serde_kit.tools.render``), the
allowlist scan and rotation all read it; a shape accepted here is accepted by
every reader, and the renderer is tested to accept exactly the rows the
decoder reads. Codes are never renumbered.

How deep exts may nest is one bound too, :attr:`serde_kit.limits.Limits.max_ext_depth`:
the writer refuses to nest deeper than its serializer's reader reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ormsgpack
from ormsgpack import Ext

#: How serde_kit packs: every value ormsgpack would write lossily (tuples, big
#: ints, subclasses, dataclasses, datetimes, enums, UUIDs) goes to ``default``.
#: Without OPT_NON_STR_KEYS ormsgpack refuses non-str keys instead of silently
#: writing datetime/UUID/enum keys as strings.
PACK_OPTIONS = (
    ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_UUID
)

#: ``[module, name, arg]`` → ``cls(arg)``
CONSTRUCTOR_SINGLE_ARG = 0
#: ``[module, name, args]`` → ``cls(*args)``
CONSTRUCTOR_POS_ARGS = 1
#: ``[module, name, kwargs]`` → ``cls(**kwargs)``
CONSTRUCTOR_KW_ARGS = 2
#: ``[module, name, arg, method]`` → ``cls.method(arg)``, methods from a fixed table only.
#: serde_kit 0.1.0 also wrote exceptions (and strings with lone surrogates) as
#: ``[module, name, text, "from_args", args]``: see :data:`LEGACY_EXCEPTION_METHOD`.
METHOD_SINGLE_ARG = 3
#: ``[module, name, fields]`` → pydantic v1 model
PYDANTIC_V1 = 4
#: ``[module, name, fields, "model_validate_json"]`` → pydantic v2 model (the method is
#: ``"model_validate"`` when nested models are stored as their fields; readers ignore it).
#: Older stock releases wrote ``[module, name, fields]`` without the method.
PYDANTIC_V2 = 5
#: ``[dtype, shape, order, buffer]`` → numpy.ndarray
NUMPY_ARRAY = 6
#: packed inner value → langgraph ``_DeltaSnapshot``
DELTA_SNAPSHOT = 7

#: Every code serde_kit or LangGraph writes; any other ext code is refused.
KNOWN_CODES = range(CONSTRUCTOR_SINGLE_ARG, DELTA_SNAPSHOT + 1)
#: Codes whose payload is an envelope ``[module, name, arg, ...]`` naming a class.
ENVELOPE_CODES = range(CONSTRUCTOR_SINGLE_ARG, PYDANTIC_V2 + 1)
#: Codes that name no class: the reader builds these values itself.
NAMELESS_CODES = frozenset({NUMPY_ARRAY, DELTA_SNAPSHOT})

NAMES = {
    CONSTRUCTOR_SINGLE_ARG: "constructor(arg)",
    CONSTRUCTOR_POS_ARGS: "constructor(*args)",
    CONSTRUCTOR_KW_ARGS: "constructor(**kwargs)",
    METHOD_SINGLE_ARG: "classmethod(arg)",
    PYDANTIC_V1: "pydantic v1 model",
    PYDANTIC_V2: "pydantic v2 model",
    NUMPY_ARRAY: "numpy array",
    DELTA_SNAPSHOT: "delta snapshot",
}

#: The method slot of the legacy 5-item ext 3 envelope.
LEGACY_EXCEPTION_METHOD = "from_args"

#: Item counts an envelope of each code may have (the legacy shapes included).
ENVELOPE_LENGTHS: dict[int, tuple[int, ...]] = {
    CONSTRUCTOR_SINGLE_ARG: (3,),
    CONSTRUCTOR_POS_ARGS: (3,),
    CONSTRUCTOR_KW_ARGS: (3,),
    METHOD_SINGLE_ARG: (4, 5),
    PYDANTIC_V1: (3,),
    PYDANTIC_V2: (4, 3),
}

#: Writes one value as an ext: ``encode(value, call)``, where ``call.pack(payload)``
#: packs a payload one nesting level down.
EncodeFn = Callable[[Any, Any], Ext]
#: Builds a value from a checked envelope ``[module, name, arg, ...]``.
RebuildFn = Callable[[list[Any]], Any]


def expect(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """``value`` when it is a ``kind``; else TypeError naming ``what`` (rebuilders' field check)."""
    if not isinstance(value, kind):
        raise TypeError(f"{what} must be {getattr(kind, '__name__', kind)}, not {type(value).__name__}")
    return value


def envelope_problem(code: int, env: Any) -> str | None:
    """What is wrong with the payload ``env`` of an envelope ext ``code``, or None when its shape is right.

    The shape only: two strings naming the class, the argument, and for code 3
    a method string (``"from_args"`` in the legacy 5-item form).
    """
    lengths = ENVELOPE_LENGTHS[code]
    if type(env) is not list or len(env) not in lengths:
        items = " or ".join(map(str, lengths))
        got = f"{len(env)} items" if type(env) is list else type(env).__name__
        return (
            f"ext code {code} ({NAMES[code]}) payload must be an array of {items} items (module, name, ...), got {got}"
        )
    if type(env[0]) is not str or type(env[1]) is not str:
        return f"ext code {code} ({NAMES[code]}) payload must start with (module: str, name: str)"
    if len(env) >= 4 and type(env[3]) is not str:
        return f"ext code {code} ({NAMES[code]}) method slot must be a string, not {type(env[3]).__name__}"
    if len(env) == 5 and env[3] != LEGACY_EXCEPTION_METHOD:
        return f"ext code {code} ({NAMES[code]}) 5-item payload must name the method {LEGACY_EXCEPTION_METHOD!r}"
    return None
