"""What vllm-ascend's V2 runner installs in place of vLLM's objects (``NPUModelRunner.__init__``
rebuilding attributes with its classes; a graph-manager wrapper setting a vLLM global to its
factory), and OP332 where generated code builds vLLM's class instead. Inline sources."""

from __future__ import annotations

import ast
from textwrap import dedent

from omni_port.model import Code, Severity
from omni_port.v2 import instances

BASE_PATH = "vllm/v1/worker/gpu/model_runner.py"
NPU_PATH = "vllm_ascend/worker/v2/model_runner.py"

BASE = dedent(
    """\
    from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager
    from vllm.v1.worker.gpu.input_batch import InputBuffers
    from vllm.v1.worker.gpu.states import RequestState

    class GPUModelRunner:
        def __init__(self, vllm_config, device):
            self.req_states = RequestState(device=device)
            self.input_buffers = InputBuffers(device=device)
            self.device = device

        def initialize_kv_cache(self):
            self.cudagraph_manager = ModelCudaGraphManager(self.device)
    """
)
NPU = dedent(
    """\
    from contextlib import contextmanager
    from vllm.v1.worker.gpu import model_runner as vllm_model_runner
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner
    from vllm_ascend.worker.v2.aclgraph_utils import ModelAclGraphManager
    from vllm_ascend.worker.v2.input_batch import AscendInputBuffers
    from vllm_ascend.worker.v2.states import AscendRequestState

    class NPUModelRunner(GPUModelRunner):
        def __init__(self, vllm_config, device):
            super().__init__(vllm_config, device)
            del self.req_states
            self.req_states: AscendRequestState = AscendRequestState(device=device)
            self.input_buffers = AscendInputBuffers(device=device)

        def initialize_kv_cache(self):
            with graph_manager_wrapper(self):
                super().initialize_kv_cache()

    @contextmanager
    def graph_manager_wrapper(model_runner):
        original = vllm_model_runner.ModelCudaGraphManager

        def factory(device):
            return ModelAclGraphManager(device, model_runner)

        try:
            vllm_model_runner.ModelCudaGraphManager = factory
            yield
        finally:
            vllm_model_runner.ModelCudaGraphManager = original
    """
)

FOUND = instances.installed(NPU, NPU_PATH, "NPUModelRunner", BASE, BASE_PATH, "GPUModelRunner")


def test_what_the_npu_runner_installs_is_read_from_both_runners() -> None:
    assert {(i.original, i.replacement) for i in FOUND} == {
        (
            "vllm.v1.worker.gpu.states.RequestState",
            "vllm_ascend.worker.v2.states.AscendRequestState",
        ),
        (
            "vllm.v1.worker.gpu.input_batch.InputBuffers",
            "vllm_ascend.worker.v2.input_batch.AscendInputBuffers",
        ),
        (
            "vllm.v1.worker.gpu.cudagraph_utils.ModelCudaGraphManager",
            "vllm_ascend.worker.v2.aclgraph_utils.ModelAclGraphManager",
        ),
    }


def _found(code: str) -> list[tuple[Code, int, int, Severity]]:
    found = instances.findings({"omni_model_runner.py": ast.parse(dedent(code))}, FOUND)
    return [(f.code, f.line, f.col, f.severity) for f in found]


def test_vllms_input_buffers_in_omnis_init_is_an_error() -> None:
    seeded = """\
        from vllm.v1.worker.gpu.input_batch import InputBuffers
        from vllm_ascend.worker.v2.model_runner import NPUModelRunner

        class OmniGPUModelRunner(NPUModelRunner):
            def __init__(self, *args):
                super().__init__(*args)
                self.input_buffers = InputBuffers(device=self.device)
        """
    assert _found(seeded) == [(Code.OP332, 7, 30, Severity.ERROR)]
    kept = seeded.replace("InputBuffers", "AscendInputBuffers").replace(
        "vllm.v1.worker.gpu.input_batch", "vllm_ascend.worker.v2.input_batch"
    )
    assert _found(kept) == []


def test_vllms_graph_manager_built_directly_or_through_the_global_is_an_error() -> None:
    seeded = """\
        from vllm.v1.worker.gpu import model_runner
        from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager

        def build(device):
            return ModelCudaGraphManager(device), model_runner.ModelCudaGraphManager(device)
        """
    assert [f[:2] for f in _found(seeded)] == [(Code.OP332, 5), (Code.OP332, 5)]


def test_an_annotation_or_an_import_alone_is_no_finding() -> None:
    code = """\
        from vllm.v1.worker.gpu.states import RequestState

        def prepare(req_states: RequestState) -> None:
            return isinstance(req_states, RequestState)
        """
    assert _found(code) == []
