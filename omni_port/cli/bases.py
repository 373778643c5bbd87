"""The `bases` command: which upstream release the runners were ported from."""

from __future__ import annotations

import click

from omni_port import api
from omni_port.cli import Options, handle_errors, platform_option, summary


@click.command("bases")
@click.argument("sources", nargs=-1)
@click.option(
    "--candidates",
    help="Comma-separated vllm-ascend versions or paths to compare "
    "(default: every release since 0.13.0, wheel or sdist).",
)
@platform_option
@click.pass_obj
@handle_errors
def bases_command(options: Options, sources: tuple[str, ...], candidates: str | None) -> None:
    """Rank vllm-ascend releases, or the commits of a clone (`--upstream-repo`), by how
    well they explain the runners' copied code.

    The best one is the base to give `extract --base`: the revision the runners were
    ported from. Prints one line per candidate: label, similarity, statements compared,
    and for a commit the branch it is on; then the methods another candidate explains
    clearly better (a piecewise port: the hand port copied them from another revision).
    Then the releases left out, each with why: published after the runners' release (a
    port cannot copy what came later). Runners with no method copied from the upstream
    class (nothing to compare) are exit 2.
    """
    located = api.load_runners(sources or (options.config.source,), options.settings)
    wanted = [c.strip() for c in candidates.split(",")] if candidates else []
    bases = api.rank_bases(located, options.settings, wanted)
    best = api.workflows.best_base(bases.ranked, located, options.config)
    for score in bases.ranked:
        on = f"\t{score.lineage}" if score.lineage else ""
        click.echo(f"{score.label}\t{score.similarity:.3f}\t{score.statements}{on}")
    for piece in bases.pieces:
        click.echo(f"piecewise: {piece}")
    for label, why in bases.left_out:
        click.echo(f"left out: {label}: {why}")
    share = f"{best.similarity:.1%} of {best.statements} copied statements"
    on = f" on {best.lineage}" if best.lineage else ""
    said = f"best base: {best.label}{on} ({share})"
    other = bases.runner_up()
    if other is not None and best.lineage:
        said += (
            f"; best on {other.lineage or 'the releases'}: {other.label} ({other.similarity:.1%})"
        )
    summary(options, f"{said}; {bases.bound.describe()}")
