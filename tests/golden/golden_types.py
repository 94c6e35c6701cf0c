"""User-defined types that appear in the golden vectors.

Their import path (``tests.golden.golden_types``) is written into the golden
bytes, so neither this module nor the classes may be renamed or moved.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import NamedTuple

import pydantic
import pydantic.v1


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Mood(enum.StrEnum):
    CALM = "calm"
    BUSY = "busy"


class Perm(enum.Flag):
    READ = 1
    WRITE = 2
    EXEC = 4


@dataclasses.dataclass
class Task:
    title: str
    done: bool = False
    tags: list[str] = dataclasses.field(default_factory=list)


class Point(NamedTuple):
    x: int
    y: int


class Address(pydantic.BaseModel):
    city: str
    zip_code: str


class Person(pydantic.BaseModel):
    name: str
    age: int
    address: Address
    nicknames: list[str] = []


class LegacyUser(pydantic.v1.BaseModel):
    name: str
    score: float


ALL_TYPES: tuple[type, ...] = (Color, Priority, Mood, Perm, Task, Point, Address, Person, LegacyUser)
