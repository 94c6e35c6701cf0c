"""rotate --apply killed with SIGKILL at random points loses nothing and finishes on rerun.

Each trial starts ``python -m serde_kit rotate --apply`` on a fresh copy of the
graph-written database with tiny batches, kills it with SIGKILL after a random
delay (seeded), checks that every row still decrypts to the same bytes, then
reruns rotate to completion and checks again.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from serde_kit.cli.keys import format_rotate
from serde_kit.crypto.blob import CIPHER_NAME, build_header
from serde_kit.tools.db import SealedUnder, open_database
from serde_kit.tools.rotate import rotate
from serde_kit.tools.status import status
from tests.support.rotate_fixtures import K_ROTATE, LEGACY_TEXT, plain_rows

SEED = 20261130
SQLITE_TRIALS = 20
POSTGRES_TRIALS = 5
FLAGS = ["--encrypt-plaintext", "--upgrade-legacy"]


def cli_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "LANGGRAPH_AES"))}
    env["SERDE_KIT_KEYRING"] = K_ROTATE.to_env_value()
    env["LANGGRAPH_AES_KEY"] = LEGACY_TEXT
    return env


def start_rotate(where_args, batch_size):
    return subprocess.Popen(
        [sys.executable, "-m", "serde_kit", "rotate", *where_args, "--apply", "-q", "--batch-size", str(batch_size), *FLAGS],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def full_run_seconds(where_args, batch_size):
    t0 = time.monotonic()
    proc = start_rotate(where_args, batch_size)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return time.monotonic() - t0


def kill_trials(rng, trials, fresh, where_args, batch_size):
    """Returns how many trials were killed with the rotation half done."""
    calibration = fresh()
    duration = full_run_seconds(where_args(calibration), batch_size)
    mid_run = 0
    for _ in range(trials):
        location = fresh()
        kw = where_args(location)
        with open_database(**_store_kw(kw)) as store:
            original = plain_rows(store)
            needing = status(store).total
        needing = needing.by_key["k1"] + needing.plaintext + needing.legacy
        proc = start_rotate(kw, batch_size)
        if rng.random() < 0.5:
            # a random instant of the whole run (start-up, writing, verification, or after)
            time.sleep(rng.uniform(0, duration))
        else:
            # a random point of the writing phase: once that many rows are done
            wait_until_rotated(kw, proc, rng.randint(1, needing - 1))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        # At the instant of the kill every row is in its old or its new form.
        with open_database(**_store_kw(kw)) as store:
            assert plain_rows(store) == original
            left = status(store).total
            left = left.by_key["k1"] + left.plaintext + left.legacy
            if 0 < left < needing:
                mid_run += 1
        with open_database(**_store_kw(kw), readonly=False) as store:
            report = rotate(
                store, keyring=K_ROTATE, apply=True, encrypt_plaintext=True, upgrade_legacy=True, batch_size=50
            )
            assert report.ok, format_rotate(report)
            assert report.total_changed == left
            after = status(store, keyring=K_ROTATE, verify=True).total
            assert dict(after.by_key) == {"k2": after.rows - after.empty}
            assert after.failed == 0
            assert plain_rows(store) == original
    print(f"mid-run kills: {mid_run}/{trials} (full run {duration:.2f}s)")
    return mid_run


def wait_until_rotated(where_args, proc, target):
    header = SealedUnder("+" + CIPHER_NAME, build_header(K_ROTATE.primary_id))
    with open_database(**_store_kw(where_args)) as store:
        start = sum(store.count_pending(t, exclude=header) for t in store.tables)
        while proc.poll() is None:
            pending = sum(store.count_pending(t, exclude=header) for t in store.tables)
            if start - pending >= target:
                return
            time.sleep(0.001)


def _store_kw(where_args):
    flag, location = where_args
    return {flag.lstrip("-"): location}


def test_sigkill_sqlite(graph_sqlite_template, tmp_path):
    rng = random.Random(SEED)
    counter = iter(range(10_000))

    def fresh():
        path = tmp_path / f"db{next(counter)}.db"
        shutil.copyfile(graph_sqlite_template, path)
        return str(path)

    mid_run = kill_trials(rng, SQLITE_TRIALS, fresh, lambda p: ["--sqlite", p], batch_size=2)
    # The harness must really interrupt rotations, not only kill before or after them.
    assert mid_run >= SQLITE_TRIALS // 4, f"only {mid_run} of {SQLITE_TRIALS} kills landed mid-rotation"


@pytest.mark.postgres
def test_sigkill_postgres(postgres_server, graph_postgres_template):
    rng = random.Random(SEED + 1)

    def fresh():
        return postgres_server.new_database("kill", template=graph_postgres_template)

    mid_run = kill_trials(rng, POSTGRES_TRIALS, fresh, lambda d: ["--postgres", d], batch_size=1)
    assert mid_run >= 1, f"only {mid_run} of {POSTGRES_TRIALS} kills landed mid-rotation"
