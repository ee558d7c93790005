"""The window's state as one Qt-free model: what the training service is doing, which experiment is
prepared, whether a run is going and why it paused or ended, its run directory, and its `RunData`.

Why a model of its own: the window used to derive the same state in several places (paused from both
a status and an event, the run directory by three paths), and only a window could hold it. Here every
protocol report goes through `Session.handle` and each fact has one source:
  - paused comes from the run's events only (`pause` sets it, `continue` and `step` clear it), so it
    always has a reason; a `Status` only carries numbers for the status bar;
  - the run directory comes from the `start` event only: the directory the run really writes
    (a run that fails before it starts has none, and its error names the path);
  - a prepared experiment counts only while it is the one chosen (a report for an experiment the
    user already left is dropped).
Views subscribe to the signals below and draw; they never keep state of their own. The signals are
psygnal's (typed, synchronous, Qt-free, as napari's models emit events): a test drives a `Session`
with plain reports and no event loop, and the window connects its widgets to the same signals.
All calls come from one thread (the window's GUI thread, where Qt queues the reports).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from psygnal import Signal

from training_core.base import events as E
from training_core.base import protocol as P
from training_core.base.config import RunConfig
from training_core.base.metrics import Status
from training_core.runs.attach import Controls
from training_core.runs.data import RunData
from training_core.runs.follow import reload_resumed
from training_core.runs.variables import VariableStates, VarState

#: what a control panel shows: the own run's events of these kinds not sent by this window update the panels
CONTROL_EVENTS = (E.Freeze, E.Ratio, E.LearningRate, E.Method)

Source = tuple[str, str]  # ("example", "ring") or ("file", "/abs/path.py")

LOADING = "Loading TensorFlow…"


def source_of(config: RunConfig) -> Source:
    return ("file", config.experiment_file) if config.experiment_file else ("example", config.example or "")


def nan_message(event: E.Nan, rollback_step: int | None = None) -> tuple[str, str]:
    """(summary, details) for the core's `nan` event; the core has paused itself. `rollback_step`: the last
    checkpoint before the NaN, which the dialog offers to go back to."""
    phase, at = event.phase, event.at_step
    back = f"Roll back to step {rollback_step}, lower" if rollback_step is not None else "Lower"
    summary = (f"The loss of phase {phase} became {event.value} at step {at}; training is paused. "
               f"{back} phase {phase}'s learning rate (or fix the loss), then Continue, or Stop.")
    detail = "\n".join(f"{k}: {v}" for k, v in event.to_dict().items())
    return summary, detail


class Session:
    """One window's state. Feed it `handle(report)` and the user's intentions (`choose`, `loading`,
    `begin_run`, `service_lost`); read the attributes; subscribe to the signals."""

    state_changed = Signal()  # tf_ready, busy, prepared, running, paused, last run: controls and state text
    devices_loaded = Signal(list)  # TensorFlow is imported: the devices it sees
    experiment_prepared = Signal(object, bool)  # PreparedInfo; True if the tree and schedule should be rebuilt
    problem = Signal(str, str)  # something to show in a dialog: one-line summary (problem and fix), details
    note = Signal(str)  # a passing remark for the status bar (a warning, a refused command)
    run_dir_changed = Signal(str)
    data_cleared = Signal()  # `data` was emptied (another experiment, a new run): views drop what they drew
    run_started = Signal(str)  # the run directory asked for ("" = the default one)
    run_finished = Signal(object)  # the final Status, or None when the run never started
    rewound = Signal()  # `data` went back to an earlier step (a rollback, a resume): views redraw from scratch
    rollback_offered = Signal(int)  # after a NaN's `problem`: the last good checkpoint's step to go back to
    controls_changed = Signal(object)  # the own run's `Controls`, changed by a command not from this window

    def __init__(self, source: Source = ("example", "ring")) -> None:
        self.source: Source = source
        self.data = RunData()
        self.variables = VariableStates()
        self.tf_ready = False
        self.busy = ""  # what the service is doing ("" when idle)
        self.devices: list[str] = []
        self.prepared: P.PreparedInfo | None = None  # the chosen experiment, prepared
        self.running = False
        self.paused = False
        self.pause_reason = ""
        self.status: Status | None = None  # the latest numbers (step, phase, speed, ...)
        self.last_run: Status | None = None  # how the last run ended
        self.stop_reason = ""
        self.run_dir = ""
        self._resumed_dir = ""  # a resumed run's directory, read when it has resumed
        self._nan_shown = False  # a NaN dialog was offered and training has not gone on since
        self.attached = ""  # the run directory of a run another process writes, while attached (runs/attach.py)
        self.attached_text = ""  # "attached · freeze acknowledged at step 1,234", for the status bar
        self.detached_text = ""  # "Detached at step 298; the run goes on (pid 9760)": the state after a detach
        self.fix = ""  # how to fix what the state text reports (an attached run's resume command), if it does
        self._own_source: Source = source  # the window's choice before it attached (a detach may go back to it)
        #: "loop" or "fit": `source` is the script of a run training_core.monitor records. Its own code trains the
        #: run, so the window shows the record and never prepares or starts it (importing it would run the script)
        self.monitored = ""
        self._monitored_files: dict[str, str] = {}  # every such script seen in a record, and its monitor kind
        self.controls = Controls()  # the own run's control state as its events say (attach.py has its own)
        self._own_ids: set[str] = set()  # ids of the commands this window sent
        self._in_flight: set[str] = set()  # of those, the ones not acknowledged yet
        self._stale = False  # `controls` changed in a way the panels do not show yet
        self.ended = ""  # the training process died: how, and at which step ("killed by SIGKILL at step 1,234")
        self._restore = False  # a died run's controls go back on the panels once the new service has prepared
        self._handlers: dict[type, Callable[[Any], None]] = {
            P.Busy: self._on_busy, P.Loaded: self._on_loaded, P.Prepared: self._on_prepared,
            P.Failed: lambda r: self.problem.emit(r.summary, r.detail), P.RunStarted: self._on_run_started,
            P.RunFinished: self._on_run_finished, P.Metrics: self._on_metrics, P.Emitted: self._on_event,
            P.Samples: lambda r: self.data.set_samples(r.samples), P.StatusChanged: self._on_status}

    # -- what the user asked for --------------------------------------------------------------------------
    def loading(self) -> None:
        """TensorFlow is being imported (then the chosen experiment prepared) in a new service. An attached run
        (`--attach` attaches before the window's own service loads) stays what the window shows."""
        self.busy = LOADING
        if not self.attached:
            self.prepared = None
        self.state_changed.emit()

    def choose(self, source: Source) -> bool:
        """Switch experiment (not while a run goes): forget the old one's data until the new one is prepared."""
        if self.running:
            return False
        self.source, self.prepared, self.status = source, None, None
        self.monitored = self.monitored_kind(source)
        self.detached_text, self.ended, self._restore = "", "", False
        self._clear_data()
        self.state_changed.emit()
        return True

    def own_command_id(self) -> str:
        """An id for a command this window sends its own run: the event acknowledging it carries it, so an
        event without one of these came from elsewhere (commands.jsonl, a NaN roll-back's lower rate) and
        the panels must show what it set. Without the ids, a window's own freeze acknowledged while a
        second tick was in flight would untick that second scope on screen."""
        cid = f"window-{len(self._own_ids) + 1}"
        self._own_ids.add(cid)
        self._in_flight.add(cid)
        return cid

    def command_dropped(self, cid: str) -> None:
        """The service did not take the command `own_command_id` named (no run to take it): not in flight."""
        self._in_flight.discard(cid)

    def begin_run(self, resumed_dir: str = "") -> None:
        """A run was requested: it counts as running (controls, commands) from now until it finishes.
        `resumed_dir`: the run continues in that directory (its record is read when it resumed)."""
        self.controls, self._in_flight, self._stale = Controls(), set(), False
        self.running, self.paused, self.pause_reason, self.stop_reason = True, False, "", ""
        self.status, self.detached_text, self.ended, self._restore = None, "", "", False
        self._resumed_dir = resumed_dir
        self._clear_data()
        self.state_changed.emit()

    def attach(self, run_dir: str) -> None:
        """Show a run another process writes: it counts as running (controls, commands) until it ends or
        the window detaches. Its events are in `data` already; `track` each for the state it changes."""
        if not self.attached:
            self._own_source = self.source
        self.attached, self.attached_text, self.detached_text, self.ended = str(run_dir), "attached", "", ""
        self.monitored = ""  # until its record is read (attached_prepared)
        self.running, self.paused, self.pause_reason, self.stop_reason = True, False, "", ""
        self.status, self.last_run, self.prepared = None, None, None
        self._clear_data()
        self.data.run_dir = Path(run_dir)
        self.state_changed.emit()
        self.run_started.emit(str(run_dir))  # shown as the live run, as one of the window's own (plots, Runs tab)

    def attached_prepared(self, info: P.PreparedInfo) -> None:
        """The attached run's variables and settings, read from its record (a record without its experiment's
        name keeps the window's)."""
        if source_of(info.config)[1]:
            self.source = source_of(info.config)
        self.monitored = info.config.monitor or ""
        if self.monitored and self.source[0] == "file":
            self._monitored_files[self.source[1]] = self.monitored
        self._on_prepared(P.Prepared(info), from_record=True)

    def detach(self, keep_source: bool = True, text: str = "") -> None:
        """Stop showing the attached run live (it trains on); what was read stays on screen. The record's
        experiment is no trainer of this window's: `prepared` is None until the window prepares one, the run's
        experiment (`keep_source`: its file is here) or the one chosen before attaching. `text`: the state
        text from now on ("Detached at step 298; the run goes on (pid 9760)"), not "Ended at step 298"."""
        if not self.attached:
            return
        self.attached, self.attached_text, self.detached_text = "", "", text
        self.running, self.paused, self.prepared = False, False, None
        if not keep_source:
            self.source = self._own_source
            self.monitored = self.monitored_kind(self.source)
        self.last_run = self.status
        self.state_changed.emit()
        self.run_finished.emit(self.status)

    def service_lost(self, code: int | None = None) -> None:
        """The training service died (`code`: its exit code, negative for a signal); a new one loads TensorFlow
        and prepares again. A run it cut off keeps its record, and the panels go back to what the run applied:
        its commands in flight died with it, and preparing shows the experiment's own (`_on_prepared`)."""
        cut_off = self._restore  # (`_on_run_finished`: the run ended without its `stop`)
        step = self.status.step if self.status is not None else self.data.last_step
        self.ended = "" if code is None else f"Training process {P.process_end(code)}" + (
            f" at step {step:,}; its record is kept" if cut_off else "")
        self.tf_ready, self.prepared, self.busy, self._in_flight, self._restore = False, None, "", set(), cut_off
        if cut_off:
            self.controls_changed.emit(self.controls)
        self.state_changed.emit()

    def monitored_kind(self, source: Source) -> str:
        """"loop"/"fit" if `source` is a script a monitored run's record named ("" otherwise)."""
        return self._monitored_files.get(source[1], "") if source[0] == "file" else ""

    @property
    def can_start(self) -> bool:
        """Start trains `source` here: not while a run goes, nor when `source` is a monitored run's script."""
        return self.tf_ready and not self.running and not self.monitored

    @property
    def start_blocked(self) -> str:
        """Why Start is off for good (a monitored run's script trains its run itself), "" when it is not."""
        if not self.monitored:
            return ""
        name = Path(self.source[1]).name if self.source[0] == "file" else "your script"
        return f"{name} trains this run itself (training_core.monitor): {self._monitored_fix}"

    @property
    def _monitored_fix(self) -> str:
        return ("run your script again with start_run(..., resume=True) to continue" if self.monitored == "loop"
                else "run your script again for a new run (the Monitor cannot resume fit())")

    # -- reports ------------------------------------------------------------------------------------------
    def handle(self, report: object) -> None:
        """One protocol report from the training service (see training_core/protocol.py)."""
        handler = self._handlers.get(type(report))
        if handler is None:
            self.problem.emit(f"an unknown report from training was ignored: {type(report).__name__}", "")
        else:
            handler(report)

    def _on_busy(self, r: P.Busy) -> None:
        self.busy = r.text
        self.state_changed.emit()

    def _on_loaded(self, r: P.Loaded) -> None:
        self.tf_ready, self.devices = True, list(r.devices)
        self.devices_loaded.emit(self.devices)
        self.state_changed.emit()

    def _on_prepared(self, r: P.Prepared, from_record: bool = False) -> None:
        info, old = r.info, self.prepared
        if source_of(info.config) != self.source or (self.attached and not from_record):
            return  # superseded: the user chose another experiment meanwhile
        structure_changed = old is None or [v.path for v in info.var_infos] != [v.path for v in old.var_infos] \
            or info.phase_names != old.phase_names
        self.prepared = info
        if structure_changed:
            self.variables.set_tree(info.tree)
        self.experiment_prepared.emit(info, structure_changed or not self.running)
        if self._restore and not self.running:
            self._restore = False
            self.controls_changed.emit(self.controls)
        self.state_changed.emit()

    def _on_run_started(self, r: P.RunStarted) -> None:
        self.run_started.emit(r.run_dir)
        self.state_changed.emit()

    def _on_run_finished(self, r: P.RunFinished) -> None:
        ends = [e for e in self.data.events if isinstance(e, (E.Start, E.Resumed, E.Stop))] if r.status is None else []
        self._restore = bool(ends) and not isinstance(ends[-1], E.Stop)  # begun, never ended: its process died
        self.running, self.paused = False, False
        self.last_run = r.status
        if r.status is not None:
            self.status = r.status
        self.state_changed.emit()
        self.run_finished.emit(r.status)

    def _on_metrics(self, r: P.Metrics) -> None:
        self.data.add_batch(r.batch)
        self.status = r.batch.status

    def _on_status(self, r: P.StatusChanged) -> None:
        self.status = r.status

    def _on_event(self, r: P.Emitted) -> None:
        e = r.event
        if isinstance(e, E.Resumed) and self._resumed_dir:  # the record up to here, from the cut-back directory
            reload_resumed(self.data, self._resumed_dir, e)
            self.variables.reset()
            self.rewound.emit()
        else:
            self.data.add_event(e)  # a rollback cuts `data` back with the run (RunData.add_event)
            if isinstance(e, E.Rollback):
                self.rewound.emit()
        self.track(e)

    def track(self, e: E.Event) -> None:
        """The state an event changes (it is in `data` already)."""
        if isinstance(e, (E.Continue, E.Step, E.Rollback, E.Resumed, E.Start)):
            self._nan_shown = False  # training goes on (or back): a NaN after this is a new incident
        if not self.attached:
            self._track_controls(e)
        if isinstance(e, E.Pause):
            self._set_paused(True, e.reason)
        elif isinstance(e, (E.Continue, E.Step)):
            self._set_paused(False, "")
        elif isinstance(e, E.Nan):
            if self._nan_shown:  # another phase of the same incident (the run paused at the first): no 2nd dialog
                self.note.emit(f"Step {e.at_step}: the loss of phase {e.phase} became {e.value} too")
                return
            self._nan_shown = True
            good = [c.step for c in self.data.events if isinstance(c, E.Checkpoint) and c.step < e.at_step]
            self.problem.emit(*nan_message(e, max(good) if good else None))
            if good and not self.attached:
                self.rollback_offered.emit(max(good))
        elif isinstance(e, (E.Warning, E.Rejected)):
            self.note.emit(f"Step {e.step}: {e.message}")
        elif isinstance(e, E.Start):
            self._set_run_dir(e.run_dir)
        elif isinstance(e, E.Resumed) and self._resumed_dir:  # a resume has no `start` of its own
            self._set_run_dir(self._resumed_dir)
        elif isinstance(e, E.Stop):
            self.stop_reason = e.reason

    def _track_controls(self, e: E.Event) -> None:
        """The own run's controls, and when the panels must show them: after a change another process made
        or a roll-back (which restores the checkpoint's settings), but only once none of this window's own
        commands is in flight. Shown earlier, a freeze of B from commands.jsonl arriving between the window's
        tick of A and its acknowledgement unticked A on screen while the trainer then applied [A]."""
        own = getattr(e, "id", None) in self._own_ids
        if own:
            self._in_flight.discard(e.id)
        if isinstance(e, CONTROL_EVENTS + (E.Start, E.Resumed)):
            self.controls.apply(e)
        if isinstance(e, E.Rollback):  # `data` was cut back to the checkpoint: its settings are those events'
            self.controls = Controls.of(self.data.events)
        # a rejected command of this window's: the panels go back to what the run has (they showed the edit)
        self._stale |= isinstance(e, (E.Rollback, E.Rejected)) or (isinstance(e, CONTROL_EVENTS) and not own)
        if self._stale and not self._in_flight:
            self._stale = False
            self.controls_changed.emit(self.controls)

    def _set_paused(self, paused: bool, reason: str) -> None:
        if self.running and (paused, reason) != (self.paused, self.pause_reason):
            self.paused, self.pause_reason = paused, reason
            self.state_changed.emit()

    def _set_run_dir(self, run_dir: str) -> None:
        if run_dir != self.run_dir:
            self.run_dir = run_dir
            self.run_dir_changed.emit(run_dir)

    def _clear_data(self) -> None:
        self.data.clear()
        self.data.run_dir = None  # the next run's: a resumed or attached run's directory must not outlive it
        self.variables.reset()
        self._set_run_dir("")
        self.data_cleared.emit()

    # -- what views show ----------------------------------------------------------------------------------
    @property
    def state_text(self) -> str:
        """The status bar's first field: what is going on, in a few words."""
        if self.busy and not self.attached:  # an attached run is shown while the service loads behind it
            return " · ".join(filter(None, (self.ended, self.busy)))  # (a died service's end stays said)
        if self.running:
            if self.attached and self.status is not None and not self.status.running:  # its writer is gone
                return f"Not training · {self.attached_text}"
            if self.paused:
                text = "Paused" + (f" ({self.pause_reason})" if self.pause_reason not in ("", "user") else "")
            else:
                text = "Training"
            return f"{text} · {self.attached_text}" if self.attached else text
        if not self.tf_ready:
            return " · ".join(filter(None, (self.ended, LOADING)))
        blocked = f" · {self.start_blocked}" if self.start_blocked else ""
        if self.ended:
            return self.ended + blocked
        if self.last_run is not None and self.detached_text and not self.stop_reason:
            return self.detached_text + blocked
        if self.last_run is not None:
            verb = {"done": "Finished", "stopped": "Stopped", "halted": "Halted",
                    "error": "Failed"}.get(self.stop_reason, "Ended")
            return f"{verb} at step {self.last_run.step:,}{blocked}"
        if blocked:
            return self.start_blocked
        return "Ready" if self.prepared is not None else "Not prepared"

    @property
    def state_fix(self) -> str:
        """The end of `state_text` that says how to fix what it reports ('' if none): the status bar cuts what
        comes before it, never it."""
        text = self.state_text
        return next((f for f in (self.fix, self.monitored and self._monitored_fix) if f and text.endswith(f)), "")

    def variable_states(self) -> Mapping[str, VarState] | None:
        """Each variable's and scope's state, or None if nothing changed since the last call."""
        return self.variables.states if self.variables.update(self.data) else None
