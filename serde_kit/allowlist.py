"""Which stored types a decoder may import and construct.

An :class:`Allowlist` is a set of ``(module, qualname)`` pairs. Decoding checks
the pair named in the data against it *before* importing anything; a pair that
is not listed raises :class:`~serde_kit.errors.BlockedTypeError`.

Entries come from classes, ``(module, qualname)`` pairs, ``"module:qualname"``
strings, a state schema (:meth:`Allowlist.from_schema`), the environment
variable ``SERDE_KIT_ALLOW`` and the file named by ``SERDE_KIT_ALLOW_FILE``
(:meth:`Allowlist.from_env`). The file holds one ``module:qualname`` per line;
blank lines and ``#`` comments are ignored.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import os
import re
import sys
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, cast

from .errors import ConfigError

if TYPE_CHECKING:  # optional dependencies, only for the casts in _pydantic_fields
    import pydantic
    import pydantic.v1

__all__ = ["Allowlist", "AllowEntry", "ENV_VAR", "ENV_FILE_VAR", "type_key"]

ENV_VAR = "SERDE_KIT_ALLOW"
ENV_FILE_VAR = "SERDE_KIT_ALLOW_FILE"

AllowEntry = Union[type, "tuple[str, str]", str]

_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
)

#: numpy scalar types that decode through a fixed table (never getattr by name).
NUMPY_SCALARS = frozenset(
    {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float16", "float32", "float64", "longdouble", "complex64",
        "complex128", "clongdouble", "datetime64", "timedelta64", "str_", "bytes_",
        "void",
    }
)  # fmt: skip

_PATH_NAMES = ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath")

_DEFAULT_ENTRIES: frozenset[tuple[str, str]] = frozenset(
    {
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("decimal", "Decimal"),
        ("fractions", "Fraction"),
        ("builtins", "set"),
        ("builtins", "str"),
        ("builtins", "frozenset"),
        ("builtins", "tuple"),
        ("builtins", "dict"),
        ("builtins", "int"),
        ("builtins", "complex"),
        ("collections", "deque"),
        ("collections", "OrderedDict"),
        ("collections", "Counter"),
        ("ipaddress", "IPv4Address"),
        ("ipaddress", "IPv4Interface"),
        ("ipaddress", "IPv4Network"),
        ("ipaddress", "IPv6Address"),
        ("ipaddress", "IPv6Interface"),
        ("ipaddress", "IPv6Network"),
        ("zoneinfo", "ZoneInfo"),
        ("re", "compile"),
        ("pydantic.types", "SecretStr"),
        ("pydantic.types", "SecretBytes"),
        ("pydantic.v1.types", "SecretStr"),
        ("pydantic.v1.types", "SecretBytes"),
        ("langchain_core.messages.base", "BaseMessage"),
        ("langchain_core.messages.base", "BaseMessageChunk"),
        ("langchain_core.messages.human", "HumanMessage"),
        ("langchain_core.messages.human", "HumanMessageChunk"),
        ("langchain_core.messages.ai", "AIMessage"),
        ("langchain_core.messages.ai", "AIMessageChunk"),
        ("langchain_core.messages.system", "SystemMessage"),
        ("langchain_core.messages.system", "SystemMessageChunk"),
        ("langchain_core.messages.chat", "ChatMessage"),
        ("langchain_core.messages.chat", "ChatMessageChunk"),
        ("langchain_core.messages.tool", "ToolMessage"),
        ("langchain_core.messages.tool", "ToolMessageChunk"),
        ("langchain_core.messages.function", "FunctionMessage"),
        ("langchain_core.messages.function", "FunctionMessageChunk"),
        ("langchain_core.messages.modifier", "RemoveMessage"),
        ("langchain_core.documents.base", "Document"),
        ("langgraph.types", "Send"),
        ("langgraph.types", "TimeoutPolicy"),
        ("langgraph.types", "Interrupt"),
        ("langgraph.types", "Command"),
        ("langgraph.types", "StateSnapshot"),
        ("langgraph.types", "PregelTask"),
        ("langgraph.types", "Overwrite"),
        ("langgraph.store.base", "Item"),
        ("langgraph.store.base", "SearchItem"),
        ("langgraph.store.base", "GetOp"),
    }
    | {(module, name) for module in ("pathlib", "pathlib._local") for name in _PATH_NAMES}
    | {("builtins", name) for name in _BUILTIN_EXCEPTIONS}
    | {("numpy", name) for name in NUMPY_SCALARS}
)


def type_key(cls: type) -> tuple[str, str]:
    """The ``(module, qualname)`` pair serde_kit writes for ``cls``.

    Passing this pair (rather than the class) to ``allow=`` allows just that
    class, not the types its fields declare.
    """
    cls = generic_origin(cls)
    return cls.__module__, cls.__qualname__


def generic_origin(cls: type) -> type:
    """The unparametrized class of a parametrized generic pydantic model
    (``Box`` for ``Box[int]``), else ``cls``."""
    meta = cls.__dict__.get("__pydantic_generic_metadata__")
    origin = meta.get("origin") if isinstance(meta, dict) else None
    while isinstance(origin, type):
        cls = origin
        meta = cls.__dict__.get("__pydantic_generic_metadata__")
        origin = meta.get("origin") if isinstance(meta, dict) else None
    return cls


def origin_name(name: str) -> str:
    """``"Box"`` for a stored generic model name such as ``"Box[int]"``: the stock
    writer stores ``__name__``, which names a class no module has."""
    cut = name.find("[")
    return name[:cut] if cut > 0 and name.endswith("]") else name


#: What an allowlist entry may be, for the errors that refuse one.
ACCEPTED_FORMS = (
    "a class, a (module, qualname) pair, or a 'module:QualName' string such as 'myapp.models:Document' "
    "(one type per entry: a Python list item, one line of an allow file, one --allow; "
    "only SERDE_KIT_ALLOW separates entries with commas)"
)


def _dotted(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _entry_error(entry: Any, why: str) -> ConfigError:
    return ConfigError(f"allowlist entry {entry!r} {why}; accepted: {ACCEPTED_FORMS}")


def _check_names(entry: Any, module: str, name: str) -> tuple[str, str]:
    # A generic model's stored name ("Box[int, str]") is allowed as written: check the class part.
    base = origin_name(name)
    if "," in module or "," in base:
        parts = [part.strip() for part in f"{module}:{name}".split(",") if part.strip()]
        listed = "[" + ", ".join(repr(part) for part in parts) + "]"
        flags = " ".join(f"--allow {part}" for part in parts)
        raise _entry_error(entry, f"holds several types: give one per entry, e.g. allow={listed} or {flags}")
    if not _dotted(module):
        raise _entry_error(entry, f"has module {module!r}, which is not a dotted Python module name")
    if not _dotted(base):
        raise _entry_error(entry, f"has name {name!r}, which is not a class's (dotted) qualified name")
    return module, name


#: A parsed stored name: ``(qualname, generic arguments or None)``, arguments parsed alike.
TypeName = tuple[str, "tuple[TypeName, ...] | None"]
#: Longest stored type name parsed (a generic model's name grows with its arguments).
MAX_NAME_LENGTH = 1024
_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|\[|\]|, ?")
#: Argument names a generic model's stored name may hold besides allowed classes:
#: what pydantic writes for builtin types and the typing forms around them.
BUILTIN_ARGUMENTS: dict[str, Any] = {
    "int": int, "str": str, "float": float, "bool": bool, "bytes": bytes, "NoneType": type(None),
    "Any": Any, "list": list, "dict": dict, "set": set, "frozenset": frozenset, "tuple": tuple,
    "Union": Union, "Optional": typing.Optional,
}  # fmt: skip


def parse_name(name: str) -> TypeName | None:
    """The canonical form of a stored ``name``: ``("Box", (("int", None),))`` for
    ``"Box[int]"``, ``("Outer.Inner", None)`` for a plain qualname; None when
    ``name`` is not a dotted identifier, optionally subscripted with such names
    (pydantic's own spelling, ``", "`` between arguments)."""
    if len(name) > MAX_NAME_LENGTH:
        return None
    tokens = _NAME_TOKEN.findall(name)
    if "".join(tokens) != name:
        return None
    parsed, at = _parse_tokens(tokens, 0)
    return parsed if parsed is not None and at == len(tokens) else None


def _parse_tokens(tokens: list[str], at: int) -> tuple[TypeName | None, int]:
    if at >= len(tokens) or tokens[at][0] in "[],":
        return None, at
    qualname, at = tokens[at], at + 1
    if at >= len(tokens) or tokens[at] != "[":
        return (qualname, None), at
    args: list[TypeName] = []
    at += 1
    while True:
        arg, at = _parse_tokens(tokens, at)
        if arg is None or at >= len(tokens):
            return None, at
        args.append(arg)
        if tokens[at] == "]":
            return (qualname, tuple(args)), at + 1
        if tokens[at][0] != ",":
            return None, at
        at += 1


def _parse_entry(entry: Any) -> tuple[str, str]:
    if isinstance(entry, type):
        return type_key(entry)
    if isinstance(entry, str):
        module, sep, name = entry.strip().partition(":")
        module, name = module.strip(), name.strip()
        if not sep or not module or not name:
            raise _entry_error(entry, "is not 'module:QualName'")
        return _check_names(entry, module, name)
    if isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(part, str) and part for part in entry):
        return _check_names(entry, entry[0], entry[1])
    raise _entry_error(entry, "is neither a class, a (module, qualname) pair nor a 'module:QualName' string")


class Allowlist:
    """An immutable set of ``(module, qualname)`` pairs that decoding may construct.

    ``Allowlist(entries)`` holds the curated safe defaults plus ``entries``;
    pass ``defaults=False`` to start empty. Combine with ``|``.

    A class entry also allows the models, dataclasses, namedtuples and enums its
    fields declare (the :meth:`from_schema` walk), so ``allow=[MyState]`` reads
    back everything a ``MyState`` holds. To allow just the class, pass its
    ``(module, qualname)`` pair (:func:`type_key`) or a ``"module:QualName"`` string.
    """

    __slots__ = ("_entries", "_everything")

    def __init__(self, entries: Iterable[AllowEntry] = (), *, defaults: bool = True) -> None:
        parsed: set[tuple[str, str]] = set()
        found: set[type] = set()
        visited: set[Any] = set()
        for entry in entries:
            parsed.add(_parse_entry(entry))
            if isinstance(entry, type):
                _walk_schema(entry, found, visited)
        parsed.update(type_key(cls) for cls in found)
        self._entries: frozenset[tuple[str, str]] = frozenset(
            parsed | _DEFAULT_ENTRIES if defaults else parsed
        )
        self._everything = False

    @classmethod
    def default(cls) -> Allowlist:
        """The curated safe set: stdlib value types, numpy, LangGraph and langchain-core types."""
        return cls()

    @classmethod
    def allow_everything_unsafe(cls) -> Allowlist:
        """Allow every type named in the data. Anyone who can write the database can then
        run code in your process: use only to migrate data you fully trust."""
        allowlist = cls()
        allowlist._everything = True
        return allowlist

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, defaults: bool = True
    ) -> Allowlist:
        """Defaults plus entries from ``SERDE_KIT_ALLOW`` (comma separated
        ``module:QualName``) and from the file named by ``SERDE_KIT_ALLOW_FILE``.

        Raises :class:`ConfigError` for a malformed entry or an unreadable file.
        """
        env = os.environ if environ is None else environ
        entries: list[str] = []
        inline = env.get(ENV_VAR, "")
        entries += [part for part in inline.split(",") if part.strip()]
        path = env.get(ENV_FILE_VAR)
        if path:
            entries += _read_allow_file(Path(path))
        try:
            return cls(entries, defaults=defaults)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (from {ENV_VAR} / {ENV_FILE_VAR})") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, defaults: bool = True) -> Allowlist:
        """Defaults plus the ``module:QualName`` lines of ``path``."""
        return cls(_read_allow_file(Path(path)), defaults=defaults)

    @classmethod
    def from_schema(cls, *schemas: Any, defaults: bool = True) -> Allowlist:
        """Defaults plus every class reachable from the given state schemas.

        Walks TypedDict, pydantic (v1 and v2) models, dataclasses, NamedTuples,
        enums, and the type forms around them (Annotated, Optional, Union,
        list, dict, tuple, set, Literal is skipped).
        """
        found: set[type] = set()
        visited: set[Any] = set()
        for schema in schemas:
            _walk_schema(schema, found, visited)
        return cls([type_key(tp) for tp in found], defaults=defaults)

    @classmethod
    def from_graph(cls, graph: Any, *, defaults: bool = True) -> Allowlist:
        """Defaults plus the classes of a StateGraph's (or compiled graph's) schemas."""
        builder = getattr(graph, "builder", graph)
        schemas = set(getattr(builder, "schemas", {}) or {})
        for attr in ("state_schema", "input_schema", "output_schema", "context_schema"):
            schema = getattr(builder, attr, None)
            if schema is not None:
                schemas.add(schema)
        return cls.from_schema(*schemas, defaults=defaults)

    def allows(self, module: str, name: str) -> bool:
        """Whether ``(module, name)`` may be imported and constructed.

        A generic model's stored name (``"Box[int]"``) is allowed with its class
        (``Box``) when every argument is a builtin type or an allowed class; a
        subscript on any other name (``"Fraction[x]"``) is not allowed. The
        decoder then checks that ``Box`` really is a generic pydantic model.
        """
        if self._everything or (module, name) in self._entries:
            return True
        if name[-1:] != "]":
            return False
        parsed = parse_name(name)
        if parsed is None:
            return False
        origin, args = parsed
        if args is None:
            return False
        key = (module, origin)
        if key not in self._entries or key in _DEFAULT_ENTRIES:
            return False  # standard types (and LangChain's models) are never generic
        qualnames = {qualname for _, qualname in self._entries}
        return all(_argument_allowed(arg, qualnames) for arg in args)

    def modules_of(self, qualname: str) -> list[str]:
        """The modules of the allowed classes named ``qualname`` (a generic model's
        stored argument names its class without its module)."""
        return sorted(module for module, name in self._entries if name == qualname)

    def __contains__(self, entry: object) -> bool:
        try:
            return self.allows(*_parse_entry(entry))
        except ConfigError:
            return False

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __or__(self, other: Allowlist | Iterable[AllowEntry]) -> Allowlist:
        if not isinstance(other, Allowlist):
            other = Allowlist(other, defaults=False)
        merged = Allowlist(defaults=False)
        merged._entries = self._entries | other._entries
        merged._everything = self._everything or other._everything
        return merged

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Allowlist):
            return NotImplemented
        return (self._entries, self._everything) == (other._entries, other._everything)

    def __hash__(self) -> int:
        return hash((self._entries, self._everything))

    def __repr__(self) -> str:
        if self._everything:
            return "Allowlist.allow_everything_unsafe()"
        extra = sorted(self._entries - _DEFAULT_ENTRIES)
        shown = ", ".join(f"{m}:{n}" for m, n in extra[:5])
        more = f", ... {len(extra) - 5} more" if len(extra) > 5 else ""
        return f"Allowlist({len(self._entries)} entries; beyond defaults: [{shown}{more}])"


def _argument_allowed(arg: TypeName, qualnames: set[str]) -> bool:
    qualname, args = arg
    if qualname not in BUILTIN_ARGUMENTS and qualname not in qualnames:
        return False
    return args is None or all(_argument_allowed(inner, qualnames) for inner in args)


def _read_allow_file(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read allowlist file {str(path)!r}: {exc.strerror or exc}; "
            f"fix the path in {ENV_FILE_VAR} or create the file"
        ) from None
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            _parse_entry(line)
        except ConfigError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
        entries.append(line)
    return entries


def _walk_schema(tp: Any, found: set[type], visited: set[Any]) -> None:
    """Add to ``found`` every class that a value of type ``tp`` may store."""
    try:
        if tp in visited:
            return
        visited.add(tp)
    except TypeError:  # an unhashable annotation object: nothing to walk
        return
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return
    if origin is typing.Annotated:
        _walk_schema(typing.get_args(tp)[0], found, visited)
        return
    if origin is not None or isinstance(tp, types.UnionType):
        if isinstance(origin, type):
            _walk_schema(origin, found, visited)
        for arg in typing.get_args(tp):
            _walk_schema(arg, found, visited)
        return
    if not isinstance(tp, type) or tp.__module__ in _CONTAINER_MODULES:
        return
    if _is_typeddict(tp):  # stored as a plain dict: walk its fields only
        _walk_hints(tp, found, visited)
        return
    if issubclass(tp, enum.Enum):
        found.add(tp)
        return
    pydantic_fields = _pydantic_fields(tp)
    if pydantic_fields is not None:
        found.add(tp)
        for annotation in pydantic_fields:
            _walk_schema(annotation, found, visited)
        return
    if dataclasses.is_dataclass(tp) or (issubclass(tp, tuple) and hasattr(tp, "_fields")):
        found.add(tp)
        _walk_hints(tp, found, visited)


_CONTAINER_MODULES = frozenset({"builtins", "typing", "collections", "collections.abc"})


def _is_typeddict(tp: type) -> bool:
    return issubclass(tp, dict) and hasattr(tp, "__total__")


def _walk_hints(tp: type, found: set[type], visited: set[Any]) -> None:
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception:  # unresolvable forward references: use what is already resolved
        hints = dict(getattr(tp, "__annotations__", {}))
    for annotation in hints.values():
        if not isinstance(annotation, str):
            _walk_schema(annotation, found, visited)


def _pydantic_fields(tp: type) -> list[Any] | None:
    v2 = sys.modules.get("pydantic")
    if v2 is not None and issubclass(tp, v2.BaseModel):
        model = cast("type[pydantic.BaseModel]", tp)  # issubclass on a module attribute does not narrow
        return [field.annotation for field in model.model_fields.values()]
    v1 = sys.modules.get("pydantic.v1")
    if v1 is not None and issubclass(tp, v1.BaseModel):
        model_v1 = cast("type[pydantic.v1.BaseModel]", tp)
        return [field.outer_type_ for field in model_v1.__fields__.values()]
    return None
