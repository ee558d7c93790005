"""The training loop: plain Python that reports through an observer and takes commands.

In the manner of Orange3's TaskState: `Trainer.run()` blocks on whatever thread calls it (the
window's QThread, or the main thread headless), checks its command queue at every step boundary,
and reports through an `Observer` whose methods it calls on that same thread. It never touches a
widget; the Qt adapter turns observer calls into queued signals.
"""
from __future__ import annotations

import time
import traceback
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from . import commands as C
from .config import RunConfig
from .errors import UserError
from .metrics import MetricsBatch, PhaseBlock, Status
from .prepare import set_learning_rate
from .recorder import Recorder, prepare_run_dir
from .schedule import policy_from_dict
from .scopes import frozen_mask, resolve_scopes


class Observer:
    """Receives reports on the training thread. Override what you need; each must return quickly."""

    def on_prepared(self, trainer: "Trainer") -> None: ...
    def on_metrics(self, batch: MetricsBatch) -> None: ...
    def on_event(self, event: dict[str, Any]) -> None: ...
    def on_samples(self, samples: dict[str, Any]) -> None: ...
    def on_status(self, status: Status) -> None: ...


class Trainer:
    def __init__(self, config: RunConfig, observer: Observer | None = None) -> None:
        self.config = config.validate()
        self.observer = observer or Observer()
        self.commands = C.CommandQueue()
        self.prepared = None
        self.step = 0
        self.traces = 0
        self.retraces = 0
        self.run_dir: Path | None = None
        self._recorder: Recorder | None = None
        self._warm = False
        self._paused = False
        self._stop = False
        self._steps_left: int | None = None
        self._pending: list[tuple] = []
        self._early_events: list[dict] = []
        self._seen_leaks: set[tuple[str, int]] = set()
        self._nan_phases: set[str] = set()
        self._freeze_epoch = 0
        self._phase = -1
        self._t0 = 0.0
        self._rate = (0.0, 0, 0.0)  # (time, step, steps/s)

    # -- thread-safe controls -------------------------------------------------------------------------
    def send(self, command: C.Command) -> None:
        """Queue a command; it applies at the next step boundary. Safe from any thread."""
        self.commands.put(command)

    # -- read-only views (valid after prepare) -----------------------------------------------------------
    @property
    def var_infos(self):
        return self.prepared.var_infos

    @property
    def scope_tree(self):
        return self.prepared.tree

    @property
    def phase_names(self) -> list[str]:
        return self.prepared.phase_names

    @property
    def freeze(self) -> tuple[str, ...]:
        return self._freeze

    def status(self) -> Status:
        p = self.prepared
        return Status(step=self.step, phase=p.phase_names[self._phase] if p and self._phase >= 0 else "",
                      paused=self._paused, running=self._recorder is not None and not self._stop,
                      steps_per_s=self._rate[2], elapsed_s=time.perf_counter() - self._t0 if self._t0 else 0.0,
                      device=p.device_name if p else "", run_dir=str(self.run_dir or ""),
                      target_steps=self.config.steps, traces=self.traces)

    # -- preparation ------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load the experiment, build models and optimizers, trace the steps. Raises `UserError`."""
        if self.prepared is not None:
            return
        from .prepare import prepare
        self.prepared = prepare(self.config, self._on_trace)
        self.config = self.prepared.config
        self._warm = True
        self._method = self.config.freeze_method
        self._apply_freeze(self.prepared.freeze, self.config.update_frozen_stats, log=False)
        self._apply_method(self._method)
        self.observer.on_prepared(self)

    def _on_trace(self, phase: str, variant: str) -> None:
        self.traces += 1
        kind = "retrace" if self._warm else "trace"
        if self._warm:
            self.retraces += 1
        self._event(kind, phase=phase, variant=variant, traces=self.traces)

    # -- the loop ------------------------------------------------------------------------------------------
    def run(self) -> Status:
        """Train until the step target, a Stop command, or an error. Returns the final status."""
        import tensorflow as tf
        self.prepare()
        p = self.prepared
        cfg = self.config
        self.run_dir = prepare_run_dir(cfg.run_dir or default_run_dir(cfg))
        cfg.run_dir = str(self.run_dir)
        self._recorder = Recorder(self.run_dir, cfg, cfg.var_every, cfg.tensorboard)
        for e in self._early_events:
            self._recorder.event(e)
        self._t0 = time.perf_counter()
        self._rate = (self._t0, self.step, 0.0)
        ckpt = tf.train.Checkpoint(step=tf.Variable(0, dtype=tf.int64), rng=p.rng, sample_rng=p.sample_rng,
                                   **{f"model_{k}": m for k, m in p.experiment.models.items()},
                                   **{f"optimizer_{n}": o for n, o in zip(p.phase_names, p.optimizers)})
        manager = tf.train.CheckpointManager(ckpt, self._recorder.checkpoint_prefix.rsplit("/", 1)[0], max_to_keep=3)
        self._ckpt = (ckpt, manager)
        self._event("start", device=p.device_name, experiment=cfg.experiment_file or cfg.example,
                    phases=p.phase_names, freeze=list(self._freeze), schedule=p.policy.to_dict(),
                    lr=dict(cfg.lr), method=self._method, run_dir=str(self.run_dir), steps=cfg.steps)
        reason = "done"
        try:
            with tf.device(p.device):
                reason = self._loop()
        except BaseException as e:
            reason = "error"
            self._event("error", message=str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}",
                        detail=getattr(e, "detail", None) or traceback.format_exc())
            raise
        finally:
            try:
                self._fetch()
                if reason != "error":
                    self._sample()  # the samples view ends on the final state, not on the last timer tick
                self._save_checkpoint()
            finally:
                self._event("stop", reason=reason, traces=self.traces, retraces=self.retraces)
                self._stop = True
                self._recorder.close()
                self.observer.on_status(self.status())
        return self.status()

    def _loop(self) -> str:
        p, cfg = self.prepared, self.config
        steps, policy = p.steps, p.policy
        fetch_every, fetch_s = cfg.fetch_every, cfg.fetch_seconds
        next_fetch = time.perf_counter() + fetch_s
        next_sample = time.perf_counter()
        ck_every, var_every = cfg.checkpoint_every, cfg.var_every
        self._phase_counts = [0] * len(steps)
        self.observer.on_status(self.status())
        while True:
            if self._paused or self.commands.pending():
                self._handle_commands()
                policy = self.prepared.policy
            if self._stop:
                return "stopped"
            if cfg.steps is not None and self.step >= cfg.steps:
                return "done"
            if self._paused:
                continue
            i = policy.next_phase(self._runnable)
            if i is None:
                self._event("warning", message="every phase has all its scopes frozen; nothing can train. "
                                               "Unfreeze a scope to continue")
                self._set_paused(True, reason="nothing to train")
                continue
            st = steps[i]
            out = st.masked() if self._use_masked[i] else st.fast()
            self.step += 1
            self._phase = i
            self._phase_counts[i] += 1
            self._pending.append((self.step, i, time.time(), out, self._frozen_rows[i],
                                  self._phase_counts[i] % var_every == 0))
            if policy.needs_loss:
                policy.observe(i, float(out[0]))
            if self._steps_left is not None:
                self._steps_left -= 1
                if self._steps_left <= 0:
                    self._steps_left = None
                    self._set_paused(True, reason="step")
            now = time.perf_counter()
            if len(self._pending) >= fetch_every or now >= next_fetch:
                self._fetch()
                next_fetch = now + fetch_s
            if ck_every and self.step % ck_every == 0:
                self._save_checkpoint()
            if now >= next_sample:
                self._sample()
                next_sample = time.perf_counter() + cfg.sample_seconds

    # -- commands ----------------------------------------------------------------------------------------
    def _handle_commands(self) -> None:
        for cmd in self.commands.drain():
            self._apply(cmd)
        while self._paused and not self._stop:
            self._fetch()
            cmd = self.commands.get(timeout=0.5)
            if cmd is not None:
                self._apply(cmd)

    def _apply(self, cmd: C.Command) -> None:
        try:
            if isinstance(cmd, C.Pause):
                self._set_paused(True, reason="user")
            elif isinstance(cmd, C.Resume):
                self._steps_left = None
                self._set_paused(False)
            elif isinstance(cmd, C.Step):
                self._steps_left = max(1, int(cmd.n))
                self._log_command(cmd, n=self._steps_left)
                self._paused = False
            elif isinstance(cmd, C.Stop):
                self._stop = True
            elif isinstance(cmd, C.SetFreeze):
                scopes = resolve_scopes(cmd.scopes, self.prepared.var_infos)
                self._apply_freeze(scopes, cmd.update_frozen_stats)
                self._log_command(cmd, scopes=list(scopes))
            elif isinstance(cmd, C.SetSchedule):
                new = policy_from_dict(cmd.policy, self.prepared.phase_names).continue_from(self.prepared.policy)
                self.prepared.policy = new
                self._log_command(cmd, policy=new.to_dict())
            elif isinstance(cmd, C.SetLearningRate):
                if cmd.phase not in self.prepared.phase_names:
                    raise UserError(f"unknown phase {cmd.phase!r}; phases are {', '.join(self.prepared.phase_names)}")
                set_learning_rate(self.prepared.optimizers[self.prepared.phase_names.index(cmd.phase)], cmd.phase,
                                  cmd.value)
                self._log_command(cmd)
            elif isinstance(cmd, C.SetFreezeMethod):
                self._apply_method(cmd.method)
                self._log_command(cmd)
            elif isinstance(cmd, C.SampleNow):
                self._sample()
            elif isinstance(cmd, C.SaveCheckpoint):
                self._save_checkpoint()
            else:
                raise UserError(f"unsupported command {cmd!r}")
        except (UserError, TypeError, ValueError) as e:
            # A command with a wrong value (a typo in a replayed or remote command) is refused, not fatal:
            # it must not end a long run.
            message = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {' '.join(str(e).split())}"
            self._event("rejected", message=message, command=cmd.to_dict())

    def _log_command(self, cmd: C.Command, **extra: Any) -> None:
        self._event(cmd.kind, command=cmd.to_dict(), **extra)

    def _set_paused(self, paused: bool, reason: str = "user") -> None:
        if paused == self._paused:
            return
        self._paused = paused
        if paused:
            self._event("pause", reason=reason)
        else:
            self._nan_phases.clear()
            self._event("resume")
        self.observer.on_status(self.status())

    def _apply_freeze(self, scopes: tuple[str, ...], update_stats: bool, log: bool = True) -> None:
        p = self.prepared
        self._freeze = tuple(scopes)
        self._freeze_epoch += 1
        restore = np.array(frozen_mask(p.stat_paths, scopes), dtype=bool) & (not update_stats)
        self._use_masked, self._frozen_rows, runnable = [], [], []
        for name, paths, st in zip(p.phase_names, p.phase_paths, p.steps):
            mask = np.array(frozen_mask(paths, scopes), dtype=bool)
            st.frozen.assign(mask)
            st.restore_stats.assign(restore)
            self._use_masked.append(bool(mask.any() or restore.any()))
            self._frozen_rows.append(mask)
            runnable.append(not mask.all())
            if mask.all():
                self._event("warning", message=f"phase {name} has all its variables frozen; it is skipped", phase=name)
        self._runnable = runnable

    def _apply_method(self, method: str) -> None:
        if method not in C.FREEZE_METHODS:
            raise UserError(f"freeze method {method!r} is unknown; use 'exact' or 'gate'")
        self._method = method
        for st in self.prepared.steps:
            st.gate.assign(method == "gate")

    # -- reporting ---------------------------------------------------------------------------------------
    def _event(self, kind: str, **fields: Any) -> None:
        e = {"step": self.step, "kind": kind, "time": round(time.time(), 3), **fields}
        if self._recorder is not None:
            self._recorder.event(e)
        else:
            self._early_events.append(e)
        self.observer.on_event(e)

    def _fetch(self) -> None:
        if not self._pending:
            return
        import tensorflow as tf
        p = self.prepared
        pending, self._pending = self._pending, []
        blocks = []
        for i in sorted({item[1] for item in pending}):
            items = [it for it in pending if it[1] == i]
            packed = tf.stack([it[3] for it in items]).numpy()  # the one device sync for these steps
            blocks.append(PhaseBlock.from_packed(p.phase_names[i], p.phase_paths[i], [it[0] for it in items],
                                                 [it[2] for it in items], packed, np.stack([it[4] for it in items]),
                                                 np.array([it[5] for it in items], dtype=bool)))
        for b in blocks:
            self._check(b)
        self._recorder.scalars(blocks)
        now = time.perf_counter()
        t, s, r = self._rate
        if now - t >= 0.5:
            inst = (self.step - s) / (now - t)
            self._rate = (now, self.step, inst if r == 0 else 0.5 * r + 0.5 * inst)
        self.observer.on_metrics(MetricsBatch(blocks, self.status()))

    def _check(self, b: PhaseBlock) -> None:
        leaks = b.frozen & (b.update_norm > 0)
        for j in np.flatnonzero(leaks.any(axis=0)):
            key = (b.var_paths[j], self._freeze_epoch)
            if key not in self._seen_leaks:
                self._seen_leaks.add(key)
                r = int(np.flatnonzero(leaks[:, j])[0])
                self._event("leak", variable=b.var_paths[j], phase=b.phase, at_step=int(b.steps[r]),
                            update_norm=float(b.update_norm[r, j]), method=self._method)
        bad = ~np.isfinite(b.loss)
        if bad.any() and b.phase not in self._nan_phases:
            # once per episode: a loss that stays NaN is not re-reported every fetch (a resume re-arms it)
            self._nan_phases.add(b.phase)
            r = int(np.flatnonzero(bad)[0])
            self._event("nan", phase=b.phase, at_step=int(b.steps[r]), value=str(b.loss[r]))
            if self.config.pause_on_nan:
                self._set_paused(True, reason="nan")
        elif len(b.loss) and np.isfinite(b.loss[-1]):
            self._nan_phases.discard(b.phase)

    def _sample(self) -> None:
        p = self.prepared
        exp = p.experiment
        if exp.sample is None or exp.sample_kind == "none" or type(self.observer).on_samples is Observer.on_samples:
            return  # nobody listens (headless): do not spend steps drawing samples
        from .experiment import SampleContext
        n = 64 if exp.sample_kind == "images" else 512
        data = None if p.data is None else p.data.read_value()
        batch = None
        if data is not None:
            idx = np.random.default_rng(self.step).integers(0, int(data.shape[0]), n)
            batch = np.asarray(data)[idx]
        ctx = SampleContext(exp.models, p.sample_rng, batch, data, n)
        for k, v in exp.extra.items():
            setattr(ctx, k, v)
        try:
            out = exp.sample(ctx)
        except Exception as e:  # noqa: BLE001 - a broken sample view must not stop training
            exp.sample = None
            self._event("warning", message=f"sample() failed and is turned off: {type(e).__name__}: {e}")
            return
        self.observer.on_samples({"kind": exp.sample_kind, "step": self.step, **out})

    def _save_checkpoint(self) -> None:
        if self._recorder is None or self.step == 0 or getattr(self, "_last_ckpt", -1) == self.step:
            return
        self._last_ckpt = self.step
        ckpt, manager = self._ckpt
        ckpt.step.assign(self.step)
        path = manager.save(checkpoint_number=self.step)
        self._event("checkpoint", path=str(Path(path).relative_to(self.run_dir)))


def default_run_dir(config: RunConfig, folder: str | Path = "runs") -> Path:
    """FOLDER/NAME-YYYYmmdd-HHMMSS, with -2, -3, ... if that exists (headless and the window alike)."""
    name = Path(config.experiment_file).stem if config.experiment_file else (config.example or "run")
    base = Path(folder) / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return p
