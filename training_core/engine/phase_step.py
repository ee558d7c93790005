"""The compiled step of one phase, in two variants, each traced once: on one device only the first
phase's starting variant while preparing (the others' losses checked), the rest during the run (loop/warmup.py).

`fast`: nothing of this phase is frozen, so the optimizer updates every phase variable
(`optimizer.apply`), exactly as a bare Keras loop would.

`masked`: some variables are frozen. Which ones, and how, is read from `tf.Variable`s, so changing
the freeze set never retraces:
  * exact: the arithmetic of `optimizer.apply(grads_of_unfrozen, unfrozen)`, bit for bit. The update
    runs for every variable (Keras updates each variable on its own, so the unfrozen ones get exactly
    their subset update), then each frozen variable and its optimizer slots are put back to the values
    they had before the step (`tf.where`, which returns the old bits exactly), so weight decay, momentum
    and the step itself leave no trace. Gradient clipping sees only the unfrozen gradients: Keras'
    `global_clipnorm` sums the squared norms of the gradients it is given in one reduction, and a
    float32 sum over 10 values with zeros at the frozen places is not the sum over the 8 live ones, so
    the norm is reduced over exactly the live values (a boolean mask, then the same reduction).
  * gate (leaky, for comparison): the gradient of a frozen variable is zeroed, which is the gradient
    of g*x + (1-g)*stop_gradient(x), and the variable stays in the optimizer (clipping included), so
    momentum and decay still move it.
One graph serves both methods and any freeze set: no per-variable branch.
Non-trainable state under a frozen scope (BatchNormalization moving statistics) is put back after the
forward pass unless the user opts in to updating it.

Both variants return one packed vector: [loss, ||dW_i||^2..., ||W_i||^2..., ||g_i||^2...], the update
being the real difference of the weights before and after the step. (Returning the loss is part of the
arithmetic: TensorFlow's graph rewrites fuse the forward pass differently when the loss is an output,
so a reference loop compared bit for bit returns its loss too.)

Start-up of wide models: tracing is Python building the graph one op at a time (0.1-0.4 ms an op on
this project's CPU), and a 500-variable phase has ~15,000 ops, most of them Keras' per-variable update.
So the parts the masked variant shares with the fast one (forward and backward pass, the optimizer
update, the norms) are `tf.function`s of their own, traced once per phase, which the masked variant
calls (TensorFlow inlines them when it instantiates the step); it then costs only its snapshots, mask
and restore. The fast variant, which the first step waits for, builds those parts in its own graph, as a
plain loop's step does: called nested, they left ~2,500 more nodes after TensorFlow's graph optimisation
at 500 variables (the identities and control edges of three inlined calls with hundreds of inputs each),
which cost its trace and its first call 1-2 s each, and its steps 0-28% (5 alternating A/B pairs,
noisy; bench/PERFORMANCE.md). The per-variable ops of Freezeframe's own are kept few: one read per
snapshot, one `L2Loss` per norm, the freeze mask unstacked once.

Not done, because the result would no longer be bit for bit that of a plain loop, which TensorFlow
optimises with its defaults: running the steps without grappler's rewrites (a 500-variable step's first
call 1.7-4.6 s instead of 5.6-12.5 s), or with one round of its passes instead of two (~2.2 s instead of
3.4-3.9 s; the exactness tests' AdamW and global-clipnorm phases then differ).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import tensorflow as tf

from training_core.base.errors import UserError
from training_core.engine import keras_private
from training_core.engine.slots import slots_by_variable
from training_core.experiment.api import Models, Phase, StepContext


def _value(v: Any) -> tf.Tensor:
    """The tf.Variable behind a Keras variable (read lazily: where an op uses it), or a tf.Variable's value."""
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v.read_value()


def _read(v: Any) -> tf.Tensor:
    """The value now, as one ReadVariableOp: a snapshot that later updates do not change."""
    return tf.convert_to_tensor(_value(v))


def _l2(x: Any) -> tf.Tensor:
    """||x||^2 / 2 in one op (the caller doubles the stacked vector once)."""
    x = tf.convert_to_tensor(x)
    return tf.nn.l2_loss(x if x.dtype == tf.float32 else tf.cast(x, tf.float32))


class DirectCall:
    """A step variant (a `tf.function` taking no arguments) that, once traced, is called as its concrete
    function.

    Why: every call of a `tf.function` looks its trace up again (binding the arguments, hashing a function
    type that holds the spec of every captured variable): about 0.2 ms a call on this project's CPU, 4-9%
    of the ring's step. A variant is traced once per phase, where the loop calls it (the device scope is
    part of the lookup's key, and loop/warmup.py traces under the loop's device), so the first call takes the
    concrete function from the `tf.function` (waiting, on its lock, for a trace under way on the warm-up
    thread) and later calls go to it directly. The graph that runs is the same one."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self._concrete: Any = None

    def __call__(self) -> Any:
        concrete = self._concrete
        if concrete is None:
            concrete = self._concrete = self.fn.get_concrete_function()
        return concrete()

    def get_concrete_function(self) -> Any:
        return self.fn.get_concrete_function()

    def experimental_get_tracing_count(self) -> int:
        return self.fn.experimental_get_tracing_count()


@dataclass(frozen=True, eq=False)
class StepSpec:
    """What one phase's compiled step is built from (engine/prepare.py makes one per phase).

    Why one object: the single-device and the replicated step are built from the same eleven things, and
    named fields in one place keep them from being passed in the wrong order. Frozen: a step is built once
    and its graphs capture these; what changes during a run (the freeze set, the gate) is the step's own
    `tf.Variable`s. (eq=False: its fields hold variables, which do not compare as values.)"""
    phase: Phase
    models: Models
    optimizer: Any  # a built keras.optimizers.Optimizer
    variables: tuple[Any, ...]  # what the phase trains, in its order
    stats: tuple[Any, ...]  # non-trainable state a forward pass may change (BatchNormalization statistics)
    rng: tf.random.Generator  # the run's generator (ctx.normal, ctx.uniform, the batch's rows)
    data: Any  # the experiment's data (engine/datasets.py: InMemory or Pipeline), or None
    batch_size: int | None  # rows a step draws; None: the whole data
    extra: dict  # the experiment's extra attributes of the step context
    on_trace: Callable[[str, str], None]  # called with (phase, variant) when a variant is traced
    jit: bool = False  # XLA-compile the variants (--jit)


class PhaseStep:
    """One phase's compiled step on one device, in its two variants `fast` and `masked` (module docstring)."""

    def __init__(self, spec: StepSpec) -> None:
        self.spec = spec
        phase, optimizer = spec.phase, spec.optimizer
        self.phase, self.models, self.opt = phase, spec.models, optimizer
        self.vars, self.stat_vars = list(spec.variables), list(spec.stats)
        self.rng, self.data, self.batch_size, self.extra = spec.rng, spec.data, spec.batch_size, spec.extra
        self.on_trace = spec.on_trace
        jit = spec.jit
        n = len(self.vars)
        # Live controls, read inside the graph: changing them never retraces.
        self.frozen = tf.Variable([False] * n, trainable=False, name=f"frozen_{phase.name}")
        self.gate = tf.Variable(False, trainable=False, name=f"gate_{phase.name}")
        self.restore_stats = tf.Variable([False] * len(self.stat_vars), trainable=False,
                                         name=f"restore_stats_{phase.name}")
        per_var, wide = slots_by_variable(optimizer, [v.path for v in self.vars])
        unknown = sorted(set(wide) - {"iteration", "learning_rate"})
        if unknown:  # state the exact method could not put back: it would silently leak
            raise UserError(f"phase {phase.name!r}: the optimizer keeps state that belongs to no variable "
                            f"({', '.join(unknown[:3])}), so exact freezing cannot restore it; use a Keras optimizer")
        self.slots = [list(per_var[v.path].values()) for v in self.vars]  # restored with a frozen variable
        self._live: list[int] = []  # variables with a gradient (set at the first trace)
        # traced once per phase, called by the masked variant (see the module docstring)
        self._grads_fn = self._compile_part(self._loss_and_grads, jit)
        self.no_gradient: list[str] = []  # the paths its loss has no gradient for (known once traced)
        self._update_fn = self._nested(self._apply_update)
        self._norms_fn = self._nested(self._pack)
        self.fast = DirectCall(self._compile(self._fast, jit))
        self.masked = DirectCall(self._compile(self._masked, jit))

    def _compile(self, fn: Callable[[], tf.Tensor], jit: bool) -> Any:
        return tf.function(fn, autograph=False, jit_compile=jit or None)

    def _nested(self, fn: Callable) -> Any:
        return tf.function(fn, autograph=False)

    def _compile_part(self, fn: Callable, jit: bool) -> Any:
        return tf.function(fn, autograph=False)  # inside a variant, which XLA compiles whole with --jit

    def warm_up(self, clock: Any = None, variants: Sequence[str] = ("fast", "masked")) -> None:
        """Trace `variants` now (`clock.lap` times each trace when given); on one device `prepare` traces only
        what the first step needs and `warmup.WarmUp` the rest during the run."""
        for variant in variants:
            getattr(self, variant).get_concrete_function()
            if clock is not None:
                clock.lap(f"trace {self.phase.name} {variant}")

    def check_loss(self, clock: Any = None) -> Any:
        """Trace the forward and backward pass alone (the user's code in a step; the masked variant then reuses it)
        and return it: a loss that fails fails here, while preparing, even if the variants are traced later."""
        fn = self._grads_fn.get_concrete_function()
        if clock is not None:
            clock.lap(f"check {self.phase.name} loss")
        return fn

    # -- graph bodies -------------------------------------------------------------------------------------
    def _context(self, batch: Any = None) -> StepContext:
        """The loss's context: `batch` drawn here (random rows in memory, or the pipeline's next batch) unless
        given (the replicated step draws the pipeline's global batch outside the replicas)."""
        data, b = self.data, self.batch_size
        if data is None:
            batch, bs = None, b or 1
        else:
            batch = data.draw(self.rng, b) if batch is None else batch
            bs = data.rows if b is None else b
        ctx = StepContext(self.models, self.rng, batch, None if data is None else data.whole(), bs)
        for k, v in self.extra.items():
            setattr(ctx, k, v)
        return ctx

    def _loss_and_grads(self, batch: Any = None) -> tuple[tf.Tensor, list]:
        with tf.GradientTape() as tape:
            loss = self.phase.loss(self._context(batch))
            if loss is None:  # TensorFlow's own words: "None values not supported", with no line to look at
                raise UserError(f"the loss of phase {self.phase.name!r} returned None; end it with `return` and "
                                f"the loss (a scalar tensor)")
            loss = tf.convert_to_tensor(loss)
            if loss.shape.rank:
                loss = tf.reduce_mean(loss)
        grads = tape.gradient(loss, self.vars)
        # what the graph says at trace time, the same in every trace: a variable the loss does not reach
        self.no_gradient = [v.path for v, g in zip(self.vars, grads) if g is None]
        return loss, grads

    def _pack(self, loss: tf.Tensor, before: list, grads: list) -> tf.Tensor:
        after = [_read(v) for v in self.vars]
        d = [_l2(a - b) for a, b in zip(after, before)]
        w = [_l2(a) for a in after]
        g = [tf.constant(0.0) if gr is None else _l2(gr) for gr in grads]
        return tf.concat([tf.reshape(tf.cast(loss, tf.float32), [1]), 2.0 * tf.stack(d + w + g)], 0)

    def _apply_update(self, grads: list) -> None:
        apply_update(self.opt, grads, [self.vars[i] for i in self._live], self._update)

    def _gradients(self, stats_before: list, grads_fn: Callable[[], tuple]) -> tuple[tf.Tensor, list]:
        loss, grads = self._reduce(*grads_fn(), stats_before)
        self._live = [i for i, g in enumerate(grads) if g is not None]  # None: no gradient, skipped as Keras does
        return loss, grads

    def _fast(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "fast")
        return self._fast_body()

    def _masked(self) -> tf.Tensor:
        self.on_trace(self.phase.name, "masked")
        return self._masked_body()

    # -- hooks the replicated step (engine/replicated.py) overrides; identities on one device -------------------------
    #: whether `_reduce` needs the statistics before the step (replicas average their change)
    _syncs_stats = False

    def _fast_grads(self, batch: Any = None) -> tuple[tf.Tensor, list]:
        """The fast variant's forward and backward pass, built in its own graph (module docstring)."""
        return self._loss_and_grads(batch)

    def _call_grads(self, batch: Any) -> tuple[tf.Tensor, list]:
        """The shared forward and backward pass (`_grads_fn`), with the batch when one was drawn outside."""
        return self._grads_fn() if batch is None else self._grads_fn(batch)

    def _reduce(self, loss: tf.Tensor, grads: list, stats_before: list) -> tuple[tf.Tensor, list]:
        return loss, grads

    def _update(self, grads: list, variables: list) -> None:
        keras_private.update_variables(self.opt, grads, variables)

    def _fast_body(self, batch: Any = None) -> tf.Tensor:
        before = [_read(v) for v in self.vars]
        stats_before = [_read(v) for v in self.stat_vars] if self._syncs_stats else []
        loss, grads = self._gradients(stats_before, lambda: self._fast_grads(batch))
        self._apply_update(keras_private.clip_gradients(self.opt, [grads[i] for i in self._live]))
        return self._pack(loss, before, grads)

    def _masked_body(self, batch: Any = None) -> tf.Tensor:
        before = [_read(v) for v in self.vars]
        stats_before = [_read(v) for v in self.stat_vars]
        slots_before = [[_read(s) for s in slots] for slots in self.slots]
        loss, grads = self._gradients(stats_before, lambda: self._call_grads(batch))
        frozen_all, gate = self.frozen.read_value(), self.gate.read_value()
        live = self._live
        frozen = tf.unstack(frozen_all) if self.vars else []
        kept = [_zeroed_if(frozen[i], grads[i]) for i in live]
        kept = clip_live(self.opt, kept, tf.logical_not(tf.gather(frozen_all, live)), gate)
        self._update_fn(kept)
        restore = tf.unstack(tf.logical_and(frozen_all, tf.logical_not(gate))) if self.vars else []
        restore_frozen([(self.vars[i], self.slots[i], before[i], slots_before[i], restore[i]) for i in live])
        if self.stat_vars:
            restore_stats = tf.unstack(self.restore_stats.read_value())
            for j, (v, b) in enumerate(zip(self.stat_vars, stats_before)):
                v.assign(tf.where(restore_stats[j], b, _value(v)))
        return self._norms_fn(loss, before, grads)


def _zeroed_if(frozen: tf.Tensor, grad: Any) -> Any:
    """`grad`, or zeros where the variable is frozen, of the same kind: an Embedding's gradient is a
    `tf.IndexedSlices`, and Keras' optimizers update only its rows (Adam's moments of the other rows stay put), so
    a dense gradient (what `tf.where` would make of it) is other arithmetic: it moved every row by up to the
    learning rate against the plain loop's."""
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(tf.where(frozen, tf.zeros_like(grad.values), grad.values), grad.indices,
                                grad.dense_shape)
    return tf.where(frozen, tf.zeros_like(grad), grad)


def apply_update(opt: Any, grads: list, variables: list, update: Callable[[list, list], None]) -> None:
    """What `optimizer.apply` does after clipping: weight decay, the update (`update(grads, variables)`),
    constraints, the step count. Also the monitor's exact update of a user's own loop (monitor/exact_update.py)."""
    keras_private.apply_weight_decay(opt, variables)
    update(grads, variables)
    for v in variables:
        if getattr(v, "constraint", None) is not None:
            v.assign(v.constraint(v))
    opt.iterations.assign_add(1)


def restore_frozen(items: list[tuple[Any, list, tf.Tensor, list, tf.Tensor]]) -> None:
    """Exact freezing's last part: each (variable, its slots, its value before the update, the slots' values
    before, restore?) with restore true is put back, slots included (`tf.where` returns the old bits exactly),
    so weight decay, momentum and the step itself leave no trace on it."""
    for v, slots, before, slots_before, restore in items:
        v.assign(tf.where(restore, before, _value(v)))
        for s, old in zip(slots, slots_before):
            s.assign(tf.where(restore, old, _value(s)))


def clip_live(opt: Any, grads: list, live: tf.Tensor, gate: tf.Tensor) -> list:
    """Keras' own clipping (`keras_private.clip_gradients`), except that with `global_clipnorm` the exact
    method takes the norm over the live gradients only, reduced as Keras reduces it (a sum over the stacked
    squared norms), so it equals `apply` on the unfrozen subset; the gate method keeps Keras' norm over all."""
    clip = getattr(opt, "global_clipnorm", None)
    if not clip or clip <= 0 or (getattr(opt, "clipnorm", None) or 0) > 0 or not grads:
        return keras_private.clip_gradients(opt, grads)
    squared = tf.stack([tf.reduce_sum(tf.square(g)) for g in grads])
    use_norm = tf.where(gate, tf.sqrt(tf.reduce_sum(squared)), tf.sqrt(tf.reduce_sum(tf.boolean_mask(squared, live))))
    return keras_private.clip_by_global_norm(grads, clip, use_norm)
