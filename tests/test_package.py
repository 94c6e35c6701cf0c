"""The package as users get it: its version, and what ``import serde_kit`` pulls in."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys

import serde_kit

# Optional dependencies and the CLI's own: importing the library must load none of them.
HEAVY = ("numpy", "pydantic", "langgraph", "langchain_core", "tqdm", "psycopg", "argparse")


def test_version_is_the_installed_distribution_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.dev\d+)?", serde_kit.__version__)
    assert importlib.metadata.version("serde-kit") == serde_kit.__version__
    assert "__version__" in serde_kit.__all__


def test_import_loads_no_optional_or_cli_dependency() -> None:
    code = (
        "import json, sys; import serde_kit; "
        "print(json.dumps(sorted(m for m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert heavy == [], heavy
    ours = [m for m in loaded if m.startswith("serde_kit.")]
    assert not [m for m in ours if m.startswith(("serde_kit.tools", "serde_kit.cli"))], ours
    # The check sees real imports: the same probe after importing numpy does list it.
    done = subprocess.run(
        [sys.executable, "-c", "import numpy; " + code], capture_output=True, text=True, check=True
    )
    assert "numpy" in json.loads(done.stdout)


def test_the_demo_is_not_part_of_the_package() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import serde_kit.demo"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr
