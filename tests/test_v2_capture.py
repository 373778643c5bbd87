"""vLLM's CUDA graph capture helpers in generated V2 code (``v2.capture``): entered inside
vllm-ascend's ``communicator_switch`` by the ``communicator-switch`` rewrite, and reported
(OP331) where they are not. Inline sources, then the ``tests/data/v2/wrap`` stand-in."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from textwrap import dedent

import pytest

from omni_port import runtime
from omni_port.model import Code, Severity
from omni_port.v2 import ascend, capture, checks, rewrite
from tests.conftest import Cli
from tests.golden import DATA

CASE = DATA / "v2" / "wrap"
ARGS = ("omni", "--upstream", "ascend", "--vllm-base", "vllm", "--vllm", "vllm")
STATE = "model_states/omni_model_state.py"
SWITCH = capture.CommunicatorSwitch(
    "vllm_ascend.worker.v2.utils", "vllm_ascend/worker/v2/utils.py", 9
)
PATCHES = ascend.AscendPatches(switch=SWITCH)


def _unswitched(code: str) -> list[tuple[int, str]]:
    return [(c.lineno, h) for c, h in capture.unswitched(ast.parse(dedent(code)))]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(
            """\
            from vllm.distributed.parallel_state import graph_capture
            def f(self):
                with torch.inference_mode(), graph_capture(device=self.device):
                    pass
            """,
            [(3, "graph_capture")],
            id="omni-mtp-capture",
        ),
        pytest.param(
            """\
            def f(self):
                from vllm.distributed import graph_capture as gc
                with gc(self.device):
                    pass
            """,
            [(3, "gc")],
            id="aliased-local-import",
        ),
        pytest.param(
            """\
            from vllm.distributed import parallel_state
            def f(self):
                with parallel_state.graph_capture(self.device):
                    pass
            """,
            [(3, "parallel_state.graph_capture")],
            id="module-attribute",
        ),
        pytest.param(
            """\
            def f(self):
                with get_tp_group().graph_capture(ctx):
                    pass
            """,
            [(2, "get_tp_group().graph_capture")],
            id="group-coordinator",
        ),
        pytest.param(
            """\
            from vllm.distributed.parallel_state import graph_capture
            from vllm_ascend.worker.v2.utils import communicator_switch
            def f(self):
                with communicator_switch():
                    def later():
                        with graph_capture(device=None):
                            pass
                    later()
            """,
            [(6, "graph_capture")],
            id="a-nested-function-runs-later",
        ),
        pytest.param(
            """\
            from vllm.distributed.parallel_state import graph_capture
            from vllm_ascend.worker.v2.utils import communicator_switch
            def f(self):
                with graph_capture(device=None), communicator_switch():
                    pass
            """,
            [(4, "graph_capture")],
            id="switch-entered-after-it",
        ),
    ],
)
def test_a_helper_outside_the_switch_is_found(code: str, expected: list[tuple[int, str]]) -> None:
    assert _unswitched(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            """\
            from vllm.distributed.parallel_state import graph_capture
            from vllm_ascend.worker.v2.utils import communicator_switch
            def f(self):
                with torch.inference_mode(), communicator_switch(), graph_capture(device=None):
                    pass
            """,
            id="same-with-before-it",
        ),
        pytest.param(
            """\
            from vllm.distributed.parallel_state import graph_capture
            from vllm_ascend.worker.v2.utils import communicator_switch as switch
            def f(self):
                with switch():
                    for size in sizes:
                        with graph_capture(device=None):
                            pass
            """,
            id="enclosing-with-aliased",
        ),
        pytest.param(
            """\
            from vllm_ascend.worker.model_runner_v1 import graph_capture
            def f(self):
                with graph_capture(device=None):
                    pass
            """,
            id="vllm-ascends-own-graph-capture",
        ),
        pytest.param(
            """\
            def f(self):
                with self.graph_capture(device=None):
                    pass
            """,
            id="a-method-of-omnis-own",
        ),
    ],
)
def test_a_switched_or_foreign_capture_is_left(code: str) -> None:
    assert _unswitched(code) == []


def test_the_rewrite_enters_the_switch_right_before_vllms_helper() -> None:
    code = dedent(
        """\
        def f(self):
            from vllm.distributed.parallel_state import graph_capture

            try:
                # every size
                with torch.inference_mode(), graph_capture(device=self.device):
                    pass
            finally:
                pass
        """
    )
    out = rewrite.rewrite(code, rewrite.Options(PATCHES))
    lines = out.splitlines()
    assert lines[3:6] == [
        "    try:",
        "        from vllm_ascend.worker.v2.utils import communicator_switch",
        "        # every size",
    ]
    head, _, comment = lines[6].partition("  # omni-port: communicator-switch: ")
    assert head == (
        "        with torch.inference_mode(), communicator_switch(), "
        "graph_capture(device=self.device):"
    )
    assert "(vllm_ascend/worker/v2/utils.py:9)" in comment
    assert _unswitched(out) == []
    assert rewrite.rewrite(out, rewrite.Options(PATCHES)) == out, "a second run changes nothing"


def test_the_rewrite_reuses_an_imported_switch_and_needs_one() -> None:
    code = dedent(
        """\
        from vllm.distributed.parallel_state import graph_capture
        from vllm_ascend.worker.v2.utils import communicator_switch as cs
        def f(self):
            with graph_capture(device=None):
                pass
        """
    )
    out = rewrite.rewrite(code, rewrite.Options(PATCHES))
    assert out.splitlines()[3].startswith("    with cs(), graph_capture(device=None):  # omni-port")
    assert len(out.splitlines()) == len(code.splitlines())
    unswitched = rewrite.rewrite(code, rewrite.Options(ascend.AscendPatches()))
    assert unswitched == code, "no switch in vllm-ascend: nothing to enter (OP331 reports it)"


def test_the_switch_is_read_from_vllm_ascends_v2_package() -> None:
    text = dedent(
        """\
        from contextlib import contextmanager

        @contextmanager
        def communicator_switch():
            import vllm.distributed.device_communicators.cuda_communicator as cuda
            cuda.CudaCommunicator = object
            yield
        """
    )
    found = capture.find_switch({"vllm_ascend/worker/v2/utils.py": text})
    assert found == capture.CommunicatorSwitch(
        "vllm_ascend.worker.v2.utils", "vllm_ascend/worker/v2/utils.py", 4
    )
    assert capture.find_switch({"vllm_ascend/other/utils.py": text}) is None
    unrelated = text.replace("cuda.CudaCommunicator = object", "pass")
    assert capture.find_switch({"vllm_ascend/worker/v2/utils.py": unrelated}) is None


def test_verify_reports_a_helper_outside_the_switch_as_an_error() -> None:
    code = "from vllm.distributed.parallel_state import graph_capture\n"
    code += "def f(d):\n    with graph_capture(device=d):\n        pass\n"
    found = list(checks.capture_findings({"m.py": ast.parse(code)}, PATCHES))
    assert [(f.code, f.path, f.line, f.col, f.severity) for f in found] == [
        (Code.OP331, "m.py", 3, 10, Severity.ERROR)
    ]


# --- the stand-in pair ----------------------------------------------------------------------


@pytest.fixture
def case(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CASE)
    return CASE


def test_a_generated_capture_moved_out_of_the_switch_fails_verify(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    """The seeded copy: omni's capture as omni wrote it, outside vllm-ascend's switch."""
    out = tmp_path / "out"
    assert cli("v2-sync", *ARGS, "--v2-allow", "allow.txt", "--generated", out).exit_code == 0
    verified = cli("verify", "--generated", out)
    assert verified.exit_code == 0
    state = out / STATE
    text = state.read_text()
    assert "communicator_switch(), graph_capture(device=self.device)" in text
    seeded = text.replace("communicator_switch(), ", "")
    seeded = re.sub(
        r"\n *from vllm_ascend.worker.v2.utils import communicator_switch\n", "\n", seeded
    )
    state.write_text(seeded)
    verified = cli("verify", "--generated", out)
    assert verified.exit_code == 1
    line = next(n for n, ln in enumerate(seeded.splitlines(), 1) if "graph_capture(device=" in ln)
    col = seeded.splitlines()[line - 1].index("graph_capture(device=") + 1
    assert f"{STATE}:{line}:{col}: OP331 " in verified.stdout
    reasons = runtime.unresolved(out)
    assert any("verify problems" in r and "OP331" in r for r in reasons), reasons
