"""pydantic models (v2 and v1) and pydantic secret types.

Written as the stock format does (ext 5 / ext 4, ``[module, name, fields]``)
but with the model's own attribute values rather than ``model_dump()``: nested
models, tuples and other exact types then go through serde_kit's own writers
and come back as they were. A stock reader still builds the model from them.

pydantic is never imported here; models are recognised through the pydantic
module the application already imported.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from ormsgpack import Ext

from . import codes
from .stdlib import EncodeFn, RebuildFn, expect
from .user import importable_key


def _v2_model(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    root = _is_root_model(cls)

    def encode(obj: Any, call: Any) -> Ext:
        if root:
            fields = obj.root
        else:
            fields = obj.__dict__
            extra = obj.__pydantic_extra__
            if extra:
                fields = {**fields, **extra}
        return Ext(codes.PYDANTIC_V2, call.pack([module, name, fields, "model_validate_json"]))

    return encode


def _v1_model(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    return lambda obj, call: Ext(codes.PYDANTIC_V1, call.pack([module, name, dict(obj.__dict__)]))


def _secret(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    return lambda obj, call: Ext(
        codes.CONSTRUCTOR_SINGLE_ARG, call.pack([module, name, obj.get_secret_value()])
    )


def _is_root_model(cls: type) -> bool:
    pydantic = sys.modules.get("pydantic")
    root = getattr(pydantic, "RootModel", None)
    return root is not None and issubclass(cls, root)


def resolve(cls: type) -> EncodeFn | None:
    """Writer for a pydantic model or secret type, or None."""
    v2 = sys.modules.get("pydantic")
    if v2 is not None:
        if issubclass(cls, v2.BaseModel):
            return _v2_model(cls)
        secret_bases = tuple(
            base for base in (getattr(v2, "SecretStr", None), getattr(v2, "SecretBytes", None)) if base
        )
        if secret_bases and issubclass(cls, secret_bases):
            return _secret(cls)
    v1 = sys.modules.get("pydantic.v1")
    if v1 is not None and issubclass(cls, v1.BaseModel):
        return _v1_model(cls)
    return None


def is_v2_model(cls: Any) -> bool:
    v2 = sys.modules.get("pydantic")
    return v2 is not None and isinstance(cls, type) and issubclass(cls, v2.BaseModel)


def v2_rebuilder(cls: Any) -> RebuildFn:
    """Validate stored fields into ``cls``: handles our shallow fields and the stock model_dump()."""
    if not is_v2_model(cls):
        raise TypeError(f"{cls!r} is not a pydantic v2 model")
    if _is_root_model(cls):
        return lambda env: cls.model_validate(env[2])
    computed = frozenset(getattr(cls, "model_computed_fields", {}) or {})
    by_name = "by_name" in inspect.signature(cls.model_validate).parameters
    base_init = sys.modules["pydantic"].BaseModel.__init__
    # A model with its own __init__ (langchain messages) validates inside it;
    # model_validate would call that __init__ and validate twice.
    custom_init = cls.__init__ is not base_init

    def validate(fields: dict) -> Any:
        if by_name:
            return cls.model_validate(fields, by_name=True)
        return cls.model_validate(fields)

    def rebuild(env: list) -> Any:
        fields = expect(env[2], dict, "model fields")
        if computed & fields.keys():
            fields = {k: v for k, v in fields.items() if k not in computed}
        if custom_init:
            try:
                return cls(**fields)
            except Exception:  # e.g. fields stored by name behind aliases, non-str keys
                pass
        return validate(fields)

    return rebuild


def v1_rebuilder(cls: Any) -> RebuildFn:
    """``cls(**fields)``. The stock writer also uses ext 4 for any object with a
    ``.dict()`` method (langgraph's store ``Item``), so this is not limited to pydantic."""
    if not callable(cls):
        raise TypeError(f"{cls!r} cannot be called")
    return lambda env: cls(**expect(env[2], dict, "fields"))
