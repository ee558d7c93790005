"""A run survives: killed with SIGKILL at a random moment and resumed with `--resume`, it gives exactly the
losses (and per-variable rows) of the same run never interrupted, step for step; its record, TensorBoard
included, holds one timeline; the host-side state (schedule position, freeze set, method, adaptive
switch) comes back from the checkpoint; and the weights are in Keras' own format at the end.
"""
from __future__ import annotations

from dataclasses import replace

import keras
import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training_core import (RunConfig, SetFreeze, SetFreezeMethod, SetRatio, Stop, Trainer, read_events,
                           read_scalars, read_variables)

from .experiment_texts import NOISE_LAYER, SPREAD_METRICS
from .helpers import REPO, Script, config, main_cmd, start, tiny_gan
from .run_pairs import assert_same_losses, kill_one_of_two, last_step, losses

STEPS = 2000


def _assert_same_record(a, b) -> None:
    """Every loss row and every per-variable row equal, bit for bit, in the same steps."""
    assert_same_losses(a, b, steps=STEPS)
    for ra, rb in zip(read_variables(a), read_variables(b), strict=True):
        np.testing.assert_array_equal(ra.steps, rb.steps)
        for kind in ("update_norm", "update_ratio", "grad_norm", "frozen"):
            assert getattr(ra, kind).tobytes() == getattr(rb, kind).tobytes(), (ra.phase, kind)


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """Two identical deterministic runs start together; one gets SIGKILL at a random moment after its third
    checkpoint, then is resumed in its own directory."""
    tmp = tmp_path_factory.mktemp("resume")
    exp = tiny_gan(tmp, "adam")
    args = ["--headless", "--experiment", str(exp), "--steps", str(STEPS), "--ratio", "3:2", "--freeze",
            "generator/dense_1", "--checkpoint-every", "100", "--fetch-every", "20", "--var-every", "7",
            "--deterministic", "--quiet"]
    killed, whole = tmp / "killed", tmp / "whole"
    delay = kill_one_of_two(args, killed, whole, checkpoints=3)  # anywhere: mid-step, mid-write, mid-checkpoint
    before = last_step(killed)
    resumed = start(main_cmd("--headless", "--resume", str(killed), "--quiet", "--deterministic"))
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    return killed, whole, before, delay, out, err


def test_a_killed_run_resumed_equals_the_run_never_interrupted(killed_and_resumed):
    killed, whole, before, delay, out, err = killed_and_resumed
    assert before < STEPS and "Traceback" not in err, (before, delay)
    resumed_at = next(e.step for e in read_events(killed) if e.kind == "resumed")
    assert f"{STEPS - resumed_at} steps (from step {resumed_at} to {STEPS}) in" in out  # this process's steps
    _assert_same_record(killed, whole)


def test_the_event_record_is_one_timeline(killed_and_resumed):
    killed, whole, before, delay, *_ = killed_and_resumed
    events = read_events(killed)
    kinds = [e.kind for e in events]
    assert kinds.count("resumed") == 1 and kinds.count("start") == 1 and kinds.count("stop") == 1
    steps = [e.step for e in events]
    assert steps == sorted(steps), "an event's step went back"
    i = kinds.index("resumed")
    resumed = events[i]
    # the killed process left its writer lock: the resume takes it over, with a warning that says so
    assert kinds[i - 1] == "warning" and "took over" in events[i - 1].message, events[i - 1]
    printed = [ln for ln in (killed_and_resumed[4] + killed_and_resumed[5]).splitlines() if "took over" in ln]
    assert printed and all(ln.startswith(f"[step {resumed.step}] warning") for ln in printed), printed  # not [step 0]
    i -= 1
    # the new process's warm-up: its first phase's starting variant before `resumed`, stamped with the step it
    # resumes from; the others during the run (loop/warmup.py)
    j = i
    while kinds[j - 1] == "trace":
        j -= 1
    early, later = events[j:i], [e for e in events[i:] if e.kind == "trace"]
    assert [(e.phase, e.variant) for e in early] == [("D", "fast")]
    assert all(e.step == resumed.step for e in early) and all(e.step > resumed.step for e in later)
    assert sorted((e.phase, e.variant) for e in early + later) == [("D", "fast"), ("D", "masked"), ("G", "fast"),
                                                                   ("G", "masked")]
    assert "retrace" not in kinds
    assert kinds[j - 1] in ("checkpoint", "start")  # nothing of the first process after the checkpoint
    assert resumed.step <= before and resumed.checkpoint == f"checkpoints/ckpt-{resumed.step}"
    assert resumed.freeze == ["generator/dense_1"] and resumed.schedule["ratio"] == [3, 2]
    assert resumed.steps == STEPS and events[-1].kind == "stop" and events[-1].reason == "done"
    checkpoints = [e.step for e in events if e.kind == "checkpoint"]
    assert checkpoints == sorted(set(checkpoints)), "a checkpoint twice"
    # (a kill between a checkpoint's files and its event leaves the `resumed` event to name it)
    assert sorted(set(checkpoints) | {resumed.step}) == list(range(0, STEPS + 1, 100))
    # what was cut is kept where a human finds it: the first process's rows after the checkpoint
    dropped = killed / resumed.dropped["dir"]
    if resumed.dropped["scalars"]:
        rows = (dropped / "scalars.csv").read_text().splitlines()
        assert rows[0] == "step,wall_time,tag,value" and len(rows) - 1 >= resumed.dropped["scalars"] - 1
        assert all(int(r.split(",")[0]) > resumed.step for r in rows[1:] if r.count(",") == 3)


def test_tensorboard_shows_each_step_once(killed_and_resumed):
    """TensorBoard's own reader: the resumed process's SessionLog START purges what the first wrote after
    the checkpoint, so no step is there twice and none is missing, and the values are the resumed ones."""
    killed, whole, *_ = killed_and_resumed
    for run, tags in (("training", ("loss/D", "loss/G")), ("variables", ("update_ratio/discriminator/dense_1/kernel",))):
        # an event file per process, and in training/ the run's one HParams session (rundir/tensorboard.py)
        files = sorted(f.name for f in (killed / "tb" / run).iterdir())
        assert len(files) == (3 if run == "training" else 2), files
        assert (run == "training") == (files[0] == "events.out.tfevents.0.hparams")
        acc = EventAccumulator(str(killed / "tb" / run), size_guidance={"scalars": 0})
        acc.Reload()
        ref = EventAccumulator(str(whole / "tb" / run), size_guidance={"scalars": 0})
        ref.Reload()
        assert sorted(acc.Tags()["scalars"]) == sorted(ref.Tags()["scalars"])
        for tag in tags:
            got, want = acc.Scalars(tag), ref.Scalars(tag)
            assert [e.step for e in got] == [e.step for e in want], tag
            assert [e.value for e in got] == [e.value for e in want], tag


def test_the_weights_are_saved_in_keras_format(killed_and_resumed):
    killed, whole, *_ = killed_and_resumed
    import importlib.util
    spec = importlib.util.spec_from_file_location("tiny", next(killed.parent.glob("tiny_gan_adam.py")))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = mod.generator()
    g.load_weights(str(killed / "models" / "generator.weights.h5"))
    h = mod.generator()
    h.load_weights(str(whole / "models" / "generator.weights.h5"))
    z = np.random.default_rng(0).normal(size=(5, 2)).astype("float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(g(z)), keras.ops.convert_to_numpy(h(z)))


# -- the host-side state, in process ----------------------------------------------------------------------
SCHEDULES = {
    "fixed 3:2, freeze and method changed": (
        {"policy": "fixed", "ratio": [3, 2]},
        {23: [SetFreeze(["discriminator/dense_1"])], 41: [SetFreezeMethod("gate")],
         58: [SetRatio({"policy": "fixed", "ratio": [1, 4]})]}),
    "adaptive": ({"policy": "adaptive", "thresholds": {"D": 1.3, "G": 0.75}, "max_steps": 4}, {}),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_stopped_and_resumed_continues_where_it_stood(tmp_path, name):
    """Stopped mid-cycle (step 67: inside a stay of a phase), resumed: the same phases, losses and frozen
    masks as a run that never stopped, so the schedule's position, the freeze set and the method came back."""
    schedule, at = SCHEDULES[name]
    exp = tiny_gan(tmp_path, "adam")
    total = 120

    def cfg(d):
        return config(exp, tmp_path / d, steps=total, schedule=schedule, var_every=3, checkpoint_every=50)

    Trainer(cfg("whole"), Script({k: list(v) for k, v in at.items()})).run()
    Trainer(cfg("parts"), Script({**{k: list(v) for k, v in at.items()}, 67: [Stop()]})).run()
    assert last_step(tmp_path / "parts") == 67
    Trainer(RunConfig.read_toml(tmp_path / "parts" / "config.toml"), Script(), resume=True).run()
    a, b = losses(tmp_path / "parts"), losses(tmp_path / "whole")
    for tag in b:
        np.testing.assert_array_equal(a[tag][0], b[tag][0], err_msg=tag)
        np.testing.assert_array_equal(a[tag][1], b[tag][1], err_msg=tag)
    for ra, rb in zip(read_variables(tmp_path / "parts"), read_variables(tmp_path / "whole"), strict=True):
        np.testing.assert_array_equal(ra.steps, rb.steps)
        np.testing.assert_array_equal(ra.frozen, rb.frozen)
    kinds = [e.kind for e in read_events(tmp_path / "parts")]
    assert kinds.count("stop") == 1 and kinds.index("resumed") > kinds.index("checkpoint")


def test_resume_with_a_new_step_target_and_learning_rate(tmp_path):
    """`--steps` moves the target; `--lr` applies from the resumed step on, logged like any command."""
    exp = tiny_gan(tmp_path, "adam")
    d = tmp_path / "run"
    Trainer(config(exp, d, steps=40)).run()
    from training_core.cli.headless import main
    assert main(["--headless", "--resume", str(d), "--steps", "60", "--lr", "G=1e-4", "--quiet"]) == 0
    events = read_events(d)
    resumed = next(e for e in events if e.kind == "resumed")
    lr = next(e for e in events if e.kind == "lr")
    assert (resumed.step, resumed.steps, lr.step, lr.phase, lr.value) == (40, 60, 40, "G", 1e-4)
    steps = np.sort(np.concatenate([s for s, _ in losses(d).values()]))
    np.testing.assert_array_equal(steps, np.arange(1, 61))


def test_resume_warns_when_the_experiment_file_changed(tmp_path):
    """The file is compared with the sha256 the run started with (its config.toml), not with itself: the
    prepared configuration holds the hash of the file as it is now, so the warning never came."""
    exp = tiny_gan(tmp_path, "adam")
    d = tmp_path / "run"
    Trainer(config(exp, d, steps=10)).run()
    from training_core.cli.headless import main
    assert main(["--headless", "--resume", str(d), "--steps", "15", "--quiet"]) == 0  # unchanged: no warning
    exp.write_text(exp.read_text() + "\n# tuned after the run started\n")
    assert main(["--headless", "--resume", str(d), "--steps", "20", "--quiet"]) == 0
    warnings = [e.message for e in read_events(d) if e.kind == "warning"]
    assert warnings == ["tiny_gan_adam.py changed since the run started (sha256 differs); the run continues with "
                        "the file as it is now"], warnings
    resumed = [e.step for e in read_events(d) if e.kind == "resumed"]
    assert resumed == [10, 15]


@pytest.fixture(scope="module")
def mirrored_run(tmp_path_factory):
    """6 steps of a 2-replica run, trained once; each test resumes a copy of it."""
    tmp = tmp_path_factory.mktemp("mirrored")
    d = tmp / "run"
    Trainer(config(tiny_gan(tmp, "adam"), d, steps=6, strategy="mirrored", replicas=2)).run()
    assert next(e for e in read_events(d) if e.kind == "start").replicas == 2
    return d


@pytest.mark.parametrize("options", [["--strategy", "single"], ["--strategy", "single", "--replicas", "1"]])
def test_a_mirrored_run_resumed_on_one_device(mirrored_run, tmp_path, options):
    """The replicas in the run's config.toml belong to its mirrored strategy: `--strategy single` drops them
    (they were refused as if the user had given --replicas 2 with single), and `--replicas 1` agrees with it."""
    import shutil
    d = tmp_path / "run"
    shutil.copytree(mirrored_run, d)
    from training_core.cli.headless import main
    assert main(["--headless", "--resume", str(d), "--steps", "12", "--quiet", *options]) == 0
    resumed = next(e for e in read_events(d) if e.kind == "resumed")
    assert (resumed.step, resumed.device, resumed.strategy, resumed.replicas) == (6, "CPU", "single", 1)
    steps = np.sort(np.concatenate([s for s, _ in losses(d).values()]))
    np.testing.assert_array_equal(steps, np.arange(1, 13))


def test_a_mirrored_run_resumed_on_more_replicas_says_so(mirrored_run, tmp_path):
    """The `resumed` event carries the strategy and replica count the run continued with (it had only the
    device text, and config.toml still says 2)."""
    import shutil
    d = tmp_path / "run"
    shutil.copytree(mirrored_run, d)
    import subprocess
    r = subprocess.run(main_cmd("--headless", "--resume", str(d), "--steps", "12", "--quiet", "--replicas", "4"),
                       cwd=REPO, capture_output=True, text=True, timeout=300)  # a new process: 4 devices
    assert r.returncode == 0, r.stderr
    resumed = next(e for e in read_events(d) if e.kind == "resumed")
    assert (resumed.strategy, resumed.replicas, resumed.device) == ("mirrored", 4, "CPU ×4 (mirrored)")


def test_resuming_a_directory_without_checkpoints_is_one_line(tmp_path):
    """A RunConfig read from a copied run's config.toml names the original directory; one that names a
    directory without checkpoints got a bare IndexError."""
    from training_core.base.errors import UserError
    from training_core.rundir.resume_point import resume_point
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="has no complete checkpoint to resume from"):
        resume_point(tmp_path / "empty")


def test_a_resumed_run_measures_no_step_twice(tmp_path):
    """The ring measures metrics(ctx) at the start and at the end of a run: a run that ended at step 30 (its
    last checkpoint) and resumed from there kept both the first process's step-30 row and the new one's."""
    d = tmp_path / "run"
    Trainer(RunConfig(example="ring", run_dir=str(d), steps=30)).run()
    Trainer(replace(RunConfig.read_toml(d / "config.toml"), steps=45), resume=True).run()
    scalars = read_scalars(d)
    metrics = [t for t in scalars if t.startswith("metric/")]
    assert metrics and max(int(scalars[t].steps[-1]) for t in metrics) == 45
    for tag in metrics + ["loss/D", "loss/G"]:
        steps = scalars[tag].steps
        assert len(np.unique(steps)) == len(steps), (tag, steps)
    assert 30 in scalars[metrics[0]].steps  # the first process's measure at its end stays


# -- layers that draw from Keras' seed generators ----------------------------------------------------------------
_NOISY = '''
"""A tiny GAN whose models draw in their layers while training: GaussianNoise and Dropout, each from a
SeedGenerator of its own (a variable whose path Keras numbers, seed_generator_N/seed_generator_state)."""
import keras
import numpy as np

noise_dim = 2
batch_size = 16


def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(8, activation="tanh", name="dense_1"),
                             keras.layers.GaussianNoise(0.1), keras.layers.Dropout(0.2),
                             keras.layers.Dense(2, name="out")], name="generator")


def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh", name="dense_1"),
                             keras.layers.Dropout(0.2), keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return (np.random.default_rng(0).normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")
'''


#: a layer that draws at every call, training or not (as the Keras VAE's Sampling), and a metrics(ctx): the shadows
#: are made at each run's begin, a resumed one's too, by calling the model once
_ALWAYS = (_NOISY.replace("keras.layers.GaussianNoise(0.1), ", "keras.layers.GaussianNoise(0.1), Noise(), ") + "\n"
           + NOISE_LAYER + "\n" + SPREAD_METRICS)


@pytest.mark.parametrize("source", ["dropout and noise", "a layer drawing at every call, with metrics"])
def test_a_model_that_draws_in_its_layers_resumes_exactly_in_one_process(tmp_path, source):
    """Dropout and GaussianNoise in both models (and a layer that draws at every call, with metrics measured beside
    training): stopped at step 67 and resumed in the same process (as the window does), the losses are those of
    the run never stopped, bit for bit."""
    from .helpers import write_file
    exp = write_file(tmp_path, "noisy.py", _NOISY if source == "dropout and noise" else _ALWAYS)
    kw = {} if source == "dropout and noise" else {"metrics_seconds": 0.05}
    Trainer(config(exp, tmp_path / "whole", steps=150, checkpoint_every=50, **kw)).run()
    Trainer(config(exp, tmp_path / "parts", steps=150, checkpoint_every=50, **kw), Script({67: [Stop()]})).run()
    assert last_step(tmp_path / "parts") == 67
    Trainer(RunConfig.read_toml(tmp_path / "parts" / "config.toml"), resume=True).run()
    assert_same_losses(tmp_path / "parts", tmp_path / "whole", tags={"loss/D", "loss/G"})


def test_a_model_that_draws_in_its_layers_killed_and_resumed_in_a_new_process_resumes_exactly(tmp_path):
    """The same models, a headless run killed (SIGKILL) after its second checkpoint and resumed with --resume in a
    new process: the losses are those of the same run never interrupted, bit for bit."""
    from .helpers import write_file
    exp = write_file(tmp_path, "noisy.py", _NOISY)
    args = ["--headless", "--experiment", str(exp), "--steps", "1500", "--checkpoint-every", "100", "--fetch-every",
            "20", "--deterministic", "--quiet", "--no-tensorboard"]
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    kill_one_of_two(args, killed, whole, checkpoints=2, at_random=False)
    resumed = start(main_cmd("--headless", "--resume", str(killed), "--quiet", "--deterministic"))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert_same_losses(killed, whole, tags={"loss/D", "loss/G"})
