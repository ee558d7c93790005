"""Device choice: the GPU when TensorFlow sees one (with memory growth, so the window's process does
not take the whole card), the CPU otherwise."""
from __future__ import annotations

from training_core.base.device_names import DEVICE_HELP, check_device_name
from training_core.base.errors import UserError

_growth_set = False


def list_devices() -> list[str]:
    """`cpu`, `gpu:N` for each visible GPU, and `mirrored` (every GPU, or 2 CPU replicas without one;
    see engine/distribute.py). Imports TensorFlow."""
    import tensorflow as tf
    return ["cpu"] + [f"gpu:{i}" for i, _ in enumerate(tf.config.list_physical_devices("GPU"))] + ["mirrored"]


def enable_memory_growth() -> None:
    """Must run before TensorFlow initialises the GPUs; harmless without one."""
    global _growth_set
    if _growth_set:
        return
    import tensorflow as tf
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # already initialised: growth can no longer change
            pass
    _growth_set = True


def resolve_device(name: str) -> tuple[str, str]:
    """`auto|cpu|gpu:N` -> (TensorFlow device string, human description). ("mirrored" is a strategy:
    distribute.make_placement takes it before a device is resolved.)"""
    check_device_name(name)
    import tensorflow as tf
    enable_memory_growth()
    gpus = tf.config.list_physical_devices("GPU")
    name = (name or "auto").strip().lower()
    if name == "auto":
        name = "gpu:0" if gpus else "cpu"
    if name == "cpu":
        return "/CPU:0", "CPU"
    if name.startswith("gpu"):
        idx = int(name.split(":")[1]) if ":" in name else 0  # (check_device_name: gpu or gpu:N)
        if idx >= len(gpus):
            raise UserError(f"device {name} is not available ({len(gpus)} GPU(s) visible); use auto or cpu")
        details = tf.config.experimental.get_device_details(gpus[idx]) or {}
        return f"/GPU:{idx}", f"GPU:{idx} {details.get('device_name', '')}".strip()
    raise UserError(f"unknown device {name!r}; use {DEVICE_HELP}")

