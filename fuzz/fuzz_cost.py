#!/usr/bin/env python3
"""Fuzz the cost ratio: no stored row may cost more than 20x an honest row of its size.

Input as for ``fuzz_decode.py`` (first byte: type tag and strict/lenient, the
rest: the stored payload). The objective is the row's decode CPU time over the
CPU time of an honest row of the same size (a checkpoint of chat messages,
measured in the same process), floored at the work meter's minimum
(checks.FLOOR_SECONDS); an input above checks.MAX_COST_RATIO, confirmed by two
more measurements, is a finding. Seeds: the resource harness's corpus and
the attack rows of issue 19. The prescan (the one Python loop over a row's
bytes) runs uninstrumented here (see ``_common.fuzz``), so the ratio is close to
that of the code as it runs in production; coverage still guides the rest.

    python fuzz/fuzz_cost.py -max_total_time=60 -dict=fuzz/fuzz_decode.dict fuzz/corpus/fuzz_resources
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_cost_ratio", exclude=("serde_kit._prescan", "serde_kit.budget"))
