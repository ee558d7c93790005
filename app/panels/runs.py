"""The Runs tab: the runs the plots show (the live one and any opened for review or comparison), how
they are drawn together, and the selected run's events and variables.

It only draws the window's `RunSet` (training_core/runs/collection.py) and edits it: tick a run to show
or hide it, double-click its name to relabel it (the legend and the exported figure use the label),
choose align by step or by wall time, colour by run or by phase, and the scopes the update plot
shows across runs. Below: the selected run's events (click one to centre the plots, and the samples,
on its step) and its variables with their last ‖ΔW‖/‖W‖, state, and the steps they were frozen.
Opened runs are read-only: nothing here trains them.
"""
from __future__ import annotations


from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QIcon, QPixmap, QShowEvent
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QSplitter,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from training_core import VarInfo, build_scope_tree
from training_core.base import events as E
from training_core.runs import (LIVE, RunEntry, RunSet, VariableStates, frozen_spans, marker_label, spans_text,
                                unrecorded_paths)

from ..plots import palette
from .scope_tree import UNTRAINED, UNTRAINED_TIP

KEY_ROLE = Qt.ItemDataRole.UserRole
X_ROLE = Qt.ItemDataRole.UserRole + 1
LISTED = (E.Start, E.Stop, E.Checkpoint, E.Warning, E.Error, E.Rejected)  # besides the plots' markers


def event_text(e: E.Event) -> str | None:
    """How the events list names an event (None: not listed, e.g. traces)."""
    label = marker_label(e)
    if label is not None:
        return label
    if isinstance(e, E.Start):
        return f"start ({e.device})" if e.device else "start"
    if isinstance(e, E.Stop):
        return f"stop: {e.reason}"
    if isinstance(e, E.Checkpoint):
        return "checkpoint"
    if isinstance(e, (E.Warning, E.Error, E.Rejected)):
        return f"{e.kind}: {e.message}"
    return None


def swatch(colour: str) -> QIcon:
    pix = QPixmap(12, 12)
    pix.fill(QColor(colour))
    return QIcon(pix)


class RunsPanel(QWidget):
    openRequested = Signal()
    eventChosen = Signal(float)  # where to centre the plots: a step (or seconds, aligned by time)
    runSelected = Signal(object)  # a run's key, or None

    def __init__(self, runs: RunSet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runs = runs
        self.open_button = QPushButton("Open Run…")
        self.open_button.setToolTip("Open finished (or growing) run directories, several at once (Ctrl+Shift+O)")
        self.open_button.clicked.connect(self.openRequested.emit)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Take the selected run out of the plots (its files stay)")
        self.remove_button.clicked.connect(self._remove)
        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.remove_button)
        top.addStretch(1)

        self.list = QTreeWidget()
        self.list.setHeaderLabels(["Run (double-click to rename)", "Steps", "Status"])
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.list.header().setStretchLastSection(False)
        self.list.itemChanged.connect(self._item_changed)
        self.list.itemSelectionChanged.connect(self._selected)

        self.align = QComboBox()
        self.align.addItem("step", "step")
        self.align.addItem("time since start", "time")
        self.align.currentIndexChanged.connect(lambda: self.runs.set_option(align=self.align.currentData()))
        self.colour_by = QComboBox()
        self.colour_by.addItem("colour by run", "run")
        self.colour_by.addItem("colour by phase", "phase")
        self.colour_by.setToolTip("Several runs: colour names the run and line style the phase (or variable), "
                                  "or the reverse")
        self.colour_by.currentIndexChanged.connect(lambda: self.runs.set_option(colour_by=self.colour_by.currentData()))
        self.scopes = QLineEdit()
        self.scopes.setPlaceholderText("all variables (or scopes, comma-separated)")
        self.scopes.setToolTip("The update plot shows only variables under these scopes, in every run")
        self.scopes.editingFinished.connect(
            lambda: self.runs.set_option(scopes=[s for s in self.scopes.text().split(",")]))
        options = QHBoxLayout()
        options.addWidget(QLabel("x by"), 0)
        options.addWidget(self.align, 1)
        options.addWidget(self.colour_by, 1)
        scope_row = QHBoxLayout()
        scope_row.addWidget(QLabel("Updates of:"))
        scope_row.addWidget(self.scopes, 1)

        self.events = QTreeWidget()
        self.events.setHeaderLabels(["Step", "Event"])
        self.events.setRootIsDecorated(False)
        self.events.setUniformRowHeights(True)
        self.events.itemClicked.connect(self._event_clicked)
        self.events.setToolTip("Click an event to centre the plots and the samples on its step")
        self.variables = QTreeWidget()
        self.variables.setHeaderLabels(["Scope / variable", "‖ΔW‖/‖W‖", "State", "Frozen at steps"])
        self.variables.setUniformRowHeights(True)

        head = QWidget()
        hv = QVBoxLayout(head)
        hv.setContentsMargins(0, 0, 0, 0)
        hv.addLayout(top)
        hv.addWidget(self.list, 1)
        hv.addLayout(options)
        hv.addLayout(scope_row)
        split = QSplitter(Qt.Orientation.Vertical)
        for w in (head, self.events, self.variables):
            split.addWidget(w)
        split.setSizes([260, 200, 260])
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

        self._filling = False
        self._shown_key: tuple | None = None
        self._states = VariableStates()
        runs.changed.connect(self.rebuild)
        self.rebuild()

    # -- the list of runs -------------------------------------------------------------------------------
    @property
    def selected_key(self) -> str | None:
        items = self.list.selectedItems()
        return items[0].data(0, KEY_ROLE) if items else None

    def rebuild(self) -> None:
        """Rows for the entries of the run set (after a change to it).

        A rename or a tick reaches here from inside the list's own `itemChanged`, on the very item Qt
        is still emitting for: clearing the list then would delete that item under Qt's feet (a
        segfault seen in CI). So rows are updated in place while the runs are the same ones, and
        only made anew when runs were opened or removed (never from `itemChanged`)."""
        keep = self.selected_key
        self._filling = True
        entries = self.runs.entries
        rows = [self.list.topLevelItem(i) for i in range(self.list.topLevelItemCount())]
        if [r.data(0, KEY_ROLE) for r in rows] != [e.key for e in entries]:
            self.list.clear()
            rows = []
            for e in entries:
                item = QTreeWidgetItem(["", "", ""])
                item.setData(0, KEY_ROLE, e.key)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                              | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEditable)
                self.list.addTopLevelItem(item)
                rows.append(item)
        for item, e in zip(rows, entries):
            if item.text(0) != e.label:
                item.setText(0, e.label)
            check = Qt.CheckState.Checked if e.visible else Qt.CheckState.Unchecked
            if item.checkState(0) != check:
                item.setCheckState(0, check)
            item.setIcon(0, swatch(palette.run_color(e.colour)))
            item.setToolTip(0, "the run this window trains" if e.live else e.key)
            self._fill_row(item, e)
        self._filling = False
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            if item.data(0, KEY_ROLE) == keep or (keep is None and i == 0):
                item.setSelected(True)
        self.list.resizeColumnToContents(1)
        self.list.resizeColumnToContents(2)
        self._shown_key = None
        self.refresh()

    def _fill_row(self, item: QTreeWidgetItem, e: RunEntry) -> None:
        d = e.data
        steps = f"{d.last_step:,}"
        if e.live:
            status = "live" if d.stop is None else f"live, {d.stop.reason}"
        else:
            status = "growing" if d.stop is None else d.stop.reason
        for col, text in ((1, steps), (2, status)):
            if item.text(col) != text:
                item.setText(col, text)

    def _item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._filling or column != 0:
            return
        key = item.data(0, KEY_ROLE)
        e = self.runs.get(key)
        if e is None:
            return
        visible = item.checkState(0) == Qt.CheckState.Checked
        label = item.text(0).strip()
        if label and label != e.label:
            self.runs.set_label(key, label)  # rebuilds the list
        elif not label:
            self._filling = True
            item.setText(0, e.label)
            self._filling = False
        if visible != e.visible:
            self.runs.set_visible(key, visible)

    def _remove(self) -> None:
        key = self.selected_key
        if key is not None and key != LIVE:
            self.runs.remove(key)

    def _selected(self) -> None:
        self._shown_key = None
        self.refresh()
        self.runSelected.emit(self.selected_key)

    # -- the selected run's events and variables ----------------------------------------------------------
    def refresh(self) -> None:
        """Redraw what changed: the rows' steps and status, the selected run's events and variables."""
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            e = self.runs.get(item.data(0, KEY_ROLE))
            if e is not None:
                self._fill_row(item, e)
        e = self.runs.get(self.selected_key) if self.selected_key else None
        self.remove_button.setEnabled(e is not None and not e.live)
        if not self.isVisible():  # the Train tab is in front: the selected run's details wait for showEvent
            return
        key = None if e is None else (e.key, id(e.data), e.data.version, self.runs.align)
        if key == self._shown_key:
            return
        self._shown_key = key
        self._fill_events(e)
        self._fill_variables(e)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        """Rebuilding the selected run's events and variables cost ~50 ms at 10^6 steps, twice a second
        while the run grows: only while the tab is in front (`refresh`)."""
        super().showEvent(event)
        self.refresh()

    def _fill_events(self, e: RunEntry | None) -> None:
        self.events.clear()
        if e is None:
            return
        t0 = e.data.start_time() if self.runs.align == "time" else None
        for ev in e.data.events:
            text = event_text(ev)
            if text is None:
                continue
            item = QTreeWidgetItem([f"{ev.marker_step:,}", text])
            item.setData(0, X_ROLE, float(ev.marker_step) if t0 is None else ev.time - t0)
            item.setToolTip(1, text)
            if ev.kind in ("nan", "leak", "error"):
                item.setForeground(1, QBrush(QColor(palette.ALARM_COLOR)))
            self.events.addTopLevelItem(item)
        self.events.resizeColumnToContents(0)

    def _event_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        self.eventChosen.emit(float(item.data(0, X_ROLE)))

    def _fill_variables(self, e: RunEntry | None) -> None:
        self.variables.clear()
        if e is None or not e.data.var_paths:
            return
        untrained = set(unrecorded_paths(e.data))  # (an EMA copy: listed, with no value)
        tree = build_scope_tree([VarInfo(p, (), "float32", True) for p in (*e.data.var_paths, *sorted(untrained))])
        self._states.set_tree(tree)
        self._states.update(e.data)
        states = self._states.states

        def add(parent: QTreeWidgetItem, node) -> None:
            for child in node.children.values():
                st = states.get(child.path)
                item = QTreeWidgetItem(parent, [child.name, _value(st), st.state if st else "", ""])
                item.setToolTip(2, st.tip if st else "")
                add(item, child)
            for v in node.variables:
                if v.path in untrained:
                    item = QTreeWidgetItem(parent, [v.path.rpartition("/")[2], "", UNTRAINED, ""])
                    item.setToolTip(0, f"{v.path} — {UNTRAINED_TIP}")
                    item.setToolTip(2, UNTRAINED_TIP)
                    continue
                st = states.get(v.path)
                spans = spans_text(frozen_spans(e.data, v.path))
                item = QTreeWidgetItem(parent, [v.path.rpartition("/")[2], _value(st), st.state if st else "", spans])
                item.setToolTip(0, v.path)
                item.setToolTip(3, spans)

        add(self.variables.invisibleRootItem(), tree)
        self.variables.expandAll()
        for col in (0, 1, 2):
            self.variables.resizeColumnToContents(col)


def _value(st) -> str:
    if st is None or st.value is None:
        return ""
    return "0" if st.value == 0 else f"{st.value:.2e}"



