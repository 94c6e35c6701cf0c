"""cli/output: what reaches the terminal is escaped, aligned and one value per cell."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from serde_kit.cli.output import escape, escape_text, json_text, table


def test_escape_turns_control_and_format_characters_into_text():
    assert escape("plain ünïcode") == "plain ünïcode"
    assert escape("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert escape("line\nnext\r") == "line\\x0anext\\x0d"
    assert escape("\x9b31m") == "\\x9b31m"
    assert escape("rtl\u202eevil") == "rtl\\u202eevil"
    assert escape(None) == ""


def test_escape_text_keeps_its_own_lines_only():
    assert escape_text("a\nb\x07") == "a\nb\\x07"


def test_table_cells_cannot_break_lines_or_columns():
    out = table(["NAME", "N"], [["x\naudit PASSED", 3], ["y", 10]])
    lines = out.splitlines()
    assert len(lines) == 3 and "audit PASSED" not in [line.strip() for line in lines]
    assert lines[2].endswith("10") and lines[1].endswith(" 3")


@dataclass
class Report:
    by_key: Counter = field(default_factory=Counter)
    pk: tuple = ()


def test_json_keeps_counters_and_escapes_c1_characters():
    data = json.loads(json_text(Report(Counter({"k1": 3}), ("t", b"\x00\xff"))))
    assert data == {"by_key": {"k1": 3}, "pk": ["t", "00ff"]}
    assert "\x9b" not in json_text({"x": "\x9b"}) and json.loads(json_text({"x": "\x9b"})) == {"x": "\x9b"}


@dataclass
class _Inner:
    name: str
    tags: set[object] = field(default_factory=set)


@dataclass
class _Report:
    json_extra = {"doubled": "doubled", "names": "names"}

    count: int
    hidden: str = field(default="", metadata={"json": None})
    renamed: int = field(default=0, metadata={"json": "shown_as"})
    items: list[_Inner] = field(default_factory=list)

    @property
    def doubled(self) -> int:
        return self.count * 2

    def names(self) -> list[str]:
        return [i.name for i in self.items]


def test_one_json_convention_for_every_report():
    report = _Report(3, hidden="secret", renamed=7, items=[_Inner("a", {"json", 2, 1})])
    assert json.loads(json_text(report)) == {
        "count": 3,
        "shown_as": 7,
        "items": [{"name": "a", "tags": [1, 2, "json"]}],
        "doubled": 6,
        "names": ["a"],
    }
    assert "secret" not in json_text(report)


def test_every_report_class_uses_plain_not_its_own_to_json():
    import dataclasses

    import importlib

    # By their full names: on the tools' door, serde_kit.tools.rotate (and status, ...) is the function.
    modules = [importlib.import_module(f"serde_kit.tools.{m}") for m in ("audit", "inspect", "retire", "rotate", "scan", "status", "tally", "verify")]
    reports = [
        obj
        for module in modules
        for obj in vars(module).values()
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
    ]
    assert len(reports) >= 10
    assert [r.__name__ for r in reports if hasattr(r, "to_json")] == []
    for r in reports:  # every derived key names an attribute the class has
        assert all(hasattr(r, attr) for attr in getattr(r, "json_extra", {}).values()), r
