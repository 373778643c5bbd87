"""Wheels read by range from an HTTP index: only the members needed, each checked against
the wheel's RECORD; whole archives from a server without ranged reads, or when asked for.

The index is a local HTTP server on 127.0.0.1 serving synthetic wheels written here: no
test touches the network.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import io
import os
import random
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.sources import archives, fetch, index, kept, ranged, upstream
from omni_port.sources.upstream import ASCEND_RUNNER, Spec, SpecKind
from tests.conftest import Cli

RUNNER = b"class NPUModelRunner:\n    def execute_model(self):\n        return 1\n"
#: Incompressible filler, so that a whole download and a ranged read differ in size.
FILLER = random.Random(35).randbytes(600_000)


def _wheel(version: str, tamper: str = "", record: bool = True) -> bytes:
    """A vllm-ascend wheel: the runner between two large binaries, a package module, its
    METADATA and a RECORD (``tamper``: a member whose RECORD hash is another's)."""
    files = {
        "vllm_ascend/_C.so": FILLER,
        ASCEND_RUNNER: RUNNER,
        "vllm_ascend/__init__.py": b"VERSION = 1\n",
        "vllm_ascend/lib.so": FILLER[::-1],
        f"vllm_ascend-{version}.dist-info/METADATA": b"Name: vllm-ascend\nVersion: 1\n",
    }
    rows = [
        archives.record_line(name, b"# other\n" if name == tamper else data)
        for name, data in files.items()
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        if record:
            rows.append(f"vllm_ascend-{version}.dist-info/RECORD,,")
            archive.writestr(f"vllm_ascend-{version}.dist-info/RECORD", "\n".join(rows) + "\n")
    return buffer.getvalue()


class Served:
    """What the local server was asked: (path, Range header or "") and bytes sent."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ranges = True
        #: Seconds to stall after half a file (a download to kill midway).
        self.stall = 0.0
        self.requests: list[tuple[str, str]] = []
        self.sent = 0
        self.url = ""

    def publish(self, filename: str, data: bytes) -> None:
        (self.root / "files").mkdir(parents=True, exist_ok=True)
        (self.root / "files" / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        page = self.root / "simple" / "vllm-ascend" / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = page.read_text() if page.is_file() else ""
        links += f'<a href="{self.url}/files/{filename}#sha256={digest}">{filename}</a>\n'
        page.write_text(links)

    @property
    def file_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.root / "files").iterdir())


def _handler(served: Served) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            wanted = self.headers.get("Range", "")
            served.requests.append((self.path, wanted))
            path = served.root / self.path.lstrip("/").split("#")[0]
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            if wanted and served.ranges and path.suffix == ".whl":
                self._ranged(data, wanted)
                return
            self.send_response(200)
            kind = "text/html" if path.suffix == ".html" else "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if served.stall and path.suffix == ".whl":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                time.sleep(served.stall)
            self._send(data)

        def _ranged(self, data: bytes, wanted: str) -> None:
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            if not first:
                start, end = max(0, len(data) - int(last)), len(data)
            else:
                start, end = int(first), min(len(data), int(last) + 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.send_header("Content-Length", str(end - start))
            self.end_headers()
            self._send(data[start:end])

        def _send(self, data: bytes) -> None:
            served.sent += len(data)
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def served(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """An HTTP index on 127.0.0.1 that pip's configuration points at."""
    state = Served(tmp_path_factory.mktemp("http-index"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"{state.url}/simple/")
    monkeypatch.setattr(index.time, "sleep", lambda seconds: None)
    yield state
    server.shutdown()
    server.server_close()


def _release(version: str) -> Spec:
    return Spec(SpecKind.PYPI, "vllm-ascend", version)


def _files(cache: Path) -> list[str]:
    return sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())


def _wheel_name(version: str) -> str:
    return f"vllm_ascend-{version}-py3-none-any.whl"


def test_a_member_is_read_by_range_and_checked_against_the_record(
    served: Served, tmp_path: Path
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    located = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    assert located.source.text == RUNNER.decode()
    assert all(wanted for path, wanted in served.requests if path.endswith(".whl"))
    assert served.sent < served.file_bytes / 2, "the binaries around it were not read"
    assert _files(tmp_path) == [
        f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}",
        f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}.sha256",
    ]
    digest = (tmp_path / f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}.sha256").read_text().split()
    assert digest == [hashlib.sha256(RUNNER).hexdigest(), "record"]


def test_a_package_s_sources_are_read_by_range_and_kept_with_their_record(
    served: Served, tmp_path: Path
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    texts = upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert texts == {ASCEND_RUNNER: RUNNER.decode(), "vllm_ascend/__init__.py": "VERSION = 1\n"}
    record = (tmp_path / "src/vllm-ascend-1.0.0" / kept.RECORD_NAME).read_text()
    assert "read by range" in record.splitlines()[-1]
    asked = len(served.requests)
    (tmp_path / "src/vllm-ascend-1.0.0/vllm_ascend/__init__.py").write_text("VERSION = 6\n")
    again = upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert again == texts, "a damaged kept file is fetched again"
    assert len(served.requests) > asked


def test_a_server_without_ranged_reads_gives_the_whole_archive(
    served: Served, tmp_path: Path
) -> None:
    served.ranges = False
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    located = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    assert located.source.text == RUNNER.decode()
    archive = f"archives/vllm-ascend-1.0.0/{_wheel_name('1.0.0')}"
    assert archive in _files(tmp_path) and f"{archive}.sha256" in _files(tmp_path)
    published = served.root / "files" / _wheel_name("1.0.0")
    assert (tmp_path / archive).read_bytes() == published.read_bytes()
    digest = (tmp_path / f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}.sha256").read_text().split()
    assert digest == [hashlib.sha256(RUNNER).hexdigest()], "checked as the whole archive"


@pytest.mark.parametrize(
    ("tamper", "record", "why"),
    [
        pytest.param(ASCEND_RUNNER, True, "does not match", id="unlike-record"),
        pytest.param("", False, "has no RECORD", id="no-record"),
    ],
)
def test_a_member_the_record_does_not_vouch_for_is_refused_and_nothing_kept(
    served: Served, tmp_path: Path, tamper: str, record: bool, why: str
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0", tamper, record))
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    finding = error.value.findings[0]
    assert finding.code.value == "OP003" and why in finding.message
    assert _files(tmp_path) == []


def test_whole_downloads_check_the_archive_and_distrust_copies_read_by_range(
    served: Served, tmp_path: Path
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert not (tmp_path / "archives").exists()
    with fetch.fetching(fetch.Fetching(fetch.Downloads.WHOLE)):
        located = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
        texts = upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert located.source.text == RUNNER.decode() and ASCEND_RUNNER in texts
    assert (tmp_path / "archives/vllm-ascend-1.0.0" / _wheel_name("1.0.0")).is_file()
    digest = (tmp_path / f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}.sha256").read_text().split()
    assert len(digest) == 1, "read again from the whole archive"
    served.ranges = False  # what follows comes from the kept whole archive
    asked = len(served.requests)
    with fetch.fetching(fetch.Fetching(fetch.Downloads.WHOLE)):
        assert upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path) == texts
    assert len(served.requests) == asked, "read from the kept archive"


def test_a_whole_wheel_is_checked_against_its_record_before_its_sources_are_kept(
    served: Served, tmp_path: Path
) -> None:
    served.ranges = False
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0", tamper="vllm_ascend/__init__.py"))
    with pytest.raises(BadInput) as error:
        upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert "vllm_ascend/__init__.py does not match" in error.value.findings[0].message
    assert not (tmp_path / "src/vllm-ascend-1.0.0" / kept.RECORD_NAME).exists()


def test_the_plan_merges_neighbours_and_skips_what_lies_between() -> None:
    infos = []
    for offset, name in ((0, "a.py"), (100, "b.py"), (5_000_000, "c.py"), (5_000_200, "d.so")):
        info = zipfile.ZipInfo(name)
        info.header_offset = offset
        infos.append(info)
    # b runs up to c: merged with a it would pass MOST, so each is a request of its own.
    assert ranged.plan(infos[:3], infos, 6_000_000) == [
        (0, 100),
        (100, 5_000_000),
        (5_000_000, 5_000_200),
    ]
    assert ranged.plan([infos[0], infos[2]], infos, 6_000_000) == [(0, 100), (5_000_000, 5_000_200)]
    near = [infos[0], infos[3]]
    near[1].header_offset = 200_000
    assert ranged.plan(near, near, 300_000) == [(0, 300_000)], "neighbours in one request"


def test_the_downloads_option_takes_members_or_whole(cli: Cli, tmp_path: Path) -> None:
    result = cli("--downloads", "sometimes", "codes")
    assert result.exit_code == 2
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.omni-port]\ndownloads = "sometimes"\n')
    bad = cli("--config", config, "codes")
    assert bad.exit_code == 2 and "pyproject.toml:2" in bad.stderr and "OP005" in bad.stderr
    config.write_text('[tool.omni-port]\ndownloads = "whole"\n')
    assert cli("--config", config, "codes").exit_code == 0


KILLED = """
import sys
from pathlib import Path
from omni_port.sources import fetch, upstream
spec = upstream.Spec(upstream.SpecKind.PYPI, "vllm-ascend", "1.0.0")
with fetch.fetching(fetch.Fetching(fetch.Downloads.WHOLE)):
    upstream.locate(spec, upstream.ASCEND_RUNNER, Path(sys.argv[1]))
"""


def test_a_download_killed_outright_leaves_nothing_in_tmp_and_the_next_run_cleans_up(
    served: Served, tmp_path: Path
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    served.stall = 30.0
    cache, scratch = tmp_path / "cache", tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(cache)], env=env)
    folder = cache / "archives" / "vllm-ascend-1.0.0"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            partial = [p for p in folder.glob(".*.tmp") if p.stat().st_size > 0]
            if partial:
                break
            time.sleep(0.05)
        assert partial, "the download never started"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(scratch.iterdir()) == [], "nothing was written to the temporary folder"
    assert [p.name for p in folder.iterdir()] == [partial[0].name], "the partial download"
    served.stall = 0.0
    located = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, cache)
    assert located.source.text == RUNNER.decode()
    assert not list(folder.glob(".*.tmp")), "the next run removed the dead run's file"


def test_the_meter_shows_only_transfers_that_take_more_than_a_second(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from omni_port.cli import output

    clock = [100.0]
    monkeypatch.setattr(output.time, "monotonic", lambda: clock[0])
    meter = output.Meter()
    meter("quick.whl", 0, 1_000_000)
    clock[0] += 0.5
    meter("quick.whl", 1_000_000, 1_000_000)
    assert capsys.readouterr().err == "", "a transfer under a second is not shown"
    meter("slow.whl", 0, 8_000_000)
    clock[0] += 1.5
    meter("slow.whl", 2_000_000, 8_000_000)
    clock[0] += 0.01
    meter("slow.whl", 2_100_000, 8_000_000)  # too soon to redraw
    clock[0] += 1.0
    meter("slow.whl", 8_000_000, 8_000_000)
    shown = capsys.readouterr().err
    assert shown.count("\r") == 2 and shown.endswith("8.0 MB of 8.0 MB\n")
    assert "slow.whl: 2.0 MB of 8.0 MB" in shown and "2.1 MB" not in shown


def test_no_meter_when_stderr_is_no_terminal_or_the_run_is_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omni_port import cli
    from omni_port.sources.config import Config

    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    for quiet, shown in ((False, True), (True, False)):
        with cli._fetching(Config(downloads="whole"), quiet):
            assert (fetch.current().meter is not None) is shown
            assert fetch.current().downloads is fetch.Downloads.WHOLE
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: False, raising=False)
    with cli._fetching(Config(), False):
        assert fetch.current().meter is None
    assert fetch.current() == fetch.Fetching(), "the run's settings end with it"


def test_a_damaged_member_read_by_range_is_read_again(served: Served, tmp_path: Path) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    kept_copy = tmp_path / f"src/vllm-ascend-1.0.0/{ASCEND_RUNNER}"
    kept_copy.write_bytes(RUNNER[:20])
    asked = len(served.requests)
    again = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    assert again.source.text == RUNNER.decode() and kept_copy.read_bytes() == RUNNER
    assert len(served.requests) > asked, "read again from the index"
    assert not (tmp_path / "archives").exists()


def test_a_full_disk_while_keeping_a_package_s_sources_keeps_none_of_them(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    real = Path.write_bytes
    written: list[Path] = []

    def full_at_the_second(path: Path, data: bytes) -> int:
        written.append(path)
        if len(written) == 2:
            real(path, data[:3])  # what a full disk lets through
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)

    monkeypatch.setattr(Path, "write_bytes", full_at_the_second)
    with pytest.raises(BadInput) as error:
        upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    (finding,) = error.value.findings
    assert (finding.code.value, finding.path) == ("OP006", str(written[1]))
    assert _files(tmp_path) == [], "half the sources were kept"
    monkeypatch.setattr(Path, "write_bytes", real)
    texts = upstream.package_texts(_release("1.0.0"), "vllm_ascend", tmp_path)
    assert texts[ASCEND_RUNNER] == RUNNER.decode()


def test_a_member_a_release_lacks_is_not_asked_of_the_index_again(
    served: Served, tmp_path: Path
) -> None:
    """issue 46: base detection asks every vLLM release since the floor for its runner
    module, and vLLM 0.34.0 has none: its absence was read by range on every run."""
    served.publish(_wheel_name("1.0.0"), _wheel("1.0.0"))
    member = "vllm_ascend/worker/gone.py"
    with pytest.raises(BadInput) as first:
        upstream.locate(_release("1.0.0"), member, tmp_path)
    asked = len(served.requests)
    assert asked > 0
    with pytest.raises(BadInput) as again:
        upstream.locate(_release("1.0.0"), member, tmp_path)
    assert len(served.requests) == asked, "the kept absence answered"
    assert again.value.findings == first.value.findings
    assert "the wheel has no vllm_ascend/worker/gone.py" in first.value.findings[0].message
    # A damaged record of the absence is no answer: the archive is asked again.
    (tmp_path / f"src/vllm-ascend-1.0.0/{member}{upstream.ABSENT_SUFFIX}").write_text("x")
    with pytest.raises(BadInput):
        upstream.locate(_release("1.0.0"), member, tmp_path)
    assert len(served.requests) > asked
    assert upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path).source.text
