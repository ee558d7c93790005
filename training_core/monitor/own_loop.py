"""`start_run(...)` and `Run`: Freezeframe in a hand-written training loop, with a few added lines.

    run = start_run("runs/gan", models={"generator": g, "discriminator": d},
                    phases={"D": (d_opt, d), "G": (g_opt, g)}, steps=5000, resume=True)
    with run:
        for step in run.steps():                       # from run.step + 1; stops on the window's Stop
            ...                                        # inside your tf.function step:
            run.apply_gradients("D", d_opt, grads, d.trainable_variables)   # instead of d_opt.apply(...)
            run.log(step, {"D": d_loss, "G": g_loss}, {"r1": r1})

Why an object in the user's loop rather than a rewrite as an experiment file: most GAN code is such a loop,
with its own tricks (an EMA of G's weights, a lazy R1 penalty every 16 steps, augmentation), and its authors
add TensorBoard or W&B in two lines. This is the same few lines, and the run is then a Freezeframe run: the
record the window opens, attaches to and steers, exported figures and TensorBoard.

What it does between steps is monitor/monitored.py's. What is particular to a loop: `apply_gradients` honours the
run's live freeze set exactly (monitor/exact_update.py); `boundary()` (which `steps()` calls) applies the window's
commands and blocks while paused; `next_phase()` lets a loop that alternates its phases follow the run's ratio,
which the window can change; checkpoints hold the models, the optimizers, `run.rng` and the run's state, and a
loop restarted with `resume=True` continues the same record from the last one (engine/checkpoints.py,
loop/restore.py), so no step is recorded twice or missing; `replay=OLD_DIR` applies the controls an old run of
the loop recorded at the steps they took effect there (monitor/control_replay.py).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.config import RunConfig, check_learning_rate, file_sha256
from training_core.base.errors import UserError
from training_core.base.scopes import MONITOR_SCOPES, in_scope, normalize_scope, resolve_scopes, scope_list
from training_core.experiment.api import Models
from training_core.base.monitored_controls import LOOP_METHOD
from training_core.experiment.loading import refuse_inside_experiment
from training_core.monitor.control_replay import ControlReplayer, plan_control_replay
from training_core.monitor.monitored import MonitoredRun
from training_core.monitor.exact_update import ExactUpdate
from training_core.monitor.fixed_update import FixedUpdate
from training_core.monitor.described import describe, resolve_trains
from training_core.monitor.stop_signal import StopOnTerm
from training_core.monitor.terminal_report import TerminalReport
from training_core.monitor.update_meter import MONITOR_VAR_EVERY
from training_core.observers.alarms import LeakAlarm, NanAlarm
from training_core.observers.checkpointing import Checkpointer
from training_core.observers.command_file import CommandFileReader
from training_core.observers.record import RunRecord
from training_core.observers.sample_record import SampleRecord
from training_core.observers.sampling import Sampler
from training_core.rundir.reading import clear_failed_run


class Run:
    """A Freezeframe run driven by the user's loop (make it with `start_run`)."""

    def __init__(self, core: MonitoredRun, updates: dict[str, ExactUpdate | FixedUpdate], models: Models,
                 follows_schedule: bool = False, live_freeze: bool = True) -> None:
        self._core, self._updates, self.models = core, updates, models
        self._live_freeze = live_freeze
        self._term: StopOnTerm | None = None  # SIGTERM -> a Stop at the next boundary (monitor/stop_signal.py)
        self._asks_phase = follows_schedule  # a schedule given to start_run, or next_phase() called

    # -- what the loop reads ----------------------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The last step logged (a resumed run: the step of the checkpoint it continues from)."""
        return self._core.state.step

    @property
    def run_dir(self) -> Path:
        return Path(self._core.run_dir)

    @property
    def rng(self) -> Any:
        """A `tf.random.Generator` seeded by the run and saved in its checkpoints: draw batches and noise from it
        and a resumed loop draws what the uninterrupted one would have."""
        return self._core.prepared.rng

    @property
    def phases(self) -> list[str]:
        return list(self._core.prepared.phase_names)

    @property
    def running(self) -> bool:
        """False once a Stop came (the window, commands.jsonl) or the step target is reached."""
        core = self._core
        target = core.config.steps
        return not core.flow.stopping and not core.closed and (target is None or core.state.step < target)

    # -- what the loop calls ----------------------------------------------------------------------------------
    def apply_gradients(self, phase: str, optimizer: Any, grads: Any, variables: Any) -> None:
        """`optimizer.apply(grads, variables)` with the run's freeze set honoured exactly: frozen variables and
        their optimizer slots keep their bits. Call it inside your `tf.function` step (or eagerly); a change of
        the freeze set does not retrace it."""
        update = self._updates.get(phase)
        if update is None:
            raise UserError(f"run.apply_gradients: there is no phase {phase!r}; phases are {', '.join(self._updates)}")
        if optimizer is not update.opt:
            raise UserError(f"run.apply_gradients({phase!r}, ...): this is not phase {phase}'s optimizer; pass the one "
                            f"start_run declared for it (each phase keeps its own slots and step count)")
        update.apply(list(grads), list(variables))

    def log(self, step: int, losses: Mapping[str, Any], metrics: Mapping[str, Any] | None = None) -> None:
        """Record step `step`: each phase's loss that ran in it (numbers or scalar tensors) and any metrics
        (`metric/<name>`). Call it after the step's updates: the step's ‖ΔW‖ is measured then, when sampled."""
        core = self._core
        core.record(step, losses, metrics, "run.log")
        if self._asks_phase and core.prepared.policy.needs_loss:
            policy, names = core.prepared.policy, core.prepared.phase_names
            for name, loss in losses.items():
                policy.observe(names.index(name), float(loss))
        core.after_step(core.state.step)

    def boundary(self) -> bool:
        """Between two steps: apply the commands that came (pause, step, continue, stop, learning rates, freeze,
        ratio, samples, checkpoints) and wait while paused. Returns `running`."""
        core = self._core
        flow = core.flow
        # (`running`, written out: this runs every step; with no command queued and not paused, the core's
        # boundary has nothing to do, and a step that is not the next measured one nothing to copy)
        if (flow.paused or core.commands.pending()) and not core.boundary() or flow.stopping or core.closed:
            return False
        step, target = core.state.step, core.config.steps
        if target is not None and step >= target:
            return False
        if step >= core.snapshot_at - 1:
            core.before_step(step + 1)
        return True

    def steps(self) -> Iterator[int]:
        """The step numbers still to run, from `run.step + 1`: each after a `boundary()`; ends at the step
        target or a Stop, and then closes the run."""
        while self.boundary():
            step = self.step + 1
            yield step
            if self.step < step:
                raise UserError(f"step {step} ran without run.log(step, ...); log every step before the next")
        self.close()

    def flush(self) -> None:
        """Write every step logged so far to the record now (the run does so by itself every 0.25 s, at each
        checkpoint and at the end)."""
        self._core.sync()

    def send(self, command: C.Command) -> None:
        """Queue a command (`SetFreeze`, `Pause`, ...) for the next `boundary()`, as the window's are (any thread)."""
        self._core.send(command)

    def next_phase(self) -> str:
        """The phase the run's ratio (or adaptive policy) picks for the next step: a loop that asks lets the
        window change its ratio live; one that does not refuses ratio changes."""
        core = self._core
        self._asks_phase = True
        runnable = [not update.all_frozen() for update in self._updates.values()]
        i = core.prepared.policy.next_phase(runnable)
        if i is None:
            raise UserError("every phase has all its variables frozen; unfreeze a scope to go on")
        return core.prepared.phase_names[i]

    def close(self, reason: str | None = None) -> None:
        """End the run: a final checkpoint and the models' weights, the `stop` event."""
        core = self._core
        self._end(reason or (core.stop_reason() if core.flow.stopping else "done"))

    def _end(self, reason: str, error: BaseException | None = None) -> None:
        if self._term is not None:
            self._term.remove()
        self._core.close(reason, error)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if error is None:
            self.close()
        elif isinstance(error, KeyboardInterrupt):
            self.close("stopped")
        else:
            self._end("error", error)

    def _refuse(self, command: C.Command) -> str | None:
        if isinstance(command, C.SetFreezeMethod) and command.method != "exact":
            return LOOP_METHOD
        if isinstance(command, C.SetFreeze) and not self._live_freeze:
            return FIXED_FREEZE
        if isinstance(command, C.SetFreeze):
            why = untrained_scope(command.scopes, self._core.prepared)
            if why is not None:
                return why
        if isinstance(command, C.SetRatio) and not self._asks_phase:
            return ("this loop does not ask the run which phase is next (run.next_phase()), so a ratio cannot "
                    "change it; give start_run a schedule and call run.next_phase() in the loop to follow it")
        return None


def start_run(run_dir: str | Path, models: Mapping[str, Any], phases: Mapping[str, tuple[Any, Any]], *,
              steps: int | None = None, resume: bool = False, freeze: str | Sequence[str] = (), schedule: dict | None = None,
              sample: Callable[[Models], dict] | None = None, checkpoint_every: int = 5000, var_every: int = MONITOR_VAR_EVERY,
              sample_every: float = 10.0, seed: int = 0, tensorboard: bool = True, quiet: bool = False,
              replay: str | Path | None = None, live_freeze: bool = True) -> Run:
    """Open a run for a hand-written loop (see the module docstring).

    `models`: name -> Keras model. Every variable is in the record's scope tree and in the checkpoints; the
    variables a phase trains also have their ‖ΔW‖ measured and can be frozen by scope. A model no phase trains
    (an EMA copy your loop assigns) is listed and checkpointed only: freezing it is refused, since the run
    cannot stop your loop's own assigns.
    `phases`: name -> (optimizer, what it trains: a model, a scope path or a list of them), in order.
    `resume=True`: continue the run in `run_dir` from its last checkpoint when it has one (else start it).
    `freeze`: the scope (a string) or scopes (a list) frozen from the start; `schedule`: the ratio `next_phase()` follows ({"ratio": [5, 1]}):
    a loop given one asks the run for its phases, and the window may change the ratio.
    `sample(models) -> {"fake": array, "real": array}`: drawings for the samples view and the record.
    `replay=OLD_DIR`: apply the number-changing controls OLD_DIR recorded (freeze, learning rates, ratio) at the
    steps they took effect there, and stop where it stopped (monitor/control_replay.py).
    `live_freeze=False`: the freeze set is the one the run starts with (`freeze=`, or a resumed checkpoint's),
    for the whole run; `run.apply_gradients` is then `optimizer.apply` on the unfrozen variables, without the
    restore point live freezing adds to the step (monitor/fixed_update.py), and freeze commands are refused."""
    refuse_inside_experiment("start_run(...)")
    d = Path(run_dir)
    resuming = bool(resume) and d.is_dir() and (d / "config.toml").is_file()
    if not isinstance(models, Mapping) or not models:
        raise UserError(f"models must be a dict of name -> keras.Model, got {type(models).__name__}; pass e.g. "
                        f"models={{'generator': g, 'discriminator': d}}")
    if steps is not None and (isinstance(steps, bool) or not hasattr(steps, "__index__") or steps < 0):
        raise UserError(f"steps must be a whole number >= 0 (or None: until stopped), got {steps!r}")
    if not resume and d.is_dir() and any(d.iterdir()) and not clear_failed_run(d):
        raise UserError(f"run directory {d} already holds a run; pass resume=True to continue it, or a new run_dir")
    plan = None if replay is None else plan_control_replay(replay, d, "loop", resuming)
    if not isinstance(phases, Mapping) or not phases:
        raise UserError("phases must be a dict of name -> (optimizer, what it trains), e.g. "
                        "phases={'D': (d_opt, discriminator), 'G': (g_opt, generator)}")
    for name, spec in phases.items():
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise UserError(f"phase {name!r}: give (optimizer, what it trains), got {spec!r:.60}")
        if _is_trained(spec[0]) and _is_optimizer(spec[1]):
            raise UserError(f"phase {name!r}: give (optimizer, what it trains), got ({_kind(spec[0])}, an optimizer): "
                            f"swap them")
    frozen = scope_list(freeze, "freeze")  # (checked against the models once they are described)
    if schedule is not None and not isinstance(schedule, Mapping):  # (TOML's {policy = ...} said it otherwise)
        raise UserError(f"schedule must be a dict such as {{'ratio': [5, 1]}}, got {schedule!r:.60}")
    listed = [(name, opt, resolve_trains(trains, models, f"phase {name!r}")) for name, (opt, trains) in phases.items()]
    config = _config(d, steps, seed, var_every, checkpoint_every, sample_every, tensorboard, listed)
    described = describe(models, listed, config, schedule)
    config.schedule = described.policy.to_dict()
    if not isinstance(live_freeze, bool):
        raise UserError(f"live_freeze must be True or False, got {live_freeze!r}")
    if plan is not None and not live_freeze and any(isinstance(c, C.SetFreeze) for _, c in plan.commands):
        raise UserError(f"replay={str(replay)!r} changes the freeze set mid-run, which a loop with live_freeze=False "
                        f"cannot do; replay it with live_freeze=True (the default)")
    update = ExactUpdate if live_freeze else FixedUpdate
    updates = {name: update(name, opt, vs) for name, opt, vs in listed}
    config.freeze = list(resolve_scopes(frozen, described.var_infos, MONITOR_SCOPES))
    why = untrained_scope(config.freeze, described)
    if why is not None:
        raise UserError(f"start_run(freeze=...): {why}")
    replaying = [] if plan is None else [ControlReplayer(plan, list(described.phase_names), config)]

    def on_freeze(masks: list) -> None:
        for update, mask in zip(updates.values(), masks):
            update.set_frozen(mask)

    holder: dict[str, Run] = {}
    observers = [*replaying, *([Sampler(2.0, config.sample_every)] if sample is not None else []),
                 Checkpointer(checkpoint_every), LeakAlarm(), NanAlarm("continue"), CommandFileReader(),
                 TerminalReport(quiet=quiet), SampleRecord(), RunRecord()]
    core = MonitoredRun(described, observers, resuming, lambda c: holder["run"]._refuse(c), on_freeze=on_freeze,
                        sample=None if sample is None else (lambda: sample(described.experiment.models)))
    run = holder["run"] = Run(core, updates, described.experiment.models, follows_schedule=schedule is not None,
                              live_freeze=live_freeze)
    given = (list(config.freeze), dict(config.lr))  # (a resume replaces them with its checkpoint's)
    core.begin()
    if resuming:
        for line in _kept_from_checkpoint(given, core):
            core.emit(E.Warning(message=line))
    run._term = StopOnTerm(lambda: core.send(C.Stop()), lambda: not core.closed)
    return run


#: why a loop started with live_freeze=False refuses a freeze command (the window shows it, the terminal prints it)
FIXED_FREEZE = ("this loop was started with start_run(..., live_freeze=False): its freeze set is the one it started "
                "with, fixed in its traced step; start a run with another freeze=, or with live_freeze=True (the "
                "default) to freeze live")


def untrained_scope(scopes: Any, described: Any) -> str | None:
    """Why a freeze set cannot be honoured, or None: a scope that covers variables of the run's models but none
    a phase trains (an EMA copy of the generator updated by the loop's own `assign`, a layer's statistics). Such
    a freeze was accepted and did nothing: `run.apply_gradients` never updates those variables, the run cannot
    stop the loop's own assigns to them, and no ‖ΔW‖ is measured for them, so no leak showed it either. (A scope
    that covers no variable at all is left to the command table's `unknown scope` line.)"""
    if isinstance(scopes, str):
        scopes = [scopes]
    trained = {p for paths in described.phase_paths for p in paths}
    for scope in scopes if isinstance(scopes, (list, tuple)) else ():
        if not isinstance(scope, str):
            continue
        n = normalize_scope(scope)
        if any(in_scope(v.path, n) for v in described.var_infos) and not any(in_scope(p, n) for p in trained):
            tops = ", ".join(sorted({p.split("/")[0] for p in trained}))
            return (f"cannot freeze {scope!r}: no phase trains it (run.apply_gradients never updates it), and the run "
                    f"cannot stop what your loop itself does to it (an EMA's assign, a layer's statistics); freeze a scope a phase trains (under "
                    f"{tops}), or stop updating it in your loop")
    return None


def _kept_from_checkpoint(given: tuple[list, dict], core: MonitoredRun) -> list[str]:
    """What the script asked for and a resume did not take: the run goes on with its checkpoint's freeze set and
    learning rates (those the window or `run.send` set included), so that it continues the run it was; a script
    edited since to freeze or train otherwise is told so, not left believing it (a tester's did)."""
    freeze, lr = given
    lines = []
    if sorted(freeze) != sorted(core.state.freeze):
        lines.append(f"resumed with the run's freeze set {list(core.state.freeze)} (its checkpoint's), not "
                     f"start_run(freeze={freeze}); send SetFreeze(...) (run.send, the window) to change it")
    changed = [f"{k} {core.config.lr[k]:g} (the script's {v:g})" for k, v in lr.items()  # (as float32: the
               if k in core.config.lr and np.float32(core.config.lr[k]) != np.float32(v)]  # optimizer's own)
    if changed:
        lines.append(f"resumed with the run's learning rates, {', '.join(changed)}; send SetLearningRate(...) "
                     f"(run.send, the window) to change them")
    return lines


def _config(d: Path, steps: int | None, seed: int, var_every: int, checkpoint_every: int, sample_every: float,
            tensorboard: bool, phases: list, monitor: str = "loop") -> RunConfig:
    """The run's `config.toml`: the script that trains it (so the window names it, and a resume tells it was
    edited), the step target, the record's settings and each phase's learning rate."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0].endswith(".py") and Path(sys.argv[0]).is_file() else None
    lr = {}
    for name, opt, _ in phases:
        try:
            lr[name] = check_learning_rate(float(opt.learning_rate), f"learning rate for {name}")
        except (TypeError, ValueError, AttributeError, UserError):
            continue  # a schedule: no one rate to show or set
    return RunConfig(example=None if script else "own-loop", experiment_file=str(script.resolve()) if script else None,
                     experiment_sha256=file_sha256(script) if script else None, steps=steps, seed=seed, lr=lr,
                     var_every=var_every, checkpoint_every=checkpoint_every, sample_every=sample_every,
                     tensorboard=tensorboard, on_nan="continue", run_dir=str(d), monitor=monitor).validate()


def _is_optimizer(x: Any) -> bool:
    return hasattr(x, "apply") and hasattr(x, "learning_rate") and not hasattr(x, "trainable_variables")


def _is_trained(x: Any) -> bool:
    """What a phase may train: a model (or layer), a scope path, a list of them."""
    return hasattr(x, "trainable_variables") or isinstance(x, (str, list))


def _kind(x: Any) -> str:
    import keras
    return "a keras.Model" if isinstance(x, keras.Model) else "a scope" if isinstance(x, str) else \
        "a list" if isinstance(x, list) else f"a {type(x).__name__}"
