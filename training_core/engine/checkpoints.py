"""Checkpoints of a run: models, optimizers (slots, iterations, learning rate), random generators, and
the host-side state a resumed run needs to continue exactly where the checkpoint stood.

The checkpoint's object graph is laid out by scope path, not by Keras' internal lists, so a user can
find a variable in it with `tf.train.list_variables`:
  variables/generator/dense_1/kernel
  optimizers/D/slots/discriminator/dense_1/kernel/momentum
  optimizers/D/iteration, optimizers/D/learning_rate, rng, sample_rng, step, host
(each followed by TensorFlow's `/.ATTRIBUTES/VARIABLE_VALUE`), and, when the data is a `tf.data` pipeline,
`data/.ATTRIBUTES/ITERATOR_STATE` (its iterator: position, shuffle buffer and seeds, prefetched batches). Keras names a slot variable
`<path with _>_<slot>`; that is how a slot finds its variable. `host` is a JSON string (loop/restore.py
says what it holds): the freeze set, the method, the schedule's position in its cycle, each phase's
step count. A string variable in the checkpoint means one file holds the whole state: a checkpoint
is complete or absent, never half of a pair.

Which checkpoints exist is read from the files themselves, without TensorFlow (rundir/layout.py:
`checkpoint_steps`).
"""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from training_core.base.errors import WriteFailed, describe
from training_core.engine.slots import slots_by_variable
from training_core.rundir.layout import (
    CHECKPOINT_DIR,
    MODELS_DIR,
    PREFIX,
    checkpoint_prefix,
    checkpoint_steps,
    remove_partial,
)

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


def _write_state(directory: Path, names: list[str]) -> None:
    """TensorFlow's `checkpoint` state file (a text proto: `tf.train.latest_checkpoint` and the manager read
    it), listing `names` oldest first, written atomically."""
    state = directory / "checkpoint"
    try:
        listed = re.findall(r'^all_model_checkpoint_paths: "([^"]*)"$', state.read_text(encoding="utf-8"), re.M)
    except (OSError, UnicodeDecodeError):
        listed = None
    if listed == names:
        return  # it says what is there: leave it (a refused resume writes nothing)
    now = time.time()
    stamps = [now - len(names) + i for i in range(len(names))]
    lines = [f'model_checkpoint_path: "{names[-1]}"'] + [f'all_model_checkpoint_paths: "{n}"' for n in names]
    lines += [f"all_model_checkpoint_timestamps: {t:.6f}" for t in stamps]
    lines.append(f"last_preserved_timestamp: {stamps[0] - 1:.6f}")
    tmp = directory / "checkpoint.tmp-freezeframe"
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(directory / "checkpoint")


class CheckpointStore:
    """Saves and restores a prepared run's state under `RUN_DIR/checkpoints/` (the last 3 kept)."""

    def __init__(self, prepared: Any, run_dir: Path) -> None:
        import tensorflow as tf
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / CHECKPOINT_DIR
        with tf.device("/CPU:0"):  # a string variable lives on the host
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="checkpoint_step")
            self.host = tf.Variable("", dtype=tf.string, trainable=False, name="host_state")
        variables = {v.path: v for v in prepared.variables}
        optimizers = {name: _nest(_slots(opt, list(paths)))  # (None: a monitored fit()'s, not known to it)
                      for name, opt, paths in zip(prepared.phase_names, prepared.optimizers, prepared.phase_paths)
                      if opt is not None}
        # a tf.data pipeline's iterator (engine/datasets.py): its position, shuffle buffer, seeds and prefetched
        # batches, so a resumed run takes the batches the run never interrupted took
        data = getattr(getattr(prepared, "data", None), "iterator", None)  # (a monitored run has no data)
        self.checkpoint = tf.train.Checkpoint(step=self.step, host=self.host, rng=prepared.rng,
                                              sample_rng=prepared.sample_rng, variables=_nest(variables),
                                              optimizers=optimizers, **({} if data is None else {"data": data}))
        self.models = dict(prepared.experiment.models)
        self.manager: Any = None
        self._resync()
        self.last_step = -1

    def _resync(self) -> None:
        """(Re)build TensorFlow's manager from the complete checkpoints on disk, so its `checkpoint` file and
        its "last 3 kept" agree with what is there (after a kill, a rollback, a resume)."""
        import tensorflow as tf
        if self.dir.is_dir():
            remove_partial(self.run_dir)
            steps = checkpoint_steps(self.run_dir)
            if steps:
                _write_state(self.dir, [f"{PREFIX}-{s}" for s in steps])
            else:
                (self.dir / "checkpoint").unlink(missing_ok=True)  # it would name checkpoints that are gone
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(self.dir), max_to_keep=MAX_TO_KEEP,
                                                  checkpoint_name=PREFIX)

    #: a non-chief worker of a resumed multiworker run: the run directory whose checkpoints it may also
    #: restore (those from before the resume are there only, and a rollback to one must happen on every
    #: worker, or their weights part without a word)
    read_from: Path | None = None

    def steps(self) -> list[int]:
        own = checkpoint_steps(self.run_dir)
        return sorted(set(own) | set(checkpoint_steps(self.read_from))) if self.read_from is not None else own

    def save(self, step: int, host: dict[str, Any]) -> str:
        """Write a checkpoint of the state after `step`; returns its path prefix. A failed write (a full
        disk) leaves no partial checkpoint behind and raises `WriteFailed`."""
        self.step.assign(step)
        self.host.assign(json.dumps(host))
        try:
            path = self.manager.save(checkpoint_number=step)
        except Exception as e:  # noqa: BLE001 - TensorFlow raises its own error types for OS failures
            remove_partial(self.run_dir)
            raise WriteFailed(self.dir, describe(e)) from e
        self.last_step = step
        return path

    def restore(self, step: int) -> dict[str, Any]:
        """Restore everything from the checkpoint at `step`; returns its host state."""
        where = self.run_dir
        if self.read_from is not None and step not in checkpoint_steps(self.run_dir):
            where = self.read_from
        self.checkpoint.restore(str(checkpoint_prefix(where, step))).assert_existing_objects_matched()
        self.last_step = int(self.step.numpy())
        raw = self.host.numpy().decode("utf-8")
        return json.loads(raw) if raw else {}

    def drop_after(self, step: int, keep_in: Path | None) -> int:
        """Move the checkpoints after `step` out of the way (into `keep_in`, or delete them); returns how many."""
        later = [s for s in self.steps() if s > step]
        for s in later:
            for f in self.dir.glob(f"{PREFIX}-{s}.*"):
                if keep_in is None:
                    f.unlink()
                else:
                    keep_in.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(f), str(keep_in / f.name))
        self._resync()
        return len(later)

    def export_weights(self) -> None:
        """Each model's weights in Keras' own format, `models/<name>.weights.h5`, loadable without Freezeframe
        (`model.load_weights(...)` on the same architecture)."""
        out = self.run_dir / MODELS_DIR
        for name, model in self.models.items():
            if not callable(getattr(model, "save_weights", None)):
                continue
            path = out / f"{name}.weights.h5"
            try:
                out.mkdir(exist_ok=True)
                model.save_weights(str(path), overwrite=True)
            except Exception as e:  # noqa: BLE001 - h5py raises OSError or its own errors
                path.unlink(missing_ok=True)
                raise WriteFailed(out, describe(e)) from e

