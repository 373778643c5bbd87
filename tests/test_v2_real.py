"""Model Runner V2 on real data: vLLM-Omni 0.30.0's worker_v2 runners composed with
vllm-ascend 0.30.0rc2's V2 ``NPUModelRunner``, both on vLLM 0.30 (vllm-ascend 0.30.0rc2
runs on vLLM 0.30.0), omni's delta against vLLM 0.28.0 ... 0.31.0, with omni's
``OmniModelState`` rebased onto vllm-ascend's ``AscendModelState`` (the class its
``init_model_state`` patch builds where vLLM builds ``DefaultModelState``); and the pairs
that target different vLLM releases, refused.

The API page of the generation runner (``../shared/seeds/002_fc8189ddcbbb0468.txt``) is a
contract the generated NPU ``OmniGenerationModelRunner`` must keep; it is transcribed
below, and checked against the page itself when the page is at hand.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.model import Code, Rule, Severity, Status
from omni_port.patches import lockfile
from omni_port.sources import index
from omni_port.v2 import capture, checks, inputs, overrides, pins, pipeline, walk
from tests.conftest import Cli, ruff_findings

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
#: omni's model state, generated rebased onto vllm-ascend's substitute.
STATE = "model_states/omni_model_state.py"
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
    text = composed.files[GEN].decode("utf-8")
    *_, (line, rule, above) = [t for t in checks.tags(text) if t[0] < row.start]
    assert rule == "allowed" and above.startswith("NPUModelRunner.profile_run")
    comments = text.splitlines()[line - 1 : row.start - 1]
    assert all(c.lstrip().startswith("#") for c in comments), "right above the method"
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


#: Steps of vLLM 0.30.0's execute_model omni's copies (of 0.28.0's) lack: the review's.
LAGGING = (
    "input_batch.dcp_local_seq_lens = maybe_prepare_dcp_local_seq_lens(",
    "self.kv_connector.finish_forward()",
    "self.kv_connector.pre_forward(**connector_kwargs, attn_metadata=attn_metadata)",
    "self.kv_connector.pre_forward(**connector_kwargs)",
)


def test_the_report_notes_where_omnis_execute_model_lags_vllm(cache_dir: Path) -> None:
    reviewed = pipeline.review(inputs.load(SETTINGS, cache_dir), "omni-port test")
    notes = [f for f in reviewed.findings if f.code is Code.OP335]
    assert {f.severity for f in notes} == {Severity.NOTE}
    for runner in ("OmniGPUModelRunner", RUNNER):
        mine = [f.message for f in notes if f.message.startswith(f"{runner}.execute_model ")]
        assert all("copy of vllm==0.28.0's GPUModelRunner.execute_model" in m for m in mine)
        assert all("vllm==0.30.0's (the release the NPU runner runs on)" in m for m in mine)
        for step in LAGGING:
            assert any(f"since vllm==0.30.0: `{step}" in m for m in mine), step
    assert {f.message.split(" ")[0] for f in notes} == {
        "OmniGPUModelRunner.execute_model",
        f"{RUNNER}.execute_model",
    }


def test_the_dead_branches_of_the_copied_sample_tokens_are_notes(
    composed: pipeline.Result,
) -> None:
    """PCP, spec-PP and the draft restore of NPUModelRunner.sample_tokens, copied around
    omni's AR and generation sample_tokens, cannot run: omni refuses PP and PCP."""
    dead = [f for f in composed.findings if f.code is Code.OP336]
    assert {f.severity for f in dead} == {Severity.NOTE}
    for module in ("omni_ar_model_runner.py", GEN):
        mine = [f.message.split(": ")[0] for f in dead if f.path == module]
        assert mine == [
            "`if pcp_manager is not None and (not self.is_last_pp_rank) and (self.execute_mode...`",
            "`if pcp_manager is not None and isinstance(pcp_manager, AscendPCPManager)`",
            "`self._restore_replicated_draft_target_states()` does nothing",
            "`if self.use_spec_pp and self.is_last_pp_rank`",
        ], module
    assert not any("_maybe_send_draft_kv" in f.message for f in dead), "DSpark: undecided"


def test_the_composition_on_the_real_pair(composed: pipeline.Result) -> None:
    for name, data in composed.files.items():
        if name.endswith(".py"):
            compile(data.decode("utf-8"), name, "exec", dont_inherit=True)
    rules = {(c.owner, c.name): c.rule for c in composed.composed}
    assert rules == {
        ("OmniGPUModelRunner", "__init__"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "load_model"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "execute_model"): Rule.NPU_WRAPPER,
        ("OmniARModelRunner", "sample_tokens"): Rule.NPU_WRAPPER,
        (RUNNER, "execute_model"): Rule.NPU_WRAPPER,
        (RUNNER, "sample_tokens"): Rule.NPU_WRAPPER,
        (RUNNER, "profile_run"): Rule.ALLOWED,
        # omni's model state on AscendModelState: omni's calls reach the NPU's through
        # super(); its remove_request (an index or an id) is reviewed in v2-allow.txt.
        ("OmniModelState", "__init__"): Rule.OMNI_SUPER,
        ("OmniModelState", "prepare_inputs"): Rule.OMNI_SUPER,
        ("OmniModelState", "prepare_dummy_inputs"): Rule.OMNI_SUPER,
        ("OmniModelState", "remove_request"): Rule.ALLOWED,
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
    entries = [
        n for n, ln in enumerate(ALLOW.read_text().splitlines(), 1) if ln.strip() and ln[0] != "#"
    ]
    kept = {c.allow.line for c in composed.composed if c.allow is not None}
    cited = {n for n in entries for f in composed.findings if f"{ALLOW}:{n})" in f.message}
    assert sorted(kept | cited) == entries, "each entry keeps a method or reviews a loss"
    assert not [f for f in composed.findings if f.code is Code.OP005]


def _state(composed: pipeline.Result) -> ast.ClassDef:
    tree = ast.parse(composed.files[STATE].decode("utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OmniModelState")


def test_the_omni_model_state_is_composed_on_ascend_model_state(
    composed: pipeline.Result, cache_dir: Path
) -> None:
    """Every omni model gets omni's model state; on the NPU it is built on AscendModelState
    (whose prepare_attn builds the metadata Ascend's attention reads), not vLLM's."""
    state = _state(composed)
    assert [ast.unparse(b) for b in state.bases] == ["AscendModelState"]
    text = composed.files[STATE].decode("utf-8")
    assert (
        "from vllm_ascend.worker.v2.model_states.default import AscendModelState" in text
    ) and "DefaultModelState)" not in text
    notes = [f for f in composed.findings if f.code is Code.OP330]
    assert notes and all(f.severity is Severity.NOTE and f.path == STATE for f in notes)
    assert "init_asecnd_model_state" in notes[-1].message
    assert "patch_model_state.py:26" in notes[-1].message
    # The runners reach it under omni's module name, which the switch serves from the tree:
    # the carried factory and the runner's import both name it.
    runner = composed.files["omni_model_runner.py"].decode("utf-8")
    assert runner.count("from vllm_omni.worker_v2.model_states.omni_model_state import") == 2
    # What AscendModelState adds runs for omni's state: its prepare_attn and
    # finish_execution are inherited, its __init__ runs once under omni's.
    world = walk.World(
        {
            STATE: text,
            **{m: t for m, t in inputs.load(SETTINGS, cache_dir).classes.items()},
        }
    )
    for name, owner in (
        ("prepare_attn", "AscendModelState"),
        ("finish_execution", "AscendModelState"),
    ):
        found = world.resolve("OmniModelState", name)
        assert found is not None and found.name == owner, name
    found = walk.runs(world, "OmniModelState", "__init__", "AscendModelState", {STATE})
    assert [world.classes[v.owner].name for v in found.visits] == [
        "OmniModelState", "AscendModelState", "DefaultModelState",
    ]  # fmt: skip
    assert len(found.npu) == 1


def test_the_lock_pins_what_the_tree_relies_on(composed: pipeline.Result) -> None:
    lock = json.loads(composed.files[lockfile.LOCK_NAME].decode("utf-8"))
    pinned = {s["label"] for s in lock["inputs"]["sources"] if s["role"] == pins.ROLE}
    for label in (
        "vllm-ascend:vllm_ascend/patch/worker/patch_v2/patch_model_state.py",
        "vllm-ascend:vllm_ascend/patch/worker/patch_v2/patch_input_batch.py",
        "vllm-ascend:vllm_ascend/worker/v2/model_states/default.py",
        "vllm-ascend:vllm_ascend/worker/v2/utils.py",
        "vllm-omni:vllm_omni/worker_v2/omni_model_runner.py",
        "vllm-omni:vllm_omni/worker_v2/model_states/omni_model_state.py",
        "vllm-omni:vllm_omni/worker_v2/omni_data_plane.py",
        "vllm:vllm/v1/worker/gpu/model_runner.py",
        "vllm:vllm/v1/worker/gpu/model_states/default.py",
    ):
        assert label in pinned, label
    assert STATE in lock["outputs"]


def _errors(text: str) -> list[str]:
    return sorted({line.split(": ")[1].split()[0] for line in text.splitlines() if ": OP" in line})


def test_v2_sync_and_verify_on_the_real_pair(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "v2"
    args = ("--cache-dir", cache_dir, "v2-sync", "vllm-omni==0.30.0", "--upstream",
            "vllm-ascend==0.30.0rc2", "--generated", out)  # fmt: skip
    # The repository's configuration names v2-allow.txt: an empty list reviews nothing.
    (tmp_path / "none.txt").write_text("")
    unreviewed = cli(
        *args, "--v2-allow", tmp_path / "none.txt", "--json", tmp_path / "unreviewed.json"
    )
    assert unreviewed.exit_code == 1, "the profile_run skip is a conflict until reviewed"
    errors = [
        (f["code"], Path(f["path"]).name)
        for f in json.loads((tmp_path / "unreviewed.json").read_text())["findings"]
        if f["severity"] == "error"
    ]
    # The two skips (profile_run; the state's remove_request) and the six NPU overrides
    # omni's replacements bypass (profile_run's _dummy_run among them) are errors until
    # reviewed.
    assert sorted(errors) == sorted(
        [("OP324", GEN), ("OP324", "omni_model_state.py"), ("OP321", "omni_ar_model_runner.py")]
        + [("OP321", GEN)] * 5
    )
    synced = cli(*args, "--v2-allow", ALLOW)
    assert synced.exit_code == 0, synced.stdout
    report = tmp_path / "verify.json"
    verified = cli("--cache-dir", cache_dir, "verify", "--generated", out, "--json", report)
    findings = json.loads(report.read_text())["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []
    assert verified.exit_code == 0
    assert not [f for f in findings if f["code"] == "OP506"], "checked against vLLM 0.30.0"
    reasons = runtime.unresolved(out)
    assert not [r for r in reasons if "verify" in r or "conflict" in r], reasons


def test_the_bypass_seeded_back_in_fails_verify_and_the_switch(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """omni's model state put back on vLLM's DefaultModelState in the generated tree."""
    out = tmp_path / "v2"
    args = ("--cache-dir", cache_dir, "v2-sync", "vllm-omni==0.30.0", "--upstream",
            "vllm-ascend==0.30.0rc2", "--v2-allow", ALLOW, "--generated", out)  # fmt: skip
    assert cli(*args).exit_code == 0
    state = out / STATE
    text = state.read_text()
    text = text.replace(
        "from vllm_ascend.worker.v2.model_states.default import AscendModelState",
        "from vllm.v1.worker.gpu.model_states.default import DefaultModelState",
    )
    head, _, tail = text.partition("class OmniModelState(AscendModelState):")
    state.write_text(head + "class OmniModelState(DefaultModelState):\n" + tail.partition("\n")[2])
    verified = cli("--cache-dir", cache_dir, "verify", "--generated", out)
    assert verified.exit_code == 1
    (line,) = [ln for ln in verified.stdout.splitlines() if ": OP330 " in ln and "built on" in ln]
    assert "OmniModelState is built on DefaultModelState" in line
    assert "AscendModelState" in line and "init_asecnd_model_state" in line
    reasons = runtime.unresolved(out)
    assert any("was edited since sync wrote it" in r for r in reasons)
    assert any("verify problems" in r and "OP330" in r for r in reasons), reasons


def test_vllms_input_buffers_seeded_into_omnis_init_fails_verify_and_the_switch(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """NPUModelRunner.__init__ rebuilds input_buffers as AscendInputBuffers (its seq_lens_cpu
    is what the NPU code reads): omni's __init__ building vLLM's InputBuffers after it would
    fail the first step, so verify fails (OP332), and the switch with it."""
    out = tmp_path / "v2"
    args = ("--cache-dir", cache_dir, "v2-sync", "vllm-omni==0.30.0", "--upstream",
            "vllm-ascend==0.30.0rc2", "--v2-allow", ALLOW, "--generated", out)  # fmt: skip
    assert cli(*args).exit_code == 0
    runner = out / "omni_model_runner.py"
    text = runner.read_text()
    call = "        super().__init__(*args, **kwargs)\n"
    assert text.count(call) == 1
    seeded = text.replace(
        call,
        call + "        self.input_buffers = InputBuffers(max_num_reqs=1, max_num_tokens=1, "
        "device=self.device)\n",
    ).replace(
        "\nimport torch\n",
        "\nimport torch\nfrom vllm.v1.worker.gpu.input_batch import InputBuffers\n",
        1,
    )
    runner.write_text(seeded)
    verified = cli("--cache-dir", cache_dir, "verify", "--generated", out)
    assert verified.exit_code == 1
    line = next(n for n, ln in enumerate(seeded.splitlines(), 1) if "= InputBuffers(" in ln)
    (found,) = [ln for ln in verified.stdout.splitlines() if ": OP332 " in ln]
    assert (
        found.startswith(f"{out / 'omni_model_runner.py'}:{line}:")
        or f"omni_model_runner.py:{line}:" in found
    )
    assert "AscendInputBuffers" in found and "NPUModelRunner.__init__" in found
    reasons = runtime.unresolved(out)
    assert any("verify problems" in r and "OP332" in r for r in reasons), reasons


def test_the_bypass_seeded_into_omnis_sources_fails_the_report(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """A class of a runner module built on DefaultModelState cannot be rebased there."""
    texts = inputs.load(SETTINGS, cache_dir).omni_texts
    assert texts is not None
    root = tmp_path / "omni"
    for member, text in texts.items():
        (root / member).parent.mkdir(parents=True, exist_ok=True)
        (root / member).write_text(text)
    runner = root / "vllm_omni/worker_v2/omni_model_runner.py"
    runner.write_text(
        runner.read_text()
        + "\n\nfrom vllm.v1.worker.gpu.model_states.default import DefaultModelState\n\n\n"
        + "class SeededState(DefaultModelState):\n    pass\n"
    )
    pinned = ("--upstream", "vllm-ascend==0.30.0rc2", "--vllm-base", "vllm==0.30.0",
              "--vllm", "vllm==0.30.0", "--v2-allow", ALLOW)  # fmt: skip
    seeded = cli("--cache-dir", cache_dir, "v2-report", root, *pinned)
    assert seeded.exit_code == 1
    errors = [ln for ln in seeded.stdout.splitlines() if ": OP330 " in ln and "not rebased" in ln]
    assert len(errors) == 1 and "SeededState is built on DefaultModelState" in errors[0]
    assert "runner module" in errors[0]
    clean = cli.loud("--cache-dir", cache_dir, "v2-report", "vllm-omni==0.30.0", *pinned)
    assert clean.exit_code == 0, clean.stdout
    assert "; 0 left unresolved" in clean.stderr


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


# --- what a vLLM-Omni pull request must pass ------------------------------------------------

#: The newest vLLM-Omni release with an sdist: 0.30.0 ships a wheel only, which holds no
#: pyproject.toml. Its ``[tool.ruff]`` (120 columns; E, W, F, I, N, UP) is the one vLLM-Omni's
#: CI runs on its main branch too, less a banned import of librosa.
RUFF_SDIST = "vllm_omni-0.20.0rc1.tar.gz"


def _vllm_omni_pyproject(cache_dir: Path) -> str:
    """vLLM-Omni's pyproject.toml, from its sdist (downloaded once into the cache)."""
    folder = cache_dir / "archives" / "vllm-omni-0.20.0rc1-sdist"
    archive = folder / RUFF_SDIST
    if not archive.is_file():
        config = index.pip_config()
        (found,) = [a for a in index.artifacts("vllm-omni", config) if a.filename == RUFF_SDIST]
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{RUFF_SDIST}.part"
        with partial.open("wb") as into:
            index.download(found, into, config)  # checked against the index's sha256
        partial.replace(archive)
    with tarfile.open(archive) as tar:
        member = tar.extractfile("vllm_omni-0.20.0rc1/pyproject.toml")
        assert member is not None
        return member.read().decode("utf-8")


def test_the_generated_modules_pass_vllm_omnis_ruff(
    composed: pipeline.Result, cache_dir: Path, tmp_path: Path
) -> None:
    """In vLLM-Omni 0.30.0's package, where a pull request would put them, with its rules."""
    pyproject = _vllm_omni_pyproject(cache_dir)
    assert "[tool.ruff]" in pyproject and "line-length = 120" in pyproject
    root = tmp_path / "vllm-omni"
    shutil.copytree(cache_dir / "src" / "vllm-omni-0.30.0" / "vllm_omni", root / "vllm_omni")
    (root / "pyproject.toml").write_text(pyproject)
    names = []
    for name, data in sorted(composed.files.items()):
        if name.endswith(".py"):
            (root / "vllm_omni/worker_v2" / name).write_bytes(data)
            names.append(f"vllm_omni/worker_v2/{name}")
    assert len(names) == 4
    assert ruff_findings(root, names) == ""


def test_the_mtp_capture_runs_inside_vllm_ascends_communicator_switch(
    composed: pipeline.Result,
) -> None:
    """omni captures its MTP graphs after super().capture_model() returned: vLLM's
    graph_capture there would assert a CUDA or XPU communicator with TP, DP or PP > 1."""
    text = composed.files[STATE].decode()
    tree = ast.parse(text)
    assert list(capture.unswitched(tree)) == []
    (method,) = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "capture_mtp_graphs"
    ]
    items = [
        ast.unparse(i.context_expr)
        for n in ast.walk(method)
        if isinstance(n, ast.With)
        for i in n.items
    ]
    assert items[:3] == [
        "torch.inference_mode()",
        "communicator_switch()",
        "graph_capture(device=self.device)",
    ]
    switches = [t for t in checks.tags(text) if t[1] == "communicator-switch"]
    assert len(switches) == 1 and "vllm_ascend/worker/v2/utils.py:" in switches[0][2]
    assert not [
        f for f in composed.findings if f.code is Code.OP331 and f.severity is Severity.ERROR
    ]
