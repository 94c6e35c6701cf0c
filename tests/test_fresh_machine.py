"""The README's test command on a fresh machine: ``scripts/test.sh`` sets up the servers it needs.

A fresh machine is acted out, not imagined: PATH is a directory of links to every
tool on this machine's PATH except the server binaries (``initdb``, ``pg_ctl``,
``mariadb-install-db``, ``mariadbd``) and the package manager, and the system
directories ``scripts/provision.sh`` searches are moved under an empty
``SERDE_KIT_SYSROOT``.  ``apt-get`` is a stub on that PATH that records how it
was called (it is the package manager, not a database); one variant of it
"installs" by creating the binaries under the sysroot, as the real packages would.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROVISION = ROOT / "scripts" / "provision.sh"
TEST_SH = ROOT / "scripts" / "test.sh"
SERVER_BINARIES = {"initdb", "pg_ctl", "mariadb-install-db", "mariadbd"}

APT_RECORDING = """#!/bin/sh
echo "$*" >> "{log}"
exit 100
"""

# What Debian's packages put where: postgresql -> /usr/lib/postgresql/15/bin, mariadb-server ->
# /usr/sbin/mariadbd and /usr/bin/mariadb-install-db.
APT_INSTALLING = """#!/bin/sh
echo "$*" >> "{log}"
case "$1" in install) ;; *) exit 0;; esac
for pkg in "$@"; do
    case "$pkg" in
        postgresql) mkdir -p "{root}/usr/lib/postgresql/15/bin"
                    for b in initdb pg_ctl; do printf '#!/bin/sh\\n' > "{root}/usr/lib/postgresql/15/bin/$b"; chmod +x "{root}/usr/lib/postgresql/15/bin/$b"; done;;
        mariadb-server) mkdir -p "{root}/usr/sbin" "{root}/usr/bin"
                    printf '#!/bin/sh\\n' > "{root}/usr/sbin/mariadbd"; chmod +x "{root}/usr/sbin/mariadbd"
                    printf '#!/bin/sh\\n' > "{root}/usr/bin/mariadb-install-db"; chmod +x "{root}/usr/bin/mariadb-install-db";;
    esac
done
"""


class FreshMachine:
    def __init__(self, tmp: Path) -> None:
        self.bin = tmp / "bin"
        self.sysroot = tmp / "sysroot"
        self.log = tmp / "apt-get.log"
        self.bin.mkdir()
        self.sysroot.mkdir()
        hidden = SERVER_BINARIES | {"apt-get"}
        for directory in os.environ["PATH"].split(os.pathsep):
            try:
                entries = list(Path(directory).iterdir())
            except OSError:
                continue
            for entry in entries:
                link = self.bin / entry.name
                if entry.name in hidden or link.exists() or link.is_symlink():
                    continue
                if entry.is_file() and os.access(entry, os.X_OK):
                    link.symlink_to(entry)

    def stub(self, name: str, text: str) -> None:
        path = self.bin / name
        if path.is_symlink():
            path.unlink()
        path.write_text(text.format(log=self.log, root=self.sysroot))
        path.chmod(0o755)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in {"PG_BIN", "MARIADB_BIN"}}
        env["PATH"] = str(self.bin)
        env["SERDE_KIT_SYSROOT"] = str(self.sysroot)
        return env

    def apt_calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(c) for c in cmd], env=self.env(), cwd=ROOT, capture_output=True, text=True, timeout=600
        )


@pytest.fixture
def machine(tmp_path: Path) -> FreshMachine:
    return FreshMachine(tmp_path)


def _as_user(machine: FreshMachine, uid: int) -> None:
    machine.stub("id", f'#!/bin/sh\n[ "$1" = -u ] && echo {uid} && exit 0\nexec /usr/bin/id "$@"\n')


def test_the_hidden_binaries_are_really_gone(machine: FreshMachine) -> None:
    found = machine.run("bash", "-c", "command -v mariadbd pg_ctl initdb mariadb-install-db apt-get; true")
    assert found.stdout == ""


def test_root_installs_the_missing_servers_with_apt_get(machine: FreshMachine) -> None:
    machine.stub("apt-get", APT_INSTALLING)
    _as_user(machine, 0)
    done = machine.run(PROVISION)
    assert done.returncode == 0, done.stderr
    calls = machine.apt_calls()
    assert calls[0] == "update -qq"
    assert calls[1].startswith("install -y -qq --no-install-recommends")
    assert calls[1].split()[4:] == ["postgresql", "mariadb-server"]
    # Once installed, a second run finds them and installs nothing.
    again = machine.run(PROVISION)
    assert again.returncode == 0 and machine.apt_calls() == calls


def test_only_the_missing_server_is_installed(machine: FreshMachine) -> None:
    pg = machine.sysroot / "usr/lib/postgresql/16/bin"
    pg.mkdir(parents=True)
    for name in ("initdb", "pg_ctl"):
        (pg / name).write_text("#!/bin/sh\n")
        (pg / name).chmod(0o755)
    machine.stub("apt-get", APT_INSTALLING)
    _as_user(machine, 0)
    assert machine.run(PROVISION).returncode == 0
    assert machine.apt_calls()[1].split()[4:] == ["mariadb-server"]


def test_a_failed_install_prints_one_line_with_the_command(machine: FreshMachine) -> None:
    machine.stub("apt-get", APT_RECORDING)
    _as_user(machine, 0)
    done = machine.run(PROVISION)
    assert done.returncode == 3
    assert len(machine.apt_calls()) == 1  # update failed (exit 100): install was not attempted
    last = done.stderr.strip().splitlines()[-1]
    assert "run: apt-get install -y postgresql mariadb-server" in last
    assert "PG_BIN / MARIADB_BIN" in last


def test_without_root_nothing_is_installed_and_one_line_says_what_to_run(machine: FreshMachine) -> None:
    machine.stub("apt-get", APT_RECORDING)
    _as_user(machine, 1000)
    done = machine.run(PROVISION)
    assert done.returncode == 3
    assert machine.apt_calls() == []
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "run: sudo apt-get install -y postgresql mariadb-server" in lines[0]
    # The line's command, pasted as is (here by a root stand-in), is what makes the next run pass.
    command = lines[0].split("run: ", 1)[1].split("  (or", 1)[0]
    assert command == "sudo apt-get install -y postgresql mariadb-server"
    machine.stub("apt-get", APT_INSTALLING)
    machine.stub("sudo", '#!/bin/sh\nexec "$@"\n')
    assert machine.run("sh", "-c", command).returncode == 0
    assert machine.run(PROVISION).returncode == 0


def test_without_apt_get_one_line_says_what_to_run(machine: FreshMachine) -> None:
    _as_user(machine, 0)
    done = machine.run(PROVISION)
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "apt-get install -y postgresql mariadb-server" in lines[0]


def test_the_override_directories_are_honoured(machine: FreshMachine, tmp_path: Path) -> None:
    servers = tmp_path / "servers"
    servers.mkdir()
    for name in SERVER_BINARIES:
        (servers / name).write_text("#!/bin/sh\n")
        (servers / name).chmod(0o755)
    machine.stub("apt-get", APT_RECORDING)
    env = machine.env() | {"PG_BIN": str(servers), "MARIADB_BIN": str(servers)}
    done = subprocess.run([str(PROVISION)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and machine.apt_calls() == []


def test_test_sh_stops_with_the_line_before_running_anything(machine: FreshMachine) -> None:
    machine.stub("apt-get", APT_RECORDING)
    _as_user(machine, 1000)
    done = machine.run(TEST_SH)
    assert done.returncode == 3
    assert done.stdout == ""  # neither bootstrap nor pytest ran
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "sudo apt-get install -y postgresql mariadb-server" in done.stderr


def test_test_sh_installs_then_runs_pytest(machine: FreshMachine) -> None:
    machine.stub("apt-get", APT_INSTALLING)
    _as_user(machine, 0)
    done = machine.run(TEST_SH, "--version")
    assert done.returncode == 0, done.stderr
    assert machine.apt_calls()[1].split()[4:] == ["postgresql", "mariadb-server"]
    assert "pytest" in done.stdout + done.stderr


def test_ci_relies_on_test_sh() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/test.sh" in ci
    assert "apt-get" not in ci and "mariadbd" not in ci
