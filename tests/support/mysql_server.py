"""A throwaway MariaDB server for the test suite (Debian's ``mariadb-server`` package).

Like tests/support/pg_server.py: a private data directory in a fresh temporary
directory, its unix socket inside it, a free TCP port of 127.0.0.1, and the
server running as the ``mysql`` user when the tests run as root (MariaDB
refuses to run as root).  ``root`` has no password (``--auth-root-authentication-method=normal``),
durability is off (it is thrown away), and the readiness wait ends when the
server answers or its process exits, never on a clock alone.

Binaries: ``mariadb-install-db`` and ``mariadbd`` from ``PATH`` or ``/usr/sbin``,
or the directory in ``$MARIADB_BIN``.  Also runnable by hand:
``python -m tests.support.mysql_server`` prints a DSN and stops on Enter.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.support.private_server import PrivateServer, free_port

__all__ = ["MysqlServer", "MysqlStartError", "find_mariadb_bin"]

#: Attempts to connect while the server starts (0.2 s apart), as long as its process lives.
READY_ATTEMPTS = 1500


class MysqlStartError(RuntimeError):
    """The test server could not be started; the message carries the logs."""


def find_mariadb_bin() -> tuple[Path, Path]:
    """``(mariadb-install-db, mariadbd)``; MysqlStartError when they are missing."""
    override = os.environ.get("MARIADB_BIN")
    dirs = [Path(override)] if override else []
    dirs += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p] + [Path("/usr/sbin"), Path("/usr/bin")]
    install = next((d / "mariadb-install-db" for d in dirs if (d / "mariadb-install-db").exists()), None)
    server = next((d / "mariadbd" for d in dirs if (d / "mariadbd").exists()), None)
    if install is None or server is None:
        raise MysqlStartError(
            "no MariaDB server binaries found: apt-get install mariadb-server "
            "(mariadb-install-db, mariadbd), or set MARIADB_BIN to the directory that holds them"
        )
    return install, server


class MysqlServer(PrivateServer):
    """One private MariaDB server; ``start()``, ``new_database()``, ``stop()``."""

    system_user = "mysql"
    prefix = "serde-kit-mysql-"

    def __init__(self, *, server_args: tuple[str, ...] = ()) -> None:
        super().__init__()
        #: extra ``mariadbd`` options, after the defaults (so they win): e.g. a bigger buffer pool for benchmarks
        self.server_args = tuple(server_args)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def socket_path(self) -> Path:
        assert self.root is not None
        return self.root / "mysqld.sock"

    def dsn_for(self, database: str, *, user: str = "root", password: str | None = None) -> str:
        """``mysql://`` DSN of ``database`` over TCP."""
        auth = user if password is None else f"{user}:{password}"
        return f"mysql://{auth}@127.0.0.1:{self.port}/{database}"

    def start(self) -> MysqlServer:
        """Install a data directory and start ``mariadbd``; MysqlStartError with the logs on failure."""
        install, server = find_mariadb_bin()
        self._make_root(0o755)
        try:
            done = subprocess.run(
                self._cmd(
                    str(install),
                    "--no-defaults",
                    f"--datadir={self.data_dir}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    "--skip-name-resolve",
                ),
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise MysqlStartError(f"mariadb-install-db failed (exit {done.returncode}):\n{done.stdout}")
            last = ""
            for _attempt in range(5):
                self.port = free_port()
                self._proc = subprocess.Popen(
                    self._cmd(
                        str(server),
                        "--no-defaults",
                        f"--datadir={self.data_dir}",
                        f"--socket={self.socket_path}",
                        f"--port={self.port}",
                        "--bind-address=127.0.0.1",
                        f"--pid-file={self.root / 'mysqld.pid'}",
                        f"--log-error={self.log_file}",
                        # Its own temporary directory: a shared /tmp gets cleaned under a
                        # running server ("Error on delete of '/tmp/#sql-update-...MAI'").
                        f"--tmpdir={self.root}",
                        "--skip-name-resolve",
                        "--skip-log-bin",
                        "--innodb-buffer-pool-size=64M",
                        "--innodb-log-file-size=16M",
                        "--innodb-flush-log-at-trx-commit=0",
                        "--innodb-doublewrite=0",
                        "--sync-binlog=0",
                        "--max-connections=200",
                        "--innodb-lock-wait-timeout=50",
                        *self.server_args,
                    ),
                    cwd=self.root,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                if self._wait_ready():
                    return self
                last = f"mariadbd did not start (exit {self._proc.poll()}):\n--- server log ---\n{self._log_tail()}"
                self._kill()
                if "Address already in use" not in last and "Can't start server" not in last:
                    break
            raise MysqlStartError(last)
        except BaseException:
            self._kill()
            self._cleanup_dir()
            raise

    def _wait_ready(self) -> bool:
        import pymysql

        assert self._proc is not None
        for _ in range(READY_ATTEMPTS):
            if self._proc.poll() is not None:
                return False
            try:
                pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=5).close()
                return True
            except pymysql.MySQLError:
                time.sleep(0.2)
        return False

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        try:
            self._kill()
        finally:
            self._cleanup_dir()

    def connect(self, database: str | None = None, **kwargs: object):
        """A pymysql connection as root (autocommit)."""
        import pymysql

        return pymysql.connect(
            host="127.0.0.1", port=self.port, user="root", database=database, autocommit=True, **kwargs
        )

    def new_database(self, name_prefix: str = "test", *, template: str | None = None) -> str:
        """CREATE DATABASE with a unique name (copying ``template``'s tables and rows if given); its DSN."""
        name = self._unique_name(name_prefix)
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
            if template is not None:
                source = template.rsplit("/", 1)[-1]
                cur.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (source,)
                )
                for (table,) in cur.fetchall():
                    cur.execute(f"CREATE TABLE `{name}`.`{table}` LIKE `{source}`.`{table}`")
                    cur.execute(f"INSERT INTO `{name}`.`{table}` SELECT * FROM `{source}`.`{table}`")
        return self.dsn_for(name)


if __name__ == "__main__":
    with MysqlServer() as server:
        print(server.dsn_for("mysql"), flush=True)
        input("server running; press Enter to stop ")
