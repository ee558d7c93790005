"""The compiled step of one phase with several replicas (`tf.distribute` mirrored or multi-worker).

Each replica runs the phase's loss on its own share of the global batch (`batch_size / replicas` rows
drawn from its own random stream; `batch_size=None`: its slice of the data) and takes the gradients.
Then one all-reduce (the mean) gives every replica the same gradients, the same loss and the same
BatchNormalization statistics, and each replica runs exactly the single-device step's arithmetic on
them (engine/phase_step.py: Keras' clipping, the masked variant's frozen mask, restore and live-norm clipping), on
its own copy of every variable. So the copies never drift apart and exactness is per copy: a frozen
variable and its slots are put back on every replica, bit for bit.

Why all-reduce first and not inside Keras' `apply`: Keras' TF backend clips each replica's local
gradients before it sums them, so `clipnorm`/`global_clipnorm` would act on per-replica gradients;
reducing first clips the global gradient, as a single device would. The update itself is Keras'
(`keras_private.replica_update_step`: its update through a merge call), without its second all-reduce.

Random numbers: the run's generator is made in the strategy's scope, so its state is one mirrored
variable (checkpointed as on one device) and each replica draws from its own stream, a hash of the
replica id and the shared counter (`tf.random.Generator` under a strategy). The numbers therefore
differ from a single-device run's; the arithmetic is the same up to float32 reduction order (README).

BatchNormalization: Keras 3 keeps its moving statistics per replica (aggregation "none"), so each
replica's copy would follow its own local batches and the copies would drift. The step all-reduces
each statistic's change of this step and applies the mean to every copy (a statistic the step did
not move has a zero change and keeps its bits). The batch statistics in the forward pass stay
per replica, as in every data-parallel run, unless the layer is `BatchNormalization(synchronized=True)`.

The packed metrics come from replica 0: its variables equal every replica's, and the gradient norms
are those of the all-reduced gradients.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from training_core.base.errors import UserError
from training_core.engine import keras_private
from training_core.engine.phase_step import PhaseStep, StepSpec, _value
from training_core.experiment.api import StepContext


class ReplicatedStep(PhaseStep):
    def __init__(self, spec: StepSpec, strategy: Any) -> None:
        self.strategy = strategy
        self.replicas = int(strategy.num_replicas_in_sync)
        self.local = len(strategy.extended.worker_devices)  # replicas on this worker
        super().__init__(spec)
        b, data = self.batch_size, self.data
        if b is not None and b % self.replicas:
            raise UserError(f"batch size {b} does not split evenly over {self.replicas} replicas; use a multiple of "
                            f"{self.replicas} (--batch-size)")
        if b is None and data is not None and data.rows % self.replicas:
            raise UserError(f"phase {self.phase.name!r} uses the whole data ({data.rows} rows) every step, "
                            f"which does not split evenly over {self.replicas} replicas; give a batch_size or "
                            f"a row count divisible by {self.replicas}")
        if not isinstance(self.opt.iterations.value, tf.distribute.DistributedValues):
            raise UserError(f"phase {self.phase.name!r}: its optimizer was made outside the experiment's functions, "
                            f"so it cannot be placed on every replica; create it in build() or optimizer(phase)")

    _syncs_stats = True

    def _compile(self, fn: Any, jit: bool) -> Any:
        return tf.function(fn, autograph=False)

    def _nested(self, fn: Any) -> Any:
        return fn  # a merge call (the update) may not sit in a tf.function nested in `strategy.run`

    def _pack(self, loss: tf.Tensor, before: list, grads: list) -> tf.Tensor:
        """The norms on each worker's first replica only (the one whose result is read): every copy and every
        reduced gradient is the same on the others, so they return zeros of the same shape."""
        rid = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
        if rid is None or rid % self.local == 0:
            return super()._pack(loss, before, grads)
        return tf.zeros([1 + 3 * len(self.vars)], tf.float32)

    def _fast_grads(self, batch: Any = None) -> tuple[tf.Tensor, list]:
        return self._call_grads(batch)  # with --jit, compiled per replica (`_compile_part`)

    def _compile_part(self, fn: Any, jit: bool) -> Any:
        """XLA cannot compile a program that spans devices (`strategy.run`), nor the merge call of the update on
        a CPU: with --jit, each replica's forward and backward pass is compiled (most of a step's work).
        TensorFlow traces it once per replica's device."""
        return tf.function(fn, autograph=False, jit_compile=jit or None)

    # -- cross-replica: one call per step -------------------------------------------------------------
    def _fast(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "fast")
        return self._first(self.strategy.run(self._fast_body, args=self._global_batch()))

    def _masked(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "masked")
        return self._first(self.strategy.run(self._masked_body, args=self._global_batch()))

    def _global_batch(self) -> tuple:
        """A pipeline's next global batch, drawn once for all replicas (each takes its rows in `_context`), as
        the arguments of `strategy.run`; none for in-memory data, which each replica draws from its own stream."""
        data = self.data
        return (data.draw(),) if data is not None and data.kind == "pipeline" else ()

    def _first(self, per_replica: Any) -> tf.Tensor:
        return self.strategy.experimental_local_results(per_replica)[0]

    # -- replica context ----------------------------------------------------------------------------
    def _context(self, batch: Any = None) -> StepContext:
        """Each replica's share: its slice of the whole data (batch_size None) or of the pipeline's global
        `batch` (rows `rid * k` to `(rid + 1) * k`, the split experimental_distribute_dataset makes), or
        `batch_size / replicas` rows drawn from its own stream."""
        rid = tf.distribute.get_replica_context().replica_id_in_sync_group
        n, data, b = self.replicas, self.data, self.batch_size
        if data is None:
            batch, bs = None, (b // n if b else 1)
        elif b is None or batch is not None:
            k = (data.rows if b is None else b) // n
            whole = data.whole() if batch is None else batch
            batch, bs = tf.nest.map_structure(lambda t: t[rid * k:(rid + 1) * k], whole), k
        else:
            bs = b // n
            batch = data.draw(self.rng, bs)
        ctx = StepContext(self.models, self.rng, batch, None if data is None else data.whole(), bs)
        for k_, v in self.extra.items():
            setattr(ctx, k_, v)
        return ctx

    def _reduce(self, loss: tf.Tensor, grads: list, stats_before: list) -> tuple[tf.Tensor, list]:
        """One all-reduce (mean) of the loss, the gradients and this step's change of every statistic."""
        live = [i for i, g in enumerate(grads) if g is not None]
        deltas = [_value(v) - b for v, b in zip(self.stat_vars, stats_before)]
        reduced = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.MEAN, [tf.cast(loss, tf.float32)] + [grads[i] for i in live] + deltas)
        out = list(grads)
        for j, i in enumerate(live):
            out[i] = reduced[1 + j]
        for v, b, d in zip(self.stat_vars, stats_before, reduced[1 + len(live):]):
            v.assign(b + d)  # aggregation "none": each replica writes its own copy, all the same value
        return reduced[0], out

    def _update(self, grads: list, variables: list) -> None:
        """Keras' per-variable update on every copy, without its all-reduce (the gradients are reduced)."""
        keras_private.replica_update_step(self.opt, grads, variables)
