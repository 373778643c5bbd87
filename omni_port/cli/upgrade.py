"""The `upgrade` command: from "a new vllm-ascend is out" to a reviewable change."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api.files import config_file, encode, pinned
from omni_port.api.inputs import reviewed
from omni_port.api.model import Code, Finding, Report
from omni_port.api.report import shown
from omni_port.api.writing import keep_hand_edits, publish, save_patches, staging
from omni_port.cli import (
    Options,
    discard_edits_option,
    discard_option,
    generated_option,
    handle_errors,
    in_existing_folder,
    in_workspace,
    json_option,
    patches_option,
    platform_option,
    summary,
)
from omni_port.cli.files import write_files
from omni_port.cli.output import emit


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
    lenient: bool
    discard_decisions: bool
    discard_edits: bool


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
    callback=in_existing_folder,
    help="Markdown summary for the pull request ('-' for stdout).",
)
@json_option
@click.option(
    "--candidates",
    help="With --base detect: comma-separated releases to rank "
    "(default: every release since 0.13.0, wheel or sdist).",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Extract despite malformed markers; list them as findings, and in the `marker-allow` "
    "list those it did not name (only then do later commands pass them).",
)
@discard_option
@discard_edits_option
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def upgrade_command(options: Options, /, **given: Any) -> Report:
    """Port the runners onto a new upstream and write a summary ready for a pull request.

    Extracts the runners against their base (detected when asked), syncs onto --to,
    verifies the result, and writes the summary: every block placed or in conflict with
    its candidates, the upstream changes near each block, copied methods upstream changed
    or removed, and new upstream methods. Exit 1 when anything needs a maintainer.

    The workspace moves with it: [tool.omni-port] of the configuration (pyproject.toml
    here when there is none) is edited in place, comments and layout kept, to name the
    source, the base (the detected one) and the target, so that `extract --check`,
    `sync --check`, `check` and `make sync` agree with what the upgrade wrote.

    Everything it writes (patches, runners, lock, summary, configuration) is published
    together once every check passed, or not at all. A generated runner edited since sync
    wrote it is never overwritten (exit 2, OP207) unless --discard-edits.
    """
    flags = UpgradeFlags(**given)
    summary_path, json_path = flags.summary_path, flags.json_path
    if str(summary_path) == "-" and json_path is not None and str(json_path) == "-":
        raise click.UsageError("--summary - and --json - cannot both take stdout")
    config = options.config
    base = flags.base if flags.base is not None else config.base
    patches = flags.patches_dir or config.path(config.patches)
    generated = flags.generated or config.path(config.generated)
    # Only an upgrade of the workspace moves it: one into other folders (an experiment, a
    # test run from a repository's root) leaves the configuration be.
    workspace = [config.path(config.patches), config.path(config.generated)]
    pin = [os.path.abspath(p) for p in (patches, generated)] == [
        os.path.abspath(p) for p in workspace
    ]
    request = api.UpgradeRequest(
        flags.sources,
        flags.target,
        base,
        patches,
        generated,
        tuple(c.strip() for c in flags.candidates.split(",")) if flags.candidates else (),
        lenient=flags.lenient,
        discard=flags.discard_decisions,
        pin=pin,
    )
    done = api.upgrade(request, options.settings)
    if done.detected is not None:
        best = done.detected
        summary(options, f"detected base {best.label} ({best.similarity:.1%} of copied statements)")
    kept = keep_hand_edits(request.generated, done.files, flags.discard_edits)
    save_patches(request.patches, done.patch_set)
    write_files(request.generated, done.files, api.inputs.previous_outputs(request.generated))
    if str(summary_path) != "-":
        staging().write(summary_path, encode(done.summary))
    accepted = _accept(options, done.accepted, flags.target)
    pinned_keys = _pin(options, done.pins)
    publish()
    if str(summary_path) == "-":
        click.echo(done.summary, nl=False)
    for copy in kept:
        summary(options, f"discarded a hand edit; its file was kept as {copy}")
    for line in (accepted, pinned_keys):
        if line:
            summary(options, line)
    result = done.synced.result
    outcome = Report(result.placements, done.findings, result.counts)
    emit(outcome, json_path, diff=str(summary_path) == "-")
    where = "on stdout" if str(summary_path) == "-" else f"in {summary_path}"
    summary(options, f"{_outcome(outcome, done.problems)}; summary {where}")
    return outcome


def _accept(options: Options, defects: tuple[reviewed.Defect, ...], to: str) -> str:
    """Stage ``defects`` listed in the marker-allow list (started when there is none, before
    the configuration names it); returns the line that says which it added ("" for none)."""
    if not defects:
        return ""
    config = options.config
    target = config.path(config.marker_allow or reviewed.DEFAULT_LIST)
    why = f"accepted by `omni-port upgrade --lenient --to {to}`"
    lines = [reviewed.entry_line(d, f"{why}: {d.finding.message}") for d in defects]
    old = target.read_text(encoding="utf-8") if target.is_file() else ""
    staging().write(target, reviewed.with_entries(old, lines).encode("utf-8"))
    keys = ", ".join(d.key for d in defects)
    return f"accepted in {shown(target)} (say why there): {keys}"


def _outcome(outcome: Report, problems: Sequence[Finding]) -> str:
    """What the upgrade left, said so that the exit code follows from it, as at the end of
    `verify` and `make sync`: ``96 placed, 0 conflicts, 2 verify problems (2 OP508): not
    deployable until resolved``; a problem an open conflict owns is counted apart
    (``2 OP507 behind conflicts``). ``problems``: the errors other than conflicts, as the
    summary lists them (``Upgraded.problems``)."""
    counts = outcome.counts
    placed = counts["placed"] + counts["implicit_placed"]
    # A region of a copy whose upstream method vanished is a conflict of no block (OP310).
    regions = sum(1 for f in outcome.findings if f.code is Code.OP310)
    conflicts = max(counts["conflict"] + counts["implicit_conflict"], regions)
    said = f"{placed} placed, {conflicts} conflicts, "
    if problems:
        by_code = Counter(_kind(f) for f in problems)
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(by_code.items()))
        said += f"{len(problems)} verify problems ({listed})"
    else:
        said += "no verify problems"
    return said + (": not deployable until resolved" if outcome.return_code else "")


def _kind(problem: Finding) -> str:
    """How the last line counts a problem: by its code, and apart when an open conflict owns
    it (``2 OP507 behind conflicts``: resolving them is the fix)."""
    return (
        f"{problem.code.value} behind conflicts" if problem.behind_conflict else problem.code.value
    )


def _pin(options: Options, pins: dict[str, str]) -> str:
    """Stage the configuration, edited in place to name what the upgrade used (``pins``,
    none for an upgrade into other folders); returns the line that says which keys changed
    ("" when none did)."""
    if not pins:
        return ""
    config = options.config
    wanted = dict(pins)
    target = config_file(config)
    old = target.read_text(encoding="utf-8") if target.is_file() else ""
    new = pinned(old, wanted)
    if new == old:
        return ""
    staging().write(target, new.encode("utf-8"))
    changed = ", ".join(f"{key} = {_shown(value)}" for key, value in wanted.items())
    return f"pinned in {shown(target)} [tool.omni-port]: {changed}"


def _shown(value: str) -> str:
    return f'"{value}"'
