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
