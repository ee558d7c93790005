"""monitor/step_log.py: what a user's loop logs, joined by step with the measured updates into the batches the
record and the leak alarm read.

Why: the record's per-variable rows must sit at the steps the meter measured, in each phase that ran there,
with the losses of every step; one number a loss, refused in one line otherwise.
"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training_core.base.errors import UserError
from training_core.base.metrics import Status
from training_core.monitor.step_log import StepLog, check_scalar


@pytest.mark.parametrize("value", [0.5, np.float32(0.5), np.array(0.5), tf.constant(0.5), tf.constant([0.5])])
def test_one_number_is_a_loss(value):
    assert float(np.asarray(check_scalar(value, "x")).reshape(())) == 0.5


@pytest.mark.parametrize("value, said", [(tf.zeros([3]), "an array of shape (3,)"), ("0.5", "str '0.5'"),
                                         (None, "NoneType None"), (True, "bool True")])
def test_anything_else_is_one_line(value, said):
    with pytest.raises(UserError) as e:
        check_scalar(value, "the loss of phase 'D' at step 3")
    assert str(e.value) == f"the loss of phase 'D' at step 3 is {said}, not one number; log a scalar (e.g. the mean of the loss)"


def test_losses_and_measured_updates_are_joined_by_step_and_phase():
    log = StepLog(["D", "G"], [("d/k", "d/b"), ("g/k",)], [[0, 1], [2]])
    log.set_frozen(0, np.array([False, True]), 1)
    for step in (1, 2, 3):
        log.add(0, step, tf.constant(float(step)) if step % 2 else float(step), wall=100.0 + step)
    log.add(1, 2, 0.25, wall=102.0)
    # the meter's vector: ||dW||^2 of d/k, d/b, g/k, then ||W||^2 of each
    log.measure(2, tf.constant([4.0, 0.0, 9.0, 16.0, 1.0, 36.0]))
    log.scalar("metric/r1", 2, tf.constant(0.125), wall=102.0)
    batch = log.batch(Status(step=3))
    d, g = batch.blocks
    assert (d.phase, d.steps.tolist(), d.loss.tolist()) == ("D", [1, 2, 3], [1.0, 2.0, 3.0])
    assert d.record.tolist() == [False, True, False] and d.update_norm[1].tolist() == [2.0, 0.0]
    assert d.update_ratio[1].tolist() == [0.5, 0.0] and d.frozen[:, 1].all() and not d.frozen[:, 0].any()
    assert (g.steps.tolist(), g.update_norm[0].tolist(), g.update_ratio[0].tolist()) == ([2], [3.0], [0.5])
    assert g.grad_norm.tolist() == [[0.0]]  # not measured: the user's code owns its gradients
    assert batch.scalars["metric/r1"][2].tolist() == [0.125]
    assert log.batch(Status()) is None  # nothing since


def test_a_row_is_frozen_as_the_flags_read_at_its_step_not_when_the_batch_is_read():
    """D2: one batch spans measured steps 240, 255 and 295; the flag turned at 257. Rows 240 and 255 stay
    unfrozen (no leak there); from 295 on the column reads frozen; the next batch starts from that."""
    log = StepLog(["D"], [("d/k",)], [[0]])
    log.set_frozen(0, np.array([False]), 1)
    for step in range(230, 300):
        log.add(0, step, 0.5)
        if step in (240, 255, 295):
            log.set_frozen(0, np.array([step == 295]), step)
            log.measure(step, tf.constant([1.0, 4.0]))
    d, = log.batch(Status(step=299)).blocks
    frozen = dict(zip(d.steps.tolist(), d.frozen[:, 0].tolist()))
    assert not any(f for s, f in frozen.items() if s < 295) and all(f for s, f in frozen.items() if s >= 295)
    log.add(0, 300, 0.5)
    assert log.batch(Status(step=300)).blocks[0].frozen.tolist() == [[True]]


def test_a_batch_on_the_host_reads_its_tensors_without_an_eager_op(monkeypatch):
    """The flush is on the user's step path: an eager `tf.stack` of the norms cost ~0.65 ms a batch where
    reading each tensor costs microseconds (bench/PERFORMANCE.md, 2026-12-02 ringcost). On the host no stack
    runs, and the numbers are the same: float64 rows, losses of shape () and (1,) alike."""
    def no_stack(*args, **kwargs):
        raise AssertionError("tf.stack ran in a host batch")
    log = StepLog(["D"], [("d/k", "d/b")], [[0, 1]])
    for step in (1, 2, 3):
        log.add(0, step, tf.constant([0.5]) if step == 3 else tf.constant(float(step)), wall=100.0 + step)
    log.measure(2, tf.constant([4.0, 0.0, 16.0, 1.0]))
    monkeypatch.setattr(tf, "stack", no_stack)
    d, = log.batch(Status(step=3)).blocks
    assert d.loss.tolist() == [1.0, 2.0, 0.5] and d.update_norm[1].tolist() == [2.0, 0.0]
    assert d.update_ratio[1].tolist() == [0.5, 0.0] and d.record.tolist() == [False, True, False]
