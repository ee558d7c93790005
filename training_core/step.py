"""The compiled step of one phase, in two variants, both traced at warm-up.

`fast`: nothing of this phase is frozen, so the optimizer updates every phase variable
(`optimizer.apply`), exactly as a bare Keras loop would.

`masked`: some variables are frozen. Which ones, and how, is read from `tf.Variable`s, so changing
the freeze set never retraces:
  * exact: a frozen variable's update (weight decay, slot updates, the step itself) sits in a
    `tf.cond` branch that is not taken, which is the same arithmetic as leaving it out of the
    optimizer's var_list: value and slots stay bit-for-bit unchanged;
  * gate (leaky, for comparison): the gradient is multiplied by g in {0, 1}, which is the gradient of
    g*x + (1-g)*stop_gradient(x); the variable stays in the optimizer, so momentum and decay still
    move it.
Non-trainable state under a frozen scope (BatchNormalization moving statistics) is put back after the
forward pass unless the user opts in to updating it.

Both variants return one packed vector: [loss, ||dW_i||^2..., ||W_i||^2..., ||g_i||^2...], the update
being the real difference of the weights before and after the step.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from .experiment import Models, Phase, StepContext


def _value(v: Any) -> tf.Tensor:
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v.read_value()


def _sq(x: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.square(tf.cast(x, tf.float32)))


class PhaseStep:
    def __init__(self, phase: Phase, models: Models, optimizer: Any, variables: Sequence[Any],
                 stat_variables: Sequence[Any], rng: tf.random.Generator, data: tf.Variable | None,
                 batch_size: int | None, extra: dict, on_trace: Callable[[str, str], None]):
        self.phase, self.models, self.opt = phase, models, optimizer
        self.vars, self.stat_vars = list(variables), list(stat_variables)
        self.rng, self.data, self.batch_size, self.extra = rng, data, batch_size, extra
        self.on_trace = on_trace
        n = len(self.vars)
        # Live controls, read inside the graph: changing them never retraces.
        self.frozen = tf.Variable([False] * n, trainable=False, name=f"frozen_{phase.name}")
        self.gate = tf.Variable(False, trainable=False, name=f"gate_{phase.name}")
        self.restore_stats = tf.Variable([False] * len(self.stat_vars), trainable=False,
                                         name=f"restore_stats_{phase.name}")
        self.fast = tf.function(self._fast, autograph=False)
        self.masked = tf.function(self._masked, autograph=False)

    def warm_up(self) -> None:
        """Trace both variants now, so that the first freeze during the run costs no trace."""
        self.fast.get_concrete_function()
        self.masked.get_concrete_function()

    # -- graph bodies -------------------------------------------------------------------------------------
    def _context(self) -> StepContext:
        data, b = self.data, self.batch_size
        if data is None:
            batch, bs = None, b or 1
        elif b is None:
            batch, bs = data.read_value(), int(data.shape[0])
        else:
            idx = self.rng.uniform([b], minval=0, maxval=int(data.shape[0]), dtype=tf.int32)
            batch, bs = tf.gather(data, idx), b
        ctx = StepContext(self.models, self.rng, batch, None if data is None else data.read_value(), bs)
        for k, v in self.extra.items():
            setattr(ctx, k, v)
        return ctx

    def _loss_and_grads(self) -> tuple[tf.Tensor, list]:
        with tf.GradientTape() as tape:
            loss = tf.convert_to_tensor(self.phase.loss(self._context()))
            if loss.shape.rank:
                loss = tf.reduce_mean(loss)
        grads = tape.gradient(loss, self.vars)
        return loss, grads

    def _pack(self, loss: tf.Tensor, before: list, grads: list) -> tf.Tensor:
        d = [_sq(_value(v) - b) for v, b in zip(self.vars, before)]
        w = [_sq(_value(v)) for v in self.vars]
        g = [tf.constant(0.0) if gr is None else _sq(gr) for gr in grads]
        return tf.concat([tf.reshape(tf.cast(loss, tf.float32), [1]), tf.stack(d + w + g)], 0)

    def _fast(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "fast")
        before = [tf.identity(_value(v)) for v in self.vars]
        loss, grads = self._loss_and_grads()
        self.opt.apply(grads, self.vars)
        return self._pack(loss, before, grads)

    def _masked(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "masked")
        before = [tf.identity(_value(v)) for v in self.vars]
        stats_before = [tf.identity(_value(v)) for v in self.stat_vars]
        loss, grads = self._loss_and_grads()
        frozen, gate = self.frozen.read_value(), self.gate.read_value()
        opt = self.opt
        # Zero frozen gradients in both methods (keeps global-norm clipping to the live variables);
        # only the exact method also leaves the variable out of the update.
        kept = [None if g is None else g * tf.cast(tf.logical_not(frozen[i]), g.dtype) for i, g in enumerate(grads)]
        kept = opt._clip_gradients(kept)
        for i, (g, v) in enumerate(zip(kept, self.vars)):
            if g is None:
                continue

            def update(g=g, v=v):
                opt._apply_weight_decay([v])
                opt._backend_update_step([g], [v], opt.learning_rate)
                if getattr(v, "constraint", None) is not None:
                    v.assign(v.constraint(v))
                return tf.constant(True)

            tf.cond(tf.logical_or(tf.logical_not(frozen[i]), gate), update, lambda: tf.constant(False))
        opt.iterations.assign_add(1)
        restore = self.restore_stats.read_value()
        for j, (v, b) in enumerate(zip(self.stat_vars, stats_before)):
            v.assign(tf.where(restore[j], b, _value(v)))
        return self._pack(loss, before, grads)
