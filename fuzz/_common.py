"""Shared pieces of the fuzz harnesses: import paths, tag table, value builder.

The harnesses run as scripts (``python fuzz/fuzz_decode.py ...``), so this
module puts the repository root on ``sys.path``: the user test types and the
strict comparison helper are ``tests.support.*``.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: First input byte picks the type tag; the stored tags first, then wrong ones.
TAGS = ["msgpack", "json", "bytes", "bytearray", "null", "pickle", "", "msgpack+aesgcm", "Msgpack", "msgpack\x00"]


def split_tagged(data: bytes, tags: list[str] = TAGS) -> tuple[str, bytes]:
    """Input format of the decode and encrypted harnesses: tag selector byte + payload."""
    if not data:
        return tags[0], b""
    return tags[data[0] % len(tags)], data[1:]


def join_tagged(tag: str, payload: bytes, tags: list[str] = TAGS) -> bytes:
    """Inverse of :func:`split_tagged` (for writing seed corpora)."""
    return bytes([tags.index(tag)]) + payload


#: Left uninstrumented when the compiled reader is fuzzed: the prescan's Python walk (and the
#: meter it charges) is the same code on both read paths, fuzzed instrumented by the pure
#: campaigns; instrumented it took 7x the CPU of the rest of a native execution
#: (4.1 ms vs 0.52 ms per fuzz_native input up to 4 KiB), so leaving it out is what lets the
#: native campaigns reach 10^6 executions. Coverage still guides the decoder, the hooks and
#: builders the reader calls back into.
NATIVE_UNINSTRUMENTED = ("serde_kit._prescan", "serde_kit.budget")


def fuzz(check_name: str, *, exclude: tuple[str, ...] = ()) -> None:
    """Run libFuzzer on ``checks.<check_name>`` with serde_kit instrumented.

    serde_kit is imported under atheris' instrumentation here, before
    ``checks`` imports it, so coverage guides every harness the same way.
    Modules in ``exclude`` stay uninstrumented (the cost-ratio harness leaves out
    the prescan's walk: instrumentation slows a Python loop many times more than
    the C engines, which would skew a ratio of CPU times), and so do
    :data:`NATIVE_UNINSTRUMENTED` when the compiled reader is fuzzed.
    """
    import os

    import atheris

    # Every harness but fuzz_native reads with the path serde_kit chooses: the compiled
    # reader unless SERDE_KIT_PURE_PYTHON=1 (fuzz/run.sh sets it for the pure campaigns).
    if check_name == "check_native" or os.environ.get("SERDE_KIT_PURE_PYTHON") != "1":
        exclude = (*exclude, *NATIVE_UNINSTRUMENTED)
    with atheris.instrument_imports(include=["serde_kit"], exclude=list(exclude)):
        import serde_kit  # noqa: F401
        import serde_kit.crypto  # noqa: F401

    import checks

    check = getattr(checks, check_name)
    checks.warm_up()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
