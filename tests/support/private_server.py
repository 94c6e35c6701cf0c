"""What the suite's throwaway database servers share (tests/support/pg_server.py, tests/support/mysql_server.py).

Each server lives in a fresh temporary directory (data directory, socket, log)
on a free TCP port of 127.0.0.1, so several test runs on one machine never
collide.  Database servers refuse to run as root: when the euid is 0 the
directory is handed to the server's own system user and every server binary
runs through ``runuser -u USER --``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path
from typing import ClassVar

__all__ = ["PrivateServer", "free_port"]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (the caller retries if it is taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateServer:
    """One private server: its directory, its system user, its log, unique database names."""

    #: The system user the server runs as when the tests run as root.
    system_user: ClassVar[str]
    #: Prefix of the temporary directory's name.
    prefix: ClassVar[str]

    def __init__(self) -> None:
        self.root: Path | None = None
        self.port: int | None = None
        self._as_user = os.geteuid() == 0
        self._counter = itertools.count(1)

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    def _cmd(self, *cmd: str) -> list[str]:
        """``cmd`` as the server's user when we are root."""
        return ["runuser", "-u", self.system_user, "--", *cmd] if self._as_user else list(cmd)

    def _make_root(self, mode: int) -> Path:
        """Create the server's directory (owned by its user, with ``mode``) and return it."""
        self.root = Path(tempfile.mkdtemp(prefix=self.prefix))
        if self._as_user:
            os.chmod(self.root, mode)
            shutil.chown(self.root, self.system_user, self.system_user)
        return self.root

    def _log_tail(self, limit: int = 8000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-limit:]
        except OSError as e:
            return f"(no server log: {e})"

    def _cleanup_dir(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _unique_name(self, name_prefix: str) -> str:
        """A database name from ``name_prefix`` (a test's name) that no other call returns."""
        safe = "".join(c if c.isalnum() else "_" for c in name_prefix.lower())[:30] or "db"
        return f"{safe}_{next(self._counter)}_{uuid.uuid4().hex[:8]}"

    def start(self) -> PrivateServer:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> PrivateServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
