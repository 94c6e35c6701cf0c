"""The public door: every error and warning a user can catch is importable from ``serde_kit``,
listed in ``__all__``, drawn in serde_kit/errors.py's docstring tree and in the README's error list."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import serde_kit
from serde_kit import errors

README = Path(__file__).resolve().parent.parent / "README.md"


def _catchable() -> list[type]:
    found = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__ and issubclass(cls, (errors.SerdeError, errors.SerdeWarning))
    ]
    assert errors.RowBindingError in found and errors.StoreError in found  # the walk sees them
    return found


def _readme_error_tree() -> str:
    text = README.read_text()
    section = text.split("\n### Errors\n", 1)[1]
    return section.split("```", 2)[1]


def test_every_error_class_is_exported_from_the_package() -> None:
    for cls in _catchable():
        assert getattr(serde_kit, cls.__name__) is cls, cls
        assert cls.__name__ in serde_kit.__all__, cls
        assert cls.__name__ in errors.__all__, cls


def test_every_error_class_is_drawn_in_the_trees() -> None:
    docstring = errors.__doc__ or ""
    readme = _readme_error_tree()
    for cls in _catchable():
        pattern = re.compile(rf"(^|[\s─])({cls.__name__})\b", re.M)
        assert pattern.search(docstring), f"{cls.__name__} missing from serde_kit/errors.py's docstring"
        assert pattern.search(readme), f"{cls.__name__} missing from the README's error list"


def test_the_trees_draw_the_real_parents() -> None:
    # Each name sits one level below its base class in both drawings (indent = depth * 4).
    for tree in (errors.__doc__ or "", _readme_error_tree()):
        depth: dict[str, int] = {}
        for line in tree.splitlines():
            match = re.match(r"^(\s*)((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+(?:Error|Warning))\b", line)
            if match:
                depth[match.group(3)] = len(match.group(2)) // 4 + (1 if "── " in line else 0)
        for cls in _catchable():
            base = next(b for b in cls.__mro__[1:] if b.__module__ == errors.__name__ or b is Exception)
            if base.__module__ == errors.__name__:
                assert depth[cls.__name__] == depth[base.__name__] + 1, (cls.__name__, tree[:40])
