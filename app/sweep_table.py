"""A sweep's table in the window: one row per setting, a column per metric (mean ± sd over the seeds, at the end
and at a chosen step), sorted by a click on a column's header (again: the other way), exported as shown, as CSV
or as a LaTeX table.

The rows, their order and both file formats are training_core/runs/sweep_table.py's (`SweepTable`), so a table
exported here is the one `main.py --export SWEEP_DIR --table` writes from the same records, sorted alike; and
each cell reads as the LaTeX table's (`cell_text`: mean and sd to one decimal place, 1.20 ± 0.23).
"""
from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QHeaderView, QPushButton, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from training_core import UserError
from training_core.rundir.outputs import check_output
from training_core.runs.sweep import check_sweep_output
from training_core.runs.sweep_table import SweepTable, cell_text

FORMATS = {".csv": "CSV (*.csv)", ".tex": "LaTeX table (*.tex)"}
#: where a column's title may break: after an underscore, or at a space not before a number ("@ 40" stays whole)
BREAKS = re.compile(r"(?<=_)|(?= (?!\d))")


def wrapped(title: str, width: int, fm: QFontMetrics) -> str:
    """`title` on as many lines as keep it within `width` px (never narrower than its widest piece), broken at
    `BREAKS`. Why: sized to its one-line title, a column of short values ("0 ± 0" under "modes_covered @ 40",
    166 px for 33 of values) pushed the next ones out of a 1,000 px table; the title as recorded is the tooltip."""
    pieces = BREAKS.split(title)
    width = max([width] + [fm.horizontalAdvance(p.strip()) for p in pieces])
    lines = [pieces[0]]
    for p in pieces[1:]:
        if fm.horizontalAdvance(lines[-1] + p) <= width:
            lines[-1] += p
        else:
            lines.append(p.strip())
    return "\n".join(lines)


class SweepTableWidget(QWidget):
    """`show_table(table)` fills it (keeping the order the user chose); `table` is what is shown, in that order;
    `export(path)` writes it. `failed` carries a one-line problem (a path the export may not write)."""

    failed = Signal(str)

    def __init__(self, default_dir: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.default_dir = default_dir
        self.grid = QTableWidget()
        self.grid.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.grid.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.grid.verticalHeader().setVisible(False)
        header = self.grid.horizontalHeader()
        header.setSectionsClickable(True)
        header.setSortIndicatorShown(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.sectionClicked.connect(self.sort_by)
        self.csv_button = QPushButton("Export CSV…")
        self.tex_button = QPushButton("Export LaTeX…")
        self.csv_button.setToolTip("The table as shown: setting, seeds, then mean, sd and n per column")
        self.tex_button.setToolTip("The table as shown, as a LaTeX booktabs table (\\usepackage{booktabs})")
        self.csv_button.clicked.connect(lambda: self._export_dialog(".csv"))
        self.tex_button.clicked.connect(lambda: self._export_dialog(".tex"))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.csv_button)
        buttons.addWidget(self.tex_button)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.grid, 1)
        col.addLayout(buttons)
        self._unsorted: SweepTable | None = None
        self.table: SweepTable | None = None
        self.order: tuple[str, bool] | None = None  # (header, descending) the user sorted by

    def show_table(self, table: SweepTable) -> None:
        self._unsorted = table
        by = self.order[0] if self.order else None
        if by in table.headers:
            table = table.sorted(table.headers.index(by), self.order[1])
        self.table = table
        self._fill(table)

    def sort_by(self, column: int) -> None:
        """A click on a header: sort by it, ascending; a second click on the same header: descending."""
        if self._unsorted is None:
            return
        header = self._unsorted.headers[column]
        self.order = (header, not self.order[1] if self.order and self.order[0] == header else False)
        self.show_table(self._unsorted)

    def _fill(self, table: SweepTable) -> None:
        g = self.grid
        g.clear()
        g.setColumnCount(len(table.headers))
        g.setRowCount(len(table.rows))
        g.setHorizontalHeaderLabels(table.titles)  # "D loss", "modes_covered": as the CLI's LaTeX table titles them
        for c, key in enumerate(table.headers):
            g.horizontalHeaderItem(c).setToolTip(key)  # the tag as recorded: the CSV's column, `--sort`'s name
        k = len(table.keys)
        for r, row in enumerate(table.rows):
            cells = [cell_text(c, len(row.members), plain=True) for c in row.cells]  # as the LaTeX table's
            texts = [v for _, v in row.setting] + [str(len(row.members))] + cells
            tips = [""] * (k + 1) + [f"mean ± sd over {c.n} of {len(row.members)} seeds" for c in row.cells]
            for c, (text, tip) in enumerate(zip(texts, tips)):
                item = QTableWidgetItem(text)
                item.setToolTip(tip or row.label)
                if c >= k:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                g.setItem(r, c, item)
        header = g.horizontalHeader()
        fm = header.fontMetrics()
        for c, title in enumerate(table.titles):  # a title wider than its column's values, on two or three lines
            values = max((fm.horizontalAdvance(g.item(r, c).text()) for r in range(g.rowCount())), default=0)
            g.horizontalHeaderItem(c).setText(wrapped(title, values, fm))
        if self.order and self.order[0] in table.headers:
            header.setSortIndicator(table.headers.index(self.order[0]),
                                    Qt.SortOrder.DescendingOrder if self.order[1] else Qt.SortOrder.AscendingOrder)
        else:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)

    def needed_size(self) -> QSize:
        """The size at which every column and row shows whole, unscrolled (the grid's columns as sized to their
        contents, its frame, a vertical scroll bar's width to spare, the buttons under it): what the sweep view
        gives the table when it can (app/sweep_view.py)."""
        g, header = self.grid, self.grid.horizontalHeader()
        frame = 2 * g.frameWidth()
        width = sum(max(g.sizeHintForColumn(c), header.sectionSizeHint(c)) for c in range(g.columnCount()))
        rows = sum(g.rowHeight(r) for r in range(g.rowCount()))
        buttons = self.csv_button.sizeHint().height() + self.layout().spacing()
        return QSize(width + frame + g.verticalScrollBar().sizeHint().width(),
                     header.sizeHint().height() + rows + frame + buttons)

    def text(self, fmt: str) -> str:
        """The table as shown, as CSV (`csv`) or LaTeX (`tex`)."""
        if self.table is None:
            raise UserError("the sweep has no table yet (no point has recorded anything)")
        return self.table.to_csv() if fmt == "csv" else self.table.to_latex()

    def export(self, path: str | Path) -> Path:
        """Write the table as shown to `path` (.csv or .tex); a path that may not be written is a `UserError`."""
        p = Path(path)
        fmt = {".csv": "csv", ".tex": "tex"}.get(p.suffix.lower())
        if fmt is None:
            raise UserError(f"{p.name}: a table is written as .csv or .tex; choose one of them")
        check_output(p, "the table")
        check_sweep_output(p)
        try:
            p.write_text(self.text(fmt), encoding="utf-8")
        except OSError as e:
            raise UserError(f"cannot write {p} ({e.strerror}); choose another path") from None
        return p

    def _export_dialog(self, suffix: str) -> None:
        start = str((self.default_dir or Path.cwd()) / f"table{suffix}")
        path, _ = QFileDialog.getSaveFileName(self, "Export the sweep's table", start, FORMATS[suffix])
        if not path:
            return
        if not Path(path).suffix:
            path += suffix
        try:
            self.export(path)
        except UserError as e:
            self.failed.emit(str(e))
