"""GAN health: the experiment's own quality measures (`metrics(ctx)`), recorded as `metric/<name>` rows.

Why: a GAN's losses say little about whether it works (they hover while the generator collapses to
one mode); the measures researchers trust are computed from samples, like the ring's modes covered.
An experiment may define `metrics(ctx) -> {name: number}`, with a `SampleContext` of
`engine.measuring.METRIC_SAMPLES` rows and a generator of the measure's own (so it never shifts the
training's random numbers).

Where it runs: beside training, never on it. A real measure (FID, KID) takes seconds, and on the training
thread it halved issue 24's step rate. At a step boundary when a measure is due, the training thread only takes
a snapshot of every model variable and goes on; `metrics(ctx)` runs on that snapshot, in shadow copies of the
models, on a thread of its own (engine/beside.py), and its values come back at a later boundary and are recorded
at the step whose weights they measured, at the wall time of their snapshot. The record holds the later steps'
rows back until then, so scalars.csv stays in step order (observers/record.py); every other observer (the
alarms, the live views) sees every step as it is fetched. A model Keras cannot clone (subclassed) is measured on the
training thread between steps, as before, with one `warning` event saying why; so is every step of
`metrics_seconds = 0` ("every step": the training waits for each, as asked).

When: at the start (step 0), then 0.25, 0.5 and 1 s apart (a run of a few seconds gets a curve too), then
every `metrics_seconds` (2 s), and at the end of a run that reached its step target (on the training thread: it is
over; a Stop or an error ends the run without one, and drops the measure in flight). But never more often than
its cost allows: after a measure that took c seconds, the next starts no sooner than c / `SHARE` after it began,
so that measuring takes at most 2% of the time, beside training or on it: a 3-second FID runs every 150 s, not
every 2 s (where it would keep a core busy for good, or, on the training thread, halve the run). Every measure
re-paces the next from its own cost, so a faster one brings the pace back; except a run's first, which never
paces the next by its cost (the second follows as soon as the interval allows): it pays the first calls and
traces of everything it uses, beside the training's own warm-up, and is no estimate of the rest (in issue 24 the
`shapes` example's first FID/KID took 8.23 s under load, paced the next at 165 s, and the curves stayed one point
long). A measure after the first that takes longer than its interval (`metrics_seconds`) says so once, in a
`warning` event naming its cost and the interval it now runs at: a measure slow every time (3 s) is at c / `SHARE`
from the second on, and warns then. A measure due while a periodic checkpoint would come before it ends (the
checkpoint would have to wait for it, since the record must hold every step a checkpoint holds) waits, and begins
at that checkpoint's own step instead: its snapshot is then the checkpoint's weights, and the checkpoint does not
wait for it. Its value reaches the record after the checkpoint; a run killed before it comes in measures that
step again when it is resumed (the same value: its generator is keyed by the seed and the step).

A `metrics()` that raises or returns something that is not a dict of numbers is turned off for the
rest of the run, with a `warning` event: a broken measure must not end a long run.
"""
from __future__ import annotations

import math
import time
import traceback
from pathlib import Path
from typing import Any

from training_core.base import events as E
from training_core.experiment.usercode import first_line, user_line
from training_core.observers.base import Observer, RunHandle

METRIC_PREFIX = "metric/"
FIRST_INTERVAL_S = 0.25  # the first measures come faster: a short run's curve is not two points
#: the share of the run's time measuring may take: after a measure of c seconds the next starts c / SHARE after
#: it began at the soonest. Beside training the measure competes for the cores and the GIL (on this project's
#: 2 cores, a CPU-bound measure slows the training by about its share); on the training thread it stops it.
#: Why 2% and not 5%: the shapes DCGAN's FID/KID in the window cost the training 0.022-0.107 of its steps/s at
#: 5% (mean 0.062, five runs) and -0.012-0.049 at 2% (mean 0.018, four runs), alternated at one quiet hour
#: (bench/PERFORMANCE.md 2026-12-03 15:40-16:07); a 0.3 s measure still comes every 15 s
SHARE = 0.02
#: a measure due when the next periodic checkpoint is fewer than this many times the steps the last measure
#: lasted away waits until that checkpoint's step (a checkpoint waits for a measure of an earlier step)
CHECKPOINT_MARGIN = 1.5
# Cost: the ring's measure (2,048 generator points, nearest modes) takes 20-30 ms on this project's CPU: beside
# training at the 2 s pace; a 3 s measure (a sleep) runs once a minute and costs the training's steps/s nothing
# measurable (bench/metrics_bench.py, bench/PERFORMANCE.md).


class HealthMetrics(Observer):
    """Calls the experiment's `metrics(ctx)` at the start, every `seconds` (paced by its cost) and at the end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._run: RunHandle | None = None
        self._on = False
        self._on_shadows = False  # measures run beside training (shadow models), not on the training thread
        self._next = math.inf
        self._interval = seconds
        self._started = 0.0  # perf_counter when the last measure began
        self._last_step = -1
        self._steps_per_measure = 0  # training steps the last measure beside training lasted
        self._count = 0  # measures this run took
        self._warned = False

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run
        if not run.has_metrics:
            return
        self._on = True
        if self.seconds > 0:
            why = run.shadow_models()
            self._on_shadows = why is None
            if why:
                run.emit(E.Warning(message=f"metrics() runs on the training thread, between steps, which waits for "
                                           f"it: {why}"))
        self._interval = min(FIRST_INTERVAL_S, self.seconds)
        self._started = time.perf_counter()
        self._next = self._started + self._interval
        if not (run.resumed and self._measured_here(run)):
            self._measure(run)

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, E.Rollback):  # the measures after the checkpoint were cut: their steps come again
            self._last_step = -1

    def on_step_end(self, run: RunHandle) -> None:
        if run.measure_step is not None and not run.collect_measure():
            return
        if time.perf_counter() >= self._next and not self._checkpoint_soon(run):
            self._measure(run)

    def on_idle(self, run: RunHandle) -> None:
        if run.measure_step is not None:
            run.collect_measure()

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        """A run that reached its step target is measured at its last step (the run took the measure in flight
        first). A Stop or an error is not: the run ends now, without a measure's seconds (the measure in flight
        is dropped), and the window's exit, which kills a training process that takes over a minute to end,
        keeps the final checkpoint and the `stop` event."""
        if reason == "done" and self._on:
            self._measure(run, here=True)

    # -- measuring ----------------------------------------------------------------------------------------------
    def _measured_here(self, run: RunHandle) -> bool:
        """Whether the record holds a measure at this step: a resumed run's record keeps the measures up to its
        checkpoint, but one begun at the checkpoint's own step was not waited for by it (its snapshot is the
        checkpoint's weights), and a run killed before it came in has none there: it is measured again, with the
        same value (the generator is keyed by the seed and the step, the weights are the checkpoint's)."""
        from training_core.rundir.layout import SCALARS_FILE
        from training_core.rundir.trim import tags_at_step
        if run.run_dir is None:
            return False
        return any(t.startswith(METRIC_PREFIX) for t in tags_at_step(Path(run.run_dir) / SCALARS_FILE, run.step))

    def _checkpoint_soon(self, run: RunHandle) -> bool:
        """Whether the next periodic checkpoint comes before a measure started now would be done (by the steps the
        last one lasted); at a checkpoint's own step never, so that measures go on when checkpoints are dense."""
        every = run.config.checkpoint_every
        if not (self._on_shadows and every and self._steps_per_measure):
            return False
        to_next = every - run.step % every
        return to_next < every and to_next <= CHECKPOINT_MARGIN * self._steps_per_measure

    def _measure(self, run: RunHandle, here: bool = False) -> None:
        """A measure at this step: beside training, or (`here`, or no shadows) on this thread now."""
        if run.step == self._last_step:
            return
        self._last_step = run.step
        self._started = time.perf_counter()
        if self._on_shadows and not here:
            self._next = math.inf  # set when it is taken, from its cost
            run.measure_beside(self._taken)
            return
        try:
            values = run.measure()
        except Exception as e:  # noqa: BLE001 - a broken measure must not stop training
            self._fail(run, e, run.step)
            return
        self._paced(run, time.perf_counter() - self._started)
        if values:
            run.record_scalars({METRIC_PREFIX + k: v for k, v in values.items()})

    def _taken(self, got: Any) -> None:
        """The measure beside training is in (`engine.beside.Measured`): its values at the step it measured, at the
        wall time of its snapshot (plotted against wall time, a measure lands where its step is)."""
        run = self._run
        if run is None:
            return
        if got.error is not None:
            self._fail(run, got.error, got.step)
            return
        self._steps_per_measure = max(1, run.step - got.step)
        self._paced(run, got.seconds)
        if got.values:
            run.record_scalars({METRIC_PREFIX + k: v for k, v in got.values.items()}, step=got.step, wall=got.wall)

    def _paced(self, run: RunHandle, cost: float) -> None:
        """When the next measure may start, after one that took `cost` seconds: the interval (0.25, 0.5, 1, 2,
        2, ... s after the last one began) or `cost / SHARE`, whichever is later, from each measure's own cost (a
        faster one brings the pace back). `seconds` = 0: every step. A run's first measure never paces the next by
        its cost, and does not warn: it pays the first call (and the traces) of everything it uses, and at the
        start the training's own warm-up competes with it. The ring's 25 ms measure took 0.23-0.35 s there (which
        would have spaced the early measures 5-7 s apart), the `shapes` FID/KID 8.23 s under load (165 s apart:
        issue 24's empty curves). The second measure is the first estimate of the cost; one slow every time is
        paced (and warns) from it."""
        self._count += 1
        if self.seconds == 0:
            self._next = 0.0
            return
        first = self._count == 1
        self._next = self._started + max(self._interval, 0.0 if first else cost / SHARE)
        self._interval = min(2 * self._interval, self.seconds)
        if not first and cost > self.seconds and not self._warned:
            self._warned = True
            where = "beside training" if self._on_shadows else "on the training thread, which waits for it"
            run.emit(E.Warning(message=f"metrics() took {cost:.2f} s, more than its interval of {self.seconds:g} s "
                                       f"(metrics_seconds); it now runs every {cost / SHARE:.3g} s, {where}, so that "
                                       f"it takes at most {SHARE:.0%} of the time"))

    def _fail(self, run: RunHandle, e: BaseException, step: int) -> None:
        """metrics() raised measuring `step` (on this thread or on the metrics thread, whose traceback the
        exception keeps): turned off, with a warning worded as every failure of user code is (its first line and
        the experiment file's line, experiment/usercode.py), the traceback as its detail, marked at `step`."""
        run.drop_metrics()
        self._on, self._next = False, math.inf
        run.emit(E.Warning(message=f"metrics() failed and is turned off: {first_line(e)}"
                                   f"{user_line(e, run.experiment_source)}; fix the experiment file (measuring step "
                                   f"{step})", detail="".join(traceback.format_exception(e)), at_step=step))
