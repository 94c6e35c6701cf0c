"""The tools' public door (serde_kit/tools/__init__.py): every tool and report of the tool
modules is importable from ``serde_kit.tools`` and listed in its ``__all__``, the names are
the functions, the docstring's example runs, and the old names still work, with a warning."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import shutil
import sqlite3
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import serde_kit.tools as door
from serde_kit.cli.output import plain
from serde_kit.tools.audit import AuditReport
from serde_kit.tools.db import open_database
from tests.support.rotate_fixtures import K_ROTATE

#: Public names a tool module defines for its own use or its command's text, not for callers.
HELPERS = {
    "common": {"describe_failure", "open_bar", "stray_failure"},
    "inspect": {"ListEdit", "count_errors", "list_edit"},
    "scan": {"split_type"},
}
#: Old names kept for one release: on the door, not in any ``__all__``.
DEPRECATED = {"audit": {"audit_store"}, "scan": {"scan_store"}}


def _tool_modules() -> dict[str, Any]:
    names = [m.name for m in pkgutil.iter_modules(door.__path__) if not m.ispkg]
    assert {"rotate", "status", "scan", "audit", "inspect", "render"} <= set(names)  # the walk sees them
    return {name: importlib.import_module(f"serde_kit.tools.{name}") for name in names}


def test_every_name_a_tool_module_exports_is_on_the_door() -> None:
    for name, module in _tool_modules().items():
        for exported in getattr(module, "__all__", []):
            if name == "common" and exported in HELPERS["common"] | {"HEADER_READ"}:
                continue
            assert exported in door.__all__, f"serde_kit.tools.{name}.{exported} is not in serde_kit.tools.__all__"
            assert getattr(door, exported) is getattr(module, exported), exported


def test_every_public_function_and_class_of_a_tool_module_is_on_the_door_or_declared_a_helper() -> None:
    for name, module in _tool_modules().items():
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ != module.__name__ or attr in HELPERS.get(name, set()):
                continue
            if attr in DEPRECATED.get(name, set()):
                assert attr not in door.__all__ and getattr(door, attr) is obj
                continue
            assert attr in door.__all__ and getattr(door, attr) is obj, f"serde_kit.tools.{name}.{attr}"


def test_the_door_lists_each_name_once_and_every_name_resolves() -> None:
    assert len(door.__all__) == len(set(door.__all__))
    for name in door.__all__:
        assert getattr(door, name) is not None, name
    assert {"open_database", "Database", "Progress", "RowTally"} <= set(door.__all__)


def test_a_tool_name_is_the_function_and_its_module_is_reached_by_its_full_name() -> None:
    for name in ("status", "verify", "rotate", "retire", "scan", "audit"):
        function = getattr(door, name)
        assert inspect.isfunction(function), name
        module = importlib.import_module(f"serde_kit.tools.{name}")
        assert inspect.ismodule(module) and getattr(module, name) is function


def test_the_docstring_example_runs(graph_sqlite_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = _literal_block(door.__doc__ or "")
    assert "rotate(db, keyring=keyring, apply=True)" in example
    shutil.copyfile(graph_sqlite_db, tmp_path / "checkpoints.db")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    before = _blobs(tmp_path / "checkpoints.db")
    exec(compile(textwrap.dedent(example), "serde_kit/tools/__init__.py", "exec"), {})
    after = _blobs(tmp_path / "checkpoints.db")
    assert before.keys() == after.keys() and before != after  # rows were re-encrypted under the primary key


def _literal_block(doc: str) -> str:
    """The docstring's first ``::`` block: its indented lines."""
    lines = []
    for line in doc.split("::\n", 1)[1].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line)
    return "\n".join(lines)


def _blobs(path: Path) -> dict[tuple[Any, ...], bytes]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint FROM checkpoints").fetchall()
    finally:
        conn.close()
    return {tuple(r[:3]): bytes(r[3]) for r in rows}


def test_the_old_names_warn_and_give_the_same_reports(graph_sqlite_db: str) -> None:
    with open_database(sqlite=graph_sqlite_db) as db:
        scanned, audited = door.scan(db), door.audit(db)
        with pytest.warns(DeprecationWarning, match=r"scan_store is deprecated: call serde_kit\.tools\.scan"):
            old_scan = door.scan_store(db)
        with pytest.warns(DeprecationWarning, match=r"audit_store is deprecated: call serde_kit\.tools\.audit"):
            old_audit = door.audit_store(db)
    assert plain(old_scan) == plain(scanned) and scanned.rows_read > 0
    assert plain(old_audit) == plain(audited) and audited.tables


@pytest.mark.parametrize("strict", [False, True])
def test_audit_exit_code_is_deprecated_for_passed(graph_sqlite_db: str, strict: bool) -> None:
    with open_database(sqlite=graph_sqlite_db) as db:
        report = door.audit(db)
    assert isinstance(report, AuditReport)
    with pytest.warns(DeprecationWarning, match=r"use AuditReport\.passed"):
        code = report.exit_code(strict=strict)
    assert code == (0 if report.passed(strict=strict) else 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report.passed(strict=strict) is (not (report.failures() or (strict and report.warnings())))
