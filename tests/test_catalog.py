"""catalog: golden parses of synthetic catalogs, errors, render round trips, code matching."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from textwrap import dedent

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from omni_port.catalog.markdown import (
    Catalog,
    CatalogEntry,
    EntryKind,
    appears_in,
    code_containment,
    code_matches,
    code_similarity,
    describe_location,
    marked_regions,
    normalized_lines,
    parse,
    render,
)
from omni_port.errors import BadInput
from omni_port.model import Anchor, Code, Edge
from tests.golden import DATA, cases, check_file

PARSE = DATA / "catalog" / "parse"


def describe(catalog: Catalog) -> str:
    """The golden format of a parse: each entry's place, kind, texts and matched form."""
    out = [f"title: {catalog.title}"]
    out += [f"preamble: {line}" for line in catalog.preamble.split("\n") if catalog.preamble]
    for entry in catalog.entries:
        owner = entry.class_name or "<module>"
        module = f" ({entry.module})" if entry.module else ""
        out.append(f"{entry.line}: {entry.kind} {owner}{module}.{entry.method} - {entry.title}")
        regions = [len(region.splitlines()) for region in marked_regions(entry.code)]
        lines = len(entry.code.splitlines())
        out.append(f"  code at {entry.code_line}: {lines} lines, marked regions {regions}")
        for label, text in (("location", entry.location), ("prose", entry.prose)):
            out += [f"  {label}: {line}" for line in text.split("\n") if text]
        out += [f"  note: {line}" for line in entry.note.split("\n") if entry.note]
        out += [f"  | {line}" for line in normalized_lines(entry.code)]
    return "".join(line + "\n" for line in out)


def _read(case: str) -> str:
    return (PARSE / case / "catalog.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("case", cases("catalog/parse"))
def test_parse_golden(case: str) -> None:
    check_file(PARSE / case / "expected.txt", describe(parse(_read(case), "catalog.md")))


@pytest.mark.parametrize("case", cases("catalog/parse"))
def test_render_reads_back(case: str) -> None:
    catalog = parse(_read(case), "catalog.md")
    text = render(catalog.entries, title=catalog.title, preamble=catalog.preamble)
    again = parse(text, "rendered.md")
    assert again == catalog
    assert render(again.entries, title=again.title, preamble=again.preamble) == text


def test_render_reproduces_the_maintainers_format() -> None:
    text = _read("runners")
    catalog = parse(text, "catalog.md")
    assert render(catalog.entries, title=catalog.title, preamble=catalog.preamble) == text


def test_crlf_parses_like_lf() -> None:
    lf = parse(_read("runners"), "catalog.md")
    crlf = parse(_read("runners").replace("\n", "\r\n"), "catalog.md")
    assert crlf == lf
    assert [(e.line, e.code_line) for e in crlf.entries] == [
        (e.line, e.code_line) for e in lf.entries
    ]


# --- errors ---------------------------------------------------------------------------------

ERRORS = [
    pytest.param("## R (r.py)\n\n### m - T\n\n```python\nx = 1\n", 5, id="unterminated-fence"),
    pytest.param("# T\n\n### m - T\n\n```python\nx = 1\n```\n", 3, id="entry-outside-section"),
    pytest.param("## R\n### m: T\n```python\nx\n```\n", 2, id="entry-without-separator"),
    pytest.param("## R\n### self.m - T\n```python\nx\n```\n", 2, id="entry-method-not-a-name"),
    pytest.param("# T\nprose\n```python\nx\n```\n", 3, id="fence-in-preamble"),
    pytest.param("## R\n\n```python\nx\n```\n### m - T\n", 3, id="fence-before-first-entry"),
    pytest.param("## R\nintro\n### m - T\n```python\nx\n```\n", 2, id="text-before-first-entry"),
    pytest.param("## R\n### m - T\nprose\n### n - U\n```python\nx\n```\n", 2, id="entry-no-code"),
    pytest.param("## R\n### m - T\n```python\nx\n```\n```python\ny\n```\n", 6, id="two-fences"),
    pytest.param("## R\n### m - T\n```python\n\n```\n", 3, id="empty-fence"),
    pytest.param("## R\n### m - T\n```text\nx\n```\n", 3, id="not-python"),
    pytest.param(
        "## R\n### m - T\n```python\nx\n# --- Omni-new ---\ny\n```\n", 5, id="marker-left-open"
    ),
    pytest.param(
        "## State Extension\n\n```python\nx\n```\n### m - T\n", 6, id="entry-in-module-section"
    ),
    pytest.param("## State Extension\n\nprose only\n", 1, id="module-section-no-code"),
    pytest.param("## R (r.py) trailing\n", 1, id="bad-section-heading"),
    pytest.param("## 2nd Runner\n", 1, id="section-name-not-a-name"),
]


@pytest.mark.parametrize(("text", "line"), ERRORS)
def test_parse_errors(text: str, line: int) -> None:
    with pytest.raises(BadInput) as caught:
        parse(text, "cat.md")
    assert [(f.code, f.line, f.path) for f in caught.value.findings] == [
        (Code.OP401, line, "cat.md")
    ]


@pytest.mark.parametrize(("text", "line"), ERRORS)
def test_parse_errors_with_crlf(text: str, line: int) -> None:
    with pytest.raises(BadInput) as caught:
        parse(text.replace("\n", "\r\n"), "cat.md")
    assert caught.value.line == line


LINES = [
    "# Title",
    "## Runner (r.py)",
    "## State Extension",
    "## bad heading (",
    "### run - Title",
    "### run",
    "```python",
    "```",
    "---",
    "Location: somewhere",
    "x = 1",
    "# ---- Omni-new ----",
    "# ... more ...",
    "",
    "prose",
]


@given(st.lists(st.sampled_from(LINES), max_size=14), st.booleans())
def test_parse_never_crashes(lines: list[str], crlf: bool) -> None:
    text = ("\r\n" if crlf else "\n").join(lines)
    try:
        parse(text, "cat.md")
    except BadInput as error:
        assert {f.code for f in error.findings} == {Code.OP401}


# --- render ---------------------------------------------------------------------------------

BLOCK = "# ---- Omni-new ----\nself.a = 1\n# ---- Omni-new ----\n"


def _entry(**fields: object) -> CatalogEntry:
    base = CatalogEntry("Runner", "r.py", "run", "Title", EntryKind.BLOCK, BLOCK)
    return replace(base, **fields)  # type: ignore[arg-type]


def test_render_groups_sections_in_first_seen_order() -> None:
    entries = [
        _entry(method="a"),
        _entry(class_name="", method="State", title="Extension", kind=EntryKind.MODULE),
        _entry(class_name="Other", method="b"),
        _entry(method="c"),
    ]
    parsed = parse(render(entries), "cat.md").entries
    assert [(e.class_name, e.method) for e in parsed] == [
        ("Runner", "a"),
        ("Runner", "c"),
        ("", "State"),
        ("Other", "b"),
    ]


def test_render_location_only_when_present() -> None:
    assert "Location:" not in render([_entry()])
    assert "\nLocation: At the top\n" in render([_entry(location="At the top")])


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(_entry(kind=EntryKind.STATEMENT), id="kind-disagrees-with-code"),
        pytest.param(_entry(kind=EntryKind.MODULE), id="module-kind-in-a-class"),
        pytest.param(_entry(code="x = 1"), id="code-without-final-newline"),
        pytest.param(_entry(code="```\n"), id="code-with-fence"),
        pytest.param(_entry(method="a.b"), id="method-not-a-name"),
        pytest.param(_entry(title=""), id="empty-title"),
        pytest.param(_entry(title="two\nlines"), id="title-two-lines"),
        pytest.param(_entry(prose="## heading"), id="prose-heading"),
        pytest.param(_entry(note="---"), id="note-rule"),
        pytest.param(_entry(prose="Location: x"), id="prose-reads-as-location"),
        pytest.param(
            _entry(class_name="", title="Ext (x)", kind=EntryKind.MODULE), id="module-title-parens"
        ),
    ],
)
def test_render_refuses_what_parse_cannot_read_back(entry: CatalogEntry) -> None:
    with pytest.raises(ValueError):
        render([entry])


WORDS = st.lists(
    st.sampled_from(["Talker", "KV", "split", "logits", "`x`", "a-b", "v2", "#1", "**bold**"]),
    min_size=1,
    max_size=4,
).map(" ".join)
PROSE = st.lists(WORDS, max_size=3).map("\n".join)
STATEMENTS = st.lists(
    st.sampled_from(["x = 1", "self.y = f(x)  # note", "# ... more ...", "if a:\n    b()", ""]),
    min_size=1,
    max_size=3,
).map(lambda stmts: "".join(s + "\n" for s in stmts))
CODE = {
    EntryKind.BLOCK: STATEMENTS.map(lambda c: f"# ---- Omni-new ----\n{c}# ---- Omni-new ----\n"),
    EntryKind.METHOD: STATEMENTS.map(
        lambda c: "def f(self):\n" + "".join(f"    {line}\n" for line in c.splitlines())
    ),
    EntryKind.STATEMENT: STATEMENTS.map(lambda c: "# [Omni] why\n" + c),
    EntryKind.MODULE: st.just("class State(NamedTuple):\n    extra: Any  # <-- Omni\n"),
}


@st.composite
def entries(draw: st.DrawFn) -> CatalogEntry:
    module_level = draw(st.integers(0, 4)) == 0
    kind = EntryKind.MODULE if module_level else draw(st.sampled_from(list(CODE)[:3]))
    return CatalogEntry(
        class_name="" if module_level else draw(st.sampled_from(["Runner", "ARRunner"])),
        module=draw(st.sampled_from(["", "runner.py", "ar_runner.py"])),
        method=draw(st.sampled_from(["run", "_dummy_run", "__init__", "State"])),
        title=draw(WORDS),
        kind=kind,
        code=draw(CODE[kind]),
        location=draw(st.just("") | WORDS),
        prose=draw(PROSE),
        note=draw(PROSE),
    )


def _grouped(items: list[CatalogEntry]) -> list[CatalogEntry]:
    """Entries in section order: one section per (class, module), one per module-level entry."""
    keyed = [((e.class_name, e.module) if e.class_name else n, e) for n, e in enumerate(items)]
    order = list(dict.fromkeys(key for key, _ in keyed))
    return [entry for _, entry in sorted(keyed, key=lambda pair: order.index(pair[0]))]


@given(st.lists(entries(), max_size=6), st.just("") | WORDS, st.just("") | PROSE)
def test_render_parse_round_trip(items: list[CatalogEntry], title: str, preamble: str) -> None:
    # Prose with neither a title nor a section is no catalog (OP401): see the next test.
    assume(bool(title or items or not preamble.strip()))
    text = render(items, title=title, preamble=preamble)
    catalog = parse(text, "cat.md")
    assert list(catalog.entries) == _grouped(items)
    assert (catalog.title, catalog.preamble) == (title, preamble)
    assert render(catalog.entries, title=title, preamble=preamble) == text


@pytest.mark.parametrize("text", ["hello\n", "Some notes.\n\nMore notes.\n", "```\nx = 1\n```\n"])
def test_text_that_is_no_catalog_is_refused(text: str) -> None:
    with pytest.raises(BadInput) as error:
        parse(text, "notes.md")
    assert [(f.code.value, f.line) for f in error.value.findings] == [("OP401", 1)]


def test_a_blank_or_title_only_catalog_is_an_empty_one() -> None:
    assert parse("\n", "cat.md").entries == ()
    assert parse("# Omni blocks\n\nNone yet.\n", "cat.md").entries == ()


# --- matching -------------------------------------------------------------------------------


def _code(text: str) -> str:
    return dedent(text).lstrip("\n")


MARKED = _code(
    """
    #  -------------------------------------- Omni-new ---------------------------------------
    if multimodal_outputs is not None:
        logger.debug("[AR] keys = %s", list(multimodal_outputs))
    #  -------------------------------------- Omni-new ---------------------------------------
    """
)


@pytest.mark.parametrize(
    ("entry", "block", "expected"),
    [
        pytest.param(MARKED, MARKED, True, id="identical"),
        pytest.param(
            MARKED,
            "if multimodal_outputs is not None:\n  logger.debug('[AR] keys = %s', "
            "list(multimodal_outputs))\n",
            True,
            id="no-markers-other-indent-and-quotes",
        ),
        pytest.param(
            MARKED,
            "        # ---Omni-new---\n\n        # why this is here\n"
            "        if multimodal_outputs is not None:  # note\n"
            '            logger.debug(\n                "[AR] keys = %s",\n'
            "                list(multimodal_outputs),\n            )\n        # ---Omni-new---\n",
            True,
            id="blank-lines-comments-wrapping-trailing-comma",
        ),
        pytest.param(MARKED, MARKED.replace("[AR]", "[Gen]"), False, id="string-changed"),
        pytest.param(MARKED, MARKED.replace("is not None", "is None"), False, id="code-changed"),
        pytest.param("x = 1\n# ... anything ...\nz = 3\n", "x = 1\nz = 3\n", True, id="elide-none"),
        pytest.param(
            "x = 1\n# ... anything ...\nz = 3\n",
            "x = 1\ny = 2\nif y:\n    w = 0\nz = 3\n",
            True,
            id="elide-several",
        ),
        pytest.param("x = 1\n# ... rest ...\n", "x = 1\ny = 2\n", True, id="elide-to-end"),
        pytest.param("# ... before ...\nz = 3\n", "y = 2\nz = 3\n", True, id="elide-from-start"),
        pytest.param("x = 1\n# … more …\nz = 3\n", "x = 1\ny = 2\nz = 3\n", True, id="unicode"),
        pytest.param(
            "x = 1\n# ... gap ...\nz = 3\n", "x = 1\ny = 2\nz = 4\n", False, id="elision-then-diff"
        ),
        pytest.param("x = 1  # ... not an elision\n", "x = 1\ny = 2\n", False, id="inline-dots"),
        pytest.param(
            "out = f(\n    a,\n    # ... more ...\n)\n", "out = f(a, b, c)\n", True, id="in-call"
        ),
        pytest.param("x = 1\n", "x = 1\ny = 2\n", False, id="block-has-more"),
        pytest.param("s = '#'\n", 's = "#"\n', True, id="hash-in-string"),
        pytest.param("# only a comment\n", "x = 1\n", False, id="no-code-matches-no-code"),
        pytest.param("# only a comment\n", "# other\n", True, id="no-code-both"),
    ],
)
def test_code_matches(entry: str, block: str, expected: bool) -> None:
    assert code_matches(entry, block) is expected
    assert (code_similarity(entry, block) == 1.0) is expected


METHOD = _code(
    """
    def execute_model(self, scheduler_output):
        input_ids, positions = self._preprocess(scheduler_output)
        # [Omni] Token counts per request
        model_kwargs["seq_token_counts"] = tokens
        with set_acc_forward_context(self.config):
            hidden_states = self._model_forward(input_ids, positions, **model_kwargs)
        return hidden_states
    """
)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param('# [Omni] why\nmodel_kwargs["seq_token_counts"] = tokens\n', True, id="one"),
        pytest.param("model_kwargs['seq_token_counts'] = tokens  # [Omni]\n", True, id="quotes"),
        pytest.param('model_kwargs["seq_token_counts"] = tokenz\n', False, id="changed"),
        pytest.param('["seq_token_counts"] = tokens\n', False, id="mid-statement-start"),
        pytest.param("input_ids, positions = self._preprocess\n", False, id="mid-statement-end"),
        pytest.param(
            "with set_acc_forward_context(self.config):\n"
            "    # ... forward ...\n"
            "return hidden_states\n",
            True,
            id="elision-inside",
        ),
        pytest.param(
            "def execute_model(self, scheduler_output):\n    # ... prepare ...\n"
            '    model_kwargs["seq_token_counts"] = tokens\n    # ... rest ...\n',
            True,
            id="whole-method-excerpt",
        ),
        pytest.param("return hidden_states\nx = 1\n", False, id="past-the-end"),
    ],
)
def test_appears_in(entry: str, expected: bool) -> None:
    assert appears_in(entry, METHOD) is expected


def test_similarity_ranks_small_edits_above_unrelated_code() -> None:
    edited = MARKED.replace("[AR]", "[Gen]")
    unrelated = "self.talker_mtp = ACLGraphWrapper(talker_mtp, self.config)\n"
    assert 0.8 < code_similarity(MARKED, edited) < 1.0
    assert code_similarity(MARKED, unrelated) < 0.3


def test_similarity_with_elisions_counts_the_entry_code() -> None:
    entry = "x = f(a)\n# ... gap ...\nz = 3\n"
    assert code_similarity(entry, "x = f(a)\ny = 2\nz = 4\n") == 8 / 9
    assert code_similarity(entry, "x = f(a)\ny = 2\nz = 3\nq = 0\n") == 0.99


def test_containment_counts_runs_of_the_entry_code_not_scattered_tokens() -> None:
    entry = "self.ids = self.manager.handle(finished=getattr(out, 'done', {}), size=self.size)\n"
    grown = (
        "finished = getattr(out, 'done', {})\n"
        "for rid in finished:\n    self.note(rid)\n"
        "self.ids = self.manager.handle(finished=finished, size=self.size)\n"
    )
    assert code_similarity(entry, grown) < 0.6 < code_containment(entry, grown)
    scattered = "self.a(x)\nself.b(y)\nself.c(z)\nself.d(out)\n"
    assert code_containment(entry, scattered) == 0.0


POOL = [
    ("x = f(a, b)", "x = f(\n    a,\n    b,\n)"),
    ('y = g("k")', "y = g('k')  # why"),
    ("if cond:\n    z = 1", "if cond:\n\n        z = 1"),
    ("self.h = h", "# comment first\nself.h = h"),
    ("try:\n    q()\nexcept TypeError:\n    r()", "try:\n  q()\nexcept TypeError:\n  r()"),
]


@given(st.lists(st.sampled_from(range(len(POOL))), min_size=1, max_size=6), st.data())
def test_reformatted_code_matches(picks: list[int], data: st.DataObject) -> None:
    entry = "".join(POOL[i][0] + "\n" for i in picks)
    block = "".join(POOL[i][data.draw(st.integers(0, 1))] + "\n" for i in picks)
    indent = " " * data.draw(st.integers(0, 8))
    block = "".join(indent + line + "\n" for line in ["# -- Omni-new --", *block.split("\n")])
    assert code_matches(entry, block)
    start = data.draw(st.integers(0, len(picks)))
    end = data.draw(st.integers(start, len(picks)))
    elided = picks[:start], picks[end:]
    entry = "".join(POOL[i][0] + "\n" for i in elided[0]) + "# ... gap ...\n"
    entry += "".join(POOL[i][0] + "\n" for i in elided[1])
    assert code_matches(entry, block)
    assert appears_in(entry, "before = 0\n" + block + "after = 1\n")


def test_normalized_lines() -> None:
    code = _code(
        """
        # ---- Omni-new ----
        if getattr(self.model, 'talker', None) is not None:  # why
            out = self.talker(
                ids,
                # ... more ...
            )
        """
    )
    assert normalized_lines(code) == (
        'if getattr(self.model,"talker",None) is not None:',
        "out=self.talker(ids,",
        "...",
        ")",
    )


def test_marked_regions() -> None:
    code = "a = 1\n# Omni-new\nb = 2\n# -----------------\nc = 3\n# Omni-new\nd = 4\n"
    assert marked_regions(code) == ("b = 2\n", "d = 4\n")
    assert marked_regions("# ----------------\nx = 1\n") == ()


def test_runners_catalog_describes_the_synthetic_runners() -> None:
    for entry in parse(_read("runners"), "catalog.md").entries:
        source = (DATA / "omni" / (entry.module or "npu_ar_model_runner.py")).read_text()
        assert appears_in(entry.code, source), entry.title
        for region in marked_regions(entry.code):
            assert any(code_matches(region, block) for block in marked_regions(source))


def test_an_edited_runner_leaves_its_entry_unmatched() -> None:
    source = (DATA / "omni" / "npu_ar_model_runner.py").read_text()
    source = source.replace("self._update_states(", "self._update_state(")
    entries = parse(_read("runners"), "catalog.md").entries
    ar = [e for e in entries if e.module == "npu_ar_model_runner.py"]
    assert [e.title for e in ar if not appears_in(e.code, source)] == ["Own _update_states Call"]


# --- locations ------------------------------------------------------------------------------

POST = "with record_function_or_nullcontext('post process'):"


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        pytest.param(Anchor(), "", id="nothing-known"),
        pytest.param(
            Anchor(edge=Edge.FIRST, after=("num_tokens = out.total",)),
            "At the very beginning of the method, before `num_tokens = out.total`",
            id="method-start",
        ),
        pytest.param(
            Anchor(edge=Edge.LAST, before=("y = 1",)),
            "At the end of the method, after `y = 1`",
            id="method-end",
        ),
        pytest.param(
            Anchor(path=("if x:",), edge=Edge.LAST, before=("y = 1",)),
            "At the end of `if x`, after `y = 1`",
            id="body-end",
        ),
        pytest.param(
            Anchor(
                path=(POST, "if not self.broadcast_pp_output:", "else:"),
                before=("sample_hidden_states = hidden_states[logits_indices]",),
                after=("self.state = s",),
                replaced=("logits = self.model.compute_logits(sample_hidden_states)",),
            ),
            "Inside `with record_function_or_nullcontext('post process')`, in the `else` branch "
            "of `if not self.broadcast_pp_output`, after `sample_hidden_states = "
            "hidden_states[logits_indices]`, before `self.state = s`, replacing "
            "`logits = self.model.compute_logits(sample_hidden_states)`",
            id="replacement-in-else",
        ),
        pytest.param(
            Anchor(
                path=(
                    "with record_function_or_nullcontext('forward'), set_ascend_forward_context("
                    "attn_metadata, self.vllm_config, num_tokens=num_tokens_padded):",
                ),
                edge=Edge.ONLY,
            ),
            "As the whole body of `with record_function_or_nullcontext('forward'), "
            "set_ascend_forward_context(...)`",
            id="long-header-keeps-label",
        ),
        pytest.param(
            Anchor(
                path=("try:", "except TypeError:"),
                edge=Edge.FIRST,
                after=("b = 2",),
                replaced=("if x: [body 0123456789ab]", "c = 3", "d = 4", "e = 5"),
            ),
            "At the beginning of the `except TypeError` clause of `try`, before `b = 2`, "
            "replacing `if x`, `c = 3` and 2 more statements",
            id="clause-and-fingerprint",
        ),
        pytest.param(
            Anchor(path=("if a:", "elif b:", "for x in xs:"), before=("y = x",)),
            "In the `elif b` branch of `if a`, inside `for x in xs`, after `y = x`",
            id="elif-then-loop",
        ),
        pytest.param(
            Anchor(
                before=(
                    "self.kv_extracted_req_ids = self.kv_transfer_manager.handle_finished("
                    "finished_reqs=getattr(scheduler_output, 'finished', {}), kv=self.kv)",
                ),
            ),
            "After `self.kv_extracted_req_ids = self.kv_transfer_manager.handle_finished(...)`",
            id="long-call-shortened",
        ),
    ],
)
def test_describe_location(anchor: Anchor, expected: str) -> None:
    assert describe_location(anchor) == expected


# --- the real catalog -----------------------------------------------------------------------


def _real_catalog() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared/seeds/npu_omni_specific_blocks.md"
    return Path(os.environ.get("OMNI_PORT_REAL_CATALOG", default))


@pytest.mark.real
def test_real_catalog_parses() -> None:
    path = _real_catalog()
    if not path.exists():
        pytest.skip(f"real catalog not found at {path} (set OMNI_PORT_REAL_CATALOG)")
    text = path.read_text(encoding="utf-8")
    catalog = parse(text, str(path))
    sections = list(dict.fromkeys((e.class_name, e.module) for e in catalog.entries))
    assert sections == [
        ("OmniNPUModelRunner", "npu_model_runner.py"),
        ("NPUARModelRunner", "npu_ar_model_runner.py"),
        ("NPUGenerationModelRunner", "npu_generation_model_runner.py"),
        ("", ""),
    ]
    assert len(catalog.entries) == text.count("\n### ") + 1 == 17
    assert Counter(e.kind for e in catalog.entries) == {
        EntryKind.BLOCK: 12,
        EntryKind.METHOD: 3,
        EntryKind.STATEMENT: 1,
        EntryKind.MODULE: 1,
    }
    assert catalog.entries[-1].method == "ExecuteModelState"
    assert render(catalog.entries, title=catalog.title, preamble=catalog.preamble) == text
