"""Live controls sent from another thread, as the window sends them: each applies at the next step
boundary (the step in its event is the last step before it), and none of them retraces."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from training_core import (Continue, Observer, Pause, SetFreeze, SetFreezeMethod, SetLearningRate, SetRatio, Step,
                           Stop, Trainer, UserError, read_events, read_scalars)

from .helpers import Script, config, phase_of_step, run, runs_of, tiny_gan, wait_for, write_file

K = "generator/dense_1/kernel"


class Waiter(Observer):
    """Collects events (on the training thread) and lets the test thread wait for one."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.cond = threading.Condition()

    def on_event(self, event: dict) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def wait(self, kind: str, after: int = 0, **match) -> dict:
        """The first event of `kind` (the `after`-th and later) whose fields match."""
        def found():
            hits = [e for e in self.events if e.kind == kind and all(getattr(e, k) == v for k, v in match.items())]
            return hits[after] if len(hits) > after else None
        with self.cond:
            assert self.cond.wait_for(found, timeout=60), f"no {kind} event {match}"
            return found()


class Background:
    """A trainer running on a worker thread, like the window's QThread."""

    def __init__(self, cfg) -> None:
        self.obs = Waiter()
        self.trainer = Trainer(cfg, self.obs)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.trainer.run()
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def after(self, steps: int) -> None:
        start = self.trainer.step
        assert wait_for(lambda: self.trainer.step >= start + steps, timeout=60)

    def send(self, command, kind: str, **match) -> int:
        """Send from this (the test) thread; return the step its event records."""
        n = len([e for e in self.obs.events if e.kind == kind])
        self.trainer.send(command)
        return self.obs.wait(kind, after=n, **match).step

    def stop(self) -> None:
        self.trainer.send(Stop())
        self.thread.join(60)
        assert not self.thread.is_alive() and self.error is None, self.error


def test_freeze_schedule_and_lr_from_another_thread_apply_at_the_next_step(tmp_path, run_dir):
    bg = Background(config(tiny_gan(tmp_path, "sgd"), run_dir, fetch_every=20))
    bg.after(60)
    t_freeze = bg.send(SetFreeze([K]), "freeze")
    bg.after(60)
    t_ratio = bg.send(SetRatio({"policy": "fixed", "ratio": [3, 1]}), "ratio")
    bg.after(60)
    t_lr = bg.send(SetLearningRate("G", 0.01), "lr")
    bg.after(60)
    bg.stop()
    trainer = bg.trainer
    assert t_freeze < t_ratio < t_lr < trainer.step

    sc = read_scalars(run_dir)
    steps, norm = sc[f"update_norm/{K}"].steps, sc[f"update_norm/{K}"].values
    assert (norm[steps <= t_freeze] > 0).all() and (norm[steps > t_freeze] == 0).all()
    assert (steps <= t_freeze).sum() >= 20 and (steps > t_freeze).sum() >= 20
    assert (sc["update_norm/generator/dense_1/bias"].values > 0).all()

    phases = phase_of_step(run_dir)
    before = runs_of([p for s, p in phases.items() if s <= t_ratio])
    after = runs_of([p for s, p in phases.items() if s > t_ratio])
    assert all(n == 1 for _, n in before)
    assert all(r == (("D", 3) if r[0] == "D" else ("G", 1)) for r in after[1:-1]) and len(after) > 10
    assert after[0][1] <= (3 if after[0][0] == "D" else 1)  # the stay under way continues, not restarts

    # plain SGD: the update is exactly lr * gradient, so ||dW|| / ||g|| reads the learning rate in force
    u, g = sc["update_norm/generator/out/kernel"], sc["grad_norm/generator/out/kernel"]
    lr = u.values / g.values
    np.testing.assert_allclose(lr[u.steps <= t_lr], 0.05, rtol=1e-3)
    np.testing.assert_allclose(lr[u.steps > t_lr], 0.01, rtol=1e-3)

    assert trainer.traces == 4 and trainer.retraces == 0
    assert not [e for e in read_events(run_dir) if e.kind in ("retrace", "error", "rejected")]


def test_returning_to_an_earlier_configuration_does_not_retrace(tmp_path, run_dir):
    bg = Background(config(tiny_gan(tmp_path, "adam"), run_dir, fetch_every=20))
    for command, kind in [(SetFreeze([K]), "freeze"), (SetFreezeMethod("gate"), "method"),
                          (SetRatio({"policy": "adaptive", "thresholds": [1.0, 0.5]}), "ratio"),
                          (SetFreeze(["discriminator"]), "freeze"), (SetFreeze([]), "freeze"),
                          (SetFreezeMethod("exact"), "method"), (SetFreeze([K]), "freeze"),
                          (SetRatio({"policy": "fixed", "ratio": [1, 1]}), "ratio"), (SetFreeze([]), "freeze")]:
        bg.after(15)
        bg.send(command, kind)
    bg.after(15)
    bg.stop()
    assert bg.trainer.traces == 4 and bg.trainer.retraces == 0
    events = read_events(run_dir)
    assert not [e for e in events if e.kind == "retrace"]
    traces = [e for e in events if e.kind == "trace"]
    assert sorted((e.phase, e.variant) for e in traces) == [("D", "fast"), ("D", "masked"), ("G", "fast"),
                                                            ("G", "masked")]
    # D's fast variant before the run, G's during it, the masked ones after the first step: all reported by the
    # first freeze (loop/warmup.py)
    first_freeze = next(e.step for e in events if e.kind == "freeze")
    assert [(e.phase, e.variant, e.step) for e in traces][0] == ("D", "fast", 0)
    assert all(1 <= e.step <= first_freeze for e in traces if e.variant == "masked")
    assert all(e.step <= first_freeze for e in traces)


def test_pause_step_continue_from_another_thread(tmp_path, run_dir):
    bg = Background(config(tiny_gan(tmp_path), run_dir, fetch_every=20))
    bg.after(20)
    paused_at = bg.send(Pause(), "pause", reason="user")
    assert wait_for(lambda: bg.trainer.status().paused)
    assert not wait_for(lambda: bg.trainer.step != paused_at, timeout=0.5), "trained while paused"
    assert bg.send(Step(3), "step") == paused_at
    assert bg.obs.wait("pause", reason="step").step == paused_at + 3
    assert bg.trainer.step == paused_at + 3
    bg.send(Continue(), "continue")
    bg.after(10)
    rejected = bg.send(SetFreeze(["nosuch"]), "rejected")
    bg.stop()
    assert rejected > paused_at + 3
    msg = next(e for e in read_events(run_dir) if e.kind == "rejected").message
    assert "nosuch" in msg and "\n" not in msg
    assert list(phase_of_step(run_dir)) == list(range(1, bg.trainer.step + 1))


def test_malformed_commands_are_rejected_and_training_goes_on(tmp_path, run_dir):
    """A command with a wrong value (a typo in a replayed or remote command) must not end a long run."""
    bad = [SetLearningRate("G", "fast"), Step("x"), SetRatio({"policy": "fixed", "ratio": ["x", 1]}),
           SetRatio({"policy": "adaptive", "thresholds": [1, 2], "max_steps": "many"}), SetFreeze([3]),
           SetFreezeMethod("leaky"), SetLearningRate("Q", 1e-3)]
    script = Script({5: bad})
    trainer = run(config(tiny_gan(tmp_path), run_dir, steps=12), script)
    assert trainer.step == 12
    rejected = script.kinds("rejected")
    assert [e.command for e in rejected] == [c.to_dict() for c in bad]
    assert all(e.step == 5 and e.message and "\n" not in e.message for e in rejected)
    assert not script.kinds("error", "lr", "ratio", "freeze", "method", "step")


def test_a_phase_left_with_nothing_to_train_is_warned_of_after_the_freeze(tmp_path, run_dir):
    """The record reads cause, then effect: the `freeze` of all of G, then the warning that G is skipped
    (the warning came first, logged while the freeze set was being applied)."""
    script = Script({5: [SetFreeze(["generator"])]})
    run(config(tiny_gan(tmp_path), run_dir, steps=12), script)
    kinds = [(e.kind, getattr(e, "phase", None)) for e in script.events if e.kind in ("freeze", "warning")]
    assert kinds == [("freeze", None), ("warning", "G")]
    assert "G has all its variables frozen" in script.kinds("warning")[0].message


def test_learning_rate_of_a_scheduled_optimizer_is_refused_cleanly(tmp_path, run_dir):
    exp = write_file(tmp_path, "scheduled.py", (tmp_path / tiny_gan(tmp_path).name).read_text().replace(
        "keras.optimizers.Adam(0.01, beta_1=0.5)",
        "keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.01, 10, 0.5))"))
    with pytest.raises(UserError) as e:
        Trainer(config(exp, run_dir, steps=5, lr={"D": 1e-3})).prepare()
    assert "schedule" in str(e.value) and "\n" not in str(e.value)
    script = Script({3: [SetLearningRate("D", 1e-3)]})
    trainer = run(config(exp, run_dir, steps=8), script)
    assert trainer.step == 8 and len(script.kinds("rejected")) == 1 and not script.kinds("error", "lr")
