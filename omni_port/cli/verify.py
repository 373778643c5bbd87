"""The `verify` command: static proof that generated runners are sound."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from omni_port import report
from omni_port.cli import (
    Options,
    emit_findings,
    errors,
    finding_counts,
    handle_errors,
    summary,
    write_json,
)
from omni_port.cli.inputs import (
    load_upstream,
    patches_source,
    read_bytes_or_none,
    read_lock,
    read_patches,
    verification_context,
    verify_outputs,
)
from omni_port.patches import lockfile


@click.command("verify")
@click.option(
    "--generated", type=click.Path(file_okay=False, path_type=Path),
    help="Generated directory (default: `generated` in [tool.omni-port]).",
)  # fmt: skip
@click.option(
    "--patches", "patches_dir", type=click.Path(file_okay=False, path_type=Path),
    help="Patches the runners were generated from (default: `patches`).",
)  # fmt: skip
@click.option(
    "--vllm", "vllm_text", default="",
    help="vLLM source: vllm==X, X, a path or 'installed' (default: the release the upstream "
    "vllm-ascend pairs with, read from its metadata; downloaded once, Python sources kept).",
)  # fmt: skip
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)  # fmt: skip
@click.pass_obj
@handle_errors
def verify_command(
    options: Options,
    generated: Path | None,
    patches_dir: Path | None,
    vllm_text: str,
    json_path: Path | None,
) -> None:
    """Prove the generated runners sound without running them.

    Every module compiles; no undefined, duplicate or splice-orphaned names; imports
    resolve against the pinned vllm-ascend, vllm-omni and vLLM sources (an 'unverified'
    note names a source that cannot be had); every local a block reads is bound on every
    path before it; overrides match upstream signatures; upstream attributes blocks use
    still exist; arguments and unpacking targets line up with the fields and parameters
    they fill.
    """
    config = options.config
    out = generated or config.path(config.generated)
    directory = patches_dir or config.path(config.patches)
    lock = read_lock(out)
    patch_set, _ = read_patches(directory)
    loaded = load_upstream(lock.upstream, options, config.upstream_class)
    files = {
        name: read_bytes_or_none(out / name) or b"" for name in lock.outputs if name.endswith(".py")
    }
    placements = [lockfile.placement(row) for row in lock.placements]
    source = patches_source(patch_set, config.source)
    context = verification_context(options, patch_set, loaded, lock.upstream, source, vllm_text)
    findings = verify_outputs(files, placements, patch_set, context)
    emit_findings(findings)
    counts = finding_counts(findings)
    write_json(json_path, report.json_report(placements, findings, counts))
    problems = len(errors(findings))
    notes = len(findings) - problems
    summary(options, f"verify: {len(files)} modules, {problems} problems, {notes} notes")
    if problems:
        sys.exit(1)
