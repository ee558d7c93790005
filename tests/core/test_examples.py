"""The three built-in examples train without a window, give finite losses and the samples the
window draws; the factorisation really learns."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import RunConfig, read_events, read_scalars

from .helpers import Script, run, snapshot


class Samples(Script):
    def __init__(self, at=None) -> None:
        super().__init__(at)
        self.samples: list[dict] = []

    def on_samples(self, samples: dict) -> None:
        self.samples.append(samples)


def example(name: str, run_dir, steps: int, at=None, **kw) -> tuple:
    """Run a built-in example with samples after every step, as a watching window would get them."""
    obs = Samples(at)
    trainer = run(RunConfig(example=name, steps=steps, seed=0, run_dir=str(run_dir), sample_seconds=0.0,
                            checkpoint_every=0, **kw), obs)
    sc = read_scalars(run_dir)
    losses = {t: s for t, s in sc.items() if t.startswith("loss/")}
    assert sum(len(s.steps) for s in losses.values()) == steps
    assert all(np.isfinite(s.values).all() for s in sc.values())
    assert not [e for e in read_events(run_dir) if e.kind in ("error", "nan", "retrace", "warning")]
    return trainer, obs, losses


def test_ring(run_dir):
    trainer, obs, losses = example("ring", run_dir, 40)
    assert set(losses) == {"loss/D", "loss/G"} and trainer.prepared.experiment.sample_kind == "points2d"
    s = obs.samples[-1]
    assert s["kind"] == "points2d" and s["real"].shape == (512, 2) and s["fake"].shape == (512, 2)
    assert np.isfinite(s["fake"]).all() and np.abs(np.linalg.norm(s["real"], axis=1) - 2).max() < 0.2


def test_digits_with_a_frozen_batchnorm(run_dir):
    before = {}
    trainer, obs, losses = example("digits", run_dir, 12, at={0: [lambda t: before.update(snapshot(t))]},
                                   freeze=["generator/bn_1"])
    after = snapshot(trainer)
    assert set(losses) == {"loss/D", "loss/G"}
    bn = [p for p in after if p.startswith("generator/bn_1/")]
    assert len(bn) == 4 and all(after[p].tobytes() == before[p].tobytes() for p in bn)
    assert after["generator/bn_2/moving_mean"].tobytes() != before["generator/bn_2/moving_mean"].tobytes()
    s = obs.samples[-1]
    assert s["kind"] == "images" and s["fake"].shape == (64, 8, 8, 1) and s["real"].shape == (64, 8, 8, 1)
    assert np.abs(s["fake"]).max() <= 1 and np.abs(s["real"]).max() <= 1


def test_factorization_error_decreases(run_dir):
    trainer, obs, losses = example("factorization", run_dir, 300)
    assert set(losses) == {"loss/W", "loss/C"}
    mse = np.concatenate([losses["loss/W"].values, losses["loss/C"].values])[
        np.argsort(np.concatenate([losses["loss/W"].steps, losses["loss/C"].steps]))]
    assert mse[-1] < 0.2 * mse[0], (mse[0], mse[-1])
    assert np.mean(mse[-20:]) < np.mean(mse[100:120]) < np.mean(mse[:20])
    first, last = obs.samples[0], obs.samples[-1]
    assert first["kind"] == last["kind"] == "matrix" and last["reconstruction"].shape == last["target"].shape == (60, 40)
    assert last["error"] < 0.5 * first["error"]
    np.testing.assert_allclose(last["error"], np.sqrt(np.mean((last["target"] - last["reconstruction"]) ** 2)),
                               rtol=1e-5)
    assert last["error"] ** 2 == pytest.approx(mse[-1], rel=0.2)  # the sample is drawn after the last step
