"""The fuzz harnesses' modules (fuzz/*.py) for tests that replay their checks and inputs.

fuzz/ is a folder of scripts that import each other by their file names
(``import _common``, ``import values``, ``import checks``), as libFuzzer runs
them. A test loads them here by path under those same names, so the harness
code runs unchanged and ``sys.path`` stays as pytest set it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"

#: Load order: each one imports only those before it at import time.
_ORDER = ("_common", "values", "checks")


def fuzz_module(name: str) -> ModuleType:
    """``fuzz/<name>.py`` imported as ``name``, after the script modules it imports."""
    for step in (*_ORDER[: _ORDER.index(name) + 1],) if name in _ORDER else (*_ORDER, name):
        if step not in sys.modules:
            spec = importlib.util.spec_from_file_location(step, FUZZ / f"{step}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[step] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[step]
                raise
    return sys.modules[name]
