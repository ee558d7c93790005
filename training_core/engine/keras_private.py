"""Every private Keras and TensorFlow call Freezeframe makes, in one place.

Why private calls at all: exact freezing is `optimizer.apply(grads_of_unfrozen, unfrozen)` bit for bit,
but built from its pieces, because the masked step needs to act between them (the clipping norm over the
live gradients only, the update on every variable then the frozen ones put back) and the replicated step
needs the update without Keras' own all-reduce. Keras' public API offers only the whole of `apply`. Two
more needs have no public door: resetting Keras' per-thread name counters without `clear_session()`, and
handing Keras' per-thread state to the warm-up thread. And one TensorFlow one: listing the graphs a traced
function calls, to search them for random draws. (One more, whether a tf.data Dataset is batched, is in
experiment/data.py: the experiment room checks data before the engine exists and cannot import this module.)

Each function below says what private thing it relies on, why, and the versions it was checked against
(`CHECKED`, the pins of requirements.txt). tests/core/test_keras_private.py checks, for each function, that
the installed versions still provide it, and names the function and the private API when they do not: after
raising the pin, run it first.

Cost: the step's functions are called while a step is traced, never per step (a traced step is a graph), so
the indirection costs one Python call per trace. Nothing here imports Keras or TensorFlow at import time
(the modules that import this one are imported before TensorFlow is, which `tf_quiet` imports quietly).
"""
from __future__ import annotations

from typing import Any, Sequence

#: the versions every function here was checked against (requirements.txt pins them)
CHECKED = {"keras": "3.15.1", "tensorflow": "2.21.0"}


# -- the optimizer's pieces of `apply` (engine/phase_step.py, engine/replicated.py) ---------------------------
def clip_gradients(opt: Any, grads: list) -> list:
    """Keras' gradient clipping as `apply` does it (`clipnorm`, `global_clipnorm` or `clipvalue`, or none).

    Relies on `Optimizer._clip_gradients(grads)` (keras/src/optimizers/base_optimizer.py). Why: `apply`
    clips inside, with no public way to clip alone, and the step clips the live gradients itself (the
    masked variant with its own global norm: `clip_by_global_norm`). Checked with keras 3.15.1."""
    return opt._clip_gradients(grads)


def clip_by_global_norm(grads: list, clip_norm: Any, norm: Any) -> list:
    """`grads` scaled as Keras' `global_clipnorm` scales them, with the global `norm` given by the caller.

    Relies on the arithmetic of `keras.src.optimizers.base_optimizer.clip_by_global_norm` (a private
    function), copied: `clip * minimum(1 / norm, 1 / clip) + (norm - norm)` (the last term makes the scale
    NaN for an infinite or NaN norm). Why a copy: Keras' function computes the norm itself over every
    gradient it is given, and exact freezing needs the norm over the unfrozen ones only, reduced as Keras
    reduces it (engine/phase_step.py). Bit for bit what Keras computes from the same norm; checked with
    keras 3.15.1."""
    import tensorflow as tf
    scale = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm) + (norm - norm)
    return [g * tf.cast(scale, g.dtype) for g in grads]


def apply_weight_decay(opt: Any, variables: Sequence[Any]) -> None:
    """Keras' decoupled weight decay (AdamW's `weight_decay`, ...) on `variables`, as `apply` does it after
    clipping and before the update; nothing without `weight_decay`.

    Relies on `Optimizer._apply_weight_decay(variables)` (keras/src/backend/tensorflow/optimizer.py on the
    TensorFlow backend: `variable -= variable * wd * lr` through the distribution strategy, honouring
    `exclude_from_weight_decay`). Why: `apply` decays inside, and the step applies the update to the live
    variables itself. Checked with keras 3.15.1."""
    opt._apply_weight_decay(variables)


def update_variables(opt: Any, grads: list, variables: Sequence[Any]) -> None:
    """The optimizer's update of `variables` by `grads` (clipped and decayed already), with its slots, as
    `apply` runs it on one device: not the constraints nor the step count, which the caller does after.

    Relies on `Optimizer._backend_update_step(grads, variables, learning_rate)` (TensorFlow backend:
    each variable's `update_step` through `maybe_merge_call`, after an all-reduce that is a no-op outside a
    replica context). Why: the public `update_step(grad, var, lr)` is the per-variable piece, but calling it
    ourselves would not be the path `apply` takes, which the exactness tests compare with bit for bit.
    Checked with keras 3.15.1."""
    opt._backend_update_step(grads, variables, opt.learning_rate)


def replica_update_step(opt: Any, grads: list, variables: Sequence[Any]) -> None:
    """In a replica context: the optimizer's update of every replica's copy of `variables` by `grads`, which
    the caller has all-reduced already (the replicated step reduces first, so clipping sees the global
    gradient).

    Relies on `tf.__internal__.distribute.interim.maybe_merge_call` (TensorFlow's private entry to a merge
    call that skips it when the strategy needs none), `Optimizer._distributed_tf_update_step(strategy,
    grads_and_vars, lr)` and `Optimizer._distribution_strategy` (keras/src/backend/tensorflow/optimizer.py):
    exactly what Keras' `_backend_update_step` does after its own all-reduce, which would sum the already
    reduced gradients again. Checked with keras 3.15.1 and tensorflow 2.21.0."""
    import tensorflow as tf
    pairs = list(zip(grads, [v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v
                              for v in variables]))
    tf.__internal__.distribute.interim.maybe_merge_call(opt._distributed_tf_update_step,
                                                        opt._distribution_strategy, pairs, opt.learning_rate)


# -- Keras' per-thread state (engine/prepare.py, loop/warmup.py) ---------------------------------------------
def reset_layer_name_counters() -> None:
    """Start Keras' automatic names afresh on this thread: the next unnamed `Dense` is `dense` again, the
    next `SeedGenerator` (Dropout, GaussianNoise, ...) `seed_generator`.

    Relies on `keras.src.utils.naming.reset_uids()` (the counters live in Keras' per-thread global state,
    `object_name_uids`). Why: the window's training process prepares run after run on one thread, so
    without a reset the same experiment got other variable paths in its second run, which its checkpoints no
    longer fit. The public `keras.utils.clear_session()` resets them too, but drops all of Keras' state
    with them and resets TensorFlow's default graph and runs the garbage collector. Checked with
    keras 3.15.1."""
    from keras.src.utils.naming import reset_uids
    reset_uids()


def keras_thread_state() -> dict:
    """A snapshot of Keras' global state of this thread (name counters, dtype policy, the global seed
    generator of unseeded `keras.random` draws, the name-scope stack, ...), for `set_keras_thread_state` on
    another thread. The values are shared, not copied.

    Relies on `keras.src.backend.common.global_state.GLOBAL_STATE_TRACKER`, a `threading.local` whose
    attributes are that state (read at each call: `clear_session()` replaces it). Why: a thread starts with
    none of it, and Keras has no public way to hand it over; the warm-up thread (loop/warmup.py) traces as
    if on the training thread. Checked with keras 3.15.1."""
    from keras.src.backend.common import global_state
    return dict(vars(global_state.GLOBAL_STATE_TRACKER))


def set_keras_thread_state(state: dict) -> None:
    """Give this thread the Keras global state `keras_thread_state()` read on another, except the name-scope
    stack, which it gets a copy of: a scope opened on this thread must not prefix what the other one names.

    Relies on `keras.src.backend.common.global_state.set_global_attribute(name, value)` and on Keras keeping
    its name-scope stack as the list `name_scope_stack` of that state (keras/src/backend/common/
    name_scope.py pushes and pops it). Checked with keras 3.15.1."""
    from keras.src.backend.common import global_state
    for name, value in state.items():
        global_state.set_global_attribute(name, list(value) if name == "name_scope_stack" else value)


# -- TensorFlow's traced graphs (engine/randomness.py) --------------------------------------------------------
def called_function_graphs(graph: Any) -> list[Any]:
    """The graphs of the functions a traced function's `graph` (a FuncGraph) calls: nested `tf.function`s,
    `tf.cond` and `tf.while_loop` bodies, as Python graphs with their captures.

    Relies on `Graph._functions` (tensorflow/python/framework/ops.py: the functions added to the graph, by
    name, each with a `.graph` while it is a Python function). Why: the public `as_graph_def().library`
    lists the same functions only as FunctionDefs, without the captures that tell the run's own generator
    from any other. Checked with tensorflow 2.21.0."""
    nested = [getattr(fn, "graph", None) for fn in getattr(graph, "_functions", {}).values()]
    return [g for g in nested if g is not None]


# -- a model's weights as they were made (monitor/described.py) -----------------------------------------------------
def weights_made_trainable(model: Any) -> list[Any]:
    """Every variable that `model` or one of its layers made as a trainable weight, whatever its `trainable`
    flag says now (`layer.trainable = False` turns the flags of these off, and only these).

    Relies on `Layer._flatten_layers(include_self=True, recursive=True)` and on `Layer._trainable_variables`
    (keras/src/layers/layer.py: the variables `add_weight` tracked as trainable; `Layer.trainable`'s setter
    sets each one's flag and keeps it in that list). Why: the monitor's leak check must tell a weight whose
    author froze it (`discriminator.trainable = False`) from state that is never trained
    (BatchNormalization's moving statistics): both read `trainable == False`, and only the first is a leak
    when it moves. Public Keras lists no such difference. Checked with keras 3.15.1."""
    out, seen = [], set()
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for v in layer._trainable_variables:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def optimizer_trains(opt: Any) -> list[Any] | None:
    """The variables `opt` was built to update (None: not built yet, i.e. no step applied it so far).

    Relies on `Optimizer.built` and `Optimizer._trainable_variables` (keras/src/optimizers/base_optimizer.py:
    `build(variables)` keeps a copy of the list it made slots for). Why: which sub-model of a `fit()` model an
    optimizer trains is known only inside the user's `train_step`; once it ran, this list says it, and an
    EMA copy that no optimizer updates is told from the model it copies (monitor/keras_callback.py). Public
    Keras lists only the slots, not the variables. Checked with keras 3.15.1."""
    if not getattr(opt, "built", False):
        return None
    return list(opt._trainable_variables)


# -- a branch that costs nothing when not taken (monitor/exact_update.py) --------------------------------------
def run_if(pred: Any, fn: Any) -> None:
    """In a traced graph: `fn()` (stateful, returning nothing) when the tensor `pred` (a bool, or an int32 0 or 1,
    the branch index as it is: no cast in the step) is true, as a conditional whose branches stay functions of
    their own instead of being lowered into the graph.

    Relies on `tensorflow.python.ops.cond_v2.indexed_case(branch_index, branch_fns,
    lower_using_switch_merge=False)` (the private builder behind `tf.switch_case`, whose public form always
    lowers). Why: a lowered `tf.cond` puts a `Switch` on every input of its branches and walks every op of the
    branch not taken, each step; for `run.apply_gradients`' copies of a phase's variables and slots (taken only
    when some are frozen) that was ~6% of the ring's step. A branch kept as a function is one op. Only for
    branches whose result does not depend on how their ops are optimised (copies and selections): a branch
    optimised as a function of its own may round differently. Checked with tensorflow 2.21.0."""
    import tensorflow as tf
    from tensorflow.python.ops import cond_v2
    if tf.executing_eagerly():  # (no graph: a Python branch)
        if bool(pred):
            fn()
        return

    def taken() -> Any:
        fn()
        return tf.constant(True)

    cond_v2.indexed_case(tf.cast(pred, tf.int32), [lambda: tf.constant(False), taken], lower_using_switch_merge=False)
