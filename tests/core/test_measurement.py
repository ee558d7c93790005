"""The recorded numbers are the true ones: update norms are the real weight differences (checked
against numpy snapshots taken between steps), gradient norms and losses match an independent
recomputation, and a non-finite loss is caught."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from training_core import SetFreeze, Stop, read_events
from training_core.experiment.api import Models
from training_core.experiment.loading import load_module

from .helpers import Script, config, nan_experiment, regression, run, snapshot


def test_update_norms_are_the_true_weight_differences(tmp_path, run_dir):
    path = regression(tmp_path, "adam")
    snaps: dict[int, dict] = {}
    keep = [lambda t: snaps.__setitem__(t.step, snapshot(t))]
    n = 12
    script = Script({k: keep + ([SetFreeze(["net/dense_1/bias"])] if k == 6 else []) for k in range(n + 1)})
    run(config(path, run_dir, steps=n), script)
    assert sorted(snaps) == list(range(n + 1))

    mod = load_module(path)
    net = mod.net()
    ctx = type("Ctx", (), {"data": tf.constant(mod.DATA), "models": Models(net=net)})()
    by_step = {int(s): (b, r) for b in script.blocks for r, s in enumerate(b.steps)}
    assert sorted(by_step) == list(range(1, n + 1))
    for k in range(1, n + 1):
        b, r = by_step[k]
        before, after = snaps[k - 1], snaps[k]
        for v in net.variables:
            v.assign(before[v.path])
        phase_vars = [v for v in net.trainable_variables if v.path in b.var_paths]
        with tf.GradientTape() as tape:
            loss = mod.loss(ctx)
        grads = dict(zip([v.path for v in phase_vars], tape.gradient(loss, phase_vars)))
        np.testing.assert_allclose(b.loss[r], float(loss), rtol=1e-6)
        for j, p in enumerate(b.var_paths):
            diff = np.linalg.norm((after[p] - before[p]).astype(np.float64))
            np.testing.assert_allclose(b.update_norm[r, j], diff, rtol=1e-5, err_msg=f"{p} at step {k}")
            np.testing.assert_allclose(b.update_ratio[r, j], diff / np.linalg.norm(after[p].astype(np.float64)),
                                       rtol=1e-5)
            np.testing.assert_allclose(b.grad_norm[r, j], np.linalg.norm(grads[p].numpy().astype(np.float64)),
                                       rtol=1e-5)
            assert (diff == 0) == (p == "net/dense_1/bias" and k > 6), f"{p} at step {k}: {diff}"
        others = [p for p in after if p not in b.var_paths]
        assert others and all(np.array_equal(after[p], before[p]) for p in others), "only the phase's variables move"


def test_nan_loss_is_an_event_and_pauses(tmp_path, run_dir):
    class StopOnPause(Script):
        def on_event(self, event):
            super().on_event(event)
            if event.kind == "pause":
                self.trainer.send(Stop())

    script = StopOnPause()
    trainer = run(config(nan_experiment(tmp_path), run_dir, steps=50), script)
    events = read_events(run_dir)
    nan = [e for e in events if e.kind == "nan"]
    assert len(nan) == 1 and nan[0].phase == "P" and nan[0].at_step == 2
    pause = [e for e in events if e.kind == "pause"]
    assert [(e.reason, e.step) for e in pause] == [("nan", 2)]
    assert events[-1].kind == "stop" and events[-1].reason == "stopped" and trainer.step == 2
    losses = np.concatenate([b.loss for b in script.blocks])
    assert losses[0] == 0.0 and np.isnan(losses[1])
