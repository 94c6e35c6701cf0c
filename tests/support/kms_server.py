"""A real local AWS KMS endpoint for the tests: moto's server mode, as a subprocess.

Started on a free port; ready once it answers HTTP (polled a bounded number of
times, each poll waiting on the process itself, so an early exit is reported
with its output instead of a timeout).
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ATTEMPTS = 600  # x 0.1 s wait on the process between polls, at most


class KmsStartError(RuntimeError):
    """moto_server did not start; the message holds its output."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KmsServer:
    """``start()``, then ``.endpoint``; ``stop()`` ends the process."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()

    def start(self) -> None:
        exe = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which(
            "moto_server"
        )
        if exe is None:
            raise KmsStartError("moto_server not found: install the test extra (moto[server])")
        self._proc = subprocess.Popen(
            [exe, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        for _ in range(ATTEMPTS):
            if self._ready():
                return
            try:
                self._proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                continue
            break  # exited
        self._log.seek(0)
        output = self._log.read().decode(errors="replace")[-4000:]
        self.stop()
        raise KmsStartError(f"moto_server did not answer on {self.endpoint}:\n{output}")

    def _ready(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", "/moto-api/")
            conn.getresponse().read()
            return True
        except OSError:
            return False
        finally:
            conn.close()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        self._log.close()
