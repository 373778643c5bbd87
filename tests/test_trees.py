"""The parsed-tree cache: the same bytes give the same tree, parsed once; a bad entry is
parsed again, never trusted."""

from __future__ import annotations

import hashlib
import os
import pickle
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.extract import basedetect
from omni_port.model import Tree
from omni_port.pyast import parser
from omni_port.sources import trees
from omni_port.sources.textio import decode
from tests.conftest import Cli
from tests.test_safe_io import BASE as UPSTREAM
from tests.test_safe_io import RUNNER

TEXT = "import os\n\n\nclass A:\n    # why\n    def f(self):\n        return os.sep\n"


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "trees").glob("*.pickle"))


def test_a_tree_is_parsed_once_and_then_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = decode(TEXT.encode(), "pkg/a.py")
    first = trees.parsed(source, tmp_path)
    assert first == parser.parse(TEXT, "pkg/a.py")
    assert len(_entries(tmp_path)) == 1

    def refuse(text: str, path: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parser, "parse", refuse)
    assert trees.parsed(source, tmp_path) == first


def test_other_bytes_are_parsed_anew_and_another_path_is_named_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trees.parsed(decode(TEXT.encode(), "a.py"), tmp_path)
    changed = decode(TEXT.replace("os.sep", "os.pathsep").encode(), "a.py")
    assert "pathsep" in trees.parsed(changed, tmp_path).lines[-1]
    assert len(_entries(tmp_path)) == 2

    def refuse(text: str, path: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parser, "parse", refuse)
    moved = trees.parsed(decode(TEXT.encode(), "b.py"), tmp_path)
    assert moved.path == "b.py", "one entry per content, named as this run gave it"
    assert trees.parsed(decode(TEXT.encode(), "a.py"), tmp_path).path == "a.py"


def test_a_damaged_entry_is_parsed_again(tmp_path: Path) -> None:
    source = decode(TEXT.encode(), "a.py")
    expected = trees.parsed(source, tmp_path)
    (entry,) = _entries(tmp_path)
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert trees.parsed(source, tmp_path) == expected
    assert entry.read_bytes() != b"\x80\x05 not a pickle"


def test_a_syntax_error_is_reported_and_nothing_is_cached(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as raised:
        trees.parsed(decode(b"def f(:\n", "bad.py"), tmp_path)
    assert raised.value.findings[0].code.value == "OP002"
    assert not _entries(tmp_path)


def test_without_a_cache_it_just_parses(tmp_path: Path) -> None:
    assert trees.parsed(decode(TEXT.encode(), "a.py"), None) == parser.parse(TEXT, "a.py")


def test_a_member_is_parsed_once_and_then_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = trees.member_tree(TEXT, "rel", "A", "f", tmp_path)
    missing = trees.member_tree(TEXT, "rel", "A", "g", tmp_path)
    assert first is not None and missing is None
    code = parser.member_source(TEXT, "A", "f")
    assert code is not None and first == parser.parse(code, "rel:A.f")
    assert len(_entries(tmp_path)) == 2

    def refuse(text: str, path: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parser, "parse", refuse)
    assert trees.member_tree(TEXT, "rel", "A", "f", tmp_path) == first
    assert trees.member_tree(TEXT, "rel", "A", "g", tmp_path) is None


def test_members_of_many_releases_parse_each_module_and_each_code_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two releases that differ in g alone: f's code is one text, parsed once for both, and
    # each module is parsed once for its two members (a cold sync reads a dozen releases).
    second = TEXT + "\n    def g(self):\n        return 2\n"
    first_release = TEXT + "\n    def g(self):\n        return 1\n"
    modules: list[str] = []
    codes: list[str] = []
    real_ast, real_parse = parser.ast.parse, parser.parse

    def count_ast(text: str, *args: object, **kwargs: object) -> object:
        if text in (first_release, second):
            modules.append(text)
        return real_ast(text, *args, **kwargs)  # type: ignore[arg-type]

    def count_parse(text: str, path: str) -> Tree:
        codes.append(text)
        return real_parse(text, path)

    monkeypatch.setattr(parser.ast, "parse", count_ast)
    monkeypatch.setattr(parser, "parse", count_parse)
    seen: trees.Codes = {}
    wanted = [("A", "f"), ("A", "g")]
    one = trees.member_trees(first_release, "r1", wanted, tmp_path, seen)
    two = trees.member_trees(second, "r2", wanted, tmp_path, seen)
    assert modules == [first_release, second]
    assert sorted(codes) == sorted(set(codes)) and len(codes) == 3
    monkeypatch.setattr(parser, "parse", real_parse)
    monkeypatch.setattr(parser.ast, "parse", real_ast)
    for label, found, text in (("r1", one, first_release), ("r2", two, second)):
        for owner, name in wanted:
            code = parser.member_source(text, owner, name)
            assert code is not None
            assert found[(owner, name)] == parser.parse(code, f"{label}:{owner}.{name}")
            assert trees.member_tree(text, label, owner, name, tmp_path) == found[(owner, name)]


def test_entries_of_another_stamp_go_once_they_are_a_day_old(tmp_path: Path) -> None:
    folder = tmp_path / "trees"
    folder.mkdir()
    old = folder / "aaaa-0123456789abcdef.pickle"
    recent = folder / "bbbb-0123456789abcdef.pickle"
    for path in (old, recent):
        path.write_bytes(b"stale")
    day_and_a_bit = trees.STALE_AFTER + 60
    os.utime(old, (old.stat().st_atime - day_and_a_bit, old.stat().st_mtime - day_and_a_bit))
    trees._prune.cache_clear()  # the first write of a run prunes
    trees.parsed(decode(TEXT.encode(), "a.py"), tmp_path)
    names = {p.name for p in _entries(tmp_path)}
    assert old.name not in names
    assert recent.name in names, "another omni-port sharing the cache keeps today's trees"
    assert len(names) == 2, names


def test_entries_unused_for_a_month_go_whatever_their_stamp(tmp_path: Path) -> None:
    kept = trees.parsed(decode(TEXT.encode(), "a.py"), tmp_path)
    (used,) = _entries(tmp_path)
    forgotten = tmp_path / "trees" / f"cccc-{trees._stamp()}.pickle"
    forgotten.write_bytes(used.read_bytes())
    month_and_a_bit = trees.UNUSED_AFTER + 60
    for path in (used, forgotten):
        os.utime(path, (path.stat().st_atime, path.stat().st_mtime - month_and_a_bit))
    assert trees.parsed(decode(TEXT.encode(), "a.py"), tmp_path) == kept  # a use refreshes
    trees._prune.cache_clear()
    trees.parsed(decode(b"x = 1\n", "b.py"), tmp_path)
    names = {p.name for p in _entries(tmp_path)}
    assert used.name in names and forgotten.name not in names


def test_an_upstream_file_of_the_user_is_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omni_port import api

    path = tmp_path / "model_runner_v1.py"
    path.write_text(TEXT)
    settings = api.Settings(cache=tmp_path / "cache")
    first = api.load_upstream(str(path), settings)

    def refuse(text: str, path: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parser, "parse", refuse)
    assert api.load_upstream(str(path), settings).tree == first.tree


# --- a damaged entry through the command line ------------------------------------------------


def _another_tree(data: bytes) -> bytes:
    """The entry as a bit flip would leave it: the same pickle, one name changed."""
    assert data.count(b"self.model(batch)") >= 1
    return data.replace(b"self.model(batch)", b"self.mode1(batch)")


@pytest.mark.parametrize(
    "damage",
    [
        # Unpickled, these raised OverflowError, ModuleNotFoundError, or loaded and crashed
        # later (exit 123); another tree was used silently.
        pytest.param(lambda data: random.Random(43).randbytes(64), id="garbage"),
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: b"\x80\x04\x8c\x0bno_such_mod\x8c\x01x\x93.", id="unknown-class"),
        pytest.param(lambda data: pickle.dumps(Tree("base.py", (), None)), id="wrong-type"),  # type: ignore[arg-type]
        pytest.param(_another_tree, id="another-tree"),
    ],
)
def test_a_damaged_entry_is_dropped_and_parsed_again_by_a_command(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[bytes], bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base.py").write_text(UPSTREAM)
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.omni-port]\nupstream-class = "NPUModelRunner"\n'
    )
    common = ("--config", "pyproject.toml", "--cache-dir", "cache")
    sync = ("sync", "--patches", "p", "--upstream", "base.py", "--generated", "g")
    assert cli(*common, "extract", "runner.py", "--patches", "p").exit_code == 0
    assert cli(*common, *sync).exit_code == 0
    # extract keeps the runner's tree too: damage the upstream's, which sync reads.
    digest = hashlib.sha256((tmp_path / "base.py").read_bytes()).hexdigest()
    (entry,) = [e for e in _entries(tmp_path / "cache") if e.name.startswith(digest)]
    kept = entry.read_bytes()
    entry.write_bytes(damage(kept))
    result = cli(*common, *sync, "--check")
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    assert entry.read_bytes() == kept, "the entry is parsed again and kept anew"


@pytest.mark.parametrize(
    ("terms", "others"),
    [
        pytest.param(400, True, id="deep"),
        # Python's parser reads none of the module, as with a syntax error anywhere in it.
        pytest.param(5000, False, id="past-python"),
    ],
)
def test_a_member_too_deep_to_read_is_no_tree(tmp_path: Path, terms: int, others: bool) -> None:
    """A release of upstream history whose member nests too deeply: history is evidence, so
    the member reads as absent, as one that does not parse, never as an internal error."""
    deep = TEXT + "\n\ndef g(a):\n    return " + " + ".join(["a"] * terms) + "\n"
    assert trees.member_tree(deep, "rel", "", "g", tmp_path) is None
    assert (trees.member_tree(deep, "rel", "A", "f", tmp_path) is not None) is others


def test_method_keys_are_computed_once_per_text_and_class(tmp_path: Path) -> None:
    calls: list[str] = []

    def counted(text: str, class_name: str) -> trees.Keys:
        calls.append(class_name)
        return basedetect.method_keys(text, class_name)

    first = trees.kept_keys(TEXT, "A", tmp_path, counted)
    assert first == basedetect.method_keys(TEXT, "A") and first["f"]
    assert trees.kept_keys(TEXT, "A", tmp_path, counted) == first
    assert calls == ["A"], "read back, not computed again"
    assert trees.kept_keys(TEXT, "B", tmp_path, counted) == {}
    assert calls == ["A", "B"], "another class is another entry"
    (entry,) = [e for e in _entries(tmp_path) if ".A." in e.name]
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert trees.kept_keys(TEXT, "A", tmp_path, counted) == first
    assert calls == ["A", "B", "A"], "a damaged entry is computed again"
