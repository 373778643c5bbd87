"""The `verify` command: static proof that generated runners are sound."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from omni_port import api
from omni_port.api import report
from omni_port.api.files import lockfile, sha256
from omni_port.api.model import Finding, Report, Severity
from omni_port.api.report import finding_counts, in_directory, shown
from omni_port.api.writing import publish, staging
from omni_port.cli import (
    Options,
    handle_errors,
    in_workspace,
    json_option,
    patches_option,
    platform_option,
    summary,
    unresolved,
    v2,
)
from omni_port.cli.output import emit


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
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
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
    # Findings name the generated files as paths an editor opens, not bare module names.
    findings = in_directory(verified.findings, out, verified.modules)
    # The configured V2 tree is part of the workspace `verify` proves by default.
    also = v2.verify_configured(options) if generated is None else None
    if also is not None:
        v2_out = config.path(config.v2_generated)
        findings = (*findings, *in_directory(also.findings, v2_out, also.modules))
        verified = replace(
            verified,
            modules=(*verified.modules, *also.modules),
            placements=(*verified.placements, *also.placements),
            findings=findings,
        )
    outcome = Report(verified.placements, findings, finding_counts(findings))
    emit(outcome, json_path)
    # The runtime switch reads this verdict: it runs only runners verify passed.
    _record_verdict(out, [f for f in findings if _in_tree(f, out)])
    if also is not None:
        v2_out = config.path(config.v2_generated)
        _record_verdict(v2_out, [f for f in findings if _in_tree(f, v2_out)])
    publish()
    problems = sum(1 for f in findings if f.severity is Severity.ERROR)
    notes = len(findings) - problems
    modules = len(verified.modules)
    summary(options, f"verify: {modules} modules, {problems} problems, {notes} notes")
    summary(options, unresolved.verdict(findings))
    for line in unresolved.next_steps(options, out, directory, findings):
        summary(options, line)
    return outcome


def _in_tree(finding: Finding, directory: Path) -> bool:
    return finding.path.startswith(shown(directory) + "/")


def _record_verdict(directory: Path, findings: list[Finding]) -> None:
    lock = directory / lockfile.LOCK_NAME
    if not lock.is_file():
        return
    problems = tuple(report.text_line(f) for f in findings if f.severity is Severity.ERROR)
    verdict = lockfile.Verdict(sha256(lock.read_bytes()), problems)
    staging().write(directory / lockfile.VERDICT_NAME, lockfile.render_verdict(verdict).encode())
