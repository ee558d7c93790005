"""`run.apply_gradients` in a user's own step: the optimizer's update with the run's live freeze set honoured
exactly, bit for bit `optimizer.apply(grads_of_unfrozen, unfrozen)`, without a retrace when the set changes.

Why not `optimizer.apply` on the unfrozen subset: inside the user's `tf.function` that subset is a Python list,
fixed when the step was traced; a freeze set that changes (the window's scope tree, a command line) would need
a new trace each time, seconds mid-run, or do nothing at all, which is the `trainable = False`-after-compile bug
this monitor reports. So, as the trainer's masked step does (engine/phase_step.py), which variables are frozen
is read from a `tf.Variable` inside the graph, and the update is the trainer's own pieces: Keras' clipping with
the global norm over the live gradients only (`clip_live`), weight decay, the update, constraints and the step
count (`apply_update`), for every variable, then each frozen variable and its optimizer slots put back
(`restore_frozen`) from copies made before the update. The update is bit for bit `apply` on the unfrozen ones:
Keras updates each variable on its own, and a frozen variable's gradient counts nowhere else (the global norm
leaves it out), so it needs no zeroing.

Cost: the copies and the putting back are `tf.cond` branches taken only when some of the call's variables are
frozen; when none is, the step is `apply`'s own pieces plus a few ops. Two designs measured slower on the ring's
models (CPU time per step, against a plain loop; bench/PERFORMANCE.md): the masked update always, its reads of
every variable and slot before the update making TensorFlow copy each buffer (+40%); one `tf.cond` between the
whole masked update and `apply`'s pieces, whose untaken branch of ~150 ops is still walked each step (+9-11%).
A `tf.cond` whose branches are not lowered into the graph was cheap but changed the update's bits (its branch
is optimised as a function of its own). Not supported, therefore: the `gate` method, which needs the frozen
gradients zeroed in every step (the window's method command is refused for a hand-written loop).

Supported: what the exact method supports (every Keras optimizer whose state is per variable plus its
iteration count and learning rate; `clipnorm`, `clipvalue`, `global_clipnorm`, `weight_decay`). Refused in
one line: `use_ema`, `gradient_accumulation_steps`, loss scaling, and state that belongs to no variable.
"""
from __future__ import annotations

from typing import Any, Sequence

from training_core.base.errors import UserError
from training_core.engine import keras_private
from training_core.engine.phase_step import apply_update, clip_live, restore_frozen
from training_core.engine.experiment_checks import check_optimizer
from training_core.engine.slots import slots_by_variable


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
            # where a frozen variable and its slots wait while the update runs (engine/phase_step.py keeps
            # tensors instead; here the copy is made only when something is frozen: see the module docstring)
            self._shadows = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False) for v in self.vars]
            self._slot_shadows = [[tf.Variable(tf.zeros(s.shape, s.dtype), trainable=False) for s in slots]
                                  for slots in self.slots]
        self.traces = 0  # how often a step calling `apply` was traced (a retrace shows here)

    def positions(self, variables: Sequence[Any], where: str) -> list[int]:
        """Where each of `variables` is among the phase's; a `UserError` for one the phase does not train."""
        out = []
        for v in variables:
            i = self._index.get(id(v))
            if i is None:
                raise UserError(f"{where}: {getattr(v, 'path', v)!r} is not a variable phase {self.name!r} trains "
                                f"(it trains {', '.join(p.path for p in self.vars[:3])}{', ...' if len(self.vars) > 3 else ''}); "
                                f"pass the phase's own variables, or declare the phase with them in start_run")
            out.append(i)
        return out

    def apply(self, grads: Sequence[Any], variables: Sequence[Any]) -> None:
        """The update (in the graph being traced, or eagerly). A None gradient is skipped, as Keras skips it."""
        import tensorflow as tf
        where = f"run.apply_gradients({self.name!r}, ...)"
        grads, variables = list(grads), list(variables)
        if len(grads) != len(variables):
            raise UserError(f"{where}: {len(grads)} gradients for {len(variables)} variables; pass one gradient per "
                            f"variable, as tape.gradient(loss, variables) returns them")
        pos = self.positions(variables, where)
        self.traces += 1
        live = [(i, g) for i, g in zip(pos, grads) if g is not None]
        if not live:
            return
        idx = [i for i, _ in live]
        vs, gs = [self.vars[i] for i in idx], [g for _, g in live]
        frozen = tf.gather(self.frozen.read_value(), idx)
        some = tf.reduce_any(frozen)
        _when(some, lambda: self._save(idx))  # the values to put back, copied only when some are frozen
        # a frozen variable's gradient needs no zeroing: the norm of global_clipnorm is taken over the live ones,
        # and whatever the update does to a frozen variable and its slots is undone below
        clipped = clip_live(self.opt, gs, tf.logical_not(frozen), tf.constant(False))
        apply_update(self.opt, clipped, vs, lambda g, v: keras_private.update_variables(self.opt, g, v))
        _when(some, lambda: self._restore(idx, tf.unstack(frozen)))

    def _save(self, idx: list[int]) -> None:
        """Copy the variables and their slots into the shadows (a copy is exact in any graph)."""
        for i in idx:
            self._shadows[i].assign(_value(self.vars[i]))
            for shadow, slot in zip(self._slot_shadows[i], self.slots[i]):
                shadow.assign(_value(slot))

    def _restore(self, idx: list[int], restore: list[Any]) -> None:
        restore_frozen([(self.vars[i], self.slots[i], self._shadows[i].read_value(),
                         [s.read_value() for s in self._slot_shadows[i]], r) for i, r in zip(idx, restore)])

    def set_frozen(self, mask: Sequence[bool]) -> None:
        """The freeze set, from the run's boundary: read by the next step, no retrace."""
        self.frozen.assign([bool(m) for m in mask])


def _when(pred: Any, fn: Any) -> None:
    """`fn()` (stateful, returning nothing) where `pred` holds, in the graph: `tf.cond`, with a no-op beside it."""
    import tensorflow as tf

    def run() -> Any:
        fn()
        return tf.constant(True)

    tf.cond(pred, run, lambda: tf.constant(False))


def _value(v: Any) -> Any:
    """The tf.Variable behind a Keras variable (read where an op uses it)."""
    import tensorflow as tf
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v
