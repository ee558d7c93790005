"""What an experiment's data may be, told apart and checked before anything is built on it.

`Experiment.data` (and the GAN shortcut's `real_data()`) may be:
  * a NumPy array (rows first): the fast path, on the device, a step draws `batch_size` random rows;
  * a tuple or a dict of arrays with the same number of rows (labelled or structured data): the same
    on-device path, the same row indices for every member, so `ctx.batch` is `(x, y)` or `{"image": ...}`;
  * a `tf.data.Dataset` of tensors, tuples or dicts of them, batched or not, such as what
    `keras.utils.image_dataset_from_directory` returns: engine/datasets.py batches it (or re-batches it) to
    `batch_size` rows, repeats it and prefetches it, and every checkpoint holds its iterator's state.

Everything else is refused here with one line that names what it is and what is accepted: a string, a Python
generator, a list whose items differ in shape, an array of objects or strings, a Dataset of strings, of
ragged or sparse tensors, or of rows whose shape is not fixed. Why here: the experiment room is where a file
is checked, before TensorFlow builds anything on it (the step, the checkpoint), and the GAN shortcut's dry
run needs the rows' shapes first. No TensorFlow is imported here: `is_dataset` recognises a Dataset without it
(a file that made one has imported TensorFlow already).
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from training_core.base.errors import UserError

ACCEPTED = ("give a NumPy array, a tuple or dict of arrays with the same rows, or a tf.data.Dataset "
            "(e.g. keras.utils.image_dataset_from_directory)")


@dataclass(frozen=True)
class Row:
    """One member's row: its shape (without the batch dimension) and dtype name."""

    shape: tuple
    dtype: str


@dataclass
class DataSpec:
    """The data told apart. `arrays`: the in-memory data as NumPy (one array, or a tuple or dict of them);
    `dataset`: the Dataset as given; `batched`: whether its elements are batches; `rows`: each member's
    shape and dtype per row (a structure like the data's); `count`: the rows in memory (None for a Dataset)."""

    kind: str  # "array" | "structure" | "dataset"
    arrays: Any = None
    dataset: Any = None
    batched: bool = False
    rows: Any = None  # a Row, or a tuple or dict of them
    count: int | None = None
    #: what the run goes on despite (integer pixels 0-255 as they are): the run's `warning` events
    warnings: list[str] = field(default_factory=list)


def is_dataset(obj: Any) -> bool:
    """Whether `obj` is a `tf.data.Dataset` (without importing TensorFlow: none was made if it is not loaded)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(obj, tf.data.Dataset)


#: the last data described and its spec: preparing asks three times (the file's checks, --batch-size, the run's
#: data), and checking a large array (NaN, the float32 copy of a float64 one) is not free. The object itself is
#: held, so its id cannot be reused while it is here.
_last: tuple[Any, DataSpec] | None = None


def describe(data: Any, where: str) -> DataSpec:
    """`data` told apart and checked; `where` names it in an error ("the data of the experiment in x.py")."""
    global _last
    if _last is not None and _last[0] is data:
        return _last[1]
    if is_dataset(data):
        spec = _describe_dataset(data, where)
    elif isinstance(data, (tuple, dict)):
        spec = _describe_structure(data, where)
    else:
        notes: list[str] = []
        arr = _array(data, where, single=True, notes=notes)
        spec = DataSpec("array", arrays=arr, rows=Row(tuple(arr.shape[1:]), str(arr.dtype)), count=len(arr),
                        warnings=notes)
    _last = (data, spec)
    return spec


def _kind_of(obj: Any) -> str:
    if isinstance(obj, (str, bytes)):
        return f"a string ({obj[:30]!r})"
    if hasattr(obj, "__next__") and type(obj).__module__.startswith("tensorflow"):  # iter(ds): say what to give
        return f"an iterator over a Dataset ({type(obj).__name__}: give the Dataset itself, not iter(...))"
    if inspect.isgenerator(obj) or (hasattr(obj, "__next__") and hasattr(obj, "__iter__")):
        return f"a Python {type(obj).__name__} (an iterator, which can be neither checkpointed nor replayed)"
    return f"a {type(obj).__module__}.{type(obj).__qualname__}" if not isinstance(obj, (list, np.ndarray)) else ""


def _array(obj: Any, where: str, single: bool, member: str = "", notes: list[str] | None = None) -> np.ndarray:
    """One member as a NumPy array: floats (and, for a single array, everything numeric) as float32 as the
    step has always taken them (a list of numbers too; float64 is rounded to float32, as Keras does); integer
    and bool members (labels) keep their type. A single array of integer pixels adds a line to `notes`."""
    what = f"{where}{member}"
    kind = _kind_of(obj)
    if kind and not hasattr(obj, "__array__") and not isinstance(obj, (int, float, np.number)):
        raise UserError(f"{what} is {kind}; {ACCEPTED}")
    if isinstance(obj, list) and obj:
        shapes = {np.shape(x) for x in obj if hasattr(x, "__len__") or hasattr(x, "shape")}
        if len(shapes) > 1:
            shown = ", ".join(str(s) for s in list(shapes)[:2])
            raise UserError(f"{what} is a list whose items have different shapes ({shown}, ...); give one array "
                            f"(rows of one shape), or a tuple (x, y) of arrays with the same rows")
    try:
        raw = np.asarray(obj)
    except (TypeError, ValueError) as e:
        raise UserError(f"{what} is not an array of numbers ({' '.join(str(e).split())[:120]}); {ACCEPTED}") from None
    if raw.dtype.kind not in "biuf":
        got = {"O": "Python objects", "U": "strings", "S": "bytes", "c": "complex numbers", "M": "dates",
               "m": "time spans"}.get(raw.dtype.kind, str(raw.dtype))
        raise UserError(f"{what} is an array of {got} (dtype {raw.dtype}); give numbers (float or int), e.g. "
                        f"np.asarray(..., dtype='float32')")
    if raw.ndim == 0:
        raise UserError(f"{what} is a single number, not rows; give an array with one row per example")
    if len(raw) == 0:
        raise UserError(f"{what} has no rows (shape {raw.shape}); give at least one row")
    if single and notes is not None:
        notes.extend(filter(None, [unscaled_warning(raw, what)]))
    arr = raw.astype(np.float32, copy=False) if single or raw.dtype.kind == "f" else raw
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any() and raw.dtype.itemsize > 4 and np.isfinite(raw).all():
            raise UserError(f"{what} has values beyond float32's range (largest {float(np.abs(raw).max()):.3g}; "
                            f"float32 holds up to 3.4e38), which the models take; scale them")
        if bad.any():  # shows up as a NaN loss, which reads as a learning rate that is too high
            row = int(np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))[0])
            raise UserError(f"{what} has {int(bad.sum())} NaN or Inf values (the first in row {row}); clean it "
                            f"(np.nan_to_num, or drop those rows)")
    return arr


def unscaled_warning(values: np.ndarray, what: str) -> str | None:
    """A line when `values` are integers beyond 0/1 (uint8 pixels 0-255 as an image file holds them): the models
    take them as they are, as float32, and a GAN's generator (tanh: [-1, 1]) can never make such rows, so the
    discriminator tells real from fake by scale alone and the losses look like training. A warning, not a
    refusal: integer features (counts) may be meant as they are."""
    if values.dtype.kind not in "ui" or values.size == 0:
        return None
    lo, hi = int(values.min()), int(values.max())
    if hi <= 1:
        return None
    return (f"{what} gives {values.dtype} values {lo}–{hi}, which the models take as they are; scale them, e.g. "
            f"to [-1, 1] with x / 127.5 - 1 (what a tanh generator makes)")


def _describe_structure(data: tuple | dict, where: str) -> DataSpec:
    items = list(data.items()) if isinstance(data, dict) else list(enumerate(data))
    if not items:
        raise UserError(f"{where} is an empty {type(data).__name__}; {ACCEPTED}")
    if isinstance(data, dict) and not all(isinstance(k, str) for k, _ in items):
        raise UserError(f"{where} is a dict whose keys are not all strings ({[k for k, _ in items][:3]}); name "
                        f"each member with a string, e.g. {{\"image\": x, \"label\": y}}")
    arrays = {}
    for k, v in items:
        if isinstance(v, (tuple, dict, list)) and not isinstance(v, list):
            raise UserError(f"{where}[{k!r}] is a nested {type(v).__name__}; give one level: a tuple or a dict of "
                            f"arrays")
        arrays[k] = _array(v, where, single=False, member=f"[{k!r}]")
    counts = {k: len(a) for k, a in arrays.items()}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"[{k!r}] {n}" for k, n in counts.items())
        raise UserError(f"{where} has members with different numbers of rows ({shown}); give every member one "
                        f"row per example")
    out = dict(arrays) if isinstance(data, dict) else tuple(arrays[i] for i in range(len(items)))
    rows = {k: Row(tuple(a.shape[1:]), str(a.dtype)) for k, a in arrays.items()}
    return DataSpec("structure", arrays=out, rows=rows if isinstance(data, dict) else tuple(rows[i] for i in
                                                                                           range(len(items))),
                    count=next(iter(counts.values())))


def _describe_dataset(ds: Any, where: str) -> DataSpec:
    import tensorflow as tf
    spec = ds.element_spec
    if isinstance(spec, dict) and not all(isinstance(k, str) for k in spec):
        raise UserError(f"{where} is a Dataset of dicts whose keys are not all strings; name each member with a string")
    members = sorted(spec.items()) if isinstance(spec, dict) else list(enumerate(spec)) \
        if isinstance(spec, tuple) else [("", spec)]
    if any(isinstance(s, (tuple, dict)) for _, s in members):
        raise UserError(f"{where} is a Dataset of nested structures; give elements of one level: a tensor, a tuple "
                        f"or a dict of tensors")
    paths, flat = [str(k) for k, _ in members], [s for _, s in members]  # (tf.nest's order: a dict's keys sorted)
    for path, s in zip(paths, flat):
        name = f" (element {path!r})" if path else ""
        if not isinstance(s, tf.TensorSpec):
            raise UserError(f"{where} is a Dataset of {type(s).__name__.replace('Spec', '')}s{name}; give a Dataset of "
                            f"dense tensors (e.g. .map(lambda x: x.to_tensor()) for ragged ones)")
        if not (s.dtype.is_floating or s.dtype.is_integer or s.dtype.is_bool):
            raise UserError(f"{where} is a Dataset of {s.dtype.name}{name}; give numbers: decode or convert it in a "
                            f".map(...) (e.g. tf.io.decode_png, tf.strings.to_number)")
        if s.shape.rank is None:
            raise UserError(f"{where} is a Dataset whose elements{name} have no known shape; give them one "
                            f"(.map(lambda x: tf.ensure_shape(x, shape)))")
    batched = dataset_is_batched(ds)
    for path, s in zip(paths, flat):
        shape = tuple(s.shape[1:] if batched else s.shape)
        if any(d is None for d in shape):
            name = f" (element {path!r})" if path else ""
            raise UserError(f"{where} is a Dataset whose rows{name} have no fixed shape ({_shape(shape)}); every batch "
                            f"must have one shape: resize or pad in a .map(...) (e.g. tf.image.resize)")
    rows = tf.nest.map_structure(lambda s: Row(tuple(s.shape[1:] if batched else s.shape), s.dtype.name), spec)
    if int(ds.cardinality()) == 0:
        raise UserError(f"{where} is an empty Dataset (no element); give it data")
    return DataSpec("dataset", dataset=ds, batched=batched, rows=rows)


def _shape(shape: tuple) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def dataset_is_batched(ds: Any) -> bool:
    """Whether a Dataset's elements are batches: a batching transformation (`batch`, `padded_batch`,
    `ragged_batch`, `rebatch`, ...) comes after the source in its chain of transformations, with no `unbatch`
    after it. (Not from the element's shape: `batch(64, drop_remainder=True)` gives rows a fixed first
    dimension, and a `map` may give rows an unknown one.)

    Relies on `Dataset._inputs()` (tensorflow/python/data/ops/dataset_ops.py), a private method every
    transformation has, and on the transformations' class names (`_BatchDataset`, `_UnbatchDataset`, ...):
    TensorFlow keeps no public record of whether a dataset is batched. Checked with tensorflow 2.21.0
    (tests/core/test_data.py checks every batching transformation against the installed version). It is here,
    not in engine/keras_private.py with the other private calls, because the experiment room, which checks the
    data and dry-runs the GAN shortcut's models, cannot import the engine."""
    seen: set[int] = set()
    todo = [ds]
    while todo:
        d = todo.pop(0)
        if id(d) in seen:
            continue
        seen.add(id(d))
        name = type(d).__name__.lower()
        if "unbatch" in name:
            return False
        if "batch" in name:
            return True
        todo.extend(d._inputs())
    return False


def zeros_like_rows(spec: DataSpec, n: int) -> Any:
    """`n` rows of zeros of the data's structure, shapes and dtypes: what a dry run calls the models on (a
    Dataset is not read for it: a second iterator over a shuffled Dataset moves the seeds of the training's)."""
    return map_rows(lambda r: np.zeros((n,) + r.shape, dtype=r.dtype), spec.rows)


def map_rows(fn: Any, rows: Any) -> Any:
    """`fn` of each `Row` of a structure of them (a Row, or a tuple or dict of Rows), in the same structure."""
    if isinstance(rows, dict):
        return {k: fn(v) for k, v in rows.items()}
    if isinstance(rows, tuple):
        return tuple(fn(r) for r in rows)
    return fn(rows)
