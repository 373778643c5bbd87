"""The NPU worker's warm-up a generation V2 worker keeps (with the model steps skipped, see
test_runtime_v2.py): read from vllm-ascend's worker, and OP334 when it cannot be kept."""

from __future__ import annotations

import ast
from dataclasses import replace
from textwrap import dedent

from omni_port.model import Code, Severity
from omni_port.v2 import ascend, checks

WORKER = dedent(
    """\
    class NPUWorker:
        def compile_or_warm_up_model(self):
            for size in sorted(sizes, reverse=True):
                self.model_runner._dummy_run(size)
            kernel_warmup(self)
            memory = self.model_runner.capture_model()
            usage = self.model_runner.model_memory_usage
            set_random_seed(self.model_config.seed)
    """
)
GENERATED = {checks.GENERATION_MODULE: ast.parse("class OmniGenerationModelRunner:\n    pass\n")}


def _found(patches: ascend.AscendPatches) -> list[tuple[Code, Severity]]:
    return [(f.code, f.severity) for f in checks.warm_up_findings(GENERATED, patches)]


def test_the_runner_methods_the_npu_warm_up_calls_are_read_in_order() -> None:
    found = ascend._warm_up({ascend.WORKER[0]: WORKER})
    assert found == ascend.WarmUp(("_dummy_run", "capture_model"), ascend.WORKER[0], 2)


def test_only_the_model_steps_the_switch_skips_is_no_finding() -> None:
    warm_up = ascend._warm_up({ascend.WORKER[0]: WORKER})
    assert _found(ascend.AscendPatches(warm_up=warm_up)) == []


def test_another_runner_call_in_the_npu_warm_up_is_an_error() -> None:
    text = WORKER.replace("kernel_warmup(self)", "self.model_runner.profile_prefill(8)")
    warm_up = ascend._warm_up({ascend.WORKER[0]: text})
    assert _found(ascend.AscendPatches(warm_up=warm_up)) == [(Code.OP334, Severity.ERROR)]


def test_an_unread_warm_up_is_a_note_and_no_generation_runner_needs_none() -> None:
    assert _found(ascend.AscendPatches()) == [(Code.OP334, Severity.NOTE)]
    warm_up = ascend.WarmUp(("profile_prefill",), ascend.WORKER[0], 2)
    patches = replace(ascend.AscendPatches(), warm_up=warm_up)
    assert list(checks.warm_up_findings({}, patches)) == []
