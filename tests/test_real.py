"""Real data: pinned vllm-omni and vllm-ascend releases from PyPI, read from the download cache.

Select with ``-m real``; deselect with ``-m "not real"``. CI runs them with a cache.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from omni_port import api
from omni_port.extract.markers import LABELLED, PLAIN, scan
from omni_port.model import CONFLICT_OPEN, Block, BlockKind, Copy, Layout, Located, SourceText, Tree
from omni_port.patches import lockfile
from omni_port.pyast.diff import flat_keys
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import find_member
from omni_port.sources.textio import decode
from omni_port.sources.upstream import OMNI_RUNNERS, Spec, SpecKind, locate
from tests.conftest import Cli, default_workspace

pytestmark = pytest.mark.real


def _runner(cache: Path, version: str, member: str) -> SourceText:
    return locate(Spec(SpecKind.PYPI, "vllm-omni", version), member, cache).source


def _marker_lines(text: str) -> list[int]:
    return [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if LABELLED.match(line.strip()) or PLAIN.match(line.strip())
    ]


AR = "npu_ar_model_runner.py"


def _counts(model: int, ar: int, generation: int) -> dict[str, int]:
    return {"npu_model_runner.py": model, AR: ar, "npu_generation_model_runner.py": generation}


@pytest.mark.parametrize(
    ("version", "regions", "malformed"),
    [
        pytest.param("0.30.0", _counts(4, 13, 7), {AR: [("OP102", 133)]}, id="0.30.0"),
        pytest.param("0.14.0", _counts(1, 6, 4), {}, id="0.14.0"),
    ],
)  # fmt: skip
def test_every_marker_line_is_accounted_for(
    cache_dir: Path,
    version: str,
    regions: dict[str, int],
    malformed: dict[str, list[tuple[str, int]]],
) -> None:
    for member in OMNI_RUNNERS:
        name = Path(member).name
        source = _runner(cache_dir, version, member)
        found = scan(parse(source.text, source.path))
        paired = {line for r in found.regions for line in (r.opener.line, r.closer.line)}
        reported = {f.line for f in found.findings}
        assert set(_marker_lines(source.text)) == paired | reported, name
        assert len(found.regions) == regions[name], name
        assert [(f.code.value, f.line) for f in found.findings] == malformed.get(name, []), name


def test_replacements_against_the_base_record_what_they_replaced(cache_dir: Path) -> None:
    base = api.load_upstream("vllm-ascend==0.26.0rc1", api.Settings(cache=cache_dir))
    source = _runner(cache_dir, "0.30.0", "vllm_omni/platforms/npu/worker/npu_ar_model_runner.py")
    options = api.ExtractOptions(lenient=True)
    name = "npu_ar_model_runner.py"
    pieces = api.extract_text(source, name, base, options).module.pieces
    blocks = [p for p in pieces if isinstance(p, Block) and p.marked]
    logits = [b for b in blocks if "compute_logits" in b.code and b.member == "execute_model"]
    assert len(logits) == 2
    for block in logits:
        assert block.kind is BlockKind.REPLACEMENT
        assert block.anchor.replaced == (
            "logits = self.model.compute_logits(sample_hidden_states)",
        )


@pytest.mark.parametrize(
    ("omni", "ascend"),
    [
        pytest.param("0.24.0", "0.19.1rc1", id="0.24.0"),
        pytest.param("0.18.0", "0.18.0", id="0.18.0"),
    ],
)
def test_sync_onto_its_own_base_places_everything(
    cli: Cli, cache_dir: Path, tmp_path: Path, omni: str, ascend: str
) -> None:
    patches, out = tmp_path / "p", tmp_path / "g"
    common = ("--cache-dir", cache_dir)
    result = cli(
        *common,
        "extract",
        f"vllm-omni=={omni}",
        "--base",
        f"vllm-ascend=={ascend}",
        "--patches",
        patches,
    )
    assert result.exit_code == 0, result.stderr
    result = cli(
        *common,
        "sync",
        "--patches",
        patches,
        "--upstream",
        f"vllm-ascend=={ascend}",
        "--generated",
        out,
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    for name in ("npu_model_runner.py", "npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        compile((out / name).read_text(), name, "exec")


ROOT = Path(__file__).resolve().parent.parent
REAL_CATALOG = Path(
    os.environ.get(
        "OMNI_PORT_REAL_CATALOG", ROOT.parent / "shared" / "seeds" / "npu_omni_specific_blocks.md"
    )
)


def test_identity_sync_reproduces_the_copied_methods(cache_dir: Path, tmp_path: Path) -> None:
    """Synced onto its own base, vllm-omni 0.24.0's copied methods come back.

    Compared statement by statement through the normalized keys: formatting, comments
    and quoted annotations of upstream lines follow upstream, everything else is exact.
    """
    base = api.load_upstream("vllm-ascend==0.19.1rc1", api.Settings(cache=cache_dir))
    sources = {Path(m).name: _runner(cache_dir, "0.24.0", m) for m in OMNI_RUNNERS}
    located = [Located(s.path, n, s) for n, s in sources.items()]
    patches, _ = api.extract(located, base, api.ExtractOptions())
    result = api.sync_patches(patches, base).result
    assert not [f for f in result.findings if f.severity.value == "error"]
    kinds: Counter[str] = Counter()
    for module in patches.modules:
        source_tree = parse(sources[module.name].text, module.name)
        generated_tree = parse(decode(result.files[module.name], module.name).text, module.name)
        for piece in module.pieces:
            if isinstance(piece, Copy):
                assert _dump(source_tree, piece) == _dump(generated_tree, piece), piece.id
            elif isinstance(piece, Block) and not piece.marked:
                kinds[piece.kind.value] += 1
    assert kinds["insertion"] and kinds["replacement"] and kinds["signature"]


def _dump(tree: Tree, copy: Copy) -> list[str]:
    member = find_member(tree, copy.owner, copy.name)
    assert member is not None
    return [member.key, *flat_keys(member.clauses[0])]


@pytest.mark.skipif(not REAL_CATALOG.is_file(), reason=f"the real catalog is not at {REAL_CATALOG}")
def test_real_catalog_against_0_30_0(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    result = cli(
        "--cache-dir",
        cache_dir,
        "check",
        "vllm-omni==0.30.0",
        "--catalog",
        REAL_CATALOG,
        "--patches",
        tmp_path / "none",
        "--generated",
        tmp_path / "none",
        "--no-cache",
        "--format",
        "json",
    )
    assert result.exit_code == 1
    kinds = Counter(json.loads(line)["kind"] for line in result.stdout.splitlines())
    assert (
        kinds["uncatalogued"] >= 10
        and kinds["content-drift"] >= 3
        and kinds["missing-from-code"] >= 1
    )
    assert kinds["malformed-marker"] == 1


def test_rendered_catalog_passes_check_on_0_30_0(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog rendered from 0.30.0's patches agrees with 0.30.0's code.

    Runs outside the project, in a workspace of its own, so that the project's configured
    base (for unmarked divergence) stays out.
    """
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    patches, catalog = tmp_path / "p", tmp_path / "catalog.md"
    common = ("--cache-dir", cache_dir)
    extracted = cli(
        *common,
        "extract",
        "vllm-omni==0.30.0",
        "--base",
        "vllm-ascend==0.26.0rc1",
        "--lenient",
        "--patches",
        patches,
    )
    assert extracted.exit_code == 1, extracted.stderr  # the malformed markers, listed
    assert cli(*common, "catalog", "--patches", patches, "--out", catalog).exit_code == 0
    result = cli(
        *common,
        "check",
        "vllm-omni==0.30.0",
        "--catalog",
        catalog,
        "--patches",
        tmp_path / "none",
        "--generated",
        tmp_path / "none",
        "--no-cache",
        "--format",
        "json",
    )
    kinds = Counter(json.loads(line)["kind"] for line in result.stdout.splitlines())
    # Nothing extracted or generated in tmp_path/none: the gate says so beside the catalog.
    assert kinds == Counter({"malformed-marker": 1, "nothing-to-check": 2})


def test_default_sync_verifies(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    """vLLM is checked too (no 'unverified' note), and every error left sits in a method
    where sync left a conflict for the maintainer, or is one of the two true problems of
    these inputs the README's upgrade day fixes: anything else would be a false positive."""
    patches, out = tmp_path / "p", tmp_path / "g"
    common = ("--cache-dir", cache_dir, "--config", ROOT / "pyproject.toml")
    assert cli(*common, "extract", "--patches", patches).exit_code == 0
    assert cli(*common, "sync", "--patches", patches, "--generated", out).exit_code in (0, 1)
    result = cli(
        *common, "verify", "--patches", patches, "--generated", out, "--json", tmp_path / "v.json"
    )
    findings = json.loads((tmp_path / "v.json").read_text())["findings"]
    assert not [f for f in findings if f["code"] == "OP506"], findings
    errors = [f for f in findings if f["severity"] == "error"]
    # Conflicts left for the maintainer fail verify (OP310, one per conflict of the lock),
    # and so do the problems that follow from them, in the methods they sit in. No call
    # runs twice (OP512): a block that would add a second copy is a conflict itself. A
    # dead store (OP515) there: followed code whose readers a conflict leaves out.
    allowed = {"OP310", "OP502", "OP507", "OP508", "OP510", "OP515"}
    assert {f["code"] for f in errors} <= allowed, errors
    lock = lockfile.read_or_none(out)
    assert lock is not None
    assert sum(1 for f in errors if f["code"] == "OP310") == len(lock.conflicts)
    for error in (e for e in errors if e["code"] != "OP310"):
        path = out / Path(error["path"]).name
        if _in_conflicted_method(path, error["line"]):
            continue
        # The one true problem of these inputs outside any conflict, which the README's
        # upgrade day fixes in place: omni's `_dummy_run` signature puts `randomize_inputs`
        # where vllm-ascend 0.30 has `skip_gdn_state_update` (OP508). Omni's input block
        # owns only the statement it changed: upstream's mrope `positions` stay bound.
        assert _method_at(path, error["line"]) == "_dummy_run", error
        assert error["code"] == "OP508", error
    assert result.exit_code == (1 if errors else 0)
    _hooks_omni_replaced_are_notes(findings)


def _hooks_omni_replaced_are_notes(findings: list[dict[str, object]]) -> None:
    """The generation runner's `sample_tokens` replaced upstream's sampling with omni's
    block-01: `self._sample()` is lost on purpose, a note naming it (OP516), as are the
    `self._model_forward()` calls omni's `_dummy_run` blocks replaced; no hook call is lost
    otherwise. The AR `sample_tokens` initializes what it binds again before any read, as the
    old runner did: notes (OP515)."""
    hooks = [f for f in findings if f["code"] == "OP516"]
    conflicts = [f for f in findings if f["code"] == "OP310"]
    assert hooks and all(f["severity"] == "note" for f in hooks), hooks
    messages = [str(f["message"]) for f in hooks]
    sampling = "NPUGenerationModelRunner.sample_tokens no longer calls `self._sample()`"
    block = "NPUGenerationModelRunner.sample_tokens.block-01 replaced the statement that made it"
    # Unless block-01 is a conflict: it takes out the `sampler_output` that upstream's code
    # kept by the conflict of edit-09 reads (coupled); a conflict replaces nothing.
    placed = not any("sample_tokens.block-01" in str(f["message"]) for f in conflicts)
    assert placed == any(m.startswith(sampling) and m.endswith(block) for m in messages), messages
    dummy = {
        f["path"]
        for f in hooks
        if "._dummy_run no longer calls `self._model_forward()`" in str(f["message"])
    }
    assert len(dummy) == 2, hooks
    inherited = [
        f
        for f in findings
        if f["code"] == "OP515"
        and "the old runner's method has the same dead store" in str(f["message"])
    ]
    assert {Path(str(f["path"])).name for f in inherited} >= {"npu_ar_model_runner.py"}, findings
    assert all(f["severity"] == "note" for f in inherited), inherited


def _method_at(path: Path, line: int) -> str:
    """The innermost def holding ``line`` (its signature included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and (node.decorator_list[0].lineno if node.decorator_list else node.lineno)
        <= line
        <= (node.end_lineno or 0)
    ]
    return max(found, key=lambda node: node.lineno).name if found else ""


def _in_conflicted_method(path: Path, line: int) -> bool:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    methods = [
        node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return any(
        any(CONFLICT_OPEN in row for row in lines[m.lineno - 1 : m.end_lineno]) for m in methods
    )


def test_a_field_the_generated_namedtuple_drops_is_reported_at_its_root(
    cli: Cli, cache_dir: Path, tmp_path: Path
) -> None:
    """vllm-omni 0.18.0 onto vllm-ascend 0.19.1rc1 without upstream history: the generated
    ExecuteModelState lacks upstream's batch_desc; verify names the class, the field, and
    the constructions and unpackings that disagree, not only the undefined name further
    down. (With history, sync merges batch_desc in: see test_rules_real.py.)"""
    patches, out = tmp_path / "p", tmp_path / "g"
    common = ("--cache-dir", cache_dir)
    extract = ("extract", "vllm-omni==0.18.0", "--base", "vllm-ascend==0.18.0")
    assert cli(*common, *extract, "--patches", patches).exit_code == 0
    sync = (
        "sync",
        "--patches",
        patches,
        "--upstream",
        "vllm-ascend==0.19.1rc1",
        "--generated",
        out,
        "--history",
        "none",
    )
    assert cli(*common, *sync).exit_code in (0, 1)
    result = cli(*common, "verify", "--patches", patches, "--generated", out)
    rows = [row for row in result.stdout.splitlines() if " OP510 " in row]
    root = [row for row in rows if "`ExecuteModelState` copies" in row]
    assert len(root) == 1 and "drops its field `batch_desc`" in root[0]
    sites = [row for row in rows if "which the generated `ExecuteModelState` dropped" in row]
    # Two constructions and one unpacking: the generation runner's unpacking is the code of
    # `sample_tokens.edit-02`, a conflict (it takes out the `batch_desc` upstream's
    # `propose_draft_token_ids(...)` reads, kept by block-01's conflict: coupled).
    assert len(sites) == 3
    assert {Path(row.split(":")[0]).name for row in sites} == {
        "npu_ar_model_runner.py",
        "npu_generation_model_runner.py",
    }
    assert {Path(row.split(":")[0]).parent for row in sites} == {out}, "files one can open"
    assert result.exit_code == 1


def test_committed_lock_matches_the_default_sync(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """generated/omni-port.lock is current: `make sync` would write the same one.

    Runs in a copy of the project's configuration so that the regenerate command written
    into each output names the same relative paths as `make sync` does.
    """
    default_workspace(tmp_path, v2=True)
    monkeypatch.chdir(tmp_path)
    common = ("--cache-dir", cache_dir)
    assert cli(*common, "extract").exit_code == 0
    assert cli(*common, "sync").exit_code in (0, 1)
    committed = json.loads((ROOT / "generated" / lockfile.LOCK_NAME).read_text())
    fresh = json.loads((tmp_path / "generated" / lockfile.LOCK_NAME).read_text())
    assert fresh == committed, (
        "the committed lock is stale: run `make sync` and commit generated/omni-port.lock"
    )
    # `make sync` composes the V2 tree too (`v2-source`), with the V1 runners; its lock is
    # committed as well (generated/.gitignore), and must be current the same way.
    v2 = lockfile.read_or_none(tmp_path / "generated" / "v2")
    assert v2 is not None and v2.layout is Layout.V2
    v2_lock = Path("generated", "v2", lockfile.LOCK_NAME)
    assert json.loads((tmp_path / v2_lock).read_text()) == json.loads(
        (ROOT / v2_lock).read_text()
    ), "the committed V2 lock is stale: run `make sync` and commit generated/v2/omni-port.lock"


def test_upgrade_from_0_18_0_with_detected_base(cli: Cli, cache_dir: Path, tmp_path: Path) -> None:
    """The upgrade assistant on real data: 0.18.0's runners, base detected, onto 0.23.0."""
    summary = tmp_path / "upgrade.md"
    result = cli(
        "--cache-dir", cache_dir, "upgrade", "vllm-omni==0.18.0", "--to", "vllm-ascend==0.23.0",
        "--base", "detect", "--candidates", "0.17.0rc1,0.18.0,0.19.1rc1",
        "--patches", tmp_path / "p", "--generated", tmp_path / "g", "--summary", summary,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    text = summary.read_text()
    assert "## Every block" in text and "## Conflicts to resolve" in text
    assert text.count("omni-port resolve ") >= 1
    lock = json.loads((tmp_path / "g" / lockfile.LOCK_NAME).read_text())
    ids = {row["id"] for row in lock["placements"]}
    for block_id in ids:
        assert block_id in text, f"{block_id} is not accounted for in the summary"


def test_the_default_inputs_run_on_one_vllm(cache_dir: Path) -> None:
    """`make sync` pairs the newest vllm-omni with the vllm-ascend release that runs on the
    same vLLM: no OP511 note (0.24.0 on 0.23.0 had one), and the base is the one `bases`
    ranks first."""
    from omni_port.sources.config import load

    config = load(ROOT / "pyproject.toml")
    settings = api.Settings(config, cache_dir)
    assert api.inputs.vllm_pairing_notes(config.source, config.upstream, settings) == []
    located = api.load_runners([config.source], settings)
    candidates = ("0.25.1rc1", "0.26.0rc1", "0.27.1rc1", "0.30.0rc2")
    ranked = api.rank_bases(located, settings, candidates).ranked
    assert ranked[0].label == config.base


def test_the_sample_tokens_knot_is_placed_and_resolve_refuses_what_sync_places(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the next real upgrade, the generation runner's sample_tokens: intent owns the
    marked block-01 (upstream's 0.27.1rc1 binding among what it replaces is read only
    there), edit-15 reads `to_host`, which only block-01 binds, and edit-09's deletion holds
    with what edit-15 replaces; so no conflict of the knot is left there (the method's one
    conflict is edit-12, the EPLB wrapper 0.21.0rc1 took out kept around 0.23.0rc1's
    `forward_end(...)`, rule 5 across methods), and `resolve` refuses a block sync places
    ("not a conflict"), recording nothing."""
    default_workspace(tmp_path, v2=False)
    monkeypatch.chdir(tmp_path)
    common = ("--cache-dir", cache_dir)
    # 0.32.0rc1's lost marker is 0.30.0's, moved: reviewed, --lenient takes it.
    upgraded = cli(
        *common, "upgrade", "vllm-omni==0.32.0rc1", "--base", "vllm-ascend==0.26.0rc1",
        "--to", "vllm-ascend==0.30.0rc2", "--summary", "up.md", "--lenient",
    )  # fmt: skip
    assert upgraded.exit_code == 1  # conflicts elsewhere, and the two signatures
    member = "NPUGenerationModelRunner.sample_tokens"
    conflicts = [line for line in upgraded.stdout.splitlines() if " OP301 " in line]
    here = [line for line in conflicts if f".{member}." in line.split(": ")[1]]
    assert [line.split(" OP301 block ")[1].split(":")[0] for line in here] == [
        f"npu_generation_model_runner.{member}.edit-12"
    ], here
    assert "vllm-ascend==0.21.0rc1 would be followed by half" in here[0], here
    lock = json.loads((tmp_path / "generated" / "omni-port.lock").read_text())
    rows = {r["id"].split(".", 1)[1]: r for r in lock["placements"]}
    for name in ("block-01", "edit-15", "edit-09"):
        assert "intent" in rows[f"{member}.{name}"]["decided_by"], rows[f"{member}.{name}"]
    block = f"npu_generation_model_runner.{member}.block-01"
    refused = cli(*common, "resolve", block, "--at", "2804")
    assert refused.exit_code == 2 and "not a conflict" in refused.stderr
    patch = (tmp_path / "patches" / "npu_generation_model_runner").glob("*.block-01.patch")
    text = next(p for p in patch if "sample_tokens" in p.name).read_text()
    assert "resolved-replaces: " not in text
