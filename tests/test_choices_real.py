"""Every offered choice works on real data (issue 43, "Done when"): every candidate of every
conflict of `make sync` (this repository's default inputs) and of the next real upgrade
resolves (`resolve BLOCK --at '#K'`, exit 0) and verifies (`sync`, then `verify` reports no
problem it did not report before), and a conflict that offers none says why.

Select with ``-m real``; the releases come from the download cache.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from omni_port.model import RESOLVE_FIRST
from tests.conftest import Cli, default_workspace

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent

#: Line numbers a message names: they move when a block goes in, the problem does not.
_LINES = re.compile(r"\blines? \d+(?:, \d+)*")
#: What a conflict without candidates says of them.
_NONE = ("no candidate works: ", "no place runs: ", "no place in the new method resembles")


def _problems(cli: Cli, common: tuple[str | Path, ...], work: Path) -> Counter[str]:
    """verify's errors but the conflicts left (OP310) and what one of them owns (a finding
    at a statement it keeps: "resolve the conflict first"), by code and message, lines left
    out."""
    verified = cli(*common, "verify", "--json", work / "verify.json")
    assert verified.exit_code in (0, 1), verified.stderr
    findings = json.loads((work / "verify.json").read_text())["findings"]
    return Counter(
        f"{f['code']} {_LINES.sub('lines', f['message'])}"
        for f in findings
        if f["severity"] == "error" and f["code"] != "OP310" and RESOLVE_FIRST not in f["message"]
    )


def _every_candidate_works(cli: Cli, common: tuple[str | Path, ...], work: Path) -> list[str]:
    """Each conflict's candidates tried as a maintainer takes them, the patches restored
    between tries; the list of what was tried (``BLOCK #K``) and of conflicts offering
    none (``BLOCK none``)."""
    synced = cli(*common, "sync", "--json", work / "sync.json")
    assert synced.exit_code in (0, 1), synced.stderr
    rows = json.loads((work / "sync.json").read_text())["blocks"]
    before = _problems(cli, common, work)
    shutil.copytree(work / "patches", work / "patches.kept")
    tried: list[str] = []
    for row in (r for r in rows if r["status"] == "conflict"):
        if not row["candidates"]:
            assert any(said in row["reason"] for said in _NONE), row["reason"]
            tried.append(f"{row['id']} none")
        for rank in range(1, len(row["candidates"]) + 1):
            tried.append(f"{row['id']} #{rank}")
            resolved = cli(*common, "resolve", row["id"], "--at", f"#{rank}")
            assert resolved.exit_code == 0, f"{row['id']} #{rank}: {resolved.stderr}"
            assert cli(*common, "sync").exit_code in (0, 1)
            new = _problems(cli, common, work) - before
            assert not new, f"{row['id']} #{rank}: verify reports {sorted(new)}"
            shutil.rmtree(work / "patches")
            shutil.copytree(work / "patches.kept", work / "patches")
    return tried


def test_every_candidate_of_make_sync_resolves_and_verifies(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make sync` on the default inputs (vllm-omni 0.30.0 onto vllm-ascend 0.30.0rc2)."""
    default_workspace(tmp_path, v2=False)
    monkeypatch.chdir(tmp_path)
    common = ("--cache-dir", cache_dir)
    assert cli(*common, "extract").exit_code == 0
    tried = _every_candidate_works(cli, common, tmp_path)
    assert tried, "make sync ends with conflicts"
    # The knot of the generation runner's sample_tokens: edit-08 anywhere would run
    # `self.finalize_kv_connector()` twice while edit-09 is a conflict.
    reasons = json.loads((tmp_path / "sync.json").read_text())["blocks"]
    (moved,) = [
        r for r in reasons if r["id"].endswith("NPUGenerationModelRunner.sample_tokens.edit-08")
    ]
    assert (
        "no candidate works: line 2855, replacing 3 statements (for the same reason)"
        in (moved["reason"])
    )


def test_every_candidate_of_the_next_real_upgrade_resolves_and_verifies(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runners of vLLM-Omni 0.32.0rc1 onto vllm-ascend 0.30.0rc2, from the release
    their copies match best (README, "Upgrade day")."""
    default_workspace(tmp_path, v2=False)
    monkeypatch.chdir(tmp_path)
    common = ("--cache-dir", cache_dir)
    upgraded = cli(
        *common, "upgrade", "vllm-omni==0.32.0rc1", "--base", "detect",
        "--to", "vllm-ascend==0.30.0rc2", "--summary", "up.md", "--lenient",
    )  # fmt: skip
    assert upgraded.exit_code in (0, 1), upgraded.stderr
    _every_candidate_works(cli, common, tmp_path)
