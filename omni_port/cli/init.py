"""The `init` command: a repository made an omni-port workspace, where decisions are committed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from omni_port.api import workspace
from omni_port.api.files import PLATFORM_NAMES, transaction
from omni_port.api.model import Code, Finding, Report
from omni_port.api.report import shown
from omni_port.cli import Options, handle_errors, summary
from omni_port.cli.output import emit

#: How a workspace's CI and pre-commit run the gate (printed by `init`, on stdout).
SNIPPETS = """\
# .pre-commit-config.yaml (omni-port installed where the hooks run):
repos:
  - repo: local
    hooks:
      - id: omni-port-check
        name: omni-port check
        entry: omni-port check
        language: system
        pass_filenames: false
        always_run: true

# .github/workflows/omni-port.yml (install omni-port as your CI installs tools):
name: omni-port
on: [pull_request]
jobs:
  omni-port:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/cache@v4
        with:
          path: ~/.cache/omni-port
          key: omni-port-${{ hashFiles('pyproject.toml') }}
      - run: pip install omni-port  # or a pinned checkout of it
      - run: omni-port check --format github
"""


@click.command("init")
@click.argument(
    "directory",
    required=False,
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option(
    "--upstream",
    required=True,
    help="The upstream to port onto: vllm-ascend==X (vllm==X with --platform gpu), a path, "
    "or PATH@REV of a clone.",
)
@click.option(
    "--source",
    default="",
    help="Where the runners come from (default: the checkout itself, when DIRECTORY is a "
    "vLLM-Omni checkout).",
)
@click.option(
    "--base",
    default="",
    help="What the runners were ported from (default: none yet; `omni-port upgrade --base "
    "detect` finds and pins it).",
)
@click.option(
    "--patches",
    default=f"{workspace.FOLDER}/patches",
    show_default=True,
    help="Patches folder, relative to DIRECTORY.",
)
@click.option(
    "--generated",
    default=f"{workspace.FOLDER}/generated",
    show_default=True,
    help="Folder of the generated runners (what OMNI_PORT_GENERATED names), relative to DIRECTORY.",
)
@click.option(
    "--platform",
    type=click.Choice(PLATFORM_NAMES),
    default="npu",
    show_default=True,
    help="The runners the workspace keeps: npu (on vllm-ascend) or gpu (on vLLM).",
)
@click.pass_obj
@handle_errors
def init_command(options: Options, /, **given: Any) -> Report:
    """Make DIRECTORY (default: here), a vLLM-Omni checkout or any repository, an
    omni-port workspace: the place where the patches with every resolution, the lock and
    the generated runners are committed, and where CI runs `omni-port check`.

    Writes [tool.omni-port] into DIRECTORY's pyproject.toml (comments and layout kept) and
    a .gitignore in the workspace folder that keeps what must be committed; prints a
    pre-commit hook and a CI job on stdout. Then run `omni-port upgrade --base detect --to
    SPEC` in DIRECTORY and commit what it writes. A repository that already is a workspace
    is left as it is (exit 0).
    """
    request = workspace.InitRequest(**given)
    directory, upstream = request.directory, request.upstream
    made = workspace.init_workspace(request)
    config = shown(made.config)
    if made.existing:
        summary(options, f"already an omni-port workspace ({config}:{made.existing}): unchanged")
        return Report()
    with transaction.session(directory, "omni-port init", exclusive=True) as staged:
        for path, data in made.files.items():
            staged.write(path, data)
        staged.commit()
    hidden = workspace.ignored(directory, workspace.committed_paths(made.table))
    findings = [
        Finding(
            Code.OP005,
            shown(directory / path),
            0,
            "git would ignore this file, which a workspace commits: a rule of the repository "
            "hides it; add a `!` rule for it to a .gitignore",
        )
        for path in hidden
    ]
    keys = ", ".join(f'{key} = "{value}"' for key, value in made.table.items())
    summary(options, f"wrote {workspace.TABLE} in {config}: {keys}")
    summary(
        options,
        f"next: `omni-port upgrade --base detect --to {upstream}` in {shown(directory)}, "
        "then commit what it writes (the configuration, the patches, the lock, the runners)",
    )
    click.echo(SNIPPETS, nl=False)
    outcome = Report(findings=tuple(findings))
    emit(outcome, None, diff=True)  # stdout carries the snippets
    return outcome
