"""The `gpu-delta` command: the GPU runners' omni hunks against their per-method vLLM bases."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import TOOL, api, report
from omni_port.cli import (
    Options,
    handle_errors,
    in_workspace,
    json_option,
    one_payload,
    patches_option,
    renamed,
    summary,
    write_options,
)
from omni_port.cli.files import write_files
from omni_port.cli.output import emit
from omni_port.errors import BadInput
from omni_port.extract.listing import extracted_blocks
from omni_port.gpu import parity, transplant, vllm_delta
from omni_port.gpu.counterparts import Parity
from omni_port.model import Code, Finding, Located, PatchSet, Report, Tree
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import existing
from omni_port.sources.textio import encode, read_source
from omni_port.sources.upstream import OMNI_GPU_RUNNERS, OMNI_RUNNERS, locate_runners


@dataclass(frozen=True, slots=True)
class DeltaFlags:
    """The flags of `gpu-delta`, as given."""

    sources: tuple[str, ...]
    vllm_specs: tuple[str, ...]
    patches_dir: Path | None
    npu_source: str | None
    transplant_dir: Path | None
    allow_path: Path | None
    lenient: bool
    json_path: Path | None
    check: bool
    diff: bool


#: The allow-list file of reviewed parity gaps (`--parity-allow`, as in `check`).
ALLOW_LIST = click.Path(dir_okay=False, path_type=Path)


@click.command("gpu-delta")
@click.argument("sources", nargs=-1)
@click.option(
    "--vllm",
    "vllm_specs",
    multiple=True,
    help="vLLM release to compare with (vllm==X, X, a path or 'installed'); repeat for "
    "candidates, the first is the target. Default: the source release's major.minor and "
    "the minor releases around it.",
)
@patches_option("Write the hunks as a patch set here (usable by `sync --upstream-class`).")
@click.option("--parity", "npu_source", help="NPU runners to check hunk-level parity against.")
@click.option(
    "--transplant",
    "transplant_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the hunks the NPU runners lack (needs --parity), re-homed onto the NPU "
    "runners, as extra blocks for `sync --transplant`.",
)
@click.option(
    "--parity-allow",
    "allow_path",
    type=ALLOW_LIST,
    help="Reviewed parity gaps: 'module.py:Class.method[:hunk or statement prefix]  reason'.",
)
@click.option("--lenient", is_flag=True, help="Extract despite malformed markers.")
@json_option
@write_options("the patches")
@renamed("--allow", "--parity-allow", "allow_path", ALLOW_LIST)
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def gpu_delta_command(options: Options, /, **given: Any) -> Report:
    """List the omni changes of vLLM-Omni's GPU runners, each copied method against the
    vLLM release its body matches best; with --parity, the hunks the NPU runners lack.

    SOURCES are GPU runner files, a vllm-omni checkout, or a release such as
    vllm-omni==0.26.0 (default: `source` in [tool.omni-port]). Exit 0 when clean, 1 with
    parity gaps (or patches that would change under --check), 2 on bad input. With
    --transplant, the missing and partial hunks of copied methods are written re-homed onto
    the NPU runners; owned GPU methods are listed as not transplantable.
    """
    flags = DeltaFlags(**given)
    one_payload(flags.json_path, flags.diff)
    _check_transplant_options(flags.transplant_dir, flags.npu_source, flags.patches_dir)
    texts = flags.sources or (options.config.source,)
    located = _gpu_runners(texts, options)
    allowed = _allow_list(flags.allow_path) if flags.allow_path is not None else ()
    specs = flags.vllm_specs or api.inputs.default_vllm_specs(texts)
    bases, notes = api.inputs.load_vllm_bases(specs, options.settings)
    target = next(iter(bases))
    sources = {Path(r.member).name: r.source for r in located}
    delta = vllm_delta.gpu_delta(sources, bases, target, flags.lenient)
    findings: list[Finding] = [*delta.findings, *notes]
    rows: list[parity.HunkParity] = []
    plan: transplant.Plan | None = None
    if flags.npu_source is not None:
        npu = _npu_trees(flags.npu_source, options)
        rows = parity.hunk_parity(delta, npu, allowed)
        findings.extend(parity.parity_findings(rows, allowed))
        if flags.transplant_dir is not None:
            plan = transplant.plan(delta, npu, rows, options.config.upstream_class)
    written = _write_patches(delta.patches, flags.patches_dir, flags, findings)
    if plan is not None and flags.transplant_dir is not None:
        # Conflict resolutions recorded in the transplant (`resolve --patches DIR`) are kept.
        kept = api.inputs.carry_edits(plan.patches, flags.transplant_dir)
        written += _write_patches(kept, flags.transplant_dir, flags, findings)
    # The text report is a payload of its own: with --json - or --diff it goes to stderr,
    # so that stdout carries one thing a program can read.
    elsewhere = flags.diff or (flags.json_path is not None and str(flags.json_path) == "-")
    click.echo(_text_report(delta) + _transplant_report(plan), nl=False, err=elsewhere)
    counts = _counts(delta, rows, written)
    if plan is not None:
        counts.update(transplanted=len(plan.moved), not_transplantable=len(plan.skipped))
    outcome = Report(tuple(extracted_blocks(delta.patches)), tuple(findings), counts)
    document = _json_report(delta, rows, outcome, plan)
    emit(outcome, flags.json_path, diff=flags.diff, document=document)
    summary(options, _summary_line(counts))
    return outcome


def _allow_list(path: Path) -> tuple[parity.AllowEntry, ...]:
    source = read_source(path)
    return parity.parse_allow_list(source.text, source.path)


def _gpu_runners(texts: Sequence[str], options: Options) -> list[Located]:
    """The GPU runner files each source argument names."""
    progress = options.progress()
    return [r for t in texts for r in locate_runners(t, options.cache, progress, OMNI_GPU_RUNNERS)]


def _npu_trees(text: str, options: Options) -> dict[str, Tree]:
    located = locate_runners(text, options.cache, options.progress(), OMNI_RUNNERS)
    return {Path(r.member).name: api.parse_source(r) for r in located}


def _check_transplant_options(
    directory: Path | None, npu_source: str | None, patches_dir: Path | None
) -> None:
    """--transplant needs the parity it selects hunks by, and a directory of its own."""
    if directory is None:
        return
    if npu_source is None:
        message = (
            "--transplant needs --parity NPU_SOURCES: only the hunks the NPU runners lack "
            "are transplanted"
        )
        raise BadInput.at(Code.OP005, str(directory), 0, message)
    if patches_dir is not None and patches_dir.resolve() == directory.resolve():
        raise BadInput.at(
            Code.OP005, str(directory), 0, "--transplant and --patches name the same directory"
        )


def _write_patches(
    patches: PatchSet, directory: Path | None, flags: DeltaFlags, findings: list[Finding]
) -> int:
    """Write a patch set (when asked); the number of files that changed or would."""
    if directory is None:
        return 0
    files = {rel: encode(text) for rel, text in render_patch_set(patches, TOOL).items()}
    stale = existing(directory, "*/*.patch")
    changes, would = write_files(directory, files, stale, flags.check, flags.diff)
    findings.extend(would)
    return len(changes.changed) + len(changes.removed)


def _text_report(delta: vllm_delta.Delta) -> str:
    lines = []
    for method in delta.methods:
        base = method.base
        lines.append(
            f"{base.module}: {base.owner}.{base.member}  base {base.base} "
            f"(contains {base.best.containment:.0%}, covers {base.best.coverage:.0%}), "
            f"{len(method.hunks)} hunks"
        )
        for block in method.hunks:
            where = f"{report.display_path(block.origin.path)}:{block.origin.start}"
            local = block.id.rsplit(".", 1)[-1]
            lines.append(f"  {where}: {local} {block.kind.value}: {block.title}")
    return "".join(line + "\n" for line in lines)


def _transplant_report(plan: transplant.Plan | None) -> str:
    """What --transplant wrote, and the gaps it could not."""
    if plan is None:
        return ""
    lines = [f"transplant: {len(plan.moved)} hunks re-homed onto the NPU runners"]
    for moved in plan.moved:
        block = moved.block
        local = block.id.rsplit(".", 1)[-1]
        note = "" if moved.hosted else f" (the NPU class does not override {block.member})"
        lines.append(
            f"  {moved.module}: {block.owner}.{block.member} {local} <- {moved.source_id} "
            f"({moved.status.value}){note}"
        )
    for skipped in plan.skipped:
        where = f"{report.display_path(skipped.path)}:{skipped.line}"
        lines.append(
            f"  not transplantable: {where}: {skipped.owner}.{skipped.member} "
            f"({skipped.status.value}): {skipped.reason}"
        )
    return "".join(line + "\n" for line in lines)


def _counts(
    delta: vllm_delta.Delta, rows: Sequence[parity.HunkParity], written: int
) -> dict[str, int]:
    statuses = Counter(f"{row.side}_{row.status.value}" for row in rows)
    present_as = Counter(
        f"present_as_{row.present_as}"
        for row in rows
        if row.side == "gpu" and row.status is Parity.PRESENT and row.present_as
    )
    return {
        "modules": len(delta.patches.modules),
        "methods": len(delta.methods),
        "hunks": sum(len(m.hunks) for m in delta.methods),
        "written": written,
        **statuses,
        **present_as,
    }


def _json_report(
    delta: vllm_delta.Delta,
    rows: Sequence[parity.HunkParity],
    outcome: Report,
    plan: transplant.Plan | None = None,
) -> str:
    counts = dict(outcome.counts)
    document = json.loads(report.json_report(outcome.placements, outcome.findings, counts))
    document["methods"] = [_method_dict(m) for m in delta.methods]
    document["parity"] = [_row_dict(row) for row in rows]
    if plan is not None:
        document["transplant"] = {
            "blocks": [_moved_dict(m) for m in plan.moved],
            "not_transplantable": [_skipped_dict(s) for s in plan.skipped],
        }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _moved_dict(moved: transplant.Moved) -> dict[str, object]:
    block = moved.block
    return {
        "id": block.id,
        "from": moved.source_id,
        "module": moved.module,
        "class": block.owner,
        "method": block.member,
        "kind": block.kind.value,
        "status": moved.status.value,
        "hosted": moved.hosted,
    }


def _skipped_dict(skipped: transplant.Skipped) -> dict[str, object]:
    return {
        "id": skipped.id,
        "module": skipped.module,
        "class": skipped.owner,
        "method": skipped.member,
        "path": report.display_path(skipped.path),
        "line": skipped.line,
        "status": skipped.status.value,
        "reason": skipped.reason,
    }


def _method_dict(method: vllm_delta.CopiedMethod) -> dict[str, object]:
    base = method.base
    return {
        "module": base.module,
        "class": base.owner,
        "method": base.member,
        "base": base.base,
        "containment": round(base.best.containment, 3),
        "coverage": round(base.best.coverage, 3),
        "scores": [
            {
                "base": s.label,
                "containment": round(s.containment, 3),
                "coverage": round(s.coverage, 3),
            }
            for s in base.scores
        ],
        "hunks": [block.id for block in method.hunks],
    }


def _row_dict(row: parity.HunkParity) -> dict[str, object]:
    return {
        "side": row.side,
        "module": row.module,
        "class": row.owner,
        "method": row.member,
        "id": row.id,
        "kind": row.kind,
        "lines": [row.start, row.end],
        "status": row.status.value,
        "present_as": row.present_as or "",
        "counterpart": row.counterpart,
        "items": len(row.items),
        "missing": [{"line": i.line, "kind": i.kind.value, "text": i.text} for i in row.missing],
        "allowed": row.allow.reason if row.allow is not None else "",
    }


def _summary_line(counts: dict[str, int]) -> str:
    line = f"{counts['hunks']} omni hunks in {counts['methods']} copied methods"
    gpu_rows = {k.removeprefix("gpu_"): v for k, v in counts.items() if k.startswith("gpu_")}
    if gpu_rows:
        parts = ", ".join(f"{n} {k}" for k, n in sorted(gpu_rows.items()))
        line += f"; GPU hunks on NPU: {parts}"
        npu = {k.removeprefix("npu_"): v for k, v in counts.items() if k.startswith("npu_")}
        line += "; NPU blocks on GPU: " + ", ".join(f"{n} {k}" for k, n in sorted(npu.items()))
    if "transplanted" in counts:
        line += (
            f"; {counts['transplanted']} hunks transplanted, "
            f"{counts['not_transplantable']} not transplantable"
        )
    if counts["written"]:
        line += f"; {counts['written']} patch files changed"
    return line
