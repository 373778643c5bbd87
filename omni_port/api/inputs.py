"""Loading what the stages read: runner sources, upstreams, patches, locks, package sources.

Reading only: a spec is located (a path, an installed package, or a release downloaded once
into the cache) and parsed. Nothing here writes outside the cache.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from omni_port import TOOL
from omni_port.api.settings import Settings as Settings  # defined light: `check` reads it
from omni_port.errors import BadInput
from omni_port.extract import extractor, reviewed
from omni_port.gpu import vllm_delta
from omni_port.model import (
    Block,
    Code,
    Copy,
    Finding,
    Located,
    ModulePatches,
    PatchSet,
    Release,
    Severity,
    Tree,
    Upstream,
)
from omni_port.patches import edits, lockfile
from omni_port.patches.patchfile import INDEX_NAME, piece_filename, render_patch_set
from omni_port.patches.store import read_patch_set
from omni_port.patches.validate import header_line
from omni_port.pyast.parser import parse
from omni_port.report import shown
from omni_port.sources import history, trees, vllm_sources
from omni_port.sources.config import Config, config_file, key_line
from omni_port.sources.platform import other_modules
from omni_port.sources.textio import read_source
from omni_port.sources.upstream import (
    SpecKind,
    locate,
    locate_runners,
    package_texts,
    parse_spec,
)
from omni_port.verify import checks

__all__ = [
    "Settings",
    "carry_edits",
    "default_vllm_specs",
    "extract_options",
    "extract_reviewed",
    "load_vllm_bases",
    "previous_outputs",
    "recorded_sources",
    "reviewed",
    "with_unread_modules",
]

#: Packages whose imports must resolve against their pinned sources.
CHECKED_PACKAGES = frozenset({"vllm_ascend", "vllm_omni", "vllm"})


def extract_options(
    config: Config, upstream_class: str = "", lenient: bool = False, implicit: bool = True
) -> extractor.ExtractOptions:
    """How the configured platform's runners are extracted: copies of ``upstream_class``
    (default: the configuration's) of at least the platform's share of statements."""
    return extractor.ExtractOptions(
        upstream_class=upstream_class or config.upstream_class,
        lenient=lenient,
        implicit=implicit,
        copy_threshold=config.platform_info.copy_floor,
    )


def locate_text(text: str, settings: Settings) -> Located:
    """The upstream runner module ``text`` names (the platform's: vllm-ascend's or vLLM's),
    as read (not parsed). Raises BadInput (OP003) when it cannot be had."""
    platform = settings.config.platform_info
    spec = parse_spec(text, platform.dist)
    try:
        return locate(spec, platform.member, settings.cache, settings.progress)
    except BadInput as error:
        hint = other_modules(platform)
        first = error.findings[0]
        if not hint or not first.message.endswith(f" has no {platform.member}"):
            raise
        said = replace(first, message=f"{first.message}; {hint}")
        raise BadInput([said, *error.findings[1:]]) from None


def load_upstream(text: str, settings: Settings, class_name: str = "") -> Upstream:
    """Parse the upstream runner module ``text`` names (a version, a path, ``installed``)
    of the configured platform: vllm-ascend's ``model_runner_v1.py`` or vLLM's
    ``gpu_model_runner.py``.

    Raises BadInput (OP003) when it cannot be had, (OP002) when it does not parse.
    """
    located = locate_text(text, settings)
    source = located.source
    # Trees are kept by content hash: a release's, a commit's and a user's file alike.
    tree = trees.parsed(source, settings.cache)
    module = settings.config.platform_info.module
    return Upstream(located.label, source.sha256, tree, module=module, class_name=class_name)


def with_history(
    upstream: Upstream,
    settings: Settings,
    patch_set: PatchSet | None = None,
    names: Sequence[str] | None = None,
    mode: str = "auto",
) -> tuple[Upstream, list[Finding]]:
    """``upstream`` with its history: the releases ``names`` (a lock's), or with ``mode``
    ``auto`` those around the patches' base and the upstream (``sources.history``).

    History is evidence, so what cannot be had is left out with a note, never an error.
    """
    if names is None:
        base = next((m.base for m in patch_set.modules if m.base), "") if patch_set else ""
        if mode != "auto" or not base:
            return upstream, []
        platform = settings.config.platform_info
        try:
            # The patches record their base relative to the repository root.
            base = settings.config.given_spec(base)
            config = settings.config
            repo = str(config.path(config.upstream_repo)) if config.upstream_repo else ""
            names = history.labels(base, upstream.label, settings.cache, repo, platform)
        except BadInput as error:
            reason = error.findings[0].message
            message = f"no upstream history: {reason}"
            note = Finding(Code.OP003, upstream.path, 0, message, severity=Severity.NOTE)
            return upstream, [note]
    platform = settings.config.platform_info
    releases, _, notes = history.load(names, settings.cache, settings.progress, platform)
    return replace(upstream, history=releases), notes


def with_members(upstream: Upstream, patch_set: PatchSet) -> Upstream:
    """``upstream`` with each release of its history holding the copied members a sync of
    ``patch_set`` reads, each parsed on its own (parsing a whole module per release would
    cost more than the rest of a sync; kept in the release's cache when it has one).

    Only modules whose base is in the history read it, as the sync does; a release that
    lacks a member holds None for it.
    """
    labels = {release.label for release in upstream.history}
    wanted = sorted(
        {
            (
                upstream.class_name
                if copy.upstream_owner and upstream.class_name
                else copy.upstream_owner,
                copy.upstream_name,
            )
            for module in patch_set.modules
            if module.base in labels
            for copy in module.pieces
            if isinstance(copy, Copy)
        }
    )
    if not wanted:
        return upstream
    codes: trees.Codes = {}  # a method most releases leave alone is parsed once
    releases = tuple(
        release
        if release.label == upstream.label
        else replace(release, members={**release.members, **_members(release, wanted, codes)})
        for release in upstream.history
    )
    return replace(upstream, history=releases)


def _members(
    release: Release, wanted: Sequence[tuple[str, str]], codes: trees.Codes
) -> dict[tuple[str, str], Tree | None]:
    missing = [key for key in wanted if key not in release.members]
    return trees.member_trees(release.text, release.label, missing, release.cache, codes)


def catalog_locations(patch_set: PatchSet, path: Path | None) -> dict[str, str]:
    """The catalog's Location lines by block id, for sync's catalog rule ({} without a
    catalog). Raises BadInput when the catalog cannot be read or parsed."""
    if path is None or not path.is_file():
        return {}
    from omni_port.catalog import locations, markdown

    source = read_source(path)
    return locations.locations(markdown.parse(source.text, source.path), patch_set)


def load_runners(texts: Sequence[str], settings: Settings) -> list[Located]:
    """The runner files each source argument names (the configured platform's): a
    release, a checkout, a folder, files."""
    members = settings.config.platform_info.runners
    cache, progress = settings.cache, settings.progress
    return [r for text in texts for r in locate_runners(text, cache, progress, members)]


def omni_version(texts: Sequence[str]) -> str:
    """The vllm-omni version of the first source that tells (a release, or a checkout's
    ``_version.py``); "" when none does."""
    for text in texts:
        spec = parse_spec(text, "vllm-omni")
        if spec.kind is SpecKind.PYPI:
            return spec.version
        if spec.kind is SpecKind.PATH:
            version = vllm_delta.omni_version_of(Path(spec.path))
            if version:
                return version
    return ""


def vllm_pairing_notes(
    source: str, upstream: str, settings: Settings, where: str = ""
) -> list[Finding]:
    """One note (OP511) when the vllm-omni ``source`` and the vllm-ascend ``upstream`` run
    on different vLLM releases: the generated runners then call APIs of both. Nothing when
    either side cannot tell (a path without metadata, an upstream that cannot be had).
    ``where``: the upstream module as read (``Upstream.path``), the file the note names."""
    version = omni_version([source]) if source else ""
    ascend = parse_spec(upstream, settings.config.platform_info.dist)
    if not version or ascend.dist == "vllm":
        return []  # on vLLM itself (the GPU runners' upstream) there is nothing to pair
    try:
        metadata = vllm_sources.ascend_metadata(ascend, settings.cache, settings.progress)
    except BadInput:
        return []
    pairing = vllm_sources.pairing_from_metadata(metadata or "")
    omni_target = vllm_delta.target_vllm(version)
    if pairing is None or _minor(pairing.version) == _minor(omni_target):
        return []
    message = (
        f"vllm-omni {version} targets vLLM {_minor(omni_target)}, while {ascend.label} runs on "
        f"vLLM {pairing.version} ({pairing.evidence}): the generated runners call APIs of "
        "both vLLM releases"
    )
    # Line 1: the module as a whole (an editor opens no line 0).
    return [Finding(Code.OP511, where or ascend.label, 1, message, severity=Severity.NOTE)]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def default_vllm_specs(texts: Sequence[str]) -> list[str]:
    """The target vLLM of the source release (or checkout), and the minors around it."""
    version = omni_version(texts)
    if not version:
        message = "cannot tell which vLLM release the sources target; pass --vllm vllm==X"
        raise BadInput.at(Code.OP005, texts[0], 0, message)
    target = vllm_delta.target_vllm(version)
    return [target, *(v for v in vllm_delta.neighbours(target) if v != target)]


def load_vllm_bases(
    specs: Sequence[str], settings: Settings
) -> tuple[dict[str, Upstream], list[Finding]]:
    """Every candidate that can be had; a candidate other than the first may be missing."""
    bases: dict[str, Upstream] = {}
    notes: list[Finding] = []
    for number, text in enumerate(specs):
        try:
            spec = parse_spec(text, "vllm")
            located = vllm_delta.locate_vllm(spec, settings.cache, settings.progress)
        except BadInput as error:
            if number == 0:
                raise
            first = error.findings[0]
            message = f"candidate skipped: {first.message}"
            notes.append(Finding(Code.OP003, first.path, 0, message, severity=Severity.NOTE))
            continue
        source = located.source
        tree = parse(source.text, source.path)
        bases[located.label] = Upstream(located.label, source.sha256, tree)
    return bases, notes


def read_patches(directory: Path) -> tuple[PatchSet, dict[str, str]]:
    """A patch set and the text of its files (for the digest in headers and the lock)."""
    patch_set = read_patch_set(directory)
    return patch_set, render_patch_set(patch_set, TOOL)


def carry_edits(new: PatchSet, directory: Path, discard: bool = False) -> PatchSet:
    """Keep titles, conflict resolutions and adoptions a maintainer wrote into the previous
    patches (``edits.carried``).

    Raises BadInput when there are previous patches whose headers cannot be read: writing
    over them would lose what a maintainer decided there (their code is read again from
    the sources, so code that does not parse is no obstacle). Raises BadInput (OP205, one
    per patch file) when a recorded resolution has no edit to go with in
    ``new``, unless ``discard``: like git refusing to lose uncommitted work."""
    if not (directory / INDEX_NAME).is_file():
        return new
    old = read_patch_set(directory, strict=False)
    carried = edits.carried(new, old)
    dropped = [_lost_finding(directory, m, b) for m, b in edits.lost(carried, old)]
    if dropped and not discard:
        raise BadInput(dropped)
    return carried


def lost_decisions(new: PatchSet, directory: Path) -> list[Finding]:
    """OP205 for each decision recorded in ``directory`` that writing ``new`` (a fresh
    extraction) would drop; what ``carry_edits`` refuses, as findings (for ``check``)."""
    if not (directory / INDEX_NAME).is_file():
        return []
    old = read_patch_set(directory, strict=False)
    carried = edits.carried(new, old)
    return [_lost_finding(directory, m, b) for m, b in edits.lost(carried, old)]


def _lost_finding(directory: Path, module: ModulePatches, block: Block) -> Finding:
    """OP205 at the line of the patch file that records the decision ``block`` holds."""
    path = directory / piece_filename(module, block)
    resolution = block.anchor.resolution
    try:
        line = header_line(path.read_text(encoding="utf-8"), "resolved-after")
    except (OSError, UnicodeDecodeError):
        line = 1
    who = f" by {resolution.by}" if resolution is not None and resolution.by else ""
    why = f" ({resolution.why})" if resolution is not None and resolution.why else ""
    message = (
        f"the resolution of {block.id} recorded{who}{why} would be dropped: the sources "
        "extracted now have no such edit. Extract "
        "the sources it was made for (see `source` and `base`), or pass "
        "--discard-decisions to drop it"
    )
    return Finding(Code.OP205, shown(path), line, message)


def with_unread_modules(new: PatchSet, directory: Path) -> tuple[PatchSet, tuple[str, ...]]:
    """``new`` with the modules of the patches in ``directory`` it does not hold, as they
    are, and their names: an extract of some runners rewrites their modules' patches only.

    The modules keep the index's order; a module the index lacks goes last. Raises
    BadInput when the previous patches' headers cannot be read (see ``carry_edits``)."""
    if not (directory / INDEX_NAME).is_file():
        return new, ()
    old = read_patch_set(directory, strict=False)
    fresh = {module.name: module for module in new.modules}
    modules = [fresh.pop(module.name, module) for module in old.modules]
    kept = tuple(m.name for m in old.modules if m.name not in {n.name for n in new.modules})
    return PatchSet((*modules, *fresh.values())), kept


def recorded_sources(
    patches: PatchSet, sources: Sequence[Located], base: Upstream | None, config: Config
) -> PatchSet:
    """The patch set naming its source files, and a base given as a path, relative to the
    repository root (``Config.recorded_path``): patch bytes do not depend on the cwd."""
    paths = [s.source.path for s in sources] + ([base.label] if base is not None else [])
    mapping = config.recorded_paths(paths)
    if base is not None:
        # A commit of a clone (PATH@REV) names no file: recorded as history labels are.
        mapping[base.label] = config.recorded_spec(base.label)
    return edits.relocated(patches, mapping)


def previous_outputs(out: Path) -> list[str]:
    """Files the previous sync wrote (from its lock), so stale ones can be removed."""
    lock = lockfile.read_or_none(out)
    return list(lock.outputs) if lock is not None else []


def read_lock(out: Path) -> lockfile.Lock:
    """The lock file of a generated tree; BadInput (OP204) when there is none."""
    path = out / lockfile.LOCK_NAME
    if not path.is_file():
        raise BadInput.at(Code.OP204, str(path), 0, "no lock file here; run `omni-port sync` first")
    return lockfile.read(out)


def read_bytes_or_none(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


@dataclass(frozen=True, slots=True)
class CheckedSources:
    """The package sources verification checks against (``checked_sources``)."""

    sources: checks.PackageSources
    #: Why vLLM's sources are missing ("" when they are not, or not wanted).
    vllm_problem: str = ""


def checked_sources(
    settings: Settings, upstream_text: str, source_text: str, vllm_text: str = ""
) -> CheckedSources:
    """Read the package sources ``verification_context`` checks against: vllm-ascend (or,
    on the GPU, vLLM: the upstream), vllm-omni, and vLLM (``vllm_text``, by default the
    release the upstream vllm-ascend pairs with). Raises BadInput when the upstream's or
    the source's cannot be had; vLLM's missing is a problem said, not raised."""
    texts: dict[str, str] = {}
    packages: set[str] = set()
    platform = settings.config.platform_info
    ascend = parse_spec(upstream_text, platform.dist)
    upstream_package = platform.module.partition(".")[0]
    wanted = [(ascend, upstream_package), (parse_spec(source_text, "vllm-omni"), "vllm_omni")]
    for spec, package in wanted:
        found = package_texts(spec, package, settings.cache, settings.progress)
        if found:
            texts.update(found)
            packages.add(package)
    problem = ""
    if upstream_package != "vllm":  # vLLM itself is the GPU runners' upstream, read above
        vllm = vllm_sources.verification_sources(
            vllm_text, ascend, settings.cache, settings.progress
        )
        texts.update(vllm.texts or {})
        packages.update(["vllm"] if vllm.texts else [])
        problem = vllm.problem
    return CheckedSources(
        checks.PackageSources(checks.module_names(texts), frozenset(packages)), problem
    )


@contextlib.contextmanager
def reading_ahead(
    settings: Settings, upstream_text: str, source_text: str
) -> Iterator[Callable[[], CheckedSources]]:
    """``checked_sources`` read in a thread while the block runs; it yields how to
    wait for them (their BadInput raised there). From an empty cache they are tens of MB
    (vLLM's and vllm-omni's Python sources): an upgrade downloads them while it parses and
    syncs."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        run = contextvars.copy_context().run  # this run's fetching options
        future = pool.submit(run, checked_sources, settings, upstream_text, source_text)
        try:
            yield future.result
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def verification_context(
    settings: Settings,
    patch_set: PatchSet,
    upstream: Upstream,
    upstream_text: str,
    source_text: str,
    vllm_text: str = "",
) -> checks.Context:
    """What verification checks against, the package sources read now
    (``checked_sources``)."""
    read = checked_sources(settings, upstream_text, source_text, vllm_text)
    return checked_context(settings, patch_set, upstream, read)


def checked_context(
    settings: Settings, patch_set: PatchSet, upstream: Upstream, read: CheckedSources
) -> checks.Context:
    """What verification checks against, the package sources ``read`` already."""
    return checks.Context(
        package=settings.config.platform_info.package,
        sources=read.sources,
        upstream=upstream,
        checked_packages=CHECKED_PACKAGES,
        unused_in_source=checks.unused_in_source_of(patch_set),
        unavailable={"vllm": read.vllm_problem} if read.vllm_problem else {},
    )


def patches_source(patch_set: PatchSet, default: str) -> str:
    """The vllm-omni release (or tree) the patches were extracted from, else ``default``:
    its own package sources are what the carried omni code imports."""
    for module in patch_set.modules:
        release, slash, _ = module.source.partition("/vllm_omni/")
        if slash and parse_spec(release, "vllm-omni").kind is not SpecKind.PATH:
            return release
        if slash and Path(release, "vllm_omni").is_dir():
            return release
    return default


def extract_all(
    sources: Sequence[Located],
    base: Upstream | None,
    options: extractor.ExtractOptions,
    cache: Path | None = None,
) -> tuple[PatchSet, list[Finding]]:
    """Extract every source; all bad inputs are reported together (BadInput), none is kept.

    Two sources of one runner module (``a/npu_ar_model_runner.py`` and a release's) are bad
    input (OP005 at the second): both would be extracted into one module's patches and
    sync would place their blocks twice."""
    modules, findings, failures = _extract_each(sources, base, options, cache)
    if failures:
        raise BadInput(failures)
    return PatchSet(modules), findings


def extract_reviewed(
    sources: Sequence[Located],
    base: Upstream | None,
    options: extractor.ExtractOptions,
    config: Config,
    lenient: bool,
    cache: Path | None = None,
) -> tuple[PatchSet, reviewed.MarkerReview]:
    """``extract_all`` with every malformed marker read and reviewed (``reviewed_markers``).

    Raises BadInput for every bad input of every source together: a malformed marker the
    marker-allow list does not name, with how to accept it after review (unless
    ``lenient``: ``--lenient`` takes them all, as findings), as any other.
    """
    lenient_options = replace(options, lenient=True)
    modules, findings, failures = _extract_each(sources, base, lenient_options, cache)
    review = reviewed_markers(findings, sources, config)
    if review.unlisted and not lenient:
        failures.extend(review.refusal(marker_allow_path(config)).findings)
    if failures:
        raise BadInput(failures)
    return PatchSet(modules), review


def _extract_each(
    sources: Sequence[Located],
    base: Upstream | None,
    options: extractor.ExtractOptions,
    cache: Path | None,
) -> tuple[tuple[ModulePatches, ...], list[Finding], list[Finding]]:
    """The modules extracted, their findings, and the bad inputs of the others (each
    runner's tree kept in ``cache`` by content, when one is given)."""
    modules: list[ModulePatches] = []
    findings: list[Finding] = []
    failures: list[Finding] = _same_module(sources)
    for located in sources:
        name = Path(located.member).name
        try:
            tree = trees.parsed(located.source, cache) if cache is not None else None
            extraction = extractor.extract_module(
                located.source, name, base, options, located.counterpart, tree
            )
        except BadInput as error:
            failures.extend(error.findings)
            continue
        module = extraction.module
        if located.label != located.source.path:
            module = replace(module, source=located.source.path)
        modules.append(module)
        findings.extend(extraction.findings)
    return tuple(modules), findings, failures


def _same_module(sources: Sequence[Located]) -> list[Finding]:
    """OP005 for each source whose runner module an earlier source holds already."""
    first: dict[str, str] = {}
    found = []
    for located in sources:
        name = Path(located.member).name
        other = first.get(name)
        first.setdefault(name, located.source.path)
        if other is not None:
            message = (
                f"a second source of the runner module {name} (the first is {other}): "
                "give one source per runner module"
            )
            found.append(Finding(Code.OP005, located.source.path, 1, message))
    return found


def reviewed_markers(
    findings: Sequence[Finding], sources: Sequence[Located], config: Config
) -> reviewed.MarkerReview:
    """The malformed markers among ``findings`` (of ``sources``) against the configured
    marker-allow list: each listed one a note, the others as found."""
    files = {s.source.path: _marker_file(s, config) for s in sources}
    return reviewed.review(findings, files, marker_allow(config))


def _marker_file(located: Located, config: Config) -> str:
    """A runner as marker-allow entries name it (``reviewed.Defect.file``)."""
    if parse_spec(located.label, "vllm-omni").kind is SpecKind.PATH:
        return config.recorded_path(located.source.path)
    return f"{located.label}/{located.member}"


def marker_allow_path(config: Config) -> str:
    """The marker-allow list as the user should see it: the configured one, else the one
    `upgrade --lenient` would start."""
    return shown(config.path(config.marker_allow or reviewed.DEFAULT_LIST))


def marker_allow(config: Config) -> tuple[reviewed.MarkerEntry, ...]:
    """The configured marker-allow list (none without one). BadInput (OP005 at the key's
    line) for a list that is not there, or at a bad entry's line."""
    if not config.marker_allow:
        return ()
    path = config.path(config.marker_allow)
    if not path.is_file():
        message = f"marker-allow names {shown(path)}, which is no file"
        where = shown(config_file(config))
        raise BadInput.at(Code.OP005, where, key_line(config, "marker-allow"), message)
    source = read_source(path)
    return reviewed.parse_marker_allow(source.text, shown(path))
