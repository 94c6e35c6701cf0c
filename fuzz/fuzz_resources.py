#!/usr/bin/env python3
"""Fuzz the decode budget: no stored row may take > 1 s or grow RSS > 10x its size.

Input as for ``fuzz_decode.py`` (first byte: type tag and strict/lenient, the
rest: the stored payload). Seeds are the attack rows of the security review
(tests/support/budget_attacks.py, the ones small enough for libFuzzer's input size),
so mutation starts next to every known attack class.

    python fuzz/fuzz_resources.py -max_total_time=60 fuzz/corpus/fuzz_resources
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_resources")
