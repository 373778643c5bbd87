"""sync on the synthetic runners: identity on the unchanged upstream, round trip, determinism."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from omni_port import api
from omni_port.model import Block, PatchSet, SourceText
from omni_port.sources.textio import decode, read_source
from omni_port.sync.pipeline import SyncResult
from tests.golden import DATA

BASE = DATA / "upstream/v1/model_runner_v1.py"
RUNNERS = ("npu_model_runner.py", "npu_ar_model_runner.py", "npu_generation_model_runner.py")


def _upstream(path: Path = BASE) -> api.Upstream:
    return api.parse_upstream(path.read_text(encoding="utf-8"), "v1", "fakeacc.runner_v1")


def _extract(sources: dict[str, SourceText]) -> PatchSet:
    base = _upstream()
    modules = tuple(api.extract_text(s, name, base).module for name, s in sources.items())
    return PatchSet(modules)


def _sync(patches: PatchSet, upstream: api.Upstream) -> SyncResult:
    return api.sync_patches(patches, upstream, tool="omni-port test").result


def _body(data: bytes) -> str:
    """A generated module without its three-line header."""
    return "".join(decode(data, "x").text.splitlines(keepends=True)[3:])


def test_unchanged_upstream_reproduces_the_runners_byte_for_byte() -> None:
    sources = {name: read_source(DATA / "omni" / name) for name in RUNNERS}
    result = _sync(_extract(sources), _upstream())
    assert not result.findings
    for name, source in sources.items():
        assert _body(result.files[name]) == source.text, name


def test_the_owned_members_carried_are_counted() -> None:
    """Owned members only (``load_model``, ``_model_forward``, ``_to_payload``, ``__init__``,
    ``_run_generation_model``): not the module code nor the class headers, which have a
    name too, nor the copies of upstream methods."""
    sources = {name: read_source(DATA / "omni" / name) for name in RUNNERS}
    assert _sync(_extract(sources), _upstream()).counts["owned"] == 5


def test_extract_of_sync_round_trips_the_blocks() -> None:
    sources = {name: read_source(DATA / "omni" / name) for name in RUNNERS}
    patches = _extract(sources)
    result = _sync(patches, _upstream())
    regenerated = {name: decode(result.files[name], name) for name in RUNNERS}
    again = _extract(regenerated)

    def blocks(patch_set: PatchSet) -> list[tuple[str, str, object]]:
        return [
            (p.id, p.code, p.anchor)
            for m in patch_set.modules
            for p in m.pieces
            if isinstance(p, Block)
        ]

    assert blocks(again) == blocks(patches)


def test_sync_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    script = (
        "import sys; from omni_port.cli import main; a = sys.argv; "
        "main(['-q','extract',a[1],'--base',a[2],'--patches','p'], standalone_mode=False); "
        "main(['-q','sync','--patches','p','--upstream',a[2],'--generated','g'], "
        "standalone_mode=False)"
    )
    outputs = []
    for seed in ("0", "12345"):
        work = tmp_path / seed
        work.mkdir()
        (work / "pyproject.toml").write_text("[tool.omni-port]\n")
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        subprocess.run(
            [sys.executable, "-c", script, str(DATA / "omni"), str(BASE)],
            cwd=work,
            env=env,
            check=True,
        )
        outputs.append({p.name: p.read_bytes() for p in sorted((work / "g").iterdir())})
    assert outputs[0] == outputs[1]
