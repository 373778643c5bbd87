"""The GPU runners' upgrade history, scored by a provenance judge against the maintainers.

Each vLLM-Omni release is paired with the vLLM release its GPU runners' copies match best
(``omni-port bases --platform gpu``). A step N -> M syncs N's GPU edits onto M's vLLM
(omni-port), merges each copied method three ways (``git merge-file``: vLLM N, omni N,
vLLM M) or leaves omni N unchanged, and compares every copied method of omni M with the
same method of the output, statement by statement (as multisets of statement keys).

The maintainers lag vLLM, so omni M is no plain truth. The judge is code: a statement the
output has and omni M lacks is **judged correct** when some vLLM release between N's and
M's pairs (inclusive) holds it in that method (the output took a vLLM revision's text);
a statement of omni M the output lacks is judged correct on the same evidence (M kept a
revision the output did not), and so is omni N's edit of a statement merged with vLLM's
later edit of it. Text only a release older than both pairs holds is a **lag** (M kept
it); omni M's statement a conflict of the output holds in that method is **flagged**;
what omni M wrote anew or dropped of omni N's own is **changed** by M (no tool could
know). Anything else is **wrong**: text nobody wrote, or omni N's edit lost. A statement
the output has more often than omni N, omni M and vLLM M all do is **duplicated**.

    python bench/gpu_replay.py [--steps 0.28.0:0.30.0 ...] [-v]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import itertools
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import baselines
from bench.history import OMNI_RELEASES, Step
from omni_port import api
from omni_port.api.run import Given
from omni_port.errors import BadInput
from omni_port.extract import basedetect
from omni_port.model import CONFLICT_LINE, Copy, PatchSet, SourceText, Status, Tree, Upstream
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import dedent_code, reindent
from omni_port.sources.config import Config, with_platform
from omni_port.sources.history import known_releases
from omni_port.sources.platform import GPU
from omni_port.sources.textio import decode
from omni_port.sources.trees import kept_keys
from omni_port.sources.upstream import default_cache, version_key

#: vLLM-Omni releases with GPU runners, oldest first: the NPU replay's, and the newest
#: candidate (0.31.0rc1 left out: a step to the newest is the next upgrade's shape).
OMNI_GPU_RELEASES = (*OMNI_RELEASES, "0.32.0rc1")
#: The outcomes of a statement, in the table's order.
OUTCOMES = ("exact", "judged", "lag", "flagged", "wrong", "duplicated", "changed")
#: A copied method: (module file name, omni class, method name).
MethodId = tuple[str, str, str]


# --- the judge (pure) --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the judge knows of one copied method besides the output."""

    #: Statement keys of the method in omni M (the maintainers' next release).
    truth: tuple[str, ...]
    #: In omni N (what the step started from).
    old: tuple[str, ...]
    #: In vLLM M's method (the pair of M), for counting duplicates.
    target: tuple[str, ...]
    #: Every key some vLLM release between N's and M's pairs holds in that method.
    revisions: frozenset[str]
    #: Every key a vLLM release older than both pairs (since the platform's floor) holds
    #: there: text the maintainers' copies lag on.
    older: frozenset[str] = frozenset()
    #: Keys of the code a conflict of the output holds (the tool's conflict blocks,
    #: merge-file's own side of its hunks).
    flagged: frozenset[str] = frozenset()


@dataclass(slots=True)
class Judged:
    """Statements of one tool on one step, by outcome, and the reasons for the report."""

    counts: Counter[str] = field(default_factory=Counter)
    #: Statements of omni M's copied methods (the share's denominator).
    statements: int = 0
    #: (method, outcome, statement) for every statement that is not exact.
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    elapsed: float = 0.0

    def add(self, method: str, outcome: str, key: str, times: int) -> None:
        if not times:
            return
        self.counts[outcome] += times
        if outcome != "exact":
            self.rows.append((method, outcome, key))

    def merge(self, other: Judged) -> None:
        self.counts.update(other.counts)
        self.statements += other.statements
        self.rows.extend(other.rows)
        self.elapsed += other.elapsed


def judge_method(name: str, output: Sequence[str], evidence: Evidence, judged: Judged) -> None:
    """Add the outcome of every statement of one method's ``output`` (statement keys) and
    of every statement of omni M it lacks to ``judged`` (rows: ``+`` the output's, ``-``
    omni M's)."""
    got, truth = Counter(output), Counter(evidence.truth)
    judged.statements += len(evidence.truth)
    for key, times in sorted((got & truth).items()):
        judged.add(name, "exact", key, times)
    allowed = Counter(evidence.old) | truth | Counter(evidence.target)
    extra, missing = got - truth, truth - got
    merged = merges(sorted(k for k in extra if _extra(k, evidence) == "wrong"), evidence)
    for key, times in sorted(extra.items()):
        duplicated = max(0, got[key] - max(allowed[key], 1))
        if duplicated:
            judged.add(name, "duplicated", f"+ {key}", duplicated)
        if times - duplicated:
            outcome = "judged" if key in merged else _extra(key, evidence)
            judged.add(name, outcome, f"+ {key}", times - duplicated)
    old = Counter(evidence.old)
    for key, times in sorted(missing.items()):
        outcome = "judged" if key in merged.values() else _missing(key, evidence)
        # Only the copies omni N had and the output dropped are lost; those omni M added
        # beyond them are M's own.
        lost = min(times, max(0, old[key] - got[key])) if outcome == "wrong" else times
        judged.add(name, outcome, f"- {key}", lost)
        if times - lost:
            judged.add(name, "changed", f"- {key}", times - lost)


#: Tokens of a statement key, for merging two edits of one statement.
TOKEN = re.compile(r"\w+|\S")


def merges(unexplained: Sequence[str], evidence: Evidence) -> dict[str, str]:
    """The output statements no revision holds that are omni N's edit of a vLLM statement
    merged with vLLM's own later edit of it (both changes followed, as the structure rule
    merges them), each with omni's statement it stands for."""
    upstream = sorted(evidence.revisions | evidence.older)
    edits = sorted(set(evidence.old) - evidence.revisions - evidence.older)
    found = {}
    for statement in unexplained:
        for edit in edits:
            if _merged_from(statement, edit, upstream, evidence.revisions):
                found[statement] = edit
                break
    return found


def _merged_from(statement: str, edit: str, upstream: Sequence[str], later: frozenset[str]) -> bool:
    """Whether ``statement`` is ``edit`` (omni's edit of some vLLM statement) with a later
    vLLM revision's edit of that statement applied."""
    near_edit = [a for a in upstream if _similar(a, edit)]
    near_statement = [b for b in sorted(later) if _similar(b, statement)]
    tokens = TOKEN.findall(statement)
    return any(merge3(a, edit, b) == tokens for a in near_edit for b in near_statement if a != b)


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, TOKEN.findall(a), TOKEN.findall(b)).ratio() >= 0.6


def merge3(base: str, ours: str, theirs: str) -> list[str] | None:
    """The tokens of ``base`` with both ``ours``'s and ``theirs``'s token edits applied;
    None when they touch the same tokens."""
    tokens = TOKEN.findall(base)
    edits = [*_edits(tokens, TOKEN.findall(ours)), *_edits(tokens, TOKEN.findall(theirs))]
    edits.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(edits):
        if start < end:
            return None
    result, at = [], 0
    for start, end, new in edits:
        result.extend(tokens[at:start])
        result.extend(new)
        at = end
    result.extend(tokens[at:])
    return result


def _edits(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, other[j1:j2]) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]


def _extra(key: str, evidence: Evidence) -> str:
    """A statement the output has and omni M lacks: a vLLM revision's text (of the step,
    or older), omni N's own code that M dropped, or text nobody wrote."""
    if key in evidence.revisions:
        return "judged"
    if key in evidence.older:
        return "lag"
    return "changed" if key in evidence.old else "wrong"


def _missing(key: str, evidence: Evidence) -> str:
    """A statement of omni M the output lacks: held by a conflict, a vLLM revision's text
    (M kept a revision the output did not; older: M lags), omni N's edit lost, or M's own
    new code."""
    if key in evidence.flagged:
        return "flagged"
    if key in evidence.revisions:
        return "judged"
    if key in evidence.older:
        return "lag"
    return "wrong" if key in evidence.old else "changed"


def judge(
    outputs: Mapping[MethodId, Sequence[str]], evidence: Mapping[MethodId, Evidence]
) -> Judged:
    """Every copied method of omni M judged against the output's method of that name (an
    output without it has none of its statements)."""
    judged = Judged()
    for method in sorted(evidence):
        judge_method(".".join(method), outputs.get(method, ()), evidence[method], judged)
    return judged


def class_keys(text: str) -> dict[MethodId, list[str]]:
    """Statement keys of every method of every top-level class of one module's ``text``
    (the module name left empty); none when it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    found: dict[MethodId, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for method, keys in basedetect.method_keys(text, node.name).items():
                found[("", node.name, method)] = keys
    return found


def code_keys(code: str) -> frozenset[str]:
    """Statement keys of a piece of method code (a conflict's block, a merge hunk); a piece
    that is no whole statement is read line by line, a compound header as itself."""
    keys = _method_code_keys(code)
    if keys is not None:
        return frozenset(keys)
    found: set[str] = set()
    for line in code.splitlines():
        stripped = line.strip()
        # A compound statement's header alone: its key, without the body that completes it.
        for attempt, body in ((stripped, 0), (f"{stripped} pass", 1)):
            keys = _method_code_keys(attempt) if stripped else None
            if keys:
                found.update(keys[: len(keys) - body])
                break
    return frozenset(found)


def _method_code_keys(code: str) -> list[str] | None:
    # Into a method's body; a multi-line string's lines are data and keep their indentation
    # (a docstring's key is its text, as the method's own copy has it).
    body = reindent(dedent_code(code), "", "        ") or "        pass\n"
    text = f"class C:\n    def f(self):\n{body}\n"
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return basedetect.method_keys(text, "C").get("f", [])


def conflict_code(text: str) -> list[str]:
    """The block code each conflict region of a generated module holds (``# | `` lines)."""
    pieces, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(CONFLICT_LINE.strip()):
            current.append(stripped[len(CONFLICT_LINE) :] if len(stripped) > 2 else "")
        elif current:
            pieces.append("\n".join(current))
            current = []
    if current:
        pieces.append("\n".join(current))
    return pieces


# --- inputs (releases through the api and its cache) --------------------------------------


class GpuHistory:
    """vLLM-Omni's GPU runners and vLLM's runner module by release, read once."""

    def __init__(self, cache: Path) -> None:
        self.settings = api.Settings(with_platform(Config(), GPU.name.value), cache=cache)
        self._runners: dict[str, tuple[SourceText, ...]] = {}
        self._upstreams: dict[str, Upstream] = {}
        self._pairs: dict[str, tuple[str, float]] = {}
        self._keys: dict[str, dict[str, list[str]]] = {}

    def runners(self, version: str) -> tuple[SourceText, ...]:
        if version not in self._runners:
            located = api.load_runners([f"vllm-omni=={version}"], self.settings)
            self._runners[version] = tuple(r.source for r in located)
        return self._runners[version]

    def texts(self, version: str) -> dict[str, str]:
        return {Path(s.path).name: s.text for s in self.runners(version)}

    def pair(self, version: str) -> tuple[str, float]:
        """The vLLM release ``version``'s copies match best, as ``bases`` ranks them."""
        if version not in self._pairs:
            located = api.load_runners([f"vllm-omni=={version}"], self.settings)
            best = api.rank_bases(located, self.settings).ranked[0]
            self._pairs[version] = (best.label, best.similarity)
        return self._pairs[version]

    def upstream(self, label: str) -> Upstream:
        if label not in self._upstreams:
            self._upstreams[label] = api.load_upstream(label, self.settings, GPU.upstream_class)
        return self._upstreams[label]

    def keys(self, label: str) -> dict[str, list[str]]:
        """Statement keys of each method of vLLM's ``GPUModelRunner`` in release ``label``."""
        if label not in self._keys:
            text = self.upstream(label).text
            cache = self.settings.cache
            self._keys[label] = kept_keys(text, GPU.upstream_class, cache, basedetect.method_keys)
        return self._keys[label]

    def between(self, first: str, last: str) -> tuple[list[str], list[str]]:
        """Every vLLM release from ``first`` to ``last`` (either order), inclusive, that
        has the V1 runner; and those older, since the platform's floor."""
        low, high = sorted((first, last), key=lambda label: version_key(_version(label)))
        dated = known_releases(GPU.dist, self.settings.cache, (_version(low), _version(high)))
        floor, start, end = (version_key(v) for v in (GPU.floor, _version(low), _version(high)))
        every = [
            f"{GPU.dist}=={v}"
            for v in sorted(dated, key=version_key)
            if floor <= version_key(v) <= end and self._has_runner(f"{GPU.dist}=={v}")
        ]
        older = [label for label in every if version_key(_version(label)) < start]
        return [label for label in every if label not in older], older

    def _has_runner(self, label: str) -> bool:
        try:
            self.upstream(label)
        except BadInput:
            return False
        return True


def _version(label: str) -> str:
    return label.split("==", 1)[1]


def copied(patches: PatchSet) -> dict[MethodId, str]:
    """The copied methods of an extraction, with the vLLM method each copies."""
    return {
        (module.name, piece.owner, piece.name): piece.upstream_name
        for module in patches.modules
        for piece in module.pieces
        if isinstance(piece, Copy) and piece.owner
    }


def extracted(history: GpuHistory, version: str, base: str) -> PatchSet:
    located = api.load_runners([f"vllm-omni=={version}"], history.settings)
    options = api.inputs.extract_options(history.settings.config, lenient=True)
    return api.extract(located, history.upstream(base), options)[0]


def evidence(history: GpuHistory, step: Step, truth_patches: PatchSet) -> dict[MethodId, Evidence]:
    """What the judge knows of each method omni M copies."""
    truth = module_keys(history.texts(step.new))
    old = module_keys(history.texts(step.old))
    within, before = history.between(step.old_base, step.new_base)
    releases = [history.keys(label) for label in within]
    older = [history.keys(label) for label in before]
    target = history.keys(step.new_base)
    found = {}
    for method, upstream_name in copied(truth_patches).items():
        found[method] = Evidence(
            tuple(truth.get(method, ())),
            tuple(old.get(method, ())),
            tuple(target.get(upstream_name, ())),
            _held(releases, upstream_name),
            _held(older, upstream_name),
        )
    return found


def _held(releases: Sequence[Mapping[str, list[str]]], method: str) -> frozenset[str]:
    return frozenset(key for keys in releases for key in keys.get(method, ()))


def module_keys(texts: Mapping[str, str]) -> dict[MethodId, list[str]]:
    """``class_keys`` of each module, named by its file."""
    return {
        (name, owner, method): keys
        for name, text in sorted(texts.items())
        for (_, owner, method), keys in class_keys(text).items()
    }


def with_flagged(
    found: Mapping[MethodId, Evidence], flagged: Mapping[MethodId, Iterable[str]]
) -> dict[MethodId, Evidence]:
    """``found`` with each method's flagged keys: those of the code its conflicts hold."""
    keys = {method: frozenset().union(*map(code_keys, codes)) for method, codes in flagged.items()}
    return {
        method: replace(item, flagged=keys.get(method, frozenset()))
        for method, item in found.items()
    }


# --- the three contenders -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Output:
    """What one contender made of a step: module texts, conflict code by method, time."""

    texts: dict[str, str]
    flagged: dict[MethodId, list[str]]
    elapsed: float


def run_tool(history: GpuHistory, step: Step, patches: PatchSet) -> Output:
    """omni-port: N's edits synced onto M's vLLM, with vLLM's releases as history (as
    ``upgrade --platform gpu`` takes them)."""
    started = time.perf_counter()
    target = history.upstream(step.new_base)
    target, _ = api.inputs.with_history(target, history.settings, patches)
    target = api.inputs.with_members(target, patches)
    result = api.sync_patches(patches, target, "bench", Given(), tool="bench").result
    elapsed = time.perf_counter() - started
    texts = {
        name: decode(data, f"generated/{name}").text
        for name, data in result.files.items()
        if name.endswith(".py")
    }
    flagged: dict[MethodId, list[str]] = {}
    for p in result.placements:
        if p.status is Status.CONFLICT and p.module in texts:
            region = "\n".join(texts[p.module].split("\n")[p.start - 1 : p.end])
            flagged.setdefault((p.module, p.owner, p.member), []).extend(conflict_code(region))
    return Output(texts, flagged, elapsed)


def run_merge_file(history: GpuHistory, step: Step, patches: PatchSet) -> Output:
    """``git merge-file`` per copied method (vLLM N, omni N, vLLM M); a conflict hunk reads
    as vLLM M's side, its own side is flagged."""
    started = time.perf_counter()
    base_n = history.upstream(step.old_base).tree
    base_m = history.upstream(step.new_base).tree
    texts: dict[str, str] = {}
    jobs: list[tuple[str, Tree, Copy]] = []
    for source in history.runners(step.old):
        name = Path(source.path).name
        module = next(m for m in patches.modules if m.name == name)
        copies = [p for p in module.pieces if isinstance(p, Copy) and p.owner]
        tree = parse(source.text, source.path)
        text, _ = baselines.merge_module(tree, copies, base_n, base_m, baselines.merge_file)
        texts[name] = baselines.OURS_THEIRS.sub(lambda m: m.group(2), text)
        jobs.extend((name, tree, copy) for copy in copies)
    elapsed = time.perf_counter() - started
    # Each method's hunks again on their own (not timed): which method a hunk is of.
    flagged: dict[MethodId, list[str]] = {}
    for name, tree, copy in jobs:
        _, unresolved = baselines.merge_module(tree, [copy], base_n, base_m, baselines.merge_file)
        if unresolved:
            flagged[(name, copy.owner, copy.name)] = unresolved
    return Output(texts, flagged, elapsed)


def run_unchanged(history: GpuHistory, step: Step, patches: PatchSet) -> Output:
    """Leave omni N as it is."""
    return Output(history.texts(step.old), {}, 0.0)


CONTENDERS = (
    ("omni-port", run_tool),
    ("git merge-file", run_merge_file),
    ("omni N unchanged", run_unchanged),
)


def run_step(history: GpuHistory, step: Step) -> dict[str, Judged]:
    """Every contender's statements on one step, judged."""
    patches = extracted(history, step.old, step.old_base)
    found = evidence(history, step, extracted(history, step.new, step.new_base))
    results = {}
    for name, contender in CONTENDERS:
        output = contender(history, step, patches)
        judged = judge(module_keys(output.texts), with_flagged(found, output.flagged))
        judged.elapsed = output.elapsed
        results[name] = judged
    return results


# --- report ---------------------------------------------------------------------------------


def print_table(results: Sequence[tuple[Step, dict[str, Judged]]], verbose: bool) -> None:
    print(
        "| step | vLLM | tool | statements of M | exact | judged correct | exact + judged "
        "| lag | flagged | wrong | duplicated | changed by M |"
    )
    print("| --- | --- | --- |" + " ---: |" * 9)
    totals: dict[str, Judged] = {}
    for step, by_tool in results:
        bases = f"{_version(step.old_base)} -> {_version(step.new_base)}"
        for tool, judged in by_tool.items():
            _row(f"{step.old} -> {step.new}", bases, tool, judged)
            totals.setdefault(tool, Judged()).merge(judged)
    for tool, judged in totals.items():
        _row("**total**", "", tool, judged)
    # Times last: everything above is the same on every run.
    print("\n| time (s) | " + " | ".join(totals) + " |")
    print("| --- |" + " ---: |" * len(totals))
    for step, by_tool in results:
        cells = " | ".join(f"{by_tool[tool].elapsed:.1f}" for tool in totals)
        print(f"| {step.old} -> {step.new} | {cells} |")
    print("| **total** | " + " | ".join(f"{j.elapsed:.1f}" for j in totals.values()) + " |\n")
    if verbose:
        for step, by_tool in results:
            for tool, judged in by_tool.items():
                for method, outcome, key in judged.rows:
                    if outcome in ("wrong", "duplicated", "flagged"):
                        print(f"  {step.old}->{step.new} {tool}: {outcome:10} {method}: {key}")


def _row(step: str, bases: str, tool: str, judged: Judged) -> None:
    c = judged.counts
    of_m = judged.statements
    share = f" ({100 * c['exact'] / of_m:.0f}%)" if of_m else ""
    print(
        f"| {step} | {bases} | {tool} | {of_m} | {c['exact']}{share} | {c['judged']} | "
        f"{c['exact'] + c['judged']} | {c['lag']} | {c['flagged']} | {c['wrong']} | "
        f"{c['duplicated']} | {c['changed']} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", nargs="*", default=[], help="steps as OLD:NEW (default: consecutive releases)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list every wrong statement")
    parser.add_argument("--cache-dir", type=Path, default=default_cache())
    args = parser.parse_args(argv)
    history = GpuHistory(args.cache_dir)
    chosen = args.steps or [f"{a}:{b}" for a, b in itertools.pairwise(OMNI_GPU_RELEASES)]
    pairs = [tuple(s.split(":")) for s in chosen]
    versions = sorted({v for pair in pairs for v in pair}, key=version_key)
    print(f"# GPU replay with a provenance judge ({time.strftime('%Y-%m-%d')})\n")
    print("| vllm-omni | paired vLLM (`bases --platform gpu`) | similarity |\n| --- | --- | ---: |")
    for version in versions:
        label, similarity = history.pair(version)
        print(f"| {version} | {_version(label)} | {similarity:.3f} |")
    print()
    steps = [Step(a, b, history.pair(a)[0], history.pair(b)[0]) for a, b in pairs]
    print_table([(step, run_step(history, step)) for step in steps], args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
