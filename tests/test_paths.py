"""Every path a finding prints opens from the folder the command ran in.

extract, sync, verify, check (text and GitHub annotations) and upgrade print findings about
the source runner, the generated modules, the configuration and lines of an upstream module;
each path they name must exist relative to the working directory (or be absolute), from the
workspace's root and from a folder below it. Two workspaces: tests/data/upgrade onto a new
upstream with a conflict and a block that reads a name nothing binds any more, and
tests/data/rules/convergent/yes_upstream_took_out_what_omni_deletes on three vllm-ascend
releases of a local index (a note at a line of the target release).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest

from omni_port.sources.upstream import ASCEND_RUNNER
from tests.conftest import Cli, LocalIndex
from tests.golden import DATA

DIAGNOSTIC = re.compile(r"^(?P<path>[^\s:][^:]*):\d+:\d+: OP\d{3} ")
ANNOTATION = re.compile(r"^::\w+ file=(?P<path>[^,]*),")
COMMANDS = [
    ("extract",),
    ("sync",),
    ("verify",),
    ("check", "--no-cache"),
    ("check", "--no-cache", "--format", "github"),
    ("upgrade", "--to", "TARGET", "--summary", "up.md"),
]
CONFIG = """\
[tool.omni-port]
source = "omni.py"
base = "{base}"
upstream = "{target}"
patches = "p"
generated = "g"
"""


def _upgrade_data(work: Path) -> str:
    """tests/data/upgrade onto v4.py: `sample` has a new statement between the block's
    neighbours (a conflict) and `forward` calls its parameter `data` (the implicit edit,
    placed, reads `batch`)."""
    for name in ("v1.py", "v2.py", "omni.py"):
        shutil.copy(DATA / "upgrade" / name, work / name)
    head, forward = (work / "v2.py").read_text().split("    def forward")
    (work / "v4.py").write_text(f"{head}    def forward{forward.replace('batch', 'data')}")
    (work / "pyproject.toml").write_text(CONFIG.format(base="v1.py", target="v4.py"))
    return "v4.py"


#: The convergent case's upstream history as releases: the base, one between, the target.
CONVERGENT = DATA / "rules" / "convergent" / "yes_upstream_took_out_what_omni_deletes"
RELEASES = {"1.0.0": "base.py", "1.1.0": "middle.py", "1.2.0": "upstream.py"}


def _releases(work: Path, index: LocalIndex) -> str:
    for version, name in RELEASES.items():
        runner = (CONVERGENT / name).read_bytes()
        index.wheel("vllm-ascend", version, _wheel(version, runner))
    shutil.copy(CONVERGENT / "omni.py", work / "omni.py")
    config = CONFIG.format(base="vllm-ascend==1.0.0", target="vllm-ascend==1.2.0")
    (work / "pyproject.toml").write_text(config)
    return "vllm-ascend==1.2.0"


def _wheel(version: str, runner: bytes) -> dict[str, bytes]:
    """The members of a vllm-ascend wheel holding ``runner``, with its METADATA and RECORD."""
    info = f"vllm_ascend-{version}.dist-info"
    members = {
        ASCEND_RUNNER: runner,
        f"{info}/METADATA": f"Name: vllm-ascend\nVersion: {version}\n".encode(),
    }
    record = "".join(
        f"{name},sha256={_digest(data)},{len(data)}\n" for name, data in members.items()
    )
    return {**members, f"{info}/RECORD": (record + f"{info}/RECORD,,\n").encode()}


def _digest(data: bytes) -> str:
    """A RECORD's hash: urlsafe base64 of the sha256, unpadded."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _printed_paths(output: str) -> list[str]:
    """The path of every diagnostic line and every GitHub annotation in ``output``."""
    found = [DIAGNOSTIC.match(line) or ANNOTATION.match(line) for line in output.splitlines()]
    return [m["path"].replace("%3A", ":").replace("%2C", ",") for m in found if m]


def _printed_by_every_command(cli: Cli, target: str) -> list[tuple[str, str]]:
    """(command, path) of every finding the commands print, each run where the test is."""
    printed = []
    for command in COMMANDS:
        words = [target if word == "TARGET" else word for word in command]
        result = cli(*words)
        assert result.exit_code in (0, 1), (words, result.stdout + result.stderr)
        said = result.stdout + result.stderr
        printed += [(" ".join(words), path) for path in _printed_paths(said)]
    return printed


@pytest.mark.parametrize("folder", [".", "below"])
def test_findings_of_a_conflict_and_verify_problems_open_from_where_they_ran(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    target = _upgrade_data(tmp_path)
    (tmp_path / "below").mkdir()
    monkeypatch.chdir(tmp_path / folder)
    printed = _printed_by_every_command(cli, os.path.relpath(tmp_path / target))
    assert [(c, p) for c, p in printed if not Path(p).is_file()] == []
    paths = {p for _, p in printed}
    assert any(Path(p).parent.name == "g" for p in paths), printed
    assert any(Path(p).name == "omni.py" and Path(p).parent.name != "g" for p in paths), printed


@pytest.mark.parametrize("folder", [".", "below"])
def test_findings_at_lines_of_a_release_open_from_where_they_ran(
    cli: Cli,
    tmp_path: Path,
    local_index: LocalIndex,
    monkeypatch: pytest.MonkeyPatch,
    folder: str,
) -> None:
    """The convergent edit is followed: sync and upgrade note it at the generated module's
    line where upstream's deletion left it (it was the release's line, shown as the
    release's file in the cache, which a summary printed as the output's line)."""
    target = _releases(tmp_path, local_index)
    (tmp_path / "below").mkdir()
    monkeypatch.setenv("OMNI_PORT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path / folder)
    printed = _printed_by_every_command(cli, target)
    assert [(c, p) for c, p in printed if not Path(p).is_file()] == []
    assert not any(Path(p).name == Path(ASCEND_RUNNER).name for _, p in printed), printed
    assert any(c.startswith("sync") and Path(p).parent.name == "g" for c, p in printed), printed
