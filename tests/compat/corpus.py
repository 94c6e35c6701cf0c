"""Read the committed compatibility corpus with today's serde_kit (shared by the tests and the report).

A row is read **exactly** when what serde_kit returns describes the same as the
value the old release was given (``written``) or as the same case built with
today's packages; **as that release read it** when it describes the same as
the old release's own ``loads_typed`` result; anything else is a failure.
"""

from __future__ import annotations

import base64
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serde_kit import EncryptedSerializer, Keyring, Serializer
from tests.compat import cases
from tests.compat.describe import describe

DATA = Path(__file__).with_name("data")
RELEASES = sorted(
    (p.name for p in DATA.iterdir() if (p / "rows.json").is_file()),
    key=lambda v: tuple(int(part) for part in v.split(".")),
)
_TODAY_KEY = b"\x11" * 32


def rows(release: str) -> list[dict[str, Any]]:
    return json.loads((DATA / release / "rows.json").read_text())["rows"]


def stored_rows(release: str) -> list[dict[str, Any]]:
    """The rows the release actually wrote (not those it could not write)."""
    return [row for row in rows(release) if "data" in row]


def serializer(kind: str) -> Any:
    inner = Serializer(allow=list(cases.USER_TYPES), pickle_fallback=kind == "pickle")
    if kind == "aes":
        keyring = Keyring({"today": _TODAY_KEY}, primary="today", legacy_key=cases.FIXED_KEY)
        return EncryptedSerializer(inner, keyring)
    return inner


def case_name(row: dict[str, Any]) -> str:
    return row["name"][4:] if row["kind"] == "aes" else row["name"]


def today_description(name: str) -> Any:
    """The case built with today's packages, or None where it cannot be built today."""
    build = cases.CASES.get(name) or cases.PICKLE_CASES.get(name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return describe(build())
    except Exception:  # the old release's type is gone or changed today
        return None


@dataclass
class Outcome:
    verdict: str  # "exact", "as_release_read", "different"
    actual: Any


def read_row(release: str, row: dict[str, Any]) -> Outcome:
    """Read one stored row with today's serde_kit; raises what serde_kit raises."""
    data = (row["tag"], base64.b64decode(row["data"]))
    actual = describe(serializer(row["kind"]).loads_typed(data))
    if actual == row["written"] or actual == today_description(case_name(row)):
        return Outcome("exact", actual)
    if "read" in row and actual == row["read"]:
        return Outcome("as_release_read", actual)
    return Outcome("different", actual)
