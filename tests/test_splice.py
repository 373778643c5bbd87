"""The splice engine on the golden sync cases (tests/sync_cases.py: tests/data/splice/<case>/
and every rule's cases, tests/data/rules/<rule>/<case>/), and on edge cases inline.

Every case's output parses, equals ``expected.py`` and ``expected.txt``, and a second sync
is byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from omni_port import api
from omni_port.model import Block, Code, Status
from omni_port.sources.textio import decode
from omni_port.sync import decisions
from omni_port.sync.imports import _line_after_edits
from tests.golden import DATA, check_file
from tests.sync_cases import all_cases, fates, flag, inputs, run

CASES = DATA / "splice"


@pytest.mark.parametrize("case", all_cases())
def test_golden(case: str) -> None:
    folder = DATA / case
    _, result = run(folder)
    text = decode(result.files["omni.py"], "omni.py").text
    compile(text, "omni.py", "exec")
    check_file(folder / "expected.py", text)
    check_file(folder / "expected.txt", fates(result))
    assert run(folder)[1].files == result.files, "a second sync must be byte-identical"


@pytest.mark.parametrize("case", [c for c in all_cases() if c.startswith("splice/")])
def test_placed_blocks_round_trip_through_extract(case: str) -> None:
    """Extracting the generated module finds every placed block's code unchanged (a rule
    case may merge upstream's edit into a block's code)."""
    folder = DATA / case
    patches, result = run(folder)
    base = api.parse_upstream((folder / "upstream.py").read_text(encoding="utf-8"), "u.py")
    options = api.ExtractOptions(upstream_class=flag(folder, "sync-class", "NPUModelRunner"))
    generated = decode(result.files["omni.py"], "omni.py").text
    again = api.extract_text(generated, "omni.py", base, options).module
    found = {p.code.strip("\n") for p in again.pieces if isinstance(p, Block) and p.marked}
    placed = {p.block_id for p in result.placements if p.status is Status.PLACED}
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and piece.marked and piece.id in placed:
                assert piece.code.strip("\n") in found, piece.id


def test_unresolved_names_point_at_their_line_in_the_output() -> None:
    """OP303 lines are lines of the written module, after imports were added and dropped."""
    _, result = run(CASES / "signature_changed")
    lines = decode(result.files["omni.py"], "omni.py").text.split("\n")
    unresolved = [f for f in result.findings if f.code is Code.OP303]
    assert unresolved
    for finding in unresolved:
        name = finding.message.split("'")[1]
        assert name in lines[finding.line - 1][finding.col - 1 :], finding


@dataclass
class _Piece:
    text: str
    tag: str = ""


def test_lines_after_import_edits_shift_or_need_a_new_reading() -> None:
    before = ["import a\nimport b\n", "x = 1\ny = 2", " + 3\n", "z = f()\n"]
    pieces = [
        _Piece(before[0] + "import c\n"),
        _Piece(before[1]),
        _Piece(" + 4\n"),
        _Piece(before[3]),
    ]
    assert _line_after_edits(1, before, pieces) is None  # in the edited import segment
    assert _line_after_edits(3, before, pieces) == 4  # one import line added above
    assert _line_after_edits(4, before, pieces) is None  # a line the edited piece shares
    assert _line_after_edits(5, before, pieces) == 6


def test_conflict_output_parses_and_keeps_upstream_code() -> None:
    _, result = run(CASES / "replaced_duplicated")
    text = decode(result.files["omni.py"], "omni.py").text
    compile(text, "omni.py", "exec")
    assert "# >>>>>>> omni-port conflict:" in text
    code = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    upstream = (CASES / "replaced_duplicated" / "upstream.py").read_text(encoding="utf-8")
    body = [line.strip() for line in upstream.split("def execute_model", 1)[1].splitlines()[1:]]
    rest = iter(code)
    assert all(line in rest for line in body), "upstream's body stands, in its order"
    assert any(f.code is Code.OP301 for f in result.findings)


def test_marked_code_over_upstream_edit_leaves_the_edit_for_review() -> None:
    """Omni's marked code replaces statements upstream edited: omni's code runs, and the
    note carries upstream's edit as a diff against the base."""
    _, result = run(CASES / "replaced_changed")
    text = decode(result.files["omni.py"], "omni.py").text
    assert "temperature=self.temperature" not in text
    assert "compute_logits(hidden, meta=self.meta)" in text
    (review,) = [f for f in result.findings if f.code is Code.OP309]
    assert "\n+logits = self.model.compute_logits(hidden, temperature" in review.detail
    assert "\n-logits = self.model.compute_logits(hidden)\n" in review.detail


@pytest.mark.parametrize(
    ("case", "fates"),
    [
        pytest.param(
            "gpu_transplant",
            {"execute_model.block-01": "placed"},
            id="gpu-block-lands-in-npu-method",
        ),
        pytest.param(
            "neighbours_moved", {"block-01": "placed", "block-02": "placed"}, id="moved-neighbours"
        ),
        pytest.param(
            "replaced_changed",
            {"block-01": "placed", "block-02": "placed"},
            id="replaced-changed",
        ),
        pytest.param("replaced_duplicated", {"block-02": "conflict"}, id="replaced-duplicated"),
        pytest.param(
            "dataflow",
            {"forward.block-01": "placed", "sample.block-01": "conflict"},
            id="data-flow",
        ),
        pytest.param("nested_path", {"block-01": "placed"}, id="new-enclosing-with"),
        pytest.param("match_case", {"block-01": "placed"}, id="block-in-a-match-case"),
        pytest.param(
            "block_order",
            {"block-01": "placed", "block-02": "placed"},
            id="order-of-blocks-settles-a-tie",
        ),
        pytest.param("vanished_method", {"load_model.block-01": "conflict"}, id="vanished-method"),
        pytest.param(
            "header_and_signature",
            {"edit-01": "placed", "edit-02": "placed"},
            id="header-signature",
        ),
        pytest.param(
            "signature_changed",
            {"edit-01": "conflict", "edit-02": "placed"},
            id="signature-changed",
        ),
        pytest.param(
            "signature_merged",
            {"edit-01": "placed", "edit-02": "placed"},
            id="signature-merged",
        ),
    ],
)
def test_fates(case: str, fates: dict[str, str]) -> None:
    """The behaviour each golden case exists for, stated independently of the golden files."""
    _, result = run(CASES / case)
    status = {p.block_id: p.status.value for p in result.placements}
    for suffix, fate in fates.items():
        found = [value for ident, value in status.items() if ident.endswith(suffix)]
        assert found == [fate], (suffix, status)


def test_a_place_that_breaks_its_location_line_is_reported_where_the_block_stands() -> None:
    """The block's release already breaks its Location line (stale: it rules out no place),
    so the anchor places it where it was; the line is wrong, or the block: OP409 at the
    block's lines in the output, said by the engine's decision (the catalog checked once)."""
    folder = DATA / "rules" / "catalog" / "no_a_place_that_breaks_a_stale_location_is_reported"
    patches, upstream, locations = inputs(folder)
    _, result = run(folder)
    (placed,) = result.placements
    (found,) = [f for f in result.findings if f.code is Code.OP409]
    assert placed.status is Status.PLACED
    assert (found.path, found.line) == ("omni.py", placed.start)
    (location,) = locations.values()
    assert location in found.message
    decided = decisions.decide(patches.modules[0], upstream, locations)
    (decision,) = [d for c in decided.copies.values() for d in c.decisions]
    assert decision.breaks_location == location
