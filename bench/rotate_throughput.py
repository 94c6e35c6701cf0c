"""Rotation throughput per dialect against its statement floor: 1 KiB rows, real servers.

    .venv/bin/python bench/rotate_throughput.py [--rows N] [--dialects sqlite,postgres,mysql]
        [--workers 1,2] [--modes serial,pipelined,serial,pipelined]

Writes N rows under key k1 into the saver's writes table (SQLite: a file in a
temporary directory; PostgreSQL and MariaDB: the private servers the tests use).
Then, in the same run and on the same rows, interleaved
(floor, rotate, floor, rotate, ..., floor):

* the **floor**: the tool's own claim and compare-and-swap statements, batch
  by batch and chunk by chunk exactly as rotate sends them (same batch class,
  page sizes and chunks; PostgreSQL's chunks in pipeline mode), with no
  crypto at all (each pass flips the last byte of every blob, then a second
  pass flips it back; one rate for the two);
* ``rotate(apply=True)`` without the verification pass, once per ``--modes``
  entry, each a further key rotation of every row (k1 -> k2 -> k3 ...):
  ``serial`` is the default, ``pipelined`` sets ``db.reads_ahead = True``
  (a reader thread on a second connection claims and re-encrypts batch N+1
  during batch N's COMMIT; only SQLite in WAL mode can, so on PostgreSQL and
  MariaDB the two modes run the same code: an A/A control);
* ``verify`` alone.

Before every timed pass the table is brought to the same state outside the
clock (PostgreSQL: ``VACUUM``, so dead row versions of earlier passes do not
pile up; SQLite: a WAL checkpoint), so passes compare like with like.

Each rotation's share is of the mean of the two floors around it.  The summary
line per dialect gives the median share and its range, and the **A/A spread**:
how far each floor lies from the mean of its neighbours, i.e. the noise of
the same code on the same rows in this run; a difference between rotate and
the floor smaller than that spread is not evidence of anything.

It prints rows/s (wall), rows per CPU-second of the tool process and of the
database server.  With several workers (PostgreSQL, MySQL) each runs
``rotate`` in its own process on the same database; they share the rows
through SKIP LOCKED.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sqlite3
import statistics
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
from serde_kit.tools.rotate import _chunked, rotate  # noqa: E402
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
    """CPU seconds the bench's database server has used so far (0 for SQLite).

    Waits a moment first: a PostgreSQL backend whose connection just closed is
    counted neither live nor reaped until the postmaster reaps it.
    """
    root = getattr(server, "root", None)
    if root is None:
        return 0.0
    time.sleep(0.3)
    for pidfile in (Path(root) / "data" / "postmaster.pid", Path(root) / "mysqld.pid"):
        if pidfile.exists():
            return _tree_cpu(int(pidfile.read_text().split()[0]))
    return 0.0


def _flip(blob: bytes) -> bytes:
    return blob[:-1] + bytes((blob[-1] ^ 1,))


def floor_pass(kind: str, location: str, exclude: SealedUnder) -> tuple[int, float, float]:
    """rotate's statements without its crypto: claim, compare-and-swap, commit, batch after batch.

    The same claim (``exclude`` as rotate's header), page sizes, batch class
    and chunks (``compare_and_swap_chunks`` over rotate's ``_chunked``) as
    rotate; every blob gets its last byte flipped (so the UPDATE really
    writes, as rotate's does).  Returns (rows, wall s, tool CPU s).
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
                    chunks = ([(r, r.tag, _flip(r.blob)) for r in part] for part in _chunked(rows))
                    applied = batch.compare_and_swap_chunks(chunks)
                assert all(applied)
                if not rows:
                    break
                sizer.saw(rows)
                done += len(rows)
                after = rows[-1].where
        return done, time.perf_counter() - t0, time.process_time() - c0


def settle(kind: str, location: str) -> None:
    """Bring the rows to the same state before a timed pass (outside the clock)."""
    if kind == "postgres":
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute("VACUUM checkpoint_writes")
    elif kind == "sqlite":
        with sqlite3.connect(location) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


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
        # Load-independent(ish): rows per CPU-second of the tool and of the server, and of
        # the two together (what a row costs the machine, wherever it runs).
        "rows_cpu_s": rows / max(cpu, 1e-9),
        "server_rows_cpu_s": rows / server_seconds if server_seconds > 0 else float("nan"),
        "all_rows_cpu_s": rows / max(cpu + max(server_seconds, 0.0), 1e-9),
    }


#: The floor's claim skips rows under this header; none is under it, so every row is claimed
#: (rotate claims every row not under its new primary: all of them, each rotation).
FLOOR_EXCLUDE = SealedUnder("+" + CIPHER_NAME, build_header("no-such-key"))


def measure_floor(kind: str, location: str, rows: int, server: object) -> dict[str, float]:
    """Two floor passes (flip, flip back: the rows are as before), as one rate."""
    seconds = cpu = server_seconds = 0.0
    for _ in range(2):
        settle(kind, location)
        s0 = server_cpu(server)
        done, s, c = floor_pass(kind, location, FLOOR_EXCLUDE)
        server_seconds += server_cpu(server) - s0
        assert done == rows, (done, rows)
        seconds, cpu = seconds + s, cpu + c
    return rates(2 * rows, seconds, cpu, server_seconds)


def measure(
    kind: str, location: str, rows: int, workers: int, step: int, pipelined: bool, server: object = None
) -> dict[str, float]:
    settle(kind, location)
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


def _line(kind: str, workers: int, what: str, m: dict[str, float], floor: dict[str, float] | None) -> str:
    wall = cpu = ""
    if floor is not None:
        wall = f"{m['rows_s'] / floor['rows_s']:.0%}"
        cpu = f"{m['all_rows_cpu_s'] / floor['all_rows_cpu_s']:.0%}"
    return (
        f"{kind:10} {workers:>7} {what:18} {m['rows_s']:>10,.0f} {m['rows_cpu_s']:>14,.0f} "
        f"{m['server_rows_cpu_s']:>16,.0f} {m['all_rows_cpu_s']:>12,.0f} {wall:>8} {cpu:>8}  {os.getloadavg()[0]:.1f}"
    )


def _between(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """The mean of two floors (the one before a rotation and the one after it)."""
    return {k: (a[k] + b[k]) / 2 for k in a}


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.0%} ({min(values):.0%}-{max(values):.0%})"


def summary(floors: list[dict[str, float]], rotations: list[tuple[str, dict[str, float]]]) -> list[str]:
    """Each mode's share of its neighbouring floors, and the floors' own A/A spread (wall and CPU)."""
    out = []
    for key, what in (("rows_s", "wall"), ("all_rows_cpu_s", "CPU")):
        values = [f[key] for f in floors]
        for mode in dict.fromkeys(m for m, _ in rotations):
            shares = [
                r[key] / ((values[i] + values[i + 1]) / 2) for i, (m, r) in enumerate(rotations) if m == mode
            ]
            out.append(f"  {what:4} rotate {mode} / floor: {_spread(shares)} over {len(shares)} runs")
        # A/A: each floor against the mean of the floors beside it (the ends: their one neighbour).
        aa = []
        for i, v in enumerate(values):
            near = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]
            aa.append(v / statistics.mean(near))
        out.append(f"  {what:4} A/A, floor / neighbouring floors: {_spread(aa)} over {len(values)} floors")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--dialects", default="sqlite,postgres,mysql")
    parser.add_argument("--workers", default="1")
    parser.add_argument("--modes", default="serial,pipelined,serial,pipelined")
    args = parser.parse_args()
    modes = args.modes.split(",")
    assert set(modes) <= {"serial", "pipelined"}, modes
    print(f"{args.rows:,} rows of 1 KiB; load = 1-minute load average after the pass")
    print(
        f"{'dialect':10} {'workers':>7} {'pass':18} {'rows/s':>10} {'rows/tool CPU s':>14} "
        f"{'rows/server CPU s':>16} {'rows/all CPU s':>12} {'of floor':>8} {'(CPU)':>8}  load"
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
                    # floor, rotate, floor, rotate, ..., floor: each rotation between two floors,
                    # so a drift of the run (load, the table's state) touches both sides alike.
                    floors = [measure_floor(kind, location, args.rows, server)]
                    print(_line(kind, 1, "floor", floors[0], None), flush=True)
                    rotations: list[tuple[str, dict[str, float]]] = []
                    for step, mode in enumerate(modes, start=1):
                        m = measure(kind, location, args.rows, workers, step, mode == "pipelined", server)
                        floors.append(measure_floor(kind, location, args.rows, server))
                        rotations.append((mode, m))
                        near = _between(floors[-2], floors[-1])
                        print(_line(kind, workers, f"rotate {mode}", m, near), flush=True)
                        print(_line(kind, 1, "floor", floors[-1], None), flush=True)
                    for text in summary(floors, rotations):
                        print(f"{kind:10} {text}", flush=True)
                    v = measure_verify(kind, location, args.rows, len(modes))
                    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                    print(f"{kind:10} {workers:>7} {'verify':18} {v:>10,.0f}   (peak RSS {rss:.0f} MiB)", flush=True)
            finally:
                if server is not None:
                    server.stop()


if __name__ == "__main__":
    main()
