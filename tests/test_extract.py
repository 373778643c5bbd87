"""extract: golden patch sets from the synthetic runners, with and without a base."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from omni_port import api
from omni_port.catalog import describe, drift, markdown
from omni_port.extract import extractor
from omni_port.model import Anchor, Block, BlockKind, Chunk, Copy, Edge, PatchSet, Upstream
from omni_port.patches.patchfile import render_patch_set, render_piece
from omni_port.patches.store import read_patch_set
from omni_port.pyast.parser import parse
from omni_port.sources.textio import read_source
from tests.conftest import Cli, read_tree
from tests.golden import DATA, cases, check_tree


def _args(case: str) -> list[str]:
    return (DATA / "extract" / case / "args").read_text().split()


@pytest.mark.parametrize("case", cases("extract"))
def test_extract_golden(case: str, cli: Cli, in_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "patches"
    result = cli("extract", *_args(case), "--patches", out)
    assert result.exit_code == 0, result.output
    check_tree(DATA / "extract" / case / "expected", read_tree(out))

    again = cli.loud("extract", *_args(case), "--patches", out)
    assert again.exit_code == 0
    assert "patches unchanged" in again.stderr

    patch_set = read_patch_set(out)
    rendered = render_patch_set(patch_set, "omni-port 0.1.0")
    assert rendered == read_tree(out)


def _base() -> Upstream:
    source = read_source(DATA / "upstream/v1/model_runner_v1.py")
    return Upstream("v1", source.sha256, parse(source.text, source.path))


def _pieces(name: str, base: Upstream | None = None, **options: object) -> list[object]:
    source = read_source(DATA / "omni" / name)
    opts = replace(extractor.ExtractOptions(), **options)  # type: ignore[arg-type]
    return list(extractor.extract_module(source, name, base, opts).module.pieces)


def _block(pieces: list[object], ident_suffix: str) -> Block:
    found = [p for p in pieces if isinstance(p, Block) and p.id.endswith(ident_suffix)]
    assert len(found) == 1, [getattr(p, "id", "") for p in pieces]
    return found[0]


def test_replacement_records_replaced_statements() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base())
    common = _block(pieces, "execute_model.block-04")
    rare = _block(pieces, "execute_model.block-05")
    for block in (common, rare):
        assert block.kind is BlockKind.REPLACEMENT
        assert block.anchor.replaced == (
            "logits = self.model.compute_logits(sample_hidden_states)",
        )
        assert block.anchor.edge is Edge.LAST
    assert common.anchor.path[-1] == "if not self.broadcast_pp_output:"
    assert rare.anchor.path[-4:] == (
        "if not self.broadcast_pp_output:",
        "else:",
        "if not self.is_last_rank:",
        "else:",
    )


def test_without_base_blocks_are_insertions() -> None:
    pieces = _pieces("npu_ar_model_runner.py")
    blocks = [p for p in pieces if isinstance(p, Block)]
    assert blocks and all(b.kind is BlockKind.INSERTION for b in blocks)
    assert all(b.marked for b in blocks)


def test_owned_and_copied_members() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base())
    copies = {p.name for p in pieces if isinstance(p, Copy)}
    owned = {p.name for p in pieces if isinstance(p, Chunk) and p.name and not p.marked}
    assert copies == {"ExecuteModelState", "execute_model", "sample_tokens"}
    assert owned == {"_to_payload", "__init__"}


def test_class_level_block_is_one_marked_chunk() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base())
    marked = [p for p in pieces if isinstance(p, Chunk) and p.marked]
    assert len(marked) == 1
    assert "def _resolve_global_request_id" in marked[0].code
    assert "def _payload_for" in marked[0].code


def test_namedtuple_field_is_an_implicit_edit() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base())
    edit = _block(pieces, "ExecuteModelState.edit-01")
    assert not edit.marked and edit.kind is BlockKind.INSERTION
    assert edit.code.strip() == "multimodal_outputs: Any  # Omni-Specific"
    assert edit.anchor.before[0] == "hidden_states: object"


def test_no_implicit_keeps_only_marked_blocks() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base(), implicit=False)
    blocks = [p for p in pieces if isinstance(p, Block)]
    assert blocks and all(p.marked for p in blocks)
    with_implicit = _pieces("npu_ar_model_runner.py", _base())
    assert any(isinstance(p, Block) and not p.marked for p in with_implicit)


def test_block_code_is_dedented_and_byte_exact() -> None:
    pieces = _pieces("npu_ar_model_runner.py", _base())
    block = _block(pieces, "execute_model.block-04")
    lines = block.code.splitlines()
    assert lines[0].startswith("#  ----") and lines[-1].startswith("#  ----")
    assert lines[2] == "try:"
    assert "                sample_hidden_states" not in block.code
    source = (DATA / "omni/npu_ar_model_runner.py").read_text().splitlines()
    original = source[block.origin.start - 1 : block.origin.end]
    assert [line[16:] for line in original] == lines


COUNTERPART_OMNI = """\
class R(Base):
    def f(self, batch):
        a = self.load(batch)
        # ---------- Omni-new ----------
        a = self.wrap(a)
        # ---------- Omni-new ----------
        self.step(a)
        return a
"""


@pytest.mark.parametrize(
    ("gpu_body", "expected"),
    [
        pytest.param(
            "a = self.load(batch)\nself.log()\na = self.wrap(a)\nreturn a\n",
            Anchor((), ("self.log()", "a = self.load(batch)"), ("return a",), (), Edge.NONE),
            id="once",
        ),
        pytest.param("a = self.wrap(a)\nb = 1\na = self.wrap(a)\n", None, id="twice"),
        pytest.param("a = self.load(batch)\nreturn a\n", None, id="absent"),
    ],
)
def test_a_block_records_where_the_gpu_runner_has_its_code(
    gpu_body: str, expected: Anchor | None
) -> None:
    body = "".join("        " + line + "\n" for line in gpu_body.splitlines())
    gpu = f"class G(Base):\n    def f(self, batch):\n{body}"
    module = api.extract_text(COUNTERPART_OMNI, "omni.py", counterpart=gpu).module
    (block,) = [p for p in module.pieces if isinstance(p, Block)]
    assert block.counterpart == expected


_FENCING_BASE = """\
class NPUModelRunner:
    def execute_model(self, scheduler_output):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")
        if self.use_ngram:
            scheduler_output = replace(scheduler_output, tokens=scheduler_output.tokens.copy())
        if has_kv_transfer_group():
            get_kv_transfer_group().handle_preemptions(scheduler_output.kv_metadata)
        total = scheduler_output.total_num_scheduled_tokens
        return self.forward(total)
"""

#: The maintainers' markers fence upstream's ngram `if`, verbatim, with omni's edit of the
#: kv `if` after it.
_FENCING_RUNNER = """\
class OmniRunner(NPUModelRunner):
    def execute_model(self, scheduler_output):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")
        self.omni_step_begin(scheduler_output)
        #  -------------------------------------- Omni-new ----------------------------------
        if self.use_ngram:
            scheduler_output = replace(scheduler_output, tokens=scheduler_output.tokens.copy())

        if has_kv_transfer_group():
            metadata = scheduler_output.kv_metadata
            if metadata is not None:
                get_kv_transfer_group().handle_preemptions(metadata)
        #  -------------------------------------- Omni-new ----------------------------------
        total = scheduler_output.total_num_scheduled_tokens
        return self.forward(total)
"""


def _fenced_blocks(tmp_path: Path, runner: str) -> list[Block]:
    base_path, runner_path = tmp_path / "base.py", tmp_path / "runner.py"
    base_path.write_text(_FENCING_BASE)
    runner_path.write_text(runner)
    source = read_source(base_path)
    base = Upstream("v1", source.sha256, parse(source.text, source.path))
    options = extractor.ExtractOptions()
    module = extractor.extract_module(read_source(runner_path), "runner", base, options).module
    return [p for p in module.pieces if isinstance(p, Block)]


def test_upstream_code_a_marked_region_fences_verbatim_is_upstream_s(tmp_path: Path) -> None:
    """A marked block owns only what it changed: the upstream statement it holds verbatim
    stays upstream's (a sync takes the new upstream's text of it), and no block lists it
    as replaced, so it can never run twice."""
    blocks = _fenced_blocks(tmp_path, _FENCING_RUNNER)
    by_kind = {(b.kind, b.marked): b for b in blocks}
    assert len(blocks) == 2, [(b.id, b.kind, b.code) for b in blocks]
    step = by_kind[(BlockKind.INSERTION, False)]
    assert step.code.strip() == "self.omni_step_begin(scheduler_output)"
    assert step.anchor.after[0] == "if self.use_ngram:"
    kv = by_kind[(BlockKind.REPLACEMENT, True)]
    assert kv.anchor.replaced[0].startswith("if has_kv_transfer_group():")
    assert len(kv.anchor.replaced) == 1
    assert kv.anchor.before[0] == "if self.use_ngram:"
    # The part keeps its markers, so that the generated runner marks it too.
    lines = kv.code.splitlines()
    assert "Omni-new" in lines[0] and "Omni-new" in lines[-1]
    assert "use_ngram" not in kv.code


def test_a_region_of_upstream_code_only_is_a_block_as_it_stands(tmp_path: Path) -> None:
    """Markers around upstream code alone say omni owns that code: nothing to split."""
    runner = _FENCING_RUNNER.replace(
        """            metadata = scheduler_output.kv_metadata
            if metadata is not None:
                get_kv_transfer_group().handle_preemptions(metadata)
""",
        """            get_kv_transfer_group().handle_preemptions(scheduler_output.kv_metadata)
""",
    )
    blocks = _fenced_blocks(tmp_path, runner)
    assert [(b.kind, b.marked) for b in blocks] == [
        (BlockKind.INSERTION, False),
        (BlockKind.REPLACEMENT, True),
    ]
    assert [k.split(":")[0] for k in blocks[1].anchor.replaced] == [
        "if self.use_ngram",
        "if has_kv_transfer_group()",
    ]


def test_the_catalog_of_a_split_region_matches_the_code(tmp_path: Path) -> None:
    """A part of a region records which side holds upstream code (in its patch too); the
    catalog rendered from the patches elides that code, so `check` matches the entry with
    the region as the runner has it, with or without a base."""
    base_path, runner_path = tmp_path / "base.py", tmp_path / "runner.py"
    base_path.write_text(_FENCING_BASE)
    runner_path.write_text(_FENCING_RUNNER)
    source = read_source(base_path)
    base = Upstream("v1", source.sha256, parse(source.text, source.path))
    runner = read_source(runner_path)
    options = extractor.ExtractOptions()
    module = extractor.extract_module(runner, "runner.py", base, options).module
    patch_set = PatchSet((module,))
    (part,) = [p for p in module.pieces if isinstance(p, Block) and p.marked]
    assert part.fenced == (True, False)
    assert "\nfenced: before\n" in render_piece(part)
    catalog = markdown.parse(markdown.render(describe.entries(patch_set)), "catalog.md")
    code = [drift.Runner("runner.py", parse(runner.text, runner.path))]
    assert drift.catalog_findings(catalog, "catalog.md", code) == []


_SPLIT_BASE = """\
class Runner:
    def dummy_run(self, n):
        assert n > 0
        if self.multimodal or self.prompt_embeds:
            ids = None
        else:
            ids = self.ids[:n]
        if self.mrope:
            positions = self.mrope_positions[:n]
        elif self.xdrope:
            positions = self.xdrope_positions[:n]
        else:
            positions = self.positions[:n]
        update(positions)
        return self.forward(ids, positions)
"""

_SPLIT_RUNNER = """\
class Runner:
    def dummy_run(self, n):
        assert n > 0
        # Omni-new
        kwargs = self.init_kwargs()
        if self.multimodal:
            ids = self.prepare_mm(n)
        else:
            ids = self.ids[:n]
        # Omni-new
        if self.mrope:
            positions = self.mrope_positions[:n]
        else:
            positions = self.positions[:n]
        update(positions)
        return self.forward(ids, positions)
"""


def test_an_edit_beside_a_marked_block_replaces_the_statement_it_edits() -> None:
    """One gap holds a marked block and, beside it outside the markers, the runner's
    ``if`` that lost a clause: that ``if`` is an edit of upstream's, and the block owns
    only the statement it changed. Were the block to list both as replaced, a sync onto
    an upstream that took the clause out too would drop the binding of ``positions``."""
    base = api.parse_upstream(_SPLIT_BASE, "base.py")
    module = api.extract_text(_SPLIT_RUNNER, "runner.py", base).module
    blocks = {b.marked: b for b in module.pieces if isinstance(b, Block)}
    assert len(blocks) == 2, [(b.id, b.kind) for b in module.pieces if isinstance(b, Block)]
    marked, edit = blocks[True], blocks[False]
    assert marked.kind is BlockKind.REPLACEMENT
    assert [k.split(":")[0] for k in marked.anchor.replaced] == [
        "if self.multimodal or self.prompt_embeds"
    ]
    assert edit.kind is BlockKind.REPLACEMENT
    assert [k.split(":")[0] for k in edit.anchor.replaced] == ["if self.mrope"]
    assert edit.anchor.before[0].startswith("if self.multimodal or self.prompt_embeds")
    assert "positions = self.positions[:n]" in edit.code
    # Onto an upstream that dropped the clause too, both land and `positions` stays bound.
    target = _SPLIT_BASE.replace(
        "        elif self.xdrope:\n            positions = self.xdrope_positions[:n]\n", ""
    )
    text = api.port_text(_SPLIT_RUNNER, base, target).text("runner.py")
    assert text.count("positions = self.positions[:n]") == 1, text
    assert "self.prepare_mm(n)" in text and "xdrope" not in text, text
