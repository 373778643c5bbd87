"""The ``omni-port`` command line: options, output streams and exit codes.

Exit codes (every command):

\b
  0    clean: nothing to report, nothing would change
  1    findings: conflicts, drift, verification failures, or output that would change
  2    bad input or usage: unreadable file, malformed markers, syntax error, bad option,
       an output that cannot be written (read-only location, full disk)
  123  internal error (a bug in omni-port; please report it)
  130  interrupted (Ctrl-C); a command's writes are one transaction: nothing half-written
  141  stdout's reader stopped reading (a pager, `head`): quiet, as after SIGPIPE
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from omni_port import __version__
from omni_port.api import report
from omni_port.api.files import (
    NO_TABLE,
    PLATFORM_NAMES,
    built_in_defaults,
    default_cache,
    load,
    memo,
    with_platform,
)
from omni_port.api.model import BadInput, Code, Config, Report
from omni_port.cli.options import Options as Options  # every command's ctx.obj

F = TypeVar("F", bound=Callable[..., Any])

#: What ``--platform`` (of the commands that read a workspace) says.
PLATFORM_HELP = (
    "The runners the workspace keeps (default: `platform`, npu): npu, vLLM-Omni's NPU "
    "runners on vllm-ascend's NPUModelRunner; gpu, its GPU runners on vLLM's "
    "GPUModelRunner; or gpu-v2, its Model Runner V2 runners on vLLM's V2 GPUModelRunner. "
    "The keys left at one platform's defaults (source, upstream, patches, generated, "
    "upstream-class) take the other's."
)


#: Commands by name, loaded on first use: a command pays only for the stages it runs,
#: which keeps `check` on unchanged inputs fast.
COMMANDS = {
    "extract": "omni_port.cli.extract:extract_command",
    "sync": "omni_port.cli.sync:sync_command",
    "check": "omni_port.cli.check:check_command",
    "catalog": "omni_port.cli.catalog:catalog_command",
    "verify": "omni_port.cli.verify:verify_command",
    "codes": "omni_port.cli.codes:codes_command",
    "gpu-delta": "omni_port.cli.gpu_delta:gpu_delta_command",
    "resolve": "omni_port.cli.resolve:resolve_command",
    "continue": "omni_port.cli.resume:continue_command",
    "adopt": "omni_port.cli.resolve:adopt_command",
    "bases": "omni_port.cli.bases:bases_command",
    "upgrade": "omni_port.cli.upgrade:upgrade_command",
    "init": "omni_port.cli.init:init_command",
    "v2-report": "omni_port.cli.v2:v2_report_command",
    "v2-sync": "omni_port.cli.v2:v2_sync_command",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported when invoked (or listed in --help).

    Ctrl-C anywhere (reading options or the configuration, importing a command) exits 130,
    as inside a command: click would print "Aborted!" and exit 1, which `make sync` takes
    for findings and carries on after.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except (KeyboardInterrupt, click.exceptions.Abort):
            interrupted()
        except BrokenPipeError:
            closed_early()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, click.exceptions.Abort):
            interrupted()
        except BrokenPipeError:
            closed_early()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


#: Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


def interrupted() -> NoReturn:
    """Exit 130 with one line: not 1, which `make sync` accepts (findings) and would carry
    on after a Ctrl-C."""
    click.echo("omni-port: interrupted (nothing was half-written)", err=True)
    sys.exit(INTERRUPTED)


#: Exit code when stdout's reader stopped reading (128 + SIGPIPE), as a process that
#: ignores nothing exits in `omni-port bases | head`.
CLOSED_EARLY = 141


def closed_early() -> NoReturn:
    """Exit 141, quietly, when stdout's reader went away (a pager, ``head``): what was
    written was read; the rest has no reader. Python's last flush of stdout must not raise
    again, so stdout is pointed at the null device first."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    sys.exit(CLOSED_EARLY)


def handle_errors(command: F) -> F:
    """Run a command and exit with its report's code: BadInput exits 2 with its
    diagnostics, Ctrl-C 130, a closed stdout 141, anything unexpected 123 (the one place a
    command's exit code is decided)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            with memo.run():  # a command is one run: pure answers are kept until it ends
                _unconfigured()
                result = command(*args, **kwargs)
        except BadInput as error:
            from omni_port.cli.output import openable

            for finding in openable(error.findings):
                click.echo(report.text_line(finding), err=True)
            sys.exit(2)
        except (KeyboardInterrupt, click.exceptions.Abort):
            interrupted()
        except BrokenPipeError:
            closed_early()
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception:
            import traceback  # only on this path: it is start-up time every run would pay

            click.echo("omni-port: internal error (please report this):", err=True)
            click.echo(traceback.format_exc(), err=True)
            sys.exit(123)
        if isinstance(result, Report) and result.return_code:
            sys.exit(result.return_code)

    return wrapper  # type: ignore[return-value]


#: Commands whose work is to write the workspace (its patches, its generated runners): with
#: no configuration there is no workspace, and they refuse (``_unconfigured``).
WRITES_THE_WORKSPACE = frozenset({"extract", "sync", "resolve", "continue", "adopt", "v2-sync"})
#: Commands that read no configuration: `init` writes one.
NEEDS_NO_CONFIGURATION = frozenset({"init"})


def _unconfigured() -> None:
    """Without a configuration, a command says so on stderr, once, with the built-in
    defaults it takes: they name releases, inputs a maintainer chooses, not style (black's
    defaults) a maintainer may leave alone. A command that writes the workspace refuses
    instead (BadInput, OP005), as git does outside a repository: a workspace is its table,
    and patches written without one are of a release nobody chose, in folders that `check`
    and every later command, run from anywhere but here, never find.
    """
    context = click.get_current_context(silent=True)
    options = context.find_object(Options) if context is not None else None
    if context is None or options is None or options.config.file:
        return
    name = context.info_name or ""
    if name in NEEDS_NO_CONFIGURATION:
        return
    if name in WRITES_THE_WORKSPACE:
        message = (
            f"{NO_TABLE}, so there is no workspace for `omni-port {name}` to write: make one "
            "with `omni-port init --upstream SPEC` (or pass --config FILE) rather than take the "
            f"built-in defaults ({built_in_defaults()})"
        )
        raise BadInput.at(Code.OP005, "pyproject.toml", 0, message)
    click.echo(
        f"omni-port: warning: {NO_TABLE}: using the built-in defaults {built_in_defaults()} "
        "(folders relative to here); `omni-port init --upstream SPEC` writes a configuration",
        err=True,
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__)
@click.version_option(__version__, prog_name="omni-port")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="pyproject.toml with a [tool.omni-port] table (default: the nearest one).",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Download cache (default: $OMNI_PORT_CACHE, else $XDG_CACHE_HOME/omni-port, else "
    "~/.cache/omni-port).",
)
@click.option(
    "--upstream-repo",
    type=click.Path(file_okay=False, path_type=Path),
    help="A git clone of vllm-ascend (default: `upstream-repo`): history is its commits, "
    "and base detection ranks them.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.option(
    "--downloads",
    type=click.Choice(["members", "whole"]),
    help="What is downloaded of a release's wheel: the files read, by ranged requests, each "
    "checked against the wheel's RECORD (members), or the whole archive, checked against "
    "the index's sha256 as pip does (whole). Default: the configuration's, else members.",
)
@click.pass_context
def main(
    ctx: click.Context,
    config: Path | None,
    cache_dir: Path | None,
    upstream_repo: Path | None,
    quiet: bool,
    downloads: str | None,
) -> None:
    try:
        loaded = load(config)
    except BadInput as error:
        for finding in error.findings:
            click.echo(report.text_line(finding), err=True)
        ctx.exit(2)
    if upstream_repo is not None:
        loaded = replace(loaded, upstream_repo=str(upstream_repo.absolute()))
    if downloads is not None:
        loaded = replace(loaded, downloads=downloads)
    ctx.obj = Options(loaded, cache_dir or default_cache(), quiet)
    ctx.with_resource(_fetching(loaded, quiet))


def _fetching(config: Config, quiet: bool) -> contextlib.AbstractContextManager[None]:
    """How this run fetches releases: the configured downloads, and a meter of transfers
    on stderr when it is a terminal and the run is not quiet (as pip shows one)."""
    from omni_port.api.files import fetch
    from omni_port.cli.output import Meter

    meter = Meter() if not quiet and sys.stderr.isatty() else None
    return fetch.fetching(fetch.Fetching(fetch.Downloads(config.downloads), meter))


def in_workspace(writes: bool) -> Callable[[F], F]:
    """Run a command on its workspace (the configuration's folder): with the workspace lock
    held, exclusively when it ``writes`` (and not under ``--check``), shared when it only
    reads; a transaction a killed run left completed or rolled back first (said on
    stderr); and the command's writes staged in one transaction, published together when
    it returns (or earlier, where it commits itself), dropped when it fails.

    Put it under ``handle_errors``: a busy workspace (OP007) is an exit 2 like bad input.
    """

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(options: Options, /, *args: Any, **kwargs: Any) -> Any:
            from omni_port.api.files import transaction

            exclusive = writes and not kwargs.get("check", False)
            context = click.get_current_context()
            line = f"omni-port {context.info_name}"
            root = Path(options.config.root)
            with transaction.session(root, line, exclusive) as staged:
                for recovered in staged.recovered:
                    # Said even with -q, as git's warnings are: the workspace moved.
                    click.echo(f"omni-port: {recovered}", err=True)
                result = command(options, *args, **kwargs)
                if not staged.committed:
                    staged.commit()
            return result

        return wrapper  # type: ignore[return-value]

    return decorate


# --- options several commands share ----------------------------------------------------------


def platform_option(command: F) -> F:
    """``--platform`` of a command (``upgrade --platform gpu ...``): the command's
    ``Options`` move onto that platform (``with_platform``).

    Put it above ``click.pass_obj``: it replaces ``ctx.obj`` before the command reads it.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        name = kwargs.pop("platform")
        context = click.get_current_context()
        if name is not None and isinstance(context.obj, Options):
            config = with_platform(context.obj.config, name)
            context.obj = replace(context.obj, config=config)
        return command(*args, **kwargs)

    option = click.option("--platform", type=click.Choice(PLATFORM_NAMES), help=PLATFORM_HELP)
    return option(wrapper)  # type: ignore[return-value]


def patches_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--patches",
        "patches_dir",
        type=click.Path(file_okay=False, path_type=Path),
        help=help_text,
    )


def discard_option(command: F) -> F:
    """``--discard-decisions``: a command that would drop a recorded decision refuses
    without it (exit 2, OP205 naming each)."""
    return click.option(
        "--discard-decisions",
        is_flag=True,
        help="Write even when recorded resolutions would be dropped (refused, exit 2, without it).",
    )(command)


def discard_edits_option(command: F) -> F:
    """``--discard-edits``: a command that would overwrite a generated runner edited by
    hand refuses without it (exit 2, OP207 naming each edit)."""
    return click.option(
        "--discard-edits",
        is_flag=True,
        help="Overwrite generated runners edited by hand (refused, exit 2, without it; "
        "`omni-port continue` takes the edits instead). A copy of each goes to "
        ".omni-port/discarded/.",
    )(command)


def one_payload(json_path: Path | None, diff: bool) -> None:
    """``--diff`` and ``--json -`` would both take stdout: a usage error (exit 2)."""
    if diff and json_path is not None and str(json_path) == "-":
        raise click.UsageError("--diff and --json - cannot both take stdout; give --json FILE")


def json_option(command: F) -> F:
    return click.option(
        "--json",
        "json_path",
        type=click.Path(dir_okay=False, path_type=Path),
        callback=in_existing_folder,
        help="Write a JSON report ('-' for stdout).",
    )(command)


def in_existing_folder(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> Path | None:
    """A file the user names (``--json``, ``--summary``) goes into a folder that exists:
    a usage error (exit 2) before any work otherwise, never a folder made from a typo."""
    if value is None or str(value) == "-":
        return value
    if not value.absolute().parent.is_dir():
        raise click.BadParameter(f"{value.parent}/ is no directory; create it first", ctx, param)
    return value


def generated_option(help_text: str) -> Callable[[F], F]:
    """``--generated DIR`` (the configuration's ``generated``), with ``--out`` as its old
    name for one release."""

    def decorate(command: F) -> F:
        kind = click.Path(file_okay=False, path_type=Path)
        command = renamed("--out", "--generated", "generated", kind)(command)
        return click.option("--generated", type=kind, help=help_text)(command)

    return decorate


def renamed(old: str, new: str, dest: str, kind: click.Path) -> Callable[[F], F]:
    """Keep ``old`` as a hidden alias of the option ``new`` (parameter ``dest``) for one
    release: it still works, and says on stderr that it goes away.

    Put it above ``click.pass_obj``: it merges the alias into ``dest`` before the command
    sees its arguments; ``new`` wins when both are given.
    """
    hidden = f"renamed_{dest}"

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden)
            if value is not None:
                click.echo(
                    f"omni-port: warning: {old} is deprecated and goes away in the next "
                    f"release; use {new}",
                    err=True,
                )
                if kwargs.get(dest) is None:
                    kwargs[dest] = value
            return command(*args, **kwargs)

        option = click.option(old, hidden, type=kind, hidden=True, help=f"Old name of {new}.")
        return option(wrapper)  # type: ignore[return-value]

    return decorate


def write_options(what: str) -> Callable[[F], F]:
    """``--check`` and ``--diff`` of a command that writes ``what``."""

    def decorate(command: F) -> F:
        command = click.option("--diff", is_flag=True, help=f"Print the unified diff of {what}.")(
            command
        )
        return click.option(
            "--check", is_flag=True, help=f"Write nothing; exit 1 if {what} would change."
        )(command)

    return decorate


def summary(options: Options, message: str) -> None:
    """The one-line summary (and progress) go to stderr; stdout carries the payload."""
    if not options.quiet:
        click.echo(f"omni-port: {message}", err=True)


def run() -> None:
    """Console-script entry point."""
    main()


if __name__ == "__main__":
    run()
