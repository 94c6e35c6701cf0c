"""Rotation throughput per dialect (issue 11, section 5): 1 KiB rows, one process, real servers.

    .venv/bin/python bench/rotate_throughput.py [--rows N] [--dialects sqlite,postgres,mysql] [--workers 1,2]

Writes N rows under key k1 into the saver's writes table (SQLite: a file in a
temporary directory; PostgreSQL and MariaDB: the private servers the tests use),
then times ``rotate(apply=True)`` to k2 without the verification pass, then
``verify`` alone, and reports rows/s and the process's peak RSS.  With several
workers (PostgreSQL, MySQL) each runs ``rotate`` in its own process on the
same database; they share the rows through SKIP LOCKED.
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
sys.path.insert(0, str(HERE.parent / "tests"))

from serde_kit.crypto import EncryptedSerializer, Keyring  # noqa: E402
from serde_kit.serializer import Serializer  # noqa: E402
from serde_kit.tools.db import open_database  # noqa: E402
from serde_kit.tools.rotate import rotate  # noqa: E402
from serde_kit.tools.verify import verify  # noqa: E402

K1, K2 = bytes(range(32)), bytes(range(100, 132))
OLD = Keyring({"k1": K1}, primary="k1")
NEW = Keyring({"k2": K2, "k1": K1}, primary="k2")
CHUNK = 5000


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


def _worker(args: tuple[str, str]) -> tuple[int, float, float]:
    kind, location = args
    with open_database(**{kind: location}, readonly=False) as db:
        t0, c0 = time.perf_counter(), time.process_time()
        report = rotate(db, keyring=NEW, apply=True, verify_after=False, batch_size=2000)
        return report.total_changed, time.perf_counter() - t0, time.process_time() - c0


def measure(kind: str, location: str, rows: int, workers: int, server: object = None) -> dict[str, float]:
    s0 = server_cpu(server)
    if workers == 1:
        changed, seconds, cpu = _worker((kind, location))
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            t0 = time.perf_counter()
            results = pool.map(_worker, [(kind, location)] * workers)
            seconds = time.perf_counter() - t0
        changed = sum(n for n, _, _ in results)
        cpu = sum(c for _, _, c in results)
    server_seconds = server_cpu(server) - s0
    assert changed == rows, (changed, rows)
    with open_database(**{kind: location}) as db:
        t0 = time.perf_counter()
        checked = verify(db, keyring=NEW, batch_size=2000)
        verify_seconds = time.perf_counter() - t0
    assert checked.ok and checked.decrypted == rows
    return {
        "rotate_rows_s": rows / seconds,
        # Load-independent(ish): rows per CPU-second of the tool and of the server.
        "rotate_rows_cpu_s": rows / max(cpu, 1e-9),
        "server_rows_cpu_s": rows / server_seconds if server_seconds > 0 else float("nan"),
        "verify_rows_s": rows / verify_seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dialects", default="sqlite,postgres,mysql")
    parser.add_argument("--workers", default="1")
    args = parser.parse_args()
    print(
        f"{'dialect':10} {'workers':>7} {'rows':>9} {'rotate rows/s':>14} {'verify rows/s':>14} {'peak RSS MiB':>13} "
        f"{'rows/tool CPU s':>16} {'rows/server CPU s':>18}  load"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.dialects.split(","):
            server = None
            if kind == "postgres":
                from pg_server import PostgresServer

                server = PostgresServer().start()
            elif kind == "mysql":
                from mysql_server import MysqlServer

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
                    m = measure(kind, location, args.rows, workers, server)
                    print(
                        f"{kind:10} {workers:>7} {args.rows:>9} {m['rotate_rows_s']:>14,.0f} "
                        f"{m['verify_rows_s']:>14,.0f} {m['peak_rss_mib']:>13.0f} "
                        f"{m['rotate_rows_cpu_s']:>16,.0f} {m['server_rows_cpu_s']:>18,.0f}  {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
            finally:
                if server is not None:
                    server.stop()


if __name__ == "__main__":
    main()
