"""What the model produces now, next to the curves: generated points, digits, or a reconstruction.

The loss curves of a GAN say little about whether it works; the samples do. One page per sample kind
of the trainer (`points2d`, `images`, `matrix`) and a placeholder until the first samples arrive.
Ranges are fixed (points -3..3, images -1..1) so that a change between two refreshes is a change in the
model, not in the scaling.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from . import palette
from .canvas import CppPaint

POINT_RANGE = 3.0
GRID = 8  # images: up to GRID x GRID generated images


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
        for page in self.pages.values():
            self.addWidget(page)
        self._shown: dict[str, Any] | None = None
        self.setMinimumWidth(220)

    @property
    def kind(self) -> str | None:
        """The sample kind on show, or None while the placeholder is up."""
        w = self.currentWidget()
        return next((k for k, p in self.pages.items() if p is w), None)

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
        self.setCurrentWidget(page)

    def clear(self) -> None:
        self.show_samples(None)


class _PointsPage(CppPaint, pg.PlotWidget):
    def __init__(self) -> None:
        super().__init__(background=palette.BACKGROUND)
        p = self.getPlotItem()
        for name in ("left", "bottom"):
            p.getAxis(name).setPen(pg.mkPen(palette.FOREGROUND))
            p.getAxis(name).setTextPen(pg.mkPen(palette.FOREGROUND))
        p.setMenuEnabled(False)
        legend = p.addLegend(offset=(8, 8), labelTextColor=palette.FOREGROUND, brush=pg.mkBrush(255, 255, 255, 200))
        self.real = pg.ScatterPlotItem(size=3, pen=None, brush=pg.mkBrush(palette.REAL_POINTS + "80"), name="real")
        self.fake = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(palette.FAKE_POINTS + "c0"),
                                       name="generated")
        p.addItem(self.real)
        p.addItem(self.fake)
        legend.setParentItem(p.vb)
        p.setRange(xRange=(-POINT_RANGE, POINT_RANGE), yRange=(-POINT_RANGE, POINT_RANGE), padding=0)
        p.setAspectLocked(True)
        p.showGrid(x=True, y=True, alpha=palette.GRID_ALPHA)
        self.paint_in_cpp()

    def show_samples(self, s: dict[str, Any]) -> None:
        self.real.setData(pos=_xy(s.get("real")))
        self.fake.setData(pos=_xy(s.get("fake")))
        self.getPlotItem().setTitle(f"samples at step {s.get('step', '?')}", color=palette.FOREGROUND, size="10pt")


class _ImagesPage(CppPaint, pg.GraphicsLayoutWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setBackground(palette.BACKGROUND)
        self.title = self.addLabel("", color=palette.FOREGROUND, size="10pt")
        self.nextRow()
        self.view = self.addViewBox(lockAspect=True, enableMouse=False, invertY=True)
        self.image = pg.ImageItem(levels=palette.IMAGE_LEVELS)
        self.view.addItem(self.image)
        self.paint_in_cpp()

    def show_samples(self, s: dict[str, Any]) -> None:
        self.image.setImage(image_grid(s.get("fake")), levels=palette.IMAGE_LEVELS, autoLevels=False)
        self.view.autoRange(padding=0.02)
        self.title.setText(f"generated at step {s.get('step', '?')}", color=palette.FOREGROUND, size="10pt")


class _MatrixPage(CppPaint, pg.GraphicsLayoutWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setBackground(palette.BACKGROUND)
        self.title = self.addLabel("", colspan=2, color=palette.FOREGROUND, size="10pt")
        self.nextRow()
        self.captions = [self.addLabel(t, color=palette.FOREGROUND, size="9pt") for t in ("target", "reconstruction")]
        self.nextRow()
        cmap = pg.colormap.get(palette.MATRIX_COLORMAP)
        self.views, self.images = [], []
        for _ in range(2):
            v = self.addViewBox(lockAspect=True, enableMouse=False, invertY=True)
            img = pg.ImageItem(colorMap=cmap)
            v.addItem(img)
            self.views.append(v)
            self.images.append(img)
        self.paint_in_cpp()

    def show_samples(self, s: dict[str, Any]) -> None:
        target = np.asarray(s.get("target"), dtype=np.float64)
        rec = np.asarray(s.get("reconstruction"), dtype=np.float64)
        m = float(np.nanmax(np.abs(target))) if target.size else 1.0
        levels = (-m, m) if m > 0 else (-1.0, 1.0)  # one symmetric scale, so colours compare across both
        for v, img, a in zip(self.views, self.images, (target, rec)):
            img.setImage(a.T if a.ndim == 2 else a, levels=levels, autoLevels=False)  # ImageItem is x-major
            v.autoRange(padding=0.02)
        err = s.get("error")
        err_text = f"RMS error {float(err):.4g}" if err is not None else "RMS error ?"
        self.title.setText(f"{err_text} at step {s.get('step', '?')}", color=palette.FOREGROUND, size="10pt")


def _xy(a: Any) -> np.ndarray:
    a = np.asarray(a if a is not None else np.empty((0, 2)), dtype=np.float64)
    return a.reshape(-1, 2) if a.size else np.empty((0, 2))


def image_grid(images: Any, grid: int = GRID, gap: int = 1) -> np.ndarray:
    """Up to grid x grid images (n, h, w[, 1]) tiled into one x-major array (for ImageItem).

    Gaps are mid-grey (0 in [-1, 1]) so that images with a black background stay apart."""
    a = np.asarray(images, dtype=np.float32)
    if a.ndim == 4:
        a = a[..., 0]
    if a.ndim == 2:
        a = a[None]
    n, h, w = a.shape[0], a.shape[1], a.shape[2]
    n = min(n, grid * grid)
    cols = min(grid, max(n, 1))
    rows = max(1, -(-n // cols))
    out = np.full((rows * (h + gap) - gap, cols * (w + gap) - gap), 0.0, dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = a[i]
    return out.T
