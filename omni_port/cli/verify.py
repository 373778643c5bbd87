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
    v2,
    write_json,
)
from omni_port.cli.inputs import (
    load_upstream,
    read_bytes_or_none,
    read_lock,
    read_patches,
    verification_context,
    verify_outputs,
)
from omni_port.model import Finding, Placement
from omni_port.patches import lockfile


def _verify_v1(
    options: Options, out: Path, directory: Path, lock: lockfile.Lock, placements: list[Placement]
) -> list[Finding]:
    config = options.config
    patch_set, _ = read_patches(directory)
    loaded = load_upstream(lock.upstream, options, config.upstream_class)
    files = {
        name: read_bytes_or_none(out / name) or b"" for name in lock.outputs if name.endswith(".py")
    }
    context = verification_context(options, patch_set, loaded, lock.upstream, config.source)
    return verify_outputs(files, placements, patch_set, context)


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
    "--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)  # fmt: skip
@click.pass_obj
@handle_errors
def verify_command(
    options: Options, generated: Path | None, patches_dir: Path | None, json_path: Path | None
) -> None:
    """Prove the generated runners sound without running them.

    Every module compiles; no undefined, duplicate or splice-orphaned names; imports
    resolve against the pinned vllm-ascend and vllm-omni sources (vllm when installed or
    cached, otherwise an 'unverified' note); every local a block reads is bound on every
    path before it; overrides match upstream signatures; upstream attributes blocks use
    still exist.
    """
    config = options.config
    out = generated or config.path(config.generated)
    directory = patches_dir or config.path(config.patches)
    lock = read_lock(out)
    placements = [lockfile.placement(row) for row in lock.placements]
    files = [name for name in lock.outputs if name.endswith(".py")]
    if v2.is_v2(lock):
        findings = v2.verify_tree(options, out, lock)
    else:
        findings = _verify_v1(options, out, directory, lock, placements)
    if generated is None and v2.configured(options):
        # The configured V2 tree is part of the workspace `verify` proves by default.
        v2_out = config.path(config.v2_generated)
        v2_lock = read_lock(v2_out)
        findings.extend(v2.verify_tree(options, v2_out, v2_lock))
        placements.extend(lockfile.placement(row) for row in v2_lock.placements)
        files.extend(name for name in v2_lock.outputs if name.endswith(".py"))
    emit_findings(findings)
    counts = finding_counts(findings)
    write_json(json_path, report.json_report(placements, findings, counts))
    problems = len(errors(findings))
    notes = len(findings) - problems
    summary(options, f"verify: {len(files)} modules, {problems} problems, {notes} notes")
    if problems:
        sys.exit(1)
