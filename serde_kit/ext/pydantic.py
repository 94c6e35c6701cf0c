"""pydantic models (v2 and v1) and pydantic secret types.

Written as the stock format does (ext 5 / ext 4, ``[module, name, fields]``)
but with the model's own attribute values rather than ``model_dump()``: nested
models, tuples and other exact types then go through serde_kit's own writers
and come back as they were. A stock reader still builds the model from them.

A nested model whose field is declared as exactly its class (``row: Row``,
``rows: list[Row]``), with nothing between the stored value and pydantic's own
validation of that class, is written as its fields (:func:`inline_plan`): the
outer model is then validated once, nested models and all, as stock rows are.
The envelope's method names :data:`INLINED_METHOD` then, so a model that does
not validate can still be rebuilt as it was stored.

pydantic is never imported here; models are recognised through the pydantic
module the application already imported.
"""

from __future__ import annotations

import inspect
import sys
import typing
import warnings
from typing import Any, cast

from ormsgpack import Ext

from .. import events
from .._text import shown
from ..errors import RebuildError, SerdeWarning
from . import codes, langchain
from .codes import EncodeFn, RebuildFn, expect
from .user import importable_key


#: The method a pydantic v2 envelope names; stock readers ignore it and validate the fields.
STOCK_METHOD = "model_validate_json"
#: The method of an envelope whose nested models (per :func:`inline_plan`) are stored as their fields.
INLINED_METHOD = "model_validate"

#: Per model class: the fields whose nested models are stored as their fields,
#: each with the nested class and whether the field is a list of them.
InlinePlan = dict[str, tuple[type, bool]]
_PLANS: dict[type, InlinePlan] = {}


def inline_plan(cls: Any) -> InlinePlan:
    """The fields of model ``cls`` whose nested models may be stored as their fields.

    A field qualifies when it is declared as exactly a model class ``T`` or
    ``list[T]``, with no metadata (constraints, ``BeforeValidator``...) and no
    validator of ``cls`` on it, ``cls`` has no before/wrap model validator,
    neither class is strict or has its own ``__init__``, and ``T`` has no
    aliases: validating ``T``'s stored fields inside ``cls`` then does what
    validating them on their own does.
    """
    found = _PLANS.get(cls)
    if found is None:
        found = _make_plan(cls)
        if getattr(cls, "__pydantic_complete__", False):  # a class still being defined may qualify later
            _PLANS[cls] = found
    return found


def _make_plan(cls: Any) -> InlinePlan:
    if not _plain_model(cls):
        return {}
    decorators = cls.__pydantic_decorators__
    if decorators.root_validators or any(d.info.mode != "after" for d in decorators.model_validators.values()):
        return {}
    validated = {field for group in (decorators.validators, decorators.field_validators) for d in group.values() for field in d.info.fields}
    if "*" in validated:
        return {}
    plan: InlinePlan = {}
    for field, info in cls.model_fields.items():
        if field in validated or info.metadata:
            continue
        target, many = info.annotation, False
        if typing.get_origin(target) is list:
            args = typing.get_args(target)
            target, many = (args[0] if len(args) == 1 else None), True
        if target is not cls and _plain_model(target):
            nested: Any = target
            if all(f.alias is None and f.validation_alias is None for f in nested.model_fields.values()):
                plan[field] = (nested, many)
    return plan


def _plain_model(cls: Any) -> bool:
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(cls, type) or not issubclass(cls, pydantic.BaseModel):
        return False
    model: Any = cls
    return (
        not _is_root_model(model)
        and model.__init__ is pydantic.BaseModel.__init__
        and bool(getattr(model, "__pydantic_complete__", False))
        and not model.model_config.get("strict")
    )


def _model_fields(obj: Any) -> dict[str, Any]:
    fields: dict[str, Any] = obj.__dict__
    extra = obj.__pydantic_extra__
    return {**fields, **extra} if extra else fields


class _Ambiguous(Exception):
    """A planned field holds a plain dict: a reader could not tell it from an inlined model."""


def _inlined(fields: dict[str, Any], plan: InlinePlan) -> dict[str, Any] | None:
    """``fields`` with the nested models of ``plan`` stored as their fields; None when
    there are none. Raises :class:`_Ambiguous`."""
    out: dict[str, Any] | None = None
    for key, (target, many) in plan.items():
        value = fields.get(key)
        if many:
            if type(value) is not list or not value:
                continue
            if dict in map(type, value):
                raise _Ambiguous
            new: Any = [_as_fields(item) if type(item) is target else item for item in value]
        elif type(value) is target:
            new = _as_fields(value)
        elif type(value) is dict:
            raise _Ambiguous
        else:
            continue
        if out is None:
            out = dict(fields)
        out[key] = new
    return out


def _as_fields(obj: Any) -> Any:
    """A nested model as its fields (its own nested models inlined too), or the model
    itself when its fields cannot be inlined unambiguously."""
    fields = _model_fields(obj)
    plan = inline_plan(type(obj))
    if plan:
        try:
            inlined = _inlined(fields, plan)
        except _Ambiguous:
            return obj  # written as its own ext
        if inlined is not None:
            return inlined
    return fields


def _v2_model(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    root = _is_root_model(cls)
    plan = {} if root else inline_plan(cls)
    streamed = langchain.is_streamed_chunk(cls)

    def encode(obj: Any, call: Any) -> Ext:
        method = STOCK_METHOD
        if root:
            fields = obj.root
        else:
            fields = _model_fields(obj)
            if streamed:  # the reader's bound on its tool-call arguments
                langchain.check_partial_json(fields, call.limits, charge=False)
            if plan:
                try:
                    inlined = _inlined(fields, plan)
                except _Ambiguous:
                    inlined = None
                if inlined is not None:
                    fields, method = inlined, INLINED_METHOD
        return Ext(codes.PYDANTIC_V2, call.pack([module, name, fields, method]))

    return encode


def _v1_model(cls: type) -> EncodeFn:
    module, name = importable_key(cls)
    return lambda obj, call: Ext(codes.PYDANTIC_V1, call.pack([module, name, dict(obj.__dict__)]))


def _secret(cls: type) -> EncodeFn:
    # pydantic v2 and pydantic.v1 secrets alike: ext 0 ``[module, name, secret value]``.
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
    if v1 is not None:
        if issubclass(cls, v1.BaseModel):
            return _v1_model(cls)
        if issubclass(cls, (v1.SecretStr, v1.SecretBytes)):
            return _secret(cls)
    return None


def is_generic_model(cls: Any) -> bool:
    """Whether ``cls`` is an unparametrised generic pydantic v2 model (``Box`` of ``Box[T]``)."""
    if not is_v2_model(cls):
        return False
    meta = cls.__dict__.get("__pydantic_generic_metadata__")
    return isinstance(meta, dict) and meta.get("origin") is None and bool(meta.get("parameters"))


def is_v2_model(cls: Any) -> bool:
    v2 = sys.modules.get("pydantic")
    return v2 is not None and isinstance(cls, type) and issubclass(cls, v2.BaseModel)


#: How stored pydantic models are built (``Serializer(validate=...)``).
VALIDATE_MODES = ("auto", "always")


def v2_rebuilder(cls: Any, mode: str = "auto") -> RebuildFn:
    """Validate stored fields into ``cls``: handles our shallow fields and the stock model_dump().

    ``mode``: ``"auto"`` installs the stored fields of curated langchain-core
    messages and Documents directly when they have the validated shape
    (:func:`serde_kit.ext.langchain.fast_builder`) and validates everything else;
    ``"always"`` validates every model.
    """
    if not is_v2_model(cls):
        raise TypeError(f"{cls!r} is not a pydantic v2 model")
    if _is_root_model(cls):
        return lambda env: cls.model_validate(env[2])
    fast = langchain.fast_builder(cls) if mode != "always" else None
    computed = frozenset(getattr(cls, "model_computed_fields", {}) or {})
    by_name = "by_name" in inspect.signature(cls.model_validate).parameters
    base_init = sys.modules["pydantic"].BaseModel.__init__
    # A model with its own __init__ (langchain messages) validates inside it;
    # model_validate would call that __init__ and validate twice.
    custom_init = cls.__init__ is not base_init

    removed = _REMOVED_FIELDS.get((cls.__module__, cls.__qualname__), {})
    validation_error = sys.modules["pydantic"].ValidationError
    plan = inline_plan(cls)

    warned: Warned = set()

    def unvalidated(env: list[Any], fields: dict[str, Any], error: Exception) -> Any:
        if mode == "always":
            raise refusal(cls, error) from None
        if plan and len(env) > 3 and env[3] == INLINED_METHOD:
            fields = _fold(fields, plan, validation_error, warned)
        return _construct_unvalidated(cls, fields, error, warned)

    def validate(fields: dict[str, Any]) -> Any:
        # What model_validate does, one frame shorter (read per call: a model whose
        # schema is not complete yet has a placeholder validator until it is).
        if by_name:
            return cls.__pydantic_validator__.validate_python(fields, by_name=True)
        return cls.__pydantic_validator__.validate_python(fields)

    if fast is None and not computed and not removed and not custom_init:
        # The common case (a plain user model): validation in this one frame.
        def rebuild_plain(env: list[Any]) -> Any:
            fields = env[2]
            if type(fields) is not dict:
                expect(fields, dict, "model fields")
            try:
                if by_name:
                    return cls.__pydantic_validator__.validate_python(fields, by_name=True)
                return cls.__pydantic_validator__.validate_python(fields)
            except validation_error as exc:
                return unvalidated(env, fields, exc)

        return rebuild_plain

    def rebuild(env: list[Any]) -> Any:
        fields = expect(env[2], dict, "model fields")
        if fast is not None:
            built = fast(fields)
            if built is not None:
                return built
        if computed & fields.keys():
            fields = {k: v for k, v in fields.items() if k not in computed}
        if removed and removed.keys() & fields.keys():
            fields = _without_old_defaults(fields, removed)
        if custom_init:
            try:
                return cls(**fields)
            except Exception:  # e.g. fields stored by name behind aliases, non-str keys
                pass
        try:
            return validate(fields)
        except validation_error as exc:
            return unvalidated(env, fields, exc)

    return rebuild


def _fold(fields: dict[str, Any], plan: InlinePlan, validation_error: type[Exception], warned: Warned) -> dict[str, Any]:
    """``fields`` of a model that does not validate, with its inlined nested models
    rebuilt on their own, as they were before they were stored (see :func:`inline_plan`)."""
    out = dict(fields)
    for key, (target, many) in plan.items():
        value = out.get(key)
        if many and type(value) is list:
            out[key] = [_from_fields(target, item, validation_error, warned) if type(item) is dict else item for item in value]
        elif type(value) is dict:
            out[key] = _from_fields(target, value, validation_error, warned)
    return out


def _from_fields(cls: Any, fields: dict[str, Any], validation_error: type[Exception], warned: Warned) -> Any:
    try:
        return cls.model_validate(fields)
    except validation_error as exc:
        plan = inline_plan(cls)
        return _construct_unvalidated(cls, _fold(fields, plan, validation_error, warned) if plan else fields, exc, warned)


#: Fields langchain-core has since removed, with the default they always held
#: then: rows written with langchain-core 0.3 carry ``example=False`` on every
#: human and AI message. Dropped only when they hold that default, so the
#: message equals the same message built today; any other value is kept (as extra).
_REMOVED_FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    (module, name): {"example": False}
    for module, names in (
        ("langchain_core.messages.human", ("HumanMessage", "HumanMessageChunk")),
        ("langchain_core.messages.ai", ("AIMessage", "AIMessageChunk")),
    )
    for name in names
}


def _without_old_defaults(fields: dict[str, Any], removed: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in fields.items()
        if not (key in removed and type(value) is type(removed[key]) and value == removed[key])
    }


def refusal(cls: Any, error: Exception) -> RebuildError:
    """The error for a stored model whose fields fail validation, under ``validate="always"``."""
    module, name = getattr(cls, "__module__", "?"), getattr(cls, "__qualname__", "?")
    return RebuildError(
        f"stored {shown(module)}.{shown(name)} does not validate ({_first_failure(error)}); "
        "Serializer(validate='always') refuses such models: fix the stored row, or read it "
        "with validate='auto', which builds it unvalidated with a warning",
        module=module,
        name=name,
    )


def _first_failure(error: Exception) -> str:
    try:
        first = error.errors()[0]  # type: ignore[attr-defined]  # pydantic's (v2 and v1) ValidationError
        where = ".".join(map(str, first.get("loc", ()))) or "the model"
        return f"field {shown(where, 100)}: {shown(str(first.get('msg', '')), 200)}"
    except Exception:
        return shown(str(error), 200)


#: Classes a reader reported as built unvalidated (one set per reader: bounded by its
#: allowed classes).
Warned = set[Any]


def _report_unvalidated(cls: Any, error: Exception, warned: Warned) -> None:
    """Say, once per class and reader, that a stored model was built without validation.

    With the warning goes LangGraph's serde event (``msgpack_model_unvalidated``)."""
    if cls in warned:
        return
    warned.add(cls)
    events.model_unvalidated(cls.__module__, cls.__qualname__)
    warnings.warn(
        f"stored {shown(cls.__module__)}.{shown(cls.__qualname__)} does not validate "
        f"({_first_failure(error)}); it was built unvalidated with model_construct, as the "
        "stock reader builds it. Serializer(validate='always') refuses such rows instead",
        SerdeWarning,
        stacklevel=3,
    )


def is_model(cls: Any) -> bool:
    """Whether ``cls`` is a pydantic (v2 or v1) model class."""
    v1 = sys.modules.get("pydantic.v1")
    return is_v2_model(cls) or (v1 is not None and isinstance(cls, type) and issubclass(cls, v1.BaseModel))


def construct_unvalidated(cls: Any, fields: dict[str, Any], error: Exception, mode: str, warned: Warned) -> Any:
    """:func:`_construct_unvalidated` for v2 models, ``construct`` for pydantic.v1 ones;
    under ``mode="always"`` the refusal instead."""
    if mode == "always":
        raise refusal(cls, error) from None
    if is_v2_model(cls):
        return _construct_unvalidated(cls, fields, error, warned)
    if not all(isinstance(key, str) and key[:1] != "_" for key in fields) or not fields.keys() <= cls.__fields__.keys():
        raise error
    _report_unvalidated(cls, error, warned)
    return cls.construct(**fields)


def _construct_unvalidated(cls: Any, fields: dict[str, Any], error: Exception, warned: Warned) -> Any:
    """A model whose stored fields do not validate: it was stored that way (built with
    ``model_construct`` or mutated without ``validate_assignment``), and the stock
    reader builds it with ``model_construct`` too. Only the model's own fields (and
    extra ones when it allows extra) are set; anything else re-raises the error."""
    # A stored key never sets a private attribute ("_is_admin" would land in
    # __pydantic_private__ of a model that allows extra fields).
    if not all(isinstance(key, str) and key[:1] != "_" for key in fields):
        raise error
    known = cls.model_fields
    allows_extra = (getattr(cls, "model_config", None) or {}).get("extra") == "allow"
    if not allows_extra and not fields.keys() <= known.keys():
        raise error
    _report_unvalidated(cls, error, warned)
    return cls.model_construct(**fields)


def v1_rebuilder(cls: Any, mode: str = "auto") -> RebuildFn:
    """``cls(**fields)``. The stock writer also uses ext 4 for any object with a
    ``.dict()`` method (langgraph's store ``Item``), so this is not limited to pydantic.
    A pydantic.v1 model whose stored fields do not validate is built with
    ``construct`` (as stored, as the stock reader does)."""
    if not callable(cls):
        raise TypeError(f"{cls!r} cannot be called")
    v1 = sys.modules.get("pydantic.v1")
    is_v1 = v1 is not None and isinstance(cls, type) and issubclass(cls, v1.BaseModel)
    warned: Warned = set()

    def rebuild(env: list[Any]) -> Any:
        fields = expect(env[2], dict, "fields")
        if not is_v1:
            return cls(**fields)
        try:
            return cls(**fields)
        except cast(Any, v1).ValidationError as exc:  # v1 is the module whenever is_v1
            return construct_unvalidated(cls, fields, exc, mode, warned)

    return rebuild
