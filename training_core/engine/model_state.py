"""The models' state kept across a call that must not move it: the probe that checks a shadow, a drawing of
samples, a measure on the training thread.

Why: a layer may draw from a `keras.random.SeedGenerator` of its own at every call, training or not (the Keras
VAE example's Sampling layer), and each draw advances the generator's state, a non-trainable variable of the
model. Called between two steps on the training's own models, a drawing of samples or a measure then moved the
noise every later step trains on: a run with samples or metrics trained on other noise than one without, and a
run stopped and resumed (which draws at its end, before its final checkpoint) differed from the run never
stopped. Trainable weights never change in such a call; the non-trainable state is put back as it was.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np


@contextmanager
def kept(variables: Sequence[Any]) -> Iterator[None]:
    """Run the block, then put `variables` back to their values before it (whatever it raised)."""
    values = [np.array(v.numpy(), copy=True) for v in variables]
    try:
        yield
    finally:
        for v, value in zip(variables, values):
            v.assign(value)


def state_of(prepared: Any) -> list[Any]:
    """The variables of the experiment's models a call may move: the non-trainable ones (seed generators' states,
    BatchNormalization's statistics)."""
    return [v for v in prepared.variables if not v.trainable]
