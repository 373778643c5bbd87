"""Real release history for the benchmarks: releases, their upstream bases, and block positions.

Everything comes from PyPI wheels through omni-port's own cache; nothing is committed.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from omni_port import api
from omni_port.api import lineage
from omni_port.extract import basedetect
from omni_port.model import Block, Located, SourceText, Tree, Upstream
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import split_full_key
from omni_port.sources.config import Config
from omni_port.sources.history import known_releases
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    OMNI_RUNNERS,
    Spec,
    SpecKind,
    locate,
    locate_runners,
    parse_spec,
    version_key,
)

OMNI_RELEASES = (
    "0.14.0",
    "0.16.0",
    "0.18.0",
    "0.20.0",
    "0.22.0",
    "0.24.0",
    "0.26.0",
    "0.28.0",
    "0.30.0",
)
ASCEND_RELEASES = ("0.13.0", "0.18.0", "0.23.0")
#: Release candidates on PyPI between the finals: the bases the maintainers really used.
ASCEND_CANDIDATES = (
    "0.13.0",
    "0.14.0rc1",
    "0.15.0rc1",
    "0.16.0rc1",
    "0.17.0rc1",
    "0.18.0",
    "0.19.1rc1",
    "0.20.2rc1",
    "0.21.0rc1",
    "0.22.1rc1",
    "0.23.0",
    "0.24.0rc1",
    "0.25.1rc1",
    "0.26.0rc1",
)
MODULES = tuple(Path(m).name for m in OMNI_RUNNERS)


#: The oldest vllm-ascend release ``--base detect`` ranks (as ``omni-port bases`` does).
FLOOR = "0.13.0"


@dataclass(frozen=True, slots=True)
class Step:
    """One upgrade of the replay, vLLM-Omni release ``old`` to ``new``: what omni-port and
    the baselines (``bench/baselines.py``) are both run on."""

    #: The vLLM-Omni release whose runners are upgraded.
    old: str
    #: The vLLM-Omni release whose runners are the truth.
    new: str
    #: The vllm-ascend release taken as ``old``'s base: the pairing table's, or the one
    #: ``--base detect`` finds on the day ``new`` came out.
    old_base: str
    #: The vllm-ascend release the maintainers synced ``new`` onto: the upgrade's target.
    new_base: str


class History:
    """Releases read once from the cache, parsed once.

    ``every``: upstream history holds every vllm-ascend release since ``FLOOR`` (wheel or
    sdist), as sync's ``history = auto`` picks them, not only the candidates of the
    pairing table (``--base detect``).
    """

    def __init__(self, cache: Path, every: bool = False, repo: str = "") -> None:
        self.cache = cache
        self.every = every
        #: A clone of vllm-ascend (``--upstream-repo``): bases among its commits, history
        #: from them ("" for releases alone).
        self.repo = repo

    def spec(self, base: str) -> str:
        """The spec of a base: a release's version, or a clone's ``PATH@REV`` label."""
        return base if "@" in base else f"vllm-ascend=={base}"

    @functools.cache  # noqa: B019 - one History per run
    def omni(self, version: str) -> dict[str, SourceText]:
        spec = Spec(SpecKind.PYPI, "vllm-omni", version)
        return {Path(m).name: locate(spec, m, self.cache).source for m in OMNI_RUNNERS}

    @functools.cache  # noqa: B019
    def runners(self, version: str) -> tuple[Located, ...]:
        """The NPU runners of a release as ``extract`` reads them: each with omni's GPU
        runner beside it."""
        return tuple(locate_runners(f"vllm-omni=={version}", self.cache))

    @functools.cache  # noqa: B019
    def omni_trees(self, version: str) -> tuple[Tree, ...]:
        return tuple(parse(s.text, s.path) for s in self.omni(version).values())

    @functools.cache  # noqa: B019
    def released(self) -> dict[str, str]:
        """The candidate releases (every one since ``FLOOR`` with ``every``) and the dates
        they came out, as the index says."""
        dated = known_releases("vllm-ascend", self.cache, ASCEND_CANDIDATES)
        if self.every:
            return {v: d for v, d in dated.items() if version_key(v) >= version_key(FLOOR)}
        return {v: dated.get(v, "") for v in ASCEND_CANDIDATES}

    @functools.cache  # noqa: B019
    def out_on(self, omni: str) -> str:
        """The day vllm-omni ``omni`` came out (``YYYY-MM-DD``), as the index says."""
        return known_releases("vllm-omni", self.cache, OMNI_RELEASES)[omni]

    @functools.cache  # noqa: B019
    def detected(self, omni: str, until: str) -> str:
        """The base ``--base detect`` finds for release ``omni``'s runners on day ``until``:
        the best of every vllm-ascend release since ``FLOOR`` out by then, ranked by the
        very code of ``omni-port bases`` (a maintainer upgrading that day)."""
        if self.repo:
            return self._detected_in_clone(omni, until)
        out = [v for v, day in self.released().items() if day and day <= until]
        wanted = [f"vllm-ascend=={v}" for v in out if version_key(v) >= version_key(FLOOR)]
        ranked = api.rank_bases(self.runners(omni), api.Settings(cache=self.cache), wanted)
        return ranked.ranked[0].label.removeprefix("vllm-ascend==")

    def _detected_in_clone(self, omni: str, until: str) -> str:
        """``detected`` among the clone's commits made by ``until`` and the releases newer
        than the clone out by then, as ``omni-port --upstream-repo CLONE bases`` ranks
        them."""
        settings = api.Settings(Config(upstream_repo=self.repo), cache=self.cache)
        runners = [parse(r.source.text, r.source.path) for r in self.runners(omni)]
        keys, lines = lineage.candidates(runners, settings, until)
        ranked = lineage.ranked(runners, keys, lines)
        if not ranked:
            # The clone has nothing made by then: the releases out that day, as without it.
            return History(self.cache, self.every).detected(omni, until)
        return ranked[0].label.removeprefix("vllm-ascend==")

    @functools.cache  # noqa: B019
    def ascend(self, version: str) -> SourceText:
        """The runner module of a release (by its version) or of a clone's commit."""
        spec = parse_spec(self.spec(version), "vllm-ascend")
        return locate(spec, ASCEND_RUNNER, self.cache).source

    @functools.cache  # noqa: B019
    def ascend_tree(self, version: str) -> Tree:
        source = self.ascend(version)
        return parse(source.text, source.path)

    def base(self, version: str) -> Upstream:
        source = self.ascend(version)
        return Upstream(self.spec(version), source.sha256, self.ascend_tree(version))

    @functools.cache  # noqa: B019
    def pairing(self, omni: str, candidates: tuple[str, ...]) -> basedetect.BaseScore:
        keys = {v: basedetect.method_keys(self.ascend(v).text) for v in candidates}
        ranked = basedetect.rank(self.omni_trees(omni), keys)
        return ranked[0]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a marked block sits relative to upstream code."""

    module: str
    owner: str
    member: str
    path: tuple[str, ...]
    before: str
    after: str
    code: str
    #: The nearest upstream statements on each side, nearest first (up to three).
    befores: tuple[str, ...] = ()
    afters: tuple[str, ...] = ()
    #: Upstream statements of the same member this file's omni code replaced.
    edited: frozenset[str] = frozenset()

    def key(self) -> tuple[object, ...]:
        return (self.module, self.owner, self.member, self.path, self.before, self.after)

    def same_place(self, other: Position) -> bool:
        """Same body, and the same upstream statement on at least one side.

        Both sides must agree unless one file treats a neighbour as omni code (an edited
        upstream statement is upstream in one release and omni's own in the other); a
        block one statement off still differs on both sides. Neighbours ``other``'s file
        replaced are omni code there, so they are skipped on this side before comparing.
        """
        if (self.module, self.owner, self.member, self.path) != (
            other.module, other.owner, other.member, other.path,
        ):  # fmt: skip
            return False
        if self.before == other.before or self.after == other.after:
            return True
        before = next((k for k in self.befores if k not in other.edited), "")
        after = next((k for k in self.afters if k not in other.edited), "")
        return (before, after) != (self.before, self.after) and (
            before == other.before or after == other.after
        )


def positions(
    sources: dict[str, SourceText], base: Upstream, marked: bool = True
) -> list[Position]:
    """Statement-level marked blocks (or unmarked edits with code), positioned against ``base``."""
    options = api.ExtractOptions(lenient=True, copy_threshold=0.0)
    found = []
    for name, source in sources.items():
        pieces = api.extract_text(source, name, base, options).module.pieces
        edited: dict[tuple[str, str], set[str]] = {}
        for piece in pieces:
            if isinstance(piece, Block):
                heads = {split_full_key(k)[0] for k in piece.anchor.replaced}
                edited.setdefault((piece.owner, piece.member), set()).update(heads)
        for piece in pieces:
            if isinstance(piece, Block) and piece.marked == marked and piece.code.strip():
                anchor = piece.anchor
                found.append(
                    Position(
                        name,
                        piece.owner,
                        piece.member,
                        anchor.path,
                        # A neighbour a block replaced reads as its full key (with its
                        # body's digest), the same statement unreplaced as its key: the
                        # place is the statement, so both compare by their heads.
                        split_full_key(anchor.before[0])[0] if anchor.before else "",
                        split_full_key(anchor.after[0])[0] if anchor.after else "",
                        normalize_code(piece.code),
                        tuple(split_full_key(k)[0] for k in anchor.before),
                        tuple(split_full_key(k)[0] for k in anchor.after),
                        frozenset(edited.get((piece.owner, piece.member), set())),
                    )
                )
    return found


_MARKER = re.compile(r"^\s*#.*$", re.MULTILINE)


def normalize_code(code: str) -> str:
    """Block code without comments or blank lines, whitespace-collapsed: for matching only."""
    lines = [" ".join(line.split()) for line in _MARKER.sub("", code).splitlines()]
    return "\n".join(line for line in lines if line)


def code_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False).ratio()


def match(ours: list[Position], theirs: list[Position], threshold: float = 0.5) -> dict[int, int]:
    """One-to-one pairing of blocks in one member by code similarity, best pairs first."""
    scored = []
    for i, a in enumerate(ours):
        for j, b in enumerate(theirs):
            if (a.module, a.owner, a.member) == (b.module, b.owner, b.member):
                similarity = 1.0 if a.code == b.code else code_similarity(a.code, b.code)
                if similarity >= threshold:
                    scored.append((similarity, i, j))
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in sorted(scored, key=lambda t: (-t[0], t[1], t[2])):
        if i not in pairs and j not in used:
            pairs[i] = j
            used.add(j)
    return pairs
