"""The `extract` command: runner files to anchored patches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import TOOL, api
from omni_port.api.files import encode
from omni_port.api.model import Chunk, Copy, PatchSet, Placement, Report
from omni_port.api.patches import Changes, existing, extracted_blocks, render_patch_set
from omni_port.api.writing import publish
from omni_port.cli import (
    Options,
    discard_option,
    handle_errors,
    in_workspace,
    json_option,
    one_payload,
    patches_option,
    platform_option,
    summary,
    write_options,
)
from omni_port.cli.files import write_files
from omni_port.cli.output import emit


@dataclass(frozen=True, slots=True)
class ExtractFlags:
    """The flags of `extract`, as given."""

    sources: tuple[str, ...]
    patches_dir: Path | None
    base: str | None
    upstream_class: str | None
    lenient: bool
    implicit: bool
    discard_decisions: bool
    json_path: Path | None
    check: bool
    diff: bool


@click.command("extract")
@click.argument("sources", nargs=-1)
@patches_option("Patches directory to write.")
@click.option(
    "--base",
    help="Upstream the sources were ported from: vllm-ascend==X, a path, PATH@REV, or 'installed'.",
)
@click.option(
    "--upstream-class", help="Upstream class the runner classes copy (default NPUModelRunner)."
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Extract despite malformed markers (for audits of files you do not own); those "
    "`marker-allow` does not list are findings.",
)
@click.option(
    "--implicit/--no-implicit",
    default=True,
    show_default=True,
    help="Record implicit edits (code changed outside markers) against the base.",
)
@discard_option
@json_option
@write_options("the patches")
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def extract_command(options: Options, /, **given: Any) -> Report:
    """Scan runner files for Omni-new blocks and write them as anchored patches.

    SOURCES are runner files, a directory holding them, or a release such as
    vllm-omni==0.30.0 (default: `source` in [tool.omni-port], the whole workspace). Given
    SOURCES, only their modules' patches are rewritten; the other modules' stay. With
    --base, blocks that replaced upstream statements are recorded as replacements, and code
    changed outside markers is carried as implicit edits.

    A malformed marker is bad input (exit 2, nothing written) unless the `marker-allow` list
    names it (FILE:LINE: CODE, reviewed: then a note) or --lenient takes every one.

    Titles, recorded resolutions and adoptions in the patches stay with their edits. An
    extraction that would drop a resolution (its edit is gone from the sources) is refused,
    exit 2, naming each, unless --discard-decisions.
    """
    flags = ExtractFlags(**given)
    sources, lenient, check, diff = flags.sources, flags.lenient, flags.check, flags.diff
    one_payload(flags.json_path, diff)
    config = options.config
    settings = options.settings
    located = api.load_runners(sources or (config.source,), settings)
    base_text = flags.base if flags.base is not None else config.base
    base_module = api.load_upstream(base_text, settings) if base_text else None
    ext_options = api.inputs.extract_options(
        config, flags.upstream_class or "", implicit=flags.implicit
    )
    # The marker-allow list (or --lenient) decides which malformed markers pass.
    patch_set, review = api.inputs.extract_reviewed(
        located, base_module, ext_options, config, lenient, settings.cache
    )
    findings = [*review.findings, *review.stale_findings(strict=False)]
    patch_set = api.inputs.recorded_sources(patch_set, located, base_module, config)
    directory = flags.patches_dir or config.path(config.patches)
    patch_set = api.inputs.carry_edits(patch_set, directory, discard=flags.discard_decisions)
    # Runners named on the command line: the other modules' patches stay as they are (the
    # configured source, the default, is the whole workspace).
    kept: tuple[str, ...] = ()
    if sources:
        patch_set, kept = api.inputs.with_unread_modules(patch_set, directory)
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    stale = existing(directory, "*/*.patch")
    changes, would = write_files(directory, files, stale, check, diff)
    publish()
    rows = extracted_blocks(patch_set)
    counts = _extract_counts(patch_set, rows, changes)
    counts["kept"] = len(kept)
    outcome = Report(tuple(rows), (*findings, *would), counts)
    emit(outcome, flags.json_path, diff=diff)
    summary(options, _extractsummary(counts, check))
    return outcome


def _extract_counts(
    patch_set: PatchSet, rows: Sequence[Placement], changes: Changes
) -> dict[str, int]:
    pieces = [p for m in patch_set.modules for p in m.pieces]
    return {
        "modules": len(patch_set.modules),
        "marked": sum(1 for r in rows if r.marked),
        "implicit": sum(1 for r in rows if not r.marked),
        "copies": sum(1 for p in pieces if isinstance(p, Copy)),
        "owned": sum(1 for p in pieces if isinstance(p, Chunk) and p.name and not p.marked),
        "written": len(changes.changed),
        "removed": len(changes.removed),
        "unchanged": len(changes.unchanged),
    }


def _extractsummary(counts: dict[str, int], check: bool) -> str:
    verb = "would write" if check else "wrote"
    files = (
        f"{verb} {counts['written']} files, removed {counts['removed']}"
        if counts["written"] or counts["removed"]
        else "patches unchanged"
    )
    kept = f" (the patches of {counts['kept']} modules not read, kept)" if counts["kept"] else ""
    return (
        f"{counts['marked']} marked blocks, {counts['implicit']} implicit edits, "
        f"{counts['copies']} copied members, {counts['owned']} owned members "
        f"in {counts['modules']} modules{kept}; {files}"
    )
