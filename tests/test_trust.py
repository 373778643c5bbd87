"""What omni-port must never do: pass what it did not check, or lose a maintainer's decision.

Each section is a way a new user found to make it do one or the other (bad input, faults,
partial runs); the tests assert codes, lines and exit codes, never prose.
"""

from __future__ import annotations

import os
import re
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


# --- the configuration is validated where it is read ------------------------------------------

CONFIG = """\
[project]
name = "host"

[tool.omni-port]
source = "runner.py"
upstream = "base.py"
"""


def _workspace(tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("config", "where"),
    [
        pytest.param(
            CONFIG.replace("[tool.omni-port]", "[tool.omni-port"), ":4:16: OP005", id="no-bracket"
        ),
        pytest.param(CONFIG + 'history = "sometimes"\n', ":7:1: OP005", id="history-sometimes"),
        pytest.param(CONFIG + "history = 1\n", ":7:1: OP005", id="history-not-a-string"),
        pytest.param(CONFIG + 'patches = ""\n', ":7:1: OP005", id="empty-patches"),
        pytest.param(CONFIG + 'upstream-class = "a.b"\n', ":7:1: OP005", id="class-not-a-name"),
        pytest.param(CONFIG.replace("upstream =", "upstraem ="), ":6:1: OP005", id="unknown-key"),
    ],
)
@pytest.mark.parametrize("command", ["extract", "check", "sync", "catalog"])
def test_a_bad_configuration_is_exit_2_at_its_line_and_nothing_is_written(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    where: str,
    command: str,
) -> None:
    workspace = _workspace(tmp_path, config, monkeypatch)
    result = cli(command)
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith(f"pyproject.toml{where} ")
    assert sorted(p.name for p in workspace.iterdir()) == ["pyproject.toml", "tests"]


def test_a_bad_configuration_is_found_from_a_subdirectory(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = CONFIG.replace("[tool.omni-port]", "[tool.omni-port")
    workspace = _workspace(tmp_path, broken, monkeypatch)
    monkeypatch.chdir(workspace / "tests")
    result = cli("check", "--no-cache")
    assert result.exit_code == 2
    assert re.match(r"\S*pyproject\.toml:4:16: OP005 ", _one_line(result.stderr))


def test_a_pyproject_of_another_tool_is_passed_over(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken TOML that does not mention omni-port is someone else's: not our configuration."""
    (tmp_path / "pyproject.toml").write_text("[tool.black\n")
    monkeypatch.chdir(tmp_path)
    assert cli("codes").exit_code == 0


def test_an_explicit_configuration_without_the_table_is_exit_2(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "other.toml"
    config.write_text("[tool.black]\nline-length = 100\n")
    result = cli("--config", config, "codes")
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith(f"{config}:1:1: OP005 ")
