"""`run.apply_gradients` in a user's own step: the optimizer's update with the run's live freeze set honoured
exactly, bit for bit `optimizer.apply(grads_of_unfrozen, unfrozen)`, without a retrace when the set changes.

Why not `optimizer.apply` on the unfrozen subset: inside the user's `tf.function` that subset is a Python list,
fixed when the step was traced; a freeze set that changes (the window's scope tree, a command line) would need
a new trace each time, seconds mid-run, or do nothing at all, which is the `trainable = False`-after-compile bug
this monitor reports. So, as the trainer's masked step does (engine/phase_step.py), which variables are frozen
is read from a `tf.Variable` inside the graph, and the update is the trainer's own pieces: Keras' clipping with
the global norm over the live gradients only (`clip_live`), weight decay, the update, constraints and the step
count (`apply_update`), for every variable, then each frozen variable and its optimizer slots put back
(`restore_frozen`) from copies made before the update, and, when every variable of the call is frozen, the step
count put back one (a loop that freezes a phase whole skips its `apply`, or calls `apply([], [])`, which Keras
makes a no-op). The update is bit for bit `apply` on the unfrozen ones:
Keras updates each variable on its own, and a frozen variable's gradient counts nowhere else (the global norm
leaves it out), so it needs no zeroing.

Cost: a frozen variable's bits (and its slots') are copied once, when it is frozen (between steps); while it
stays frozen each step puts it back to them, so the copy stays its value. Putting back is one conditional per
call, taken only when something of the phase is frozen, whose branch stays a function of its own
(`keras_private.run_if`) and takes the copies as one byte buffer; when nothing is frozen, a call is `apply`'s own
pieces plus that untaken branch. The branch reads the freeze mask itself, and its index is an int32 variable, so
a step with nothing frozen runs one variable read and the conditional's call, no gather, unstack or cast. What
that costs is where it sits, not what it runs: ordered after every update of the phase and before every later
read of its variables, it is one more call on the step's critical path, 2.0-5.0% of the ring's step by the hour
(its graph against a plain loop's over generations of fresh copies, 2026-12-03 17:46-18:57; the same conditional
capturing nothing 1.2%), which is why the monitor misses its 3% on ring-size hand-written loops. Designs measured slower (bench/PERFORMANCE.md): the masked update always, its reads of every
variable and slot before the update making TensorFlow copy each buffer (+40%); one lowered `tf.cond` between
the whole masked update and `apply`'s pieces, whose untaken branch of ~150 ops is still walked each step
(+9-11%); copies made each step, in their own conditional, and one shadow variable per tensor (+5-7%). The
update itself must stay in the caller's graph: as a branch function of its own it changed the update's bits (a
function is optimised on its own). Not supported, therefore: the `gate` method, which needs the frozen
gradients zeroed in every step (the window's method command is refused for a hand-written loop).

Supported: what the exact method supports (every Keras optimizer whose state is per variable plus its
iteration count and learning rate; `clipnorm`, `clipvalue`, `global_clipnorm`, `weight_decay`). Refused in
one line: `use_ema`, `gradient_accumulation_steps`, loss scaling, and state that belongs to no variable.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from training_core.base.errors import UserError
from training_core.engine import keras_private
from training_core.engine.phase_step import apply_update, clip_live, restore_frozen
from training_core.engine.experiment_checks import check_optimizer
from training_core.engine.slots import slots_by_variable


def checked_call(name: str, phase_vars: list, index: dict, grads: Sequence[Any],
                 variables: Sequence[Any]) -> tuple[list, list[int]]:
    """`run.apply_gradients(name, ...)`'s arguments checked: one gradient per variable, each variable one phase
    `name` trains (`index`: id -> position); the gradients as a list and each variable's position. A `UserError`
    otherwise, naming the variable and the fix (both updates take the same arguments, so one check)."""
    where = f"run.apply_gradients({name!r}, ...)"
    grads, variables = list(grads), list(variables)
    if len(grads) != len(variables):
        raise UserError(f"{where}: {len(grads)} gradients for {len(variables)} variables; pass one gradient per "
                        f"variable, as tape.gradient(loss, variables) returns them")
    pos = []
    for v in variables:
        i = index.get(id(v))
        if i is None:
            raise UserError(f"{where}: {getattr(v, 'path', v)!r} is not a variable phase {name!r} trains "
                            f"(it trains {', '.join(p.path for p in phase_vars[:3])}{', ...' if len(phase_vars) > 3 else ''}); "
                            f"pass the phase's own variables, or declare the phase with them in start_run")
        pos.append(i)
    return grads, pos


class ExactUpdate:
    """One phase's update, for its variables in the order the run records them. Built eagerly (start_run), so
    the optimizer, its slots and the freeze mask exist before the user's step is traced."""

    def __init__(self, name: str, optimizer: Any, variables: Sequence[Any]) -> None:
        import tensorflow as tf
        check_optimizer(name, optimizer)
        self.name, self.opt, self.vars = name, optimizer, list(variables)
        if not optimizer.built:
            optimizer.build(self.vars)
        paths = [v.path for v in self.vars]
        per_var, wide = slots_by_variable(optimizer, paths)
        unknown = sorted(set(wide) - {"iteration", "learning_rate"})
        if unknown:
            raise UserError(f"phase {name!r}: the optimizer keeps state that belongs to none of the phase's variables "
                            f"({', '.join(unknown[:3])}): built for other variables, or not a Keras optimizer; give "
                            f"the phase an optimizer of its own")
        self.slots = [list(per_var[p].values()) for p in paths]
        self._index = {id(v): i for i, v in enumerate(self.vars)}
        with tf.init_scope():
            self.frozen = tf.Variable([False] * len(self.vars), trainable=False, name=f"monitor_frozen_{name}")
            # 0 or 1, an int32 already: the conditional's branch index, with no cast in the step
            self.any_frozen = tf.Variable(0, dtype=tf.int32, trainable=False, name=f"monitor_any_frozen_{name}")
            # the bits of each frozen variable and of its slots, copied when it was frozen, in one byte buffer:
            # the branch that puts them back then takes one shadow, not one per tensor (see the module docstring)
            self._layout, size = [], 0
            for v, slots in zip(self.vars, self.slots):
                parts = []
                for t in [v, *slots]:
                    n = int(np.prod(t.shape)) * tf.as_dtype(t.dtype).size
                    parts.append((size, n, tuple(t.shape), tf.as_dtype(t.dtype)))
                    size += n
                self._layout.append(parts)
            self._shadow = tf.Variable(tf.zeros([size], tf.uint8), trainable=False, name=f"monitor_frozen_bits_{name}")
        self.traces = 0  # how often a step calling `apply` was traced (a retrace shows here)

    def apply(self, grads: Sequence[Any], variables: Sequence[Any]) -> None:
        """The update (in the graph being traced, or eagerly). A None gradient is skipped, as Keras skips it."""
        import tensorflow as tf
        grads, pos = checked_call(self.name, self.vars, self._index, grads, variables)
        self.traces += 1
        live = [(i, g) for i, g in zip(pos, grads) if g is not None]
        if not live:
            return
        idx = [i for i, _ in live]
        vs, gs = [self.vars[i] for i in idx], [g for _, g in live]
        # a frozen variable's gradient needs no zeroing: the norm of global_clipnorm is taken over the live ones,
        # and whatever the update does to a frozen variable and its slots is undone below. The mask is read here
        # only for that norm; the branch that puts frozen variables back reads it itself, so a step with nothing
        # frozen runs no gather of it (see Cost in the module docstring)
        live = tf.logical_not(tf.gather(self.frozen.read_value(), idx)) if _clips_globally(self.opt) else None
        clipped = clip_live(self.opt, gs, live, tf.constant(False))
        apply_update(self.opt, clipped, vs, lambda g, v: keras_private.update_variables(self.opt, g, v))
        keras_private.run_if(self.any_frozen.value(), lambda: self._restore(idx))

    def _restore(self, idx: list[int]) -> None:
        """The frozen ones and their slots back to their copies (a selection is exact in any graph); and when
        every variable of this call is frozen, the step count back too: the plain loop's `apply([], [])` is a
        no-op in Keras, so Adam's bias correction (or a schedule) after a thaw counts only the steps that ran.
        (Here, in the branch taken only when something is frozen: a step with nothing frozen adds nothing.)"""
        import tensorflow as tf
        frozen = tf.gather(self.frozen.read_value(), idx)
        restore = tf.unstack(frozen)
        bits = self._shadow.read_value()
        items = []
        for i, r in zip(idx, restore):
            var, *slots = [_from_bytes(bits, *part) for part in self._layout[i]]
            items.append((self.vars[i], self.slots[i], var, slots, r))
        restore_frozen(items)
        steps = self.opt.iterations
        steps.assign_sub(tf.cast(tf.reduce_all(frozen), steps.dtype))

    def all_frozen(self) -> bool:
        mask = self.frozen.numpy()
        return bool(len(mask)) and bool(mask.all())

    def set_frozen(self, mask: Sequence[bool]) -> None:
        """The freeze set, from the run's boundary (eagerly, between steps): read by the next step, no retrace.
        Each frozen variable and its slots are copied now; while it stays frozen every step puts it back to
        these bits, so the copy stays its value (a resume restores the checkpoint first, then sets this)."""
        import tensorflow as tf
        mask = [bool(m) for m in mask]
        for i, frozen in enumerate(mask):
            if frozen:
                for t, (offset, n, _, _) in zip([self.vars[i], *self.slots[i]], self._layout[i]):
                    self._shadow[offset:offset + n].assign(tf.reshape(tf.bitcast(tf.convert_to_tensor(_value(t)),
                                                                                 tf.uint8), [-1]))
        self.frozen.assign(mask)
        self.any_frozen.assign(int(any(mask)))


def _clips_globally(opt: Any) -> bool:
    """Whether `clip_live` takes the norm over the live gradients (Keras' `global_clipnorm`, without `clipnorm`)."""
    clip = getattr(opt, "global_clipnorm", None)
    return bool(clip and clip > 0 and not (getattr(opt, "clipnorm", None) or 0) > 0)


def _from_bytes(bits: Any, offset: int, n: int, shape: tuple, dtype: Any) -> Any:
    """A tensor of `shape` and `dtype` from `n` bytes of `bits` at `offset` (the inverse of bitcasting to bytes)."""
    import tensorflow as tf
    raw = bits[offset:offset + n]
    if dtype.size > 1:
        raw = tf.reshape(raw, [-1, dtype.size])
    return tf.reshape(tf.bitcast(raw, dtype), shape)


def _value(v: Any) -> Any:
    """The tf.Variable behind a Keras variable (read where an op uses it)."""
    import tensorflow as tf
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v
