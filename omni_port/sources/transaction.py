"""A command's writes as one transaction: staged, journaled, published together, one writer
at a time (git's index lock and SQLite's journal are the models).

A command that writes the workspace collects every file it would write (patches, runners,
the lock, the summary, the configuration) in a ``Transaction`` and publishes them in one
step, after every check passed:

1. the journal (``.omni-port/journal.json`` at the workspace root) names every target:
   *staging*;
2. each file is written to a temporary file beside its target and synced;
3. the journal lists each temporary file: *publishing*;
4. every temporary file is renamed onto its target (indexes and locks last), stale files go;
5. the journal goes.

A run killed in 1-2 leaves a staging journal: the next command rolls it back (its temporary
files go, no target was touched). Killed in 3-4, it leaves a publishing journal: the next
command completes it (every staged file is renamed, every stale one removed). Either way
it says which. Writers hold ``.omni-port/lock`` exclusively (an ``flock``, released by the
kernel when a process dies, so a killed run never leaves a stale lock); a command that only
reads shares it. A second writer waits briefly, then exits 2 naming the holder.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.textio import (
    remove_dead_temps,
    rename_all,
    safe_relative,
    temp_beside,
    unwritable,
    write_atomic,
)

#: The workspace's own state, at its root (beside the configuration), as ``.git`` is.
STATE_DIR = ".omni-port"
JOURNAL_NAME = "journal.json"
LOCK_NAME = "lock"
#: Seconds a command waits for another one's lock (``OMNI_PORT_LOCK_WAIT`` overrides).
LOCK_WAIT = 10.0
#: File names renamed after every other file: they describe the rest of their folder (a
#: patch index, a generated tree's lock), so a reader that does not recover sees a manifest
#: that does not match its files rather than a manifest that promises files not yet there.
MANIFESTS = ("omni-port.index", "omni-port.lock", "omni-port.verified", "pyproject.toml")


@dataclass(frozen=True, slots=True)
class Recovered:
    """What the next command did with a transaction a killed run left."""

    #: The command line of the killed run.
    command: str
    #: True when it was completed (every staged file published), False when rolled back.
    completed: bool
    #: How many files it published (completed) or staged files it removed (rolled back).
    files: int

    def __str__(self) -> str:
        if self.completed:
            return (
                f"completed the interrupted `{self.command}`: its {self.files} staged "
                "files were published"
            )
        return (
            f"rolled back the interrupted `{self.command}`: nothing of it was published "
            f"({self.files} staged files removed)"
        )


@dataclass(slots=True)
class Transaction:
    """The files one command writes, published together by ``commit``."""

    #: The workspace root: where ``.omni-port/`` (journal and lock) lives.
    root: Path
    #: The command line, for the journal and the lock's holder.
    command: str
    #: Target path -> bytes to write there.
    writes: dict[Path, bytes] = field(default_factory=dict)
    #: Paths to remove once every write is published (stale outputs).
    removes: list[Path] = field(default_factory=list)
    committed: bool = False
    #: What this command found of a killed run's transaction and finished first.
    recovered: list[Recovered] = field(default_factory=list)

    def write(self, path: Path, data: bytes) -> None:
        """Stage ``data`` for ``path`` (written through a symbolic link, as editors do)."""
        self.writes[_through_link(path)] = data

    def remove(self, path: Path) -> None:
        """Remove ``path`` once every staged write is published."""
        self.removes.append(path)

    def write_tree(self, root: Path, files: Mapping[str, bytes], rels: Sequence[str]) -> None:
        """Stage the files ``rels`` of ``files``, paths relative to ``root``.

        Raises ValueError for a path that is not a plain relative path below ``root``:
        callers never build one (a lock file may name anything; see ``store.plan``).
        """
        for rel in rels:
            if not safe_relative(rel):
                raise ValueError(f"refusing to write outside {root}: {rel!r}")
            self.write(root / rel, files[rel])

    @property
    def empty(self) -> bool:
        return not self.writes and not self.removes

    def commit(self) -> None:
        """Publish every staged file; BadInput (OP006) when one cannot be written, with
        nothing published (a failed rename puts back the files renamed before it)."""
        if not self.empty:
            publish(self.root, self.command, self.writes, self.removes)
        self.committed = True


_CURRENT: contextvars.ContextVar[Transaction | None] = contextvars.ContextVar(
    "omni_port_transaction", default=None
)


def current() -> Transaction | None:
    """The transaction of the command running in this context, if it opened one."""
    return _CURRENT.get()


@contextlib.contextmanager
def session(root: Path, command: str, exclusive: bool) -> Iterator[Transaction]:
    """Run one command on the workspace at ``root``: its lock held (shared when it only
    reads), a killed run's transaction completed or rolled back first, and a transaction
    for its writes. What the command did not ``commit`` is dropped: nothing was staged on
    disk before ``commit``."""
    transaction = Transaction(root, command)
    with locked(root, command, exclusive) as recovered:
        transaction.recovered = recovered
        token = _CURRENT.set(transaction)
        try:
            yield transaction
        finally:
            _CURRENT.reset(token)


# --- the lock ---------------------------------------------------------------------------------


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def lock_wait() -> float:
    """Seconds to wait for another command's lock."""
    try:
        return max(0.0, float(os.environ.get("OMNI_PORT_LOCK_WAIT", LOCK_WAIT)))
    except ValueError:
        return LOCK_WAIT


@contextlib.contextmanager
def locked(root: Path, command: str, exclusive: bool) -> Iterator[list[Recovered]]:
    """Hold the workspace lock (exclusive for a writer, shared for a reader) and finish a
    killed run's transaction first; yields what was recovered (empty, or one).

    A reader where no command ever wrote (no ``.omni-port/``), or in a workspace it cannot
    write (a read-only checkout in CI), runs without the lock, unless a killed run left a
    journal there, which it cannot finish: OP006. Raises
    BadInput (OP007) when another command holds the lock past ``lock_wait()``.
    """
    import fcntl

    state = state_dir(root)
    if not exclusive and not state.is_dir():
        # No command ever wrote here, so no journal waits: a reader (a gate in CI on a
        # fresh clone) leaves the checkout as it found it.
        yield []
        return
    try:
        _make_state_dir(state)
        fd = os.open(state / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exclusive or (state / JOURNAL_NAME).exists():
            raise unwritable(state / LOCK_NAME, exc) from exc
        yield []
        return
    try:
        recovered = _take(fd, state, command, exclusive)
        yield recovered
    finally:
        with contextlib.suppress(OSError):
            if exclusive:
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _make_state_dir(state: Path) -> None:
    """``.omni-port/``, which ignores itself in git (as ``.pytest_cache`` does): it holds
    only this checkout's state (the lock, a killed run's journal, the record of what its
    syncs wrote, discarded edits), nothing to commit."""
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, b"# omni-port's local state: never committed\n*\n")


def _take(fd: int, state: Path, command: str, exclusive: bool) -> list[Recovered]:
    """Acquire the lock on ``fd``; a journal left behind is recovered under an exclusive
    lock, which a reader then shares again."""
    import fcntl

    journal = state / JOURNAL_NAME
    if exclusive or journal.exists():
        _acquire(fd, fcntl.LOCK_EX, state)
        recovered = recover(state)
        remove_dead_temps(state)  # a journal a killed run was writing
        if exclusive:
            _write_holder(fd, command)
            return recovered
        fcntl.flock(fd, fcntl.LOCK_SH)  # a conversion: never released in between
        return recovered
    _acquire(fd, fcntl.LOCK_SH, state)
    remove_dead_temps(state)  # a journal a killed run was still writing: it never began
    return []


def _acquire(fd: int, mode: int, state: Path) -> None:
    """flock ``fd`` in ``mode``, polling until ``lock_wait()`` has passed; BadInput (OP007)
    naming the holder then."""
    import fcntl

    deadline = time.monotonic() + lock_wait()
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise _busy(state) from None
            time.sleep(0.05)


def _write_holder(fd: int, command: str) -> None:
    """Who holds the lock, for the message a waiting command gives up with."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    data = f"{os.getpid()}\t{stamp}\t{command}\n".encode()
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)


def _busy(state: Path) -> BadInput:
    """OP007: another command holds the lock; names it when it is a writer."""
    try:
        pid, since, command = (state / LOCK_NAME).read_text().rstrip("\n").split("\t", 2)
        holder = f"`{command}` (pid {pid}, since {since}) is writing it"
    except (OSError, ValueError):
        holder = "another omni-port command is reading it"
    waited = lock_wait()
    message = (
        f"the workspace is busy: {holder}; waited {waited:g} s. Run again once it ends "
        "(or stop it: its lock goes with it)"
    )
    return BadInput.at(Code.OP007, str(state / LOCK_NAME), 1, message)


# --- the journal ------------------------------------------------------------------------------


def publish(
    root: Path, command: str, writes: Mapping[Path, bytes], removes: Sequence[Path]
) -> None:
    """Write every file of ``writes`` and remove ``removes``, as one transaction (see the
    module's docstring). The caller holds the workspace lock.

    Raises BadInput (OP006) when a file cannot be staged or renamed: nothing is published
    then (a failed rename puts back the files renamed before it, best effort).
    """
    state = state_dir(root)
    _make_state_dir_or_fail(state)
    journal = state / JOURNAL_NAME
    order = sorted(writes, key=lambda p: (p.name in MANIFESTS, str(p)))
    for folder in sorted({target.parent for target in order}):
        remove_dead_temps(folder)
    _write_journal(journal, command, "staging", [(p, None) for p in order], removes)
    staged: list[tuple[Path, Path]] = []
    try:
        for target in order:
            staged.append((target, _stage(target, writes[target])))
        _write_journal(journal, command, "publishing", staged, removes)
        rename_all([(str(temp), target) for target, temp in staged])
    except BaseException:
        for _, temp in staged:
            with contextlib.suppress(OSError):
                temp.unlink()
        with contextlib.suppress(OSError):
            journal.unlink()
        raise
    for path in removes:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()
    _unlink_synced(journal)


def _make_state_dir_or_fail(state: Path) -> None:
    try:
        _make_state_dir(state)
    except OSError as exc:
        raise unwritable(state, exc) from exc


def _stage(target: Path, data: bytes) -> Path:
    """A synced temporary file beside ``target`` holding ``data``; OP006 when it cannot be."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = temp_beside(target)
    except OSError as exc:
        raise unwritable(target, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise unwritable(target, exc) from exc
        raise
    return Path(temp)


def _write_journal(
    journal: Path,
    command: str,
    phase: str,
    files: Sequence[tuple[Path, Path | None]],
    removes: Sequence[Path],
) -> None:
    document = {
        "command": command,
        "pid": os.getpid(),
        "phase": phase,
        "files": [{"target": str(t), "temp": str(s) if s else None} for t, s in files],
        "remove": [str(p) for p in removes],
    }
    write_atomic(journal, (json.dumps(document, indent=1) + "\n").encode())
    _sync_dir(journal.parent)


def _unlink_synced(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    """Make a rename or removal in ``folder`` durable (best effort: not every file system
    lets a folder be synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def recover(state: Path) -> list[Recovered]:
    """Complete or roll back the transaction a killed run left in ``state`` (the caller
    holds the lock exclusively); returns what was done (empty when nothing was left).

    Raises BadInput (OP006) when the journal cannot be read or acted on: the workspace is
    then in an unknown state, which a command must not build on.
    """
    journal = state / JOURNAL_NAME
    if not journal.exists():
        return []
    try:
        document = json.loads(journal.read_text(encoding="utf-8"))
        command = str(document["command"])
        pid = int(document["pid"])
        phase = str(document["phase"])
        files = [(Path(f["target"]), f["temp"]) for f in document["files"]]
        removes = [Path(p) for p in document["remove"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        message = (
            f"cannot read the journal of an interrupted command ({exc}); the workspace may "
            "be half-written: check it (`git status`), then remove this file"
        )
        raise BadInput.at(Code.OP006, str(journal), 1, message) from None
    try:
        if phase == "publishing":
            done = _complete(files, removes)
        else:
            done = _roll_back([target for target, _ in files], pid)
    except OSError as exc:
        raise unwritable(journal, exc) from exc
    _unlink_synced(journal)
    return [Recovered(command, phase == "publishing", done)]


def _complete(files: Sequence[tuple[Path, str | None]], removes: Sequence[Path]) -> int:
    """Rename the staged files still waiting; remove the stale ones. Returns how many files
    the transaction published."""
    for target, temp in files:
        if temp is not None and os.path.exists(temp):
            os.replace(temp, target)
    for path in removes:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()
    return len(files)


def _roll_back(targets: Sequence[Path], pid: int) -> int:
    """Remove the temporary files the killed run ``pid`` staged beside ``targets``."""
    removed = 0
    for target in targets:
        prefix = f".{target.name}.{pid}-"
        with contextlib.suppress(OSError):
            for name in os.listdir(target.parent):
                if name.startswith(prefix) and name.endswith(".tmp"):
                    os.unlink(target.parent / name)
                    removed += 1
    return removed


def _through_link(path: Path) -> Path:
    """Where writing ``path`` goes: the file a symbolic link names (the link stays one)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path
