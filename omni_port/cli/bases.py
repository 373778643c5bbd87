"""The `bases` command: which upstream release the runners were ported from."""

from __future__ import annotations

from collections.abc import Sequence

import click

from omni_port import api
from omni_port.cli import Options, handle_errors, summary
from omni_port.errors import BadInput
from omni_port.extract import basedetect
from omni_port.model import Code
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import Tree
from omni_port.sources.upstream import release_versions, version_key

#: Oldest vllm-ascend release the NPU runners were ever ported from.
FLOOR = "0.13.0"


def detect_base(
    options: Options, runners: Sequence[Tree], candidates: Sequence[str] = ()
) -> list[basedetect.BaseScore]:
    """Candidate vllm-ascend releases ranked by how well they explain the runners' copies."""
    wanted = list(candidates) or [
        v for v in release_versions("vllm-ascend") if version_key(v) >= version_key(FLOOR)
    ]
    trees = {}
    for text in wanted:
        upstream = api.load_upstream(text, options.settings)
        trees[upstream.label] = upstream.tree
    return basedetect.rank(runners, trees, options.config.upstream_class)


def best_base(
    options: Options, ranked: Sequence[basedetect.BaseScore], where: str
) -> basedetect.BaseScore:
    """The best of ``ranked``; BadInput (OP004 at ``where``, the first runner) when no
    candidate holds a single copied statement: a best of nothing would be a coin toss."""
    if not any(score.statements for score in ranked):
        message = (
            f"no method of these runners is a copy of {options.config.upstream_class}'s in "
            f"any of the {len(ranked)} candidates: no copied statements to compare"
        )
        raise BadInput.at(Code.OP004, where, 1, message)
    return ranked[0]


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
    runners = [parse(r.source.text, r.source.path) for r in located]
    wanted = [c.strip() for c in candidates.split(",")] if candidates else []
    ranked = detect_base(options, runners, wanted)
    best = best_base(options, ranked, located[0].source.path if located else "-")
    for score in ranked:
        click.echo(f"{score.label}\t{score.similarity:.3f}\t{score.statements}")
    share = f"{best.similarity:.1%} of {best.statements} copied statements"
    summary(options, f"best base: {best.label} ({share})")
