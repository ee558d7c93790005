"""The fonts of an exported PDF are subsets and named as subsets (app/export/pdf_fonts.py): every font's
`/BaseFont`, its descendant's and its descriptor's `/FontName` read `ABCDEF+DejaVuSans`, the embedded programs
are small, and the file is still one a strict reader takes whole, text and all. Read with pypdf (pinned in
requirements-dev.txt), on a figure of a real run."""
from __future__ import annotations

import re

import pytest
from pypdf import PdfReader

from app.export import Figure, write_pdf
from app.export.pdf_fonts import tag_subset_fonts
from training_core.figures import FigureSpec
from training_core.runs import read_run

SUBSET = re.compile(r"^/[A-Z]{6}\+[A-Za-z0-9-]+$")


def fonts(path) -> list[dict]:
    out = []
    for page in PdfReader(path, strict=True).pages:
        for ref in page["/Resources"]["/Font"].values():
            out.append(ref.get_object())
    return out


@pytest.fixture(scope="module")
def pdf(frozen_ring_run, tmp_path_factory, qapp):
    path = tmp_path_factory.mktemp("fonts") / "fig.pdf"
    store = read_run(frozen_ring_run)
    write_pdf(Figure(store, FigureSpec(plots=["losses", "updates"], width_in=7.16, height_in=2.6)), path)
    return path


def test_every_font_is_named_as_the_subset_it_is(pdf):
    found = fonts(pdf)
    assert len(found) >= 2  # the tick labels' regular and the panel letters' bold at least
    for font in found:
        base = str(font["/BaseFont"])
        assert SUBSET.match(base), base
        for desc in font.get("/DescendantFonts", []):
            desc = desc.get_object()
            assert str(desc["/BaseFont"]) == base
            descriptor = desc["/FontDescriptor"].get_object()
            assert str(descriptor["/FontName"]) == base  # one name for one subset, everywhere
            program = descriptor["/FontFile2"].get_object()
            assert int(program["/Length1"]) < 60_000  # a subset: DejaVuSans.ttf is 757 kB


def test_the_tagged_file_reads_whole(pdf):
    reader = PdfReader(pdf, strict=True)
    text = re.sub(r"[ \t]+", " ", reader.pages[0].extract_text())  # pypdf writes a space as a tab
    assert "Training step" in text and "Loss" in text  # the text is still text, in the tagged fonts
    for num in range(1, int(reader.trailer["/Size"])):
        reader.get_object(num)  # every object, through the table
    data = pdf.read_bytes()
    start = int(re.search(rb"startxref\s+(\d+)", data).group(1))
    assert data[start:start + 4] == b"xref"  # the table where the trailer says it is
    offsets = re.findall(rb"(\d{10}) 00000 n", data[start:])
    for i, off in enumerate(offsets):  # each object where the table says it is
        assert re.match(rb"\d+ 0 obj", data[int(off):int(off) + 20]), (i, data[int(off):int(off) + 20])


def test_tagging_twice_changes_nothing(pdf, tmp_path):
    copy = tmp_path / "again.pdf"
    copy.write_bytes(pdf.read_bytes())
    assert tag_subset_fonts(copy) == 0  # every name already carries its tag
    assert copy.read_bytes() == pdf.read_bytes()
