# my_types.py: the types your state holds, in a module of their own
from dataclasses import dataclass


@dataclass
class Doc:
    title: str
    words: int
