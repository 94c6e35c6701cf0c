"""Instructions per loads call on both read paths, stock and pickle 5 (callgrind; load-independent).

    valgrind --tool=callgrind --dump-before=time_sleep --callgrind-out-file=/tmp/cg.%p \\
        .venv/bin/python bench/native_instructions.py chat_10 [CALLS]
    .venv/bin/python bench/native_instructions.py --report /tmp/cg.<pid>

Under callgrind the script times each contestant's CALLS loads between two
``time.sleep(0)`` calls, so ``--dump-before=time_sleep`` writes one profile part
per contestant; ``--report`` prints instructions per call from those parts.
"""

from __future__ import annotations

import glob
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_loads  # noqa: E402

ORDER = ("stock", "pickle5", "pure", "native")


def run(payload: str, calls: int) -> None:
    rows = native_loads._rows(payload)
    fns = dict(zip(native_loads.NAMES, rows[payload]))
    for name in ORDER:
        fns[name]()  # warm: caches, the reader's table
    time.sleep(0)  # part 1 ends: setup
    for name in ORDER:
        fn = fns[name]
        for _ in range(calls):
            fn()
        time.sleep(0)  # part ends: this contestant
    print(f"{payload} calls={calls}", file=sys.stderr)


def report(prefix: str) -> None:
    parts = sorted(glob.glob(prefix + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    totals = []
    for part in parts:
        text = Path(part).read_text(errors="replace")
        found = re.search(r"^summary: (\d+)", text, re.M) or re.search(r"^totals: (\d+)", text, re.M)
        totals.append(int(found.group(1)) if found else 0)
    print(totals)


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(sys.argv[2])
    else:
        run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
