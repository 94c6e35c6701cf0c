"""Fuzz exact round trips: build a nested supported value from the input bytes.

Checks, for every value: ``loads(dumps(v))`` is an exact same-type copy of
``v`` (tests/compare.py), and LangGraph's own JsonPlusSerializer (permissive
and strict) reads serde_kit's bytes without raising.

    python fuzz/fuzz_roundtrip.py -max_total_time=60 fuzz/corpus/fuzz_roundtrip
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (sys.path)
import atheris

with atheris.instrument_imports(include=["serde_kit"]):
    import serde_kit  # noqa: F401
    import serde_kit.crypto  # noqa: F401

import checks


def TestOneInput(data: bytes) -> None:
    checks.check_roundtrip(data)


def main() -> None:
    checks.warm_up()
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
