"""Rotation throughput per dialect against its statement floor: 1 KiB rows, real servers.

    .venv/bin/python bench/rotate_throughput.py [--rows N] [--dialects sqlite,postgres,mysql]
        [--workers 1,2] [--modes serial,pipelined,serial,pipelined]

Writes N rows under key k1 into the saver's writes table (SQLite: a file in a
temporary directory; PostgreSQL and MariaDB: the private servers the tests use).
Then, in the same run and on the same rows:

* the **floor**, before and after the rotations (an A/A control): the
  tool's own claim and compare-and-swap statements, batch by batch as rotate
  sends them, with no crypto at all (each pass flips the last byte of every
  blob, then a second pass flips it back; one rate for the two);
* ``rotate(apply=True)`` without the verification pass, once per ``--modes``
  entry, each a further key rotation of every row (k1 -> k2 -> k3 ...):
  ``serial`` is the default, ``pipelined`` sets ``db.reads_ahead = True``
  (a reader thread on a second connection claims and re-encrypts batch N+1
  during batch N's COMMIT; only SQLite in WAL mode can, so on PostgreSQL and
  MariaDB the two modes run the same code: an A/A control);
* ``verify`` alone.

It prints rows/s (wall), rows per CPU-second of the tool process and of the
database server, and rotate's share of the mean floor.  With several workers
(PostgreSQL, MySQL) each runs ``rotate`` in its own process on the same
database; they share the rows through SKIP LOCKED.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # a script: the private servers are tests.support.*

from serde_kit.crypto import EncryptedSerializer, Keyring  # noqa: E402
from serde_kit.crypto.blob import CIPHER_NAME, build_header  # noqa: E402
from serde_kit.serializer import Serializer  # noqa: E402
from serde_kit.tools.db import SealedUnder, open_database  # noqa: E402
from serde_kit.tools.db.paging import PageSizer  # noqa: E402
from serde_kit.tools.rotate import rotate  # noqa: E402
from serde_kit.tools.verify import verify  # noqa: E402

K1 = bytes(range(32))
OLD = Keyring({"k1": K1}, primary="k1")
CHUNK = 5000
BATCH = 2000


def step_keyring(step: int) -> Keyring:
    """The keyring of rotation ``step`` (1-based): k<step> -> k<step+1>."""
    old, new = f"k{step}", f"k{step + 1}"
    key = {name: bytes((i * 7 + n) % 256 for i in range(32)) for n, name in enumerate((old, new), start=step)}
    if step == 1:
        key[old] = K1
    return Keyring({new: key[new], old: key[old]}, primary=new)


def _row_value() -> tuple[str, bytes]:
    return EncryptedSerializer(Serializer(), OLD).dumps_typed(os.urandom(1000))


def fill_sqlite(path: str, rows: int) -> str:
    from langgraph.checkpoint.sqlite import SqliteSaver

    tag, blob = _row_value()
    with sqlite3.connect(path, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
        for start in range(0, rows, CHUNK):
            conn.executemany(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
                "VALUES (?, '', 'c', 't', 0, 'x', ?, ?)",
                [(f"t{i:09d}", tag, blob) for i in range(start, min(rows, start + CHUNK))],
            )
    return path


def fill_postgres(dsn: str, rows: int) -> str:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    tag, blob = _row_value()
    with psycopg.connect(dsn, autocommit=True) as conn:
        PostgresSaver(conn).setup()
        with conn.cursor().copy(
            "COPY checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob) FROM STDIN"
        ) as copy:
            for i in range(rows):
                copy.write_row((f"t{i:09d}", "", "c", "t", 0, "x", tag, blob))
    return dsn


def fill_mysql(dsn: str, rows: int) -> str:
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    tag, blob = _row_value()
    with pymysql.connect(**PyMySQLSaver.parse_conn_string(dsn), autocommit=True) as conn:
        PyMySQLSaver(conn).setup()
        with conn.cursor() as cur:
            for start in range(0, rows, CHUNK):
                cur.executemany(
                    "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_ns_hash, checkpoint_id, "
                    "task_id, task_path, idx, channel, type, `blob`) VALUES (%s, '', UNHEX(MD5('')), 'c', 't', '', 0, 'x', %s, %s)",
                    [(f"t{i:09d}", tag, blob) for i in range(start, min(rows, start + CHUNK))],
                )
    return dsn


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``, its reaped children and its live children (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p: str) -> list[str]:
        with open(f"/proc/{p}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()

    fields = stat(str(pid))
    total = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                f = stat(p)
            except OSError:
                continue
            if int(f[1]) == pid:  # ppid
                total += int(f[11]) + int(f[12])
    return total / tick


def server_cpu(server: object) -> float:
    """CPU seconds the bench's database server has used so far (0 for SQLite)."""
    root = getattr(server, "root", None)
    if root is None:
        return 0.0
    for pidfile in (Path(root) / "data" / "postmaster.pid", Path(root) / "mysqld.pid"):
        if pidfile.exists():
            return _tree_cpu(int(pidfile.read_text().split()[0]))
    return 0.0


def _flip(blob: bytes) -> bytes:
    return blob[:-1] + bytes((blob[-1] ^ 1,))


def floor_pass(kind: str, location: str, exclude: SealedUnder) -> tuple[int, float, float]:
    """rotate's statements without its crypto: claim, compare-and-swap, commit, batch after batch.

    The same claim (``exclude`` as rotate's header), page sizes and batch
    class as rotate; every blob gets its last byte flipped (so the UPDATE
    really writes, as rotate's does).  Returns (rows, wall s, tool CPU s).
    """
    with open_database(**{kind: location}, readonly=False) as db:
        db.check_writable()
        t0, c0 = time.perf_counter(), time.process_time()
        done = 0
        for table in db.tables:
            after = None
            sizer = PageSizer(BATCH)
            while True:
                with db.batch(table, after=after, limit=sizer.limit, exclude=exclude) as batch:
                    rows = batch.rows
                    applied = batch.compare_and_swap_many([(r, r.tag, _flip(r.blob)) for r in rows])
                assert all(applied)
                if not rows:
                    break
                sizer.saw(rows)
                done += len(rows)
                after = rows[-1].where
        return done, time.perf_counter() - t0, time.process_time() - c0


def _worker(args: tuple[str, str, int, bool]) -> tuple[int, float, float]:
    kind, location, step, pipelined = args
    with open_database(**{kind: location}, readonly=False) as db:
        db.reads_ahead = pipelined  # used where the dialect can (db.can_read_ahead): SQLite in WAL mode
        t0, c0 = time.perf_counter(), time.process_time()
        report = rotate(db, keyring=step_keyring(step), apply=True, verify_after=False, batch_size=BATCH)
        assert report.ok, report.failures[:3]
        return report.total_changed, time.perf_counter() - t0, time.process_time() - c0


def rates(rows: int, seconds: float, cpu: float, server_seconds: float) -> dict[str, float]:
    return {
        "rows_s": rows / seconds,
        # Load-independent(ish): rows per CPU-second of the tool and of the server.
        "rows_cpu_s": rows / max(cpu, 1e-9),
        "server_rows_cpu_s": rows / server_seconds if server_seconds > 0 else float("nan"),
    }


def measure_floor(kind: str, location: str, rows: int, server: object) -> dict[str, float]:
    """Two floor passes (flip, flip back: the rows are as before), as one rate."""
    s0 = server_cpu(server)
    seconds = cpu = 0.0
    for _ in range(2):
        done, s, c = floor_pass(kind, location, SealedUnder("+" + CIPHER_NAME, build_header("k2")))
        assert done == rows, (done, rows)
        seconds, cpu = seconds + s, cpu + c
    return rates(2 * rows, seconds, cpu, server_cpu(server) - s0)


def measure(
    kind: str, location: str, rows: int, workers: int, step: int, pipelined: bool, server: object = None
) -> dict[str, float]:
    s0 = server_cpu(server)
    if workers == 1:
        changed, seconds, cpu = _worker((kind, location, step, pipelined))
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            t0 = time.perf_counter()
            results = pool.map(_worker, [(kind, location, step, pipelined)] * workers)
            seconds = time.perf_counter() - t0
        changed = sum(n for n, _, _ in results)
        cpu = sum(c for _, _, c in results)
    server_seconds = server_cpu(server) - s0
    assert changed == rows, (changed, rows)
    return rates(rows, seconds, cpu, server_seconds)


def measure_verify(kind: str, location: str, rows: int, step: int) -> float:
    with open_database(**{kind: location}) as db:
        t0 = time.perf_counter()
        checked = verify(db, keyring=step_keyring(step), batch_size=BATCH)
        seconds = time.perf_counter() - t0
    assert checked.ok and checked.decrypted == rows
    return rows / seconds


def _line(kind: str, workers: int, what: str, m: dict[str, float], floor: float | None) -> str:
    share = "" if floor is None else f"{m['rows_s'] / floor:>8.0%}"
    return (
        f"{kind:10} {workers:>7} {what:18} {m['rows_s']:>10,.0f} {m['rows_cpu_s']:>14,.0f} "
        f"{m['server_rows_cpu_s']:>16,.0f} {share:>8}  {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dialects", default="sqlite,postgres,mysql")
    parser.add_argument("--workers", default="1")
    parser.add_argument("--modes", default="serial,pipelined,serial,pipelined")
    args = parser.parse_args()
    modes = args.modes.split(",")
    assert set(modes) <= {"serial", "pipelined"}, modes
    print(f"{args.rows:,} rows of 1 KiB; load = 1-minute load average after the pass")
    print(
        f"{'dialect':10} {'workers':>7} {'pass':18} {'rows/s':>10} {'rows/tool CPU s':>14} "
        f"{'rows/server CPU s':>16} {'of floor':>8}  load"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.dialects.split(","):
            server = None
            if kind == "postgres":
                from tests.support.pg_server import PostgresServer

                server = PostgresServer().start()
            elif kind == "mysql":
                from tests.support.mysql_server import MysqlServer

                server = MysqlServer().start()
            try:
                for workers in [int(w) for w in args.workers.split(",")]:
                    if kind == "sqlite" and workers > 1:
                        continue
                    if kind == "sqlite":
                        location = fill_sqlite(str(Path(tmp) / f"bench-{workers}.db"), args.rows)
                    elif kind == "postgres":
                        location = fill_postgres(server.new_database("bench"), args.rows)
                    else:
                        location = fill_mysql(server.new_database("bench"), args.rows)
                    # The floor before and after the rotations (an A/A control that also shows any drift
                    # of the run, e.g. a WAL file grown by the first passes); rotate's share is of their mean.
                    before = measure_floor(kind, location, args.rows, server)
                    rotations = [
                        (mode, measure(kind, location, args.rows, workers, step, mode == "pipelined", server))
                        for step, mode in enumerate(modes, start=1)
                    ]
                    after = measure_floor(kind, location, args.rows, server)
                    floor = (before["rows_s"] + after["rows_s"]) / 2
                    print(_line(kind, 1, "floor (before)", before, floor), flush=True)
                    for mode, m in rotations:
                        print(_line(kind, workers, f"rotate {mode}", m, floor), flush=True)
                    print(_line(kind, 1, "floor (after)", after, floor), flush=True)
                    v = measure_verify(kind, location, args.rows, len(modes))
                    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                    print(f"{kind:10} {workers:>7} {'verify':18} {v:>10,.0f}   (peak RSS {rss:.0f} MiB)", flush=True)
            finally:
                if server is not None:
                    server.stop()


if __name__ == "__main__":
    main()
