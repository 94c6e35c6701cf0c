"""User-defined types used by the property tests, fuzz harnesses and benchmarks.

They live at module level in an importable module because the decoder rebuilds
them by ``(module, qualname)``; a class defined inside a test function could
not be found again. ``USER_TYPES`` is the list to pass as ``Serializer(allow=...)``.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from datetime import datetime
from typing import Any, NamedTuple

import pydantic
import pydantic.v1


class Color(enum.Enum):
    RED = "red"
    GREEN = 2
    BLUE = (1, "b")


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 10


class Mode(enum.StrEnum):
    READ = "read"
    WRITE = "write"


class Perm(enum.Flag):
    R = 4
    W = 2
    X = 1


class Point(NamedTuple):
    x: Any
    y: Any = 0


Pair = collections.namedtuple("Pair", ["left", "right"])


@dataclasses.dataclass
class Plain:
    a: Any
    b: Any = None


@dataclasses.dataclass(frozen=True)
class FrozenPair:
    pair: tuple
    label: str = ""


@dataclasses.dataclass
class WithDerived:
    base: int
    derived: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.base * 2


@dataclasses.dataclass
class Row:
    """A flat record, used by the benchmarks' dataclass state."""

    id: int
    name: str
    score: float
    tags: list
    when: datetime


@dataclasses.dataclass
class Table:
    title: str
    rows: list


class Inner(pydantic.BaseModel):
    name: str
    score: float = 0.0
    tags: list[str] = []


class Outer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    id: int
    inner: Inner
    items: list[Inner] = []
    meta: dict[str, int] = {}
    when: datetime | None = None


class Box(pydantic.BaseModel):
    """A model whose field holds anything (LangGraph states often have Any fields)."""

    value: Any = None


class RowModel(pydantic.BaseModel):
    """The benchmarks' pydantic record (mirrors :class:`Row`)."""

    id: int
    name: str
    score: float
    tags: list[str]
    when: datetime


class TableModel(pydantic.BaseModel):
    title: str
    rows: list[RowModel]


class SecretHolder(pydantic.BaseModel):
    token: pydantic.SecretStr
    blob: pydantic.SecretBytes


class LegacyModel(pydantic.v1.BaseModel):
    name: str
    count: int = 0
    ratio: float = 0.0


USER_TYPES: list[type] = [
    Color,
    Priority,
    Mode,
    Perm,
    Point,
    Pair,
    Plain,
    FrozenPair,
    WithDerived,
    Row,
    Table,
    Inner,
    Outer,
    Box,
    RowModel,
    TableModel,
    SecretHolder,
    LegacyModel,
]
