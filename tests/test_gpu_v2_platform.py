"""vLLM-Omni's Model Runner V2 runners on vLLM's V2 runner as a platform (issue 46):
``platform = "gpu-v2"`` or ``--platform gpu-v2`` runs the GPU flow on ``vllm_omni/worker_v2``
and ``vllm/v1/worker/gpu/model_runner.py`` (vLLM 0.34.0 ships that runner alone), on
synthetic trees written here (vLLM and vLLM-Omni checkouts)."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.extract import basedetect
from omni_port.model import Layout
from omni_port.patches import lockfile
from omni_port.pyast.parser import parse
from omni_port.sources.config import load
from omni_port.sources.platform import GPU_V2
from tests.conftest import Cli, readme_commands, write_tree

#: vLLM's V2 runner as a checkout holds it.
VLLM_V2_MEMBER = "vllm/v1/worker/gpu/model_runner.py"

UPSTREAM_OLD = """\
class GPUModelRunner:
    def __init__(self, config):
        self.config = config
        self.outputs = []

    def execute_model(self, scheduler_output):
        batch = self.prepare_inputs(scheduler_output)
        hidden = self.model(batch)
        self.finish(batch)
        return hidden

    def profile_run(self):
        hidden = self._dummy_run(self.max_num_tokens)
        self._dummy_sampler_run(hidden)
        self.synchronize()
        self.reset_encoder_cache()
"""

# The new vLLM updates the pipeline-parallel decode requests before it prepares a batch,
# and tells its dummy run that it profiles.
UPSTREAM_NEW = UPSTREAM_OLD.replace(
    "        batch = self.prepare_inputs(scheduler_output)\n",
    "        self.update_pp_decode_requests()\n"
    "        batch = self.prepare_inputs(scheduler_output)\n",
).replace(
    "self._dummy_run(self.max_num_tokens)", "self._dummy_run(self.max_num_tokens, is_profile=True)"
)

# vLLM-Omni's V2 runner: a copy of execute_model with one unmarked edit, and its own method.
OMNI_RUNNER = """\
from vllm.v1.worker.gpu.model_runner import GPUModelRunner


class OmniGPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output):
        batch = self.prepare_inputs(scheduler_output)
        hidden = self.model(batch)
        self.publish_omni_outputs(hidden)
        self.finish(batch)
        return hidden

    def publish_omni_outputs(self, hidden):
        self.outputs.append(hidden)
"""

# The Code2Wav runner skips profiling on purpose: a docstring and one of vLLM's statements.
OMNI_GENERATION_RUNNER = '''\
from vllm_omni.worker_v2.omni_model_runner import OmniGPUModelRunner


class OmniGenerationModelRunner(OmniGPUModelRunner):
    def profile_run(self):
        """Generation models have no KV cache: skip profiling."""
        self.synchronize()
'''


@pytest.fixture
def v2_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace beside a vLLM-Omni checkout and two vLLM checkouts (V2 runner only)."""
    packages = ("vllm", "vllm/v1", "vllm/v1/worker", "vllm/v1/worker/gpu")
    init = {f"{package}/__init__.py": "" for package in packages}
    write_tree(tmp_path / "vllm-old", {**init, VLLM_V2_MEMBER: UPSTREAM_OLD})
    write_tree(tmp_path / "vllm-new", {**init, VLLM_V2_MEMBER: UPSTREAM_NEW})
    omni = {
        "vllm_omni/__init__.py": "",
        "vllm_omni/worker_v2/__init__.py": "",
        GPU_V2.runners[0]: OMNI_RUNNER,
        GPU_V2.runners[2]: OMNI_GENERATION_RUNNER,
    }
    write_tree(tmp_path / "omni", omni)
    (tmp_path / "pyproject.toml").write_text('[tool.omni-port]\nsource = "omni"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _generated(work: Path, module: str) -> str:
    return (work / "generated" / "gpu-v2" / module).read_text()


def _upgrade(cli: Cli) -> None:
    args = ("--base", "detect", "--candidates", "vllm-new,vllm-old", "--to", "vllm-new")
    upgraded = cli("upgrade", "--platform", "gpu-v2", *args, "--json", "up.json")
    assert upgraded.exit_code == 0, upgraded.stdout + upgraded.stderr


def test_the_gpu_v2_platform_reads_the_v2_runners_and_vllm_s_v2_runner() -> None:
    assert all(member.startswith("vllm_omni/worker_v2/") for member in GPU_V2.runners)
    assert (GPU_V2.member, GPU_V2.module) == (VLLM_V2_MEMBER, "vllm.v1.worker.gpu.model_runner")
    assert (GPU_V2.layout, GPU_V2.package) == (Layout.GPU_V2, "vllm_omni.worker_v2")
    assert (GPU_V2.upstream, GPU_V2.generated) == ("vllm==0.34.0", "generated/gpu-v2")


def test_upgrade_onto_a_vllm_with_the_v2_runner_alone_ports_the_v2_runners(
    cli: Cli, v2_work: Path
) -> None:
    """The base is detected among the V2 runners, vLLM's new statement and omni's unmarked
    edit each stand once in upstream's order, and the workspace moves onto the platform."""
    _upgrade(cli)
    report = json.loads((v2_work / "up.json").read_text())
    assert report["blocks"] and all(b["status"] != "conflict" for b in report["blocks"])
    runner = _generated(v2_work, "omni_model_runner.py")
    body = runner[runner.index("    def execute_model") :]
    assert body.count("self.update_pp_decode_requests()") == 1
    assert body.count("self.publish_omni_outputs(hidden)") == 1
    assert body.index("self.update_pp_decode_requests()") < body.index("self.model(batch)")
    lock = lockfile.read(v2_work / "generated" / "gpu-v2")
    assert (lock.layout, lock.upstream) == (Layout.GPU_V2, "vllm-new")
    config = load(v2_work / "pyproject.toml")
    assert (config.platform, config.base) == ("gpu-v2", "vllm-old")
    assert cli("sync", "--check").exit_code == 0
    assert cli("verify").exit_code == 0


def test_the_summary_and_the_catalog_name_the_platform_s_runners(cli: Cli, v2_work: Path) -> None:
    """Headings call the runners by the platform's title, not the enum's name or the NPU's."""
    _upgrade(cli)
    summary = (v2_work / "omni-port-upgrade.md").read_text()
    assert summary.startswith("# Port the GPU Model Runner V2 runners from "), summary[:80]
    catalog = cli("catalog")
    assert catalog.exit_code == 0, catalog.stderr
    assert "# Omni-specific blocks of the GPU Model Runner V2 runners\n" in catalog.stdout


def test_a_method_that_holds_a_docstring_and_one_upstream_statement_is_omni_s(
    cli: Cli, v2_work: Path
) -> None:
    """The Code2Wav ``profile_run`` skip is carried as omni wrote it: read as half a copy
    of vLLM's (its docstring counted), it was split into deletions of vLLM's profiling, and
    vLLM's edit of its dummy run made them a conflict."""
    _upgrade(cli)
    runner = _generated(v2_work, "omni_generation_model_runner.py")
    profile = runner[runner.index("    def profile_run") :]
    assert "skip profiling" in profile and "self.synchronize()" in profile
    assert "_dummy_run" not in profile and "reset_encoder_cache" not in profile


def test_the_runtime_switch_serves_a_gpu_v2_tree_as_vllm_omni_s_worker_v2(
    cli: Cli, v2_work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _upgrade(cli)
    assert cli("verify").exit_code == 0  # the switch serves verified runners alone
    generated = (v2_work / "generated" / "gpu-v2").resolve()
    assert runtime.layout_of(generated)[0] is Layout.GPU_V2
    for name in (runtime.ENV, runtime.PACKAGE_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.syspath_prepend(str(v2_work / "vllm-new"))
    monkeypatch.syspath_prepend(str(v2_work / "omni"))
    try:
        redirected = runtime.use_generated_runners(generated)
        assert redirected == [
            "vllm_omni.worker_v2.omni_generation_model_runner",
            "vllm_omni.worker_v2.omni_model_runner",
        ]
        module = importlib.import_module(redirected[0])
        base = module.OmniGenerationModelRunner.__mro__[1]
        assert Path(inspect.getfile(base)) == generated / "omni_model_runner.py"
        assert "update_pp_decode_requests" in inspect.getsource(base.execute_model)
        assert base.__mro__[1].__module__ == "vllm.v1.worker.gpu.model_runner"
    finally:
        runtime.stop_using_generated_runners()
        for name in [n for n in sys.modules if n.split(".")[0] in ("vllm", "vllm_omni")]:
            del sys.modules[name]


def test_a_method_of_one_statement_besides_its_docstring_ranks_no_base() -> None:
    """A candidate that holds the one statement of a documented method, and no copy of a
    ten-statement one, ranked first ("50% of 2 statements") over one that holds 4 of the
    10: the V2 Code2Wav ``profile_run`` put vLLM 0.26.0 above the releases its
    ``execute_model`` copies."""
    small = '    def small(self):\n        """Skip it."""\n        a()\n'
    big = "".join(f"        s{n}()\n" for n in range(10))
    runner = parse(f"class R:\n{small}    def big(self):\n{big}", "runner.py")
    held = "".join(f"        s{n}()\n" for n in range(4)) + "        other()\n"
    candidates = {
        "holds-small": basedetect.method_keys("class U:\n    def small(self):\n        a()\n", "U"),
        "most-of-big": basedetect.method_keys(f"class U:\n    def big(self):\n{held}", "U"),
    }
    ranked = basedetect.rank([runner], candidates)
    assert [s.label for s in ranked] == ["most-of-big", "holds-small"]
    assert [s.statements for s in ranked] == [10, 0]


#: A release pin as notes and labels spell one (``vllm==0.30.0``), with its distribution.
_PIN = re.compile(r"\b(?P<dist>[a-z][a-z0-9_-]*)==\d")


@pytest.mark.real
def test_the_real_gpu_v2_upgrade_onto_vllm_0_34_0(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM-Omni 0.32.0rc1's V2 runners onto vLLM 0.34.0, which has the V2 runner alone.
    Their copies of vLLM's ``execute_model`` match vLLM 0.28.0 best (0.29.0 alike, with code
    they lack); every
    release a note names is vLLM's, each followed lag names the one that brought the code;
    no call runs twice (OP512); the Code2Wav ``profile_run`` skip is carried whole; omni's
    ``_dispatch_batch_descriptor`` call gets none of the keywords vLLM 0.34.0 gave
    ``dispatch_cg_and_sync_dp`` (a conflict, not four OP510s); and verify finds what vLLM
    0.34.0 broke in omni's own code: ``ModelRunnerOutput`` has no ``req_id_to_index``."""
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    source, target = "vllm-omni==0.32.0rc1", "vllm==0.34.0"
    args = ("--platform", "gpu-v2", source, "--base", "detect", "--to", target)
    result = cli("--cache-dir", cache_dir, "upgrade", *args, "--json", "up.json")
    report = json.loads((tmp_path / "up.json").read_text())
    blocks, findings = report["blocks"], report["findings"]
    unresolved = any(b["status"] == "conflict" for b in blocks) or any(
        f["severity"] == "error" for f in findings
    )
    assert result.exit_code == (1 if unresolved else 0), result.stderr
    assert any(b["status"] == "placed" for b in blocks)
    config = load(tmp_path / "pyproject.toml")
    assert (config.platform, config.base, config.upstream) == ("gpu-v2", "vllm==0.28.0", target)
    summary = (tmp_path / "omni-port-upgrade.md").read_text()
    named = {m["dist"] for text in (summary, json.dumps(report)) for m in _PIN.finditer(text)}
    assert named <= {"vllm", "vllm-omni"}, named
    lags = [f["message"] for f in findings if f["code"] == "OP306"]
    assert lags and all(_PIN.search(message) for message in lags), lags
    assert not [f for f in findings if f["code"] == "OP512"]
    wrong = [f["message"] for f in findings if f["code"] == "OP510"]
    assert not [m for m in wrong if "_dispatch_batch_descriptor" in m], wrong
    assert [m for m in wrong if "req_id_to_index" in m], wrong
    generation = (tmp_path / "generated" / "gpu-v2" / "omni_generation_model_runner.py").read_text()
    profile = generation[generation.index("    def profile_run") :].split("\n    def ", 1)[0]
    assert "torch.accelerator.synchronize()" in profile and "_dummy_run" not in profile
    lock = lockfile.read(tmp_path / "generated" / "gpu-v2")
    assert (lock.layout, lock.upstream) == (Layout.GPU_V2, target)


@pytest.mark.real
def test_the_readme_s_gpu_v2_walk_through_runs(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each documented command, in a workspace with an empty table: bases ranks, the
    upgrade onto vLLM 0.34.0 pins the platform, and the commands after it agree."""
    commands = readme_commands("Model Runner V2 on the GPU")
    assert [c[0] for c in commands] == ["bases", "upgrade", "sync", "verify"]
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    codes = [cli("--cache-dir", cache_dir, *command).exit_code for command in commands]
    bases, upgraded, checked, verified = codes
    assert bases == 0 and upgraded in (0, 1)
    assert checked == 0  # the upgrade wrote what sync would write now
    assert verified == upgraded  # the gate agrees with the upgrade's summary


def test_a_vllm_without_the_platform_s_runner_names_the_platform_that_reads_it(
    cli: Cli, v2_work: Path
) -> None:
    """A vLLM release without the V2 runner (kept in the cache as lacking it: nothing is
    asked of the index) is bad input that names the platform whose runner it has: a
    maintainer who asks for vLLM 0.34.0 with the V1 GPU runners learns of ``gpu-v2``."""
    cache = v2_work / "cache"
    absent = cache / "src" / "vllm-0.13.0" / f"{VLLM_V2_MEMBER}.absent"
    absent.parent.mkdir(parents=True)
    absent.write_text("wheel\n")
    table = 'platform = "gpu-v2"\nsource = "omni"\nbase = "vllm-old"\nhistory = "none"\n'
    (v2_work / "pyproject.toml").write_text(f"[tool.omni-port]\n{table}")
    assert cli("--cache-dir", cache, "extract").exit_code == 0
    result = cli("--cache-dir", cache, "sync", "--upstream", "vllm==0.13.0")
    assert result.exit_code == 2
    said = f"OP003 the wheel has no {VLLM_V2_MEMBER}; "
    assert said in result.stderr and "`--platform gpu` reads" in result.stderr, result.stderr
