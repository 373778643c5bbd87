"""The `sync` command: patches plus an upstream to generated runners."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from omni_port import report
from omni_port.cli import (
    TOOL,
    Options,
    emit_findings,
    errors,
    fail,
    handle_errors,
    json_option,
    patches_option,
    shown,
    summary,
    v2,
    write_json,
    write_options,
)
from omni_port.cli.inputs import load_upstream, previous_outputs, read_patches, write_files
from omni_port.errors import BadInput
from omni_port.gpu import transplant
from omni_port.model import Code, PatchSet
from omni_port.patches import lockfile
from omni_port.patches.patchfile import INDEX_NAME
from omni_port.patches.store import Changes
from omni_port.sync import pipeline, splice


@click.command("sync")
@patches_option("Patches directory (default: `patches` in [tool.omni-port]).")
@click.option(
    "--upstream",
    help="Upstream to port onto: vllm-ascend==X, a path to model_runner_v1.py, or 'installed'.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default: `generated`).",
)
@json_option
@click.option(
    "--upstream-class",
    help="Upstream class to copy methods from (default: `upstream-class`, NPUModelRunner); "
    "copies extracted from another class (e.g. GPU runners) are ported onto it.",
)
@click.option(
    "--transplant",
    "transplant_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Extra blocks for the copies of the patches (written by `gpu-delta --transplant`); "
    "repeatable. A block whose method the patches do not copy is a conflict.",
)
@write_options("the output")
@click.pass_obj
@handle_errors
def sync_command(
    options: Options,
    patches_dir: Path | None,
    upstream: str | None,
    out: Path | None,
    json_path: Path | None,
    upstream_class: str | None,
    transplant_dirs: tuple[Path, ...],
    check: bool,
    diff: bool,
) -> None:
    """Generate the NPU runners from the patches and an upstream vllm-ascend.

    Every block is either placed where its anchor says, or reported as a conflict with its
    best candidates and left commented out at the best one (exit 1). Blocks of --transplant
    inputs join the copies of the same class and method first, after the copy's own blocks.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = out or config.path(config.generated)
    upstream_text = upstream or config.upstream
    patch_set, patch_files = read_patches(directory)
    loaded = load_upstream(upstream_text, options, upstream_class or config.upstream_class)
    command = (
        f"omni-port sync --patches {shown(directory)} --upstream {loaded.label} "
        f"--out {shown(target)}" + "".join(f" --transplant {shown(d)}" for d in transplant_dirs)
    )
    result, merged = sync_with_transplants(patch_set, patch_files, loaded, command, transplant_dirs)
    placements = (*result.placements, *merged.orphans)
    findings = (*result.findings, *merged.findings)
    for module in patch_set.modules:
        summary(options, _module_line(module.name, placements))
    if any(f.code is Code.OP305 for f in findings):
        fail([f for f in findings if f.code is Code.OP305])
    changes = write_files(options, target, result.files, previous_outputs(target), check, diff)
    emit_findings(findings)
    counts = {**result.counts, "written": len(changes.changed), "unchanged": len(changes.unchanged)}
    if transplant_dirs:
        counts.update(_transplant_counts(merged, placements))
    write_json(json_path, _json_report(placements, findings, counts, merged))
    summary(options, _syncsummary(counts, changes, check, target))
    # With `v2-source` configured, the V2 runners are part of the workspace sync makes.
    v2_failed = v2.configured(options) and v2.sync_configured(options, check, diff)
    if errors(findings) or (check and not changes.clean) or v2_failed:
        sys.exit(1)


def load_transplants(directories: Sequence[Path]) -> list[transplant.Extra]:
    """Every transplant input, read like a patch set; BadInput (exit 2) when one is not."""
    extras = []
    for directory in directories:
        index = directory / INDEX_NAME
        if not index.is_file():
            raise BadInput.at(
                Code.OP204, str(index), 0,
                "no transplant patch set here; write one with "
                "`omni-port gpu-delta SOURCES --parity NPU_SOURCES --transplant DIR`",
            )  # fmt: skip
        patch_set, files = read_patches(directory)
        extras.append(transplant.Extra(shown(directory), lockfile.patches_digest(files), patch_set))
    return extras


def sync_with_transplants(
    patch_set: PatchSet,
    patch_files: dict[str, str],
    upstream: splice.Upstream,
    command: str,
    directories: Sequence[Path],
) -> tuple[pipeline.SyncResult, transplant.Merged]:
    """``pipeline.sync`` of the patches with the transplant inputs merged in.

    What `check` needs too to regenerate a tree whose lock names transplant inputs.
    """
    merged = transplant.merge(patch_set, load_transplants(directories))
    result = pipeline.sync(merged.patches, patch_files, upstream, TOOL, command, merged.inputs)
    return result, merged


def _transplant_counts(merged: transplant.Merged, placements: Sequence[Any]) -> dict[str, int]:
    joined = set(merged.joined)
    mine = [p for p in placements if p.block_id in joined]
    return {
        "transplanted": len(merged.joined) + len(merged.orphans),
        "transplant_placed": sum(1 for p in mine if p.status.value == "placed"),
        "transplant_conflict": sum(1 for p in mine if p.status.value == "conflict"),
        "transplant_without_copy": len(merged.orphans),
    }


def _json_report(
    placements: Sequence[Any],
    findings: Sequence[Any],
    counts: dict[str, int],
    merged: transplant.Merged,
) -> str:
    """The sync report; with transplant inputs, which blocks came from which."""
    text = report.json_report(placements, findings, counts)
    if not merged.inputs:
        return text
    document = json.loads(text)
    document["transplants"] = [
        {"input": label, "sha256": digest} for label, digest in merged.inputs
    ]
    joined = set(merged.joined)
    orphans = {p.block_id for p in merged.orphans}
    for row in document["blocks"]:
        row["transplanted"] = row["id"] in joined or row["id"] in orphans
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _module_line(name: str, placements: Sequence[Any]) -> str:
    mine = [p for p in placements if p.module == name]
    placed = sum(1 for p in mine if p.status.value == "placed")
    conflicts = sum(1 for p in mine if p.status.value == "conflict")
    return f"{name}: {placed} placed, {conflicts} conflicts"


def _syncsummary(counts: dict[str, int], changes: Changes, check: bool, target: Path) -> str:
    if changes.clean:
        files = f"{shown(target)}/ unchanged"
    else:
        verb = "would write" if check else "wrote"
        files = f"{verb} {len(changes.changed)} files to {shown(target)}/"
    transplanted = ""
    if "transplanted" in counts:
        transplanted = (
            f"{counts['transplanted']} transplanted blocks: {counts['transplant_placed']} "
            f"placed, {counts['transplant_conflict']} conflicts, "
            f"{counts['transplant_without_copy']} without a copy; "
        )
    return (
        f"{counts['placed']} blocks placed, {counts['conflict']} conflicts; "
        f"{counts['implicit_placed']} implicit edits placed, "
        f"{counts['implicit_conflict']} conflicts; "
        f"{counts['carried']} marked regions and {counts['owned']} owned members carried; "
        f"{transplanted}{files}"
    )
