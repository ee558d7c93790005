"""Where the window shows its sweeps (app/sweep_view.py, a tab each): in a dock below the plots when the window is
tall enough, as tabs beside the plots ("Plots", then one per sweep) when it is not.

Why two places: below the plots, a sweep's band plot and table need ~200 px to be read, and the plots above need
their own: on a 1366×768 laptop (a 728 px window) or at 1250×780 a dock of 27% left the loss and update plots a
line of ticks each, and the dock's band plot one of its own. Beside the plots, as a tab, each gets the whole
height and a click switches between them. A window shorter than `SHORT_PX` shows tabs; one resized across it
moves the sweeps over (a dock the user floated stays where it is).
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar, QTabWidget, QWidget

from training_core.runs import RunSet
from training_core.runs.sweep import Sweep

from .sweep_view import SweepView

DOCK_MIN_PX = 170  # the band plot still shows a few lines
DOCK_SHARE = 0.27  # of the window's height, when the dock opens (0.42 left the plots nothing)
SHORT_PX = 1000  # a shorter window shows the sweeps as tabs beside the plots (measured, 8 runs of the ring: a 27% dock
# left the loss and update plots < 30 px at 1366x728 and 1250x780; at 1440x900 it left them 104 and 126 px and its
# own band plot 40 px; at 1440x1000, 133, 170 and 67 px)
PLOTS_TAB = "Plots"


class SweepDock(QDockWidget):
    """The window's sweeps, a tab each: docked below the plots (it can float, or be closed and opened again), or,
    in a short window, tabs of `host`, which then holds the plots too, in their place in `window.splitter`."""

    failed = Signal(str)

    def __init__(self, runs: RunSet, window: QMainWindow) -> None:
        super().__init__("Sweeps", window)
        self.setObjectName("sweeps")
        self.runs = runs
        self.tabs = QTabWidget()
        self.tabs.setTabsClosable(True)
        self.tabs.tabCloseRequested.connect(lambda i: self._close(self.tabs, i))
        self.setWidget(self.tabs)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self)
        self._window = window
        self.host: QTabWidget | None = None  # the plots and the sweeps as tabs (a short window), else None
        self._placing = False
        window.installEventFilter(self)
        QTimer.singleShot(0, self._first_place)  # once the window has its size (before it is shown it has none)

    # -- where ---------------------------------------------------------------------------------------------
    @property
    def as_tabs(self) -> bool:
        """Whether the sweeps are tabs beside the plots (a short window), not in the dock below them."""
        return self.host is not None

    def place(self) -> None:
        """Tabs beside the plots in a window shorter than `SHORT_PX`, the dock below them in a taller one."""
        self._placing = False
        if self.isFloating() or not self.views():
            return
        short = self._window.height() < SHORT_PX
        if short and not self.as_tabs:
            self._to_tabs()
        elif not short and self.as_tabs:
            self._to_dock()

    def _first_place(self) -> None:
        self.place()
        if not self.as_tabs:
            self.fit_height()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if watched is self._window and event.type() == QEvent.Type.Resize and not self._placing:
            self._placing = True
            QTimer.singleShot(0, self.place)  # after the resize, not inside it
        return False

    def fit_height(self) -> None:
        """The dock's share of the window's height (`DOCK_SHARE`, at least `DOCK_MIN_PX`): the plots above keep
        the rest. Set before the window was laid out, the share was ignored and the dock took its size hint,
        which at 1250x780 left the loss and update plots a line of ticks each."""
        h = self._window.height()
        self._window.resizeDocks([self], [max(DOCK_MIN_PX, int(h * DOCK_SHARE))], Qt.Orientation.Vertical)

    def _to_tabs(self) -> None:
        splitter, plots = self._window.splitter, self._window.plots
        current = self.tabs.currentWidget()
        host = QTabWidget()
        host.setObjectName("plots-and-sweeps")
        host.setTabsClosable(True)
        host.setDocumentMode(True)  # no frame: the plots keep those pixels
        host.setSizePolicy(plots.sizePolicy())  # (the splitter's stretch factor lives there)
        splitter.replaceWidget(splitter.indexOf(plots), host)
        host.addTab(plots, PLOTS_TAB)
        host.setTabToolTip(0, "The runs' losses, metrics and updates (the sweeps' runs among them)")
        for side in (QTabBar.ButtonPosition.RightSide, QTabBar.ButtonPosition.LeftSide):
            host.tabBar().setTabButton(0, side, None)  # the plots never close
        host.tabCloseRequested.connect(lambda i: self._close(host, i))
        self.host = host
        self._move(self.tabs, host)
        self.hide()
        host.setCurrentWidget(current)

    def _to_dock(self) -> None:
        current = self.host.currentWidget()
        self._move(self.host, self.tabs)
        self._plots_back()
        if isinstance(current, SweepView):
            self.tabs.setCurrentWidget(current)
        self.show()
        self.fit_height()

    def _plots_back(self) -> None:
        """The plots in their own place in the window's splitter again, without a tab bar over them."""
        host, splitter, plots = self.host, self._window.splitter, self._window.plots
        host.removeTab(0)
        splitter.replaceWidget(splitter.indexOf(host), plots)
        plots.show()
        self.host = None
        host.deleteLater()

    @staticmethod
    def _move(source: QTabWidget, target: QTabWidget) -> None:
        """The sweep views of `source` (every tab but the plots), in order, to the end of `target`."""
        views = [(source.widget(i), source.tabText(i), source.tabToolTip(i)) for i in range(source.count())
                 if isinstance(source.widget(i), SweepView)]
        for view, text, tip in views:
            source.removeTab(source.indexOf(view))
            target.setTabToolTip(target.addTab(view, text), tip)

    # -- the sweeps --------------------------------------------------------------------------------------------
    @property
    def holder(self) -> QTabWidget:
        """The tab widget the sweep views are in now: the dock's, or `host` beside the plots."""
        return self.host if self.host is not None else self.tabs

    def show_sweep(self, sweep: Sweep) -> SweepView:
        """The sweep's tab (made the first time), brought to the front."""
        for view in self.views():
            if view.sweep.dir.resolve() == sweep.dir.resolve():
                self._front(view)
                return view
        view = SweepView(sweep, self.runs)
        view.failed.connect(self.failed.emit)
        holder = self.holder
        holder.setTabToolTip(holder.addTab(view, sweep.dir.name), str(sweep.dir))
        self._front(view)
        if not self.as_tabs:
            self.place()  # a short window: beside the plots at once, not after a dock's flash
        return view

    def _front(self, view: SweepView) -> None:
        self.holder.setCurrentWidget(view)
        if not self.as_tabs:
            self.show()

    def show_plots(self) -> None:
        """The plots to the front (the Plots tab, in a short window)."""
        if self.host is not None:
            self.host.setCurrentIndex(0)

    def views(self) -> list[SweepView]:
        holder = self.holder
        return [v for v in (holder.widget(i) for i in range(holder.count())) if isinstance(v, SweepView)]

    def _close(self, holder: QTabWidget, index: int) -> None:
        view: QWidget = holder.widget(index)
        if not isinstance(view, SweepView):
            return
        holder.removeTab(index)
        view.stop()
        view.deleteLater()
        if not self.views():
            if self.as_tabs:
                self._plots_back()
            self.hide()
