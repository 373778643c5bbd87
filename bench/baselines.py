"""What a maintainer would use instead: ``git merge-file`` and GNU ``patch``, per copied method.

Both get the same inputs as omni-port and go through the same scorer: every method the
runners copy from upstream is merged from (upstream N, omni N, upstream M); the rest of
the omni module stays as it is. A block inside a conflict hunk (merge-file) or a rejected
hunk (patch) counts as flagged; a block applied elsewhere counts as wrong.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.history import History, Step, match, normalize_code, positions
from bench.score import Tally
from omni_port import api
from omni_port.extract.markers import scan
from omni_port.model import Copy, SourceText, Stmt, Tree
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import find_member
from omni_port.sources.textio import decode

CONFLICT = re.compile(r"^<<<<<<< .*?^>>>>>>> [^\n]*\n", re.MULTILINE | re.DOTALL)
OURS_THEIRS = re.compile(
    r"^<<<<<<< [^\n]*\n(.*?)^=======\n(.*?)^>>>>>>> [^\n]*\n", re.MULTILINE | re.DOTALL
)


def run(history: History, step: Step, tool: str) -> Tally:
    merge = merge_file if tool == "merge-file" else _patch
    base_n = history.ascend_tree(step.old_base)
    base_m = history.ascend_tree(step.new_base)
    omni = history.omni(step.old)
    options = api.ExtractOptions(lenient=True)
    merged: dict[str, SourceText] = {}
    flagged_code: list[str] = []
    for name, source in omni.items():
        module = api.extract_text(
            source.text, name, history.base(step.old_base), options, source.path
        ).module
        copies = [p for p in module.pieces if isinstance(p, Copy) and p.owner]
        tree = parse(source.text, source.path)
        text, unresolved = merge_module(tree, copies, base_n, base_m, merge)
        flagged_code.extend(unresolved)
        merged[name] = decode(text.encode(), f"{tool}/{name}")
    tally = Tally()
    ours = positions(omni, history.base(step.old_base))
    truth = positions(history.omni(step.new), history.base(step.new_base))
    got = positions(parsable(merged), history.base(step.new_base))
    flagged = {normalize_code(c) for c in flagged_code}
    to_truth = match(ours, truth)
    to_got = match(ours, got, threshold=0.999)
    for index, block in enumerate(ours):
        if index not in to_truth:
            continue
        label = f"{block.module}:{block.member}:{index}"
        if index in to_got:
            actual, expected = got[to_got[index]], truth[to_truth[index]]
            tally.add(label, "correct" if actual.same_place(expected) else "wrong")
        elif any(block.code and block.code in f for f in flagged):
            tally.add(label, "flagged")
        else:
            tally.add(label, "missing")
    return tally


Merge = Callable[[str, str, str], tuple[str, list[str]]]


def merge_module(
    tree: Tree, copies: list[Copy], base_n: Tree, base_m: Tree, merge: Merge
) -> tuple[str, list[str]]:
    """The omni module with every copied method replaced by its three-way result."""
    lines = list(tree.lines)
    unresolved: list[str] = []
    edits = []
    for copy in copies:
        ours = _method(tree, copy.owner, copy.name)
        base = _method(base_n, copy.upstream_owner, copy.upstream_name)
        theirs = _method(base_m, copy.upstream_owner, copy.upstream_name)
        if ours is None or base is None or theirs is None:
            continue
        result, rejected = merge(_text(base_n, base), _text(tree, ours), _text(base_m, theirs))
        unresolved.extend(rejected)
        edits.append((ours.start, ours.full_end, result))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1 : end] = text.rstrip("\n").split("\n")
    return "\n".join(lines) + "\n", unresolved


def _method(tree: Tree, owner: str, name: str) -> Stmt | None:
    return find_member(tree, owner, name)


def _text(tree: Tree, stmt: Stmt) -> str:
    return tree.text(stmt.start, stmt.full_end)


def merge_file(base: str, ours: str, theirs: str) -> tuple[str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / name for name in ("ours", "base", "theirs")]
        for path, text in zip(paths, (ours, base, theirs), strict=True):
            path.write_text(text)
        result = subprocess.run(
            ["git", "merge-file", "-p", *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
        )
    merged = result.stdout
    conflicts = [m.group(1) for m in OURS_THEIRS.finditer(merged)]
    return merged, conflicts


def _patch(base: str, ours: str, theirs: str) -> tuple[str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "base").write_text(base)
        (folder / "ours").write_text(ours)
        (folder / "theirs").write_text(theirs)
        diff = subprocess.run(
            ["diff", "-u", "base", "ours"], cwd=folder, capture_output=True, text=True, check=False
        ).stdout
        (folder / "change.diff").write_text(diff)
        subprocess.run(
            [
                "patch",
                "--no-backup-if-mismatch",
                "-o",
                "out",
                "-r",
                "rejects",
                "theirs",
                "change.diff",
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        out = (folder / "out").read_text() if (folder / "out").exists() else theirs
        rejects = (folder / "rejects").read_text() if (folder / "rejects").exists() else ""
    rejected = ["\n".join(line[1:] for line in rejects.splitlines() if line.startswith(("+", " ")))]
    return out, rejected if rejects else []


def parsable(modules: dict[str, SourceText]) -> dict[str, SourceText]:
    """Conflict hunks replaced by their upstream side, so the rest can be positioned; a
    module that still does not parse is left out (its blocks count as missing)."""
    result = {}
    for name, source in modules.items():
        text = OURS_THEIRS.sub(lambda m: m.group(2), source.text)
        try:
            scan(parse(text, name))
        except Exception:
            continue
        result[name] = decode(text.encode(), source.path)
    return result
