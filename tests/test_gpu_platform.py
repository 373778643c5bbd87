"""The GPU runners as a platform of the workspace (issue 46): ``platform = "gpu"`` or
``--platform gpu`` runs the NPU flow's commands on vLLM-Omni's GPU runners and vLLM's
``GPUModelRunner``, on synthetic trees written here (a vLLM and a vLLM-Omni checkout)."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.model import Layout
from omni_port.patches import lockfile
from omni_port.sources import history
from omni_port.sources.config import Config, load, with_platform
from omni_port.sources.platform import GPU, NPU, PLATFORMS
from tests.conftest import Cli, readme_commands, write_tree
from tests.golden import DATA

#: vLLM's runner as a checkout holds it (``vllm/v1/worker/gpu_model_runner.py``).
VLLM_MEMBER = "vllm/v1/worker/gpu_model_runner.py"

#: vLLM's runner class: the synthetic upgrade's base (tests/data/upgrade), as vLLM's.
UPSTREAM_OLD = (
    (DATA / "upgrade" / "v1.py")
    .read_text()
    .split("\n\n\n", 1)[1]
    .replace("class NPUModelRunner(GPUModelRunner):", "class GPUModelRunner:")
)

# The new vLLM checks the batch before it runs it, and resets the sampler per call.
UPSTREAM_NEW = UPSTREAM_OLD.replace(
    "        self.run(batch)\n", "        self.validate(batch)\n        self.run(batch)\n"
).replace("self.sampler.reset()", "self.sampler.reset(logits)")

# vLLM-Omni's GPU runner: a copy of both methods with one unmarked edit (no markers, as the
# real GPU runners have none), and a method of its own.
OMNI_RUNNER = (
    "from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n\n\n"
    + UPSTREAM_OLD.replace(
        "class GPUModelRunner:", "class OmniGPUModelRunner(GPUModelRunner):"
    ).replace(
        "        self.run(batch)\n",
        "        self.run(batch)\n        self.record_omni_stats(batch)\n",
    )
    + "\n    def record_omni_stats(self, batch):\n        self.stats.append(len(batch))\n"
)

OMNI_AR_RUNNER = """\
from vllm_omni.worker.gpu_model_runner import OmniGPUModelRunner


class GPUARModelRunner(OmniGPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        self.apply_omni_penalties(logits)
        self.sampler.reset()
        return self.sampler(logits)

    def apply_omni_penalties(self, logits):
        return logits
"""


@pytest.fixture
def gpu_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace beside a vLLM-Omni checkout and two vLLM checkouts."""
    init = {"vllm/__init__.py": "", "vllm/v1/__init__.py": "", "vllm/v1/worker/__init__.py": ""}
    write_tree(tmp_path / "vllm-old", {**init, VLLM_MEMBER: UPSTREAM_OLD})
    write_tree(tmp_path / "vllm-new", {**init, VLLM_MEMBER: UPSTREAM_NEW})
    omni = {
        "vllm_omni/__init__.py": "",
        "vllm_omni/worker/__init__.py": "",
        GPU.runners[0]: OMNI_RUNNER,
        GPU.runners[1]: OMNI_AR_RUNNER,
    }
    write_tree(tmp_path / "omni", omni)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _configure(work: Path, platform: str | None = "gpu") -> None:
    line = f'platform = "{platform}"\n' if platform else ""
    table = f'[tool.omni-port]\n{line}source = "omni"\nbase = "vllm-old"\nupstream = "vllm-new"\n'
    (work / "pyproject.toml").write_text(table)


def _synced_runner(work: Path) -> str:
    return (work / "generated" / "gpu" / "gpu_model_runner.py").read_text()


# --- the platform as data -----------------------------------------------------------------


def test_the_npu_platform_s_defaults_are_the_configuration_s() -> None:
    default = Config()
    assert default.platform_info is NPU
    assert {key: getattr(default, key) for key in NPU.defaults()} == NPU.defaults()


def test_a_gpu_table_takes_the_gpu_defaults_for_the_keys_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.omni-port]\nplatform = "gpu"\ngenerated = "out"\n')
    config = load(path)
    assert config.platform_info is GPU
    assert (config.upstream, config.upstream_class) == (GPU.upstream, "GPUModelRunner")
    assert (config.patches, config.generated) == (GPU.patches, "out")


def test_the_flag_moves_only_the_keys_left_at_the_old_platform_s_defaults() -> None:
    moved = with_platform(Config(generated="mine"), "gpu")
    assert (moved.platform, moved.upstream, moved.generated) == ("gpu", GPU.upstream, "mine")
    assert with_platform(moved, "npu").upstream == NPU.upstream


def test_an_unknown_platform_is_bad_input_at_its_line(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.omni-port]\nsource = "omni"\nplatform = "tpu"\n')
    result = cli("--config", path, "extract")
    assert result.exit_code == 2
    assert f"{path}:3:" in result.stderr and "OP005" in result.stderr, result.stderr
    # A known key with a value out of its set (not an unknown key): the values are named.
    assert "'npu' or 'gpu'" in result.stderr, result.stderr


def test_every_platform_names_runners_of_a_vllm_omni_tree() -> None:
    for platform in PLATFORMS.values():
        assert all(member.startswith("vllm_omni/") for member in platform.runners)
        assert platform.member.startswith(platform.module.partition(".")[0] + "/")


# --- the flow ---------------------------------------------------------------------------------


def test_extract_sync_verify_on_the_gpu_runners_write_the_gpu_generated_dir(
    cli: Cli, gpu_work: Path
) -> None:
    _configure(gpu_work)
    extracted = cli("extract")
    assert extracted.exit_code == 0, extracted.stderr
    assert (gpu_work / "patches" / "gpu").is_dir()
    synced = cli("sync", "--json", "sync.json")
    assert synced.exit_code == 0, synced.stdout + synced.stderr
    runner = _synced_runner(gpu_work)
    # vLLM's new statement and omni's unmarked edit, each once, in upstream's order.
    body = runner[runner.index("    def forward") :]
    assert body.count("self.validate(batch)") == 1
    assert body.count("self.record_omni_stats(batch)") == 1
    assert body.index("self.validate(batch)") < body.index("self.record_omni_stats(batch)")
    assert (gpu_work / "generated" / "gpu" / "gpu_ar_model_runner.py").is_file()
    lock = lockfile.read(gpu_work / "generated" / "gpu")
    assert lock.upstream == "vllm-new"
    assert not (gpu_work / "generated" / lockfile.LOCK_NAME).exists()
    verified = cli("verify")
    assert verified.exit_code == 0, verified.stdout + verified.stderr
    # The gate reads the same platform: the GPU patches and runners are current.
    checked = cli("check", "--no-cache")
    assert checked.exit_code == 0, checked.stdout + checked.stderr
    assert "OP407" in checked.stdout  # omni's unmarked edit, a note


def test_the_runtime_switch_serves_the_synced_gpu_runners(
    cli: Cli, gpu_work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What extract, sync and verify leave, the switch serves as vLLM-Omni's GPU package
    (the lock says the tree holds the GPU runners), checked against the vLLM the sync read:
    the checkout on the path stands for the installed one, and the runners import from it."""
    _configure(gpu_work)
    for command in ("extract", "sync", "verify"):
        assert cli(command).exit_code == 0, command
    generated = (gpu_work / "generated" / "gpu").resolve()
    assert lockfile.read(generated).layout is Layout.GPU
    for name in (runtime.ENV, runtime.PACKAGE_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.syspath_prepend(str(gpu_work / "vllm-new"))
    monkeypatch.syspath_prepend(str(gpu_work / "omni"))
    try:
        redirected = runtime.use_generated_runners(generated)
        assert redirected == [
            f"{GPU.package}.gpu_ar_model_runner",
            f"{GPU.package}.gpu_model_runner",
        ]
        module = importlib.import_module(f"{GPU.package}.gpu_ar_model_runner")
        base = module.GPUARModelRunner.__mro__[1]
        assert Path(inspect.getfile(base)) == generated / "gpu_model_runner.py"
        assert "self.validate(batch)" in inspect.getsource(base.forward), "vLLM's new code"
        assert base.__mro__[1].__module__ == "vllm.v1.worker.gpu_model_runner"
    finally:
        runtime.stop_using_generated_runners()
        for name in [n for n in sys.modules if n.split(".")[0] in ("vllm", "vllm_omni")]:
            del sys.modules[name]


def test_the_platform_flag_is_the_key(cli: Cli, gpu_work: Path) -> None:
    _configure(gpu_work, platform=None)
    # Without the platform, the checkout has no runners (the NPU ones): bad input.
    unflagged = cli("extract")
    assert unflagged.exit_code == 2 and "OP003" in unflagged.stderr
    assert cli("extract", "--platform", "gpu").exit_code == 0
    assert cli("sync", "--platform", "gpu").exit_code == 0
    flagged = _synced_runner(gpu_work)
    _configure(gpu_work)
    assert cli("sync").exit_code == 0
    assert _synced_runner(gpu_work) == flagged


def test_bases_ranks_vllm_candidates_and_upgrade_ports_onto_the_new_one(
    cli: Cli, gpu_work: Path
) -> None:
    _configure(gpu_work, platform=None)
    ranked = cli("bases", "--platform", "gpu", "--candidates", "vllm-new,vllm-old")
    assert ranked.exit_code == 0, ranked.stderr
    rows = [line.split("\t") for line in ranked.stdout.splitlines() if "\t" in line]
    # The copies lack validate and reset the sampler as the old vLLM did.
    assert rows[0][0] == "vllm-old", ranked.stdout
    upgraded = cli(
        "upgrade",
        "--platform",
        "gpu",
        "--base",
        "detect",
        "--candidates",
        "vllm-new,vllm-old",
        "--to",
        "vllm-new",
        "--json",
        "up.json",
    )
    assert upgraded.exit_code == 0, upgraded.stdout + upgraded.stderr
    report = json.loads((gpu_work / "up.json").read_text())
    assert report["blocks"] and all(b["status"] != "conflict" for b in report["blocks"])
    runner = _synced_runner(gpu_work)
    assert "self.validate(batch)" in runner and "self.sampler.reset(logits)" in runner
    assert (gpu_work / "generated" / "gpu" / lockfile.LOCK_NAME).is_file()
    # The workspace moved onto the platform: later commands need no flag to agree.
    assert load(gpu_work / "pyproject.toml").platform == "gpu"
    assert cli("sync", "--check").exit_code == 0


# --- the real next GPU upgrade ------------------------------------------------------------

#: A release pin as notes and labels spell one (``vllm==0.30.0``), with its distribution.
_PIN = re.compile(r"\b(?P<dist>[a-z][a-z0-9_-]*)==\d")


@pytest.mark.real
def test_the_real_gpu_upgrade_reads_vllm_releases_alone(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM-Omni 0.32.0rc1's GPU runners onto vLLM 0.33.0 (0.34.0 has no V1 runner), the
    base detected among vLLM releases: every release any note, decision or summary line
    names is vLLM's (or the source's), sync runs no call twice (OP512), and no placed edit
    leaves upstream's kept code reading a name it took out (coupled: verify's OP303 was
    `has_encoder_input` and `model_output`, edits placed beside the conflicts that keep
    their readers). And the lag in `_update_states` is followed with omni's line kept: the
    runners' `self.requests.pop(req_id, None)` is vLLM 0.26.0's code, which 0.27.0 made a
    binding and a hook call; omni's own pop follows them (no OP516 for the hook). The
    generation runner's `execute_model` keeps vLLM 0.14.1's text where 0.15.0 brought the
    `mamba_cache_mode == "align"` block: history reaches back to the platform's floor, so
    that deletion is a lag naming 0.15.0, followed (issue 46)."""
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    source, target = "vllm-omni==0.32.0rc1", "vllm==0.33.0"
    args = ("--platform", "gpu", source, "--base", "detect", "--to", target, "--json", "up.json")
    result = cli("--cache-dir", cache_dir, "upgrade", *args)
    report = json.loads((tmp_path / "up.json").read_text())
    blocks, findings = report["blocks"], report["findings"]
    unresolved = any(b["status"] == "conflict" for b in blocks) or any(
        f["severity"] == "error" for f in findings
    )
    assert result.exit_code == (1 if unresolved else 0), result.stderr
    assert blocks and any(b["status"] != "conflict" for b in blocks)
    summary = (tmp_path / "omni-port-upgrade.md").read_text()
    named = {m["dist"] for text in (summary, json.dumps(report)) for m in _PIN.finditer(text)}
    assert named <= {"vllm", "vllm-omni"}, named
    assert all(b["release"].startswith("vllm==") for b in blocks if b["release"])
    assert not [f for f in findings if f["code"] == "OP512"]
    assert not [f["message"] for f in findings if f["code"] == "OP303"]
    hooks = [f["message"] for f in findings if f["code"] == "OP516"]
    assert not [m for m in hooks if "_on_request_state_removed" in m], hooks
    runner = (tmp_path / "generated" / "gpu" / "gpu_model_runner.py").read_text()
    followed = (
        "req_state = self.requests.pop(req_id, None)\n"
        "            self._on_request_state_removed(req_id, req_state)\n"
        "            self.model_intermediate_buffer.pop(req_id, None)\n"
    )
    assert followed in runner
    mamba = "edit-14: upstream code the runners never had: `if self.cache_config.mamba_cache_mode"
    (lag,) = [f["message"] for f in findings if f["code"] == "OP306" and mamba in f["message"]]
    assert "vllm==0.15.0 brought (vllm==0.14.1 had the runners' code here)" in lag
    generation = tmp_path / "generated" / "gpu" / "gpu_generation_model_runner.py"
    assert 'if self.cache_config.mamba_cache_mode == "align":' in generation.read_text()
    lock = lockfile.read(tmp_path / "generated" / "gpu")
    assert lock.upstream == target
    assert load(tmp_path / "pyproject.toml").platform == "gpu"


@pytest.mark.real
def test_vllm_0_34_0_has_no_v1_runner_to_port_onto(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.34.0 ships Model Runner V2 alone: the V1 GPU runners have nothing to be
    ported onto there, which is bad input (exit 2) naming the module, not a crash."""
    (tmp_path / "pyproject.toml").write_text('[tool.omni-port]\nplatform = "gpu"\n')
    monkeypatch.chdir(tmp_path)
    result = cli("--cache-dir", cache_dir, "sync", "--upstream", "vllm==0.34.0")
    assert result.exit_code == 2
    assert f"OP003 the wheel has no {VLLM_MEMBER}" in result.stderr, result.stderr


@pytest.mark.real
def test_the_readme_s_gpu_walk_through_runs(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each documented command, in a workspace with an empty table: bases ranks, the
    upgrade pins the platform, and the commands after it agree without the flag."""
    commands = readme_commands("The GPU runners as a platform")
    assert [c[0] for c in commands] == ["bases", "upgrade", "sync", "verify"]
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    codes = [cli("--cache-dir", cache_dir, *command).exit_code for command in commands]
    bases, upgraded, checked, verified = codes
    assert bases == 0 and upgraded in (0, 1)
    assert checked == 0  # the upgrade wrote what sync would write now
    assert verified == upgraded  # the gate agrees with the upgrade's summary


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_history_of_a_vllm_clone_is_its_commits_that_changed_the_gpu_runner(
    tmp_path: Path,
) -> None:
    """``PATH@REV`` of a vLLM clone: history is the commits that changed vLLM's runner
    module (not vllm-ascend's), each read as the GPU platform's upstream."""
    repo = tmp_path / "vllm"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    steps = [
        ("v1", {VLLM_MEMBER: UPSTREAM_OLD}),
        ("", {"README.md": "docs only\n"}),  # no runner change: not history
        ("", {VLLM_MEMBER: UPSTREAM_OLD + "\n    def extra(self):\n        pass\n"}),
        ("v2", {VLLM_MEMBER: UPSTREAM_NEW}),
    ]
    for number, (tag, files) in enumerate(steps):
        write_tree(repo, files)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"change {number}")
        if tag:
            _git(repo, "tag", tag)
    names = history.labels(f"{repo}@v1", f"{repo}@v2", tmp_path / "cache", platform=GPU)
    assert names[0] == f"{repo}@v1" and names[-1] == f"{repo}@v2" and len(names) == 3
    releases, _, notes = history.load(names, tmp_path / "cache", platform=GPU)
    assert not notes and "def extra" in releases[1].text
    assert "self.validate(batch)" in releases[2].text


def test_init_makes_a_gpu_checkout_a_gpu_workspace(cli: Cli, gpu_work: Path) -> None:
    checkout = gpu_work / "omni"
    # Without the platform, a checkout of GPU runners alone is no NPU checkout.
    refused = cli("init", checkout, "--upstream", "../vllm-new")
    assert refused.exit_code == 2 and "OP005" in refused.stderr
    made = cli("init", checkout, "--platform", "gpu", "--upstream", "../vllm-new")
    assert made.exit_code == 0, made.stderr
    config = load(checkout / "pyproject.toml")
    assert (config.platform, config.source) == ("gpu", "omni")  # the checkout itself


def _as_vllm(name: str) -> str:
    """A module of the synthetic upgrade (tests/data/upgrade) with vLLM's class for the NPU
    one: the same conflict on the GPU platform."""
    return (DATA / "upgrade" / name).read_text().replace("NPUModelRunner", "GPUModelRunner")


def test_a_gpu_conflict_is_resolved_and_replayed_as_on_the_npu(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version in ("v1", "v2"):
        write_tree(tmp_path / version, {VLLM_MEMBER: _as_vllm(f"{version}.py")})
    write_tree(tmp_path / "omni", {GPU.runners[0]: _as_vllm("omni.py")})
    table = 'platform = "gpu"\nsource = "omni"\nbase = "v1"\nupstream = "v1"\n'
    (tmp_path / "pyproject.toml").write_text(f"[tool.omni-port]\n{table}")
    monkeypatch.chdir(tmp_path)
    upgraded = cli("upgrade", "--to", "v2", "--summary", "up.md")
    assert upgraded.exit_code == 1, upgraded.stderr
    block = "gpu_model_runner.R.sample.block-01"
    assert f"**{block}**" in (tmp_path / "up.md").read_text()
    assert cli("resolve", block, "--at", "#2").exit_code == 0
    assert cli("sync").exit_code == 0
    synced = (tmp_path / "generated" / "gpu" / "gpu_model_runner.py").read_text()
    assert synced.count("self.apply_omni_penalties(logits)") == 1
    assert cli("check", "--no-cache").exit_code == 0
