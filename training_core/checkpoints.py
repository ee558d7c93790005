"""Checkpoints of a run: models, optimizers (slots, iterations, learning rate) and random generators.

The checkpoint's object graph is laid out by scope path, not by Keras' internal lists, so a user can
find a variable in it with `tf.train.list_variables`:
  variables/generator/dense_1/kernel
  optimizers/D/slots/discriminator/dense_1/kernel/momentum
  optimizers/D/iteration, optimizers/D/learning_rate, rng, sample_rng, step
(each followed by TensorFlow's `/.ATTRIBUTES/VARIABLE_VALUE`). Keras names a slot variable
`<path with _>_<slot>`; that is how a slot finds its variable.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .runlog import CHECKPOINT_DIR
from .slots import slots_by_variable

MAX_TO_KEEP = 3


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """{"a/b/c": x} -> {"a": {"b": {"c": x}}}: a checkpoint key then reads as the scope path."""
    root: dict[str, Any] = {}
    for path, value in flat.items():
        node = root
        parts = path.split("/")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return root


def _slots(optimizer: Any, paths: list[str]) -> dict[str, Any]:
    """Optimizer variables by `slots/<variable path>/<slot>`, plus `iteration` and `learning_rate`."""
    per_var, wide = slots_by_variable(optimizer, paths)
    return {**wide, **{f"slots/{p}/{name}": v for p, slots in per_var.items() for name, v in slots.items()}}


class CheckpointStore:
    """Saves and restores a prepared run's state under `RUN_DIR/checkpoints/` (the last 3 kept)."""

    def __init__(self, prepared: Any, run_dir: Path) -> None:
        import tensorflow as tf
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="checkpoint_step")
        variables = {v.path: v for v in prepared.variables}
        optimizers = {name: _nest(_slots(opt, list(paths)))
                      for name, opt, paths in zip(prepared.phase_names, prepared.optimizers, prepared.phase_paths)}
        self.checkpoint = tf.train.Checkpoint(step=self.step, rng=prepared.rng, sample_rng=prepared.sample_rng,
                                              variables=_nest(variables), optimizers=optimizers)
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(run_dir / CHECKPOINT_DIR),
                                                  max_to_keep=MAX_TO_KEEP)
        self.last_step = -1

    def save(self, step: int) -> str:
        """Write a checkpoint of the state after `step`; returns its path prefix."""
        self.step.assign(step)
        self.last_step = step
        return self.manager.save(checkpoint_number=step)

    def restore(self, path: str) -> int:
        """Restore everything from `path` (a prefix `manager.save` returned); returns its step."""
        self.checkpoint.restore(path).assert_existing_objects_matched()
        self.last_step = int(self.step.numpy())
        return self.last_step
