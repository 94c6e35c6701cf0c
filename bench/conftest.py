"""pytest-benchmark suites: run with ``.venv/bin/python -m pytest bench/ --benchmark-only``.

Not part of the default test run (pyproject's testpaths is tests/).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parent)):
    if p not in sys.path:
        sys.path.insert(0, p)
