"""The `v2-report` and `v2-sync` commands, and the V2 tree in `sync` and `verify`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from omni_port import api
from omni_port.api import report as reporting
from omni_port.api import v2
from omni_port.api.model import Finding, Report, Severity
from omni_port.api.patches import Changes
from omni_port.api.report import finding_counts, shown
from omni_port.api.writing import keep_hand_edits
from omni_port.cli import (
    F,
    Options,
    discard_edits_option,
    generated_option,
    handle_errors,
    in_workspace,
    json_option,
    summary,
    write_options,
)
from omni_port.cli.files import Writing, write_files
from omni_port.cli.output import emit

if TYPE_CHECKING:
    from omni_port.api.v2 import Composed, Reviewed


def _source_options(command: F) -> F:
    for option in reversed(
        [
            click.argument("source", required=False),
            click.option(
                "--upstream",
                help="vllm-ascend whose V2 NPUModelRunner to compose with: vllm-ascend==X, a "
                "path, or 'installed' (default: `v2-upstream`, else `upstream`).",
            ),
            click.option(
                "--vllm-base",
                help="vLLM release the NPU runner runs on (vllm==X, a path or 'installed'; "
                "default: `v2-vllm-base`, else the release vllm-ascend pairs with).",
            ),
            click.option(
                "--vllm",
                "vllm",
                multiple=True,
                help="Candidate vLLM release of omni's per-method delta (repeat; the first is "
                "the target; default: `v2-vllm`, else the source release's major.minor and the "
                "minors around it).",
            ),
        ]
    ):
        command = option(command)
    return command


@dataclass(frozen=True, slots=True)
class V2Flags:
    """The flags of `v2-report` and `v2-sync`, as given (those of `v2-sync` only are
    unset for `v2-report`)."""

    source: str | None
    upstream: str | None
    vllm_base: str | None
    vllm: tuple[str, ...]
    allow: Path | None
    json_path: Path | None
    force_vllm_mismatch: bool = False
    generated: Path | None = None
    check: bool = False
    diff: bool = False
    discard_edits: bool = False


def _sources(options: Options, flags: V2Flags) -> v2.Sources:
    """The inputs the flags name, the configuration's where they name none."""
    allowed = str(flags.allow) if flags.allow is not None else None
    return v2.sources_of(
        options.config, flags.source, flags.upstream, flags.vllm_base, flags.vllm, allowed
    )


# --- v2-report ------------------------------------------------------------------------------


_ALLOW_HELP = (
    "Reviewed decisions, one per line, two spaces before the reason: "
    "'module.py:Class.method' keeps omni's override, ':npu_method' after it reviews an NPU "
    "override omni's method skips, ':statement prefix' leaves that NPU wrapper step out of "
    "the class's copy, 'module.py:Class.VllmClass' keeps a class on vLLM's class instead of "
    "vllm-ascend's substitute (default: `v2-allow`)."
)


@click.command("v2-report")
@_source_options
@click.option(
    "--v2-allow", "allow", type=click.Path(dir_okay=False, path_type=Path), help=_ALLOW_HELP
)
@json_option
@click.pass_obj
@handle_errors
def v2_report_command(options: Options, /, **given: Any) -> Report:
    """Who overrides each method when vLLM-Omni's V2 runners meet the NPU V2 runner.

    SOURCE is vLLM-Omni's worker_v2 runners: a release (vllm-omni==0.30.0), a checkout, a
    folder or a file (default: `v2-source`, else `source`). For every method of every omni
    V2 runner class, of NPUModelRunner and of vLLM's GPUModelRunner: omni, npu, both or
    neither; for both, which side calls the other through super(), and the rule v2-sync
    composes it by (=> RULE, or NOT COMPOSED). The same for each omni class built on a vLLM
    class vllm-ascend substitutes (OmniModelState on DefaultModelState, rebased onto
    AscendModelState). Every loss is an error unless v2-sync composes it or --v2-allow
    reviews it (then a note): collisions (OP320: both replace the method; OP323: the NPU
    override wraps super() and omni's replaces it), NPU overrides omni's replacement never
    calls (OP321), classes left on a substituted vLLM class (OP330); calls the composed
    runner cannot take (OP322) are errors. A vLLM mismatch (OP511, which v2-sync refuses) is
    a note. Exit 0 when nothing is left, 1 otherwise, 2 on bad input. With --json -,
    stdout carries the JSON document only.
    """
    flags = V2Flags(**given)
    json_path = flags.json_path
    loaded, reviewed = v2.report(_sources(options, flags), options.settings)
    counts = _report_counts(reviewed)
    findings = (*(loaded.pairing.findings() if loaded.pairing else ()), *reviewed.findings)
    outcome = Report(findings=findings, counts=counts)
    decided = {(c.owner, c.name): c for c in reviewed.composed}
    if json_path is None or str(json_path) != "-":
        text = "".join(
            _text_report(r, loaded.omni_label, loaded.npu.label, decided) for r in reviewed.reports
        )
        click.echo(text, nl=False)
    document = _json_report(reviewed.reports, findings, counts, decided)
    emit(outcome, json_path, document=document)
    summary(options, _report_summary(counts))
    return outcome


Decided = Mapping[tuple[str, str], "Composed"]


def _text_report(result: v2.OverrideReport, label: str, npu_label: str, decided: Decided) -> str:
    lines = []
    for runner in result.runners:
        chain = " < ".join(runner.chain)
        lines.append(
            f"{runner.module}: {chain} with {result.npu_class} ({npu_label}) on "
            f"{result.base_class} ({result.base_label}); omni from {label}"
        )
        for row in runner.rows:
            lines.append("  " + _row_text(row, _decision(row, decided)))
    return "".join(line + "\n" for line in lines)


def _decision(row: v2.MethodRow, decided: Decided) -> Composed | None:
    """How v2-sync composes a row: decided where omni's code for it ends."""
    if row.omni is None or row.who is not v2.Who.BOTH:
        return None
    return decided.get((row.omni.last[0], row.name))


def _row_text(row: v2.MethodRow, composed: Composed | None) -> str:
    parts = [f"{row.who.value:<8}{row.name:<36}"]
    if row.omni is not None:
        arrow = " -> super()" if row.omni.delegates else ""
        parts.append(f"omni {row.omni.owner}:{row.omni.line}{arrow}")
    if row.npu is not None:
        arrow = " -> super()" if row.npu.delegates else ""
        parts.append(f"npu {row.npu.owner}:{row.npu.line}{arrow}")
    if row.base_line:
        parts.append(f"vllm :{row.base_line}")
    if row.collision:
        parts.append("COLLISION")
    if row.wrapper_collision:
        parts.append("WRAPPER-COLLISION")
    if composed is not None:
        parts.append(f"=> {composed.rule.value if composed.rule else 'NOT COMPOSED'}")
    return "  ".join(parts).rstrip()


def _report_counts(reviewed: Reviewed) -> dict[str, int]:
    runners = reviewed.reports[0]
    counts: Counter[str] = Counter(row.who.value for r in runners.runners for row in r.rows)
    tally = finding_counts(reviewed.findings)
    errors = finding_counts(f for f in reviewed.findings if f.severity is Severity.ERROR)
    return {
        "runners": len(runners.runners),
        **dict(sorted(counts.items())),
        "collisions": tally.get("collision", 0),
        "wrapper_collisions": tally.get("wrapper-collision", 0),
        "bypassed": tally.get("bypass", 0),
        "calls": tally.get("call", 0),
        "substitutes": tally.get("substitute", 0),
        "rebased_classes": len(reviewed.reports) - 1,
        "lagging_steps": tally.get("lag", 0),
        "unresolved": sum(errors.values()),
    }


def _report_summary(counts: dict[str, int]) -> str:
    kinds = ", ".join(f"{counts.get(w.value, 0)} {w.value}" for w in v2.Who)
    return (
        f"v2-report: {counts['runners']} runner classes; methods: {kinds}; "
        f"{counts['collisions']} collisions, {counts['wrapper_collisions']} wrapper "
        f"collisions, {counts['bypassed']} bypassed NPU overrides, "
        f"{counts['calls']} calls the composed runner cannot take, "
        f"{counts['substitutes']} classes on a vLLM class vllm-ascend substitutes "
        f"({counts['rebased_classes']} rebased), {counts['lagging_steps']} steps of the "
        f"pinned vLLM omni's copies lack; {counts['unresolved']} left unresolved"
    )


def _site(site: v2.Site | None) -> dict[str, object] | None:
    if site is None:
        return None
    return {
        "class": site.owner,
        "path": reporting.display_path(site.path),
        "line": site.line,
        "delegates": site.delegates,
    }


def _json_report(
    reports: Sequence[v2.OverrideReport],
    findings: Sequence[Finding],
    counts: dict[str, int],
    decided: Decided,
) -> str:
    document = json.loads(reporting.json_report([], findings, counts))
    document.pop("blocks")
    document["runners"] = [
        {
            "module": runner.module,
            "class": runner.runner,
            "chain": list(runner.chain),
            "npu_class": result.npu_class,
            "base_class": result.base_class,
            "base": result.base_label,
            "methods": [
                {
                    "name": row.name,
                    "who": row.who.value,
                    "base_line": row.base_line,
                    "omni": _site(row.omni),
                    "npu": _site(row.npu),
                    "collision": row.collision,
                    "wrapper_collision": row.wrapper_collision,
                    "composed": _composed_json(_decision(row, decided)),
                }
                for row in runner.rows
            ],
        }
        for result in reports
        for runner in result.runners
    ]
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _composed_json(composed: Composed | None) -> dict[str, object] | None:
    if composed is None:
        return None
    return {
        "class": composed.owner,
        "rule": composed.rule.value if composed.rule is not None else None,
        "reason": composed.reason,
    }


# --- v2-sync --------------------------------------------------------------------------------


@click.command("v2-sync")
@_source_options
@click.option(
    "--v2-allow", "allow", type=click.Path(dir_okay=False, path_type=Path), help=_ALLOW_HELP
)
@click.option(
    "--force-vllm-mismatch",
    is_flag=True,
    help="Compose even when vLLM-Omni and vllm-ascend target different vLLM releases "
    "(refused otherwise, exit 2); every generated header then says it was forced.",
)
@generated_option("Output directory (default: `v2-generated`, generated/v2).")
@json_option
@discard_edits_option
@write_options("the output")
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def v2_sync_command(options: Options, /, **given: Any) -> Report:
    """Generate NPU V2 runners: vLLM-Omni's worker_v2 runners composed with NPUModelRunner.

    One module per omni V2 runner module, under its own name, the runner class re-based
    onto the NPU runner. Methods only one side overrides are that side's. A method both
    override is composed by one rule, recorded in the lock: omni-super (omni's calls
    super(), which reaches the NPU's), npu-wrapper (the NPU override wraps super(): it is
    copied around omni's, renamed, each run once), npu-splice (both replace vLLM's body:
    omni's hunks placed in the NPU body by the sync engine), or allowed (--v2-allow keeps
    omni's). What no rule composes is a conflict region in the file. Omni's code is
    rewritten for the NPU: imports of what vllm-ascend's patch_v2 modules replace, CUDA-only
    device checks, and torch.cuda reliance stated. The two sides must target one vLLM
    release (else exit 2, unless --force-vllm-mismatch). Exit 0 clean, 1 with conflicts
    or problems (or output that would change under --check), 2 on bad input.
    """
    flags = V2Flags(**given)
    sources = replace(_sources(options, flags), force_vllm_mismatch=flags.force_vllm_mismatch)
    target = flags.generated or options.config.path(options.config.v2_generated)
    writing = Writing(flags.check, flags.diff, flags.discard_edits)
    return sync_tree(options, sources, target, writing, flags.json_path)


def sync_tree(
    options: Options,
    sources: v2.Sources,
    target: Path,
    writing: Writing,
    json_path: Path | None = None,
) -> Report:
    """Generate (or, with ``check``, compare) one V2 tree and stage it; report it."""
    check, diff = writing.check, writing.diff
    loaded, result = v2.generate(sources, options.settings, target)
    for module in sorted([*loaded.omni, *(r.module for r in result.rebased)]):
        summary(options, v2.module_line(module, result))
    kept = [] if check else keep_hand_edits(target, result.files, writing.discard_edits)
    changes, would = write_files(
        target, result.files, api.inputs.previous_outputs(target), check, diff
    )
    for copy in kept:
        summary(options, f"discarded a hand edit; its file was kept as {copy}")
    counts = {
        **result.counts,
        "written": len(changes.changed),
        "unchanged": len(changes.unchanged),
    }
    outcome = Report(result.placements, (*result.findings, *would), counts)
    emit(outcome, json_path, diff=diff)
    summary(options, _sync_summary(counts, changes, check, target))
    return outcome


def _sync_summary(counts: dict[str, int], changes: Changes, check: bool, target: Path) -> str:
    if changes.clean:
        files = f"{shown(target)}/ unchanged"
    else:
        verb = "would write" if check else "wrote"
        files = f"{verb} {len(changes.changed)} files to {shown(target)}/"
    hunks = counts["placed"] + counts["implicit_placed"]
    conflicts = counts["conflict"] + counts["implicit_conflict"]
    return (
        f"v2-sync: {counts['modules']} modules; {counts['wrapped']} NPU wrappers around "
        f"omni's methods, {counts['omni_super']} omni super() calls, "
        f"{counts['spliced_methods']} methods spliced into the NPU override ({hunks} omni "
        f"hunks placed, {conflicts} conflicts), {counts['allowed']} allowed, "
        f"{counts['not_composed']} not composed; {counts['rebased']} classes rebased onto "
        f"vllm-ascend's substitutes, {counts['not_rebased']} not; "
        f"{counts['carried_functions']} functions carried, {counts['rewrites']} rewrites; {files}"
    )


# --- the configured V2 tree in sync and verify ----------------------------------------------


def sync_configured(options: Options, writing: Writing) -> Report | None:
    """`sync` of the configured V2 tree, staged (None when ``v2-source`` is not set)."""
    config = options.config
    if not v2.configured(config):
        return None
    target = config.path(config.v2_generated)
    return sync_tree(options, v2.sources_of(config), target, writing)


def verify_configured(options: Options) -> api.Verified | None:
    """`verify` of the configured V2 tree (None when ``v2-source`` is not set)."""
    config = options.config
    if not v2.configured(config):
        return None
    out = config.path(config.v2_generated)
    return api.verify(out, config.path(config.patches), options.settings)


def combined(first: Report, second: Report | None) -> Report:
    """Two reports as one (the V1 and the V2 tree of a workspace)."""
    if second is None:
        return first
    counts = {f"v2_{k}": v for k, v in second.counts.items()}
    return Report(
        (*first.placements, *second.placements),
        (*first.findings, *second.findings),
        {**first.counts, **counts},
    )
