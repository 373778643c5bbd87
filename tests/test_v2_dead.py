"""Code of a copied NPU wrapper the V2 runners' refusals make impossible (OP336).

Synthetic texts written for these tests: a vLLM runner and an NPU runner whose ``__init__``
assign the attributes the refusals fix, and a generated module whose runner refuses
pipeline and prefill context parallelism and holds a copied NPU wrapper (it calls omni's
body, ``_omni_sample_tokens``) with PCP, spec-PP, draft-restore and DSpark steps.
"""

from __future__ import annotations

import ast

from omni_port.model import Code, Severity
from omni_port.v2 import checks, dead

VLLM = """\
class GPUModelRunner:
    def __init__(self, vllm_config):
        self.is_last_pp_rank = get_pp_group().is_last_rank
        self.pcp_manager = pcp.maybe_build_pcp_manager(vllm_config, None)
"""
NPU = """\
class NPUModelRunner(GPUModelRunner):
    def __init__(self, vllm_config):
        spec_pp_support = resolve_spec_pp_support(vllm_config)
        self.use_spec_pp = spec_pp_support is not None and use_legacy_spec_pp()

    def _restore_draft(self):
        \"\"\"Restore target states consumed by a replicated PCP draft.\"\"\"
        pcp_manager = self.pcp_manager
        if pcp_manager is None or not self.is_last_pp_rank:
            return
        pcp_manager.restore()

    def _send_draft_kv(self, scheduler_output):
        if not getattr(self, "dspark_layers", ()) or not self.is_last_pp_rank:
            return
        send(scheduler_output)
"""
REFUSALS = """\
    def _validate_parallel_support(self):
        parallel_config = self.vllm_config.parallel_config
        if parallel_config.pipeline_parallel_size > 1:
            raise NotImplementedError("no PP")
        if getattr(parallel_config, "prefill_context_parallel_size", 1) > 1:
            raise NotImplementedError("no PCP")

"""
WRAPPER = """\
    def sample_tokens(self, grammar_output=None):
        pcp_manager = self.pcp_manager
        if pcp_manager is not None and not self.is_last_pp_rank:
            self.restore(pcp_manager)
        self._restore_draft()
        self._send_draft_kv(grammar_output)
        output = self._omni_sample_tokens(grammar_output)
        if self.use_spec_pp and self.is_last_pp_rank:
            self.broadcast()
        if self.is_last_pp_rank:
            self.publish(output)
        else:
            self.relay(output)
        if grammar_output is not None:
            self.grammar(output)
        return output

    def _omni_sample_tokens(self, grammar_output=None):
        if not self.is_last_pp_rank:
            return None
        return grammar_output
"""
GEN = "class OmniGenerationModelRunner(NPUModelRunner):\n" + REFUSALS + WRAPPER
SOURCES = {"vllm": VLLM, "npu": NPU}


def _found(text: str = GEN, sources: dict[str, str] = SOURCES) -> list[tuple[int, str]]:
    parsed = {"gen.py": ast.parse(text)}
    found = list(dead.findings(parsed, sources, "NPUModelRunner"))
    assert {(f.code, f.path, f.severity) for f in found} <= {(Code.OP336, "gen.py", Severity.NOTE)}
    return [(f.line, f.message.split(": ")[0]) for f in found]


def test_branches_and_helpers_the_refusals_make_impossible_are_notes() -> None:
    assert _found() == [
        (11, "`if pcp_manager is not None and (not self.is_last_pp_rank)`"),
        (13, "`self._restore_draft()` does nothing"),
        (16, "`if self.use_spec_pp and self.is_last_pp_rank`"),
        (18, "`if self.is_last_pp_rank`"),
    ]
    # DSpark's send depends on the KV-transfer configuration alone: undecided. omni's own
    # body is not a copied wrapper: not read.


def test_each_note_names_the_refusal_and_the_value_it_fixes() -> None:
    parsed = {"gen.py": ast.parse(GEN)}
    notes = {f.line: f.message for f in dead.findings(parsed, SOURCES, "NPUModelRunner")}
    assert "its body never runs: prefill_context_parallel_size > 1 is refused" in notes[11]
    assert "so self.pcp_manager is None" in notes[11]
    assert "its else branch never runs: pipeline_parallel_size > 1 is refused" in notes[18]
    assert "self.is_last_pp_rank is True" in notes[18]


def test_without_the_refusal_or_the_assignment_nothing_is_dead() -> None:
    no_pcp_refusal = GEN.replace('"prefill_context_parallel_size"', '"other_size"')
    # One pipeline stage still decides the first test (`not self.is_last_pp_rank`).
    assert [line for line, _ in _found(no_pcp_refusal)] == [11, 16, 18]
    other_vllm = {"vllm": VLLM.replace("get_pp_group().is_last_rank", "compute()"), "npu": NPU}
    assert [line for line, _ in _found(sources=other_vllm)] == [11, 13, 16]
    unrefused = "class OmniGenerationModelRunner(NPUModelRunner):\n" + WRAPPER
    assert _found(unrefused) == []


def test_verify_reports_them_with_the_other_v2_checks() -> None:
    against = checks.Against(NPU, "npu.py", "NPUModelRunner", VLLM, "vllm.py", {})
    found = [f for f in checks.check({"gen.py": GEN}, against) if f.code is Code.OP336]
    assert [f.line for f in found] == [11, 13, 16, 18]
