"""An application's own types, in a module of their own (tests/test_allow_fixes.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

A = TypeVar("A")
B = TypeVar("B")


@dataclass
class Ticket:
    title: str


class Outer:
    @dataclass
    class Inner:
        n: int


class Pair(BaseModel, Generic[A, B]):
    first: A
    second: B


IntStrPair = Pair[int, str]  # parametrized here, so its module is this one (pydantic uses the caller's)
