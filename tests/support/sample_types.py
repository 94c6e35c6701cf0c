"""Module-level user types the core serializer tests store and read back."""

from __future__ import annotations

import dataclasses
import enum
import sys
from datetime import datetime
from typing import Annotated, Any, NamedTuple, Optional, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    computed_field,
    field_validator,
    model_validator,
    v1 as pydantic_v1,
)

#: Set when a module that must never be imported by a refused decode is imported.
IMPORTED_MARKER = "serde_kit_test_marker_imported"


class Color(enum.Enum):
    RED = "red"
    PAIR = (1, 2)


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


if sys.version_info >= (3, 11):

    class Mode(enum.StrEnum):
        FAST = "fast"
        SAFE = "safe"


class Point(NamedTuple):
    x: int
    y: Any


@dataclasses.dataclass
class Doc:
    title: str
    tags: tuple[str, ...] = ()
    meta: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Frozen:
    key: tuple
    derived: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", len(self.key))


class Inner(BaseModel):
    n: int
    when: Optional[datetime] = None


class Outer(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    items: list[Inner] = []
    anything: Any = None
    alias_field: int = Field(default=0, alias="aliasField")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def count(self) -> int:
        return len(self.items)


class Numbers(RootModel[list[int]]):
    pass


class OldModel(pydantic_v1.BaseModel):
    a: int
    b: str = "x"


class State(TypedDict):
    docs: Annotated[list[Doc], "reducer"]
    outer: Optional[Outer]
    color: Color
    point: Point


class NotAllowed(BaseModel):
    secret: str


class Summary(BaseModel):
    parts: list[Inner] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def size(self) -> int:
        return len(self.parts)


class Cell(BaseModel):
    v: int
    when: Optional[datetime] = None


class SpecialCell(Cell):
    note: str = ""


class Grid(BaseModel):
    """Nested models in fields declared as exactly their class: stored as their fields."""

    name: str
    head: Cell
    cells: list[Cell] = []
    anything: Any = None


class Sheet(BaseModel):
    grids: list[Grid]


class CheckedGrid(BaseModel):
    """A before validator sees raw input: its nested models stay their own exts."""

    cells: list[Cell]

    @model_validator(mode="before")
    @classmethod
    def seen(cls, data: Any) -> Any:
        return data


class FieldCheckedGrid(BaseModel):
    cells: list[Cell]

    @field_validator("cells", mode="before")
    @classmethod
    def seen(cls, value: Any) -> Any:
        return value


class AliasedCell(BaseModel):
    v: int = Field(alias="V")


class HoldsAliased(BaseModel):
    cells: list[AliasedCell]


class Opaque:
    """A plain class serde_kit has no encoding for (pickle fallback tests)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque
