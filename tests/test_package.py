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


def _requirements() -> list:
    from packaging.requirements import Requirement

    return [Requirement(r) for r in importlib.metadata.requires("serde-kit") or []]


def _pins(name: str) -> dict[str, str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "constraints" / name).read_text()
    pins = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            package, version = line.split("==")
            pins[re.sub(r"\[.*\]", "", package).lower().replace("_", "-")] = version
    return pins


def test_extras_state_ranges_not_pins() -> None:
    # Exact pins in extras made pip refuse, or silently replace, a user's LangGraph.
    reqs = [r for r in _requirements() if r.name != "serde-kit"]
    assert reqs
    assert not [str(r) for r in reqs if any(s.operator in ("==", "===") for s in r.specifier)]
    stack = [r for r in reqs if r.name.startswith(("langgraph", "langchain", "psycopg")) and "test" not in str(r.marker)]
    assert {"langgraph", "langgraph-checkpoint", "langchain-core", "langgraph-checkpoint-sqlite",
            "langgraph-checkpoint-postgres", "psycopg", "psycopg-pool"} <= {r.name for r in stack}
    for r in stack:
        assert {s.operator for s in r.specifier} == {">=", "<"}, str(r)


def test_oldest_compat_pins_are_the_lower_bounds_and_test_pins_are_in_range() -> None:
    from packaging.version import Version

    oldest, tested = _pins("compat-oldest.txt"), _pins("test.txt")
    checked = 0
    for r in _requirements():
        if r.name == "serde-kit":
            continue
        lower = next(Version(s.version) for s in r.specifier if s.operator == ">=")
        if r.name in oldest:
            assert Version(oldest[r.name]) == lower, f"{r}: compat-oldest.txt pins {oldest[r.name]}"
            checked += 1
        assert r.name in tested, r.name
        assert r.specifier.contains(tested[r.name], prereleases=True), f"{r}: test.txt pins {tested[r.name]}"
    assert checked >= 11  # the LangGraph stack, psycopg, numpy, pydantic, ormsgpack, cryptography
