"""The `upgrade` command: from "a new vllm-ascend is out" to a reviewable change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.cli import (
    Options,
    generated_option,
    handle_errors,
    json_option,
    patches_option,
    summary,
)
from omni_port.cli.bases import best_base, detect_base
from omni_port.cli.files import save_patches, write_files
from omni_port.cli.output import emit, in_directory
from omni_port.model import Report
from omni_port.patches import lockfile
from omni_port.sources.textio import encode, write_atomic
from omni_port.sync import upgrade


@dataclass(frozen=True, slots=True)
class UpgradeFlags:
    """The flags of `upgrade`, as given."""

    sources: tuple[str, ...]
    target: str
    base: str | None
    patches_dir: Path | None
    generated: Path | None
    summary_path: Path
    json_path: Path | None
    candidates: str | None


@click.command("upgrade")
@click.argument("sources", nargs=-1)
@click.option(
    "--to",
    "target",
    required=True,
    help="The new upstream: vllm-ascend==X, a version, a path, or PATH@REV of a clone.",
)
@click.option(
    "--base",
    help="Upstream the runners were ported from (default: `base`; `detect` ranks releases).",
)
@patches_option("Patches directory to write (default: `patches`).")
@generated_option("Output directory (default: `generated`).")
@click.option(
    "--summary",
    "summary_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("omni-port-upgrade.md"),
    show_default=True,
    help="Markdown summary for the pull request ('-' for stdout).",
)
@json_option
@click.option(
    "--candidates",
    help="With --base detect: comma-separated releases to rank "
    "(default: every release since 0.13.0, wheel or sdist).",
)
@click.pass_obj
@handle_errors
def upgrade_command(options: Options, /, **given: Any) -> Report:
    """Port the runners onto a new upstream and write a summary ready for a pull request.

    Extracts the runners against their base (detected when asked), syncs onto --to,
    verifies the result, and writes the summary: every block placed or in conflict with
    its candidates, the upstream changes near each block, copied methods upstream changed
    or removed, and new upstream methods. Exit 1 when anything needs a maintainer.
    """
    flags = UpgradeFlags(**given)
    if (
        str(flags.summary_path) == "-"
        and flags.json_path is not None
        and str(flags.json_path) == "-"
    ):
        raise click.UsageError("--summary - and --json - cannot both take stdout")
    sources, target, base, candidates = flags.sources, flags.target, flags.base, flags.candidates
    patches_dir, generated, summary_path, json_path = (
        flags.patches_dir,
        flags.generated,
        flags.summary_path,
        flags.json_path,
    )
    config = options.config
    settings = options.settings
    located = api.load_runners(sources or (config.source,), settings)
    old = api.load_upstream(_base(options, located, base, candidates), settings)
    ext_options = api.ExtractOptions(upstream_class=config.upstream_class, lenient=True)
    patch_set, extract_findings = api.extract(located, old, ext_options)
    patch_set = api.recorded_sources(patch_set, located, old, config)
    patch_dir = patches_dir or config.path(config.patches)
    # Titles and recorded resolutions of the previous patches survive the re-extraction;
    # runners named on the command line leave the other modules' patches as they are.
    patch_set = api.carry_edits(patch_set, patch_dir)
    if sources:
        patch_set, _ = api.with_unread_modules(patch_set, patch_dir)
    save_patches(patch_dir, patch_set)
    new = api.load_upstream(target, settings, config.upstream_class)
    new, history_notes = api.with_history(new, settings, patch_set, mode=config.history)
    # Outputs name inputs relative to the repository root, never the working directory.
    old = replace(old, label=config.recorded_spec(old.label))
    new = replace(
        new,
        label=config.recorded_spec(new.label),
        history=tuple(replace(r, label=config.recorded_spec(r.label)) for r in new.history),
    )
    out_dir = generated or config.path(config.generated)
    command = (
        f"omni-port sync --patches {config.recorded_path(patch_dir)} --upstream {new.label} "
        f"--generated {config.recorded_path(out_dir)}"
    )
    catalog = config.path(config.catalog) if config.catalog else None
    locations = api.catalog_locations(patch_set, catalog)
    result = api.sync_patches(patch_set, new, command, locations=locations).result
    # The lock keeps the target: a plain `sync` or `resolve` afterwards defaults to it.
    files = lockfile.configured_files(result.files, config.recorded_spec(config.upstream))
    write_files(out_dir, files, api.previous_outputs(out_dir))
    source_text = located[0].label if located else config.source
    context = api.verification_context(settings, patch_set, new, target, source_text)
    findings = [
        *history_notes,
        *api.vllm_pairing_notes(source_text, target, settings),
        *extract_findings,
        *in_directory(result.findings, out_dir, result.files),
        *in_directory(
            api.verify_files(result.files, result.placements, patch_set, context),
            out_dir,
            result.files,
        ),
    ]
    document = upgrade.summary(
        upgrade.Upgrade(
            old.label,
            new.label,
            old.tree,
            new.tree,
            config.upstream_class,
            patch_set,
            result.placements,
            tuple(findings),
        )
    )
    if str(summary_path) == "-":
        click.echo(document, nl=False)
    else:
        write_atomic(summary_path, encode(document))
    outcome = Report(result.placements, tuple(findings), result.counts)
    emit(outcome, json_path, diff=str(summary_path) == "-")
    counts = result.counts
    placed = counts["placed"] + counts["implicit_placed"]
    conflicts = counts["conflict"] + counts["implicit_conflict"]
    summary(options, f"{placed} placed, {conflicts} conflicts; summary in {summary_path}")
    return outcome


def _base(
    options: Options, located: Sequence[api.Located], base: str | None, candidates: str | None
) -> str:
    """The base the runners were ported from: given, configured, or detected (and said)."""
    base_text = base if base is not None else options.config.base
    if base_text and base_text != "detect":
        return base_text
    wanted = [c.strip() for c in candidates.split(",")] if candidates else []
    ranked = detect_base(options, [api.parse_source(r) for r in located], wanted)
    best = best_base(options, ranked, located[0].source.path if located else "-")
    summary(options, f"detected base {best.label} ({best.similarity:.1%} of copied statements)")
    return best.label
