"""serde_kit imports and works where langgraph and langchain_core cannot be imported.

A child interpreter gets a ``sitecustomize`` (through PYTHONPATH) that installs
a meta-path finder refusing ``langgraph`` and ``langchain_core``; the child
then imports serde_kit, round-trips common values, decodes golden rows written
by the real langgraph-checkpoint, and reports back as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]

BLOCKER = '''
import sys

class _RefuseLangGraph:
    """Pretend langgraph and langchain_core are not installed."""

    blocked = ("langgraph", "langchain_core")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"No module named {name!r} (blocked by test)", name=name)
        return None

sys.meta_path.insert(0, _RefuseLangGraph())
'''

CHILD = '''
import json, sys
from datetime import datetime, timezone, timedelta
from decimal import Decimal
from uuid import UUID
from zoneinfo import ZoneInfo

report = {}
try:
    import langgraph  # noqa: F401
    report["langgraph_importable"] = True
except ImportError:
    report["langgraph_importable"] = False

import serde_kit
from serde_kit import Serializer
from serde_kit.errors import DecodeError, SerdeError
from tests.golden.compare import assert_same

report["loaded_after_import"] = sorted(
    m for m in sys.modules if m.split(".")[0] in ("langgraph", "langchain_core")
)

serde = Serializer()
values = {
    "none": None,
    "bytes": b"\\x00\\xff",
    "bytearray": bytearray(b"ab"),
    "nested": {"t": (1, ("a", 2.5)), "s": {1, 2}, "fs": frozenset({"x"}), 3: [None, True]},
    "when": datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris")),
    "utc": datetime(2024, 1, 1, tzinfo=timezone.utc),
    "span": timedelta(days=1, seconds=2),
    "money": Decimal("10.50"),
    "id": UUID("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
}
roundtrips = {}
for name, value in values.items():
    try:
        assert_same(serde.loads_typed(serde.dumps_typed(value)), value)
        roundtrips[name] = "ok"
    except Exception as e:  # report, do not stop: the parent shows every failure
        roundtrips[name] = f"{type(e).__name__}: {e}"
report["roundtrips"] = roundtrips

def golden(name):
    manifest = json.load(open("tests/golden/data/manifest.json"))
    entry = manifest["cases"][name]
    return entry["tag"], open("tests/golden/data/" + entry["file"], "rb").read()

try:
    snap = serde.loads_typed(golden("ext7_delta_snapshot"))
    report["delta"] = {
        "type": type(snap).__module__ + "." + type(snap).__qualname__,
        "value": snap.value,
    }
except Exception as e:
    report["delta"] = {"error": f"{type(e).__module__}.{type(e).__name__}: {e}"}

try:
    result = serde.loads_typed(golden("ext1_send"))
    report["send"] = {"returned": repr(result)}
except Exception as e:
    report["send"] = {
        "error_type": f"{type(e).__module__}.{type(e).__name__}",
        "is_decode_error": isinstance(e, DecodeError),
        "is_serde_error": isinstance(e, SerdeError),
        "message": str(e),
    }

report["loaded_at_end"] = sorted(
    m for m in sys.modules if m.split(".")[0] in ("langgraph", "langchain_core")
)
print(json.dumps(report))
'''


def _run_child(tmp_path: Path) -> dict:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(BLOCKER))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(_ROOT)])
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert child.returncode == 0, child.stdout + child.stderr
    return json.loads(child.stdout.strip().splitlines()[-1])


def test_serde_kit_works_without_langgraph(tmp_path: Path) -> None:
    report = _run_child(tmp_path)
    # The blocker really works, so the rest is not vacuous.
    assert report["langgraph_importable"] is False
    assert report["loaded_after_import"] == []

    assert report["roundtrips"] == {name: "ok" for name in report["roundtrips"]}, report["roundtrips"]
    assert len(report["roundtrips"]) == 9

    # A golden _DeltaSnapshot row decodes to serde_kit's own stand-in.
    delta = report["delta"]
    assert "error" not in delta, delta
    assert delta["type"].startswith("serde_kit."), delta
    assert delta["value"] == ["m1", "m2", {"k": 1}]

    # A Send row cannot be rebuilt without langgraph: a typed error that says so.
    send = report["send"]
    assert "returned" not in send, f"Send row decoded without langgraph: {send}"
    assert send["is_decode_error"] and send["is_serde_error"], send
    assert send["error_type"].startswith("serde_kit."), send
    assert "langgraph" in send["message"].lower(), send

    assert report["loaded_at_end"] == []
