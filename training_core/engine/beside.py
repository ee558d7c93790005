"""Metrics beside training: the experiment's `metrics(ctx)` on copies of the models, on a thread of its own.

Why: a real measure (FID or KID, a Fréchet distance of 2,048 samples) takes seconds, and called on the
training thread between two steps it halved issue 24's step rate, without a word. Here the training thread
only takes a snapshot at a step boundary and goes on training; the measure runs on the snapshot elsewhere.

The snapshot is a `tf.identity` of every variable of every model: trainable or not, so BatchNormalization's
moving statistics (and every other non-trainable state: seed generators) are in it. It costs one op per
variable and no copy at the time: TensorFlow copies a variable's buffer before writing it while another tensor
still holds it (copy on write), so the snapshot keeps the values of its step, and the training's next update
of each variable pays one copy of it. It stays on the variable's device.

The metrics thread puts the snapshot into shadow models, one per model, made once when the run begins
(`keras.models.clone_model`; twice the models' memory), and calls `metrics(ctx)` with a `SampleContext`
whose models are the shadows and whose random numbers come from the measure's own generator
(`measuring.metrics_generator`), so the training's generators never move. The shadow of a model is what
`keras.models.clone_model` makes: a `keras.Sequential` or a functional `keras.Model` rebuilt from its layers,
each layer remade from its config; a model that is a layer of the experiment's own (the factorisation's
factors) is remade the same way. A subclassed `keras.Model` (its `call` is code only its class knows, and
Keras documents that it cannot clone one) has no shadow: `MetricsBeside.create` then says why, and the run
measures on the training thread as it always did. A shadow is checked when it is made: the same variables
(shapes, dtypes, trainable or not, in the same order) and, when an input can be made for it (a model's inputs,
the shape a layer was built for, or none), the same output as the model for the same input: a layer of the
user's own whose config does not rebuild it would otherwise have measured another model, silently.

What a measure may use is `ctx` (its `models` are the shadows): a `metrics()` that reaches the training's own
models through a global of the experiment file reads weights the training thread is changing meanwhile.

This module knows nothing of when to measure or what to do with the values: that is observers/health.py,
through the run's handle; nor which measure is in flight: that is loop/measures.py's, whose step the record
reads to hold back the rows of later steps until the result is in (observers/record.py), so scalars.csv stays
in step order.
"""
from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from training_core.engine.measuring import compute_metrics
from training_core.engine.model_state import kept


class Measured(NamedTuple):
    """One measure's outcome, handed back on the training thread."""

    step: int  # the step whose weights were measured (where the values are recorded)
    wall: float  # when its snapshot was taken (`time.time()`): the values' wall time in the record
    values: dict[str, float] | None  # None: the experiment has no metrics (any more), or it failed
    error: BaseException | None  # what metrics(ctx) (or loading the snapshot) raised
    seconds: float  # the metrics thread's time for it: loading the snapshot and metrics(ctx)


#: a probe's outputs must agree this closely (the same ops on the same weights; only the threads differ)
PROBE_RTOL, PROBE_ATOL = 1e-5, 1e-6


def _inputs(model: Any) -> list[Any] | None:
    try:
        return list(model.inputs or []) or None
    except AttributeError:  # a subclassed model, or a layer
        return None


def _clone(name: str, model: Any) -> Any:
    """What `keras.models.clone_model` would make of `model`: a Sequential or functional model cloned, a layer
    (an experiment's model may be a layer of its own: the factorisation's factors) remade from its config as
    clone_model remakes each of a model's layers. A `str` says why there is none: a subclassed keras.Model,
    which Keras documents it cannot clone, or an object that is no Keras layer."""
    import keras
    if isinstance(model, keras.Model) and _inputs(model) is None:  # Sequential and functional ones know theirs
        return (f"model {name!r} is a subclassed keras.Model ({type(model).__name__}), which Keras cannot clone; "
                f"build it as a keras.Sequential or a functional keras.Model to measure beside training")
    if not isinstance(model, keras.layers.Layer):
        return f"model {name!r} is a {type(model).__name__}, not a Keras model or layer, so it cannot be cloned"
    try:
        if isinstance(model, keras.Model):
            return keras.models.clone_model(model)
        clone = type(model).from_config(model.get_config())
        build = model.get_build_config()
        if not clone.built and build:
            clone.build_from_config(build)
        return clone
    except Exception as e:  # noqa: BLE001 - Keras' errors for a layer it cannot rebuild from its config
        return f"model {name!r} cannot be cloned ({type(e).__name__}: {' '.join(str(e).split())[:200]})"


def _probe_input(model: Any) -> Any:
    """An input for `model` of batch 2: a model's from its inputs, a layer's from the shape it was built for, or
    no input for a layer called without one. None: its inputs are too unknown to make one (unchecked)."""
    import inspect
    rng = np.random.default_rng(0)
    specs = _inputs(model)
    if specs is None:
        build = (model.get_build_config() or {}).get("input_shape")
        if build is None:
            try:
                params = inspect.signature(model.call).parameters.values()
            except (TypeError, ValueError):
                return None
            required = [q for q in params if q.default is q.empty and q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
            return () if not required else None
        if not (isinstance(build, (tuple, list)) and all(d is None or isinstance(d, int) for d in build)):
            return None
        specs = [SimpleNamespace(shape=tuple(build), dtype=model.compute_dtype)]
    xs = []
    for t in specs:
        shape = tuple(2 if i == 0 and d is None else d for i, d in enumerate(t.shape))
        dtype = str(t.dtype)
        if any(d is None for d in shape):
            return None
        if "float" in dtype:
            xs.append(rng.normal(size=shape).astype(dtype))
        elif "int" in dtype:
            xs.append(np.zeros(shape, dtype))
        else:
            return None
    return (xs[0] if len(xs) == 1 else xs,)


def _outputs(model: Any, args: tuple) -> list[np.ndarray]:
    import keras
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in keras.tree.flatten(model(*args, training=False))]


def _shadow(name: str, model: Any) -> Any:
    """A shadow of `model` with its values now, checked; a `str` saying why there is none."""
    shadow = _clone(name, model)
    if isinstance(shadow, str):
        return shadow
    got, want = shadow.variables, model.variables
    # (not by path: a clone's seed generators are numbered anew, `seed_generator_3/...`)
    if [(tuple(v.shape), str(v.dtype), v.trainable) for v in got] != [(tuple(v.shape), str(v.dtype), v.trainable)
                                                                       for v in want]:
        return f"the clone of model {name!r} does not have the model's variables (a layer Keras rebuilt differently)"
    for v, w in zip(got, want):
        v.assign(w.value)
    x = _probe_input(model)
    if x is not None:
        try:
            with kept(want):  # a layer that draws in call() must not move the training's noise (engine/model_state.py)
                expected = _outputs(model, x)
        except Exception:  # noqa: BLE001 - the model wants another input than the probe: unchecked, as it comes
            return shadow
        try:
            outputs = _outputs(shadow, x)
        except Exception as e:  # noqa: BLE001
            return f"the clone of model {name!r} fails where the model does not ({type(e).__name__}: {e})"
        if len(outputs) != len(expected) or not all(
                a.shape == b.shape and np.allclose(a, b, rtol=PROBE_RTOL, atol=PROBE_ATOL, equal_nan=True)
                for a, b in zip(outputs, expected)):
            return (f"the clone of model {name!r} computes something else than the model (a layer of its own whose "
                    f"get_config() does not rebuild it?)")
    return shadow


class MetricsBeside:
    """The shadows and the metrics thread of one run: `start(step)` on the training thread at a boundary,
    `result()` at a later one. One measure at a time: its caller (loop/measures.py) knows which is in flight."""

    def __init__(self, prepared: Any, shadows: dict[str, Any]) -> None:
        from training_core.experiment.api import Models
        self._prepared = prepared
        self.models = Models(shadows)
        sources: dict[int, int] = {}
        self._sources: list[Any] = []  # every model variable once (a layer two models share, too)
        self._targets: list[tuple[Any, int]] = []  # (shadow variable, index of its source)
        for name, model in prepared.experiment.models.items():
            for src, dst in zip(model.variables, shadows[name].variables):
                if id(src) not in sources:
                    sources[id(src)] = len(self._sources)
                    self._sources.append(src)
                self._targets.append((dst, sources[id(src)]))
        self._jobs: queue.Queue = queue.Queue()
        self._finished = threading.Event()  # the measure started last is done; its outcome is in `_result`
        self._result: Measured | None = None
        self._thread = threading.Thread(target=self._work, name="freezeframe-metrics", daemon=True)
        self._thread.start()

    @classmethod
    def create(cls, prepared: Any) -> "MetricsBeside | str":
        """The shadows made (on the calling thread, the models' values now), the thread started; or a `str`
        saying why the experiment's models cannot be measured beside training."""
        import random

        import tensorflow as tf
        shadows = {}
        state = random.getstate()  # Keras seeds the clones' initializers from Python's generator: leave it as it was
        try:
            with tf.device(prepared.device):
                for name, model in prepared.experiment.models.items():
                    got = _shadow(name, model)
                    if isinstance(got, str):
                        return got
                    shadows[name] = got
        finally:
            random.setstate(state)
        return cls(prepared, shadows)

    def start(self, step: int) -> None:
        """Take the snapshot of every model variable now (the training thread, at a step boundary) and hand
        it to the metrics thread; the previous measure's result was taken (or is dropped)."""
        import tensorflow as tf
        values = [tf.identity(v.value) for v in self._sources]
        self._result = None
        self._finished.clear()
        self._jobs.put((step, time.time(), values))

    def result(self, wait: bool = False) -> Measured | None:
        """The measure started last, once done (`wait`: waits for it; only after `start`), taken once; None while
        it runs or once taken."""
        if not (self._finished.wait() if wait else self._finished.is_set()):
            return None
        self._finished.clear()
        got, self._result = self._result, None
        return got

    def close(self) -> None:
        """End the thread once it is idle (a measure in flight finishes and is dropped)."""
        self._jobs.put(None)

    def _work(self) -> None:
        import tensorflow as tf
        with tf.device(self._prepared.device):
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                (step, wall, values), job = job, None
                t0 = time.perf_counter()
                try:
                    for var, i in self._targets:
                        var.assign(values[i])
                    values = None  # let go of the snapshot: the training's next writes need not copy any more
                    result = Measured(step, wall, compute_metrics(self._prepared, step, self.models), None,
                                      time.perf_counter() - t0)
                except BaseException as e:  # noqa: BLE001 - handed to the training thread, which turns metrics off
                    result = Measured(step, wall, None, e, time.perf_counter() - t0)
                self._result = result
                self._finished.set()
