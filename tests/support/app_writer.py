"""A LangGraph application process that keeps writing while rotate runs (used by the tests).

Usage: python -m tests.support.app_writer (--sqlite PATH | --postgres DSN | --mysql DSN) --thread ID --checkpoint-id ID

Mid-deploy keyring (k1 still primary, k2 known).  Prints ``ready``, then runs
one round per line read on stdin, until stdin closes: each round upserts one
pending write (task ``app-task``, channel ``__error__``) on the given
checkpoint with value ``app value N``, and every fifth round runs the graph on
a new thread ``live-N``.  The test sends a line per rotate batch, so the work
is bounded by a count and overlaps rotation whatever the machine's speed.
At the end it prints one JSON line: ``{"last_value", "upserts", "threads"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

from serde_kit.crypto import EncryptedSerializer
from tests.support.rotate_fixtures import (
    K_OLD,
    K_ROTATE,
    build_graph,
    inner_serializer,
    postgres_saver,
    run_thread,
    sqlite_saver,
)

ERROR_CHANNEL = "__error__"


def live_input(n: int) -> tuple[str, int, bool]:
    """Thread id, graph input and whether to resume, for round ``n``."""
    return f"live-{n}", 1000 + n, n % 2 == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--sqlite")
    where.add_argument("--postgres")
    where.add_argument("--mysql")
    parser.add_argument("--thread", required=True)
    parser.add_argument("--checkpoint-id", required=True)
    args = parser.parse_args()
    if args.sqlite:
        factory = partial(sqlite_saver, args.sqlite)
    elif args.postgres:
        factory = partial(postgres_saver, args.postgres)
    else:
        from tests.support.rotate_fixtures import mysql_saver

        factory = partial(mysql_saver, args.mysql)
    keyring = K_OLD.with_key("k2", K_ROTATE.key("k2"))
    target = {"configurable": {"thread_id": args.thread, "checkpoint_ns": "", "checkpoint_id": args.checkpoint_id}}
    threads = []
    n = 0
    last = None
    with factory(EncryptedSerializer(inner_serializer(), keyring)) as saver:
        app = build_graph().compile(checkpointer=saver)
        print("ready", flush=True)
        while sys.stdin.readline():
            value = f"app value {n}"
            saver.put_writes(target, [(ERROR_CHANNEL, value)], task_id="app-task")
            last = value
            if n % 5 == 0:
                thread, count, resume = live_input(n)
                run_thread(app, thread, count, resume=resume)
                threads.append(n)
            n += 1
    print(json.dumps({"last_value": last, "upserts": n, "threads": threads}), flush=True)


if __name__ == "__main__":
    main()
