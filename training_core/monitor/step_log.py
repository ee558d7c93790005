"""The steps a user's loop logged, turned into the `MetricsBatch`es every observer of a run reads.

Why its own batching: the trainer's fetcher (loop/fetch.py) collects one packed device tensor per step that
its compiled step returned. A user's loop returns nothing to the monitor: it logs each step's losses (numbers
or scalar tensors) and, at the sampled steps (monitor/update_meter.py), the meter measures every variable's update.
This module joins the two by step, per phase, into the same packed rows (`PhaseBlock.from_packed`: loss,
‖ΔW‖², ‖W‖², ‖g‖²), so the record, the leak alarm and every reader see what a Freezeframe run writes.

Cost: `add_step` appends a tuple a phase (~1 µs warm; right after the user's step, with the CPU's caches full
of TensorFlow's work, each Python call costs several times its warm time, so the per-step path makes few); the
host reads the device only in `batch()`, every `fetch_every` steps or `fetch_seconds`, as the trainer does:
on the host each loss that was a tensor and each measured norm vector read on its own (no eager op: `_host`),
on a GPU one `tf.stack` of each, one copy. Gradient norms are not measured (the user's code owns its gradients): the column reads 0.
"""
from __future__ import annotations

import numbers
import time
from typing import Any, Sequence

import numpy as np

from training_core.base.errors import UserError
from training_core.base.metrics import MetricsBatch, PhaseBlock, Status, scalar_columns


def _eager_type() -> type | None:
    """The class of an eager tensor, whose `_shape_tuple()` (TensorFlow's C-side shape, a private method the
    monitor's per-step check uses: `.shape` builds a `TensorShape` in Python, ~20 us the first time after a
    step; checked with tensorflow 2.21.0) says a scalar in one call."""
    try:
        from tensorflow.python.framework.ops import EagerTensor  # (the class of tf.constant's result)
    except ImportError:
        return None
    return EagerTensor


_EAGER = _eager_type()


def check_scalar(value: Any, what: str) -> Any:
    """`value` if it is one number (a Python or NumPy number, a 0-d array or tensor, or a tensor of one
    element); a `UserError` naming `what` otherwise. Tensors are kept as they are (read with the batch)."""
    kind = type(value)
    if kind is float:  # fit()'s logs, and most loops' (the checks below cost microseconds a step)
        return value
    if kind is _EAGER and value._shape_tuple() == ():
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    shape = getattr(value, "shape", None)
    if shape is not None and (len(shape) == 0 or (None not in tuple(shape) and int(np.prod(shape)) == 1)):
        if hasattr(value, "numpy") or isinstance(value, np.ndarray) or isinstance(value, np.generic):
            return value
    got = f"an array of shape {tuple(shape)}" if shape is not None else f"{type(value).__name__} {value!r:.40}"
    raise UserError(f"{what} is {got}, not one number; log a scalar (e.g. the mean of the loss)")


class StepLog:
    """Logged steps and measured updates, by phase, until the next `batch()`."""

    def __init__(self, phase_names: Sequence[str], phase_paths: Sequence[tuple[str, ...]],
                 columns: Sequence[Sequence[int]]) -> None:
        #: columns[i]: where phase i's variables sit in the meter's vector (monitor/update_meter.py)
        self.names, self.paths = list(phase_names), [tuple(p) for p in phase_paths]
        self.columns = [np.asarray(c, dtype=np.int64) for c in columns]
        self._rows: list[tuple[int, int, float, Any]] = []  # (phase, step, wall, loss)
        self._measured: dict[int, Any] = {}  # step -> device tensor [dW^2..., W^2...]
        self._scalars: list[tuple[str, int, float, float]] = []
        self._frozen_now = [np.zeros(len(p), dtype=bool) for p in self.paths]  # before this batch's changes
        self._frozen_changes: list[tuple[int, int, np.ndarray]] = []  # (from step, phase, mask), in order

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, phase: int, step: int, loss: Any, wall: float | None = None) -> None:
        self._rows.append((phase, step, time.time() if wall is None else wall, loss))

    def add_step(self, step: int, wall: float, rows: Sequence[tuple[int, Any]], counts: list[int]) -> None:
        """One step's (phase, loss) rows, each phase's count in `counts` raised by one: `add`'s work for a whole
        step in one call (the monitor's per-step path)."""
        append = self._rows.append
        for phase, loss in rows:
            append((phase, step, wall, loss))
            counts[phase] += 1

    def measure(self, step: int, norms: Any) -> None:
        self._measured[step] = norms

    def set_frozen(self, phase: int, mask: np.ndarray, step: int) -> None:
        """The phase's frozen column from `step` on (the record keeps it at every measured step). Kept by step,
        not as one value for the batch: a batch spans many measured steps, and a flag set between two of them
        (`layer.trainable = False` in `on_epoch_begin`) must not mark the earlier ones frozen (nor a leak)."""
        self._frozen_changes.append((int(step), phase, np.asarray(mask, dtype=bool)))

    def scalar(self, tag: str, step: int, value: Any, wall: float | None = None) -> None:
        self._scalars.append((tag, step, time.time() if wall is None else wall, value))

    def batch(self, status: Status) -> MetricsBatch | None:
        """Everything logged since the last batch, or None when nothing was."""
        if not self._rows and not self._scalars:
            return None
        rows, self._rows = self._rows, []
        measured, self._measured = self._measured, {}
        losses = _host([r[3] for r in rows])
        norms = dict(zip(measured, _host_rows(list(measured.values())))) if measured else {}
        blocks = []
        for i in sorted({r[0] for r in rows}):
            mine = [(r, loss) for r, loss in zip(rows, losses) if r[0] == i]
            n, cols = len(self.paths[i]), self.columns[i]
            packed = np.zeros((len(mine), 1 + 3 * n))
            packed[:, 0] = [loss for _, loss in mine]
            record = np.zeros(len(mine), dtype=bool)
            for k, ((_, step, _, _), _) in enumerate(mine):
                got = norms.get(step)
                if got is not None:
                    half = len(got) // 2
                    packed[k, 1:1 + n], packed[k, 1 + n:1 + 2 * n] = got[cols], got[half + cols]
                    record[k] = True
            frozen = self._frozen_rows(i, [r[1] for r, _ in mine])
            blocks.append(PhaseBlock.from_packed(self.names[i], self.paths[i], [r[1] for r, _ in mine],
                                                 [r[2] for r, _ in mine], packed, frozen, record))
        self._fold_frozen(max(r[1] for r in rows) if rows else None)
        scalars, self._scalars = self._scalars, []
        values = _host([r[3] for r in scalars])
        return MetricsBatch(blocks, status, scalar_columns([(t, s, w, v) for (t, s, w, _), v in zip(scalars, values)]))


    def _frozen_rows(self, phase: int, steps: list[int]) -> np.ndarray:
        """Each row's frozen column: the last change made at or before its step (rows come in step order)."""
        changes = [(s, m) for s, p, m in self._frozen_changes if p == phase]
        changes.sort(key=lambda c: c[0])  # stable: two changes at one step keep their order
        out = np.empty((len(steps), len(self.paths[phase])), dtype=bool)
        now, k = self._frozen_now[phase], 0
        for row, step in enumerate(steps):
            while k < len(changes) and changes[k][0] <= step:
                now, k = changes[k][1], k + 1
            out[row] = now
        return out

    def _fold_frozen(self, last_step: int | None) -> None:
        """The changes up to the batch's last step become the state the next batch starts from."""
        keep = []
        for change in sorted(self._frozen_changes, key=lambda c: c[0]):
            if last_step is not None and change[0] <= last_step:
                self._frozen_now[change[1]] = change[2]
            else:
                keep.append(change)
        self._frozen_changes = keep


def _host(values: list[Any]) -> list[float]:
    """Numbers as floats; tensors on the host read one by one with `float()` (on a GPU, one `tf.stack`: one
    copy for the batch). Why not a stack on the host: an eager `tf.stack` is an op dispatch of its own, ~0.65 ms
    for a batch on this project's CPU, where `float()` of a host scalar is a few microseconds (and cheaper than
    `np.asarray(v).reshape(())`, measured in the ringcost session, bench/PERFORMANCE.md 2026-12-02)."""
    tensors = [k for k, v in enumerate(values) if not isinstance(v, float)]
    out = [v if isinstance(v, float) else 0.0 for v in values]
    if tensors:
        import tensorflow as tf
        items = [values[k] for k in tensors]
        try:
            got = ([float(v) if type(v) is _EAGER and v._shape_tuple() == () else _one(v) for v in items]
                   if _on_host(items[0]) else
                   np.asarray(tf.stack(items), dtype=np.float64).reshape(len(items)).tolist())
        except (TypeError, ValueError, tf.errors.InvalidArgumentError):  # mixed dtypes or shapes (), (1,)
            got = [_one(v) for v in items]
        for k, v in zip(tensors, got):
            out[k] = v
    return out


def _one(value: Any) -> float:
    """One number of any kind `check_scalar` lets through (a tensor or array of shape (1,) too)."""
    return float(np.asarray(value).reshape(()))


def _on_host(tensor: Any) -> bool:
    return "CPU" in str(getattr(tensor, "device", "CPU"))


def _host_rows(tensors: list[Any]) -> list[np.ndarray]:
    """The meter's norm vectors as float64 arrays: on the host each read with `.numpy()` (an eager `tf.stack`
    of them cost ~0.65 ms a batch, the flush's largest cost; see `_host`), on a GPU one stack, one copy."""
    if _on_host(tensors[0]):
        return [np.asarray(t.numpy(), dtype=np.float64) for t in tensors]
    import tensorflow as tf
    return list(tf.stack(tensors).numpy().astype(np.float64))
