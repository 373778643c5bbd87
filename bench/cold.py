"""Cold figures for ``bench/speed.py --cold``: first runs on an empty cache, bytes and cache.

Each run gets a new empty cache (``OMNI_PORT_CACHE``) and its own folder. The bytes
downloaded are counted by a proxy on 127.0.0.1 that the runs reach the index through
(``HTTPS_PROXY``, which the HTTP client honours as pip does): it tunnels each connection
and counts what comes back, whatever the tool does with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OMNI_PORT = [sys.executable, "-m", "omni_port", "-q"]
#: The next real upgrade (README, "Upgrade day").
UPGRADE = [
    "upgrade",
    "vllm-omni==0.32.0rc1",
    "--base",
    "detect",
    "--to",
    "vllm-ascend==0.30.0rc2",
    "--summary",
    "upgrade.md",
    # 0.32.0rc1's lost marker is 0.30.0's, moved: `marker-allow.txt` names 0.30.0's.
    "--lenient",
]


class _Tunnel(socketserver.BaseRequestHandler):
    """One ``CONNECT host:port`` tunnel; bytes from the server are counted."""

    server: _Proxy

    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        method, target = head.split(b" ")[:2]
        if method != b"CONNECT":
            self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        host, _, port = target.decode().rpartition(":")
        upstream = socket.create_connection((host, int(port)), timeout=60)
        self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        back = threading.Thread(target=self._pipe, args=(upstream, self.request, True))
        back.start()
        self._pipe(self.request, upstream, False)
        back.join()
        upstream.close()

    def _pipe(self, source: socket.socket, sink: socket.socket, counted: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
                if counted:
                    self.server.add(len(data))
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class _Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.received = 0
        self._lock = threading.Lock()

    def add(self, count: int) -> None:
        with self._lock:
            self.received += count


@dataclass(frozen=True, slots=True)
class Run:
    seconds: float
    downloaded: int
    cache: int


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _cold(commands: list[list[str]], workspace: Path, proxy: _Proxy) -> Run:
    """``commands`` run one after the other in ``workspace`` on a new empty cache."""
    with tempfile.TemporaryDirectory(prefix="omni-port-cold-") as tmp:
        cache = Path(tmp)
        port = proxy.server_address[1]
        env = {
            **os.environ,
            "OMNI_PORT_CACHE": str(cache),
            "HTTPS_PROXY": f"http://127.0.0.1:{port}",
            "NO_PROXY": "",
        }
        before = proxy.received
        started = time.perf_counter()
        for command in commands:
            subprocess.run(command, cwd=workspace, env=env, capture_output=True, check=False)
        seconds = time.perf_counter() - started
        return Run(seconds, proxy.received - before, _size(cache))


def _workspace(parent: Path, name: str, full: bool) -> Path:
    """A folder holding a copy of this repository's pyproject.toml and the marker-allow list
    it names (and, with ``full``, its committed patches/ and generated/, as a fresh clone has
    them)."""
    folder = parent / name
    folder.mkdir()
    for configuration in ("pyproject.toml", "marker-allow.txt"):
        shutil.copy(ROOT / configuration, folder)
    if full:
        for part in ("patches", "generated"):
            shutil.copytree(ROOT / part, folder / part)
    return folder


def main(rounds: int) -> int:
    make_sync = [[*OMNI_PORT, "extract"], [*OMNI_PORT, "sync"], [*OMNI_PORT, "verify"]]
    proxy = _Proxy()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    figures: dict[str, list[Run]] = {"sync": [], "upgrade": []}
    try:
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="omni-port-cold-work-") as tmp:
                work = Path(tmp)
                sync_folder = _workspace(work, "sync", full=True)
                figures["sync"].append(_cold(make_sync, sync_folder, proxy))
                upgrade_folder = _workspace(work, "upgrade", full=False)
                figures["upgrade"].append(_cold([[*OMNI_PORT, *UPGRADE]], upgrade_folder, proxy))
    finally:
        proxy.shutdown()
        proxy.server_close()
    _print(figures, rounds)
    return 0


def _print(figures: dict[str, list[Run]], rounds: int) -> None:
    print(f"# Cold runs ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {rounds} rounds)\n")
    print("| measure (whole process, empty cache) | min | median | downloaded | cache left |")
    print("| --- | ---: | ---: | ---: | ---: |")
    labels = {
        "sync": "the commands of `make sync` (extract, sync, verify)",
        "upgrade": "`upgrade vllm-omni==0.32.0rc1 --base detect --to vllm-ascend==0.30.0rc2 "
        "--lenient`",
    }
    for key, label in labels.items():
        runs = figures[key]
        seconds = [r.seconds for r in runs]
        downloaded = statistics.median(r.downloaded for r in runs) / 1e6
        cache = statistics.median(r.cache for r in runs) / 1e6
        print(
            f"| {label} | {min(seconds):.1f} s | {statistics.median(seconds):.1f} s "
            f"| {downloaded:.0f} MB | {cache:.0f} MB |"
        )
