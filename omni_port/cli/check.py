"""The `check` command: the CI gate for drift between catalog, code and outputs.

Its inputs are hashed first (read as bytes, nothing parsed); when the same inputs were
checked before, the cached findings answer at once, as black's cache does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api.model import Report
from omni_port.api.report import finding_counts, tally
from omni_port.cli import (
    Options,
    handle_errors,
    in_workspace,
    json_option,
    patches_option,
    platform_option,
    summary,
)
from omni_port.cli.output import emit


@click.command("check")
@click.argument("sources", nargs=-1)
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Markdown catalog to compare with the code (default: `catalog`).",
)
@click.option("--base", help="Upstream the sources were ported from; lists implicit edits (notes).")
@patches_option("Patches directory to keep current (default: `patches`).")
@click.option(
    "--generated",
    type=click.Path(file_okay=False, path_type=Path),
    help="Generated directory to keep current (default: `generated`).",
)
@click.option("--upstream", help="Upstream of the generated runners (default: from the lock file).")
@click.option(
    "--gpu",
    help="GPU runners (a release, a checkout or a folder): check hunk-level parity with them.",
)
@click.option(
    "--vllm",
    "vllm",
    multiple=True,
    help="vLLM release the GPU runners copy from (repeat for candidates, the first is the "
    "target; default: the GPU release's major.minor and the minors around it).",
)
@click.option(
    "--parity-allow",
    "allow",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reviewed parity gaps: 'module.py:Class.method[:hunk or statement prefix]  reason'.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="Finding format on stdout.",
)
@json_option
@click.option(
    "--no-cache",
    is_flag=True,
    help="Check everything even when no input changed since the last check.",
)
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=False)
def check_command(options: Options, /, **given: Any) -> Report:
    """The CI and pre-commit gate: catalog, markers, stale outputs, conflicts, parity.

    \b
    Problems (exit 1): nothing extracted or nothing generated (nothing-to-check: the gate
    cannot pass what it cannot check; `make sync` makes both); malformed markers the
    `marker-allow` list does not name, and its entries for a file read that match none
    (fixed or moved: the entry would accept the next defect on its line); catalog
    drift (uncatalogued, missing-from-code, content-drift, location-drift); patches or
    generated files that are stale; conflicts left in the generated runners or listed in
    the lock (unresolved-conflict); what verify finds in them; parity gaps. Notes (never
    exit 1): implicit edits the patches carry (with --base), imports that could not be
    verified, the malformed markers the `marker-allow` list names, its entries for files
    not read. Exit 0 when clean, 2 on bad input.
    """
    fmt, json_path = given.pop("fmt"), given.pop("json_path")
    request = api.checking.CheckRequest(**given)
    checked = api.checking.check_workspace(request, options.settings)
    findings = checked.findings
    if checked.cached:
        summary(options, "inputs unchanged since the last check: cached result, nothing parsed")
    counts = finding_counts(findings)
    outcome = Report(findings=tuple(findings), counts=counts)
    emit(outcome, json_path, fmt)
    summary(options, f"check: {tally(findings)}")
    return outcome
