"""Where a sweep's point stands, end to end (training_core/cli/sweep.py, docs/sweeps.md): real headless sweeps of
two points on the ring, a few steps each. A failed point (a NaN it halted on) makes the sweep's exit code 1 and
is skipped, named, on `--resume`; SIGTERM stops the point that trains at its next step with its final
checkpoint, and `--resume` continues it from there, one timeline; a point killed before its first checkpoint
("cut") is moved to dropped/ and begun again; a point another process trains is refused with one line.
Progress is read from the run directories (polling), never from the clock."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from training_core import read_events, read_scalars
from training_core.base import events as E
from training_core.rundir.layout import checkpoint_steps
from training_core.runs.sweep import Sweep

from .helpers import error_lines, main_cmd, run_all, start, wait_for

RING = ["--headless", "--sweep", "--example", "ring", "--no-tensorboard", "--quiet"]
TIMEOUT = 600


def _run(*args: str) -> object:
    return run_all({"it": main_cmd(*args)}, timeout=TIMEOUT)["it"]


def _said(stdout: str, point) -> str:
    """The line the sweep printed about `point` (`[point K/N] NAME: ...`)."""
    return next(ln for ln in stdout.splitlines() if f"] {point.name}: " in ln)


def _loss_steps(run) -> np.ndarray:
    return np.sort(np.concatenate([s.steps for t, s in read_scalars(run).items() if t.startswith("loss/")]))


def _trained_a_step(run) -> bool:
    try:
        return any(len(s.steps) for t, s in read_scalars(run).items() if t.startswith("loss/"))
    except (OSError, ValueError):  # (being written)
        return False


# -- a failed point ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """lr.D=1e12 makes the loss inf within a few steps: a headless run halts on it (on_nan: stop)."""
    d = tmp_path_factory.mktemp("failed") / "sweep"
    first = _run(*RING, "--steps", "40", "--checkpoint-every", "0", "--grid", "lr.D=1e12,1e-4", "--sweep-dir", str(d))
    again = _run("--headless", "--resume", str(d), "--quiet")
    return Sweep.open(d), first, again


def test_a_failed_point_gives_the_sweep_exit_code_1_and_the_others_still_run(failed):
    sweep, first, _ = failed
    assert first.returncode == 1, first.stderr
    states = sweep.states()
    assert [s.state for s in states] == ["failed", "done"]
    events = read_events(sweep.run_dir(sweep.points[0]))
    stops = [e for e in events if isinstance(e, E.Stop)]
    # halted on the NaN, not done. The NaN came early; the stop follows it, but how many steps later depends on
    # when the host reads the NaN's batch (the machine's load), so the stop may fall on the last step
    nans = [e for e in events if isinstance(e, E.Nan)]
    assert [s.reason for s in stops] == ["halted"] and nans and nans[0].at_step < 40
    assert nans[0].at_step <= stops[0].step <= 40
    assert states[0].detail == f"it halted at step {stops[0].step}"
    assert "became inf" in first.stderr or "became nan" in first.stderr
    # the closing line names the failed point as --point takes it and as its directory is called, not a bare index
    assert f"1 of 2 points done; failed: point 0 ({sweep.points[0].name})" in first.stdout, first.stdout


def test_resume_skips_a_failed_point_with_the_documented_line_and_still_says_1(failed):
    sweep, first, again = failed
    assert again.returncode == 1, again.stderr
    p0, p1 = sweep.points
    run = sweep.run_dir(p0)
    halted = next(e.step for e in read_events(run) if isinstance(e, E.Stop))
    assert _said(again.stdout, p0).endswith(
        f"failed earlier (it halted at step {halted}); skipped (move {run} away to run it again)")
    assert _said(again.stdout, p1).endswith("done already; skipped")
    assert sum(isinstance(e, E.Start) for e in read_events(run)) == 1  # not run again


# -- SIGTERM, and a point another process trains --------------------------------------------------------------
STEPS, EVERY = 150, 20


@pytest.fixture(scope="module")
def terminated(tmp_path_factory):
    """The sweep gets SIGTERM once its point has a checkpoint; while that point trains, `--point K` of it from
    another process is refused; then `--resume` finishes the sweep."""
    d = tmp_path_factory.mktemp("sigterm") / "sweep"
    victim = start(main_cmd(*RING, "--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--grid", "seed=0,1",
                            "--sweep-dir", str(d)))
    try:
        def training() -> int | None:  # the point being trained, once it has a checkpoint after step 0 behind it
            if not (d / "sweep.toml").is_file():
                return None
            s = Sweep.open(d)
            return next((p.index for p in s.points if s.state(p).state == "running"
                         and checkpoint_steps(s.run_dir(p))[-1:] >= [EVERY]), None)
        assert wait_for(lambda: training() is not None or victim.poll() is not None, timeout=TIMEOUT)
        busy = training()
        assert busy is not None, "the sweep ended before its point could be stopped"
        refused = _run("--headless", "--sweep", str(d), "--point", str(busy), "--quiet")
        victim.send_signal(signal.SIGTERM)
        out, err = victim.communicate(timeout=TIMEOUT)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.communicate(timeout=60)
    sweep = Sweep.open(d)
    states = [s.state for s in sweep.states()]
    assert "partial" in states, f"no point was stopped mid-way: {states}"
    stopped = states.index("partial")  # (busy, unless it ended between the refusal and the signal)
    run = sweep.run_dir(sweep.points[stopped])
    after_stop = read_events(run), checkpoint_steps(run), states
    resumed = _run("--headless", "--resume", str(d), "--quiet")
    return sweep, busy, stopped, victim.returncode, err, refused, after_stop, resumed


def test_a_point_another_process_trains_is_refused_with_one_line_naming_the_fix(terminated):
    sweep, busy, *_, refused, _, _ = terminated
    point = sweep.points[busy]
    assert refused.returncode == 2
    lines = error_lines(refused.stderr)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: point {busy} ({point.name}) is being trained now by pid ")
    assert lines[0].endswith(f"wait for it to end, or stop that process (it keeps its record) and run --point "
                             f"{busy} again")


def test_sigterm_stops_the_point_at_its_next_step_with_its_final_checkpoint(terminated):
    sweep, _, busy, code, err, _, (events, ckpts, states), _ = terminated
    assert code == 130, err  # the shell's code for an interrupt, and the line that says how to continue
    assert f"continue it with: python {main_cmd()[1]} --headless --resume {sweep.dir}" in err
    stop = [e for e in events if isinstance(e, E.Stop)]
    assert [s.reason for s in stop] == ["stopped"] and EVERY <= stop[0].step < STEPS
    assert ckpts[-1] == stop[0].step  # a checkpoint at the step it stopped at
    assert states[busy] == "partial" and all(s == "new" for s in states[busy + 1:])


def test_resume_continues_the_stopped_point_from_that_step_and_finishes_every_point_once(terminated):
    sweep, _, busy, _, _, _, (events, _, _), resumed = terminated
    assert resumed.returncode == 0, resumed.stderr
    stopped_at = next(e.step for e in events if isinstance(e, E.Stop))
    assert _said(resumed.stdout, sweep.points[busy]).endswith(f"resumed from step {stopped_at}")
    assert [s.state for s in sweep.states()] == ["done", "done"]
    for p in sweep.points:
        run = sweep.run_dir(p)
        record = read_events(run)
        assert sum(isinstance(e, E.Start) for e in record) == 1
        assert [s.reason for s in record if isinstance(s, E.Stop)][-1] == "done"
        assert np.array_equal(_loss_steps(run), np.arange(1, STEPS + 1)), p.name  # every step once
    resumes = [e for e in read_events(sweep.run_dir(sweep.points[busy])) if isinstance(e, E.Resumed)]
    assert [r.checkpoint for r in resumes] == [f"checkpoints/ckpt-{stopped_at}"]


# -- a point cut before its first checkpoint -----------------------------------------------------------------
def _cut_sweep(d) -> bool:
    """A sweep SIGKILLed while its first point starts: its run directory written, no checkpoint yet (a run writes
    its first at step 0, right after it starts). Stopped (SIGSTOP) first, so whether a checkpoint was written
    is read for certain before the kill; False if one was (the kill came too late: try again)."""
    victim = start(main_cmd(*RING, "--steps", str(STEPS), "--checkpoint-every", "0", "--grid", "seed=0,1",
                            "--sweep-dir", str(d)))
    run = d / "runs"

    def starting() -> bool:
        first = sorted(run.iterdir()) if run.is_dir() else []
        return bool(first) and (first[0] / "events.jsonl").is_file() and not checkpoint_steps(first[0])
    try:
        assert wait_for(lambda: starting() or victim.poll() is not None, timeout=TIMEOUT, interval=0.01)
        victim.send_signal(signal.SIGSTOP)
        return starting()
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)


@pytest.fixture(scope="module")
def cut(tmp_path_factory):
    d = next((d for d in (tmp_path_factory.mktemp("cut") / "sweep" for _ in range(3)) if _cut_sweep(d)), None)
    assert d is not None, "three sweeps each wrote their first checkpoint before the kill"
    sweep = Sweep.open(d)
    before = [s.state for s in sweep.states()], read_events(sweep.run_dir(sweep.points[0]))
    resumed = _run("--headless", "--resume", str(d), "--quiet")
    return sweep, before, resumed


def test_a_point_cut_before_its_first_checkpoint_is_moved_to_dropped_and_begun_again(cut):
    sweep, (states, events), resumed = cut
    assert states == ["cut", "new"]
    assert not any(isinstance(e, (E.Stop, E.Checkpoint)) for e in events)
    assert resumed.returncode == 0, resumed.stderr
    p0 = sweep.points[0]
    kept = sweep.dir / "dropped" / p0.name
    assert _said(resumed.stdout, p0).endswith(
        f"was cut before its first checkpoint: begun again (what it wrote is in {kept})")
    assert read_events(kept) == events  # what the killed run wrote, kept as it was
    assert [s.state for s in sweep.states()] == ["done", "done"]
    run = sweep.run_dir(p0)
    assert not any(isinstance(e, E.Resumed) for e in read_events(run))  # begun again, not resumed
    assert np.array_equal(_loss_steps(run), np.arange(1, STEPS + 1))
