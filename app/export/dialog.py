"""File → Export figure…: every figure option, with a preview drawn exactly as the file will be.

The preview is the export itself at screen scale (same `Figure.paint`, same point sizes), so what
the user tunes is what lands in the paper. It draws the runs the window shows (one, or several
overlaid), re-reads them when options change and, while a run trains, at most every two seconds;
all of it on the GUI thread from the runs' arrays, never from the trainer, so training does not
wait for it. When the chosen height leaves a plot too small to read, the preview says so and offers
the height that does not.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QSizePolicy, QSpinBox, QVBoxLayout, QWidget)
from superqt.utils import qdebounced, signals_blocked

from training_core import UserError
from training_core.figures import (FORMATS, PAPER_MARKERS, PLOT_NAMES, SIZE_PRESETS, FigureSpec, default_labels,
                                   format_from_path, from_units, to_units)

from .clipboard import copy_figure
from .dialog_options import bands_box, default_plots, marker_boxes, sync_phase_axes, x_axis_box
from .widgets import combo as _combo
from .widgets import dspin as _dspin
from .widgets import dialog_buttons, preview_image, show_error, version_of as _version_of
from .csv_export import write_csv
from .figure import Figure, recommended_height
from .render import write_pdf, write_png, write_svg

CUSTOM = "custom"


class ExportDialog(QDialog):
    def __init__(self, store_provider: Callable[[], object], spec: FigureSpec | None = None,
                 parent: QWidget | None = None, auto_height: bool = False, auto_plots: bool | None = None) -> None:
        """`auto_height`: until the user sets a height, use the one that leaves every plot readable (as the
        CLI does when --size gives none), instead of opening on a warning about the default's. `auto_plots`
        (default: when no spec is given): until the user ticks or unticks a plot, tick the plots the runs have
        (their metrics too: dialog_options.py)."""
        super().__init__(parent)
        self._auto_height = auto_height
        self._auto_plots = spec is None if auto_plots is None else auto_plots
        self.setWindowTitle("Export figure")
        self.setObjectName("exportDialog")
        self._store_provider = store_provider
        self._units = "in"
        self._version = None
        self.preview_image: QImage | None = None
        self._preview_later = qdebounced(self.refresh_preview, timeout=120, parent=self)  # one render per burst
        self._build(spec or FigureSpec())
        self._live = QTimer(self, interval=2000, timeout=self._refresh_if_data_moved)
        self._live.start()
        self.schedule_preview()

    # -- widgets ---------------------------------------------------------------------------------
    def _build(self, spec: FigureSpec) -> None:
        """The options on the left (what is drawn, the page, the looks, the axis labels), the preview on the
        right, the buttons below; then every option redraws the preview."""
        form = QFormLayout()
        self._build_content(form, spec)
        self._build_page(form, spec)
        self._build_looks(form, spec)
        labels = self._build_axis_labels(spec)
        self._build_preview()
        buttons = self._build_buttons()
        self._lay_out(form, labels, buttons)
        self._connect(spec)

    def _build_content(self, form: QFormLayout, spec: FigureSpec) -> None:
        """What is drawn: which plots, which update norm, the loss axis, colours, x, the variables."""
        self.plot_boxes = {name: QCheckBox(name) for name in PLOT_NAMES}
        plots_row = QHBoxLayout()
        for name, box in self.plot_boxes.items():
            box.setChecked(name in spec.plots)
            plots_row.addWidget(box)
        self.update_kind = QComboBox()
        self.update_kind.addItem("relative ‖ΔW‖/‖W‖", "update_ratio")
        self.update_kind.addItem("absolute ‖ΔW‖", "update_norm")
        self.update_kind.setCurrentIndex(0 if spec.update_kind == "update_ratio" else 1)
        plots_row.addWidget(self.update_kind)
        form.addRow("Plots", plots_row)
        self.log_losses = QCheckBox("loss on a log axis")
        self.log_losses.setChecked(spec.log_losses)
        self.colour_by = QComboBox()
        self.colour_by.addItem("colour by run", "run")
        self.colour_by.addItem("colour by phase", "phase")
        self.colour_by.setCurrentIndex(0 if spec.colour_by == "run" else 1)
        self.colour_by.setToolTip("Several runs: colour names the run and line style the phase, or the reverse")
        self.x_axis = x_axis_box(spec)
        row = QHBoxLayout()
        for w in (self.log_losses, self.colour_by, self.x_axis):
            row.addWidget(w)
        form.addRow("", row)
        self.variables = QLineEdit(", ".join(spec.variables or []))
        self.variables.setPlaceholderText("all variables (or scopes, comma-separated)")
        form.addRow("Variables", self.variables)

    def _build_page(self, form: QFormLayout, spec: FigureSpec) -> None:
        """The page: layout, file format, size (a preset or width and height, in inches or mm), DPI."""
        self.layout_box = _combo(["auto", "row", "column"], spec.layout)
        form.addRow("Layout", self.layout_box)
        self.format_box = _combo([f.upper() for f in FORMATS], spec.format.upper())
        form.addRow("Format", self.format_box)
        self.preset = _combo(list(SIZE_PRESETS) + [CUSTOM], CUSTOM)
        self.units = _combo(["in", "mm"], "in")
        row = QHBoxLayout()
        row.addWidget(self.preset, 1)
        row.addWidget(self.units)
        form.addRow("Size", row)
        self.width_box, self.height_box = _dspin(0.5, 40, 0.01, spec.width_in), _dspin(0.5, 40, 0.01, spec.height_in)
        row = QHBoxLayout()
        row.addWidget(QLabel("width"))
        row.addWidget(self.width_box)
        row.addWidget(QLabel("height"))
        row.addWidget(self.height_box)
        form.addRow("", row)
        self.dpi = QSpinBox(minimum=10, maximum=2400, value=spec.dpi, singleStep=50)
        form.addRow("DPI (PNG)", self.dpi)

    def _build_looks(self, form: QFormLayout, spec: FigureSpec) -> None:
        """The looks: theme, font size, smoothing, and what is shown besides the curves."""
        self.theme = QComboBox()
        self.theme.addItem("paper (white, colour-blind safe)", "paper")
        self.theme.addItem("as on screen (dark)", "screen")
        self.theme.setCurrentIndex(0 if spec.theme == "paper" else 1)
        form.addRow("Theme", self.theme)
        self.font_size = _dspin(3, 72, 0.5, spec.font_size, suffix=" pt")
        form.addRow("Font size", self.font_size)
        self.smoothing = _dspin(0.0, 0.999, 0.05, spec.smoothing, decimals=3)  # the plots' slider goes to 0.999
        form.addRow("Smoothing", self.smoothing)
        self.bands = bands_box(spec)
        form.addRow("Seeds", self.bands)
        self.raw, self.markers = QCheckBox("raw curves"), QCheckBox("event markers")
        self.legend, self.panel_labels = QCheckBox("legend"), QCheckBox("(a), (b) labels")
        for box, on in ((self.raw, spec.raw), (self.markers, bool(spec.markers)), (self.legend, spec.legend),
                        (self.panel_labels, spec.panel_labels)):
            box.setChecked(on)
        row = QHBoxLayout()
        for box in (self.raw, self.markers, self.legend, self.panel_labels):
            row.addWidget(box)
        form.addRow("Show", row)
        kinds, self.marker_boxes = marker_boxes(spec if spec.markers else spec.copy(markers=PAPER_MARKERS))
        self.markers.toggled.connect(kinds.setEnabled)
        kinds.setEnabled(self.markers.isChecked())
        form.addRow("Markers", kinds)

    def _build_axis_labels(self, spec: FigureSpec) -> QGroupBox:
        """The "Axis labels" group: an x and a y label per plot, the defaults as placeholders."""
        labels = QGroupBox("Axis labels")
        lform = QFormLayout(labels)
        self.label_edits: dict[str, tuple[QLineEdit, QLineEdit]] = {}
        for name in PLOT_NAMES:
            x, y = spec.labels.get(name, ("", ""))
            ex, ey = QLineEdit(x), QLineEdit(y)
            self.label_edits[name] = (ex, ey)
            row = QHBoxLayout()
            row.addWidget(ex)
            row.addWidget(ey, 2)
            lform.addRow(name, row)
        self._update_label_placeholders()
        return labels

    def _build_preview(self) -> None:
        """The preview, the line under it, the error, and the height warning with its fix."""
        self.preview = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.preview.setObjectName("exportPreview")
        self.preview.setMinimumSize(520, 320)
        self.preview.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.preview.setStyleSheet("QLabel { background: #808080; }")
        self.info = QLabel()
        self.error = QLabel()
        self.error.setStyleSheet("color: #d55e00")
        self.error.setWordWrap(True)
        self.warning = QLabel()
        self.warning.setObjectName("exportHeightWarning")
        self.warning.setStyleSheet("color: #b35900")
        self.warning.setWordWrap(True)
        self.fix_height = QPushButton("Use that height")
        self.fix_height.clicked.connect(self._use_recommended_height)
        self.fix_height.hide()
        self._recommended: float | None = None

    def _build_buttons(self) -> QDialogButtonBox:
        """Export…, Copy, Export CSV… and Close."""
        buttons, self.export_button, self.copy_button, self.csv_button = dialog_buttons(self)
        self.export_button.clicked.connect(self._ask_export)
        self.copy_button.clicked.connect(self._copy)
        self.csv_button.clicked.connect(self._ask_csv)
        return buttons

    def _lay_out(self, form: QFormLayout, labels: QGroupBox, buttons: QDialogButtonBox) -> None:
        """Options left, preview right, buttons below."""
        left = QVBoxLayout()
        left.addLayout(form)
        left.addWidget(labels)
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.preview, 1)
        right.addWidget(self.info)
        warn_row = QHBoxLayout()
        warn_row.addWidget(self.warning, 1)
        warn_row.addWidget(self.fix_height)
        right.addLayout(warn_row)
        right.addWidget(self.error)
        top = QHBoxLayout()
        top.addLayout(left)
        top.addLayout(right, 1)
        outer = QVBoxLayout(self)
        outer.addLayout(top, 1)
        outer.addWidget(buttons)

    def _connect(self, spec: FigureSpec) -> None:
        """Every option redraws the preview; the size's preset, units, width and height keep each other in step."""
        for w in [*self.plot_boxes.values(), *self.marker_boxes.values(), self.raw, self.markers, self.legend,
                  self.panel_labels, self.log_losses]:
            w.toggled.connect(self.schedule_preview)
        for box in self.plot_boxes.values():  # the user's choice of plots from now on
            box.toggled.connect(self._plots_chosen)
        for w in (self.update_kind, self.layout_box, self.format_box, self.theme, self.colour_by, self.x_axis,
                  self.bands):
            w.currentIndexChanged.connect(self.schedule_preview)
        for w in (self.width_box, self.height_box, self.font_size, self.smoothing, self.dpi):
            w.valueChanged.connect(self.schedule_preview)
        for w in [self.variables] + [e for pair in self.label_edits.values() for e in pair]:
            w.textChanged.connect(self.schedule_preview)
        self.update_kind.currentIndexChanged.connect(self._update_label_placeholders)
        self.preset.currentIndexChanged.connect(self._preset_chosen)
        self.units.currentIndexChanged.connect(self._units_changed)
        self.width_box.valueChanged.connect(self._width_edited)
        self.height_box.valueChanged.connect(self._height_edited)
        self.format_box.currentIndexChanged.connect(lambda: self.dpi.setEnabled(self.format_box.currentText() == "PNG"))
        self.dpi.setEnabled(spec.format == "png")
        self._width_edited()

    def _update_label_placeholders(self) -> None:
        kind = self.update_kind.currentData()
        for name, (ex, ey) in self.label_edits.items():
            x, y = default_labels(name, kind)
            ex.setPlaceholderText(x)
            ey.setPlaceholderText(y)

    def _preset_chosen(self) -> None:
        inches = SIZE_PRESETS.get(self.preset.currentText())
        if inches is not None:
            self.width_box.setValue(to_units(inches, self._units))

    def _width_edited(self) -> None:
        w_in = from_units(self.width_box.value(), self._units)
        match = next((k for k, v in SIZE_PRESETS.items() if abs(v - w_in) < 0.005), CUSTOM)
        if self.preset.currentText() != match:
            with signals_blocked(self.preset):
                self.preset.setCurrentText(match)

    def _plots_chosen(self) -> None:
        self._auto_plots = False

    def _follow_default_plots(self) -> None:
        """Offer each phase's steps as an x axis; until the user picks plots, tick what the runs have (metrics
        appear some seconds into a live run)."""
        with signals_blocked(self.x_axis):
            sync_phase_axes(self.x_axis, self._store_provider())
        if not self._auto_plots:
            return
        wanted = default_plots(self._store_provider())
        for name, box in self.plot_boxes.items():
            if box.isChecked() != (name in wanted):
                with signals_blocked(box):
                    box.setChecked(name in wanted)

    def _height_edited(self) -> None:
        self._auto_height = False  # the user's height from now on, warned about if too small

    def _units_changed(self) -> None:
        new = self.units.currentText()
        w, h = (from_units(b.value(), self._units) for b in (self.width_box, self.height_box))
        self._units = new
        for box, inches in ((self.width_box, w), (self.height_box, h)):
            with signals_blocked(box):
                box.setRange(to_units(0.5, new), to_units(40, new))
                box.setDecimals(1 if new == "mm" else 2)
                box.setSingleStep(1.0 if new == "mm" else 0.05)
                box.setValue(to_units(inches, new))
        self.schedule_preview()

    # -- the spec --------------------------------------------------------------------------------
    def spec(self) -> FigureSpec:
        """The figure the widgets describe (validated; raises UserError)."""
        variables = [s.strip() for s in self.variables.text().split(",") if s.strip()]
        spec = FigureSpec(
            plots=[n for n, b in self.plot_boxes.items() if b.isChecked()],
            width_in=from_units(self.width_box.value(), self._units),
            height_in=from_units(self.height_box.value(), self._units),
            format=self.format_box.currentText().lower(), dpi=self.dpi.value(), theme=self.theme.currentData(),
            font_size=self.font_size.value(), raw=self.raw.isChecked(), smoothing=self.smoothing.value(),
            markers=tuple(k for k, b in self.marker_boxes.items() if b.isChecked()) if self.markers.isChecked() else (),
            bands=self.bands.currentData(), legend=self.legend.isChecked(),
            panel_labels=self.panel_labels.isChecked(), update_kind=self.update_kind.currentData(),
            variables=variables or None, layout=self.layout_box.currentText(), colour_by=self.colour_by.currentData(),
            x_axis=self.x_axis.currentData(), log_losses=self.log_losses.isChecked())
        for name, (ex, ey) in self.label_edits.items():
            if ex.text() or ey.text():  # an empty one keeps its default (which follows the x axis)
                spec.labels[name] = (ex.text() or None, ey.text() or None)
        return spec.validate()

    def figure(self) -> Figure:
        return Figure(self._store_provider(), self.spec())

    # -- preview ---------------------------------------------------------------------------------
    def schedule_preview(self) -> None:
        self._preview_later()

    def _refresh_if_data_moved(self) -> None:
        if self.isVisible() and _version_of(self._store_provider()) != self._version:
            self.refresh_preview()

    def refresh_preview(self) -> None:
        self._follow_default_plots()
        try:
            fig = self.figure()
        except UserError as e:
            self.error.setText(str(e))
            return
        self.error.setText("")
        self._version = _version_of(self._store_provider())
        problem = fig.check()
        self._recommended = recommended_height(fig.spec, fig.data) if problem else None
        if problem and self._auto_height and self._recommended is not None:
            with signals_blocked(self.height_box):
                self.height_box.setValue(to_units(self._recommended, self._units))
            fig = self.figure()
            problem = fig.check()
            self._recommended = recommended_height(fig.spec, fig.data) if problem else None
        styles = "; ".join(pd.problem for pd in fig.data.plots if pd.problem)
        self.warning.setText("\n".join(t for t in (f"Too small: {problem}" if problem else "", styles) if t))
        self.fix_height.setVisible(bool(problem))
        img = preview_image(fig, self.preview.width() - 16, self.preview.height() - 16, self.devicePixelRatioF())
        self.preview_image = img
        self.preview.setPixmap(QPixmap.fromImage(img))
        spec = fig.spec
        w, h = spec.width_in, spec.height_in
        size = f"{w:.2f} × {h:.2f} in ({w * 25.4:.0f} × {h * 25.4:.0f} mm)"
        px = f", {round(w * spec.dpi)} × {round(h * spec.dpi)} px" if spec.format == "png" else ""
        self.info.setText(f"{size}, {spec.format.upper()}{px}; data to step {fig.data.last_step}")

    def _use_recommended_height(self) -> None:
        if self._recommended is not None:
            self.height_box.setValue(to_units(self._recommended, self._units))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.schedule_preview()

    # -- actions ---------------------------------------------------------------------------------
    def export_to(self, path: str | Path) -> Path:
        """Write the figure to `path`; a known extension picks the format, none gets the chosen one's."""
        path = Path(path)
        try:
            fmt = format_from_path(str(path))
            self.format_box.setCurrentText(fmt.upper())
        except UserError:
            fmt = self.format_box.currentText().lower()
            path = path.with_name(path.name + "." + fmt)
        fig = self.figure()
        {"png": lambda: write_png(fig, path, fig.spec.dpi), "svg": lambda: write_svg(fig, path),
         "pdf": lambda: write_pdf(fig, path)}[fmt]()
        return path

    def export_csv_to(self, path: str | Path) -> int:
        return write_csv(self.figure().data, path)

    def _ask_export(self) -> None:
        fmt = self.format_box.currentText().lower()
        path, _ = QFileDialog.getSaveFileName(self, "Export figure", f"figure.{fmt}",
                                              f"{fmt.upper()} (*.{fmt});;All files (*)")
        if path:
            self._guard(lambda: self.info.setText(f"wrote {self.export_to(path)}"))

    def _ask_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export data as CSV", "figure.csv", "CSV (*.csv)")
        if path:
            self._guard(lambda: self.info.setText(f"wrote {path} ({self.export_csv_to(path)} rows)"))

    def _copy(self) -> None:
        self._guard(lambda: (copy_figure(self.figure()), self.info.setText("figure copied to the clipboard")))

    def _guard(self, fn: Callable[[], object]) -> None:
        try:
            fn()
        except UserError as e:
            show_error(self, str(e))
