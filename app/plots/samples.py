"""What the model produces, next to the curves: generated points, digits, or a reconstruction, at the
latest step or at any step the run recorded samples (`SampleBrowser`: a step slider over `samples/`).

The loss curves of a GAN say little about whether it works; the samples do. One page per sample kind
(`points2d`, `images`, `matrix`) and a placeholder until the first samples arrive. Ranges are fixed
(points -3..3, images -1..1, a matrix's colours symmetric around 0 with a colour bar) so that a change
between two refreshes is a change in the model, not in the scaling. Real data is shown beside what
the model made (grey points under the generated ones; real digits above generated ones), and a
factorization shows target, reconstruction and their difference at the same size.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from training_core.runs import RunData
from training_core.rundir.samples import list_samples, load_samples

from . import palette
from .canvas import CppPaint

POINT_RANGE = 3.0
SQUARE_EXTRA_PX = 12  # the title's height less the left axis's width: the points' view then about square
GRID = 8  # images: up to GRID x GRID generated images
LIST_EVERY_S = 1.0  # how often the browser looks for new files of a growing run
#: room right of the points' view for half of its last x tick label ("3" sits on the view's right edge): with
#: the layout's 1 px margin the label was cut by the window's edge (or hidden)
RIGHT_MARGIN_PX = 10


class SamplesView(QtWidgets.QStackedWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.placeholder = QtWidgets.QLabel("No samples yet.\nThey appear every few seconds while training.")
        self.placeholder.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.placeholder.setStyleSheet(f"color: {palette.FROZEN_GREY};")
        self.addWidget(self.placeholder)
        self.points = _PointsPage()
        self.images = _ImagesPage()
        self.matrix = _MatrixPage()
        self.pages = {"points2d": self.points, "images": self.images, "matrix": self.matrix}
        self._holders = {self.points: _SquareTop(self.points)}  # the points keep their -3..3 square
        for page in self.pages.values():
            self.addWidget(self._holders.get(page, page))
        self._shown: dict[str, Any] | None = None
        self.setMinimumWidth(200)

    @property
    def kind(self) -> str | None:
        """The sample kind on show, or None while the placeholder is up."""
        w = self.currentWidget()
        return next((k for k, p in self.pages.items() if self._holders.get(p, p) is w), None)

    def show_samples(self, samples: dict[str, Any] | None) -> None:
        """Draw `samples` unless they are the ones already shown (identity: the store keeps the dict)."""
        if samples is self._shown:
            return
        self._shown = samples
        page = None if samples is None else self.pages.get(samples.get("kind"))
        if page is None:
            self.placeholder.setText("No samples yet.\nThey appear every few seconds while training."
                                     if samples is None else f"No view for samples of kind {samples.get('kind')!r}.")
            self.setCurrentWidget(self.placeholder)
            return
        page.show_samples(samples)
        self.setCurrentWidget(self._holders.get(page, page))

    def clear(self) -> None:
        self.show_samples(None)


class _SquareTop(QtWidgets.QWidget):
    """Holds a view at the top, no taller than it is wide: an aspect-locked scatter in the tall, narrow
    samples column otherwise showed y from -9 to 9 with the ring's points in its middle third."""

    def __init__(self, child: QtWidgets.QWidget) -> None:
        super().__init__()
        self.child = child
        child.setParent(self)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        w, h = self.width(), self.height()
        self.child.setGeometry(0, 0, w, min(h, w + SQUARE_EXTRA_PX))


class SampleBrowser(QtWidgets.QWidget):
    """The samples view with a step slider over the samples a run recorded. At the right end the slider
    follows the run (the newest samples); moved back, it shows the samples recorded at that step."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = SamplesView()
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setToolTip("Samples recorded during the run: drag to see them at an earlier step")
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(self._slid)
        self.step_label = QtWidgets.QLabel("")
        self.step_label.setMinimumWidth(90)
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(4, 0, 4, 2)
        row.addWidget(QtWidgets.QLabel("Step"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.step_label)
        col = QtWidgets.QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.view, 1)
        col.addLayout(row)
        self.files: list[tuple[int, Path]] = []
        self._data: RunData | None = None
        self._dir: Path | None = None
        self._listed = -1e9
        self._loaded: dict[str, Any] | None = None
        self._loaded_path: Path | None = None

    @property
    def following(self) -> bool:
        return self.slider.value() >= self.slider.maximum()

    def show_run(self, data: RunData | None, run_dir: str | Path | None, now: float) -> None:
        """Show `data`'s samples (the live ones while following), listing `run_dir/samples` at most every
        LIST_EVERY_S seconds of `now` (and at once when the run changes)."""
        run_dir = Path(run_dir) if run_dir else None
        changed = data is not self._data or run_dir != self._dir
        if changed:
            self._data, self._dir, self._loaded, self._loaded_path = data, run_dir, None, None
            self._listed = -1e9
        if run_dir is not None and now - self._listed >= LIST_EVERY_S:
            self._listed = now
            self._set_files(list_samples(run_dir), keep_end=True)
        elif changed:
            self._set_files([], keep_end=True)
        self._show()

    def _set_files(self, files: list[tuple[int, Path]], keep_end: bool) -> None:
        if files == self.files:
            return
        following = self.following
        self.files = files
        with QtCore.QSignalBlocker(self.slider):
            self.slider.setRange(0, max(len(files) - 1, 0))
            if following and keep_end:
                self.slider.setValue(self.slider.maximum())
        self.slider.setEnabled(len(files) > 1)

    def _slid(self, _value: int) -> None:
        self._show()

    def _show(self) -> None:
        live = self._data.samples if self._data is not None else None
        if self.following and (live is not None or not self.files):
            newest_file = self.files[-1][0] if self.files else -1
            if live is not None and live.get("step", -1) >= newest_file:
                self.view.show_samples(live)
                self.step_label.setText(f"{live.get('step', 0):,} (latest)")
                return
        if not self.files:
            self.view.show_samples(live)
            self.step_label.setText("")
            return
        step, path = self.files[min(self.slider.value(), len(self.files) - 1)]
        if path != self._loaded_path:
            self._loaded_path, self._loaded = path, load_samples(path)
        self.view.show_samples(self._loaded)
        self.step_label.setText(f"{step:,}" + (" (latest)" if self.following else ""))

    def show_step(self, step: int) -> None:
        """Move to the last samples recorded at or before `step` (an event clicked in the Runs tab)."""
        if not self.files:
            return
        steps = [s for s, _ in self.files]
        i = max(0, int(np.searchsorted(steps, step, side="right")) - 1)
        self.slider.setValue(i)

    def clear(self) -> None:
        self._data, self._dir, self._loaded, self._loaded_path = None, None, None, None
        self._set_files([], keep_end=True)
        self.view.clear()
        self.step_label.setText("")


class _EdgeAxis(pg.AxisItem):
    """The points' x axis, whose labels may reach `RIGHT_MARGIN_PX` past the view's right edge: with the grid on,
    pyqtgraph drops a label that leaves the view's rect, so "3" at the edge of a -3..3 view was not drawn at all,
    or, the view a little wider, drawn against the window's edge."""

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802 - Qt override
        return super().boundingRect().adjusted(0, 0, RIGHT_MARGIN_PX, 0)


class _PointsPage(CppPaint, pg.PlotWidget):
    def __init__(self) -> None:
        super().__init__(background=palette.BACKGROUND, axisItems={"bottom": _EdgeAxis("bottom")})
        p = self.getPlotItem()
        for name in ("left", "bottom"):
            p.getAxis(name).setPen(pg.mkPen(palette.FOREGROUND))
            p.getAxis(name).setTextPen(pg.mkPen(palette.FOREGROUND))
        p.setMenuEnabled(False)
        left, top, _, bottom = p.layout.getContentsMargins()
        p.layout.setContentsMargins(left, top, RIGHT_MARGIN_PX, bottom)
        self.legend = legend = p.addLegend(offset=(8, 8), labelTextColor=palette.FOREGROUND,
                                           brush=pg.mkBrush(255, 255, 255, 200))
        self.real = pg.ScatterPlotItem(size=3, pen=None, brush=pg.mkBrush(palette.REAL_POINTS + "80"), name="real")
        self.fake = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(palette.FAKE_POINTS + "c0"),
                                       name="generated")
        p.addItem(self.real)
        p.addItem(self.fake)
        legend.setParentItem(p.vb)
        p.setRange(xRange=(-POINT_RANGE, POINT_RANGE), yRange=(-POINT_RANGE, POINT_RANGE), padding=0)
        p.setAspectLocked(True)
        p.showGrid(x=True, y=True, alpha=palette.GRID_ALPHA)
        p.vb.sigResized.connect(self._fit)
        self.paint_in_cpp()

    def _fit(self, *_args) -> None:
        """Keep all of -3..3 in view on both axes: with the aspect locked, a tall, narrow view kept the
        y range and cut x (points beyond x = 2.9 were hidden while y spanned -10..10)."""
        self.getPlotItem().vb.setRange(xRange=(-POINT_RANGE, POINT_RANGE), yRange=(-POINT_RANGE, POINT_RANGE),
                                       padding=0)

    def _entries(self, drawn: list) -> None:
        """The legend names what is drawn: a "real" entry over no real points (an experiment whose samples
        have only generated ones) said there was data to compare with."""
        if [sample.item for sample, _ in self.legend.items] != drawn:
            self.legend.clear()
            for item in drawn:
                self.legend.addItem(item, item.name())

    def show_samples(self, s: dict[str, Any]) -> None:
        real, fake = _xy(s.get("real")), _xy(s.get("fake"))
        self.real.setData(pos=real)
        self.fake.setData(pos=fake)
        self._entries([item for item, xy in ((self.real, real), (self.fake, fake)) if len(xy)])
        self.getPlotItem().setTitle(f"samples at step {_step(s)}", color=palette.FOREGROUND, size="9pt")


class _ImagesPage(CppPaint, pg.GraphicsLayoutWidget):
    """Generated images in a grid, with real ones from the data above them for comparison."""

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(palette.BACKGROUND)
        self.title = self.addLabel("", color=palette.FOREGROUND, size="9pt")
        self.nextRow()
        self.view = self.addViewBox(lockAspect=True, enableMouse=False, invertY=True)
        self.image = pg.ImageItem(levels=palette.IMAGE_LEVELS)  # generated
        self.real_image = pg.ImageItem(levels=palette.IMAGE_LEVELS)
        self.view.addItem(self.image)
        self.view.addItem(self.real_image)
        self.captions = [pg.TextItem(t, color=palette.FOREGROUND, anchor=(0, 1)) for t in ("real", "generated")]
        for c in self.captions:
            self.view.addItem(c)
        self._content: QtCore.QRectF | None = None  # what the view must show: the grids and their captions
        self.view.sigResized.connect(self._fit)
        self.paint_in_cpp()

    def _fit(self, *_args) -> None:
        """Show the grids at the view's top, the room a tall, narrow column leaves over below them: the
        aspect-locked view centred them, ~200 px of nothing between the heading and the "real" grid."""
        r, vb = self._content, self.view
        if r is None or vb.width() <= 0 or vb.height() <= 0:
            return
        pad_x, pad_y = 0.06 * r.width(), 0.06 * r.height()  # (autoRange's padding=0.06)
        x0, x1 = r.left() - pad_x, r.right() + pad_x
        caption = self.captions[0].boundingRect().height() if self.real_image.isVisible() else 0.0  # pixels
        y0 = r.top() - pad_y - caption * (x1 - x0) / vb.width()  # the "real" caption above the real grid
        tall = (x1 - x0) * vb.height() / vb.width()  # the data height the view's width gives at aspect 1
        if tall >= r.bottom() + pad_y - y0:
            vb.setRange(xRange=(x0, x1), yRange=(y0, y0 + tall), padding=0)
        else:  # wide: the grids' height sets the scale, centred across (as before)
            vb.autoRange(padding=0.06)

    def show_samples(self, s: dict[str, Any]) -> None:
        fake = image_grid(s.get("fake"))
        real = s.get("real")
        real_grid = image_grid(real, grid=GRID, rows=2) if real is not None and np.size(real) else None
        gap = real_grid.shape[1] // 2 + 2 if real_grid is not None else 0  # room for the "generated" caption
        y = 0
        if real_grid is not None:
            self.real_image.setImage(real_grid, levels=palette.IMAGE_LEVELS, autoLevels=False)
            self.real_image.setPos(0, 0)
            self.captions[0].setPos(0, 0)
            y = real_grid.shape[1] + gap
        self.real_image.setVisible(real_grid is not None)
        self.captions[0].setVisible(real_grid is not None)
        self.image.setImage(fake, levels=palette.IMAGE_LEVELS, autoLevels=False)
        self.image.setPos(0, y)
        self.captions[1].setPos(0, y)
        self.captions[1].setVisible(real_grid is not None)
        self._content = QtCore.QRectF(0, 0, fake.shape[0], y + fake.shape[1])
        self._fit()
        # short: a GraphicsLayout label is as wide as its text, and a long one pushed the images out of view
        self.title.setText(f"step {_step(s)}", color=palette.FOREGROUND, size="9pt")


class _MatrixPage(CppPaint, pg.GraphicsLayoutWidget):
    """Target, reconstruction and their difference as heat maps of the same size on one colour scale,
    with its colour bar; side by side when the view is wide, stacked when it is tall."""

    NAMES = ("target", "reconstruction", "difference")

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(palette.BACKGROUND)
        self.title = self.addLabel("", colspan=2, color=palette.FOREGROUND, size="9pt")
        self.nextRow()
        self.view = self.addViewBox(lockAspect=True, enableMouse=False, invertY=True)
        cmap = pg.colormap.get(palette.MATRIX_COLORMAP)
        self.images = [pg.ImageItem(colorMap=cmap) for _ in self.NAMES]
        self.captions = [pg.TextItem(n, color=palette.FOREGROUND, anchor=(0, 1)) for n in self.NAMES]
        for img, cap in zip(self.images, self.captions):
            self.view.addItem(img)
            self.view.addItem(cap)
        self.bar = pg.ColorBarItem(values=(-1, 1), colorMap=cmap, interactive=False, width=12,
                                   pen=palette.FOREGROUND)
        self.addItem(self.bar)
        self.bar.setImageItem(self.images)
        self._last: dict[str, Any] | None = None
        self.paint_in_cpp()

    def show_samples(self, s: dict[str, Any]) -> None:
        self._last = s
        target = np.asarray(s.get("target"), dtype=np.float64)
        rec = np.asarray(s.get("reconstruction"), dtype=np.float64)
        diff = target - rec if target.shape == rec.shape else np.zeros_like(target)
        m = float(np.nanmax(np.abs(target))) if target.size else 1.0
        levels = (-m, m) if m > 0 else (-1.0, 1.0)  # one symmetric scale, so colours compare across all three
        rows, cols = (target.shape if target.ndim == 2 else (1, 1))
        stacked = self.width() < self.height() * 1.2 * cols / max(rows, 1)
        gap = 0.25 * max(rows, cols)
        for k, (img, cap, a) in enumerate(zip(self.images, self.captions, (target, rec, diff))):
            img.setImage(a.T if a.ndim == 2 else a, levels=levels, autoLevels=False)  # ImageItem is x-major
            pos = (0.0, k * (rows + gap)) if stacked else (k * (cols + gap), 0.0)
            img.setPos(*pos)
            cap.setPos(*pos)
        self.bar.setLevels(levels)
        self.view.autoRange(padding=0.08)
        err = s.get("error")
        err_text = f"RMS error {float(err):.4g}" if err is not None else "RMS error ?"
        self.title.setText(f"{err_text}, step {_step(s)}", color=palette.FOREGROUND, size="9pt")

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        if getattr(self, "_last", None) is not None:
            self.show_samples(self._last)


def _step(s: dict[str, Any]) -> str:
    step = s.get("step")
    return f"{step:,}" if isinstance(step, (int, np.integer)) else "?"


def _xy(a: Any) -> np.ndarray:
    a = np.asarray(a if a is not None else np.empty((0, 2)), dtype=np.float64)
    return a.reshape(-1, 2) if a.size else np.empty((0, 2))


def image_grid(images: Any, grid: int = GRID, gap: int = 1, rows: int | None = None) -> np.ndarray:
    """Up to grid x grid images (n, h, w[, 1]) tiled into one x-major array (for ImageItem); `rows` caps
    the rows (real digits: two rows above the generated ones).

    Gaps are mid-grey (0 in [-1, 1]) so that images with a black background stay apart."""
    a = np.asarray(images, dtype=np.float32)
    if a.ndim == 4:
        a = a[..., 0]
    if a.ndim == 2:
        a = a[None]
    n, h, w = a.shape[0], a.shape[1], a.shape[2]
    n = min(n, grid * (rows or grid))
    cols = min(grid, max(n, 1))
    nrows = max(1, -(-n // cols))
    out = np.full((nrows * (h + gap) - gap, cols * (w + gap) - gap), 0.0, dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = a[i]
    return out.T
