"""An experiment's data as the compiled step takes it: in memory on the device, or a `tf.data` pipeline.

`InMemory` (an array, or a tuple or dict of arrays): each member a `tf.Variable` on the run's device; a step
draws `batch_size` row indices from the run's seeded generator and gathers the same rows of every member.
For one array these are exactly the ops the step always had (the recorded numbers of earlier runs hold).

`Pipeline` (a `tf.data.Dataset`): the Dataset repeated, batched to `batch_size` rows (an unbatched one with
`batch`, a batched one, such as a directory loader's, with `rebatch`), both with `drop_remainder`, so every
batch has one static shape and the step never retraces, then prefetched (`PREFETCH` batches, made by
tf.data's threads while the step runs). The step holds the iterator (a captured resource: `get_next` runs
inside the compiled step, no host round trip), and every checkpoint holds the iterator's state
(engine/checkpoints.py): the position, the shuffle buffer and its seeds, the prefetched batches. So a resumed
or replayed run takes the batches the run never interrupted took, when the pipeline itself is replayable
(docs/experiments.md says what is; prepare checks that its state can be saved, `check_checkpointable`).

Not `prefetch_to_device` nor `strategy.experimental_distribute_dataset`: the first's state cannot be saved
(tf.data: "GeneratorDataset does not support checkpointing"), the second's iterator is not trackable
(`tf.train.Checkpoint` refuses a DistributedIterator). With replicas, the one host iterator's global batch is
split among them in the step (engine/replicated.py), as experimental_distribute_dataset would split it; in a
multi-worker run every worker reads the whole Dataset and makes the same global batch (nothing is sharded).

Samples and metrics (engine/sampling.py) draw real rows from `pool`: rows taken once, while preparing, from a
second iterator over the Dataset. A second iterator moves the seeds a shuffled Dataset gives its iterators
(each new iterator draws the next seed from one generator the Dataset holds), so the training iterator's
state is saved before the pool is taken and restored after: it then yields what a plain loop's first
iterator yields.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from training_core.base.errors import UserError
from training_core.experiment.data import DataSpec

#: batches made ahead of the step by tf.data's threads (and held in every checkpoint)
PREFETCH = 2
#: rows `pool` keeps for samples and metrics: the most any context asks for (engine/sampling.py)
POOL_ROWS = 2048


class InMemory:
    """In-memory data (one array, or a tuple or dict of them) as variables on the device."""

    kind = "memory"

    def __init__(self, spec: DataSpec) -> None:
        self.warnings = list(spec.warnings)  # what the run goes on despite (experiment/data.unscaled_warning)
        self.structured = spec.kind == "structure"
        self.rows = int(spec.count)
        self.variables = tf.nest.map_structure(
            lambda a: tf.Variable(a, trainable=False, name="real_data"), spec.arrays)

    def draw(self, rng: tf.random.Generator, b: int | None) -> Any:
        """`b` random rows (the same rows of every member), or the whole data (`b` None)."""
        if b is None:
            return tf.nest.map_structure(lambda v: v.read_value(), self.variables)
        idx = rng.uniform([b], minval=0, maxval=self.rows, dtype=tf.int32)
        return tf.nest.map_structure(lambda v: tf.gather(v, idx), self.variables)

    def whole(self) -> Any:
        return tf.nest.map_structure(lambda v: v.read_value(), self.variables)

    def sample_rows(self, step: int, n: int) -> Any:
        """`n` rows as NumPy, the same rows for the same step (a generator seeded by the step)."""
        idx = np.random.default_rng(step).integers(0, self.rows, n)
        return tf.nest.map_structure(lambda v: np.asarray(v.read_value())[idx], self.variables)


class Pipeline:
    """A `tf.data.Dataset` batched, repeated and prefetched, its iterator captured by the step."""

    kind = "pipeline"
    rows = None

    def __init__(self, spec: DataSpec, batch_size: int, pool_rows: int, where: str) -> None:
        self.warnings = list(spec.warnings)
        ds = spec.dataset
        floats64 = any(s.dtype == tf.float64 for s in tf.nest.flatten(ds.element_spec))
        if floats64:  # the in-memory path takes float32, and so does this one
            ds = ds.map(lambda *x: tf.nest.map_structure(
                lambda t: tf.cast(t, tf.float32) if t.dtype == tf.float64 else t, x[0] if len(x) == 1 else x))
        self.source = ds
        self.batched = spec.batched
        ds = ds.repeat()
        ds = ds.rebatch(batch_size, drop_remainder=True) if spec.batched else ds.batch(batch_size, drop_remainder=True)
        self.dataset = ds.prefetch(PREFETCH) if PREFETCH else ds
        self.iterator = iter(self.dataset)
        # One traced get_next that every step calls: tf.data refuses a 33rd `get_next()` traced without autograph
        # on one iterator ("An unusually high number of get_next() calls"), and every variant of every phase
        # traces one (17 phases would pass the limit).
        self._get_next = tf.function(self.iterator.get_next, autograph=False)
        self.pool = self._take_pool(pool_rows, where)

    def draw(self, rng: Any = None, b: int | None = None) -> Any:
        """The next batch (inside the compiled step: the iterator's `get_next`)."""
        return self._get_next()

    def whole(self) -> None:
        return None  # a Dataset has no "all of it"

    def sample_rows(self, step: int, n: int) -> Any:
        idx = np.random.default_rng(step).integers(0, len(tf.nest.flatten(self.pool)[0]), n)
        return tf.nest.map_structure(lambda a: a[idx], self.pool)

    def _take_pool(self, n: int, where: str) -> Any:
        """Up to `n` rows from a second iterator, the training iterator's state saved first and put back after
        (module docstring); at least one row, which also shows a Dataset that yields nothing, now."""
        with tempfile.TemporaryDirectory(prefix="freezeframe-data-") as tmp:
            saved = check_checkpointable(self.iterator, Path(tmp) / "state", where)
            rows = self.source.unbatch() if self.batched else self.source
            got = [tf.nest.map_structure(np.asarray, r) for r in rows.take(max(1, n))]
            tf.train.Checkpoint(data=self.iterator).read(saved).assert_consumed()
        if not got:
            raise UserError(f"{where} is a Dataset that yields no element; give it data")
        return tf.nest.map_structure(lambda *xs: np.stack(xs), *got)


def check_checkpointable(iterator: Any, prefix: Path, where: str) -> str:
    """Save the iterator's state once (to `prefix`), so that a pipeline whose state cannot be saved is refused
    now, in one line, and not at its first checkpoint. Returns the saved path.

    A map that reads a variable fails as "ReadVariableOp is stateful": in practice a Keras random layer
    (keras.io's `ds.map(lambda x: keras.layers.RandomFlip(...)(x))`), whose seed is a variable. Its line says
    what works instead: stateless ops keyed by the stream, or the layer inside a model, whose variables (the
    seed's state among them) every checkpoint holds (tested: such a run resumes exactly, one with the layer
    outside the models does not)."""
    try:
        return tf.train.Checkpoint(data=iterator).write(str(prefix))
    except (tf.errors.FailedPreconditionError, tf.errors.UnimplementedError) as e:
        why = " ".join(str(getattr(e, "message", e)).split("[Op:")[0].split("}}")[-1].split())
        if "ReadVariableOp" in why:
            model = ("make the layer the discriminator's first (it then augments real and fake images alike)"
                     if where.startswith("real_data()") else
                     "apply the layer to ctx.batch in the loss as a model of the experiment (models={..., "
                     "\"augment\": keras.Sequential([layer])})")
            raise UserError(f"{where} is a Dataset whose state cannot be checkpointed ({why.rstrip('.')}: its map reads a "
                            f"variable, as Keras' random layers such as keras.layers.RandomFlip do for their seed), "
                            f"so its runs could not be resumed; use tf.image.stateless_random_* in its map with a "
                            f"seed from the element's number (Dataset.enumerate()), or {model}, whose variables "
                            f"every checkpoint holds") from None
        raise UserError(f"{where} is a Dataset whose state cannot be checkpointed ({why}), so its runs could not be "
                        f"resumed; use stateless random ops in its map (tf.random.stateless_uniform, "
                        f"tf.image.stateless_random_*) and no from_generator or prefetch_to_device") from None


def make_source(spec: DataSpec | None, batch_size: int | None, pool_rows: int, where: str,
                jit: bool = False) -> InMemory | Pipeline | None:
    """The data of a run, made in the caller's device or strategy scope (the variables are placed like the
    models'). `pool_rows`: real rows samples and metrics want (0: none; a Dataset then reads one, as a check)."""
    if spec is None:
        return None
    if spec.kind != "dataset":
        return InMemory(spec)
    if batch_size is None:
        raise UserError(f"{where} is a Dataset, and batch_size=None (the whole data every step) needs in-memory "
                        f"data; give the experiment a batch_size")
    if jit:  # measured: XLA cannot compile the iterator's get_next inside the step
        raise UserError(f"--jit compiles the step with XLA, which cannot read a tf.data iterator inside it; run "
                        f"{where.split(' in ')[-1]} without --jit, or give its data as arrays")
    return Pipeline(spec, batch_size, min(pool_rows, POOL_ROWS), where)


def run_data(exp: Any, jit: bool, where: str) -> InMemory | Pipeline | None:
    """The experiment's data as the run takes it (`make_source`), with as many pool rows as its samples and
    metrics ask for (engine/sampling.py: the most of `N_IMAGES`/`N_POINTS` and `METRIC_SAMPLES`)."""
    from training_core.engine.measuring import METRIC_SAMPLES
    from training_core.engine.sampling import N_IMAGES, N_POINTS
    from training_core.experiment.data import describe
    if exp.data is None:
        return None
    wanted = [METRIC_SAMPLES] if exp.metrics is not None else []
    if exp.sample is not None and exp.sample_kind != "none":
        wanted.append(N_IMAGES if exp.sample_kind == "images" else N_POINTS)
    return make_source(describe(exp.data, where), exp.batch_size, max(wanted, default=0), where, jit)
