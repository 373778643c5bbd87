"""The `verify` command: static proof that generated runners are sound."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from omni_port import api
from omni_port.cli import (
    Options,
    finding_counts,
    handle_errors,
    json_option,
    patches_option,
    summary,
    v2,
)
from omni_port.cli.output import emit
from omni_port.model import Report


@click.command("verify")
@click.option(
    "--generated",
    type=click.Path(file_okay=False, path_type=Path),
    help="Generated directory (default: `generated` in [tool.omni-port]).",
)
@patches_option("Patches the runners were generated from (default: `patches`).")
@click.option(
    "--vllm",
    "vllm_text",
    default="",
    help="vLLM source: vllm==X, X, a path or 'installed' (default: the release the upstream "
    "vllm-ascend pairs with, read from its metadata; downloaded once, Python sources kept).",
)
@json_option
@click.pass_obj
@handle_errors
def verify_command(
    options: Options,
    generated: Path | None,
    patches_dir: Path | None,
    vllm_text: str,
    json_path: Path | None,
) -> Report:
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
    verified = api.verify(out, directory, options.settings, vllm_text)
    # The configured V2 tree is part of the workspace `verify` proves by default.
    also = v2.verify_configured(options) if generated is None else None
    if also is not None:
        verified = replace(
            verified,
            modules=(*verified.modules, *also.modules),
            placements=(*verified.placements, *also.placements),
            findings=(*verified.findings, *also.findings),
        )
    findings = verified.findings
    outcome = Report(verified.placements, findings, finding_counts(findings))
    emit(outcome, json_path)
    problems = sum(1 for f in findings if f.severity.value == "error")
    notes = len(findings) - problems
    modules = len(verified.modules)
    summary(options, f"verify: {modules} modules, {problems} problems, {notes} notes")
    return outcome
