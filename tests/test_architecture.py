"""Structural rules the import contracts cannot state."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "serde_kit" / "tools"


def test_no_tool_class_poses_as_a_serializer() -> None:
    """The tools drive the RowCipher on bytes: no stand-in serializer (dumps_typed/loads_typed) under tools/."""
    found = []
    for path in sorted(TOOLS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            # A Protocol only names what a caller passes in; it implements nothing.
            if isinstance(node, ast.ClassDef) and not any(ast.unparse(b).endswith("Protocol") for b in node.bases):
                methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                if methods & {"dumps_typed", "loads_typed"}:
                    found.append(f"{path.relative_to(TOOLS.parent.parent)}:{node.lineno} {node.name}")
    assert len(list(TOOLS.rglob("*.py"))) > 10  # the walk saw the package
    assert not found, found
