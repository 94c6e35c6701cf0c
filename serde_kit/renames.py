"""Rename maps: read rows stored under a class's old name as the class it is now.

A class moved or renamed between releases (``billing.models:Invoice`` ->
``billing.invoices:Invoice``) leaves rows that name the old place. Pass
``Serializer(renames={"billing.models:Invoice": Invoice})``: an envelope naming
the old ``module:QualName`` is rebuilt as the class given (which the map thereby
allows, as ``allow=[Invoice]`` would), and new rows are written under its new
name. The old name is never imported. A generic model's stored name keeps its
arguments (``Old[int]`` reads as ``New[int]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .allowlist import _parse_entry, origin_name, type_key
from .errors import ConfigError

__all__ = ["Renames", "parse_renames", "renamed"]

#: Stored ``(module, qualname)`` -> the ``(module, qualname)`` of the class to build instead.
Renames = Mapping[tuple[str, str], tuple[str, str]]


def parse_renames(renames: Mapping[Any, Any]) -> tuple[dict[tuple[str, str], tuple[str, str]], list[type]]:
    """The parsed map and its target classes; ConfigError for a malformed key or a target that is not a class."""
    if not isinstance(renames, Mapping):
        raise ConfigError(f"renames must be a mapping of 'old.module:OldName' to a class, not {type(renames).__name__}")
    parsed: dict[tuple[str, str], tuple[str, str]] = {}
    targets: list[type] = []
    for old, new in renames.items():
        if isinstance(old, type):
            raise ConfigError(f"renames key {old!r} is a class: give the old name as 'old.module:OldName'")
        key = _parse_entry(old)
        if not isinstance(new, type):
            raise ConfigError(f"renames[{old!r}] must be the class to build now, not {type(new).__name__}")
        target = type_key(new)
        if key == target:
            raise ConfigError(f"renames[{old!r}] names the class's own name: nothing to rename")
        parsed[key] = target
        targets.append(new)
    return parsed, targets


def renamed(renames: Renames, module: str, name: str) -> tuple[str, str]:
    """``(module, name)`` as the renames map has it now (unchanged when it is not renamed)."""
    found = renames.get((module, name))
    if found is not None:
        return found
    origin = origin_name(name)
    if origin != name:
        found = renames.get((module, origin))
        if found is not None:
            return found[0], found[1] + name[len(origin):]
    return module, name
