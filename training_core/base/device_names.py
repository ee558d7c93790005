"""Device names as a user writes them (`--device`), checked without TensorFlow, so a typo answers at once
(engine/devices.py resolves a name to a TensorFlow device)."""
from __future__ import annotations

import re

from training_core.base.errors import UserError

DEVICE_HELP = "auto (default), cpu, gpu:N or mirrored (every GPU, or 2 CPU devices)"


def check_device_name(name: str) -> None:
    """The form of a device name, without TensorFlow: a typo answers at once (the window found it only in
    its training process, and `--screenshot` then exited 1, not 2). Whether a GPU exists is
    `resolve_device`'s to say."""
    n = (name or "auto").strip().lower()
    if n in ("auto", "cpu", "gpu", "mirrored") or re.fullmatch(r"gpu:\d+", n):
        return
    raise UserError(f"unknown device {name!r}; use {DEVICE_HELP}")

