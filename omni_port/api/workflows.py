"""The workflows the commands run, as functions: sync a workspace, upgrade it, rank bases.

Each one reads its inputs, decides, and returns what to write and report; the command
line writes the files and prints. Nothing here prints.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from omni_port import TOOL
from omni_port.api import bound as bound_
from omni_port.api import lineage
from omni_port.api.inputs import (
    Settings,
    carry_edits,
    catalog_locations,
    checked_context,
    extract_options,
    extract_reviewed,
    load_runners,
    load_upstream,
    locate_text,
    patches_source,
    read_patches,
    reading_ahead,
    recorded_sources,
    vllm_pairing_notes,
    with_history,
    with_members,
    with_unread_modules,
)
from omni_port.api.run import Given, Synced, read_transplants, sync_patches, verify_files
from omni_port.errors import BadInput
from omni_port.extract import basedetect, reviewed
from omni_port.gpu import transplant
from omni_port.gpu.transplant import Merged
from omni_port.model import Code, Finding, Located, PatchSet, Severity, Upstream
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.pyast import memo
from omni_port.report import in_directory, shown
from omni_port.sources import trees
from omni_port.sources.config import Config
from omni_port.sources.history import known_releases
from omni_port.sources.platform import Platform
from omni_port.sources.trees import kept_keys
from omni_port.sources.upstream import (
    Spec,
    SpecKind,
    parse_spec,
    version_key,
)
from omni_port.sync import upgrade as summaries

__all__ = [
    "Loaded",
    "Merged",
    "SyncRequest",
    "UpgradeRequest",
    "best_base",
    "load_workspace",
    "sticky_upstream",
]


def recorded(upstream: Upstream, config: Config) -> Upstream:
    """``upstream`` (and its history) named as outputs name inputs: relative to the
    repository root, never the working directory."""
    return replace(
        upstream,
        label=config.recorded_spec(upstream.label),
        history=tuple(replace(r, label=config.recorded_spec(r.label)) for r in upstream.history),
    )


def sync_command_line(config: Config, patches: Path, upstream: str, generated: Path) -> str:
    """The command that regenerates a workspace's outputs, as headers and the lock name it."""
    return (
        f"omni-port sync --patches {config.recorded_path(patches)} --upstream {upstream} "
        f"--generated {config.recorded_path(generated)}"
    )


# --- sync -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """What `sync` was asked to do."""

    patches: Path
    #: The upstream spec (already the sticky one when none was given).
    upstream: str
    generated: Path
    upstream_class: str
    #: ``auto`` or ``none``: the upstream history the upstream-history rule reads.
    history: str
    #: Transplant inputs (extra blocks for the copies).
    transplants: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkspaceSync:
    """A sync of a workspace: the patches, what happened to each block, and the files."""

    patch_set: PatchSet
    synced: Synced
    #: The outputs to write (the lock names the configured upstream beside the synced one).
    files: dict[str, bytes]
    #: Notes about the inputs: history that could not be had, a vLLM mismatch.
    notes: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class Loaded:
    """What the sync of a workspace reads, loaded: the patches and their files, the
    upstream (with the history the sync weighs, labels as outputs record them), the
    catalog's Location lines and the transplant inputs. `sync`, `resolve` and `continue`
    sync the same."""

    request: SyncRequest
    patch_set: PatchSet
    #: The patch files as read, by relative path (their digest goes into the lock).
    patch_files: Mapping[str, str]
    upstream: Upstream
    #: The catalog's Location lines by block id.
    locations: Mapping[str, str]
    transplants: tuple[transplant.Extra, ...]
    #: Notes about the inputs: history that could not be had, a vLLM mismatch.
    notes: tuple[Finding, ...]
    #: The command the headers and the lock name.
    command: str


def load_workspace(request: SyncRequest, settings: Settings) -> Loaded:
    """Load what `sync` reads for ``request``; writes nothing."""
    config = settings.config
    loaded = load_upstream(request.upstream, settings, request.upstream_class)
    patch_set, patch_files = read_patches(request.patches)
    loaded, notes = with_history(loaded, settings, patch_set, mode=request.history)
    notes += vllm_pairing_notes(patches_source(patch_set, ""), loaded.label, settings, loaded.path)
    loaded = recorded(loaded, config)
    labels = [config.recorded_path(d) for d in request.transplants]
    command = sync_command_line(config, request.patches, loaded.label, request.generated)
    command += "".join(f" --transplant {label}" for label in labels)
    catalog = config.path(config.catalog) if config.catalog else None
    extras = tuple(read_transplants(request.transplants, labels))
    locations = catalog_locations(patch_set, catalog)
    return Loaded(request, patch_set, patch_files, loaded, locations, extras, tuple(notes), command)


def sticky_upstream(settings: Settings, generated: Path) -> str:
    """The upstream to take when none is given (``lockfile.default_upstream``), as this
    working directory reads it; says so (``settings.progress``) when it is not the
    configured one."""
    config = settings.config
    configured = config.recorded_spec(config.upstream)
    chosen = lockfile.default_upstream(lockfile.read_or_none(generated), configured)
    if chosen != configured and settings.progress is not None:
        settings.progress(
            f"upstream {chosen}: the last sync's ({shown(generated / lockfile.LOCK_NAME)}); "
            f"the configuration names {configured} (pass --upstream to change)"
        )
    return config.given_spec(chosen)


def sync_loaded(loaded: Loaded, config: Config, patch_set: PatchSet | None = None) -> WorkspaceSync:
    """Sync the loaded workspace, or ``patch_set`` (its patches edited in memory) on the
    same inputs; writes nothing."""
    patches = loaded.patch_set if patch_set is None else patch_set
    files = loaded.patch_files if patch_set is None else render_patch_set(patch_set, TOOL)
    given = Given(files, loaded.transplants, loaded.locations)
    synced = sync_patches(patches, loaded.upstream, loaded.command, given)
    outputs = lockfile.configured_files(synced.result.files, config.recorded_spec(config.upstream))
    return WorkspaceSync(patches, synced, outputs, loaded.notes)


def sync_workspace(request: SyncRequest, settings: Settings) -> WorkspaceSync:
    """Load the upstream (and its history) and sync the patches onto it; writes nothing."""
    return sync_loaded(load_workspace(request, settings), settings.config)


# --- bases ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bases:
    """Candidate bases ranked by how well they explain the runners' copied code."""

    ranked: tuple[basedetect.BaseScore, ...]
    #: Runner methods another candidate explains clearly better than the best one.
    pieces: tuple[basedetect.PiecewiseMethod, ...] = ()
    #: How new a candidate may be, and the releases it left out (label, why), in order.
    bound: bound_.Bound = field(default_factory=bound_.Bound)
    left_out: tuple[tuple[str, str], ...] = ()

    def runner_up(self) -> basedetect.BaseScore | None:
        """The best candidate of another lineage than the best one's (None without one)."""
        best = self.ranked[0] if self.ranked else None
        others = (s for s in self.ranked[1:] if best is not None and s.lineage != best.lineage)
        return next(others, None)


def rank_bases(
    located: Sequence[Located],
    settings: Settings,
    candidates: Sequence[str] = (),
    target: str = "",
) -> Bases:
    """Candidate bases ranked by how well they explain the runners' copied code: the given
    ones, else the commits of the configured clone (``upstream-repo``) and the releases
    newer than it, else every release of the platform's upstream since its ``floor``
    (wheel or sdist). No release is newer than the upgrade's ``target``, no clone commit
    newer than the runners' release (``api.bound``); releases published after the runners'
    release are candidates (a port copies upstream's main branch, which later releases
    hold). The release lists the cache keeps are used while they hold the target, or were
    asked for after the runners' release (without either: while kept), not asked of the
    index."""
    # One run: a method most candidates leave alone has its keys computed once.
    with memo.run():
        return _ranked_bases(located, settings, candidates, target)


def _ranked_bases(
    located: Sequence[Located], settings: Settings, candidates: Sequence[str], target: str
) -> Bases:
    # Kept by content like every upstream tree: a release's runners never change.
    runners = [trees.parsed(r.source, settings.cache) for r in located]
    config = settings.config
    dist = config.platform_info.dist
    bound = bound_.of(located, settings.cache, target, dist)
    if config.upstream_repo and not candidates:
        keys, lines = lineage.candidates(runners, settings, bound.until)
        ranked = lineage.ranked(runners, keys, lines)
        left: dict[str, str] = {}
    else:
        labels = list(candidates) or _releases_since(config.platform_info, settings.cache, bound)
        left = bound_.left_out(labels, bound, dist)
        keys = {}
        wanted = [label for label in labels if label not in left]
        for found in _candidate_modules(wanted, settings, every=bool(candidates)):
            text, cache = found.source.text, settings.cache
            keys[found.label] = kept_keys(
                text, config.upstream_class, cache, basedetect.method_keys
            )
        ranked = basedetect.rank(runners, _nearest_last(keys, dist, bound, settings.cache))
    pieces = tuple(basedetect.pieces(runners, keys, ranked))
    return Bases(tuple(ranked), pieces, bound, tuple(left.items()))


def _nearest_last(
    keys: Mapping[str, basedetect.MethodKeys], dist: str, bound: bound_.Bound, cache: Path
) -> Mapping[str, basedetect.MethodKeys]:
    """``keys`` in the order ranking breaks ties by (the last wins) when every one is a
    release of ``dist``: nearest the runners' release day last, since a port copies
    upstream's main branch of its day (before it, the newest release out; after it, the
    first to ship it); without that day, oldest first. Else in the order given."""
    specs = {label: bound_.release(label, dist) for label in keys}
    versions = {label: s.version for label, s in specs.items() if s is not None and s.dist == dist}
    if len(versions) < len(keys):
        return keys
    days = bound_.days(dist, list(versions.values()), cache, bound.day) if bound.day else {}

    def distance(label: str) -> int:
        day = days.get(versions[label], "")
        if not day:
            return -1 if not days else 1 << 30
        return abs((date.fromisoformat(day) - date.fromisoformat(bound.day)).days)

    order = sorted(keys, key=lambda x: (-distance(x), version_key(versions[x])))
    return {label: keys[label] for label in order}


#: Candidates read at once: each is a few round trips to the index (the tail of a wheel,
#: then its runner module), and a cold GPU base detection reads some thirty vLLM wheels.
FETCHERS = 4


def _candidate_modules(labels: Sequence[str], settings: Settings, every: bool) -> Iterator[Located]:
    """The upstream module of each candidate, in order, each as soon as it is read (the
    caller ranks it while the next ones download): ``every`` one must have it (the
    candidates given), else a release without it is skipped (said on the progress stream):
    vLLM 0.34.0 ships Model Runner V2 alone, with no ``gpu_model_runner.py`` to rank."""
    for text, outcome in zip(labels, _located_at_once(labels, settings), strict=True):
        if isinstance(outcome, Located):
            yield outcome
        elif every:
            raise outcome
        elif settings.progress is not None:
            settings.progress(f"candidate {text} skipped: {outcome.findings[0].message}")


def _located_at_once(labels: Sequence[str], settings: Settings) -> Iterator[Located | BadInput]:
    """``locate_text`` of each label (or why it cannot be had), in order, ``FETCHERS`` at
    once, each in a copy of this run's context (its fetching options and kept answers)."""

    def located(text: str) -> Located | BadInput:
        try:
            return locate_text(text, settings)
        except BadInput as error:
            return error

    with ThreadPoolExecutor(max_workers=FETCHERS) as pool:
        futures = [pool.submit(contextvars.copy_context().run, located, t) for t in labels]
        try:
            for future in futures:
                yield future.result()
        except BaseException:
            # Ctrl-C, a bug or a caller that stops reading: the candidates not started are
            # not read.
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _releases_since(platform: Platform, cache: Path, bound: bound_.Bound) -> list[str]:
    """Every release of the platform's upstream since its floor: the list the cache keeps
    while it holds the target (every release up to it), or was asked for after the
    runners' release (every one out by then); without either bound, while it is kept."""
    floor = version_key(platform.floor)
    wanted = (parse_spec(bound.target, platform.dist).version,) if bound.target else ()
    released = known_releases(platform.dist, cache, wanted, "" if wanted else bound.day)
    return [
        Spec(SpecKind.PYPI, platform.dist, v).label
        for v in sorted(released, key=version_key)
        if version_key(v) >= floor
    ]


def best_base(
    ranked: Sequence[basedetect.BaseScore], located: Sequence[Located], config: Config
) -> basedetect.BaseScore:
    """The best of ``ranked``; BadInput (OP004 at the first runner) when no candidate holds
    a single copied statement: a best of nothing would be a coin toss."""
    if not any(score.statements for score in ranked):
        where = located[0].source.path if located else "-"
        message = (
            f"no method of these runners is a copy of {config.upstream_class}'s in "
            f"any of the {len(ranked)} candidates: no copied statements to compare"
        )
        raise BadInput.at(Code.OP004, where, 1, message)
    return ranked[0]


# --- upgrade ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpgradeRequest:
    """What `upgrade` was asked to do."""

    #: Runner sources named on the command line (none: the configured source).
    sources: tuple[str, ...]
    #: The new upstream.
    target: str
    #: The base the runners were ported from, or ``detect``.
    base: str
    patches: Path
    generated: Path
    #: With ``detect``: the releases to rank (none: every release since the platform's floor).
    candidates: tuple[str, ...] = ()
    #: Extract despite malformed markers (listed as findings), as ``extract --lenient``;
    #: with ``pin``, the marker-allow list then lists those it did not (``Upgraded.accepted``).
    lenient: bool = False
    #: Drop recorded decisions the new extraction has no edit for (refused without it).
    discard: bool = False
    #: The upgrade moves the workspace (its patches and generated folders are the
    #: configured ones): the configuration will name what it used (``Upgraded.pins``).
    pin: bool = False


@dataclass(frozen=True, slots=True)
class Upgraded:
    """An upgrade: the patches to save, the outputs to write, and the summary."""

    patch_set: PatchSet
    #: The detected base (None when it was given).
    detected: basedetect.BaseScore | None
    synced: Synced
    #: The outputs to write (the lock names the configured upstream beside the synced one).
    files: dict[str, bytes]
    #: Every finding, the outputs' at their names in the generated directory's terms.
    findings: tuple[Finding, ...]
    #: The markdown summary for the pull request.
    summary: str
    #: What the configuration must name so that every later command agrees with this
    #: upgrade (``[tool.omni-port]`` keys): the source, the base, the target, and
    #: ``marker-allow`` when it accepted a marker and none is named; none unless
    #: ``UpgradeRequest.pin``.
    pins: dict[str, str] = field(default_factory=dict)
    #: What the marker-allow list gains: each malformed marker ``--lenient`` accepted that
    #: no entry listed (only those: the next new one still stops extract); none unless
    #: ``UpgradeRequest.pin``.
    accepted: tuple[reviewed.Defect, ...] = ()

    @property
    def problems(self) -> list[Finding]:
        """The errors other than conflicts, each once, as the summary's verification
        section lists them."""
        return summaries.verification_problems(self.findings)


def upgrade(request: UpgradeRequest, settings: Settings) -> Upgraded:
    """Extract the runners against their base (detected when asked), sync onto the target,
    verify the result and write the summary for the pull request; writes nothing."""
    config = settings.config
    located = load_runners(request.sources or (config.source,), settings)
    detected = None
    base = request.base
    if not base or base == "detect":
        ranked = rank_bases(located, settings, request.candidates, request.target).ranked
        detected = best_base(ranked, located, config)
        base = detected.label
    old = load_upstream(base, settings)
    patch_set, markers = _extracted(request, located, old, settings)
    # Any unlisted marker is one --lenient let through: without it the upgrade stopped.
    # Listed now, it is reviewed: a note here, as every later command reads it.
    accepted = markers.unlisted if request.pin else ()
    taken = {defect.finding for defect in accepted}
    extract_findings = [
        *(replace(f, severity=Severity.NOTE) if f in taken else f for f in markers.findings),
        *markers.stale_findings(strict=False),
    ]
    new = load_upstream(request.target, settings, config.upstream_class)
    source = located[0].label if located else config.source
    with reading_ahead(settings, request.target, source) as checked:
        new, notes = with_history(new, settings, patch_set, mode=config.history)
        old, new = replace(old, label=config.recorded_spec(old.label)), recorded(new, config)
        command = sync_command_line(config, request.patches, new.label, request.generated)
        catalog = config.path(config.catalog) if config.catalog else None
        locations = catalog_locations(patch_set, catalog)
        # The summary decides every block again from the same facts as the sync: the same
        # upstream, with the members of its history the sync reads.
        new = with_members(new, patch_set)
        synced = sync_patches(patch_set, new, command, Given(locations=locations))
        sources = checked()
    result = synced.result
    context = checked_context(settings, patch_set, new, sources)
    verified = verify_files(result.files, result.placements, patch_set, context)
    outputs = result.files
    findings = (
        *notes,
        *vllm_pairing_notes(source, request.target, settings, new.path),
        *extract_findings,
        *in_directory(result.findings, request.generated, outputs),
        *in_directory(verified, request.generated, outputs),
    )
    document = summaries.summary(
        summaries.Upgrade(
            old,
            new,
            config.upstream_class,
            patch_set,
            result.placements,
            tuple(findings),
            locations,
            # As `omni-port verify` lists them: with the notes the lock keeps for it.
            (*verified, *lockfile.recorded(result.findings)),
            runners=config.platform_info.title,
        )
    )
    pins = _pins(request, old.label, new.label, config, bool(accepted)) if request.pin else {}
    # The lock records the configured upstream: the target, once the configuration names it.
    configured = str(pins.get("upstream", config.recorded_spec(config.upstream)))
    files = lockfile.configured_files(result.files, configured)
    return Upgraded(patch_set, detected, synced, files, findings, document, pins, accepted)


def _pins(
    request: UpgradeRequest, base: str, target: str, config: Config, accepted: bool
) -> dict[str, str]:
    """The configuration an upgrade leaves (recorded specs, relative to the repository
    root): one source named on the command line becomes ``source`` (several leave it); the
    marker-allow list, when the upgrade accepted a marker and none is named."""
    pins: dict[str, str] = {}
    if config.platform != Config().platform:
        # An upgrade run with --platform gpu leaves a workspace the later commands read as
        # one (the NPU default is left unsaid, as before).
        pins["platform"] = config.platform
    if len(request.sources) == 1:
        pins["source"] = config.recorded_spec(request.sources[0])
    pins["base"] = base
    pins["upstream"] = target
    if config.upstream_repo:
        # The history the upgrade weighed (a clone's commits) is what later syncs weigh.
        pins["upstream-repo"] = config.recorded_path(config.upstream_repo)
    if accepted and not config.marker_allow:
        pins["marker-allow"] = reviewed.DEFAULT_LIST
    return pins


def _extracted(
    request: UpgradeRequest, located: Sequence[Located], old: Upstream, settings: Settings
) -> tuple[PatchSet, reviewed.MarkerReview]:
    """The runners extracted against ``old``, keeping what the previous patches recorded,
    and their findings with the malformed markers reviewed."""
    config = settings.config
    # Malformed markers stop an upgrade as they stop `extract` (unless the marker-allow list
    # names them, or --lenient): its patches are what a later `extract` must reproduce.
    options = extract_options(config)
    patch_set, markers = extract_reviewed(
        located, old, options, config, request.lenient, settings.cache
    )
    patch_set = recorded_sources(patch_set, located, old, config)
    # Titles and recorded resolutions of the previous patches survive the re-extraction;
    # runners named on the command line leave the other modules' patches as they are.
    patch_set = carry_edits(patch_set, request.patches, discard=request.discard)
    if request.sources:
        patch_set, _ = with_unread_modules(patch_set, request.patches)
    return patch_set, markers
