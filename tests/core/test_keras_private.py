"""The private Keras and TensorFlow calls of training_core/engine/keras_private.py, one test per function:
the installed versions still provide what it relies on (the attribute, its parameters, and its behaviour on
a tiny real optimizer, model or graph). A failure names the function, the private API and the versions
found, so raising the pin starts here. The exactness tests (test_exactness, test_freezing, test_mirrored)
check the same calls end to end, but they fail with a differing number, not with what changed."""
from __future__ import annotations

import inspect
import re
import threading
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core.engine import keras_private as kp

FUNCTIONS = ["clip_gradients", "clip_by_global_norm", "apply_weight_decay", "update_variables", "replica_update_step",
             "reset_layer_name_counters", "keras_thread_state", "set_keras_thread_state", "called_function_graphs",
             "weights_made_trainable", "optimizer_trains", "run_if"]


def _gone(function: str, private: str, need: str) -> None:
    """Fail naming the function, what happened to the private API it relies on, and the versions."""
    pytest.fail(f"keras {keras.__version__}, tensorflow {tf.__version__} (engine/keras_private.py was checked with "
                f"keras {kp.CHECKED['keras']}, tensorflow {kp.CHECKED['tensorflow']}): {private}; "
                f"engine/keras_private.{function} needs a new way to {need}", pytrace=False)


def _method(obj: object, name: str, n_args: int, function: str, need: str) -> None:
    """`obj.name` exists and takes `n_args` positional arguments (keras_private passes them by position)."""
    method = getattr(obj, name, None)
    if method is None:
        _gone(function, f"{type(obj).__name__}.{name} is gone", need)
    params = [p for p in inspect.signature(method).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) != n_args:
        _gone(function, f"{type(obj).__name__}.{name} now takes ({', '.join(p.name for p in params)}), not "
                        f"{n_args} argument{'s' if n_args != 1 else ''}", need)


def _bits(x: object) -> bytes:
    return np.asarray(keras.ops.convert_to_numpy(x), dtype=np.float32).tobytes()


def _zero() -> keras.Variable:
    return keras.Variable(np.zeros(2, np.float32))


GRADS = [np.array([3.0, 4.0], np.float32), np.array([-12.0, 0.5], np.float32)]


@pytest.mark.parametrize("clipping", [dict(clipnorm=1.0), dict(global_clipnorm=2.0), dict(clipvalue=1.5), {}])
def test_clip_gradients_clips_as_apply_does(clipping):
    need = "clip gradients as Optimizer.apply does"
    opt = keras.optimizers.SGD(1.0, **clipping)
    _method(opt, "_clip_gradients", 1, "clip_gradients", need)
    # SGD at rate 1 from zero: apply leaves exactly -clip(g) in each variable
    by_apply = [_zero(), _zero()]
    keras.optimizers.SGD(1.0, **clipping).apply([tf.constant(g) for g in GRADS], by_apply)
    clipped = kp.clip_gradients(opt, [tf.constant(g) for g in GRADS])
    if [_bits(-c) for c in clipped] != [_bits(v) for v in by_apply]:
        _gone("clip_gradients", f"Optimizer._clip_gradients no longer clips as apply does ({clipping})", need)


def test_clip_by_global_norm_is_kerass_global_clipnorm_bit_for_bit():
    need = "scale gradients by a given global norm exactly as Keras' global_clipnorm does"
    grads = [tf.constant(g) for g in GRADS]
    # the norm as engine/phase_step.py's _clip reduces it (and Keras' global_norm does)
    norm = tf.sqrt(tf.reduce_sum(tf.stack([tf.reduce_sum(tf.square(g)) for g in grads])))
    ours = kp.clip_by_global_norm(grads, 2.0, norm)
    try:
        from keras.src.optimizers.base_optimizer import clip_by_global_norm
    except ImportError:
        _gone("clip_by_global_norm", "keras.src.optimizers.base_optimizer.clip_by_global_norm is gone, so its copy "
                                     "can no longer be compared", need)
    if [_bits(x) for x in ours] != [_bits(x) for x in clip_by_global_norm(grads, 2.0)]:
        _gone("clip_by_global_norm", "keras.src.optimizers.base_optimizer.clip_by_global_norm computes another "
                                     "scale than its copy", need)
    by_apply = [_zero(), _zero()]
    keras.optimizers.SGD(1.0, global_clipnorm=2.0).apply(grads, by_apply)
    if [_bits(-x) for x in ours] != [_bits(v) for v in by_apply]:
        _gone("clip_by_global_norm", "Optimizer.apply with global_clipnorm no longer scales as the copy does", need)
    inf = kp.clip_by_global_norm(grads, 2.0, tf.constant(np.inf))
    assert all(np.isnan(keras.ops.convert_to_numpy(x)).all() for x in inf)  # as Keras: NaN, not a silent 0


def test_apply_weight_decay_decays_as_adamw_does():
    need = "apply an optimizer's decoupled weight decay alone"
    opt = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
    v = keras.Variable(np.array([1.0, -3.0], np.float32))
    opt.build([v])
    _method(opt, "_apply_weight_decay", 1, "apply_weight_decay", need)
    x = np.array([1.0, -3.0], np.float32)
    kp.apply_weight_decay(opt, [v])
    if _bits(v) != (x - x * np.float32(0.5) * np.float32(0.1)).tobytes():
        _gone("apply_weight_decay", "Optimizer._apply_weight_decay no longer computes v - v * wd * lr", need)
    plain = keras.optimizers.Adam(0.1)
    w = keras.Variable(x)
    plain.build([w])
    kp.apply_weight_decay(plain, [w])
    if _bits(w) != x.tobytes():
        _gone("apply_weight_decay", "Optimizer._apply_weight_decay changes a variable without weight_decay", need)


def test_update_variables_updates_without_counting_the_step():
    need = "run an optimizer's update of a subset of its variables as apply does"
    opt = keras.optimizers.SGD(0.5)
    v = keras.Variable(np.array([1.0, 2.0], np.float32))
    opt.build([v])
    _method(opt, "_backend_update_step", 3, "update_variables", need)
    kp.update_variables(opt, [tf.constant([1.0, -1.0])], [v])
    if _bits(v) != np.array([0.5, 2.5], np.float32).tobytes() or int(opt.iterations.numpy()) != 0:
        _gone("update_variables", "Optimizer._backend_update_step no longer updates by grad * lr alone", need)


def test_the_pieces_make_optimizer_apply_bit_for_bit():
    """What engine/phase_step.py's _apply_update assumes: clipping, weight decay, the update, constraints and
    the step count, in that order, are `apply`."""
    def make() -> tuple:
        opt = keras.optimizers.AdamW(learning_rate=1e-2, weight_decay=0.1, global_clipnorm=1.0)
        vs = [keras.Variable(np.array([0.3, -0.7], np.float32)), keras.Variable(np.array([1.5, 2.0], np.float32))]
        opt.build(vs)
        return opt, vs

    a, va = make()
    b, vb = make()
    grads = [tf.constant(g) for g in GRADS]
    for _ in range(3):  # past the first step: the slots carry state
        a.apply(grads, va)
        clipped = kp.clip_gradients(b, grads)
        kp.apply_weight_decay(b, vb)
        kp.update_variables(b, clipped, vb)
        b.iterations.assign_add(1)
    if [_bits(v) for v in va + a.variables] != [_bits(v) for v in vb + b.variables]:
        _gone("update_variables", "Optimizer.apply is no longer _clip_gradients, _apply_weight_decay, "
                                  "_backend_update_step and the step count", "make apply from its pieces")


def test_replica_update_step_updates_every_copy_without_an_all_reduce():
    need = "update every replica's copy by gradients already all-reduced"
    maybe_merge_call = getattr(getattr(getattr(getattr(tf, "__internal__", None), "distribute", None), "interim", None),
                               "maybe_merge_call", None)
    if maybe_merge_call is None:
        _gone("replica_update_step", "tf.__internal__.distribute.interim.maybe_merge_call is gone", need)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # tests/core/conftest.py makes two
    with strategy.scope():
        opt = keras.optimizers.SGD(0.5)
        v = keras.Variable(np.array([1.0, 2.0], np.float32))
        opt.build([v])
    _method(opt, "_distributed_tf_update_step", 3, "replica_update_step", need)
    if getattr(opt, "_distribution_strategy", None) is not strategy:
        _gone("replica_update_step", "Optimizer._distribution_strategy is not the strategy it was made in", need)

    @tf.function(autograph=False)
    def step() -> None:
        strategy.run(lambda: kp.replica_update_step(opt, [tf.constant([1.0, -1.0])], [v]))

    step()
    copies = [_bits(c) for c in strategy.experimental_local_results(v.value)]
    # summed over the two replicas first (Keras' own _backend_update_step), it would be [0, 3]
    if copies != [np.array([0.5, 2.5], np.float32).tobytes()] * 2:
        _gone("replica_update_step", f"Optimizer._distributed_tf_update_step no longer updates each copy by "
                                     f"grad * lr alone ({[np.frombuffer(c, np.float32) for c in copies]})", need)


def test_reset_layer_name_counters_names_afresh():
    need = "reset Keras' automatic layer and seed-generator names on this thread"
    try:
        from keras.src.utils.naming import reset_uids  # noqa: F401
    except ImportError:
        _gone("reset_layer_name_counters", "keras.src.utils.naming.reset_uids is gone", need)
    kp.reset_layer_name_counters()
    first = (keras.layers.Dense(1).name, keras.random.SeedGenerator(1).state.path)
    second = (keras.layers.Dense(1).name, keras.random.SeedGenerator(1).state.path)
    kp.reset_layer_name_counters()
    again = (keras.layers.Dense(1).name, keras.random.SeedGenerator(1).state.path)
    assert first != second  # counted
    if again != first:
        _gone("reset_layer_name_counters", f"reset_uids no longer resets the names ({first} became {again})", need)


def test_a_thread_takes_the_keras_state_and_a_copy_of_the_name_scopes():
    need = "hand Keras' per-thread state to another thread"
    try:
        from keras.src.backend.common import global_state
    except ImportError:
        _gone("keras_thread_state", "keras.src.backend.common.global_state is gone", need)
    for name in ("GLOBAL_STATE_TRACKER", "set_global_attribute"):
        if not hasattr(global_state, name):
            _gone("keras_thread_state", f"keras.src.backend.common.global_state.{name} is gone", need)
    policy = keras.config.dtype_policy().name
    seen: dict[str, object] = {}
    keras.config.set_dtype_policy("float64")
    try:
        with keras.name_scope("outer"):
            state = kp.keras_thread_state()
            if "name_scope_stack" not in state:
                _gone("set_keras_thread_state", "the name-scope stack is no longer Keras' global state "
                                                "'name_scope_stack'", "give a thread its own copy of it")

            def on_thread() -> None:
                seen["bare"] = keras.config.dtype_policy().name
                kp.set_keras_thread_state(state)
                seen["given"] = keras.config.dtype_policy().name
                with keras.name_scope("inner"):
                    layer = keras.layers.Dense(2, name="probe")
                    layer.build((None, 3))
                    seen["path"] = layer.kernel.path
                    seen["theirs"] = len(state["name_scope_stack"])

            t = threading.Thread(target=on_thread)
            t.start()
            t.join(60)
    finally:
        keras.config.set_dtype_policy(policy)
    if (seen.get("bare"), seen.get("given")) != (policy, "float64"):
        _gone("set_keras_thread_state", f"a thread given the state does not see its dtype policy ({seen})", need)
    if seen.get("path") != "outer/inner/probe/kernel":
        _gone("set_keras_thread_state", f"a thread given the state names in other scopes ({seen.get('path')})", need)
    if seen.get("theirs") != 1:  # the training thread's own list saw only its own scope
        _gone("set_keras_thread_state", "a thread's name scope reached the other thread's stack", need)


def test_called_function_graphs_finds_nested_functions_and_branches():
    need = "list the graphs a traced function calls"
    inner = tf.function(lambda x: tf.random.normal([2]) + x, autograph=False)

    @tf.function(autograph=False)
    def outer(x: tf.Tensor) -> tf.Tensor:
        return inner(x) + tf.cond(x[0] > 0, lambda: tf.abs(x), lambda: -x)

    graph = outer.get_concrete_function(tf.TensorSpec([2])).graph
    if not hasattr(graph, "_functions"):
        _gone("called_function_graphs", "FuncGraph._functions is gone", need)
    ops = [{op.type for op in g.get_operations()} for g in kp.called_function_graphs(graph)]
    if len(ops) != 3 or not any("RandomStandardNormal" in o for o in ops) or not any("Abs" in o for o in ops):
        _gone("called_function_graphs", f"Graph._functions no longer holds the called functions' graphs ({ops})",
              need)


def test_weights_made_trainable_tells_frozen_weights_from_statistics():
    need = "list the weights a model made trainable, whatever their flags say now"
    inner = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d"),
                              keras.layers.BatchNormalization(name="bn")], name="inner")
    model = keras.Sequential([keras.Input((3,)), inner, keras.layers.Dense(1, name="out")], name="outer")
    if not hasattr(model, "_flatten_layers") or not hasattr(model, "_trainable_variables"):
        _gone("weights_made_trainable", "Layer._flatten_layers or Layer._trainable_variables is gone", need)
    model.trainable = False  # every flag now reads False, the statistics' as the kernels'
    assert not any(v.trainable for v in model.variables)
    got = sorted(v.path for v in kp.weights_made_trainable(model))
    if got != ["inner/bn/beta", "inner/bn/gamma", "inner/d/bias", "inner/d/kernel", "outer/out/bias",
               "outer/out/kernel"]:  # not the moving statistics
        _gone("weights_made_trainable", f"Layer._trainable_variables no longer lists what add_weight made trainable "
                                        f"({got})", need)


def test_optimizer_trains_lists_the_variables_a_step_built_it_for():
    need = "list the variables an optimizer updates once a step applied it"
    a, b = keras.Variable(np.ones(2, "float32"), name="a"), keras.Variable(np.ones(3, "float32"), name="b")
    opt = keras.optimizers.Adam()
    assert kp.optimizer_trains(opt) is None  # not built: nothing applied it yet
    opt.apply([tf.ones(2)], [a])
    got = kp.optimizer_trains(opt)
    if got is None or [id(v) for v in got] != [id(a)]:
        _gone("optimizer_trains", f"Optimizer.built / Optimizer._trainable_variables no longer list the variables "
                                  f"build() was given ({got})", need)
    assert all(v is not b for v in got)


def test_every_function_is_checked_with_the_pinned_versions():
    """Raising a pin in requirements.txt fails here until CHECKED and the docstrings say the new versions:
    the tests above, run with the new versions, are what the new numbers claim."""
    pins = dict(re.findall(r"^(tensorflow|keras)==(\S+)", Path(__file__).parents[2].joinpath("requirements.txt")
                           .read_text(), re.M))
    assert pins == kp.CHECKED, (f"requirements.txt pins {pins}, but engine/keras_private.py was checked with "
                                f"{kp.CHECKED}: run tests/core/test_keras_private.py, then update CHECKED and "
                                f"the functions' docstrings")
    public = sorted(n for n, f in vars(kp).items() if inspect.isfunction(f) and f.__module__ == kp.__name__
                    and not n.startswith("_"))
    assert public == sorted(FUNCTIONS), "a function of engine/keras_private.py without a test here, or gone"
    for name in public:
        doc = getattr(kp, name).__doc__ or ""
        assert "Relies on" in doc and any(f"{k} {v}" in doc for k, v in kp.CHECKED.items()), (
            f"engine/keras_private.{name}'s docstring must say what it relies on and the version it was checked with")


def test_run_if_keeps_its_branch_a_function_and_runs_it_only_when_true():
    need = "run a stateful branch kept as a function, only when a predicate holds"
    try:
        from tensorflow.python.ops import cond_v2
        cond_v2.indexed_case  # noqa: B018
    except (ImportError, AttributeError):
        _gone("run_if", "tensorflow.python.ops.cond_v2.indexed_case is gone", need)
    flag, hits = tf.Variable(False), tf.Variable(0)

    @tf.function(autograph=False)
    def step() -> None:
        kp.run_if(flag.read_value(), lambda: hits.assign_add(1))

    step()
    flag.assign(True)
    step()
    step()
    ops = step.get_concrete_function().graph.get_operations()
    cases = [op for op in ops if op.type in ("Case", "StatelessCase", "If", "StatelessIf")]
    if hits.numpy() != 2 or len(cases) != 1 or cases[0].get_attr("_lower_using_switch_merge"):
        _gone("run_if", f"indexed_case(lower_using_switch_merge=False) no longer keeps its branches ({hits.numpy()}, "
                        f"{[op.type for op in cases]})", need)
    kp.run_if(tf.constant(True), lambda: hits.assign_add(10))  # eagerly: a Python branch
    assert hits.numpy() == 12
