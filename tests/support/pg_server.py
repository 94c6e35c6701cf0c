"""A throwaway PostgreSQL server for the test suite.

Starts a private cluster in a fresh temporary directory on a free TCP port of
127.0.0.1 (trust auth, fsync off) with its unix socket inside that directory,
so several test runs on one machine never collide. PostgreSQL refuses to run
as root: when the euid is 0 the directory is handed to the ``postgres`` user
and every server binary runs through ``runuser -u postgres --``.

Binaries come from ``$PG_BIN`` if set, else the newest
``/usr/lib/postgresql/*/bin`` (or whatever ``pg_ctl`` is on ``PATH``).

Also runnable by hand: ``python -m tests.support.pg_server`` starts a server, prints
its DSN and stops it on Enter.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.private_server import PrivateServer, free_port

__all__ = ["PostgresServer", "PostgresStartError", "find_pg_bin"]


class PostgresStartError(RuntimeError):
    """The test server could not be started; the message carries the logs."""


def find_pg_bin() -> Path:
    """Directory holding ``initdb`` and ``pg_ctl``.

    Raises PostgresStartError when none is found.
    """
    override = os.environ.get("PG_BIN")
    if override:
        path = Path(override)
        if not (path / "pg_ctl").exists():
            raise PostgresStartError(f"PG_BIN={override!r} has no pg_ctl in it")
        return path
    candidates = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")

    def major(p: str) -> tuple[int, ...]:
        version = Path(p).parent.parent.name
        return tuple(int(x) for x in version.split(".") if x.isdigit())

    if candidates:
        return Path(max(candidates, key=major)).parent
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).parent
    raise PostgresStartError(
        "no PostgreSQL server binaries found: install postgresql (initdb, pg_ctl) "
        "or set PG_BIN to the directory that holds them"
    )


class PostgresServer(PrivateServer):
    """One private PostgreSQL cluster; ``start()``, use ``dsn``, ``stop()``."""

    system_user = "postgres"
    prefix = "serde-kit-pg-"

    def __init__(self, *, pg_bin: Path | None = None) -> None:
        super().__init__()
        self.pg_bin = pg_bin
        self._started = False

    # -- paths --------------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root / "sock"

    @property
    def dsn(self) -> str:
        """DSN of the ``postgres`` database as superuser ``postgres``."""
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        """DSN of database ``dbname`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    # -- running binaries ---------------------------------------------------
    def _run(self, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        assert self.pg_bin is not None and self.root is not None
        cmd = self._cmd(str(self.pg_bin / tool), *args)
        env = dict(os.environ)
        env.pop("PGDATA", None)
        env.update(LC_ALL="C", LANG="C")
        # cwd inside our directory: postgres may not be allowed into the caller's cwd
        return subprocess.run(
            cmd,
            cwd=self.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> "PostgresServer":
        """initdb + pg_ctl start; raises PostgresStartError with the logs on failure."""
        if self.pg_bin is None:
            self.pg_bin = find_pg_bin()
        self._make_root(0o700)
        self.socket_dir.mkdir()
        if self._as_user:
            shutil.chown(self.socket_dir, self.system_user, self.system_user)
        try:
            init = self._run(
                "initdb",
                "-D", str(self.data_dir),
                "-U", "postgres",
                "--auth=trust",
                "-E", "UTF8",
                "--locale=C",
                "--no-sync",
            )
            if init.returncode != 0:
                raise PostgresStartError(
                    f"initdb failed (exit {init.returncode}):\n{init.stdout}"
                )
            last = ""
            for _attempt in range(5):
                # The port is free when picked but may be taken before the server
                # binds it; retry with another one.
                self.port = free_port()
                options = " ".join(
                    [
                        f"-p {self.port}",
                        "-c listen_addresses=127.0.0.1",
                        f"-c unix_socket_directories={self.socket_dir}",
                        "-c fsync=off",
                        "-c synchronous_commit=off",
                        "-c full_page_writes=off",
                        "-c max_connections=200",
                        "-c shared_buffers=32MB",
                    ]
                )
                ctl = self._run(
                    "pg_ctl",
                    "-D", str(self.data_dir),
                    "-l", str(self.log_file),
                    "-o", options,
                    "-w", "-t", "60",
                    "start",
                )
                if ctl.returncode == 0:
                    self._started = True
                    return self
                last = f"pg_ctl start failed (exit {ctl.returncode}):\n{ctl.stdout}\n--- server log ---\n{self._log_tail()}"
                if "Address already in use" not in last and "could not bind" not in last:
                    break
            raise PostgresStartError(last)
        except BaseException:
            self._cleanup_dir()
            raise

    def restart(self) -> None:
        """``pg_ctl restart`` (fast) as the server's user, same options; returns once it accepts connections.

        Every open session is ended, as when an operator restarts a production server.
        """
        ctl = self._run(
            "pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-m", "fast", "-w", "-t", "60", "restart",
            timeout=120,
        )
        if ctl.returncode != 0:
            raise PostgresStartError(f"pg_ctl restart failed (exit {ctl.returncode}):\n{ctl.stdout}\n{self._log_tail()}")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        try:
            if self._started:
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", timeout=60)
                self._started = False
        finally:
            self._cleanup_dir()

    # -- databases ----------------------------------------------------------
    def new_database(self, name_prefix: str = "test", *, template: str | None = None) -> str:
        """CREATE DATABASE with a unique name (a copy of ``template`` if given); returns its DSN.

        ``template`` is a database name or a DSN from this server; it must have
        no open connections.
        """
        import psycopg

        name = self._unique_name(name_prefix)
        sql = f'CREATE DATABASE "{name}"'
        if template is not None:
            sql += f' TEMPLATE "{template.rsplit("/", 1)[-1]}"'
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql)
        return self.dsn_for(name)


if __name__ == "__main__":
    with PostgresServer() as server:
        print(server.dsn, flush=True)
        input("server running; press Enter to stop ")
