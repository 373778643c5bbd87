"""The ``omni-port`` command line: options, output streams and exit codes.

Exit codes (every command):

\b
  0    clean: nothing to report, nothing would change
  1    findings: conflicts, drift, verification failures, or output that would change
  2    bad input or usage: unreadable file, malformed markers, syntax error, bad option
  123  internal error (a bug in omni-port; please report it)
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from omni_port import (
    __version__,
    catalog,
    describe,
    drift,
    extract,
    generate,
    lockfile,
    report,
    splice,
)
from omni_port.config import Config, load
from omni_port.errors import BadInput
from omni_port.markers import scan
from omni_port.model import Code, Finding, ModulePatches, PatchSet, Severity
from omni_port.patchfile import INDEX_NAME, render_patch_set
from omni_port.store import Changes, apply, existing, plan, read_patch_set, unified_diff
from omni_port.syntax import Tree, parse
from omni_port.textio import SourceText, encode, read_source
from omni_port.upstream import (
    ASCEND_RUNNER,
    OMNI_GPU_RUNNERS,
    Located,
    Progress,
    default_cache,
    locate,
    locate_runners,
    parse_spec,
)

TOOL = f"omni-port {__version__}"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Options:
    """Global options, shared by every command through ``ctx.obj``."""

    config: Config
    cache: Path
    quiet: bool

    def progress(self) -> Progress | None:
        if self.quiet:
            return None
        return lambda message: click.echo(f"omni-port: {message}", err=True)


def handle_errors(command: F) -> F:
    """Turn BadInput into exit 2 with its diagnostics, anything unexpected into exit 123."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except BadInput as error:
            for finding in error.findings:
                click.echo(report.text_line(finding), err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            click.echo("omni-port: internal error (please report this):", err=True)
            click.echo(traceback.format_exc(), err=True)
            sys.exit(123)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__)
@click.version_option(__version__, prog_name="omni-port")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="pyproject.toml with a [tool.omni-port] table (default: the nearest one).",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Download cache (default: $OMNI_PORT_CACHE or ~/.cache/omni-port).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.pass_context
def main(ctx: click.Context, config: Path | None, cache_dir: Path | None, quiet: bool) -> None:
    try:
        loaded = load(config)
    except BadInput as error:
        for finding in error.findings:
            click.echo(report.text_line(finding), err=True)
        ctx.exit(2)
    ctx.obj = Options(loaded, cache_dir or default_cache(), quiet)


def _summary(options: Options, message: str) -> None:
    if not options.quiet:
        click.echo(f"omni-port: {message}", err=True)


def _emit_findings(findings: Iterable[Finding], fmt: str = "text") -> None:
    text = report.format_findings(findings, fmt)
    if text:
        click.echo(text, nl=False)


def _write_json(path: Path | None, document: str) -> None:
    if path is None:
        return
    if str(path) == "-":
        click.echo(document, nl=False)
        return
    from omni_port.textio import write_atomic

    write_atomic(path, document.encode("utf-8"))


def _errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]


def _fail(findings: Sequence[Finding]) -> NoReturn:
    raise BadInput(findings)


# --- extract --------------------------------------------------------------------------------


def load_base(text: str, options: Options) -> extract.Base:
    """Parse the upstream base named by ``text`` (a version, a path or ``installed``)."""
    located = locate(
        parse_spec(text, "vllm-ascend"), ASCEND_RUNNER, options.cache, options.progress()
    )
    source = located.source
    return extract.Base(located.label, source.sha256, parse(source.text, source.path))


def extract_all(
    sources: Sequence[Located], base: extract.Base | None, ext_options: extract.ExtractOptions
) -> tuple[PatchSet, list[Finding]]:
    """Extract every source; all bad inputs are reported together (BadInput) and none is kept."""
    modules: list[ModulePatches] = []
    findings: list[Finding] = []
    failures: list[Finding] = []
    for located in sources:
        name = Path(located.member).name
        try:
            extraction = extract.extract_module(located.source, name, base, ext_options)
        except BadInput as error:
            failures.extend(error.findings)
            continue
        module = extraction.module
        if located.label != located.source.path:
            module = replace(module, source=located.source.path)
        modules.append(module)
        findings.extend(extraction.findings)
    if failures:
        _fail(failures)
    return PatchSet(tuple(modules)), findings


def carry_edits(new: PatchSet, directory: Path) -> PatchSet:
    """Keep titles and conflict resolutions a maintainer wrote into the previous patches."""
    try:
        old = read_patch_set(directory)
    except BadInput:
        return new
    previous = {piece.id: piece for module in old.modules for piece in module.pieces}
    modules = []
    for module in new.modules:
        pieces = tuple(_carry(piece, previous.get(piece.id)) for piece in module.pieces)
        modules.append(replace(module, pieces=pieces))
    return PatchSet(tuple(modules))


def _carry(piece: Any, old: Any) -> Any:
    if old is None or type(old) is not type(piece) or not hasattr(piece, "title"):
        return piece
    piece = replace(piece, title=old.title) if old.title else piece
    anchor = getattr(piece, "anchor", None)
    old_anchor = getattr(old, "anchor", None)
    if anchor is None or old_anchor is None or old_anchor.resolution is None:
        return piece
    if replace(old_anchor, resolution=None) == anchor:
        piece = replace(piece, anchor=old_anchor)
    return piece


def write_files(
    options: Options,
    root: Path,
    files: dict[str, bytes],
    stale: Iterable[str],
    check: bool,
    diff: bool,
) -> Changes:
    """Write (or, with --check, only compare) a tree of outputs; print a diff on request."""
    changes = plan(root, files, stale)
    if diff:
        click.echo(unified_diff(root, files, changes), nl=False)
    if check:
        for rel in (*changes.changed, *changes.removed):
            _summary(
                options, f"would {'remove' if rel in changes.removed else 'rewrite'} {root / rel}"
            )
    elif not changes.clean:
        apply(root, files, changes)
    return changes


@main.command("extract")
@click.argument("sources", nargs=-1)
@click.option(
    "--patches",
    "patches_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Patches directory to write.",
)
@click.option(
    "--base", help="Upstream the sources were ported from: vllm-ascend==X, a path, or 'installed'."
)
@click.option(
    "--upstream-class", help="Upstream class the runner classes copy (default NPUModelRunner)."
)
@click.option(
    "--lenient", is_flag=True, help="Extract despite malformed markers; list them as findings."
)
@click.option(
    "--implicit/--no-implicit",
    default=True,
    show_default=True,
    help="Record unmarked edits against the base.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the patches would change.")
@click.option("--diff", is_flag=True, help="Print the unified diff of the patch files.")
@click.pass_obj
@handle_errors
def extract_command(
    options: Options,
    sources: tuple[str, ...],
    patches_dir: Path | None,
    base: str | None,
    upstream_class: str | None,
    lenient: bool,
    implicit: bool,
    json_path: Path | None,
    check: bool,
    diff: bool,
) -> None:
    """Scan runner files for Omni-new blocks and write them as anchored patches.

    SOURCES are runner files, a directory holding them, or a release such as
    vllm-omni==0.30.0 (default: `source` in [tool.omni-port]). With --base, blocks that
    replaced upstream statements are recorded as replacements, and unmarked edits are
    carried as implicit edits.
    """
    config = options.config
    located = [
        r
        for text in (sources or (config.source,))
        for r in locate_runners(text, options.cache, options.progress())
    ]
    base_text = base if base is not None else config.base
    base_tree = load_base(base_text, options) if base_text else None
    ext_options = extract.ExtractOptions(
        upstream_class=upstream_class or config.upstream_class, lenient=lenient, implicit=implicit
    )
    patch_set, findings = extract_all(located, base_tree, ext_options)
    directory = patches_dir or config.path(config.patches)
    patch_set = carry_edits(patch_set, directory)
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    changes = write_files(options, directory, files, existing(directory, "*/*.patch"), check, diff)
    _emit_findings(findings)
    rows = report.extracted_blocks(patch_set)
    counts = _extract_counts(patch_set, rows, changes)
    _write_json(json_path, report.json_report(rows, findings, counts))
    _summary(options, _extract_summary(counts, check))
    if _errors(findings) or (check and not changes.clean):
        sys.exit(1)


def _extract_counts(patch_set: PatchSet, rows: Sequence[Any], changes: Changes) -> dict[str, int]:
    from omni_port.model import Chunk, Copy

    pieces = [p for m in patch_set.modules for p in m.pieces]
    return {
        "modules": len(patch_set.modules),
        "marked": sum(1 for r in rows if r.marked),
        "implicit": sum(1 for r in rows if not r.marked),
        "copies": sum(1 for p in pieces if isinstance(p, Copy)),
        "owned": sum(1 for p in pieces if isinstance(p, Chunk) and p.name and not p.marked),
        "written": len(changes.changed),
        "removed": len(changes.removed),
        "unchanged": len(changes.unchanged),
    }


def _extract_summary(counts: dict[str, int], check: bool) -> str:
    verb = "would write" if check else "wrote"
    files = (
        f"{verb} {counts['written']} files, removed {counts['removed']}"
        if counts["written"] or counts["removed"]
        else "patches unchanged"
    )
    return (
        f"{counts['marked']} marked blocks, {counts['implicit']} implicit edits, "
        f"{counts['copies']} copied members, {counts['owned']} owned members "
        f"in {counts['modules']} modules; {files}"
    )


# --- sync -----------------------------------------------------------------------------------


def load_upstream(text: str, options: Options, class_name: str = "") -> splice.Upstream:
    """Parse the upstream module named by ``text`` (a version, a path or ``installed``)."""
    located = locate(
        parse_spec(text, "vllm-ascend"), ASCEND_RUNNER, options.cache, options.progress()
    )
    source = located.source
    module = ASCEND_RUNNER.removesuffix(".py").replace("/", ".")
    tree = parse(source.text, source.path)
    return splice.Upstream(located.label, source.sha256, tree, module, class_name)


def read_patches(directory: Path) -> tuple[PatchSet, dict[str, str]]:
    """A patch set and the text of its files (for the digest in headers and the lock)."""
    patch_set = read_patch_set(directory)
    return patch_set, render_patch_set(patch_set, TOOL)


def previous_outputs(out: Path) -> list[str]:
    """Files the previous sync wrote (from its lock), so stale ones can be removed."""
    lock_path = out / lockfile.LOCK_NAME
    if not lock_path.is_file():
        return []
    try:
        return list(lockfile.parse(lock_path.read_text(encoding="utf-8"), str(lock_path)).outputs)
    except BadInput:
        return []


@main.command("sync")
@click.option(
    "--patches",
    "patches_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Patches directory (default: `patches` in [tool.omni-port]).",
)
@click.option(
    "--upstream",
    help="Upstream to port onto: vllm-ascend==X, a path to model_runner_v1.py, or 'installed'.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default: `generated`).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)
@click.option(
    "--upstream-class",
    help="Upstream class to copy methods from (default: `upstream-class`, NPUModelRunner); "
    "copies extracted from another class (e.g. GPU runners) are ported onto it.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the output would change.")
@click.option("--diff", is_flag=True, help="Print the unified diff of the output.")
@click.pass_obj
@handle_errors
def sync_command(
    options: Options,
    patches_dir: Path | None,
    upstream: str | None,
    out: Path | None,
    json_path: Path | None,
    upstream_class: str | None,
    check: bool,
    diff: bool,
) -> None:
    """Generate the NPU runners from the patches and an upstream vllm-ascend.

    Every block is either placed where its anchor says, or reported as a conflict with its
    best candidates and left commented out at the best one (exit 1).
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = out or config.path(config.generated)
    upstream_text = upstream or config.upstream
    patch_set, patch_files = read_patches(directory)
    loaded = load_upstream(upstream_text, options, upstream_class or config.upstream_class)
    command = (
        f"omni-port sync --patches {_shown(directory)} --upstream {loaded.label} "
        f"--out {_shown(target)}"
    )
    result = generate.sync(patch_set, patch_files, loaded, TOOL, command)
    for module in patch_set.modules:
        _summary(options, _module_line(module.name, result.placements))
    if any(f.code is Code.OP305 for f in result.findings):
        _fail([f for f in result.findings if f.code is Code.OP305])
    changes = write_files(options, target, result.files, previous_outputs(target), check, diff)
    _emit_findings(result.findings)
    counts = {**result.counts, "written": len(changes.changed), "unchanged": len(changes.unchanged)}
    _write_json(json_path, report.json_report(result.placements, result.findings, counts))
    _summary(options, _sync_summary(counts, changes, check, target))
    if _errors(result.findings) or (check and not changes.clean):
        sys.exit(1)


def _shown(path: Path) -> str:
    return report.display_path(str(path.resolve())) if path.is_absolute() else str(path)


def _module_line(name: str, placements: Sequence[Any]) -> str:
    mine = [p for p in placements if p.module == name]
    placed = sum(1 for p in mine if p.status.value == "placed")
    conflicts = sum(1 for p in mine if p.status.value == "conflict")
    return f"{name}: {placed} placed, {conflicts} conflicts"


def _sync_summary(counts: dict[str, int], changes: Changes, check: bool, target: Path) -> str:
    if changes.clean:
        files = f"{_shown(target)}/ unchanged"
    else:
        verb = "would write" if check else "wrote"
        files = f"{verb} {len(changes.changed)} files to {_shown(target)}/"
    return (
        f"{counts['placed']} blocks placed, {counts['conflict']} conflicts; "
        f"{counts['implicit_placed']} implicit edits placed, "
        f"{counts['implicit_conflict']} conflicts; "
        f"{counts['carried']} marked regions and {counts['owned']} owned members carried; {files}"
    )


# --- catalog --------------------------------------------------------------------------------


def catalog_text(patch_set: PatchSet, patches_dir: Path) -> str:
    """The catalog of a patch set, with a notice naming how it is made."""
    notice = (
        f"<!-- This catalog is {generate.GENERATED} by {TOOL} from {_shown(patches_dir)}/; "
        "edit titles in the patch files and run `omni-port catalog`. -->"
    )
    return catalog.render(describe.entries(patch_set), preamble=notice)


@main.command("catalog")
@click.option(
    "--patches", "patches_dir", type=click.Path(file_okay=False, path_type=Path),
    help="Patches directory (default: `patches` in [tool.omni-port]).",
)  # fmt: skip
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path),
    help="Catalog file to write ('-' for stdout; default: `catalog` in [tool.omni-port], "
    "else stdout).",
)  # fmt: skip
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the catalog would change.")
@click.option("--diff", is_flag=True, help="Print the unified diff of the catalog.")
@click.pass_obj
@handle_errors
def catalog_command(
    options: Options, patches_dir: Path | None, out: Path | None, check: bool, diff: bool
) -> None:
    """Render the markdown catalog of omni blocks and edits from the patches.

    Titles come from the patch files, locations from the anchors, code from the blocks;
    marked blocks and implicit (unmarked) edits are both listed.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = out or (config.path(config.catalog) if config.catalog else Path("-"))
    patch_set = read_patch_set(directory)
    text = catalog_text(patch_set, directory)
    if str(target) == "-" and not check:
        click.echo(text, nl=False)
        return
    files = {target.name: encode(text)}
    changes = write_files(options, target.parent, files, (), check, diff)
    count = len(describe.entries(patch_set))
    state = "unchanged" if changes.clean else ("would change" if check else "written")
    _summary(options, f"{count} catalog entries; {_shown(target)} {state}")
    if check and not changes.clean:
        sys.exit(1)


# --- check ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckInputs:
    """Everything ``check`` reads, resolved from flags and configuration."""

    sources: tuple[Located, ...]
    catalog_path: Path | None
    base: str
    patches: Path
    generated: Path
    upstream: str
    gpu: tuple[Located, ...]
    allow_path: Path | None


def _check_inputs(
    options: Options, sources: tuple[str, ...], catalog_path: Path | None, base: str | None,
    patches_dir: Path | None, generated: Path | None, upstream: str | None, gpu: str | None,
    allow: Path | None,
) -> CheckInputs:  # fmt: skip
    config = options.config
    progress = options.progress()
    located = tuple(
        r
        for text in (sources or (config.source,))
        for r in locate_runners(text, options.cache, progress)
    )
    gpu_located = (
        tuple(locate_runners(gpu, options.cache, progress, OMNI_GPU_RUNNERS)) if gpu else ()
    )
    if catalog_path is None and config.catalog:
        catalog_path = config.path(config.catalog)
    return CheckInputs(
        located, catalog_path, base if base is not None else config.base,
        patches_dir or config.path(config.patches), generated or config.path(config.generated),
        upstream or config.upstream, gpu_located, allow,
    )  # fmt: skip


def run_checks(inputs: CheckInputs, options: Options) -> list[Finding]:
    """Every drift check the inputs allow, in a stable order."""
    runners = [drift.Runner(Path(s.member).name, _parse_lenient(s.source)) for s in inputs.sources]
    findings: list[Finding] = []
    for runner in runners:
        findings.extend(scan(runner.tree).findings)
    base_tree = load_base(inputs.base, options) if inputs.base else None
    ext_options = extract.ExtractOptions(upstream_class=options.config.upstream_class, lenient=True)
    patch_set, _ = extract_all(inputs.sources, base_tree, ext_options)
    if inputs.catalog_path is not None:
        source = read_source(inputs.catalog_path)
        parsed = catalog.parse(source.text, source.path)
        findings.extend(drift.catalog_findings(parsed, source.path, runners))
    if base_tree is not None:
        findings.extend(drift.divergence_findings(patch_set.modules))
    findings.extend(_stale_patches(patch_set, inputs.patches))
    findings.extend(_stale_generated(inputs, options))
    if inputs.gpu:
        findings.extend(_parity(inputs, runners))
    return findings


def _parse_lenient(source: SourceText) -> Tree:
    return parse(source.text, source.path)


def _stale_patches(patch_set: PatchSet, directory: Path) -> list[Finding]:
    if not (directory / INDEX_NAME).is_file():
        return []
    files = {
        rel: encode(text)
        for rel, text in render_patch_set(carry_edits(patch_set, directory), TOOL).items()
    }
    actual = {rel: _bytes(directory / rel) for rel in files}
    stale = existing(directory, "*/*.patch")
    findings = drift.stale_findings(files, actual, _shown(directory), "omni-port extract")
    for rel in sorted(set(stale) - set(files)):
        message = f"{rel} is no longer extracted from the sources; run `omni-port extract`"
        findings.append(
            Finding("stale-generated", Code.OP406, f"{_shown(directory)}/{rel}", 1, message)
        )
    return findings


def _stale_generated(inputs: CheckInputs, options: Options) -> list[Finding]:
    lock_path = inputs.generated / lockfile.LOCK_NAME
    if not lock_path.is_file() or not (inputs.patches / INDEX_NAME).is_file():
        return []
    lock = lockfile.parse(lock_path.read_text(encoding="utf-8"), str(lock_path))
    patch_set, patch_files = read_patches(inputs.patches)
    loaded = load_upstream(lock.upstream, options, options.config.upstream_class)
    result = generate.sync(patch_set, patch_files, loaded, TOOL, lock.command)
    actual = {rel: _bytes(inputs.generated / rel) for rel in result.files}
    command = lock.command or "omni-port sync"
    return drift.stale_findings(result.files, actual, _shown(inputs.generated), command)


def _parity(inputs: CheckInputs, runners: Sequence[drift.Runner]) -> list[Finding]:
    gpu = {Path(s.member).name: parse(s.source.text, s.source.path) for s in inputs.gpu}
    npu = {runner.name: runner.tree for runner in runners}
    allowed: list[drift.Allowed] = []
    if inputs.allow_path is not None:
        source = read_source(inputs.allow_path)
        allowed = drift.parse_allowed(source.text, source.path)
    return drift.parity_findings(gpu, npu, allowed)


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


@main.command("check")
@click.argument("sources", nargs=-1)
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Markdown catalog to compare with the code (default: `catalog`).",
)
@click.option("--base", help="Upstream the sources were ported from; enables unmarked-divergence.")
@click.option(
    "--patches",
    "patches_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Patches directory to keep current (default: `patches`).",
)
@click.option(
    "--generated",
    type=click.Path(file_okay=False, path_type=Path),
    help="Generated directory to keep current (default: `generated`).",
)
@click.option("--upstream", help="Upstream of the generated runners (default: from the lock file).")
@click.option("--gpu", help="GPU runners (a release, a checkout or a folder) for the parity check.")
@click.option(
    "--parity-allow",
    "allow",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reviewed GPU-only or NPU-only members: 'module:Class.member reason' per line.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="Finding format on stdout.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report ('-' for stdout).",
)
@click.pass_obj
@handle_errors
def check_command(
    options: Options, sources: tuple[str, ...], catalog_path: Path | None, base: str | None,
    patches_dir: Path | None, generated: Path | None, upstream: str | None, gpu: str | None,
    allow: Path | None, fmt: str, json_path: Path | None,
) -> None:  # fmt: skip
    """The CI and pre-commit gate: catalog, markers, unmarked edits, stale outputs, parity.

    Finding kinds: uncatalogued, missing-from-code, content-drift, location-drift,
    stale-generated, unmarked-divergence, parity, malformed-marker. Exit 0 when clean,
    1 with findings, 2 on bad input.
    """
    inputs = _check_inputs(
        options, sources, catalog_path, base, patches_dir, generated, upstream, gpu, allow
    )
    findings = run_checks(inputs, options)
    _emit_findings(findings, fmt)
    counts = _finding_counts(findings)
    _write_json(json_path, report.json_report([], findings, counts))
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no findings"
    _summary(options, f"check: {summary}")
    if _errors(findings):
        sys.exit(1)


def _finding_counts(findings: Sequence[Finding]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return counts


# --- codes ----------------------------------------------------------------------------------


@main.command("codes")
def codes_command() -> None:
    """List every diagnostic code with what it means."""
    for code in Code:
        click.echo(f"{code.value}  {code.description}")


def run() -> None:
    """Console-script entry point."""
    main()


if __name__ == "__main__":
    run()
