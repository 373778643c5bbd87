"""Conditions of reviewed V2 decisions (``[requires: NAME]`` at the end of an allow-list
entry's reason): checked by verify where the generated code shows them (OP333), kept in the
lock for the runtime switch, which checks a stage's configuration (test_runtime_v2.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

from omni_port.gpu.parity import AllowEntry, parse_allow_list
from omni_port.model import Code, Placement, RegionKind, Rule, Severity, Status
from omni_port.patches import lockfile
from omni_port.v2 import checks, conditions
from omni_port.v2.conditions import Condition

ROOT = Path(__file__).resolve().parent.parent

REFUSES_PP = dedent(
    """\
    class OmniGPUModelRunner:
        def _validate_parallel_support(self):
            parallel_config = self.vllm_config.parallel_config
            if parallel_config.pipeline_parallel_size > 1:
                raise NotImplementedError("no pipeline parallel")
    """
)


def _entry(reason: str) -> AllowEntry:
    return AllowEntry("m.py", "C", "sample_tokens", "", reason, "allow.txt", 7)


def _found(reason: str, code: str) -> list[tuple[Code, str, int, Severity]]:
    found = checks.condition_findings({"m.py": ast.parse(code)}, [_entry(reason)])
    return [(f.code, f.path, f.line, f.severity) for f in found]


def test_a_condition_the_generated_code_keeps_is_no_finding() -> None:
    assert _found("every rank is the last [requires: no-pipeline-parallel]", REFUSES_PP) == []


def test_a_condition_the_generated_code_breaks_is_an_error_at_the_entry() -> None:
    gone = REFUSES_PP.replace('raise NotImplementedError("no pipeline parallel")', "pass")
    assert _found("every rank is the last [requires: no-pipeline-parallel]", gone) == [
        (Code.OP333, "allow.txt", 7, Severity.ERROR)
    ]


def test_an_unknown_condition_is_an_error_at_the_entry() -> None:
    assert _found("reason [requires: no-pipeline-parallel, no-such-thing]", REFUSES_PP) == [
        (Code.OP333, "allow.txt", 7, Severity.ERROR)
    ]


def test_a_stage_setting_is_left_to_the_runtime_switch() -> None:
    assert _found("frees nothing more [requires: no-sparse-kv-offload]", "x = 1\n") == []


def test_the_conditions_of_a_reason_and_of_a_lock_row() -> None:
    reason = "r [requires: no-sparse-kv-offload, no-pipeline-parallel] (v2-allow.txt:3)"
    assert conditions.required([reason]) == {
        Condition.NO_SPARSE_KV_OFFLOAD,
        Condition.NO_PIPELINE_PARALLEL,
    }
    assert conditions.required(["no brackets at the end"]) == frozenset()
    allowed = Placement(
        "m.C.f", "m.py", "C", "f", RegionKind.OVERRIDE, False, Status.CARRIED, 1.0,
        reason=reason, decided_by=(Rule.ALLOWED,),
    )  # fmt: skip
    (row,) = lockfile.rows([allowed])
    assert row["reason"] == reason, "the lock keeps a reviewed decision's reason"
    assert conditions.in_rows([row]) == conditions.required([reason])


def test_this_repositorys_entries_name_the_conditions_their_reasons_state() -> None:
    """The entries whose reason rests on omni refusing pipeline parallelism, or on sparse KV
    offload being off, require it, so a gate checks it."""
    entries = parse_allow_list((ROOT / "v2-allow.txt").read_text(), "v2-allow.txt")
    for entry in entries:
        needed = set()
        if "pipeline_parallel_size > 1" in entry.reason:
            needed.add(Condition.NO_PIPELINE_PARALLEL)
        if "sparse_kv_offload_config" in entry.reason:
            needed.add(Condition.NO_SPARSE_KV_OFFLOAD)
        assert conditions.required([entry.reason]) == needed, entry
        assert not conditions.unknown(entry.reason), entry
