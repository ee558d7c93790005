"""monitor/own_loop.py: `start_run` and `Run` in a hand-written GradientTape loop.

Why: the run object is the few lines a user adds to a loop of their own, so what it promises is tested as a
user's script would use it: a loop killed mid-run (SIGKILL, no clean-up) and started again with `resume=True`
continues the same record, with no step recorded twice or missing, and, drawing from `run.rng`, computes the
very losses of the loop never interrupted; bad use (a loss that is not a number, a variable of no model, an
optimizer shared by two phases) is one line naming the problem and the fix, with nothing written.
"""
from __future__ import annotations

import signal
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import RunConfig, read_events, read_scalars
from training_core.base.errors import UserError
from training_core.monitor import start_run
from training_core.rundir.varstore import read_variables

from .helpers import REPO, start

LOOP = '''
"""A user's GAN loop with the run object's added lines (marked)."""
import os, signal, sys
sys.path.insert(0, {repo!r})
import keras
import numpy as np
import tensorflow as tf
from training_core.monitor import start_run                                   # added

tf.config.experimental.enable_op_determinism()
keras.utils.set_random_seed(0)
g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh", name="h"),
                      keras.layers.Dense(2, name="out")], name="generator")
d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh", name="h"),
                      keras.layers.Dense(1, name="out")], name="discriminator")
g_opt, d_opt = keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5)
data = tf.constant(np.random.default_rng(0).normal(size=(512, 2)).astype("float32") + 1.0)
run = start_run(sys.argv[1], models={{"generator": g, "discriminator": d}},                # added
                phases={{"D": (d_opt, d), "G": (g_opt, g)}}, steps=int(sys.argv[2]),  # added
                checkpoint_every=50, var_every=5, resume=True, quiet=True)           # added
kill_at = int(os.environ.get("KILL_AT", "0"))
term_at = int(os.environ.get("TERM_AT", "0"))


@tf.function
def train_step():
    real = tf.gather(data, run.rng.uniform([32], 0, 512, dtype=tf.int32))
    z = run.rng.normal([32, 2])
    with tf.GradientTape() as tape:
        d_loss = tf.reduce_mean(tf.nn.softplus(-d(real))) + tf.reduce_mean(tf.nn.softplus(d(g(z))))
    run.apply_gradients("D", d_opt, tape.gradient(d_loss, d.trainable_variables), d.trainable_variables)  # was d_opt.apply
    with tf.GradientTape() as tape:
        g_loss = tf.reduce_mean(tf.nn.softplus(-d(g(z))))
    run.apply_gradients("G", g_opt, tape.gradient(g_loss, g.trainable_variables), g.trainable_variables)  # was g_opt.apply
    return d_loss, g_loss


with run:                                                                     # added
    for step in run.steps():                                                  # was: for step in range(...)
        d_loss, g_loss = train_step()
        run.log(step, {{"D": d_loss, "G": g_loss}})                             # added
        if step == kill_at:  # (the test's: killed with the record written up to this step)
            run.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if step == term_at:  # (as Slurm stops a job: the run stops at its next boundary, keeping its record)
            os.kill(os.getpid(), signal.SIGTERM)
print("after the loop", run.step)
'''


def _loop(tmp_path):
    path = tmp_path / "my_gan.py"
    path.write_text(LOOP.format(repo=str(REPO)))
    return path


def _run(script, run_dir, steps: int, kill_at: int = 0, term_at: int = 0, out: list | None = None):
    import os
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "KILL_AT": str(kill_at), "TERM_AT": str(term_at)}
    proc = start([sys.executable, str(script), str(run_dir), str(steps)], env=env)
    stdout, err = proc.communicate(timeout=600)
    if out is not None:
        out.append(stdout)
    return proc.returncode, err


def test_a_killed_loop_restarted_with_resume_continues_one_record(tmp_path):
    script = _loop(tmp_path)
    code, err = _run(script, tmp_path / "whole", 240)
    assert code == 0, err
    code, err = _run(script, tmp_path / "killed", 240, kill_at=173)  # killed 23 steps after its last checkpoint
    assert code == -signal.SIGKILL, err
    assert read_scalars(tmp_path / "killed")["loss/D"].steps[-1] == 173
    code, err = _run(script, tmp_path / "killed", 240)
    assert code == 0, err

    whole, resumed = read_scalars(tmp_path / "whole"), read_scalars(tmp_path / "killed")
    for tag in ("loss/D", "loss/G"):
        assert resumed[tag].steps.tolist() == list(range(1, 241))  # each step once, none missing
        assert np.array_equal(resumed[tag].values, whole[tag].values)  # the same losses as never interrupted
    kinds = [e.kind for e in read_events(tmp_path / "killed")]
    assert kinds[0] == "start" and kinds.count("resumed") == 1 and kinds[-1] == "stop"
    resumed_at = next(e for e in read_events(tmp_path / "killed") if e.kind == "resumed")
    assert resumed_at.step == 150 and resumed_at.dropped["scalars"] > 0  # cut back to the checkpoint at 150
    for rows in read_variables(tmp_path / "killed"):
        steps = rows.steps.tolist()
        assert steps == sorted(set(steps)) and len(steps) > 20  # per-variable rows: one timeline too


def _models():
    g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h")], name="generator")
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="h")], name="discriminator")
    return g, d


def test_logging_a_loss_that_is_not_one_number_is_one_line(tmp_path):
    g, d = _models()
    run = start_run(tmp_path / "run", models={"generator": g, "discriminator": d},
                    phases={"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}, quiet=True)
    with pytest.raises(UserError) as e:
        run.log(1, {"D": tf.zeros([3])})
    assert str(e.value) == ("run.log: the loss of phase 'D' at step 1 is an array of shape (3,), not one number; "
                            "log a scalar (e.g. the mean of the loss)")
    with pytest.raises(UserError, match=r"there is no phase 'd'; phases are D, G"):
        run.log(1, {"d": 0.5})
    run.log(1, {"D": tf.constant(0.5), "G": 0.25})
    with pytest.raises(UserError, match="step 1 is logged after step 1 was"):
        run.log(1, {"D": 0.5})
    run.close()
    assert read_scalars(tmp_path / "run")["loss/D"].values.tolist() == [0.5]


def test_a_phase_training_a_variable_of_no_model_is_one_line_and_writes_nothing(tmp_path):
    g, d = _models()
    stray = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="h")], name="critic")
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d},
                  phases={"D": (keras.optimizers.Adam(), stray), "G": (keras.optimizers.Adam(), g)})
    assert str(e.value) == ("phase 'D' trains critic/h/kernel, a variable of none of the run's models (generator, "
                            "discriminator); add its model to models=")
    assert not (tmp_path / "run").exists()


def test_an_optimizer_shared_by_two_phases_is_one_line_and_writes_nothing(tmp_path):
    g, d = _models()
    opt = keras.optimizers.Adam()
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases={"D": (opt, d), "G": (opt, g)})
    assert str(e.value) == ("phases 'D' and 'G' share one optimizer; give each phase an optimizer of its own (its "
                            "slots, step count and learning rate are the phase's)")
    assert not (tmp_path / "run").exists()


def test_an_unknown_freeze_scope_points_at_the_models_paths_not_a_cli_option(tmp_path):
    """The CLI's "see them all with --list-scopes" means nothing in a user's own loop."""
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, freeze=["discriminatr"])
    assert str(e.value) == ("unknown scope 'discriminatr'; did you mean discriminator? (scopes start with "
                            "discriminator, generator: prefixes of your models' variable paths, v.path)")
    assert not (tmp_path / "run").exists()


def test_freeze_given_one_string_freezes_that_scope_not_its_letters(tmp_path):
    """`list("discriminator")` made the freeze set 'd', 'i', 's', ...: refused as an unknown scope 'd'."""
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases,
                   freeze="discriminator", quiet=True) as run:
        run.log(1, {"D": 1.0})
        assert [bool(all(u.frozen.numpy())) for u in run._updates.values()] == [True, False]  # D's all frozen
    assert RunConfig.read_toml(tmp_path / "run" / "config.toml").freeze == ["discriminator"]
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run2", models={"generator": g, "discriminator": d}, phases=phases, freeze=5)
    assert str(e.value) == "freeze must be a scope or a list of scopes, e.g. freeze=['discriminator'], got 5"
    assert not (tmp_path / "run2").exists()


def test_a_phase_given_model_then_optimizer_is_told_to_swap_them(tmp_path):
    g, d = _models()
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d},
                  phases={"D": (d, keras.optimizers.Adam()), "G": (keras.optimizers.Adam(), g)})
    assert str(e.value) == ("phase 'D': give (optimizer, what it trains), got (a keras.Model, an optimizer): "
                            "swap them")
    assert not (tmp_path / "run").exists()


def test_a_schedule_that_is_no_dict_is_said_in_python_not_toml(tmp_path):
    """The alternation's own line shows a TOML table ({policy = "fixed", ...}), not what a script writes."""
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, schedule=[5, 1])
    assert str(e.value) == "schedule must be a dict such as {'ratio': [5, 1]}, got [5, 1]"
    with pytest.raises(UserError) as e:  # the line docs/monitor.md shows: a script has no experiment
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, schedule={"ratio": [5]})
    assert str(e.value) == "ratio 5 has 1 count but the run has 2 phases (D, G); give one count per phase, e.g. 1:1"
    assert not (tmp_path / "run").exists()


def test_a_ratio_of_the_wrong_length_sent_to_a_run_names_the_run_not_an_experiment(tmp_path):
    """run.send(SetRatio(...)) with a count too many, in a loop that asks run.next_phase(): a `rejected` event
    in the script's terms (there is no experiment file); the run keeps its ratio."""
    from training_core.base.commands import SetRatio
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        assert run.next_phase() == "D"
        run.send(SetRatio({"ratio": [1, 1, 1]}))
        assert run.boundary()
        run.log(1, {"D": 1.0})
    events = read_events(tmp_path / "run")
    assert [e.message for e in events if e.kind == "rejected"] == [
        "ratio 1:1:1 has 3 counts but the run has 2 phases (D, G); give one count per phase, e.g. 1:1"]
    assert not [e for e in events if e.kind == "ratio"]


def test_a_resumed_run_at_its_step_target_says_to_raise_steps_not_a_cli_option(tmp_path):
    """start_run(..., resume=True) on a run that reached its `steps=`: the fix is the script's `steps=`, not the
    command line's --steps (a script has none); nothing of the record is touched."""
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=2,
                   quiet=True) as run:
        for step in run.steps():
            run.log(step, {"D": 1.0, "G": 2.0})
    before = (tmp_path / "run" / "events.jsonl").read_bytes()
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=2,
                  resume=True, quiet=True)
    assert str(e.value) == (f"run {tmp_path / 'run'} is at step 2 and its step target is 2; give "
                            f"start_run(..., steps=N) with N > 2 to continue it")
    assert (tmp_path / "run" / "events.jsonl").read_bytes() == before


def test_a_freeze_sent_by_the_script_names_its_scopes_not_a_cli_option(tmp_path, capsys):
    """run.send(SetFreeze(...)) of a typo: refused at the next boundary with did-you-mean and the models'
    top-level scopes (no --list-scopes: a script has no such option); one string is one scope there too."""
    from training_core.base.commands import SetFreeze
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases) as run:
        run.send(SetFreeze("discrimnator"))
        assert run.boundary()
        run.send(SetFreeze("generator"))
        assert run.boundary()
        run.log(1, {"D": 1.0})
    events = read_events(tmp_path / "run")
    refused = [e.message for e in events if e.kind == "rejected"]
    assert refused == ["unknown scope 'discrimnator'; did you mean discriminator? (scopes start with discriminator, "
                       "generator: prefixes of your models' variable paths, v.path)"]
    assert [e.scopes for e in events if e.kind == "freeze"] == [["generator"]]
    assert "--list-scopes" not in capsys.readouterr().err


def test_a_run_directory_that_holds_a_run_is_refused_without_resume(tmp_path):
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        run.log(1, {"D": 1.0})
    with pytest.raises(UserError, match=r"already holds a run; pass resume=True to continue it, or a new run_dir"):
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases)


def test_bad_steps_or_models_are_one_line_in_the_apis_own_words(tmp_path):
    """A Python call's error names its argument (`steps`, not the command line's --steps), and a list of
    models says what models= must be instead of a TypeError from deep inside."""
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=-5)
    assert str(e.value) == "steps must be a whole number >= 0 (or None: until stopped), got -5"
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run", models=[g, d], phases=phases, steps=10)
    assert str(e.value) == ("models must be a dict of name -> keras.Model, got list; pass e.g. "
                            "models={'generator': g, 'discriminator': d}")
    assert not (tmp_path / "run").exists()


def test_a_run_that_failed_before_its_first_step_does_not_block_the_fixed_rerun(tmp_path):
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with pytest.raises(UserError, match="there is no phase 'Dx'"):
        with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
            run.log(1, {"Dx": 1.0})
    assert read_events(tmp_path / "run")[-1].reason == "error"  # a record of no step, that ended with the error
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        run.log(1, {"D": 1.0})
    kinds = [e.kind for e in read_events(tmp_path / "run")]
    assert kinds.count("start") == 1 and "error" not in kinds and kinds[-1] == "stop"  # the new run's record alone
    assert read_scalars(tmp_path / "run")["loss/D"].steps.tolist() == [1]


def test_another_optimizer_than_the_phases_is_refused(tmp_path):
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        with pytest.raises(UserError, match=r"this is not phase D's optimizer"):
            run.apply_gradients("D", phases["G"][0], [tf.zeros_like(v) for v in d.trainable_variables],
                                d.trainable_variables)


def test_the_command_line_will_not_resume_or_replay_a_monitored_run(tmp_path):
    """Its experiment file is the user's script: importing it would run the whole script, so the CLI refuses,
    in one line saying how the script itself continues or replays it."""
    from training_core.rundir.replay_plan import plan_replay
    from training_core.rundir.resume_point import resume_config
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        run.log(1, {"D": 1.0})
    for refuse, what, how in ((resume_config, "--resume", r"run it again with start_run\(\.\.\., resume=True\)"),
                              (plan_replay, "--replay", r"run the script again with start_run\(NEW_DIR, \.\.\., "
                                                        rf"replay='{tmp_path / 'run'}'\)")):
        with pytest.raises(UserError, match=rf"was recorded by training_core.monitor from .*, whose own code trains "
                                            rf"it, so {what} cannot run it; {how}$"):
            refuse(tmp_path / "run")


def test_a_start_run_script_imported_as_an_experiment_file_is_refused_before_it_opens_a_run(tmp_path):
    """File → Open of a start_run script (or a record naming one) made the window's training process import
    it, and its start_run trained the user's run there. start_run inside an experiment import is one line."""
    from training_core.experiment.loading import load_module
    script = tmp_path / "my_gan.py"
    script.write_text(f"from training_core.monitor import start_run\nrun = start_run({str(tmp_path / 'run')!r}, "
                      "models={}, phases={})\n")
    with pytest.raises(UserError) as e:
        load_module(script)
    assert str(e.value) == ("my_gan.py calls start_run(...): it is a script that trains with training_core.monitor, "
                            "not an experiment file; run it with python my_gan.py (the window can attach to its run)")
    assert not (tmp_path / "run").exists()


def test_freezing_a_model_no_phase_trains_is_refused_not_silently_accepted(tmp_path):
    """An EMA copy of G, in models= and moved by the loop's own assign: freezing it (the window's scope tree
    sends SetFreeze(["generator_ema"])) was accepted and did nothing, with no leak (its ‖ΔW‖ is not measured)
    and no warning. Refused in one line: at start_run a UserError with nothing written; sent, a `rejected`
    event, the freeze set kept (a set naming it with a trained scope too is refused whole)."""
    from training_core.base.commands import SetFreeze
    g, d = _models()
    ema = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h")], name="generator_ema")
    models = {"generator": g, "generator_ema": ema, "discriminator": d}
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    why = ("cannot freeze 'generator_ema': no phase trains it (run.apply_gradients never updates it), and the run "
           "cannot stop what your loop itself does to it (an EMA's assign, a layer's statistics); freeze a scope a "
           "phase trains (under discriminator, generator), or stop updating it in your loop")
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "run0", models=models, phases=phases, freeze=["generator", "generator_ema"])
    assert str(e.value) == f"start_run(freeze=...): {why}"
    assert not (tmp_path / "run0").exists()
    with start_run(tmp_path / "run", models=models, phases=phases, freeze="discriminator", quiet=True) as run:
        run.send(SetFreeze(["generator_ema"]))
        run.send(SetFreeze(["generator/h", "generator_ema/h/kernel"]))
        assert run.boundary()
        run.log(1, {"D": 1.0})
        assert [bool(all(u.frozen.numpy())) for u in run._updates.values()] == [True, False]  # as it was
    events = read_events(tmp_path / "run")
    assert [e.message for e in events if e.kind == "rejected"] == [
        why, why.replace("'generator_ema'", "'generator_ema/h/kernel'")]
    assert not [e for e in events if e.kind == "freeze"]  # (the start's freeze= is in its config)
    assert {v["path"] for v in next(e for e in events if e.kind == "start").variables} >= {"generator_ema/h/kernel"}


def test_freezing_a_layers_statistic_alone_is_refused_in_a_loop(tmp_path):
    """A BatchNormalization's moving mean, which the loop's own forward pass moves: freezing it alone is refused
    (as the window's tree offers no box for it), while its layer's scope, which holds trained variables, freezes."""
    from training_core.base.commands import SetFreeze
    g, d = _models()
    bn = keras.Sequential([keras.Input((2,)), keras.layers.BatchNormalization(name="bn")], name="critic")
    models = {"generator": g, "discriminator": d, "critic": bn}
    phases = {"D": (keras.optimizers.Adam(), [d, bn]), "G": (keras.optimizers.Adam(), g)}
    with start_run(tmp_path / "run", models=models, phases=phases, quiet=True) as run:
        run.send(SetFreeze(["critic/bn/moving_mean"]))
        run.send(SetFreeze(["critic/bn"]))
        assert run.boundary()
        run.log(1, {"D": 1.0})
    events = read_events(tmp_path / "run")
    assert [e.message.split(":")[0] for e in events if e.kind == "rejected"] == ["cannot freeze 'critic/bn/moving_mean'"]
    assert [e.scopes for e in events if e.kind == "freeze"] == [["critic/bn"]]
