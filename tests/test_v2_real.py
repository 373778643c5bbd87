"""Model Runner V2 on real data: vLLM-Omni 0.30.0's worker_v2 runners composed with
vllm-ascend 0.30.0rc2's V2 ``NPUModelRunner``, both on vLLM 0.30 (vllm-ascend 0.30.0rc2
runs on vLLM 0.30.0), omni's delta against vLLM 0.28.0 ... 0.31.0; and the pairs that
target different vLLM releases, refused.

The API page of the generation runner (``../shared/seeds/002_fc8189ddcbbb0468.txt``) is a
contract the generated NPU ``OmniGenerationModelRunner`` must keep; it is transcribed
below, and checked against the page itself when the page is at hand.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from omni_port.model import Code, Rule, Severity, Status
from omni_port.v2 import inputs, overrides, pipeline, walk
from tests.conftest import Cli

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent
SEED_PAGE = Path(
    os.environ.get(
        "OMNI_PORT_SEED_PAGE", ROOT.parent / "shared" / "seeds" / "002_fc8189ddcbbb0468.txt"
    )
)
#: The reviewed allow-list of this repository (the Code2Wav profile_run skip).
ALLOW = ROOT / "v2-allow.txt"
SETTINGS = inputs.Settings(
    source="vllm-omni==0.30.0", upstream="vllm-ascend==0.30.0rc2", allow=str(ALLOW)
)
GEN = "omni_generation_model_runner.py"
RUNNER = "OmniGenerationModelRunner"
RUNNERS = ("OmniGPUModelRunner", "OmniARModelRunner", RUNNER)
NPU = "NPUModelRunner"
#: What the NPU execute_model does around super(): KV preemptions, the DP coordination
#: skip, the draft-KV send, kvpp and the profiling timing.
NPU_STEPS = (
    "get_kv_transfer_group().handle_preemptions(",
    "skip_dp_coordination()",
    "self._maybe_send_draft_kv(",
    "self.kvpp.complete_forward()",
    "_finish_profiling_chunk_timing(",
)

# --- the contract of the API page -----------------------------------------------------------

#: ``profile_run() -> None``, and the first line of its reason.
PROFILE_REASON = "Generation models have no KV cache — skip profiling."
#: Phrases of the rest of the reason on the page.
PROFILE_WHY = ("gpu_memory_utilization", "out-of-bounds indexing in codec lookup")
#: ``execute_model``'s parameters after ``self``: name, annotation, default.
EXECUTE_MODEL = (
    ("scheduler_output", "SchedulerOutput", None),
    ("intermediate_tensors", "IntermediateTensors | None", "None"),
    ("dummy_run", "bool", "False"),
    ("skip_attn_for_dummy_run", "bool", "False"),
    ("is_profile", "bool", "False"),
    ("context_len", "int", "0"),
    ("valid_dummy_state_slots", "bool", "False"),
)
EXECUTE_RETURNS = "ModelRunnerOutput | IntermediateTensors | None"
SAMPLE_TOKENS = (("grammar_output", "GrammarOutput | None", "None"),)
SAMPLE_RETURNS = "OmniModelRunnerOutput | AsyncModelRunnerOutput | None"
#: ``OmniGenerationAsyncOutput``: its instance attributes and ``get_output``'s return type.
ASYNC_OUTPUT = "OmniGenerationAsyncOutput"
ASYNC_ATTRIBUTES = (
    "copy_event",
    "finalize_output",
    "model_runner_output",
    "multimodal_outputs_cpu",
    "num_reqs",
)
GET_OUTPUT = "OmniModelRunnerOutput"
#: What token sampling calls; the generation runner calls none of it.
SAMPLING = frozenset({"sample", "sampler", "compute_logits", "postprocess_sampled", "_sample"})


@pytest.fixture(scope="module")
def composed(cache_dir: Path) -> pipeline.Result:
    return pipeline.generate(inputs.load(SETTINGS, cache_dir), "omni-port test", "v2-sync")


def _class(result: pipeline.Result) -> ast.ClassDef:
    tree = ast.parse(result.files[GEN].decode("utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == RUNNER)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    found = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{RUNNER}.{name} is defined {len(found)} times"
    return found[0]


def _parameters(function: ast.FunctionDef) -> tuple[tuple[str, str, str | None], ...]:
    args = function.args
    assert not args.posonlyargs and not args.kwonlyargs and not args.vararg and not args.kwarg
    names = args.args
    assert names[0].arg == "self"
    defaults = [None] * (len(names) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    return tuple(
        (a.arg, ast.unparse(a.annotation) if a.annotation else "", default)
        for a, default in zip(names[1:], defaults[1:], strict=True)
    )


def _calls(function: ast.AST) -> set[str]:
    """Names of what a function calls: ``f(...)``, ``x.f(...)``."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Attribute):
                found.add(target.attr)
            elif isinstance(target, ast.Name):
                found.add(target.id)
    return found


def test_the_generated_class_is_the_composed_npu_runner(composed: pipeline.Result) -> None:
    cls = _class(composed)
    assert [ast.unparse(b) for b in cls.bases] == ["OmniGPUModelRunner"]
    base = ast.parse(composed.files["omni_model_runner.py"].decode("utf-8"))
    gpu = next(
        n for n in base.body if isinstance(n, ast.ClassDef) and n.name == "OmniGPUModelRunner"
    )
    assert [ast.unparse(b) for b in gpu.bases] == ["NPUModelRunner"]


def test_profile_run_is_skipped_with_its_reason(composed: pipeline.Result) -> None:
    profile = _method(_class(composed), "profile_run")
    assert _parameters(profile) == ()
    assert profile.returns is not None and ast.unparse(profile.returns) == "None"
    doc = ast.get_docstring(profile) or ""
    assert doc.splitlines()[0] == PROFILE_REASON
    for phrase in PROFILE_WHY:
        assert phrase in " ".join(doc.split())
    assert not _calls(profile) & {"_dummy_run", "_dummy_sampler_run", "profile_run", "model"}
    # The skip is a reviewed allow-list entry, its reason in the file above the method.
    row = next(p for p in composed.placements if (p.owner, p.member) == (RUNNER, "profile_run"))
    assert row.decided_by == (Rule.ALLOWED,) and row.status is Status.CARRIED
    above = composed.files[GEN].decode("utf-8").splitlines()[row.start - 2]
    assert above.lstrip().startswith("# omni-port: allowed: NPUModelRunner.profile_run")
    assert "gpu_memory_utilization" in above and "v2-allow.txt" in above


def test_execute_model_has_the_listed_parameters_and_return_type(
    composed: pipeline.Result,
) -> None:
    execute = _method(_class(composed), "execute_model")
    assert _parameters(execute) == EXECUTE_MODEL
    assert execute.returns is not None and ast.unparse(execute.returns) == EXECUTE_RETURNS


def test_sample_tokens_builds_pooler_output_from_multimodal_outputs_without_sampling(
    composed: pipeline.Result,
) -> None:
    cls = _class(composed)
    sample = _method(cls, "sample_tokens")
    assert _parameters(sample) == SAMPLE_TOKENS
    assert sample.returns is not None and ast.unparse(sample.returns) == SAMPLE_RETURNS
    # The generated sample_tokens is the NPU wrapper; omni's body runs inside it.
    body = _method(cls, "_omni_sample_tokens")
    assert "_omni_sample_tokens" in _calls(sample)
    assert not (_calls(sample) | _calls(body)) & SAMPLING, "no token sampling"
    outputs = [
        n
        for n in ast.walk(body)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "OmniModelRunnerOutput"
    ]
    assert outputs and all("pooler_output" in {k.arg for k in o.keywords} for o in outputs)
    sampled = {
        ast.unparse(k.value) for o in outputs for k in o.keywords if k.arg == "sampled_token_ids"
    }
    assert sampled and all(_empty_lists(body, name) for name in sampled), "no token is sampled"
    assert "_build_pooler_output" in _calls(body)
    reads = {n.attr for n in ast.walk(body) if isinstance(n, ast.Attribute)}
    assert "multimodal_outputs" in reads
    builder = _method(cls, "_build_pooler_output")
    assert "multimodal_outputs" in {
        n.attr for n in ast.walk(builder) if isinstance(n, ast.Attribute)
    }


def test_the_async_output_is_there_and_built_on_the_npu(composed: pipeline.Result) -> None:
    """``OmniGenerationAsyncOutput`` of the page, and the check that builds it made
    device-neutral: on the NPU ``device.type`` is "npu", never "cuda"."""
    tree = ast.parse(composed.files[GEN].decode("utf-8"))
    output = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == ASYNC_OUTPUT)
    assert [ast.unparse(b) for b in output.bases] == ["AsyncModelRunnerOutput"]
    methods = {n.name: n for n in output.body if isinstance(n, ast.FunctionDef)}
    get_output = methods["get_output"]
    assert _parameters(get_output) == ()
    assert get_output.returns is not None and ast.unparse(get_output.returns) == GET_OUTPUT
    assigned = {
        ast.unparse(target): ast.unparse(node.value)
        for node in ast.walk(methods["__init__"])
        if isinstance(node, ast.Assign)
        for target in node.targets
    }
    assert set(ASYNC_ATTRIBUTES) <= {a.removeprefix("self.") for a in assigned}
    assert assigned["self.copy_event"] == "torch.cuda.Event(blocking=True)"
    assert assigned["self.multimodal_outputs_cpu"].startswith("_async_copy_mm(")
    body = _method(_class(composed), "_omni_sample_tokens")
    gate = next(
        n
        for n in ast.walk(body)
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == ("can_copy_async")
    )
    assert "!= 'cpu'" in ast.unparse(gate.value) and "'cuda'" not in ast.unparse(gate.value)


def _empty_lists(function: ast.FunctionDef, name: str) -> bool:
    """``name`` is bound, in ``function``, to one empty list per request and nothing else."""
    values = [
        node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            ast.unparse(t) == name
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]
    return bool(values) and all(
        isinstance(v, ast.ListComp) and isinstance(v.elt, ast.List) and not v.elt.elts
        for v in values
    )


@pytest.mark.skipif(not SEED_PAGE.is_file(), reason=f"the seed page is not at {SEED_PAGE}")
def test_the_transcribed_contract_is_the_page() -> None:
    page = SEED_PAGE.read_text(encoding="utf-8")
    assert PROFILE_REASON in page
    assert all(phrase in " ".join(page.split()) for phrase in PROFILE_WHY)
    for name, params, returns in (
        ("execute_model", EXECUTE_MODEL, EXECUTE_RETURNS),
        ("sample_tokens", SAMPLE_TOKENS, SAMPLE_RETURNS),
    ):
        found = re.search(rf"^{name}\(\s*(.*?)\)\s*->\s*(.+?)$", page, re.MULTILINE | re.DOTALL)
        assert found is not None, name
        stub = ast.parse(f"def {name}(self, {found.group(1)}) -> {found.group(2)}: pass")
        function = stub.body[0]
        assert isinstance(function, ast.FunctionDef)
        assert _parameters(function) == params
        assert function.returns is not None and ast.unparse(function.returns) == returns
    assert re.search(r"^profile_run\(\) -> None$", page, re.MULTILINE)
    assert re.search(rf"^{ASYNC_OUTPUT}$", page, re.MULTILINE)
    assert re.search(rf"^get_output\(\) -> {GET_OUTPUT}$", page, re.MULTILINE)
    for attribute in ASYNC_ATTRIBUTES:
        assert re.search(rf"^{attribute} instance-attribute", page, re.MULTILINE), attribute
    assert "copy_event = torch.cuda.Event(blocking=True)" in page


# --- the override report and the composition ------------------------------------------------


def test_the_override_report_on_the_real_pair(composed: pipeline.Result) -> None:
    report = composed.report
    assert sorted(r.runner for r in report.runners) == ["OmniARModelRunner", *RUNNERS[::2]]
    both = {
        (r.runner, row.name): row
        for r in report.runners
        for row in r.rows
        if row.who is overrides.Who.BOTH
    }
    assert sorted(both) == sorted(
        [
            (runner, name)
            for runner in RUNNERS
            for name in ("__init__", "execute_model", "load_model")
        ]
        + [
            ("OmniARModelRunner", "sample_tokens"),
            (RUNNER, "profile_run"),
            (RUNNER, "sample_tokens"),
        ]
    )
    for runner in RUNNERS:
        init = both[(runner, "__init__")]
        assert init.omni is not None and init.omni.delegates, "omni's __init__ reaches the NPU's"
    # The NPU overrides wrap super(); omni's replace vLLM's: wrapper collisions (OP323),
    # reported once where omni's code ends (the AR execute_model ends in the base's).
    assert [f for f in report.findings if f.code is Code.OP320] == []
    wrapped = sorted(f.message.split(" and ")[1].split(" replaces")[0] for f in report.findings
                     if f.code is Code.OP323)  # fmt: skip
    assert wrapped == [
        "OmniARModelRunner.sample_tokens",
        "OmniGPUModelRunner.execute_model",
        f"{RUNNER}.execute_model",
        f"{RUNNER}.profile_run",
        f"{RUNNER}.sample_tokens",
    ]
    assert [f for f in report.findings if f.code is Code.OP322] == [], "one vLLM release"


def test_the_composition_on_the_real_pair(composed: pipeline.Result) -> None:
    for name, data in composed.files.items():
        if name.endswith(".py"):
            compile(data.decode("utf-8"), name, "exec", dont_inherit=True)
    rules = {(c.owner, c.name): c.rule for c in composed.composition.composed}
    assert rules == {
        ("OmniGPUModelRunner", "__init__"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "load_model"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "execute_model"): Rule.NPU_WRAPPER,
        ("OmniARModelRunner", "sample_tokens"): Rule.NPU_WRAPPER,
        (RUNNER, "execute_model"): Rule.NPU_WRAPPER,
        (RUNNER, "sample_tokens"): Rule.NPU_WRAPPER,
        (RUNNER, "profile_run"): Rule.ALLOWED,
    }
    assert [p for p in composed.placements if p.status is Status.CONFLICT] == []
    errors = [f for f in composed.findings if f.severity is Severity.ERROR]
    assert errors == [], errors


def _npu_world(composed: pipeline.Result, cache_dir: Path) -> walk.World:
    loaded = inputs.load(SETTINGS, cache_dir)
    modules = {n: d.decode("utf-8") for n, d in composed.files.items() if n.endswith(".py")}
    return walk.World({**modules, "npu": loaded.npu.text, "vllm": loaded.base.text})


@pytest.mark.parametrize("runner", ["OmniARModelRunner", RUNNER])
def test_execute_model_runs_the_npu_wrapper_once_with_omnis_forward_inside(
    composed: pipeline.Result, cache_dir: Path, runner: str
) -> None:
    """The static walk through the generated class chain (done-when of issue 27)."""
    generated = {n for n in composed.files if n.endswith(".py")}
    found = walk.runs(_npu_world(composed, cache_dir), runner, "execute_model", NPU, generated)
    visits = [(v.owner, v.name) for v in found.visits]
    assert len(found.npu) == 1, visits
    wrapper = found.visits[found.npu[0]]
    assert wrapper.owner != NPU and wrapper.name == "execute_model", "the copy, in omni's class"
    wrapper_code = ast.unparse(wrapper.node)
    for step in NPU_STEPS:
        assert step in wrapper_code, step
    assert len(found.bodies) == 1 and found.inside(found.bodies[0], found.npu[0])
    forward = ast.unparse(found.visits[found.bodies[0]].node)
    assert "OmniOutput" in forward and "self.model(**model_inputs)" in forward, "omni's forward"
    assert (NPU, "execute_model") not in visits and ("GPUModelRunner", "execute_model") not in (
        visits
    )


@pytest.mark.parametrize("runner", ["OmniARModelRunner", RUNNER])
def test_sample_tokens_runs_the_npu_steps_once(
    composed: pipeline.Result, cache_dir: Path, runner: str
) -> None:
    generated = {n for n in composed.files if n.endswith(".py")}
    found = walk.runs(_npu_world(composed, cache_dir), runner, "sample_tokens", NPU, generated)
    assert len(found.npu) == 1 and len(found.bodies) == 1
    assert found.inside(found.bodies[0], found.npu[0])
    assert "self.pp_handler.broadcast_drafts()" in ast.unparse(found.visits[found.npu[0]].node)


def test_omnis_code_calls_what_vllm_ascend_installs(composed: pipeline.Result) -> None:
    text = composed.files["omni_model_runner.py"].decode("utf-8")
    imports = {
        (n.module, a.name, a.asname)
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    patched = ("vllm_ascend.patch.worker.patch_v2.patch_model_runner", "dispatch_cg_and_sync_dp")
    assert (*patched, None) in imports
    assert ("vllm_ascend.worker.v2.input_batch", "AscendInputBatch", "InputBatch") in imports
    factory = ("vllm_ascend.worker.v2.model_states", "init_asecnd_model_state")
    assert (*factory, "_upstream_init_model_state") in imports
    assert "def init_omni_model_state(" in text, "omni's factory chained to vllm-ascend's"
    rows = [p for p in composed.placements if p.kind == pipeline.REWRITTEN]
    assert sum(1 for p in rows if Rule.DEVICE_NEUTRAL in p.decided_by) == 3
    assert sum(1 for p in rows if Rule.ASCEND_PATCH in p.decided_by) >= 4
    notes = [f for f in composed.findings if f.code is Code.OP327]
    assert notes and all(f.severity is Severity.NOTE for f in notes), "all redirected"


def test_every_reviewed_allow_list_entry_is_used(composed: pipeline.Result) -> None:
    entries = [ln for ln in ALLOW.read_text().splitlines() if ln.strip() and ln[0] != "#"]
    used = [c for c in composed.composition.composed if c.allow is not None]
    assert len(used) == len(entries) == 1
    assert not [f for f in composed.findings if f.code is Code.OP005]


def test_v2_sync_and_verify_on_the_real_pair(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "v2"
    args = ("--cache-dir", cache_dir, "v2-sync", "vllm-omni==0.30.0", "--upstream",
            "vllm-ascend==0.30.0rc2", "--generated", out)  # fmt: skip
    unreviewed = cli(*args)
    assert unreviewed.exit_code == 1, "the profile_run skip is a conflict until reviewed"
    assert ": OP324 " in unreviewed.stdout and "profile_run" in unreviewed.stdout
    synced = cli(*args, "--v2-allow", ALLOW)
    assert synced.exit_code == 0, synced.stdout
    report = tmp_path / "verify.json"
    verified = cli("--cache-dir", cache_dir, "verify", "--generated", out, "--json", report)
    findings = json.loads(report.read_text())["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []
    assert verified.exit_code == 0
    assert not [f for f in findings if f["code"] == "OP506"], "checked against vLLM 0.30.0"


@pytest.mark.parametrize(
    ("source", "upstream", "omni_vllm", "npu_vllm"),
    [
        pytest.param("vllm-omni==0.32.0rc1", "vllm-ascend==0.30.0rc2", "0.32", "0.30.0",
                     id="0.32.0rc1-on-0.30.0rc2"),
        pytest.param("vllm-omni==0.30.0", "vllm-ascend==0.26.0rc1", "0.30", "0.26.0",
                     id="0.30.0-on-0.26.0rc1"),
    ],
)  # fmt: skip
def test_a_pair_on_different_vllm_releases_is_refused(
    cli: Cli, cache_dir: Path, tmp_path: Path, source: str, upstream: str, omni_vllm: str,
    npu_vllm: str,
) -> None:  # fmt: skip
    out = tmp_path / "v2"
    result = cli(
        "--cache-dir", cache_dir, "v2-sync", source, "--upstream", upstream, "--generated", out
    )
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert ": OP511 " in line
    assert f"targets vLLM {omni_vllm}," in line and f"runs on vLLM {npu_vllm} " in line
    assert source.split("==")[1] in line and upstream in line
    assert not out.exists()


def test_comment_notes_only_for_methods_rebuilt_from_the_npu_override(
    cache_dir: Path, composed: pipeline.Result
) -> None:
    """Omni's copies of vLLM methods are carried verbatim here, comments and all."""
    delta = pipeline.delta(inputs.load(SETTINGS, cache_dir))
    assert [f for f in delta.findings if f.code is Code.OP902], "gpu_delta notes comment drift"
    assert not [f for f in composed.findings if f.code is Code.OP902]
