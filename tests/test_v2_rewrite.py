"""The NPU rewrites of omni's V2 code (``v2.rewrite``) and the carried functions
(``v2.carry``), case by case on small inline sources."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst
import pytest

from omni_port.v2 import ascend, carry, rewrite, wrap

CUDA = ascend.CudaRedirect(frozenset({"Event", "stream"}), "utils.py", 7, entered=True)
SUBSTITUTIONS = (
    ascend.Substitution(
        ("vllm.dp", "dispatch"),
        ("vllm.runner", "dispatch"),
        ("ascend.patch", "dispatch"),
        "p.py",
        3,
    ),
    ascend.Substitution(
        ("vllm.batch", "InputBatch"),
        ("vllm.runner", "InputBatch"),
        ("ascend.batch", "AscendInputBatch"),
        "q.py",
        4,
    ),
    ascend.Substitution(
        ("vllm.tables", "BlockTables"),
        ("vllm.runner", "BlockTables"),
        ("ascend.tables", "A"),
        "r.py",
        5,
        doubt="bound conditionally (A or B)",
    ),
    ascend.Substitution(
        ("vllm.states", "init_model_state"),
        ("vllm.runner", "init_model_state"),
        ("ascend.states", "init_ascend_state"),
        "s.py",
        6,
    ),
)
OPTIONS = rewrite.Options(ascend.AscendPatches(SUBSTITUTIONS, (), CUDA))


def check_transformed(before: str, after: str, owner: str = "") -> None:
    assert rewrite.rewrite(dedent(before), OPTIONS, owner) == dedent(after)


def check_noop(code: str) -> None:
    check_transformed(code, code)


#: What a device-neutral rewrite leaves after the statement.
WAS = "  # omni-port: device-neutral: was "


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            'ok = t.device.type == "cuda"\n',
            f'ok = t.device.type != "cpu"{WAS}`t.device.type == "cuda"`\n',
            id="eq",
        ),
        pytest.param(
            "ok = 'cuda' != t.device.type\n",
            f"ok = 'cpu' == t.device.type{WAS}`'cuda' != t.device.type`\n",
            id="reversed-ne-quotes-kept",
        ),
        pytest.param(
            "if not t.is_cuda:  # why\n    pass\n",
            f'if not (t.device.type != "cpu"):  # why{WAS}`t.is_cuda`\n    pass\n',
            id="is-cuda-under-not-with-comment",
        ),
        pytest.param(
            "ok = t.is_cuda | u\n",
            f'ok = (t.device.type != "cpu") | u{WAS}`t.is_cuda`\n',
            id="is-cuda-parenthesized",
        ),
    ],
)
def test_device_neutral(before: str, after: str) -> None:
    check_transformed(before, after)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("t.is_cuda = True\n", id="store"),
        pytest.param('ok = t.device.type == "npu"\n', id="other-device"),
        pytest.param('ok = name == "cuda"\n', id="not-a-device-type"),
        pytest.param(
            "def f(s: torch.cuda.Stream) -> torch.cuda.Event:\n    pass\n", id="annotations"
        ),
        pytest.param("from .x import dispatch\n", id="relative-import"),
        pytest.param("from vllm.dp import *\n", id="star-import"),
        pytest.param("def f(:\n", id="does-not-parse"),
    ],
)  # fmt: skip
def test_left_alone(code: str) -> None:
    check_noop(code)


def test_the_note_names_every_global_the_patch_sets() -> None:
    """vllm-ascend's patch_input_batch sets two module globals to AscendInputBatch; neither
    is the module omni imported InputBatch from."""
    graphs = ascend.Substitution(
        ("vllm.graphs", "InputBatch"),
        ("vllm.graphs", "InputBatch"),
        ("ascend.batch", "AscendInputBatch"),
        "q.py",
        3,
    )
    patches = ascend.AscendPatches((*SUBSTITUTIONS, graphs), (), CUDA)
    out = rewrite.rewrite("from vllm.batch import InputBatch\n", rewrite.Options(patches))
    _, _, note = out.partition("# omni-port: ascend-patch: ")
    assert note.startswith(
        "vllm-ascend sets vllm.graphs.InputBatch and vllm.runner.InputBatch to "
        "ascend.batch.AscendInputBatch (q.py:3, 4); "
    )
    assert "replaces vllm.batch.InputBatch" not in note


def test_an_import_of_a_replaced_object_imports_the_replacement() -> None:
    out = rewrite.rewrite(
        "# lead\n"
        "from vllm.dp import DPState, dispatch, other  # keep\n"
        "from vllm.batch import InputBatch as Batch\n",
        OPTIONS,
    )
    lines = out.splitlines()
    assert lines[:2] == ["# lead", "from vllm.dp import DPState, other  # keep"]
    assert lines[2].startswith("from ascend.patch import dispatch  # omni-port: ascend-patch: ")
    assert "sets vllm.runner.dispatch to ascend.patch.dispatch (p.py:3)" in lines[2]
    assert lines[3].startswith("from ascend.batch import AscendInputBatch as Batch  # omni-port")
    assert len(lines) == 4


def test_a_doubtful_replacement_is_kept_and_said() -> None:
    out = rewrite.rewrite("from vllm.tables import BlockTables\n", OPTIONS)
    assert out.startswith("from vllm.tables import BlockTables  # omni-port: ascend-patch: ")
    assert rewrite.KEPT in out and "bound conditionally (A or B)" in out


@pytest.mark.parametrize(
    ("code", "words"),
    [
        pytest.param("def f(s):\n    e = torch.cuda.Event()\n", "runs as torch.npu.Event",
                     id="redirected"),
        pytest.param("def f(s):\n    torch.cuda.graph()\n", rewrite.NOT_REDIRECTED,
                     id="not-redirected"),
        pytest.param("e = torch.cuda.Event()\n", "at import time has no NPU redirection",
                     id="import-time"),
    ],
)  # fmt: skip
def test_torch_cuda_is_stated_on_its_line(code: str, words: str) -> None:
    out = rewrite.rewrite(code, OPTIONS)
    line = next(ln for ln in out.splitlines() if "torch.cuda." in ln)
    assert "# omni-port: torch-cuda: " in line and words in line


def test_a_member_fragment_keeps_its_indentation() -> None:
    member = "    # section\n    def f(self):\n        return self.t.is_cuda\n"
    out = rewrite.rewrite(member, OPTIONS, "Runner")
    assert out.splitlines()[:2] == ["    # section", "    def f(self):"]
    assert out.splitlines()[2].startswith('        return self.t.device.type != "cpu"')


# --- carry ----------------------------------------------------------------------------------

FACTORY = dedent(
    """\
    from __future__ import annotations

    import torch
    from vllm.states import init_model_state as _upstream
    from vllm.config import VllmConfig

    LIMIT = 3


    def factory(config: VllmConfig, model, device: torch.device):
        if model.omni:
            return LIMIT
        return _upstream(config, model, None, device)


    def other():
        return None
    """
)
TEXTS = {"vllm_omni/states/__init__.py": FACTORY}


def test_a_function_reading_a_replaced_object_is_carried() -> None:
    head = (
        "from __future__ import annotations\n\n"
        "import torch\n"
        "from vllm_omni.states import factory, other\n"
    )
    (found,) = carry.find(head, TEXTS, OPTIONS.patches)
    assert (found.name, found.path, found.line) == ("factory", "vllm_omni/states/__init__.py", 10)
    assert found.imports == (
        "from vllm_omni.states import LIMIT",
        "from vllm.config import VllmConfig",
        "from vllm.states import init_model_state as _upstream",
    ), "torch is imported alike already; a constant of its module comes from there"
    assert found.replaced == ("vllm.states.init_model_state",)
    chunk = found.chunk(OPTIONS).code
    assert (
        "from ascend.states import init_ascend_state as _upstream  # omni-port: ascend-patch"
        in chunk
    )
    assert "def factory(config: VllmConfig, model, device: torch.device):" in chunk
    kept = carry.without_imports(head, [found])
    assert kept.endswith("from vllm_omni.states import other\n")


def test_a_name_bound_otherwise_stops_the_carry() -> None:
    head = "import numpy as torch\nfrom vllm_omni.states import factory\n"
    assert carry.find(head, TEXTS, OPTIONS.patches) == ()


def test_a_function_that_reads_no_replaced_object_stays_omnis() -> None:
    head = "from vllm_omni.states import other\n"
    assert carry.find(head, TEXTS, OPTIONS.patches) == ()


# --- wrap -----------------------------------------------------------------------------------

NPU = dedent(
    """\
    class NPU(Base):
        def run(self, x, y=None):
            self.__secret = 1
            out = super().run(x, y=y)
            return out

        def step(self, x, y=None):
            before = self.prepare(x)
            return super().step(x, y=y) + before
    """
)


def _omni(name: str) -> cst.FunctionDef:
    module = cst.parse_module(
        f"class Omni(Base):\n    def {name}(self, x, y=None) -> int:\n        return x\n"
    )
    cls = module.body[0]
    assert isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock)
    function = cls.body.body[0]
    assert isinstance(function, cst.FunctionDef)
    return function


def test_a_name_mangled_attribute_is_not_moved_into_omnis_class() -> None:
    npu = wrap.npu_method(NPU, "NPU", "run")
    assert npu is not None
    why = wrap.unwrappable(wrap.Wrapping(npu, "run", frozenset({"run", "step"})), _omni("run"))
    assert "name-mangled" in why


def test_the_wrapper_calls_omnis_body_where_it_called_super() -> None:
    npu = wrap.npu_method(NPU, "NPU", "step")
    omni = _omni("step")
    assert npu is not None
    wrapping = wrap.Wrapping(npu, "step", frozenset({"run", "step"}), ("# w",), ("# b",))
    assert wrap.unwrappable(wrapping, omni) == ""
    wrapper, body = wrap.wrapped(wrapping, omni)
    code = cst.Module([]).code_for_node(wrapper)
    assert "return self._omni_step(x, y=y) + before" in code and "super()" not in code
    assert code.startswith("# w\ndef step(self, x, y=None) -> int:")
    assert cst.Module([]).code_for_node(body).startswith("\n# b\ndef _omni_step(")


def _left_out(code: str, selector: str) -> str:
    wrapper = cst.parse_statement(dedent(code))
    assert isinstance(wrapper, cst.FunctionDef)
    found = wrap.left_out(wrapper, selector, "# omni-port: npu-guard: why")
    assert found is not None
    return cst.Module([found[0]]).code


def test_a_left_out_step_leaves_its_tag_and_no_bare_pass() -> None:
    code = """\
        def run(self, x):
            y = super().run(x)
            # the join
            if x and self.join():
                self.join_dummy()
            return y
        """
    assert _left_out(code, "if x and self.join()") == dedent(
        """\
        def run(self, x):
            y = super().run(x)
            # the join
            # omni-port: npu-guard: why
            return y
        """
    )


def test_a_left_out_last_step_stays_a_pass_that_holds_the_block() -> None:
    code = """\
        def run(self, x):
            if x:
                self.join_dummy()
        """
    assert _left_out(code, "self.join_dummy()") == dedent(
        """\
        def run(self, x):
            if x:
                pass  # omni-port: npu-guard: why
        """
    )
