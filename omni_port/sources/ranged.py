"""Files of a remote wheel read with ranged requests, each checked against the wheel's RECORD.

A wheel is a zip whose central directory sits at its end, as pip's lazy wheel relies on:
one request for the tail brings the directory (and the RECORD, which wheel builders write
last), then one request per run of wanted members, neighbours less than ``GAP`` apart in
one request, a few requests at once. The standard library's ``zipfile`` reads the archive
through a file object holding the byte spans fetched so far, so the usual checks hold
(names, sizes, CRC-32, ZIP64), and a read outside those spans fetches what it lacks.

What this trades: the index's sha256 covers the whole archive, which a ranged read never
holds. Each member is checked against the sha256 the wheel's RECORD gives it instead; the
RECORD itself is checked by nothing but the zip's CRC. The tool only reads these files as
text and never runs them; whole archives, checked as pip checks them, are an option
(``downloads = "whole"``).
"""

from __future__ import annotations

import bisect
import io
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from omni_port.sources import archives

#: Bytes asked for at the end of a wheel first: the central directory of a 25 MB wheel of
#: about a thousand files takes about 100 KB.
TAIL = 256 * 1024
#: Wanted members closer than this are read in one request: the bytes between cost less
#: than a request's round trip.
GAP = 256 * 1024
#: Most bytes one request asks for: longer runs are split, to read them a few at once.
MOST = 4 * 1024 * 1024
#: Requests at once.
WORKERS = 4
#: Least bytes a read outside the fetched spans asks for.
LEAST = 64 * 1024

#: Reads bytes ``start`` to ``end`` (excluded) of the remote file.
Fetch = Callable[[int, int], bytes]
#: Told the bytes fetched so far and the bytes planned in all.
Counter = Callable[[int, int], None]


class Unlike(Exception):
    """A member whose bytes are not those the wheel's RECORD lists, or that it does not list."""


class Damaged(Exception):
    """The remote file is no readable wheel (no zip, no RECORD, an unsafe name)."""


@dataclass(frozen=True, slots=True)
class Remote:
    """A remote wheel: how to read its bytes, and how many there are."""

    #: Reads a span of it.
    fetch: Fetch
    #: Its size in bytes.
    size: int
    #: Its last bytes, read already (the tail request that told the size).
    tail: bytes


class _Sparse(io.RawIOBase):
    """The remote file as a seekable file: reads are served from the spans fetched so far,
    and a read outside them fetches at least ``LEAST`` bytes from where it starts."""

    def __init__(self, remote: Remote) -> None:
        super().__init__()
        #: Reads a span of the remote file.
        self.fetch = remote.fetch
        self._size = remote.size
        self._position = 0
        #: Fetched spans, by start: (start, bytes), sorted, never overlapping.
        self._starts: list[int] = []
        self._spans: list[bytes] = []
        self.add(remote.size - len(remote.tail), remote.tail)

    def add(self, start: int, data: bytes) -> None:
        """Hold ``data`` as the bytes from ``start`` on (a span overlapping one held is
        trimmed to what is new)."""
        for held_start, held in zip(list(self._starts), list(self._spans), strict=True):
            held_end = held_start + len(held)
            if held_start <= start < held_end:
                data = data[held_end - start :]
                start = held_end
            elif start < held_start < start + len(data):
                data = data[: held_start - start]
        if data:
            index = bisect.bisect(self._starts, start)
            self._starts.insert(index, start)
            self._spans.insert(index, data)

    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` not held, as (start, end) pairs."""
        parts = []
        for held_start, held in zip(self._starts, self._spans, strict=True):
            held_end = held_start + len(held)
            if held_end <= start or held_start >= end:
                continue
            if held_start > start:
                parts.append((start, held_start))
            start = max(start, held_end)
        if start < end:
            parts.append((start, end))
        return parts

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        data = self._held(self._position, wanted)
        if data is None:
            end = min(self._size, self._position + max(wanted, LEAST))
            self.add(self._position, self.fetch(self._position, end))
            data = self._held(self._position, wanted) or b""
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def _held(self, start: int, length: int) -> bytes | None:
        """Bytes ``start`` to ``start + length`` when held, across adjacent spans."""
        index = bisect.bisect(self._starts, start) - 1
        if index < 0:
            return None
        pieces = []
        position, end = start, start + length
        while position < end and index < len(self._starts):
            span_start, span = self._starts[index], self._spans[index]
            if not span_start <= position < span_start + len(span):
                return None
            pieces.append(span[position - span_start : end - span_start])
            position = span_start + len(span)
            index += 1
        return b"".join(pieces) if position >= end else None


def read(
    remote: Remote, wanted: archives.Wanted, counter: Counter | None = None
) -> dict[str, bytes]:
    """Every regular file of the remote wheel that ``wanted`` takes, by member path, in
    archive order, each checked against the wheel's RECORD.

    Raises Unlike for a member the RECORD does not vouch for, Damaged for a file that is
    no wheel (or holds an unsafe name), and what ``remote.fetch`` raises.
    """
    sparse = _Sparse(remote)
    try:
        # Unbuffered: a buffer would read ahead past the planned spans.
        opened = zipfile.ZipFile(sparse)
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise Damaged(f"not a readable zip archive: {exc}") from None
    with opened:
        infos = opened.infolist()
        unsafe = next(
            (i.filename for i in infos if not archives.safe_member(i.filename.rstrip("/"))), None
        )
        if unsafe is not None:
            raise Damaged(f"refusing unsafe member name {unsafe!r}")
        record_info = next((i for i in infos if archives.is_record(i.filename)), None)
        if record_info is None:
            raise Damaged("the wheel has no RECORD")
        chosen = [i for i in infos if not i.is_dir() and wanted(i.filename)]
        _prefetch(sparse, plan([record_info, *chosen], infos, remote.size), counter)
        try:
            record = archives.parse_record(opened.read(record_info).decode("utf-8", "replace"))
            files: dict[str, bytes] = {}
            for info in chosen:  # a name twice in a zip: the first, as every reader here
                if info.filename not in files:
                    files[info.filename] = opened.read(info)
        except (zipfile.BadZipFile, EOFError, ValueError) as exc:
            raise Damaged(f"unreadable member: {exc}") from None
    for member, data in files.items():
        # The RECORD lists itself without a hash: nothing vouches for it but the CRC.
        reason = (
            "" if member == record_info.filename else archives.unlike_record(member, data, record)
        )
        if reason:
            raise Unlike(reason)
    return files


def plan(
    chosen: Sequence[zipfile.ZipInfo], infos: Sequence[zipfile.ZipInfo], size: int
) -> list[tuple[int, int]]:
    """The spans to fetch for the ``chosen`` members: each from its local header to the
    next member's (or the end), runs closer than ``GAP`` merged, none longer than ``MOST``
    (unless one member is)."""
    starts = sorted({i.header_offset for i in infos})
    extents = []
    for info in sorted(chosen, key=lambda i: i.header_offset):
        after = bisect.bisect_right(starts, info.header_offset)
        end = starts[after] if after < len(starts) else size
        extents.append((info.header_offset, end))
    merged: list[tuple[int, int]] = []
    for start, end in extents:
        if merged and start - merged[-1][1] < GAP and end - merged[-1][0] <= MOST:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _prefetch(sparse: _Sparse, spans: Sequence[tuple[int, int]], counter: Counter | None) -> None:
    """Fetch what ``spans`` lack, a few requests at once."""
    parts = [part for start, end in spans for part in sparse.missing(start, end)]
    total = sum(end - start for start, end in parts)
    done = 0
    if counter is not None:
        counter(done, total)
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [(start, end, pool.submit(sparse.fetch, start, end)) for start, end in parts]
        try:
            for start, end, future in futures:
                sparse.add(start, future.result())
                done += end - start
                if counter is not None:
                    counter(done, total)
        except BaseException:
            # Ctrl-C or a failed request: the requests not started are not made.
            pool.shutdown(wait=True, cancel_futures=True)
            raise
