"""The `bases` command: which upstream release the runners were ported from."""

from __future__ import annotations

import click

from omni_port import api
from omni_port.cli import Options, handle_errors, summary


@click.command("bases")
@click.argument("sources", nargs=-1)
@click.option(
    "--candidates",
    help="Comma-separated vllm-ascend versions or paths to compare "
    "(default: every release since 0.13.0, wheel or sdist).",
)
@click.pass_obj
@handle_errors
def bases_command(options: Options, sources: tuple[str, ...], candidates: str | None) -> None:
    """Rank vllm-ascend releases by how well they explain the runners' copied code.

    The best one is the base to give `extract --base`: the release the runners were
    ported from. Prints one line per candidate: version, similarity, statements compared.
    Runners with no method copied from the upstream class (nothing to compare) are exit 2.
    """
    located = api.load_runners(sources or (options.config.source,), options.settings)
    wanted = [c.strip() for c in candidates.split(",")] if candidates else []
    ranked = api.rank_bases(located, options.settings, wanted)
    best = api.best_base(ranked, located, options.config)
    for score in ranked:
        click.echo(f"{score.label}\t{score.similarity:.3f}\t{score.statements}")
    share = f"{best.similarity:.1%} of {best.statements} copied statements"
    summary(options, f"best base: {best.label} ({share})")
