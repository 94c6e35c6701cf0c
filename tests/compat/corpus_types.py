"""User-defined types stored in the compatibility corpus.

Their import path (``tests.compat.corpus_types``) is written into the corpus
rows, so neither this module nor the classes may be renamed or moved. This
module must import under every langgraph-checkpoint release the corpus covers
(it needs only the standard library and pydantic, which ships ``pydantic.v1``).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Generic, NamedTuple, Optional, TypeVar

import pydantic
import pydantic.v1

T = TypeVar("T")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Mood(str, enum.Enum):
    CALM = "calm"
    BUSY = "busy"


@dataclasses.dataclass
class Task:
    title: str
    done: bool = False
    tags: list = dataclasses.field(default_factory=list)


class Point(NamedTuple):
    x: int
    y: int


class Address(pydantic.BaseModel):
    city: str
    zip_code: str


class Person(pydantic.BaseModel):
    name: str
    age: int
    address: Optional[Address] = None
    nicknames: list = []


class Box(pydantic.BaseModel, Generic[T]):
    item: T


#: The application names this parametrization in its schema, so it exists when rows are read.
IntBox = Box[int]


class LegacyUser(pydantic.v1.BaseModel):
    name: str
    score: float


class Label(str):
    """A str subclass with no family of its own (like langchain-core's TextAccessor)."""


class Count(int):
    pass


class Opaque:
    """A plain class no msgpack writer handles: only pickle_fallback stores it."""

    def __init__(self, payload: object) -> None:
        self.payload = payload

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque and other.payload == self.payload

    def __repr__(self) -> str:
        return f"Opaque({self.payload!r})"
