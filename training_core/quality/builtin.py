"""A feature space trained on the real data, for experiments without a network of their own to measure in.

`trained_features(data, labels)` trains a small network on the real data once and measures in its features: a
classifier's last hidden layer when there are labels (what FID does with Inception's), an autoencoder's code
otherwise. Images (`(n, h, w)` or `(n, h, w, c)`) get two or three strided convolutions, vectors two dense layers;
64 features either way, few enough that 2,048 samples fit their covariance well.

Where it lives, and why there: in a cache file keyed by everything that decides its weights (the data's bytes,
the labels', the seed, the architecture, the training steps), by default under the user's cache directory
(`$FREEZEFRAME_CACHE_DIR`, else `$XDG_CACHE_HOME/freezeframe`, else `~/.cache/freezeframe`), `features/`. Not in
the run directory, and not seeded by the run's seed: a distance is comparable only within one feature space, and
Freezeframe's point is comparing runs, so every run on the same data (any seed, resumed or not) measures in one
and the same network, trained once, by the first run, and loaded by the others in a fraction of a second. A
resumed run loads the very weights the run started with. Without the file (deleted, another machine) the
network is trained again from the same seed: initial weights drawn with NumPy, batches in a NumPy order; with op
determinism on (`--deterministic`) the same machine trains it again bit for bit, otherwise it may differ in the
last bits, and so may the distances. `cache=` names another file (one kept beside the experiment, say), or
`False` trains without one.

Training it leaves the run as it was: no global random state is drawn from (Python's, NumPy's, Keras'; the
initial weights are drawn with NumPy's generator of `seed`), and it is built and trained on a thread of its own,
where neither the run's device or distribution-strategy scope nor Keras' name counters reach (they belong to a
thread). So the experiment's models built after it get the same names and initial weights as without it.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from training_core.base.errors import UserError
from training_core.quality.features import FeatureSpace, _numpy

__all__ = ["TrainedFeatures", "cache_dir", "trained_features"]

FEATURES = 64  # the dimension of the feature space
STEPS, BATCH, LEARNING_RATE = 400, 128, 2e-3
SCALE_ROWS = 2048
VERSION = 1  # of the architecture and training below: a change makes new cache keys
PREFIX = "ff_quality"  # every name the network, its layers and its optimizer carry


def cache_dir() -> Path:
    """Where trained feature spaces are kept: `$FREEZEFRAME_CACHE_DIR`, `$XDG_CACHE_HOME/freezeframe` or
    `~/.cache/freezeframe`, then `features/`."""
    root = os.environ.get("FREEZEFRAME_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = str(Path(xdg) / "freezeframe") if xdg else str(Path.home() / ".cache" / "freezeframe")
    return Path(root) / "features"


def _check(data: Any, labels: Any) -> tuple[np.ndarray, np.ndarray | None]:
    x = _numpy(data)
    if x.ndim not in (2, 3, 4) or x.shape[0] < 2 or x.dtype.kind not in "uif":
        raise UserError(f"trained_features needs real data as numbers of shape (n, d), (n, h, w) or (n, h, w, c) "
                        f"with n >= 2, got {x.dtype} of shape {x.shape}; pass the training data array")
    x = x.astype(np.float32)
    if not np.isfinite(x).all():
        raise UserError("trained_features got real data with NaN or Inf; clean the data first")
    if labels is None:
        return x, None
    y = _numpy(labels)
    if y.shape != (x.shape[0],) or y.dtype.kind not in "ui" or (y.size and y.min() < 0):
        raise UserError(f"labels must be {x.shape[0]} whole numbers >= 0, one per row of the data, got {y.dtype} of "
                        f"shape {y.shape}; pass the class index of each sample, or labels=None")
    if len(np.unique(y)) < 2:
        raise UserError("labels name a single class, which a classifier cannot learn from; pass labels=None to "
                        "train an autoencoder instead")
    return x, y.astype(np.int64)


def _key(x: np.ndarray, y: np.ndarray | None, seed: int, steps: int) -> str:
    h = hashlib.sha256(f"v{VERSION}|{FEATURES}|{steps}|{BATCH}|{LEARNING_RATE}|{seed}|{x.shape}".encode())
    h.update(np.ascontiguousarray(x).tobytes())
    if y is not None:
        h.update(b"labels")
        h.update(np.ascontiguousarray(y).tobytes())
    return h.hexdigest()[:20]


def _network(x: np.ndarray, classes: int) -> tuple[Any, Any]:
    """(the whole network, its features model) with zero weights: `_initialise` draws them.
    Inputs are standardised inside it (a Rescaling by the data's mean and spread), so the features see any
    data on one scale, and a generator's samples are fed as they come."""
    import keras
    L = keras.layers
    shape = x.shape[1:]
    if x.ndim == 2:
        mean, std = x.mean(axis=0), x.std(axis=0)
    else:
        mean, std = np.float32(x.mean()), np.float32(x.std())
    std = np.where(std > 0, std, 1.0).astype(np.float32)
    zeros = dict(kernel_initializer="zeros", bias_initializer="zeros")
    inp = keras.Input(shape, name=f"{PREFIX}_input")
    h = L.Rescaling(scale=1.0 / std, offset=-mean / std, name=f"{PREFIX}_standardise")(inp)
    if x.ndim == 2:
        h = L.Dense(128, activation="relu", name=f"{PREFIX}_dense_1", **zeros)(h)
    else:
        if x.ndim == 3:
            h = L.Reshape((*shape, 1), name=f"{PREFIX}_channel")(h)
        convs = [16, 32, 32] if min(shape[:2]) >= 16 else [16, 32]
        for i, width in enumerate(convs, 1):
            h = L.Conv2D(width, 3, strides=2, padding="same", activation="relu", name=f"{PREFIX}_conv_{i}",
                         **zeros)(h)
        h = L.Flatten(name=f"{PREFIX}_flatten")(h)
    feats = L.Dense(FEATURES, activation="relu" if classes else None, name=f"{PREFIX}_features", **zeros)(h)
    if classes:
        out = L.Dense(classes, name=f"{PREFIX}_logits", **zeros)(feats)
    else:  # the autoencoder's decoder: back to the standardised input
        out = L.Dense(256, activation="relu", name=f"{PREFIX}_decode_1", **zeros)(feats)
        out = L.Dense(int(np.prod(shape)), name=f"{PREFIX}_decode_2", **zeros)(out)
        out = L.Reshape(shape, name=f"{PREFIX}_decoded")(out)
    return keras.Model(inp, out, name=f"{PREFIX}_net"), keras.Model(inp, feats, name=f"{PREFIX}_features_model")


def _initialise(net: Any, seed: int) -> None:
    """Glorot-uniform kernels and zero biases, drawn with NumPy's generator of `seed`: no generator of Keras' or
    Python's is touched, and NumPy's PCG64 draws the same numbers on every platform and version."""
    rng = np.random.default_rng(seed)
    for w in net.trainable_weights:
        shape = tuple(w.shape)
        if len(shape) < 2:
            continue  # biases stay 0
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        w.assign(rng.uniform(-limit, limit, shape).astype(np.float32))


def _train(net: Any, x: np.ndarray, y: np.ndarray | None, seed: int, steps: int) -> float:
    """`steps` Adam steps on batches drawn in a NumPy order from `seed`; returns the last 50 steps' mean loss."""
    import keras
    import tensorflow as tf
    opt = keras.optimizers.Adam(LEARNING_RATE, name=f"{PREFIX}_adam")
    variables = net.trainable_variables
    scale = net.get_layer(f"{PREFIX}_standardise")

    @tf.function(reduce_retracing=True)
    def step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            out = net(xb, training=True)
            if y is not None:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=out))
            else:
                loss = tf.reduce_mean(tf.square(out - scale(xb)))
        opt.apply(tape.gradient(loss, variables), variables)
        return loss

    rng = np.random.default_rng([seed, 1])
    order = np.concatenate([rng.permutation(x.shape[0]) for _ in range(-(-steps * BATCH // x.shape[0]))])
    losses = []
    for i in range(steps):
        idx = order[i * BATCH:(i + 1) * BATCH]
        yb = tf.constant(y[idx]) if y is not None else tf.constant(0)
        losses.append(float(step(tf.constant(x[idx]), yb)))
    return float(np.mean(losses[-50:]))


class TrainedFeatures(FeatureSpace):
    """The feature space of a network trained on the real data (`trained_features`): the last hidden layer of a
    classifier (`kind` "classifier"), or an autoencoder's code ("autoencoder")."""

    kind: str
    key: str  # of the cache: what decides the weights
    path: Path | None  # the cache file, None without one
    trained: bool  # trained now (False: loaded from `path`)
    seconds: float  # training's or loading's time
    loss: float  # the last training steps' mean loss (cross-entropy or mean squared error)
    #: what the network's features are divided by: their root mean square over (up to SCALE_ROWS of) the data, so
    #: that features of any data are of order 1, where KID's kernel (xᵀy/d + 1)³ is meant to work
    scale: float = 1.0
    net: Any  # the whole network (the classifier or the autoencoder)

    def features(self, x: Any) -> np.ndarray:
        """As `FeatureSpace.features`; samples of the data's size in another shape (a generator's (n, 28, 28, 1)
        for data of (n, 28, 28)) are reshaped to the data's."""
        x = _numpy(x)
        shape = tuple(self.model.inputs[0].shape[1:])
        if x.ndim >= 1 and tuple(x.shape[1:]) != shape:
            if x.shape[0] == 0 or x[0].size != int(np.prod(shape)):
                raise UserError(f"feature space {self.name!r} was trained on samples of shape {shape}, got "
                                f"{tuple(x.shape[1:])}; pass samples shaped like the real data")
            x = x.reshape((x.shape[0], *shape))
        return super().features(x) / self.scale

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{super().fingerprint}|{self.scale!r}".encode()).hexdigest()[:12]


def _cache_path(cache: Any, key: str) -> Path | None:
    if cache is False:
        return None
    if cache is None or cache is True:
        return cache_dir() / f"{key}.npz"
    p = Path(cache)
    return p / f"{key}.npz" if p.is_dir() else p


def _load(path: Path, net: Any, key: str) -> tuple[float, float] | None:
    """The weights from `path` into `net`, and its loss and feature scale; None when the file is absent, damaged, or for another
    key (then it is trained again and the file written anew)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            weights = [z[f"w{i}"] for i in range(len(net.weights))]
            loss, scale = float(z["loss"]), float(z["scale"])
    except Exception:  # noqa: BLE001 - any damage (cut, flipped, not an npz) means: train again
        return None
    if [w.shape for w in weights] != [tuple(v.shape) for v in net.weights]:
        return None
    for v, w in zip(net.weights, weights):
        v.assign(w)
    return loss, scale


def _key_of(path: Path) -> str | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            return str(z["key"])
    except Exception:  # noqa: BLE001 - damaged or no cache file
        return None


def _save(path: Path, net: Any, key: str, loss: float, scale: float) -> None:
    """Atomically (a temporary file, then linked or renamed into place), and never over a good file of the same
    key another run wrote meanwhile: the first run's weights are the ones every run then loads. A damaged file,
    or one of another key (a `cache=` file named again for other data), is replaced. A cache that cannot be
    written (read-only) is only a cache: the run goes on without it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            np.savez(f, key=np.array(key), loss=np.array(loss), scale=np.array(scale),
                     **{f"w{i}": _numpy(v.value) for i, v in enumerate(net.weights)})
        try:
            os.link(tmp, path)  # fails if the file exists (or the file system has no hard links)
        except OSError:
            if _key_of(path) != key:
                os.replace(tmp, path)
    except OSError:
        pass
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def _make(key: str, classes: int, x: np.ndarray, y: np.ndarray | None, seed: int, steps: int,
          path: Path | None) -> TrainedFeatures:
    """The network loaded from `path`, or trained (and saved there when `path` is given)."""
    net, feats = _network(x, classes)
    kind = "classifier" if classes else "autoencoder"
    space = TrainedFeatures(feats, name=f"trained-{kind}-{key[:8]}")
    got = _load(path, net, key) if path is not None and path.is_file() else None
    space.trained = got is None
    if got is None:
        _initialise(net, seed)
        loss = _train(net, x, y, seed, steps)
        rows = x if x.shape[0] <= SCALE_ROWS else x[np.random.default_rng([seed, 2]).choice(x.shape[0], SCALE_ROWS,
                                                                                              replace=False)]
        f = FeatureSpace.features(space, rows)
        scale = float(np.sqrt(np.mean(f * f))) or 1.0
        if path is not None:
            _save(path, net, key, loss, scale)
            got = _load(path, net, key)  # another run's, if it wrote first: the one every run then uses
            if got is None:
                path = None  # (the cache could not be written)
        got = got or (loss, scale)
    space.loss, space.scale = got
    space.kind, space.key, space.path, space.net = kind, key, path, net
    return space


def _on_a_thread_of_its_own(fn: Any, *args: Any) -> Any:
    """`fn(*args)` on a new thread, waited for. TensorFlow's device and distribution-strategy scopes and Keras'
    global state (its name counters) belong to a thread: on a fresh one the network is neither placed by the run's
    scopes (a MirroredStrategy's variables would need its own training loop) nor named by the run's counters."""
    import threading
    out: list[Any] = []

    def work() -> None:
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 - raised again on the caller's thread
            out.append((False, e))

    t = threading.Thread(target=work, name="freezeframe-quality-features", daemon=True)  # (Ctrl-C still ends it)
    t.start()
    t.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value


def trained_features(data: Any, labels: Any = None, seed: int = 0, steps: int = STEPS,
                     cache: str | Path | bool | None = None) -> TrainedFeatures:
    """A feature space trained on the real `data` (with `labels`: a classifier, without: an autoencoder), or
    loaded from its cache file when one has been trained on the same data before. Call it once, at the start
    (in `build()`, or at the top of the experiment file), never in `metrics(ctx)`: training takes seconds.

    `seed` is the feature space's own, not the run's: runs of any seed measure in the same one. `cache`: None
    (the cache directory, `cache_dir()`), a file or a directory of your choosing, or False (train every time)."""
    x, y = _check(data, labels)
    classes = int(y.max()) + 1 if y is not None else 0
    key = _key(x, y, int(seed), int(steps))
    t0 = time.perf_counter()
    space = _on_a_thread_of_its_own(_make, key, classes, x, y, int(seed), int(steps), _cache_path(cache, key))
    space.seconds = time.perf_counter() - t0
    return space
