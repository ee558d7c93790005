"""The scope tree: every scope and variable of the experiment, with a tri-state checkbox that freezes it.

Ticking a scope freezes everything under it. The tree turns its check states into the shortest list
of scope prefixes that covers exactly the ticked variables and emits it whole (`SetFreeze` replaces
the freeze set, so a replay needs no history). Qt's auto-tristate changes one item per child, so
those changes are coalesced into a single emission (superqt's `qdebounced` with no delay: one
emission per pass of the event loop).

The value and state columns only draw `VarState`s (training_core/runs/variables.py), derived from
what the core measured, not from what was asked: a row reads "frozen" once the core reports it.

A scope whose variables no phase trains (an EMA copy a hand-written loop assigns itself) has no checkbox
and reads "untrained": a `start_run` loop refuses to freeze it (it cannot stop the loop's own assigns), so a
tick could only be refused. Statistics (non-trainable variables a forward pass updates) stay tickable in an
experiment run, which restores them; a loop's read "untrained" too (`set_tree(stats_freezable=False)`).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget
from superqt.utils import qdebounced

from training_core import ScopeNode, in_scope
from training_core.base.scopes import untrained_paths
from training_core.runs import STATES, VarState

#: what matters while training first: a narrow panel scrolls shape and parameter counts out of view, not
#: the state (at the default width the State column used to sit beyond the right edge)
NAME, UPDATE, STATE, SHAPE, PARAMS = range(5)
PATH_ROLE = Qt.ItemDataRole.UserRole
IS_VAR_ROLE = Qt.ItemDataRole.UserRole + 1
FROZEN_COLOR = QColor("#2f6fb5")
LEAK_COLOR = QColor("#c0392b")
QUIET_COLOR = QColor("#7f7f7f")  # "no update": not frozen, just not moving
UNTRAINED, UNTRAINED_TIP = "untrained", "no phase trains it: nothing to freeze (a loop's own assigns, an EMA's, a layer's statistics, go on)"
EAGER_ROWS = 100  # trees up to this many rows redraw every row's values; larger ones only the rows on screen


def _row(name: str, shape: str, params: str) -> list[str]:
    row = [""] * 5
    row[NAME], row[SHAPE], row[PARAMS] = name, shape, params
    return row


def minimal_scopes(checked: Iterable[str]) -> tuple[str, ...]:
    """Drop scopes already covered by another one in the list (keeps order)."""
    items = list(dict.fromkeys(checked))
    return tuple(s for s in items if not any(o != s and in_scope(s, o) for o in items))


class ScopeTree(QWidget):
    freezeChanged = Signal(object)  # tuple[str, ...]: the whole new freeze set
    variableSelected = Signal(object)  # str | None
    pathSelected = Signal(object)  # str | None: the selected scope or variable (the heat map draws its curves)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter scopes and variables…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self._apply_filter)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(5)
        self.tree.setHeaderLabels(["Scope / variable", "‖ΔW‖/‖W‖", "State", "Shape", "Params"])
        self.tree.headerItem().setToolTip(NAME, "Tick a scope or variable to freeze it (live while training)")
        self.tree.headerItem().setToolTip(UPDATE, "Latest ||ΔW|| / ||W|| (largest under a scope)")
        self.tree.headerItem().setToolTip(STATE, "frozen: the core reports it frozen; LEAK: frozen but it moved "
                                                  "(gate method); no update: not frozen, but its update is exactly 0")
        for col in (PARAMS, UPDATE):
            self.tree.headerItem().setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        # The name column takes the room the others leave, but never less than its names need: a
        # narrow panel gets a horizontal scrollbar rather than names squeezed to nothing.
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Interactive)
        # Not ResizeToContents: that re-measures every row on each value change (~3 ms per refresh, on
        # the GUI thread, while the report reader waits for the GIL). Widths are set once per tree.
        for col in (SHAPE, PARAMS, UPDATE, STATE):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(36)
        header.sectionResized.connect(lambda col, *_: None if col == NAME else self._fit_name())
        self._name_min = 110
        self.tree.viewport().installEventFilter(self)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.itemSelectionChanged.connect(self._on_selection)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.tree)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._var_items: dict[str, QTreeWidgetItem] = {}
        self._states: Mapping[str, VarState] = {}
        self._untrained: set[str] = set()  # rows no phase trains (`set_tree`)
        self._fixed = ""  # why no row can be frozen here (`set_tree`)
        self._drawn: dict[str, tuple[str, str, str]] = {}  # path -> (value text, state, tip) on its row now
        self.tree.verticalScrollBar().valueChanged.connect(self._draw_on_screen)
        self.tree.itemExpanded.connect(self._draw_on_screen)
        self._auto_expand, self._fitting = True, False  # the tree expands to fit its height (`_expand_to_fit`)
        self.tree.itemExpanded.connect(self._user_expanded)
        self.tree.itemCollapsed.connect(self._user_expanded)
        self._emitted: tuple[str, ...] = ()
        self._quiet = False  # programmatic check changes: not the user's, nothing to emit
        self._emit_soon = qdebounced(self._emit_if_changed, timeout=0, parent=self)
        self.set_placeholder("Loading TensorFlow…")

    # -- building --------------------------------------------------------------------------------------
    def set_placeholder(self, text: str) -> None:
        """A single grey row while there is no experiment to show (loading, or it failed)."""
        self._quiet = True
        self.tree.clear()
        self._items.clear()
        self._var_items.clear()
        self._drawn.clear()
        item = QTreeWidgetItem([text])
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        self.tree.addTopLevelItem(item)
        self.tree.setFirstColumnSpanned(0, self.tree.rootIndex(), True)
        self._quiet = False

    def set_tree(self, root: ScopeNode, frozen: Sequence[str] = (), trained: Sequence[Sequence[str]] | None = None,
                 stats: Sequence[str] = (), stats_freezable: bool = True, fixed: str = "") -> None:
        """Show `root`'s scopes and variables with `frozen` ticked, without emitting `freezeChanged`.

        `trained`: the variables each phase trains (None, or no phase listing any: every row is tickable);
        a row with none of them nor a statistic (`stats`, or a non-trainable variable) under it has no checkbox;
        with `stats_freezable=False` (a `start_run` loop refuses to freeze what no phase trains) statistics neither.
        `fixed`: why nothing can be frozen from here (a `fit()` run): no row has a checkbox, and each says why."""
        self._fixed = fixed
        kept = {p for paths in trained or () for p in paths} | (set(stats) if stats_freezable else set())
        self._untrained = untrained_paths(root, kept, stats_freezable) if kept else set()
        self._quiet = True
        self.tree.clear()
        self._items.clear()
        self._var_items.clear()
        self._drawn.clear()
        self._add_children(self.tree.invisibleRootItem(), root)
        self._auto_expand = True
        self._expand_to_fit()
        self._fit_columns()
        self.tree.resizeColumnToContents(NAME)
        self._name_min = min(max(self.tree.columnWidth(NAME), 110), 260)
        self._fit_name()
        self._quiet = False
        self.set_frozen(frozen)
        self._apply_filter(self.filter_edit.text())

    def _expand_to_fit(self) -> None:
        """Every variable if they all fit in view (and there are at most 40 rows), else the models and their
        layers, else the models alone: whatever is shown, every model is in view without scrolling. Expanded
        whole, a DCGAN's 17 rows on a 1366x768 screen put the discriminator, what one usually freezes, below
        the fold."""
        if not self._items:
            return
        rows = max(self.tree.viewport().height() // max(self.tree.sizeHintForRow(0), 1), 1) \
            if self.tree.isVisible() else 40
        top = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        self._fitting = True
        if len(self._items) <= min(rows, 40):
            self.tree.expandAll()
        elif len(top) + sum(t.childCount() for t in top) <= rows:
            self.tree.expandToDepth(0)
        else:
            self.tree.collapseAll()
        self._fitting = False

    def _user_expanded(self, *_args) -> None:
        """The user opened or closed a scope: what is expanded is theirs from now on (until the next tree)."""
        if not self._fitting and not self._quiet:
            self._auto_expand = False

    def _add_children(self, parent: QTreeWidgetItem, node: ScopeNode, boxed: bool = False) -> None:
        """`boxed`: the parent is a tickable scope, whose tri-state needs a state on every child (an untrained
        child under it keeps one the user cannot click: it follows the scope)."""
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        for child in node.children.values():
            item = QTreeWidgetItem(parent, _row(child.name, "", f"{child.params():,}"))
            item.setData(NAME, PATH_ROLE, child.path)
            item.setData(NAME, IS_VAR_ROLE, False)
            self._boxed(item, child.path, boxed, Qt.ItemFlag.ItemIsAutoTristate)
            why = self._fixed or (UNTRAINED_TIP if child.path in self._untrained else "tick to freeze everything under it")
            item.setToolTip(NAME, f"{child.path}/  — {why}")
            item.setTextAlignment(PARAMS, right)
            item.setTextAlignment(UPDATE, right)
            self._items[child.path] = item
            self._add_children(item, child, item.data(NAME, Qt.ItemDataRole.CheckStateRole) is not None)
        for v in node.variables:
            shape = "×".join(str(d) for d in v.shape) or "scalar"
            item = QTreeWidgetItem(parent, _row(v.path.split("/")[-1], shape, f"{v.size:,}"))
            item.setData(NAME, PATH_ROLE, v.path)
            item.setData(NAME, IS_VAR_ROLE, True)
            self._boxed(item, v.path, boxed)
            item.setToolTip(NAME, f"{v.path} ({v.dtype}{'' if v.trainable else ', not trainable'})"
                            + (f" — {self._fixed or UNTRAINED_TIP}" if v.path in self._untrained or self._fixed else ""))
            item.setTextAlignment(PARAMS, right)
            item.setTextAlignment(UPDATE, right)
            self._items[v.path] = item
            self._var_items[v.path] = item

    def _boxed(self, item: QTreeWidgetItem, path: str, boxed: bool, extra: Qt.ItemFlag = Qt.ItemFlag.NoItemFlags) -> None:
        """A checkbox on a row something trains; none on an untrained one (unless its scope's tri-state needs it)."""
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if self._fixed:
            item.setFlags(flags)
            return
        if path not in self._untrained:
            item.setFlags(flags | Qt.ItemFlag.ItemIsUserCheckable | extra)
        else:
            item.setFlags(flags | (extra if boxed else Qt.ItemFlag.NoItemFlags))
            item.setText(STATE, UNTRAINED)
            item.setForeground(STATE, QBrush(QUIET_COLOR))
            item.setToolTip(STATE, UNTRAINED_TIP)
            if not boxed:
                return
        item.setCheckState(NAME, Qt.CheckState.Unchecked)

    def _fit_columns(self) -> None:
        """Shape and parameter counts are fixed per tree; the update and state columns are as wide as the
        widest text they can show, so values that change while training never resize a column."""
        fm = self.tree.fontMetrics()
        header = self.tree.header()
        pad = 2 * self.tree.style().pixelMetric(self.tree.style().PixelMetric.PM_FocusFrameHMargin) + 12
        for col in (SHAPE, PARAMS):
            self.tree.resizeColumnToContents(col)
        for col, widest in ((UPDATE, ("8.88e-88",)), (STATE, (*STATES, UNTRAINED))):
            width = max(max(fm.horizontalAdvance(t) for t in widest) + pad, header.sectionSizeHint(col))
            self.tree.setColumnWidth(col, width)

    def _fit_name(self) -> None:
        # the name takes what the value and state columns leave (shape and parameters may scroll)
        others = sum(self.tree.columnWidth(c) for c in (UPDATE, STATE))
        room = self.tree.viewport().width() - others - 1
        extra = sum(self.tree.columnWidth(c) for c in (SHAPE, PARAMS))
        width = room - extra if room - extra >= self._name_min else max(room, 80)
        if self.tree.columnWidth(NAME) != width:
            self.tree.setColumnWidth(NAME, width)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize:  # the viewport: panel resized, vertical scrollbar came or went
            if self._auto_expand and event.size().height() != event.oldSize().height():
                self._expand_to_fit()  # a window made smaller (or larger) after the tree was built
            self._fit_name()
            self._draw_on_screen()
        return False

    # -- freezing --------------------------------------------------------------------------------------
    def set_frozen(self, scopes: Sequence[str]) -> None:
        """Tick exactly the variables under `scopes` (programmatic: no `freezeChanged`)."""
        self._quiet = True
        for path, item in self._var_items.items():
            if item.data(NAME, Qt.ItemDataRole.CheckStateRole) is None:
                continue  # untrained, no checkbox: a freeze set naming it (an old run's, a command file's) is the run's to refuse
            on = any(in_scope(path, s) for s in scopes)
            item.setCheckState(NAME, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self._quiet = False
        self._emitted = self.frozen_scopes()

    def frozen_scopes(self) -> tuple[str, ...]:
        """The shortest list of scope prefixes covering exactly the ticked variables."""
        out: list[str] = []

        def visit(item: QTreeWidgetItem) -> None:
            for i in range(item.childCount()):
                child = item.child(i)
                path = child.data(NAME, PATH_ROLE)
                if path is None:
                    continue
                state = child.checkState(NAME)
                if state == Qt.CheckState.Checked:
                    out.append(path)
                elif state == Qt.CheckState.PartiallyChecked:
                    visit(child)

        visit(self.tree.invisibleRootItem())
        return minimal_scopes(out)

    def item(self, path: str) -> QTreeWidgetItem | None:
        return self._items.get(path)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == NAME and not self._quiet:
            self._emit_soon()

    def flush(self) -> None:
        """Emit a change still being coalesced (Start reads the tree right after)."""
        self._emit_soon.flush()

    def _emit_if_changed(self) -> None:
        scopes = self.frozen_scopes()
        if scopes != self._emitted:
            self._emitted = scopes
            self.freezeChanged.emit(scopes)

    # -- selection -------------------------------------------------------------------------------------
    def _on_selection(self) -> None:
        items = self.tree.selectedItems()
        path = items[0].data(NAME, PATH_ROLE) if items else None
        self.variableSelected.emit(path if items and items[0].data(NAME, IS_VAR_ROLE) else None)
        self.pathSelected.emit(path)

    def select_variable(self, path: str | None) -> None:
        item = self._items.get(path) if path else None
        if item is None:
            self.tree.clearSelection()
            return
        if item.isHidden():
            self.filter_edit.clear()
        self.tree.setCurrentItem(item)
        self.tree.scrollToItem(item)

    # -- filtering -------------------------------------------------------------------------------------
    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()

        def visit(item: QTreeWidgetItem, parent_matches: bool) -> bool:
            path = (item.data(NAME, PATH_ROLE) or "").lower()
            matches = parent_matches or not needle or needle in path
            any_child = False
            for i in range(item.childCount()):
                any_child |= visit(item.child(i), matches)
            shown = matches or any_child
            item.setHidden(not shown)
            if needle and any_child:
                item.setExpanded(True)
            return shown

        root = self.tree.invisibleRootItem()
        for i in range(root.childCount()):
            visit(root.child(i), False)
        self._draw_on_screen()

    # -- values ----------------------------------------------------------------------------------------
    def show_states(self, states: Mapping[str, VarState]) -> None:
        """Draw each row's ‖ΔW‖/‖W‖ and state (rows missing from `states` show nothing).

        A tree of more than EAGER_ROWS rows (a model with hundreds of variables) draws only the rows on
        screen, and the others as they come into view (scrolled to, expanded, filtered in): the cost of a
        refresh then follows the panel's height, not the model's size (bench/wide_window.py)."""
        self._states = states
        if len(self._items) <= EAGER_ROWS:
            for path, item in self._items.items():
                self._draw(path, item)
        else:
            self._draw_on_screen()

    def _draw_on_screen(self, *_args) -> None:
        if len(self._items) <= EAGER_ROWS or not self._states:
            return
        item = self.tree.itemAt(0, 0)
        if item is None:
            return
        rows = self.tree.viewport().height() // max(self.tree.visualItemRect(item).height(), 1) + 2
        for _ in range(rows):
            path = item.data(NAME, PATH_ROLE)
            if path is not None:
                self._draw(path, item)
            item = self.tree.itemBelow(item)
            if item is None:
                break

    def _draw(self, path: str, item: QTreeWidgetItem) -> None:
        if path in self._untrained:
            return  # nothing measured: it keeps its "untrained" note
        st = self._states.get(path) or _BLANK
        text = "" if st.value is None else ("0" if st.value == 0 else f"{st.value:.2e}")
        drawn = self._drawn.get(path, ("", "", ""))
        if drawn == (text, st.state, st.tip):
            return
        self._drawn[path] = (text, st.state, st.tip)
        if drawn[0] != text:
            item.setText(UPDATE, text)
        if drawn[1] != st.state:
            item.setText(STATE, st.state)
            item.setForeground(STATE, QBrush(LEAK_COLOR if st.alarm else
                                             QUIET_COLOR if st.state == "no update" else FROZEN_COLOR))
        if drawn[2] != st.tip:
            item.setToolTip(STATE, st.tip)


_BLANK = VarState(None, "")

