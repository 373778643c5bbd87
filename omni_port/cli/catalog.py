"""The `catalog` command: the markdown catalog rendered from patches."""

from __future__ import annotations

from pathlib import Path

import click

from omni_port import TOOL
from omni_port.api.files import encode
from omni_port.api.model import BadInput, Code, PatchSet, Report
from omni_port.api.patches import GENERATED, describe, markdown, read_patch_set
from omni_port.api.report import shown
from omni_port.api.writing import publish
from omni_port.cli import (
    Options,
    handle_errors,
    in_workspace,
    patches_option,
    platform_option,
    summary,
    write_options,
)
from omni_port.cli.files import write_files
from omni_port.cli.output import emit


def catalog_text(patch_set: PatchSet, patches_dir: str, runners: str = "NPU") -> str:
    """The catalog of a patch set, with a notice naming how it is made (``patches_dir`` as
    recorded: relative to the repository root), headed by the runners' name (``runners``:
    the platform's title)."""
    notice = (
        f"<!-- This catalog is {GENERATED} by {TOOL} from {patches_dir}/; "
        "edit titles in the patch files and run `omni-port catalog`. -->"
    )
    title = markdown.title_of(runners)
    return markdown.render(describe.entries(patch_set), title=title, preamble=notice)


@click.command("catalog")
@patches_option("Patches directory (default: `patches` in [tool.omni-port]).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Catalog file to write ('-' for stdout; default: `catalog` in [tool.omni-port], "
    "else stdout).",
)
@write_options("the catalog")
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def catalog_command(
    options: Options, patches_dir: Path | None, out: Path | None, check: bool, diff: bool
) -> Report:
    """Render the markdown catalog of omni blocks and edits from the patches.

    Titles come from the patch files, locations from the anchors, code from the blocks;
    marked blocks and implicit edits (code changed outside markers) are both listed.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = out or (config.path(config.catalog) if config.catalog else Path("-"))
    if check and str(target) == "-":
        message = (
            "no catalog to check: set `catalog` in [tool.omni-port] or give --out FILE "
            "(without one, `catalog` prints the catalog)"
        )
        raise BadInput.at(Code.OP005, config.file or "-", 1, message)
    patch_set = read_patch_set(directory)
    text = catalog_text(patch_set, config.recorded_path(directory), config.platform_info.title)
    if str(target) == "-" and not check:
        click.echo(text, nl=False)
        return Report()
    files = {target.name: encode(text)}
    changes, would = write_files(target.parent, files, (), check, diff)
    publish()
    count = len(describe.entries(patch_set))
    state = "unchanged" if changes.clean else ("would change" if check else "written")
    outcome = Report(findings=tuple(would), counts={"entries": count})
    emit(outcome, None, diff=diff)
    summary(options, f"{count} catalog entries; {shown(target)} {state}")
    return outcome
