"""Print, per release, how today's serde_kit reads the corpus (for issue notes and reviews)::

    .venv/bin/python -m tests.compat.report
"""

from __future__ import annotations

import collections
import logging
import sys
import warnings

from tests.compat import corpus


def main() -> int:
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    print("release  exact  as-release-read  as-stock-reads-today  refused  not-writable-by-release")
    for release in corpus.RELEASES:
        counts: collections.Counter[str] = collections.Counter()
        lossy: list[str] = []
        for row in corpus.rows(release):
            if "data" not in row:
                counts["not written"] += 1
                continue
            try:
                verdict = corpus.read_row(release, row).verdict
            except Exception as exc:  # noqa: BLE001 - a refusal is what we count
                verdict = "refused"
                lossy.append(f"{row['name']} (refused: {type(exc).__name__})")
            counts[verdict] += 1
            if verdict in ("as_release_read", "as_stock_reads_today"):
                lossy.append(row["name"])
        print(
            f"{release:8} {counts['exact']:5}  {counts['as_release_read']:15}  {counts['as_stock_reads_today']:20}"
            f"  {counts['refused'] + counts['different']:7}  {counts['not written']:5}"
        )
        print(f"         not exact: {', '.join(lossy)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
