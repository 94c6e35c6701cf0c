"""The entry point: the [cli] extra's hint, and one line per error."""

from __future__ import annotations

import subprocess
import sys


def test_without_the_cli_extra_the_entry_point_says_what_to_install():
    code = "import sys; sys.modules['tqdm'] = None; from serde_kit.cli import main; sys.exit(main(['keygen']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: the serde-kit command line needs tqdm: pip install 'serde-kit[cli]'\n"


def test_with_the_extra_the_same_command_runs():
    done = subprocess.run([sys.executable, "-m", "serde_kit", "keygen", "--id", "k7"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "# new key id: k7" in done.stdout
