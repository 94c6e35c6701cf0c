"""pytest-benchmark: dumps/loads per payload and contestant (bench/compare.py is the summary table)."""

from __future__ import annotations

from typing import Any

import pytest

import payloads as P

CONTESTANTS = P.contestants()
# The 64 MiB arrays are left to compare.py: pytest-benchmark's calibration would take minutes.
PAYLOADS = {k: v for k, v in P.serializer_payloads().items() if "64MiB" not in k}


def _skip_if_unsupported(c: P.Contestant, value: Any) -> Any:
    try:
        out = c.dumps(value)
        c.loads(out)
        return out
    except Exception as e:  # raw ormsgpack is lossy and cannot write everything
        pytest.skip(f"{c.name} cannot serialize this payload: {type(e).__name__}")


@pytest.mark.parametrize("who", list(CONTESTANTS))
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_dumps(benchmark: Any, payload: str, who: str) -> None:
    c, value = CONTESTANTS[who], PAYLOADS[payload]
    _skip_if_unsupported(c, value)
    benchmark.group = f"dumps {payload}"
    benchmark(c.dumps, value)


@pytest.mark.parametrize("who", list(CONTESTANTS))
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_loads(benchmark: Any, payload: str, who: str) -> None:
    c = CONTESTANTS[who]
    out = _skip_if_unsupported(c, PAYLOADS[payload])
    benchmark.group = f"loads {payload}"
    benchmark(c.loads, out)


WRITES = P.pending_writes(1000)


@pytest.mark.parametrize("who", list(CONTESTANTS))
def test_pending_writes_one_call_each(benchmark: Any, who: str) -> None:
    c = CONTESTANTS[who]
    benchmark.group = "1000 pending writes, dumps+loads one call each"

    def run() -> None:
        for v in WRITES:
            c.loads(c.dumps(v))

    benchmark(run)
