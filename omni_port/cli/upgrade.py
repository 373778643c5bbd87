"""The `upgrade` command: from "a new vllm-ascend is out" to a reviewable change."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from omni_port.cli import (
    TOOL,
    Options,
    emit_findings,
    errors,
    handle_errors,
    json_option,
    patches_option,
    shown,
    summary,
    write_json,
)
from omni_port.cli.bases import detect_base
from omni_port.cli.inputs import (
    carry_edits,
    extract_all,
    load_base,
    load_upstream,
    previous_outputs,
    save_patches,
    verification_context,
    verify_outputs,
    with_history,
    write_files,
)
from omni_port.extract import extractor
from omni_port.patches.patchfile import render_patch_set
from omni_port.pyast.syntax import parse
from omni_port.report import json_report
from omni_port.sources.textio import encode, write_atomic
from omni_port.sources.upstream import locate_runners
from omni_port.sync import pipeline, upgrade


@click.command("upgrade")
@click.argument("sources", nargs=-1)
@click.option(
    "--to", "target", required=True, help="The new upstream: vllm-ascend==X, a version, or a path."
)
@click.option(
    "--base",
    help="Upstream the runners were ported from (default: `base`; `detect` ranks releases).",
)
@patches_option("Patches directory to write (default: `patches`).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default: `generated`).",
)
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
    "(default: every wheel since 0.13.0).",
)
@click.pass_obj
@handle_errors
def upgrade_command(
    options: Options, sources: tuple[str, ...], target: str, base: str | None,
    patches_dir: Path | None, out: Path | None, summary_path: Path, json_path: Path | None,
    candidates: str | None,
) -> None:  # fmt: skip
    """Port the runners onto a new upstream and write a summary ready for a pull request.

    Extracts the runners against their base (detected when asked), syncs onto --to,
    verifies the result, and writes the summary: every block placed or in conflict with
    its candidates, the upstream changes near each block, copied methods upstream changed
    or removed, and new upstream methods. Exit 1 when anything needs a maintainer.
    """
    config = options.config
    located = [
        r
        for t in (sources or (config.source,))
        for r in locate_runners(t, options.cache, options.progress())
    ]
    base_text = base if base is not None else config.base
    if not base_text or base_text == "detect":
        wanted = [c.strip() for c in candidates.split(",")] if candidates else []
        ranked = detect_base(
            options, [parse(r.source.text, r.source.path) for r in located], wanted
        )
        base_text = ranked[0].label
        summary(
            options, f"detected base {base_text} ({ranked[0].similarity:.1%} of copied statements)"
        )
    old = load_base(base_text, options)
    ext_options = extractor.ExtractOptions(upstream_class=config.upstream_class, lenient=True)
    patch_set, extract_findings = extract_all(located, old, ext_options)
    patch_dir = patches_dir or config.path(config.patches)
    # Titles and recorded resolutions of the previous patches survive the re-extraction.
    patch_set = carry_edits(patch_set, patch_dir)
    save_patches(options, patch_dir, patch_set)
    new = load_upstream(target, options, config.upstream_class)
    new, history_notes = with_history(new, options, patch_set, mode=config.history)
    out_dir = out or config.path(config.generated)
    command = (
        f"omni-port sync --patches {shown(patch_dir)} --upstream {new.label} --out {shown(out_dir)}"
    )
    result = pipeline.sync(patch_set, render_patch_set(patch_set, TOOL), new, TOOL, command)
    write_files(options, out_dir, result.files, previous_outputs(out_dir), check=False, diff=False)
    context = verification_context(
        options, patch_set, new, target, located[0].label if located else config.source
    )
    findings = [
        *history_notes,
        *extract_findings,
        *result.findings,
        *verify_outputs(result.files, result.placements, patch_set, context),
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
    emit_findings(findings)
    write_json(json_path, json_report(result.placements, findings, result.counts))
    counts = result.counts
    placed = counts["placed"] + counts["implicit_placed"]
    conflicts = counts["conflict"] + counts["implicit_conflict"]
    summary(options, f"{placed} placed, {conflicts} conflicts; summary in {summary_path}")
    if errors(findings):
        sys.exit(1)
