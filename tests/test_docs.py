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
from omni_port.model import CONFLICT_CLOSE, CONFLICT_OPEN, Rule
from omni_port.sync.rules import RULES
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
    assert "Failed" in failed.stdout and "OP207" in failed.stdout


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
    targets = re.findall(r"upgrade [^\n]*--to (vllm-ascend==[\w.]+)", README)
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


#: The in-place edit the README's upgrade day describes, on the generated runners.
_SIGNATURE = (
    "        randomize_inputs: bool = False,\n        skip_gdn_state_update: bool = False,\n"
)


#: The early returns of 5823a10614's guard, as the upgrade follows them, and with omni's
#: treatment (the hand-off and the return of `execute_model.edit-13`).
_GUARD_RETURNS = (
    "                    if not has_kv_transfer_group():\n"
    "                        return EMPTY_MODEL_RUNNER_OUTPUT\n"
    "                    return self.kv_connector_no_forward(scheduler_output, self.vllm_config)\n"
)
_TREATED_RETURNS = (
    "                    kv_ids = self.kv_extracted_req_ids\n"
    "                    self.kv_extracted_req_ids = None\n"
    "                    if not has_kv_transfer_group():\n"
    "                        output = EMPTY_MODEL_RUNNER_OUTPUT\n"
    "                    else:\n"
    "                        output = self.kv_connector_no_forward("
    "scheduler_output, self.vllm_config)\n"
    "                    if kv_ids:\n"
    "                        output = copy(output)\n"
    "                        output.kv_extracted_req_ids = kv_ids\n"
    "                    return self.attach_omni_connector_output(output)\n"
)


def _edit_in_place(generated: Path) -> None:
    """What the README says a maintainer edits: both `_dummy_run` signatures, and the
    guard's early returns in both `execute_model` (the conflict region deleted)."""
    for name in ("npu_model_runner.py", "npu_generation_model_runner.py"):
        runner = generated / name
        text = runner.read_text()
        assert text.count(_SIGNATURE) == 1, name
        if name == "npu_model_runner.py":
            assert CONFLICT_OPEN not in text, name
        text = text.replace(_SIGNATURE, "".join(reversed(_SIGNATURE.splitlines(True))))
        runner.write_text(text)
    for name in ("npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        runner = generated / name
        lines = runner.read_text().splitlines(keepends=True)
        (start,) = [i for i, line in enumerate(lines) if CONFLICT_OPEN in line]
        stop = next(i for i in range(start, len(lines)) if CONFLICT_CLOSE in lines[i])
        text = "".join(lines[:start] + lines[stop + 1 :])
        assert text.count(_GUARD_RETURNS) == 1, name
        runner.write_text(text.replace(_GUARD_RETURNS, _TREATED_RETURNS))


def _commands(section: str) -> list[list[str]]:
    """The commands of a README section's shell sample, one per ``&&``-joined part
    (comments and blank lines left out)."""
    block = README.split(section, 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands: list[list[str]] = []
    for line in block.splitlines():
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        while "&&" in words:
            at = words.index("&&")
            commands.append(words[:at])
            words = words[at + 1 :]
        commands.append(words)
    return commands


def _checkout(into: Path, cache: Path) -> Path:
    """vLLM-Omni 0.32.0rc1's sources as a git checkout: its Python package, as the release
    ships it, a ``pyproject.toml`` of its own, one commit."""
    from omni_port.sources import kept

    files = kept.package_sources("vllm-omni", "0.32.0rc1", "vllm_omni", cache)
    for member, data in files.items():
        path = into / member
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (into / "pyproject.toml").write_text('[project]\nname = "vllm-omni"  # its own table\n')
    (into / ".gitignore").write_text("__pycache__/\n*.lock\n")
    for words in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "vLLM-Omni 0.32.0rc1"]):
        subprocess.run(["git", *words], cwd=into, env=_GIT, check=True)
    return into


#: A git identity and no user configuration, for the commits of the walk.
_GIT = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Ann Maintainer",
    "GIT_AUTHOR_EMAIL": "ann@example.org",
    "GIT_COMMITTER_NAME": "Ann Maintainer",
    "GIT_COMMITTER_EMAIL": "ann@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@pytest.mark.real
def test_the_upgrade_day_walk_through_ends_green(tmp_path: Path, cache_dir: Path) -> None:
    """The README's upgrade day, as written, in a vLLM-Omni checkout made a workspace: the
    upgrade moves it (extract --check and sync --check agree), seven conflicts resolve by
    place or drop and a sync writes them, a sync before `continue` refuses to overwrite the
    edits in place, one continue, verify and check are green, and
    after the commit a fresh clone's check is green with no re-work."""
    commands = _commands("### Upgrade day")
    assert [words[:2] for words in commands] == [
        ["omni-port", "init"],
        ["omni-port", "upgrade"],
        *[["omni-port", "resolve"]] * 7,
        ["omni-port", "sync"],
        ["omni-port", "continue"],
        ["omni-port", "verify"],
        ["omni-port", "check"],
        ["git", "add"],
        ["git", "commit"],
    ]
    work = _checkout(tmp_path / "vllm-omni", cache_dir)
    env = {**_GIT, "OMNI_PORT_CACHE": str(cache_dir)}

    def run(words: list[str], where: Path = work) -> subprocess.CompletedProcess[str]:
        program = str(BIN / "omni-port") if words[0] == "omni-port" else words[0]
        done = subprocess.run(
            [program, *words[1:]], cwd=where, env=env, capture_output=True, text=True
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    assert run(commands[0]).returncode == 0
    upgraded = run(commands[1])
    assert upgraded.returncode == 1, upgraded.stderr
    for said in (
        "detected base vllm-ascend==0.26.0rc1 (82.4% of copied statements)",
        "accepted in marker-allow.txt (say why there): "
        "vllm_omni/platforms/npu/worker/npu_ar_model_runner.py:145: OP102",
        'pinned in pyproject.toml [tool.omni-port]: base = "vllm-ascend==0.26.0rc1", '
        'upstream = "vllm-ascend==0.30.0rc2", marker-allow = "marker-allow.txt"',
        "91 placed, 10 conflicts, 2 verify problems (2 OP508): not deployable until "
        "resolved; summary in upgrade.md",
    ):
        assert said in upgraded.stderr, upgraded.stderr
    assert run(["omni-port", "extract", "--check"]).returncode == 0
    assert run(["omni-port", "sync", "--check"]).returncode == 0
    for words in commands[2:9]:
        resolved = run(words)
        assert resolved.returncode == 0, resolved.stderr
    assert run(commands[9]).returncode == 1  # the conflicts left are edited in place
    generated = work / "omni-port" / "generated"
    _edit_in_place(generated)
    edited = {p.name: p.read_bytes() for p in generated.glob("*.py")}
    refused = run(["omni-port", "sync"])
    assert refused.returncode == 2 and " OP207 " in refused.stderr, refused.stderr
    assert {p.name: p.read_bytes() for p in generated.glob("*.py")} == edited
    continued = run(commands[10])
    assert continued.returncode == 0, continued.stdout + continued.stderr
    assert "took the edits of 3 runners: 4 resolutions recorded in the patches" in (
        continued.stderr
    )
    assert run(commands[11]).returncode == 0
    checked = run(commands[12])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for words in commands[13:]:
        assert run(words).returncode == 0
    assert "omni-port/generated/omni-port.lock" in run(["git", "ls-files"]).stdout
    clone = tmp_path / "clone"
    assert run(["git", "clone", "-q", str(work), str(clone)], tmp_path).returncode == 0
    fresh = run(["omni-port", "check", "--no-cache"], clone)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    lock = json.loads((clone / "omni-port" / "generated" / "omni-port.lock").read_text())
    resolved = [r["id"] for r in lock["placements"] if r.get("decided_by") == ["resolved"]]
    # The seven `resolve` recorded (edit-03's place, both `_dummy_run` deletions dropped,
    # the four EPLB timers of 28d7ed0a0e dropped: followed whole), the two signatures and
    # the guard's returns `continue` took; the generation runner's sample_tokens knot needs
    # none (intent owns block-01, edit-15 reads what it binds, edit-09 holds with them).
    assert len(resolved) == 11, resolved
    dropped = {r["id"] for r in lock["placements"] if r["status"] == "dropped"}
    methods = {"_dummy_run": 2, "execute_model": 2, "sample_tokens": 2}
    assert {m: sum(i.rsplit(".", 2)[-2] == m for i in dropped) for m in methods} == methods
    assert not any(r["status"] == "conflict" for r in lock["placements"])


def test_the_readme_says_how_long_make_test_takes_and_what_its_skipped_tests_need() -> None:
    """The set-up section gives the run time and names what each skip waits for: the seed
    files the skipping tests look for, and the variables that point at them."""
    from tests import test_catalog, test_clone_real, test_real, test_v2_real

    setup = README.split("## Set up", 1)[1].split("### The default inputs", 1)[0]
    assert re.search(r"`make test` ran \d+ tests in \d+ minutes", setup), setup
    assert "It skips 6 tests" in setup
    assert "OMNI_PORT_ASCEND_GIT" in setup
    assert "OMNI_PORT_ASCEND_GIT" in Path(test_clone_real.__file__).read_text()
    wanted = {test_real.REAL_CATALOG.name, test_v2_real.SEED_PAGE.name}
    assert all(name in setup for name in wanted), wanted
    assert "OMNI_PORT_REAL_CATALOG" in setup and "OMNI_PORT_SEED_PAGE" in setup
    assert "OMNI_PORT_REAL_CATALOG" in Path(test_catalog.__file__).read_text()


def test_the_rules_table_lists_every_rule_and_engine_step() -> None:
    """Every ``decided_by`` value the engine stamps has its row in "How a block is placed":
    the block rules, the member rules and the engine's own steps (``stepwise``)."""
    section = README.split("## How a block is placed", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([\w-]+)` \|", section, re.MULTILINE))
    stamped = {rule.name.value for rule in RULES} | {Rule.STEPWISE.value}
    assert stamped <= rows, f"no row for {sorted(stamped - rows)}"
