"""What the core tests share: tiny experiment files, an observer that acts at known steps, snapshots
of variables and optimizer slots, and running `main.py` as a subprocess.

The experiment files are written into each test's tmp directory, so every test uses the same
experiment-file API as a user, and tiny models keep each run well under a second.
"""
from __future__ import annotations

import errno

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from tests import zygote
from training_core import Observer, RunConfig, Trainer, read_scalars
from training_core.loop.handle import TrainerHandle

REPO = Path(__file__).resolve().parents[2]

OPTIMIZERS = {
    "sgd": "keras.optimizers.SGD(0.05)",
    "sgdm": "keras.optimizers.SGD(0.05, momentum=0.9)",
    "adam": "keras.optimizers.Adam(0.01, beta_1=0.5)",
    "adamw": "keras.optimizers.AdamW(0.01, weight_decay=0.1)",
    "adam_clip": "keras.optimizers.Adam(0.01, global_clipnorm=0.05)",
}

_TINY_GAN = '''
"""A tiny GAN (GAN shortcut), {opt}; generator/dense_10 sits next to generator/dense_1 on purpose."""
import keras
import numpy as np

noise_dim = 2
batch_size = 16
ratio = "1:1"


def optimizer(phase):
    return {opt_expr}


def generator():
    return keras.Sequential([
        keras.Input((noise_dim,)),
        keras.layers.Dense(4, name="dense_1"),{bn}
        keras.layers.Activation("tanh", name="act_1"),
        keras.layers.Dense(4, activation="tanh", name="dense_10"),
        keras.layers.Dense(2, name="out"),
    ], name="generator")


def discriminator():
    return keras.Sequential([
        keras.Input((2,)),
        keras.layers.Dense(4, activation="tanh", name="dense_1"),
        keras.layers.Dense(1, name="out"),
    ], name="discriminator")


def real_data():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")
'''

_REGRESSION = '''
"""A deterministic regression (build() form): whole data every step, no random draws, so a test can
recompute every gradient. Phase A trains the hidden layer, phase B the output layer; {opt}."""
import keras
import numpy as np

from training_core import Experiment, Phase

_rng = np.random.default_rng(0)
X = _rng.normal(size=(32, 3)).astype("float32")
Y = (np.tanh(X @ _rng.normal(size=(3, 2))) + 0.3 * _rng.normal(size=(32, 2))).astype("float32")
DATA = np.concatenate([X, Y], 1)


def make_optimizer():
    return {opt_expr}


def net():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             keras.layers.Dense(2, name="out")], name="net")


def loss(ctx):
    x, y = ctx.data[:, :3], ctx.data[:, 3:]
    return keras.ops.mean(keras.ops.square(ctx.models["net"](x, training=True) - y))


def build():
    return Experiment(name="regression", models={{"net": net()}}, data=DATA, batch_size=None,
                      phases=[Phase("A", loss, trains=["net/dense_1"], optimizer=make_optimizer()),
                              Phase("B", loss, trains=["net/out"], optimizer=make_optimizer())],
                      default_ratio=[1, 1])
'''

#: a model of one scalar weight w = 1, for experiment files that need a loss of known arithmetic
SCALAR_MODEL = '''
class Scalar(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = self.add_weight(shape=(), initializer="ones", name="w")

    def call(self, x=None):
        return self.w
'''

_NAN = '''
"""A loss that turns NaN on the second step: log(w) with w = 1, then SGD(lr=10) makes w = -9."""
import keras
import numpy as np

from training_core import Experiment, Phase


''' + SCALAR_MODEL + '''

def loss(ctx):
    return keras.ops.log(ctx.models["m"]())


def build():
    return Experiment(name="nan", models={"m": Scalar(name="m")}, data=None,
                      phases=[Phase("P", loss, trains=["m"], optimizer=keras.optimizers.SGD(10.0))])
'''


def write_file(directory: Path, name: str, source: str) -> Path:
    path = Path(directory) / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def tiny_gan(directory: Path, opt: str = "adam", bn: bool = False, opt_g: str | None = None) -> Path:
    """`opt` for both phases, or for D only when `opt_g` names G's."""
    bn_line = '\n        keras.layers.BatchNormalization(name="bn_1"),' if bn else ""
    expr = OPTIMIZERS[opt] if opt_g is None else f'{OPTIMIZERS[opt]} if phase == "D" else {OPTIMIZERS[opt_g]}'
    name = opt if opt_g is None else f"{opt}_{opt_g}"
    src = _TINY_GAN.format(opt=name, opt_expr=expr, bn=bn_line)
    return write_file(directory, f"tiny_gan_{name}{'_bn' if bn else ''}.py", src)


def regression(directory: Path, opt: str = "sgd") -> Path:
    return write_file(directory, f"regression_{opt}.py", _REGRESSION.format(opt=opt, opt_expr=OPTIMIZERS[opt]))


def nan_experiment(directory: Path) -> Path:
    return write_file(directory, "nan_loss.py", _NAN)


def config(experiment: Path, run_dir: Path, **kw: Any) -> RunConfig:
    """A test run: metrics fetched and per-variable numbers recorded at every step, nothing slow on."""
    base = dict(experiment_file=str(experiment), example=None, seed=0, run_dir=str(run_dir), fetch_every=1,
                var_every=1, tensorboard=False, checkpoint_every=0, sample_seconds=1e9)
    return RunConfig(**(base | kw))


class Script(Observer):
    """Records everything and, with `fetch_every=1`, acts right after chosen steps.

    `at[k]` is a list of commands or callables; they run in `on_metrics` for step k, on the training
    thread, so a command sent there applies before step k + 1.
    """

    def __init__(self, at: dict[int, list[Any]] | None = None) -> None:
        self.at = {k: list(v) for k, v in (at or {}).items()}
        self.trainer: Trainer | None = None
        self.events: list[dict] = []
        self.blocks: list[Any] = []
        self.steps_seen: list[int] = []

    def on_prepared(self, run: Any) -> None:
        # Observers see a run through its narrow handle; a test's actions check the trainer's own variables bit
        # for bit, so the script reaches the trainer behind the handle (tests only).
        self.trainer = run._t if isinstance(run, TrainerHandle) else run
        for action in self.at.pop(0, []):
            self._do(action)

    def on_event(self, event: dict) -> None:
        self.events.append(event)

    def on_metrics(self, batch: Any) -> None:
        self.blocks.extend(batch.blocks)
        step = batch.status.step
        self.steps_seen.append(step)
        for action in self.at.pop(step, []):
            self._do(action)

    def _do(self, action: Any) -> None:
        if callable(action):
            action(self.trainer)
        else:
            self.trainer.send(action)

    def kinds(self, *kinds: str) -> list[dict]:
        return [e for e in self.events if e.kind in kinds]

    def column(self, kind: str, path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, values, frozen) of one variable over every step its phase ran."""
        steps, vals, frozen = [], [], []
        for b in self.blocks:
            if path in b.var_paths:
                j = b.var_paths.index(path)
                steps.append(b.steps)
                vals.append(getattr(b, kind)[:, j])
                frozen.append(b.frozen[:, j])
        return np.concatenate(steps), np.concatenate(vals), np.concatenate(frozen)


def run(cfg: RunConfig, observer: Observer | None = None) -> Trainer:
    trainer = Trainer(cfg, observer)
    trainer.run()
    return trainer


def variables(trainer: Trainer) -> dict[str, Any]:
    return {v.path: v for v in trainer.prepared.variables}


def snapshot(trainer: Trainer, paths: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    vs = variables(trainer)
    return {p: np.array(vs[p].numpy(), copy=True) for p in (vs if paths is None else paths)}


def optimizer_of(trainer: Trainer, path: str) -> Any:
    p = trainer.prepared
    return next(o for o, paths in zip(p.optimizers, p.phase_paths) if path in paths)


def slots(opt: Any, var: Any) -> dict[str, np.ndarray]:
    """The optimizer's slot variables for `var` (momentum, velocity, ...), found by Keras' own index.

    Cross-checked against the slot's name, which Keras derives from the variable's path, so that a
    change in Keras' internals fails here loudly rather than comparing the wrong arrays.
    """
    idx = opt._get_variable_index(var)
    out = {}
    for attr in ("momentums", "_momentums", "_velocities", "_velocity_hats"):
        lst = getattr(opt, attr, None)
        if isinstance(lst, list) and lst and lst[idx] is not None:
            slot = lst[idx]
            assert slot.name.startswith(var.path.replace("/", "_")), (slot.name, var.path)
            out[slot.name] = np.array(slot.numpy(), copy=True)
    return out


def frozen_state(trainer: Trainer, paths: Iterable[str]) -> dict[str, np.ndarray]:
    """Values and optimizer slots of the given variables, by name."""
    vs = variables(trainer)
    out = {}
    for p in paths:
        out[p] = np.array(vs[p].numpy(), copy=True)
        out.update(slots(optimizer_of(trainer, p), vs[p]))
    return out


def assert_bitwise_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray], what: str = "") -> None:
    assert a.keys() == b.keys()
    changed = [k for k in a if a[k].tobytes() != b[k].tobytes()]
    assert not changed, f"{what}: changed bits in {changed}"


def assert_same_model(got: Any, want: Any) -> None:
    """Two `RunData` hold the same series (every tag: steps, wall times, values) and the same events; how a
    follower came by its model must not show in it."""
    assert sorted(got.tags()) == sorted(want.tags())  # (the order phases first show up in may differ)
    for tag in want.tags():
        for a, b in zip(got.series(tag), want.series(tag), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=tag)
    assert [e.to_dict() for e in got.events] == [e.to_dict() for e in want.events]


def phase_of_step(run_dir: Path) -> dict[int, str]:
    """Which phase ran each step, from scalars.csv's loss rows."""
    out: dict[int, str] = {}
    for tag, s in read_scalars(run_dir).items():
        if tag.startswith("loss/"):
            for step in s.steps.tolist():
                assert step not in out, f"step {step} has two loss rows"
                out[step] = tag[len("loss/"):]
    return dict(sorted(out.items()))


def runs_of(seq: list[str]) -> list[tuple[str, int]]:
    """Run-length encoding: ["D","D","G"] -> [("D", 2), ("G", 1)]."""
    out: list[tuple[str, int]] = []
    for x in seq:
        if out and out[-1][0] == x:
            out[-1] = (x, out[-1][1] + 1)
        else:
            out.append((x, 1))
    return out


# -- subprocesses ---------------------------------------------------------------------------------------
_TF_NOISE = ("I0000", "W0000", "E0000", "WARNING: All log messages")
_TF_NOISE_IN = ("cuda", "onednn", "cpu_feature_guard", "To enable the following instructions")


def error_lines(stderr: str) -> list[str]:
    """stderr without TensorFlow's start-up chatter (in case it ever gets past the CLI's quieting)."""
    return [ln for ln in stderr.strip().splitlines()
            if ln.strip() and not ln.startswith(_TF_NOISE) and not any(s.lower() in ln.lower() for s in _TF_NOISE_IN)]


def main_cmd(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "main.py"), *args]


def env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def start(args: list[str], **kw: Any) -> subprocess.Popen:
    """A process of its own, forked from an interpreter that has imported TensorFlow (tests/zygote.py)."""
    return zygote.Popen(args, cwd=kw.pop("cwd", REPO), env=kw.pop("env", env()), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, **kw)


def run_all(commands: dict[str, list[str]], timeout: float = 600,
            parallel: int = 2) -> dict[str, subprocess.CompletedProcess]:
    """Run `python main.py ...` command lines as processes of their own, `parallel` at a time, each
    forked from an interpreter that has imported TensorFlow (tests/zygote.py). `timeout` is per process."""
    from concurrent.futures import ThreadPoolExecutor

    def one(argv: list[str]) -> subprocess.CompletedProcess:
        return zygote.run(argv, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout)

    with ThreadPoolExecutor(parallel) as pool:
        done = dict(zip(commands, pool.map(one, commands.values())))
    return done


def wait_for(predicate: Callable[[], bool], timeout: float = 300, interval: float = 0.05) -> bool:
    """Polls until `predicate()`; the timeout only bounds a failing test (a loaded 2-core machine took over 60 s
    for what a quiet one does in 5), so it is no speed threshold."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class FullDisk:
    """A file whose writes fail as on a full disk (ENOSPC); everything else is the file's."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def write(self, _data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)
