"""The experiment panel: what to train (built-in example or a file), where, with which seed, for how long,
and the run controls.

Choosing an experiment prepares it at once (so the scope tree shows its variables); seed, device and
step target take effect at the next Start. Inputs that only make sense before a run are disabled while
one is running.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QComboBox, QFormLayout, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QSpinBox,
                               QToolButton, QVBoxLayout, QWidget)
from superqt.utils import signals_blocked

from training_core.base.protocol import PreparedInfo
from training_core.runs import Source



class ExperimentPanel(QWidget):
    sourceChosen = Signal(object)  # Source
    openRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source_combo = QComboBox()
        self.source_combo.setToolTip("A built-in example or one of your recent experiment files")
        self.source_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.source_combo.setMinimumContentsLength(12)
        self.source_combo.activated.connect(self._on_activated)
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open an experiment file (.py) (Ctrl+O)")
        self.open_button.clicked.connect(self.openRequested)
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setStyleSheet("color: #5a5a5a; font-size: 9pt;")
        self.description.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.device_combo = QComboBox()
        self.device_combo.addItem("auto", "auto")
        self.device_combo.setToolTip("Where training runs: auto picks the first GPU if there is one "
                                     "(the list fills in once TensorFlow has loaded)")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setToolTip("Random seed of the next run (weights, noise, batches)")
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(0, 10**9)
        self.steps_spin.setSingleStep(100)
        self.steps_spin.setSpecialValueText("until stopped")
        self.steps_spin.setToolTip("Stop after this many steps; 0 trains until you press Stop")
        self.steps_spin.setGroupSeparatorShown(True)
        self.count_combo = QComboBox()  # whose steps the target counts: GAN papers count generator iterations
        self.count_combo.addItem("steps of every phase", None)
        self.count_combo.setToolTip("What the step target counts: every phase's steps together, or one phase's "
                                    "(e.g. G: generator iterations, as GAN papers count them)")

        row = QHBoxLayout()
        row.addWidget(self.source_combo, 1)
        row.addWidget(self.open_button)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Experiment", row)
        form.addRow("", self.description)
        dev = QHBoxLayout()
        dev.addWidget(self.device_combo, 1)
        dev.addWidget(QLabel("Seed"))
        dev.addWidget(self.seed_spin, 1)
        form.addRow("Device", dev)
        target = QHBoxLayout()
        target.addWidget(self.steps_spin, 1)
        target.addWidget(self.count_combo, 1)
        form.addRow("Steps", target)
        self.buttons = QHBoxLayout()
        self.buttons.setSpacing(4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addLayout(self.buttons)
        self._sources: list[Source] = []
        self.run_buttons: dict[str, QToolButton] = {}

    def add_run_buttons(self, actions: dict[str, QAction]) -> None:
        """One button per run action (Start, Pause, Step, Stop), sharing the action's state and tooltip."""
        for name, action in actions.items():
            b = QToolButton()
            b.setDefaultAction(action)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            b.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            b.setMinimumHeight(28)
            self.buttons.addWidget(b)
            self.run_buttons[name] = b

    # -- sources ---------------------------------------------------------------------------------------
    def set_sources(self, examples: Sequence[str], recent_files: Sequence[str]) -> None:
        current = self.current_source()
        with signals_blocked(self.source_combo):
            self.source_combo.clear()
            self._sources = []
            for name in examples:
                self.source_combo.addItem(f"{name}  (built-in)")
                self._sources.append(("example", name))
            if recent_files:
                self.source_combo.insertSeparator(self.source_combo.count())
                self._sources.append(("separator", ""))
            for path in recent_files:
                self.source_combo.addItem(Path(path).name)
                self.source_combo.setItemData(self.source_combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
                self._sources.append(("file", str(path)))
        if current is not None:
            self.select_source(current, add=True)

    def select_source(self, source: Source, add: bool = False) -> bool:
        """Show `source` as the current choice without emitting `sourceChosen`. `add`: a file not in the list
        (an attached run's experiment) gets an entry of its own, so the panel never names another experiment."""
        if source not in self._sources and not (add and source[0] == "file" and source[1]):
            return False
        if source not in self._sources:
            with signals_blocked(self.source_combo):
                self.source_combo.addItem(Path(source[1]).name)
                self.source_combo.setItemData(self.source_combo.count() - 1, source[1], Qt.ItemDataRole.ToolTipRole)
            self._sources.append(source)
        with signals_blocked(self.source_combo):
            self.source_combo.setCurrentIndex(self._sources.index(source))
        return True

    def current_source(self) -> Source | None:
        i = self.source_combo.currentIndex()
        return self._sources[i] if 0 <= i < len(self._sources) and self._sources[i][0] != "separator" else None

    def _on_activated(self, index: int) -> None:
        if 0 <= index < len(self._sources) and self._sources[index][0] != "separator":
            self.sourceChosen.emit(self._sources[index])

    def set_description(self, text: str) -> None:
        self.description.setText(text)
        self.description.setVisible(bool(text))

    # -- run settings ----------------------------------------------------------------------------------
    def set_devices(self, devices: Sequence[str]) -> None:
        current = self.device()
        self.device_combo.clear()
        self.device_combo.addItem("auto", "auto")
        gpus = any(d.startswith("gpu") for d in devices)
        for d in devices:
            # as the status bar words it, and short: the picker is narrow ("2 CPU replicas (mi" was cut)
            label = ("all GPUs (mirrored)" if gpus else "CPU ×2 (mirrored)") if d == "mirrored" else d.upper()
            self.device_combo.addItem(label, d)
        self.device_combo.setCurrentIndex(max(0, self.device_combo.findData(current)))

    def set_device(self, device: str) -> None:
        i = self.device_combo.findData(device)
        if i < 0:
            self.device_combo.addItem(device.upper(), device)
            i = self.device_combo.count() - 1
        self.device_combo.setCurrentIndex(i)

    def device(self) -> str:
        return self.device_combo.currentData() or "auto"

    def seed(self) -> int:
        return self.seed_spin.value()

    def steps(self) -> int | None:
        return self.steps_spin.value() or None

    def count(self) -> str | None:
        """The phase whose steps the target counts (None: every phase's; and none without a target)."""
        return self.count_combo.currentData() if self.steps() else None

    def show_prepared(self, info: PreparedInfo, source: Source, attached: bool) -> None:
        """A prepared experiment: its description and preparing's warnings (they stay in view: a passing status
        line at Start was missed), its phases and step target; an attached run's own experiment and seed (its
        record's: the panel read "ring (built-in)" and "Seed 0" beside another run's scopes)."""
        c = info.config
        self.set_description("\n\n".join([info.description] * bool(info.description)
                                          + [f"Warning: {w}" for w in info.warnings]))
        self.show_target(info.phase_names, c.steps, c.count, attached=attached)
        if attached:
            self.select_source(source, add=True)
            self.seed_spin.setValue(c.seed)

    def show_target(self, phase_names: Sequence[str], steps: int | None, count: str | None, attached: bool) -> None:
        """The experiment's phases to count by; an attached run's own target (a resume may set a new one)."""
        keep = count if attached else self.count_combo.currentData()
        with signals_blocked(self.count_combo):
            self.count_combo.clear()
            self.count_combo.addItem("steps of every phase", None)
            for name in phase_names:
                self.count_combo.addItem(f"{name} steps", name)
            self.count_combo.setCurrentIndex(max(0, self.count_combo.findData(keep)))
        if attached:
            self.steps_spin.setValue(steps or 0)

    def set_running(self, running: bool) -> None:
        for w in (self.source_combo, self.open_button, self.device_combo, self.seed_spin, self.steps_spin,
                  self.count_combo):
            w.setEnabled(not running)
