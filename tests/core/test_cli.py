"""`python main.py --headless` as a user runs it: bad input is one line on stderr, exit code 2 and
nothing written; --list-scopes prints the tree; --config reruns a run; a headless run that can no
longer train stops instead of waiting forever for a Continue nobody can send.

Every subprocess pays TensorFlow's import, so they all start at once (module fixture) and the
tests only read their results.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from training_core import RunConfig, Trainer, read_events, read_scalars
from training_core.cli.headless import build_parser, config_from_args

from .experiment_texts import MISFIT_GAN
from .helpers import REPO, error_lines, main_cmd, nan_experiment, run_all, tiny_gan, write_file

BAD = {  # name: (arguments, a word the one line must contain)
    "unknown_scope": (["--freeze", "nosuch"], "nosuch"),
    "scope_typo": (["--freeze", "generator/dense1"], "did you mean generator/dense_1?"),
    "ratio_zero": (["--ratio", "0:0"], "0:0"),
    "ratio_phases": (["--ratio", "1:2:3"], "3 counts"),
    "ratio_zero_count": (["--ratio", "5:0"], "ratio 5:0 gives phase 'G' 0 steps, so it would never train; give every "
                                             "phase a count >= 1 (e.g. 5:1), or freeze what G trains to stop it"),
    "default_ratio_zero_count": (["--experiment", "{tmp}/ratio_zero.py"],
                                 "default ratio 1:0 in ratio_zero.py gives phase 'B' 0 steps"),
    "batch_larger_than_data": (["--batch-size", "70000"], "batch size 70000 is larger than the data of the experiment "
                                                          "in ring.py (65536 rows); give --batch-size 65536 or less"),
    "missing_file": (["--experiment", "{tmp}/nope.py"], "does not exist"),
    "raises_at_import": (["--experiment", "{tmp}/raises.py"], "ZeroDivisionError"),
    "build_raises": (["--experiment", "{tmp}/build_raises.py"], "boom"),
    "unknown_example": (["--example", "nope"], "nope"),
    "lr_syntax": (["--lr", "D"], "PHASE=NUMBER"),
    "lr_phase": (["--lr", "X=1e-4"], "X"),
    "lr_inf": (["--lr", "D=inf"], "finite"),
    "lr_beyond_float32": (["--lr", "D=1e39"], "learning rate for D is 1e+39, more than float32 holds"),
    "run_dir_not_empty": (["--run-dir", "{tmp}/full"], "not empty"),
    "run_dir_is_a_file": (["--run-dir", "{tmp}/full/keep.txt"], "is a file"),
    "negative_steps": (["--steps", "-1"], "--steps must be a whole number >= 1, got -1"),
    "steps_zero": (["--steps", "0"], "--steps must be a whole number >= 1, got 0; give the number of steps to train, "
                                     "or leave --steps out to train until Ctrl-C"),  # it trained 0 steps, exit 0
    "monitor_script": (["--experiment", str(REPO / "resources" / "examples" / "gradient_tape_ema_r1.py")],
                       "gradient_tape_ema_r1.py imports start_run: it is a script that trains with training_core."
                       "monitor, not an experiment file; run it with python gradient_tape_ema_r1.py"),
    "count_unknown_phase": (["--steps", "5", "--count", "X"], "--count X: the experiment has no phase of that name"),
    "unknown_option": (["--frezee", "generator"], "--frezee"),
    "models_do_not_fit": (["--experiment", "{tmp}/misfit.py"], "noise_dim"),
    "seed_negative": (["--seed", "-1"], "seed must be a whole number from 0 to 4294967295"),
    "seed_huge": (["--seed", "99999999999999999999"], "seed must be a whole number from 0"),
    "nan_lr_factor": (["--nan-lr-factor", "2"], "--nan-lr-factor"),
    # config.toml files that do not hold what a run needs
    "config_not_utf8": (["--config", "{tmp}/latin1.toml"], "not UTF-8"),
    "config_seed_text": (["--config", "{tmp}/seed_zero.toml"], "seed = 'zero' must be a whole number"),
    "config_batch_text": (["--config", "{tmp}/batch_big.toml"], "batch_size = 'big'"),
    "config_freeze_number": (["--config", "{tmp}/freeze_5.toml"], "freeze = 5 must be a list of strings"),
    "config_tensorboard_text": (["--config", "{tmp}/tb_no.toml"], "tensorboard = 'no' must be true or false"),
    "config_fetch_fraction": (["--config", "{tmp}/fetch_frac.toml"], "fetch_every = 2.5 must be a whole number"),
    "config_example_path": (["--config", "{tmp}/example_path.toml"], "not a built-in example"),
    "config_is_a_directory": (["--config", "{tmp}/full"], "is a directory"),
    "config_key_typo": (["--config", "{tmp}/key_typo.toml"], "unknown configuration key(s) learnign_rate (did you "
                                                              "mean lr?)"),
    # a bad value in the file is named by the file and its key, not by the option that sets it (--lr)
    "config_lr_negative": (["--config", "{tmp}/lr_neg.toml"], "lr_neg.toml: lr.D must be a finite number >= 0, got -1.0"),
    "config_lr_phase": (["--config", "{tmp}/lr_phase.toml"], "lr_phase.toml: lr.X names no phase of the experiment; "
                                                             "phases are D, G: fix the key"),
    "config_ratio_zero": (["--config", "{tmp}/ratio_0.toml"], "ratio_0.toml: schedule: ratio 0:1 gives phase 'D' 0 "
                                                              "steps"),
    "config_freeze_typo": (["--config", "{tmp}/freeze_typo.toml"], "freeze_typo.toml: freeze: unknown scope "
                                                                   "'generatr'; did you mean generator?"),
    "config_nan_lr_factor": (["--config", "{tmp}/nan_factor.toml"], "nan_factor.toml: nan_lr_factor = 2.0 must be "
                                                                    "in (0, 1]"),
    "config_sync_every": (["--config", "{tmp}/sync_0.toml"], "sync_0.toml: sync_every must be a whole number"),
    # steps = 0 in the file trained no step and wrote an empty run, as --steps 0 did (even beside --steps 5:
    # the file is what is wrong)
    "config_steps_zero": (["--config", "{tmp}/steps_zero.toml"],
                          "steps_zero.toml: steps = 0 trains no step; set it to a whole number >= 1 in the file, or "
                          "remove the line"),
    "config_steps_negative": (["--config", "{tmp}/steps_negative.toml"],
                              "steps must be a whole number >= 1 (or left out, to train until stopped), got -5"),
    # a file given to the option for another kind of file: what it is, and the option that takes it
    "config_sweep_file": (["--config", "{tmp}/sweep.toml"], "sweep.toml is a sweep file, not a run's config.toml; "
                                                            "run it with python main.py --headless --sweep "),
    "config_experiment_file": (["--config", "{tmp}/models_list.py"], "models_list.py is an experiment file, not a "
                               "run's config.toml; train it with python main.py --experiment "),
    "experiment_sweep_file": (["--experiment", "{tmp}/sweep.toml"], "sweep.toml is a sweep file, not an experiment "
                              "file; run it with python main.py --headless --sweep "),
    "sweep_config_file": (["--sweep", "{tmp}/rerun.toml"], "rerun.toml is a run's configuration, not a sweep file; "
                          "run it again with python main.py --headless --config "),
    "resume_sweep_file": (["--resume", "{tmp}/sweep.toml"], "sweep.toml is a sweep file, not a run directory; run it "
                          "with python main.py --headless --sweep "),
    "resume_experiment_file": (["--resume", "{tmp}/models_list.py"], "models_list.py is an experiment file, not a "
                               "run directory; train it with python main.py --experiment "),
    "resume_config_file": (["--resume", "{tmp}/rerun.toml"], "rerun.toml is a run's configuration, not a run "
                           "directory; run it again with python main.py --headless --config "),
    # experiment files that do not describe an experiment
    "models_a_list": (["--experiment", "{tmp}/models_list.py"], "must be a dict"),
    "phases_a_string": (["--experiment", "{tmp}/phases_str.py"], "must be a list of Phase"),
    "phases_tuples": (["--experiment", "{tmp}/phases_tuple.py"], "is a tuple, not a Phase"),
    "models_same_name": (["--experiment", "{tmp}/same_names.py"], "give each model its own name"),
    "model_without_weights": (["--experiment", "{tmp}/no_weights.py"], "has no weights"),
    "loss_a_string": (["--experiment", "{tmp}/string_loss.py"], "returned a string tensor"),
    "nan_in_data": (["--experiment", "{tmp}/nan_data.py"], "NaN or Inf values"),
    "shape_mismatch": (["--experiment", "{tmp}/shape_mismatch.py"], "expected axis -1"),
    "experiment_a_directory": (["--experiment", "{tmp}/full"], "is a directory; give the .py file in it"),
    "gan_without_real_data": (["--experiment", "{tmp}/no_real_data.py"], "but not real_data"),
    "models_empty": (["--experiment", "{tmp}/models_empty.py"], "got an empty dict"),
    "gan_ratio_text": (["--experiment", "{tmp}/ratio_text.py"], "must be counts per phase like"),
    "sync_every_alone": (["--sync-every", "5"], "add --strategy multiworker, or drop --sync-every"),
    # --resume (no --steps or --run-dir added)
    "resume_missing": (["--resume", "{tmp}/nope"], "does not exist"),
    "resume_not_a_run": (["--resume", "{tmp}/full"], "not a Freezeframe run directory"),
    "resume_a_file": (["--resume", "{tmp}/done/config.toml"], "config.toml is the config.toml of the run in "),
    "resume_a_file_of_a_run": (["--resume", "{tmp}/done/events.jsonl"], "events.jsonl is a file of the run in "),
    "resume_done": (["--resume", "{tmp}/done"], "pass --steps N with N > 20"),
    "resume_new_seed": (["--resume", "{tmp}/done", "--steps", "30", "--seed", "3"], "--seed cannot change"),
    "resume_changed_model": (["--resume", "{tmp}/arch", "--steps", "30"], "does not fit the experiment as it is now"),
    # settings given with --resume, checked against the experiment as a new run's are (they were `rejected` at
    # the first step, after the record had been cut back, and the run went on and exited 0)
    "resume_unknown_scope": (["--resume", "{tmp}/done", "--steps", "30", "--freeze", "W/kernal"],
                             "unknown scope 'W/kernal'; did you mean W/kernel?"),
    "resume_lr_phase": (["--resume", "{tmp}/done", "--steps", "30", "--lr", "X=1e-3"],
                        "--lr names unknown phase(s) X; phases are W, C"),
    "resume_lr_beyond_float32": (["--resume", "{tmp}/done", "--steps", "30", "--lr", "W=1e39"],
                                 "--lr W is 1e+39, more than float32 holds"),
    "resume_ratio_zero_count": (["--resume", "{tmp}/done", "--steps", "30", "--ratio", "0:1"],
                                "ratio 0:1 gives phase 'W' 0 steps"),
    "resume_ratio_phases": (["--resume", "{tmp}/done", "--steps", "30", "--ratio", "1:2:3"],
                            "has 3 counts but the experiment has 2 phases"),
    "resume_adaptive_phase": (["--resume", "{tmp}/done", "--steps", "30", "--adaptive", "X=0.5"],
                              "adaptive threshold for unknown phase(s) X"),
    "resume_max_steps": (["--resume", "{tmp}/done", "--steps", "30", "--max-steps", "5"], "needs --adaptive"),
    "resume_device_on_mirrored_run": (["--resume", "{tmp}/mirrored", "--steps", "20", "--device", "cpu"],
                                      "add --strategy single to resume it on cpu alone"),
    "resume_single_with_two_replicas": (["--resume", "{tmp}/mirrored", "--steps", "20", "--strategy", "single",
                                         "--replicas", "2"], "got 2 with single; add --strategy mirrored or drop"),
    "strategy_unknown": (["--strategy", "ring"], "--strategy"),
    "replicas_without_mirrored": (["--replicas", "2"], "add --strategy mirrored"),
    "replicas_negative": (["--strategy", "mirrored", "--replicas", "-1"], "--replicas must be a whole number >= 1"),
    "replicas_zero": (["--strategy", "mirrored", "--replicas", "0"], "got 0; or leave it out"),  # ran 2 replicas
    "sync_every_zero": (["--strategy", "multiworker", "--sync-every", "0"], "--sync-every must be a whole number"),
    "device_unknown": (["--device", "bogus"], "use auto (default), cpu, gpu:N or mirrored"),
    "multiworker_without_tf_config": (["--strategy", "multiworker"], "TF_CONFIG"),
    "batch_not_divisible": (["--strategy", "mirrored", "--batch-size", "15"], "does not split evenly over 2"),
    # options that contradict each other (one of them was dropped without a word)
    "cpu_with_mirrored": (["--device", "cpu", "--strategy", "mirrored"],
                          "--device cpu picks one device, but a mirrored run uses every local GPU (or --replicas N of "
                          "them): drop --device, or drop --strategy mirrored"),
    "gpu_with_mirrored": (["--device", "gpu:0", "--strategy", "mirrored"], "--device gpu:0 picks one device"),
    "cpu_with_multiworker": (["--device", "cpu", "--strategy", "multiworker"], "a multiworker run uses every GPU"),
    "device_mirrored_with_single": (["--device", "mirrored", "--strategy", "single"], "contradicts --strategy single"),
    "max_steps_without_adaptive": (["--max-steps", "5"], "--max-steps 5 caps each stay of the adaptive policy, so "
                                                         "it needs --adaptive PHASE=LOSS"),
}

_EXPERIMENTS = {
    "models_list.py": "models=[net()], phases=[Phase('A', loss, trains=['net'])]",
    "phases_str.py": "models={'net': net()}, phases='A'",
    "phases_tuple.py": "models={'net': net()}, phases=[('A', loss, ['net'])]",
    "no_weights.py": "models={'net': net(), 'relu': keras.Sequential([keras.Input((2,)), keras.layers.ReLU()])}, "
                     "phases=[Phase('A', loss, trains=['net'])]",
    "string_loss.py": "models={'net': net()}, phases=[Phase('A', lambda ctx: tf.constant('abc'), trains=['net'])]",
    "nan_data.py": "models={'net': net()}, phases=[Phase('A', loss, trains=['net'])], data=DATA * np.nan, name='x'",
    "shape_mismatch.py": "models={'net': net(3)}, phases=[Phase('A', loss, trains=['net'])]",
    "models_empty.py": "models={}, phases=[Phase('A', loss, trains=['net'])]",
    "ratio_zero.py": "models={'net': net()}, phases=[Phase('A', loss, trains=['net']), Phase('B', loss, trains=['net'])], "
                     "default_ratio=[1, 0]",
}
_EXPERIMENT = """
import keras, numpy as np, tensorflow as tf
from training_core import Experiment, Phase
DATA = np.ones((8, 2), "float32")
def net(n=2):
    return keras.Sequential([keras.Input((n,)), keras.layers.Dense(1, name="out")], name="net")
def loss(ctx):
    return keras.ops.mean(ctx.models["net"](ctx.batch))
def build():
    return Experiment(**{{"name": "x", "data": DATA, **dict({args})}})
"""
_CONFIGS = {"seed_zero.toml": 'seed = "zero"', "batch_big.toml": 'batch_size = "big"', "freeze_5.toml": "freeze = 5",
            "tb_no.toml": 'tensorboard = "no"', "fetch_frac.toml": "fetch_every = 2.5",
            "example_path.toml": 'example = "../../resources/experiments/ring"', "key_typo.toml": "learnign_rate = 1e-3",
            "steps_zero.toml": "steps = 0", "steps_negative.toml": "steps = -5",
            "sweep.toml": '[base]\nsteps = 50\n[grid]\nseed = [0, 1]', "lr_neg.toml": "lr = {D = -1.0}",
            "lr_phase.toml": "lr = {X = 1e-3}", "ratio_0.toml": 'schedule = {policy = "fixed", ratio = [0, 1]}',
            "freeze_typo.toml": 'freeze = ["generatr"]', "nan_factor.toml": "nan_lr_factor = 2.0",
            "sync_0.toml": "sync_every = 0"}


def _tree(d) -> dict[str, tuple[int, int, str | None]]:
    """Every file and folder under `d`: size, modification time and (files) the sha256 of the bytes."""
    return {str(p.relative_to(d)): (p.stat().st_size, p.stat().st_mtime_ns,
                                    hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None)
            for p in sorted(d.rglob("*"))}


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    write_file(tmp, "raises.py", "import keras\n\nx = 1 / 0\n")
    write_file(tmp, "build_raises.py", "def build():\n    raise RuntimeError('boom')\n")
    write_file(tmp, "misfit.py", MISFIT_GAN)
    misfit = (tmp / "misfit.py").read_text()  # the GAN shortcut's four names, as variations on one file
    write_file(tmp, "no_real_data.py", misfit.replace('real_data = np.zeros((10, 2), "float32")', ""))
    write_file(tmp, "ratio_text.py", misfit.replace("noise_dim = 3", "noise_dim = 4") + 'ratio = "5:x"\n')
    (tmp / "full").mkdir()
    (tmp / "full" / "keep.txt").write_text("an earlier run\n")
    for name, args in _EXPERIMENTS.items():
        write_file(tmp, name, _EXPERIMENT.format(args=args))
    write_file(tmp, "same_names.py", """
        import keras, numpy as np
        noise_dim = 2
        def generator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="out")], name="generator")
        def discriminator():  # named like the generator: its variables would be generator/out/...
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="generator")
        real_data = np.zeros((10, 2), "float32")
        """)
    for name, line in _CONFIGS.items():
        (tmp / name).write_text(f'example = "ring"\n{line}\n' if "example" not in line else line + "\n")
    (tmp / "latin1.toml").write_bytes('example = "ring"\ndescription = "caf\xe9"\n'.encode("latin-1"))
    Trainer(RunConfig(example="factorization", steps=20, run_dir=str(tmp / "done"), tensorboard=False)).run()
    arch = tiny_gan(tmp)
    Trainer(RunConfig(experiment_file=str(arch), example=None, steps=10, run_dir=str(tmp / "arch"))).run()
    arch.write_text(arch.read_text().replace('Dense(4, name="dense_1")', 'Dense(5, name="dense_1")'))
    Trainer(RunConfig(example="factorization", steps=10, strategy="mirrored", replicas=2, run_dir=str(tmp / "mirrored"),
                      tensorboard=False)).run()
    before = {d: _tree(tmp / d) for d in ("done", "arch", "mirrored")}
    nan = nan_experiment(tmp)
    RunConfig(example="ring", steps=40, seed=5, schedule={"policy": "fixed", "ratio": [2, 1]}, var_every=4,
              run_dir="/elsewhere").write_toml(tmp / "rerun.toml")

    commands = {}
    for name, (args, _) in BAD.items():
        args = [a.format(tmp=tmp) for a in args]
        if "--resume" in args or "--sweep" in args:  # (no --run-dir: a sweep refuses one)
            commands[name] = main_cmd("--headless", *args)
            continue
        run_dir = [] if "--run-dir" in args else ["--run-dir", str(tmp / f"out_{name}")]
        commands[name] = main_cmd("--headless", "--steps", "5", *run_dir, *args)
    commands["list_scopes"] = main_cmd("--headless", "--example", "digits", "--list-scopes",
                                       "--run-dir", str(tmp / "out_list"))
    commands["rerun"] = main_cmd("--headless", "--config", str(tmp / "rerun.toml"), "--run-dir", str(tmp / "rerun"))
    commands["nan"] = main_cmd("--headless", "--experiment", str(nan), "--steps", "100000",
                               "--run-dir", str(tmp / "nan"))
    commands["all_frozen"] = main_cmd("--headless", "--example", "factorization", "--freeze", "W", "--freeze", "C",
                                      "--run-dir", str(tmp / "frozen"))
    results = run_all(commands)
    return tmp, results, before  # before: the resumed runs' directories, for the test of each refusal


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli, name):
    tmp, results, before = cli
    r = results[name]
    lines = error_lines(r.stderr)
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and BAD[name][1] in lines[0], lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""
    if name in ("run_dir_not_empty", "run_dir_is_a_file", "resume_not_a_run", "config_is_a_directory"):
        assert sorted(p.name for p in (tmp / "full").iterdir()) == ["keep.txt"]
    elif not name.startswith("resume"):
        assert not (tmp / f"out_{name}").exists()
    run = BAD[name][0][1].removeprefix("{tmp}/") if name.startswith("resume_") else None
    if run in before:  # every file and folder of the refused resume's run as it was, byte for byte
        assert _tree(tmp / run) == before[run], f"a refused --resume changed {run}"


_WITHOUT_TF = """
import sys
from training_core.cli.headless import main
code = main(sys.argv[1:])
print("tensorflow imported:", "tensorflow" in sys.modules, "exit:", code)
"""


@pytest.mark.parametrize("args, says", [
    (["--example", "nope"], "unknown example"),
    (["--experiment", "{tmp}/nope.py"], "does not exist"),
    (["--experiment", "{tmp}/full"], "is a directory"),
    (["--experiment", "{tmp}/full/keep.txt"], "is not a Python file"),
    (["--run-dir", "{tmp}/full"], "not empty"),
    (["--device", "gpu:x"], "unknown device 'gpu:x'"),  # (it was found when the device was resolved, after TF)
    (["--replay", "{tmp}/done", "--deterministic", "--run-dir", "{tmp}/full"], "not empty"),
    (["--resume", "{tmp}/done", "--steps", "30", "--max-steps", "3"], "--max-steps"),
])
def test_typos_that_need_no_tensorflow_are_refused_before_it_loads(cli, args, says):
    """README: typos that need no TensorFlow answer at once. A fresh interpreter (not the tests' forked one,
    which has TensorFlow already) refuses them with TensorFlow never imported; a replay into a used
    directory, and an experiment file that is not Python, used to load it first (~5 s)."""
    tmp = cli[0]
    r = subprocess.run([sys.executable, "-c", _WITHOUT_TF, "--headless", *[a.format(tmp=tmp) for a in args]],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "tensorflow imported: False exit: 2", (r.stdout, r.stderr)
    assert says in r.stderr


@pytest.mark.parametrize("args, placement", [
    (["--strategy", "mirrored", "--device", "auto"], ("mirrored", 0, "auto")),  # auto is the default: no conflict
    (["--device", "mirrored", "--replicas", "2"], ("mirrored", 2, "mirrored")),  # the window's choice is the strategy
    (["--strategy", "single", "--replicas", "1"], ("single", 0, "auto")),  # one replica is what single means
    (["--device", "GPU:1"], ("single", 0, "gpu:1")),
])
def test_placement_options_that_agree_are_taken(args, placement):
    """What a new run's --strategy, --replicas and --device become (no TensorFlow)."""
    cfg = config_from_args(build_parser().parse_args(["--headless", *args]))
    assert (cfg.strategy, cfg.replicas, cfg.device) == placement


def test_max_steps_with_adaptive_is_taken():
    cfg = config_from_args(build_parser().parse_args(["--headless", "--adaptive", "D=0.5", "--adaptive", "G=0.5",
                                                      "--max-steps", "7"]))
    assert cfg.schedule == {"policy": "adaptive", "thresholds": {"D": 0.5, "G": 0.5}, "max_steps": 7}


def test_list_scopes_prints_the_tree_and_writes_nothing(cli):
    tmp, results, _ = cli
    r = results["list_scopes"]
    assert r.returncode == 0, r.stderr
    assert not (tmp / "out_list").exists()
    lines = r.stdout.splitlines()
    tree, phases = lines[:lines.index("Phases:")], lines[lines.index("Phases:"):]
    assert tree[-1] == ""  # the phases stand apart from the table
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:] if ln.strip()}
    assert rows["generator/"][-1] == rows["generator/"][0] and int(rows["generator/"][0].replace(",", "")) > 0
    bn = [ln for ln in lines if ln.strip().startswith("generator/bn_1/")]
    assert len(bn) == 1
    i = lines.index(bn[0])
    assert [ln.split()[0] for ln in lines[i + 1:i + 5]] == ["gamma", "beta", "moving_mean", "moving_variance"]
    mean = lines[i + 3].split()
    assert "(512,)" in lines[i + 3] and mean[-2:] == ["512", "non-trainable"]
    total = next(ln for ln in lines if ln.startswith("total"))
    assert int(total.split()[1].replace(",", "")) == sum(
        int(ln.split()[-2].replace(",", "")) for ln in lines if ln.rstrip().endswith("trainable") and "(" in ln)
    # one line per phase with what it trains, then the total; the counts add up to the table's
    params = {name: int(rows[name + "/"][0].replace(",", "")) for name in ("discriminator", "generator")}
    trainable = int(total.split("(")[1].split()[0].replace(",", ""))
    assert phases == [
        "Phases:",
        f"  D  trains discriminator: 6 variables, {params['discriminator']:,} parameters",
        f"  G  trains generator: 10 variables, {trainable - params['discriminator']:,} parameters",
        f"  2 phases train 16 of 20 variables, {trainable:,} of {int(total.split()[1].replace(',', '')):,} parameters"]


def test_config_rerun_in_a_subprocess_matches_an_in_process_run(cli):
    """Determinism across processes: `--config` in a fresh interpreter and a Trainer here agree digit for digit."""
    tmp, results, _ = cli
    r = results["rerun"]
    assert r.returncode == 0, r.stderr
    assert "run directory: " + str(tmp / "rerun") in r.stdout
    here = tmp / "rerun_here"
    cfg = RunConfig.read_toml(tmp / "rerun.toml")
    cfg.run_dir = str(here)
    Trainer(cfg).run()
    a, b = read_scalars(tmp / "rerun"), read_scalars(here)
    assert a.keys() == b.keys() and len(a["loss/D"].steps) == 27
    for tag in a:
        if not tag.startswith("metric/"):  # metrics are taken on a clock (every 2 s), not at fixed steps
            np.testing.assert_array_equal(a[tag].values, b[tag].values, err_msg=tag)


@pytest.mark.parametrize("name, cause", [("nan", "became nan at step 2"), ("all_frozen", "nothing can train")])
def test_headless_run_that_cannot_train_stops_with_one_error_line(cli, name, cause):
    tmp, results, _ = cli
    r = results[name]
    assert r.returncode == 1, r.stderr
    errors = [ln for ln in error_lines(r.stderr) if ln.startswith("error: ")]
    assert len(errors) == 1 and cause in errors[0], r.stderr
    events = read_events(tmp / ("nan" if name == "nan" else "frozen"))
    assert events[-1].kind == "stop" and events[-1].reason == "halted"  # it stopped itself
