"""Where omni's copy of a vLLM method lags the vLLM release the NPU runner runs on (OP335).

Synthetic vLLM releases written for these tests: 0.28.0 (what omni copied), 0.29.0 (adds
the DCP step) and 0.30.0 (the pinned release: adds ``finish_forward`` and changes
``pre_forward``'s arguments); omni's copy of 0.28.0 drops one of its statements (omni's
edit, not a lag) and has already taken one of 0.30.0's.
"""

from __future__ import annotations

from omni_port.gpu import vllm_delta
from omni_port.model import Code, Severity, Upstream
from omni_port.pyast.parser import parse
from omni_port.sources.textio import decode
from omni_port.v2 import lag

_HEAD = "class GPUModelRunner:\n    def execute_model(self, scheduler_output):\n"
V28 = _HEAD + (
    "        input_batch = self.prepare_inputs(scheduler_output)\n"
    "        self.kv_connector.pre_forward(scheduler_output)\n"
    "        self.dp_sync(input_batch)\n"
    "        with set_forward_context(input_batch):\n"
    "            hidden = self.model(input_batch)\n"
    "        self.execute_model_state = (input_batch, hidden)\n"
    "        return None\n"
)
V29 = V28.replace(
    "        self.kv_connector.pre_forward",
    "        input_batch.dcp_local_seq_lens = prepare_dcp(input_batch)\n"
    "        self.kv_connector.pre_forward",
)
V30 = V29.replace(
    "pre_forward(scheduler_output)", "pre_forward(scheduler_output=scheduler_output, ids=ids)"
).replace(
    "            hidden = self.model(input_batch)\n",
    "            hidden = self.model(input_batch)\n"
    "            self.kv_connector.finish_forward()\n"
    "        record_stats(input_batch)\n",
)
OMNI = (
    "class OmniGPUModelRunner(GPUModelRunner):\n"
    "    def execute_model(self, scheduler_output):\n"
    "        input_batch = self.prepare_inputs(scheduler_output)\n"
    "        self.kv_connector.pre_forward(scheduler_output)\n"
    "        with set_forward_context(input_batch):\n"
    "            hidden = self.model(input_batch)\n"
    "            hidden = self.omni_postprocess(hidden)\n"
    "        record_stats(input_batch)\n"
    "        self.execute_model_state = (input_batch, hidden)\n"
    "        return None\n"
)


def _vllm(version: str, text: str) -> Upstream:
    source = decode(text.encode(), f"vllm-{version}/model_runner.py")
    return Upstream(f"vllm=={version}", source.sha256, parse(source.text, source.path))


def _lags(pinned: str = "0.30.0") -> list[lag.Lag]:
    releases = {"0.30.0": V30, "0.28.0": V28, "0.29.0": V29}
    bases = {u.label: u for u in (_vllm(v, t) for v, t in releases.items())}
    omni = {"omni_model_runner.py": decode(OMNI.encode(), "omni_model_runner.py")}
    found = vllm_delta.gpu_delta(omni, bases, "vllm==0.30.0")
    return lag.lags(found, bases[f"vllm=={pinned}"], bases)


def test_steps_the_pinned_vllm_added_since_the_copy_are_notes_naming_the_releases() -> None:
    (found,) = _lags()
    assert (found.owner, found.member, found.copied_from) == (
        "OmniGPUModelRunner",
        "execute_model",
        "vllm==0.28.0",
    )
    # dp_sync is omni's deletion (0.28.0 had it); record_stats omni already has.
    assert [(s.key, s.line, s.since) for s in found.steps] == [
        ("input_batch.dcp_local_seq_lens = prepare_dcp(input_batch)", 4, "vllm==0.29.0"),
        (
            "self.kv_connector.pre_forward(scheduler_output=scheduler_output, ids=ids)",
            5,
            "vllm==0.30.0",
        ),
        ("self.kv_connector.finish_forward()", 9, "vllm==0.30.0"),
    ]
    notes = lag.findings([found])
    assert {(f.code, f.path, f.line, f.severity) for f in notes} == {
        (Code.OP335, "omni_model_runner.py", 2, Severity.NOTE)
    }
    assert "vllm==0.28.0's GPUModelRunner.execute_model" in notes[0].message
    assert "vllm==0.30.0's" in notes[0].message
    assert "since vllm==0.29.0" in notes[0].message
    assert "(vllm-0.30.0/model_runner.py:4)" in notes[0].message


def test_a_copy_of_the_pinned_release_lags_nothing() -> None:
    assert _lags("0.28.0") == []
