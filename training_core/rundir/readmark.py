"""Whether a file read incrementally is still the file that was read: the check behind every reader that
follows a live record by byte offset (`LineTail` for events.jsonl and scalars.csv, `VarFileReader` for
variables/).

A record only grows, except when a resume or a rollback cuts it back to a checkpoint (rundir/trim.py truncates
in place: same inode) and the process then appends again. A reader that polled before the cut and polls
again after the file grew back past its offset sees a longer file and would read on from its old offset,
in the middle of the new timeline: steps twice, out of order, and the dropped rows kept. A size check
cannot tell, so `ReadMark` remembers what preceded the offset: the file's identity (device, inode: a
file replaced by another is not the one read) and its last bytes before the offset (up to
`FINGERPRINT_BYTES`). Each read fetches them together with the new bytes, in one seek and one read,
so the check costs a fstat and 64 bytes per file and poll. Rows carry their wall time, so a rewritten
file practically never ends in the same bytes at the same offset; the `resumed` and `rollback` events
that follow a cut cover what is left (runs/follow.py).

A mismatch means: start over from byte 0. That is also what a file replaced by a copy (an rsync without
`--inplace`) or a network mount that renumbers its inodes costs: a read of the whole file, never a
wrong one.
"""
from __future__ import annotations

import os
from typing import BinaryIO

FINGERPRINT_BYTES = 64


class ReadMark:
    """How far a reader has consumed a file (`offset`), and what it saw just before that point."""

    def __init__(self) -> None:
        self.offset = 0
        self._ident: tuple[int, int] | None = None
        self._tail = b""

    def read_rest(self, f: BinaryIO) -> bytes | None:
        """The bytes of the open file `f` after `offset`, or None when what precedes `offset` is no longer
        what was read there (the file was cut and rewritten, or replaced): the caller starts over with a
        new `ReadMark`."""
        st = os.fstat(f.fileno())
        ident = (st.st_dev, st.st_ino)
        if self.offset == 0:
            self._ident = ident
            f.seek(0)
            return f.read()
        if ident != self._ident:
            return None
        n = len(self._tail)
        f.seek(self.offset - n)
        got = f.read()
        if got[:n] != self._tail:
            return None
        return got[n:]

    def consumed(self, data: bytes, n: int) -> None:
        """The first `n` bytes of `data` (what `read_rest` returned) are read: the offset moves past them."""
        if n <= 0:
            return
        self._tail = (self._tail + data[max(0, n - FINGERPRINT_BYTES):n])[-FINGERPRINT_BYTES:]
        self.offset += n
