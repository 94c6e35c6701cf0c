"""Fuzz Serializer.loads_typed on arbitrary tags and bytes.

Input: first byte picks the type tag (see ``_common.TAGS``) and whether the
lenient decoder is used, the rest is the stored payload. Only SerdeError
subclasses may escape; anything else (IndexError, RecursionError, a numpy
error, a crash or a hang) is a finding.

    python fuzz/fuzz_decode.py -max_total_time=60 fuzz/corpus/fuzz_decode
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
    checks.check_decode(data)


def main() -> None:
    checks.warm_up()
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
