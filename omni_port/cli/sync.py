"""The `sync` command: patches plus an upstream to generated runners."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api import report
from omni_port.api.model import BadInput, Code, Placement, Report, Severity
from omni_port.api.patches import Changes
from omni_port.api.report import in_directory, shown
from omni_port.api.writing import keep_hand_edits, publish
from omni_port.cli import (
    Options,
    discard_edits_option,
    generated_option,
    handle_errors,
    in_workspace,
    json_option,
    one_payload,
    patches_option,
    platform_option,
    summary,
    v2,
    write_options,
)
from omni_port.cli.files import Writing, write_files
from omni_port.cli.output import emit


@dataclass(frozen=True, slots=True)
class SyncFlags:
    """The flags of `sync`, as given."""

    patches_dir: Path | None
    upstream: str | None
    generated: Path | None
    json_path: Path | None
    upstream_class: str | None
    history_mode: str | None
    transplant_dirs: tuple[Path, ...]
    discard_edits: bool
    check: bool
    diff: bool


@click.command("sync")
@patches_option("Patches directory (default: `patches` in [tool.omni-port]).")
@click.option(
    "--upstream",
    help="Upstream to port onto: vllm-ascend==X, a path to model_runner_v1.py, PATH@REV (a tag "
    "or commit of a local clone), or 'installed' (default: the last sync's, from the lock, "
    "until the configured `upstream` changes).",
)
@generated_option("Output directory (default: `generated`).")
@json_option
@click.option(
    "--upstream-class",
    help="Upstream class to copy methods from (default: `upstream-class`, NPUModelRunner); "
    "copies extracted from another class (e.g. GPU runners) are ported onto it.",
)
@click.option(
    "--history",
    "history_mode",
    type=click.Choice(["auto", "none"]),
    help="Upstream history for the upstream-history rule (default: `history`, auto): the "
    "releases (or commits of a PATH@REV clone) from a few before the patches' base up to "
    "the upstream; `none` reads none.",
)
@click.option(
    "--transplant",
    "transplant_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Extra blocks for the copies of the patches (written by `gpu-delta --transplant`); "
    "repeatable. A block whose method the patches do not copy is a conflict.",
)
@discard_edits_option
@write_options("the output")
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def sync_command(options: Options, /, **given: Any) -> Report:
    """Generate the NPU runners from the patches and an upstream vllm-ascend.

    Every block is either placed where its anchor says, or reported as a conflict with its
    best candidates and left commented out at the best one (exit 1). With --check, exit 1
    only when an output would change (conflicts are listed, as notes: `check` is the gate).
    Blocks of --transplant inputs join the copies of the same class and method first, after
    the copy's own blocks.
    Without --upstream, the upstream of the last sync (recorded in the lock) is kept until
    the configuration names another one.

    A generated runner edited since sync wrote it is never overwritten: sync refuses (exit
    2, OP207, naming the edited lines) until the edits are taken (`omni-port continue`) or
    dropped (--discard-edits, which keeps a copy in .omni-port/discarded/).
    """
    flags = SyncFlags(**given)
    check, diff = flags.check, flags.diff
    one_payload(flags.json_path, diff)
    config = options.config
    target = flags.generated or config.path(config.generated)
    request = api.SyncRequest(
        flags.patches_dir or config.path(config.patches),
        flags.upstream or api.workflows.sticky_upstream(options.settings, target),
        target,
        flags.upstream_class or config.upstream_class,
        flags.history_mode or config.history,
        flags.transplant_dirs,
    )
    done = api.sync_workspace(request, options.settings)
    synced = done.synced
    placements = synced.placements
    for module in done.patch_set.modules:
        summary(options, _module_line(module.name, placements))
    uncompiled = [f for f in synced.findings if f.code is Code.OP501]
    if uncompiled:
        raise BadInput(uncompiled)
    result = synced.result
    files = done.files
    kept = [] if check else keep_hand_edits(target, files, flags.discard_edits)
    changes, would = write_files(target, files, api.inputs.previous_outputs(target), check, diff)
    findings = (*done.notes, *in_directory(synced.findings, target, files), *would)
    if check:
        # --check answers one question, as black's does: would the outputs change? What
        # sync found (conflicts among it) is still listed; `check` is the gate.
        findings = tuple(
            f if f.code is Code.OP304 else replace(f, severity=Severity.NOTE) for f in findings
        )
    counts = {**result.counts, "written": len(changes.changed), "unchanged": len(changes.unchanged)}
    if synced.merged is not None:
        counts.update(_transplant_counts(synced.merged, placements))
    outcome = Report(placements, findings, counts)
    emit(outcome, flags.json_path, diff=diff, document=_json_report(outcome, synced))
    # With `v2-source` configured, the V2 runners are part of the workspace sync makes,
    # published with the V1 runners or not at all; a --generated elsewhere is not the
    # workspace (as for verify), so the workspace's V2 tree is left alone.
    writing = Writing(check, diff, flags.discard_edits)
    also = v2.sync_configured(options, writing) if flags.generated is None else None
    combined = v2.combined(outcome, also)
    publish()
    for copy in kept:
        summary(options, f"discarded a hand edit; its file was kept as {copy}")
    summary(options, _syncsummary(counts, changes, check, target))
    return combined


def _transplant_counts(
    merged: api.workflows.Merged, placements: Sequence[Placement]
) -> dict[str, int]:
    joined = set(merged.joined)
    mine = [p for p in placements if p.block_id in joined]
    return {
        "transplanted": len(merged.joined) + len(merged.orphans),
        "transplant_placed": sum(1 for p in mine if p.status.value == "placed"),
        "transplant_conflict": sum(1 for p in mine if p.status.value == "conflict"),
        "transplant_without_copy": len(merged.orphans),
    }


def _json_report(outcome: Report, synced: api.Synced) -> str:
    """The sync report; with transplant inputs, which blocks came from which."""
    text = report.json_report(outcome.placements, outcome.findings, dict(outcome.counts))
    merged = synced.merged
    if merged is None:
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


def _module_line(name: str, placements: Sequence[Placement]) -> str:
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
