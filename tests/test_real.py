"""Real data: pinned vllm-omni and vllm-ascend releases from PyPI, read from the download cache.

Select with ``-m real``; deselect with ``-m "not real"``. CI runs them with a cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_port import extract
from omni_port.markers import LABELLED, PLAIN, scan
from omni_port.model import Block, BlockKind
from omni_port.syntax import parse
from omni_port.textio import SourceText
from omni_port.upstream import ASCEND_RUNNER, OMNI_RUNNERS, Spec, SpecKind, locate
from tests.conftest import Cli

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
    base_source = locate(
        Spec(SpecKind.PYPI, "vllm-ascend", "0.26.0rc1"), ASCEND_RUNNER, cache_dir
    ).source
    base = extract.Base(
        "vllm-ascend==0.26.0rc1", base_source.sha256, parse(base_source.text, base_source.path)
    )
    source = _runner(cache_dir, "0.30.0", "vllm_omni/platforms/npu/worker/npu_ar_model_runner.py")
    options = extract.ExtractOptions(lenient=True)
    pieces = extract.extract_module(source, "npu_ar_model_runner.py", base, options).module.pieces
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
        *common, "sync", "--patches", patches, "--upstream", f"vllm-ascend=={ascend}", "--out", out
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    for name in ("npu_model_runner.py", "npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        compile((out / name).read_text(), name, "exec")
