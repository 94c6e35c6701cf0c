"""The cost-ratio harness's measuring process: serde_kit uninstrumented.

Reads inputs (4-byte big-endian length, then the bytes) from stdin and writes,
per input, the least of three :func:`checks.cost_ratio` measurements as a line.
"""

from __future__ import annotations

import struct
import sys

import _common  # noqa: F401  (import paths)
import checks


def main() -> None:
    source, sink = sys.stdin.buffer, sys.stdout
    while True:
        head = source.read(4)
        if len(head) < 4:
            return
        data = source.read(struct.unpack(">I", head)[0])
        ratio = min(checks.cost_ratio(data) for _ in range(3))
        sink.write(f"{ratio}\n")
        sink.flush()


if __name__ == "__main__":
    main()
