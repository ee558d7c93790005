"""Subset fonts named as subsets in the PDF: `/BaseFont /QEBAAA+DejaVuSans`, not `/DejaVuSans`.

Why: Qt's PDF writer embeds only the glyphs a figure uses (DejaVu Sans: 19 kB of its 757 kB) and tags the
font descriptor's name, but leaves the fonts' `/BaseFont` untagged. The PDF reference (ISO 32000-1, 9.6.4)
asks for the tag in both, and preflight checks read `/BaseFont`: `pdffonts` lists such a font as embedded but
not a subset, and a journal's checker may take the file for one that embeds whole fonts, or none. Here each
untagged `/BaseFont` of a font whose descriptor carries a tag gets that tag, and the cross-reference table's
offsets are moved by the bytes added, so the file stays valid byte for byte (only object dictionaries are
touched, never a stream).
"""
from __future__ import annotations

import re
from pathlib import Path

_TAGGED = re.compile(rb"/FontName\s*/([A-Z]{6})\+([^\s/<>\[\]()]+)")
_BASEFONT = re.compile(rb"/BaseFont\s*/([^\s/<>\[\]()]+)")
_XREF = re.compile(rb"xref\s*\n(\d+) (\d+)\s*\n")


def tag_subset_fonts(path: str | Path) -> int:
    """Tag the subset fonts' `/BaseFont`s of the PDF at `path` in place; returns how many were tagged. A file
    this cannot read plainly (no classic xref table, as Qt writes) is left as it is."""
    path = Path(path)
    data = path.read_bytes()
    xref_at = data.rfind(b"\nxref")
    m = _XREF.match(data, xref_at + 1) if xref_at >= 0 else None
    start = re.search(rb"startxref\s+(\d+)", data[xref_at:]) if m else None
    if m is None or start is None or int(start.group(1)) != xref_at + 1:
        return 0
    first, count = int(m.group(1)), int(m.group(2))
    rows_at = m.end()
    rows = [data[rows_at + 20 * i: rows_at + 20 * (i + 1)] for i in range(count)]
    if any(len(r) != 20 or r[17:18] not in (b"n", b"f") for r in rows):
        return 0
    offsets = [int(r[:10]) if r[17:18] == b"n" else None for r in rows]
    tags = {name: tag for tag, name in _TAGGED.findall(data[:xref_at])}
    if not tags:
        return 0
    inserts: list[tuple[int, bytes]] = []  # (position, bytes inserted there)
    for off in sorted(o for o in offsets if o):
        end = _dictionary_end(data, off, xref_at)
        for b in _BASEFONT.finditer(data, off, end):
            tag = tags.get(b.group(1))
            if tag is not None:
                inserts.append((b.start(1), tag + b"+"))
    if not inserts:
        return 0
    out, last = [], 0
    for pos, text in inserts:
        out += [data[last:pos], text]
        last = pos
    body = b"".join(out) + data[last:xref_at + 1]

    def moved(offset: int) -> int:
        return offset + sum(len(t) for p, t in inserts if p < offset)

    table = [f"xref\n{first} {count}\n".encode()]
    for r, off in zip(rows, offsets):
        table.append(r if off is None else f"{moved(off):010d}".encode() + r[10:])
    trailer = data[rows_at + 20 * count:]
    trailer = re.sub(rb"startxref\s+\d+", f"startxref\n{len(body)}".encode(), trailer, count=1)
    path.write_bytes(body + b"".join(table) + trailer)
    return len(inserts)


def _dictionary_end(data: bytes, start: int, limit: int) -> int:
    """Where the object at `start` stops being its dictionary: its stream's data, or `endobj`."""
    ends = [i for i in (data.find(b"stream", start, limit), data.find(b"endobj", start, limit)) if i >= 0]
    return min(ends) if ends else limit
