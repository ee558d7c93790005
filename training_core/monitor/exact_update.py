"""`run.apply_gradients` in a user's own step: the optimizer's update with the run's live freeze set honoured
exactly, bit for bit `optimizer.apply(grads_of_unfrozen, unfrozen)`, without a retrace when the set changes.

Why not `optimizer.apply` on the unfrozen subset: inside the user's `tf.function` that subset is a Python list,
fixed when the step was traced; a freeze set that changes (the window's scope tree, a command line) would need
a new trace each time, seconds mid-run, or do nothing at all, which is the `trainable = False`-after-compile bug
this monitor reports. So, as the trainer's masked step does (engine/phase_step.py), which variables are frozen
is read from a `tf.Variable` inside the graph. A `tf.cond` on it picks one of two updates, both traced once:
with nothing of the call's variables frozen, `optimizer.apply`'s own pieces (clipping, then `apply_update`),
as cheap as `apply` itself; with some frozen, the trainer's masked update: the frozen gradients zeroed, Keras' clipping with the global norm over the live gradients only (`clip_live`), weight decay, the
update, constraints and the step count (`apply_update`), then each frozen variable and its optimizer slots
put back (`restore_frozen`). The `gate` method leaves them in (momentum and decay move them: a leak). Why two:
the masked update reads every variable and slot before it updates them, and those reads make TensorFlow copy
each buffer before updating it in place; on the ring's models that cost 40% of the step when nothing was frozen
(bench/PERFORMANCE.md).

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
            self.gate = tf.Variable(False, trainable=False, name=f"monitor_gate_{name}")
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
        frozen_live = tf.gather(self.frozen.read_value(), idx)

        def unfrozen() -> tf.Tensor:  # nothing of these is frozen: exactly `optimizer.apply`'s pieces, in order
            self._update(keras_private.clip_gradients(self.opt, gs), vs)
            return tf.constant(False)

        def masked() -> tf.Tensor:
            return self._masked(idx, vs, gs, frozen_live)

        tf.cond(tf.reduce_any(frozen_live), masked, unfrozen)

    def _masked(self, idx: list[int], vs: list[Any], grads: list[Any], frozen_live: Any) -> Any:
        """Some are frozen: the update of all, then the frozen ones and their slots put back (exact), or left
        moved by momentum and decay (gate)."""
        import tensorflow as tf
        before = [tf.convert_to_tensor(_value(v)) for v in vs]
        slots_before = [[tf.convert_to_tensor(_value(s)) for s in self.slots[i]] for i in idx]
        gate = self.gate.read_value()
        frozen = tf.unstack(frozen_live)
        kept = [tf.where(f, tf.zeros_like(g), g) for f, g in zip(frozen, grads)]
        self._update(clip_live(self.opt, kept, tf.logical_not(frozen_live), gate), vs)
        restore = [tf.logical_and(f, tf.logical_not(gate)) for f in frozen]
        restore_frozen([(v, self.slots[i], b, sb, r) for v, i, b, sb, r in zip(vs, idx, before, slots_before, restore)])
        return tf.constant(True)

    def _update(self, grads: list[Any], variables: list[Any]) -> None:
        apply_update(self.opt, grads, variables, lambda g, v: keras_private.update_variables(self.opt, g, v))

    def set_frozen(self, mask: Sequence[bool], gate: bool) -> None:
        """The freeze set and the method, from the run's boundary: read by the next step, no retrace."""
        self.frozen.assign([bool(m) for m in mask])
        self.gate.assign(bool(gate))


def _value(v: Any) -> Any:
    """The tf.Variable behind a Keras variable (read where an op uses it)."""
    import tensorflow as tf
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v
