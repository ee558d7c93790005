"""monitor/keras_callback.py: what docs/monitor.md claims a `fit()` run under `Monitor` has, each checked on a real
`fit()` of the keras.io-style GAN: `steps_per_execution > 1` (each record step is one execution), a checkpoint
on request through the run's `commands.jsonl` (what an attached window or a shell sends, docs/server.md), and
its TensorBoard event files read back with TensorBoard's own reader.

Why: these were claimed in the docs' table without a test; the record's steps, the checkpoint and `tb/` are
what `--open`, `--attach` and TensorBoard show of the run.
"""
from __future__ import annotations

import json

import keras
import numpy as np
import tensorflow as tf

from training_core import read_events, read_scalars
from training_core.monitor import Monitor
from training_core.rundir.layout import checkpoint_steps
from training_core.rundir.varstore import read_variables

from .keras_gan import dataset, make_gan
from .test_tensorboard import served


class _Weights(keras.callbacks.Callback):
    """The discriminator's output kernel before and after the batch (an execution) that begins at `begin`."""

    def __init__(self, begin: int) -> None:
        super().__init__()
        self.begin, self.before, self.after = begin, None, None

    def on_train_batch_begin(self, batch, logs=None):
        if batch == self.begin:
            self.before = self.model.discriminator.get_layer("out").kernel.numpy()

    def on_train_batch_end(self, batch, logs=None):
        if self.before is not None and self.after is None:
            self.after = self.model.discriminator.get_layer("out").kernel.numpy()


def test_with_steps_per_execution_each_record_step_is_one_execution(tmp_path):
    gan = make_gan()
    keras.Model.compile(gan, steps_per_execution=4)  # the GAN's optimizers stay its attributes
    weights = _Weights(begin=12)  # the 4th execution: batches 12..15
    gan.fit(dataset(16), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", var_every=1, quiet=True), weights])
    sc = read_scalars(tmp_path / "run")
    assert sc["loss/discriminator"].steps.tolist() == sc["loss/generator"].steps.tolist() == [1, 2, 3, 4]
    events = read_events(tmp_path / "run")
    assert events[-1].kind == "stop" and events[-1].reason == "done" and events[-1].step == 4
    d = {r.phase: r for r in read_variables(tmp_path / "run")}["discriminator"]
    row, col = d.steps.tolist().index(4), d.paths.index("discriminator/out/kernel")
    moved = float(np.linalg.norm(weights.after - weights.before))  # four batches' updates
    assert moved > 0
    np.testing.assert_allclose(d.update_norm[row, col], moved, rtol=1e-4)


class _Send(keras.callbacks.Callback):
    """Appends `line` to the run's commands.jsonl after batch `after` (as `--attach` or a shell does), and makes the
    Monitor read the file at every boundary (not at most every 0.25 s), so that the batch it lands at is known."""

    def __init__(self, monitor: Monitor, after: int, line: dict) -> None:
        super().__init__()
        self.monitor, self.after, self.line = monitor, after, line

    def on_train_begin(self, logs=None):
        core = self.monitor.core
        core.config.fetch_seconds = 0.0
        next(o for o in core.observers if type(o).__name__ == "CommandFileReader").poll_s = 0.0

    def on_train_batch_end(self, batch, logs=None):
        if batch + 1 == self.after:
            with open(self.monitor.run_dir / "commands.jsonl", "a") as f:
                f.write(json.dumps(self.line) + "\n")


def test_a_checkpoint_requested_through_commands_jsonl_is_written_at_the_next_batch(tmp_path):
    gan = make_gan()
    monitor = Monitor(tmp_path / "run", quiet=True)  # checkpoint_every=0: only on request
    send = _Send(monitor, 3, {"id": "c1", "kind": "checkpoint"})
    kernel = {}
    record = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs=None: kernel.setdefault(
        b + 1, gan.discriminator.get_layer("out").kernel.numpy()))
    gan.fit(dataset(8), epochs=1, verbose=0, callbacks=[monitor, send, record])
    assert checkpoint_steps(tmp_path / "run") == [4]  # read at the boundary after step 4, saved there
    events = read_events(tmp_path / "run")
    asked = [e for e in events if getattr(e, "id", None) == "c1"]  # the acknowledgement a sender greps for
    assert [(e.kind, e.step) for e in asked] == [("checkpoint_requested", 4)]
    saved = [e for e in events if e.kind == "checkpoint"]
    assert [e.step for e in saved] == [4]
    # it holds the models as they were at that step
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / saved[0].path))
    key = next(k for k in reader.get_variable_to_shape_map() if "discriminator" in k and "out" in k
               and reader.get_variable_to_shape_map()[k] == list(kernel[4].shape) and "OPTIMIZER" not in k)
    np.testing.assert_array_equal(reader.get_tensor(key), kernel[4])


def test_tensorboard_reads_a_monitored_fit_runs_losses_and_updates(tmp_path):
    gan = make_gan()
    gan.fit(dataset(8), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", var_every=2, quiet=True)])
    sc = read_scalars(tmp_path / "run")
    train, var = served(tmp_path / "run"), served(tmp_path / "run", "variables")
    for tag in ("loss/discriminator", "loss/generator"):
        got = train.Tensors(tag)
        assert [e.step for e in got] == sc[tag].steps.tolist() == list(range(1, 9)), tag
        np.testing.assert_allclose([tf.make_ndarray(e.tensor_proto) for e in got], sc[tag].values, rtol=1e-6)
    updates = {t for t in sc if t.startswith("update_")}
    assert updates and {t for t in var.Tags()["tensors"]} == updates  # no grad_norm: the Monitor measures none
    for tag in ("update_norm/discriminator/out/kernel", "update_ratio/generator/dense_1/kernel"):
        got = var.Tensors(tag)
        assert [e.step for e in got] == sc[tag].steps.tolist() and len(got) >= 4, tag
        np.testing.assert_allclose([tf.make_ndarray(e.tensor_proto) for e in got], sc[tag].values, rtol=1e-6)
    assert not [t for t in train.Tags()["tensors"] if t.startswith(("update_", "grad_"))]
