"""The layout of generated V2 modules (``v2.tidy``): vLLM-Omni's ruff rules hold on them.

Inline cases first, then ruff itself (a dev dependency) on what ``v2-sync`` makes of the
``tests/data/v2/wrap`` stand-in, with the rules of vLLM-Omni's ``[tool.ruff]`` written out
below (``test_v2_real.py`` reads them from vLLM-Omni's own pyproject)."""

from __future__ import annotations

import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from omni_port.v2 import checks, inputs, pipeline, tidy
from tests.conftest import ruff_findings
from tests.golden import DATA

CASE = DATA / "v2" / "wrap"
#: The rules of vLLM-Omni's ``[tool.ruff]`` (its pyproject.toml), which its CI runs.
VLLM_OMNI_RUFF = """\
[tool.ruff]
line-length = 120

[tool.ruff.lint]
select = ["E", "W", "F", "I", "N", "UP"]
ignore = ["E203", "N801", "N802", "N806", "N812"]
"""
TAG = "# omni-port: ascend-patch: "


def test_imports_join_one_sorted_block() -> None:
    before = dedent(
        """\
        # SPDX header
        \"\"\"Doc.\"\"\"

        from __future__ import annotations

        import threading
        from typing import Any

        import torch
        from vllm.logger import init_logger
        from vllm_ascend.patch import dispatch  # omni-port: ascend-patch: what
        from vllm.v1.worker import make_output

        from vllm_omni.outputs import OmniOutput
        from vllm_omni.worker import (
            helper,
        )

        # Imported for code copied from upstream (added by omni-port).
        from contextlib import nullcontext
        from vllm.distributed import get_group
        from vllm.distributed import has_group
        from vllm_ascend.utils import lmhead_tp_enable

        logger = init_logger(__name__)


        # a carried function
        from vllm_ascend.states import init_state as _init  # omni-port: ascend-patch: there
        import torch.nn as nn


        def f() -> None:
            pass
        """
    )
    after = dedent(
        """\
        # SPDX header
        \"\"\"Doc.\"\"\"

        from __future__ import annotations

        import threading

        # Imported for code copied from upstream (added by omni-port).
        from contextlib import nullcontext
        from typing import Any

        import torch
        import torch.nn as nn
        from vllm.distributed import get_group, has_group
        from vllm.logger import init_logger
        from vllm.v1.worker import make_output

        # omni-port: ascend-patch: what
        from vllm_ascend.patch import dispatch

        # omni-port: ascend-patch: there
        from vllm_ascend.states import init_state as _init
        from vllm_ascend.utils import lmhead_tp_enable

        from vllm_omni.outputs import OmniOutput
        from vllm_omni.worker import (
            helper,
        )

        logger = init_logger(__name__)


        # a carried function


        def f() -> None:
            pass
        """
    )
    tidied = tidy.tidy(before)
    assert tidied.text == after
    assert tidy.tidy(after).text == after, "a second run changes nothing"
    old = before.splitlines().index("def f() -> None:") + 1
    assert after.splitlines()[tidied.line(old) - 1] == "def f() -> None:"


def test_a_long_tag_goes_above_its_statement_wrapped_and_reads_back_whole() -> None:
    reason = " ".join(["word"] * 40)
    before = "def f(x):\n    y = g(\n        x,\n    )  " + TAG + reason + "\n    return y\n"
    out = tidy.tidy(before).text
    lines = out.splitlines()
    assert lines[1] == "    " + TAG + " ".join(["word"] * 18)
    assert lines[2] == "    #   " + " ".join(["word"] * 22)
    assert lines[3:6] == ["    y = g(", "        x,", "    )"]
    assert max(len(line) for line in lines) <= tidy.LINE_LENGTH
    assert list(checks.tags(out)) == [(2, "ascend-patch", reason)]
    assert tidy.tidy(out).text == out


def test_the_header_command_wraps_between_arguments_and_reads_back() -> None:
    command = "omni-port v2-sync vllm-omni==0.30.0 " + " ".join(["--vllm vllm==0.30.0"] * 8)
    text = tidy.tidy(f"# Regenerate: {command} --generated /tmp/out\nx = 1\n").text
    lines = text.splitlines()
    assert len(lines) == 3 and all(len(line) <= tidy.LINE_LENGTH for line in lines)
    assert lines[0].endswith(" --vllm \\") and lines[1].startswith("#   vllm==0.30.0")
    assert tidy.regenerate_command(text) == f"{command} --generated /tmp/out"


def test_a_short_tag_and_a_conflict_region_stay_as_they_are() -> None:
    conflict = "# >>>>>>> omni-port conflict: m.C.f (V2: not composed) " + "x " * 70
    code = f"y = 1  {TAG}short\n{conflict}\n# <<<<<<< omni-port conflict end\n"
    assert tidy.tidy(code).text == code


@pytest.fixture
def case(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CASE)
    return CASE


def test_the_generated_stand_in_passes_vllm_omnis_ruff(case: Path, tmp_path: Path) -> None:
    """In a copy of the stand-in vLLM-Omni package, as the modules would be in a PR."""
    settings = inputs.Settings(
        source="omni", upstream="ascend", vllm_base="vllm", vllm=("vllm",), allow="allow.txt"
    )
    result = pipeline.generate(inputs.load(settings, tmp_path / "cache"), "omni-port test", "x")
    root = tmp_path / "repo"
    shutil.copytree(CASE / "omni", root)
    (root / "pyproject.toml").write_text(VLLM_OMNI_RUFF)
    names = []
    for name, data in sorted(result.files.items()):
        if name.endswith(".py"):
            (root / "vllm_omni/worker_v2" / name).write_bytes(data)
            names.append(f"vllm_omni/worker_v2/{name}")
    assert len(names) == 4
    assert ruff_findings(root, names) == ""
