"""Do the notes name the change that brought the text? Each note of an upgrade's JSON report
that says a commit of a clone brought statements (``` `a; b`, which PATH@sha (...) brought```,
``changed into `b` ``) is checked with ``git log -S`` on the clone: the newest commit on
the way to ``--ref`` whose change made the statement's text appear (its count in the runner
module went from none to some). Indentation and wrapping do not count: the text looked for
is the statement's longest run without quotes or brackets (keys normalize both).

    python bench/provenance.py REPORT.json --upstream-repo CLONE [--ref main] [--limit 20]

One row per statement: the statement, the note's commit, git log -S's commit, and whether
they agree. Statements shortened in the note (``...``) are looked for by what is left.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODULE = "vllm_ascend/worker/model_runner_v1.py"

#: A claim of a note: `` `statements` ``, which ``<path>@<12 hex> (...)`` brought.
BROUGHT = re.compile(
    r"""`(?P<code>[^`]+)`,?\ \(?which\ \S+@(?P<sha>[0-9a-f]{12})\ \([^`]*?\)\ brought""",
    re.VERBOSE,
)
#: Or: `` `old` `` is the code of ``<path>@<12 hex> (...)``, which ``<path>@<12 hex> (...)``
#: changed: that commit took ``old`` out there.
CHANGED = re.compile(
    r"""`(?P<code>[^`]+)`\ is\ the\ code\ of\ [^`]*?which\ \S+@(?P<sha>[0-9a-f]{12})
    \ \([^`]*?\)\ changed""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement a note says a commit brought (or, ``gone``, took out)."""

    where: str
    method: str
    statement: str
    noted: str
    gone: bool


@dataclass(frozen=True, slots=True)
class Row:
    """A claim and what ``git log -S`` says: the newest commit that changed the statement's
    count in the method the way the claim says (up), and every such commit."""

    claim: Claim
    found: str
    every: tuple[str, ...]

    @property
    def agrees(self) -> str:
        noted = self.claim.noted[:10]
        if self.found.startswith(noted):
            return "yes"
        return "older" if any(c.startswith(noted) for c in self.every) else "NO"


def claims(report: dict[str, object]) -> Iterator[Claim]:
    """Every note's claims, each statement once per note."""
    seen: set[tuple[str, str, str]] = set()
    rows = report.get("blocks", [])
    assert isinstance(rows, list)
    for row in rows:
        reason = str(row.get("reason", ""))
        found = [(m, False) for m in BROUGHT.finditer(reason)]
        found += [(m, True) for m in CHANGED.finditer(reason)]
        for match, gone in sorted(found, key=lambda pair: pair[0].start()):
            for statement in _statements(match.group("code")):
                key = (str(row["id"]), statement, match.group("sha"))
                if key not in seen:
                    seen.add(key)
                    yield Claim(key[0], str(row["method"]), statement, key[2], gone)


def _statements(code: str) -> list[str]:
    """The statements of a note's ``code`` (``a; b``; a compound header ends with ``:``)."""
    parts = [p.strip() for p in re.split(r";\s+|:;\s*", code) if p.strip()]
    return [p.removesuffix("...").rstrip(":").strip() for p in parts]


def needle(statement: str) -> str:
    """A pickaxe regex for ``statement``: its longest run without quotes or brackets, any
    whitespace (a wrapped line) where it has a space."""
    runs = [r.strip() for r in re.split(r"[()\[\]'\",]", statement)]
    run = re.sub(r"^(?:(?:if|elif|while|with|for|not|return|and|or)\s+)+", "", max(runs, key=len))
    head = r"\b" if run[:1].isalnum() or run[:1] == "_" else ""
    return head + r"\s+".join(re.escape(word) for word in run.split())


def checked(repo: str, ref: str, claim: Claim) -> Row:
    """``claim`` against ``git log -S`` on the runner module up to ``ref``, counted in the
    claim's method."""
    pattern = needle(claim.statement)
    log = _git(repo, "log", "--format=%H", "--pickaxe-regex", "-S", pattern, ref, "--", MODULE)
    every = []
    for commit in log.split():
        now, before = (_count(repo, r, pattern, claim.method) for r in (commit, f"{commit}^"))
        if (now < before) if claim.gone else (now > before):
            every.append(commit[:12])
    return Row(claim, every[0] if every else "", tuple(every))


def _count(repo: str, rev: str, pattern: str, method: str) -> int:
    """How often ``pattern`` occurs in ``method`` of the module at ``rev`` (the whole module
    when it lacks the method or does not parse)."""
    done = subprocess.run(
        ["git", "-C", repo, "show", f"{rev}:{MODULE}"], capture_output=True, text=True
    )
    if done.returncode != 0:
        return 0
    text = done.stdout
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return len(re.findall(pattern, text))
    found = [
        ast.get_source_segment(text, node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == method
    ]
    return sum(len(re.findall(pattern, segment)) for segment in found or [text])


def _git(repo: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True)
    return done.stdout


def subject(repo: str, commit: str) -> str:
    if not commit:
        return "(none)"
    return _git(repo, "log", "-1", "--format=%h %s", commit).strip()[:70]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="an upgrade's --json report")
    parser.add_argument("--upstream-repo", required=True, help="the clone the upgrade read")
    parser.add_argument("--ref", default="main", help="where the way ends (default main)")
    parser.add_argument("--limit", type=int, default=0, help="check this many statements")
    args = parser.parse_args()
    report = json.loads(args.report.read_text(encoding="utf-8"))
    found = list(claims(report))
    if args.limit:
        found = found[: args.limit]
    rows = [checked(args.upstream_repo, args.ref, claim) for claim in found]
    print("| where | statement | note's commit | git log -S | agrees |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        claim = row.claim
        cell = claim.statement if len(claim.statement) <= 60 else claim.statement[:57] + "..."
        verb = "took out" if claim.gone else "brought"
        print(
            f"| {'.'.join(claim.where.rsplit('.', 3)[-3:])} | `{cell}` ({verb}) "
            f"| {subject(args.upstream_repo, claim.noted)} "
            f"| {subject(args.upstream_repo, row.found)} | {row.agrees} |"
        )
    agree = sum(row.agrees == "yes" for row in rows)
    print(f"\n{agree} of {len(rows)} statements: the note names git log -S's newest commit")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
