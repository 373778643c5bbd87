"""The lock file of a generated tree: tool, input hashes, output hashes and every placement."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

from omni_port.errors import BadInput
from omni_port.model import (
    BlockKind,
    Code,
    Finding,
    Layout,
    Placement,
    RegionKind,
    Rule,
    Severity,
    Status,
    piece_kind,
)
from omni_port.report import placement_dict
from omni_port.sources.textio import read_source

LOCK_NAME = "omni-port.lock"
#: The notes of a sync that only its decisions tell (upstream exits the output follows that
#: skip omni's code at the other exits), at their lines of the outputs: an output of the
#: sync beside the modules (hashed in the lock as they are), so that `verify`, which does
#: not sync again, lists them as `check` does. Not in the lock itself: they quote code,
#: and a lock holds none (this repository commits its locks).
NOTES_NAME = "omni-port.notes"
#: The codes of the notes ``NOTES_NAME`` keeps.
RECORDED_NOTES = frozenset({Code.OP314})


@dataclass(frozen=True, slots=True)
class Source:
    """An input a V2 tree was computed from besides the upstream and the patches."""

    #: What it is: ``source`` (vLLM-Omni's runners), ``vllm-base`` (the vLLM the NPU runner
    #: extends), ``vllm`` (a candidate base of omni's delta), ``allow`` (reviewed list).
    role: str
    label: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Lock:
    """What a generated tree was made from; enough to tell, without parsing, that it is current."""

    tool: str
    upstream: str
    upstream_sha256: str
    patches_sha256: str
    #: Output file name -> sha256 of its bytes.
    outputs: Mapping[str, str]
    #: The command that regenerates the tree.
    command: str
    placements: tuple[dict[str, object], ...] = ()
    #: (label, sha256) of the transplant inputs merged into the patches, in order.
    transplants: tuple[tuple[str, str], ...] = ()
    #: Which runners the tree holds; a V1 lock does not write it.
    layout: Layout = Layout.V1
    #: Further inputs (V2 trees), in order.
    sources: tuple[Source, ...] = ()
    #: (label, sha256 of the text) of the upstream history releases sync read, oldest first.
    history: tuple[tuple[str, str], ...] = ()
    #: (label, sha256 of the text) of the base the patches were extracted against: the
    #: release, or the clone's revision (``PATH@TAG``, ``PATH@<commit>``), that the runners'
    #: copies are read as edits of. One per base (modules extracted apart may differ).
    base: tuple[tuple[str, str], ...] = ()
    #: The configuration's ``upstream`` when the sync ran ("" in older locks): while the
    #: configuration still names it, the lock's own upstream is the default one.
    configured: str = ""

    @property
    def conflicts(self) -> tuple[dict[str, object], ...]:
        """The placements that are conflicts."""
        return tuple(row for row in self.placements if row.get("status") == Status.CONFLICT)


def default_upstream(lock: Lock | None, configured: str) -> str:
    """The upstream a sync (or resolve) takes when none is given: the last sync's, as long
    as the configuration still names what it named then; else the configuration's.

    So an upgrade target sticks (``upgrade --to X`` writes a lock with X) until the
    configuration's ``upstream`` is edited. An older lock without its ``configured`` value
    counts as made with the configuration's upstream.
    """
    if lock is None or not lock.upstream:
        return configured
    recorded = lock.configured or lock.upstream
    return lock.upstream if recorded == configured else configured


def patches_digest(files: Mapping[str, str]) -> str:
    """sha256 of a patch set's files (relative path and text), independent of file order."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + files[rel].encode("utf-8") + b"\0")
    return digest.hexdigest()


def render(lock: Lock) -> str:
    upstream = {"label": lock.upstream, "sha256": lock.upstream_sha256}
    if lock.configured:
        upstream["configured"] = lock.configured
    inputs: dict[str, object] = {
        "upstream": upstream,
        "patches": {"sha256": lock.patches_sha256},
    }
    if lock.transplants:
        inputs["transplants"] = [{"label": lb, "sha256": sha} for lb, sha in lock.transplants]
    if lock.history:
        inputs["history"] = [{"label": lb, "sha256": sha} for lb, sha in lock.history]
    if lock.base:
        inputs["base"] = [{"label": lb, "sha256": sha} for lb, sha in lock.base]
    if lock.sources:
        inputs["sources"] = [
            {"role": s.role, "label": s.label, "sha256": s.sha256} for s in lock.sources
        ]
    document: dict[str, object] = {
        "tool": lock.tool,
        "command": lock.command,
        "inputs": inputs,
        "outputs": dict(sorted(lock.outputs.items())),
        "placements": list(lock.placements),
    }
    if lock.layout is not Layout.V1:
        document["layout"] = lock.layout.value
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def recorded(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The notes of ``findings`` the notes file keeps (``NOTES_NAME``), in their order."""
    return tuple(f for f in findings if f.code in RECORDED_NOTES)


def render_notes(notes: Sequence[Finding]) -> str:
    rows = [
        {"code": n.code.value, "path": n.path, "line": n.line, "message": n.message} for n in notes
    ]
    return json.dumps({"notes": rows}, indent=2, sort_keys=True) + "\n"


def parse_notes(text: str, path: str) -> tuple[Finding, ...]:
    """The notes of a notes file (``NOTES_NAME``); BadInput (OP201) saying in one line what
    is wrong, at its line: not JSON, or a row without a recorded code, a line, a path or a
    message."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"not an omni-port notes file: not JSON ({exc.msg})"
        raise BadInput.at(Code.OP201, path, exc.lineno, message, exc.colno) from None
    fields = _Fields(path, text, "notes")
    return tuple(fields.note(row) for row in fields.tables(data, "notes"))


def rows(placements: Sequence[Placement]) -> tuple[dict[str, object], ...]:
    """The lock's rows of a sync's placements (``Lock.placements``)."""
    return tuple(_row(p) for p in placements)


def with_configured(text: str, configured: str) -> str:
    """A rendered lock with the configuration's upstream recorded (see ``Lock.configured``;
    recorded only when it is not the lock's own upstream)."""
    lock = parse(text, LOCK_NAME)
    return render(replace(lock, configured=configured if configured != lock.upstream else ""))


def configured_files(files: Mapping[str, bytes], configured: str) -> dict[str, bytes]:
    """A sync's output files with ``configured`` recorded in their lock (``with_configured``)."""
    text = with_configured(files[LOCK_NAME].decode("utf-8"), configured)
    return {**files, LOCK_NAME: text.encode("utf-8")}


#: The verdict ``omni-port verify`` leaves beside the lock, which the runtime switch reads.
VERDICT_NAME = "omni-port.verified"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the last ``omni-port verify`` of a tree found, bound to the lock it verified."""

    #: sha256 of the lock file's bytes: a later sync makes the verdict stale.
    lock_sha256: str
    #: The problems (errors) found, as diagnostic lines; empty when the tree passed.
    problems: tuple[str, ...]


def render_verdict(verdict: Verdict) -> str:
    document = {"lock-sha256": verdict.lock_sha256, "problems": list(verdict.problems)}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def read_verdict(directory: Path) -> Verdict | None:
    """The verdict beside a lock; None when there is none or it cannot be read."""
    try:
        data = json.loads((directory / VERDICT_NAME).read_text(encoding="utf-8"))
        return Verdict(str(data["lock-sha256"]), tuple(str(p) for p in data["problems"]))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def read_or_none(directory: Path) -> Lock | None:
    """The lock of a generated directory; None when there is none or it cannot be read."""
    try:
        return read(directory)
    except BadInput:
        return None


def output_texts(directory: Path, lock: Lock) -> dict[str, str]:
    """The text of each output of ``lock`` in ``directory`` that can be read (one that
    cannot is missing or changed, which comparing ``lock.outputs`` tells)."""
    texts = {}
    for name in lock.outputs:
        try:
            texts[name] = (directory / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def _row(placement: Placement) -> dict[str, object]:
    row = placement_dict(placement)
    row.pop("candidates")
    # A dropped block keeps why: nothing else in the output says. A V2 method kept by a
    # reviewed entry keeps the entry's reason, whose conditions the runtime switch checks.
    if placement.status is not Status.DROPPED and Rule.ALLOWED not in placement.decided_by:
        row.pop("reason")
    if not placement.release:
        row.pop("release")
    return row


def read(directory: Path) -> Lock:
    """The lock of a generated directory. Raises BadInput: OP001 when it cannot be read
    or is not UTF-8, OP201 when it is not a lock file (see ``parse``)."""
    source = read_source(directory / LOCK_NAME)
    return parse(source.text, source.path)


def parse(text: str, path: str) -> Lock:
    """Read a lock file; BadInput (OP201) saying in one line what is wrong: not JSON (at
    its line), or a field that is missing or of the wrong type (at its line, by name)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput.at(
            Code.OP201,
            path,
            exc.lineno,
            f"not an omni-port lock file: not JSON ({exc.msg})",
            exc.colno,
        ) from None
    fields = _Fields(path, text)
    for row in fields.tables(data, "placements"):
        fields.check_row(row)
    return Lock(
        tool=fields.string(data, "tool"),
        upstream=fields.string(data, "inputs", "upstream", "label"),
        upstream_sha256=fields.string(data, "inputs", "upstream", "sha256"),
        patches_sha256=fields.string(data, "inputs", "patches", "sha256"),
        outputs={str(k): str(v) for k, v in fields.table(data, "outputs").items()},
        command=fields.string(data, "command", default=""),
        placements=tuple(fields.tables(data, "placements")),
        transplants=fields.labelled(data, "transplants"),
        history=fields.labelled(data, "history"),
        base=fields.labelled(data, "base"),
        configured=fields.string(data, "inputs", "upstream", "configured", default=""),
        layout=fields.layout(data),
        sources=tuple(
            Source(
                fields.string(row, "role"),
                fields.string(row, "label"),
                fields.string(row, "sha256"),
            )
            for row in fields.tables(data, "inputs", "sources")
        ),
    )


#: No default: a getter fails when the field is missing.
_REQUIRED: object = object()


@dataclass(frozen=True, slots=True)
class _Fields:
    """Typed access to a lock's JSON: each getter names what is wrong, and where."""

    path: str
    source: str
    #: What the file is: a ``lock`` or ``notes`` file.
    what: str = "lock"

    def _get(self, data: object, keys: tuple[str, ...], default: object) -> object:
        value = data
        for depth, key in enumerate(keys):
            if not isinstance(value, dict):
                self._fail(keys[:depth], "must be an object")
            if key not in value:
                if default is not _REQUIRED:
                    return default
                self._fail(keys[: depth + 1], "is missing")
            value = value[key]
        return value

    def _fail(self, keys: tuple[str, ...], problem: str) -> NoReturn:
        """BadInput (OP201) at the first line naming the innermost key (line 1 if none)."""
        name = repr(".".join(keys)) if keys else "the document"
        rows = self.source.split("\n")
        line = next((n for n, row in enumerate(rows, 1) if keys and f'"{keys[-1]}":' in row), 1)
        message = f"not an omni-port {self.what} file: {name} {problem}"
        raise BadInput.at(Code.OP201, self.path, line, message)

    def string(self, data: object, *keys: str, default: object = _REQUIRED) -> str:
        value = self._get(data, keys, default)
        if not isinstance(value, str):
            self._fail(keys, "must be a string")
        return value

    def table(self, data: object, *keys: str) -> dict[str, object]:
        value = self._get(data, keys, _REQUIRED)
        if not isinstance(value, dict):
            self._fail(keys, "must be an object")
        return value

    def tables(self, data: object, *keys: str) -> list[dict[str, object]]:
        """A list of objects (an empty one when the field is absent)."""
        value = self._get(data, keys, [])
        if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
            self._fail(keys, "must be a list of objects")
        return value

    def labelled(self, data: object, key: str) -> tuple[tuple[str, str], ...]:
        """(label, sha256) of each entry of ``inputs.<key>``."""
        rows = self.tables(data, "inputs", key)
        return tuple((self.string(row, "label"), self.string(row, "sha256")) for row in rows)

    def check_row(self, row: Mapping[str, object]) -> None:
        """A placement row holds only values ``placement`` can read back: a status, kind
        and rules of their closed sets, two line numbers, a number for the confidence.
        BadInput (OP201) at the line of the first bad value, naming what it may be."""
        ident = str(row.get("id", ""))
        for key, allowed in (("status", _STATUSES), ("kind", _KINDS)):
            value = row.get(key, "placed" if key == "status" else "insertion")
            if value not in allowed:
                choices = ", ".join(sorted(allowed))
                self._fail_value(ident, key, value, f"must be one of: {choices}")
        rules = row.get("decided_by", [])
        if not isinstance(rules, list):
            self._fail_value(ident, "decided_by", rules, "must be a list of rules")
        for rule in rules:
            if rule not in _RULES:
                choices = ", ".join(sorted(_RULES))
                self._fail_value(ident, "decided_by", rule, f"must be one of: {choices}")
        lines = row.get("lines", [0, 0])
        if not (
            isinstance(lines, list)
            and len(lines) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in lines)
        ):
            self._fail_value(ident, "lines", lines, "must be two line numbers")
        confidence = row.get("confidence", 0.0)
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            self._fail_value(ident, "confidence", confidence, "must be a number")

    def _fail_value(self, ident: str, key: str, value: object, problem: str) -> NoReturn:
        """BadInput (OP201) at the line of ``key`` in the row of block ``ident``."""
        rows = self.source.split("\n")
        start = next((n for n, row in enumerate(rows) if f'"id": {json.dumps(ident)}' in row), 0)
        # A row's keys are sorted, so its key may come before its id: look around the id.
        around = range(max(start - 20, 0), min(start + 20, len(rows)))
        line = next((n + 1 for n in around if f'"{key}":' in rows[n]), start + 1)
        message = (
            f"not an omni-port lock file: placement {ident or '?'}: {key} "
            f"{json.dumps(value)} {problem}"
        )
        raise BadInput.at(Code.OP201, self.path, line, message)

    def note(self, row: Mapping[str, object]) -> Finding:
        """A recorded note: a code of ``RECORDED_NOTES``, a path, a line number, a message."""
        code = self.string(row, "code")
        if code not in {c.value for c in RECORDED_NOTES}:
            choices = ", ".join(sorted(c.value for c in RECORDED_NOTES))
            self._fail(("notes", "code"), f"{json.dumps(code)} is no note sync keeps ({choices})")
        line = row.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            self._fail(("notes", "line"), f"{json.dumps(line)} must be a line number")
        path, message = self.string(row, "path"), self.string(row, "message")
        return Finding(Code[code], path, line, message, severity=Severity.NOTE)

    def layout(self, data: object) -> Layout:
        value = self.string(data, "layout", default=Layout.V1.value)
        try:
            return Layout(value)
        except ValueError:
            allowed = " or ".join(repr(layout.value) for layout in Layout)
            self._fail(("layout",), f"is {value!r}; it must be {allowed}")


def placement(row: Mapping[str, object]) -> Placement:
    """A lock row back as a Placement (without candidates, which the lock does not keep)."""
    lines = row.get("lines")
    start, end = (
        (int(lines[0]), int(lines[1])) if isinstance(lines, list) and len(lines) == 2 else (0, 0)
    )
    return Placement(
        block_id=str(row.get("id", "")),
        module=str(row.get("module", "")),
        owner=str(row.get("class", "")),
        member=str(row.get("method", "")),
        kind=piece_kind(str(row.get("kind", ""))),
        marked=bool(row.get("marked", False)),
        status=Status(str(row.get("status", "placed"))),
        confidence=float(str(row.get("confidence", 0.0))),
        start=start,
        end=end,
        decided_by=tuple(Rule(str(r)) for r in _list(row.get("decided_by"))),
        release=str(row.get("release", "")),
    )


_RULES = frozenset(rule.value for rule in Rule)
_STATUSES = frozenset(status.value for status in Status)
_KINDS = frozenset(kind.value for kind in (*BlockKind, *RegionKind))


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
