"""What omni-port must never do: pass what it did not check, or lose a maintainer's decision.

Each section is a way a new user found to make it do one or the other (bad input, faults,
partial runs); the tests assert codes, lines and exit codes, never prose.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omni_port import cli as cli_module
from tests.conftest import Cli

# --- Ctrl-C is 130 everywhere -----------------------------------------------------------------


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("target", "attribute"),
    [
        pytest.param(cli_module, "load", id="while-reading-the-configuration"),
        pytest.param(cli_module.importlib, "import_module", id="while-importing-the-command"),
    ],
)
def test_ctrl_c_before_the_command_runs_exits_130(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, target: object, attribute: str
) -> None:
    monkeypatch.setattr(target, attribute, _interrupt)
    result = cli.loud("check", "--no-cache")
    assert result.exit_code == 130
    assert "Aborted!" not in result.stderr and "interrupted" in result.stderr


SIGINT_EARLY = """
import os, signal, sys
from omni_port import cli

def load(path):
    os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, while the configuration is read
    signal.pause()

cli.load = load
sys.argv = ["omni-port", *sys.argv[1:]]
cli.run()
"""


def test_a_real_sigint_early_in_a_command_exits_130(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SIGINT_EARLY, "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OMNI_PORT_CACHE": str(tmp_path / "cache")},
    )
    # 130 is 128 + SIGINT, what a shell reports for Ctrl-C; `make sync` fails on it.
    assert done.returncode == 130, done.stderr
    assert "Aborted!" not in done.stderr
