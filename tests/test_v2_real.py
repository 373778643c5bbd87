"""Model Runner V2 on real data: vLLM-Omni 0.30.0's worker_v2 runners composed with
vllm-ascend 0.26.0rc1's V2 ``NPUModelRunner``, on vLLM 0.26.0 (the release vllm-ascend
0.26.0rc1 runs on), omni's delta against vLLM 0.28.0 ... 0.31.0.

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

from omni_port.model import Code, Status
from omni_port.v2 import inputs, overrides, pipeline
from tests.conftest import Cli

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent
SEED_PAGE = Path(
    os.environ.get(
        "OMNI_PORT_SEED_PAGE", ROOT.parent / "shared" / "seeds" / "002_fc8189ddcbbb0468.txt"
    )
)
SETTINGS = inputs.Settings(source="vllm-omni==0.30.0", upstream="vllm-ascend==0.26.0rc1")
GEN = "omni_generation_model_runner.py"
RUNNER = "OmniGenerationModelRunner"

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
    assert not _calls(sample) & SAMPLING, "no token sampling"
    outputs = [
        n
        for n in ast.walk(sample)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "OmniModelRunnerOutput"
    ]
    assert outputs and all("pooler_output" in {k.arg for k in o.keywords} for o in outputs)
    sampled = {
        ast.unparse(k.value) for o in outputs for k in o.keywords if k.arg == "sampled_token_ids"
    }
    assert sampled and all(_empty_lists(sample, name) for name in sampled), "no token is sampled"
    assert "_build_pooler_output" in _calls(sample)
    reads = {n.attr for n in ast.walk(sample) if isinstance(n, ast.Attribute)}
    assert "multimodal_outputs" in reads
    builder = _method(cls, "_build_pooler_output")
    assert "multimodal_outputs" in {
        n.attr for n in ast.walk(builder) if isinstance(n, ast.Attribute)
    }


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


# --- the override report and the composition ------------------------------------------------


def test_the_override_report_on_the_real_pair(composed: pipeline.Result) -> None:
    report = composed.report
    assert sorted(r.runner for r in report.runners) == [
        "OmniARModelRunner", "OmniGPUModelRunner", RUNNER,
    ]  # fmt: skip
    both = {
        (r.runner, row.name): row
        for r in report.runners
        for row in r.rows
        if row.who is overrides.Who.BOTH
    }
    for runner in ("OmniARModelRunner", "OmniGPUModelRunner", RUNNER):
        init = both.pop((runner, "__init__"))
        assert init.omni is not None and init.omni.delegates, "omni's __init__ reaches the NPU's"
    profile = both.pop((RUNNER, "profile_run"))
    assert profile.omni is not None and profile.npu is not None
    assert not profile.omni.delegates and profile.npu.delegates
    assert both == {}, "no other method does both sides override"
    collisions = [f for f in report.findings if f.code is Code.OP320]
    assert collisions == [] == [row for r in report.runners for row in r.rows if row.collision]
    (bypass,) = [f for f in report.findings if f.code is Code.OP321]
    assert "sample_tokens" in bypass.message and "postprocess_sampled" in bypass.message


def test_omni_calls_vllm_api_the_paired_vllm_lacks(composed: pipeline.Result) -> None:
    """vLLM-Omni 0.30.0 is written against vLLM 0.28+; vllm-ascend 0.26.0rc1 runs on 0.26.0."""
    calls = [f for f in composed.report.findings if f.code is Code.OP322]
    arity = {
        (Path(f.path).name, f.message.split(" calls ")[0])
        for f in calls
        if "NPUModelRunner.prepare_inputs" in f.message and "the call passes 3" in f.message
    }
    assert arity == {
        ("omni_model_runner.py", "OmniGPUModelRunner.execute_model"),
        (GEN, "OmniGenerationModelRunner.execute_model"),
    }
    missing = {f.message.split("self.")[1].split("(")[0] for f in calls if "defines" in f.message}
    assert {"gather_batch_req_state", "_merge_ec_connector_no_forward"} <= missing


def test_the_composition_on_the_real_pair(composed: pipeline.Result) -> None:
    for name, data in composed.files.items():
        if name.endswith(".py"):
            compile(data.decode("utf-8"), name, "exec", dont_inherit=True)
    conflicts = [p for p in composed.placements if p.status is Status.CONFLICT]
    assert [(p.module, p.owner, p.member, p.kind) for p in conflicts] == [
        (GEN, RUNNER, "profile_run", pipeline.SHADOWED),
    ]
    assert composed.composition.spliced == ()


def test_v2_sync_and_verify_on_the_real_pair(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "v2"
    synced = cli(
        "--cache-dir", cache_dir, "v2-sync", "vllm-omni==0.30.0", "--upstream",
        "vllm-ascend==0.26.0rc1", "--generated", out,
    )  # fmt: skip
    assert synced.exit_code == 1, "the shadowed profile_run is a conflict until allowed"
    report = tmp_path / "verify.json"
    verified = cli("--cache-dir", cache_dir, "verify", "--generated", out, "--json", report)
    errors = [f for f in json.loads(report.read_text())["findings"] if f["severity"] == "error"]
    # verify reads vLLM too (0.26.0, the release vllm-ascend 0.26.0rc1 pairs with) and checks
    # calls against their definitions. vllm-omni 0.30.0's V2 code was written for vLLM 0.30
    # and a newer vllm-ascend, so this pair has true misfits; one pins the check: vllm-ascend
    # 0.26.0rc1 overrides prepare_inputs(scheduler_output, batch_desc), the composed runner
    # passes three arguments.
    assert {f["code"] for f in errors} <= {"OP505", "OP510"}, errors
    assert any(
        f["code"] == "OP510" and "`self.prepare_inputs(...)`" in f["message"] for f in errors
    )
    assert verified.exit_code == 1


def test_comment_notes_only_for_methods_rebuilt_from_the_npu_override(
    cache_dir: Path, composed: pipeline.Result
) -> None:
    """Omni's copies of vLLM methods are carried verbatim here, comments and all."""
    delta = pipeline.delta(inputs.load(SETTINGS, cache_dir))
    assert [f for f in delta.findings if f.code is Code.OP902], "gpu_delta notes comment drift"
    assert not [f for f in composed.findings if f.code is Code.OP902]
