"""The status bar: what training is doing, step, phase, speed, elapsed time, device, run directory.

It draws the window's `Session`: the state text and run directory when they change, the latest
`Status` from the window's 25 Hz timer. A label is only touched when its text changes, so an idle
window costs nothing.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QLabel, QProgressBar, QSizePolicy, QStatusBar, QWidget

from training_core import Status
from training_core.runs import RunSet


def format_elapsed(seconds: float) -> str:
    """Tenths of a second for short runs (a ring run of 600 steps takes under a second), h:mm:ss after."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


STATE_MAX_PX = 560  # the width the state text asks for (it takes what the bar has, wrapping to more lines)
STATE_TIP = "What training is doing"
STEP_TIP = "Steps taken in this run"
REVIEWED_TIP = "The last step of the run reviewed (no run trains in this window)"
MAX_LINES = 3  # the state or a note wraps to this many lines at most (the bar grows); a longer one is cut
NOTE_MS = 10_000  # a note (a warning, a refused command) is shown at least this long, a long one longer
NOTE_MS_PER_CHAR = 60  # (reading time: 250 characters stay 15 s)


def wrapped_lines(metrics: QFontMetrics, text: str, width: int) -> int | None:
    """How many lines `text` takes wrapped at word boundaries to `width` pixels, or None if a word alone is wider."""
    rect = metrics.boundingRect(QRect(0, 0, width, 1 << 20), Qt.TextFlag.TextWordWrap, text)
    return None if rect.width() > width else max(1, round(rect.height() / metrics.lineSpacing()))


def cut_keeping(metrics: QFontMetrics, text: str, keep: str, width: int) -> str:
    """`text` cut to `width` pixels, its end `keep` (how to fix what it says) whole: what comes before is cut
    first ("…" at its end, or all of it), and `keep` itself only when it alone is wider (in its middle)."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    if keep and text.endswith(keep):
        room = width - metrics.horizontalAdvance(keep)
        head = text[:len(text) - len(keep)]
        if room >= metrics.horizontalAdvance("Not training…  "):
            return metrics.elidedText(head, Qt.TextElideMode.ElideRight, room) + keep
        if metrics.horizontalAdvance("… " + keep) <= width:  # the fix alone, whole (the rest in the tooltip)
            return "… " + keep
        return metrics.elidedText(keep, Qt.TextElideMode.ElideMiddle, width)
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)


class StateLabel(QLabel):
    """The status bar's first field: it takes the width the bar leaves (it never widens the window) and shows
    its whole text, wrapped to up to MAX_LINES lines (the bar grows by as many lines); only a longer one is cut
    to one line, keeping the fix whole (`cut_keeping`), the whole text in the tooltip. A one-line field cut a
    warning or a refusal mid-word ("…it now runs every 165 s, beside trainin"), and the warning was gone
    10 s later; at a fixed 560 px, a gone writer's line ended exactly where it said how to resume."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.full, self.keep = text, ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(120)
        self.lines = 1
        self.tip = STATE_TIP  # the tooltip while the whole text is shown

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        m = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self.full) + m.left() + m.right() + 2
        return QSize(min(width, STATE_MAX_PX), self.minimumHeight())

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt name)
        return False  # its height is its minimum height, set from its width (`_fit`): the status bar's box
        # layout has no height-for-width, and a word-wrapped label asked for one from a width of its own

    def show_text(self, text: str, keep: str = "") -> None:
        self.full, self.keep = text, keep
        self._fit()

    def _fit(self) -> None:
        width = self.contentsRect().width() if self.isVisible() or self.width() > 120 else STATE_MAX_PX
        width, metrics = max(width, 40), self.fontMetrics()
        lines = wrapped_lines(metrics, self.full, width)
        if lines is not None and lines <= MAX_LINES:
            shown = self.full
        else:
            shown, lines = cut_keeping(metrics, self.full, self.keep, width), 1
        if shown != self.text():
            self.setText(shown)
        self.setToolTip(self.full if shown != self.full else self.tip)
        m = self.contentsMargins()
        height = lines * metrics.lineSpacing() + m.top() + m.bottom()
        self.lines = lines
        if self.minimumHeight() != height:  # the bar grows (or shrinks back) to show it whole
            self.setMinimumHeight(height)
            self.updateGeometry()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()


class StatusPanel(QStatusBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state_label = StateLabel("Starting…")
        self.state_label.setContentsMargins(6, 0, 6, 0)
        self.note_label = StateLabel("")  # a note, in the state's place while it is shown (`showMessage`)
        self.note_label.setContentsMargins(6, 0, 6, 0)
        self.note_label.tip = "A warning or a refused command (the Runs tab lists them all)"
        self.note_label.hide()
        self.step_label = self._label("Step 0", STEP_TIP)
        self.phase_label = self._label("Phase –", "The phase of the latest step")
        self.rate_label = self._label("– steps/s", "Training speed")
        self.elapsed_label = self._label("0.0 s", "Training time of this run")
        self.device_label = self._label("Device –", "Where the steps run")
        self.run_dir_label = self._label("Run: –", "The run directory (click to open it)")
        self.run_dir_label.setOpenExternalLinks(False)
        self.run_dir_label.linkActivated.connect(lambda url: QDesktopServices.openUrl(QUrl(url)))
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setTextVisible(True)
        self.progress.setFormat("%p%")
        self.progress.hide()
        self.addWidget(self.state_label, 1)
        self.addWidget(self.note_label, 1)
        for w in (self.step_label, self.phase_label, self.rate_label, self.elapsed_label, self.progress,
                  self.device_label, self.run_dir_label):
            self.addPermanentWidget(w)
        self._run_dir = ""
        self._drawn: tuple | None = None  # what `draw` last showed
        self.note = ""  # the note on show ("" when the state is)
        self._note_timer = QTimer(self)
        self._note_timer.setSingleShot(True)
        self._note_timer.timeout.connect(self.clearMessage)

    def _label(self, text: str, tip: str) -> QLabel:
        label = QLabel(text)
        label.setToolTip(tip)
        label.setContentsMargins(6, 0, 6, 0)
        return label

    @staticmethod
    def _set(label: QLabel, text: str) -> None:
        """Labels only ever widen: a width that followed the text ("Step 9,999" to "Step 10,000", the
        rate) re-laid out the status bar and repainted the window's bottom on almost every update."""
        if label.text() != text:
            label.setText(text)
            width = label.sizeHint().width()
            if width > label.minimumWidth():
                label.setMinimumWidth(width)

    def set_state(self, text: str, keep: str = "") -> None:
        """What training is doing, whole (wrapped to more lines), or if even MAX_LINES are too few cut to one line
        with the whole text in the tooltip; `keep`, the text's end that says how to fix it, is never cut (`StateLabel`). A fix that names the run directory
        (a gone writer's resume command) takes the Run field's room: it would say the same twice."""
        self.run_dir_label.setVisible(not (keep and self._run_dir and self._run_dir in keep))
        self.state_label.show_text(text, keep)

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802 (Qt name)
        """A note (a warning, a refused command, an export's result) in the state's place, whole (wrapped, as
        the state), for `timeout` ms or longer if it is long (NOTE_MS_PER_CHAR), then the state again.
        QStatusBar's own message was painted on one line, cut ("…beside trainin"), and gone after 10 s; the
        Runs tab's event list keeps every warning and refusal. (Every caller's `statusBar().showMessage`.)"""
        if not text:
            return self.clearMessage()
        self.note = text
        self.state_label.hide()
        self.note_label.show()
        self.note_label.show_text(text)
        self._note_timer.start(max(timeout, NOTE_MS, NOTE_MS_PER_CHAR * len(text)))

    def show_note(self, text: str) -> None:
        self.showMessage(text, NOTE_MS)

    def currentMessage(self) -> str:  # noqa: N802 (Qt name)
        return self.note

    def clearMessage(self) -> None:  # noqa: N802 (Qt name)
        self._note_timer.stop()
        if self.note:
            self.note = ""
            self.note_label.hide()
            self.state_label.show()

    def set_device(self, name: str) -> None:
        self._set(self.device_label, name or "Device –")

    def set_run_dir(self, run_dir: str) -> None:
        if run_dir == self._run_dir:
            return
        self._run_dir = run_dir
        if not run_dir:
            self._set(self.run_dir_label, "Run: –")
            return
        url = QUrl.fromLocalFile(str(Path(run_dir).resolve())).toString()
        self.run_dir_label.setText(f'Run: <a href="{url}">{run_dir}</a>')
        self.run_dir_label.setToolTip(f"{Path(run_dir).resolve()}\n(click to open the folder)")

    @property
    def run_dir(self) -> str:
        return self._run_dir

    def draw(self, status: Status | None, paused: bool, runs: RunSet) -> None:
        """The window's 25 Hz refresh, drawn only when it changed: the live run's numbers, or while no run trains
        here and runs are opened for review, the reviewed run's last step and nothing that looks live. A
        finished 300-step run opened with `--open` read "Step 0" and "0.0 s", the numbers of a run about to start."""
        reviewed = [e.data.last_step for e in runs.entries if not e.live]
        key = (status, paused) if status is not None or not reviewed else ("reviewed", *reviewed)
        if key == self._drawn:
            return
        self._drawn = key
        if status is not None or not reviewed:
            return self.show_status(status or Status(), paused=paused)
        self._set(self.step_label, f"Step {reviewed[0]:,}" if len(reviewed) == 1 else "Step –")
        self.step_label.setToolTip(REVIEWED_TIP if len(reviewed) == 1 else "No run trains in this window")
        for label, text in ((self.phase_label, "Phase –"), (self.rate_label, "– steps/s"), (self.elapsed_label, "–")):
            self._set(label, text)
        self.progress.hide()

    def show_status(self, s: Status, paused: bool = False) -> None:
        """`paused`: the session's word (from the run's events), so the speed reads "–" while paused even
        if the last numbers came from before the pause."""
        self._set(self.step_label, f"Step {s.step:,}")
        self.step_label.setToolTip(STEP_TIP)
        self._set(self.phase_label, f"Phase {s.phase or '–'}")
        running = s.steps_per_s and s.running and not (paused or s.paused)  # a finished run has no speed
        self._set(self.rate_label, f"{s.steps_per_s:,.0f} steps/s" if running else "– steps/s")
        self._set(self.elapsed_label, format_elapsed(s.elapsed_s))
        if s.device:
            self.set_device(s.device)
        if s.target_steps:
            # the target may count one phase's steps (--count G: generator iterations); the bar says whose
            done = int(s.counted) if s.count_phase else int(s.step)
            self.progress.setMaximum(int(s.target_steps))
            self.progress.setValue(min(done, int(s.target_steps)))
            self.progress.setFormat(f"{s.count_phase} %p%" if s.count_phase else "%p%")
            self.progress.setToolTip(f"{done:,} of {s.target_steps:,} {s.count_phase} steps (step {s.step:,} of "
                                     f"every phase)" if s.count_phase else f"{s.step:,} of {s.target_steps:,} steps")
            self.progress.show()
        else:
            self.progress.hide()
