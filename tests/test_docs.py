"""The README's samples work as written: pre-commit hooks, the Actions workflow, upgrade day."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from omni_port import api
from tests.golden import DATA

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def _yaml_blocks() -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", README, re.MULTILINE | re.DOTALL)


def _block(containing: str) -> str:
    return next(block for block in _yaml_blocks() if containing in block)


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home / "pre-commit"),
        "OMNI_PORT_CACHE": str(home / "omni-port"),
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
    }
    return subprocess.run(
        [str(BIN / "pre-commit"), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_the_pre_commit_sample_is_a_valid_configuration(tmp_path: Path) -> None:
    sample = _block("repo: local")
    assert "github.com" not in sample, "a repository that does not exist"
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(sample)
    result = _pre_commit("validate-config", str(config), cwd=tmp_path, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_hooks_file_is_a_valid_manifest(tmp_path: Path) -> None:
    manifest = ROOT / ".pre-commit-hooks.yaml"
    result = _pre_commit("validate-manifest", str(manifest), cwd=tmp_path, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    hooks = {hook["id"]: hook for hook in yaml.safe_load(manifest.read_text())}
    local = {
        hook["id"]: hook for hook in yaml.safe_load(_block("repo: local"))["repos"][0]["hooks"]
    }
    assert set(local) <= set(hooks)
    assert all(hooks[i]["entry"] == local[i]["entry"] for i in local), "one command per hook"


WORKSPACE = """\
[tool.omni-port]
source = "runner.py"
base = "base.py"
upstream = "base.py"
patches = "p"
generated = "g"
"""


def test_a_hook_of_the_sample_runs_in_a_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    case = DATA / "corpus" / "catalog_broken_fence"
    for name in ("runner.py", "base.py"):
        shutil.copy(case / name, repo / name)
    (repo / "pyproject.toml").write_text(WORKSPACE)
    (repo / ".pre-commit-config.yaml").write_text(_block("repo: local"))
    env = {**os.environ, "OMNI_PORT_CACHE": str(tmp_path / "omni-port")}
    for command in ("extract", "sync"):
        made = subprocess.run(
            [str(BIN / "omni-port"), "-q", command], cwd=repo, env=env, capture_output=True
        )
        assert made.returncode == 0, made.stderr
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    passed = _pre_commit("run", "--all-files", cwd=repo, home=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"omni-port check\.+Passed", passed.stdout), passed.stdout
    assert re.search(r"omni-port sync --check\.+Passed", passed.stdout), passed.stdout
    runner = repo / "g" / "runner.py"
    runner.write_text(runner.read_text() + "# edited by hand\n")
    failed = _pre_commit("run", "omni-port-check", "--all-files", cwd=repo, home=tmp_path)
    assert failed.returncode == 1
    assert "Failed" in failed.stdout and "OP406" in failed.stdout


def test_the_actions_sample_runs_make_targets_that_exist(tmp_path: Path) -> None:
    workflow = yaml.safe_load(_block("runs-on:"))
    runs = [step["run"] for step in workflow["jobs"]["omni-port"]["steps"] if "run" in step]
    assert not any("pip install omni-port" in run for run in runs), "it is not on PyPI"
    assert runs[-1].startswith("make check"), "the gate is the last step"
    for run in runs:
        words = shlex.split(run)
        assert words[0] == "make"
        dry = subprocess.run(
            ["make", "-n", "-C", str(ROOT), *words[1:]], capture_output=True, text=True
        )
        assert dry.returncode == 0, dry.stderr
        if "check" in words:
            assert "omni-port check --format github" in dry.stdout


@pytest.mark.real
def test_the_upgrade_day_target_is_a_release_that_can_be_read(cache_dir: Path) -> None:
    targets = re.findall(r"upgrade [^\n]*--to (vllm-ascend==\S+)", README)
    assert "vllm-ascend==0.30.0rc2" in targets, "the README's example is the next real upgrade"
    for target in targets:
        loaded = api.load_upstream(target, api.Settings(cache=cache_dir))
        assert loaded.label == target


def test_the_catalog_hook_checks_the_configured_catalog_and_says_when_there_is_none(
    tmp_path: Path,
) -> None:
    """The manifest's `omni-port-catalog` (`catalog --check`): green when the configured
    catalog is current, red when it is not, and exit 2 saying so without a catalog."""
    repo = tmp_path / "repo"
    repo.mkdir()
    case = DATA / "corpus" / "catalog_broken_fence"
    for name in ("runner.py", "base.py"):
        shutil.copy(case / name, repo / name)
    (repo / "pyproject.toml").write_text(WORKSPACE + 'catalog = "catalog.md"\n')
    hook = next(
        h
        for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
        if h["id"] == "omni-port-catalog"
    )
    local = {"repos": [{"repo": "local", "hooks": [{**hook, "language": "system"}]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local))
    env = {**os.environ, "OMNI_PORT_CACHE": str(tmp_path / "omni-port")}
    for command in ("extract", "catalog"):
        made = subprocess.run(
            [str(BIN / "omni-port"), "-q", command], cwd=repo, env=env, capture_output=True
        )
        assert made.returncode == 0, made.stderr
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    passed = _pre_commit("run", "omni-port-catalog", "--all-files", cwd=repo, home=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    (repo / "catalog.md").write_text("# edited by hand\n")
    stale = _pre_commit("run", "omni-port-catalog", "--all-files", cwd=repo, home=tmp_path)
    assert stale.returncode == 1 and "catalog.md:1:1: OP304" in stale.stdout, stale.stdout
    (repo / "pyproject.toml").write_text(WORKSPACE)
    unset = _pre_commit("run", "omni-port-catalog", "--all-files", cwd=repo, home=tmp_path)
    assert unset.returncode == 1 and "pyproject.toml:1:1: OP005" in unset.stdout, unset.stdout


@pytest.mark.real
def test_the_upgrade_day_sample_resolves_a_block_that_is_a_conflict(
    tmp_path: Path, cache_dir: Path
) -> None:
    """The README's commands, as written, on the default inputs: the block it resolves is a
    conflict on the upgrade target (resolve refuses a placed one), and sync replays it."""
    block = README.split("### Upgrade day", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line.split("  #", 1)[0]) for line in block.splitlines() if line]
    assert [words[1] for words in commands] == ["upgrade", "resolve", "sync"]
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {**os.environ, "OMNI_PORT_CACHE": str(cache_dir)}

    def run(words: list[str]) -> int:
        done = subprocess.run(
            [str(BIN / "omni-port"), "-q", *words[1:]], cwd=tmp_path, env=env, capture_output=True
        )
        assert b"Traceback" not in done.stderr, done.stderr
        return done.returncode

    assert run(["omni-port", "extract"]) == 0
    assert run(commands[0]) == 1, "conflicts listed"
    assert run(commands[1]) == 0, "the sample resolves a conflict"
    assert run(commands[2]) in (0, 1)
    lock = json.loads((tmp_path / "generated" / "omni-port.lock").read_text())
    row = next(r for r in lock["placements"] if r["id"] == commands[1][2])
    assert (row["status"], row["decided_by"]) == ("placed", ["resolved"])
