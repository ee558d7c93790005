"""The run directory is one consistent record: its files parse, agree with each other and with
TensorBoard's reader, restore with tf.train.Checkpoint, reproduce the run, and survive a SIGKILL."""
from __future__ import annotations

import signal
import tomllib

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training_core.engine.checkpoints import CheckpointStore
from training_core import Observer, RunConfig, Trainer, read_config, read_events, read_scalars

from .helpers import main_cmd, start, wait_for

STEPS = 150
DOCUMENTED_KINDS = {"trace", "retrace", "start", "pause", "continue", "step", "freeze", "ratio", "lr", "method", "leak",
                    "nan", "warning", "rejected", "error", "checkpoint", "stop", "sample", "checkpoint_requested"}


def test_every_event_kind_is_documented_in_the_readme():
    from training_core.base.events import EVENTS
    readme = (Path(__file__).resolve().parents[2] / "docs" / "run-directory.md").read_text(encoding="utf-8")
    section = readme[readme.index("Event kinds"):readme.index("`training_core.read_scalars(run_dir)`")]
    assert set(EVENTS) >= DOCUMENTED_KINDS
    assert [k for k in EVENTS if f"`{k}`" not in section] == []


@pytest.fixture(scope="module")
def ring_run(tmp_path_factory):
    """The ring example with a freeze and a 2:1 ratio, every file on; the trainer is kept for comparisons."""
    d = tmp_path_factory.mktemp("record") / "run"
    cfg = RunConfig(example="ring", steps=STEPS, seed=3, run_dir=str(d), schedule={"policy": "fixed", "ratio": [2, 1]},
                    freeze=["discriminator/dense_1"], var_every=5, checkpoint_every=60, sample_seconds=1e9)
    trainer = Trainer(cfg)
    trainer.run()
    return d, trainer


def test_config_toml_parses_and_round_trips(ring_run):
    d, trainer = ring_run
    with open(d / "config.toml", "rb") as f:
        raw = tomllib.load(f)
    assert raw == read_config(d)
    cfg = RunConfig.from_dict(raw)
    assert cfg == trainer.config
    assert (cfg.example, cfg.seed, cfg.steps, cfg.freeze) == ("ring", 3, STEPS, ["discriminator/dense_1"])
    assert cfg.schedule == {"policy": "fixed", "ratio": [2, 1]} and set(cfg.lr) == {"D", "G"}


def test_events_are_ordered_and_agree_with_the_scalars(ring_run):
    d, trainer = ring_run
    events = read_events(d)
    assert all({"step", "kind", "time"} <= e.to_dict().keys() for e in events)
    kinds = [e.kind for e in events]
    assert set(kinds) <= DOCUMENTED_KINDS
    first = kinds.index("start")
    # what happened while preparing (before the directory existed) comes first, at step 0
    assert set(kinds[:first]) == {"trace"} and all(e.step == 0 for e in events[:first + 1])
    assert kinds[-1] == "stop" and events[-1].step == STEPS and events[-1].reason == "done"
    assert events[-1].retraces == 0 and "retrace" not in kinds
    steps = [e.step for e in events]
    assert steps == sorted(steps)
    assert [e.step for e in events if e.kind == "checkpoint"] == [0, 60, 120, 150]  # step 0: resumable at once
    assert events[first].freeze == ["discriminator/dense_1"] and events[first].phases == ["D", "G"]

    sc = read_scalars(d)
    loss_steps = np.sort(np.concatenate([sc["loss/D"].steps, sc["loss/G"].steps]))
    np.testing.assert_array_equal(loss_steps, np.arange(1, STEPS + 1))  # one loss row per step, none twice
    assert len(sc["loss/D"].steps) == 100 and len(sc["loss/G"].steps) == 50
    d_steps = sc["loss/D"].steps
    assert sc["update_norm/discriminator/out/kernel"].steps.tolist() == d_steps[4::5].tolist()
    assert sc["grad_norm/generator/out/bias"].steps.tolist() == sc["loss/G"].steps[4::5].tolist()
    assert (sc["update_norm/discriminator/dense_1/kernel"].values == 0).all()
    assert (sc["update_norm/discriminator/dense_2/kernel"].values > 0).all()
    assert all(np.isfinite(s.values).all() for s in sc.values())
    for s in sc.values():
        assert (np.diff(s.steps) > 0).all() and (np.diff(s.wall_time) >= 0).all()


def test_tensorboard_files_hold_the_same_scalars(ring_run):
    d, _ = ring_run
    accs = {}
    for run in ("training", "variables"):  # losses and measures beside the HParams session; the norms apart
        accs[run] = EventAccumulator(str(d / "tb" / run), size_guidance={"scalars": 0})
        accs[run].Reload()
    sc = read_scalars(d)
    assert set(accs["training"].Tags()["scalars"]) == {t for t in sc if t.startswith(("loss/", "metric/"))}
    assert set(accs["variables"].Tags()["scalars"]) == {t for t in sc if not t.startswith(("loss/", "metric/"))}
    for tag, s in sc.items():
        tb = accs["training" if tag.startswith(("loss/", "metric/")) else "variables"].Scalars(tag)
        np.testing.assert_array_equal([e.step for e in tb], s.steps)
        values = np.float32([e.value for e in tb])
        if tag.startswith("loss/"):  # a float32 from the step: 9 significant digits give it back exactly
            np.testing.assert_array_equal(values, s.values.astype(np.float32))
        else:  # norms are float64 on the host; TensorBoard keeps float32
            np.testing.assert_allclose(values, s.values, rtol=2e-7, atol=1e-30)
        np.testing.assert_allclose([e.wall_time for e in tb], s.wall_time, atol=1e-3)


def test_checkpoint_restores_models_optimizers_and_generators(ring_run, tmp_path):
    d, trainer = ring_run
    fresh = Trainer(RunConfig.from_dict({**read_config(d), "run_dir": str(tmp_path / "unused")}))
    fresh.prepare()
    p, q = trainer.prepared, fresh.prepared

    def state(prep):
        out = {f"model/{v.path}": v.numpy() for v in prep.variables}
        for name, opt in zip(prep.phase_names, prep.optimizers):
            out.update({f"opt_{name}/{i}": v.numpy() for i, v in enumerate(opt.variables)})  # paths differ
        out["rng"], out["sample_rng"] = prep.rng.state.numpy(), prep.sample_rng.state.numpy()
        return out

    final = state(p)
    assert state(q)["model/generator/out/kernel"].tobytes() != final["model/generator/out/kernel"].tobytes()
    latest = tf.train.latest_checkpoint(str(d / "checkpoints"))
    assert latest.endswith("ckpt-150")
    store = CheckpointStore(q, tmp_path / "unused")
    store.checkpoint.restore(latest).assert_consumed()
    assert int(store.step.numpy()) == STEPS
    # keys read as scope paths, so a user finds a variable and its optimizer slots by name
    keys = {k for k, _ in tf.train.list_variables(latest)}
    assert "variables/generator/dense_1/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizers/D/slots/discriminator/out/bias/momentum/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizers/G/iteration/.ATTRIBUTES/VARIABLE_VALUE" in keys
    restored = state(q)
    assert restored.keys() == final.keys()
    assert [k for k in final if restored[k].tobytes() != final[k].tobytes()] == []


def test_rerun_from_config_toml_gives_identical_numbers(ring_run, tmp_path):
    """Determinism on CPU: the same config and seed give the same losses and update norms, digit for digit."""
    d, _ = ring_run
    again = tmp_path / "again"
    Trainer(RunConfig.from_dict({**read_config(d), "run_dir": str(again)})).run()
    a, b = read_scalars(d), read_scalars(again)
    assert a.keys() == b.keys()
    for tag in [t for t in a if not t.startswith("metric/")]:  # metrics are taken on a clock, not at fixed steps
        np.testing.assert_array_equal(a[tag].steps, b[tag].steps)
        np.testing.assert_array_equal(a[tag].values, b[tag].values, err_msg=tag)


def test_watching_does_not_change_the_training(tmp_path):
    """Samples for the window come from their own generator: a watched run and a headless one agree."""
    class Watch(Observer):
        samples = 0

        def on_samples(self, samples):
            self.samples += 1

    watch = Watch()
    for name, obs in (("watched", watch), ("headless", None)):
        Trainer(RunConfig(example="ring", steps=30, seed=1, run_dir=str(tmp_path / name), sample_seconds=0.0,
                          fetch_every=7), obs).run()
    assert watch.samples >= 30
    a, b = read_scalars(tmp_path / "watched"), read_scalars(tmp_path / "headless")
    for tag in ("loss/D", "loss/G"):
        np.testing.assert_array_equal(a[tag].values, b[tag].values)


def _loss_rows(d) -> int:
    if not (d / "scalars.csv").is_file():
        return 0
    return sum(len(s.steps) for s in read_scalars(d, {"loss/D", "loss/G"}).values())


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """Two endless headless runs, started together: one gets SIGKILL mid-run, the other Ctrl-C (SIGINT)."""
    tmp = tmp_path_factory.mktemp("interrupted")
    procs = {sig: (tmp / sig.name, start(main_cmd("--headless", "--example", "ring", "--run-dir", str(tmp / sig.name),
                                                  "--fetch-every", "20", "--var-every", "3", "--quiet")))
             for sig in (signal.SIGKILL, signal.SIGINT)}
    out = {}
    for sig, (d, proc) in procs.items():
        try:
            assert wait_for(lambda: _loss_rows(d) > 200, timeout=90), proc.poll() or "too few rows"
            rows = _loss_rows(d)
            assert wait_for(lambda: _loss_rows(d) > rows, timeout=90)  # still writing: mid-run, possibly mid-write
        finally:
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=60)
        out[sig] = (d, proc.returncode, stdout, stderr)
    return out


def _check_readable(d) -> list[dict]:
    sc = read_scalars(d)
    steps = np.sort(np.concatenate([s.steps for t, s in sc.items() if t.startswith("loss/")]))
    np.testing.assert_array_equal(steps, np.arange(1, len(steps) + 1))  # a prefix of the run, no gaps
    assert len(steps) > 200 and all(np.isfinite(s.values).all() for s in sc.values())
    cfg = RunConfig.from_dict(read_config(d))
    assert cfg.example == "ring" and cfg.run_dir == str(d) and cfg.steps is None
    events = read_events(d)
    assert events[0].kind == "trace" and "start" in [e.kind for e in events]
    return events


def test_killed_process_leaves_readable_files(interrupted):
    d, code, _, _ = interrupted[signal.SIGKILL]
    assert code == -signal.SIGKILL
    events = _check_readable(d)
    assert "stop" not in [e.kind for e in events]


def test_ctrl_c_stops_cleanly_and_keeps_the_record(interrupted):
    d, code, stdout, stderr = interrupted[signal.SIGINT]
    assert code == 0, stderr
    events = _check_readable(d)
    last = max(max(s.steps) for t, s in read_scalars(d).items() if t.startswith("loss/"))
    assert events[-1].kind == "stop" and events[-1].reason == "stopped" and events[-1].step == last
    assert events[-2].kind == "checkpoint" and (d / events[-2].path).with_suffix(".index").is_file()
    assert f"{last} steps" in stdout and "Traceback" not in stderr
