"""The schedule panel: how phases alternate, each phase's learning rate, and how freezing works.

Every edit is live. Spin boxes are debounced (superqt's `qdebounced`: 300 ms after the last change, or
at once on Enter) so that one change the user makes becomes one command in the run record, not one
per arrow click.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QGridLayout, QHBoxLayout, QLabel, QSpinBox,
                               QVBoxLayout, QWidget)
from superqt.utils import qdebounced

DEBOUNCE_MS = 300
_PARTIAL_NUMBER = re.compile(r"^\s*\d*\.?\d*(e[-+]?\d*)?\s*$", re.IGNORECASE)


def format_number(v: float) -> str:
    """2e-4 rather than 0.0002: learning rates and thresholds read best as mantissa and exponent."""
    if v == 0:
        return "0"
    if 1e-2 <= abs(v) < 1e4:
        return f"{v:.4g}"
    mantissa, _, exp = f"{v:.3e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


#: no limit on purpose: a box that clamped (at 10, then at 1e9) showed, and would later send, another rate
#: than the run's
LR_MAX = 1e300


class SciSpinBox(QDoubleSpinBox):
    """A spin box for values spanning decades: shows 2e-4, accepts any float notation, and the arrows
    double or halve the value."""

    def __init__(self, maximum: float = 10.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDecimals(15)
        self.setRange(0.0, maximum)
        self.setKeyboardTracking(False)
        self.setMinimumWidth(90)

    def textFromValue(self, value: float) -> str:
        return format_number(value)

    def valueFromText(self, text: str) -> float:
        try:
            return float(text.strip())
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int) -> object:
        try:
            v = float(text.strip())
        except ValueError:
            ok = _PARTIAL_NUMBER.match(text) is not None
            return QValidator.State.Intermediate if ok else QValidator.State.Invalid, text, pos
        inside = self.minimum() <= v <= self.maximum()
        return QValidator.State.Acceptable if inside else QValidator.State.Intermediate, text, pos

    def stepBy(self, steps: int) -> None:
        v = self.value()
        self.setValue(v * 2.0 ** steps if v > 0 else 1e-4)


METHOD_TIP = ("exact: frozen variables are left out of the update. gate: only their gradient is zeroed, so "
              "optimizer momentum and weight decay still move them (shown as LEAK)")


class SchedulePanel(QWidget):
    scheduleChanged = Signal(object)  # policy dict for SetRatio
    learningRateChanged = Signal(str, float)
    methodChanged = Signal(str)
    frozenStatsChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.policy_combo = QComboBox()
        self.policy_combo.addItem("Fixed ratio", "fixed")
        self.policy_combo.addItem("Adaptive (loss threshold)", "adaptive")
        self.policy_combo.setToolTip("Fixed: N steps of each phase in turn. Adaptive: stay in a phase until its "
                                     "loss falls below the threshold, at most Max steps")
        self.max_steps = QSpinBox()
        self.max_steps.setRange(1, 100000)
        self.max_steps.setValue(50)
        self.max_steps.setToolTip("Adaptive: at most this many steps per stay in a phase")
        self.max_steps.setKeyboardTracking(False)
        self.method_combo = QComboBox()
        self.method_combo.addItem("exact", "exact")
        self.method_combo.addItem("gate (leaky)", "gate")
        self.method_combo.setToolTip(METHOD_TIP)
        self.stats_check = QCheckBox("Update frozen BN stats")
        self.stats_check.setVisible(False)  # until a prepared experiment says it has such statistics
        self.stats_check.setToolTip("Let BatchNormalization moving statistics in frozen scopes keep updating")
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c0392b")
        self.error_label.setWordWrap(True)
        self.error_label.hide()

        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(8)
        self.grid.setVerticalSpacing(4)
        top = QHBoxLayout()
        top.addWidget(QLabel("Policy"))
        top.addWidget(self.policy_combo, 1)
        top.addWidget(QLabel("Max steps"))
        top.addWidget(self.max_steps)
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("Freeze method"))
        bottom.addWidget(self.method_combo, 1)
        bottom.addWidget(self.stats_check)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(self.grid)
        layout.addLayout(bottom)
        layout.addWidget(self.error_label)

        self.phase_names: list[str] = []
        self.steps: dict[str, QSpinBox] = {}
        self.thresholds: dict[str, SciSpinBox] = {}
        self.lrs: dict[str, SciSpinBox] = {}
        self._quiet = False
        self._fixed: dict[str, str] = {}  # control -> why the run refuses any change of it (`set_fixed`)
        self._sent_schedule: dict[str, Any] = {}
        self._sent_lr: dict[str, float] = {}
        self._schedule_later = qdebounced(self._flush_schedule, timeout=DEBOUNCE_MS, parent=self)
        self._lr_later = qdebounced(self._flush_lr, timeout=DEBOUNCE_MS, parent=self)
        self.policy_combo.currentIndexChanged.connect(self._policy_changed)
        self.max_steps.valueChanged.connect(self._schedule_edited)
        self.max_steps.editingFinished.connect(self._flush_schedule)
        self.method_combo.currentIndexChanged.connect(
            lambda: None if self._quiet else self.methodChanged.emit(self.method()))
        self.stats_check.toggled.connect(lambda on: None if self._quiet else self.frozenStatsChanged.emit(on))
        self._policy_changed()

    # -- filling ---------------------------------------------------------------------------------------
    def set_config(self, phase_names: Sequence[str], schedule: dict[str, Any], lr: dict[str, float],
                   method: str = "exact", update_frozen_stats: bool = False, has_stats: bool | None = None) -> None:
        """Show a prepared experiment's settings (programmatic: emits nothing). `has_stats`: the models have
        statistics a forward pass updates (BatchNormalization); without, the checkbox for them is hidden;
        None leaves it as the experiment set it (a change of controls does not know)."""
        self._quiet = True
        try:
            if list(phase_names) != self.phase_names:
                self._build_rows(phase_names)
            adaptive = schedule.get("policy") == "adaptive"
            self.policy_combo.setCurrentIndex(1 if adaptive else 0)
            ratio = schedule.get("ratio") or [1] * len(phase_names)
            thresholds = schedule.get("thresholds") or [1.0] * len(phase_names)
            if isinstance(thresholds, dict):
                thresholds = [thresholds.get(p, 1.0) for p in phase_names]
            self.max_steps.setValue(int(schedule.get("max_steps", 50)))
            for i, p in enumerate(phase_names):
                self.steps[p].setValue(int(ratio[i]) if not adaptive else self.steps[p].value())
                self.thresholds[p].setValue(float(thresholds[i]) if adaptive else self.thresholds[p].value())
                if p in lr:
                    self.lrs[p].setValue(float(lr[p]))
            self.method_combo.setCurrentIndex(max(0, self.method_combo.findData(method)))
            self.stats_check.setChecked(bool(update_frozen_stats))
            if has_stats is not None:
                self.stats_check.setVisible(has_stats)
            self._policy_changed()
        finally:
            self._quiet = False
        self._schedule_later.cancel()
        self._lr_later.cancel()
        self._sent_schedule = self.schedule()
        self._sent_lr = self.learning_rates()

    def set_fixed(self, fixed: dict[str, str]) -> None:
        """The controls the run refuses whatever they send ("method", "ratio": base/monitored_controls.py, a
        monitored run), disabled with the reason as their tooltip, so a user does not learn it from a refusal at
        each try; {} enables them again. Kept across `set_config`."""
        self._fixed = dict(fixed)
        why = self._fixed.get("method", "")
        self.method_combo.setEnabled(not why)
        self.method_combo.setToolTip(why or METHOD_TIP)
        self.policy_combo.setEnabled("ratio" not in self._fixed)
        quiet, self._quiet = self._quiet, True  # (programmatic: no schedule is sent)
        try:
            self._policy_changed()
        finally:
            self._quiet = quiet

    def _build_rows(self, phase_names: Sequence[str]) -> None:
        while self.grid.count():
            w = self.grid.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.phase_names = list(phase_names)
        self.steps, self.thresholds, self.lrs = {}, {}, {}
        for col, title, tip in ((0, "Phase", ""), (1, "Steps", "Steps of this phase per cycle (the ratio)"),
                                (2, "Loss &lt;", "Adaptive: leave the phase once its loss is below this"),
                                (3, "Learning rate", "The phase optimizer's learning rate (arrows double/halve)")):
            label = QLabel(f"<b>{title}</b>")
            label.setToolTip(tip)
            self.grid.addWidget(label, 0, col)
        for row, p in enumerate(phase_names, start=1):
            steps = QSpinBox()
            steps.setRange(0, 100000)
            steps.setKeyboardTracking(False)
            steps.setToolTip(f"Steps of phase {p} per cycle; 0 skips the phase")
            steps.valueChanged.connect(self._schedule_edited)
            steps.editingFinished.connect(self._flush_schedule)
            threshold = SciSpinBox(maximum=1e9)
            threshold.setValue(1.0)
            threshold.setToolTip(f"Adaptive: leave phase {p} once its loss is below this")
            threshold.valueChanged.connect(self._schedule_edited)
            threshold.editingFinished.connect(self._flush_schedule)
            lr = SciSpinBox(maximum=LR_MAX)  # the CLI and commands.jsonl take any rate: so does the panel
            lr.setToolTip(f"Learning rate of phase {p} (type 1e-4, or use the arrows to double/halve)")
            lr.valueChanged.connect(self._lr_edited)
            lr.editingFinished.connect(self._flush_lr)
            self.grid.addWidget(QLabel(p), row, 0)
            self.grid.addWidget(steps, row, 1)
            self.grid.addWidget(threshold, row, 2)
            self.grid.addWidget(lr, row, 3)
            self.steps[p], self.thresholds[p], self.lrs[p] = steps, threshold, lr
        self.grid.setColumnStretch(3, 1)

    # -- reading ---------------------------------------------------------------------------------------
    def schedule(self) -> dict[str, Any]:
        if self.policy_combo.currentData() == "adaptive":
            return {"policy": "adaptive", "thresholds": [self.thresholds[p].value() for p in self.phase_names],
                    "max_steps": self.max_steps.value(), "min_steps": 1}
        return {"policy": "fixed", "ratio": [self.steps[p].value() for p in self.phase_names]}

    def learning_rates(self) -> dict[str, float]:
        return {p: self.lrs[p].value() for p in self.phase_names}

    def method(self) -> str:
        return self.method_combo.currentData()

    def update_frozen_stats(self) -> bool:
        return self.stats_check.isChecked()

    def problem(self) -> str | None:
        """Why the current schedule cannot be applied, or None."""
        s = self.schedule()
        if s["policy"] == "fixed" and self.phase_names and sum(s["ratio"]) == 0:
            return "Every phase has 0 steps: give at least one phase a count above 0."
        return None

    # -- emitting --------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Emit any edit still waiting out its debounce (Start reads the panel right after)."""
        self._schedule_later.flush()
        self._lr_later.flush()

    def _policy_changed(self) -> None:
        adaptive = self.policy_combo.currentData() == "adaptive"
        ratio_fixed = self._fixed.get("ratio", "")
        self.max_steps.setEnabled(adaptive and not ratio_fixed)
        for p in self.phase_names:
            self.steps[p].setEnabled(not adaptive and not ratio_fixed)
            self.thresholds[p].setEnabled(adaptive and not ratio_fixed)
            self.steps[p].setToolTip(ratio_fixed or f"Steps of phase {p} per cycle; 0 skips the phase")
        if not self._quiet:
            self._flush_schedule()

    def _schedule_edited(self) -> None:
        if not self._quiet:
            self._schedule_later()

    def _flush_schedule(self) -> None:
        self._schedule_later.cancel()  # sent now: the pending debounce has nothing left to send
        if self._quiet or not self.phase_names:
            return
        problem = self.problem()
        self.error_label.setText(problem or "")
        self.error_label.setVisible(problem is not None)
        s = self.schedule()
        if problem is None and s != self._sent_schedule:
            self._sent_schedule = s
            self.scheduleChanged.emit(s)

    def _lr_edited(self) -> None:
        if not self._quiet:
            self._lr_later()

    def _flush_lr(self) -> None:
        self._lr_later.cancel()
        if self._quiet:
            return
        for p, v in self.learning_rates().items():
            if v != self._sent_lr.get(p):
                self._sent_lr[p] = v
                self.learningRateChanged.emit(p, v)
