"""The stages as functions on text and paths: what ``omni_port.api`` names (see there)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omni_port import TOOL
from omni_port.api import v2
from omni_port.api.inputs import (
    Settings,
    catalog_locations,
    extract_all,
    load_upstream,
    patches_source,
    read_bytes_or_none,
    read_lock,
    read_patches,
    verification_context,
)
from omni_port.api.run import (
    SYNC_COMMAND,
    Given,
    Synced,
    read_transplants,
    sync_patches,
    verify_files,
)
from omni_port.extract.extractor import Extraction, ExtractOptions, extract_module
from omni_port.model import Finding, Located, PatchSet, Placement, SourceText, Upstream
from omni_port.patches import lockfile
from omni_port.patches.store import earlier, earlier_finding, edit_finding, hand_edits
from omni_port.pyast import memo
from omni_port.pyast.parser import parse
from omni_port.sources.textio import decode, read_source, sha256
from omni_port.sources.upstream import ASCEND_MODULE

# --- text in, values out ---------------------------------------------------------------------


def parse_upstream(
    text: str, label: str = "upstream.py", module: str = ASCEND_MODULE, class_name: str = ""
) -> Upstream:
    """An upstream module given as text. Raises BadInput (OP002) when it does not parse."""
    return Upstream(label, sha256(text.encode("utf-8")), parse(text, label), module, class_name)


def extract_text(
    text: str | SourceText,
    name: str = "runner.py",
    base: Upstream | None = None,
    options: ExtractOptions | None = None,
    path: str = "",
    counterpart: str | SourceText | None = None,
) -> Extraction:
    """The pieces of one runner module, given as text or as a decoded file (which keeps its
    line endings, BOM and sha256); ``path`` names it in findings. ``counterpart`` is omni's
    GPU runner beside it, where blocks find their second anchor.

    Raises BadInput on malformed markers (unless ``options.lenient``) or a syntax error.
    """
    source = _decoded(text, path or name)
    theirs = _decoded(counterpart, "counterpart.py") if counterpart is not None else None
    with memo.run():
        return extract_module(source, name, base, options or ExtractOptions(), theirs)


def _decoded(text: str | SourceText, path: str) -> SourceText:
    return text if isinstance(text, SourceText) else decode(text.encode("utf-8"), path)


@dataclass(frozen=True, slots=True)
class Ported:
    """One runner module extracted against a base and synced onto an upstream."""

    extraction: Extraction
    synced: Synced

    @property
    def patches(self) -> PatchSet:
        return PatchSet((self.extraction.module,))

    def text(self, name: str = "") -> str:
        """The generated module's text."""
        name = name or self.extraction.module.name
        return decode(self.synced.result.files[name], name).text


def port_text(
    runner: str,
    base: str | Upstream,
    upstream: str | Upstream,
    name: str = "runner.py",
    options: ExtractOptions | None = None,
    tool: str = TOOL,
) -> Ported:
    """Extract ``runner`` against ``base`` and sync it onto ``upstream`` (texts or modules);
    ``tool`` names the generator in the header and the lock."""
    base_module = base if isinstance(base, Upstream) else parse_upstream(base, "base.py")
    target = upstream if isinstance(upstream, Upstream) else parse_upstream(upstream)
    extraction = extract_text(runner, name, base_module, options)
    patches = PatchSet((extraction.module,))
    return Ported(extraction, sync_patches(patches, target, tool=tool))


# --- specs and paths -------------------------------------------------------------------------


def extract(
    sources: Sequence[Located], base: Upstream | None, options: ExtractOptions
) -> tuple[PatchSet, list[Finding]]:
    """Extract every located runner; BadInput lists every bad one and none is kept."""
    with memo.run():
        return extract_all(sources, base, options)


def sync(
    patches_dir: Path,
    upstream: Upstream,
    command: str = SYNC_COMMAND,
    transplants: Sequence[Path] = (),
    transplant_labels: Sequence[str] | None = None,
    catalog: Path | None = None,
) -> tuple[PatchSet, Synced]:
    """Read the patches (and transplant inputs) and sync them onto ``upstream``; the
    ``catalog``'s Location lines, when given, constrain the places of the blocks."""
    patch_set, patch_files = read_patches(patches_dir)
    labels = transplant_labels if transplant_labels is not None else [str(d) for d in transplants]
    extras = read_transplants(transplants, labels)
    locations = catalog_locations(patch_set, catalog)
    return patch_set, sync_patches(
        patch_set, upstream, command, Given(patch_files, extras, locations)
    )


@dataclass(frozen=True, slots=True)
class Verified:
    """What verify read and found."""

    #: Generated module file names checked.
    modules: tuple[str, ...]
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...] = field(default=())


def verify(generated: Path, patches_dir: Path, settings: Settings, vllm: str = "") -> Verified:
    """Verify the generated tree as its lock says it was made (a V1 or a V2 tree). BadInput
    without a lock.

    The omni package sources are those of the release the patches were extracted from;
    ``vllm`` is a vLLM spec ("" for the release the upstream vllm-ascend pairs with)."""
    config = settings.config
    lock = read_lock(generated)
    if v2.is_v2(lock):
        placements = tuple(lockfile.placement(row) for row in lock.placements)
        modules = tuple(name for name in lock.outputs if name.endswith(".py"))
        return Verified(modules, placements, tuple(v2.verify_tree(generated, lock, settings)))
    patch_set, _ = read_patches(patches_dir)
    # The lock names paths relative to the repository root; read them from here.
    upstream_text = config.given_spec(lock.upstream)
    upstream = load_upstream(upstream_text, settings, config.upstream_class)
    files = {
        name: read_bytes_or_none(generated / name) or b""
        for name in lock.outputs
        if name.endswith(".py")
    }
    placements = tuple(lockfile.placement(row) for row in lock.placements)
    source = patches_source(patch_set, config.source)
    context = verification_context(settings, patch_set, upstream, upstream_text, source, vllm)
    findings = verify_files(files, placements, patch_set, context)
    # What only the sync's decisions tell, as the sync recorded it (`check` syncs again).
    if lockfile.NOTES_NAME in lock.outputs:
        notes = read_source(generated / lockfile.NOTES_NAME)
        findings.extend(lockfile.parse_notes(notes.text, notes.path))
    # What is on disk is verified; a file edited since sync wrote it is not what the lock
    # says, and no patch records it yet (the runtime switch refuses it). Nor is one an
    # earlier sync wrote under a lock a pull or checkout replaced: sync rewrites it.
    edited = hand_edits(generated, lock, {})
    findings.extend(edit_finding(edit.rel, edit, refused=False) for edit in edited)
    findings.extend(earlier_finding(rel, lock.command) for rel in earlier(generated, lock))
    return Verified(tuple(files), placements, tuple(findings))
