"""The GPU replay's provenance judge (bench/gpu_replay.py) on tiny synthetic methods: a
statement that differs from omni M counts against a tool only where vLLM's history does
not explain it."""

from __future__ import annotations

from textwrap import dedent

import pytest

from bench.gpu_replay import (
    TOKEN,
    Evidence,
    GpuHistory,
    Judged,
    Step,
    class_keys,
    code_keys,
    conflict_code,
    extracted,
    judge,
    judge_method,
    merge3,
    run_step,
)
from omni_port import api
from omni_port.api.run import Given
from omni_port.model import CONFLICT_CLOSE, CONFLICT_LINE, CONFLICT_OPEN
from omni_port.pyast import fields
from omni_port.sources.textio import decode
from omni_port.sources.upstream import default_cache

# vLLM's method in N's pair: run a batch.
BASE = ("x = prepare(batch)", "y = run(x)", "return y")


def evidence(**given: object) -> Evidence:
    """A method whose omni N and omni M are vLLM's method with omni's ``record(y)``."""
    fields: dict[str, object] = {
        "truth": ("x = prepare(batch)", "y = run(x)", "record(y)", "return y"),
        "old": ("x = prepare(batch)", "y = run(x)", "record(y)", "return y"),
        "target": BASE,
        "revisions": frozenset(BASE),
    }
    fields.update(given)
    return Evidence(**fields)  # type: ignore[arg-type]


def outcomes(output: tuple[str, ...], item: Evidence) -> dict[str, int]:
    judged = Judged()
    judge_method("m", output, item, judged)
    return {k: v for k, v in judged.counts.items() if v}


def test_same_as_omni_m_is_exact() -> None:
    item = evidence()
    assert outcomes(item.truth, item) == {"exact": 4}


def test_a_vllm_revisions_text_omni_m_lacks_is_judged_correct() -> None:
    # vLLM M validates the batch; omni M lags and does not: the tool that follows is right.
    new = "validate(batch)"
    item = evidence(target=(*BASE, new), revisions=frozenset((*BASE, new)))
    output = ("x = prepare(batch)", new, "y = run(x)", "record(y)", "return y")
    assert outcomes(output, item) == {"exact": 4, "judged": 1}


def test_text_no_revision_holds_is_wrong_and_a_lost_omni_edit_too() -> None:
    item = evidence()
    output = ("x = prepare(batch)", "y = run(x)", "record(x)", "return y")
    # ``record(x)`` nobody wrote; omni's ``record(y)`` lost.
    assert outcomes(output, item) == {"exact": 3, "wrong": 2}


def test_an_older_releases_text_is_a_lag_not_wrong() -> None:
    # omni M still has ``x = prepare(batch, 1)``, which only a release before N's pair had.
    old_text = "x = prepare(batch, 1)"
    truth = (old_text, "y = run(x)", "record(y)", "return y")
    item = evidence(truth=truth, old=truth, older=frozenset({old_text}))
    output = ("x = prepare(batch)", "y = run(x)", "record(y)", "return y")
    assert outcomes(output, item) == {"exact": 3, "judged": 1, "lag": 1}


def test_what_omni_m_changed_on_its_own_counts_for_nobody() -> None:
    # omni M dropped ``record(y)`` and added ``audit(y)``: no tool could know.
    item = evidence(truth=("x = prepare(batch)", "y = run(x)", "audit(y)", "return y"))
    output = evidence().old
    assert outcomes(output, item) == {"exact": 3, "changed": 2}


def test_a_conflict_holding_omni_ms_statement_is_flagged() -> None:
    item = evidence(flagged=frozenset({"record(y)"}))
    output = BASE
    assert outcomes(output, item) == {"exact": 3, "flagged": 1}


def test_a_statement_run_more_often_than_anyone_runs_it_is_duplicated() -> None:
    item = evidence()
    output = ("x = prepare(batch)", "y = run(x)", "record(y)", "record(y)", "return y")
    assert outcomes(output, item) == {"exact": 4, "duplicated": 1}


def test_omnis_edit_merged_with_vllms_later_edit_of_the_statement_is_judged_correct() -> None:
    # omni N: ``y = run(x, omni=True)``; vLLM M: ``y = run(x, stream=s)``; the tool writes
    # both; omni M kept omni N's statement (it lags vLLM).
    ours, theirs = "y = run(x, omni=True)", "y = run(x, stream=s)"
    truth = ("x = prepare(batch)", ours, "return y")
    revisions = frozenset(("x = prepare(batch)", "y = run(x)", theirs, "return y"))
    item = evidence(truth=truth, old=truth, target=(), revisions=revisions)
    output = ("x = prepare(batch)", "y = run(x, omni=True, stream=s)", "return y")
    assert outcomes(output, item) == {"exact": 2, "judged": 2}
    # The same text with omni's edit lost is no merge.
    lost = ("x = prepare(batch)", "y = run(x, stream=s, other=1)", "return y")
    assert outcomes(lost, item) == {"exact": 2, "wrong": 2}


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        pytest.param("f(a)", "f(a, b)", "g(a)", "g(a, b)", id="apart"),
        pytest.param("f(a)", "f(b)", "f(c)", None, id="same-token"),
        pytest.param("x = f(a)", "x = f(a)", "x = f(a, c)", "x = f(a, c)", id="one-side"),
        pytest.param("f(x)", "f(x, o=1)", "f(x, s=2)", "f(x, o=1, s=2)", id="both-append"),
    ],
)
def test_merge3(base: str, ours: str, theirs: str, merged: str | None) -> None:
    assert merge3(base, ours, theirs) == (TOKEN.findall(merged) if merged else None)


def test_a_method_the_output_lacks_has_none_of_its_statements() -> None:
    method = ("runner.py", "OmniRunner", "execute")
    judged = judge({}, {method: evidence()})
    assert judged.statements == 4
    assert judged.counts["wrong"] == 1  # omni's edit lost
    assert judged.counts["judged"] == 3  # vLLM's statements: the output has other text


def test_class_keys_reads_every_method_of_every_class() -> None:
    text = dedent(
        """\
        class A:
            def f(self):
                if x:
                    y = 1  # note
        class B:
            def g(self):
                return 2
        """
    )
    assert class_keys(text) == {("", "A", "f"): ["if x:", "y = 1"], ("", "B", "g"): ["return 2"]}
    assert class_keys("class A(:\n") == {}


def test_code_keys_reads_a_hunk_that_is_no_whole_statement_line_by_line() -> None:
    assert code_keys("    y = run(x)\n    record(y)\n") == {"y = run(x)", "record(y)"}
    # A merge hunk cut inside a compound statement: its header and its own lines.
    hunk = "    if ready:\n        record(y)\n  else:\n"
    assert code_keys(hunk) == {"if ready:", "record(y)"}


def test_conflict_code_is_the_block_each_conflict_region_holds() -> None:
    text = "\n".join(
        [
            "        y = run(x)",
            f"        {CONFLICT_OPEN} block-01",
            "        # why.",
            f"        {CONFLICT_LINE}record(y)",
            f"        {CONFLICT_LINE}if y:",
            f"        {CONFLICT_LINE}    audit(y)",
            f"        {CONFLICT_CLOSE}",
            "        return y",
        ]
    )
    assert conflict_code(text) == ["record(y)\nif y:\n    audit(y)"]
    assert code_keys(conflict_code(text)[0]) == {"record(y)", "if y:", "audit(y)"}


def test_a_conflict_holding_a_docstring_flags_the_method_s_docstring() -> None:
    # The conflict writes the block as the module has it: the docstring's own lines keep
    # the method's indentation, which is part of the docstring's text (and of its key).
    method = (
        'class C:\n    def f(self):\n        """\n        Warm up.\n        """\n        return 1\n'
    )
    text = "\n".join(
        [
            f"        {CONFLICT_OPEN} block-01",
            "        # why.",
            f'        {CONFLICT_LINE}"""',
            f"        {CONFLICT_LINE}        Warm up.",
            f'        {CONFLICT_LINE}        """',
            f"        {CONFLICT_CLOSE}",
        ]
    )
    docstring = class_keys(method)[("", "C", "f")][0]
    assert code_keys(conflict_code(text)[0]) == {docstring}


@pytest.mark.real
def test_real_step_omni_port_beats_merge_file_and_runs_nothing_twice() -> None:
    # vllm-omni 0.28.0 -> 0.30.0 (paired with vLLM 0.28.0 and 0.32.0): the three
    # contenders are judged on the same statements of omni M; omni-port writes more of
    # them right (exact or judged correct) than git merge-file, with fewer wrong and none
    # run twice (2026-12-06: 640 against 600, 2 wrong against 27).
    history = GpuHistory(default_cache())
    step = Step("0.28.0", "0.30.0", history.pair("0.28.0")[0], history.pair("0.30.0")[0])
    results = run_step(history, step)
    tool, merge = results["omni-port"], results["git merge-file"]
    assert tool.statements == merge.statements == results["omni N unchanged"].statements > 500
    right = {name: r.counts["exact"] + r.counts["judged"] for name, r in results.items()}
    assert right["omni-port"] > right["git merge-file"]
    assert tool.counts["wrong"] < merge.counts["wrong"]
    assert tool.counts["duplicated"] == 0


@pytest.mark.real
def test_real_step_fills_the_records_fields_in_the_order_the_output_defines() -> None:
    # vllm-omni 0.14.0 -> 0.16.0 (vLLM 0.14.1 -> 0.16.0): omni appended multimodal_outputs
    # to ExecuteModelState(...) and its unpackings, vLLM 0.15.0 appended slot_mappings; the
    # output's NamedTuple holds omni's field first, so every construction and unpacking
    # does too (main wrote upstream's first: 3 wrong, the call filling each field with the
    # other's value). `resolve`'s sync of the generation runner alone writes it the same.
    history = GpuHistory(default_cache())
    step = Step("0.14.0", "0.16.0", history.pair("0.14.0")[0], history.pair("0.16.0")[0])
    patches = extracted(history, step.old, step.old_base)
    target = history.upstream(step.new_base)
    target, _ = api.inputs.with_history(target, history.settings, patches)
    target = api.inputs.with_members(target, patches)
    full = api.sync_patches(patches, target, given=Given()).result
    texts = {name: decode(data, name).text for name, data in full.files.items()}
    runners = [text for name, text in texts.items() if name.endswith(".py")]
    known = fields.defined(runners)
    assert dict(known)["ExecuteModelState"][-2:] == ("multimodal_outputs", "slot_mappings")
    assert not any(fields.misordered(text, known) for text in runners)
    name = "gpu_generation_model_runner.py"
    alone = api.sync_patches(patches, target, given=Given(only=frozenset({name}))).result
    assert decode(alone.files[name], name).text == texts[name]
    assert run_step(history, step)["omni-port"].counts["wrong"] == 0


def test_a_second_copy_omni_m_added_is_ms_own_not_a_loss() -> None:
    # omni M records twice; omni N and the output once: nothing of N was lost.
    truth = ("x = prepare(batch)", "y = run(x)", "record(y)", "record(y)", "return y")
    item = evidence(truth=truth)
    assert outcomes(item.old, item) == {"exact": 4, "changed": 1}
