"""Upstream history on real releases (``-m real``): the ExecuteModelState case.

vllm-omni 0.18.0 copied ExecuteModelState, the call that builds it and the unpacking
that reads it from vllm-ascend 0.17.0rc1, before upstream appended ``batch_desc``; omni
appended ``multimodal_outputs``. Extracted against vllm-ascend 0.18.0 (which has
``batch_desc``), the class edit looks like omni replacing ``batch_desc``. Synced onto
0.19.1rc1 with the releases between, each of the class, the call and the unpacking must
hold both fields in the maintainers' order (vllm-omni 0.20.0: upstream's first), or be a
conflict: never a class that silently dropped a field its users fill.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from omni_port.model import Block, BlockKind
from omni_port.patches.store import read_patch_set
from tests.conftest import Cli

pytestmark = pytest.mark.real

BOTH = ["batch_desc", "multimodal_outputs"]


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _tails(text: str) -> dict[str, list[list[str]]]:
    """The last two names of the class's fields, of each call and of each unpacking."""
    tree = ast.parse(text)
    found: dict[str, list[list[str]]] = {"class": [], "call": [], "unpacking": []}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ExecuteModelState":
            fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)]  # type: ignore[union-attr]
            found["class"].append(fields[-2:])
        elif isinstance(node, ast.Call) and _names(node.func) == ["ExecuteModelState"]:
            found["call"].append([a.id for a in node.args[-2:] if isinstance(a, ast.Name)])
        elif isinstance(node, ast.Assign) and ast.unparse(node.value) == "self.execute_model_state":
            target = node.targets[0]
            if isinstance(target, ast.Tuple):
                found["unpacking"].append(
                    [e.id for e in target.elts[-2:] if isinstance(e, ast.Name)]
                )
    return found


def test_execute_model_state_keeps_both_fields_in_the_maintainers_order(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    patches, out, report = tmp_path / "p", tmp_path / "g", tmp_path / "report.json"
    cache = ("--cache-dir", cache_dir)
    extracted = cli(
        *cache,
        "extract",
        "vllm-omni==0.18.0",
        "--base",
        "vllm-ascend==0.18.0",
        "--patches",
        patches,
    )
    assert extracted.exit_code in (0, 1), extracted.stderr
    synced = cli(
        *cache, "sync", "--patches", patches, "--upstream", "vllm-ascend==0.19.1rc1",
        "--out", out, "--json", report,
    )  # fmt: skip
    assert synced.exit_code in (0, 1), synced.stderr
    rows = {row["id"]: row for row in json.loads(report.read_text())["blocks"]}
    # A conflict would also do (the issue allows it); this engine merges all three.
    related = [i for i in rows if "ExecuteModelState" in i or "execute_model.edit" in i]
    assert not [i for i in related if rows[i]["status"] == "conflict"]
    ar = _tails((out / "npu_ar_model_runner.py").read_text())
    generation = _tails((out / "npu_generation_model_runner.py").read_text())
    assert ar["class"] == [BOTH], ar
    assert ar["call"] == [BOTH] and generation["call"] == [BOTH], (ar, generation)
    assert ar["unpacking"] == [BOTH] and generation["unpacking"] == [BOTH]
    # The class edit was decided by history: omni's copy predates `batch_desc`.
    edit = rows["npu_ar_model_runner.ExecuteModelState.edit-01"]
    assert "upstream-history" in edit["decided_by"] and "merge3" in edit["decided_by"]
    assert edit["release"] == "vllm-ascend==0.17.0rc1"


def _method_of(line: str) -> str:
    """The method (``module.Class.method``) of the block an OP301 line names."""
    return line.split(" OP301 block ", 1)[1].split(":", 1)[0].rsplit(".", 1)[0]


def test_upstream_fixes_the_runners_never_had_are_followed_and_listed(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """vllm-omni 0.30.0 against its base vllm-ascend 0.26.0rc1: the runners lack upstream's
    `_sanitize_placeholder_input_ids_for_forward` call (vllm-ascend 0.21.0rc1) and its
    `if self.use_compress:` branches (0.20.2rc1), which read as omni deleting them. Releases
    before those had the runners' text there without them: each is the hand port's lag,
    followed (the generated AR and generation runners call them) and listed with the
    statement and the release that brought it (OP306)."""
    cache = ("--cache-dir", cache_dir)
    patches, out, report = tmp_path / "p", tmp_path / "g", tmp_path / "report.json"
    extract = ("extract", "vllm-omni==0.30.0", "--base", "vllm-ascend==0.26.0rc1", "--lenient")
    assert cli(*cache, *extract, "--patches", patches).exit_code in (0, 1)
    synced = cli(
        *cache, "sync", "--patches", patches, "--upstream", "vllm-ascend==0.26.0rc1",
        "--generated", out, "--json", report,
    )  # fmt: skip
    assert synced.exit_code in (0, 1), synced.stdout + synced.stderr
    # With releases only, a deletion whose code came with the runner's text around it in
    # one release is a conflict (docs/design.md rule 7), and so may be a block of its
    # method that relied on it; no other conflict.
    conflicts = [line for line in synced.stdout.splitlines() if " OP301 block " in line]
    unordered = {_method_of(line) for line in conflicts if "releases alone cannot tell" in line}
    assert all(_method_of(line) in unordered for line in conflicts), conflicts
    rows = {row["id"]: row for row in json.loads(report.read_text())["blocks"]}
    fixes = ("self._sanitize_placeholder_input_ids_for_forward(", "if self.use_compress:")
    for runner in ("npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        code = _method_code(out / runner, "execute_model")
        assert all(code.count(fix) == 1 for fix in fixes), runner
    # The dummy run's branch too: its body was wrapped in a `with` after the releases
    # that show the runners' text there.
    for runner in ("npu_model_runner.py", "npu_generation_model_runner.py"):
        assert "if self.use_compress:" in _method_code(out / runner, "_dummy_run"), runner
    lags = [
        piece
        for module in read_patch_set(patches).modules
        for piece in module.pieces
        if isinstance(piece, Block)
        and piece.kind is BlockKind.DELETION
        and any(key.startswith(fixes) for key in piece.anchor.replaced)
    ]
    assert len(lags) >= 4, [piece.id for piece in lags]
    for piece in lags:
        assert rows[piece.id]["status"] == "followed", piece.id
        fix = next(f for f in fixes if any(key.startswith(f) for key in piece.anchor.replaced))
        listed = f"edit {piece.id}: upstream code the runners never had: `{fix}"
        assert listed in synced.stdout, piece.id
        line = next(line for line in synced.stdout.splitlines() if listed in line)
        assert " OP306 " in line and ", which vllm-ascend==0.2" in line, line


def test_the_next_upgrade_keeps_upstream_fixes_and_runs_nothing_twice(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """vllm-omni 0.32.0rc1 onto vllm-ascend 0.30.0rc2 (sdist only), its base detected:
    both runners' `execute_model` keep upstream's MTP sanitize call and DeepSeek-V4's
    `use_compress` branch (lags followed and listed), and run `handle_preemptions` and the
    ngram scheduler-output copy once each (the AR runner's markers fence upstream's ngram
    `if`: it is upstream's, not a second copy); `_dummy_run` keeps its `use_compress`
    branch too; at most 10 conflicts are left (the two early-exit guards, four deletions
    releases cannot order: rule 7, and the four EPLB edits of 0.21.0rc1 split across
    methods, the four the clone's commit names too: rule 5)."""
    out, summary = tmp_path / "g", tmp_path / "up.md"
    result = cli(
        "--cache-dir", cache_dir, "upgrade", "vllm-omni==0.32.0rc1", "--base", "detect",
        "--to", "vllm-ascend==0.30.0rc2", "--patches", tmp_path / "p", "--out", out,
        "--summary", summary, "--lenient",  # 0.30.0's lost marker, moved (marker-allow.txt)
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    for runner in ("npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        code = _method_code(out / runner, "execute_model")
        assert code.count("self._sanitize_placeholder_input_ids_for_forward(") == 1, runner
        assert "if self.use_compress:" in code, runner
        assert code.count(".handle_preemptions(") == 1, runner
        assert code.count("scheduler_output.num_scheduled_tokens.copy()") == 1, runner
    assert "if self.use_compress:" in _method_code(out / "npu_model_runner.py", "_dummy_run")
    lags = summary.read_text().split("## Upstream changes the runners never had")[1]
    assert "`self._sanitize_placeholder_input_ids_for_forward(" in lags.split("\n## ")[0]
    twice = [
        line
        for line in result.stdout.splitlines()
        if " OP512 " in line and ".execute_model (" in line
    ]
    assert not twice, result.stdout
    counts = re.search(r"(\d+) conflicts", summary.read_text())
    assert counts is not None and int(counts.group(1)) <= 10, summary.read_text()[:300]


def _method_code(path: Path, name: str) -> str:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    method = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name
    )
    return ast.unparse(method)
