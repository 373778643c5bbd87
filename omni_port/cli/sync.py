"""The `sync` command: patches plus an upstream to generated runners."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from omni_port import generate, report
from omni_port.cli import (
    TOOL,
    Options,
    emit_findings,
    errors,
    fail,
    handle_errors,
    shown,
    summary,
    write_json,
)
from omni_port.cli.inputs import load_upstream, previous_outputs, read_patches, write_files
from omni_port.model import Code
from omni_port.store import Changes


@click.command("sync")
@click.option(
    "--patches",
    "patches_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Patches directory (default: `patches` in [tool.omni-port]).",
)
@click.option(
    "--upstream",
    help="Upstream to port onto: vllm-ascend==X, a path to model_runner_v1.py, or 'installed'.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default: `generated`).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)
@click.option(
    "--upstream-class",
    help="Upstream class to copy methods from (default: `upstream-class`, NPUModelRunner); "
    "copies extracted from another class (e.g. GPU runners) are ported onto it.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the output would change.")
@click.option("--diff", is_flag=True, help="Print the unified diff of the output.")
@click.pass_obj
@handle_errors
def sync_command(
    options: Options,
    patches_dir: Path | None,
    upstream: str | None,
    out: Path | None,
    json_path: Path | None,
    upstream_class: str | None,
    check: bool,
    diff: bool,
) -> None:
    """Generate the NPU runners from the patches and an upstream vllm-ascend.

    Every block is either placed where its anchor says, or reported as a conflict with its
    best candidates and left commented out at the best one (exit 1).
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = out or config.path(config.generated)
    upstream_text = upstream or config.upstream
    patch_set, patch_files = read_patches(directory)
    loaded = load_upstream(upstream_text, options, upstream_class or config.upstream_class)
    command = (
        f"omni-port sync --patches {shown(directory)} --upstream {loaded.label} "
        f"--out {shown(target)}"
    )
    result = generate.sync(patch_set, patch_files, loaded, TOOL, command)
    for module in patch_set.modules:
        summary(options, _module_line(module.name, result.placements))
    if any(f.code is Code.OP305 for f in result.findings):
        fail([f for f in result.findings if f.code is Code.OP305])
    changes = write_files(options, target, result.files, previous_outputs(target), check, diff)
    emit_findings(result.findings)
    counts = {**result.counts, "written": len(changes.changed), "unchanged": len(changes.unchanged)}
    write_json(json_path, report.json_report(result.placements, result.findings, counts))
    summary(options, _syncsummary(counts, changes, check, target))
    if errors(result.findings) or (check and not changes.clean):
        sys.exit(1)


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
    return (
        f"{counts['placed']} blocks placed, {counts['conflict']} conflicts; "
        f"{counts['implicit_placed']} implicit edits placed, "
        f"{counts['implicit_conflict']} conflicts; "
        f"{counts['carried']} marked regions and {counts['owned']} owned members carried; {files}"
    )
