"""`Monitor(run_dir)`: Freezeframe as a Keras callback, for a `keras.Model` whose own `train_step` trains
several sub-models (the keras.io GAN, DCGAN, WGAN-GP and conditional GAN examples), trained by `fit()`.

    gan.fit(dataset, epochs=20, callbacks=[Monitor("runs/dcgan", sample=lambda gan: {...})])

Why a callback: that is where Keras users add TensorBoard or W&B, and `fit()` offers nothing else between
batches. What it records (monitor/monitored.py does the work): the losses from `logs`, every variable of every
sub-model with its ‖ΔW‖, ‖ΔW‖/‖W‖ and whether it counts as frozen, measured on the device at sampled batches
(monitor/update_meter.py), events, TensorBoard, samples from `sample(model)`, checkpoints on request. The run
directory is a Freezeframe run's: the window opens it, attaches to it and steers it.

The leak check is the point: `discriminator.trainable = False` once fit() has traced the step (after a first
fit(), or after the first batch) does nothing to the train_step as traced, and the discriminator keeps
training while its author believes it frozen (set after compile() but before the first fit(), Keras 3.15 fails
with `ValueError: not enough values to unpack` instead). Here a weight its model made trainable whose flag reads False, or a variable under
a scope declared frozen (`frozen=`, `declare_frozen`), that moves is a `leak` event, on the terminal and in
the window.

What it cannot do, because `fit()` runs a compiled step nobody outside it can change: freeze exactly (the
window's freeze and method commands are refused, with a line pointing to `run.apply_gradients`), change the
ratio, roll back. Pause, step, continue, stop, learning rates (of optimizers it knows), samples and
checkpoints work.

`Monitor(run_dir, replay=OLD_DIR)` applies the learning rates an old run of the same `fit()` recorded, at the
batches they took effect there, and stops where it stopped (monitor/control_replay.py).

Which losses and optimizers belong to which sub-model is guessed from their names (`d_loss` and
`d_optimizer` go with `discriminator`: the same first letter, or the sub-model's name in the key), and, once a
step applied the optimizers, from the variables they were built for; a sub-model no optimizer trains (an EMA
copy) is recorded but is no phase (monitor/fit_models.py). `losses=`, `optimizers=` and `models=` say it when
the names do not. Every other `logs` entry is recorded as `metric/<name>`.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import keras
import numpy as np

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.errors import UserError
from training_core.base.scopes import scope_list
from training_core.base.monitored_controls import FIT_FREEZE, FIT_RATIO
from training_core.experiment.loading import refuse_inside_experiment
from training_core.monitor.control_replay import ControlReplayer, plan_control_replay
from training_core.monitor.fit_models import match, misread_phases, phase_optimizers, sub_models
from training_core.monitor.monitored import MonitoredRun
from training_core.monitor.described import describe
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

NOT_EXACT = FIT_FREEZE  # (base/monitored_controls.py: the window disables the same controls)


def check_frozen(frozen: Sequence[str], models: Mapping[str, Any]) -> None:
    """`frozen=` against the models' variable paths: an unknown scope is one line, before anything is written."""
    from training_core.base.scopes import MONITOR_SCOPES, VarInfo, resolve_scopes, scope_list
    frozen = scope_list(frozen, "frozen")
    if models:
        infos = [VarInfo(str(getattr(v, "path", None) or v.name), tuple(v.shape), str(v.dtype), bool(v.trainable))
                 for m in models.values() for v in m.weights]
        resolve_scopes(frozen, infos, MONITOR_SCOPES)


def check_losses(losses: Mapping[str, str] | None, names: Sequence[str]) -> None:
    """`losses=` against the sub-models' names, before anything is written: a key that names no sub-model (or a
    value that is no logs key's name) is one line with the names to use. Its logs keys are checked at the first
    batch, the first moment `logs` exists."""
    if losses is None:
        return
    example = "{" + ", ".join(f"'{n}': '{n[:1].lower()}_loss'" for n in names) + "}"
    if not isinstance(losses, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in losses.items()):
        raise UserError(f"Monitor: losses must map each sub-model's name to its key in fit()'s logs, e.g. "
                        f"losses={example}, got {losses!r:.60}")
    wrong = [k for k in losses if k not in names]
    if wrong:
        raise UserError(f"Monitor: losses names {', '.join(repr(k) for k in wrong)}, not a sub-model of the model "
                        f"(its sub-models: {', '.join(names)}); key losses by the sub-models' names, e.g. "
                        f"losses={example}")


class BatchMeans:
    """The batch's own value of each `logs` key that is a `keras.metrics.Mean` of the model's (`d_loss_tracker =
    Mean(name="d_loss")`, the compiled `loss`). Why: fit() hands callbacks the tracker's `result()`, the mean since
    the epoch began (fit() resets metrics at each epoch), so the logs value is a running mean with a kink at every
    epoch; the batch's own value is the change of the tracker's `total` over the change of its `count`. The
    trackers' variables are read in one stacked tensor, one device-to-host copy a batch."""

    def __init__(self, model: Any, keys: Sequence[str]) -> None:
        means = {}
        for m in getattr(model, "metrics", None) or ():
            if isinstance(m, keras.metrics.Mean) and m.name in keys and m.name not in means:
                means[m.name] = m
        self.keys = list(means)
        self._read = None
        if self.keys:
            import tensorflow as tf
            variables = [v.value for m in means.values() for v in (m.total, m.count)]
            if len({v.dtype for v in variables}) == 1:  # (the usual case) an eager stack: ~30 us, half a compiled call's
                self._read = lambda: tf.stack(variables)
            else:
                self._read = tf.function(lambda: tf.stack([tf.cast(v, tf.float64) for v in variables]),
                                         autograph=False).get_concrete_function()
        self._last = np.zeros(2 * len(self.keys))

    def reset(self) -> None:
        """fit() reset its metrics (a new epoch): the next change is from 0."""
        self._last = np.zeros(2 * len(self.keys))

    def values(self) -> dict[str, float | None]:
        """Each key's value in the batch just ended (None: its tracker took no value in it)."""
        if self._read is None:
            return {}
        now = self._read().numpy().astype(np.float64)
        last = self._last
        out = {}
        for i, key in enumerate(self.keys):
            total, count = now[2 * i], now[2 * i + 1]
            if count < last[2 * i + 1]:  # reset by someone between two batches: from 0
                last[2 * i: 2 * i + 2] = 0.0
            dc = count - last[2 * i + 1]
            out[key] = float((total - last[2 * i]) / dc) if dc > 0 else None
        self._last = now
        return out


class FitLeakAlarm(LeakAlarm):
    """A leak's cause as it is: a weight whose flag reads False ("fit": set once fit() had traced its step), or
    one under a scope declared frozen (`frozen=`, `declare_frozen`) that the step updates all the same ("fit
    declared"). Why: the terminal and the window say why it moved, and the two call for different fixes."""

    def __init__(self, monitor: "Monitor") -> None:
        super().__init__()
        self._monitor = monitor

    def cause(self, phase: str, path: str) -> str:
        from training_core.base.scopes import frozen_mask
        core = self._monitor.core
        p = core.prepared
        v = next((v for v in p.variables if str(getattr(v, "path", None) or v.name) == path), None)
        if v is not None and id(v) in p.made_trainable and not v.trainable:
            return "fit"
        return "fit declared" if frozen_mask([path], list(core.state.freeze))[0] else "fit"


def untrainable_at_start(models: Mapping[str, Any], trained: Sequence[str]) -> list[str]:
    """One line for each sub-model an optimizer trains that has weights but no trainable ones when fit() starts
    (`trainable = False` set before `fit()`): the keras.io-style `train_step` then zips its gradients with an
    empty `trainable_weights`, and Keras' own error, "not enough values to unpack (expected 2, got 0)", names
    neither the model nor the cause. The line comes first, on the terminal and in the record."""
    return [f"model {name!r} has no trainable weights as fit() starts ({name}.trainable = False before fit()): a "
            f"train_step that applies gradients to {name}.trainable_weights gets empty lists (Keras: 'not enough "
            f"values to unpack'); to freeze it for part of the training, skip its update in train_step, or train in "
            f"a loop of your own with run.apply_gradients (training_core.monitor.start_run)"
            for name in trained if models[name].weights and not models[name].trainable_weights]


class Monitor(keras.callbacks.Callback):
    """See the module docstring. `frozen`: a scope, or a list of scopes, declared frozen from the start (a move
    is a leak); `checkpoint_every`: batches between checkpoints (0: only on request); `var_every`: one batch in
    each `var_every` has its per-variable update measured; `keep_open`: several fit() calls are one run, ended by
    `close()`; `replay`: an old run of this fit() whose learning-rate changes are applied at the same batches."""

    def __init__(self, run_dir: str | Path, *, models: Mapping[str, Any] | None = None,
                 losses: Mapping[str, str] | None = None, optimizers: Mapping[str, Any] | None = None,
                 frozen: str | Sequence[str] = (), sample: Callable[[Any], dict] | None = None, checkpoint_every: int = 0,
                 var_every: int = MONITOR_VAR_EVERY, sample_every: float = 10.0, seed: int = 0, tensorboard: bool = True,
                 quiet: bool = False, keep_open: bool = False, replay: str | Path | None = None) -> None:
        super().__init__()
        refuse_inside_experiment("Monitor(...)")
        self.run_dir = Path(run_dir)
        check_frozen(frozen, models or {})  # (without models=: in on_train_begin, still before anything is written)
        if models:
            check_losses(losses, list(models))
        if self.run_dir.is_dir() and any(self.run_dir.iterdir()) and not clear_failed_run(self.run_dir):
            raise UserError(f"run directory {self.run_dir} already holds a run; give the Monitor a new run_dir")
        self._replay = None if replay is None else plan_control_replay(replay, self.run_dir, "fit", False)
        self._models, self._losses, self._optimizers = models, losses, optimizers
        self._frozen, self._sample, self._quiet = scope_list(frozen, "frozen"), sample, quiet
        self._settings = dict(checkpoint_every=checkpoint_every, var_every=var_every, sample_every=sample_every,
                              seed=seed, tensorboard=tensorboard)
        self.keep_open = keep_open
        self.core: MonitoredRun | None = None
        self._term: StopOnTerm | None = None
        self._keys: dict[str, str] | None = None  # phase -> its loss in logs (known at the first batch)
        self._means: BatchMeans | None = None  # the logs keys that are Mean trackers (known at the first batch)

    # -- the run --------------------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        if self.core is not None and not self.core.closed and self.keep_open:
            return  # another fit() of the same run: its batches continue the record
        if self.core is not None:
            raise UserError("this Monitor recorded a fit() already; give each fit() a Monitor with a run_dir of its own, "
                            "or Monitor(..., keep_open=True) to record several fit() calls as one run")
        from training_core.base.scopes import MONITOR_SCOPES, resolve_scopes
        from training_core.monitor.own_loop import _config
        models = dict(self._models) if self._models else sub_models(self.model)
        check_losses(self._losses, list(models))
        opts, trained = phase_optimizers(self.model, models, self._optimizers)
        phases = [(name, opts.get(name), [v for v in models[name].weights if "float" in str(v.dtype)])
                  for name in trained]  # (a sub-model no optimizer trains, an EMA copy: recorded, no phase)
        s = self._settings
        config = _config(self.run_dir, self._target(), s["seed"], s["var_every"], s["checkpoint_every"],
                         s["sample_every"], s["tensorboard"], [p for p in phases if p[1] is not None], "fit")
        described = describe(models, phases, config)
        config.schedule = described.policy.to_dict()
        config.freeze = list(resolve_scopes(self._frozen, described.var_infos, MONITOR_SCOPES))
        replaying = [] if self._replay is None else [ControlReplayer(self._replay, list(described.phase_names), config)]
        model = self.model
        every = s["checkpoint_every"]
        observers = [*replaying, *([Sampler(2.0, config.sample_every)] if self._sample is not None else []),
                     *([Checkpointer(every)] if every else []), FitLeakAlarm(self), NanAlarm("continue"), CommandFileReader(),
                     TerminalReport(quiet=self._quiet), SampleRecord(), RunRecord()]
        self.core = MonitoredRun(described, observers, False, self._refuse, leak_method="fit",
                                 sample=None if self._sample is None else (lambda: self._sample(model)))
        self.core.begin()
        for line in untrainable_at_start(models, trained):
            self.core.emit(E.Warning(message=line))
        core = self.core  # SIGTERM: a Stop at the next batch's end, as Ctrl-C ends fit() (monitor/stop_signal.py)
        self._term = StopOnTerm(lambda: core.send(C.Stop()), lambda: not core.closed)

    def _target(self) -> int | None:
        p = self.params or {}
        return p["epochs"] * p["steps"] if isinstance(p.get("epochs"), int) and isinstance(p.get("steps"), int) else None

    def declare_frozen(self, *scopes: str) -> None:
        """Say that `scopes` are frozen from this batch on (a move is then a leak); none: nothing is."""
        core = self._running()
        new = core.check_freeze(scopes)
        for w in core.set_freeze(new, False):
            core.emit(w)
        core.emit(E.Freeze(scopes=list(new)))

    def _running(self) -> MonitoredRun:
        if self.core is None or self.core.closed:
            raise UserError("the Monitor has no fit() running; call this from a callback or between batches")
        return self.core

    # -- each batch -----------------------------------------------------------------------------------------
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        core = self.core
        core.before_step(core.state.step + 1)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        core = self.core
        logs = logs or {}
        keys = self._keys
        if keys is None:
            misread = self._misread()
            keys = self._keys = self._loss_keys(logs, misread)
            self._means = BatchMeans(self.model, list(logs))
            wrong = [line for line in misread.values() if "trains none of" in line]
            if wrong:  # the record would put the phase's updates and learning rate on the wrong model
                raise self._failed(UserError(wrong[0]))
            for line in misread.values():
                core.emit(E.Warning(message=line))
        own = self._means.values()
        if own:
            logs = {k: own.get(k, v) for k, v in logs.items()}
        losses = {phase: logs[key] for phase, key in keys.items() if logs.get(key) is not None}
        used = set(keys.values())
        core.record(core.state.step + 1, losses,
                    {k: v for k, v in logs.items() if k not in used and v is not None}, "Monitor")
        core.after_step(core.state.step)
        replay_ends = self._replay is not None and core.state.step >= core.config.steps  # where the old run stopped
        if not core.boundary() or replay_ends:
            self.model.stop_training = True

    def _misread(self) -> dict[str, str]:
        """The first step built the optimizers: each phase their names got wrong, by name, with its line (a
        warning; an error when logs has no loss for it either). Nothing when models= and optimizers= said it."""
        p = self.core.prepared
        if self._optimizers or self._models:
            return {}
        return misread_phases(self.model, dict(p.experiment.models), p.phase_names,
                              {n: o for n, o in zip(p.phase_names, p.optimizers) if o is not None})

    def _loss_keys(self, logs: dict, misread: Mapping[str, str]) -> dict[str, str]:
        """Each phase's loss key in `logs` (`losses=` first, the names' guess for the rest: none when `losses=`
        gives them all, whose keys the guess could only be thrown away for); a key `logs` lacks is one line naming
        it, the keys `logs` has and the `losses=` to pass, and the record is closed with it."""
        names = list(self.core.prepared.phase_names)
        candidates = [k for k in logs if "loss" in k.lower()] or list(logs)
        given = dict(self._losses or {})
        unknown = {n: k for n, k in given.items() if k not in logs}
        guessed = {} if all(n in given for n in names) and not unknown else match(names, candidates, None, "loss")
        keys = {**{n: k for n, k in guessed.items() if n not in given}, **given}
        missing = [n for n in names if n not in keys]
        if unknown:  # (the guess is what its fix suggests)
            fix = {n: (guessed.get(n) or next(iter(difflib.get_close_matches(k, list(logs), 1)), None) or "...")
                   for n, k in given.items()}
            message = (f"Monitor: losses={given!r} names {', '.join(repr(k) for k in unknown.values())}, which "
                       f"fit()'s logs does not have (logs has {', '.join(logs) or 'nothing'}); pass "
                       f"losses={fix!r}, one logs key per sub-model")
        elif missing and all(n in misread and "no optimizer trains" in misread[n] for n in missing):
            trained = ", ".join(f"'{n}': model.{n}" for n in names if n not in missing)
            message = (f"Monitor: no optimizer trains {', '.join(repr(n) for n in missing)} (an EMA copy?) and fit()'s "
                       f"logs has no loss for it (logs has {', '.join(logs) or 'nothing'}); pass models={{{trained}}}, "
                       f"the sub-models the step trains")
        elif missing:
            message = (f"Monitor: no loss in fit()'s logs for {', '.join(repr(n) for n in missing)} "
                       f"(logs has {', '.join(logs) or 'nothing'}); pass losses={{'{names[0]}': 'd_loss', ...}}, "
                       f"one logs key per sub-model")
        else:
            return keys
        raise self._failed(UserError(message))

    def _failed(self, error: UserError) -> UserError:
        """End the run with `error` (what the caller raises) and give SIGTERM back."""
        if self._term is not None:
            self._term.remove()
        self.core.close("error", error)
        return error

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._means is not None:
            self._means.reset()  # fit() reset its metrics just before this

    def on_train_end(self, logs: dict | None = None) -> None:
        core = self.core
        if core is not None and not core.closed:
            if self.keep_open and not core.flow.stopping:
                core.sync()  # the record holds every batch; the next fit() goes on with it
            else:
                self.close()

    def close(self) -> None:
        """End the run (`keep_open`: after the last fit()): a final flush and the `stop` event."""
        core = self.core
        if self._term is not None:
            self._term.remove()
        if core is not None and not core.closed:
            core.close(core.stop_reason() if core.flow.stopping else "done")

    def _refuse(self, command: C.Command) -> str | None:
        if isinstance(command, (C.SetFreeze, C.SetFreezeMethod)):
            return NOT_EXACT
        if isinstance(command, C.SetRatio):
            return FIT_RATIO
        if isinstance(command, C.SetLearningRate):
            p = self.core.prepared
            if command.phase in p.phase_names and p.optimizers[p.phase_names.index(command.phase)] is None:
                return (f"the Monitor does not know {command.phase}'s optimizer; pass optimizers={{'{command.phase}': "
                        f"...}} to set its learning rate")
        return None
