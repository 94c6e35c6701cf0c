"""msgpack ext codes and payload shapes, identical to langgraph-checkpoint's JsonPlusSerializer."""

from __future__ import annotations

import ormsgpack

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
#: ``[module, name, arg, method]`` → ``cls.method(arg)``, methods from a fixed table only
METHOD_SINGLE_ARG = 3
#: ``[module, name, fields]`` → pydantic v1 model
PYDANTIC_V1 = 4
#: ``[module, name, fields, "model_validate_json"]`` → pydantic v2 model (the method is
#: ``"model_validate"`` when nested models are stored as their fields; readers ignore it)
PYDANTIC_V2 = 5
#: ``[dtype, shape, order, buffer]`` → numpy.ndarray
NUMPY_ARRAY = 6
#: packed inner value → langgraph ``_DeltaSnapshot``
DELTA_SNAPSHOT = 7

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
