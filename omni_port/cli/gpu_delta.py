"""The `gpu-delta` command: the GPU runners' omni hunks against their per-method vLLM bases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import TOOL, api
from omni_port.api.files import encode
from omni_port.api.model import Finding, PatchSet, Report
from omni_port.api.patches import existing, render_patch_set
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
    request = api.delta.DeltaRequest(
        flags.sources,
        flags.vllm_specs,
        flags.npu_source,
        flags.transplant_dir,
        flags.patches_dir,
        flags.allow_path,
        flags.lenient,
    )
    found = api.delta.gpu_delta(request, options.settings)
    findings = list(found.findings)
    written = _write_patches(found.patches, flags.patches_dir, flags, findings)
    if found.plan is not None and flags.transplant_dir is not None:
        # Conflict resolutions recorded in the transplant (`resolve --patches DIR`) are
        # kept; one that would be dropped is refused only now, after the diff of --patches.
        kept = found.transplant_patches(flags.transplant_dir)
        written += _write_patches(kept, flags.transplant_dir, flags, findings)
    # The text report is a payload of its own: with --json - or --diff it goes to stderr,
    # so that stdout carries one thing a program can read.
    elsewhere = flags.diff or (flags.json_path is not None and str(flags.json_path) == "-")
    click.echo(api.delta.text_report(found), nl=False, err=elsewhere)
    counts = api.delta.counts(found, written)
    outcome = Report(found.placements(), tuple(findings), counts)
    emit(outcome, flags.json_path, diff=flags.diff, document=api.delta.json_report(found, outcome))
    summary(options, _summary_line(counts))
    return outcome


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
